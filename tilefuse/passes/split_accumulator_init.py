"""
`split-accumulator-init`: a reduction that sums into a tensor starts from zero, and
the tensor is added after it.

torch-mlir writes a convolution with a bias as the bias broadcast to the whole output
(a `linalg.broadcast`, then a generic copy) that the convolution accumulates into:
the output-sized f32 broadcast is a kernel of its own, written to and read from HBM
(ViT-B/16's patch embedding over 64 images: 38 MB each way). The sum is the same
starting from zero with the initial tensor added after it: an elementwise add that
`fusion-groups` fuses as the reduction's epilogue, its broadcast read as the bias
vector it is (what torch-mlir writes for `nn.Linear`'s bias). In floating point the
bias is added once, after the products, rather than before them: a reassociation of
the f32 sum, as tiling the reduction is already (each K tile's partial sum).

For each function-level generic with a reduction loop and one output whose payload
only accumulates into that output (`yield addf(out, x)`, `x` not reading `out`),
of f32 or f64 (a 16-bit sum would round differently enough to notice) and static
shape, whose initial value is neither a fill of zero nor an uninitialised
`tensor.empty`:

```mlir
%r = linalg.generic {... reduction ...} ins(%x, %w : ...) outs(%bias_b : tensor<2x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
}
// becomes
%z = <a fill of 0.0 : tensor<2x8xf32>>
%r0 = linalg.generic {... reduction ...} ins(%x, %w : ...) outs(%z : tensor<2x8xf32>) {...}
%r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
       ins(%r0, %bias_b : tensor<2x8xf32>, tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    Float32Type,
    Float64Type,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Region
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass

from tilefuse.ir.structured import filled
from tilefuse.passes.cleanup import is_zero_fill


@dataclass(frozen=True)
class SplitAccumulatorInitPass(ModulePass):
    """Sum reductions from zero and add their initial tensor after (module doc)."""

    name = "split-accumulator-init"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for g in [g for g in op.walk() if isinstance(g, linalg.GenericOp) and _splittable(g)]:
            _split(g)


def _splittable(op: linalg.GenericOp) -> bool:
    """`op` sums into an initial tensor worth adding after (module doc)."""
    if not isinstance(op.parent_op(), func.FuncOp) or len(op.outputs) != 1 or len(op.results) != 1:
        return False
    t = op.outputs[0].type
    if not (isinstance(t, TensorType) and isinstance(t.get_element_type(), Float32Type | Float64Type)
            and all(d >= 0 for d in t.get_shape())
            and any(str(i.data) == "reduction" for i in op.iterator_types)):  # fmt: skip
        return False
    init = op.outputs[0]
    if is_zero_fill(init) or isinstance(init.owner, tensor.EmptyOp):
        return False
    block = op.body.block
    acc = block.args[len(op.inputs)]
    yielded = block.last_op
    total = yielded.operands[0].owner if yielded is not None and len(yielded.operands) == 1 else None
    # (the sum the only reader of the accumulator: `acc + acc` or `acc + f(acc)` read it twice)
    return isinstance(total, arith.AddfOp) and [u.operation for u in acc.uses] == [total]


def _split(op: linalg.GenericOp) -> None:
    """Accumulate `op` into zeros; add its former initial tensor after it."""
    init = op.outputs[0]
    t = init.type
    assert isinstance(t, TensorType)
    zero, fill_ops = filled(t, 0.0)
    parent = op.parent_block()
    assert parent is not None
    parent.insert_ops_before(fill_ops, op)
    op.operands = [*op.inputs, zero]
    empty = tensor.EmptyOp((), t)
    et = t.get_element_type()
    body = Block(arg_types=[et, et, et])
    total = arith.AddfOp(body.args[0], body.args[1])
    body.add_ops([total, linalg.YieldOp(total.result)])
    rank = len(t.get_shape())
    identity = AffineMapAttr(AffineMap.identity(rank))
    add = linalg.GenericOp(
        [op.results[0], init], [empty.tensor], Region(body), [identity] * 3,
        [linalg.IteratorTypeAttr(linalg.IteratorType.PARALLEL)] * rank, [t],
    )  # fmt: skip
    for new in (empty, add):
        new.location = op.location  # type: ignore[attr-defined]
    parent.insert_ops_after([empty, add], op)
    op.results[0].replace_uses_with_if(add.results[0], lambda use: use.operation is not add)
