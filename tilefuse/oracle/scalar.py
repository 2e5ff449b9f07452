"""
Scalar semantics of the reference evaluator: element types, rounding, and the
`arith`/`math` ops of payloads and function bodies, applied elementwise to
numpy arrays.

Floating-point values are held in float64 and rounded to their IR type after
every op (f16 through numpy, bf16 by round-to-nearest-even on the bits);
integers are held in int64 as signed values of their width and wrapped after
every op, the unsigned ops reading them modulo 2^width:

```python
env = {}
eval_scalar_op(op, env)  # %r = arith.addi %a, %b : i8, with env[%a], env[%b] set
env[op.result]           # the sum wrapped to 8 bits, as int64
```
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.ir import Attribute, Operation, SSAValue

from tilefuse.ir.arith_extra import RemFOp
from tilefuse.ir.constants import constant_array
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.structured import cmpf_predicate, element_type

Env = dict[SSAValue, np.ndarray]

# ---------------------------------------------------------------------------
# Element types
# ---------------------------------------------------------------------------


def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round float values to bfloat16 (nearest even), returned as float64."""
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), f, out).astype(np.float64)


def round_to(x: np.ndarray, t: Attribute) -> np.ndarray:
    """Round `x` to element type `t` (held as float64 or int64); values beyond
    the type's range become infinities, as the hardware's would."""
    with np.errstate(over="ignore"):
        return _round_to(x, t)


def _round_to(x: np.ndarray, t: Attribute) -> np.ndarray:
    if isinstance(t, Float32Type):
        return np.asarray(x, np.float32).astype(np.float64)
    if isinstance(t, Float16Type):
        return np.asarray(x, np.float16).astype(np.float64)
    if isinstance(t, BFloat16Type):
        return round_bf16(x)
    if isinstance(t, Float64Type):
        return np.asarray(x, np.float64)
    if isinstance(t, IntegerType) and t.width.data == 1:
        return np.asarray(x, bool)
    if isinstance(t, IntegerType | IndexType):
        return np.asarray(x, np.int64)
    raise CompileError(f"the reference evaluator does not support type {t}")


