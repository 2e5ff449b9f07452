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
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import Operation, SSAValue

from tilefuse.analysis.dataflow import (
    CONTRACTION,
    FILL,
    POINTWISE,
    REDUCE,
    Graph,
    Node,
    shared_dims,
)
from tilefuse.ir.structured import combiner_at


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
    output: Node  # o = sum_j p * v


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
    """Payload is `yield exp(u_elem - m_elem)`."""
    if node.kind != POINTWISE or len(node.s.outputs) != 1:
        return False
    block = node.s.payload
    arg = {v: a for v, a in zip(node.s.inputs, block.args, strict=False)}
    if u not in arg or m not in arg:
        return False
    exp = block.last_op.operands[0].owner if block.last_op else None
    if not isinstance(exp, mathd.ExpOp) or not isinstance(sub := exp.operand.owner, arith.SubfOp):
        return False
    return sub.lhs is arg[u] and sub.rhs is arg[m]


def _starts_at_zero(graph: Graph, node: Node) -> bool:
    """Is the reduction's output a fill of 0? (A running sum is rescaled as the
    max grows; a non-zero start would be rescaled with it.)"""
    fill = graph.producer_of(node.s.outputs[0])
    if fill is None or fill.kind != FILL or not fill.s.inputs:
        return False
    const = fill.s.inputs[0].owner
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
    return node.kind == CONTRACTION and isinstance(x.owner, arith.MulfOp) and e_arg in x.owner.operands


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
    if node.kind != POINTWISE or e not in node.s.inputs or row_sum not in node.s.inputs:
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
                for o in p.consumers:
                    chain = [sm.exp_node, p]
                    if o.kind == CONTRACTION and _linear_in(graph, o, p.op.results[0]) and \
                            _same_reduced_dim(graph, sm.max_node, chain, o):  # fmt: skip
                        found.append(Attention(sm, scores, l_node, p, o))
    return found
