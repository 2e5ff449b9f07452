"""
Cleanup patterns the passes that leave them apply after themselves.

A reshape of a `tensor.empty` or of a `linalg.fill` is not a view of anything that
exists outside kernels, so it becomes an empty or a fill of the new shape
(`FoldReshapeOfCreation`); views, fills and empties at function level that nothing
reads any more are erased (`EraseDeadView`). `fold-reshape-of-creation` runs both on
the input; `fold-unit-dims`, `fold-transposes` and `fold-windows` run them on what they
leave behind.

```mlir
%e = tensor.empty() : tensor<8xf32>
%v = tensor.expand_shape %e [[0, 1]] output_shape [8, 1] : tensor<8xf32> into tensor<8x1xf32>
// becomes
%v = tensor.empty() : tensor<8x1xf32>
```
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.ir.structured import dim_of, made_value, resolved_size, scaled_size


class FoldReshapeOfCreation(RewritePattern):
    """A reshape of `tensor.empty` is an empty of the new shape; a reshape of a
    fill (`linalg.fill`, or a generic one: `is_generic_fill`) is a fill of the new
    shape (neither exists outside kernels); with `iotas`, a reshape of an iota
    (`is_iota`) the same iota computed in the new shape; a static slice of an empty
    or a fill, an empty or a fill of the slice's shape."""

    def __init__(self, iotas: bool = False):
        self.iotas = iotas
        """Also iotas: only where no later stage would fold the view itself (the
        stages between see an `arange`'s views as they are: fold-unit-dims and
        propagate-reshapes fold them into readers, and a causal mask stays one the
        flash-attention pass reads from indices)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, tensor.ExtractSliceOp):
            self._slice(op, rewriter)
        elif isinstance(op, tensor.ExpandShapeOp | tensor.CollapseShapeOp):
            self._reshape(op, rewriter)

    def _reshape(self, op: tensor.ExpandShapeOp | tensor.CollapseShapeOp,
                 rewriter: PatternRewriter) -> None:  # fmt: skip
        source = op.src.owner
        if not isinstance(source, tensor.EmptyOp | linalg.FillOp | linalg.GenericOp):
            return
        if is_iota(source):
            if self.iotas:
                self._iota(op, source, rewriter)  # pyright: ignore
            return
        if isinstance(source, linalg.GenericOp) and not is_generic_fill(source):
            return
        sizing: list[Operation] = []
        if isinstance(op, tensor.CollapseShapeOp):
            # (sized only now: an op made and dropped would hold uses of its operands)
            found = collapsed_sizes(op, _creation_sizes(source))
            if found is None:
                return  # (two dynamic sizes merged: left as a view, refused where placed)
            sizing, sizes = found
        else:  # an expand says its dynamic sizes
            sizes = list(op.dynamic_output_shape)
        for o in sizing:
            rewriter.insert(o, InsertPoint.before(op))
        if isinstance(source, linalg.GenericOp):  # a generic fill (checked above)
            new = generic_fill(source, op.result.type, sizes)  # pyright: ignore
            rewriter.replace(op, new, [new[-1].results[0]])
            return
        empty = tensor.EmptyOp(sizes, op.result.type)
        if isinstance(source, tensor.EmptyOp):
            rewriter.replace(op, [empty], [empty.tensor])
        else:
            fill = type(source)(list(source.inputs), [empty.tensor], [op.result.type])
            rewriter.replace(op, [empty, fill], [fill.results[0]])


    @staticmethod
    def _slice(op: tensor.ExtractSliceOp, rewriter: PatternRewriter) -> None:
        """A static slice of an empty is an empty of its shape, of a fill a fill
        (torch's circular padding slices an empty it then writes into)."""
        source = op.source.owner
        new_type = op.result.type
        assert isinstance(new_type, TensorType)
        if any(n < 0 for n in new_type.get_shape()):
            return
        if isinstance(source, tensor.EmptyOp):
            empty = tensor.EmptyOp([], new_type)
            rewriter.replace(op, [empty], [empty.tensor])
        elif isinstance(source, linalg.FillOp):
            empty = tensor.EmptyOp([], new_type)
            fill = linalg.FillOp(list(source.inputs), [empty.tensor], [new_type])
            rewriter.replace(op, [empty, fill], [fill.results[0]])
        elif is_generic_fill(source):
            new = generic_fill(source, new_type)  # pyright: ignore
            rewriter.replace(op, new, [new[-1].results[0]])

    @staticmethod
    def _iota(op: tensor.ExpandShapeOp | tensor.CollapseShapeOp, source: linalg.GenericOp,
              rewriter: PatternRewriter) -> None:  # fmt: skip
        new = reshaped_iota(source, op)
        if new is not None:
            rewriter.replace(op, new, [new[-1].results[0]])


def _creation_sizes(source) -> list[SSAValue] | None:
    """The dynamic sizes of the `tensor.empty` a creation (an empty or a fill of one) is."""
    if isinstance(source, linalg.FillOp | linalg.GenericOp) and source.outputs:
        source = source.outputs[0].owner
    return list(source.dynamic_sizes) if isinstance(source, tensor.EmptyOp) else None


def collapsed_sizes(op: tensor.CollapseShapeOp, known: Sequence[SSAValue] | None = None
                    ) -> tuple[list[Operation], list[SSAValue]] | None:  # fmt: skip
    """The dynamic sizes of a collapse's result from its source's (`known`, in order,
    else `tensor.dim`s of it), each times its group's static sizes: the ops and the
    sizes; None where a group merges two dynamic sizes."""
    shape = op.src.type.get_shape()  # pyright: ignore
    dynamic_dims = [d for d, n in enumerate(shape) if n < 0]
    groups = [[d.value.data for d in group.data] for group in op.reassociation.data]  # pyright: ignore
    if any(sum(shape[d] < 0 for d in dims) > 1 for dims in groups):
        return None  # (before any op is made: a dropped op would hold uses)
    ops: list[Operation] = []
    sizes = []
    for dims in groups:
        dynamic = [d for d in dims if shape[d] < 0]
        if not dynamic:
            continue
        if known is not None:
            size = known[dynamic_dims.index(dynamic[0])]
        else:
            made, size = dim_of(op.src, dynamic[0])
            ops += made
        scale, size = scaled_size(size, math.prod(shape[d] for d in dims if shape[d] >= 0), False)
        ops += scale
        sizes.append(size)
    return ops, sizes


def is_generic_fill(op: Operation | Block) -> bool:
    """A generalised `linalg.fill` at function level: a generic of scalars (or 0-d
    tensors) only, written at every point of an identity-mapped output, whose
    payload reads neither a loop index (an `arange` is not a fill: its values move
    with the shape) nor the output's old value. The same at any shape."""
    if not isinstance(op, linalg.GenericOp) or not isinstance(op.parent_op(), func.FuncOp):
        return False
    maps = [m.data for m in op.indexing_maps.data]
    block = op.body.block
    return (len(op.outputs) == 1 and all(not m.results for m in maps[:-1])
            and maps[-1] == AffineMap.identity(maps[-1].num_dims)
            and all(str(i.data) == "parallel" for i in op.iterator_types)
            and not any(isinstance(o, linalg.IndexOp) for o in op.body.walk())
            and not block.args[-1].uses)  # fmt: skip


def fill_constant(value: SSAValue) -> arith.ConstantOp | None:
    """The constant `value` is filled with: a named `linalg.fill` of a constant, or a
    generic fill (`is_generic_fill`) yielding a constant input (or a constant itself,
    a splat's element)."""
    fill = value.owner
    if isinstance(fill, linalg.FillOp):
        const = fill.inputs[0].owner
        return const if isinstance(const, arith.ConstantOp) else None
    if not is_generic_fill(fill):
        return None
    assert isinstance(fill, linalg.GenericOp)
    yielded = fill.body.block.last_op
    v = yielded.operands[0] if yielded is not None and yielded.operands else None
    if isinstance(v, BlockArgument) and v.index < len(fill.inputs):
        v = fill.inputs[v.index]
    const = v.owner if v is not None else None
    return const if isinstance(const, arith.ConstantOp) else None


def is_zero_fill(value: SSAValue) -> bool:
    """`value` is a floating-point fill of 0."""
    const = fill_constant(value)
    return const is not None and isinstance(const.value, FloatAttr) and const.value.value.data == 0.0


def is_iota(op: Operation) -> bool:
    """A generic fill except that its payload reads loop indices (`torch.arange`, a
    mask made from indices): the same at another shape once each index is
    rewritten (`reshaped_iota`)."""
    if not isinstance(op, linalg.GenericOp) or not isinstance(op.parent_op(), func.FuncOp):
        return False
    maps = [m.data for m in op.indexing_maps.data]
    return (len(op.outputs) == 1 and all(not m.results for m in maps[:-1])
            and maps[-1] == AffineMap.identity(maps[-1].num_dims)
            and all(str(i.data) == "parallel" for i in op.iterator_types)
            and any(isinstance(o, linalg.IndexOp) for o in op.body.walk())
            and not op.body.block.args[-1].uses)  # fmt: skip


def reshaped_iota(iota: linalg.GenericOp,
                  view: tensor.ExpandShapeOp | tensor.CollapseShapeOp) -> list[Operation] | None:  # fmt: skip
    """The ops of `iota` (`is_iota`) computed in `view`'s result shape, its result
    last: each old index from the new ones (an expanded dim's index linearised from
    its parts', a merged dim's index divided and reduced). None for dynamic shapes."""
    old_shape = list(view.src.type.get_shape())  # pyright: ignore
    new_type = view.result.type
    assert isinstance(new_type, TensorType)
    new_shape = list(new_type.get_shape())
    if any(n < 0 for n in old_shape + new_shape):
        return None
    groups = [[i.value.data for i in g] for g in view.reassociation]  # pyright: ignore
    rank = len(new_shape)
    empty = tensor.EmptyOp([], new_type)
    body = iota.body.clone()
    for index in [o for o in body.walk() if isinstance(o, linalg.IndexOp)]:
        d = index.dim.value.data
        if isinstance(view, tensor.ExpandShapeOp):  # old dim d -> new dims groups[d]
            parts = [n for n in groups[d] if new_shape[n] != 1]  # (unit dims add 0)
            ops = _linearised_index(parts, [new_shape[n] for n in parts])
        else:  # new dim n <- old dims groups[n], d among them
            n = next(n for n, g in enumerate(groups) if d in g)
            k = groups[n].index(d)
            inner = math.prod(old_shape[e] for e in groups[n][k + 1:])
            outer = math.prod(old_shape[e] for e in groups[n][:k])
            ops = _delinearised_index(n, inner, old_shape[d] if outer != 1 else None, old_shape[d])
        Rewriter.insert_op(ops, InsertPoint.before(index))
        index.result.replace_all_uses_with(ops[-1].results[0])
        index.detach()
        index.erase()
    maps = [AffineMapAttr(AffineMap(rank, 0, ())) for _ in iota.inputs]
    new = linalg.GenericOp(list(iota.inputs), [empty.tensor], body,
                           [*maps, AffineMapAttr(AffineMap.identity(rank))],
                           ArrayAttr([linalg.IteratorTypeAttr.parallel()] * rank), [new_type])  # fmt: skip
    new.location = iota.location
    return [empty, new]


def _linearised_index(dims: Sequence[int], sizes: Sequence[int]) -> list[Operation]:
    """`((i_0 * s_1) + i_1) * s_2 + i_2 ...` of the loops `dims` (sizes `sizes`; none:
    the constant 0)."""
    if not dims:
        return [arith.ConstantOp(IntegerAttr(0, IndexType()))]
    ops: list[Operation] = [linalg.IndexOp(dims[0])]
    for n, size in zip(dims[1:], sizes[1:], strict=True):
        part = linalg.IndexOp(n)
        scale = arith.ConstantOp(IntegerAttr(size, IndexType()))
        mul = arith.MuliOp(ops[-1].results[0], scale.result)
        ops += [part, scale, mul, arith.AddiOp(mul.result, part.result)]
    return ops


def _delinearised_index(dim: int, inner: int, size: int | None, extent: int) -> list[Operation]:
    """`(i // inner) % size` of loop `dim` (no `%` where `size` is None: nothing
    outside it in the group; the constant 0 for an `extent` of 1)."""
    if extent == 1:
        return [arith.ConstantOp(IntegerAttr(0, IndexType()))]
    ops: list[Operation] = [linalg.IndexOp(dim)]
    if inner != 1:
        c = arith.ConstantOp(IntegerAttr(inner, IndexType()))
        ops += [c, arith.DivUIOp(ops[-1].results[0], c.result)]
    if size is not None:
        c = arith.ConstantOp(IntegerAttr(size, IndexType()))
        ops += [c, arith.RemUIOp(ops[-1].results[0], c.result)]
    return ops


def generic_fill(fill: linalg.GenericOp, new_type: TensorType,
                 sizes: Sequence[SSAValue] = ()) -> list[Operation]:  # fmt: skip
    """The ops of the same fill (`is_generic_fill`) at another shape: an empty (its
    dynamic `sizes`) and the generic, its result last."""
    rank = len(new_type.get_shape())
    empty = tensor.EmptyOp(list(sizes), new_type)
    maps = [AffineMapAttr(AffineMap(rank, 0, ())) for _ in fill.inputs]
    new = linalg.GenericOp(list(fill.inputs), [empty.tensor], fill.body.clone(),
                           [*maps, AffineMapAttr(AffineMap.identity(rank))],
                           ArrayAttr([linalg.IteratorTypeAttr.parallel()] * rank), [new_type])  # fmt: skip
    new.location = fill.location
    return [empty, new]


_VIEW_OR_CREATION = tensor.ExpandShapeOp | tensor.CollapseShapeOp | tensor.EmptyOp | linalg.FillOp


class EraseDeadView(RewritePattern):
    """A function-level reshape, empty or fill whose results nothing reads."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (isinstance(op, _VIEW_OR_CREATION) and isinstance(op.parent_op(), func.FuncOp)
                and not any(r.uses for r in op.results)):  # fmt: skip
            rewriter.erase(op)


def fold_reshapes_of_creations(module: ModuleOp, iotas: bool = False) -> None:
    """Apply `FoldReshapeOfCreation` until nothing changes (`iotas`: views of iotas
    too, the last stage before fusion-groups)."""
    PatternRewriteWalker(FoldReshapeOfCreation(iotas)).rewrite_module(module)


def erase_dead_views(module: ModuleOp | func.FuncOp) -> None:
    """Apply `EraseDeadView` until nothing changes (a dead fill's empty dies with it)."""
    PatternRewriteWalker(EraseDeadView()).rewrite_module(module)


class ResolveDim(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.DimOp, rewriter: PatternRewriter) -> None:
        index = op.index.owner
        if not isinstance(index, arith.ConstantOp):
            return
        axis = index.value.value.data  # pyright: ignore[reportAttributeAccessIssue]
        if (made := made_value(op.source, axis)) is not None:
            rewriter.replace(op, [], [made])  # the size it was made with
            return
        at = resolved_size(op.source, axis)
        if isinstance(at, tuple):
            if at == (op.source, axis):
                return
            c = arith.ConstantOp(IntegerAttr(at[1], IndexType()))
            dim = tensor.DimOp(at[0], c.result)
            rewriter.replace(op, [c, dim], [dim.result])
        else:
            rewriter.replace(op, [], [at])


def resolve_dims(op: ModuleOp) -> None:
    """`resolve-dims` on `op` (`passes/resolve_dims.py`; `flash-attention` runs it
    first too: a size read of a row sum is a reader its pattern would have to keep)."""
    PatternRewriteWalker(ResolveDim()).rewrite_module(op)
    # Views read only for their sizes go (else a kernel writes their source out:
    # a dynamic LayerNorm's saved mean and variance), with the size arithmetic.
    # (no general DCE: an unused op a later stage must refuse stays for it to refuse)
    patterns = GreedyRewritePatternApplier([EraseDeadView(), EraseDeadSize()], dce_enabled=False)
    PatternRewriteWalker(patterns, walk_reverse=True).rewrite_module(op)


_SIZE_OPS = (tensor.DimOp, arith.ConstantOp, arith.MuliOp, arith.AddiOp, arith.SubiOp,
             arith.DivUIOp, arith.DivSIOp, arith.FloorDivSIOp, arith.CeilDivUIOp,
             arith.CeilDivSIOp, arith.IndexCastOp)  # fmt: skip


class EraseDeadSize(RewritePattern):
    """A function-level size computation (index arithmetic, `tensor.dim`) nothing reads."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (isinstance(op, _SIZE_OPS) and isinstance(op.parent_op(), func.FuncOp)
                and all(isinstance(r.type, IndexType) and not r.uses for r in op.results)):  # fmt: skip
            rewriter.erase(op)
