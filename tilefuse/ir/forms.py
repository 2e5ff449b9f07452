"""
The forms a module takes through the pipeline, as predicates.

Each stage that later stages rely on leaves a mark: no `func.call` (inline-calls), only
`linalg.generic` among the structured ops (linalg-generalize), every generic inside a
`tilefuse.group` (fusion-groups), a `tilefuse.tile_grid` in every group
(tile-and-fuse). A pass checks its input's form with these and names the stage that is
missing instead of failing inside; `pipeline.unmet_stage` asks the same questions.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation

from tilefuse.ir.tilefuse import GroupOp, TileGridOp

_GENERAL = (linalg.GenericOp, linalg.YieldOp, linalg.IndexOp)


def first_call(root: Operation) -> Operation | None:
    """A `func.call` under `root` (inline-calls removes them all)."""
    return next((op for op in root.walk() if isinstance(op, func.CallOp)), None)


def first_named_op(root: Operation) -> Operation | None:
    """A structured op under `root` that is not a `linalg.generic` (linalg-generalize
    rewrites them all)."""
    return next((op for op in root.walk()
                 if op.dialect_name() == "linalg" and not isinstance(op, _GENERAL)), None)  # fmt: skip


def _in_group(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, GroupOp):
        parent = parent.parent_op()
    return parent is not None


def first_ungrouped_generic(root: Operation) -> Operation | None:
    """A `linalg.generic` under `root` outside every group (fusion-groups groups them)."""
    return next((op for op in root.walk()
                 if isinstance(op, linalg.GenericOp) and not _in_group(op)), None)  # fmt: skip


def first_untiled_group(root: Operation) -> GroupOp | None:
    """A group under `root` with no tile grid (tile-and-fuse tiles them)."""
    return next((g for g in root.walk() if isinstance(g, GroupOp)
                 and not any(isinstance(o, TileGridOp) for o in g.walk())), None)  # fmt: skip
