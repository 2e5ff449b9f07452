"""
Cleanup patterns the passes that leave them apply after themselves.

A reshape of a `tensor.empty` or of a `linalg.fill` is not a view of anything that
exists outside kernels, so it becomes an empty or a fill of the new shape
(`FoldReshapeOfCreation`); views, fills and empties at function level that nothing
reads any more are erased (`EraseDeadView`). `fold-reshape-of-creation` runs both on
the input; `fold-unit-dims`, `fold-transposes` and `fold-windows` run them on what they
leave behind.

```mlir
%e = tensor.empty() : tensor<8xf32>
%v = tensor.expand_shape %e [[0, 1]] output_shape [8, 1] : tensor<8xf32> into tensor<8x1xf32>
// becomes
%v = tensor.empty() : tensor<8x1xf32>
```
"""

from __future__ import annotations

from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern


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


_VIEW_OR_CREATION = tensor.ExpandShapeOp | tensor.CollapseShapeOp | tensor.EmptyOp | linalg.FillOp


class EraseDeadView(RewritePattern):
    """A function-level reshape, empty or fill whose results nothing reads."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if (isinstance(op, _VIEW_OR_CREATION) and isinstance(op.parent_op(), func.FuncOp)
                and not any(r.uses for r in op.results)):  # fmt: skip
            rewriter.erase(op)


def fold_reshapes_of_creations(module: ModuleOp) -> None:
    """Apply `FoldReshapeOfCreation` until nothing changes."""
    PatternRewriteWalker(FoldReshapeOfCreation()).rewrite_module(module)


def erase_dead_views(module: ModuleOp) -> None:
    """Apply `EraseDeadView` until nothing changes (a dead fill's empty dies with it)."""
    PatternRewriteWalker(EraseDeadView()).rewrite_module(module)
