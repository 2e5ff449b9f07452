"""Tests for the roofline model and the report formatters."""

import math

import pytest

from tilefuse.analysis.cost.roofline import format_bytes, format_seconds, roofline
from tilefuse.analysis.cost.target import TargetError, get_target


@pytest.mark.parametrize("name", ["h100", "h100-datasheet", "h200", "h200-datasheet"])
def test_bound_flips_exactly_at_ridge(name):
    target = get_target(name)
    peak = target.peak_flops("bf16", tensor_cores=True)
    # Scaling both by a power of two keeps flops / bytes == peak / bandwidth exactly.
    flops, nbytes = peak / 1024, target.hbm_bandwidth / 1024
    at_ridge = roofline(flops, nbytes, target, "bf16", tensor_cores=True)
    assert at_ridge.intensity == at_ridge.ridge == target.ridge_point("bf16")
    assert at_ridge.bound == "compute"
    below = roofline(
        math.nextafter(flops, 0), nbytes, target, "bf16", tensor_cores=True
    )
    assert below.intensity < below.ridge
    assert below.bound == "memory"


def test_ridge_sides_h100_and_h200_bf16():
    # h100-datasheet bf16 ridge 295.3 FLOP/B, h200 (measured) 183.5: an intensity of 250
    # is compute-bound on the H200 but memory-bound on the H100.
    flops, nbytes = 250e9, 1e9
    assert roofline(flops, nbytes, get_target("h100-datasheet"), "bf16", True).bound == "memory"
    assert roofline(flops, nbytes, get_target("h200"), "bf16", True).bound == "compute"


def test_time_formula_h100_f32():
    # 1 TFLOP at 66.9 TFLOP/s = 14.948 ms; 1 GB at 3.35 TB/s = 0.2985 ms;
    # T = 14.948 ms + 4 us launch.
    point = roofline(1e12, 1e9, get_target("h100-datasheet"))
    assert point.compute_time == pytest.approx(1 / 66.9)
    assert point.memory_time == pytest.approx(1e9 / 3.35e12)
    assert point.launch_time == pytest.approx(4e-6)
    assert point.time == pytest.approx(1 / 66.9 + 4e-6)
    assert point.intensity == 1000.0
    assert point.bound == "compute"


def test_memory_bound_time_h200():
    # A bf16 elementwise add of 2^28 elements: 2^28 FLOPs, 3 x 2 x 2^28 bytes
    # at 4.25 TB/s = 378.97 us, plus the 18 us launch.
    n = 2**28
    point = roofline(n, 6 * n, get_target("h200"), "bf16")
    assert point.bound == "memory"
    assert point.memory_time == pytest.approx(6 * n / 4.25e12)
    assert point.time == pytest.approx(378.97e-6 + 18e-6, rel=1e-5)


def test_low_occupancy_scales_compute_and_ridge():
    h100 = get_target("h100-datasheet")
    full = roofline(1e12, 1e6, h100, "bf16", tensor_cores=True)
    # f(0.1) = 0.25: four times the compute time and a quarter of the ridge.
    low = roofline(1e12, 1e6, h100, "bf16", tensor_cores=True, occupancy=0.1)
    assert low.compute_time == pytest.approx(4 * full.compute_time)
    assert low.ridge == pytest.approx(full.ridge / 4)
    half = roofline(1e12, 1e6, h100, "bf16", tensor_cores=True, occupancy=0.5)
    assert half.compute_time == pytest.approx(2 * full.compute_time)


def test_launches():
    # 100 empty kernels on the h100-datasheet (nominal launch) cost 100 x 4 us = 400 us.
    point = roofline(0, 0, get_target("h100-datasheet"), launches=100)
    assert point.time == pytest.approx(400e-6)
    assert roofline(0, 0, get_target("h100-datasheet"), launches=0).time == 0


def test_zero_bytes_is_compute_bound():
    point = roofline(1e9, 0, get_target("h200"))
    assert point.intensity == math.inf
    assert point.bound == "compute"
    assert point.memory_time == 0
    assert point.time == pytest.approx(1e9 / 51e12 + 18e-6)


def test_bad_arguments():
    with pytest.raises(ValueError):
        roofline(-1, 10, get_target("h100"))
    with pytest.raises(TargetError):
        roofline(1, 1, get_target("v100"), "bf16", tensor_cores=True)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (12.34e-6, "12.3 us"),
        (1.234e-3, "1.23 ms"),
        (123.4e-6, "123 us"),
        (999.97e-6, "1 ms"),
        (2.5, "2.5 s"),
        (500e-12, "0.5 ns"),
        (4e-9, "4 ns"),
        (-2e-3, "-2 ms"),
        (math.inf, "inf s"),
    ],
)
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


@pytest.mark.parametrize(
    ("nbytes", "text"),
    [
        (0, "0 B"),
        (512, "512 B"),
        (1500, "1.5 kB"),
        (1.5e6, "1.5 MB"),
        (2**30, "1.07 GB"),
        (4.8e12, "4.8 TB"),
    ],
)
def test_format_bytes(nbytes, text):
    assert format_bytes(nbytes) == text
