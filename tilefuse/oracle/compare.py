"""
Comparing a result with the reference's: how far off it is, where, and how far
is allowed for its dtype.

```python
ok = relative_error(out, ref) <= tolerance("bf16")
worst, at = worst_element(out, ref)  # ok when worst <= ELEMENT_FACTOR * tolerance
```
"""

from __future__ import annotations

import numpy as np


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
