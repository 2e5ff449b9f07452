"""
Re-specialising a program to other sizes and element types.

The samples are valid MLIR at small test sizes. A header names each tensor
dimension size and the storage element type, so tools can rebuild the same
program at benchmark sizes without keeping copies:

```mlir
// row softmax
// tilefuse.dims: M=37 N=300
// tilefuse.dtype: f32
  %inv_n = arith.constant 3.333333e-03 : f32  // tilefuse.expr: 1/N
```

`specialize(text, dims={"N": 8192}, dtype="bf16")` rewrites every matching size
inside `tensor<...>` types (sizes within one file are distinct, so the mapping
is unambiguous), recomputes constants marked `tilefuse.expr`, and swaps the
element type. Files without a header pass through unchanged.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass

import numpy as np

from tilefuse.frontend.resources import split_resources

DIMS_RE = re.compile(r"^//\s*tilefuse\.dims:(.*)$", re.MULTILINE)
DTYPE_RE = re.compile(r"^//\s*tilefuse\.dtype:\s*(\w+)\s*$", re.MULTILINE)
TENSOR_RE = re.compile(r"tensor<([^>]*)>")
EXPR_RE = re.compile(
    r"arith\.constant\s+(\S+)\s*:\s*(\w+)(\s*//\s*tilefuse\.expr:\s*(.+))$", re.MULTILINE
)
HEX_RE = re.compile(r"\b(0x[0-9A-Fa-f]+)(\s*:\s*)(\w+)\b")
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")


class SpecializeError(ValueError):
    """A header or a requested re-specialisation that does not make sense."""


@dataclass(frozen=True)
class Header:
    """What a program's header declares."""

    dims: dict[str, int]
    dtype: str | None


def read_header(text: str) -> Header:
    """Parse the `tilefuse.dims` / `tilefuse.dtype` header lines, if any."""
    dims: dict[str, int] = {}
    if m := DIMS_RE.search(text):
        for item in m.group(1).split():
            name, _, value = item.partition("=")
            if not value.isdigit():
                raise SpecializeError(f"Malformed dimension '{item}' in tilefuse.dims.")
            dims[name] = int(value)
    sizes = list(dims.values())
    if len(set(sizes)) != len(sizes):
        raise SpecializeError(
            f"tilefuse.dims sizes must be distinct to be re-specialisable: {dims}."
        )
    dtype = m.group(1) if (m := DTYPE_RE.search(text)) else None
    return Header(dims, dtype)


def specialize(
    text: str, dims: dict[str, int] | None = None, dtype: str | None = None
) -> str:
    """Rewrite `text` for new dimension sizes and/or a new storage type (its
    `{-# dialect_resources #-}` section, blobs of bytes, left as it is)."""
    body, section, _ = split_resources(text)
    if section is not None:
        return specialize(body, dims, dtype) + text[len(body) :]
    header = read_header(text)
    dims = dims or {}
    if unknown := set(dims) - set(header.dims):
        raise SpecializeError(
            f"Unknown dimension(s) {sorted(unknown)}; the program declares "
            f"{sorted(header.dims) or 'none'} in its tilefuse.dims header."
        )
    new_dims = {**header.dims, **dims}
    if dims:
        text = _resize(text, header.dims, new_dims)
    text = _recompute_constants(text, new_dims)
    if dtype is not None and dtype != header.dtype:
        if header.dtype is None:
            raise SpecializeError("The program has no tilefuse.dtype header to replace.")
        if dtype not in FLOAT_TYPES:
            raise SpecializeError(f"Unsupported element type '{dtype}'.")
        text = _retype(text, header.dtype, dtype)
    return text


def _resize(text: str, old: dict[str, int], new: dict[str, int]) -> str:
    by_size = {str(old[name]): str(new[name]) for name in old}

    def shape(m: re.Match[str]) -> str:
        parts = m.group(1).split("x")
        return "tensor<" + "x".join(by_size.get(p, p) for p in parts) + ">"

    text = TENSOR_RE.sub(shape, text)
    items = " ".join(f"{k}={v}" for k, v in new.items())
    return DIMS_RE.sub(f"// tilefuse.dims: {items}", text, count=1)


def _recompute_constants(text: str, dims: dict[str, int]) -> str:
    env = {"sqrt": math.sqrt, **dims}

    def value(m: re.Match[str]) -> str:
        expr = m.group(4).strip()
        try:
            v = float(eval(expr, {"__builtins__": {}}, env))
        except Exception as e:
            raise SpecializeError(f"Cannot evaluate tilefuse.expr '{expr}': {e}") from e
        return f"arith.constant {v:.9e} : {m.group(2)}{m.group(3)}"

    return EXPR_RE.sub(value, text)


