"""
The values of `arith.constant` ops: the one reader of constant data.

```python
stored_elements(op)   # the elements as stored: a little-endian array of op's shape
constant_array(op)    # the numbers: int64 or float64 (what the oracle and folds compute on)
```

A dense constant's elements come from the bytes xDSL packs them in, a
`dense_resource` constant's from its blob (`ir/resources.py`); neither is ever
a Python list of its elements, so megabytes of weights stay cheap.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    DenseResourceAttr,
    FloatAttr,
    IntegerAttr,
    TensorType,
)

from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.resources import blob_data

STORAGE = {"f16": "<f2", "f32": "<f4", "f64": "<f8", "bf16": "<u2", "i1": "<i1", "i8": "<i1",
           "i16": "<i2", "i32": "<i4", "i64": "<i8", "index": "<i8"}  # fmt: skip
"""How the elements of each type are stored (bf16: its bits; i1: a byte, nonzero true)."""


def _flat_elements(op: arith.ConstantOp) -> np.ndarray:
    """The elements a tensor constant stores, flat: all of them, or one (a splat)."""
    v, t = op.value, op.result.type
    if isinstance(v, DenseResourceAttr):
        raw = blob_data(v.resource_handle.data)
    elif isinstance(v, DenseIntOrFPElementsAttr):
        raw = v.data.data
    else:
        raw = None
    name = str(t.get_element_type()) if isinstance(t, TensorType) else ""
    if raw is None or name not in STORAGE:
        raise CompileError.at(op, f"has a constant tilefuse cannot read: {v}")
    data = np.frombuffer(raw, STORAGE[name])
    if data.size not in (1, math.prod(t.get_shape())):
        raise CompileError.at(op, f"holds {data.size} elements, {t} has {math.prod(t.get_shape())}")
    return data != 0 if name == "i1" else data


def stored_elements(op: arith.ConstantOp) -> np.ndarray:
    """The elements of a tensor constant in their storage type (`STORAGE`; i1 as
    bool), an array of its shape (a splat broadcast; read-only)."""
    data, shape = _flat_elements(op), tuple(op.result.type.get_shape())
    return data.reshape(shape) if data.size == math.prod(shape) else np.broadcast_to(data, shape)


def constant_array(op: arith.ConstantOp) -> np.ndarray:
    """The value of `op` as an array of its shape (0-d for a scalar): int64 for
    integers (i1 true as -1, as xDSL reads it), float64 for floats, as written in
    the IR (a splat broadcast)."""
    v = op.value
    if isinstance(v, FloatAttr | IntegerAttr):
        return np.asarray(v.value.data)
    data = stored_elements(op)
    name = str(op.result.type.get_element_type())
    if name == "bf16":
        return (data.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if name == "i1":
        return -data.astype(np.int64)
    return data.astype(np.float64 if data.dtype.kind == "f" else np.int64)


def is_splat(op: arith.ConstantOp) -> bool:
    """Are all elements of a tensor constant the same bits?"""
    data = _flat_elements(op)
    bits = data.view(f"<u{data.dtype.itemsize}") if data.dtype.kind == "f" else data
    return bool((bits == bits[0]).all())
