"""Every sample's kernels compile for sm_90 (no GPU needed) within the H200's limits.

`pytest -s tests/test_gpu_compile.py` prints, per program, ptxas's registers,
spills and shared memory next to the cost model's prediction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("triton")

from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.tile_plan import GRID, LOOP, DimTile, TilePlan
from tilefuse.backend.triton.emit import emit_module
from tilefuse.frontend.program import load_program
from tilefuse.gpu.check import (
    KernelReport,
    TileSummary,
    check_kernels,
    check_programs,
    contiguous_strides,
    format_reports,
    kernel_only_source,
    kernel_specs,
    tile_summary,
)
from tilefuse.pipeline import run_pipeline
from tilefuse.tools.gpu_check import main

SAMPLES = Path(__file__).parent.parent / "samples"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.mlir"))
TARGET = get_target("h200")

# Every sample at its test size, and a few at the sizes they run at in models.
REALISTIC = [
    ("softmax", {"M": 4096, "N": 8192}, "bf16"),
    ("layernorm", {"M": 16384, "N": 4096}, "bf16"),
    ("linear_bias_relu", {"M": 8192, "K": 4096, "N": 4096}, "bf16"),
    ("bias_gelu", {"M": 8192, "N": 8192}, "bf16"),  # tanh.approx.f32 inline PTX
]
CASES = [(name, None, None) for name in NAMES] + REALISTIC


def case_id(case) -> str:
    name, dims, dtype = case
    if dims is None:
        return name
    return f"{name}-{'x'.join(str(v) for v in dims.values())}-{dtype}"


def compiled(name, dims=None, dtype=None):
    module = load_program(SAMPLES / f"{name}.mlir", dims, dtype)
    run_pipeline(module, TARGET.name)
    return module, emit_module(module)


@pytest.fixture(scope="module")
def reports(request):
    """Reports of the selected cases, compiled in one batch (under the
    interpreter: one child process); a case's error takes its place."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_kernels_fit_sm90"
    ]
    out, programs = {}, {}
    for case in selected:
        try:
            programs[case_id(case)] = compiled(*case)
        except Exception as e:  # a pipeline failure fails its case only
            out[case_id(case)] = e
    results = check_programs(list(programs.values()), TARGET)
    out.update(zip(programs, results, strict=True))
    return out


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_kernels_fit_sm90(case, reports):
    result = reports[case_id(case)]
    if isinstance(result, Exception):
        raise result
    print("\n" + format_reports(result, case_id(case)))
    assert result
    for r in result:
        assert r.smem_limit == TARGET.smem_per_block
        assert r.fits, f"{r.name}: {r.shared_bytes} B shared > {r.smem_limit} B"
        assert r.registers <= TARGET.max_regs_per_thread, r
        if not r.contraction:  # contractions may spill (reported above)
            assert r.spills == 0, f"{r.name} spills {r.spills} words/thread"
        assert r.predicted_regs is not None and r.predicted_working_set is not None
    # tanh of bf16 ops is the SFU instruction on the GPU; f16 (the sample's
    # test dtype) and f32 keep the exact formula
    name, _, dtype = case
    if name == "bias_gelu":
        assert ("tanh.approx" in result[0].ptx_has) == (dtype == "bf16")


def test_check_kernels_one_program():
    module, emitted = compiled("relu_add", {"N": 512}, "f16")
    (report,) = check_kernels(module, emitted, "h200")
    assert report.name == "fused_kernel_0" and report.fits and not report.contraction
    assert report.spills == 0 and 0 < report.registers <= 255


def test_tile_summary_reads_the_plan():
    plan = TilePlan(
        dims=(DimTile(0, 100, 16, GRID), DimTile(1, 96, 32, LOOP)),
        num_warps=4, num_stages=3, working_set=3 * 1024 + 500,
        smem_budget=227 * 1024, regs_per_thread=44, occupancy=0.62, contraction=True,
    )  # fmt: skip
    # the bytes themselves, not the 0.1 KB the prose rounds them to
    assert tile_summary(plan.attr()) == TileSummary(44, 3572)
    assert tile_summary(None) == TileSummary(None, None)


def test_signature_is_the_launchers():
    module, emitted = compiled("softmax", {"M": 64, "N": 1000}, "bf16")
    (spec,) = kernel_specs(module, emitted)
    sig, consts = dict(spec.signature), dict(spec.constexprs)
    assert sig == {"x_ptr": "*bf16", "x_s0": "i32",
                   "y_ptr": "*bf16", "y_s0": "i32"}  # fmt: skip
    # Unit innermost strides become the constexpr 1, as Triton's launcher does;
    # a kernel without tl.dot takes no DOT_DTYPE.
    assert consts == {"x_s1": 1, "y_s1": 1}
    # 1000 is no multiple of 16, so only the pointers are divisible by 16.
    assert spec.divisible_by_16 == ("x_ptr", "y_ptr")
    assert contiguous_strides((3, 1, 5)) == (5, 5, 1)
    assert contiguous_strides(()) == ()


def test_kernel_only_source_drops_torch():
    _, emitted = compiled("relu_add")
    source = emitted.text
    text = kernel_only_source(source)
    assert "import torch" in source and "import torch" not in text
    assert text.count("\n") == source.count("\n")  # line numbers kept


def test_contraction_constexprs_follow_the_host():
    module, emitted = compiled("linear_bias_relu", {"M": 64, "K": 64, "N": 32}, "bf16")
    (spec,) = kernel_specs(module, emitted)
    consts = dict(spec.constexprs)
    assert consts["DOT_DTYPE"] == "bfloat16" and consts["DOT_PRECISION"] == "tf32"
    assert spec.contraction and spec.num_stages > 1
    assert {"x_s0", "w_s0", "y_s0"} <= set(spec.divisible_by_16)


def test_format_reports_flags_problems():
    report = KernelReport("k", 300, 4, 240 * 1024, 227 * 1024, 40, 4096, 8, 1,
                          fits=False)  # fmt: skip
    table = format_reports([report], "title")
    assert table.splitlines()[0] == "== title =="
    assert "SMEM>LIMIT" in table and "REGS>MAX" in table and "SPILLS" in table


def test_command_line(capsys):
    path = str(SAMPLES / "relu_add.mlir")
    assert main([path, "--set-dim", "N=4096", "--target", "h200"]) == 0
    out = capsys.readouterr().out
    assert "relu_add.mlir on h200 (sm_90)" in out and "fused_kernel_0" in out
    assert main([path, "--set-dim", "N"]) == 1
    assert "--set-dim expects NAME=SIZE" in capsys.readouterr().err


def test_remf_compiles_to_libdevice_fmod_for_sm90():
    """arith.remf goes to libdevice's fmod on the GPU (exact; NVPTX's frem is
    a - b * trunc(a / b)): the GPU branch of the prelude compiles, f32 and f64."""
    from tests.test_nan_semantics import REMF

    for dtype in ("f32", "f64"):
        module = load_program(REMF.replace("T", dtype))
        run_pipeline(module, TARGET.name)
        (report,) = check_kernels(module, emit_module(module), TARGET.name)
        assert report.fits and report.spills == 0
