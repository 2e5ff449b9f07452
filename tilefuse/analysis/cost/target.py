"""
GPU targets: the hardware numbers the cost model needs, with their sources.

A `Target` holds per-SM resource limits (for occupancy), memory bandwidth and
peak arithmetic rates (for the roofline), the L2 size (for tile-schedule
simulation) and a per-kernel launch overhead, all in SI units: bytes, bytes/s,
FLOP/s and seconds. Peak rates are dense (no structured sparsity); an FMA counts
as two FLOPs.

Built-in targets are `v100` (SXM2), `a100` (80 GB SXM), and two entries each
for the H100 SXM and the H200 SXM:

* `h200-datasheet` holds NVIDIA's datasheet numbers (4.8 TB/s, 989 TFLOP/s
  dense bf16).
* `h200`, the default target, holds what was measured on the H200 this project
  is lent: about 4.25 TB/s device-to-device copy and about 780 TFLOP/s for a
  large bf16 cuBLAS GEMM on random data. It is the default because the cost
  model exists to predict times on that machine, and these are the rates a
  kernel can actually reach there: datasheet peaks would predict ~11% less time
  than a memory-bound kernel takes and ~21% less than a compute-bound one, and
  would put the bf16 ridge point at 206 instead of ~184 FLOP/B. Its launch
  overhead (18 us) is the measured cost of launching a Triton kernel from
  Python, which is how tilefuse runs its kernels.

* `h100` holds the same measurements taken on a lent H100 80GB (3.0 TB/s,
  688 TFLOP/s bf16, 10.5 us a launch); `h100-datasheet` NVIDIA's numbers.

The other targets are datasheet targets and use a nominal 4 us launch overhead.

`target_for_device` names the built-in target of a GPU by its name (what the
runtime compiles for when no target is named and a GPU is present).

`get_target` also loads a target from a JSON file whose keys are `Target`'s
field names; the file may name a built-in `"base"` and override only some
fields (overridden peak-rate tables are merged key by key into the base's).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

DEFAULT_TARGET = "h200"
"""The target used when none is named: the lent H200, with measured rates."""


class TargetError(ValueError):
    """An unknown target name, or a malformed target description."""


class FlopTable(Mapping[str, float]):
    """An immutable, hashable map from dtype name ("f32", "bf16", ...) to FLOP/s."""

    __slots__ = ("_rates",)

    def __init__(self, rates: Mapping[str, float] | None = None):
        self._rates: dict[str, float] = {
            str(k): float(v) for k, v in (rates or {}).items()
        }

    def __getitem__(self, dtype: str) -> float:
        return self._rates[dtype]

    def __iter__(self) -> Iterator[str]:
        return iter(self._rates)

    def __len__(self) -> int:
        return len(self._rates)

    def __hash__(self) -> int:
        return hash(frozenset(self._rates.items()))

    def __repr__(self) -> str:
        return f"FlopTable({self._rates!r})"


_POSITIVE_INT_FIELDS = (
    "sm_count",
    "smem_per_sm",
    "smem_per_block",
    "regs_per_sm",
    "max_regs_per_thread",
    "max_threads_per_block",
    "max_threads_per_sm",
    "max_blocks_per_sm",
    "warp_size",
    "reg_alloc_unit",
    "l2_bytes",
)
_RATE_TABLE_FIELDS = ("peak_tensor_flops", "peak_simt_flops")


@dataclass(frozen=True)
class Target:
    """
    One GPU as the cost model sees it.

    Shared memory sizes assume the largest shared-memory carveout of the SM's
    unified L1/shared storage, which the driver picks for kernels that need it.
    """

    name: str
    """The name `get_target` knows this target by."""
    sm_count: int
    """Streaming multiprocessors on the chip."""
    smem_per_sm: int
    """Shared memory per SM, in bytes, at the largest carveout."""
    smem_per_block: int
    """The most shared memory one block may opt in to, in bytes."""
    regs_per_sm: int
    """32-bit registers per SM."""
    max_regs_per_thread: int
    """The most registers one thread may use."""
    max_threads_per_block: int
    """The most threads in one block."""
    max_threads_per_sm: int
    """The most threads resident on one SM."""
    max_blocks_per_sm: int
    """The most blocks resident on one SM."""
    warp_size: int
    """Threads per warp."""
    reg_alloc_unit: int
    """Registers are allocated to a warp in multiples of this many."""
    hbm_bandwidth: float
    """Device memory bandwidth, in bytes/s."""
    l2_bytes: int
    """L2 cache size, in bytes."""
    peak_tensor_flops: Mapping[str, float] = field(hash=False)
    """
    Dense tensor-core FLOP/s per input dtype. "f32" is the TF32 rate, since
    Triton runs an f32 `tl.dot` as TF32 by default.
    """
    peak_simt_flops: Mapping[str, float] = field(hash=False)
    """CUDA-core FLOP/s per dtype, an FMA counted as two FLOPs."""
    launch_overhead: float
    """Seconds one kernel launch adds to a sequence of kernels."""
    compute_capability: tuple[int, int]
    """CUDA compute capability (major, minor)."""
    source: str
    """Where the numbers come from."""
    smem_reserved_per_block: int = 0
    """Shared memory the system reserves per resident block (1 KB from sm_80 on)."""

    def __post_init__(self):
        for name in _RATE_TABLE_FIELDS:
            table = getattr(self, name)
            _check_rate_table(name, table)
            object.__setattr__(self, name, FlopTable(table))
        object.__setattr__(
            self, "compute_capability", _check_capability(self.compute_capability)
        )
        _check_scalars(self)

    def peak_flops(self, dtype: str, tensor_cores: bool) -> float:
        """Peak FLOP/s for `dtype` on tensor cores or on CUDA cores."""
        table = self.peak_tensor_flops if tensor_cores else self.peak_simt_flops
        if dtype not in table:
            unit = "tensor-core" if tensor_cores else "CUDA-core"
            raise TargetError(
                f"target '{self.name}' has no {unit} peak for dtype '{dtype}'; "
                f"it has {', '.join(sorted(table)) or 'none'}."
            )
        return table[dtype]

    def ridge_point(self, dtype: str, tensor_cores: bool = True) -> float:
        """The arithmetic intensity (FLOP/byte) where compute and memory time meet."""
        return self.peak_flops(dtype, tensor_cores) / self.hbm_bandwidth

    def to_dict(self) -> dict[str, Any]:
        """The target as plain JSON-compatible values, keyed by field name."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, FlopTable):
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def to_json(self) -> str:
        """The target as a JSON object that `get_target` can load back."""
        return json.dumps(self.to_dict(), indent=2)


