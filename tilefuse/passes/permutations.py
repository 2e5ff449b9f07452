"""
Pure permutations (generalized `linalg.transpose`s) folded into the generics that
read them: shared by `fold-transposes` and by `propagate-reshapes`, after which a
permutation may stand right before its readers once the views between them folded.

A generic that copies its one input through a permutation is read by the generics
using its result through the composed map instead. Where the permuted tensor is read
through views, the permutation is first moved below them, since a view of a
permuted tensor is the permutation of a view of its input:

- a static `tensor.extract_slice` of it is the permutation of the slice of its input
  taken at the permuted offsets, sizes and strides (timm's head split
  `qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4).unbind(0)`);
- a `tensor.collapse_shape` that only drops unit dims (each group holds at most one
  dim larger than 1) is the permutation of its input with the matching unit dims
  collapsed away.

A permutation is moved below a view only where every reader past the view (through
more such views) is a generic reading it as an input, so the new permutation folds
and no copy is added. One read as an output (an accumulator) or returned stays.

```mlir
%t = linalg.generic {indexing_maps = [(d0, d1, d2) -> (d1, d0, d2), (d0, d1, d2) -> (d0, d1, d2)]}
       ins(%x : tensor<4x3x8xf32>) outs(%e : tensor<3x4x8xf32>)        // a copy
%q = tensor.extract_slice %t[1, 0, 0] [1, 4, 8] [1, 1, 1] : tensor<3x4x8xf32> to tensor<1x4x8xf32>
%r = linalg.generic {indexing_maps = [(d0, d1, d2) -> (d0, d1, d2), ...]} ins(%q : tensor<1x4x8xf32>) ...
// becomes
%s = tensor.extract_slice %x[0, 1, 0] [4, 1, 8] [1, 1, 1] : tensor<4x3x8xf32> to tensor<4x1x8xf32>
%r = linalg.generic {indexing_maps = [(d0, d1, d2) -> (d1, d0, d2), ...]} ins(%s : tensor<4x1x8xf32>) ...
```
"""

from __future__ import annotations

from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, ModuleOp, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.ir.structured import reassociation
from tilefuse.passes.cleanup import erase_dead_views

MAX_ROUNDS = 16
"""Rounds of moving permutations below views (each moves one view): far more than a
view chain torch-mlir writes."""


def pure_permutation(op: Operation) -> AffineMap | None:
    """The input map of a function-level generic that copies its one input through
    a permutation into an identity-mapped output of the same type; else None."""
    if not isinstance(op, linalg.GenericOp) or not isinstance(op.parent_op(), func.FuncOp):
        return None
    if len(op.inputs) != 1 or len(op.outputs) != 1 or not isinstance(op.inputs[0].type, TensorType):
        return None
    in_map, out_map = (m.data for m in op.indexing_maps.data)
    block = op.body.block
    last = block.last_op
    if (not isinstance(last, linalg.YieldOp) or last is not block.first_op
            or last.operands[0] is not block.args[0]
            or out_map != AffineMap.identity(out_map.num_dims)
            or sorted(str(r) for r in in_map.results) != sorted(str(r) for r in out_map.results)
            or len(in_map.results) != in_map.num_dims
            or op.inputs[0].type.get_element_type() != op.outputs[0].type.get_element_type()):  # fmt: skip
        return None
    if any(str(i.data) != "parallel" for i in op.iterator_types):
        return None
    return in_map


def fold_permutations(module: ModuleOp | func.FuncOp) -> bool:
    """Fold every function-level permutation into the generics reading it, moving it
    below the views it is read through first (see the module's docstring); erase
    the ones nothing reads any more. True if anything changed."""
    changed, rounds, any_change = True, 0, False
    while changed and rounds < MAX_ROUNDS:
        changed, rounds = False, rounds + 1
        for op in [o for o in module.walk() if pure_permutation(o) is not None]:
            changed |= _sink_below_views(op)
            changed |= fold_into_readers(op)
            if not op.results[0].uses:
                Rewriter.erase_op(op)
        any_change |= changed
    erase_dead_views(module)
    return any_change


def fold_into_readers(op: linalg.GenericOp) -> bool:
    """The generics reading permutation `op`'s result as an input read its input
    through the composed map instead. True if any did."""
    permutation = pure_permutation(op)
    assert permutation is not None
    folded = False
    for use in list(op.results[0].uses):
        reader = use.operation
        if not isinstance(reader, linalg.GenericOp) or use.index >= len(reader.inputs):
            continue  # read as an output (an accumulator): keep the copy
        maps = [m.data for m in reader.indexing_maps.data]
        maps[use.index] = permutation.compose(maps[use.index])
        operands = list(reader.operands)
        operands[use.index] = op.inputs[0]
        reader.operands = operands
        reader.properties["indexing_maps"] = ArrayAttr([AffineMapAttr(m) for m in maps])
        folded = True
    return folded


def _sources(op: linalg.GenericOp) -> list[int]:
    """For permutation `op`: the output dim each input dim is read at."""
    in_map = pure_permutation(op)
    assert in_map is not None
    return [r.position for r in in_map.results]  # pyright: ignore[reportAttributeAccessIssue]


