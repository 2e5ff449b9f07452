"""
`fold-host-scalars`: scalar arithmetic on constants at function level becomes a constant.

Exported programs compute a kernel's scalars on the host (an attention scale as
`1 / sqrt(64)`, an index sum cast to a float): folded, a kernel captures the
result as a literal. A `tensor.cast` between equal static types disappears.

```mlir
%a = arith.constant 64.0 : f32
%b = math.sqrt %a : f32
%one = arith.constant 1.0 : f32
%scale = arith.divf %one, %b : f32
// becomes
%b = arith.constant 8.000000e+00 : f32
%scale = arith.constant 1.250000e-01 : f32
```

The folder is this pass's own, for the ops it knows: integer `addi`/`subi`/`muli`
(wrapping at the type's width), `index_cast`, `sitofp`, `extf`/`truncf`, float
`addf`/`subf`/`mulf`/`divf`/`negf`, `math.sqrt` and `math.fpowi` (IEEE, each result
rounded to its type; fpowi by squaring, as compiler-rt does). Any other op, or one on
types not listed, is left for the kernel to compute.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

_INTEGER_OPS: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: operator.add, arith.SubiOp: operator.sub, arith.MuliOp: operator.mul,
}  # fmt: skip
_FLOAT_OPS: dict[type[Operation], Callable[..., np.float64]] = {
    arith.AddfOp: np.add, arith.SubfOp: np.subtract, arith.MulfOp: np.multiply,
    arith.DivfOp: np.divide, arith.NegfOp: np.negative, mathd.SqrtOp: np.sqrt,
}  # fmt: skip
_CASTS = arith.IndexCastOp | arith.SIToFPOp | arith.ExtFOp | arith.TruncFOp
_DTYPES = {Float16Type: np.float16, Float32Type: np.float32, Float64Type: np.float64,
           BFloat16Type: np.float32}  # fmt: skip


def _width(t: Attribute) -> int | None:
    """Bits of an integer or index type (None: not one, or i1)."""
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType) and t.width.data > 1:
        return t.width.data
    return None


def _wrapped(value: int, width: int) -> int:
    """`value` modulo 2^width, as a signed integer."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >= 1 << (width - 1) else value


def _rounded(value: np.ndarray, t: Attribute) -> float:
    """`value` (an integer or a float64) rounded to the float type `t`."""
    with np.errstate(all="ignore"):  # beyond the type's range: an infinity
        f = np.asarray(value).astype(_DTYPES[type(t)])
        if isinstance(t, BFloat16Type):  # round to nearest even on float32's bits
            bits = int(f.view(np.uint32))
            if not np.isnan(f):
                bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
            f = np.asarray(bits, np.uint32).view(np.float32)
        return float(f)


def _value(v: SSAValue) -> int | float | None:
    """The scalar an `arith.constant` holds, in its type (None: not a scalar we fold)."""
    attr = v.owner.value if isinstance(v.owner, arith.ConstantOp) else None
    if isinstance(attr, IntegerAttr) and (w := _width(v.type)) is not None:
        return _wrapped(attr.value.data, w)
    if isinstance(attr, FloatAttr) and type(v.type) in _DTYPES:
        return _rounded(np.float64(attr.value.data), v.type)
    return None


def _fold(op: Operation, args: list[int | float]) -> int | float | None:
    """The value of `op` on constant `args`, in its result type; None if not ours."""
    t = op.results[0].type
    width, is_float = _width(t), type(t) in _DTYPES
    if type(op) in _INTEGER_OPS and width is not None:
        return _wrapped(_INTEGER_OPS[type(op)](*args), width)
    if type(op) in _FLOAT_OPS and is_float:
        with np.errstate(all="ignore"):
            return _rounded(_FLOAT_OPS[type(op)](*(np.float64(a) for a in args)), t)
    if isinstance(op, arith.IndexCastOp) and width is not None:
        return _wrapped(int(args[0]), width)
    if isinstance(op, arith.SIToFPOp) and is_float:
        return _rounded(np.int64(args[0]), t)
    if isinstance(op, arith.ExtFOp | arith.TruncFOp) and is_float:
        return _rounded(np.float64(args[0]), t)
    if isinstance(op, mathd.FPowIOp) and is_float:
        return _fpowi(float(args[0]), int(args[1]), t)
    return None


def _fpowi(x: float, n: int, t: Attribute) -> float:
    """`math.fpowi` as compiler-rt's `__powisf2` computes it: the base squared per
    bit of |n|, each product rounded to `t`; the reciprocal for a negative n."""
    result, m = 1.0, abs(n)
    with np.errstate(all="ignore"):
        while m:
            if m & 1:
                result = _rounded(np.float64(result) * x, t)
            m >>= 1
            if m:
                x = _rounded(np.float64(x) * x, t)
        return _rounded(np.float64(1.0) / result, t) if n < 0 else result


class FoldScalarOfConstants(RewritePattern):
    """A function-level scalar op of `arith.constant`s becomes the constant it computes."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        known = (type(op) in _INTEGER_OPS or type(op) in _FLOAT_OPS
                 or isinstance(op, _CASTS | mathd.FPowIOp))  # fmt: skip
        if not known or not isinstance(op.parent_op(), func.FuncOp):
            return
        args = [_value(v) for v in op.operands]
        if any(a is None for a in args):
            return
        value = _fold(op, args)
        if value is None:
            return
        t = op.results[0].type
        attr = IntegerAttr(value, t) if isinstance(value, int) else FloatAttr(value, t)
        rewriter.replace(op, arith.ConstantOp(attr))


class FoldIdentityCast(RewritePattern):
    """A function-level `tensor.cast` to its source's own type is its source."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (isinstance(op, tensor.CastOp) and isinstance(op.parent_op(), func.FuncOp)
                and op.source.type == op.dest.type):  # fmt: skip
            rewriter.replace_all_uses_with(op.dest, op.source)  # the source keeps its name
            rewriter.erase(op)


@dataclass(frozen=True)
class FoldHostScalarsPass(ModulePass):
    """Fold function-level scalar arithmetic on constants, and identity casts."""

    name = "fold-host-scalars"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldIdentityCast()).rewrite_module(op)
        PatternRewriteWalker(FoldScalarOfConstants()).rewrite_module(op)
