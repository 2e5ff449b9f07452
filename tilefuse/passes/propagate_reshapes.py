"""
`propagate-reshapes`: no reshape stands between two generics that could fuse.

torch-mlir writes a Linear on `[B, T, C]` as a collapse to `[B*T, C]`, a matmul and a
bias add, and an expansion back for the GELU or the residual add; a keep-dim
LayerNorm statistic as an expansion to `[B, T, 1]`, elementwise ops there and a
collapse back. A reshape is a host view, so each one splits the kernels on either
side. As upstream's fusion by collapsing (`ElementwiseOpFusion.cpp`,
`collapseOpIterationDims`) does, the generics next to a reshape run in the
collapsed iteration space instead: each run of loops a reshape merges becomes one
loop, the maps and operands follow, and the reshape meets its inverse and folds.

A contraction needs no reshape to be worth collapsing: a 1 x 1 convolution on NCHW
reads its input at `(b, c, oh, ow)` and writes `(b, f, oh, ow)`, so its N side is two
loops of 56 and a tile along `ow` is cut at 56. Where consecutive loops of one side
of a contraction (read by the output and by one of its two operands, not both) are
the innermost dims of both, and every map reads them whole and in order, they are
merged too (as IREE's CollapseDimensions makes a dispatch's contraction a plain
GEMM): the output rows become one contiguous loop of `oh * ow` positions. The
cluster this starts stops at the contraction's operands: they are viewed collapsed
(views of arguments or of other kernels' results: a contraction's operands come
from the host or from other kernels). Runs that are not innermost (an attention's
query heads and positions, a Linear's batch and tokens) are left to the reshapes
that are there.

The generics collapsed together form a *cluster*, closed under the producer and
consumer edges a collapse touches: collapsing a generic collapses the generics it
reads and the generics reading it the same way, so no new reshape ever lands
between two generics. What leaves the cluster is a view of a function argument, of
an empty or a fill (folded into one of the new shape), of another view, or of a
returned value: all host views, free at a kernel boundary. A cluster with one
generic that cannot be collapsed (loops of one run with different iterator types,
a run read split or out of order by some map, `linalg.index` in its payload) is
left as it was, and so is its reshape: correct, just not fused.

```mlir
%s = linalg.generic {maps = [(d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (d0, d1)],
                     iterator_types = ["parallel", "parallel", "reduction"]}
       ins(%x : tensor<2x16x64xf32>) outs(%f : tensor<2x16xf32>)
%e = tensor.expand_shape %s [[0], [1, 2]] : tensor<2x16xf32> into tensor<2x16x1xf32>
%m = linalg.generic {maps = [(d0, d1, d2) -> (d0, d1, d2), (d0, d1, d2) -> (d0, d1, d2)]}
       ins(%e : tensor<2x16x1xf32>) outs(%o : tensor<2x16x1xf32>) { divf }
%c = tensor.collapse_shape %m [[0], [1, 2]] : tensor<2x16x1xf32> into tensor<2x16xf32>
// becomes
%m = linalg.generic {maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, d1)]}
       ins(%s : tensor<2x16xf32>) outs(%o2 : tensor<2x16xf32>) { divf }
// (and %m's readers read %m itself)
```
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    ArrayAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.analysis.dataflow import is_contraction
from tilefuse.ir import log
from tilefuse.ir.structured import (
    as_structured,
    collapse_groups,
    expand_sizes,
    map_dims,
    reassociation,
)
from tilefuse.passes.cleanup import (
    erase_dead_views,
    fold_reshapes_of_creations,
    generic_fill,
    is_generic_fill,
    resolve_dims,
)
from tilefuse.passes.permutations import fold_permutations

Run = tuple[int, ...]
"""Consecutive loops (or tensor dims) merged into one, in order."""

_Reshape = tensor.ExpandShapeOp | tensor.CollapseShapeOp

MAX_ROUNDS = 64
"""A bound on the rounds (each removes a view between generics, so real programs
stop after a few); every round leaves a correct program."""


@dataclass(frozen=True)
class PropagateReshapesPass(ModulePass):
    """Collapse the generics on both sides of a reshape so the reshape folds away."""

    name = "propagate-reshapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # A dynamic program: each merge and split holds at most one dynamic size per
        # group (`_two_dynamic`), which its static sizes then determine; a view of
        # two dynamic sizes stays where it is. A size read of a generic's result
        # (`tensor.dim`, what earlier passes size their empties from) would stop its
        # loops from being split or merged: each is read from where it was made first.
        resolve_dims(op)
        _collapse_contraction_sides(op)
        kept: dict[Operation, str] = {}
        changed, rounds = True, 0
        while changed and rounds < MAX_ROUNDS:
            rounds += 1
            changed = _expand_readers_of_collapses(op, alone=True)
            _fold_inverses(op)
            for reshape in [o for o in op.walk() if _at_function_level(o, _Reshape)]:
                if reshape.parent is None or not reshape.result.uses:
                    continue  # folded away by an earlier cluster this round
                changed |= _try_to_fold(reshape, kept)
            _fold_inverses(op)
            if not changed:  # what collapsing cannot fold (a broadcast's split)
                changed = _expand_readers_of_collapses(op, alone=False)
                _fold_inverses(op)
        for reshape, why in kept.items():
            if reshape.parent is not None and reshape.result.uses:
                _log(reshape, f"kept {_describe(reshape)}: {why}")
        fold_reshapes_of_creations(op)
        _merge_equal_views(op)
        erase_dead_views(op)
        # A permutation the folded views stood between and its readers (timm's head
        # split, read through a slice and views of B*H) is folded as fold-transposes does.
        fold_permutations(op)


def _try_to_fold(reshape: _Reshape, kept: dict[Operation, str]) -> bool:
    """Collapse the first cluster that folds `reshape`; else note why none does."""
    reasons = []
    for seed in _seeds(reshape):
        members, why = plan(*seed)
        if members:
            if LOG.isEnabledFor(logging.INFO):
                names = ", ".join(_label(m) for m in members)
                _log(reshape, f"folded {_describe(reshape)}: collapsed {len(members)} generic(s) "
                              f"({names}) along loops {sorted(seed[1])}")  # fmt: skip
            _collapse_cluster(members)
            kept.pop(reshape, None)
            return True
        reasons.append(why)
    why = "; ".join(dict.fromkeys(reasons)) or _no_seed_reason(reshape)
    if why and not isinstance(reshape.src.owner, linalg.GenericOp):
        why += " (a view of an argument or a view: free at a kernel boundary)"
    if why:
        kept[reshape] = why
    return False


def _no_seed_reason(reshape: _Reshape) -> str:
    """Why no generic's collapse folds `reshape` ('' for a view that stands between
    no generics: a host view, free at a kernel boundary)."""
    if isinstance(reshape, tensor.CollapseShapeOp):
        if _generic_of(reshape.src) is None:
            return ""
        return "its producer's output map does not index each merged run of dims by consecutive loops in order"
    if not any(_at_function_level(u.operation, linalg.GenericOp) for u in reshape.result.uses):
        return ""
    return "no generic reading it indexes each split run of dims by consecutive loops in order"


LOG = log.channel("views")


def _log(op: Operation, message: str) -> None:
    f = op.parent_op()
    name = f.sym_name.data if isinstance(f, func.FuncOp) else "?"
    LOG.info("@%s: %s", name, message)


def _describe(reshape: _Reshape) -> str:
    src, res = reshape.src.type, reshape.result.type
    kind = "collapse_shape" if isinstance(reshape, tensor.CollapseShapeOp) else "expand_shape"
    return f"{kind} {_shape(src)} -> {_shape(res)}"


def _shape(t) -> str:
    return "x".join(str(n) if n >= 0 else "?" for n in t.get_shape()) or "scalar"


def _label(op: linalg.GenericOp) -> str:
    """A generic by its result's name, else by its payload's ops."""
    hint = op.results[0].name_hint if op.results else None
    if hint:
        return f"%{hint}"
    kinds = [o.name.split(".")[-1] for o in op.body.block.ops if not isinstance(o, linalg.YieldOp)]
    return "+".join(kinds[:3]) or "copy"


def _merge_equal_views(module: ModuleOp) -> None:
    """One view per (source, reshape): readers of the same argument viewed the same
    way read one value, so fusion sees one tensor (a LayerNorm's statistics and
    its normalisation read the same rows)."""
    for f in [o for o in module.walk() if isinstance(o, func.FuncOp)]:
        seen: dict[tuple, SSAValue] = {}
        for view in [o for o in f.body.ops if isinstance(o, _Reshape)]:
            sizes = tuple(getattr(view, "dynamic_output_shape", ()))
            key = (view.src, type(view), str(view.reassociation), view.result.type, sizes)
            if key in seen:
                view.result.replace_all_uses_with(seen[key])
            else:
                seen[key] = view.result


def _fold_inverses(module: ModuleOp) -> None:
    # (no DCE: an unused op in a payload is the printer's to refuse, not ours to drop)
    patterns = GreedyRewritePatternApplier([FoldInverseReshapes(), ComposeReshapes(),
                                            ComposeMixedReshapes()], dce_enabled=False)  # fmt: skip
    PatternRewriteWalker(patterns).rewrite_module(module)
    erase_dead_views(module)


class FoldInverseReshapes(RewritePattern):
    """`collapse(expand(x))` and `expand(collapse(x))` with one reassociation are `x`."""

    INVERSE = {tensor.CollapseShapeOp: tensor.ExpandShapeOp,
               tensor.ExpandShapeOp: tensor.CollapseShapeOp}  # fmt: skip

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        inverse = self.INVERSE.get(type(op))
        if inverse is None:
            return
        inner = op.src.owner
        if not (isinstance(inner, inverse) and _same_groups(op, inner)
                and inner.src.type == op.result.type):  # fmt: skip
            return
        if isinstance(op, tensor.ExpandShapeOp) and \
                _two_dynamic(op.result.type.get_shape(), groups_of(op)):  # pyright: ignore  # fmt: skip
            return  # (its sizes say which split: maybe not the one collapsed)
        rewriter.replace_all_uses_with(op.result, inner.src)
        rewriter.erase(op)


class ComposeReshapes(RewritePattern):
    """`collapse(collapse(x))` is one collapse of `x`, `expand(expand(x))` one
    expansion: a view reads the tensor it views, so a split of its dims is seen
    whole (GQA's `[B, KVH, REP] -> [B, H] -> B*H`)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, _Reshape) or type(op.src.owner) is not type(op):
            return
        inner = op.src.owner
        assert isinstance(inner, _Reshape)
        outer_groups, inner_groups = groups_of(op), groups_of(inner)
        if isinstance(op, tensor.CollapseShapeOp):
            groups = [[d for g in outer for d in inner_groups[g]] for outer in outer_groups]
            new = tensor.CollapseShapeOp(operands=[inner.src], result_types=[op.result.type],
                                         properties={"reassociation": reassociation(groups)})  # fmt: skip
        else:
            groups = [[d for g in group for d in outer_groups[g]] for group in inner_groups]
            shape = list(op.result.type.get_shape())  # pyright: ignore
            new = tensor.ExpandShapeOp(inner.src, list(op.dynamic_output_shape),  # pyright: ignore
                                       reassociation(groups), shape, op.result.type)  # fmt: skip
        rewriter.replace(op, new)


class ComposeMixedReshapes(RewritePattern):
    """`expand(collapse(x))` or `collapse(expand(x))` (static) that is one reshape of
    `x` (its shape's dims products of runs of `x`'s, or the other way) is that one
    reshape: a row-major view of a view is the view between the ends. The merge of
    B and H that propagation left around a unit dim (`1xBxHxTxD -> B*H -> BxH`) is
    then only the unit dim dropped."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, _Reshape) or not isinstance(op.src.owner, _Reshape) or \
                type(op.src.owner) is type(op):  # fmt: skip
            return
        inner = op.src.owner
        src, dst = inner.src.type.get_shape(), op.result.type.get_shape()  # pyright: ignore
        if any(n < 0 for n in (*src, *dst)) or _same_groups(op, inner):
            return  # (one reassociation both ways: FoldInverseReshapes')
        if any(isinstance(u.operation, linalg.GenericOp) and u.index >= len(u.operation.inputs)
               for u in op.result.uses):  # fmt: skip
            return  # (an accumulator's views stay as written: its clusters fold them)
        if list(src) == list(dst):
            rewriter.replace_all_uses_with(op.result, inner.src)
            rewriter.erase(op)
            return
        if len(dst) < len(src) and (groups := collapse_groups(list(src), list(dst))) is not None:
            new = tensor.CollapseShapeOp(operands=[inner.src], result_types=[op.result.type],
                                         properties={"reassociation": reassociation(groups)})  # fmt: skip
        elif len(dst) > len(src) and (groups := collapse_groups(list(dst), list(src))) is not None:
            new = tensor.ExpandShapeOp(inner.src, [], reassociation(groups), list(dst),
                                       op.result.type)  # fmt: skip  # pyright: ignore
        else:
            return
        rewriter.replace(op, new)


def _at_function_level(op: Operation, kind) -> bool:
    return isinstance(op, kind) and isinstance(op.parent_op(), func.FuncOp)


def groups_of(op: _Reshape) -> list[list[int]]:
    """The reassociation groups of a reshape (dims of its larger shape)."""
    return [[i.value.data for i in g] for g in op.reassociation]  # pyright: ignore


def _same_groups(a: _Reshape, b: _Reshape) -> bool:
    return groups_of(a) == groups_of(b)


def _runs(groups: Iterable[Sequence[int]]) -> set[Run]:
    return {tuple(g) for g in groups if len(g) > 1}


def _generic_of(value: SSAValue) -> linalg.GenericOp | None:
    owner = value.owner
    return owner if _at_function_level(owner, linalg.GenericOp) else None  # pyright: ignore


def _maps(op: linalg.GenericOp) -> list[AffineMap]:
    return [m.data for m in op.indexing_maps.data]


def _loop_runs(amap: AffineMap, dim_runs: Iterable[Run]) -> set[Run] | None:
    """The loops of `amap` that index each run of tensor dims, when they are
    consecutive loops in order; else None."""
    loops = set()
    for run in dim_runs:
        exprs = [amap.results[d] for d in run]
        if not all(isinstance(e, AffineDimExpr) for e in exprs):
            return None
        pos = tuple(e.position for e in exprs)  # pyright: ignore
        if list(pos) != list(range(pos[0], pos[0] + len(pos))):
            return None
        loops.add(pos)
    return loops


def _dim_runs(amap: AffineMap, loop_runs: set[Run]) -> set[Run] | None:
    """The runs of an operand's dims that `amap` reads along each loop run (the
    whole run at consecutive results, in order, or none of it); else None."""
    positions = [e.position if isinstance(e, AffineDimExpr) else None for e in amap.results]
    if None in positions or len(set(positions)) != len(positions):
        return None
    runs = set()
    for run in loop_runs:
        present = [p for p in run if p in positions]
        if not present:
            continue
        if len(present) != len(run):
            return None
        at = positions.index(run[0])
        if tuple(positions[at : at + len(run)]) != run:
            return None
        runs.add(tuple(range(at, at + len(run))))
    return runs


def _not_collapsible(op: linalg.GenericOp, runs: set[Run]) -> str | None:
    """Why `op` cannot run with each run of loops merged (None: it can): the loops
    of a run must share an iterator type, every map read each run whole and in
    order or not at all, and the payload read no loop index."""
    iters = [str(i.data) for i in op.iterator_types]
    if any(len({iters[d] for d in run}) != 1 for run in runs):
        return "mixes parallel and reduction loops in a run"
    if any(isinstance(o, linalg.IndexOp) for o in op.body.walk()):
        return "reads a loop index (linalg.index)"
    covered = [d for run in runs for d in run]
    if len(covered) != len(set(covered)):
        return "would merge overlapping runs"
    dims = [_dim_runs(m, runs) for m in _maps(op)]
    if any(d is None for d in dims):
        return "reads a run split or out of order through one of its maps"
    if any(_two_dynamic(v.type.get_shape(), d) for v, d in zip(op.operands, dims, strict=True)  # pyright: ignore
           if isinstance(v.type, TensorType)):  # fmt: skip
        return "would merge two dynamic sizes"
    return None


def _seeds(reshape: _Reshape) -> list[tuple[linalg.GenericOp, set[Run]]]:
    """The generics whose collapse folds `reshape`: the readers of an expansion,
    the producer of a collapse; each with the loop runs the reshape merges."""
    runs = _runs(groups_of(reshape))
    if isinstance(reshape, tensor.CollapseShapeOp):
        producer = _generic_of(reshape.src)
        if producer is None:
            return []
        out_map = _maps(producer)[len(producer.inputs) + reshape.src.index]  # pyright: ignore
        loops = _loop_runs(out_map, runs)
        return [] if loops is None else [(producer, loops)]
    seeds = []
    for use in reshape.result.uses:
        reader = use.operation
        if _at_function_level(reader, linalg.GenericOp):
            loops = _loop_runs(_maps(reader)[use.index], runs)  # pyright: ignore
            if loops is not None:
                seeds.append((reader, loops))
    return seeds  # pyright: ignore


def _folds(view: Operation, runs: set[Run], expand: bool) -> bool:
    kind = tensor.ExpandShapeOp if expand else tensor.CollapseShapeOp
    return isinstance(view, kind) and _runs(groups_of(view)) == runs


def plan_cluster(seed: linalg.GenericOp, loop_runs: set[Run]) -> dict[linalg.GenericOp, set[Run]] | None:
    """The generics to collapse together, each with its loop runs, starting from
    `seed`; None when one of them cannot be collapsed."""
    return plan(seed, loop_runs)[0]


def plan(seed: linalg.GenericOp, loop_runs: set[Run],
         operands_kept: bool = False) -> tuple[dict[linalg.GenericOp, set[Run]] | None, str]:  # fmt: skip
    """`plan_cluster`, with the reason when there is none (`operands_kept`: the
    seed's inputs are viewed collapsed, their producers not collapsed with it)."""
    members: dict[linalg.GenericOp, set[Run]] = {}
    work = [(seed, loop_runs)]
    while work:
        op, new = work.pop()
        runs = members.get(op, set()) | new
        if op in members and runs == members[op]:
            continue
        why = _not_collapsible(op, runs)
        if why:
            return None, f"{_label(op)} {why} (loops {sorted(runs)})"
        members[op] = runs
        neighbours = _neighbours(op, runs, inputs=not (operands_kept and op is seed))
        if neighbours is None:
            return None, (f"a producer or reader of {_label(op)} does not index loops "
                          f"{sorted(runs)} as one consecutive run")  # fmt: skip
        work.extend(neighbours)
    return members, ""


def _neighbours(op: linalg.GenericOp, runs: set[Run],
                inputs: bool = True) -> list[tuple[linalg.GenericOp, set[Run]]] | None:  # fmt: skip
    """The generics next to `op` that collapsing `op` by `runs` collapses too
    (None: one of them would have to be collapsed along loops it cannot merge;
    `inputs=False`: not the producers of its inputs)."""
    found = []
    maps = _maps(op)
    n_in = len(op.inputs)
    for i, (value, amap) in enumerate(zip(op.operands, maps, strict=True)):
        if i < n_in and not inputs:
            continue
        dims = _dim_runs(amap, runs)
        producer = _generic_of(value)
        if not dims or producer is None or is_generic_fill(producer):
            continue  # untouched, or a host view of an argument, creation or view
            # (a fill's view is a fill of the new shape: its other readers keep theirs)
        loops = _loop_runs(_maps(producer)[len(producer.inputs) + value.index], dims)  # pyright: ignore
        if loops is None:
            return None
        found.append((producer, loops))
    for result, amap in zip(op.results, maps[n_in:], strict=True):
        dims = _dim_runs(amap, runs)
        if not dims:
            continue
        for use in result.uses:
            reader = use.operation
            if _folds(reader, dims, expand=False) or not _at_function_level(reader, linalg.GenericOp):
                continue
            loops = _loop_runs(_maps(reader)[use.index], dims)  # pyright: ignore
            if loops is None:
                return None
            found.append((reader, loops))  # pyright: ignore
    return found


def _collapse_contraction_sides(module: ModuleOp) -> None:
    """Merge the consecutive loops of each side of every contraction that can be
    merged (module docstring), with the cluster each merge starts."""
    for op in [o for o in module.walk() if _at_function_level(o, linalg.GenericOp)]:
        if op.parent is None:
            continue  # replaced by an earlier cluster
        runs = _side_runs(op)  # pyright: ignore[reportArgumentType]
        if not runs:
            continue
        members, why = plan(op, runs, operands_kept=True)  # pyright: ignore[reportArgumentType]
        if members and (padded := _padded_result(members)):
            members, why = None, (f"{_label(padded)}'s result is padded (a window reads it: "
                                  "its positions stay rows and columns, its layout is choose-layouts')")  # fmt: skip
        if members:
            _log(op, f"collapsed {len(members)} generic(s) ({', '.join(_label(m) for m in members)}) "
                     f"along loops {sorted(runs)}: one side of a contraction is one loop")  # fmt: skip
            _collapse_cluster(members)
        else:
            _log(op, f"kept loops {sorted(runs)} of a contraction apart: {why}")


def _padded_result(members: dict[linalg.GenericOp, set[Run]]) -> linalg.GenericOp | None:
    """A member whose result a `tensor.pad` reads (directly or through views)."""
    for op in members:
        work = list(op.results)
        while work:
            for use in work.pop().uses:
                if isinstance(use.operation, tensor.PadOp):
                    return op
                if isinstance(use.operation, _Reshape):
                    work.append(use.operation.result)
    return None


def _contraction_dims(op: linalg.GenericOp) -> tuple[tuple[int, ...], ...] | None:
    """The loops each map of a two-operand contraction reads (operand, operand,
    output); None for any other generic or a window read (fold-windows views it
    later)."""
    if len(op.inputs) != 2 or (s := as_structured(op)) is None or not s.reduction_dims:
        return None
    if not is_contraction(s):
        return None
    try:
        return tuple(map_dims(m) for m in _maps(op))
    except ValueError:
        return None


def _one_side_innermost(dims: tuple[tuple[int, ...], ...], run: Run) -> bool:
    """Whether the loops `run` are read by the output and by one operand only, as
    the innermost dims of both."""
    a, b, out = dims
    if any((d in a) == (d in b) for d in run):
        return False
    operand = a if run[0] in a else b
    return operand[-len(run):] == run and out[-len(run):] == run


def _side_runs(op: linalg.GenericOp) -> set[Run]:
    """Runs of two or more consecutive loops of a contraction that its output and
    exactly one of its two operands read as their innermost dims, each read whole
    and in order by every map (empty when there are none)."""
    dims = _contraction_dims(op)
    if dims is None:
        return set()
    a, b, out = dims

    def side(d: int) -> tuple[bool, bool] | None:
        return (d in a, d in b) if d in out and (d in a) != (d in b) else None

    runs: set[Run] = set()
    d, n = 0, len(op.iterator_types)
    while d < n:
        end = d + 1
        while side(d) is not None and end < n and side(end) == side(d):
            end += 1
        run = tuple(range(d, end))
        if len(run) > 1 and _one_side_innermost(dims, run) and _not_collapsible(op, {run}) is None:
            runs.add(run)
        d = end
    return runs


def _innermost_side(op: linalg.GenericOp, loop: int) -> bool:
    """Whether `loop` of `op` is what `_side_runs` merges a run into: one side of a
    contraction, the innermost dim of its operand and its output."""
    dims = _contraction_dims(op)
    return dims is not None and _one_side_innermost(dims, (loop,))


def _collapse_cluster(members: dict[linalg.GenericOp, set[Run]]) -> None:
    rewriter = Rewriter()
    block = next(iter(members)).parent_block()
    assert block is not None
    order = {o: i for i, o in enumerate(block.ops)}
    for op in sorted(members, key=order.__getitem__):
        _collapse_generic(op, members[op], rewriter)


def _partition(num_dims: int, runs: set[Run]) -> list[list[int]]:
    starts = {run[0]: run for run in runs}
    inside = {d for run in runs for d in run[1:]}
    return [list(starts.get(d, (d,))) for d in range(num_dims) if d not in inside]


def _reshaped(value: SSAValue, dims: set[Run], before: Operation, rewriter: Rewriter) -> SSAValue:
    """`value` collapsed along `dims` (the source of an expansion that does just that)."""
    t = value.type
    assert isinstance(t, TensorType)
    groups = _partition(len(t.get_shape()), dims)
    shape = [_product(t.get_shape(), g) for g in groups]
    owner = value.owner
    if _folds(owner, dims, expand=True) and list(owner.src.type.get_shape()) == shape:  # pyright: ignore
        return owner.src  # pyright: ignore
    view = tensor.CollapseShapeOp(operands=[value],
                                  result_types=[TensorType(t.get_element_type(), shape)],
                                  properties={"reassociation": reassociation(groups)})  # fmt: skip
    rewriter.insert_op(view, InsertPoint.before(before))
    return view.result


def _product(shape: Sequence[int], group: Sequence[int]) -> int:
    """The size of `group` merged: dynamic if one of its sizes is."""
    if any(shape[d] == DYNAMIC_INDEX for d in group):
        return DYNAMIC_INDEX
    n = 1
    for d in group:
        n *= shape[d]
    return n


def _two_dynamic(shape: Sequence[int], groups: Iterable[Sequence[int]]) -> bool:
    """Does a group of `shape`'s dims hold two dynamic sizes (which no static size
    relates: their merge cannot be split again from the sizes alone)?"""
    return any(sum(shape[d] == DYNAMIC_INDEX for d in g) > 1 for g in groups)


def _expand_to(value: SSAValue, groups: list[list[int]], t: TensorType, before: Operation,
               rewriter: Rewriter) -> tensor.ExpandShapeOp:  # fmt: skip
    """An expansion of `value` to `t`, its dynamic sizes computed from `value`'s
    (one dynamic size a group, `structured.expand_sizes`)."""
    made, sizes = expand_sizes(value, groups, list(t.get_shape()))
    for o in made:
        rewriter.insert_op(o, InsertPoint.before(before))
    view = tensor.ExpandShapeOp(value, sizes, reassociation(groups), list(t.get_shape()), t)
    rewriter.insert_op(view, InsertPoint.before(before))
    return view


def _collapse_generic(op: linalg.GenericOp, runs: set[Run], rewriter: Rewriter) -> None:
    maps = _maps(op)
    loops = _partition(maps[0].num_dims, runs)
    new_dim = {g[0]: i for i, g in enumerate(loops)}
    inside = {d for run in runs for d in run[1:]}
    new_maps, operands, dims_of = [], [], []
    for value, amap in zip(op.operands, maps, strict=True):
        dims = _dim_runs(amap, runs)
        assert dims is not None
        results = [AffineDimExpr(new_dim[e.position]) for e in amap.results  # pyright: ignore
                   if e.position not in inside]  # pyright: ignore  # fmt: skip
        new_maps.append(AffineMapAttr(AffineMap(len(loops), 0, tuple(results))))
        operands.append(_reshaped(value, dims, op, rewriter) if dims else value)
        dims_of.append(dims)
    iterators = ArrayAttr([op.iterator_types.data[g[0]] for g in loops])
    n_in = len(op.inputs)
    outs = operands[n_in:]
    new = linalg.GenericOp(operands[:n_in], outs, op.body.clone(), new_maps, iterators,
                           [v.type for v in outs])  # fmt: skip
    new.location = op.location
    for name, attr in op.attributes.items():
        new.attributes[name] = attr
    rewriter.insert_op(new, InsertPoint.before(op))
    for old, res, dims in zip(op.results, new.results, dims_of[n_in:], strict=True):
        res.name_hint = old.name_hint
        value = res
        if dims:
            t = old.type
            assert isinstance(t, TensorType)
            value = _expand_to(res, _partition(len(t.get_shape()), dims), t, op, rewriter).result
        old.replace_all_uses_with(value)
    rewriter.erase_op(op)


Splits = dict[int, list[int]]
"""Loop -> the sizes it splits into (outermost first)."""


def _expand_readers_of_collapses(module: ModuleOp, alone: bool) -> bool:
    """Fusion by expansion, where it removes views and adds none: the generics
    reading a collapse run in the expanded space, together with every generic
    their split loops reach (`plan_expansion`), when that removes a view between
    two generics and every view it leaves is of an argument, a creation or a
    returned value. `alone`: only where the reader is expanded alone (a batch
    matmul reading heads `[B, H] -> B*H`, its result expanded back); else the
    whole cluster, for a collapse of a generic that broadcasts along a merged dim
    (grouped-query attention's K and V, `[B, KVH, REP] -> B*H`, which no collapse
    folds: materialised, the broadcast costs REP times its bytes), which the pass
    tries last: merged loops tile better than split ones, so collapsing comes
    first, and a permuting producer is flash-attention's to read through."""
    changed = False
    for collapse in [o for o in module.walk() if _at_function_level(o, tensor.CollapseShapeOp)]:
        if collapse.parent is None or not collapse.result.uses:
            continue  # folded by an expansion earlier in this call
        if not alone and not _broadcasts_merged_dims(collapse):
            continue
        for use in list(collapse.result.uses):
            reader = use.operation
            if reader.parent is None or not _at_function_level(reader, linalg.GenericOp):
                continue
            splits = _splits(reader, use.index, collapse)  # pyright: ignore
            if not splits or any(_innermost_side(reader, d) for d in splits):  # pyright: ignore
                continue  # (a contraction's positions, merged on purpose)
            members, why = plan_expansion(reader, splits, alone)  # pyright: ignore
            if members is None:
                if not alone:  # (the one-reader tries are many and expected to fail)
                    _log(reader, f"kept {_describe(collapse)} unexpanded: {why}")  # pyright: ignore
                continue
            names = ", ".join(_label(m) for m in members)
            _log(reader, f"folded {_describe(collapse)}: expanded {len(members)} generic(s) "  # pyright: ignore
                         f"({names}) (loop -> sizes {splits})")  # fmt: skip
            block = reader.parent_block()
            assert block is not None
            order = {o: i for i, o in enumerate(block.ops)}
            for op in sorted(members, key=order.__getitem__):
                _expand_generic(op, members[op])
            changed = True
            break  # (the collapse's other readers: the next round)
    return changed


def _broadcasts_merged_dims(collapse: tensor.CollapseShapeOp) -> bool:
    """Whether `collapse` merges a dim its producer (a generic) broadcasts along:
    the loop writing it is read by no input and its index by no payload op."""
    producer = _generic_of(collapse.src)
    if producer is None:
        return False
    maps = _maps(producer)
    out_map = maps[len(producer.inputs) + collapse.src.index]  # pyright: ignore
    read = set().union(*(_dims_in_map(m) for m in maps[: len(producer.inputs)]))
    read |= {o.dim.value.data for o in producer.body.walk() if isinstance(o, linalg.IndexOp)}
    for group in groups_of(collapse):
        loops = [out_map.results[d] for d in group]
        if len(group) > 1 and any(isinstance(e, AffineDimExpr) and e.position not in read for e in loops):
            return True
    return False


def _splits(op: linalg.GenericOp, index: int, collapse: tensor.CollapseShapeOp) -> Splits | None:
    """Loop -> the sizes it splits into, for the collapsed dims operand `index` reads."""
    amap = _maps(op)[index]
    shape = collapse.src.type.get_shape()  # pyright: ignore
    splits = {}
    for t, group in enumerate(groups_of(collapse)):
        if len(group) > 1:
            e = amap.results[t]
            if not isinstance(e, AffineDimExpr) or e.position in splits:
                return None
            splits[e.position] = [shape[i] for i in group]
            if _two_dynamic(shape, [group]):
                return None  # (which sizes? the collapse's source knows, not the loop)
    return splits


def _operand_groups(amap: AffineMap, splits: Splits) -> list[list[int]] | None:
    """The reassociation of an operand's expanded view (None: a split loop read
    through an affine expression)."""
    groups, at = [], 0
    for e in amap.results:
        if isinstance(e, AffineDimExpr):
            n = len(splits.get(e.position, [0]))
        elif e.used_dims() & splits.keys():
            return None
        else:
            n = 1
        groups.append(list(range(at, at + n)))
        at += n
    return groups


def _expanded_shape(amap: AffineMap, shape: Sequence[int], splits: Splits) -> list[int]:
    return [n for e, d in zip(amap.results, shape, strict=True)
            for n in (splits.get(e.position, [d]) if isinstance(e, AffineDimExpr) else [d])]  # fmt: skip


def _is_argument(value: SSAValue) -> bool:
    return isinstance(value.owner, Block) and isinstance(value.owner.parent_op(), func.FuncOp)


def _host_source(value: SSAValue) -> bool:
    """A function argument, a creation, or a view of one: a view of it is free."""
    owner = value.owner
    if isinstance(owner, _Reshape):
        return _host_source(owner.src)
    return _is_argument(value) or isinstance(owner, tensor.EmptyOp | linalg.FillOp) or is_generic_fill(owner)


def _host_only(value: SSAValue) -> bool:
    """Only returned, directly or through views: a view of it is free."""
    return all(isinstance(u.operation, func.ReturnOp)
               or (isinstance(u.operation, _Reshape) and _host_only(u.operation.result))
               for u in value.uses)  # fmt: skip


def plan_expansion(seed: linalg.GenericOp, splits: Splits,
                   alone: bool = False) -> tuple[dict[linalg.GenericOp, Splits] | None, str]:  # fmt: skip
    """The generics to expand together, each with its splits, starting from `seed`
    (the reader of a collapse): every generic a split loop reaches through an
    operand or a result joins, the loop that indexes the split dim there split the
    same way; None (and why) when one cannot be expanded, a split meets a view of
    a generic's result that is not its exact inverse, a loop would split two ways,
    or the expansion would remove no view between generics (or, `alone`, when
    another generic would have to join)."""
    members: dict[linalg.GenericOp, Splits] = {}
    removes = False
    work = [(seed, splits)]
    while work:
        op, new = work.pop()
        merged = dict(members.get(op, {}))
        for loop, sizes in new.items():
            if merged.setdefault(loop, sizes) != sizes:
                return None, f"{_label(op)} would split loop {loop} as {merged[loop]} and as {sizes}"
        if op in members and merged == members[op]:
            continue
        why = _not_expandable(op, merged) or (None if alone else _splits_tiled_loops(op, merged))
        if why:
            return None, f"{_label(op)} {why} (splits {merged})"
        members[op] = merged
        found = _expansion_neighbours(op, merged, refine=not alone)
        if isinstance(found, str):
            return None, f"{_label(op)}: {found}"
        neighbours, removed = found
        if alone and neighbours:
            return None, f"expanding {_label(op)} expands {_label(neighbours[0][0])} too"
        removes |= removed
        work.extend(neighbours)
    if not removes:
        return None, "expanding removes no view between generics"
    return members, ""


def _not_expandable(op: linalg.GenericOp, splits: Splits) -> str | None:
    """Why `op` cannot run with its loops split by `splits` (None: it can)."""
    if any(isinstance(o, linalg.IndexOp) and DYNAMIC_INDEX in splits.get(o.dim.value.data, [0])[1:]
           for o in op.body.walk()):  # fmt: skip
        return "reads the index of a loop split by a run-time size (linalg.index)"
    if any(_operand_groups(m, splits) is None for m in _maps(op)):
        return "reads a split loop through an affine expression"
    return None


def _splits_tiled_loops(op: linalg.GenericOp, splits: Splits) -> str | None:
    """Why splitting `splits` would cost `op` its tiles (None: it would not): a
    split reduction loop is two loops to run, and a split M or N loop of a
    contraction (a parallel loop some operand does not read) caps its tile at
    the inner size; a batch loop, read by every operand, is a grid dim only."""
    iters = [str(i.data) for i in op.iterator_types]
    if any(iters[d] != "parallel" for d in splits):
        return "would split a reduction loop"
    if "reduction" in iters:
        for d in splits:
            if not all(d in _dims_in_map(m) for m in _maps(op)):
                return f"would split loop {d}, which not every operand reads (an M or N loop)"
    return None


def _dims_in_map(amap: AffineMap) -> set[int]:
    return {d for e in amap.results for d in e.used_dims()}


def _expansion_neighbours(op: linalg.GenericOp, splits: Splits,
                          refine: bool = False) -> tuple[list, bool] | str:  # fmt: skip
    """The generics that expanding `op` expands too, each with its splits, and
    whether a view between generics goes; or why `op` cannot be expanded.
    `refine`: views of the split dims coarser than the split (`_refined_view`)
    are seen through, not refused."""
    maps = _maps(op)
    n_in = len(op.inputs)
    found, removes = [], False
    for value, amap in zip(op.operands, maps, strict=True):
        step = _operand_neighbour(value, amap, splits, refine)
        if isinstance(step, str):
            return step
        found += step[0]
        removes |= step[1]
    for result, amap in zip(op.results, maps[n_in:], strict=True):
        step = _result_neighbours(result, amap, splits, refine)
        if isinstance(step, str):
            return step
        found += step[0]
        removes |= step[1]
    return found, removes


def _operand_neighbour(value: SSAValue, amap: AffineMap, splits: Splits,
                       refine: bool = False) -> tuple[list, bool] | str:  # fmt: skip
    """An operand's producer to expand too (if a generic), whether a view between
    generics goes (a collapse the expansion inverts), or why it cannot be read so.
    `refine`: a collapse of a generic's result that merges fewer dims than the
    split makes (`[B, H] -> B*H` where the split is `B*H -> [B, KVH, REP]`) brings
    that producer in, its `H` split `[KVH, REP]`; an expansion of any tensor is read
    split further (the same view, finer: `[B*T, H*D] -> [B, T, KVH, REP, D]`)."""
    dims = _dim_splits(amap, splits)
    owner = value.owner
    producer = _generic_of(value)
    if not dims or is_generic_fill(owner):
        return [], False  # untouched, or filled again in the new shape
    if producer is not None:
        loops = _loop_splits(_maps(producer)[len(producer.inputs) + value.index], dims)  # pyright: ignore
        if loops is None:
            return f"its producer {_label(producer)} writes a split dim through an affine expression"
        return [(producer, loops)], False
    if isinstance(owner, tensor.CollapseShapeOp) and _inverts(owner, amap, splits):
        source = _generic_of(owner.src)
        return [], source is not None and not is_generic_fill(source)  # (a fill's view: a fill)
    if _host_source(value):
        return [], False
    if refine and isinstance(owner, _Reshape) and (step := _refined_view(owner, dims)) is not None:
        return step
    return "reads a split dim of a view of a generic's result split otherwise"


def _refined_view(view: _Reshape, dims: dict[int, list[int]]) -> tuple[list, bool] | None:
    """For a view `view` whose result dims `dims` (dim -> sizes) an expansion
    splits: an expansion is read split further (no generic joins, no view goes, the
    same view of the same tensor, finer), a collapse of a generic's result whose
    merged dims the split refines brings the generic in with its dims split to
    match (the collapse goes); None when neither."""
    if isinstance(view, tensor.ExpandShapeOp):
        if any(DYNAMIC_INDEX in sizes for sizes in dims.values()):
            return None  # (which split of a dynamic size? the view's sizes say one only)
        return [], False
    producer = _generic_of(view.src)
    if producer is None or is_generic_fill(producer):
        return None
    shape = view.src.type.get_shape()  # pyright: ignore
    source: dict[int, list[int]] = {}
    for t, sizes in dims.items():
        group = groups_of(view)[t]
        parts = _refinement([shape[i] for i in group], sizes)
        if parts is None:
            return None
        source.update({i: part for i, part in zip(group, parts, strict=True) if len(part) > 1})
    if not source:
        return None
    loops = _loop_splits(_maps(producer)[len(producer.inputs) + view.src.index], source)  # pyright: ignore
    return None if loops is None else ([(producer, loops)], True)


def _refinement(coarse: list[int], fine: list[int]) -> list[list[int]] | None:
    """`fine` cut into consecutive runs whose products are `coarse`'s sizes in order
    (`[8, 16]`, `[8, 4, 4]` -> `[[8], [4, 4]]`); None when it does not cut so."""
    if DYNAMIC_INDEX in coarse or DYNAMIC_INDEX in fine:
        return None
    parts, at = [], 0
    for size in coarse:
        run, product = [], 1
        while product < size and at < len(fine):
            run.append(fine[at])
            product *= fine[at]
            at += 1
        if product != size or not run:
            return None
        parts.append(run)
    return parts if at == len(fine) else None


def _result_neighbours(result: SSAValue, amap: AffineMap, splits: Splits,
                       refine: bool = False) -> tuple[list, bool] | str:  # fmt: skip
    """A result's readers to expand too, whether a view between generics goes (an
    expansion the collapse inverts), or why it cannot be read so. `refine`: an
    expansion that splits fewer dims than the split makes (`B*H -> [B, H]` where
    the split is `[B, KVH, REP]`) brings its readers in, their `H` split
    `[KVH, REP]` (the expansion goes); a collapse (`[B, T, H, D] -> [B*T, H*D]`)
    brings in its readers, their merged loops split to match (`B*H` ->
    `[B, KVH, REP]`), except a contraction that would have to split a reduction or
    an M or N loop: it reads the result collapsed back, one view at a kernel
    boundary as before."""
    dims = _dim_splits(amap, splits)
    if not dims:
        return [], False
    found, removes = [], False
    for use in result.uses:
        user = use.operation
        if _at_function_level(user, linalg.GenericOp):
            loops = _loop_splits(_maps(user)[use.index], dims)  # pyright: ignore
            if loops is None:
                return f"its reader {_label(user)} reads a split dim through an affine expression"  # pyright: ignore
            if refine and _kernel_boundary(user, loops):  # pyright: ignore
                continue  # (it reads the result collapsed back: a view at its operand)
            found.append((user, loops))
        elif isinstance(user, tensor.ExpandShapeOp) and _inverts(user, amap, splits):
            removes |= any(_at_function_level(u.operation, linalg.GenericOp) for u in user.result.uses)
        elif refine and (readers := _view_readers_split(user, dims)) is not None:
            if isinstance(readers, str):
                return readers
            found += readers
            removes |= bool(readers)
        elif not (isinstance(user, func.ReturnOp)
                  or (isinstance(user, _Reshape) and _host_only(user.result))):  # fmt: skip
            return f"a split result is read by {user.name}"
    return found, removes


def _view_readers_split(view: Operation, dims: dict[int, list[int]]) -> list | str | None:
    """The readers to expand too of a view `view` of a split result (`_readers_split`,
    `_collapse_readers_split`); None: not a view seen through."""
    if isinstance(view, tensor.ExpandShapeOp):
        return _readers_split(view, dims)
    if isinstance(view, tensor.CollapseShapeOp):
        return _collapse_readers_split(view, dims)
    return None


def _readers_split(expand: tensor.ExpandShapeOp, dims: dict[int, list[int]]) -> list | str | None:
    """The readers of `expand` (of a result whose dims `dims` an expansion splits)
    with their loops split to match, where the split refines the expansion's
    groups (None: it does not; a string: why a reader cannot join)."""
    shape = expand.result.type.get_shape()  # pyright: ignore
    out: dict[int, list[int]] = {}
    for t, sizes in dims.items():
        group = groups_of(expand)[t]
        parts = _refinement([shape[i] for i in group], sizes)
        if parts is None:
            return None
        out.update({i: part for i, part in zip(group, parts, strict=True) if len(part) > 1})
    return _split_readers(expand, out, boundaries=False)


def _collapse_readers_split(collapse: tensor.CollapseShapeOp, dims: dict[int, list[int]]) -> list | str:
    """The readers of `collapse` (of a result whose dims `dims` an expansion splits)
    to expand too, each with the merged loops split to match; a contraction whose
    split would be a reduction, M or N loop keeps the collapse (its operand views
    are kernel boundaries) and does not join; anything else reading it refuses."""
    shape = collapse.src.type.get_shape()  # pyright: ignore
    out: dict[int, list[int]] = {}
    for t, group in enumerate(groups_of(collapse)):
        if any(i in dims for i in group):
            out[t] = [n for i in group for n in dims.get(i, [shape[i]])]
    return _split_readers(collapse, out, boundaries=True)


def _split_readers(view: _Reshape, out: dict[int, list[int]], boundaries: bool) -> list | str:
    """The generics reading `view` with their loops split as its dims `out` are
    (returns and host-only views read it as it is); `boundaries`: a contraction
    that would split a reduction, M or N loop keeps reading the view; a string:
    why a reader cannot join."""
    found = []
    for use in view.result.uses:
        reader = use.operation
        if isinstance(reader, func.ReturnOp) or (isinstance(reader, _Reshape) and _host_only(reader.result)):
            continue
        if not _at_function_level(reader, linalg.GenericOp):
            return f"a split result is read through a {view.name} by {reader.name}"
        loops = _loop_splits(_maps(reader)[use.index], out)  # pyright: ignore
        if loops is None:
            return f"its reader {_label(reader)} reads a split dim through an affine expression"  # pyright: ignore
        if boundaries and _kernel_boundary(reader, loops):  # pyright: ignore
            continue  # (the contraction reads the view)
        found.append((reader, loops))
    return found


def _kernel_boundary(reader: linalg.GenericOp, loops: Splits) -> bool:
    """Whether `reader`, a contraction, would have to split a reduction or an M or N
    loop to join an expansion: it stays as it is and reads the expanded result
    collapsed back (its operands are kernel boundaries; a view there is free)."""
    return is_contraction(as_structured(reader)) and _splits_tiled_loops(reader, loops) is not None


def _inverts(view: _Reshape, amap: AffineMap, splits: Splits) -> bool:
    """Whether `view` is exactly the reshape between the tensor `amap` reads
    (its smaller side) and that tensor expanded by `splits` (its larger side)."""
    small = view.result if isinstance(view, tensor.CollapseShapeOp) else view.src
    large = view.src if isinstance(view, tensor.CollapseShapeOp) else view.result
    shape = _expanded_shape(amap, small.type.get_shape(), splits)  # pyright: ignore
    return groups_of(view) == _operand_groups(amap, splits) and list(large.type.get_shape()) == shape  # pyright: ignore


def _dim_splits(amap: AffineMap, splits: Splits) -> dict[int, list[int]]:
    """Tensor dim -> sizes, for the dims `amap` reads along split loops."""
    return {t: splits[e.position] for t, e in enumerate(amap.results)
            if isinstance(e, AffineDimExpr) and e.position in splits}  # fmt: skip


def _loop_splits(amap: AffineMap, dims: dict[int, list[int]]) -> Splits | None:
    """The splits of the loops that index the split tensor dims (None: a dim
    written or read through an affine expression of loops)."""
    loops = {}
    for t, sizes in dims.items():
        e = amap.results[t]
        if not isinstance(e, AffineDimExpr):
            return None
        loops[e.position] = sizes
    return loops


def _expanded_operand(value: SSAValue, amap: AffineMap, splits: Splits, before: Operation,
                      rewriter: Rewriter) -> SSAValue:  # fmt: skip
    """`value` (read by `amap`) in the shape its reader expanded by `splits` reads:
    itself, the source of a collapse this inverts, a fill of the new shape, or an
    expansion of it (a view of an argument, a creation or a returned value)."""
    groups = _operand_groups(amap, splits)
    assert groups is not None
    if all(len(g) == 1 for g in groups):
        return value
    t = value.type
    assert isinstance(t, TensorType)
    shape = _expanded_shape(amap, t.get_shape(), splits)
    if isinstance(value.owner, tensor.CollapseShapeOp) and _inverts(value.owner, amap, splits):
        return value.owner.src
    new_t = TensorType(t.get_element_type(), shape)
    if is_generic_fill(value.owner) and DYNAMIC_INDEX not in shape:
        new_fill = generic_fill(value.owner, new_t)  # pyright: ignore
        rewriter.insert_op(new_fill, InsertPoint.before(before))
        return new_fill[-1].results[0]
    return _expand_to(value, groups, new_t, before, rewriter).result  # (a fill's: refilled later)


def _linearised(index: linalg.IndexOp, loops: list[int], sizes: list[int]) -> None:
    """Make `index` (of the first of `loops`, which split one loop into `sizes`) read
    the index of the loop they split: `((i0 * s1) + i1) * s2 + i2 ...`."""
    value: SSAValue = index.result
    uses = list(value.uses)
    at: Operation = index
    for loop, size in zip(loops[1:], sizes[1:], strict=True):
        inner = linalg.IndexOp(loop)
        scale = arith.ConstantOp(IntegerAttr(size, IndexType()))
        mul = arith.MuliOp(value, scale.result)
        add = arith.AddiOp(mul.result, inner.result)
        for new in (inner, scale, mul, add):
            Rewriter.insert_op(new, InsertPoint.after(at))
            at = new
        value = add.result
    for use in uses:
        use.operation.operands[use.index] = value


def _expand_generic(op: linalg.GenericOp, splits: Splits) -> None:
    """`op` with each split loop run as its sizes' loops (outermost first)."""
    rewriter = Rewriter()
    maps = _maps(op)
    new_dims, at = {}, 0
    for d in range(maps[0].num_dims):
        new_dims[d] = list(range(at, at + len(splits.get(d, [0]))))
        at += len(new_dims[d])
    renamed = [AffineDimExpr(new_dims[d][0]) for d in range(maps[0].num_dims)]
    new_maps, operands = [], []
    for value, amap in zip(op.operands, maps, strict=True):
        results = tuple(AffineDimExpr(n) if isinstance(e, AffineDimExpr) else e.replace_dims_and_symbols(renamed, [])
                        for e in amap.results
                        for n in (new_dims[e.position] if isinstance(e, AffineDimExpr) else [None]))  # fmt: skip
        new_maps.append(AffineMapAttr(AffineMap(at, 0, results)))
        operands.append(_expanded_operand(value, amap, splits, op, rewriter))
    iterators = ArrayAttr([op.iterator_types.data[d] for d in new_dims for _ in new_dims[d]])
    n_in = len(op.inputs)
    outs = operands[n_in:]
    body = op.body.clone()
    for index in [o for o in body.walk() if isinstance(o, linalg.IndexOp)]:
        d = index.dim.value.data
        index.properties["dim"] = IntegerAttr(new_dims[d][0], i64)
        if d in splits:  # the split loop's index, from its loops' (outermost first)
            _linearised(index, new_dims[d], splits[d])
    new = linalg.GenericOp(operands[:n_in], outs, body, new_maps, iterators,
                           [v.type for v in outs])  # fmt: skip
    new.location = op.location
    for name, attr in op.attributes.items():
        new.attributes[name] = attr
    rewriter.insert_op(new, InsertPoint.before(op))
    for old, res, amap in zip(op.results, new.results, maps[n_in:], strict=True):
        res.name_hint = old.name_hint
        value = res
        groups = _operand_groups(amap, splits)
        assert groups is not None
        if not all(len(g) == 1 for g in groups):
            view = tensor.CollapseShapeOp(operands=[res], result_types=[old.type],
                                          properties={"reassociation": reassociation(groups)})  # fmt: skip
            rewriter.insert_op(view, InsertPoint.before(op))
            value = view.result
        old.replace_all_uses_with(value)
    rewriter.erase_op(op)
    for value in {v for v in op.operands if is_generic_fill(v.owner)}:
        if not value.uses:
            rewriter.erase_op(value.owner)  # pyright: ignore  (a fill only this op read)
