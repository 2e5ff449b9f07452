"""
`resolve-dims`: a `tensor.dim` of a computed tensor becomes the size it was made with.

A dynamic program reads sizes with `tensor.dim`, and passes that rewrite it read
them of whatever tensor is at hand (decompose-softmax sizes its exponentials' empty
from the scores it divides, fold-unit-dims from the reduction it expands). A
`tensor.dim` of a tensor a kernel computes would make the kernel write that tensor
out for the host to read its shape: the unnormalised accumulator of an attention,
written to HBM for nothing. The size is already known where the tensor was made
(as upstream's `reifyResultShapes` knows): a linalg op's result has its init's
shape, an empty its size operands, an `expand_shape` its `output_shape`, a slice
keeping a whole dim its source's; a collapse of one dynamic dim with static ones is
that dim. Each `tensor.dim` is followed back so, to the function's arguments or
the sizes computed from them.

```mlir
%e = tensor.empty(%n) : tensor<?x8xf32>
%y = linalg.generic ... outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
%m = tensor.dim %y, %c0 : tensor<?x8xf32>
// %m is %n
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    ModuleOp,
)
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilefuse.ir.structured import made_value, resolved_size
from tilefuse.passes.cleanup import EraseDeadView


class ResolveDim(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.DimOp, rewriter: PatternRewriter) -> None:
        index = op.index.owner
        if not isinstance(index, arith.ConstantOp):
            return
        axis = index.value.value.data  # pyright: ignore[reportAttributeAccessIssue]
        if (made := made_value(op.source, axis)) is not None:
            rewriter.replace(op, [], [made])  # the size it was made with
            return
        at = resolved_size(op.source, axis)
        if isinstance(at, tuple):
            if at == (op.source, axis):
                return
            c = arith.ConstantOp(IntegerAttr(at[1], IndexType()))
            dim = tensor.DimOp(at[0], c.result)
            rewriter.replace(op, [c, dim], [dim.result])
        else:
            rewriter.replace(op, [], [at])


@dataclass(frozen=True)
class ResolveDimsPass(ModulePass):
    """Read each `tensor.dim` of a computed tensor from the size it was made with."""

    name = "resolve-dims"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ResolveDim()).rewrite_module(op)
        # Views read only for their sizes go (else a kernel writes their source out:
        # a dynamic LayerNorm's saved mean and variance), with the size arithmetic.
        # (no general DCE: an unused op a later stage must refuse stays for it to refuse)
        patterns = GreedyRewritePatternApplier([EraseDeadView(), EraseDeadSize()], dce_enabled=False)
        PatternRewriteWalker(patterns, walk_reverse=True).rewrite_module(op)


_SIZE_OPS = (tensor.DimOp, arith.ConstantOp, arith.MuliOp, arith.AddiOp, arith.SubiOp,
             arith.DivUIOp, arith.DivSIOp, arith.FloorDivSIOp, arith.CeilDivUIOp,
             arith.CeilDivSIOp, arith.IndexCastOp)  # fmt: skip


class EraseDeadSize(RewritePattern):
    """A function-level size computation (index arithmetic, `tensor.dim`) nothing reads."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (isinstance(op, _SIZE_OPS) and isinstance(op.parent_op(), func.FuncOp)
                and all(isinstance(r.type, IndexType) and not r.uses for r in op.results)):  # fmt: skip
            rewriter.erase(op)
