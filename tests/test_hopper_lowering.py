"""The Hopper lowering of contractions (issue 17): on sm_90 targets a 16-bit GEMM
with row-major operands launches one program per SM slot, each looping over output
tiles, and loads its operand tiles through TMA descriptors; elsewhere (other
targets, small grids, erf epilogues, window views) it is the pointer loop. Both
lowerings run in the interpreter and give the same numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from tilefuse.backend.triton.module import emit_module
from tilefuse.frontend.program import load_program
from tilefuse.ir.tilefuse import TileGridOp
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime import compile as compile_program

from .device import DEVICE, on_device

LINEAR = "samples/linear_bias_relu.mlir"
BIG = {"M": 8192, "K": 4096, "N": 4096}


def plans(module):
    return [op.plan for op in module.walk() if isinstance(op, TileGridOp)]


def emitted(sample: str, dims: dict[str, int], target: str = "h200", dtype: str = "bf16"):
    module = load_program(sample, dims, dtype)
    run_pipeline(module, target)
    return module, emit_module(module)


def test_a_bf16_linear_on_h200_is_persistent_with_tma_operands():
    module, out = emitted(LINEAR, BIG)
    (plan,) = plans(module)
    assert [b for _, b, _ in plan.dims] == [128, 256, 64]  # M, N, K: the Hopper table's tile
    assert plan.persistent.data == 132  # one program per SM (192 KB of shared memory each)
    assert "persistent: 132 programs loop over the tiles" in plan.describe()
    (sig,) = out.kernels
    assert sig.programs == 132
    assert {p.name for p in sig.params if p.descriptor} == {"x_ptr", "w_ptr"}
    text = out.text
    assert "for tile_id in tl.range(pid, 1024, 132, flatten=True):" in text
    assert re.search(r"x_desc = tl\.make_tensor_descriptor\(x_ptr, shape=\[8192, 4096\], "
                     r"strides=\[x_s0, 1\], block_shape=\[128, 64\]\)", text)  # fmt: skip
    assert "x = x_desc.load([(pid_0 * 128), k])" in text and "w = w_desc.load([k, (pid_1 * 256)])" in text
    assert "b = tl.load(b_ptr" in text  # the epilogue's bias stays a pointer load
    assert "    x = _tma(x)\n    w = _tma(w)\n" in text and "_tma_allocator()" in text
    assert "fused_kernel_0[(132,)]" in text


def test_other_targets_and_small_grids_keep_the_pointer_loop():
    for target, dims in (("a100", BIG), ("h200", {"M": 300, "K": 192, "N": 256})):
        module, out = emitted(LINEAR, dims, target)
        assert [p.persistent.data for p in plans(module)] == [0], (target, dims)
        assert "make_tensor_descriptor" not in out.text and "_tma" not in out.text


def test_a_wave_a_few_sms_short_still_takes_the_hopper_tile():
    """1024 x 4096 x 4096 (a projection of 1024 tokens): 128 tiles of 128 x 256 keep 128
    of 132 SMs busy, better than 256 tiles of 128 x 128 in two waves (H100: 60 -> 49 us);
    a 256-token projection's 32 such tiles leave three quarters idle: the pointer loop."""
    module, _ = emitted(LINEAR, {"M": 1024, "K": 4096, "N": 4096})
    (plan,) = plans(module)
    assert [b for _, b, _ in plan.dims] == [128, 256, 64] and plan.persistent.data == 128
    module, _ = emitted(LINEAR, {"M": 256, "K": 4096, "N": 4096})
    assert [p.persistent.data for p in plans(module)] == [0]


MLP = {"M": 8192, "D": 4096, "F": 16384}


def test_f32_epilogues_keep_the_pointer_loop():
    module, _ = emitted(LINEAR, BIG, dtype="f32")
    assert [p.persistent.data for p in plans(module)] == [0]  # an IEEE f32 dot


