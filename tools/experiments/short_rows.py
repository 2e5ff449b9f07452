"""
LayerNorm forward over short bf16 rows: rows per program and the precision of the
statistics, against torch (plain Triton, no tilefuse).

    python3 tools/experiments/short_rows.py            # H200: (8192, 768), (8192, 1024), (8192, 4096)
    python3 tools/experiments/short_rows.py 8192x768   # one shape
    TRITON_INTERPRET=1 python3 tools/experiments/short_rows.py --small   # CPU: numerics only

BERT-base's LayerNorm as torch-mlir decomposes it (x bf16 -> f32 -> f64 for
`var_mean`'s variance; the mean it subtracts and the normalisation in f32), bf16
weight and bias, bf16 output, eps 1e-12. The precision of each variant:

- `f64`: the scheme tilefuse generates (bert_generated.py `fused_kernel_5`): the
  whole row in f64 (load as f64, the mean, `x - mean`, the normalisation, the
  affine), the variance rounded to f32 and widened again, eps added in f64;
- `ir`: what the IR says: the variance in f64 (rounded to f32), the mean and the
  normalisation in f32 (`rsqrt(var + eps)` in f32);
- `f32`: everything in f32 (what torch's and Inductor's kernels do).

Tiles: `1d` is the generated kernel's shape (one row per program, the row padded to
a power of two, 1-D), at 4 and 8 warps; `R` rows per program is a 2-D
[R, BLOCK_N] tile, at 4, 8 and 16 warps (`--rows`, `--warps`). Each is timed with
`triton.testing.do_bench` (median) and checked against torch's `F.layer_norm` in
f32 (max abs error of the bf16 output);
`!=ir` counts the outputs whose bf16 bits differ from the `ir` variant's (what a
wider normalisation changes). GB/s: read x, write y, read w and b once.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
import triton.testing

ON_GPU = os.environ.get("TRITON_INTERPRET", "0") != "1"
F64, IR, F32 = 0, 1, 2
PRECISIONS = {"f64": F64, "ir": IR, "f32": F32}
EPS = 1e-12


@triton.jit
def _bf16(x, ON_GPU: tl.constexpr):
    """`x` rounded to bf16 (to nearest even: the interpreter's conversion truncates;
    an f64 `x` converted directly on the GPU, as the generated kernel does)."""
    if ON_GPU:
        r = x.to(tl.bfloat16)
    else:
        xf = x.to(tl.float32)
        bits = xf.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        r = tl.where(xf != xf, xf, bits.to(tl.float32, bitcast=True)).to(tl.bfloat16)
    return r


@triton.jit
def _normalise(x, mask, eps, N: tl.constexpr, PRECISION: tl.constexpr):
    """`(x - mean) * rstd` of the rows of `x` (bf16, [BLOCK_N] or [R, BLOCK_N];
    reductions along the last axis), masked lanes padding; f64 or f32 as
    PRECISION says (the affine is computed in the same type)."""
    axis: tl.constexpr = len(x.shape) - 1
    if PRECISION == 0:  # the generated kernel: everything f64
        x64 = tl.where(mask, x.to(tl.float64), 0.0)
        mean = tl.sum(x64, axis=axis) / N
        if axis == 1:
            mean = mean[:, None]
        d = tl.where(mask, x64 - mean, 0.0)
        var = (tl.sum(d * d, axis=axis) / N).to(tl.float32).to(tl.float64)
        rstd = tl.rsqrt(var + tl.full((), eps, tl.float32).to(tl.float64))
        if axis == 1:
            rstd = rstd[:, None]
        y = (x64 - mean) * rstd
    elif PRECISION == 1:  # the IR: variance in f64, mean and normalisation in f32
        x32 = tl.where(mask, x.to(tl.float32), 0.0)
        x64 = x32.to(tl.float64)
        mean64 = tl.sum(x64, axis=axis) / N
        if axis == 1:
            mean64 = mean64[:, None]
        d = tl.where(mask, x64 - mean64, 0.0)
        var = (tl.sum(d * d, axis=axis) / N).to(tl.float32)
        mean = tl.sum(x32, axis=axis) / N
        rstd = tl.rsqrt(var + eps)
        if axis == 1:
            mean = mean[:, None]
            rstd = rstd[:, None]
        y = (x32 - mean) * rstd
    else:  # everything f32
        x32 = tl.where(mask, x.to(tl.float32), 0.0)
        mean = tl.sum(x32, axis=axis) / N
        if axis == 1:
            mean = mean[:, None]
        d = tl.where(mask, x32 - mean, 0.0)
        rstd = tl.rsqrt(tl.sum(d * d, axis=axis) / N + eps)
        if axis == 1:
            rstd = rstd[:, None]
        y = (x32 - mean) * rstd
    return y


@triton.jit
def ln_row(x_ptr, w_ptr, b_ptr, y_ptr, stride, eps, N: tl.constexpr, BLOCK_N: tl.constexpr,
           PRECISION: tl.constexpr, ON_GPU: tl.constexpr):
    """One row per program, 1-D (the generated kernel's shape)."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    y = _normalise(x, mask, eps, N, PRECISION)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)  # (after the reductions, as generated)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    y = y * w.to(y.dtype) + b.to(y.dtype)
    tl.store(y_ptr + row * stride + cols, _bf16(y, ON_GPU), mask=mask)


@triton.jit
def ln_rows(x_ptr, w_ptr, b_ptr, y_ptr, M, stride, eps, N: tl.constexpr, BLOCK_R: tl.constexpr,
            BLOCK_N: tl.constexpr, PRECISION: tl.constexpr, ON_GPU: tl.constexpr):
    """BLOCK_R rows per program, a 2-D [BLOCK_R, BLOCK_N] tile."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    offs = rows[:, None] * stride + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = _normalise(x, mask, eps, N, PRECISION)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0)[None, :]
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)[None, :]
    y = y * w.to(y.dtype) + b.to(y.dtype)
    tl.store(y_ptr + offs, _bf16(y, ON_GPU), mask=mask)


def launch(x, w, b, y, precision: int, rows: int, warps: int):
    """rows 0: `ln_row` (1-D); else `ln_rows` with BLOCK_R = rows."""
    m, n = x.shape
    block_n = triton.next_power_of_2(n)
    if rows == 0:
        ln_row[(m,)](x, w, b, y, x.stride(0), EPS, N=n, BLOCK_N=block_n, PRECISION=precision,
                     ON_GPU=ON_GPU, num_warps=warps)  # fmt: skip
    else:
        ln_rows[(triton.cdiv(m, rows),)](x, w, b, y, m, x.stride(0), EPS, N=n, BLOCK_R=rows,
                                         BLOCK_N=block_n, PRECISION=precision, ON_GPU=ON_GPU,
                                         num_warps=warps)  # fmt: skip
    return y


def variants(row_counts, warp_counts):
    """(label, precision, rows, warps): (a) f64 / (b) ir / (c) f32 at one row per
    program (1-D) at 4 and 8 warps, then (d) ir and f32 at R rows per program
    (2-D) at each of `warp_counts`."""
    out = []
    for warps in (4, 8):
        out += [(f"{p:<3} 1d      {warps}w", PRECISIONS[p], 0, warps) for p in ("f64", "ir", "f32")]
    for rows in row_counts:
        for p in ("ir", "f32"):
            for warps in warp_counts:
                out.append((f"{p:<3} R={rows:<4} {warps}w", PRECISIONS[p], rows, warps))
    return out


def bench(fn, device: str) -> float:
    """Median microseconds (one untimed run on the CPU interpreter)."""
    if device != "cuda":
        fn()
        return float("nan")
    return triton.testing.do_bench(fn, return_mode="median") * 1e3


def run_shape(m: int, n: int, device: str, row_counts, warp_counts, compile_ref: bool) -> None:
    torch.manual_seed(0)
    x = (torch.randn(m, n, device=device) * 2 + 0.5).to(torch.bfloat16)
    w = (torch.rand(n, device=device) + 0.5).to(torch.bfloat16)
    b = (torch.randn(n, device=device) * 0.1).to(torch.bfloat16)
    ref = F.layer_norm(x.float(), (n,), w.float(), b.float(), EPS)
    nbytes = 2 * m * n * 2 + 2 * n * 2
    print(f"\n({m}, {n}) bf16, {nbytes / 1e6:.1f} MB moved")
    print(f"    {'variant':<16} {'us':>8} {'GB/s':>7} {'max err':>9} {'!=ir':>8}")

    def report(label, fn, out, base=None):
        us = bench(fn, device)
        err = (out.float() - ref).abs().max().item()
        diff = "" if base is None else f"{(out.view(torch.int16) != base.view(torch.int16)).sum().item():8d}"
        timing = f"{us:8.2f} {nbytes / us / 1e3:7.0f}" if us == us else f"{'-':>8} {'-':>7}"
        print(f"    {label:<16} {timing} {err:9.2e} {diff}", flush=True)

    out = F.layer_norm(x, (n,), w, b, EPS)
    report("torch eager", lambda: F.layer_norm(x, (n,), w, b, EPS), out)
    if compile_ref:
        torch._dynamo.reset()
        compiled = torch.compile(F.layer_norm)
        out = compiled(x, (n,), w, b, EPS)
        report("torch.compile", lambda: compiled(x, (n,), w, b, EPS), out)
    ir = launch(x, w, b, torch.empty_like(x), IR, 0, 4).clone()
    for label, precision, rows, warps in variants(row_counts, warp_counts):
        y = torch.empty_like(x)
        try:
            launch(x, w, b, y, precision, rows, warps)
        except Exception as e:  # (out of resources: report and go on)
            print(f"    {label:<16} failed: {type(e).__name__}: {str(e).splitlines()[0][:80]}")
            continue
        report(label, lambda x=x, y=y, p=precision, r=rows, wp=warps: launch(x, w, b, y, p, r, wp),
               y, ir)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shapes", nargs="*", help="MxN (default 8192x768 8192x1024 8192x4096)")
    parser.add_argument("--small", action="store_true",
                        help="tiny shapes on the CPU interpreter (TRITON_INTERPRET=1): numerics only")
    parser.add_argument("--rows", default="2,4,8", help="rows per program of the 2-D tiles")
    parser.add_argument("--warps", default="4,8,16",
                        help="warps of the 2-D tiles (16: the warps tilefuse's fit gives 4 rows of 1024)")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = parser.parse_args()
    row_counts = [int(r) for r in args.rows.split(",") if r]
    warp_counts = [int(w) for w in args.warps.split(",") if w]
    if args.small:
        if ON_GPU:
            sys.exit("--small runs on the interpreter: set TRITON_INTERPRET=1")
        device, shapes = "cpu", args.shapes or ["6x48", "5x40", "3x64"]
    else:
        device, shapes = "cuda", args.shapes or ["8192x768", "8192x1024", "8192x4096"]
    if device == "cuda":
        print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}")
    for shape in shapes:
        m, n = (int(s) for s in shape.lower().split("x"))
        run_shape(m, n, device, row_counts, warp_counts, compile_ref=not args.no_compile and device == "cuda")


if __name__ == "__main__":
    main()
