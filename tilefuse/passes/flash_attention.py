"""
`flash-attention`: prepare softmax(Q K^T * s) V for FlashAttention.

Recognised from ordinary linalg (`patterns.find_attention`): a contraction
producing scores (with elementwise ops after it, e.g. the scale), a softmax
over a dim `j` written as max-reduce, `exp(u - max)`, sum-reduce and a division,
and a contraction over the same `j`. Two things happen:

1. The normalisation sinks below the second contraction, which is exact
   because `l` does not depend on `j`:
   `sum_j (e / l) * v  ==  (sum_j e * v) / l`.
   With that, every reduction over `j` is linear in `e = exp(u - max)`, so
   tile-and-fuse can run them all in one loop over key tiles with a running max
   and rescaled accumulators (online softmax), and the N x N scores never leave
   the chip.
2. The ops are tagged `tilefuse.attention = "attention_<k>"`; `fusion-groups`
   puts a tag's ops in one kernel and says so in its log.

Nothing changes when the pattern does not match (softmax over another dim than
the contraction, no normalisation feeding a contraction, ...).

Before matching, two spellings real programs write are brought to that form
(each exact, each a no-op where it does not apply):

- *heads through views*: torch-mlir computes `Q K^T` and `P V` as batch matmuls
  over `B*H`, between a `collapse_shape` of each operand and an `expand_shape`
  of the result. A contraction whose one reader is an `expand_shape` and whose
  inputs are `collapse_shape`s that the expansion undoes runs in the expanded
  loop space instead, reading the views' sources (fusion by expansion, as
  upstream's `ElementwiseOpFusion` does): no view stands between the scores
  and the softmax, nor between the probabilities and `P V`;
- *`exp(u - max)` in two ops*: a pointwise `u - m` read only by a pointwise
  `exp` becomes one op.

```mlir
%p = linalg.generic ... ins(%e, %l) { divf }              // p = e / l
%o = linalg.generic ... ins(%p, %v) { mulf, addf }        // o = p @ v
// becomes
%o2 = linalg.generic ... ins(%e, %v) { mulf, addf }       // o2 = e @ v
%o = linalg.generic ... ins(%o2, %l) { divf }             // o = o2 / l
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AffineMapAttr,
    FloatAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.analysis.dataflow import (
    FILL,
    POINTWISE,
    Graph,
    Node,
    build_graph,
    shared_dims,
)
from tilefuse.analysis.patterns import Attention, find_attention
from tilefuse.ir.structured import (
    collapse_groups,
    element_type,
    expand_sizes,
    like,
    reassociation,
    shape_of,
    sized_empty,
)
from tilefuse.passes.cleanup import (
    erase_dead_views,
    fold_reshapes_of_creations,
    resolve_dims,
)
from tilefuse.passes.permutations import fold_permutations, pure_permutation

TAG = "tilefuse.attention"


@dataclass(frozen=True)
class FlashAttentionPass(ModulePass):
    """Sink softmax normalisation below P @ V and tag attention for one kernel."""

    name = "flash-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        resolve_dims(op)  # (a dynamic program's `tensor.dim` of a row sum reads it too)
        count = 0
        for f in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            f = _normalised(f)
            done: set[Operation] = set()
            while (att := _next_attention(build_graph(f), done)) is not None:
                # Found again in the graph as it is now: a rewrite erases ops, so the
                # node indices of attentions found before it are stale.
                rewrite_attention(att.graph, att.attention, f"attention_{count}")
                done.add(att.attention.output.op)
                count += 1
                _erase_dead(f)
        # (its normalisation views masks made in the program: an `arange`, an
        # empty; those are creations again, in the viewed shape; the last stage
        # before fusion-groups, so any view of an iota left is computed so too)
        fold_reshapes_of_creations(op, iotas=True)
        erase_dead_views(op)


@dataclass(frozen=True)
class _Found:
    graph: Graph
    attention: Attention


def _next_attention(graph: Graph, done: set[Operation]) -> _Found | None:
    """The first attention of `graph` not yet rewritten."""
    for att in find_attention(graph):
        if TAG not in att.output.op.attributes and att.output.op not in done:
            return _Found(graph, att)
    return None


def rewrite_attention(graph: Graph, att: Attention, tag: str) -> None:
    """Sink `att`'s normalisation and tag its ops."""
    o, p = att.output, att.normalize
    probs = (att.rounding or att.zero_rows or p).op.results[0]
    e = att.softmax.exp_node.op.results[0]
    row_sum = att.sum_node.op.results[0]
    row_max = att.softmax.max_node.op.results[0] if att.zero_rows is not None else None
    if row_max is not None:
        _guard_exp(att)
    # 1. o2 = sum_j e * v: the same contraction reading e instead of p (a 16-bit
    #    program's rounding of p before P V moved onto e: truncf(e)).
    read, made = e, []
    if att.rounding is not None:
        made = _rounded(att.rounding, e)
        read = made[-1].results[0]
        made[-1].attributes[TAG] = StringAttr(tag)
    o2 = o.op.clone()
    o2.operands = [read if v is probs else v for v in o2.operands]
    Rewriter.insert_op([*made, o2], InsertPoint.after(o.op))
    # 2. o = o2 / l, l broadcast over o's non-row dims (o2 itself where m = -inf).
    div = _divide(graph, att, o2.results[0], row_sum, row_max)
    Rewriter.insert_op(div, InsertPoint.after(o2))
    o.op.results[0].replace_all_uses_with(div[-1].results[0])
    for dead in (o, att.rounding, att.zero_rows, p):
        if dead is not None and not any(r.uses for r in dead.op.results):
            dead.op.detach()
            dead.op.erase()
    for node in (*att.scores, att.softmax.max_node, att.softmax.exp_node, att.sum_node,
                 *_mask_producers(att)):  # fmt: skip
        node.op.attributes[TAG] = StringAttr(tag)
    o2.attributes[TAG] = StringAttr(tag)
    div[1].attributes[TAG] = StringAttr(tag)


