"""Gathers: `tensor.extract` at computed indices inside payloads (nn.Embedding,
cross-entropy's target, GroupNorm's constant-index reshapes).

The oracle evaluates them and refuses out-of-range indices; the cost model counts
the gathered bytes, not the table; fusion never computes a gathered tensor in
the kernel that gathers from it; every gather load is clamped into the tensor."""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.device import run_on_device
from tilefuse.analysis.cost.opcost import group_cost, op_cost
from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.dataflow import build_graph
from tilefuse.analysis.fusion_plan import plan_fusion
from tilefuse.frontend.program import load_program
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.module import entry_function
from tilefuse.oracle.reference import evaluate
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime import compile

PROGRAMS = Path(__file__).parent / "programs"

LOOKUP = """
#map = affine_map<(d0, d1) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
func.func @lookup(%table: tensor<ROWSx13xf32>, %ids: tensor<5xi64>) -> tensor<5x13xf32> {
  %0 = tensor.empty() : tensor<5x13xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<5xi64>) outs(%0 : tensor<5x13xf32>) {
  ^bb0(%in: i64, %out: f32):
    %row = arith.index_cast %in : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<ROWSx13xf32>
    linalg.yield %v : f32
  } -> tensor<5x13xf32>
  func.return %1 : tensor<5x13xf32>
}
"""


def lookup(rows: int) -> str:
    return LOOKUP.replace("ROWS", str(rows))


def test_the_oracle_gathers_rows():
    table = np.arange(11 * 13, dtype=np.float32).reshape(11, 13)
    ids = np.array([3, 0, 10, 3, 7])
    (out,) = evaluate(load_program(lookup(11)), [table, ids])
    np.testing.assert_array_equal(out, table[ids])


@pytest.mark.parametrize("bad", [-1, 11])
def test_the_oracle_refuses_an_index_out_of_range(bad):
    """Not numpy's wrap-around of -1: an out-of-bounds extract is undefined."""
    table = np.zeros((11, 13), np.float32)
    ids = np.array([0, 1, bad, 2, 3])
    with pytest.raises(CompileError, match=f"reads index {bad} of dim 0 \\(size 11\\)"):
        evaluate(load_program(lookup(11)), [table, ids])


def test_a_gather_costs_the_rows_it_reads_not_the_table():
    graph = build_graph(entry_function(run_pipeline(load_program(lookup(1000)),
                                                    until="flash-attention")))  # fmt: skip
    (node,) = graph.nodes
    ids, rows, out = 5 * 8, 5 * 13 * 4, 5 * 13 * 4
    assert op_cost(node).bytes == ids + rows + out
    assert group_cost(graph, graph.nodes).fused_bytes == ids + rows + out


def test_a_gathered_tensor_is_never_computed_by_the_gathering_kernel():
    module = run_pipeline(load_program(PROGRAMS / "gather_from_an_operand.mlir"),
                          until="flash-attention")  # fmt: skip
    plan = plan_fusion(build_graph(entry_function(module)), get_target("h200"))
    assert len(plan.groups) == 2, plan.log()
    assert ("[FUSION] skipped: exp + gather (gather reads the result of exp by tensor.extract "
            "at computed indices (a gather): it must be in memory, written by an earlier "
            "kernel)") in plan.log()


def test_gather_loads_stay_inside_the_table():
    """Indices past either end (undefined in the IR) read nothing outside the table:
    tile-and-fuse's clamp of each index is printed as a load masked to the dim
    (`EDGE_CLAMP`), so such lanes load 0; the lanes in bounds read their rows."""
    prog = compile(lookup(4))
    assert "mask=(" in prog.source and "tl.minimum(" not in prog.source
    table = torch.arange(1, 4 * 13 + 1, dtype=torch.float32).reshape(4, 13)
    ids = torch.tensor([-3, 0, 2, 4, 1000])
    (out,) = run_on_device(prog, table, ids)
    inside = (ids >= 0) & (ids < 4)
    torch.testing.assert_close(out[inside], table[ids[inside]])
    assert not out[~inside].any()


