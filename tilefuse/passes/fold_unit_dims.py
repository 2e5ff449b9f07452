"""
`fold-unit-dims`: constant indices in indexing maps are folded away.

Frameworks print broadcasts of size-1 dims and keep-dim reductions with
constant results in the maps: `affine_map<(d0, d1) -> (0, d1)>` reads a
`tensor<1x70xf32>` bias in every row, `(d0, d1) -> (d0, 0)` writes row sums
into a `tensor<20x1xf32>`. The rest of the compiler works on projected
permutations, so, as upstream's `linalg-fold-unit-extent-dims` does, each such
operand is viewed without its constant-indexed dims (`tensor.collapse_shape`,
a host view) and the constant results leave the maps; a result with such dims
is computed collapsed and expanded back for its users. A collapse of an
expansion made here folds away, so chains of keep-dim ops (softmax written
with `tensor<Nx1>` statistics) meet directly and still fuse.

Only the constant 0 on a dim of size 1 is folded: any other constant is a
slice, left for the located error that follows.

A window of one tap is no window: a reduction loop of trip count 1 that a map reads
inside a sum with other loops (`oh + kh` of a 1 x 1 convolution) takes its one
value, 0, everywhere and leaves the loop nest; the filter's dims it indexed become
constant 0s and are viewed away as above. A 1 x 1 stride-1 convolution is then a
projection of its input, a batched matmul, not a window read (the pass runs after
`linalg-generalize` so that named convolutions are generics here). A reduction whose
every reduction loop has trip count 1 is its payload once, on the init: those loops
leave the nest the same way (torch-mlir's argmax over a dim of size 1, its index folded
to the constant 0, was a reduction the backend could not lower).

```mlir
%r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                      affine_map<(d0, d1) -> (0, d1)>, ...]}
       ins(%x, %bias : tensor<33x70xf32>, tensor<1x70xf32>) ...
// becomes
%b = tensor.collapse_shape %bias [[0, 1]] : tensor<1x70xf32> into tensor<70xf32>
%r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                      affine_map<(d0, d1) -> (d1)>, ...]}
       ins(%x, %b : tensor<33x70xf32>, tensor<70xf32>) ...
```

The views it makes of fills and empties (a keep-dim reduction's initial value)
then become fills and empties of the collapsed shape, and what is left unread is
erased (`passes/cleanup.py`): no later pass sees a view of a creation.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tilefuse.ir.affine import window_terms
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.structured import (
    REDUCTION,
    as_structured,
    expand_sizes,
    reassociation,
    with_inputs,
)
from tilefuse.passes.cleanup import erase_dead_views, fold_reshapes_of_creations


@dataclass(frozen=True)
class FoldUnitDimsPass(ModulePass):
    """View away the unit dims function-level generics index by the constant 0."""

    name = "fold-unit-dims"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DropUnitWindowLoops(), apply_recursively=False).rewrite_module(op)
        fold_unit_dims(op)
        fold_reshapes_of_creations(op)
        erase_dead_views(op)


class FoldUnitDimsPattern(RewritePattern):
    """A function-level generic indexing unit dims by the constant 0 reads and
    writes views without them. Producers come before their readers (the walk is
    in program order), so a reader meets the expansion its producer got here."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: linalg.GenericOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp):
            return
        maps = [m.data for m in op.indexing_maps.data]
        drops = [_dropped(m, v) for m, v in zip(maps, op.operands, strict=True)]
        if any(drops) and all(d is not None for d in drops):
            _rewrite(op, maps, drops, rewriter)


class DropUnitWindowLoops(RewritePattern):
    """A function-level generic's reduction loops of trip count 1 that some map
    reads inside a window sum (`d2 + d5`) are replaced by 0 and dropped."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: linalg.GenericOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp):
            return
        drop = _unit_window_loops(op)
        if not drop:
            return
        maps = [m.data for m in op.indexing_maps.data]
        keep = [d for d in range(maps[0].num_dims) if d not in drop]
        zero = AffineConstantExpr(0)
        dims = [zero if d in drop else AffineDimExpr(keep.index(d)) for d in range(maps[0].num_dims)]
        new_maps = [AffineMap(len(keep), m.num_symbols,
                              tuple(_simplified(r.replace_dims_and_symbols(dims, [])) for r in m.results))
                    for m in maps]  # fmt: skip
        iterators = ArrayAttr([op.iterator_types.data[d] for d in keep])
        new = with_inputs(op, op.inputs, new_maps, op.body.clone(), iterators)
        for name, attr in op.attributes.items():
            new.attributes[name] = attr
        rewriter.insert(new, InsertPoint.before(op))
        for old, res in zip(op.results, new.results, strict=True):
            res.name_hint = old.name_hint
            rewriter.replace_all_uses_with(old, res)
        rewriter.erase(op)


def _unit_window_loops(op: linalg.GenericOp) -> set[int]:
    """Reduction loops of trip count 1 read inside a window sum by some map (none
    when the payload reads a loop index: its value would have to be rewritten)."""
    if any(isinstance(o, linalg.IndexOp) for o in op.body.walk()):
        return set()
    try:
        s = as_structured(op)
    except CompileError:
        return set()  # (a window past its operand: the located error comes later)
    if s is None:
        return set()
    in_sums: set[int] = set()
    for m in s.maps:
        for r in m.results:
            if isinstance(r, AffineDimExpr | AffineConstantExpr):
                continue
            try:
                coeffs, _ = window_terms(r)
            except ValueError:
                continue
            if len(coeffs) > 1:
                in_sums.update(coeffs)
    units = {d for d, n in enumerate(s.loop_ranges) if n == 1 and s.iterators[d] == REDUCTION}
    if units and units == {d for d, it in enumerate(s.iterators) if it == REDUCTION}:
        return units  # (a reduction over one element: the payload once, on the init)
    return {d for d in in_sums if s.loop_ranges[d] == 1 and s.iterators[d] == REDUCTION}


def _simplified(expr: AffineExpr) -> AffineExpr:
    """A window sum with the dropped loops' zero terms left out (`d2 + 0 * 1` is `d2`)."""
    try:
        coeffs, const = window_terms(expr)
    except ValueError:
        return expr
    terms: list[AffineExpr] = [AffineDimExpr(d) * c if c != 1 else AffineDimExpr(d)
                               for d, c in coeffs.items() if c != 0]  # fmt: skip
    if const or not terms:
        terms.append(AffineConstantExpr(const))
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def fold_unit_dims(module: ModuleOp) -> None:
    """Rewrite every function-level `linalg.generic` with constant map results."""
    PatternRewriteWalker(FoldUnitDimsPattern(), apply_recursively=False).rewrite_module(module)


