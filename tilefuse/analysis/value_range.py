"""
Value ranges: the interval an integer, index, boolean or float value of a program
stays in, where the program alone says so.

`value_range(v)` is a `Range(lo, hi)` (both ends included) or None (unknown). It
knows constants (dense tensors too), `linalg.index d` (0 to the loop's trip count
minus 1), casts, `addi`/`subi`/`muli`/`maxsi`/`minsi` (unknown once a result may
wrap), `select`, comparisons, `andi`/`ori`/`xori` of booleans, and a payload
argument read from a tensor a structured op computes (the range of what its payload
yields), a fill, or a view of either. A boolean is `Range(0, 0)` (false),
`Range(1, 1)` (true) or `Range(0, 1)`. `fold-asserts` asks it whether a
`cf.assert`'s condition always holds or never does:

```mlir
%i = linalg.index 0 : index          // [0, 7] in a loop of 8
%c = arith.cmpi slt, %i, %c8 : index // [1, 1]: always true
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import AnyFloat, IndexType, IntegerType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from tilefuse.ir.constants import constant_array
from tilefuse.ir.structured import as_structured, element_type

DEPTH = 8
"""How many producers back a range is traced."""


@dataclass(frozen=True)
class Range:
    """Every value lies in [lo, hi] (integers exactly; floats never NaN)."""

    lo: float
    hi: float

    def union(self, other: Range) -> Range:
        return Range(min(self.lo, other.lo), max(self.hi, other.hi))


TRUE, FALSE, BOOL = Range(1, 1), Range(0, 0), Range(0, 1)


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
    return r if isinstance(element_type(t), AnyFloat) else None


def _constant(op: arith.ConstantOp) -> Range | None:
    values = constant_array(op)
    if values.size == 0 or np.isnan(values).any():
        return None
    if _bits(op.result.type) == 1:  # an i1 true may read as -1
        values = values != 0
    return Range(values.min().item(), values.max().item())


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
    else:
        return None
    return _fits(r, op.results[0].type)


_SIGNED = {0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge",
           6: "lt", 7: "le", 8: "gt", 9: "ge"}  # fmt: skip
_FLOAT = {1: "eq", 2: "gt", 3: "ge", 4: "lt", 5: "le", 6: "ne",
          8: "eq", 9: "gt", 10: "ge", 11: "lt", 12: "le", 13: "ne"}  # fmt: skip
"""cmpf predicates by number (ordered 1-6, unordered 8-13): the same on non-NaN values."""


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


def _of_op(op: Operation, v: SSAValue, depth: int) -> Range | None:
    if isinstance(op, arith.ConstantOp):
        return _constant(op)
    if isinstance(op, linalg.IndexOp):
        parent = op.parent_op()
        s = as_structured(parent) if parent is not None else None
        return Range(0, s.loop_ranges[op.dim.value.data] - 1) if s is not None else None
    if isinstance(op, tensor.ExpandShapeOp | tensor.CollapseShapeOp | tensor.ExtractSliceOp):
        return value_range(op.operands[0], depth - 1)
    if (s := as_structured(op)) is not None:
        return _yielded(s.payload, list(op.results).index(v), depth - 1)
    return _of_scalar_op(op, [value_range(o, depth) for o in op.operands])


def _of_scalar_op(op: Operation, args: list[Range | None]) -> Range | None:
    """An arith op's range from its operands' ranges."""
    if isinstance(op, arith.SelectOp):
        c, a, b = args
        if c is not None and a is not None and c == TRUE:
            return a
        if c is not None and b is not None and c == FALSE:
            return b
        return a.union(b) if a is not None and b is not None else None
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
    return _arithmetic(op, *args) if len(args) == 2 else None  # type: ignore[arg-type]


def _yielded(payload: Block, j: int, depth: int) -> Range | None:
    """The range of the `j`-th value a payload yields, over all its iterations."""
    yield_op = payload.last_op
    if yield_op is None or j >= len(yield_op.operands):
        return None
    return value_range(yield_op.operands[j], depth)


def _of_argument(arg: BlockArgument, depth: int) -> Range | None:
    """A payload argument: the range of the tensor element it reads (an output's
    old value only where the payload never reads it: a reduction's partial
    results are not traced)."""
    parent = arg.block.parent_op()
    s = as_structured(parent) if parent is not None else None
    if s is None or arg.index >= len(s.inputs):
        return BOOL if _bits(arg.type) == 1 else None
    return value_range(s.inputs[arg.index], depth - 1)


def value_range(v: SSAValue, depth: int = DEPTH) -> Range | None:
    """The range `v` stays in, or None if the program does not bound it."""
    if depth <= 0:
        return BOOL if _bits(v.type) == 1 else None
    if isinstance(v, BlockArgument):
        r = _of_argument(v, depth)
    elif isinstance(v.owner, Operation):
        r = _of_op(v.owner, v, depth)
    else:
        r = None
    if r is None and _bits(v.type) == 1:
        return BOOL
    if r is not None and (math.isnan(r.lo) or math.isnan(r.hi)):
        return None
    return r
