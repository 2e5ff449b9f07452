"""
Softmax structure in the dataflow graph: what online softmax and FlashAttention need.

`find_online_softmax(graph)` finds, for a max-reduction `m = max_j u` (init
`-inf`), the exponential `e = exp(u - m)` and the additive reductions over the
same dim `j` (and only `j`) that are linear in `e` and start from 0: `l = sum_j e`
and contractions `o = sum_j e * w`. Such reductions can run in one pass over `j` with a running
max (seed 003):

    m' = max(m, max_j u)      c = exp(m - m')
    l' = l * c + sum_j exp(u - m')        o' = o * c + sum_j exp(u - m') * w

`find_attention(graph)` finds softmax(Q K^T * s) V: an online softmax whose
normalisation `p = e / l` feeds a contraction over `j`, with `u` produced by a
contraction over another dim (through any elementwise ops such as the scale).
A 16-bit program rounds `p` before `P V` (`truncf`, a bf16 factor of a dot that
accumulates in f32): the contraction reads `p` through that rounding.

After flash-attention, the contraction `sum_j e * v` of a 16-bit program reads
`e` through its rounding (`truncf(e)`, tagged `tilefuse.attention` by the pass,
which states the rule: docs/ARCHITECTURE.md, "roundings a fused kernel moves"):
`find_online_softmax` counts it as linear in `e`, so the kernel rounds
`exp(u - m)` against the running max, as FlashAttention does.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineMap

from tilefuse.analysis.dataflow import (
    CONTRACTION,
    FILL,
    POINTWISE,
    REDUCE,
    Graph,
    Node,
    product_operand,
    shared_dims,
)
from tilefuse.ir.constants import constant_array, is_splat
from tilefuse.ir.structured import cmpf_predicate, combiner_at

ATTENTION_TAG = "tilefuse.attention"
"""The attribute flash-attention tags an attention's ops with (one kernel)."""


@dataclass(frozen=True)
class OnlineSoftmax:
    """A max-reduction, its `exp(u - max)`, and the reductions linear in it."""

    max_node: Node
    exp_node: Node
    linear: tuple[Node, ...]

    @property
    def nodes(self) -> tuple[Node, ...]:
        return (self.max_node, self.exp_node, *self.linear)


@dataclass(frozen=True)
class Attention:
    """softmax(u) @ V where u comes from a contraction: FlashAttention's shape."""

    softmax: OnlineSoftmax
    scores: tuple[Node, ...]  # the contraction producing u and the ops after it
    sum_node: Node  # l = sum_j e
    normalize: Node  # p = e / l
    output: Node  # o = sum_j p * v (or sum_j q * v, or sum_j truncf(p) * v)
    zero_rows: Node | None = None  # q = select(all_j(u == -inf), 0, p): SDPA's masked rows
    rounding: Node | None = None  # truncf(p) (or truncf(q)): a 16-bit program's P before P V


def _combiner(node: Node) -> tuple[Operation, SSAValue] | None:
    """`comb(x, acc)` ending the payload of a single-output reduction."""
    block = node.s.payload
    if len(node.s.outputs) != 1 or block.last_op is None:
        return None
    return combiner_at(block.args[len(node.s.inputs)], block.last_op.operands[0])


def _is_max_of_input(node: Node) -> bool:
    found = _combiner(node)
    if node.kind != REDUCE or found is None or len(node.s.reduction_dims) != 1:
        return False
    comb, x = found
    return isinstance(comb, arith.MaximumfOp | arith.MaxnumfOp) and x is node.s.payload.args[0]


def _is_exp_of_difference(node: Node, u: SSAValue, m: SSAValue) -> bool:
    """Payload is `yield exp(u_elem - m_elem)`, or `exp(u_elem - guard(m_elem))`
    with `guard(m) = select(m == -inf, 0, m)`: what the online loop computes anyway
    (a row all -inf so far uses 0 for its max), written out by flash-attention
    when a program reads the fully masked rows."""
    if node.kind != POINTWISE or len(node.s.outputs) != 1:
        return False
    block = node.s.payload
    arg = {v: a for v, a in zip(node.s.inputs, block.args, strict=False)}
    if u not in arg or m not in arg:
        return False
    exp = block.last_op.operands[0].owner if block.last_op else None
    if not isinstance(exp, mathd.ExpOp) or not isinstance(sub := exp.operand.owner, arith.SubfOp):
        return False
    return sub.lhs is arg[u] and (sub.rhs is arg[m] or is_neg_inf_guard(sub.rhs, arg[m]))