def test_one_library_call_an_element_takes_the_hopper_lowering(monkeypatch):
    """GELU's erf GEMM is persistent at 16 warps (the inlined erf within
    `EPILOGUE_CALLS_PER_THREAD`; `HOPPER_LIBRARY_CALLS` 1, timed by
    erf_gemm_lowering.py); an epilogue of two library calls an element is not, nor
    one call with the limit set to 0."""
    import tilefuse.analysis.tile_plan as tile_plan

    module, _ = emitted("samples/mlp.mlir", MLP)
    up, down = (op for op in module.walk() if isinstance(op, TileGridOp))
    assert up.plan.persistent.data == 132 and down.plan.persistent.data == 132
    assert [b for _, b, _ in up.plan.dims] == [128, 256, 64] and up.num_warps.value.data == 16
    text = Path("samples/mlp.mlir").read_text()
    erf = "    %e1 = arith.addf %e, %one : f32\n"
    assert erf in text
    twice = text.replace(erf, "    %ee = math.erf %e : f32\n    %e1 = arith.addf %ee, %one : f32\n")
    module, _ = emitted(twice, MLP)
    assert [p.persistent.data for p in plans(module)] == [0, 132]
    monkeypatch.setattr(tile_plan, "HOPPER_LIBRARY_CALLS", 0)
    module, _ = emitted("samples/mlp.mlir", MLP)
    assert [p.persistent.data for p in plans(module)] == [0, 132]


def test_persistent_projections_share_one_launch_while_they_fit_the_l2():
    """The transformer's Q, K and V projections, persistent at these sizes, run one tile
    program on three weights: one stacked launch whose programs are split among them
    while what they read fits the L2 together (E 1024: 14 MB); at E 4096 (128 MB) they
    would evict each other's tiles, and stay three launches. The decisions say so."""
    from tilefuse.analysis.cost.target import get_target
    from tilefuse.analysis.horizontal_plan import kernel_infos, plan_horizontal
    from tilefuse.ir.module import entry_function
    from tilefuse.ir.tilefuse import GroupOp

    def plan(e: int, h: int):
        dims = {"S": 4096, "E": e, "H": h, "Dh": 128, "F": 4 * e}
        module = load_program("samples/transformer_block.mlir", dims, "bf16")
        run_pipeline(module, "h200", until="tile-and-fuse")
        groups = [g for g in entry_function(module).body.block.ops if isinstance(g, GroupOp)]
        return plan_horizontal(kernel_infos(groups, get_target("h200")), get_target("h200"))

    small = plan(1024, 8)
    assert any(d.taken and "same persistent tile program" in d.reason for d in small.decisions)
    assert any(len(b) == 3 for b in small.bundles), small.log()
    big = plan(4096, 32)
    assert any(not d.taken and "exceed the L2" in d.reason for d in big.decisions), big.log()
    assert all(len(b) == 1 for b in big.bundles if "fused_kernel_1" in b)


def _linear_inputs(m: int, k: int, n: int):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(m, k, generator=g).bfloat16()
    w = torch.randn(k, n, generator=g).bfloat16() / k**0.5
    b = torch.randn(n, generator=g).bfloat16()
    return x, w, b


def test_both_lowerings_compute_the_same_linear():
    """144 tiles of 128 x 128, three K steps: the persistent TMA kernel under the
    interpreter against the pointer loop (a100's plan) and torch."""
    dims = {"M": 1536, "K": 192, "N": 1536}
    hopper = compile_program(LINEAR, "h200", dims, "bf16")
    pointers = compile_program(LINEAR, "a100", dims, "bf16")
    assert "make_tensor_descriptor" in hopper.source and "make_tensor_descriptor" not in pointers.source
    x, w, b = _linear_inputs(1536, 192, 1536)
    (got,) = hopper(*(on_device(t) for t in (x, w, b)))
    (want,) = pointers(*(on_device(t) for t in (x, w, b)))
    ref = torch.relu(x.double() @ w.double() + b.double())
    scale = ref.abs().max()
    assert float((got.cpu().double() - ref).abs().max() / scale) < 1e-2
    assert float((got.cpu().double() - want.cpu().double()).abs().max() / scale) < 1e-2


