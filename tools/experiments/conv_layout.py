"""
The bottleneck's kernels with its 4-D intermediates stored channels-last (NHWC) instead
of NCHW: the generated module's allocations edited, the kernels unchanged (they take
strides), per-kernel CUDA time from the profiler for both:

    python tools/experiments/conv_layout.py
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tempfile
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
from model_profile import kernel_times

import tilefuse.torch as tt
from tilefuse.torch.export import state_tensor


def load(source: str, name: str):
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def channels_last(source: str) -> str:
    out = re.findall(r"return (\w+)", source)[-1]
    source = re.sub(r"(\n    (\w+) = torch\.empty\(\(\d+, \d+, \d+, \d+\), dtype=[\w.]+, device=device)\)",
                    lambda m: m.group(0) if m.group(2) == out else m.group(1) + ", memory_format=torch.channels_last)",
                    source)  # fmt: skip
    return re.sub(r"torch\.full\((\(\d+, \d+, \d+, \d+\)), ([-\w.]+), dtype=([\w.]+), device=([\w.]+)\)",
                  r"torch.empty(\1, dtype=\3, device=\4, memory_format=torch.channels_last).fill_(\2)",
                  source)  # fmt: skip


def compiled_bottleneck():
    """The bench's bottleneck compiled on the GPU: (the compiled module, its
    tensors in the generated host function's argument order, its output)."""
    case = {c.name: c for c in bench_models.CASES}["bottleneck"]
    torch.manual_seed(0)
    model = case.make().eval().to("cuda", torch.bfloat16)
    args = tuple(x.to("cuda", torch.bfloat16) for x in case.inputs())
    compiled = tt.compile(model, *args)
    ex = compiled.exported
    state = [state_tensor(ex.module, n, p).detach() for n, p in ex.state]
    return compiled, [*state, *args], compiled(*args)


def compare(variants: list[tuple[str, str]], tensors: list, ref) -> None:
    """Each (label, generated module source) run on `tensors`: its largest
    difference from `ref`, its time per call and per kernel."""
    for label, source in variants:
        mod = load(source, "bottleneck_" + re.sub(r"\W", "_", label))
        fn = getattr(mod, mod.ENTRY)
        err = (fn(*tensors).float() - ref.float()).abs().max().item()
        rows = kernel_times(lambda f=fn: f(*tensors))
        total = triton.testing.do_bench(lambda f=fn: f(*tensors)) * 1e3
        print(f"== {label}: {total:.1f} us per call, {sum(r[1] for r in rows):.1f} us of kernels, "
              f"max |diff| vs compiled {err:.3g}")  # fmt: skip
        for n, t, c in rows:
            print(f"  {t:8.1f} us  x{c}  {n[:100]}")


def main() -> None:
    with torch.no_grad():
        compiled, tensors, ref = compiled_bottleneck()
        compare([("NCHW", compiled.source), ("NHWC", channels_last(compiled.source))], tensors, ref)


if __name__ == "__main__":
    main()