def is_neg_inf_guard(value: SSAValue, m: SSAValue) -> bool:
    """Is `value` `select(m == -inf, 0, m)`?"""
    sel = value.owner
    if not isinstance(sel, arith.SelectOp) or sel.rhs is not m or not _is_float_const(sel.lhs, 0.0):
        return False
    cmp = sel.cond.owner
    return (isinstance(cmp, arith.CmpfOp) and cmpf_predicate(cmp) == "oeq"
            and cmp.lhs is m and _is_float_const(cmp.rhs, float("-inf")))  # fmt: skip


def _is_float_const(value: SSAValue, x: float) -> bool:
    c = value.owner
    return (isinstance(c, arith.ConstantOp) and isinstance(c.value, FloatAttr)
            and c.value.value.data == x)  # fmt: skip


def _fill_constant(fill: Node | None) -> arith.ConstantOp | None:
    """The constant a fill writes: its scalar input's, or the one its payload yields
    (a splat constant's element, put there by scalar-operands)."""
    if fill is None or fill.kind != FILL:
        return None
    if fill.s.inputs:
        owner = fill.s.inputs[0].owner
    else:
        last = fill.s.payload.last_op
        owner = last.operands[0].owner if last is not None and last.operands else None
    return owner if isinstance(owner, arith.ConstantOp) else None


def _starts_at_zero(graph: Graph, node: Node) -> bool:
    """Is the reduction's output a fill of 0? (A running sum is rescaled as the
    max grows; a non-zero start would be rescaled with it.)"""
    const = _fill_constant(graph.producer_of(node.s.outputs[0]))
    return (isinstance(const, arith.ConstantOp) and isinstance(const.value, FloatAttr)
            and const.value.value.data == 0.0)  # fmt: skip


def _linear_in(graph: Graph, node: Node, e: SSAValue) -> bool:
    """sum_j e, or a contraction with e as one factor, starting from 0."""
    if e not in node.s.inputs or not _starts_at_zero(graph, node):
        return False
    e_arg = node.s.payload.args[list(node.s.inputs).index(e)]
    found = _combiner(node)
    if found is None or not isinstance(found[0], arith.AddfOp):
        return False
    x = found[1]
    if node.kind == REDUCE:
        return x is e_arg
    return node.kind == CONTRACTION and isinstance(x.owner, arith.MulfOp) and \
        e_arg in [product_operand(v) for v in x.owner.operands]  # fmt: skip


def rounded_input(node: Node) -> SSAValue | None:
    """For `r = truncf(x)` elementwise (one input, one output, identity maps, the
    payload one `arith.truncf` of the input), `x`; else None."""
    s = node.s
    if node.kind != POINTWISE or len(s.inputs) != 1 or len(s.outputs) != 1 or \
            any(m != AffineMap.identity(s.num_loops) for m in s.maps):  # fmt: skip
        return None
    ops = list(s.payload.ops)
    if len(ops) != 2 or not isinstance(ops[0], arith.TruncFOp) or ops[0].input is not s.payload.args[0] \
            or ops[1].operands[0] is not ops[0].result:  # fmt: skip
        return None
    return s.inputs[0]


def _accumulates_in(node: Node, value: SSAValue) -> bool:
    """Does the contraction `node` accumulate in `value`'s element type (a rounded
    16-bit factor of a dot whose sum is kept in f32, as the unrounded one was)?"""
    return node.s.outputs[0].type.get_element_type() == value.type.get_element_type()


def _rounded_readers(node: Node, tagged: bool) -> list[tuple[Node, Node]]:
    """`(r, c)` for each `r = truncf(node's result)` among `node`'s readers and each
    contraction `c` reading `r` and accumulating in the unrounded type; with
    `tagged`, only roundings flash-attention tagged."""
    found = []
    for r in node.consumers:
        if rounded_input(r) is not node.op.results[0] or (tagged and ATTENTION_TAG not in r.op.attributes):
            continue
        found += [(r, c) for c in r.consumers
                  if c.kind == CONTRACTION and _accumulates_in(c, node.op.results[0])]  # fmt: skip
    return found


