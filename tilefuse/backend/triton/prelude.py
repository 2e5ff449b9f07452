"""
The helper library of generated Triton modules: `@triton.jit` functions kernels call.

Each helper is the exact (or documented) semantics of one MLIR op that Triton has
no single instruction for: a float negation that flips the sign of zero, libm's
`powf`, `log1p`, inverse hyperbolics, `fmod`, floor and ceil division,
NaN-propagating max/min reductions, a product reduction, bf16 rounding as the GPU
does it. The printer copies the source of the helpers a module's kernels call
(transitively) into that module (`library_source`); this module is the one place
they are written, so they can be linted, imported and tested one by one.

`_ON_GPU` tells the GPU from Triton's interpreter (`TRITON_INTERPRET=1`), where
inline PTX and libdevice do not run.
"""

import os

import triton
import triton.language as tl
from triton.language.extra import libdevice

# Where the kernels run: the interpreter cannot run inline PTX or libdevice.
_ON_GPU = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") not in ("1", "true", "True"))


# A float's negation: its sign bit flipped, -0.0 for 0.0. Triton 3.6 lowers
# unary minus on floats to 0 - x, which is +0.0 for x = +0.0; a product with
# -1 is exact and flips the sign of zeros, infinities and NaNs alike.
@triton.jit
def _neg(x):
    return x * -1.0


# libm's powf: exp(y log|x|), negated for a negative base (-0.0 included) and
# an odd integral exponent, NaN for a negative base and a non-integral one;
# pow(1, y) = pow(x, 0) = pow(-1, +-inf) = 1.
@triton.jit
def _powf(x, y):
    # One shape for both (the interpreter cannot combine 0-d and n-d booleans);
    # a select, not an addition, keeps the sign of -0.0.
    x = tl.where(y == y, x, x)
    y = tl.where(x == x, y, y)
    ax = tl.abs(x)
    r = tl.exp(y * tl.log(ax))
    odd = (tl.floor(y) == y) & (tl.floor(y * 0.5) * 2.0 != y)
    r = tl.where(((x < 0.0) | (1.0 / x < 0.0)) & odd, _neg(r), r)
    r = tl.where((x < 0.0) & (tl.floor(y) != y), float("nan"), r)
    r = tl.where((ax == 1.0) & (tl.abs(y) == float("inf")), 1.0, r)
    return tl.where((x == 1.0) | (y == 0.0), 1.0, r)


# math.fpowi with an exponent that is not a constant: compiler-rt's __powisf2
# (square the base per bit of |n|, multiply where the bit is set, the reciprocal
# for a negative n), so a negative base keeps its sign (powf's exp(n log x) is
# NaN there). 64 rounds cover any i64 exponent; |i64 min| reads as 2**63.
@triton.jit
def _fpowi(x, n):
    x = tl.where(n == n, x, x)
    n = tl.where(x == x, n, n).to(tl.int64)
    m = tl.where(n < 0, -n, n).to(tl.uint64, bitcast=True)
    r = tl.where(x == x, 1.0, 1.0).to(x.dtype)
    for _ in range(64):
        r = tl.where((m & 1) != 0, r * x, r)
        m = m >> 1
        x = x * x
    return tl.where(n < 0, 1.0 / r, r)


# A runtime check (cf.assert): lanes where `cond` is false record the check's
# number in the program's flag (the largest number wins); no lane writes where
# every check holds. The host reads the flag once after the kernels ran.
@triton.jit
def _check(flag_ptr, cond, number):
    bad = cond == 0
    tl.atomic_max(flag_ptr + bad.to(tl.int32) * 0, number, mask=bad)


# log(1 + x) and exp(x) - 1 without cancellation near 0 (Goldberg's and
# Kahan's forms: the rounding error of 1 + x, or of exp(x), divides out).
@triton.jit
def _log1p(x):
    u = 1.0 + x
    v = tl.where(u == 1.0, x, tl.log(u) * (x / (u - 1.0)))
    return tl.where(u == float("inf"), u, v)


@triton.jit
def _expm1(x):
    u = tl.exp(x)
    v = tl.where(u == 1.0, x, (u - 1.0) * (x / tl.log(u)))
    v = tl.where(u - 1.0 == -1.0, -1.0, v)
    return tl.where(u == float("inf"), u, v)


