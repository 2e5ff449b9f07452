"""
The printer's `tl.dot` decision: which contractions on tiles become one `tl.dot`,
and in which operand type.

Kept in one place so it can follow a decision of the tile plan later: today the
printer decides from the tile shapes it sees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.linalg import ops as linalg

from tilefuse.analysis.dataflow import is_contraction
from tilefuse.backend.triton.dtypes import TL_DTYPE
from tilefuse.ir.structured import REDUCTION, StructuredOp, as_structured, element_type
from tilefuse.ir.tilefuse import GroupOp

MIN_DOT = 16
"""tl.dot's smallest M, N and K."""


@dataclass(frozen=True)
class DotAxes:
    """The loops of a contraction grouped as tl.dot's M, N and K (trip count 1
    loops left out)."""

    m: list[int]
    n: list[int]
    k: list[int]


def dot_axes(s: StructuredOp) -> DotAxes | None:
    """Is the contraction `s` on tiles one 2-D `tl.dot`, and with which loops?

    None when `s` is no contraction, has a batch dim of more than one (no 2-D
    tl.dot), or has an M, N or K below `MIN_DOT`: it is then multiplied and
    reduced in the compute type.
    """
    if not is_contraction(s):
        return None
    space = tuple(s.loop_ranges)

    def kept(dims):
        return [d for d in dims if space[d] != 1]

    a, b = (kept(s.operand_dims(i)) for i in range(2))
    out = kept(s.operand_dims(2))
    m = [d for d in out if d in a and d not in b]
    n = [d for d in out if d in b and d not in a]
    if any(d in a and d in b for d in out):
        return None
    k = kept(s.reduction_dims)
    if min(math.prod(space[d] for d in g) for g in (m, n, k)) < MIN_DOT:
        return None
    return DotAxes(m, n, k)


def dot_input_dtype(group: GroupOp) -> str:
    """The `tl` type a group's tl.dot operands are cast to: the element type of its
    first contraction's first input (fp32 without a contraction)."""
    for op in group.walk():
        if isinstance(op, linalg.GenericOp) and REDUCTION in [
            str(i.data) for i in op.iterator_types
        ]:
            s = as_structured(op)
            if s is not None and is_contraction(s):
                return TL_DTYPE[type(element_type(s.inputs[0].type))]
    return "tl.float32"