def _rounded(rounding: Node, e) -> list[Operation]:
    """`truncf(e)`: the rounding the program applies to `p` (or `q`), on `e`, laid
    out as `p` (identity maps, `p` laid out as `e`)."""
    t = TensorType(element_type(rounding.op.results[0].type), shape_of(e))
    *sizes, empty = sized_empty(t, like(t, e))
    assert isinstance(empty, tensor.EmptyOp)
    new = rounding.op.clone()
    new.operands = [e, empty.tensor]
    new.results[0].name_hint = None  # not the program's rounded p
    return [*sizes, empty, new]


def _mask_producers(att: Attention) -> list[Node]:
    """Elementwise producers of the scores' masks and biases (a compare of a mask
    buffer, SDPA's `arange` compare) read only by the attention: computed per tile
    in its kernel rather than written by one of their own."""
    found: list[Node] = []
    inside = set(att.scores)
    frontier = [p for n in att.scores[1:] for p in n.producers if p not in inside]
    while frontier:
        node = frontier.pop()
        if node in found or node.kind not in (POINTWISE, FILL):
            continue
        if not all(c in inside or c in found or c in frontier for c in node.consumers):
            continue
        found.append(node)
        frontier += node.producers
    # Keep only those whose every reader is now inside (a shared mask stays its own kernel).
    kept = set(found)
    changed = True
    while changed:
        changed = False
        for node in list(kept):
            if not all(c in inside or c in kept for c in node.consumers):
                kept.discard(node)
                changed = True
    return [n for n in found if n in kept and n.kind == POINTWISE]


def _guard_exp(att: Attention) -> None:
    """`exp(u - m)` -> `exp(u - select(m == -inf, 0, m))`: 0, not NaN, in a row whose
    every score is -inf (what the online loop computes; here also what the IR says)."""
    exp = att.softmax.exp_node
    m_arg = exp.s.payload.args[exp.s.inputs.index(att.softmax.max_node.op.results[0])]
    sub = next(o for o in exp.s.payload.ops if isinstance(o, arith.SubfOp) and o.rhs is m_arg)
    et = m_arg.type
    neg_inf, zero = arith.ConstantOp(FloatAttr(float("-inf"), et)), arith.ConstantOp(FloatAttr(0.0, et))
    is_neg_inf = arith.CmpfOp(m_arg, neg_inf.result, "oeq")
    guard = arith.SelectOp(is_neg_inf.result, zero.result, m_arg)
    Rewriter.insert_op([neg_inf, zero, is_neg_inf, guard], InsertPoint.before(sub))
    sub.operands = [sub.lhs, guard.result]


