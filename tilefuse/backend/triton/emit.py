"""
The Triton printer: tile programs become `@triton.jit` kernels, plus a host function.

Input: a module after `tile-and-fuse` (every group's body is one
`tilefuse.tile_grid`). Output: a Python module, one kernel per group, each
preceded by a comment naming the ops it fuses and its tiles, and a host function
(named after the MLIR function) that allocates outputs and intermediates and
launches the kernels in order.

One handler per op, as xDSL's WGSL printer does it:

- `tile_grid`: the kernel; program ids come from one flat `tl.program_id(0)`;
- `tilefuse.load` / `tilefuse.store`: `tl.load` / `tl.store` with offsets from
  strides and masks on the dims whose tiles can be partial;
- `linalg.generic` on tiles: block arithmetic in the op's loop space: each
  operand is permuted and expanded (`None` indexing) by its indexing map, the
  payload becomes elementwise block expressions, reductions `tl.sum`/`tl.max`/
  `tl.min` along the reduction axes, and a `mulf`+`addf` contraction `tl.dot`
  with fp32 accumulation;
- `scf.for`: a Python `for` carrying blocks.

Everything is computed in fp32 (fp64 in a kernel with an fp64 tensor:
`compute_type`); float loads upcast (integer and i1 loads keep their type) and stores cast to the destination's type. Under Triton's interpreter, `tl.dot` gets fp32 operands
(Triton 3.9's interpreter computes bf16 dots wrongly), chosen by the
`DOT_DTYPE` constexpr the runtime passes.
"""

from __future__ import annotations

import builtins
import io
import keyword
import math
from collections.abc import Sequence

from xdsl.dialects import arith, func, scf, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, SSAValue

from tilefuse.analysis.dataflow import is_contraction, pad_value, product_operand
from tilefuse.ir.arith_extra import RemFOp
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.module import entry_function
from tilefuse.ir.structured import (
    REDUCTION,
    StructuredOp,
    as_structured,
    cmpf_predicate,
    element_type,
)
from tilefuse.ir.tilefuse import (
    GroupOp,
    LoadOp,
    StoreOp,
    TileGridOp,
    WindowOp,
    grid_inputs,
    same_tile_program,
)

TORCH_DTYPE = {Float32Type: "torch.float32", Float16Type: "torch.float16",
               BFloat16Type: "torch.bfloat16", Float64Type: "torch.float64"}  # fmt: skip
TL_DTYPE = {Float32Type: "tl.float32", Float16Type: "tl.float16",
            BFloat16Type: "tl.bfloat16", Float64Type: "tl.float64"}  # fmt: skip

BINARY = {arith.AddfOp: "({} + {})", arith.SubfOp: "({} - {})", arith.MulfOp: "({} * {})",
          arith.DivfOp: "({} / {})",
          arith.MaximumfOp: "tl.maximum({}, {}, propagate_nan=tl.PropagateNan.ALL)",
          arith.MinimumfOp: "tl.minimum({}, {}, propagate_nan=tl.PropagateNan.ALL)",
          arith.MaxnumfOp: "tl.maximum({}, {})", arith.MinnumfOp: "tl.minimum({}, {})",
          arith.AddiOp: "({} + {})",
          arith.SubiOp: "({} - {})", arith.MuliOp: "({} * {})", arith.AndIOp: "({} & {})",
          arith.DivSIOp: "({} // {})", arith.RemSIOp: "({} % {})",
          arith.OrIOp: "({} | {})", mathd.PowFOp: "_powf({}, {})",
          mathd.CopySignOp: "_copysign({}, {})", mathd.Atan2Op: "_atan2({}, {})",
          RemFOp: "_fmod({}, {})",
          arith.XOrIOp: "({} ^ {})",
          arith.ShLIOp: "({} << {})", arith.ShRSIOp: "({} >> {})",
          arith.MaxSIOp: "tl.maximum({}, {})", arith.MinSIOp: "tl.minimum({}, {})"}  # fmt: skip
UNARY = {arith.NegfOp: "_neg({})", mathd.ExpOp: "tl.exp({})", mathd.Exp2Op: "tl.exp2({})",
         mathd.LogOp: "tl.log({})", mathd.Log2Op: "tl.log2({})",
         mathd.Log1pOp: "_log1p({})", mathd.ExpM1Op: "_expm1({})",
         mathd.Log10Op: "(tl.log({}) * 0.4342944819032518)", mathd.SqrtOp: "tl.sqrt({})",
         mathd.RsqrtOp: "tl.rsqrt({})", mathd.AbsFOp: "tl.abs({})",
         mathd.ErfOp: "tl.erf({})",
         mathd.TanhOp: "_tanh({})",
         mathd.FloorOp: "tl.floor({})", mathd.CeilOp: "tl.ceil({})",
         mathd.SinOp: "tl.sin({})", mathd.CosOp: "tl.cos({})", mathd.TanOp: "_tan({})",
         mathd.AtanOp: "_atan({})", mathd.AsinOp: "_asin({})", mathd.AcosOp: "_acos({})",
         mathd.AsinhOp: "_asinh({})", mathd.AcoshOp: "_acosh({})", mathd.AtanhOp: "_atanh({})",
         mathd.SinhOp: "_sinh({})", mathd.CoshOp: "_cosh({})", mathd.TruncOp: "_trunc({})",
         mathd.RoundEvenOp: "_roundeven({})", mathd.RoundOp: "_round({})",
         mathd.CbrtOp: "_cbrt({})",
         arith.ExtFOp: "{}", arith.TruncFOp: "{}", arith.IndexCastOp: "{}",
         }  # fmt: skip
# arith.cmpf: Python's comparisons are false on NaN (ordered), != true (une);
# an unordered u<op> is the negation of the ordered opposite comparison.
CMP = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "une": "!="}
UNORDERED = {"ugt": "<=", "uge": "<", "ult": ">=", "ule": ">"}
CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}
# maximumf/minimumf are NaN if any element is (IEEE maximum, torch.max); tl.max
# and tl.min skip NaNs, as maxnumf/minnumf do.
REDUCE = {arith.AddfOp: "tl.sum", arith.MulfOp: "_prod", arith.MaximumfOp: "_max_nan", arith.MinimumfOp: "_min_nan",
          arith.MaxSIOp: "tl.max", arith.MinSIOp: "tl.min",
          arith.MaxnumfOp: "tl.max", arith.MinnumfOp: "tl.min", arith.AddiOp: "tl.sum"}  # fmt: skip
MIN_DOT = 16


