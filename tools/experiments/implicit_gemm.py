"""
The fix named for the CNN family's late stages, measured before it is built: a 3x3
convolution (stride 1, padding 1) as an implicit GEMM over flattened output positions
`p = (n * H + h) * W + w` of a channels-last input, plain Triton, against cuDNN
(`F.conv2d` on channels-last tensors) at the ResNet-50 bottleneck's 3x3 shapes, B32, bf16:

- a program computes BM positions x BN filters; a K step is one tap (kh, kw) and BK
  channels: the A tile's row p reads `x[n, h + kh - 1, w + kw - 1, c0:c0 + BK]`, n, h, w
  from p by division (computed once, outside the K loop), out-of-image taps masked to 0
  (no padded copy);
- the filter is `[F, KH, KW, C]` (channels innermost), the output channels-last.

    python3 tools/experiments/implicit_gemm.py            # GPU: 56, 28, 14, 7 pixels
    TRITON_INTERPRET=1 python3 tools/experiments/implicit_gemm.py --small
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def conv3x3(x_ptr, w_ptr, y_ptr, N, H, W, C: tl.constexpr, FILTERS: tl.constexpr,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DOT: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    p = pid_m * BM + tl.arange(0, BM)
    n, hw = p // (H * W), p % (H * W)
    h, w = hw // W, hw % W
    in_range = p < N * H * W
    f = pid_n * BN + tl.arange(0, BN)
    k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for tap in range(9):
        kh, kw = tap // 3, tap % 3
        hh, ww = h + kh - 1, w + kw - 1
        ok = in_range & (hh >= 0) & (hh < H) & (ww >= 0) & (ww < W)
        row = ((n * H + hh) * W + ww) * C
        for c0 in range(0, C, BK):
            a = tl.load(x_ptr + row[:, None] + (c0 + k)[None, :], mask=ok[:, None], other=0.0)
            b = tl.load(w_ptr + f[None, :] * (9 * C) + tap * C + (c0 + k)[:, None], mask=(f < FILTERS)[None, :], other=0.0)
            acc = tl.dot(a.to(DOT), b.to(DOT), acc)
    out = tl.maximum(acc, 0.0)
    tl.store(y_ptr + p[:, None] * FILTERS + f[None, :], out.to(y_ptr.dtype.element_ty), mask=in_range[:, None] & (f < FILTERS)[None, :])


def run(x_cl: torch.Tensor, w_cl: torch.Tensor, tiles: tuple[int, ...]) -> torch.Tensor:
    """x: [N, H, W, C] row-major, w: [F, 3, 3, C] row-major -> relu(conv) as [N, H, W, F]."""
    bm, bn, bk, warps, stages = tiles
    n, h, w, c = x_cl.shape
    filters = w_cl.shape[0]
    y = torch.empty(n, h, w, filters, dtype=x_cl.dtype, device=x_cl.device)
    dot = tl.bfloat16 if x_cl.is_cuda else tl.float32  # (the interpreter's bf16 dot is wrong)
    grid = (triton.cdiv(n * h * w, bm), triton.cdiv(filters, bn))
    conv3x3[grid](x_cl, w_cl, y, n, h, w, C=c, FILTERS=filters, BM=bm, BN=bn, BK=bk, DOT=dot,
                  num_warps=warps, num_stages=stages)  # fmt: skip
    return y


def main(small: bool) -> None:
    device = "cpu" if small else "cuda"
    dtype = torch.float32 if small else torch.bfloat16
    shapes = [(2, 5, 6, 32)] if small else [(32, 56, 56, 64), (32, 28, 28, 128), (32, 14, 14, 256), (32, 7, 7, 512)]
    configs = [(16, 16, 16, 4, 1)] if small else [(128, 64, 64, 4, 3), (128, 128, 64, 8, 3), (64, 128, 64, 4, 4),
                                                  (128, 128, 32, 4, 4), (64, 64, 64, 4, 4)]  # fmt: skip
    torch.manual_seed(0)
    for n, h, w, c in shapes:
        x = torch.randn(n, c, h, w, device=device).to(dtype).contiguous(memory_format=torch.channels_last)
        wt = (torch.randn(c, c, 3, 3, device=device) / (9 * c) ** 0.5).to(dtype)
        want = F.relu(F.conv2d(x.float(), wt.float(), padding=1))
        x_cl = x.permute(0, 2, 3, 1)  # a view: [N, H, W, C] row-major
        w_cl = wt.permute(0, 2, 3, 1).contiguous()
        flops = 2 * n * h * w * c * c * 9
        line = [f"{h}x{w}, C {c}:"]
        if not small:
            wt_cl = wt.contiguous(memory_format=torch.channels_last)
            ms = triton.testing.do_bench(lambda a=x, b=wt_cl: F.relu(F.conv2d(a, b, padding=1)), return_mode="median")
            line.append(f"cuDNN + relu {ms * 1e3:.1f} us ({flops / ms / 1e9:.0f} TF/s)")
        for tiles in configs:
            y = run(x_cl, w_cl, tiles).permute(0, 3, 1, 2).float()
            err = float((y - want).abs().max() / want.abs().max())
            if small:
                line.append(f"max rel err {err:.1e}")
                continue
            ms = triton.testing.do_bench(lambda t=tiles, a=x_cl, b=w_cl: run(a, b, t), return_mode="median")
            line.append(f"{'x'.join(map(str, tiles))} {ms * 1e3:.1f} us ({flops / ms / 1e9:.0f} TF/s, err {err:.0e})")
        print("  ".join(line), flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", action="store_true")
    main(ap.parse_args().small)