def _divide(graph: Graph, att: Attention, num, row_sum, row_max=None):
    """`num / l` with `l` (`row_sum`) indexed by the row dims it shares with `num`;
    with `row_max`, `select(m == -inf, num, num / l)` (a fully masked row's
    `num` is its sum of `0 * v`, what the program's zeroed probabilities give)."""
    nodes = [att.softmax.max_node, att.softmax.exp_node, att.sum_node, att.normalize, att.output]
    nodes[-1:-1] = [n for n in (att.zero_rows, att.rounding) if n is not None]
    dims = shared_dims(graph, nodes)
    o, s = att.output, att.sum_node
    out_loops = o.s.operand_dims(len(o.s.inputs))
    out_dims = [dims.of[(o.index, d)] for d in out_loops]
    l_dims = [dims.of[(s.index, d)] for d in s.s.operand_dims(len(s.s.inputs))]
    rank = len(out_dims)
    l_map = AffineMap(rank, 0, tuple(AffineDimExpr(out_dims.index(d)) for d in l_dims))
    a = att.softmax.max_node
    m_dims = [dims.of[(a.index, d)] for d in a.s.operand_dims(len(a.s.inputs))]
    m_map = AffineMap(rank, 0, tuple(AffineDimExpr(out_dims.index(d)) for d in m_dims))
    ident = AffineMap.identity(rank)
    *sizes, empty = sized_empty(num.type, like(num.type, num))
    assert isinstance(empty, tensor.EmptyOp)
    et = element_type(num.type)
    ins = [num, row_sum] + ([row_max] if row_max is not None else [])
    block = Block(arg_types=[et] * (len(ins) + 1))
    q = arith.DivfOp(block.args[0], block.args[1])
    block.add_op(q)
    result = q.result
    if row_max is not None:
        neg_inf = arith.ConstantOp(FloatAttr(float("-inf"), et))
        masked = arith.CmpfOp(block.args[2], neg_inf.result, "oeq")
        pick = arith.SelectOp(masked.result, block.args[0], q.result)
        block.add_ops([neg_inf, masked, pick])
        result = pick.result
    block.add_op(linalg.YieldOp(result))
    generic = linalg.GenericOp(
        ins, [empty.tensor], Region(block),
        [AffineMapAttr(m) for m in [ident, l_map, m_map][: len(ins)]] + [AffineMapAttr(ident)],
        [IteratorTypeAttr(IteratorType.PARALLEL)] * rank, [num.type],
    )  # fmt: skip
    generic.location = o.op.location
    return [*sizes, empty, generic]


# ---------------------------------------------------------------------------
# Normalisation: the spellings real programs write, brought to the matched form
# ---------------------------------------------------------------------------


def _normalised(f: func.FuncOp) -> func.FuncOp:
    """`f` normalised, where that makes more attention match, or as many with fewer
    views (an attention left over `B*H` now over `(B, H)`); else `f` as it was (the
    normalisations are exact, but a batch matmul expanded for nothing loses the
    epilogue fusion it had). A dynamic function stays as it is (the normalisations'
    views are sized statically)."""
    trial = f.clone()
    normalise(trial)
    before, after = len(find_attention(build_graph(f))), len(find_attention(build_graph(trial)))
    if after < before or (after == before and (after == 0 or _views(trial) >= _views(f))):
        trial.erase()
        return f
    Rewriter.insert_op(trial, InsertPoint.before(f))
    f.detach()
    f.erase()
    return trial


def _views(f: func.FuncOp) -> int:
    return sum(isinstance(op, tensor.ExpandShapeOp | tensor.CollapseShapeOp) for op in f.walk())


def normalise(f: func.FuncOp) -> None:
    """Expand batch-matmul sandwiches and merge `exp(u - m)`, until neither applies."""
    changed = True
    while changed:
        changed = False
        for op in list(f.body.block.ops):
            if isinstance(op, linalg.GenericOp) and (_expand_sandwich(op) or _merge_exp(op)):
                changed = True
                _erase_dead(f)
                break
    # A head-permuting copy the expansion reads through a slice (timm's `qkv.reshape(B,
    # N, 3, H, D).permute(2, 0, 3, 1, 4)`): folded into the contractions' maps.
    fold_permutations(f)


def _erase_dead(f: func.FuncOp) -> None:
    """Generics, views and empties at function level that nothing reads any more."""
    dead = True
    while dead:
        dead = False
        for op in reversed(list(f.body.block.ops)):
            if isinstance(op, linalg.GenericOp | tensor.ExpandShapeOp | tensor.CollapseShapeOp
                          | tensor.EmptyOp) and not any(r.uses for r in op.results):  # fmt: skip
                op.detach()
                op.erase()
                dead = True