def _check_rate_table(name: str, table: object) -> None:
    if not isinstance(table, Mapping):
        raise TargetError(f"field '{name}' must map dtype names to FLOP/s.")
    for dtype, rate in table.items():
        if not isinstance(dtype, str) or not (_is_number(rate) and rate > 0):
            raise TargetError(
                f"field '{name}' must map dtype names to positive FLOP/s, "
                f"not {dtype!r}: {rate!r}."
            )


def _check_capability(value: object) -> tuple[int, int]:
    if (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(_is_int(v) and v >= 0 for v in value)
    ):
        return (value[0], value[1])
    raise TargetError(
        f"field 'compute_capability' must be two integers, not {value!r}."
    )


def _check_scalars(target: Target) -> None:
    for name in _POSITIVE_INT_FIELDS:
        value = getattr(target, name)
        if not (_is_int(value) and value > 0):
            raise TargetError(
                f"field '{name}' must be a positive integer, not {value!r}."
            )
    reserved = target.smem_reserved_per_block
    if not (_is_int(reserved) and reserved >= 0):
        raise TargetError(
            f"field 'smem_reserved_per_block' must be a non-negative integer, "
            f"not {reserved!r}."
        )
    bandwidth = target.hbm_bandwidth
    if not (_is_number(bandwidth) and bandwidth > 0):
        raise TargetError(
            f"field 'hbm_bandwidth' must be a positive number, not {bandwidth!r}."
        )
    overhead = target.launch_overhead
    if not (_is_number(overhead) and overhead >= 0):
        raise TargetError(
            f"field 'launch_overhead' must be a non-negative number, not {overhead!r}."
        )
    for name in ("name", "source"):
        if not isinstance(getattr(target, name), str):
            raise TargetError(f"field '{name}' must be a string.")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    """A finite int or float, not a bool."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
    )


_KB = 1024
_MB = 1024 * 1024

# Per-SM limits shared by compute capabilities 7.0, 8.0 and 9.0, from the CUDA
# C++ Programming Guide, "Technical Specifications per Compute Capability".
_CUDA_LIMITS: dict[str, int] = {
    "regs_per_sm": 64 * _KB,  # 64K 32-bit registers per SM
    "max_regs_per_thread": 255,
    "max_threads_per_block": 1024,
    "max_threads_per_sm": 2048,
    "max_blocks_per_sm": 32,
    "warp_size": 32,
    # Register allocation unit size (per warp), as in cudaOccupancy.h.
    "reg_alloc_unit": 256,
}

# ~4 us: the commonly quoted 3-5 us cost of one CUDA kernel launch (design seed
# 002); not measured on these chips.
_NOMINAL_LAUNCH = 4e-6

V100 = Target(
    name="v100",
    sm_count=80,  # V100 SXM2, Volta whitepaper
    smem_per_sm=96 * _KB,  # CUDA guide, cc 7.0: up to 96 KB per SM
    smem_per_block=96 * _KB,  # CUDA guide, cc 7.0: 96 KB per block (opt-in)
    **_CUDA_LIMITS,
    hbm_bandwidth=900e9,  # V100 SXM2 datasheet: 900 GB/s HBM2
    l2_bytes=6 * _MB,  # Volta whitepaper: 6144 KB L2
    peak_tensor_flops={
        "f16": 125e12,  # V100 SXM2 datasheet: 125 TFLOPS tensor
    },
    peak_simt_flops={
        "f64": 7.8e12,  # V100 SXM2 datasheet
        "f32": 15.7e12,  # V100 SXM2 datasheet
        "f16": 31.4e12,  # twice f32 through half2 FMA (Volta whitepaper)
    },
    launch_overhead=_NOMINAL_LAUNCH,
    compute_capability=(7, 0),
    source="NVIDIA V100 SXM2 datasheet and Volta whitepaper; CUDA C++ Programming Guide",
    smem_reserved_per_block=0,  # the 1 KB system reservation starts at cc 8.0
)
"""NVIDIA V100 SXM2 (Volta), datasheet numbers."""

A100 = Target(
    name="a100",
    sm_count=108,  # A100 whitepaper
    smem_per_sm=164 * _KB,  # CUDA guide, cc 8.0: 164 KB per SM
    smem_per_block=163 * _KB,  # CUDA guide, cc 8.0: 163 KB per block (opt-in)
    **_CUDA_LIMITS,
    hbm_bandwidth=2039e9,  # A100 80GB SXM datasheet: 2,039 GB/s HBM2e
    l2_bytes=40 * _MB,  # A100 whitepaper: 40 MB L2
    peak_tensor_flops={
        "tf32": 156e12,  # A100 datasheet, dense
        # Triton runs an f32 tl.dot as TF32 by default (input_precision="tf32").
        "f32": 156e12,
        "f16": 312e12,  # A100 datasheet, dense
        "bf16": 312e12,  # A100 datasheet, dense
        "f64": 19.5e12,  # A100 datasheet, FP64 tensor core
    },
    peak_simt_flops={
        "f64": 9.7e12,  # A100 datasheet
        "f32": 19.5e12,  # A100 datasheet
        "f16": 78e12,  # A100 whitepaper, FP16 non-tensor
        "bf16": 39e12,  # A100 whitepaper, BF16 non-tensor
    },
    launch_overhead=_NOMINAL_LAUNCH,
    compute_capability=(8, 0),
    source="NVIDIA A100 80GB datasheet and A100 whitepaper; CUDA C++ Programming Guide",
    smem_reserved_per_block=_KB,  # CUDA guide, cc 8.x: 1 KB a block for the system
)
"""NVIDIA A100 80GB SXM (Ampere), datasheet numbers."""

# The GH100 rates shared by the H100 SXM and H200 SXM (same chip and clocks),
# from the H100 whitepaper, table 3, H100 SXM5 column (dense); the H200
# datasheet lists the same rates.
_GH100_TENSOR: dict[str, float] = {
    "tf32": 494.7e12,
    # Triton runs an f32 tl.dot as TF32 by default (input_precision="tf32").
    "f32": 494.7e12,
    "f16": 989.4e12,
    "bf16": 989.4e12,
    "f64": 66.9e12,
}
_GH100_SIMT: dict[str, float] = {
    "f64": 33.5e12,
    "f32": 66.9e12,
    "f16": 133.8e12,
    "bf16": 133.8e12,
}
# CUDA guide, cc 9.0: 228 KB per SM, 227 KB per block (opt-in), 1 KB reserved.
_GH100_SMEM: dict[str, int] = {
    "smem_per_sm": 228 * _KB,
    "smem_per_block": 227 * _KB,
    "smem_reserved_per_block": _KB,
}

H100_DATASHEET = Target(
    name="h100-datasheet",
    sm_count=132,  # H100 SXM5, H100 whitepaper
    **_GH100_SMEM,
    **_CUDA_LIMITS,
    hbm_bandwidth=3.35e12,  # H100 SXM datasheet: 3.35 TB/s HBM3
    l2_bytes=50 * _MB,  # H100 whitepaper: 50 MB L2 on H100 SXM5
    peak_tensor_flops=_GH100_TENSOR,
    peak_simt_flops=_GH100_SIMT,
    launch_overhead=_NOMINAL_LAUNCH,
    compute_capability=(9, 0),
    source="NVIDIA H100 SXM datasheet and H100 whitepaper; CUDA C++ Programming Guide",
)
"""NVIDIA H100 SXM (Hopper), datasheet numbers."""

# The GH100's CUDA-core rates as the lent H100 and H200 ran them: an f32 GEMM with
# TF32 off at 51 TFLOP/s on both; the rest not measured (datasheet).
_GH100_SIMT_MEASURED: dict[str, float] = {**_GH100_SIMT, "f32": 51e12}

# Measured on a lent H100 80GB HBM3 (2026-12-06, torch 2.11, triton 3.6;
# tools/experiments/target_rates.py, docs/PERF.md): a device-to-device copy
# moved 3.00 TB/s; an 8192^3 cuBLAS GEMM on random data ran at 688 TFLOP/s in
# bf16, 657 in f16, 375 in TF32 and 51 in plain f32; an empty Triton kernel
# launched back to back from Python took 10.5 us (an eager torch op 6.3 us).
H100 = Target(
    name="h100",
    sm_count=132,  # multiProcessorCount read on the lent H100
    **_GH100_SMEM,
    **_CUDA_LIMITS,
    hbm_bandwidth=3.0e12,  # measured copy bandwidth, above
    l2_bytes=50 * _MB,  # cudaDeviceProp::l2CacheSize read on the lent H100
    peak_tensor_flops={
        "tf32": 375e12,  # measured, above
        "f32": 375e12,  # an f32 tl.dot runs as TF32 by default
        "f16": 688e12,  # bf16's rate (f16 measured 5% lower, within the runs' spread)
        "bf16": 688e12,  # measured, above
        "f64": 66.9e12,  # not measured: datasheet
    },
    peak_simt_flops=_GH100_SIMT_MEASURED,
    launch_overhead=10.5e-6,  # measured, above (the lent machines' hosts vary by ~30%)
    compute_capability=(9, 0),
    source="measured on a lent H100 (bandwidth, tensor f32/f16/bf16, SIMT f32, launch); "
    "H100 SXM datasheet for the rest",
)
"""NVIDIA H100 80GB SXM with the rates measured on a lent machine."""

# cudaDeviceProp::l2CacheSize read on the lent H200 (62914560 B); the H200
# datasheet gives no L2 size.
_H200_L2 = 60 * _MB

H200_DATASHEET = Target(
    name="h200-datasheet",
    sm_count=132,  # multiProcessorCount read on the lent H200
    **_GH100_SMEM,
    **_CUDA_LIMITS,
    hbm_bandwidth=4.8e12,  # H200 SXM datasheet: 4.8 TB/s HBM3e
    l2_bytes=_H200_L2,
    peak_tensor_flops=_GH100_TENSOR,
    peak_simt_flops=_GH100_SIMT,
    launch_overhead=_NOMINAL_LAUNCH,
    compute_capability=(9, 0),
    source="NVIDIA H200 SXM datasheet, H100 whitepaper rates; CUDA C++ Programming Guide",
)
"""NVIDIA H200 SXM (Hopper), datasheet numbers."""

# Measured on the lent H200 through PyTorch and triton.testing.do_bench
# (2026-11, several machines): a device-to-device copy moved 4.24-4.3 TB/s
# (bytes read plus written); an 8192^3 cuBLAS GEMM on random data ran at
# 688-798 TFLOP/s in bf16 (695 in f16), 392 in TF32 and 51 in plain f32.
H200 = Target(
    name="h200",
    sm_count=132,  # multiProcessorCount read on the lent H200
    **_GH100_SMEM,
    **_CUDA_LIMITS,
    hbm_bandwidth=4.25e12,  # measured copy bandwidth, above
    l2_bytes=_H200_L2,
    peak_tensor_flops={
        "tf32": 390e12,  # measured, above
        "f32": 390e12,  # an f32 tl.dot runs as TF32 by default
        "f16": 780e12,  # bf16's rate: f16 measured the same within noise
        "bf16": 780e12,  # the middle of the measured bf16 runs
        "f64": 66.9e12,  # not measured: datasheet
    },
    peak_simt_flops=_GH100_SIMT_MEASURED,
    # An empty Triton kernel launched back to back from Python took 17.6-19.9 us
    # per launch (an eager PyTorch op 11.9 us, a CUDA-graph replay 0.93 us).
    # Launching is host-bound, so a chain of short kernels pays this per kernel.
    launch_overhead=18e-6,
    compute_capability=(9, 0),
    source="measured on the lent H200 (bandwidth, tensor f32/f16/bf16, SIMT f32, "
    "launch); H200 SXM datasheet for the rest",
)
"""NVIDIA H200 SXM with the rates measured on the lent machine: the default."""

_BUILTINS: dict[str, Target] = {
    t.name: t for t in (V100, A100, H100, H100_DATASHEET, H200, H200_DATASHEET)
}
_FIELD_NAMES = frozenset(f.name for f in fields(Target))
_REQUIRED_FIELDS = frozenset(f.name for f in fields(Target) if f.default is MISSING)


def target_names() -> list[str]:
    """The names of the built-in targets, sorted."""
    return sorted(_BUILTINS)


def target_for_device(device_name: str) -> str:
    """The built-in target for a GPU named `device_name` (torch's
    `get_device_name`: "NVIDIA H100 80GB HBM3"): the measured `h100` or `h200`,
    the `a100` or `v100` datasheet entries, else `DEFAULT_TARGET`."""
    name = device_name.upper()
    for model, target in (("H200", "h200"), ("H100", "h100"), ("A100", "a100"), ("V100", "v100")):
        if model in name:
            return target
    return DEFAULT_TARGET


def get_target(name_or_path: str) -> Target:
    """
    A built-in target by name, or a target read from a JSON file.

    Anything that is not a built-in name is read as a file path when it ends in
    `.json` or names an existing file.
    """
    if name_or_path in _BUILTINS:
        return _BUILTINS[name_or_path]
    path = Path(name_or_path)
    if name_or_path.endswith(".json") or path.is_file():
        return _load_target_file(path)
    raise TargetError(
        f"unknown target '{name_or_path}'; known targets are "
        f"{', '.join(target_names())}, or give the path of a JSON file."
    )


def _load_target_file(path: Path) -> Target:
    try:
        text = path.read_text()
    except OSError as e:
        raise TargetError(f"cannot read target file '{path}': {e.strerror}.") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise TargetError(
            f"target file '{path}' is not valid JSON: {e.msg} at line {e.lineno}."
        ) from e
    if not isinstance(data, dict):
        raise TargetError(f"target file '{path}' must hold a JSON object.")
    try:
        return Target(**_target_fields(data, path))
    except TargetError as e:
        raise TargetError(f"target file '{path}': {e}") from e


def _target_fields(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The `Target` arguments a JSON object describes, over its base if any."""
    data = dict(data)
    base_name = data.pop("base", None)
    unknown = sorted(set(data) - _FIELD_NAMES)
    if unknown:
        raise TargetError(
            f"unknown key '{unknown[0]}'; the keys are 'base' and Target's fields."
        )
    values: dict[str, Any] = {"name": path.stem, "source": str(path)}
    if base_name is not None:
        base = _BUILTINS.get(base_name) if isinstance(base_name, str) else None
        if base is None:
            raise TargetError(
                f"unknown base {base_name!r}; the bases are {', '.join(target_names())}."
            )
        values.update({f.name: getattr(base, f.name) for f in fields(base)})
        values.update(name=path.stem, source=f"{path} over {base.name}")
        for name in _RATE_TABLE_FIELDS:
            if isinstance(data.get(name), Mapping):
                data[name] = {**values[name], **data[name]}
    values.update(data)
    missing = sorted(_REQUIRED_FIELDS - values.keys())
    if missing:
        raise TargetError(
            f"missing key '{missing[0]}' (and no 'base' to take it from)."
        )
    return values