PRELUDE = '''
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
    if _ON_GPU:
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
_ON_GPU = tl.constexpr(os.environ.get("TRITON_INTERPRET", "0") not in ("1", "true", "True"))


@triton.jit
def _tanh_bf16(x):
    if _ON_GPU:
        y = tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [x],
                                      dtype=tl.float32, is_pure=True, pack=1)
    else:
        y = _tanh(x)
    return y


# fp32 rounded to the nearest even bf16 value (returned as fp32), as the GPU
# converts; Triton's interpreter truncates, so there the rounding is done on the
# bits (NaN kept).
@triton.jit
def _round_bf16(x):
    if _ON_GPU:
        r = x.to(tl.bfloat16).to(tl.float32)
    else:  # (the result stays f32: the interpreter's converter also flushes subnormals)
        bits = x.to(tl.float32).to(tl.uint32, bitcast=True)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        r = tl.where(x != x, x, bits.to(tl.float32, bitcast=True))
    return r



# A stored bf16 value: the GPU's conversion rounds to nearest even; the
# interpreter's truncates, so there the bits are rounded first.
@triton.jit
def _to_bf16(x):
    if _ON_GPU:
        r = x.to(tl.bfloat16)
    else:
        r = _round_bf16(x).to(tl.bfloat16)
    return r


# Reductions by arith.maximumf/minimumf: NaN if any element is. On the GPU a
# reduction whose combiner propagates NaN (max.NaN.f32); the interpreter runs a
# custom combiner element by element, so there: tl.max, then the NaN test.
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
        r = tl.where(tl.max((x != x).to(tl.int32), axis) > 0, float("nan"), tl.max(x, axis))
    return r


@triton.jit
def _min_nan(x, axis: tl.constexpr):
    if _ON_GPU:
        r = tl.reduce(x, axis, _min_nan_combine)
    else:
        r = tl.where(tl.max((x != x).to(tl.int32), axis) > 0, float("nan"), tl.min(x, axis))
    return r

'''


INT_WIDTHS = {1: "bool", 8: "int8", 16: "int16", 32: "int32", 64: "int64"}
"""Integer tensors the host hands over: i1 as torch.bool (Triton's int1 pointers)."""


def tl_dtype(t: Attribute) -> str:
    """The Triton type of a tensor's elements (floats, or signless integers)."""
    et = element_type(t)
    if isinstance(et, IntegerType) and et.width.data in INT_WIDTHS:
        return f"tl.int{et.width.data}"
    if type(et) not in TL_DTYPE:
        raise CompileError(f"the Triton backend does not support tensors of element type {et}")
    return TL_DTYPE[type(et)]


def torch_dtype(t: Attribute, at: Operation | None = None) -> str:
    """The torch dtype of a tensor the host allocates (`at`: the op it comes from,
    for the error's location)."""
    et = element_type(t)
    if isinstance(et, IntegerType) and et.width.data in INT_WIDTHS:
        return f"torch.{INT_WIDTHS[et.width.data]}"
    if type(et) not in TORCH_DTYPE:
        message = f"the Triton backend does not support tensors of element type {et} between kernels"
        raise CompileError.at(at, message) if at is not None else CompileError(message)
    return TORCH_DTYPE[type(et)]


def _literal(value: float) -> str:
    if math.isinf(value):
        return 'float("-inf")' if value < 0 else 'float("inf")'
    if math.isnan(value):
        return 'float("nan")'
    return repr(float(value))


# Names a generated module uses besides its own: Python's keywords and builtins
# (`range`, `min`, `float` appear in kernels), the module's imports, helpers
# and host-side names. No SSA name may become one of them.
PYTHON_RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins))
MODULE_NAMES = ("torch", "triton", "tl", "os", "libdevice", "KERNELS", "device", "dot_dtype",
                "DOT_DTYPE", "DOT_PRECISION", "_ON_GPU", "_neg", "_tanh", "_tanh_bf16", "_powf", "_log1p",
                "_expm1", "_sinh", "_cosh", "_tan", "_trunc", "_tanh_f64", "_max_nan", "_min_nan",
                "_max_nan_combine", "_min_nan_combine", "_prod", "_mul_combine", "_round_bf16", "_roundeven", "_round",
                "_copysign", "_copysign_f64", "_cbrt", "_to_bf16", "_atan", "_atan2", "_asin", "_acos", "_floordiv", "_ceildiv", "_asinh", "_acosh", "_atanh", "_fmod")  # fmt: skip


class Names:
    """Python identifiers for SSA values, from their name hints (never a keyword,
    a builtin or a name of the generated module: see MODULE_NAMES)."""

    def __init__(self, reserved: Sequence[str] = ()):
        self.of: dict[SSAValue, str] = {}
        self.used: set[str] = set(reserved) | PYTHON_RESERVED | set(MODULE_NAMES)

    def fresh(self, hint: str) -> str:
        base = "".join(c if c.isalnum() else "_" for c in hint) or "v"
        if base[0].isdigit():
            base = "v" + base
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def __call__(self, value: SSAValue) -> str:
        if value not in self.of:
            self.of[value] = self.fresh(value.name_hint or "v")
        return self.of[value]