def _pure_dims(amap: AffineMap) -> list[int] | None:
    """The loop dims of a projected-permutation map, or None."""
    if not all(isinstance(e, AffineDimExpr) for e in amap.results):
        return None
    dims = [e.position for e in amap.results if isinstance(e, AffineDimExpr)]
    return dims if len(set(dims)) == len(dims) else None


def _groups(op: tensor.ExpandShapeOp | tensor.CollapseShapeOp) -> list[list[int]]:
    return [[i.value.data for i in g.data] for g in op.reassociation.data]


def _uses_index(op: linalg.GenericOp) -> bool:
    return any(isinstance(o, linalg.IndexOp) for o in op.body.walk())


def _expand_sandwich(g: linalg.GenericOp) -> bool:
    """`expand(contract(collapse(a), collapse(b)))` -> `contract'(a, b)` in the
    expanded loop space of attention's two contractions: a collapse the expansion
    undoes is read through (and a permuting copy behind it folded), another
    operand is viewed expanded."""
    if len(g.results) != 1 or len(g.outputs) != 1 or _uses_index(g):
        return False
    casts = _unary_chain(g.results[0])  # a 16-bit program's truncf of the f32 dot
    uses = list((casts[-1] if casts else g).results[0].uses)
    if len(uses) != 1 or not isinstance(e := uses[0].operation, tensor.ExpandShapeOp):
        return False
    if not (_reaches_row_max(e.result) or any(_is_probabilities(v) for v in g.inputs)):
        return False  # only attention's two contractions: other GEMMs keep their 2-D tiles
    maps = [m.data for m in g.indexing_maps.data]
    out_dims = _pure_dims(maps[-1])
    all_dims = [_pure_dims(m) for m in maps]
    if out_dims is None or any(d is None for d in all_dims):
        return False
    split, new_index = _split_loops(e, out_dims, len(g.iterator_types.data))
    rank = sum(len(v) for v in new_index.values())
    new_dims = [[i for d in dims for i in new_index[d]] for dims in all_dims if dims is not None]
    found = _expanded_operands(g, all_dims, new_dims, split)
    if found is None:
        return False
    inputs, views = found
    t = TensorType(element_type(g.results[0].type), e.result.type.get_shape())
    init = _expanded_init(g.outputs[0], e, t)
    new = _split_generic(g, inputs, init[0], t, rank, new_dims, new_index)
    made = [*views, *init[1], new]
    for cast in casts:  # each cast of the chain in the expanded shape
        made += _expanded_unary(cast, made[-1].results[0])
    Rewriter.insert_op(made, InsertPoint.before(g))
    e.result.replace_all_uses_with(made[-1].results[0])
    for dead in (e, *reversed(casts), g):
        dead.detach()
        dead.erase()
    return True


def _expanded_operands(g: linalg.GenericOp, all_dims, new_dims, split):
    """`g`'s inputs read in the expanded loop space (`new_dims` updated where a
    permuting copy is folded) and the views that makes, or None when the
    probabilities would be read through a view (the softmax and `P V` would then
    be in different shapes: attention would not match)."""
    inputs, views = [], []
    for k, (value, dims) in enumerate(zip(g.inputs, all_dims, strict=False)):
        src, made = _undone_collapse(value, [split.get(d) for d in dims])
        if made and _is_probabilities(value):
            for view in reversed(made):
                view.erase()  # (never inserted: drops its use of the value; users first)
            made = []
            src = _expanded_softmax(value, [split.get(d) for d in dims], views, {})
            if src is None:
                for view in reversed(views):
                    view.erase()  # (never inserted: users first)
                return None
        if src is not value and (perm := _pure_permutation(src)) is not None:
            # The copy the collapse kept from fold-transposes: read its input permuted.
            src, new_dims[k] = src.owner.inputs[0], [new_dims[k][p] for p in perm]
        inputs.append(src)
        views += made
    return inputs, views


