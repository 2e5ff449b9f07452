"""
Upstream `arith` ops that xDSL 0.75 does not define.

`arith.remf` (the remainder of a / b with the sign of a, C's fmod) is what
torch-mlir prints for `torch.fmod` and inside `torch.remainder`. `ARITH` is
xDSL's dialect with it added; `universe.py` loads it in place of xDSL's.
"""

from __future__ import annotations

from xdsl.dialects.arith import Arith, FloatingPointLikeBinaryOperation
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure


@irdl_op_definition
class RemFOp(FloatingPointLikeBinaryOperation):
    """`arith.remf`: a - b * trunc(a / b), exactly (the sign of a; NaN when b is
    0 or a is infinite)."""

    name = "arith.remf"

    traits = traits_def(Pure())


ARITH = Dialect("arith", [*Arith.operations, RemFOp], [*Arith.attributes])
