"""
Tile sweep of a bf16 Linear GEMM (x[M,K] @ w[N,K]^T, f32 accumulation, bf16 out)
in plain Triton, the loop tilefuse's contraction kernels use: which BM x BN wins
at the transformer shapes, and how much wave quantization costs.

    python tools/experiments/gemm_tiles.py
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl
import triton.testing


@triton.jit
def linear(x, w, out, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
           GROUP: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    grid_m, grid_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    width = GROUP * grid_n
    group = pid // width
    first = group * GROUP
    size = min(grid_m - first, GROUP)
    pm = first + (pid % width) % size
    pn = (pid % width) // size
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(x + rm[:, None] * K + rk[None, :])
        b = tl.load(w + rn[:, None] * K + rk[None, :])
        acc = tl.dot(a, tl.permute(b, (1, 0)), acc)
    tl.store(out + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


SHAPES = [(8192, 768, 768), (8192, 768, 3072), (8192, 3072, 768), (8192, 2304, 768),
          (8192, 1024, 1024), (8192, 3072, 1024), (8192, 4096, 1024), (8192, 1024, 4096),
          (8192, 2816, 1024), (8192, 1024, 2816), (8192, 4096, 4096), (12608, 768, 768)]
TILES = [(128, 128, 64, 4, 8), (128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (256, 128, 64, 4, 8),
         (128, 128, 64, 3, 4), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (128, 192, 64, 3, 8)]


def sweep(m: int, n: int, k: int, sms: int) -> str:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
    ref = x @ w.T
    cublas = triton.testing.do_bench(lambda: x @ w.T, return_mode="median")
    row = [f"{m}x{n}x{k}: cuBLAS {2 * m * n * k / cublas / 1e9:.0f} TF/s"]
    for bm, bn, bk, stages, warps in TILES:
        if m % bm or n % bn:
            continue
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        grid = (m // bm * (n // bn),)

        def run(out=out, grid=grid, bm=bm, bn=bn, bk=bk, stages=stages, warps=warps):
            linear[grid](x, w, out, m, n, k, BM=bm, BN=bn, BK=bk, GROUP=8,
                         num_stages=stages, num_warps=warps)  # fmt: skip

        try:
            run()
            assert torch.allclose(out.float(), ref.float(), atol=5e-2, rtol=5e-2)
            ms = triton.testing.do_bench(run, return_mode="median")
        except Exception as e:  # out of resources: say so
            row.append(f"{bm}x{bn}/{stages}s/{warps}w FAIL {type(e).__name__}")
            continue
        programs = grid[0]
        waves = programs / (math.ceil(programs / sms) * sms)
        row.append(f"{bm}x{bn}/{stages}s/{warps}w {2 * m * n * k / ms / 1e9:.0f} "
                   f"({programs} progs, wave eff {waves:.2f})")  # fmt: skip
    return "\n    ".join(row)


def main() -> None:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k in SHAPES:
        print(sweep(m, n, k, sms), flush=True)


if __name__ == "__main__":
    main()