class KernelPrinter:
    """Prints a group's tile grids as one `@triton.jit` kernel.

    One grid: its body, program ids from `tl.program_id(0)`. Several grids (a
    horizontal bundle) are launched side by side: when they run the same tile
    program on other tensors (`same_tile_program`), one body is printed and
    each tensor that differs is picked by segment (`tl.where` on the pointer;
    the host makes their strides equal); otherwise each grid is a branch on
    the program id.
    """

    def __init__(self, name: str, group: GroupOp, grids: Sequence[TileGridOp],
                 stacked: list[list[SSAValue]] | None = None):  # fmt: skip
        self.name, self.group, self.grids = name, group, list(grids)
        self.stacked = stacked if stacked is not None else stacked_tensors(self.grids)
        self.grid = self.grids[0]
        self.names = Names(("tl", "triton", "os", "libdevice", "_tanh", "_tanh_bf16", "_ON_GPU",
                            "pid", "seg", "DOT_DTYPE", "DOT_PRECISION", "tile", "group",
                            "first_m", "rows"))  # fmt: skip
        self.lines: list[str] = []
        self.indent = 1
        self.expr: dict[SSAValue, str] = {}  # inlined expressions (constants, index math)
        self.shape: dict[SSAValue, tuple[int, ...]] = {}
        self.destinations = [d for g in self.grids for d in g.destinations]
        self.tensors = list(group.entry.args) + self.destinations
        self.params = {v: self.names.fresh(self._param_hint(v)) for v in self.tensors}
        self.hints: dict[LoadOp, str] = {}
        self.compute = compute_type(group)

    def _param_hint(self, v: SSAValue) -> str:
        if v in self.destinations:
            return f"out{self.destinations.index(v)}"
        return f"in{list(self.group.entry.args).index(v)}"

    # -- output helpers --------------------------------------------------------

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def ref(self, v: SSAValue) -> str:
        if v in self.expr:
            return self.expr[v]
        if v in self.names.of:
            return self.names.of[v]
        raise CompileError(f"the Triton backend met a value it has not computed: {v}")

    def bind(self, v: SSAValue, expression: str, shape: tuple[int, ...] = ()) -> str:
        name = self.names(v)
        self.emit(f"{name} = {expression}")
        self.shape[v] = shape
        return name

    # -- kernel ----------------------------------------------------------------

    def print(self) -> str:
        params = []
        bare = pointer_only(self.stacked)
        for v in self.tensors:
            p = self.params[v]
            rank = 0 if v in bare else len(v.type.get_shape())
            params += [f"{p}_ptr"] + [f"{p}_s{i}" for i in range(rank)]
        self.lines.append("@triton.jit")
        self.lines.append(
            f"def {self.name}({', '.join(params)}, DOT_DTYPE: tl.constexpr, "
            "DOT_PRECISION: tl.constexpr):"
        )
        self.emit("pid = tl.program_id(0)")
        if len(self.grids) == 1:
            self.print_grid(self.grid, "pid")
        elif self.stacked is not None:
            self.print_stacked(self.stacked)
        else:
            self.print_branches()
        return "\n".join(self.lines)

    def print_grid(self, grid: TileGridOp, pid: str) -> None:
        self.hints = reread_hints(grid)
        self.print_program_ids(grid, pid)
        self.print_block(grid.body.block)

    def print_stacked(self, stacked: list[list[SSAValue]]) -> None:
        """One body for grids running the same program: pick each member's tensors."""
        programs = math.prod(self.grid.grid_shape)
        self.emit(f"seg = pid // {programs}")
        # Picks read the kernel's own parameters: a tensor can be one member's
        # first-slot tensor and another member's tensor in a later slot.
        param = dict(self.params)
        for column in stacked:
            first = column[0]
            if all(v is first for v in column):
                continue
            sel = self.names.fresh(f"{param[first]}_sel")
            pick = f"{param[column[-1]]}_ptr"
            for k in range(len(column) - 2, -1, -1):
                pick = f"tl.where(seg == {k}, {param[column[k]]}_ptr, {pick})"
            self.emit(f"{sel}_ptr = {pick}")
            for i in range(len(first.type.get_shape())):  # equal strides: the host sees to it
                self.emit(f"{sel}_s{i} = {param[first]}_s{i}")
            self.params[first] = sel
        self.emit(f"pid = pid % {programs}")
        self.print_grid(self.grid, "pid")

    def print_branches(self) -> None:
        """Grids running different programs: one branch per grid, by program id."""
        start = 0
        for k, grid in enumerate(self.grids):
            end = start + math.prod(grid.grid_shape)
            head = "if" if k == 0 else "elif" if k < len(self.grids) - 1 else "else"
            self.emit(f"{head} pid < {end}:" if head != "else" else "else:")
            self.indent += 1
            local = self.names.fresh("lpid")
            self.emit(f"{local} = pid - {start}")
            self.print_grid(grid, local)
            self.indent -= 1
            start = end

    def print_program_ids(self, grid: TileGridOp, pid: str) -> None:
        """Row-major program ids; M and N in grouped order when the plan asks."""
        shape, ids = grid.grid_shape, grid.program_ids
        swizzle = grid.attributes.get("swizzle")
        if swizzle is None:
            for k, arg in enumerate(ids):
                stride = math.prod(shape[k + 1 :])
                self.bind(arg, f"({pid} // {stride}) % {shape[k]}" if stride > 1 else f"{pid} % {shape[k]}")
            return
        im, jn = swizzle.get_values()
        group_m = grid.attributes["group_m"].value.data
        gm, gn = shape[im], shape[jn]
        rest = [k for k in range(len(shape)) if k not in (im, jn)]
        self.emit(f"tile = {pid} % {gm * gn}")
        self.emit(f"group = tile // {group_m * gn}")
        self.emit(f"first_m = group * {group_m}")
        self.emit(f"rows = min({gm} - first_m, {group_m})")
        self.bind(ids[im], "first_m + (tile % rows)")
        self.bind(ids[jn], f"(tile % {group_m * gn}) // rows")
        outer = f"{pid} // {gm * gn}"
        for k in rest:
            stride = math.prod(shape[j] for j in rest if j > k)
            self.bind(ids[k], f"({outer} // {stride}) % {shape[k]}")

    def print_block(self, block: Block) -> None:
        for op in block.ops:
            self.print_op(op)

    def print_op(self, op: Operation) -> None:
        if isinstance(op, arith.ConstantOp):
            self.expr[op.result] = self._constant(op)
        elif isinstance(op, tensor.EmptyOp):
            self.shape[op.tensor] = kept_shape(op.tensor.type)
            self.expr[op.tensor] = "None"
        elif isinstance(op, LoadOp):
            self.print_load(op)
        elif isinstance(op, StoreOp):
            self.print_store(op)
        elif isinstance(op, scf.ForOp):
            self.print_for(op)
        elif isinstance(op, scf.YieldOp):
            self.print_yield(op)
        elif (s := as_structured(op)) is not None:
            GenericPrinter(self, s).print()
        elif type(op) in BINARY or type(op) in UNARY or isinstance(op, arith.CmpiOp | arith.SelectOp):
            self.expr[op.results[0]] = scalar_expr(op, self.ref)
        else:
            raise CompileError.at(op, "is not supported by the Triton backend")

    def _constant(self, op: arith.ConstantOp) -> str:
        v = op.value
        if isinstance(v, IntegerAttr):
            if getattr(v.type, "width", None) is not None and v.type.width.data == 1:
                return str(bool(v.value.data))  # an i1: a condition for tl.where
            return str(v.value.data)
        if isinstance(v, FloatAttr):
            return _literal(v.value.data)
        raise CompileError.at(op, "has a constant the Triton backend cannot print")

    # -- memory ----------------------------------------------------------------

    def _addressing(self, tensor_value: SSAValue, offsets, tile: Sequence[int]) -> tuple[str, str]:
        """Pointer and mask expressions for a tile of `tensor_value` at `offsets`.

        Unit axes of the tile add a scalar offset; the others get an arange,
        expanded over the tile's non-unit axes only.
        """
        p = self.params[tensor_value]
        full = tensor_value.type.get_shape()
        kept = [i for i, size in enumerate(tile) if size != 1]
        ptr, masks = [f"{p}_ptr"], []
        for i, (off, size, extent) in enumerate(zip(offsets, tile, full, strict=True)):
            if size == 1:
                term = self.ref(off)
                if term != "0":
                    ptr.append(f"{term} * {p}_s{i}")
                continue
            o = self.names.fresh(f"offs{i}")
            self.emit(f"{o} = {self.ref(off)} + tl.arange(0, {size})")
            index = ", ".join(":" if j == i else "None" for j in kept)
            term = f"{o}[{index}]" if len(kept) > 1 else o
            ptr.append(f"{term} * {p}_s{i}")
            if extent % size != 0:
                masks.append(f"({term} < {extent})")
        return " + ".join(ptr), " & ".join(masks) or ""

    def print_load(self, op: LoadOp) -> None:
        tile = tuple(op.result.type.get_shape())
        ptr, mask = self._addressing(op.source, op.offsets, tile)
        masked = f", mask={mask}, other=0.0" if mask else ""
        # Tiles only multiplied by tl.dot stay in their storage type.
        dot = self._only_dot_operand(op.result)
        integer = isinstance(element_type(op.result.type), IntegerType)  # i1 masks, indices
        upcast = "" if dot or integer else f".to({self.compute})"
        if not dot and op in self.hints:
            masked += f', eviction_policy="{self.hints[op]}"'
        self.bind(op.result, f"tl.load({ptr}{masked}){upcast}", kept_shape(op.result.type))

    def _only_dot_operand(self, value: SSAValue) -> bool:
        from tilefuse.analysis.dataflow import is_contraction

        for use in value.uses:
            s = as_structured(use.operation)
            if s is None or not is_contraction(s) or value not in s.inputs:
                return False
            if GenericPrinter(self, s)._dot_sizes() is None:
                return False  # too small for tl.dot: multiplied in the compute type
        return bool(value.uses)

    def print_store(self, op: StoreOp) -> None:
        tile = tuple(op.value.type.get_shape())
        ptr, mask = self._addressing(op.dest, op.offsets, tile)
        dtype = tl_dtype(op.dest.type)
        masked = f", mask={mask}" if mask else ""
        value = f"_to_bf16({self.ref(op.value)})" if dtype == "tl.bfloat16" else f"{self.ref(op.value)}.to({dtype})"
        self.emit(f"tl.store({ptr}, {value}{masked})")

    # -- loops -----------------------------------------------------------------

    def print_for(self, op: scf.ForOp) -> None:
        body = op.body.block
        carried = body.args[1:]
        for arg, init, res in zip(carried, op.iter_args, op.results, strict=True):
            name = self.names(arg)
            self.emit(f"{name} = {self.ref(init)}")
            self.names.of[res] = name
            self.shape[arg] = self.shape[res] = self.shape.get(init, ())
        iv = self.names(body.args[0])
        self.emit(f"for {iv} in range({self.ref(op.lb)}, {self.ref(op.ub)}, {self.ref(op.step)}):")
        self.indent += 1
        self._loop_stack = [*getattr(self, "_loop_stack", []), carried]
        self.print_block(body)
        self._loop_stack.pop()
        self.indent -= 1

    def print_yield(self, op: scf.YieldOp) -> None:
        carried = self._loop_stack[-1]
        for arg, v in zip(carried, op.operands, strict=True):
            self.emit(f"{self.names(arg)} = {self.ref(v)}")
        if not carried:
            self.emit("pass")


