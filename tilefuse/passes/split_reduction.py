"""
`split-reduction`: a reduction with too few rows to fill the GPU becomes two.

A sum over a whole tensor, or column sums of a tall matrix, has one program per
output row: a handful of programs stream gigabytes through a handful of SMs.
Like upstream's `linalg::splitReduction` (and Inductor's split reductions), the
reduced axis of extent N = S x C is viewed as [S, C] (a host-side
`tensor.expand_shape` of the input) and reduced in two steps:

```
partial[rows, s] = identity (+) reduce_c f(x[rows, s, c])     S x more programs
out[rows]        = init     (+) reduce_s partial[rows, s]     tiny
```

Taken when the reduction reads a function argument nothing else reads (viewed
for free; no other kernel or pattern re-reads it), has one reduced axis, a plain
sum/max/min combiner, fewer than `sm_count` output rows, and at least
`MIN_SPLIT` elements per row; S is the largest power of two dividing N with
chunks of at least `MIN_CHUNK` elements and rows x S <= 4 x sm_count. Runs
after `linalg-generalize`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Block, BlockArgument, Region
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass

from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.dataflow import REDUCE, classify
from tilefuse.ir.structured import (
    IDENTITY,
    StructuredOp,
    as_structured,
    filled,
    reassociation,
    reduction_combiner,
)

MIN_SPLIT = 1 << 16
"""Rows shorter than this stay one reduction."""
MIN_CHUNK = 4096
"""Elements each partial reduction covers, at least."""

SPLIT_COMBINERS = (arith.AddfOp, arith.MaximumfOp, arith.MinimumfOp)


@dataclass(frozen=True)
class SplitReductionPass(ModulePass):
    """Split reductions with few output rows into partial + final reductions."""

    name = "split-reduction"

    target: str = "h200"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sm_count = get_target(self.target).sm_count
        for f in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            for candidate in list(f.body.block.ops):
                s = as_structured(candidate)
                if s is not None and (plan := _split_plan(s, sm_count)) is not None:
                    _split(s, *plan)


def _split_plan(s: StructuredOp, sm_count: int):
    """(combiner, reduced loop, input axis, S) if `s` should be split, else None."""
    if classify(s) != REDUCE or len(s.inputs) != 1 or len(s.outputs) != 1 or s.dynamic_loops:
        return None  # (a dynamic row count may be many rows; a dynamic length splits by no constant)
    if len(s.reduction_dims) != 1 or not _viewable(s.inputs[0]):
        return None
    (r,) = s.reduction_dims
    combiner = reduction_combiner(s)
    if combiner not in SPLIT_COMBINERS:
        return None
    dims = s.operand_dims(0)
    if r not in dims:
        return None
    n = s.loop_ranges[r]
    rows = 1
    for d in s.parallel_dims:
        rows *= s.loop_ranges[d]
    if rows >= sm_count or n < MIN_SPLIT:
        return None
    splits = 1
    while n % (splits * 2) == 0 and n // (splits * 2) >= MIN_CHUNK and rows * splits * 2 <= 4 * sm_count:
        splits *= 2
    if splits < 2:
        return None
    return combiner, r, dims.index(r), splits


def _viewable(value) -> bool:
    """A function argument that nothing else reads: the host views it as
    [.., S, C, ..] for free, and splitting neither re-reads it elsewhere nor
    breaks a pattern (softmax, LayerNorm) that also reads it."""
    if not isinstance(value, BlockArgument) or not isinstance(value.owner.parent_op(), func.FuncOp):
        return False
    return len({use.operation for use in value.uses}) == 1


def _split(s: StructuredOp, combiner, r: int, axis: int, splits: int) -> None:
    op, x = s.op, s.inputs[0]
    shape = list(x.type.get_shape())
    et = x.type.get_element_type()
    chunk = shape[axis] // splits
    # x viewed as [..., S, C, ...]
    groups = [[i] if i < axis else [i + 1] for i in range(len(shape))]
    groups[axis] = [axis, axis + 1]
    for i in range(axis + 1, len(shape)):
        groups[i] = [i + 1]
    view_shape = [*shape[:axis], splits, chunk, *shape[axis + 1 :]]
    view = tensor.ExpandShapeOp(
        x, [], reassociation(groups),
        view_shape, TensorType(et, view_shape),
    )  # fmt: skip
    # partial: loops of `s` plus one parallel loop `sl` (index n) for the split
    n = s.num_loops
    sl = AffineDimExpr(n)
    in_map = s.maps[0]
    in_results = list(in_map.results)
    in_results[axis : axis + 1] = [sl, AffineDimExpr(r)]
    out_map = s.maps[1]
    out_shape = list(s.outputs[0].type.get_shape())
    partial_type = TensorType(et, [*out_shape, splits])
    partial_init, fill_ops = filled(partial_type, IDENTITY[combiner])
    body = Region()
    s.payload.parent.clone_into(body)
    iterators = [IteratorTypeAttr(IteratorType(it)) for it in s.iterators]
    partial = linalg.GenericOp(
        [view.result], [partial_init], body,
        [AffineMapAttr(AffineMap(n + 1, 0, tuple(in_results))),
         AffineMapAttr(AffineMap(n + 1, 0, (*out_map.results, sl)))],
        [*iterators, IteratorTypeAttr(IteratorType.PARALLEL)], [partial_type],
    )  # fmt: skip
    # final: out = init (+) reduce over the split loop
    rank = len(out_shape)
    combine = Block(arg_types=[et, et])
    c = combiner(combine.args[0], combine.args[1])
    combine.add_ops([c, linalg.YieldOp(c.results[0])])
    final = linalg.GenericOp(
        [partial.results[0]], [s.outputs[0]], Region(combine),
        [AffineMapAttr(AffineMap.identity(rank + 1)),
         AffineMapAttr(AffineMap(rank + 1, 0, tuple(AffineDimExpr(i) for i in range(rank))))],
        [*[IteratorTypeAttr(IteratorType.PARALLEL)] * rank, IteratorTypeAttr(IteratorType.REDUCTION)],
        [s.outputs[0].type],
    )  # fmt: skip
    for new in (view, partial, final):
        new.location = op.location
    block = op.parent_block()
    block.insert_ops_before([view, *fill_ops, partial, final], op)
    op.results[0].replace_all_uses_with(final.results[0])
    op.detach()
    op.erase()