def find_online_softmax(graph: Graph) -> list[OnlineSoftmax]:
    """Every max-reduction with an `exp(u - max)` and reductions linear in it."""
    found = []
    for a in graph.nodes:
        if not _is_max_of_input(a):
            continue
        u, m = a.s.inputs[0], a.op.results[0]
        for e in a.consumers:
            if not _is_exp_of_difference(e, u, m):
                continue
            linear = tuple(
                r for r in e.consumers
                if _linear_in(graph, r, e.op.results[0]) and _same_reduced_dim(graph, a, [e], r)
            ) + tuple(
                c for r, c in _rounded_readers(e, tagged=True)
                if _linear_in(graph, c, r.op.results[0]) and _same_reduced_dim(graph, a, [e, r], c)
            )  # fmt: skip
            if linear:
                found.append(OnlineSoftmax(a, e, linear))
    return found


def _same_reduced_dim(graph: Graph, a: Node, chain: list[Node], r: Node) -> bool:
    """Does `r` reduce over the dim `a` reduces, and only over it (dims linked
    through `chain`)? A sum over j and the rows too mixes rows whose maxima
    differ: no single rescale applies to it."""
    dims = shared_dims(graph, [a, *chain, r])
    (ja,) = a.s.reduction_dims
    reduced = {dims.of[(r.index, d)] for d in r.s.reduction_dims}
    return reduced == {dims.of[(a.index, ja)]}


def _is_division_by(node: Node, e: SSAValue, row_sum: SSAValue) -> bool:
    """`p = e / l`, `p` laid out as `e` (read through the map it is written with:
    flash-attention reads `e` where the program reads `p`)."""
    if node.kind != POINTWISE or e not in node.s.inputs or row_sum not in node.s.inputs:
        return False
    if node.s.input_maps[node.s.inputs.index(e)] != node.s.output_maps[0] or \
            node.s.outputs[0].type != e.type:  # fmt: skip
        return False
    block = node.s.payload
    div = block.last_op.operands[0].owner if block.last_op else None
    args = dict(zip(node.s.inputs, block.args, strict=False))
    return isinstance(div, arith.DivfOp) and div.lhs is args[e] and div.rhs is args[row_sum]


def _score_chain(u_node: Node | None, depth: int = 8) -> tuple[Node, ...] | None:
    """The contraction producing `u` and the elementwise ops after it (a scale, a
    mask added or selected): exactly one producer of each op leads back to a
    contraction; the others (a mask, a bias) are read as they are."""
    if u_node is None or depth == 0:
        return None
    if u_node.kind == CONTRACTION:
        return (u_node,)
    if u_node.kind != POINTWISE:
        return None
    chains = [c for p in u_node.producers if p.kind != FILL
              if (c := _score_chain(p, depth - 1)) is not None]  # fmt: skip
    return (*chains[0], u_node) if len(chains) == 1 else None


def find_attention(graph: Graph) -> list[Attention]:
    """softmax(contraction) @ V over the softmax dim, with an explicit normalisation."""
    found = []
    for sm in find_online_softmax(graph):
        e = sm.exp_node.op.results[0]
        sums = [r for r in sm.linear if r.kind == REDUCE]
        if not sums:
            continue
        scores = _score_chain(graph.producer_of(sm.max_node.s.inputs[0]))
        if scores is None:
            continue
        for l_node in sums:
            row_sum = l_node.op.results[0]
            for p in sm.exp_node.consumers:
                if not _is_division_by(p, e, row_sum):
                    continue
                reads = [(p, None)] + [(q, q) for q in p.consumers if _zeroes_masked_rows(graph, q, p, sm)]
                for probs, q in reads:
                    chain = [sm.exp_node, p] + ([q] if q is not None else [])
                    readers = [(None, o) for o in probs.consumers] + _rounded_readers(probs, tagged=False)
                    for r, o in readers:
                        read = (r or probs).op.results[0]
                        if o.kind == CONTRACTION and _linear_in(graph, o, read) and \
                                _same_reduced_dim(graph, sm.max_node, chain + ([r] if r else []), o):  # fmt: skip
                            found.append(Attention(sm, scores, l_node, p, o, q, r))
    return found