def test_a_partial_k_tile_reads_zeros_past_the_tensor():
    """K = 200 is not a multiple of the 64-wide K tile: the last TMA tile reaches
    past the operands' last column and must read zeros there (no mask)."""
    dims = {"M": 1536, "K": 200, "N": 1536}
    program = compile_program(LINEAR, "h200", dims, "bf16")
    assert "make_tensor_descriptor" in program.source
    x, w, b = _linear_inputs(1536, 200, 1536)
    (got,) = program(*(on_device(t) for t in (x, w, b)))
    ref = torch.relu(x.double() @ w.double() + b.double())
    assert float((got.cpu().double() - ref).abs().max() / ref.abs().max()) < 1e-2


def test_the_host_copies_a_tensor_tma_cannot_read():
    """`_tma` passes a row-major 16-byte-aligned tensor through and copies any
    other (an offset view, a transposed one) to a fresh row-major tensor."""
    program = compile_program(LINEAR, "h200", {"M": 1536, "K": 192, "N": 1536}, "bf16")
    tma = program.python._tma
    base = torch.randn(4, 130).bfloat16()
    aligned = base[:, :128]  # row stride 260 bytes: not a multiple of 16
    for t in (aligned, base.T, base[:, 1:], torch.randn(64).bfloat16().expand(8, 64)):
        copy = tma(t)
        assert copy.data_ptr() % 16 == 0 and copy.is_contiguous() and torch.equal(copy, t)
    ok = torch.randn(8, 64).bfloat16()
    assert tma(ok) is ok


def test_a_persistent_plan_prints_and_parses_back():
    from xdsl.parser import Parser

    from tilefuse.ir.context import make_context
    from tilefuse.ir.tilefuse import TilePlanAttr

    for persistent, note in ((132, "row order"), (264, ""), (0, "a note")):
        plan = TilePlanAttr([(8192, 128, "grid"), (4096, 64, "loop")], 8, 3, 1000, 232448, 186,
                            0.12, dot="bf16", note=note, persistent=persistent)  # fmt: skip
        text = str(plan)
        assert ("persistent = " in text) == bool(persistent), text
        assert Parser(make_context(), text).parse_attribute() == plan


