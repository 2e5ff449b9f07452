"""
The roofline model of one kernel (or of `launches` identical kernels' overheads).

A kernel doing `flops` arithmetic and moving `bytes` to and from device memory
takes

    T = max(flops / (peak * f(occupancy)), bytes / bandwidth) + launches * overhead

with `f(o) = max(0.25, o)` (`occupancy_factor`). Its arithmetic intensity is
`I = flops / bytes`, and it is memory-bound when `I` lies below the ridge point,
the intensity at which both terms are equal.

`predicted_time(cost, target)` is that time for a group's `#tilefuse.cost`.
`format_seconds` and `format_bytes` print times and sizes for reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilefuse.analysis.cost.occupancy import occupancy_factor
from tilefuse.analysis.cost.target import Target
from tilefuse.ir.tilefuse import CostAttr


@dataclass(frozen=True)
class RooflinePoint:
    """Where one kernel sits on a target's roofline, and the time it predicts."""

    flops: float
    """Arithmetic operations, an FMA counted as two."""
    bytes: float
    """Bytes moved to and from device memory."""
    intensity: float
    """`flops / bytes` in FLOP/byte; infinite when no bytes move."""
    ridge: float
    """The intensity where compute and memory time meet, at this occupancy."""
    bound: str
    """"memory" when `intensity < ridge`, else "compute"."""
    compute_time: float
    """Seconds the arithmetic takes at the occupancy-scaled peak."""
    memory_time: float
    """Seconds the memory traffic takes at full bandwidth."""
    launch_time: float
    """Seconds of launch overhead."""
    time: float
    """Predicted seconds: `max(compute_time, memory_time) + launch_time`."""


def roofline(
    flops: float,
    bytes_moved: float,
    target: Target,
    dtype: str = "f32",
    tensor_cores: bool = False,
    occupancy: float = 1.0,
    launches: int = 1,
) -> RooflinePoint:
    """
    The roofline point and predicted time of a kernel on `target`.

    The peak is `target.peak_flops(dtype, tensor_cores)` scaled by
    `occupancy_factor(occupancy)`, and the ridge point is taken at that scaled
    peak, so `bound` always names the larger of the two time terms.
    """
    if flops < 0 or bytes_moved < 0 or launches < 0:
        raise ValueError(
            "roofline needs non-negative flops, bytes and launches, not "
            f"{flops}, {bytes_moved}, {launches}."
        )
    peak = target.peak_flops(dtype, tensor_cores) * occupancy_factor(occupancy)
    ridge = peak / target.hbm_bandwidth
    intensity = flops / bytes_moved if bytes_moved else math.inf
    compute_time = flops / peak
    memory_time = bytes_moved / target.hbm_bandwidth
    launch_time = launches * target.launch_overhead
    return RooflinePoint(
        flops=flops,
        bytes=bytes_moved,
        intensity=intensity,
        ridge=ridge,
        bound="memory" if intensity < ridge else "compute",
        compute_time=compute_time,
        memory_time=memory_time,
        launch_time=launch_time,
        time=max(compute_time, memory_time) + launch_time,
    )


SFU_FLOP_SLOTS = 16
"""A transcendental costs this many FP32 FLOP-slots (MUFU: 16 lanes/SM/clock
against 128 FMA lanes of 2 FLOPs each)."""


def roofline_mixed(
    flops: float,
    bytes_moved: float,
    target: Target,
    dtype: str = "f32",
    tc_flops: float = 0.0,
    sfu_ops: float = 0.0,
    occupancy: float = 1.0,
    launches: int = 1,
) -> RooflinePoint:
    """
    The roofline of a kernel whose arithmetic runs on several units.

    `tc_flops` of the `flops` run on tensor cores at the `dtype` peak, the rest
    on CUDA cores at the f32 peak, and each of `sfu_ops` transcendentals takes
    `SFU_FLOP_SLOTS` CUDA-core FLOP-slots; the three times add up (a kernel like
    FlashAttention alternates them). The ridge is taken at the resulting
    effective peak.
    """
    f = occupancy_factor(occupancy)
    simt = target.peak_flops("f32", False) * f
    tc_time = tc_flops / (target.peak_flops(dtype, True) * f) if tc_flops else 0.0
    compute_time = tc_time + (flops - tc_flops + sfu_ops * SFU_FLOP_SLOTS) / simt
    effective = flops / compute_time if compute_time else simt
    point = roofline(flops, bytes_moved, target, "f32", False, occupancy, launches)
    memory_time = point.memory_time
    ridge = effective / target.hbm_bandwidth
    return RooflinePoint(
        flops=flops, bytes=bytes_moved, intensity=point.intensity, ridge=ridge,
        bound="memory" if memory_time > compute_time else "compute",
        compute_time=compute_time, memory_time=memory_time,
        launch_time=point.launch_time,
        time=max(compute_time, memory_time) + point.launch_time,
    )  # fmt: skip


def predicted_time(cost: CostAttr, target: Target) -> float:
    """Seconds the kernel of a group with `cost` runs on `target` (`roofline_mixed`
    of its fused bytes; tensor-core work in the cost's dtype), without its launch:
    what a profiler's per-kernel time shows, and what a shared launch does not add."""
    c = cost.counts()
    return roofline_mixed(c["flops"], c["fused_bytes"], target, cost.dtype.data, c["tc_flops"],
                          c["sfu_ops"], launches=0).time  # fmt: skip


_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
_BYTE_UNITS = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3), ("B", 1.0))


def format_seconds(seconds: float) -> str:
    """A time to three significant digits in s, ms, us or ns: "12.3 us", "1.23 ms"."""
    return _format_scaled(seconds, _TIME_UNITS, "s")


def format_bytes(nbytes: float) -> str:
    """A size to three significant digits in decimal units: "512 B", "1.5 MB"."""
    return _format_scaled(nbytes, _BYTE_UNITS, "B")


def _format_scaled(
    value: float, units: tuple[tuple[str, float], ...], zero: str
) -> str:
    """`value` in the largest unit that shows it as at least 1 after rounding."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {zero}"
    magnitude = abs(value)
    suffix, scale = next(
        ((s, k) for s, k in units if float(f"{magnitude / k:.3g}") >= 1), units[-1]
    )
    scaled = value / scale
    fits = abs(float(f"{scaled:.3g}")) < 1000
    return f"{scaled:.3g} {suffix}" if fits else f"{scaled:.0f} {suffix}"
