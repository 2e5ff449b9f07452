"""
Loading programs and making inputs for them: what the tools and tests share.

```python
module = load_program("samples/softmax.mlir", dims={"N": 8192}, dtype="bf16")
inputs = random_inputs(module, seed=0)
```
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
from xdsl.dialects.builtin import IntegerType, ModuleOp, TensorType

from tilefuse.frontend.parse import decode_source, parse_module
from tilefuse.frontend.specialize import specialize
from tilefuse.ir.context import make_context
from tilefuse.ir.dynamic import DimRange, dynamic_dims
from tilefuse.ir.module import entry_function
from tilefuse.ir.structured import element_type
from tilefuse.oracle.scalar import numpy_dtype, round_to


def load_program(
    source: str | Path,
    dims: Mapping[str, int] | None = None,
    dtype: str | None = None,
    dim_ranges: Mapping[str, DimRange] | None = None,
) -> ModuleOp:
    """Parse a program from a path or MLIR text, re-specialised if asked; with
    `dim_ranges` (`{"x.0": DimRange(1, 4096)}`), one with dynamic dims."""
    if isinstance(source, Path) or (isinstance(source, str) and source.endswith(".mlir")):
        path = Path(source)
        text, name = decode_source(path.read_bytes(), str(path)), str(path)
    else:
        text, name = source, "<input>"
    text = specialize(text, dict(dims or {}), dtype)
    return parse_module(make_context(), text, name, dim_ranges=dim_ranges)


def random_inputs(module: ModuleOp, seed: int = 0, name: str | None = None,
                  sizes: Mapping[str, int] | None = None) -> list[np.ndarray]:
    """Standard-normal inputs for the entry function, rounded to each argument's type;
    dynamic dims at `sizes` (`{"x.0": 17}`: every dynamic dim named)."""
    rng = np.random.default_rng(seed)
    f = entry_function(module, name)
    shapes = [list(t.get_shape()) if isinstance(t, TensorType) else [] for t in f.function_type.inputs.data]
    for dim, arg, axis in dynamic_dims(f):
        if dim not in (sizes or {}):
            raise ValueError(f"{dim} is dynamic: give its size (sizes={{{dim!r}: ...}})")
        shapes[arg][axis] = sizes[dim]  # pyright: ignore
    inputs = []
    for t, shape in zip(f.function_type.inputs.data, map(tuple, shapes), strict=True):
        et = element_type(t)
        if isinstance(et, IntegerType):  # masks (mostly true) and small integers
            x = rng.random(shape) < 0.8 if et.width.data == 1 else rng.integers(-8, 8, shape)
            inputs.append(np.asarray(x))
            continue
        x = round_to(rng.standard_normal(shape), et)
        inputs.append(np.asarray(x).astype(numpy_dtype(et)))
    return inputs