# sinh and cosh; past |x| = 20, e^|x| / 2 as exp(|x| - ln 2), which stays
# finite up to where the result itself overflows.
@triton.jit
def _sinh(x):
    big = tl.where(x < 0.0, -1.0, 1.0) * tl.exp(tl.abs(x) - 0.6931471805599453)
    return tl.where(tl.abs(x) > 20.0, big, 0.5 * (_expm1(x) - _expm1(_neg(x))))


@triton.jit
def _cosh(x):
    e = tl.exp(tl.abs(x))
    return tl.where(tl.abs(x) > 20.0, tl.exp(tl.abs(x) - 0.6931471805599453), 0.5 * (e + 1.0 / e))


@triton.jit
def _tan(x):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def _trunc(x):
    return tl.where(x < 0.0, tl.ceil(x), tl.floor(x))


# math.roundeven (torch.round): floor, then the fraction decides; a tie goes to
# the even neighbour. Exact: no x + 0.5 (0.49999997 + 0.5 rounds up to 1.0).
@triton.jit
def _roundeven(x):
    f = tl.floor(x)
    d = x - f
    odd = f - 2.0 * tl.floor(f * 0.5)
    r = tl.where(d > 0.5, f + 1.0, tl.where(d < 0.5, f, f + odd))
    r = tl.where(r == 0.0, x * 0.0, r)  # -0.5 rounds to -0.0
    return tl.where(tl.abs(x) == float("inf"), x, r)


# math.round: halves away from zero; the sign of -0.0 kept.
@triton.jit
def _round(x):
    a = tl.abs(x)
    f = tl.floor(a)
    r = tl.where(a - f >= 0.5, f + 1.0, f)
    r = tl.where(a == float("inf"), a, r)
    return tl.where(x == 0.0, x, tl.where(x < 0.0, _neg(r), r))


# math.copysign: |a| with the sign bit of b (-0.0 and negative NaNs included).
@triton.jit
def _copysign(a, b):
    return tl.where(b.to(tl.int32, bitcast=True) < 0, _neg(tl.abs(a)), tl.abs(a))


@triton.jit
def _copysign_f64(a, b):
    return tl.where(b.to(tl.int64, bitcast=True) < 0, _neg(tl.abs(a)), tl.abs(a))


# math.cbrt: exp2(log2|x| / 3), one Newton step, the sign of x; 0, inf, NaN kept.
@triton.jit
def _cbrt(x):
    a = tl.abs(x)
    y = tl.exp2(tl.log2(a) * 0.3333333333333333)
    y = y - (y - a / (y * y)) * 0.3333333333333333
    y = tl.where((a == 0.0) | (a == float("inf")), a, y)
    return tl.where(x == 0.0, x, tl.where(x < 0.0, _neg(y), y))


# Inverse hyperbolic functions through _log1p (glibc's forms): asinh(a) =
# log1p(a + a^2 / (1 + sqrt(1 + a^2))), acosh(1 + t) = log1p(t + sqrt(2t + t^2)),
# atanh(a) = log1p(2a + 2a^2 / (1 - a)) / 2 (below 0.5, else 2a / (1 - a));
# past 2^28, log(a) + ln 2. Odd ones keep the sign of zero; NaN outside domains.
@triton.jit
def _asinh(x):
    a = tl.abs(x)
    big = tl.log(a) + 0.6931471805599453
    r = tl.where(a > 268435456.0, big, _log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a))))
    return tl.where(x < 0.0, _neg(r), tl.where(x == 0.0, x, r))


@triton.jit
def _acosh(x):
    t = x - 1.0
    big = tl.log(x) + 0.6931471805599453
    r = tl.where(x > 268435456.0, big, _log1p(t + tl.sqrt(2.0 * t + t * t)))
    return tl.where(x < 1.0, float("nan"), r)


@triton.jit
def _atanh(x):
    a = tl.abs(x)
    r = 0.5 * tl.where(a < 0.5, _log1p(2.0 * a + 2.0 * a * a / (1.0 - a)), _log1p(2.0 * a / (1.0 - a)))
    return tl.where(x < 0.0, _neg(r), tl.where(x == 0.0, x, r))