def stacked_tensors(grids: Sequence[TileGridOp]) -> list[list[SSAValue]] | None:
    """For a bundle of grids running one tile program: per tensor the first grid
    reads or writes, the tensor each grid uses in its place. None for a single
    grid or when the programs differ."""
    if len(grids) < 2:
        return None
    first = grids[0]
    columns = [[v] for v in grid_inputs(first)] + [[d] for d in first.destinations]
    for other in grids[1:]:
        pairs = same_tile_program(first, other)
        if pairs is None:
            return None
        mapped = dict(pairs)
        for column in columns[: len(pairs)]:
            column.append(mapped[column[0]])
        for column, d in zip(columns[len(pairs) :], other.destinations, strict=True):
            column.append(d)
    return columns


def _host_constant(op: arith.ConstantOp) -> str:
    """A tensor constant built on the host: `torch.full` for a splat."""
    from tilefuse.oracle.scalar import constant_value

    values = constant_value(op)
    shape = tuple(op.result.type.get_shape())
    dtype = torch_dtype(op.result.type, op)
    flat = values.reshape(-1)
    # integers as Python ints (through a float, an i64 past 2**53 would round)
    literal = (lambda v: repr(int(v))) if flat.dtype.kind in "iub" else (lambda v: _literal(float(v)))
    if flat.size and (flat == flat[0]).all():
        return f"torch.full({shape}, {literal(flat[0])}, dtype={dtype}, device=device)"
    listed = ", ".join(literal(v) for v in flat)
    return f"torch.tensor([{listed}], dtype={dtype}, device=device).reshape({shape})"


def reread_hints(grid: TileGridOp) -> dict[LoadOp, str]:
    """L2 hints for a tensor the program streams in several loops (one pass per
    row reduction, then the writing pass): keep it in L2 (`evict_last`) in every
    pass but its last (`evict_first`), so the re-reads hit L2, as Inductor's
    looped reductions do."""
    passes: dict[SSAValue, list[tuple[int, LoadOp]]] = {}
    loops = [op for op in grid.body.block.ops if isinstance(op, scf.ForOp)]
    for i, loop in enumerate(loops):
        for load in loop.walk():
            if isinstance(load, LoadOp):
                passes.setdefault(load.source, []).append((i, load))
    hints = {}
    for found in passes.values():
        last = max(i for i, _ in found)
        if last != min(i for i, _ in found):
            for i, load in found:
                hints[load] = "evict_first" if i == last else "evict_last"
    return hints


def pointer_only(stacked: list[list[SSAValue]] | None) -> set[SSAValue]:
    """Tensors of a stacked bundle (`stacked_tensors`) passed as a bare pointer:
    the shared body indexes every member's tensor with the first member's strides."""
    if stacked is None:
        return set()
    firsts = {column[0] for column in stacked}
    return {v for column in stacked for v in column[1:] if v not in firsts}


def _slice_spans(op: tensor.ExtractSliceOp | tensor.InsertSliceOp) -> str:
    """`o:o+n` (or `o:end:st`) per dim of a static slice."""
    return ", ".join(f"{o}:{o + (n - 1) * st + 1}:{st}" if st != 1 else f"{o}:{o + n}"
                     for o, n, st in zip(op.static_offsets.get_values(), op.static_sizes.get_values(),
                                         op.static_strides.get_values(), strict=True))  # fmt: skip


def _host_slice(op: tensor.ExtractSliceOp, names) -> str:
    """A static `tensor.extract_slice` as a torch view (strided; unit dims the
    slice drops squeezed by a reshape, which views)."""
    view = f"{names(op.source)}[{_slice_spans(op)}]"
    shape = tuple(op.result.type.get_shape())
    if len(shape) != len(op.static_sizes.get_values()):
        view += f".reshape({shape})"
    return view


def _host_window(op: WindowOp, names) -> str:
    """A `tilefuse.window` as `torch.as_strided` over its source (any layout):
    view dim j steps sum_r coeff[r][j] * source.stride(r); the constants move
    the storage offset."""
    x = names(op.source)
    terms = op.terms()

    def combine(pairs: list[tuple[int, int]]) -> str:
        parts = [f"{x}.stride({r})" if c == 1 else f"{c} * {x}.stride({r})" for r, c in pairs if c]
        return " + ".join(parts) or "0"

    rank = len(op.result.type.get_shape())
    strides = [combine([(r, coeffs.get(j, 0)) for r, (coeffs, _) in enumerate(terms)])
               for j in range(rank)]  # fmt: skip
    offset = combine([(r, const) for r, (_, const) in enumerate(terms)])
    return (f"torch.as_strided({x}, {tuple(op.result.type.get_shape())}, "
            f"({', '.join(strides)}{',' if rank == 1 else ''}), {x}.storage_offset() + {offset})")  # fmt: skip


def _host_empties(op: Operation, names) -> list[str]:
    """A `tensor.empty` read on the host (returned, reshaped, copied into): its
    contents are undefined; NaN, as the reference evaluator has them."""
    lines = []
    for v in op.operands:
        if isinstance(v.owner, tensor.EmptyOp) and v not in names.of:
            t = v.type
            lines.append(f"    {names(v)} = torch.full({tuple(t.get_shape())}, float('nan'), "
                         f"dtype={torch_dtype(t, v.owner)}, device=device)")  # fmt: skip
    return lines


