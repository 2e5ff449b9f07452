"""
`decompose-softmax`: `linalg.softmax` becomes the four generics upstream decomposes it to.

Max along the dimension (from -inf), `exp(x - max)`, the sum of that (from 0), and the
division by the sum, each a `linalg.generic` over the op's loops, so fusion sees a
softmax as any other chain of reductions and elementwise ops.

```mlir
%r = linalg.softmax dimension(1) ins(%x : tensor<4x10xf32>) outs(%o : tensor<4x10xf32>)
       -> tensor<4x10xf32>
// becomes
%m = linalg.generic {... ["parallel", "reduction"]} ins(%x) outs(%neg_inf_fill) { maximumf }
%e = linalg.generic {... ["parallel", "parallel"]} ins(%x, %m) outs(%o) { subf, math.exp }
%s = linalg.generic {... ["parallel", "reduction"]} ins(%e) outs(%zero_fill) { addf }
%r = linalg.generic {... ["parallel", "parallel"]} ins(%e, %s) outs(%o) { divf }
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilefuse.ir.linalg_named import SoftmaxOp
from tilefuse.ir.structured import filled


class SoftmaxPattern(RewritePattern):
    """`linalg.softmax` as upstream decomposes it: max, exp(x - max), sum, divide."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SoftmaxOp, rewriter: PatternRewriter) -> None:
        x, out = op.input, op.output
        shape = list(x.type.get_shape())
        n, d = len(shape), op.dimension.value.data
        et = x.type.get_element_type()
        kept = [i for i in range(n) if i != d]
        row_type = TensorType(et, [shape[i] for i in kept])
        every, row = AffineMap.identity(n), AffineMap(n, 0, tuple(AffineDimExpr(i) for i in kept))
        reduce_d = [IteratorType.REDUCTION if i == d else IteratorType.PARALLEL for i in range(n)]
        parallel = [IteratorType.PARALLEL] * n
        ops: list[Operation] = []

        def generic(ins, outs, maps, iterators, result_type, payload) -> SSAValue:
            """A linalg.generic; `payload(block_args)` returns (ops, yielded value)."""
            block = Block(arg_types=[et] * (len(ins) + 1))
            body_ops, value = payload(*block.args)
            block.add_ops([*body_ops, linalg.YieldOp(value)])
            g = linalg.GenericOp(ins, outs, Region(block), [AffineMapAttr(m) for m in maps],
                                 [IteratorTypeAttr(it) for it in iterators],
                                 [result_type])  # fmt: skip
            g.location = op.location
            ops.append(g)
            return g.results[0]

        def filled_row(value: float) -> SSAValue:
            sizes = [(x, i) for i in kept if shape[i] < 0]
            row_fill, fill_ops = filled(row_type, value, sizes)
            for o in fill_ops:
                o.location = op.location
            ops.extend(fill_ops)
            return row_fill

        def binary(op_class):
            def payload(a, b, _=None):
                o = op_class(a, b)
                return [o], o.results[0]

            return payload

        def exp_of_difference(v, mx, _):
            sub = arith.SubfOp(v, mx)
            exp = mathd.ExpOp(sub.result)
            return [sub, exp], exp.result

        m = generic([x], [filled_row(float("-inf"))], [every, row], reduce_d, row_type,
                    binary(arith.MaximumfOp))  # fmt: skip
        e = generic([x, m], [out], [every, row, every], parallel, out.type, exp_of_difference)
        total = generic([e], [filled_row(0.0)], [every, row], reduce_d, row_type,
                        binary(arith.AddfOp))  # fmt: skip
        r = generic([e, total], [out], [every, row, every], parallel, out.type,
                    binary(arith.DivfOp))  # fmt: skip
        rewriter.replace(op, ops, [r])


@dataclass(frozen=True)
class DecomposeSoftmaxPass(ModulePass):
    """Decompose every `linalg.softmax` into max, exp(x - max), sum and divide generics."""

    name = "decompose-softmax"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(SoftmaxPattern(), apply_recursively=False).rewrite_module(op)
