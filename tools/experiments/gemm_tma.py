"""
Hopper GEMM loops side by side (issue 17): the pointer-based tile loop tilefuse
emits today, the same loop reading operands through TMA tensor descriptors, and a
persistent grid (one program per SM looping over output tiles) with descriptors,
against cuBLAS; bf16 `x[M,K] @ w[N,K]^T`, f32 accumulation, bias + ReLU epilogue,
bf16 out. Shapes: the models' Linears (M = 8192 tokens) and issue 17's.

    python tools/experiments/gemm_tma.py            # all shapes
    python tools/experiments/gemm_tma.py 8192x4096x4096
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl
import triton.testing


@triton.jit
def _tile(t, grid_m, grid_n, GROUP: tl.constexpr):
    width = GROUP * grid_n
    first = (t // width) * GROUP
    size = min(grid_m - first, GROUP)
    return first + (t % width) % size, (t % width) // size


@triton.jit
def pointers(x, w, bias, out, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             GROUP: tl.constexpr):  # fmt: skip
    pm, pn = _tile(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        a = tl.load(x + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(w + rn[:, None] * K + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0)
        acc = tl.dot(a, tl.permute(b, (1, 0)), acc)
    y = tl.maximum(acc + tl.load(bias + rn, mask=rn < N).to(tl.float32)[None, :], 0.0)
    tl.store(out + rm[:, None] * N + rn[None, :], y.to(out.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def descriptors(x, w, bias, out, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                GROUP: tl.constexpr, NUM_SMS: tl.constexpr, PERSISTENT: tl.constexpr,
                TMA_STORE: tl.constexpr):  # fmt: skip
    a_desc = tl.make_tensor_descriptor(x, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(w, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(out, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    grid_m, grid_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    tiles = grid_m * grid_n
    if PERSISTENT:
        start, step = tl.program_id(0), NUM_SMS
    else:
        start, step = tl.program_id(0), tiles
    for t in tl.range(start, tiles, step, flatten=True):
        pm, pn = _tile(t, grid_m, grid_n, GROUP)
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a = a_desc.load([pm * BM, k])
            b = b_desc.load([pn * BN, k])
            acc = tl.dot(a, b.T, acc)
        rn = pn * BN + tl.arange(0, BN)
        y = tl.maximum(acc + tl.load(bias + rn, mask=rn < N).to(tl.float32)[None, :], 0.0)
        if TMA_STORE:
            c_desc.store([pm * BM, pn * BN], y.to(out.dtype.element_ty))
        else:
            rm = pm * BM + tl.arange(0, BM)
            tl.store(out + rm[:, None] * N + rn[None, :], y.to(out.dtype.element_ty),
                     mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


SHAPES = [(8192, 768, 768), (8192, 3072, 768), (8192, 768, 3072), (8192, 2304, 768),
          (8192, 1024, 1024), (8192, 256, 1024), (8192, 5632, 1024), (8192, 1024, 2816),
          (8192, 4096, 4096), (256, 4096, 4096), (3000, 11008, 4096)]
CONFIGS = [(128, 256, 64, 3, 8), (128, 128, 64, 4, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4)]


def run_shape(m: int, n: int, k: int, sms: int) -> None:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    ref = torch.relu(x.float() @ w.float().T + b.float())
    flops = 2 * m * n * k
    cublas = triton.testing.do_bench(lambda: torch.relu(torch.addmm(b, x, w.T)), return_mode="median")
    print(f"{m}x{n}x{k}: cuBLAS addmm+relu {flops / cublas / 1e9:.0f} TF/s ({cublas * 1e3:.1f} us)", flush=True)
    for config in CONFIGS:
        bm, bn, bk, stages, warps = config
        tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
        row = []
        variants = [("ptr", None), ("tma", (False, True)), ("tma-ptrstore", (False, False)),
                    ("persist", (True, True)), ("persist-ptrstore", (True, False))]
        for label, flags in variants:
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            if flags is None:
                def fn(out=out, c=config, tiles=tiles):
                    pointers[(tiles,)](x, w, b, out, m, n, k, BM=c[0], BN=c[1], BK=c[2], GROUP=8,
                                       num_stages=c[3], num_warps=c[4])  # fmt: skip
            else:
                persistent, tma_store = flags
                grid = (min(sms, tiles) if persistent else tiles,)

                def fn(out=out, grid=grid, persistent=persistent, tma_store=tma_store, c=config):
                    descriptors[grid](x, w, b, out, m, n, k, BM=c[0], BN=c[1], BK=c[2], GROUP=8,
                                      NUM_SMS=grid[0], PERSISTENT=persistent, TMA_STORE=tma_store,
                                      num_stages=c[3], num_warps=c[4])  # fmt: skip
            try:
                fn()
                err = (out.float() - ref).abs().max().item()
                assert err < 0.1 * ref.abs().max().item(), err
                ms = triton.testing.do_bench(fn, return_mode="median")
                row.append(f"{label} {flops / ms / 1e9:.0f}")
            except Exception as e:
                row.append(f"{label} FAIL {type(e).__name__}")
        print(f"    {bm}x{bn}x{bk}/{stages}s/{warps}w ({tiles} tiles): " + ", ".join(row), flush=True)


def main(args: list[str]) -> None:
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    shapes = [tuple(int(d) for d in a.split("x")) for a in args] or SHAPES
    for m, n, k in shapes:
        run_shape(m, n, k, sms)


if __name__ == "__main__":
    main(sys.argv[1:])