def _host_op(op: Operation, names) -> list[str]:
    """The host function's line(s) for a function-level op other than a kernel."""
    if isinstance(op, func.ReturnOp):
        return [f"    return {', '.join(names(v) for v in op.operands)}"]
    if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, TensorType):
        return [f"    {names(op.result)} = {_host_constant(op)}"]
    if isinstance(op, tensor.ExpandShapeOp | tensor.CollapseShapeOp):
        return [f"    {names(op.result)} = {names(op.src)}.reshape({tuple(op.result.type.get_shape())})"]
    if isinstance(op, tensor.ExtractSliceOp):
        return [f"    {names(op.result)} = {_host_slice(op, names)}"]
    if isinstance(op, WindowOp):
        return [f"    {names(op.result)} = {_host_window(op, names)}"]
    if isinstance(op, tensor.ConcatOp | tensor.InsertSliceOp | tensor.PadOp):
        return _host_copy(op, names)
    if not isinstance(op, arith.ConstantOp | tensor.EmptyOp):
        raise CompileError.at(op, "cannot run on the host between kernels")
    return []


def _host_copy(op: tensor.ConcatOp | tensor.InsertSliceOp | tensor.PadOp, names) -> list[str]:
    """`tensor.concat` as `torch.cat`; a static `tensor.insert_slice` as a copy of
    the destination with the source assigned into the slice (a new tensor: the
    destination may be read elsewhere); a static `tensor.pad` as a filled tensor
    with the source assigned into it."""
    r = names(op.result)
    if isinstance(op, tensor.PadOp):  # (not F.pad: its value is a float, an i64 past 2**53 rounds)
        value = pad_value(op)
        assert value is not None
        data = value.owner.value.value.data
        fill = repr(int(data)) if isinstance(value.type, IntegerType) else _literal(float(data))
        x, lows = names(op.source), op.static_low.get_values()
        spans = ", ".join(f"{lo}:{lo + n}" for lo, n in zip(lows, op.source.type.get_shape(), strict=True))
        return [f"    {r} = torch.full({tuple(op.result.type.get_shape())}, {fill}, "
                f"dtype={x}.dtype, device={x}.device)",
                f"    {r}[{spans}] = {x}"]  # fmt: skip
    if isinstance(op, tensor.ConcatOp):
        parts = ", ".join(names(v) for v in op.inputs)
        return [f"    {r} = torch.cat([{parts}], dim={op.dim.value.data})"]
    sizes = tuple(op.static_sizes.get_values())
    return [f"    {r} = {names(op.dest)}.clone()",
            f"    {r}[{_slice_spans(op)}] = {names(op.source)}.reshape({sizes})"]  # fmt: skip


def compute_type(group: GroupOp) -> str:
    """The type a kernel computes in: fp32 (16-bit and fp32 data alike), or fp64
    when any tensor of the group is fp64."""
    for op in group.walk():
        for v in (*op.operands, *op.results):
            if isinstance(v.type, TensorType) and isinstance(element_type(v.type), Float64Type):
                return "tl.float64"
    return "tl.float32"


def _is_literal(text: str) -> bool:
    """Is `text` a Python number as `_literal` prints one?"""
    if text in ('float("nan")', 'float("inf")', 'float("-inf")', "True", "False"):
        return True
    if not text or text[0].isalpha() or text[0] == "_":  # a name (`inf` is one too)
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def _block_constant(v: SSAValue, text: str) -> str:
    """A constant operand of a prelude helper or a cast as a 0-d block (a Python
    number has no `.to`, and the helpers take blocks); also a payload argument
    bound to a scalar constant (a fill's value), printed as its literal."""
    if not isinstance(v.owner, arith.ConstantOp) and not _is_literal(text):
        return text
    t = v.type
    if isinstance(t, Float64Type):
        dtype = "tl.float64"
    elif isinstance(t, AnyFloat):
        dtype = "tl.float32"
    elif isinstance(t, IntegerType) and t.width.data in INT_WIDTHS:
        dtype = f"tl.int{t.width.data}"  # its own width: unsigned views bitcast it
    else:
        dtype = "tl.int64" if isinstance(t, IndexType) or t.width.data > 32 else "tl.int32"
    return f"tl.full((), {text}, {dtype})"


def _cmpf_expr(predicate: str, args: list[str]) -> str:
    """`arith.cmpf`: ordered predicates are false and unordered ones true where an
    operand is NaN. Built from comparisons of both operands only, so a 0-d operand
    broadcasts (the interpreter cannot combine 0-d and n-d booleans)."""
    a, b = args
    if predicate in CMP:
        return f"({a} {CMP[predicate]} {b})"
    if predicate in UNORDERED:  # not the opposite ordered comparison: true on NaN
        return f"(({a} {UNORDERED[predicate]} {b}) == 0)"
    one = f"(({a} < {b}) | ({a} > {b}))"
    ordered = f"(({a} <= {b}) | ({a} > {b}))"
    return {"one": one, "ueq": f"({one} == 0)", "ord": ordered, "uno": f"({ordered} == 0)",
            "true": f"({ordered} | ({a} != {b}))", "false": f"(({a} < {b}) & ({a} > {b}))"}[predicate]  # fmt: skip


def _typed_expr(op: Operation, args: list[str]) -> str | None:
    """Ops whose text depends on their element types (None for the others)."""
    if isinstance(op, arith.TruncFOp):
        # Values are computed in a wide type; an explicit truncation still rounds.
        narrow, wide = (TL_DTYPE[type(element_type(v.type))] for v in (op.result, op.operands[0]))
        x = _block_constant(op.operands[0], args[0])
        rounded = f"_round_bf16({x})" if narrow == "tl.bfloat16" else f"({x}).to({narrow})"
        return f"({rounded}).to({wide})"
    et = type(element_type(op.results[0].type)) if op.results else None
    if isinstance(op, arith.DivUIOp | arith.RemUIOp | arith.CeilDivUIOp):
        a, b = (_unsigned(v, _block_constant(v, x)) for v, x in zip(op.operands, args, strict=True))
        w = _int_width(op.results[0])
        expr = {arith.DivUIOp: "({0} // {1})", arith.RemUIOp: "({0} % {1})",
                arith.CeilDivUIOp: "(({0} // {1}) + (({0} % {1}) != 0))"}[type(op)].format(a, b)  # fmt: skip
        return expr if w == 1 else f"({expr}).to(tl.int{w}, bitcast=True)"
    if isinstance(op, arith.FloorDivSIOp | arith.CeilDivSIOp):
        name = "_floordiv" if isinstance(op, arith.FloorDivSIOp) else "_ceildiv"
        return f"{name}({', '.join(_block_constant(v, x) for v, x in zip(op.operands, args, strict=True))})"
    if isinstance(op, arith.MaxSIOp | arith.MinSIOp) and _int_width(op.results[0]) == 1:
        # a true i1 is -1 read signed: max is AND, min is OR
        return ("({} & {})" if isinstance(op, arith.MaxSIOp) else "({} | {})").format(*args)
    if isinstance(op, mathd.CopySignOp) and et is Float64Type:
        return "_copysign_f64({}, {})".format(*args)
    if isinstance(op, mathd.TanhOp):
        return {BFloat16Type: "_tanh_bf16({})", Float64Type: "_tanh_f64({})"}.get(
            et, UNARY[mathd.TanhOp]).format(args[0])  # fmt: skip
    return None


