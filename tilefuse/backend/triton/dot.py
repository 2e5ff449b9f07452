"""
The printer's `tl.dot` decision, from the tile plan: a contraction on tiles is one
`tl.dot` when its grid's `#tilefuse.tile_plan` says the grid has a dot (`dot =
"bf16"`) and the contraction's loops group as tl.dot's M, N and K
(`analysis.dot.dot_dims`, the rule the planner used). A grid without a plan
(hand-written tiled IR) follows the rule alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation

from tilefuse.analysis.dataflow import is_contraction
from tilefuse.analysis.dot import dot_dims, operand_dtype
from tilefuse.backend.triton.dtypes import TL_DTYPE_BY_NAME
from tilefuse.ir.structured import REDUCTION, StructuredOp, as_structured
from tilefuse.ir.tilefuse import TF32, GroupOp, TileGridOp


@dataclass(frozen=True)
class DotAxes:
    """The loops of a contraction grouped as tl.dot's M, N and K (trip count 1
    loops left out)."""

    m: list[int]
    n: list[int]
    k: list[int]


def _grid_of(op: Operation) -> TileGridOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, TileGridOp):
        parent = parent.parent_op()
    return parent


def dot_axes(s: StructuredOp) -> DotAxes | None:
    """Is the contraction `s` on tiles one 2-D `tl.dot`, and with which loops?

    None when `s` is no contraction, when its grid's plan has no dot, or when its
    loops are no 2-D tl.dot (a batch dim of more than one, an M, N or K below
    `MIN_DOT`): it is then multiplied and reduced in the compute type."""
    if not is_contraction(s):
        return None
    grid = _grid_of(s.op)
    if grid is not None and grid.plan is not None and grid.plan.dot_dtype is None:
        return None
    dims = dot_dims(s)
    return DotAxes(*dims) if dims is not None else None


def narrower_than_its_factors(s: StructuredOp) -> bool:
    """Does the kernel's `DOT_DTYPE` (its grid's first tl.dot's, a 16-bit type) round
    the factors of the contraction `s`, which multiplies in f32 (FlashAttention's
    f32 probabilities times bf16 values)? It is then a tl.dot in f32, IEEE."""
    grid = _grid_of(s.op)
    planned = grid.plan.dot_dtype if grid is not None and grid.plan is not None else None
    return planned in ("bf16", "f16") and operand_dtype(s) == "f32"


def dot_precision(group: GroupOp) -> str:
    """tl.dot's `input_precision` for a group: `"ieee"` for f32 operands unless its
    plan says TF32 (`dot = "tf32"`, asked for with `allow_tf32`); `"tf32"` otherwise
    (16-bit operands, where it changes nothing)."""
    planned = [g.plan.dot_dtype for g in group.grids if g.plan is not None and g.plan.dot_dtype]
    if planned and planned[0] == TF32:
        return "tf32"
    return "tf32" if dot_input_dtype(group) in ("tl.bfloat16", "tl.float16") else "ieee"


def dot_input_dtype(group: GroupOp) -> str:
    """The `tl` type a group's tl.dot operands are cast to: its plans' dot dtype, else
    its first contraction's `analysis.dot.operand_dtype` (fp32 without one)."""
    planned = [g.plan.dot_dtype for g in group.grids if g.plan is not None and g.plan.dot_dtype]
    if planned:
        return "tl.float32" if planned[0] == TF32 else TL_DTYPE_BY_NAME[planned[0]]
    for op in group.walk():
        if isinstance(op, linalg.GenericOp) and REDUCTION in [
            str(i.data) for i in op.iterator_types
        ]:
            s = as_structured(op)
            if s is not None and is_contraction(s):
                return TL_DTYPE_BY_NAME[operand_dtype(s)]
    return "tl.float32"
