"""The fusion report: numbers a person can check, a timeline, decisions, tiles."""

import subprocess
import sys
from pathlib import Path

import pytest

from tilefuse.frontend.program import load_program
from tilefuse.report import analyze_program, format_report, timeline

SAMPLES = Path(__file__).parent.parent / "samples"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.mlir"))


@pytest.mark.parametrize("name", NAMES)
def test_report_for_every_sample(name):
    report = analyze_program(load_program(SAMPLES / f"{name}.mlir"), "h200")
    text = format_report(report)
    assert f"@{name} on h200" in text
    assert "unfused (one kernel per op):" in text and "fused:" in text and "decisions:" in text
    assert report.fused_time <= report.unfused_time
    assert sum(k.point.bytes for k in report.fused) <= sum(k.point.bytes for k in report.unfused)
    assert len(report.tiles) == len(report.fused)
    assert all(t.startswith("tile ") for _, t in report.tiles)


def test_relu_add_report_numbers():
    # One generic over 37 x 300 f32: reads x, y, writes z: 3 x 44400 bytes.
    report = analyze_program(load_program(SAMPLES / "relu_add.mlir"), "h200")
    (fused,) = report.fused
    assert fused.point.bytes == 3 * 37 * 300 * 4
    assert fused.point.flops == 2 * 37 * 300
    assert fused.point.bound == "memory"


def test_timeline_puts_unfused_above_fused():
    report = analyze_program(load_program(SAMPLES / "softmax.mlir"), "h200")
    lines = timeline(report).splitlines()
    assert lines[1].lstrip().startswith("unfused") and lines[2].lstrip().startswith("fused")
    assert lines[1].count("|") - 1 == len(report.unfused)
    assert lines[2].count("|") - 1 == len(report.fused)


def test_tiles_follow_the_target():
    module = load_program(SAMPLES / "softmax.mlir", dims={"M": 64, "N": 16384})
    h200 = dict(analyze_program(module, "h200").tiles)["fused_kernel_0"]
    v100 = dict(analyze_program(module, "v100").tiles)["fused_kernel_0"]
    assert "of 227 KB" in h200 and "(loop)" not in h200
    assert "of 96 KB" in v100 and "(loop)" in v100  # the row no longer fits: looped


def test_cli_report_and_png(tmp_path):
    png = tmp_path / "roofline.png"
    r = subprocess.run([sys.executable, "-m", "tilefuse.tools.opt", str(SAMPLES / "mlp.mlir"),
                        "--report", "--target", "a100", "--roofline-png", str(png)],
                       capture_output=True, text=True, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "== fusion report: @mlp on a100" in r.stdout
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bench_timeline_draws_predicted_above_measured():
    from tilefuse.runtime.bench import kernel_timeline

    text = kernel_timeline(["k0", "k1"], {"k0": 1e-3, "k1": 2e-3}, {"k0": 1e-3, "k1": 3e-3}, 5e-3, width=50)
    _, predicted, measured = text.splitlines()
    assert predicted.count("#") == 30 and measured.count("#") == 40
    assert measured.count(".") == 10  # 1 ms of the program outside kernels
