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

```mlir
%p = linalg.generic ... ins(%e, %l) { divf }              // p = e / l
%o = linalg.generic ... ins(%p, %v) { mulf, addf }        // o = p @ v
// becomes
%o2 = linalg.generic ... ins(%e, %v) { mulf, addf }       // o2 = e @ v
%o = linalg.generic ... ins(%o2, %l) { divf }             // o = o2 / l
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp, StringAttr
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Block, Region
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.analysis.dataflow import Graph, build_graph, shared_dims
from tilefuse.analysis.patterns import Attention, find_attention
from tilefuse.ir.structured import element_type

TAG = "tilefuse.attention"


@dataclass(frozen=True)
class FlashAttentionPass(ModulePass):
    """Sink softmax normalisation below P @ V and tag attention for one kernel."""

    name = "flash-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        count = 0
        for f in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            graph = build_graph(f)
            for att in find_attention(graph):
                if TAG in att.output.op.attributes:
                    continue
                rewrite_attention(graph, att, f"attention_{count}")
                count += 1
                graph = build_graph(f)


def rewrite_attention(graph: Graph, att: Attention, tag: str) -> None:
    """Sink `att`'s normalisation and tag its ops."""
    o, p = att.output, att.normalize
    e = att.softmax.exp_node.op.results[0]
    row_sum = att.sum_node.op.results[0]
    # 1. o2 = sum_j e * v: the same contraction reading e instead of p.
    o2 = o.op.clone()
    o2.operands = [e if v is p.op.results[0] else v for v in o2.operands]
    Rewriter.insert_op(o2, InsertPoint.after(o.op))
    # 2. o = o2 / l, l broadcast over o's non-row dims.
    div = _divide(graph, att, o2.results[0], row_sum)
    Rewriter.insert_op([div[0], div[1]], InsertPoint.after(o2))
    o.op.results[0].replace_all_uses_with(div[1].results[0])
    o.op.detach()
    o.op.erase()
    if not p.op.results[0].uses:
        p.op.detach()
        p.op.erase()
    for node in (*att.scores, att.softmax.max_node, att.softmax.exp_node, att.sum_node):
        node.op.attributes[TAG] = StringAttr(tag)
    o2.attributes[TAG] = StringAttr(tag)
    div[1].attributes[TAG] = StringAttr(tag)


def _divide(graph: Graph, att: Attention, num, row_sum):
    """`num / l` with `l` (`row_sum`) indexed by the row dims it shares with `num`."""
    nodes = [att.softmax.max_node, att.softmax.exp_node, att.sum_node, att.normalize, att.output]
    dims = shared_dims(graph, nodes)
    o, s = att.output, att.sum_node
    out_loops = o.s.operand_dims(len(o.s.inputs))
    out_dims = [dims.of[(o.index, d)] for d in out_loops]
    l_dims = [dims.of[(s.index, d)] for d in s.s.operand_dims(len(s.s.inputs))]
    rank = len(out_dims)
    l_map = AffineMap(rank, 0, tuple(AffineDimExpr(out_dims.index(d)) for d in l_dims))
    ident = AffineMap.identity(rank)
    empty = tensor.EmptyOp([], num.type)
    et = element_type(num.type)
    block = Block(arg_types=[et, et, et])
    q = arith.DivfOp(block.args[0], block.args[1])
    block.add_ops([q, linalg.YieldOp(q.result)])
    generic = linalg.GenericOp(
        [num, row_sum], [empty.tensor], Region(block),
        [AffineMapAttr(ident), AffineMapAttr(l_map), AffineMapAttr(ident)],
        [IteratorTypeAttr(IteratorType.PARALLEL)] * rank, [num.type],
    )  # fmt: skip
    generic.location = o.op.location
    return empty, generic