def numpy_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype used to hand values of element type `t` to callers."""
    if isinstance(t, Float32Type):
        return np.dtype(np.float32)
    if isinstance(t, Float16Type):
        return np.dtype(np.float16)
    if isinstance(t, Float64Type):
        return np.dtype(np.float64)
    if isinstance(t, BFloat16Type):
        return np.dtype(np.float32)  # numpy has no bfloat16: values are bf16-exact
    if isinstance(t, IntegerType | IndexType):
        return np.dtype(np.int64)
    raise CompileError(f"the reference evaluator does not support type {t}")


# ---------------------------------------------------------------------------
# Scalar payload ops (applied elementwise to arrays)
# ---------------------------------------------------------------------------


def _erf(x: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.erf, 1, 1)(x).astype(np.float64)


def _unordered(cmp: Fn) -> Fn:
    """`cmp`, or true where either operand is NaN (the `u` predicates)."""
    return lambda a, b: cmp(a, b) | np.isnan(a) | np.isnan(b)


# numpy's comparisons are false on NaN (ordered), except !=, which is true (une).
_CMPF: dict[str, Fn] = {
    "oeq": np.equal, "ogt": np.greater, "oge": np.greater_equal, "olt": np.less,
    "ole": np.less_equal, "one": lambda a, b: np.not_equal(a, b) & ~np.isnan(a) & ~np.isnan(b),
    "ord": lambda a, b: ~np.isnan(a) & ~np.isnan(b), "ueq": _unordered(np.equal),
    "ugt": _unordered(np.greater), "uge": _unordered(np.greater_equal),
    "ult": _unordered(np.less), "ule": _unordered(np.less_equal), "une": np.not_equal,
    "uno": lambda a, b: np.isnan(a) | np.isnan(b),
    "true": lambda a, b: np.ones(np.broadcast(a, b).shape, bool),
    "false": lambda a, b: np.zeros(np.broadcast(a, b).shape, bool),
}  # fmt: skip
_CMPI = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater,
         5: np.greater_equal, 6: np.less, 7: np.less_equal, 8: np.greater,
         9: np.greater_equal}  # fmt: skip

Fn = Callable[..., np.ndarray]
ELEMENTWISE: dict[type[Operation], Fn] = {
    arith.AddfOp: np.add, arith.SubfOp: np.subtract, arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide, arith.MaximumfOp: np.maximum, arith.MinimumfOp: np.minimum,
    arith.MaxnumfOp: np.fmax, arith.MinnumfOp: np.fmin, arith.NegfOp: np.negative,
    arith.AddiOp: np.add, arith.SubiOp: np.subtract, arith.MuliOp: np.multiply,
    arith.DivSIOp: lambda a, b: _divsi(a, b),  # exact: a / b in float64 rounds past 2**53
    arith.RemSIOp: np.fmod, arith.FloorDivSIOp: np.floor_divide,
    arith.CeilDivSIOp: lambda a, b: _ceildiv(a, b),
    arith.DivUIOp: np.floor_divide, arith.RemUIOp: np.mod,  # of the unsigned views
    arith.CeilDivUIOp: lambda a, b: _ceildiv(a, b),
    arith.AndIOp: np.bitwise_and, arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor, arith.MaxSIOp: np.maximum, arith.MinSIOp: np.minimum,
    arith.ShLIOp: np.left_shift, arith.ShRSIOp: np.right_shift, arith.ExtUIOp: np.asarray,
    arith.ExtSIOp: np.asarray, arith.TruncIOp: np.asarray, arith.FPToUIOp: np.trunc,
    arith.SelectOp: np.where,
    arith.ExtFOp: np.asarray, arith.TruncFOp: np.asarray, arith.SIToFPOp: np.asarray,
    arith.UIToFPOp: np.asarray, arith.FPToSIOp: np.trunc, arith.IndexCastOp: np.asarray,
    mathd.ExpOp: np.exp, mathd.Exp2Op: np.exp2, mathd.LogOp: np.log,
    mathd.Log2Op: np.log2, mathd.Log1pOp: np.log1p, mathd.TanhOp: np.tanh,
    mathd.ErfOp: _erf, mathd.SqrtOp: np.sqrt, mathd.RsqrtOp: lambda a: 1.0 / np.sqrt(a),
    mathd.AbsFOp: np.abs, mathd.PowFOp: np.power, mathd.FPowIOp: lambda a, n: _fpowi(a, n), mathd.FmaOp: lambda a, b, c: a * b + c,
    mathd.SinOp: np.sin, mathd.CosOp: np.cos, mathd.FloorOp: np.floor,
    mathd.CeilOp: np.ceil, mathd.AbsIOp: np.abs, mathd.ExpM1Op: np.expm1,
    mathd.Log10Op: np.log10, mathd.TanOp: np.tan, mathd.SinhOp: np.sinh,
    mathd.CoshOp: np.cosh, mathd.TruncOp: np.trunc, mathd.RoundEvenOp: np.rint,
    mathd.RoundOp: lambda a: np.copysign(np.floor(np.abs(a)) + (np.abs(a) % 1.0 >= 0.5), a),
    mathd.CopySignOp: np.copysign, mathd.CbrtOp: np.cbrt, mathd.AtanOp: np.arctan,
    mathd.Atan2Op: np.arctan2, mathd.AsinOp: np.arcsin, mathd.AcosOp: np.arccos,
    mathd.AsinhOp: np.arcsinh, mathd.AcoshOp: np.arccosh, mathd.AtanhOp: np.arctanh,
    RemFOp: np.fmod,
}  # fmt: skip

def _fpowi(a, n):
    """`math.fpowi`: a float to an integer power, in float64 (pow of an integral
    exponent keeps a negative base's sign; x**0 is 1, NaN included)."""
    return np.power(np.asarray(a, np.float64), np.asarray(n).astype(np.float64))


def _ceildiv(a, b):
    """Division rounding up, in integers (signed, or of unsigned views)."""
    return np.floor_divide(a, b) + (np.mod(a, b) != 0)


def _divsi(a, b):
    """Signed division truncating toward zero, in integers."""
    q = np.floor_divide(a, b)
    return np.where((np.mod(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0)), q + 1, q)


def constant_value(op: arith.ConstantOp) -> np.ndarray:
    """The value of an `arith.constant`, as an array (0-d for a scalar), rounded to
    its element type."""
    return round_to(constant_array(op), element_type(op.result.type))


def eval_scalar_op(op: Operation, env: Env) -> None:
    """Evaluate an `arith`/`math` op on (arrays of) scalars."""
    if isinstance(op, arith.ConstantOp):
        env[op.result] = constant_value(op)
        return
    # Integers as signed values of their width (a true i1 is -1); the unsigned
    # ops read them modulo 2^width.
    unsigned = isinstance(op, arith.UIToFPOp | arith.ExtUIOp | arith.DivUIOp | arith.RemUIOp
                          | arith.CeilDivUIOp) or (
        isinstance(op, arith.CmpiOp) and op.predicate.value.data >= 6)  # fmt: skip
    args = [int_view(env[o], o.type, unsigned) for o in op.operands]
    if isinstance(op, arith.CmpfOp):
        value = _CMPF[cmpf_predicate(op)](*args)
    elif isinstance(op, arith.CmpiOp):
        value = _CMPI[op.predicate.value.data](*args)
    elif (fn := ELEMENTWISE.get(type(op))) is not None:
        with np.errstate(all="ignore"):
            value = fn(*args)
    else:
        raise CompileError.at(op, "is not supported by the reference evaluator")
    et = element_type(op.results[0].type)
    env[op.results[0]] = round_to(wrapped(value, et), et)


def wrapped(value, et: Attribute):
    """An integer result wrapped to its type's width (i1 as a bool); other
    values unchanged."""
    if not isinstance(et, IntegerType):
        return value
    value = int_view(value, et, False)
    return value != 0 if et.width.data == 1 else value


def int_view(x, t: Attribute, unsigned: bool):
    """An integer value of type `t` as int64 (signed, or modulo 2^width); other
    values unchanged."""
    et = element_type(t)
    if not isinstance(et, IntegerType | IndexType):
        return x
    w = et.width.data if isinstance(et, IntegerType) else 64  # index: 64 bits
    x = np.asarray(x).astype(np.int64) if w < 64 else np.asarray(x)
    if w >= 64:
        return x.astype(np.uint64) if unsigned else x
    x = np.bitwise_and(x, (1 << w) - 1)
    return x if unsigned else np.where(x >= 1 << (w - 1), x - (1 << w), x)
