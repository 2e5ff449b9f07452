"""Every kernel of every sample, test program (tests/programs/) and zoo model, of
the zoo models at the sizes issue 16's benchmark runs them (`zoo.BENCH`, bf16), and
of dynamic forms of samples (their sizes run-time `i32` arguments, `DYNAMIC`),
compiles for sm_90 (no GPU needed) within the H200's limits, and the plan's count
of shared memory is the one ptxas reports:

- never under: a kernel the plan says fits never fails with OutOfResources;
- for a kernel of one tile program with a 16-bit `tl.dot`, within
  `SMEM_TOLERANCE` (`budget.contraction_smem`'s documented over-counts: the
  epilogue conversion counted in f32, operands Triton does not pipeline);
  horizontal kernels (branches added), f32 dots (counted as TF32) and
  memory-bound kernels (the working set bounds their scratch) only never under.

`pytest -s tests/test_gpu_compile.py` prints, per program, ptxas's registers,
spills and shared memory next to the plan's. Identical kernels compile once
(`gpu.check.kernel_key`), results are cached on disk per triton version.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("triton")

from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.tile_plan import GRID, LOOP, DimTile, TilePlan
from tilefuse.backend.triton.emit import emit_module
from tilefuse.frontend.program import load_program
from tilefuse.frontend.specialize import dynamic_form, specialize
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
from tilefuse.ir.dynamic import DimRange
from tilefuse.pipeline import run_pipeline
from tilefuse.testing.zoo import BENCH, ZOO
from tilefuse.tools.gpu_check import main

SAMPLES = Path(__file__).parent.parent / "samples"
PROGRAMS = Path(__file__).parent / "programs"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.mlir"))
TARGET = get_target("h200")
HAVE_TORCH_MLIR = importlib.util.find_spec("torch_mlir") is not None
if HAVE_TORCH_MLIR:
    import torch

    from tilefuse.torch.export import export

SMEM_TOLERANCE, SMEM_SLACK = 1.35, 4096
"""A 16-bit dot kernel's planned shared memory is at most this times ptxas's,
plus this many bytes."""


@dataclass(frozen=True)
class Case:
    kind: str  # sample, program, zoo, bench, dynamic
    name: str
    dims: tuple[tuple[str, int], ...] | None = None
    dtype: str | None = None
    dynamic: tuple[str, tuple[str, ...], int] | None = None
    """(the header dim made dynamic, the argument dims it is, the range's end)."""

    @property
    def id(self) -> str:
        if self.kind == "dynamic":
            assert self.dynamic is not None
            return f"dynamic:{self.name}-{self.dynamic[0]}"
        if self.kind != "sample":
            return f"{self.kind}:{self.name}"
        if self.dims is None:
            return self.name
        return f"{self.name}-{'x'.join(str(v) for _, v in self.dims)}-{self.dtype}"


# Every sample at its test size, and a few at the sizes they run at in models.
REALISTIC = [
    Case("sample", "softmax", (("M", 4096), ("N", 8192)), "bf16"),
    Case("sample", "layernorm", (("M", 16384), ("N", 4096)), "bf16"),
    Case("sample", "linear_bias_relu", (("M", 8192), ("K", 4096), ("N", 4096)), "bf16"),
    Case("sample", "bias_gelu", (("M", 8192), ("N", 8192)), "bf16"),  # tanh.approx.f32 inline PTX
    # FlashAttention at head dims 64 and 128 (128 x 128 tiles, 3 stages: 224 KB)
    Case("sample", "attention", (("B", 2), ("H", 4), ("S", 1024), ("D", 64)), "bf16"),
    Case("sample", "attention", (("B", 2), ("H", 4), ("S", 1024), ("D", 128)), "bf16"),
    Case("sample", "mlp", (("M", 8192), ("D", 4096), ("F", 16384)), "bf16"),
]
SPILL_FREE_CONTRACTIONS = {"dynamic:attention-S"}
"""Cases whose contraction kernels must not spill either (others may: reported)."""
# Dynamic forms: variants, stacked projections, run-time masks and loop bounds.
DYNAMIC = [
    Case("dynamic", "attention", (("B", 2), ("H", 4), ("D", 128)), "bf16", ("S", ("q.2", "k.2", "v.2"), 4096)),
    Case("dynamic", "transformer_block", (("E", 1024), ("H", 16), ("Dh", 64), ("F", 4096)), "bf16",
         ("S", ("x.0",), 4096)),
    Case("dynamic", "linear_bias_relu", (("K", 4096), ("N", 11008)), "bf16", ("M", ("x.0",), 16384)),
]
TORCH = pytest.mark.skipif(not HAVE_TORCH_MLIR, reason="torch-mlir exports the zoo")
CASES = (
    [pytest.param(Case("sample", n), id=n) for n in NAMES]
    + [pytest.param(c, id=c.id) for c in REALISTIC + DYNAMIC]
    + [pytest.param(Case("program", p.stem), id=f"program:{p.stem}")
       for p in sorted(PROGRAMS.glob("*.mlir"))]
    + [pytest.param(Case("zoo", n), id=f"zoo:{n}", marks=TORCH) for n in sorted(ZOO)]
    + [pytest.param(Case("bench", n), id=f"bench:{n}", marks=TORCH) for n in BENCH]
)  # fmt: skip


def _exported(case: Case):
    model, inputs = (ZOO if case.kind == "zoo" else BENCH)[case.name].build()
    if case.kind == "bench":
        model = model.to(torch.bfloat16)
        inputs = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs)
    return load_program(str(export(model, inputs, case.name).mlir))


