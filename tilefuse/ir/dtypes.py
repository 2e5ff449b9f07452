"""
Element types by name: the one table of what the compiler calls each element type.

MLIR spells an element type `f32`, `bf16`, `i1`; the cost tables, reports and the
`#tilefuse.cost` / `#tilefuse.tile_plan` attributes use the same spelling, and this is
where it is read off a type:

```python
dtype_name(TensorType(bf16, [4, 8]))   # "bf16"
dtype_bytes(TensorType(bf16, [4, 8]))  # 2
torch_float_name("bfloat16")           # "bf16" (torch's name of the dtype)
```

The oracle (`oracle/reference.py`) and the Triton printer keep their own tables on
purpose (numpy and Triton spellings); this one is the compiler's.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute


@dataclass(frozen=True)
class DType:
    """One element type: its MLIR name, its storage bytes and torch's name of it."""

    name: str
    bytes: int
    torch: str


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("f64", 8, "float64"), DType("f32", 4, "float32"), DType("f16", 2, "float16"),
        DType("bf16", 2, "bfloat16"), DType("i64", 8, "int64"), DType("i32", 4, "int32"),
        DType("i16", 2, "int16"), DType("i8", 1, "int8"), DType("i1", 1, "bool"),
    )
}  # fmt: skip
"""The element types tilefuse compiles, by MLIR name."""

FLOATS = ("f64", "f32", "f16", "bf16")
"""The float element types (what the cost tables have peaks for)."""


def _element(t: Attribute) -> Attribute:
    return t.get_element_type() if isinstance(t, TensorType) else t


def dtype_name(t: Attribute) -> str:
    """The MLIR name of a tensor's (or a scalar type's) element type: "bf16", "i32"."""
    return str(_element(t))


def dtype_bytes(t: Attribute) -> int:
    """Bytes per element of a tensor (or scalar) type; 4 for a type without a width."""
    known = DTYPES.get(dtype_name(t))
    if known is not None:
        return known.bytes
    return max(1, int(getattr(_element(t), "bitwidth", 32)) // 8)


def float_name(t: Attribute, default: str = "f32") -> str:
    """A float element type's name as the cost tables spell it, `default` for others."""
    name = dtype_name(t)
    return name if name in FLOATS else default


def torch_float_name(torch_name: str, default: str = "f32") -> str:
    """torch's name of a float dtype ("bfloat16", "torch.float16") as the tables spell it."""
    name = torch_name.removeprefix("torch.")
    return next((d.name for d in DTYPES.values() if d.torch == name and d.name in FLOATS),
                default)  # fmt: skip