def scalar_expr(op: Operation, ref) -> str:
    """A scalar or elementwise block expression for an arith/math op."""
    args = [ref(v) for v in op.operands]
    template = BINARY.get(type(op)) or UNARY.get(type(op)) or ""
    if template.startswith("_") or isinstance(op, CONVERSIONS):
        args = [_block_constant(v, a) for v, a in zip(op.operands, args, strict=True)]
    if isinstance(op, arith.CmpfOp):
        return _cmpf_expr(cmpf_predicate(op), args)
    if (typed := _typed_expr(op, args)) is not None:
        return typed
    if isinstance(op, arith.CmpiOp):
        return _cmpi_expr(op, args)
    if isinstance(op, arith.SelectOp):
        return f"tl.where({args[0]}, {args[1]}, {args[2]})"
    if type(op) in BINARY:
        return BINARY[type(op)].format(*args)
    if type(op) in UNARY:
        return UNARY[type(op)].format(*args)
    if isinstance(op, mathd.FmaOp):
        return f"({args[0]} * {args[1]} + {args[2]})"
    return _conversion(op, args)


CONVERSIONS = (arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp, arith.ExtUIOp,
               arith.ExtSIOp, arith.TruncIOp)


def _int_width(v: SSAValue) -> int:
    t = element_type(v.type)
    return t.width.data if isinstance(t, IntegerType) else 64  # index: i64


def _signed(v: SSAValue, x: str) -> str:
    """`x` read as a signed integer: Triton's int1 is 0/1, a signed i1 is 0/-1."""
    return f"(-({_block_constant(v, x)}).to(tl.int32))" if _int_width(v) == 1 else x


def _unsigned(v: SSAValue, x: str) -> str:
    """`x` read as an unsigned integer of its type's width (index: 64 bits; i1
    is already 0/1). A value may sit in a wider register than its type (an i8
    from fptosi, an index from linalg.index): it is cut to its width first."""
    et = element_type(v.type)
    if not isinstance(et, IntegerType | IndexType):
        return x
    w = _int_width(v)
    return x if w == 1 else f"({_block_constant(v, x)}).to(tl.int{w}).to(tl.uint{w}, bitcast=True)"


def _cmpi_expr(op: arith.CmpiOp, args: list[str]) -> str:
    """`arith.cmpi`: predicates 2-5 compare signed values, 6-9 unsigned ones."""
    predicate = op.predicate.value.data
    if predicate in (0, 1):
        a, b = args
    else:
        view = _signed if predicate < 6 else _unsigned
        a, b = (view(v, x) for v, x in zip(op.operands, args, strict=True))
    return f"({a} {CMPI[predicate]} {b})"


def _conversion(op: Operation, args: list[str]) -> str:
    """Integer <-> float conversions in a payload (a constant operand as a 0-d
    block: a Python number has no `.to`)."""
    x = _block_constant(op.operands[0], args[0]) if op.operands else ""
    if isinstance(op, arith.SIToFPOp | arith.UIToFPOp):
        wide = isinstance(element_type(op.result.type), Float64Type)
        view = _signed if isinstance(op, arith.SIToFPOp) else _unsigned
        return f"({view(op.operands[0], x)}).to({'tl.float64' if wide else 'tl.float32'})"
    if isinstance(op, arith.FPToSIOp):  # truncation toward zero, as C casts
        width = getattr(op.result.type, "width", None)
        bits = width.data if width is not None else 32
        return f"({x}).to(tl.int{64 if bits > 32 else 32})"
    out = _int_width(op.results[0]) if op.results else 0
    if isinstance(op, arith.FPToUIOp):  # in range: the low bits of a wide integer
        return f"({x}).to(tl.int64).to(tl.int{out})"
    if isinstance(op, arith.ExtUIOp | arith.ExtSIOp):
        view = _unsigned if isinstance(op, arith.ExtUIOp) else _signed
        return f"({view(op.operands[0], x)}).to(tl.int{out})"
    if isinstance(op, arith.TruncIOp):  # the low bits
        return f"((({x}) & 1) != 0)" if out == 1 else f"({x}).to(tl.int{out})"
    raise CompileError.at(op, "is not supported by the Triton backend")


def kept_shape(t: Attribute) -> tuple[int, ...]:
    """A tile's block shape in the kernel: unit axes dropped (no reshapes needed)."""
    return tuple(n for n in t.get_shape() if n != 1)


