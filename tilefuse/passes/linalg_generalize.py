"""
`linalg-generalize`: every structured linalg op becomes `linalg.generic`.

Upstream's interchange form for the rest of the pipeline: named ops (`matmul`,
`fill`, elementwise ops, convolutions, pooling), `reduce`, `broadcast` and
`transpose` are rewritten to the `linalg.generic` with the same loops, indexing
maps and payload, so later passes see one op kind. `linalg.generic` ops are left
as they are.

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
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Operation, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)

from tilefuse.ir.structured import as_structured


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


@dataclass(frozen=True)
class LinalgGeneralizePass(ModulePass):
    """Rewrite all structured linalg ops to `linalg.generic`."""

    name = "linalg-generalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GeneralizePattern(), apply_recursively=False).rewrite_module(op)