def test_a_contiguous_gather_index_is_masked_not_clamped():
    """A gather whose index is the tile's own position along the table's dim (a
    concat's pieces read by a LayerNorm) loads through a mask: a clamped index is
    no longer contiguous for Triton, and every lane becomes its own load."""
    prog = compile(CONCAT_ROWS)
    kernel = prog.source.split("@triton.jit")[-1]
    assert "tl.minimum(tl.maximum(" not in kernel, kernel
    assert kernel.count("(tl.arange(0, 32)[None, :] < 24), other=0)") == 2, kernel
    a, b = torch.randn(3, 24), torch.randn(5, 24)
    (out,) = run_on_device(prog, a, b)
    torch.testing.assert_close(out, torch.cat([a, b]).softmax(-1))


CONCAT_ROWS = """
func.func @concat_rows(%a: tensor<3x24xf32>, %b: tensor<5x24xf32>) -> tensor<8x24xf32> {
  %cat = tensor.concat dim(0) %a, %b : (tensor<3x24xf32>, tensor<5x24xf32>) -> tensor<8x24xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<8xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<8xf32>) -> tensor<8xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]} ins(%cat : tensor<8x24xf32>) outs(%m0 : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %e1 = tensor.empty() : tensor<8x24xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
      affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%cat, %m : tensor<8x24xf32>, tensor<8xf32>) outs(%e1 : tensor<8x24xf32>) {
  ^bb0(%x: f32, %mx: f32, %o: f32):
    %d = arith.subf %x, %mx : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<8x24xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<8x24xf32>) outs(%s0 : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %x, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
      affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%ex, %s : tensor<8x24xf32>, tensor<8xf32>) outs(%e1 : tensor<8x24xf32>) {
  ^bb0(%x: f32, %t: f32, %o: f32):
    %r = arith.divf %x, %t : f32
    linalg.yield %r : f32
  } -> tensor<8x24xf32>
  return %out : tensor<8x24xf32>
}
"""


ROTATE = """
func.func @rotate(%x: tensor<4xROWSx64xf32>) -> tensor<4xROWSx64xf32> {
  %0 = tensor.empty() : tensor<4xROWSx64xf32>
  %1 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel"]} outs(%0 : tensor<4xROWSx64xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = linalg.index 2 : index
    %c32 = arith.constant 32 : index
    %local = arith.remsi %k, %c32 : index
    %up = arith.addi %local, %c32 : index
    %a = tensor.extract %x[%i, %j, %up] : tensor<4xROWSx64xf32>
    %na = arith.negf %a : f32
    %b = tensor.extract %x[%i, %j, %local] : tensor<4xROWSx64xf32>
    %low = arith.cmpi slt, %k, %c32 : index
    %s = arith.select %low, %na, %b : f32
    linalg.yield %s : f32
  } -> tensor<4xROWSx64xf32>
  func.return %1 : tensor<4xROWSx64xf32>
}
"""


@pytest.mark.parametrize("rows, masked", [(16, False), (13, True)])
def test_gather_indices_proven_in_bounds_are_not_masked(rows, masked):
    """rotate_half as fold-concats writes it (each half read at k mod 32): the
    indices stay inside the tensor at every point of the loops, so with tiles
    that divide the extents the gathers load without masks or clamps (consecutive
    lanes, consecutive addresses: vector loads); a partial tile (13 rows) computes
    row indices past the extent in its idle lanes, and those loads are masked along
    the rows only (never clamped: a clamped index is no longer contiguous)."""
    prog = compile(ROTATE.replace("ROWS", str(rows)))
    kernel = prog.source[prog.source.index("@triton.jit\ndef fused"):]
    assert "tl.minimum(" not in kernel, kernel
    assert (f"mask=(j >= 0) & (j < {rows}), other=0)" in kernel) == masked, kernel
    assert "(up >= 0)" not in kernel and "(local >= 0)" not in kernel, kernel  # (in bounds)
    x = torch.randn(4, rows, 64)
    (out,) = run_on_device(prog, x)
    torch.testing.assert_close(out, torch.cat([-x[..., 32:], x[..., :32]], dim=-1))