class GenericPrinter:
    """
    One `linalg.generic` on tiles as block arithmetic in its loop space.

    Loops of trip count 1 (batch dims, a program's single row) are dropped
    everywhere: tiles are blocks of their non-unit axes only, so no reshape or
    layout change is ever needed to line operands up.
    """

    def __init__(self, kernel: KernelPrinter, s: StructuredOp):
        self.k, self.s = kernel, s
        self.space = tuple(s.loop_ranges)
        self.kept = [d for d in range(s.num_loops) if self.space[d] != 1]
        self.pos = {d: i for i, d in enumerate(self.kept)}
        self.n = len(self.kept)

    def kdims(self, dims: Sequence[int]) -> list[int]:
        return [d for d in dims if self.space[d] != 1]

    def kshape(self, dims: Sequence[int] | None = None) -> tuple[int, ...]:
        return tuple(self.space[d] for d in (self.kept if dims is None else dims))

    def to_loop_space(self, value: str, dims: Sequence[int]) -> str:
        """Permute a block indexed by loops `dims` to loop order, expand the rest."""
        kd = self.kdims(dims)
        if not kd:
            return value
        order = sorted(range(len(kd)), key=lambda i: self.pos[kd[i]])
        if order != list(range(len(kd))):
            value = f"tl.permute({value}, {tuple(order)})"
        if len(kd) == self.n:
            return value
        present = {self.pos[d] for d in kd}
        index = ", ".join(":" if i in present else "None" for i in range(self.n))
        return f"{value}[{index}]"

    def from_loop_space(self, value: str, dims: Sequence[int], vdims: set[int]) -> str:
        """A loop-space block (varying along `vdims`) as an operand indexed by `dims`."""
        kd = self.kdims(dims)
        if not kd:
            return value
        if not vdims >= set(kd):
            full = tuple(self.space[d] if d in kd else 1 for d in self.kept)
            value = f"tl.broadcast_to({value}, {full})"
        ordered = sorted(kd, key=lambda d: self.pos[d])
        if len(kd) != self.n:
            value = f"tl.reshape({value}, {self.kshape(ordered)})"
        order = [ordered.index(d) for d in kd]
        if order != list(range(len(kd))):
            value = f"tl.permute({value}, {tuple(order)})"
        return value

    def print(self) -> None:
        s = self.s
        if is_contraction(s) and self._dot_sizes() is not None:
            self.print_dot()
            return
        env: dict[SSAValue, tuple[str, set[int]]] = {}
        for i, (v, arg) in enumerate(zip(s.inputs, s.payload.args, strict=False)):
            dims = s.operand_dims(i)
            env[arg] = (self.to_loop_space(self.k.ref(v), dims), set(self.kdims(dims)))
        for j, v in enumerate(s.outputs):
            arg = s.payload.args[len(s.inputs) + j]
            if arg.uses:
                dims = s.operand_dims(len(s.inputs) + j)
                env[arg] = (self.to_loop_space(self.k.ref(v), dims), set(self.kdims(dims)))
        if s.reduction_dims:
            self.print_reduction(env)
        else:
            yielded = self.run_payload(env, stop=None)
            for j, r in enumerate(s.op.results):
                self.store_result(r, j, *yielded[j])

    def store_result(self, result: SSAValue, j: int, value: str, vdims: set[int]) -> None:
        dims = self.s.operand_dims(len(self.s.inputs) + j)
        shape = kept_shape(result.type)
        if not vdims:  # a fill: integers keep their type (an f32 fill rounds past 2**24)
            integer = isinstance(element_type(result.type), IntegerType)
            dtype = tl_dtype(result.type) if integer else self.k.compute
            self.k.bind(result, f"tl.full({shape}, {value}, {dtype})", shape)
            return
        self.k.bind(result, self.from_loop_space(value, dims, vdims), shape)

    def run_payload(self, env, stop: SSAValue | None) -> list[tuple[str, set[int]]]:
        """Emit the payload's ops; returns the yielded (expr, dims) pairs."""
        for op in self.s.payload.ops:
            if isinstance(op, linalg.YieldOp):
                return [env[v] for v in op.operands]
            if stop is not None and stop in env:
                return [env[stop]]
            if isinstance(op, linalg.IndexOp):
                env[op.result] = self._index(op.dim.value.data)
                continue
            if isinstance(op, arith.ConstantOp):
                env[op.result] = (self.k._constant(op), set())
                continue
            if op.dialect_name() not in ("arith", "math"):
                raise CompileError.at(op, "is not supported in a payload by the Triton backend "
                                      "(arith and math ops, linalg.index)")  # fmt: skip
            operands = [self._operand(v, env) for v in op.operands]
            text = scalar_expr(op, lambda v, ops=operands, o=op: ops[list(o.operands).index(v)])
            dims = set().union(*(env[v][1] for v in op.operands if v in env))
            name = self.k.names.fresh("t")
            self.k.emit(f"{name} = {text}")
            env[op.results[0]] = (name, dims)
        if stop is not None and stop in env:
            return [env[stop]]
        raise CompileError.at(self.s.op, "has a payload without linalg.yield")

    def _index(self, d: int) -> tuple[str, set[int]]:
        if self.space[d] == 1:
            return "0", set()
        index = ", ".join(":" if i == self.pos[d] else "None" for i in range(self.n))
        suffix = f"[{index}]" if self.n > 1 else ""
        return f"tl.arange(0, {self.space[d]}){suffix}", {d}

    def _operand(self, v: SSAValue, env) -> str:
        if v in env:
            return env[v][0]
        return self.k.ref(v)  # captured from the kernel body (offsets, constants)

    def print_reduction(self, env) -> None:
        s = self.s
        yield_op = s.payload.last_op
        assert yield_op is not None
        for j, value in enumerate(yield_op.operands):
            comb = value.owner
            acc = s.payload.args[len(s.inputs) + j]
            if (not isinstance(comb, Operation) or type(comb) not in REDUCE
                    or acc not in comb.operands or len(list(acc.uses)) != 1):  # fmt: skip
                raise CompileError.at(
                    s.op, "is a reduction the Triton backend cannot lower: its payload "
                    "must end in addf/mulf/maximumf/minimumf/maxnumf/minnumf/addi/maxsi/minsi of the accumulator, "
                    "which it reads nowhere else")  # fmt: skip
            if _int_width(acc) == 1:
                raise CompileError.at(s.op, "reduces i1 values, which the Triton backend does not "
                                      "lower: extend them to a wider integer first (arith.extui)")  # fmt: skip
            x = comb.operands[1] if comb.operands[0] is acc else comb.operands[0]
            expr, dims = self.run_payload(env, stop=x)[0]
            if dims != set(self.kept):
                expr = f"tl.broadcast_to({expr}, {self.kshape()})"
            # Reduce without keep_dims: the result keeps the reduction's own
            # (sliced) layout, so broadcasting it back later costs no
            # layout conversion (a reshape here made Triton 3.6 kernels 100x slower).
            for d in sorted(self.kdims(s.reduction_dims), key=self.pos.get, reverse=True):
                expr = f"{REDUCE[type(comb)]}({expr}, axis={self.pos[d]})"
            red = self.k.names.fresh("red")
            self.k.emit(f"{red} = {expr}")
            out_dims = self.kdims(s.operand_dims(len(s.inputs) + j))
            kept = [d for d in self.kept if d not in s.reduction_dims]
            if sorted(out_dims, key=self.pos.get) != kept:
                raise CompileError.at(s.op, "has an output that does not cover its parallel loops")
            to_sorted = sorted(range(len(out_dims)), key=lambda i: self.pos[out_dims[i]])
            acc_value = self.k.ref(s.outputs[j])
            if to_sorted != list(range(len(out_dims))):
                acc_value = f"tl.permute({acc_value}, {tuple(to_sorted)})"
            value = BINARY[type(comb)].format(acc_value, red)
            back = [kept.index(d) for d in out_dims]
            if back != list(range(len(back))):
                value = f"tl.permute({value}, {tuple(back)})"
            result = s.op.results[j]
            self.k.bind(result, value, kept_shape(result.type))

    # -- contractions ------------------------------------------------------------

    def _dot_sizes(self):
        s = self.s
        a, b = (self.kdims(s.operand_dims(i)) for i in range(2))
        out = self.kdims(s.operand_dims(2))
        k = self.kdims(s.reduction_dims)
        m = [d for d in out if d in a and d not in b]
        n = [d for d in out if d in b and d not in a]
        if any(d in a and d in b for d in out):
            return None  # a batch dim of more than one: no 2-D tl.dot
        sizes = [math.prod(self.space[d] for d in g) for g in (m, n, k)]
        if min(sizes) < MIN_DOT:
            return None
        return m, n, k

    def print_dot(self) -> None:
        s = self.s
        m, n, k = self._dot_sizes()
        mul = next(op for op in s.payload.ops if isinstance(op, arith.MulfOp))
        ins = list(s.payload.args[: len(s.inputs)])
        first = ins.index(product_operand(mul.operands[0]))
        lhs_i = first if any(d in s.operand_dims(first) for d in m) else 1 - first
        rhs_i = 1 - lhs_i
        M, N, K = (math.prod(self.space[d] for d in g) for g in (m, n, k))
        a = self._matrix(s.inputs[lhs_i], s.operand_dims(lhs_i), m, k, (M, K))
        b = self._matrix(s.inputs[rhs_i], s.operand_dims(rhs_i), k, n, (K, N))
        acc = self._matrix(s.outputs[0], s.operand_dims(2), m, n, (M, N))
        out = self.k.names.fresh("dot")
        # tl.dot's result type defaults to fp32; an f64 accumulator must say so
        # (Triton 3.6 asserts the accumulator's type equals out_dtype).
        # Operands of an f64 accumulator are widened to f64 (exact; upstream's
        # named-op semantics), whatever their storage type.
        wide = isinstance(element_type(s.outputs[0].type), Float64Type)
        cast, precision, out_dtype = (("tl.float64", '"ieee"', ", out_dtype=tl.float64") if wide
                                      else ("DOT_DTYPE", "DOT_PRECISION", ""))  # fmt: skip
        self.k.emit(f"{out} = tl.dot({a}.to({cast}), {b}.to({cast}), {acc}, "
                    f"input_precision={precision}{out_dtype})")  # fmt: skip
        # Back from (m..., n...) to the output's axis order.
        out_dims = self.kdims(s.operand_dims(2))
        grouped = m + n
        value = out if len(grouped) == 2 else f"tl.reshape({out}, {self.kshape(grouped)})"
        order = [grouped.index(d) for d in out_dims]
        if order != list(range(len(order))):
            value = f"tl.permute({value}, {tuple(order)})"
        self.k.bind(s.op.results[0], value, kept_shape(s.op.results[0].type))

    def _matrix(self, v: SSAValue, dims: Sequence[int], rows, cols, shape) -> str:
        """Operand `v` (axes = loops `dims`) as a 2-D [rows, cols] block."""
        kd = self.kdims(dims)
        wanted = list(rows) + list(cols)
        order = [kd.index(d) for d in wanted]
        value = self.k.ref(v)
        if order != list(range(len(order))):
            value = f"tl.permute({value}, {tuple(order)})"
        if len(wanted) == 2:
            return value  # already 2-D: a reshape would only risk a layout change
        return f"tl.reshape({value}, {shape})"


