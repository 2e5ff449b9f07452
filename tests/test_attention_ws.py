"""The warp-specialised Hopper attention (`tile_plan.warp_specialized_attention`,
`backend/triton/attention_ws.py`): which groups take it and why the others do not, the
Gluon kernel it prints (compiled for sm_90 in `test_gpu_compile.py`, run on the device by
`tools/experiments/attention_ws_check.py`), and the Triton kernel of the same tile program
that the host runs under the interpreter, checked here against the reference."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from tests.attention_programs import attention_mlir
from tests.gluon_emulator import causal_kernel_printed  # noqa: F401 (an autouse fixture)
from tests.numpy_graphs import GRAPHS
from tilefuse.analysis.cost.target import get_target
from tilefuse.backend.triton.attention_ws import NotWarpSpecialized, gluon_line
from tilefuse.backend.triton.module import emit_module
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.gpu.check import check_programs
from tilefuse.ir.module import entry_function
from tilefuse.ir.tilefuse import GroupOp
from tilefuse.oracle.compare import relative_error
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime.compiled import compile as compile_mlir
from tilefuse.tools.run import to_torch

SAMPLE = "samples/attention.mlir"


def planned(module, target="h100"):
    run_pipeline(module, target)
    (g,) = [op for op in entry_function(module).body.block.ops if isinstance(op, GroupOp)]
    (grid,) = g.grids
    return module, grid.plan


def sample(s=256, d=128, dtype="bf16", target="h100"):
    return planned(load_program(SAMPLE, {"B": 1, "H": 2, "S": s, "D": d}, dtype), target)


def test_bf16_head_dim_128_takes_the_warp_specialised_kernel():
    module, plan = sample()
    assert plan.consumers.data == 2
    _, blocks, modes = zip(*plan.dims, strict=True)
    assert (blocks[2], modes[2]) == (64, "grid")  # 64 query rows a consumer
    assert (blocks[3], modes[3]) == (128, "loop")  # key tiles of 128
    assert "warp-specialised (Gluon): 2 tiles a program" in plan.describe()
    emitted = emit_module(module)
    (sig,) = emitted.kernels
    assert sig.gpu is not None and sig.gpu.name == "fused_kernel_0_ws"
    assert sig.gpu.programs * 2 == sig.programs == 1 * 2 * (256 // 64)
    assert [p.name for p in sig.gpu.params if p.descriptor] == ["k_ptr", "v_ptr"]  # K, V by TMA
    text = emitted.text
    for needle in ("def fused_kernel_0_ws_step0(s, k, ", "def fused_kernel_0_ws_loader(",
                   "def fused_kernel_0_ws_consumer(", "gl.warp_specialize([", "], [4, 1], [240, 24])",
                   "warpgroup_mma_wait(1, deps=(s, ))", "mbarrier.init(k_empty.index(i), count=2)"):  # fmt: skip
        assert needle in text, needle
    # the host: the Gluon kernel on a GPU, the Triton one under the interpreter
    launch = re.search(r"    if _ON_GPU:\n(?:        .* = _tma\(.*\n)*        fused_kernel_0_ws\[\((\d+),\)\].*num_warps=4.*\n"
                       r"    else:\n        fused_kernel_0\[\((\d+),\)\]", text)  # fmt: skip
    assert launch is not None, text
    assert (int(launch[1]), int(launch[2])) == (4, 8)


@pytest.mark.parametrize(("program", "why"), [
    (lambda: load_program(SAMPLE, {"B": 1, "H": 2, "S": 256, "D": 64}, "bf16"), "head dim 64"),
    (lambda: load_program(SAMPLE, {"B": 1, "H": 2, "S": 192, "D": 128}, "bf16"), "query rows not a multiple of 128"),
    (lambda: load_program(SAMPLE, {"B": 1, "H": 2, "S": 128, "D": 128}, "bf16"), "one key tile"),
    (lambda: load_program(attention_mlir(1, 2, 256, 256, 128, additive_mask=True, dtype="bf16")),
     "a tensor read along the key dim"),
])  # fmt: skip
def test_other_attention_keeps_the_triton_kernel_and_says_why(program, why):
    _, plan = planned(program())
    assert plan.consumers.data == 0
    assert "not warp-specialised: " in plan.note.data and why in plan.note.data, plan.note.data


def test_causal_attention_bounds_both_tiles_key_loops_by_their_rows_together():
    """The consumers' key loops end at the diagonal of the program's last row, one bound
    for both (`TileProgramBuilder._row_span`); programs run longest first."""
    module, plan = planned(load_program(attention_mlir(1, 2, 512, 512, 128, causal=True, dtype="bf16")))
    assert plan.consumers.data == 2
    text = emit_module(module).text
    assert "pid = (7 - gl.program_id(0)) * 2 + consumer" in text
    assert "pid = (7 - gl.program_id(0)) * 2\n" in text  # (the producer: the first tile's loops)
    loops = re.findall(r"\n    for (k\w*) in range\((.*), 128\):", text.split("def fused_kernel_0_ws_loader")[1])
    assert len(loops) == 2  # below the diagonal without the mask, then the masked tile
    assert all("// 128) * 128)" in bound for _, bound in loops), loops


@pytest.mark.parametrize(("dtype", "target"), [("f32", "h100"), ("bf16", "a100")])
def test_no_note_where_the_kernel_was_never_in_question(dtype, target):
    _, plan = sample(dtype=dtype, target=target)
    assert plan.consumers.data == 0 and "warp-specialised" not in plan.note.data


def test_gluon_names_map_and_unknown_ones_refuse():
    line = "t = tl.where(m, tl.exp(x), 0.0) + _max_nan(y, axis=1) + tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)"
    assert gluon_line(line) == ("t = gl.where(m, gl.exp(x), 0.0) + _gl_max_nan(y, axis=1) + "
                                "gl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)")  # fmt: skip
    with pytest.raises(NotWarpSpecialized, match=r"tl\.broadcast_to"):
        gluon_line("x = tl.broadcast_to(y, (64, 128))")


@pytest.mark.parametrize("s", [256, 384])
def test_the_same_tile_program_as_triton_matches_numpy(s):
    """Under the interpreter the host runs the Triton kernel of the warp-specialised
    plan's tile program (64-row query tiles in pairs, key tiles of 128)."""
    dims = {"B": 1, "H": 2, "S": s, "D": 128}
    module = load_program(SAMPLE, dims, "bf16")
    inputs = random_inputs(module, seed=3)
    (want,) = GRAPHS["attention"](*[x.astype(np.float64) for x in inputs], dims=dims)
    prog = compile_mlir(Path(SAMPLE).read_text(), target="h100", dims=dims, dtype="bf16")
    assert "fused_kernel_0_ws" in prog.source and len(prog.kernels) == 1
    (got,) = prog(*to_torch(inputs, module, "cpu"))
    assert relative_error(np.asarray(got.double()), want) < 1e-2


@pytest.mark.parametrize("causal", [False, True])
def test_the_gluon_kernel_compiles_for_sm90_within_its_plan(causal):
    """Both kernels of the group compile for sm_90 (this Triton): no spills, shared memory
    at most the plan's (`tile_plan.WS_SYNC_BYTES` counts the barriers)."""
    module, plan = planned(load_program(attention_mlir(1, 2, 512, 512, 128, causal=causal, dtype="bf16")))
    assert plan.consumers.data == 2
    emitted = emit_module(module)
    (reports,) = check_programs([(module, emitted)], get_target("h100"))
    assert not isinstance(reports, Exception), reports
    by_name = {r.name: r for r in reports}
    ws = by_name["fused_kernel_0_ws"]
    assert ws.spills == 0 and ws.fits, ws
    assert ws.shared_bytes <= ws.predicted_working_set, ws