def compiled(case: Case):
    if case.kind == "sample":
        module = load_program(SAMPLES / f"{case.name}.mlir", dict(case.dims or ()), case.dtype)
    elif case.kind == "dynamic":
        assert case.dynamic is not None
        dim, names, hi = case.dynamic
        text = specialize((SAMPLES / f"{case.name}.mlir").read_text(), dict(case.dims or ()), case.dtype)
        module = load_program(dynamic_form(text, dim), dim_ranges=dict.fromkeys(names, DimRange(1, hi)))
    elif case.kind == "program":
        module = load_program(PROGRAMS / f"{case.name}.mlir")
    else:
        module = _exported(case)
    run_pipeline(module, TARGET.name)
    return module, emit_module(module)


def sample(name, dims=None, dtype=None):
    return compiled(Case("sample", name, tuple(dims.items()) if dims else None, dtype))


@pytest.fixture(scope="module")
def reports(request):
    """Reports of the selected cases, compiled in one batch (under the
    interpreter: one child process); a case's error takes its place."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if getattr(item, "originalname", None) == "test_kernels_fit_sm90"
        and not any(m.name == "skipif" and m.args[0] for m in item.iter_markers())
    ]
    out, programs = {}, {}
    for case in selected:
        try:
            programs[case.id] = compiled(case)
        except Exception as e:  # a pipeline failure fails its case only
            out[case.id] = e
    results = check_programs(list(programs.values()), TARGET)
    out.update(zip(programs, results, strict=True))
    return out


def check_report(r: KernelReport, spill_free: bool, contractions_too: bool = False) -> None:
    assert r.smem_limit == TARGET.smem_per_block
    assert r.fits, f"{r.name}: {r.shared_bytes} B shared > {r.smem_limit} B"
    assert r.registers <= TARGET.max_regs_per_thread, r
    if spill_free and (contractions_too or not r.contraction):  # contractions may spill (reported above)
        assert r.spills == 0, f"{r.name} spills {r.spills} words/thread"
    assert r.predicted_regs is not None and r.predicted_working_set is not None
    assert r.shared_bytes <= r.predicted_working_set, (
        f"{r.name}: ptxas {r.shared_bytes} B of shared memory, the plan {r.predicted_working_set} B")
    if r.dot in ("bf16", "f16") and r.branches == 1:
        assert r.predicted_working_set <= SMEM_TOLERANCE * r.shared_bytes + SMEM_SLACK, (
            f"{r.name}: the plan counts {r.predicted_working_set} B, ptxas {r.shared_bytes} B")


KNOWN_OVERCOUNTS = {
    "program:attention_bf16_rounded_scores_and_probs":
        "FlashAttention with a 24-wide head (padded to 32): the plan counts 41 KB, ptxas "
        "12 KB; the attention count does not model narrow heads yet (safe: over, not under)",
}  # fmt: skip
"""Cases whose plan counts more shared memory than ptxas beyond the tolerance: the
check must still fail them that way (and fails once the count is right)."""


@pytest.mark.parametrize("case", CASES)
def test_kernels_fit_sm90(case, reports):
    result = reports[case.id]
    if isinstance(result, Exception):
        raise result
    print("\n" + format_reports(result, case.id))
    assert result or case.kind == "program"  # some programs need no kernel
    for r in result:
        if case.id in KNOWN_OVERCOUNTS:
            with pytest.raises(AssertionError, match="the plan counts"):
                check_report(r, spill_free=False)
            continue
        # (a dynamic attention's store mask was once one value with its Q load's,
        # held across the key loops: spills on sm_90, 0.72x the static kernel)
        check_report(r, spill_free=case.kind in ("sample", "dynamic"),
                     contractions_too=case.id in SPILL_FREE_CONTRACTIONS)
    # tanh of bf16 ops is the SFU instruction on the GPU; f16 (the sample's
    # test dtype) and f32 keep the exact formula
    if case.name == "bias_gelu":
        assert ("tanh.approx" in result[0].ptx_has) == (case.dtype == "bf16")
    # FlashAttention's exponentials flush subnormal results (SOFTMAX_EXP): the
    # SFU's ex2 alone, without tl.exp's range fix-up
    # erf (the MLP sample's GELU) is libdevice's erff without its branch (`prelude._erf`)
    if case.name == "mlp" and case.kind == "sample":
        assert not any("libdevice erff" in r.ptx_has for r in result), result
        assert any("ex2.approx.ftz" in r.ptx_has for r in result), result
    if case.name == "attention" and case.kind == "sample":
        assert all("ex2.approx.ftz" in r.ptx_has and "ex2.approx" not in r.ptx_has for r in result), result


def test_the_check_fails_a_plan_under_ptxas():
    """The comparison can fail: a plan that counts less than ptxas, or a 16-bit dot
    counted far over, is reported."""
    report = KernelReport("k", 100, 0, 64 * 1024, 227 * 1024, 100, 48 * 1024, 8, 4,
                          fits=True, contraction=True, dot="bf16")  # fmt: skip
    with pytest.raises(AssertionError, match="ptxas 65536 B of shared memory"):
        check_report(report, spill_free=True)
    over = KernelReport("k", 100, 0, 48 * 1024, 227 * 1024, 100, 192 * 1024, 8, 4,
                        fits=True, contraction=True, dot="bf16")  # fmt: skip
    with pytest.raises(AssertionError, match="the plan counts"):
        check_report(over, spill_free=True)


def test_check_kernels_one_program():
    module, emitted = sample("relu_add", {"N": 512}, "f16")
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
    module, emitted = sample("softmax", {"M": 64, "N": 1000}, "bf16")
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
    _, emitted = sample("relu_add")
    source = emitted.text
    text = kernel_only_source(source)
    assert "import torch" in source and "import torch" not in text
    assert text.count("\n") == source.count("\n")  # line numbers kept


def test_contraction_constexprs_follow_the_host():
    module, emitted = sample("linear_bias_relu", {"M": 64, "K": 64, "N": 32}, "bf16")
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
