"""
`fold-reshape-of-creation`: a reshape of an empty or a fill becomes one of the new shape.

A `tensor.expand_shape` or `tensor.collapse_shape` of a `tensor.empty` or of a
`linalg.fill` views a tensor that exists nowhere outside kernels: it becomes an
empty, or a fill of the same value, of the reshape's result type. The empties and
fills (and any other function-level view) nothing reads afterwards are erased.

```mlir
%e = tensor.empty() : tensor<8xf32>
%f = linalg.fill ins(%zero : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
%v = tensor.expand_shape %f [[0, 1]] output_shape [8, 1] : tensor<8xf32> into tensor<8x1xf32>
// becomes
%e2 = tensor.empty() : tensor<8x1xf32>
%v = linalg.fill ins(%zero : f32) outs(%e2 : tensor<8x1xf32>) -> tensor<8x1xf32>
```

`fold-unit-dims` applies the same patterns (`passes/cleanup.py`) to the views it makes.
With `iotas`, a view of an iota (a generic of no inputs reading its loop indices) is
the iota computed in the viewed shape, as flash-attention applies before fusion-groups.
A static `tensor.extract_slice` of an empty or a fill is one of the slice's shape.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tilefuse.passes.cleanup import erase_dead_views, fold_reshapes_of_creations


@dataclass(frozen=True)
class FoldReshapeOfCreationPass(ModulePass):
    """Fold reshapes of empties and fills into creations of the new shape."""

    name = "fold-reshape-of-creation"

    iotas: bool = False
    """Views of iotas too (`arange`s: computed again in the viewed shape). Off in the
    pipeline's early stage: the stages between fold such views into their readers
    themselves; flash-attention folds what is left before fusion-groups."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_reshapes_of_creations(op, self.iotas)
        erase_dead_views(op)
