"""
`merge-positions`: a contraction's short loops on one side become one loop.

A convolution over small images tiles badly: the 3x3 convolution of a ResNet-50
stage at 14 x 14 pixels and 32 images has output loops `n` (32), `f` (256), `h` (14)
and `w` (14). Its MMA's M side takes one of `n`, `h`, `w` (a box tile spanning
several would be a 3-D tile reshaped for `tl.dot`, which Triton lays out badly), so
each program computes 32 images at one pixel and reads the whole filter for it.
Merged, the side is one loop `p` over the 6272 (image, row, column) positions, a
GEMM's M: tiles of 128 positions, the filter read 49 times instead of 196 (the
implicit GEMM of cuDNN and CUTLASS).

For each group (after `fusion-groups`) whose one contraction has, on the side of
one factor, at least two output loops of more than one iteration that the other
factor does not index, all shorter than `MERGE_BELOW` but perhaps the factor's
outermost dim (a batch of 64 images at one pixel is no side either: each row
another image, and the other factor's tiles read again at every pixel; ViT-B/16's
patch embedding over 64 images), and the factor's innermost
dim not one of them with at least `MIN_CONTIGUOUS_SIDE` iterations (that loop alone
is a side whose loads are vectors: an NCHW 1x1 convolution at 28 x 28 pixels reads
its 28 columns so; merged, a tile's positions are divided out of the merged index
and loaded element by element), the pass rewrites every
generic of the group on the merged loop: each tensor indexed by those loops (each as
a plain dim) is seen through a `Merge` of its dims in the loops' order, the group's
inputs and results by `input_merges` / `result_merges` (the host passes them as they
are; the kernel divides the merged index back into the dims, `backend/triton`'s
`_addressing`).

```mlir
%r = linalg.generic {indexing_maps = [
       affine_map<(n, f, h, w, c, kh, kw) -> (n, c, h, kh, w, kw)>,   // the window
       affine_map<(n, f, h, w, c, kh, kw) -> (f, c, kh, kw)>,         // the filter
       affine_map<(n, f, h, w, c, kh, kw) -> (n, f, h, w)>], ...}
// becomes, the window's block argument a tensor<6272x256x3x3> (input_merges
// [[0, 2, 4], [1], [3], [5]]) and the result a tensor<6272x256> ([[0, 2, 3], [1]]):
%r = linalg.generic {indexing_maps = [
       affine_map<(p, f, c, kh, kw) -> (p, c, kh, kw)>,
       affine_map<(p, f, c, kh, kw) -> (f, c, kh, kw)>,
       affine_map<(p, f, c, kh, kw) -> (p, f)>], ...}
```

A group is left as it is (logged on the `fusion` channel with the reason) where a
tensor of it is indexed by some of the loops but not all, by one of them inside a
sum, through any op but a generic, `tensor.empty` and the group's yield, or where a
generic reads its loop indices (`linalg.index`); and a group bundled or tiled
already. Dynamic sizes are never merged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import BlockArgument, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from tilefuse.analysis.dataflow import is_contraction, product_operand
from tilefuse.analysis.tile_plan import MIN_CONTIGUOUS_SIDE
from tilefuse.ir.log import channel
from tilefuse.ir.structured import as_structured
from tilefuse.ir.tilefuse import GroupOp, Merge, YieldOp, merged_type, merges_attr

MERGE_BELOW = 58
"""A side's loops are merged when each is shorter than this: under 90% of a 64-row
`tl.dot` side (Hopper's warpgroup MMA). Measured on an H100: the 3x3 convolution at
56 x 56 pixels 36.7 -> 32.9 us merged; the conv sample at 56 x 60 (rows filling a
64-row tile 94%) 51 -> 53-54 us merged, so rows of 58 or more stay a side alone."""

LOG = channel("fusion")


@dataclass(frozen=True)
class MergePlan:
    """A group's merge: the loops of each generic merged (in linearisation order,
    outermost first), the dims of each tensor merged (the same order)."""

    loops: dict[linalg.GenericOp, tuple[int, ...]]
    dims: dict[SSAValue, tuple[int, ...]]
    reason: str


@dataclass(frozen=True)
class MergePositionsPass(ModulePass):
    """Merge a contraction group's short loops of one side into one loop (module doc)."""

    name = "merge-positions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for g in [g for g in op.walk() if isinstance(g, GroupOp)]:
            if g.grids or g.merged:
                continue
            plan = plan_merge(g)
            if isinstance(plan, MergePlan):
                merge_group(g, plan)
                LOG.info("[MERGE] %s: %s", g.sym_name.data, plan.reason)
            elif plan is not None:
                LOG.info("[MERGE] %s left as it is: %s", g.sym_name.data, plan)


