"""
Sweep num_warps of the kernels tilefuse generates, for memory-bound samples.

    python tools/experiments/warps_sweep.py softmax:M=4096:N=8192:bf16 layernorm:M=16384:N=4096:f32

For each case: the generated program as is, then with every launch's num_warps
replaced, timed with do_bench (median) against torch.compile, in one process. A
device copy of the same number of bytes (read half, write half) is timed next to
them: the ceiling at this size, fixed costs included. Ours and torch.compile are
timed three times, interleaved, to show how much each moves between calls.
"""

import re
import sys
from pathlib import Path

import torch
import triton.testing

sys.path.insert(0, ".")
sys.path.insert(0, "tools")
from torch_models import MODELS

from tilefuse.frontend.program import load_program
from tilefuse.frontend.specialize import read_header
from tilefuse.runtime.compiled import compile as tf_compile
from tilefuse.runtime.compiled import import_source

DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def parse_spec(spec: str):
    """`sample:DIM=N:...:dtype` -> (name, dims, dtype, path, random GPU inputs)."""
    from tilefuse.ir.module import entry_function

    name, *rest = spec.split(":")
    dtype = rest[-1]
    dims = {k: int(v) for k, v in (x.split("=") for x in rest[:-1])}
    path = f"samples/{name}.mlir"
    module = load_program(path, dims, dtype)
    args = [torch.randn(tuple(t.get_shape()), device="cuda").to(DT[dtype])
            for t in entry_function(module).function_type.inputs.data]  # fmt: skip
    return name, dims, dtype, path, args


def alldims_of(name: str, dims: dict[str, int]) -> dict[str, int]:
    """The sample's header dims, overridden by `dims`."""
    return {**read_header(Path(f"samples/{name}.mlir").read_text()).dims, **dims}


def main():
    for spec in sys.argv[1:]:
        name, dims, dtype, path, args = parse_spec(spec)
        prog = tf_compile(path, dims=dims, dtype=dtype)
        nbytes = sum(a.numel() * a.element_size() for a in args) + sum(
            o.numel() * o.element_size() for o in prog(*args))
        alldims = alldims_of(name, dims)
        model = MODELS[name]
        compiled = torch.compile(lambda *a, model=model, alldims=alldims: model(*a, dims=alldims))
        compiled(*args)
        src_buf = torch.randn(nbytes // 8, device="cuda")
        dst_buf = torch.empty_like(src_buf)
        copy = triton.testing.do_bench(lambda d=dst_buf, s=src_buf: d.copy_(s), return_mode="median")
        print(f"{spec}: copy of the same bytes {copy:.4f} ms ({nbytes / copy / 1e6:.0f} GB/s)")
        for _ in range(3):
            tc = triton.testing.do_bench(lambda c=compiled, a=args: c(*a), return_mode="median")
            base = triton.testing.do_bench(lambda p=prog, a=args: p(*a), return_mode="median")
            print(f"    generated {base:.4f} ms ({nbytes / base / 1e6:.0f} GB/s, {copy / base:.1%} of copy), "
                  f"torch.compile {tc:.4f} ms: {tc / base:.2f}x")
        fn = prog.function
        for w in (2, 4, 8, 16, 32):
            src = re.sub(r"num_warps=\d+", f"num_warps={w}", prog.source)
            mod = import_source(src)
            f = getattr(mod, fn)
            ms = triton.testing.do_bench(lambda f=f, a=args: f(*a), return_mode="median")
            print(f"    num_warps={w:2d}: {ms:.4f} ms ({nbytes / ms / 1e6:.0f} GB/s)")


if __name__ == "__main__":
    main()