def _expanded_softmax(value, sizes, made: list[Operation], memo: dict, depth: int = 16):
    """`value` (the probabilities, left over `B*H` by torch-mlir: nanoGPT's
    attention in bf16) computed in the expanded shape (`sizes`: each dim's split,
    or None): its producer generics, back to the scores' contraction, each run
    over the split loops (fusion by expansion, as `_expand_sandwich` for one op);
    a contraction's operands are read through the collapses the expansion undoes
    (a permuting copy behind one folded) or viewed expanded, as is any operand
    that is not a generic's result. The new ops are appended to `made` (producers
    first), each once (`memo`); None where a producer is not a generic of one
    result with projection maps (then nothing is inserted: the caller erases
    `made`). The old ops stay for any other reader."""
    if all(sz is None or len(sz) == 1 for sz in sizes):
        return value
    key = (value, tuple(tuple(sz) if sz is not None else None for sz in sizes))
    if key not in memo:
        memo[key] = _expanded_generic(value, sizes, made, memo, depth)
    return memo[key]


def _expanded_generic(value, sizes, made: list[Operation], memo: dict, depth: int):
    op = value.owner
    if depth == 0 or not isinstance(op, linalg.GenericOp) or len(op.results) != 1 or \
            _uses_index(op):  # fmt: skip
        return None
    all_dims = [_pure_dims(m.data) for m in op.indexing_maps.data]
    if any(d is None for d in all_dims):
        return None
    split = {all_dims[-1][r]: sz for r, sz in enumerate(sizes) if sz is not None and len(sz) > 1}
    new_index = _loop_index(len(op.iterator_types.data), split)
    rank = sum(len(v) for v in new_index.values())
    new_dims = [[i for d in dims for i in new_index[d]] for dims in all_dims if dims is not None]
    inputs = _expanded_inputs(op, all_dims, new_dims, split, made, memo, depth)
    shape = [x for r, n in enumerate(shape_of(value)) for x in (sizes[r] or [n])]
    t = TensorType(element_type(value.type), shape)
    groups = _split_groups(sizes, shape_of(value))
    fill = _expanded_fill(op.outputs[0], t, groups)
    if fill is None and isinstance(op.outputs[0].owner, tensor.EmptyOp):
        empty = _sized_empty(op.outputs[0], groups, t)
        fill = empty[-1].results[0], empty
    if inputs is None or fill is None:
        for o in reversed(fill[1] if fill is not None else []):
            o.erase()  # (never inserted: an op made and dropped would hold uses)
        return None
    made += fill[1]
    new = _split_generic(op, inputs, fill[0], t, rank, new_dims, new_index)
    made.append(new)
    return new.results[0]


def _loop_index(loops: int, split: dict[int, list[int]]) -> dict[int, list[int]]:
    """The new loop dims of each old one, each split loop becoming len(sizes) loops."""
    new_index: dict[int, list[int]] = {}
    for d in range(loops):
        start = sum(len(v) for v in new_index.values())
        new_index[d] = list(range(start, start + len(split.get(d, [0]))))
    return new_index


def _expanded_inputs(op, all_dims, new_dims, split, made, memo, depth):
    """`op`'s inputs in its expanded loop space (see `_expanded_softmax`), or None."""
    contraction = any(it.data == IteratorType.REDUCTION for it in op.iterator_types.data) and \
        _payload_has(op, arith.MulfOp) and not _payload_has(op, arith.MaximumfOp)  # fmt: skip
    inputs = []
    for k, (v, dims) in enumerate(zip(op.inputs, all_dims, strict=False)):
        vsizes = [split.get(d) for d in dims]
        src, views = _undone_collapse(v, vsizes)
        if views and not contraction and isinstance(v.owner, linalg.GenericOp):
            for view in reversed(views):
                view.erase()  # (never inserted; users first)
            views, src = [], _expanded_softmax(v, vsizes, made, memo, depth - 1)
            if src is None:
                return None
        if src is not v and (perm := _pure_permutation(src)) is not None:
            src, new_dims[k] = src.owner.inputs[0], [new_dims[k][p] for p in perm]
        elif contraction and (through := _through_expanded_copy(src)) is not None:
            ops, perm = through  # nanoGPT's K^T copy, split into heads by a view
            src, new_dims[k] = ops[-1].results[0], [new_dims[k][p] for p in perm]
            views += ops
        made += views
        inputs.append(src)
    return inputs


