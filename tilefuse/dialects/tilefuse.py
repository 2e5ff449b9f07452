"""
The `tilefuse` dialect: what the pipeline adds on top of upstream MLIR.

Upstream ops (`func`, `linalg`, `tensor`, `arith`, `math`, `scf`) carry the
computation. This dialect only marks structure that upstream has no word for:
a fusion group, the unit that becomes one GPU kernel, with the decision that
formed it attached as attributes.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Block, Dialect, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, IsTerminator
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class GroupOp(IRDLOperation):
    """
    A fusion group: a region computed by one kernel.

    The region is isolated from above; its entry block takes one argument per
    input, and its `tilefuse.yield` returns the group's results. The name and the
    fusion decision that formed the group travel as properties.

    ```mlir
    %z = tilefuse.group "fused_kernel_0" ins(%x, %y : tensor<4xf32>, tensor<4xf32>)
        reason "fused pointwise: add + relu" {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>)
             outs(%a : tensor<4xf32>) -> tensor<4xf32>
      tilefuse.yield %s : tensor<4xf32>
    } -> (tensor<4xf32>)
    ```
    """

    name = "tilefuse.group"

    sym_name = prop_def(StringAttr)
    reason = opt_prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())

    assembly_format = (
        "$sym_name `ins` `(` $inputs `:` type($inputs) `)` "
        "(`reason` $reason^)? attr-dict-with-keyword $body `->` `(` type($outputs) `)`"
    )

    def __init__(
        self,
        sym_name: str,
        inputs: Sequence[SSAValue],
        output_types: Sequence[Attribute],
        body: Region,
        reason: str | None = None,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[output_types],
            regions=[body],
            properties={
                "sym_name": StringAttr(sym_name),
                "reason": StringAttr(reason) if reason is not None else None,
            },
        )

    @property
    def entry(self) -> Block:
        """The group's only block."""
        return self.body.block

    def verify_(self) -> None:
        arg_types = tuple(arg.type for arg in self.entry.args)
        input_types = tuple(v.type for v in self.inputs)
        if arg_types != input_types:
            raise VerifyException(
                f"The group's block arguments {list(map(str, arg_types))} must "
                f"match its inputs {list(map(str, input_types))}."
            )
        terminator = self.entry.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("A tilefuse.group must end with tilefuse.yield.")
        yielded = tuple(v.type for v in terminator.values)
        if yielded != tuple(self.result_types):
            raise VerifyException(
                f"The group yields {list(map(str, yielded))} but declares results "
                f"{list(map(str, self.result_types))}."
            )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """
    Ends a `tilefuse.group`, returning its results.

    ```mlir
    tilefuse.yield %a, %b : tensor<4xf32>, tensor<4xf32>
    ```
    """

    name = "tilefuse.yield"

    values = var_operand_def()

    traits = traits_def(IsTerminator())

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), GroupOp):
            raise VerifyException("tilefuse.yield must be inside a tilefuse.group.")


Tilefuse = Dialect("tilefuse", [GroupOp, YieldOp], [])