def plan_merge(g: GroupOp) -> MergePlan | str | None:
    """The merge of `g`'s contraction's short side, a reason it cannot be merged, or
    None (no contraction with such a side)."""
    contractions = [op for op in g.entry.ops if isinstance(op, linalg.GenericOp)
                    and (s := as_structured(op)) is not None and is_contraction(s)]  # fmt: skip
    if len(contractions) != 1:
        return None
    loops = side_loops(contractions[0])
    if loops is None:
        return None
    ranges = as_structured(contractions[0]).loop_ranges  # type: ignore[union-attr]
    extents = "x".join(str(ranges[d]) for d in loops)
    found = _propagate(contractions[0], loops)
    if isinstance(found, str):
        return found
    generics, dims = found
    return MergePlan(generics, dims, f"the contraction's loops {list(loops)} ({extents}, each under "
                     f"{MERGE_BELOW} but the outermost) merged into one of "
                     f"{math.prod(ranges[d] for d in loops)}")  # fmt: skip


def side_loops(op: linalg.GenericOp) -> tuple[int, ...] | None:
    """The output loops of one factor's side of contraction `op` to merge (in the
    output's order), or None: at least two of more than one iteration, indexed by
    that factor and not the other, each shorter than `MERGE_BELOW` except perhaps
    the factor's outermost dim (the images)."""
    s = as_structured(op)
    assert s is not None
    mul = next((o for o in s.payload.ops if isinstance(o, arith.MulfOp)), None)
    args = list(s.payload.args[: len(s.inputs)])
    factors = [product_operand(v) for v in mul.operands] if mul is not None else []
    if len(factors) != 2 or any(f not in args for f in factors) or any(r < 0 for r in s.loop_ranges):
        return None
    a, b = (args.index(f) for f in factors)
    out = [e.position for e in s.maps[-1].results if isinstance(e, AffineDimExpr)]
    best: tuple[int, ...] | None = None
    for mine, other in ((a, b), (b, a)):
        plain = {e.position for e in s.maps[mine].results if isinstance(e, AffineDimExpr)}
        used = _dims_used(s.maps[other])
        side = tuple(d for d in out if d in plain and d not in used and s.iterators[d] == "parallel"
                     and s.loop_ranges[d] > 1)  # fmt: skip
        long = [d for d in side if s.loop_ranges[d] >= MERGE_BELOW]
        if len(side) < 2 or (long and long != [_outermost(s.maps[mine])]):
            continue  # (a long loop but the factor's outermost: a side of its own)
        inner = s.maps[mine].results[-1] if s.maps[mine].results else None
        if isinstance(inner, AffineDimExpr) and inner.position in side and \
                s.loop_ranges[inner.position] >= MIN_CONTIGUOUS_SIDE:
            continue  # (that loop alone is the side: its loads are vectors, `tile_plan`)
        if best is None or math.prod(s.loop_ranges[d] for d in side) > math.prod(s.loop_ranges[d] for d in best):
            best = side
    return best


def _outermost(amap: AffineMap) -> int | None:
    """The loop of a map's first result, if it is a plain dim (a batch of images)."""
    first = amap.results[0] if amap.results else None
    return first.position if isinstance(first, AffineDimExpr) else None


def _dims_used(amap: AffineMap) -> set[int]:
    """The loops a map's results read, anywhere in them."""
    return {d for r in amap.results for d in r.used_dims()}


