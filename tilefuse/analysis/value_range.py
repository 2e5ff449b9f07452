"""
Value ranges: the interval an integer, index, boolean or float value of a program
stays in, where the program alone says so.

`value_range(v)` is a `Range(lo, hi)` (both ends included) or None (unknown). It
knows constants (dense tensors too), `linalg.index d` (0 to the loop's trip count
minus 1), casts, `addi`/`subi`/`muli`/`maxsi`/`minsi` (unknown once a result may
wrap), `remui`/`remsi` of a non-negative value by a positive one, `select`, `tensor.dim`
(a static size, or the declared range of the argument dim it resolves to),
comparisons, `andi`/`ori`/`xori` of booleans, and a payload argument read from a
tensor a structured op computes (the range of what its payload yields), a fill, or a view of either. A boolean is `Range(0, 0)` (false),
`Range(1, 1)` (true) or `Range(0, 1)`. `fold-asserts` asks it whether a
`cf.assert`'s condition always holds or never does:

```mlir
%i = linalg.index 0 : index          // [0, 7] in a loop of 8
%c = arith.cmpi slt, %i, %c8 : index // [1, 1]: always true
```

Floats (f16, bf16, f32, f64) are bounded soundly under any rounding the kernels
may do: a float range is never NaN, and holds every value the op can give, its
exact result rounded either way to its type (so also to nearest, through a wider
type, or fused into an FMA), subnormals possibly flushed to zero, and `divf` and
`math.sqrt` off by a relative 2^-16 (Triton's are approximate). It knows
`addf`/`subf`/`mulf` of finite ranges, `divf` by a range without 0, `negf`,
`maximumf`/`minimumf`/`maxnumf`/`minnumf`, `math.sqrt` of a range without negatives,
`extf`/`truncf`/`sitofp`/`uitofp`, and `cmpf` (ordered and unordered alike, NaN
being excluded). A tensor argument of the function with `tilefuse.range = [lo, hi]`
(`RANGE`: every element finite, in `[lo, hi]`; `torch/buffers.py` puts it on the
buffers it checked) is a range of its elements, unless `facts=NO_FACTS`;
`fact_arguments` names the arguments a proof of some `cf.assert` would read one of:

```mlir
func.func @f(%var: tensor<8xf32> {tilefuse.range = [0.25 : f64, 2.0 : f64]})
%s = arith.addf %in, %eps : f32      // [0.25 + 1e-5 rounded down, ...]
%r = math.sqrt %s : f32              // > 0
%c = arith.cmpf one, %r, %zero : f32 // [1, 1]
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from xdsl.dialects import arith, cf, func, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerType,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from tilefuse.ir.constants import constant_array
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.dynamic import argument_name, declared_ranges
from tilefuse.ir.structured import (
    StructuredOp,
    as_structured,
    element_type,
    resolved_size,
)

DEPTH = 12
"""How many producers back a range is traced."""

RANGE = "tilefuse.range"
"""Function argument attribute `[lo : f64, hi : f64]`: every element of the tensor
is finite and in `[lo, hi]`."""

_FORMATS = {Float16Type: (11, -14, 15), BFloat16Type: (8, -126, 127),
            Float32Type: (24, -126, 127), Float64Type: (53, -1022, 1023)}  # fmt: skip
"""Each float type's precision (bits, the leading one included) and normal exponents."""

APPROX = Fraction(1, 2**16)
"""The relative error allowed to `divf` and `math.sqrt`."""
EPS64 = Fraction(1, 2**52)
"""A bound on the relative error of an f64 result of Python's `math.sqrt`."""


@dataclass(frozen=True)
class Range:
    """Every value lies in [lo, hi] (integers exactly; floats never NaN)."""

    lo: float
    hi: float

    def union(self, other: Range) -> Range:
        return Range(min(self.lo, other.lo), max(self.hi, other.hi))


TRUE, FALSE, BOOL = Range(1, 1), Range(0, 0), Range(0, 1)


