"""
Attention forward on Hopper: which of the FA-3-era Triton 3.6 features pay, measured
against torch's SDPA (cuDNN/flash) in one process. Issue 17, item 2.

A FlashAttention-2 loop written here the way tilefuse's printer writes it (pointer
loads, NaN-propagating max, exp of the scaled scores), then with one change at a time:
  exp2   the scale and log2(e) folded into one multiply, exp2, plain max
  desc   Q/K/V/O through `tl.make_tensor_descriptor` (3-D [B*H, S, D], TMA)
  ws     the key loop `tl.range(..., warp_specialize=True)` (Hopper autoWS), maxnreg
  causal key loop ends at the diagonal; only the diagonal block is masked
  gqa    K/V with H/G heads read by head h // G (no copies)

    python tools/experiments/attention_hopper.py [quick]

Prints, per shape and variant, median us, TF/s, the ratio to SDPA and the largest
error against SDPA's output (bf16), as JSON lines too (for docs/PERF.md).
"""

import json
import math
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _max_nan_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _max_nan(x, axis: tl.constexpr):  # the printer's NaN-propagating max (its GPU branch)
    return tl.reduce(x, axis, _max_nan_combine)


@triton.jit
def _fwd(q_ptr, k_ptr, v_ptr, o_ptr, scale, BH, BHKV, H: tl.constexpr, G: tl.constexpr, S: tl.constexpr,
         D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, NAN: tl.constexpr, FOLD: tl.constexpr,
         GUARD: tl.constexpr, DESC: tl.constexpr, WS: tl.constexpr, CAUSAL: tl.constexpr,
         SPLIT: tl.constexpr, STAGES: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    kvh = (bh // H) * (H // G) + (bh % H) // G
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, D)
    if DESC:
        qd = tl.make_tensor_descriptor(q_ptr, [BH, S, D], [S * D, D, 1], [1, BM, D])
        kd = tl.make_tensor_descriptor(k_ptr, [BHKV, S, D], [S * D, D, 1], [1, BN, D])
        vd = tl.make_tensor_descriptor(v_ptr, [BHKV, S, D], [S * D, D, 1], [1, BN, D])
        od = tl.make_tensor_descriptor(o_ptr, [BH, S, D], [S * D, D, 1], [1, BM, D])
        q = qd.load([bh, pid_m * BM, 0]).reshape(BM, D)
    else:
        q = tl.load(q_ptr + bh * S * D + offs_m[:, None] * D + offs_d[None, :])
    m = tl.full((BM,), float("-inf"), tl.float32)
    row_sum = tl.full((BM,), 0.0, tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    log2e = 1.4426950408889634
    hi = (pid_m + 1) * BM if CAUSAL else S
    full = pid_m * BM if SPLIT else 0  # key blocks wholly below the diagonal: no mask
    for start in tl.range(0, hi, BN, warp_specialize=WS, num_stages=STAGES):
        offs_n = start + tl.arange(0, BN)
        if DESC:
            k = kd.load([kvh, start, 0]).reshape(BN, D)
        else:
            k = tl.load(k_ptr + kvh * S * D + offs_n[:, None] * D + offs_d[None, :])
        s = tl.dot(q, tl.trans(k))
        if CAUSAL and start >= full:
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
        if FOLD:  # max(s * c) = max(s) * c (c > 0); exp(x) = exp2(x log2 e), one FMA
            if NAN:
                m_new = tl.maximum(m, _max_nan(s, 1) * scale, propagate_nan=tl.PropagateNan.ALL)
            else:
                m_new = tl.maximum(m, tl.max(s, 1) * scale)
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new) if GUARD else m_new
            p = tl.math.exp2(s * (scale * log2e) - (m_safe * log2e)[:, None])
            alpha = tl.math.exp2((m - m_safe) * log2e)
        else:  # as printed: the scaled scores, their max, exp of the difference
            r = s * scale
            if NAN:
                m_new = tl.maximum(m, _max_nan(r, 1), propagate_nan=tl.PropagateNan.ALL)
            else:
                m_new = tl.maximum(m, tl.max(r, 1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new) if GUARD else m_new
            alpha = tl.exp(m - m_safe)
            p = tl.exp(r - m_safe[:, None])
        row_sum = row_sum * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if DESC:
            v = vd.load([kvh, start, 0]).reshape(BN, D)
        else:
            v = tl.load(v_ptr + kvh * S * D + offs_n[:, None] * D + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m = m_new
    out = (acc / row_sum[:, None]).to(q.dtype)
    if DESC:
        od.store([bh, pid_m * BM, 0], out.reshape(1, BM, D))
    else:
        tl.store(o_ptr + bh * S * D + offs_m[:, None] * D + offs_d[None, :], out)


def _alloc(size, align, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


def run(q, k, v, causal, bm, bn, warps, stages, nan, fold, guard, split, desc, ws, maxnreg):
    b, h, s, d = q.shape
    g = h // k.shape[1]
    o = torch.empty_like(q)
    extra = {"maxnreg": maxnreg} if maxnreg else {}
    grid = (s // bm, b * h)
    _fwd[grid](q, k, v, o, 1 / math.sqrt(d), b * h, b * k.shape[1], H=h, G=g, S=s, D=d, BM=bm, BN=bn, NAN=nan, FOLD=fold, GUARD=guard,
               DESC=desc, WS=ws, CAUSAL=causal, SPLIT=split, STAGES=stages, num_warps=warps, num_stages=stages, **extra)  # fmt: skip
    return o


def bench(fn, reps=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        z.record()
        z.synchronize()
        times.append(a.elapsed_time(z) * 1e3)
    times.sort()
    return times[len(times) // 2]


VARIANTS = [
    # name, bm, bn, warps, stages, nan-max, fold, guard, causal split, desc, ws, maxnreg
    ("as printed", 128, 128, 8, 3, 1, 0, 1, 0, 0, 0, None),
    ("plain max", 128, 128, 8, 3, 0, 0, 1, 0, 0, 0, None),
    ("fold", 128, 128, 8, 3, 1, 1, 1, 0, 0, 0, None),
    ("fold plain max", 128, 128, 8, 3, 0, 1, 1, 0, 0, 0, None),
    ("fold plain max no guard", 128, 128, 8, 3, 0, 1, 0, 0, 0, 0, None),
    ("fold plain max split", 128, 128, 8, 3, 0, 1, 1, 1, 0, 0, None),
    ("fold plain max split desc", 128, 128, 8, 3, 0, 1, 1, 1, 1, 0, None),
    ("fold split desc s2", 128, 128, 8, 2, 0, 1, 1, 1, 1, 0, None),
    ("as printed 64 w4", 128, 64, 4, 3, 1, 0, 1, 0, 0, 0, None),
    ("fold 64 w4", 128, 64, 4, 3, 1, 1, 1, 0, 0, 0, None),
    ("fold plain max 64 w4", 128, 64, 4, 3, 0, 1, 1, 1, 0, 0, None),
    ("fold plain max 64 w8", 128, 64, 8, 3, 0, 1, 1, 1, 0, 0, None),
    ("fold plain max 64 w4 s2", 128, 64, 4, 2, 0, 1, 1, 1, 0, 0, None),
    ("fold plain max 64 w4 s4", 128, 64, 4, 4, 0, 1, 1, 1, 0, 0, None),
    ("fold plain max 64x64 w4", 64, 64, 4, 3, 0, 1, 1, 1, 0, 0, None),
    ("fold plain max 128 w4", 128, 128, 4, 3, 0, 1, 1, 1, 0, 0, None),
    ("fold ws desc w8 s3", 128, 128, 8, 3, 0, 1, 1, 1, 1, 1, None),
]
# Not run: warp_specialize with pointer loads, or with the printer's NaN-propagating
# max reduction: Triton 3.6 aborts the process in NVGPUWarpSpecialization
# (WSLowerToken.cpp:73 assertion), H200, 2026-12-02.

SHAPES = [  # b, h, hkv, s, d, causal
    (4, 32, 32, 4096, 128, False),
    (8, 16, 16, 2048, 64, False),
    (4, 32, 32, 4096, 128, True),
    (8, 16, 16, 2048, 64, True),
    (4, 32, 8, 4096, 128, False),
]


def main(quick=False):
    triton.set_allocator(_alloc)
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), "triton", triton.__version__, "torch", torch.__version__)
    for b, h, hkv, s, d, causal in SHAPES[:2] if quick else SHAPES:
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16)
        ke, ve = (x.repeat_interleave(h // hkv, dim=1) for x in (k, v))
        want = F.scaled_dot_product_attention(q, ke, ve, is_causal=causal)
        flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
        sdpa_us = bench(lambda q=q, ke=ke, ve=ve, c=causal: F.scaled_dot_product_attention(q, ke, ve, is_causal=c))
        gqa = f" gqa {hkv}" if hkv != h else ""
        print(f"\nB{b} H{h} S{s} D{d}{' causal' if causal else ''}{gqa}: SDPA {sdpa_us:.0f} us "
              f"{flops / sdpa_us / 1e6:.0f} TF/s")  # fmt: skip
        for name, *cfg in VARIANTS:
            try:
                out = run(q, k, v, causal, *cfg)
                err = (out.float() - want.float()).abs().max().item()
                us = bench(lambda cfg=cfg, q=q, k=k, v=v, c=causal: run(q, k, v, c, *cfg))
                sdpa_us = min(sdpa_us, bench(lambda q=q, ke=ke, ve=ve, c=causal: F.scaled_dot_product_attention(
                    q, ke, ve, is_causal=c), 10))
                row = {"shape": [b, h, hkv, s, d, causal], "variant": name, "us": round(us, 1),
                       "tflops": round(flops / us / 1e6), "vs_sdpa": round(sdpa_us / us, 3), "err": err}  # fmt: skip
                print(f"  {name:24s} {us:8.0f} us {flops / us / 1e6:5.0f} TF/s {sdpa_us / us:5.2f}x SDPA err {err:.1e}")
            except Exception as e:
                row = {"shape": [b, h, hkv, s, d, causal], "variant": name, "error": f"{type(e).__name__}: {e}"[:200]}
                print(f"  {name:24s} FAILED {row['error'][:150]}")
            print("JSON", json.dumps(row))


if __name__ == "__main__":
    main(quick=len(sys.argv) > 1 and sys.argv[1] == "quick")