# arith.remf, C's fmod (exact): libdevice's on the GPU (LLVM's frem on NVPTX is
# a - b * trunc(a / b), inexact for large quotients); np.fmod in the interpreter.
@triton.jit
def _fmod(x, y):
    if _ON_GPU:  # noqa: SIM108 (a constexpr branch: one side is never compiled)
        r = libdevice.fmod(x, y)
    else:
        r = x % y
    return r


# arith.floordivsi / ceildivsi: Triton's // truncates toward zero (C); the
# quotient moves down (up) by one when the remainder is nonzero and the signs
# differ (agree).
@triton.jit
def _floordiv(a, b):
    q = a // b
    r = a - q * b
    return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)


@triton.jit
def _ceildiv(a, b):
    q = a // b
    r = a - q * b
    return tl.where((r != 0) & ((r < 0) == (b < 0)), q + 1, q)


# math.atan: Cephes' double-precision atan (range reduction at tan(3pi/8) and
# 0.66, then a 4/5 rational in z^2), which also serves f32 computations; the
# sign of -0.0 kept, NaN propagated.
@triton.jit
def _atan(x):
    a = tl.abs(x)
    big = a > 2.414213562373095
    mid = a > 0.66
    z = tl.where(big, -1.0 / a, tl.where(mid, (a - 1.0) / (a + 1.0), a))
    zero = tl.zeros_like(a)  # (a where of two Python floats would be an f32 block)
    y0 = tl.where(big, 1.5707963267948966, tl.where(mid, 0.7853981633974483, zero))
    more = tl.where(big, 6.123233995736766e-17, tl.where(mid, 3.061616997868383e-17, zero))
    w = z * z
    p = (((-0.8750608600031904 * w - 16.157537187333652) * w - 75.00855792314705) * w
         - 122.88666844901361) * w - 64.85021904942025
    q = ((((w + 24.858464901423062) * w + 165.02700983169885) * w + 432.88106049129027) * w
         + 485.3903996359137) * w + 194.5506571482614
    r = y0 + (z * (w * p / q) + z + more)
    return tl.where(x < 0.0, _neg(r), tl.where(x == 0.0, x, r))


# math.atan2(y, x): atan(|y| / |x|) put in its quadrant, C99's special cases:
# (+-0, +-0), infinities, the sign of zero (1 / x < 0 tells -0.0 from 0.0).
@triton.jit
def _atan2(y, x):
    # (one shape for both: the interpreter cannot combine 0-d and n-d booleans)
    x = tl.where(y == y, x, x)
    y = tl.where(x == x, y, y)
    ax = tl.abs(x)
    ay = tl.abs(y)
    t = _atan(ay / ax)
    t = tl.where((ay == 0.0) & (ax == 0.0), 0.0, t)
    t = tl.where((ay == float("inf")) & (ax == float("inf")), 0.7853981633974483, t)
    r = tl.where((x < 0.0) | ((x == 0.0) & (1.0 / x < 0.0)), 3.141592653589793 - t, t)
    return tl.where((y < 0.0) | ((y == 0.0) & (1.0 / y < 0.0)), _neg(r), r)


# math.asin and math.acos through atan2 (sqrt((1 - x)(1 + x)) keeps its bits near
# |x| = 1); NaN past |x| = 1.
@triton.jit
def _asin(x):
    return _atan2(x, tl.sqrt((1.0 - x) * (1.0 + x)))


@triton.jit
def _acos(x):
    return _atan2(tl.sqrt((1.0 - x) * (1.0 + x)), x)


# tanh of an f64 op: _tanh's short series is only good to fp32 precision.
@triton.jit
def _tanh_f64(x):
    u = _expm1(-2.0 * tl.abs(x))
    return tl.where(x < 0, 1.0, -1.0) * u / (u + 2.0)