def _zeroes_masked_rows(graph: Graph, q: Node, p: Node, sm: OnlineSoftmax) -> bool:
    """Is `q` `select(all_j(u == -inf), 0, p)` (torch-mlir's SDPA: rows whose every
    score is masked get zero probabilities), `u` the softmax's input, with `e`, `l`
    and `p` read by nothing else (flash-attention guards `e` for those rows)?"""
    # The zero is a third input (a constant tensor) or, after scalar-operands, a
    # constant in the payload: `select(%all, %zero, %p)`.
    n = len(q.s.inputs)
    if q.kind != POINTWISE or n not in (2, 3) or p.op.results[0] is not q.s.inputs[-1]:
        return False
    block = q.s.payload
    sel = block.last_op.operands[0].owner if block.last_op else None
    if not isinstance(sel, arith.SelectOp) or sel.cond is not block.args[0] or sel.rhs is not block.args[n - 1]:
        return False
    zero = q.s.inputs[1] if n == 3 and sel.lhs is block.args[1] else sel.lhs if n == 2 else None
    if zero is None or not _is_zero_tensor(zero):
        return False
    c = graph.producer_of(q.s.inputs[0])
    sums = [r for r in sm.linear if r.kind == REDUCE]
    if c is None or not _all_neg_inf(graph, c, sm) or \
            not _only_read_by(sm.exp_node, [p, *sums]) or not _only_read_by(p, [q]) or \
            not all(_only_read_by(r, [p]) for r in sums):  # fmt: skip
        return False  # the guard flash-attention puts on e changes what else reads them
    # e, p and q in one loop space (identity maps), q reading c's row as e reads m's.
    e = sm.exp_node
    ident = AffineMap.identity(e.s.num_loops)
    e_m_map = e.s.input_maps[e.s.inputs.index(sm.max_node.op.results[0])]
    p_e_map = p.s.input_maps[p.s.inputs.index(e.op.results[0])]
    return all(m == ident for m in (e.s.output_maps[0], p_e_map, p.s.output_maps[0],
                                    q.s.input_maps[-1], q.s.output_maps[0])) and \
        q.s.input_maps[0] == e_m_map  # fmt: skip


def _only_read_by(node: Node, readers: list[Node]) -> bool:
    """Is every use of `node`'s results (not only its edges in the graph: a return,
    a view) by one of `readers`' ops?"""
    ops = {r.op for r in readers}
    return all(u.operation in ops for r in node.op.results for u in r.uses)


def _all_neg_inf(graph: Graph, c: Node, sm: OnlineSoftmax) -> bool:
    """`c = and_j (u == -inf)` from `true`, over the max's dim, `u` the max's input
    (compared as it is or widened: widening keeps -inf)."""
    a = sm.max_node
    if c.kind != REDUCE or len(c.s.inputs) != 1 or c.s.maps != a.s.maps:
        return False
    w = graph.producer_of(c.s.inputs[0])
    compared = c if c.s.inputs == a.s.inputs else w  # the compare in the and, or before it
    if compared is None or compared.s.inputs != a.s.inputs:
        return False
    if compared is w and (w.kind != POINTWISE or len(w.s.outputs) != 1 or
                          any(m != AffineMap.identity(w.s.num_loops) for m in w.s.maps)):  # fmt: skip
        return False
    const = _fill_constant(graph.producer_of(c.s.outputs[0]))
    if not isinstance(const, arith.ConstantOp) or not isinstance(const.value, IntegerAttr) or \
            const.value.value.data not in (1, -1):  # fmt: skip
        return False
    found = _combiner(c)
    if found is None or not isinstance(found[0], arith.AndIOp):
        return False
    if compared is w:
        if found[1] is not c.s.payload.args[0]:
            return False
        block = w.s.payload
        cmp = block.last_op.operands[0].owner if block.last_op else None
    else:
        cmp = found[1].owner
    if not isinstance(cmp, arith.CmpfOp) or cmpf_predicate(cmp) != "oeq":
        return False
    x = cmp.lhs
    if isinstance(x.owner, arith.ExtFOp):
        x = x.owner.input
    return x is compared.s.payload.args[0] and _is_float_const(cmp.rhs, float("-inf"))


def _is_zero_tensor(value: SSAValue) -> bool:
    """A constant tensor (or scalar) of zeros."""
    c = value.owner
    if not isinstance(c, arith.ConstantOp):
        return False
    if isinstance(c.value, FloatAttr):
        return c.value.value.data == 0.0
    return isinstance(c.value, DenseIntOrFPElementsAttr) and is_splat(c) and \
        float(constant_array(c).flat[0]) == 0.0
