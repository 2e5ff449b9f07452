"""
`fold-transposes`: a generic that only permutes its input is folded into its readers.

A `linalg.generic` that copies its one input through a permutation (a generalized
`linalg.transpose`) is read by the generics that use its result through the
composed map instead: K^T for Q K^T becomes a permuted load of K inside the
attention kernel, not a copy through HBM. A transpose read as an output (an
accumulator), or returned, stays; once nothing reads it, it and the empty it
wrote into are erased. A transpose read through a static slice or a collapse of
unit dims is moved below the view first, where every reader past it is a generic
(`passes/permutations.py`, shared with propagate-reshapes).

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
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tilefuse.passes.permutations import fold_permutations


@dataclass(frozen=True)
class FoldTransposesPass(ModulePass):
    """Fold pure-permutation generics into the maps of the generics reading them."""

    name = "fold-transposes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_permutations(op)