def _positions(amap: AffineMap, loops: tuple[int, ...]) -> tuple[int, ...] | str:
    """The results of `amap` that are the `loops` (in their order): all of them,
    each a plain dim once, or none (an empty tuple); else why not."""
    inside = [d for r in amap.results if not isinstance(r, AffineDimExpr) for d in loops if d in r.used_dims()]
    if inside:
        return f"loop {inside[0]} is read inside an expression ({amap})"
    where = [[j for j, r in enumerate(amap.results) if r == AffineDimExpr(d)] for d in loops]
    if any(len(js) > 1 for js in where):
        return f"a tensor is indexed by one of the loops twice ({amap})"
    found = tuple(js[0] for js in where if js)
    if found and len(found) != len(loops):
        return f"a tensor is indexed by some of the loops {list(loops)} but not all ({amap})"
    return found


def _values_and_maps(op: linalg.GenericOp) -> list[tuple[SSAValue, AffineMap]]:
    maps = [m.data for m in op.indexing_maps.data]
    outs = maps[len(op.inputs):]
    return [*zip(op.operands, maps, strict=True), *zip(op.results, outs, strict=True)]


def _loops_of(op: linalg.GenericOp, amap: AffineMap, dims: tuple[int, ...]) -> tuple[int, ...] | str:
    """The loops of `op` indexing a merged tensor's `dims` through `amap`."""
    exprs = [amap.results[j] for j in dims]
    if not all(isinstance(e, AffineDimExpr) for e in exprs):
        return f"a merged tensor is read through an expression ({amap})"
    loops = tuple(e.position for e in exprs)  # type: ignore[union-attr]
    kinds = [t.data.value for t in op.iterator_types.data]
    if any(kinds[d] != "parallel" for d in loops):
        return "a merged tensor is indexed by a reduction loop"
    return loops


def _propagate(start: linalg.GenericOp, loops: tuple[int, ...]
               ) -> tuple[dict[linalg.GenericOp, tuple[int, ...]], dict[SSAValue, tuple[int, ...]]] | str:  # fmt: skip
    """The loops of every generic and the dims of every tensor the merge reaches from
    `start`'s `loops`, or why it cannot be made."""
    generics: dict[linalg.GenericOp, tuple[int, ...]] = {}
    dims: dict[SSAValue, tuple[int, ...]] = {}
    todo: list[tuple[linalg.GenericOp, tuple[int, ...]]] = [(start, loops)]
    while todo:
        op, ls = todo.pop()
        if op in generics:
            if generics[op] != ls:
                return "a generic is reached with its loops in two orders"
            continue
        if any(isinstance(o, linalg.IndexOp) for o in op.body.walk()):
            return "a generic reads its loop indices"
        generics[op] = ls
        for v, amap in _values_and_maps(op):
            reached = _reach(v, amap, ls, dims)
            if isinstance(reached, str):
                return reached
            todo += reached
    return generics, dims


def _reach(v: SSAValue, amap: AffineMap, loops: tuple[int, ...], dims: dict[SSAValue, tuple[int, ...]]
           ) -> list[tuple[linalg.GenericOp, tuple[int, ...]]] | str:  # fmt: skip
    """Record the dims of tensor `v` a generic indexes by `amap` with merged `loops`;
    the generics next to it, when it is new; why not where it cannot be merged."""
    found = _positions(amap, loops)
    if isinstance(found, str) or not found:
        return found or []
    if v in dims:
        return [] if dims[v] == found else "a tensor is merged along two orders of its dims"
    if any(d < 0 for d in v.type.get_shape()):  # type: ignore[attr-defined]
        return "a tensor of the merge has a dynamic size"
    dims[v] = found
    return _neighbours(v, found)


