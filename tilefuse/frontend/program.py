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
from tilefuse.ir.module import entry_function
from tilefuse.ir.structured import element_type
from tilefuse.oracle.reference import numpy_dtype, round_to


def load_program(
    source: str | Path,
    dims: Mapping[str, int] | None = None,
    dtype: str | None = None,
) -> ModuleOp:
    """Parse a program from a path or MLIR text, re-specialised if asked."""
    if isinstance(source, Path) or (isinstance(source, str) and source.endswith(".mlir")):
        path = Path(source)
        text, name = decode_source(path.read_bytes(), str(path)), str(path)
    else:
        text, name = source, "<input>"
    text = specialize(text, dict(dims or {}), dtype)
    return parse_module(make_context(), text, name)


def random_inputs(module: ModuleOp, seed: int = 0, name: str | None = None) -> list[np.ndarray]:
    """Standard-normal inputs for the entry function, rounded to each argument's type."""
    rng = np.random.default_rng(seed)
    f = entry_function(module, name)
    inputs = []
    for t in f.function_type.inputs.data:
        shape = tuple(t.get_shape()) if isinstance(t, TensorType) else ()
        et = element_type(t)
        if isinstance(et, IntegerType):  # masks (mostly true) and small integers
            x = rng.random(shape) < 0.8 if et.width.data == 1 else rng.integers(-8, 8, shape)
            inputs.append(np.asarray(x))
            continue
        x = round_to(rng.standard_normal(shape), et)
        inputs.append(np.asarray(x).astype(numpy_dtype(et)))
    return inputs


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """‖out - ref‖ / ‖ref‖ in float64 over the entries where `ref` is finite;
    inf unless `out` is NaN exactly where `ref` is, has the same infinities,
    and is finite everywhere else (log of a negative is NaN in both)."""
    out64, ref64 = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    finite = np.isfinite(ref64)
    same_nan = np.array_equal(np.isnan(out64), np.isnan(ref64))
    same_inf = np.array_equal(np.isposinf(out64), np.isposinf(ref64)) and np.array_equal(
        np.isneginf(out64), np.isneginf(ref64)
    )
    if not (same_nan and same_inf):
        return float("inf")
    out64, ref64 = out64[finite], ref64[finite]
    denom = float(np.linalg.norm(ref64)) or 1.0
    return float(np.linalg.norm(out64 - ref64)) / denom


TOLERANCE = {"f64": 1e-12, "f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}


ELEMENT_FACTOR = 10
"""`--check`'s per-element bound, in tolerances: the global relative error can
hide one wrong element among many (an edge lane of a tile, say)."""


def worst_element(out: np.ndarray, ref: np.ndarray) -> tuple[float, tuple[int, ...]]:
    """The largest |out - ref| / (|ref| + rms(ref)) over the entries where both
    are finite, and where it is: each element against its own size, with the
    tensor's rms as the floor for elements near zero (cancellation). ((0, ())
    when nothing is finite; NaN and infinity placement is `relative_error`'s.)"""
    out64, ref64 = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    finite = np.isfinite(ref64) & np.isfinite(out64)
    if not finite.any():
        return 0.0, ()
    rms = float(np.sqrt(np.mean(ref64[finite] ** 2))) or 1.0
    with np.errstate(all="ignore"):  # the non-finite entries, masked out
        err = np.where(finite, np.abs(out64 - ref64) / (np.abs(ref64) + rms), 0.0)
    at = np.unravel_index(int(np.argmax(err)), err.shape) if err.ndim else ()
    return float(err.max()), tuple(int(i) for i in at)


def tolerance(dtype: str) -> float:
    """Relative-error budget for results stored in `dtype`."""
    return TOLERANCE.get(dtype, 1e-5)
