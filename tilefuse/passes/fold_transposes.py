"""
`fold-transposes`: a generic that only permutes its input is folded into its readers.

A `linalg.generic` that copies its one input through a permutation (a generalized
`linalg.transpose`) is read by the generics that use its result through the
composed map instead: K^T for Q K^T becomes a permuted load of K inside the
attention kernel, not a copy through HBM. A transpose read as an output (an
accumulator), or returned, stays; once nothing reads it, it and the empty it
wrote into are erased.

```mlir
%kt = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>,
                                       affine_map<(d0, d1) -> (d0, d1)>], ...}
        ins(%k : tensor<8x4xf32>) outs(%e : tensor<4x8xf32>) { linalg.yield %in }
%s = linalg.generic {indexing_maps = [#q, affine_map<(d0, d1, d2) -> (d2, d1)>, #s], ...}
       ins(%q, %kt : tensor<8x4xf32>, tensor<4x8xf32>) ...
// becomes
%s = linalg.generic {indexing_maps = [#q, affine_map<(d0, d1, d2) -> (d1, d2)>, #s], ...}
       ins(%q, %k : tensor<8x4xf32>, tensor<8x4xf32>) ...
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, ModuleOp, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilefuse.passes.cleanup import erase_dead_views


@dataclass(frozen=True)
class FoldTransposesPass(ModulePass):
    """Fold pure-permutation generics into the maps of the generics reading them."""

    name = "fold-transposes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        walker = PatternRewriteWalker(FoldTransposeIntoReaders(), apply_recursively=False)
        walker.rewrite_module(op)
        erase_dead_views(op)


class FoldTransposeIntoReaders(RewritePattern):
    """A function-level `linalg.generic` that only permutes its input (a
    generalized `linalg.transpose`) is folded into the generics reading its
    result as an input: they read its input through the composed map instead."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: linalg.GenericOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp):
            return
        permutation = _pure_permutation(op)
        if permutation is None:
            return
        for use in list(op.results[0].uses):
            reader = use.operation
            if not isinstance(reader, linalg.GenericOp) or use.index >= len(reader.inputs):
                continue  # read as an output (an accumulator): keep the copy
            maps = [m.data for m in reader.indexing_maps.data]
            maps[use.index] = permutation.compose(maps[use.index])
            operands = list(reader.operands)
            operands[use.index] = op.inputs[0]
            reader.operands = operands
            reader.properties["indexing_maps"] = ArrayAttr([AffineMapAttr(m) for m in maps])
            rewriter.notify_op_modified(reader)
        if not op.results[0].uses:
            rewriter.erase(op)


def _pure_permutation(op: linalg.GenericOp) -> AffineMap | None:
    """The input map of a generic that copies its one input through a
    permutation into an identity-mapped output of the same type; else None."""
    if len(op.inputs) != 1 or len(op.outputs) != 1 or not isinstance(op.inputs[0].type, TensorType):
        return None
    in_map, out_map = (m.data for m in op.indexing_maps.data)
    block = op.body.block
    last = block.last_op
    if (not isinstance(last, linalg.YieldOp) or last is not block.first_op
            or last.operands[0] is not block.args[0]
            or out_map != AffineMap.identity(out_map.num_dims)
            or sorted(str(r) for r in in_map.results) != sorted(str(r) for r in out_map.results)
            or len(in_map.results) != in_map.num_dims
            or op.inputs[0].type.get_element_type() != op.outputs[0].type.get_element_type()):  # fmt: skip
        return None
    if any(str(i.data) != "parallel" for i in op.iterator_types):
        return None
    return in_map