def _neighbours(v: SSAValue, dims: tuple[int, ...]) -> list[tuple[linalg.GenericOp, tuple[int, ...]]] | str:
    """The generics producing or reading merged tensor `v`, each with its loops
    along `dims`; why not where another op does."""
    found: list[tuple[linalg.GenericOp, tuple[int, ...]]] = []
    owner = v.owner
    if isinstance(owner, linalg.GenericOp):
        k = list(owner.results).index(v)
        amap = owner.indexing_maps.data[len(owner.inputs) + k].data
        loops = _loops_of(owner, amap, dims)
        if isinstance(loops, str):
            return loops
        found.append((owner, loops))
    elif not isinstance(v, BlockArgument) and not isinstance(owner, tensor.EmptyOp):
        return f"a merged tensor is made by {owner.name}"  # type: ignore[union-attr]
    for use in v.uses:
        reader = use.operation
        if isinstance(reader, YieldOp):
            continue
        if not isinstance(reader, linalg.GenericOp):
            return f"a merged tensor is read by {reader.name}"
        loops = _loops_of(reader, reader.indexing_maps.data[use.index].data, dims)
        if isinstance(loops, str):
            return loops
        found.append((reader, loops))
    return found


def merge_of(rank: int, dims: tuple[int, ...]) -> Merge:
    """A rank-`rank` tensor's `Merge` of `dims` (in their order) into one dim, placed
    where the first of them in the tensor is; the other dims kept in order."""
    lead = min(dims)
    return tuple(tuple(dims) if j == lead else (j,) for j in range(rank) if j == lead or j not in dims)


def merge_group(g: GroupOp, plan: MergePlan) -> None:
    """Rewrite `g`'s body by `plan` (module doc)."""
    merges = {v: merge_of(len(v.type.get_shape()), d) for v, d in plan.dims.items()}  # type: ignore[attr-defined]
    terminator = g.entry.last_op
    assert isinstance(terminator, YieldOp)
    g.input_merges = merges_attr([merges.get(a) for a in g.entry.args])
    g.result_merges = merges_attr([merges.get(v) for v in terminator.values])
    rebuilt = {op: _merged_maps(op, loops, merges) for op, loops in plan.loops.items()}
    for i, arg in enumerate(list(g.entry.args)):
        if arg in merges:
            new = g.entry.insert_arg(merged_type(arg.type, merges[arg]), i)
            new.name_hint = arg.name_hint
            arg.replace_all_uses_with(new)
            g.entry.erase_arg(arg)
    for op in list(g.entry.ops):
        if isinstance(op, tensor.EmptyOp) and op.tensor in merges:
            new_empty = tensor.EmptyOp([], merged_type(op.tensor.type, merges[op.tensor]))
            Rewriter.replace_op(op, new_empty)
        elif isinstance(op, linalg.GenericOp) and op in rebuilt:
            maps, iterators = rebuilt[op]
            types = [merged_type(r.type, merges[r]) if r in merges else r.type for r in op.results]
            new_op = linalg.GenericOp(list(op.inputs), list(op.outputs), op.body.clone(),
                                      [AffineMapAttr(m) for m in maps], iterators, types)  # fmt: skip
            new_op.location = op.location
            for name, attr in op.attributes.items():
                new_op.attributes[name] = attr
            for old, res in zip(op.results, new_op.results, strict=True):
                res.name_hint = old.name_hint
            Rewriter.replace_op(op, new_op)


def _merged_maps(op: linalg.GenericOp, loops: tuple[int, ...], merges: dict[SSAValue, Merge]
                 ) -> tuple[list[AffineMap], ArrayAttr]:  # fmt: skip
    """`op`'s maps and iterators with `loops` one loop (where the first of them is)."""
    n = len(op.iterator_types.data)
    keep = [d for d in range(n) if d not in loops[1:]]
    merged = AffineDimExpr(keep.index(loops[0]))
    renamed = [merged if d in loops else AffineDimExpr(keep.index(d)) for d in range(n)]
    maps = []
    operand_maps = [m.data for m in op.indexing_maps.data]
    for v, amap in zip(op.operands, operand_maps, strict=True):
        merge = merges.get(v)
        results = [r.replace_dims_and_symbols(renamed, []) for r in amap.results]
        if merge is not None:
            results = [merged if len(dims) > 1 else results[dims[0]] for dims in merge]
        maps.append(AffineMap(len(keep), amap.num_symbols, tuple(results)))
    return maps, ArrayAttr([op.iterator_types.data[d] for d in keep])
