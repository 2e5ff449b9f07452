"""
Convolution tiles for the ResNet-50 bottleneck's convolutions (B32, 56x56, NCHW bf16),
in plain Triton, against cuDNN (`F.conv2d`) in the same run:

    python tools/experiments/conv_tiles.py

`row`: tilefuse's tile at the time of writing, one program per (image, output row):
a (64 filters) x (64 columns, 56 used) output tile, the input pre-padded. `flat`: an
implicit GEMM over the flattened (image, row, column) positions, BP positions per
program, padding read through masks, the K loop over taps x channel chunks.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def conv_row(x, w, y, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr, F_: tl.constexpr,
             KS: tl.constexpr, BF: tl.constexpr, BK: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    n = pid // H
    oh = pid % H
    f = tl.program_id(1) * BF + tl.arange(0, BF)
    ow = tl.arange(0, 64)
    Hp: tl.constexpr = H + KS - 1
    Wp: tl.constexpr = W + KS - 1
    acc = tl.zeros((BF, 64), tl.float32)
    for k in range(0, KS * KS * (C // BK)):
        t = k // (C // BK)
        c = (k % (C // BK)) * BK + tl.arange(0, BK)
        kh = t // KS
        kw = t % KS
        xt = tl.load(x + n * C * Hp * Wp + c[:, None] * Hp * Wp + (oh + kh) * Wp + ow[None, :] + kw,
                     mask=ow[None, :] < W, other=0.0)  # fmt: skip
        wt = tl.load(w + f[:, None] * C * KS * KS + c[None, :] * KS * KS + t)
        acc = tl.dot(wt, xt, acc)
    tl.store(y + n * F_ * H * W + f[:, None] * H * W + oh * W + ow[None, :], acc.to(tl.bfloat16),
             mask=ow[None, :] < W)  # fmt: skip


@triton.jit
def conv_flat(x, w, y, N: tl.constexpr, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
              F_: tl.constexpr, KS: tl.constexpr, BF: tl.constexpr, BP: tl.constexpr,
              BK: tl.constexpr):  # fmt: skip
    HW: tl.constexpr = H * W
    p = tl.program_id(0) * BP + tl.arange(0, BP)
    f = tl.program_id(1) * BF + tl.arange(0, BF)
    n = p // HW
    r = p % HW
    oh = r // W
    ow = r % W
    live = p < N * HW
    acc = tl.zeros((BF, BP), tl.float32)
    for k in range(0, KS * KS * (C // BK)):
        t = k // (C // BK)
        c = (k % (C // BK)) * BK + tl.arange(0, BK)
        ih = oh + t // KS - (KS // 2)
        iw = ow + t % KS - (KS // 2)
        ok = live & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        xt = tl.load(x + n[None, :] * C * HW + c[:, None] * HW + (ih * W + iw)[None, :],
                     mask=ok[None, :], other=0.0)  # fmt: skip
        wt = tl.load(w + f[:, None] * C * KS * KS + c[None, :] * KS * KS + t)
        acc = tl.dot(wt, xt, acc)
    tl.store(y + n[None, :] * F_ * HW + f[:, None] * HW + r[None, :], acc.to(tl.bfloat16),
             mask=live[None, :])  # fmt: skip


@triton.jit
def conv_flat_nhwc(x, w, y, N: tl.constexpr, C: tl.constexpr, H: tl.constexpr, W: tl.constexpr,
                   F_: tl.constexpr, KS: tl.constexpr, BF: tl.constexpr, BP: tl.constexpr,
                   BK: tl.constexpr):  # fmt: skip
    """`conv_flat` on channels-last input and output: x[n, h, w, c], y[n, h, w, f]."""
    HW: tl.constexpr = H * W
    p = tl.program_id(0) * BP + tl.arange(0, BP)
    f = tl.program_id(1) * BF + tl.arange(0, BF)
    n = p // HW
    r = p % HW
    oh = r // W
    ow = r % W
    live = p < N * HW
    acc = tl.zeros((BP, BF), tl.float32)
    for k in range(0, KS * KS * (C // BK)):
        t = k // (C // BK)
        c = (k % (C // BK)) * BK + tl.arange(0, BK)
        ih = oh + t // KS - (KS // 2)
        iw = ow + t % KS - (KS // 2)
        ok = live & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
        xt = tl.load(x + ((n * H + ih) * W + iw)[:, None] * C + c[None, :], mask=ok[:, None], other=0.0)
        wt = tl.load(w + f[None, :] * C * KS * KS + c[:, None] * KS * KS + t)
        acc = tl.dot(xt, wt, acc)
    tl.store(y + p[:, None] * F_ + f[None, :], acc.to(tl.bfloat16), mask=live[:, None])


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=200) * 1e3  # us


def main() -> None:
    N, H, W = 32, 56, 56
    for C, F_, KS in ((256, 64, 1), (64, 64, 3), (64, 256, 1)):
        x = torch.randn(N, C, H, W, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(F_, C, KS, KS, device="cuda", dtype=torch.bfloat16) * 0.05
        ref = F.conv2d(x, w, padding=KS // 2)
        flops = 2 * N * H * W * C * F_ * KS * KS
        t_ref = bench(functools.partial(F.conv2d, x, w, padding=KS // 2))
        xc, wc = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
        t_cl = bench(functools.partial(F.conv2d, xc, wc, padding=KS // 2))
        print(f"conv {C}->{F_} {KS}x{KS}: cuDNN NCHW {t_ref:7.1f} us ({flops / t_ref * 1e-6:5.0f} TF/s), "
              f"channels_last {t_cl:7.1f} us")  # fmt: skip
        y = torch.empty_like(ref)
        xp = F.pad(x, (KS // 2,) * 4)
        for BF, BK, warps, stages in ((64, 64, 4, 4), (64, 32, 4, 3)):
            if F_ % BF or C % BK:
                continue
            grid = (N * H, F_ // BF)
            run = functools.partial(conv_row[grid], xp, w, y, C, H, W, F_, KS, BF, BK,
                                    num_warps=warps, num_stages=stages)  # fmt: skip
            run()
            err = (y.float() - ref.float()).abs().max().item()
            t = bench(run)
            print(f"  row  BF{BF} BK{BK} w{warps} s{stages}: {t:7.1f} us "
                  f"({flops / t * 1e-6:5.0f} TF/s) err {err:.3g}")  # fmt: skip
        for BF, BP, BK, warps, stages in ((64, 128, 64, 4, 4), (64, 256, 64, 8, 3),
                                          (64, 256, 32, 8, 4), (128, 128, 64, 8, 3),
                                          (128, 256, 64, 8, 3), (256, 128, 64, 8, 3)):  # fmt: skip
            if F_ % BF or C % BK:
                continue
            grid = (triton.cdiv(N * H * W, BP), F_ // BF)
            run = functools.partial(conv_flat[grid], x, w, y, N, C, H, W, F_, KS, BF, BP, BK,
                                    num_warps=warps, num_stages=stages)  # fmt: skip
            run()
            err = (y.float() - ref.float()).abs().max().item()
            t = bench(run)
            print(f"  flat BF{BF} BP{BP} BK{BK} w{warps} s{stages}: {t:7.1f} us "
                  f"({flops / t * 1e-6:5.0f} TF/s) err {err:.3g}")  # fmt: skip
        yc = torch.empty_like(ref, memory_format=torch.channels_last)
        xn = x.permute(0, 2, 3, 1).contiguous()
        for BF, BP, BK, warps, stages in ((64, 128, 64, 4, 4), (64, 256, 64, 8, 3),
                                          (128, 128, 64, 8, 3), (128, 256, 64, 8, 3),
                                          (256, 128, 64, 8, 3)):  # fmt: skip
            if F_ % BF or C % BK:
                continue
            grid = (triton.cdiv(N * H * W, BP), F_ // BF)
            run = functools.partial(conv_flat_nhwc[grid], xn, w, yc, N, C, H, W, F_, KS, BF, BP, BK,
                                    num_warps=warps, num_stages=stages)  # fmt: skip
            run()
            err = (yc.float() - ref.float()).abs().max().item()
            t = bench(run)
            print(f"  flat NHWC BF{BF} BP{BP} BK{BK} w{warps} s{stages}: {t:7.1f} us "
                  f"({flops / t * 1e-6:5.0f} TF/s) err {err:.3g}")  # fmt: skip


if __name__ == "__main__":
    main()
