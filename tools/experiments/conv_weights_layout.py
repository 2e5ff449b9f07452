"""
The bottleneck's kernels with the 3x3 convolution's filter (`[F, C, KH, KW]`, read
by the kernel as `[F, C]` tiles per tap: C at stride KH x KW, loaded per element)
copied channels-innermost on the host first (`contiguous(channels_last)`: C at
stride 1), the kernels unchanged (they take strides); per-kernel CUDA time from the
profiler for both. (The experiment behind `choose-layouts`' `input_layouts`: run it
on a tree before that, where the compiled module does not copy the filter itself.)

    python tools/experiments/conv_weights_layout.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
from conv_layout import load
from model_profile import kernel_times

import tilefuse.torch as tt
from tilefuse.torch.export import state_tensor


def filters_channels_last(source: str, names: list[str]) -> str:
    head = next(line for line in source.splitlines() if line.startswith("def Bottleneck("))
    copies = "".join(f"    {n} = {n}.contiguous(memory_format=torch.channels_last)\n" for n in names)
    return source.replace(head + "\n", head + "\n" + copies, 1)


def main() -> None:
    case = {c.name: c for c in bench_models.CASES}["bottleneck"]
    torch.manual_seed(0)
    model = case.make().eval().to("cuda", torch.bfloat16)
    args = tuple(x.to("cuda", torch.bfloat16) for x in case.inputs())
    with torch.no_grad():
        compiled = tt.compile(model, *args)
        ref = compiled(*args)
        ex = compiled.exported
        state = [state_tensor(ex.module, n, p).detach() for n, p in ex.state]
        tensors = [*state, *args]
        filters = [f"arg{i}" for i, t in enumerate(state) if t.dim() == 4 and t.shape[-1] > 1]
        print("filters copied:", filters, [tuple(tensors[int(n[3:])].shape) for n in filters])
        for label, source in (("as compiled", compiled.source),
                              ("filters channels-last", filters_channels_last(compiled.source, filters))):  # fmt: skip
            mod = load(source, "bottleneck_" + label.replace(" ", "_").replace("-", "_"))
            fn = getattr(mod, mod.ENTRY)
            y = fn(*tensors)
            err = (y.float() - ref.float()).abs().max().item()
            rows = kernel_times(lambda f=fn: f(*tensors))
            total = triton.testing.do_bench(lambda f=fn: f(*tensors)) * 1e3
            print(f"== {label}: {total:.1f} us per call, {sum(r[1] for r in rows):.1f} us of kernels, "
                  f"max |diff| vs compiled {err:.3g}")  # fmt: skip
            for n, t, c in rows:
                print(f"  {t:8.1f} us  x{c}  {n[:100]}")


if __name__ == "__main__":
    main()