def _dropped(amap: AffineMap, value: SSAValue) -> list[int] | None:
    """Positions of `value`'s dims indexed by the constant 0 with extent 1 (None
    if another constant appears: not ours to fold)."""
    if not isinstance(value.type, TensorType):
        return []
    shape = value.type.get_shape()
    drop = []
    for i, r in enumerate(amap.results):
        if isinstance(r, AffineConstantExpr):
            if r.value != 0 or shape[i] != 1:
                return None
            drop.append(i)
    return drop


def _reassociation(rank: int, drop: list[int]) -> list[list[int]]:
    """Groups of source dims per kept dim: dropped unit dims join a neighbour."""
    kept = [i for i in range(rank) if i not in drop]
    if not kept:
        return []
    groups = [[k] for k in kept]
    for d in drop:
        after = next((g for g in groups if g[0] > d), None)
        (after if after is not None else groups[-1]).append(d)
    return [sorted(g) for g in groups]


def _collapse(value: SSAValue, drop: list[int], before: Operation,
              rewriter: PatternRewriter) -> SSAValue:  # fmt: skip
    t = value.type
    assert isinstance(t, TensorType)
    shape = [n for i, n in enumerate(t.get_shape()) if i not in drop]
    groups = _reassociation(len(t.get_shape()), drop)
    owner = value.owner
    if (isinstance(owner, tensor.ExpandShapeOp) and owner.reassociation == reassociation(groups)
            and list(owner.src.type.get_shape()) == shape):  # fmt: skip
        return owner.src  # the expansion this pass made for a producer
    view = tensor.CollapseShapeOp(operands=[value],
                                  result_types=[TensorType(t.get_element_type(), shape)],
                                  properties={"reassociation": reassociation(groups)})  # fmt: skip
    rewriter.insert(view, InsertPoint.before(before))
    return view.result


def _rewrite(op: linalg.GenericOp, maps: list[AffineMap], drops: list[list[int]],
             rewriter: PatternRewriter) -> None:  # fmt: skip
    n_in = len(op.inputs)
    # A value with every dim constant (a keep-dim sum over all dims, 1x1) keeps its
    # last one, indexed by a new parallel loop of extent 1: views of rank 0 are
    # not expressible as xDSL's expand_shape.
    whole = [bool(d) and len(d) == len(v.type.get_shape())
             for v, d in zip(op.operands, drops, strict=True)]  # fmt: skip
    drops = [d[:-1] if w else d for d, w in zip(drops, whole, strict=True)]
    unit = AffineDimExpr(maps[0].num_dims)
    num_dims = maps[0].num_dims + any(whole)
    new_maps = []
    for i, (m, d) in enumerate(zip(maps, drops, strict=True)):
        results = [unit if whole[i] and j not in d and isinstance(r, AffineConstantExpr) else r
                   for j, r in enumerate(m.results) if j not in d]  # fmt: skip
        new_maps.append(AffineMapAttr(AffineMap(num_dims, m.num_symbols, tuple(results))))
    iterators = op.iterator_types
    if any(whole):
        iterators = ArrayAttr([*iterators.data, linalg.IteratorTypeAttr.parallel()])
    operands = [_collapse(v, d, op, rewriter) if d else v
                for v, d in zip(op.operands, drops, strict=True)]  # fmt: skip
    outs = operands[n_in:]
    body = op.body.clone()
    new = linalg.GenericOp(operands[:n_in], outs, body, new_maps, iterators,
                           [v.type for v in outs])  # fmt: skip
    new.location = op.location
    rewriter.insert(new, InsertPoint.before(op))
    for old, res, d in zip(op.results, new.results, drops[n_in:], strict=True):
        value = res
        if d:
            t = old.type
            groups = reassociation(_reassociation(len(t.get_shape()), d))
            sizes_ops, sizes = expand_sizes(res, _reassociation(len(t.get_shape()), d),
                                            list(t.get_shape()))  # fmt: skip
            for o in sizes_ops:
                rewriter.insert(o, InsertPoint.before(op))
            expand = tensor.ExpandShapeOp(res, sizes, groups, list(t.get_shape()), t)
            rewriter.insert(expand, InsertPoint.before(op))
            value = expand.result
        # (not `rewriter.replace`: that would name the new values after the old)
        rewriter.replace_all_uses_with(old, value)
    rewriter.erase(op)