def _through_expanded_copy(value):
    """For `value = expand_shape(copy(x))`, the copy a pure permutation: the same
    expansion of `x` (each dim of `x` split as the copy's dim it becomes) and the
    permutation reading it (`_pure_permutation`'s convention); else None."""
    e = value.owner
    if not isinstance(e, tensor.ExpandShapeOp) or (perm := _pure_permutation(e.src)) is None:
        return None
    x = e.src.owner.inputs[0]
    groups, out_shape = _groups(e), e.result.type.get_shape()
    new_groups: list[list[int]] = []
    shape: list[int] = []
    expanded_perm: list[int] = []
    for r in perm:
        new_groups.append(list(range(len(shape), len(shape) + len(groups[r]))))
        shape += [out_shape[n] for n in groups[r]]
        expanded_perm += groups[r]
    t = TensorType(element_type(x.type), shape)
    return _sized_expansion(x, new_groups, shape, t), expanded_perm


def _sized_expansion(value: SSAValue, groups: list[list[int]], shape: list[int],
                     t: TensorType) -> list[Operation]:  # fmt: skip
    """An expand_shape of `value` into `t`, the dynamic sizes (one a group: the
    splits here are of static sizes) computed from `value`'s: the ops, the view last."""
    made, sizes = expand_sizes(value, groups, shape)
    return [*made, tensor.ExpandShapeOp(value, sizes, reassociation(groups), shape, t)]


def _sized_empty(like_value: SSAValue, groups: list[list[int]], t: TensorType) -> list[Operation]:
    """A `tensor.empty` of `t`, the expansion by `groups` of `like_value`'s shape, its
    dynamic sizes read from `like_value`: the ops, the empty last."""
    made, sizes = expand_sizes(like_value, groups, list(t.get_shape()))
    return [*made, tensor.EmptyOp(sizes, t)]


def _split_groups(sizes: list[list[int] | None], shape: Sequence[int]) -> list[list[int]]:
    """The reassociation of each dim `r` of `shape` split into `sizes[r]` (None: kept)."""
    groups, at = [], 0
    for r, n in enumerate(shape):
        k = len(sizes[r] or [n])
        groups.append(list(range(at, at + k)))
        at += k
    return groups


def _unary_chain(value) -> list[linalg.GenericOp]:
    """The elementwise generics of one input, identity maps, each the one reader of
    the one before (`truncf` of a dot's f32 result), from `value` on."""
    chain = []
    while len(uses := list(value.uses)) == 1:
        op = uses[0].operation
        if not isinstance(op, linalg.GenericOp) or len(op.inputs) != 1 or len(op.results) != 1 or \
                uses[0].index != 0 or _uses_index(op) or \
                any(it.data != IteratorType.PARALLEL for it in op.iterator_types.data) or \
                any(m.data != AffineMap.identity(m.data.num_dims) for m in op.indexing_maps.data):  # fmt: skip
            break
        chain.append(op)
        value = op.results[0]
    return chain


def _expanded_unary(op: linalg.GenericOp, value) -> list[Operation]:
    """`op` (elementwise, identity maps) applied to `value`, in `value`'s shape."""
    t = TensorType(element_type(op.results[0].type), shape_of(value))
    *sizes, empty = sized_empty(t, like(t, value))
    assert isinstance(empty, tensor.EmptyOp)
    rank = len(shape_of(value))
    new = linalg.GenericOp(
        [value], [empty.tensor], op.body.clone(), [AffineMapAttr(AffineMap.identity(rank))] * 2,
        [IteratorTypeAttr(IteratorType.PARALLEL)] * rank, [t],
    )  # fmt: skip
    new.location = op.location
    new.attributes.update(op.attributes)
    new.results[0].name_hint = op.results[0].name_hint
    return [*sizes, empty, new]


def _split_loops(e: tensor.ExpandShapeOp, out_dims: list[int], loops: int):
    """Each loop dim the output reads split into its expansion group's sizes
    (`split`), and the new loop dims of each old one (`new_index`)."""
    out_shape = e.result.type.get_shape()
    split = {out_dims[r]: [out_shape[i] for i in group] for r, group in enumerate(_groups(e))}
    new_index: dict[int, list[int]] = {}
    for d in range(loops):
        start = sum(len(v) for v in new_index.values())
        new_index[d] = list(range(start, start + len(split.get(d, [0]))))
    return split, new_index


