"""
Why is the generated row softmax slow on the H200? Time variants side by side.

v0: the kernel tilefuse emits (a [1, N] tile, keep_dims reductions reshaped to (1,))
v1: the same without the reshape to (1,) (reductions stay [1, 1])
v2: the Triton tutorial's 1-D row softmax
Each prints median ms, GB/s and the compiled kernel's registers/spills.
"""

import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, ".")
from tilefuse.runtime.compiled import compile as tf_compile


@triton.jit
def v1(in_ptr, s0, s1, out_ptr, o0, o1, N: tl.constexpr, num: tl.constexpr):
    pid = tl.program_id(0)
    offs0 = pid + tl.arange(0, 1)
    offs1 = tl.arange(0, N)
    x = tl.load(in_ptr + offs0[:, None] * s0 + offs1[None, :] * s1).to(tl.float32)
    m = tl.max(x, axis=1, keep_dims=True)
    e = tl.exp(x - m)
    s = tl.sum(e, axis=1, keep_dims=True)
    tl.store(out_ptr + offs0[:, None] * o0 + offs1[None, :] * o1, (e / s).to(tl.bfloat16))


@triton.jit
def v2(in_ptr, s0, out_ptr, o0, N: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, N)
    x = tl.load(in_ptr + pid * s0 + offs).to(tl.float32)
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    s = tl.sum(e, axis=0)
    tl.store(out_ptr + pid * o0 + offs, (e / s).to(tl.bfloat16))


def main():
    M, N = 4096, 8192
    x = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    y = torch.empty_like(x)
    nbytes = 2 * x.numel() * 2
    prog = tf_compile("samples/softmax.mlir", dims={"M": M, "N": N}, dtype="bf16")
    ref = torch.softmax(x.float(), -1)
    runs = {"v0 generated": lambda: prog(x)}
    for w in (4, 8, 16):
        runs[f"v1 2-D w{w}"] = lambda w=w: v1[(M,)](x, *x.stride(), y, *y.stride(), N=N, num=0, num_warps=w)
        runs[f"v2 1-D w{w}"] = lambda w=w: v2[(M,)](x, x.stride(0), y, y.stride(0), N=N, num_warps=w)
    for name, fn in runs.items():
        out = fn()
        res = out[0] if isinstance(out, tuple) else y
        err = ((res.float() - ref).norm() / ref.norm()).item()
        ms = triton.testing.do_bench(fn, return_mode="median")
        k = out if not isinstance(out, tuple) else None
        regs = getattr(k, "n_regs", "?")
        spills = getattr(k, "n_spills", "?")
        print(f"{name:16s} {ms:8.4f} ms {nbytes / ms / 1e6:8.0f} GB/s err {err:.1e} regs {regs} spills {spills}")
    print(prog.source.split("KERNELS")[0][-1500:])


if __name__ == "__main__":
    main()