class ModulePrinter:
    """The whole generated Python module: kernels and the host function."""

    def __init__(self, module: ModuleOp, source_name: str = "<input>"):
        self.module, self.source_name = module, source_name

    def print(self) -> str:
        f = entry_function(self.module)
        out = io.StringIO()
        out.write(f'"""Generated by tilefuse from {self.source_name}: @{f.sym_name.data}."""\n\n')
        out.write("import os\n\nimport torch\nimport triton\nimport triton.language as tl\n"
                  "from triton.language.extra import libdevice\n\n")
        out.write(PRELUDE)
        groups = [op for op in f.body.block.ops if isinstance(op, GroupOp)]
        kernels = []
        for g in groups:
            grids = [o for o in g.entry.ops if isinstance(o, TileGridOp)]
            if not grids:
                why = g.attributes.get("tilefuse.untiled")
                raise CompileError.at(g, f"was not tiled: {why.data}" if why is not None
                                      else "was not tiled: run tile-and-fuse before emitting Triton")  # fmt: skip
            stacked = stacked_tensors(grids)
            kernels.append((g, grids, stacked))
            out.write(f"\n# {g.sym_name.data}: {g.reason.data if g.reason else ''}\n")
            if "tile" in g.attributes:
                out.write(f"# {g.attributes['tile'].data}\n")
            out.write(KernelPrinter(g.sym_name.data, g, grids, stacked).print() + "\n\n")
        out.write(self.host(f, kernels))
        return out.getvalue()

    def host(self, f: func.FuncOp, kernels) -> str:
        names = Names([g.sym_name.data for g, _, _ in kernels])  # kernels are module globals
        entry = names.fresh(f.sym_name.data)  # `@tl` or `@max` must not shadow a global
        args = [names(a) for a in f.body.block.args]
        # Without arguments, the kernels run where the runtime runs them.
        device = f"{args[0]}.device" if args else 'torch.device("cuda" if _ON_GPU else "cpu")'
        lines = [f"KERNELS = {[g.sym_name.data for g, _, _ in kernels]!r}",
                 f"ENTRY = {entry!r}  # the host function of @{f.sym_name.data}\n",
                 f"def {entry}({', '.join([*args, '*', 'dot_dtype=None'])}):",
                 f'    """Run @{f.sym_name.data}: {len(kernels)} kernel launch(es)."""',
                 f"    device = {device}"]  # fmt: skip
        launched = {g: (grids, stacked) for g, grids, stacked in kernels}
        for op in f.body.block.ops:
            lines += _host_empties(op, names)
            if isinstance(op, GroupOp):
                lines += self._launch(op, *launched[op], names)
            else:
                lines += _host_op(op, names)
        return "\n".join(lines) + "\n"

    def _launch(self, g: GroupOp, grids: list[TileGridOp], stacked, names: Names) -> list[str]:
        grid = grids[0]
        lines = self._equal_strides(g, stacked, names)
        bare = pointer_only(stacked)
        dests = [d for gr in grids for d in gr.destinations]
        call = []
        for arg, v in zip(g.entry.args, g.inputs, strict=True):
            call.append(names(v) if arg in bare else f"{names(v)}, *{names(v)}.stride()")
        for d, r in zip(dests, g.results, strict=True):
            shape = tuple(r.type.get_shape())
            lines.append(f"    {names(r)} = torch.empty({shape}, dtype={torch_dtype(r.type, g)}, device=device)")
            call.append(names(r) if d in bare else f"{names(r)}, *{names(r)}.stride()")
        programs = sum(math.prod(gr.grid_shape) for gr in grids)
        dtype = self._dot_dtype(g)
        precision = '"tf32"' if dtype in ("tl.bfloat16", "tl.float16") else '"ieee"'
        # (`dot_dtype` lets the interpreter run 16-bit dots in fp32; fp32 and fp64 stay.)
        dot = f"{dtype} if dot_dtype is None else dot_dtype" if precision == '"tf32"' else dtype
        lines.append(
            f"    {g.sym_name.data}[({programs},)]({', '.join(call)}, "
            f"DOT_DTYPE={dot}, DOT_PRECISION={precision}, "
            f"num_warps={grid.num_warps.value.data}, num_stages={grid.num_stages.value.data})"
        )
        return lines

    def _equal_strides(self, g: GroupOp, stacked, names: Names) -> list[str]:
        """A stacked kernel reads its first member's strides for every member's
        tensors: make them equal (contiguous copies) when the caller's differ."""
        lines = []
        outer = dict(zip(g.entry.args, g.inputs, strict=True))
        for column in stacked or []:
            values = list(dict.fromkeys(outer[v] for v in column if v in outer))
            if len(values) > 1:
                ts = ", ".join(names(v) for v in values)
                same = " == ".join(f"{names(v)}.stride()" for v in values)
                lines += [f"    if not ({same}):",
                          f"        {ts} = {', '.join(f'{names(v)}.contiguous()' for v in values)}"]  # fmt: skip
        return lines

    def _dot_dtype(self, g: GroupOp) -> str:
        for op in g.walk():
            if isinstance(op, linalg.GenericOp) and REDUCTION in [str(i.data) for i in op.iterator_types]:
                s = as_structured(op)
                if s is not None and is_contraction(s):
                    return TL_DTYPE[type(element_type(s.inputs[0].type))]
        return "tl.float32"


def emit_triton(module: ModuleOp, source_name: str = "<input>") -> str:
    """The Python source of `module`'s kernels and host function."""
    return ModulePrinter(module, source_name).print()