def _undone_collapse(value, sizes: list[list[int] | None]):
    """`value` read with each of its dims split into `sizes` (None: unsplit) and the
    ops making that view: the source of a collapse_shape with exactly those groups,
    else an expand_shape of `value` (a host view)."""
    shape = shape_of(value)
    if all(s is None or len(s) == 1 for s in sizes):
        return value, []
    c = value.owner
    if isinstance(c, tensor.CollapseShapeOp):
        src_shape = list(c.src.type.get_shape())
        wanted = [s if s is not None else [shape[r]] for r, s in enumerate(sizes)]
        if [[src_shape[i] for i in g] for g in _groups(c)] == wanted:
            return c.src, []
        target = [n for part in wanted for n in part]
        groups = collapse_groups(src_shape, target) if all(n >= 0 for n in src_shape) else None
        if groups is not None and len(target) < len(src_shape):  # (a head split's slice: unit dims)
            t = TensorType(element_type(value.type), target)
            view = tensor.CollapseShapeOp(operands=[c.src], result_types=[t],
                                          properties={"reassociation": reassociation(groups)})  # fmt: skip
            return view.result, [view]
    groups, out_shape = [], []
    for r, s in enumerate(sizes):
        part = s if s is not None else [shape[r]]
        groups.append(list(range(len(out_shape), len(out_shape) + len(part))))
        out_shape += part
    t = TensorType(element_type(value.type), out_shape)
    made = _sized_expansion(value, groups, out_shape, t)
    return made[-1].results[0], made


def _pure_permutation(value) -> list[int] | None:
    """For a value copied by a function-level generic from its one input through a
    permutation `p` (`out[x] = in[x[p[0]], x[p[1]], ...]`; the rule is
    `permutations.pure_permutation`'s), `p`; else None."""
    in_map = pure_permutation(value.owner)
    return None if in_map is None else _pure_dims(in_map)


def _generic_users(value) -> list[linalg.GenericOp]:
    return [u.operation for u in value.uses if isinstance(u.operation, linalg.GenericOp)]


def _payload_has(op: Operation, kind: type) -> bool:
    return isinstance(op, linalg.GenericOp) and any(isinstance(o, kind) for o in op.body.walk())


def _reaches_row_max(value, depth: int = 4) -> bool:
    """Does `value` feed, through at most `depth` elementwise ops, a max-reduction?"""
    for user in _generic_users(value):
        reduces = any(it.data == IteratorType.REDUCTION for it in user.iterator_types.data)
        if reduces and _payload_has(user, arith.MaximumfOp):
            return True
        if not reduces and depth > 0 and _reaches_row_max(user.results[0], depth - 1):
            return True
    return False


def _is_probabilities(value) -> bool:
    """Is `value` (through a collapse_shape) `e / l` with `l` a sum of an `exp`?"""
    if isinstance(c := value.owner, tensor.CollapseShapeOp):
        value = c.src
    if isinstance(r := value.owner, linalg.GenericOp) and len(r.inputs) == 1 and \
            _single_op_payload(r, arith.TruncFOp) is not None:  # fmt: skip
        value = r.inputs[0]  # a 16-bit program's truncf(p) before P V
    if _payload_has(sel := value.owner, arith.SelectOp) and len(sel.inputs) in (2, 3):
        value = sel.inputs[-1]  # SDPA's select(all masked, 0, p) (the 0 an input or a constant)
    div = value.owner
    if not _payload_has(div, arith.DivfOp):
        return False
    assert isinstance(div, linalg.GenericOp)
    for v in div.inputs:
        row_sum = v.owner
        if _payload_has(row_sum, arith.AddfOp) and isinstance(row_sum, linalg.GenericOp) and \
                any(_payload_has(x.owner, mathd.ExpOp) for x in row_sum.inputs):  # fmt: skip
            return True
    return False


def _expanded_init(init, e: tensor.ExpandShapeOp, t: TensorType):
    """The output's init in the expanded shape (`t`): a fill of it, or an
    expand_shape view."""
    groups = [[d.value.data for d in g.data] for g in e.reassociation.data]  # pyright: ignore
    fill = _expanded_fill(init, t, groups)
    if fill is not None:
        return fill
    made = _sized_expansion(init, groups, list(t.get_shape()), t)
    return made[-1].results[0], made