def _retype(text: str, old: str, new: str) -> str:
    def hex_const(m: re.Match[str]) -> str:
        if m.group(3) != old:
            return m.group(0)
        bits = int(m.group(1), 16)
        v = _from_bits(bits, old)
        return f"{_to_bits_hex(v, new)}{m.group(2)}{new}"

    text = HEX_RE.sub(hex_const, text)
    text = re.sub(rf"(?:(?<=\dx)|(?<![\w.])){old}(?!\w)", new, text)
    return DTYPE_RE.sub(f"// tilefuse.dtype: {new}", text, count=1)


def _from_bits(bits: int, dtype: str) -> float:
    if dtype == "f32":
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    if dtype == "bf16":
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    if dtype == "f16":
        return float(np.array([bits], np.uint16).view(np.float16)[0])
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def _to_bits_hex(v: float, dtype: str) -> str:
    if dtype == "f32":
        return f"0x{struct.unpack('<I', struct.pack('<f', v))[0]:08X}"
    if dtype == "bf16":
        # Only exactly representable values (infinities, zeros) reach here.
        return f"0x{struct.unpack('<I', struct.pack('<f', v))[0] >> 16:04X}"
    if dtype == "f16":
        return f"0x{int(np.array([v], np.float16).view(np.uint16)[0]):04X}"
    return f"0x{struct.unpack('<Q', struct.pack('<d', v))[0]:016X}"


FUNC_RE = re.compile(r"func\.func\s+@[\w.$-]+\s*\(([^)]*)\)")
ARG_RE = re.compile(r"%([\w.$-]+)\s*:\s*tensor<([^>]*)>")
EMPTY_RE = re.compile(r"tensor\.empty\(\s*\)(\s*:\s*tensor<([^>]*)>)")
OUTPUT_SHAPE_RE = re.compile(r"output_shape\s*\[([^\]]*)\]")


def dynamic_form(text: str, dim: str) -> str:
    """`text` with header dim `dim` dynamic (`?` in every type), as upstream writes
    such a program: its size read once with `tensor.dim` from the first argument
    that has it, and passed to each `tensor.empty` and `expand_shape` that needs
    it. A constant computed from `dim` (`tilefuse.expr`) cannot stay a constant:
    SpecializeError. For tests and tools: the samples' dynamic forms."""
    header = read_header(text)
    if dim not in header.dims:
        raise SpecializeError(f"Unknown dimension {dim!r}; the program declares "
                              f"{sorted(header.dims) or 'none'}.")  # fmt: skip
    size = str(header.dims[dim])
    for m in EXPR_RE.finditer(text):
        if re.search(rf"\b{dim}\b", m.group(4)):
            raise SpecializeError(f"The constant {m.group(4).strip()!r} depends on {dim}.")
    signature = FUNC_RE.search(text)
    if signature is None:
        raise SpecializeError("The program has no func.func signature to read sizes from.")
    source = next(((name, shape) for name, shape in ARG_RE.findall(signature.group(1))
                   if size in shape.split("x")), None)  # fmt: skip
    if source is None:
        raise SpecializeError(f"No argument of the entry function has a dim of size {dim}.")
    name, shape = source
    parts = shape.split("x")
    axis = parts.index(size)
    dyn_type = "tensor<" + "x".join("?" if p == size else p for p in parts) + ">"
    value = f"%tf_dyn_{dim}"

    def dynamic_type(m: re.Match[str]) -> str:
        return "tensor<" + "x".join("?" if p == size else p for p in m.group(1).split("x")) + ">"

    def empty(m: re.Match[str]) -> str:
        count = m.group(2).split("x").count(size)
        return f"tensor.empty({', '.join([value] * count)}){m.group(1)}" if count else m.group(0)

    def output_shape(m: re.Match[str]) -> str:
        items = [value if p.strip() == size else p.strip() for p in m.group(1).split(",")]
        return f"output_shape [{', '.join(items)}]"

    body_at = text.index("{", signature.end()) + 1
    head, body = text[:body_at], text[body_at:]
    body = OUTPUT_SHAPE_RE.sub(output_shape, EMPTY_RE.sub(empty, body))
    read = (f"\n  %tf_dyn_c{axis} = arith.constant {axis} : index"
            f"\n  {value} = tensor.dim %{name}, %tf_dyn_c{axis} : {dyn_type}")  # fmt: skip
    return TENSOR_RE.sub(dynamic_type, head) + read + TENSOR_RE.sub(dynamic_type, body)