def _sink_below_views(op: linalg.GenericOp) -> bool:
    moved = False
    for use in list(op.results[0].uses):
        view = use.operation
        if view.parent is None or not _movable(view) or not _read_by_generics(view.results[0]):
            continue
        if isinstance(view, tensor.ExtractSliceOp):
            _below_slice(op, view)
        else:
            assert isinstance(view, tensor.CollapseShapeOp)
            _below_collapse(op, view)
        moved = True
    return moved


def _movable(view: Operation) -> bool:
    """A view a permutation moves below: a static, rank-keeping extract_slice, or a
    collapse of unit dims only (static)."""
    if isinstance(view, tensor.ExtractSliceOp):
        return (not view.offsets and not view.sizes and not view.strides
                and len(view.result.type.get_shape()) == len(view.source.type.get_shape()))  # fmt: skip  # pyright: ignore
    if isinstance(view, tensor.CollapseShapeOp):
        shape = view.src.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
        return all(n >= 0 for n in shape) and all(
            sum(shape[d] != 1 for d in g) <= 1 for g in _groups(view))
    return False


def _read_by_generics(value: SSAValue, depth: int = 8) -> bool:
    """Is every reader of `value` a generic reading it as an input, or a movable view
    whose readers all are (so a permutation moved there folds)?"""
    if depth == 0 or not value.uses:
        return False
    for use in value.uses:
        reader = use.operation
        if isinstance(reader, linalg.GenericOp):
            if use.index >= len(reader.inputs):
                return False
        elif not (_movable(reader) and _read_by_generics(reader.results[0], depth - 1)):
            return False
    return True


def _groups(view: tensor.CollapseShapeOp) -> list[list[int]]:
    return [[i.value.data for i in g] for g in view.reassociation]  # pyright: ignore[reportAttributeAccessIssue]


def _permuted(op: linalg.GenericOp, source: SSAValue, result_type: TensorType, in_map: AffineMap,
              before: Operation) -> SSAValue:  # fmt: skip
    """A copy of permutation `op` reading `source` through `in_map` into a new empty
    of `result_type`, inserted before `before`."""
    empty = tensor.EmptyOp([], result_type)
    rank = len(result_type.get_shape())
    new = linalg.GenericOp([source], [empty.tensor], op.body.clone(),
                           [AffineMapAttr(in_map), AffineMapAttr(AffineMap.identity(rank))],
                           ArrayAttr(op.iterator_types.data[:1] * rank), [result_type])  # fmt: skip
    new.location = op.location
    Rewriter.insert_op([empty, new], InsertPoint.before(before))
    return new.results[0]


def _below_slice(op: linalg.GenericOp, view: tensor.ExtractSliceOp) -> None:
    """`slice(perm(x))` -> `perm(slice'(x))`, slice' at the permuted offsets."""
    sources = _sources(op)
    offsets, sizes, strides = (list(a.get_values()) for a in
                               (view.static_offsets, view.static_sizes, view.static_strides))  # fmt: skip
    inner = tensor.ExtractSliceOp.from_static_parameters(
        op.inputs[0], [offsets[s] for s in sources], [sizes[s] for s in sources],
        [strides[s] for s in sources])  # fmt: skip
    Rewriter.insert_op(inner, InsertPoint.before(view))
    in_map = pure_permutation(op)
    assert in_map is not None
    moved = _permuted(op, inner.result, view.result.type, in_map, view)  # pyright: ignore[reportArgumentType]
    view.result.replace_all_uses_with(moved)
    Rewriter.erase_op(view)


def _below_collapse(op: linalg.GenericOp, view: tensor.CollapseShapeOp) -> None:
    """`collapse(perm(x))` dropping unit dims -> `perm'(collapse'(x))`, collapse'
    dropping the matching unit dims of x."""
    sources = _sources(op)
    out_shape = op.results[0].type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
    # Each group of the collapse keeps one output dim (its dim larger than 1, else its first).
    kept = {}
    for r, g in enumerate(_groups(view)):
        big = [d for d in g if out_shape[d] != 1]
        kept[(big or g)[0]] = r
    x_kept = [j for j, s in enumerate(sources) if s in kept]
    groups: list[list[int]] = []
    for j in range(len(sources)):  # a dropped (unit) dim joins the group before it
        if j in x_kept or not groups:
            groups.append([j])
        else:
            groups[-1].append(j)
    if groups[0][0] not in x_kept:  # leading dropped dims: into the first kept dim's group
        first = groups.pop(0)
        groups[0] = first + groups[0]
    x_type = op.inputs[0].type
    assert isinstance(x_type, TensorType)
    shape = x_type.get_shape()
    inner = tensor.CollapseShapeOp(
        operands=[op.inputs[0]],
        result_types=[TensorType(x_type.get_element_type(), [shape[j] for j in x_kept])],
        properties={"reassociation": reassociation(groups)})  # fmt: skip
    Rewriter.insert_op(inner, InsertPoint.before(view))
    rank = len(x_kept)
    in_map = AffineMap(rank, 0, tuple(AffineDimExpr(kept[sources[j]]) for j in x_kept))
    moved = _permuted(op, inner.result, view.result.type, in_map, view)  # pyright: ignore[reportArgumentType]
    view.result.replace_all_uses_with(moved)
    Rewriter.erase_op(view)