@dataclass(frozen=True)
class Facts:
    """What `value_range` assumes of the function's arguments: their `RANGE`
    attributes if `use`; `reads`, where given, collects the arguments it looked at."""

    use: bool = True
    reads: set[int] | None = None


USE_FACTS, NO_FACTS = Facts(), Facts(use=False)


def _bits(t: Attribute) -> int | None:
    t = element_type(t)
    if isinstance(t, IndexType):
        return 64
    return t.width.data if isinstance(t, IntegerType) else None


def _fits(r: Range, t: Attribute) -> Range | None:
    """`r` if every value of it is representable in `t` (signed), else None."""
    bits = _bits(t)
    if bits == 1:
        return r if r.lo >= 0 and r.hi <= 1 else None
    if bits is not None:
        return r if -(2 ** (bits - 1)) <= r.lo and r.hi < 2 ** (bits - 1) else None
    return _float_range(t, r.lo, r.hi)


def _round(x: Fraction | float, fmt: tuple[int, int, int], up: bool) -> float:
    """The nearest value of the float format `fmt` at or above `x` (`up`), or at or
    below it: inf above the largest finite value, -inf below the least."""
    if isinstance(x, float) and math.isinf(x):
        return x
    p, emin, emax = fmt
    x = Fraction(x)
    if x == 0:
        return 0.0
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1  # 2^e <= |x| < 2^(e + 1)
    ulp = Fraction(2) ** (max(e, emin) - p + 1)
    q = x / ulp
    r = (math.ceil(q) if up else math.floor(q)) * ulp
    top = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if r > top:
        return math.inf if up else float(top)
    if r < -top:
        return -float(top) if up else -math.inf
    return float(r)


def _widen(x: Fraction | float, side: int) -> Fraction | float:
    """`x` moved up (`side` 1) or down (-1) by a relative `APPROX`."""
    if isinstance(x, float) and math.isinf(x):
        return x
    x = Fraction(x)
    return x + side * abs(x) * APPROX


def _float_range(t: Attribute, lo: Fraction | float, hi: Fraction | float,
                 approx: bool = False) -> Range | None:  # fmt: skip
    """The range of a value of float type `t` whose exact value lies in `[lo, hi]`
    (off by a relative `APPROX` if `approx`): rounded outward, subnormals flushed."""
    fmt = _FORMATS.get(type(element_type(t)))
    if fmt is None:
        return None
    if approx:
        lo, hi = _widen(lo, -1), _widen(hi, 1)
    r_lo, r_hi = _round(lo, fmt, up=False), _round(hi, fmt, up=True)
    tiny = 2.0 ** fmt[1]
    if 0 < r_lo < tiny:
        r_lo = 0.0
    if -tiny < r_hi < 0:
        r_hi = 0.0
    return Range(r_lo, r_hi)


def _constant(op: arith.ConstantOp) -> Range | None:
    values = constant_array(op)
    if values.size == 0 or np.isnan(values).any():
        return None
    if _bits(op.result.type) == 1:  # an i1 true may read as -1
        values = values != 0
    lo, hi = values.min().item(), values.max().item()
    if isinstance(element_type(op.result.type), AnyFloat):  # as written: maybe not of its type
        return _float_range(op.result.type, lo, hi)
    return Range(lo, hi)