# tanh without cancellation near 0, the same on the GPU and in the interpreter:
# an odd Taylor series for |x| < 1/16, else (1 - e^-2|x|) / (1 + e^-2|x|).
# (H200, bias+GELU bf16 8192x8192: this 83 us, libdevice.tanh 88 us.)
@triton.jit
def _tanh(x):
    e = tl.exp(-2.0 * tl.abs(x))
    big = tl.where(x < 0, -1.0, 1.0) * (1.0 - e) / (1.0 + e)
    small = x * (1.0 - x * x * (0.3333333333333333 - x * x * 0.13333333333333333))
    return tl.where(tl.abs(x) < 0.0625, small, big)


# tanh of a bf16 op: on the GPU, the SFU's tanh.approx.f32 (one instruction;
# max relative error 2^-10.99, under a quarter of a bf16 ulp); the interpreter
# cannot run inline PTX and uses _tanh.
@triton.jit
def _tanh_bf16(x):
    if _ON_GPU:
        y = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x],
                                      dtype=tl.float32, is_pure=True, pack=1)
    else:
        y = _tanh(x)
    return y


# erf of an f32 (or 16-bit) op. On the GPU, libdevice's erff without its branch: the
# same two degree-6 polynomials (|x| < 1.00296: x (1 + P(x^2)); else 1 - 2^(-|x| (1 +
# Q(|x|))) with the sign of x), coefficients, fmas and ex2.approx, both evaluated and one
# selected. libdevice picks a polynomial's coefficients per element (two moves each) and
# branches around the exponential: an erf-GELU epilogue's erf took ~30 instructions an
# element, this ~20 (BERT's FC1, 128 x 256: 3048 -> 2512 SASS instructions, 14 spilled
# registers -> none; 97.7 -> 90.5 us on an H100). The coefficients are those of the
# libdevice Triton 3.6 carries (CUDA 12): bit for bit its tl.erf wherever x is normal (a
# subnormal x: libdevice's ftz gives 0, this ~1.13 x); Triton 3.9's libdevice has other
# Q coefficients, within 1 ulp of these; both within 2 ulp of erf. The interpreter has
# no libdevice: tl.erf there.
@triton.jit
def _erf(x):
    return _erff(x) if _ON_GPU else tl.erf(x)


@triton.jit
def _erff(x):
    t = tl.abs(x)
    s = x * x
    big = tl.fma(1.6425845387857407e-05, t, -0.0004680210549850017)
    big = tl.fma(big, t, 0.0052647641859948635)
    big = tl.fma(big, t, -0.034303076565265656)
    big = tl.fma(big, t, 0.1532936990261078)
    big = tl.fma(big, t, 0.9163130521774292)
    big = tl.fma(big, t, 0.6282998323440552)
    big = 1.0 - tl.exp2(tl.fma(big, -t, -t))
    small = tl.fma(8.483494457323104e-05, s, -0.0008213091641664505)
    small = tl.fma(small, s, 0.005213488824665546)
    small = tl.fma(small, s, -0.026868773624300957)
    small = tl.fma(small, s, 0.11284004896879196)
    small = tl.fma(small, s, -0.37612664699554443)
    small = tl.fma(small, s, 0.12837915122509003)
    small = tl.fma(small, x, x)
    return tl.where(t >= 1.002959966659546, tl.where(x < 0.0, -big, big), small)


# fp32 rounded to the nearest even bf16 value (returned as fp32), as the GPU
# converts; Triton's interpreter truncates, so there the rounding is done on the
# bits (NaN kept).
@triton.jit
def _round_bf16(x):
    if _ON_GPU:
        r = x.to(tl.bfloat16).to(tl.float32)
    else:  # (the result stays f32: the interpreter's converter also flushes subnormals)
        xf = x.to(tl.float32)  # (an f64 x: the interpreter's f64 -> bf16 makes NaNs)
        bits = xf.to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        r = tl.where(xf != xf, xf, bits.to(tl.float32, bitcast=True))
    return r


# A stored bf16 value: the GPU's conversion rounds to nearest even; the
# interpreter's truncates, so there the bits are rounded first.
@triton.jit
def _to_bf16(x):
    if _ON_GPU:  # noqa: SIM108 (a constexpr branch)
        r = x.to(tl.bfloat16)
    else:
        r = _round_bf16(x).to(tl.bfloat16)
    return r