def _expanded_fill(init, t: TensorType, groups: list[list[int]]):
    """A fill generic (`init`'s producer) made again in the shape `t` (`init`'s
    expanded by `groups`), or None."""
    fill = init.owner
    if isinstance(fill, linalg.GenericOp) and len(fill.inputs) == 1 and \
            not isinstance(fill.inputs[0].type, TensorType) and \
            isinstance(y := fill.body.block.last_op, linalg.YieldOp) and \
            y.operands[0] is fill.body.block.args[0]:  # fmt: skip
        *sizing, empty = _sized_empty(init, groups, t)
        rank = len(t.get_shape())
        new = linalg.GenericOp(
            [fill.inputs[0]], [empty.results[0]], fill.body.clone(),
            [AffineMapAttr(AffineMap(rank, 0, ())), AffineMapAttr(AffineMap.identity(rank))],
            [IteratorTypeAttr(IteratorType.PARALLEL)] * rank, [t],
        )  # fmt: skip
        return new.results[0], [*sizing, empty, new]
    return None


def _single_op_payload(op: linalg.GenericOp, kind: type | None) -> Operation | None:
    """The one payload op of `op` when it is a `kind` yielded (None: a payload that
    yields its first argument, returned as the yield)."""
    ops = list(op.body.block.ops)
    if kind is None:
        y = ops[0]
        return y if len(ops) == 1 and y.operands[0] is op.body.block.args[0] else None
    if len(ops) == 2 and isinstance(ops[0], kind) and ops[1].operands[0] is ops[0].results[0]:
        return ops[0]
    return None


def _merge_exp(g: linalg.GenericOp) -> bool:
    """A pointwise `exp(x)` reading, through the identity, a pointwise `x = a - b`
    read by nothing else: one op `exp(a - b)`."""
    exp = _single_op_payload(g, mathd.ExpOp)
    if exp is None or exp.operands[0] is not g.body.block.args[0] or len(g.inputs) != 1 or any(
        it.data != IteratorType.PARALLEL for it in g.iterator_types.data
    ):
        return False
    sub_op = g.inputs[0].owner
    ident = AffineMap.identity(len(g.iterator_types.data))
    if not isinstance(sub_op, linalg.GenericOp) or len(sub_op.results) != 1 or \
            len(list(g.inputs[0].uses)) != 1 or _single_op_payload(sub_op, arith.SubfOp) is None or \
            g.indexing_maps.data[0].data != ident or sub_op.indexing_maps.data[-1].data != ident or \
            sub_op.iterator_types != g.iterator_types:  # fmt: skip
        return False
    et = element_type(g.results[0].type)
    n = len(sub_op.inputs)
    sub = _single_op_payload(sub_op, arith.SubfOp)
    assert sub is not None
    if any(v in sub_op.body.block.args[n:] for v in sub.operands):
        return False  # `x - out`: reads its accumulator
    block = Block(arg_types=[a.type for a in sub_op.body.block.args[:n]] + [et])
    mapping = dict(zip(sub_op.body.block.args[:n], block.args[:n], strict=True))
    d = sub.clone(value_mapper=mapping)
    ex = mathd.ExpOp(d.results[0])
    block.add_ops([d, ex, linalg.YieldOp(ex.result)])
    maps = [*sub_op.indexing_maps.data[:n], g.indexing_maps.data[-1]]
    new = linalg.GenericOp(list(sub_op.inputs), list(g.outputs), Region(block), maps,
                           g.iterator_types, [g.results[0].type])  # fmt: skip
    new.location = g.location
    Rewriter.insert_op(new, InsertPoint.before(g))
    g.results[0].replace_all_uses_with(new.results[0])
    for dead in (g, sub_op):
        dead.detach()
        dead.erase()
    return True


def _split_generic(g: linalg.GenericOp, inputs: list[SSAValue], init: SSAValue,
                   t: TensorType, rank: int, new_dims: list[list[int]],
                   new_index: dict[int, list[int]]) -> linalg.GenericOp:  # fmt: skip
    """`g` over its loops split as `new_index` says (`rank` loops), reading `inputs`
    through `new_dims` and writing `init` of type `t`; its payload, location,
    attributes and result name kept."""
    new_maps = [AffineMapAttr(AffineMap(rank, 0, tuple(AffineDimExpr(i) for i in dims)))
                for dims in new_dims]  # fmt: skip
    iterators = [it for d, it in enumerate(g.iterator_types.data) for _ in new_index[d]]
    new = linalg.GenericOp(inputs, [init], g.body.clone(), new_maps, iterators, [t])
    new.location = g.location
    new.attributes.update(g.attributes)
    new.results[0].name_hint = g.results[0].name_hint
    return new
