"""The values of `arith.constant` ops, as numpy arrays (the IR's numbers, unrounded)."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
)

from tilefuse.ir.diagnostics import CompileError


def constant_array(op: arith.ConstantOp) -> np.ndarray:
    """The value of `op` as an array of its shape (0-d for a scalar): int64 for
    integers, float64 for floats, as written in the IR (a splat broadcast)."""
    v = op.value
    if isinstance(v, FloatAttr | IntegerAttr):
        return np.asarray(v.value.data)
    if isinstance(v, DenseIntOrFPElementsAttr):
        t = v.get_type()
        integer = isinstance(t.element_type, IntegerType | IndexType)
        data = np.asarray(v.get_values(), dtype=np.int64 if integer else np.float64)
        shape = tuple(t.get_shape())
        if data.size == int(np.prod(shape)):
            return data.reshape(shape)  # every element listed (or a splat xDSL expanded)
        return np.broadcast_to(data, shape)
    raise CompileError.at(op, f"has a constant tilefuse cannot read: {v}")