# Reductions by arith.maximumf/minimumf: NaN if any element is. On the GPU a
# reduction whose combiner propagates NaN (max.NaN.f32); the interpreter runs a
# custom combiner element by element, so there: tl.max, then the NaN test (the
# NaNs replaced first: the interpreter's tl.max warns on a slice of NaNs only).
@triton.jit
def _max_nan_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_nan_combine(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


# A product reduction (arith.mulf combiner): no tl.prod in Triton.
@triton.jit
def _mul_combine(a, b):
    return a * b


@triton.jit
def _prod(x, axis: tl.constexpr):
    return tl.reduce(x, axis, _mul_combine)


@triton.jit
def _max_nan(x, axis: tl.constexpr):
    if _ON_GPU:
        r = tl.reduce(x, axis, _max_nan_combine)
    else:
        r = tl.where(tl.max((x != x).to(tl.int32), axis) > 0, float("nan"),
                     tl.max(tl.where(x != x, float("-inf"), x), axis))
    return r


@triton.jit
def _min_nan(x, axis: tl.constexpr):
    if _ON_GPU:
        r = tl.reduce(x, axis, _min_nan_combine)
    else:
        r = tl.where(tl.max((x != x).to(tl.int32), axis) > 0, float("nan"),
                     tl.min(tl.where(x != x, float("inf"), x), axis))
    return r


# Integer reductions by arith.andi/ori/xori; on i1 (0/1 in Triton) as counts,
# so no bitwise reduction of int1 is asked of the compiler.
@triton.jit
def _and_combine(a, b):
    return a & b


@triton.jit
def _or_combine(a, b):
    return a | b


@triton.jit
def _xor_combine(a, b):
    return a ^ b


@triton.jit
def _and_reduce(x, axis: tl.constexpr):
    return tl.reduce(x, axis, _and_combine)


@triton.jit
def _or_reduce(x, axis: tl.constexpr):
    return tl.reduce(x, axis, _or_combine)


@triton.jit
def _xor_reduce(x, axis: tl.constexpr):
    return tl.reduce(x, axis, _xor_combine)


@triton.jit
def _all(x, axis: tl.constexpr):
    return tl.min(x.to(tl.int32), axis) != 0


@triton.jit
def _any(x, axis: tl.constexpr):
    return tl.max(x.to(tl.int32), axis) != 0


@triton.jit
def _parity(x, axis: tl.constexpr):
    return (tl.sum(x.to(tl.int32), axis) & 1) != 0


# A max/min and the first position it is reached at (argmax, argmin), as the
# IR's sequential loop computes them (`ir/structured.py`'s `ArgReduction`): the
# position `acc_i` moves only to an element strictly past the running extremum,
# which starts at `acc`, so ties keep the first position and, for floats, no
# element at or after the first NaN (the running value is NaN from there on, and
# comparisons with NaN are false) moves it. Along `axis`: the extremum of the
# elements before the first NaN, the least position holding it (two plain
# reductions: no order of a tree reduction to rely on), taken if past `acc`.
@triton.jit
def _before_first_nan(x, position, fill, axis: tl.constexpr):
    nan = tl.min(tl.where(x != x, position, 2147483647), axis)
    return tl.where(position < tl.expand_dims(nan, axis), x, fill)


@triton.jit
def _first_position(x, best, position, axis: tl.constexpr):
    return tl.min(tl.where(x == tl.expand_dims(best, axis), position, 2147483647), axis)


@triton.jit
def _arg_max_int(x, position, acc, acc_i, axis: tl.constexpr):
    best = tl.max(x, axis)
    return tl.where(best > acc, _first_position(x, best, position, axis), acc_i)


@triton.jit
def _arg_min_int(x, position, acc, acc_i, axis: tl.constexpr):
    best = tl.min(x, axis)
    return tl.where(best < acc, _first_position(x, best, position, axis), acc_i)


@triton.jit
def _arg_max(x, position, acc, acc_i, axis: tl.constexpr):
    return _arg_max_int(_before_first_nan(x, position, float("-inf"), axis), position, acc, acc_i, axis)


@triton.jit
def _arg_min(x, position, acc, acc_i, axis: tl.constexpr):
    return _arg_min_int(_before_first_nan(x, position, float("inf"), axis), position, acc, acc_i, axis)

