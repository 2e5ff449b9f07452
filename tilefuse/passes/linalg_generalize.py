"""
`linalg-generalize`: every structured linalg op becomes `linalg.generic`.

Upstream's interchange form for the rest of the pipeline: named ops (`matmul`,
`fill`, elementwise ops), `reduce`, `broadcast` and `transpose` are rewritten to
the `linalg.generic` with the same loops, indexing maps and payload, so later
passes see one op kind. `linalg.generic` ops are left as they are. First, a
`linalg.softmax` is decomposed, and a reshape of `tensor.empty` or of a
`linalg.fill` becomes an empty or a fill of the new shape. Last, an input read
through a window (a convolution's `oh + kh`) becomes a `tilefuse.window` view
read through a projection (`passes/windows.py`).

```mlir
%r = linalg.reduce ins(%x : tensor<4x8xf32>) outs(%f : tensor<4xf32>) dimensions = [1]
  (%in: f32, %acc: f32) { %s = arith.addf %in, %acc : f32  linalg.yield %s : f32 }
// becomes
%r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                      affine_map<(d0, d1) -> (d0)>],
                     iterator_types = ["parallel", "reduction"]}
     ins(%x : tensor<4x8xf32>) outs(%f : tensor<4xf32>) { ... } -> tensor<4xf32>
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
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
)

from tilefuse.ir.linalg_named import SoftmaxOp
from tilefuse.ir.structured import as_structured, filled
from tilefuse.passes.unit_dims import (
    extracted_scalars_as_operands,
    fold_host_scalars,
    fold_transposes,
    fold_unit_dims,
)
from tilefuse.passes.windows import fold_windows


class GeneralizePattern(RewritePattern):
    """Rewrite any non-generic structured op to `linalg.generic`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, linalg.GenericOp):
            return
        s = as_structured(op)
        if s is None:
            return
        body = Region()
        op_body = s.payload.parent
        assert op_body is not None
        op_body.clone_into(body)
        generic = linalg.GenericOp(
            s.inputs,
            s.outputs,
            body,
            [AffineMapAttr(m) for m in s.maps],
            [IteratorTypeAttr(IteratorType(it)) for it in s.iterators],
            op.result_types,
        )
        generic.location = op.location
        rewriter.replace(op, generic)


class SoftmaxPattern(RewritePattern):
    """`linalg.softmax` as upstream decomposes it: max, exp(x - max), sum, divide."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, SoftmaxOp):
            return
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
                                 [IteratorTypeAttr(it) for it in iterators], [result_type])  # fmt: skip
            g.location = op.location
            ops.append(g)
            return g.results[0]

        def filled_row(value: float) -> SSAValue:
            row_fill, fill_ops = filled(row_type, value)
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

        m = generic([x], [filled_row(float("-inf"))], [every, row], reduce_d, row_type, binary(arith.MaximumfOp))
        e = generic([x, m], [out], [every, row, every], parallel, out.type, exp_of_difference)
        total = generic([e], [filled_row(0.0)], [every, row], reduce_d, row_type, binary(arith.AddfOp))
        r = generic([e, total], [out], [every, row, every], parallel, out.type, binary(arith.DivfOp))
        rewriter.replace(op, ops, [r])


class FoldReshapeOfCreation(RewritePattern):
    """A reshape of `tensor.empty` is an empty of the new shape; a reshape of a
    `linalg.fill` is a fill of the new shape (neither exists outside kernels)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, tensor.ExpandShapeOp | tensor.CollapseShapeOp):
            return
        source = op.src.owner
        empty = tensor.EmptyOp([], op.result.type)
        if isinstance(source, tensor.EmptyOp):
            rewriter.replace(op, [empty], [empty.tensor])
        elif isinstance(source, linalg.FillOp):
            fill = type(source)(list(source.inputs), [empty.tensor], [op.result.type])
            rewriter.replace(op, [empty, fill], [fill.results[0]])


@dataclass(frozen=True)
class LinalgGeneralizePass(ModulePass):
    """Rewrite all structured linalg ops to `linalg.generic` (and decompose softmax)."""

    name = "linalg-generalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_host_scalars(op)
        PatternRewriteWalker(FoldReshapeOfCreation()).rewrite_module(op)
        PatternRewriteWalker(SoftmaxPattern(), apply_recursively=False).rewrite_module(op)
        fold_unit_dims(op)  # constant map results; views of fills and empties fold next
        PatternRewriteWalker(FoldReshapeOfCreation()).rewrite_module(op)
        _erase_dead_views(op)
        PatternRewriteWalker(GeneralizePattern(), apply_recursively=False).rewrite_module(op)
        extracted_scalars_as_operands(op)  # torch-mlir's scalars of 0-d tensors
        fold_transposes(op)
        fold_windows(op)  # convolutions' windowed reads become strided views
        _erase_dead_views(op)


def _erase_dead_views(module: ModuleOp) -> None:
    """Views, fills and empties nothing reads any more (left by the folds)."""
    changed = True
    while changed:
        changed = False
        for o in list(module.walk()):
            dead = isinstance(o, tensor.ExpandShapeOp | tensor.CollapseShapeOp | tensor.EmptyOp
                              | linalg.FillOp) and not any(r.uses for r in o.results)  # fmt: skip
            if dead and isinstance(o.parent_op(), func.FuncOp):
                o.detach()
                o.erase()
                changed = True
