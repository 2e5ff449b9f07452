"""
GEMMs with a short K (768: BERT-base and ViT-B) and their epilogues, plain Triton
(issue 16's BERT gap, issue 17's "short-K GEMM mainloop"): the persistent TMA loop
tilefuse prints (`tile_plan.hopper_lowering`) against variants of it and against
cuBLAS, bf16 `x[M,K] @ w[N,K]^T` + bias, then one of three epilogues:

- `bias`: nothing more (the Q/K/V projections);
- `res`:  + a residual read in the epilogue (the output projection, FC2);
- `gelu`: erf GELU (FC1).

Variants of the persistent loop (`tl.range(pid, tiles, NUM_SMS, flatten=True)`,
TMA descriptor operand loads, pointer-store epilogue, what tilefuse emits):

- `flat`: as tilefuse prints it;
- `sub2`: the epilogue in two column halves (`tl.split` of the accumulator), so a
  half's registers are free before the other's store;
- `tmast`: the result through a TMA descriptor store;
- `nonflat`: the tile loop not flattened;
- `ws`: the tile loop not flattened, `warp_specialize=True` (Triton's automatic
  warp specialisation; documented for Blackwell);
- `x2`: `flat` with two programs an SM (where registers and shared memory let two
  fit, one's epilogue runs beside the other's dots);
- `grid`: one program a tile (descriptor loads, not persistent).

cuBLAS is `F.linear` (bias in the GEMM) plus, for `res` and `gelu`, the
epilogue as a separate eager op; `cublas-mm` is the GEMM alone. CUDA-event medians
(`triton.testing.do_bench`), microseconds:

    python3 tools/experiments/gemm_short_k.py                      # BERT's GEMMs
    python3 tools/experiments/gemm_short_k.py 8192x768x768:res     # one shape
    python3 tools/experiments/gemm_short_k.py 8192x3072x768:gelu_as --config=128x256x64/3s/8w --mode=flat

`gelu_tf` is the erf GELU as tilefuse prints it (`prelude._erf`, branch-free). `gelu_as` is the erf GELU with erf by Abramowitz & Stegun's 7.1.26 (one exp, one
division; absolute error at most 1.5e-7) in place of libdevice's `erff`: what the erf
costs the epilogue.
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
import triton.testing

from tilefuse.backend.triton.prelude import _erff


@triton.jit
def _epilogue(acc, bias, res, pm, pn, M, N, BM: tl.constexpr, BN: tl.constexpr, KIND: tl.constexpr):
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    y = acc + tl.load(bias + rn).to(tl.float32)[None, :]
    y = y.to(tl.bfloat16).to(tl.float32)
    if KIND == 1:
        y = y + tl.load(res + rm[:, None] * N + rn[None, :]).to(tl.float32)
    if KIND == 2:
        y = y * (0.5 * (1.0 + tl.erf(y * 0.7071067811865476)))
    if KIND == 4:  # erf as tilefuse prints it (prelude._erf: libdevice's erff without its branch)
        y = y * (0.5 * (1.0 + _erff(y * 0.7071067811865476)))
    if KIND == 3:  # erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): one exp, one division
        z = tl.abs(y) * 0.7071067811865476
        t = 1.0 / (1.0 + 0.3275911 * z)
        p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
        e = 1.0 - p * tl.exp(-z * z)
        y = y * (0.5 * (1.0 + tl.where(y < 0, -e, e)))
    return y.to(tl.bfloat16)


@triton.jit
def gemm(x, w, bias, res, out, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
         NUM_SMS: tl.constexpr, KIND: tl.constexpr, MODE: tl.constexpr):  # fmt: skip
    """MODE 0 flat (also x2: NUM_SMS twice the SMs), 1 sub2, 2 tmast, 3 nonflat, 4 grid, 5 ws."""
    a_desc = tl.make_tensor_descriptor(x, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(w, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(out, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    grid_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * grid_n
    step: tl.constexpr = 1 if MODE == 4 else NUM_SMS
    end = tl.program_id(0) + 1 if MODE == 4 else tiles
    for t in tl.range(tl.program_id(0), end, step, flatten=MODE < 3, warp_specialize=MODE == 5):
        pm = t // grid_n
        pn = t % grid_n
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, K, BK):
            a = a_desc.load([pm * BM, k])
            b = b_desc.load([pn * BN, k])
            acc = tl.dot(a, b.T, acc)
        if MODE == 1:
            left, right = tl.split(tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1)))
            yl = _epilogue(left, bias, res, pm, pn * 2, M, N, BM, BN // 2, KIND)
            rm = pm * BM + tl.arange(0, BM)
            rl = pn * BN + tl.arange(0, BN // 2)
            tl.store(out + rm[:, None] * N + rl[None, :], yl)
            yr = _epilogue(right, bias, res, pm, pn * 2 + 1, M, N, BM, BN // 2, KIND)
            tl.store(out + rm[:, None] * N + (rl + BN // 2)[None, :], yr)
        elif MODE == 2:
            c_desc.store([pm * BM, pn * BN], _epilogue(acc, bias, res, pm, pn, M, N, BM, BN, KIND))
        else:
            y = _epilogue(acc, bias, res, pm, pn, M, N, BM, BN, KIND)
            rm = pm * BM + tl.arange(0, BM)
            rn = pn * BN + tl.arange(0, BN)
            tl.store(out + rm[:, None] * N + rn[None, :], y)


MODES = {"flat": 0, "sub2": 1, "tmast": 2, "nonflat": 3, "grid": 4, "ws": 5, "x2": 0}
KINDS = {"bias": 0, "res": 1, "gelu": 2, "gelu_as": 3, "gelu_tf": 4}
SHAPES = ["8192x768x768:res", "8192x3072x768:gelu", "8192x2304x768:bias", "8192x768x3072:res"]
CONFIGS = [(128, 128, 64, 4, 8), (128, 128, 64, 4, 4), (128, 128, 64, 3, 8), (128, 128, 64, 2, 8),
           (128, 128, 64, 2, 4), (128, 256, 64, 3, 8), (128, 256, 64, 3, 16), (128, 128, 128, 3, 8)]  # fmt: skip


def _reference(x, w, b, r, kind):
    y = (x.float() @ w.float().T + b.float()).bfloat16().float()
    if kind == "res":
        y = y + r.float()
    if kind.startswith("gelu"):
        y = F.gelu(y)
    return y


def operands(spec: str):
    """`MxNxK:epilogue`'s seeded operands (bf16, on the GPU), its f32 reference and
    FLOPs, after printing cuBLAS's time for the GEMM alone and with the epilogue."""
    shape, kind = spec.split(":")
    m, n, k = (int(d) for d in shape.split("x"))
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    flops = 2 * m * n * k

    def cublas():
        y = F.linear(x, w, b)
        return y + r if kind == "res" else F.gelu(y) if kind.startswith("gelu") else y

    mm = triton.testing.do_bench(lambda: F.linear(x, w, b), return_mode="median") * 1e3
    whole = triton.testing.do_bench(cublas, return_mode="median") * 1e3
    print(f"{spec}: cublas-mm {mm:.1f} us ({flops / mm / 1e6:.0f} TF/s), cublas+epilogue {whole:.1f} us", flush=True)
    return (m, n, k, kind), (x, w, b, r), _reference(x, w, b, r, kind), flops