def test_two_contractions_of_one_operand_share_a_persistent_kernel():
    """LLaMA's gate and up projections as torch-mlir exports them (one kernel: two
    contractions of the same activation, SiLU between): persistent, three TMA
    descriptors, 128 x 128 tiles (both accumulators live), one K loop running both
    dots on one load of the activation (`passes/sibling_loops.py`), the tile loop
    flattened with it, and the numbers of torch."""
    from torch import nn

    import tilefuse.torch as tt

    class SwiGLU(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(128, 1536, bias=False)
            self.up = nn.Linear(128, 1536, bias=False)

        def forward(self, x):
            return nn.functional.silu(self.gate(x)) * self.up(x)

    torch.manual_seed(0)
    model = SwiGLU().to(DEVICE, torch.bfloat16).eval()
    x = on_device(torch.randn(1536, 128).bfloat16())
    with torch.no_grad():
        compiled = tt.compile(model, x)
        assert compiled.source.count("tl.make_tensor_descriptor(") == 3, compiled.source
        assert "block_shape=[128, 64]" in compiled.source
        assert "flatten=True)" in compiled.source and "for k_1 in" not in compiled.source
        assert compiled.source.count("_desc.load(") == 3, compiled.source  # x once, Wg, Wu
        out = compiled(x)
        got = out[0] if isinstance(out, tuple) else out
        ref = model.float()(x.float())
    assert float((got.float() - ref).abs().max() / ref.abs().max()) < 2e-2


def _swiglu(d: int, hidden: int):
    from torch import nn

    class SwiGLU(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(d, hidden, bias=False)
            self.up = nn.Linear(d, hidden, bias=False)

        def forward(self, x):
            return nn.functional.silu(self.gate(x)) * self.up(x)

    return SwiGLU().bfloat16().eval()


@pytest.mark.parametrize(("tokens", "d", "hidden", "target", "apart"), [
    (1024, 4096, 11008, "h200", True),   # LLaMA-7B's MLP at 1024 tokens: 339 -> 280 us apart (H100)
    (8192, 1024, 2816, "h200", False),   # K = 1024: one kernel measured 4% faster
    (1024, 4096, 11008, "a100", False),  # no shared-loop measurement off sm_90
])  # fmt: skip
def test_sibling_contractions_apart_when_the_shared_loop_loses_more(tokens, d, hidden, target, apart,
                                                                    tmp_path):  # fmt: skip
    """Gate and up projections share one K loop (two 128 x 128 accumulators) or run as
    two GEMMs, the gate's epilogue reading the up projection's result, by predicted
    time: the shared loop's loss (`SIBLING_EFFICIENCY`) against the round trip of the
    up projection's result (`fusion_plan._sibling_refusal`, logged)."""
    import tilefuse.torch as tt

    with torch.no_grad():
        compiled = tt.compile(_swiglu(d, hidden), torch.zeros(tokens, d, dtype=torch.bfloat16),
                              target=target, dump_dir=tmp_path)  # fmt: skip
    assert len(compiled.kernels) == (2 if apart else 1)
    (report,) = tmp_path.glob("*/report.txt")
    assert ("sibling contractions in one K loop" in report.read_text()) == apart


def test_projections_of_one_input_share_one_persistent_launch():
    """Q, K and V projections of one input with biases (BERT's; torch-mlir writes the
    bias cast before the accumulator's fill for one of them and after it for the
    others: fusion-groups orders a group's ops by what they read, so all three are one
    tile program): one persistent launch whose programs are split among the three,
    each making its member's TMA descriptors once, and the numbers of torch."""
    from torch import nn

    import tilefuse.torch as tt

    class QKV(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = (nn.Linear(128, 1536) for _ in range(3))

        def forward(self, x):
            return self.q(x), self.k(x), self.v(x)

    torch.manual_seed(0)
    model = QKV().to(DEVICE, torch.bfloat16).eval()
    x = on_device(torch.randn(1536, 128).bfloat16())
    with torch.no_grad():
        compiled = tt.compile(model, x)
        src = compiled.source
        assert len(compiled.kernels) == 1, src
        assert "seg = pid // 44" in src and "tl.range(mpid, 144, 44, flatten=True)" in src, src
        assert "_tma_same(" in src
        outs = compiled(x)
        refs = model.float()(x.float())
    for got, ref in zip(outs, refs, strict=True):
        assert float((got.float() - ref).abs().max() / ref.abs().max()) < 2e-2


def test_autotune_candidates_of_a_persistent_plan_never_add_a_stage():
    """A persistent plan's shared memory is its stages' buffers plus the epilogue's:
    the autotuner's neighbours take a stage away or change warps, never add one."""
    from tilefuse.analysis.cost.target import get_target
    from tilefuse.analysis.dataflow import build_graph, shared_dims
    from tilefuse.analysis.tile_plan import tile_candidates
    from tilefuse.ir.tilefuse import GroupOp

    module = load_program(LINEAR, BIG, "bf16")
    run_pipeline(module, "h200", until="fusion-groups")
    (group,) = [op for op in module.walk() if isinstance(op, GroupOp)]
    graph = build_graph(group.entry)
    base, *others = tile_candidates(graph, shared_dims(graph, graph.nodes), get_target("h200"))
    assert base.persistent == 132 and others
    assert all(c.num_stages <= base.num_stages for c in others), others
