"""What stages hand on: `#tilefuse.cost`, `#tilefuse.tile_plan`, and the one rule each
for a dot, a dtype and an on-chip fit that their fields come from."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import TensorType, bf16, f32, i1
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from tilefuse.analysis.budget import fit, pow2
from tilefuse.analysis.cost.roofline import predicted_time, roofline_mixed
from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.tile_plan import GRID, LOOP, DimTile, TilePlan
from tilefuse.backend.triton.emit import emit_triton
from tilefuse.frontend.program import load_program
from tilefuse.ir.context import make_context
from tilefuse.ir.dtypes import dtype_bytes, dtype_name, float_name, torch_float_name
from tilefuse.ir.tilefuse import CostAttr, GroupOp, TilePlanAttr, describe_tiles
from tilefuse.pipeline import run_pipeline

ROOT = Path(__file__).parent.parent
H200 = get_target("h200")


def parse(text: str):
    return Parser(make_context(), text).parse_attribute()


def plan(**changes) -> TilePlan:
    fields = dict(
        dims=(DimTile(0, 100, 16, GRID), DimTile(1, 96, 32, LOOP)),
        num_warps=4, num_stages=3, working_set=3 * 1024 + 512,
        smem_budget=227 * 1024, regs_per_thread=44, occupancy=0.62, contraction=True,
    )  # fmt: skip
    return TilePlan(**{**fields, **changes})


def test_cost_round_trips_and_adds_up():
    cost = CostAttr(2000, 12000, 20000, 0, 10, "f32")
    assert parse(str(cost)) == cost
    assert str(cost) == ("#tilefuse.cost<flops = 2000, fused_bytes = 12000, unfused_bytes = "
                         '20000, tc_flops = 0, sfu_ops = 10, dtype = "f32">')  # fmt: skip
    both = cost + CostAttr(100, 8, 8, 64, 0, "bf16")
    assert both.counts() == {"flops": 2100, "fused_bytes": 12008, "unfused_bytes": 20008,
                             "tc_flops": 64, "sfu_ops": 10}  # fmt: skip
    assert both.dtype.data == "bf16"  # the dtype of the tensor-core work


def test_cost_verifier_sentences():
    with pytest.raises(VerifyException, match=r"tensor-core FLOPs \(5\) are part of its FLOPs"):
        CostAttr(4, 0, 0, tc_flops=5)
    with pytest.raises(VerifyException, match="sfu_ops must not be negative"):
        CostAttr(4, 0, 0, sfu_ops=-1)
    with pytest.raises(VerifyException, match="dtype must be one of f64, f32, f16, bf16"):
        CostAttr(4, 0, 0, dtype="i8")


def test_predicted_time_prices_tensor_cores_in_the_costs_dtype():
    cost = CostAttr(2 * 10**9, 10**6, 10**7, 2 * 10**9, 0, "f16")
    expected = roofline_mixed(2e9, 1e6, H200, "f16", 2e9, 0, launches=0).time
    assert predicted_time(cost, H200) == expected
    v100 = get_target("v100")  # no bf16 tensor cores: the cost's f16 is what it prices
    assert predicted_time(cost, v100) > predicted_time(cost, H200)


def test_tile_plan_round_trips_and_describes_as_the_planner_does():
    grouped = plan(dims=(DimTile(0, 100, 16, GRID), DimTile(1, 80, 16, GRID),
                         DimTile(2, 96, 32, LOOP)),
                   swizzle=(0, 1), group_m=8, schedule_note='grouped order "8 rows"')  # fmt: skip
    for p in (plan(), grouped):
        attr = p.attr("bf16")
        assert parse(str(attr)) == attr
        assert attr.describe() == p.describe()
    attr = grouped.attr("bf16")
    assert attr.grid == (7, 5) and attr.swizzle == (0, 1) and attr.group_m == 8
    assert attr.dot_dtype == "bf16" and plan().attr().dot_dtype is None
    assert plan().describe() == (
        "tile 16x32(loop), grid 7, working set 3.5 KB of 227 KB, ~44 regs/thread, "
        "4 warps, 3 stages, occupancy 0.62"
    )


def test_tile_plan_verifier_sentences():
    dims = [(100, 16, GRID), (96, 32, LOOP)]
    with pytest.raises(VerifyException, match="must be powers of two"):
        TilePlanAttr([(100, 12, GRID)], 4, 1, 0, 0, 40, 0.5)
    with pytest.raises(VerifyException, match="power-of-two number of warps"):
        TilePlanAttr(dims, 6, 1, 0, 0, 40, 0.5)
    with pytest.raises(VerifyException, match=r"occupancy is a fraction in \[0, 1\]"):
        TilePlanAttr(dims, 4, 1, 0, 0, 40, 2.0)
    with pytest.raises(VerifyException, match="grouped order names two distinct grid dims"):
        TilePlanAttr(dims, 4, 1, 0, 0, 40, 0.5, swizzle=(0, 1))  # one grid dim
    with pytest.raises(VerifyException, match="dot dtype must be one of"):
        TilePlanAttr(dims, 4, 1, 0, 0, 40, 0.5, dot="i32")
    with pytest.raises(VerifyException, match="grid, whole or loop"):
        TilePlanAttr([(100, 16, "split")], 4, 1, 0, 0, 40, 0.5)


def compiled(path: Path, dims=None, dtype=None):
    module = load_program(path, dims, dtype)
    run_pipeline(module, "h200")
    return module, emit_triton(module)


def kernel_source(source: str, name: str) -> str:
    start = source.index(f"def {name}(")
    end = source.find("\n@triton.jit", start)
    return source[start : end if end > 0 else len(source)]


CONTRACTIONS = [ROOT / "samples" / f"{n}.mlir" for n in ("linear_bias_relu", "attention", "mlp")]
CONTRACTIONS += [ROOT / "tests" / "programs" / f"{n}.mlir" for n in (
    "batch_matvec_bf16", "vector_contractions", "matmul_indexing_maps",
    "mixed_precision_matmul", "f64_compute", "scalar_extracted_from_a_0d_tensor")]  # fmt: skip


@pytest.mark.parametrize("path", CONTRACTIONS, ids=lambda p: p.stem)
def test_each_grids_dot_is_what_the_printer_prints(path):
    module, source = compiled(path)
    groups = [g for g in module.walk() if isinstance(g, GroupOp)]
    for g in groups:
        assert g.cost is not None and all(grid.plan is not None for grid in g.grids)
        dots = {grid.plan.dot_dtype for grid in g.grids} - {None}
        assert ("tl.dot(" in kernel_source(source, g.sym_name.data)) == bool(dots), g.sym_name
        # the kernel's comment is the plans' prose
        assert f"# {describe_tiles(g)}\n" in source


def test_a_bf16_contraction_is_tensor_core_work_in_bf16():
    module, _ = compiled(ROOT / "samples" / "linear_bias_relu.mlir", dtype="bf16")
    (g,) = [g for g in module.walk() if isinstance(g, GroupOp)]
    (grid,) = g.grids
    assert g.cost.dtype.data == "bf16" and g.cost.tc_flops.data > 0
    assert grid.plan.dot_dtype == "bf16"
    module, _ = compiled(ROOT / "samples" / "softmax.mlir")
    (g,) = [g for g in module.walk() if isinstance(g, GroupOp)]
    assert g.cost.dtype.data == "f32" and g.cost.tc_flops.data == 0
    assert g.grids[0].plan.dot_dtype is None


def test_dtype_table():
    assert dtype_name(TensorType(bf16, [4])) == "bf16" and dtype_bytes(TensorType(bf16, [4])) == 2
    assert dtype_bytes(i1) == 1 and dtype_bytes(f32) == 4
    assert float_name(i1) == "f32" and float_name(bf16) == "bf16"
    assert torch_float_name("torch.bfloat16") == "bf16" and torch_float_name("float32") == "f32"
    assert torch_float_name("int32") == "f32"


def test_fit_is_shared_memory_registers_and_occupancy():
    budget = H200.smem_per_block
    assert fit(H200, 64 * 1024, 16384, budget).fits
    assert not fit(H200, budget + 4, 16384, budget).fits  # shared memory
    many = fit(H200, 160 * 1024, 4096, budget, more_warps=False)  # 40 values of a 4096 row
    assert not many.fits and many.occupancy < 0.25 and many.warps == 8
    wider = fit(H200, 160 * 1024, 4096, budget)  # at 16 warps they fit the registers
    assert wider.fits and wider.warps == 16 and wider.occupancy >= 0.25
    too_many = fit(H200, 220 * 1024, 4096, budget)  # not even at 16
    assert not too_many.fits and too_many.warps == 16
    assert pow2(1) == 1 and pow2(5) == 8 and pow2(8) == 8
