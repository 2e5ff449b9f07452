"""Per-op cost, fused vs unfused traffic, fusion decisions, and the fusion-groups pass."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilefuse.analysis.cost.opcost import group_cost, op_cost
from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.dataflow import (
    build_graph,
    recompute_cone,
    recompute_refusal,
    shared_dims,
)
from tilefuse.analysis.fusion_plan import plan_fusion, spilled_bytes
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.ir.module import entry_function
from tilefuse.oracle.compare import relative_error
from tilefuse.oracle.reference import evaluate
from tilefuse.pipeline import run_pipeline

SAMPLES = Path(__file__).parent.parent / "samples"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.mlir"))
H200 = get_target("h200")

UNARY = "^bb0(%a: f32, %o: f32):\n  %r = {op} : f32\n  linalg.yield %r : f32\n"


def chain_program(n: int, ops: list[str]) -> str:
    """x -> op_1 -> ... -> op_k over n elements, one linalg.generic per op."""
    lines = [f"func.func @chain(%x: tensor<{n}xf32>, %y: tensor<{n}xf32>) -> tensor<{n}xf32> {{",
             f"  %e = tensor.empty() : tensor<{n}xf32>"]  # fmt: skip
    prev = "%x"
    maps = "{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = [\"parallel\"]}"
    for k, op in enumerate(ops):
        body = op.replace("X", "%a")
        lines.append(f"  %v{k} = linalg.generic {maps} ins({prev} : tensor<{n}xf32>) outs(%e : tensor<{n}xf32>) {{")
        lines.append(f"  ^bb0(%a: f32, %o: f32):\n    %r = {body} : f32\n    linalg.yield %r : f32\n  }} -> tensor<{n}xf32>")
        prev = f"%v{k}"
    lines.append(f"  func.return {prev} : tensor<{n}xf32>\n}}")
    return "\n".join(lines)


RELU_ADD_TWO_OPS = """
func.func @relu_add(%x: tensor<1000xf32>, %y: tensor<1000xf32>) -> tensor<1000xf32> {
  %e = tensor.empty() : tensor<1000xf32>
  %zero = arith.constant 0.0 : f32
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %y : tensor<1000xf32>, tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1000xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<1000xf32>) outs(%e : tensor<1000xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1000xf32>
  func.return %z : tensor<1000xf32>
}
"""


def graph_of(source, until="flash-attention", **kw):
    """The dataflow graph the fusion planner sees: the pipeline up to fusion-groups (a
    convolution's windowed read is a view by then, attention one FlashAttention op)."""
    module = run_pipeline(load_program(source, **kw), until=until)
    return build_graph(entry_function(module))


def test_relu_add_fused_moves_3n_unfused_5n():
    g = graph_of(RELU_ADD_TWO_OPS)
    n = 1000 * 4
    cost = group_cost(g, g.nodes)
    assert cost.unfused_bytes == 5 * n
    assert cost.fused_bytes == 3 * n
    assert cost.flops == 2 * 1000
    assert [op_cost(node).bytes for node in g.nodes] == [3 * n, 2 * n]


@pytest.mark.parametrize("k", [1, 4, 8])
def test_k_op_chain_is_2k_passes_unfused_and_2_fused(k):
    g = graph_of(chain_program(512, ["math.exp X"] * k))
    cost = group_cost(g, g.nodes)
    assert cost.unfused_bytes == 2 * k * 512 * 4
    assert cost.fused_bytes == 2 * 512 * 4
    assert len(plan_fusion(g, H200).groups) == 1


def test_matmul_flops_are_2mnk():
    g = graph_of(SAMPLES / "linear_bias_relu.mlir")
    matmul = next(n for n in g.nodes if n.kind == "contraction")
    assert op_cost(matmul).flops == 2 * 100 * 96 * 80


@pytest.mark.parametrize("name", NAMES)
def test_fused_traffic_never_exceeds_unfused(name):
    g = graph_of(SAMPLES / f"{name}.mlir")
    plan = plan_fusion(g, H200)
    for group in plan.groups:
        assert group.cost.fused_bytes <= group.cost.unfused_bytes


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fused_traffic_never_exceeds_unfused_for_random_groups(data):
    name = data.draw(st.sampled_from(NAMES))
    g = graph_of(SAMPLES / f"{name}.mlir")
    subset = data.draw(st.lists(st.sampled_from(g.nodes), min_size=1, unique=True))
    cost = group_cost(g, subset)
    assert cost.fused_bytes <= cost.unfused_bytes


KERNELS = {"relu_add": 1, "conv_bias_relu": 1, "elementwise_chain": 1, "bias_gelu": 1, "softmax": 1,
           "layernorm": 1, "rmsnorm": 1, "linear_bias_relu": 1, "mlp": 2,
           "attention": 1, "four_layernorms": 4, "transformer_block": 9}  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_kernel_count_per_sample(name):
    plan = plan_fusion(graph_of(SAMPLES / f"{name}.mlir"), H200)
    assert len(plan.groups) == KERNELS[name], plan.log()


def test_softmax_decision_log():
    plan = plan_fusion(graph_of(SAMPLES / "softmax.mlir"), H200)
    assert plan.log().splitlines() == [
        "[FUSION] fused reduction: reduce_maximum + sub -> fused_kernel_0 (2 nodes)",
        "[FUSION] fused reduction: reduce_maximum + sub + reduce_add -> fused_kernel_0 (3 nodes)",
        "[FUSION] fused reduction: reduce_maximum + sub + reduce_add + div -> fused_kernel_0 (4 nodes)",
    ]


def test_linear_epilogue_and_mlp_boundaries():
    log = plan_fusion(graph_of(SAMPLES / "mlp.mlir"), H200).log()
    assert "[FUSION] fused epilogue: matmul + add -> fused_kernel_0" in log
    assert "[FUSION] skipped: matmul + copy + add + matmul (a contraction reads its operands" in log


def test_a_pointwise_tail_leaves_an_epilogue_for_the_row_reduction_reading_it():
    source = Path(__file__).parent / "programs" / "rmsnorm_after_residual_linear.mlir"
    graph = graph_of(source)
    plan = plan_fusion(graph, H200)
    log = plan.log()
    assert "[FUSION] fused peel: fpowi ->" in log, log
    assert "fused reduction: fpowi + reduce_add" in log, log
    groups = sorted(sorted(graph.nodes[i].label for i in g.nodes) for g in plan.groups)
    assert groups == [["add", "matmul"], ["div", "fpowi", "reduce_add"]], groups  # (div: the norm)


def test_attention_refuses_reduction_over_matmul_rows():
    # Without the FlashAttention rewrite, attention's softmax cannot join the QK^T tile.
    log = plan_fusion(graph_of(SAMPLES / "attention.mlir", until="fold-windows"), H200).log()
    assert ("[FUSION] skipped: matmul + mul + reduce_maximum (a reduction over a "
            "contraction's output dim needs whole product rows per tile)") in log  # fmt: skip


def test_long_rows_fuse_as_multi_pass_when_that_moves_fewer_bytes():
    g = graph_of(SAMPLES / "softmax.mlir", dims={"N": 131072, "M": 4})
    plan = plan_fusion(g, H200)
    assert len(plan.groups) == 1
    assert "rows of 1536.0 KB exceed 227.0 KB: online softmax, 2 passes over HBM" in plan.log()
    (group,) = plan.groups
    # Online softmax: one pass reading x for the running max and rescaled sum,
    # one reading x again to write y, against six passes op by op
    # (max: x; exp: x, e; sum: e; div: e, y).
    x = 4 * 131072 * 4
    assert group.cost.fused_bytes == 2 * x + x
    assert group.cost.unfused_bytes > 6 * x


def test_rows_over_sram_are_refused_when_multi_pass_costs_more():
    # Two row reductions of an input that each consumer re-reads: with rows
    # over the budget the fused kernel would read x three times, exactly what
    # two kernels do, so the merge is refused with its numbers.
    g = graph_of(SAMPLES / "layernorm.mlir", dims={"N": 200000, "M": 2}, dtype="f32")
    plan = plan_fusion(g, H200)
    refused = [d for d in plan.decisions if not d.taken and d.kind == "reduction"]
    assert [d.ops for d in refused] == [("reduce_add", "mul")]
    assert "> budget 227.0 KB" in refused[0].reason
    assert "not less than 1562.5 KB unfused" in refused[0].reason
    assert len(plan.groups) == 2  # the two reductions stay apart


def test_smaller_sram_needs_passes_where_a_larger_one_does_not():
    # Three live f32 rows of 16384: 192 KB, under H200's 227 KB, over V100's 96 KB.
    g = graph_of(SAMPLES / "softmax.mlir", dims={"N": 16384, "M": 4})
    (h200,) = plan_fusion(g, get_target("h200")).groups
    (v100,) = plan_fusion(g, get_target("v100")).groups
    assert h200.cost.passes == 1 and v100.cost.passes == 2  # online softmax


def test_sram_overflow_adds_spill_traffic():
    g = graph_of(SAMPLES / "softmax.mlir", dims={"N": 131072, "M": 4})
    assert spilled_bytes(g, g.nodes, budget=10**9) == 0
    row = 131072 * 4  # one f32 row of x, of e = exp(x - m), of y
    # Rows of x, e, y plus the per-row m and s: dropping e (the largest
    # intermediate, a 4 x 131072 f32 tensor) is enough under 2.5 rows.
    assert spilled_bytes(g, g.nodes, budget=int(2.5 * row)) == 2 * 4 * row
    # Under one row nothing fits: e, m and s all spill (4 f32 each for m and s).
    assert spilled_bytes(g, g.nodes, budget=row) == 2 * (4 * row + 16 + 16)


@pytest.mark.parametrize("name", NAMES)
def test_fusion_groups_pass_preserves_meaning(name):
    # fusion-groups' input is the pipeline's up to it; grouping changes no value.
    before = run_pipeline(load_program(SAMPLES / f"{name}.mlir"), until="flash-attention")
    inputs = random_inputs(before, seed=5)
    expected = evaluate(before, inputs)
    after = run_pipeline(before.clone(), start="fusion-groups", until="fusion-groups")
    groups = [op for op in after.walk() if op.name == "tilefuse.group"]
    assert len(groups) == KERNELS[name]
    for out, ref in zip(evaluate(after, inputs), expected, strict=True):
        assert relative_error(out, ref) == 0.0 or np.array_equal(out, ref)


ROWSUM_BROADCAST = """
func.func @f(%x: tensor<64x300xf32>, %w: tensor<64x500xf32>) -> tensor<64x500xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>
  %s = linalg.reduce ins(%x : tensor<64x300xf32>) outs(%f : tensor<64xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    }
  %e2 = tensor.empty() : tensor<64x500xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s, %w : tensor<64xf32>, tensor<64x500xf32>) outs(%e2 : tensor<64x500xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<64x500xf32>
  func.return %y : tensor<64x500xf32>
}
"""


def test_reduction_not_recomputed_per_tile_of_a_dim_it_lacks():
    # y[i, k] = sum_j x[i, j] + w[i, k]: fused, every program along k would
    # recompute the row sum; the model refuses rather than pay that unpriced.
    plan = plan_fusion(graph_of(ROWSUM_BROADCAST), H200)
    assert len(plan.groups) == 2
    assert ("reduce_add would be recomputed for every tile along a dim of extent 500 "
            "it does not have") in plan.log()  # fmt: skip


@pytest.mark.parametrize("target", ["v100", "a100", "h100", "h200"])
@pytest.mark.parametrize("name", NAMES)
def test_pipeline_preserves_meaning_on_every_target(name, target):
    from tilefuse.frontend.specialize import read_header
    from tilefuse.oracle.compare import tolerance
    from tilefuse.pipeline import run_pipeline

    path = SAMPLES / f"{name}.mlir"
    module = load_program(path)
    inputs = random_inputs(module, seed=9)
    expected = evaluate(module, inputs)
    run_pipeline(module, target)
    assert not [op for op in module.walk() if op.name == "tilefuse.group"
                and not any(o.name == "tilefuse.tile_grid" for o in op.walk())]  # fmt: skip
    tol = tolerance(read_header(path.read_text()).dtype or "f32")
    for out, ref in zip(evaluate(module, inputs), expected, strict=True):
        assert relative_error(out, ref) <= max(tol, 1e-6)


PROGRAMS_DIR = Path(__file__).parent / "programs"


def test_a_producer_read_along_two_loops_is_a_split_read_not_one_dim():
    """`y[j] - y[i]` with `y = exp(x)`: the sub's two loops stay two dims; its
    second read of `y` is split (exp computed again for it); `x`, a function
    argument read by other ops along i and along j, is two loads."""
    g = graph_of((PROGRAMS_DIR / "one_tensor_along_two_loops.mlir").read_text())
    exp, sub, _add, _mul = g.nodes
    dims = shared_dims(g, g.nodes)
    assert dims.split_reads == ((sub.index, 1),)
    for n in g.nodes:
        ids = [dims.of[(n.index, d)] for d in range(n.s.num_loops)]
        assert len(set(ids)) == len(ids)
    assert recompute_refusal(g, g.nodes, dims) is None
    assert recompute_cone(g, g.nodes, sub, 1) == [exp]
    assert group_cost(g, g.nodes).flops == sum(op_cost(n).flops for n in g.nodes) + op_cost(exp).flops
    assert len(plan_fusion(g, get_target("h200")).groups) == 1


def test_a_reduction_read_along_two_loops_is_not_recomputed():
    """`s[j] - s[i]` with `s` a row sum: fusing would recompute the sum per
    read; the planner keeps two kernels."""
    source = """
    func.func @f(%x: tensor<12x30xf32>) -> tensor<12x12xf32> {
      %zero = arith.constant 0.0 : f32
      %e1 = tensor.empty() : tensor<12xf32>
      %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<12xf32>) -> tensor<12xf32>
      %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<12x30xf32>) outs(%f : tensor<12xf32>) {
      ^bb0(%in: f32, %acc: f32):
        %v = arith.addf %in, %acc : f32
        linalg.yield %v : f32
      } -> tensor<12xf32>
      %e = tensor.empty() : tensor<12x12xf32>
      %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%s, %s : tensor<12xf32>, tensor<12xf32>) outs(%e : tensor<12x12xf32>) {
      ^bb0(%p: f32, %q: f32, %out: f32):
        %v = arith.subf %p, %q : f32
        linalg.yield %v : f32
      } -> tensor<12x12xf32>
      func.return %d : tensor<12x12xf32>
    }
    """
    g = graph_of(source)
    _fill, total, sub = g.nodes
    dims = shared_dims(g, [total, sub])
    assert dims.split_reads == ((sub.index, 1),)
    assert "reduce_add" in recompute_refusal(g, [total, sub], dims)
    assert len(plan_fusion(g, get_target("h200")).groups) == 2
