"""
SwiGLU's gate and up projections in one kernel, two ways (plain Triton, no tilefuse):

- `two`: what tilefuse's sibling loops print, two `tl.dot`s a K step into two
  128 x 128 accumulators;
- `joined`: one 128 x 256 `tl.dot` a K step whose B tile interleaves the rows of
  both weights (row 2j of the tile is gate row j, row 2j + 1 up row j: one pointer
  tile over two tensors), the accumulator split back into the two by
  `reshape(128, 128, 2)` + `tl.split`.

Both against cuBLAS's two GEMMs and eager's SiLU-multiply, bf16, CUDA-event medians:

    python3 tools/experiments/joined_dot.py            # GPU: LLaMA d4096 and d1024 shapes
    TRITON_INTERPRET=1 python3 tools/experiments/joined_dot.py --small   # numerics only
"""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl


@triton.jit
def _silu_mul(g, u):
    gb = g.to(tl.bfloat16).to(tl.float32)
    s = (gb / (1.0 + tl.exp(-gb))).to(tl.bfloat16).to(tl.float32)
    return s * u.to(tl.bfloat16).to(tl.float32)


@triton.jit
def _tile(M, N, BM: tl.constexpr, BN: tl.constexpr, GROUP: tl.constexpr):
    """This program's output tile (row, column), in groups of GROUP tile rows."""
    pid = tl.program_id(0)
    grid_m, grid_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    first_m = pid // (GROUP * grid_n) * GROUP
    rows = min(grid_m - first_m, GROUP)
    return first_m + (pid % rows), (pid % (GROUP * grid_n)) // rows


@triton.jit
def two_dots(x_ptr, wg_ptr, wu_ptr, y_ptr, M, N, K: tl.constexpr,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
             DOT: tl.constexpr):
    pid_m, pid_n = _tile(M, N, BM, BN, GROUP)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    acc_g = tl.zeros((BM, BN), tl.float32)
    acc_u = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        x = tl.load(x_ptr + offs_m[:, None] * K + (k + offs_k)[None, :], mask=offs_m[:, None] < M, other=0.0)
        wg = tl.load(wg_ptr + offs_n[:, None] * K + (k + offs_k)[None, :], mask=offs_n[:, None] < N, other=0.0)
        acc_g = tl.dot(x.to(DOT), tl.trans(wg).to(DOT), acc_g)
        wu = tl.load(wu_ptr + offs_n[:, None] * K + (k + offs_k)[None, :], mask=offs_n[:, None] < N, other=0.0)
        acc_u = tl.dot(x.to(DOT), tl.trans(wu).to(DOT), acc_u)
    y = _silu_mul(acc_g, acc_u)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], y.to(tl.bfloat16), mask=mask)


@triton.jit
def joined_dot(x_ptr, wg_ptr, wu_ptr, y_ptr, M, N, K: tl.constexpr,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
             DOT: tl.constexpr):
    pid_m, pid_n = _tile(M, N, BM, BN, GROUP)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_k = tl.arange(0, BK)
    # row r of the B tile: weight row pid_n * BN + r // 2 of the gate (r even) or up (odd)
    r = tl.arange(0, 2 * BN)
    n = pid_n * BN + r // 2
    base = tl.where((r % 2 == 0)[:, None], wg_ptr + n[:, None] * K, wu_ptr + n[:, None] * K)
    acc = tl.zeros((BM, 2 * BN), tl.float32)
    for k in range(0, K, BK):
        x = tl.load(x_ptr + offs_m[:, None] * K + (k + offs_k)[None, :], mask=offs_m[:, None] < M, other=0.0)
        w = tl.load(base + (k + offs_k)[None, :], mask=n[:, None] < N, other=0.0)
        acc = tl.dot(x.to(DOT), tl.trans(w).to(DOT), acc)
    g, u = tl.split(tl.reshape(acc, (BM, BN, 2)))
    y = _silu_mul(g, u)
    offs_n = pid_n * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], y.to(tl.bfloat16), mask=mask)


def run(kernel, x, wg, wu, bm: int, bn: int, bk: int, warps: int, stages: int) -> torch.Tensor:
    m, k = x.shape
    n = wg.shape[0]
    # f32 on the CPU: the interpreter stores bf16 values by reinterpreting bits
    y = torch.empty(m, n, dtype=torch.bfloat16 if x.is_cuda else torch.float32, device=x.device)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    # bf16 dots on the GPU; f32 in the interpreter (its bf16 dot returns garbage)
    dot = tl.bfloat16 if x.is_cuda else tl.float32
    kernel[grid](x, wg, wu, y, m, n, k, BM=bm, BN=bn, BK=bk, GROUP=8, DOT=dot, num_warps=warps,
                 num_stages=stages)  # fmt: skip
    return y


def reference(x, wg, wu) -> torch.Tensor:
    g = (x.float() @ wg.float().T).bfloat16()
    u = (x.float() @ wu.float().T).bfloat16()
    return (torch.nn.functional.silu(g.float()).bfloat16().float() * u.float()).bfloat16()


def main(small: bool) -> None:
    device = "cpu" if small else "cuda"
    shapes = [(64, 64, 96)] if small else [(1024, 4096, 11008), (4096, 2048, 5632), (8192, 1024, 2816)]
    tiles = (16, 16, 16, 4, 1) if small else (128, 128, 64, 8, 3)
    torch.manual_seed(0)
    for m, k, n in shapes:
        x = torch.randn(m, k, device=device).bfloat16()
        wg, wu = (torch.randn(n, k, device=device).div(k**0.5).bfloat16() for _ in range(2))
        ref = reference(x, wg, wu)
        flops = 2 * 2 * m * n * k
        line = [f"{m} x {k} x {n}:"]
        for name, kernel in (("two", two_dots), ("joined", joined_dot)):
            y = run(kernel, x, wg, wu, *tiles)
            err = float((y.float() - ref.float()).abs().max() / ref.float().abs().max())
            if small:
                line.append(f"{name} max rel err {err:.1e}")
                continue
            ms = triton.testing.do_bench(lambda kn=kernel, a=(x, wg, wu): run(kn, *a, *tiles), return_mode="median")
            line.append(f"{name} {ms * 1e3:.1f} us ({flops / ms / 1e9:.0f} TF/s, err {err:.1e})")
        if not small:
            ms = triton.testing.do_bench(lambda a=(x, wg, wu): torch.nn.functional.silu(a[0] @ a[1].T) * (a[0] @ a[2].T),
                                         return_mode="median")  # fmt: skip
            line.append(f"eager {ms * 1e3:.1f} us ({flops / ms / 1e9:.0f} TF/s)")
        print("  ".join(line))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    main(ap.parse_args().small)