def _only(flag: str) -> list[str]:
    return [a[len(flag):] for a in sys.argv if a.startswith(flag)]


def run(spec: str, sms: int) -> None:
    (m, n, k, kind), (x, w, b, r), ref, _ = operands(spec)
    configs, modes = _only("--config="), _only("--mode=")
    for bm, bn, bk, stages, warps in CONFIGS:
        if configs and f"{bm}x{bn}x{bk}/{stages}s/{warps}w" not in configs:
            continue
        tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
        row = []
        for label, mode in MODES.items():
            if modes and label not in modes:
                continue
            out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            grid = (tiles if mode == 4 else min(sms * (2 if label == "x2" else 1), tiles),)

            def fn(out=out, grid=grid, mode=mode, c=(bm, bn, bk, stages, warps)):
                gemm[grid](x, w, b, r, out, m, n, k, BM=c[0], BN=c[1], BK=c[2], NUM_SMS=grid[0],
                           KIND=KINDS[kind], MODE=mode, num_stages=c[3], num_warps=c[4])  # fmt: skip

            try:
                fn()
                err = (out.float() - ref).abs().max().item()
                assert err < 0.05 * ref.abs().max().item(), err
                us = triton.testing.do_bench(fn, return_mode="median") * 1e3
                row.append(f"{label} {us:.1f}")
            except Exception as e:  # a config Triton or the GPU refuses: say so, go on
                row.append(f"{label} FAIL {type(e).__name__}")
        print(f"    {bm}x{bn}x{bk}/{stages}s/{warps}w ({tiles} tiles): " + ", ".join(row), flush=True)


def main(args: list[str]) -> None:
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for spec in [a for a in args if not a.startswith("--")] or SHAPES:
        run(spec, sms)


if __name__ == "__main__":
    main(sys.argv[1:])
