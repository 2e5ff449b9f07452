"""
Element types as the generated module spells them: Triton (`tl.bfloat16`) in
kernels, torch (`torch.bfloat16`) on the host, and the type each value of a kernel
is computed in.
"""

from __future__ import annotations

from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
)
from xdsl.ir import Attribute, Operation

from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.structured import element_type

TORCH_DTYPE = {Float32Type: "torch.float32", Float16Type: "torch.float16",
               BFloat16Type: "torch.bfloat16", Float64Type: "torch.float64"}  # fmt: skip
TL_DTYPE = {Float32Type: "tl.float32", Float16Type: "tl.float16",
            BFloat16Type: "tl.bfloat16", Float64Type: "tl.float64"}  # fmt: skip
TL_DTYPE_BY_NAME = {"f32": "tl.float32", "f16": "tl.float16", "bf16": "tl.bfloat16",
                    "f64": "tl.float64"}  # fmt: skip
"""The `tl` type of a float named as `ir/dtypes.py` names it (a tile plan's `dot`)."""

INT_WIDTHS = {1: "bool", 8: "int8", 16: "int16", 32: "int32", 64: "int64"}
"""Integer tensors the host hands over: i1 as torch.bool (Triton's int1 pointers)."""


def tl_dtype(t: Attribute) -> str:
    """The Triton type of a tensor's elements (floats, or signless integers)."""
    et = element_type(t)
    if isinstance(et, IntegerType) and et.width.data in INT_WIDTHS:
        return f"tl.int{et.width.data}"
    if type(et) not in TL_DTYPE:
        raise CompileError(f"the Triton backend does not support tensors of element type {et}")
    return TL_DTYPE[type(et)]


def torch_dtype(t: Attribute, at: Operation | None = None) -> str:
    """The torch dtype of a tensor the host allocates (`at`: the op it comes from,
    for the error's location)."""
    et = element_type(t)
    if isinstance(et, IntegerType) and et.width.data in INT_WIDTHS:
        return f"torch.{INT_WIDTHS[et.width.data]}"
    if type(et) not in TORCH_DTYPE:
        message = f"the Triton backend does not support tensors of element type {et} between kernels"
        raise CompileError.at(at, message) if at is not None else CompileError(message)
    return TORCH_DTYPE[type(et)]


def compute_type(t: Attribute) -> str:
    """The `tl` type a value of type `t` (a tensor's or a scalar's) is computed in:
    fp64 for fp64, fp32 for every other float (16-bit values are carried in fp32
    and rounded where the IR truncates), an integer in its own type (index: int64).
    Each value has its own: an f64 value next to f32 ones leaves them f32."""
    et = element_type(t)
    if isinstance(et, Float64Type):
        return "tl.float64"
    if isinstance(et, AnyFloat):
        return "tl.float32"
    if isinstance(et, IndexType):
        return "tl.int64"
    return tl_dtype(et)


def kept_shape(t: Attribute) -> tuple[int, ...]:
    """A tile's block shape in the kernel: unit axes dropped (no reshapes needed)."""
    return tuple(n for n in t.get_shape() if n != 1)

