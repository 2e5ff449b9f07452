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
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tilefuse.passes.cleanup import resolve_dims


@dataclass(frozen=True)
class ResolveDimsPass(ModulePass):
    """Read each `tensor.dim` of a computed tensor from the size it was made with."""

    name = "resolve-dims"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        resolve_dims(op)