def _arithmetic(op: Operation, a: Range, b: Range) -> Range | None:
    if isinstance(op, arith.AddiOp):
        r = Range(a.lo + b.lo, a.hi + b.hi)
    elif isinstance(op, arith.SubiOp):
        r = Range(a.lo - b.hi, a.hi - b.lo)
    elif isinstance(op, arith.MuliOp):
        ends = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
        r = Range(min(ends), max(ends))
    elif isinstance(op, arith.MaxSIOp):
        r = Range(max(a.lo, b.lo), max(a.hi, b.hi))
    elif isinstance(op, arith.MinSIOp):
        r = Range(min(a.lo, b.lo), min(a.hi, b.hi))
    elif isinstance(op, arith.DivUIOp | arith.DivSIOp | arith.FloorDivSIOp) and a.lo >= 0 and b.lo > 0:
        r = Range(a.lo // b.hi, a.hi // b.lo)  # (non-negative: truncation is floor)
    elif isinstance(op, arith.CeilDivUIOp | arith.CeilDivSIOp) and a.lo >= 0 and b.lo > 0:
        r = Range(-(-a.lo // b.hi), -(-a.hi // b.lo))
    elif isinstance(op, arith.RemUIOp | arith.RemSIOp) and a.lo >= 0 and b.lo > 0:
        r = a if a.hi < b.lo else Range(0, min(a.hi, b.hi - 1))
    else:
        return None
    return _fits(r, op.results[0].type)


_SIGNED = {0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge",
           6: "lt", 7: "le", 8: "gt", 9: "ge"}  # fmt: skip
_FLOAT = {1: "eq", 2: "gt", 3: "ge", 4: "lt", 5: "le", 6: "ne",
          8: "eq", 9: "gt", 10: "ge", 11: "lt", 12: "le", 13: "ne"}  # fmt: skip
"""cmpf predicates by number (ordered 1-6, unordered 8-13): the same on non-NaN values."""


_FLOAT_OPS = (arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp, arith.ExtFOp, arith.TruncFOp,
              arith.NegfOp, arith.MaximumfOp, arith.MaxnumfOp, arith.MinimumfOp, arith.MinnumfOp,
              mathd.SqrtOp)  # fmt: skip


def _float_op(op: Operation, args: list[Range]) -> Range | None:
    """A float op's range from its operands' ranges (never NaN: None where the
    op could make one, as `inf - inf`, `0 * inf`, `0 / 0` or `sqrt(-1)`)."""
    t = op.results[0].type
    if isinstance(op, arith.ExtFOp | arith.TruncFOp):
        return _float_range(t, args[0].lo, args[0].hi)
    if isinstance(op, arith.NegfOp):
        return Range(-args[0].hi, -args[0].lo)
    if isinstance(op, arith.MaximumfOp | arith.MaxnumfOp):
        return Range(max(a.lo for a in args), max(a.hi for a in args))
    if isinstance(op, arith.MinimumfOp | arith.MinnumfOp):
        return Range(min(a.lo for a in args), min(a.hi for a in args))
    if any(math.isinf(x) for a in args for x in (a.lo, a.hi)):
        return None
    if isinstance(op, mathd.SqrtOp):
        if args[0].lo < 0:
            return None
        lo, hi = (Fraction(math.sqrt(x)) for x in (args[0].lo, args[0].hi))  # 2^-53 off
        return _float_range(t, lo * (1 - EPS64), hi * (1 + EPS64), approx=True)
    return _finite_arith(op, args)


def _finite_arith(op: Operation, args: list[Range]) -> Range | None:
    """`addf`, `subf`, `mulf` or `divf` of finite ranges (exactly, then rounded)."""
    t = op.results[0].type
    (a_lo, a_hi), (b_lo, b_hi) = ((Fraction(r.lo), Fraction(r.hi)) for r in args)
    if isinstance(op, arith.AddfOp):
        return _float_range(t, a_lo + b_lo, a_hi + b_hi)
    if isinstance(op, arith.SubfOp):
        return _float_range(t, a_lo - b_hi, a_hi - b_lo)
    if isinstance(op, arith.DivfOp) and not b_lo <= 0 <= b_hi:
        ends = [x / y for x in (a_lo, a_hi) for y in (b_lo, b_hi)]
        return _float_range(t, min(ends), max(ends), approx=True)
    if isinstance(op, arith.MulfOp):
        ends = [x * y for x in (a_lo, a_hi) for y in (b_lo, b_hi)]
        return _float_range(t, min(ends), max(ends))
    return None


def _compare(kind: str, a: Range, b: Range) -> Range:
    """`a <kind> b` for every pair of values of the two ranges."""
    always = {"eq": a.lo == a.hi == b.lo == b.hi, "ne": a.hi < b.lo or b.hi < a.lo,
              "lt": a.hi < b.lo, "le": a.hi <= b.lo, "gt": a.lo > b.hi, "ge": a.lo >= b.hi}  # fmt: skip
    never = {"eq": always["ne"], "ne": always["eq"], "lt": a.lo >= b.hi, "le": a.lo > b.hi,
             "gt": a.hi <= b.lo, "ge": a.hi < b.lo}  # fmt: skip
    return TRUE if always[kind] else FALSE if never[kind] else BOOL


def _logic(op: Operation, a: Range, b: Range) -> Range:
    x, y = (None if r == BOOL else bool(r.lo) for r in (a, b))
    if isinstance(op, arith.AndIOp):
        known = False if False in (x, y) else True if x is y is True else None
    elif isinstance(op, arith.OrIOp):
        known = True if True in (x, y) else False if x is y is False else None
    else:
        known = None if None in (x, y) else x != y
    return BOOL if known is None else TRUE if known else FALSE


def _structured(op: Operation) -> StructuredOp | None:
    """`as_structured`, or None for an op it refuses (a map read before `fold-unit-dims`
    makes it a projection, `(d0, d1) -> (d0, 0)`): a value of no known range, not an
    error of the analysis."""
    try:
        return as_structured(op)
    except CompileError:
        return None


def _of_op(op: Operation, v: SSAValue, depth: int, facts: Facts) -> Range | None:
    if isinstance(op, arith.ConstantOp):
        return _constant(op)
    if isinstance(op, linalg.IndexOp):
        parent = op.parent_op()
        s = _structured(parent) if parent is not None else None
        if s is None or s.loop_ranges[op.dim.value.data] < 0:
            return None  # a dynamic trip count: no bound this analysis may rely on
        return Range(0, s.loop_ranges[op.dim.value.data] - 1)
    if isinstance(op, tensor.ExpandShapeOp | tensor.CollapseShapeOp | tensor.ExtractSliceOp):
        return value_range(op.operands[0], depth - 1, facts)
    if isinstance(op, tensor.DimOp):
        return _size_range(op, depth, facts)
    if (s := _structured(op)) is not None:
        return _yielded(s.payload, list(op.results).index(v), depth - 1, facts)
    return _of_scalar_op(op, [value_range(o, depth, facts) for o in op.operands])


def _size_range(op: tensor.DimOp, depth: int, facts: Facts) -> Range | None:
    """A `tensor.dim` at a constant axis: the static size, or the size it resolves
    to (`resolved_size`): a size value's range, or the declared range of a function
    argument's dynamic dim (`tilefuse.dim_ranges`)."""
    index = op.index.owner
    if not isinstance(index, arith.ConstantOp) or not isinstance(op.source.type, TensorType):
        return None
    axis = index.value.value.data  # pyright: ignore
    size = op.source.type.get_shape()[axis]
    if size >= 0:
        return Range(size, size)
    at = resolved_size(op.source, axis)
    if not isinstance(at, tuple):
        return value_range(at, depth - 1, facts)
    value, axis = at
    if not isinstance(value.type, TensorType):
        return None
    if (size := value.type.get_shape()[axis]) >= 0:
        return Range(size, size)
    f = value.block.parent_op() if isinstance(value, BlockArgument) else None
    if not isinstance(f, func.FuncOp) or value.block is not f.body.blocks.first:
        return None
    declared = declared_ranges(f).get(f"{argument_name(f, value.index)}.{axis}")
    return None if declared is None else Range(declared.lo, declared.hi)


def _select(c: Range | None, a: Range | None, b: Range | None) -> Range | None:
    if c is not None and a is not None and c == TRUE:
        return a
    if c is not None and b is not None and c == FALSE:
        return b
    return a.union(b) if a is not None and b is not None else None


def _of_scalar_op(op: Operation, args: list[Range | None]) -> Range | None:
    """An arith op's range from its operands' ranges."""
    if isinstance(op, arith.SelectOp):
        return _select(*args)
    if any(a is None for a in args):
        return None
    if isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.TruncIOp | arith.SIToFPOp):
        return _fits(args[0], op.results[0].type)  # type: ignore[arg-type]
    if isinstance(op, arith.ExtUIOp | arith.UIToFPOp) and args[0].lo >= 0:  # type: ignore[union-attr]
        return _fits(args[0], op.results[0].type)  # type: ignore[arg-type]
    if isinstance(op, arith.CmpiOp) and (op.predicate.value.data < 6 or args[0].lo >= 0 <= args[1].lo):  # type: ignore[union-attr]
        return _compare(_SIGNED[op.predicate.value.data], *args)  # type: ignore[arg-type]
    if isinstance(op, arith.CmpfOp) and op.predicate.value.data in _FLOAT:
        return _compare(_FLOAT[op.predicate.value.data], *args)  # type: ignore[arg-type]
    if isinstance(op, arith.AndIOp | arith.OrIOp | arith.XOrIOp) and _bits(op.results[0].type) == 1:
        return _logic(op, *args)  # type: ignore[arg-type]
    if isinstance(op, _FLOAT_OPS):
        return _float_op(op, args)  # type: ignore[arg-type]
    return _arithmetic(op, *args) if len(args) == 2 else None  # type: ignore[arg-type]


def _yielded(payload: Block, j: int, depth: int, facts: Facts) -> Range | None:
    """The range of the `j`-th value a payload yields, over all its iterations."""
    yield_op = payload.last_op
    if yield_op is None or j >= len(yield_op.operands):
        return None
    return value_range(yield_op.operands[j], depth, facts)


def argument_range(arg: BlockArgument) -> Range | None:
    """The range of the elements of a float tensor argument of a function with a
    `RANGE` attribute (rounded outward to its element type)."""
    f = arg.block.parent_op()
    if not isinstance(f, func.FuncOp) or arg.block is not f.body.blocks.first or f.arg_attrs is None or \
            len(f.arg_attrs.data) != len(arg.block.args):  # fmt: skip
        return None
    a = f.arg_attrs.data[arg.index].data.get(RANGE)
    if not isinstance(a, ArrayAttr) or len(a.data) != 2 or not all(isinstance(x, FloatAttr) for x in a.data):
        return None
    lo, hi = (x.value.data for x in a.data)  # type: ignore[union-attr]
    if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
        return None
    return _float_range(arg.type, lo, hi) if isinstance(element_type(arg.type), AnyFloat) else None


def _of_argument(arg: BlockArgument, depth: int, facts: Facts) -> Range | None:
    """A payload argument: the range of the tensor element it reads (an output's
    old value only where the payload never reads it: a reduction's partial
    results are not traced); a function argument: its `RANGE` attribute's."""
    parent = arg.block.parent_op()
    if isinstance(parent, func.FuncOp):
        if facts.reads is not None:
            facts.reads.add(arg.index)
        return argument_range(arg) if facts.use else None
    s = _structured(parent) if parent is not None else None
    if s is None or arg.index >= len(s.inputs):
        return BOOL if _bits(arg.type) == 1 else None
    return value_range(s.inputs[arg.index], depth - 1, facts)


def value_range(v: SSAValue, depth: int = DEPTH, facts: Facts | None = None) -> Range | None:
    """The range `v` stays in, or None if the program does not bound it (nor, if
    `facts.use`, the `RANGE` attributes of the function's arguments: the default)."""
    facts = USE_FACTS if facts is None else facts
    if depth <= 0:
        return BOOL if _bits(v.type) == 1 else None
    if isinstance(v, BlockArgument):
        r = _of_argument(v, depth, facts)
    elif isinstance(v.owner, Operation):
        r = _of_op(v.owner, v, depth, facts)
    else:
        r = None
    if r is None and _bits(v.type) == 1:
        return BOOL
    if r is not None and (math.isnan(r.lo) or math.isnan(r.hi)):
        return None
    return r


def fact_arguments(f: func.FuncOp) -> set[int]:
    """The arguments of `f` a proof of one of its `cf.assert`s would read the `RANGE`
    attribute of (those worth a fact)."""
    facts = Facts(use=False, reads=set())
    for op in f.walk():
        if isinstance(op, cf.AssertOp):
            value_range(op.arg, facts=facts)
    return facts.reads  # type: ignore[return-value]
