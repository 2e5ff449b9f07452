"""Horizontal fusion: the planner's rule, and bundles through the Triton kernels."""

import numpy as np
import torch

from tests.device import on_device
from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.horizontal_plan import (
    KernelInfo,
    persistent_programs,
    plan_horizontal,
)
from tilefuse.runtime.compiled import compile

H200 = get_target("h200")


def kernel(name, deps=(), warps=4, stages=1, time=1e-6, key=0):
    return KernelInfo(name, frozenset(deps), warps, stages, 8, time, key)


def test_same_program_always_merged():
    # two 1 ms kernels: the 18 us launch is under 5% of them, but the same
    # tile program costs nothing to share
    plan = plan_horizontal([kernel("a", time=1e-3), kernel("b", time=1e-3)], H200)
    assert plan.bundles == (("a", "b"),)
    (d,) = plan.decisions
    assert d.taken and "same tile program" in d.reason


def test_different_programs_merged_only_when_the_launch_matters():
    small = plan_horizontal([kernel("a", key=0), kernel("b", key=1)], H200)
    assert small.bundles == (("a", "b"),)
    big = plan_horizontal([kernel("a", time=1e-3, key=0), kernel("b", time=1e-3, key=1)], H200)
    assert big.bundles == (("a",), ("b",))
    (d,) = big.decisions
    assert not d.taken
    assert d.format() == (
        "[FUSION] skipped: a + b (horizontal: a 18 us launch is 0.9% of 2 ms, "
        "under 5%: not worth a branching kernel)"
    )


def test_pipeline_depths_must_match():
    plan = plan_horizontal([kernel("a", stages=3), kernel("b", stages=4, key=1)], H200)
    assert plan.bundles == (("a",), ("b",))
    assert "pipeline depths differ (4 stages vs 3)" in plan.decisions[0].reason
    # warps may differ: branches run at the largest member's
    plan = plan_horizontal([kernel("a", warps=4), kernel("b", warps=8, key=1)], H200)
    assert plan.bundles == (("a", "b"),)
    assert "at 8 warps" in plan.decisions[0].reason


def test_dependent_kernels_are_not_candidates():
    plan = plan_horizontal([kernel("a"), kernel("b", deps=["a"])], H200)
    assert plan.bundles == (("a",), ("b",))
    assert plan.decisions == ()  # a dependency is not a decision to explain


def test_no_cycle_through_another_bundle():
    # program order a, d, b, c with b reading d and c reading a. a and b merge
    # (X); c and d are independent of each other, but d -> X -> c, so merging
    # them would make X and {c, d} wait on each other.
    ks = [kernel("a", stages=1), kernel("d", stages=2), kernel("b", ["d"], stages=1),
          kernel("c", ["a"], stages=2)]  # fmt: skip
    plan = plan_horizontal(ks, H200)
    assert plan.bundles == (("a", "b"), ("d",), ("c",))


def test_unmergeable_kernels_still_order():
    # an untiled group u between a and b: b depends on a through it
    ks = [kernel("a"), KernelInfo("u", frozenset({"a"}), 0, 0, 0, 0.0, -1, mergeable=False),
          kernel("b", ["u"])]  # fmt: skip
    assert plan_horizontal(ks, H200).bundles == (("a",), ("u",), ("b",))


PAIR = """
func.func @pair(%x: tensor<37x50xf32>, %y: tensor<37x50xf32>, %z: tensor<37x20xf32>)
    -> (tensor<37x50xf32>, tensor<37x50xf32>, tensor<37xf32>) {
  %e = tensor.empty() : tensor<37x50xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<37x50xf32>) outs(%e : tensor<37x50xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.tanh %v : f32
    linalg.yield %r : f32
  } -> tensor<37x50xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<37x50xf32>) outs(%e : tensor<37x50xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.tanh %v : f32
    linalg.yield %r : f32
  } -> tensor<37x50xf32>
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<37xf32>
  %f = linalg.fill ins(%zero : f32) outs(%er : tensor<37xf32>) -> tensor<37xf32>
  %c = linalg.reduce ins(%z : tensor<37x20xf32>) outs(%f : tensor<37xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  func.return %a, %b, %c : tensor<37x50xf32>, tensor<37x50xf32>, tensor<37xf32>
}
"""


def test_bundle_runs_every_member():
    """tanh(x), tanh(y) share a body (stacked); the row sum is a branch."""
    prog = compile(PAIR)
    assert len(prog.kernels) == 1
    assert "seg = pid //" not in prog.source  # mixed programs: branches
    rng = np.random.default_rng(0)
    x, y = (torch.from_numpy(rng.standard_normal((37, 50), np.float32)) for _ in range(2))
    z = torch.from_numpy(rng.standard_normal((37, 20), np.float32))
    a, b, c = (t.cpu() for t in prog(*map(on_device, (x, y, z))))
    torch.testing.assert_close(a, torch.tanh(x), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b, torch.tanh(y), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(c, z.sum(1), rtol=1e-5, atol=1e-5)


def test_stacked_members_with_different_strides():
    """A shared body reads the first member's strides: a transposed view as
    the second member's input must still give the right answer."""
    two = PAIR.split("%zero")[0] + "  func.return %a, %b : tensor<37x50xf32>, tensor<37x50xf32>\n}\n"
    two = two.replace(", %z: tensor<37x20xf32>)", ")").replace(
        "-> (tensor<37x50xf32>, tensor<37x50xf32>, tensor<37xf32>)",
        "-> (tensor<37x50xf32>, tensor<37x50xf32>)",
    )
    prog = compile(two)
    assert len(prog.kernels) == 1 and "seg = pid //" in prog.source
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal((37, 50), np.float32))
    y = torch.from_numpy(rng.standard_normal((50, 37), np.float32)).t()  # strides (1, 37)
    a, b = (t.cpu() for t in prog(*map(on_device, (x, y))))
    torch.testing.assert_close(a, torch.tanh(x), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(b, torch.tanh(y), rtol=1e-5, atol=1e-6)


SWAP = """
func.func @swap(%x: tensor<37x50xf32>, %y: tensor<37x50xf32>, %z: tensor<37x50xf32>)
    -> (tensor<37x50xf32>, tensor<37x50xf32>, tensor<37x50xf32>) {
  %e = tensor.empty() : tensor<37x50xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<37x50xf32>, tensor<37x50xf32>) outs(%e : tensor<37x50xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %t = math.tanh %v : f32
    %r = arith.addf %t, %w : f32
    linalg.yield %r : f32
  } -> tensor<37x50xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%y, %x : tensor<37x50xf32>, tensor<37x50xf32>) outs(%e : tensor<37x50xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %t = math.tanh %v : f32
    %r = arith.addf %t, %w : f32
    linalg.yield %r : f32
  } -> tensor<37x50xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%z, %x : tensor<37x50xf32>, tensor<37x50xf32>) outs(%e : tensor<37x50xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %t = math.tanh %v : f32
    %r = arith.addf %t, %w : f32
    linalg.yield %r : f32
  } -> tensor<37x50xf32>
  func.return %a, %b, %c : tensor<37x50xf32>, tensor<37x50xf32>, tensor<37x50xf32>
}
"""


def test_stacked_members_whose_tensors_swap_slots():
    """tanh(x)+y, tanh(y)+x, tanh(z)+x share one body: each member's tensors are
    picked from the kernel's parameters, never from another slot's pick
    (a review found b = tanh(y)+y when picks chained)."""
    prog = compile(SWAP)
    assert len(prog.kernels) == 1 and "seg = pid //" in prog.source
    x, y, z = (torch.randn(37, 50) for _ in range(3))
    a, b, c = (t.cpu() for t in prog(*map(on_device, (x, y, z))))
    torch.testing.assert_close(a, torch.tanh(x) + y)
    torch.testing.assert_close(b, torch.tanh(y) + x)
    torch.testing.assert_close(c, torch.tanh(z) + x)
    # the host function itself, with a transposed (non-contiguous) member input:
    # it makes the stacked tensors' strides equal before the launch
    import triton.language as tl

    fn = getattr(prog.python, prog.function)
    zt = torch.randn(50, 37).t()
    a, b, c = fn(*map(on_device, (x, y, zt)), dot_dtype=tl.float32)
    torch.testing.assert_close(c.cpu(), torch.tanh(zt) + x)


MIXED_DOTS = """
func.func @two(%a: tensor<40x64xbf16>, %b: tensor<64x48xbf16>, %c: tensor<40x64xf32>, %d: tensor<64x48xf32>)
    -> (tensor<40x48xbf16>, tensor<40x48xf32>) {
  %zb = arith.constant 0.0 : bf16
  %zf = arith.constant 0.0 : f32
  %eb = tensor.empty() : tensor<40x48xbf16>
  %ef = tensor.empty() : tensor<40x48xf32>
  %fb = linalg.fill ins(%zb : bf16) outs(%eb : tensor<40x48xbf16>) -> tensor<40x48xbf16>
  %ff = linalg.fill ins(%zf : f32) outs(%ef : tensor<40x48xf32>) -> tensor<40x48xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<40x64xbf16>, tensor<64x48xbf16>) outs(%fb : tensor<40x48xbf16>) -> tensor<40x48xbf16>
  %m2 = linalg.matmul ins(%c, %d : tensor<40x64xf32>, tensor<64x48xf32>) outs(%ff : tensor<40x48xf32>) -> tensor<40x48xf32>
  func.return %m1, %m2 : tensor<40x48xbf16>, tensor<40x48xf32>
}
"""


def test_contractions_on_different_types_keep_their_own_launch():
    """One kernel has one DOT_DTYPE: a bf16 and an f32 matmul are not merged
    (merged, the f32 one was computed in bf16)."""
    from tilefuse.frontend.program import load_program
    from tilefuse.ir.module import entry_function
    from tilefuse.passes.horizontal_fusion import fuse_horizontally
    from tilefuse.pipeline import run_pipeline

    module = load_program(MIXED_DOTS)
    run_pipeline(module)
    groups = [op for op in module.walk() if op.name == "tilefuse.group"]
    assert len(groups) == 2
    plan = fuse_horizontally(entry_function(module), H200)  # the planner's reason, again
    assert plan.bundles == tuple((g.sym_name.data,) for g in groups)
    (refusal,) = plan.decisions
    assert not refusal.taken and "different operand types (bf16, f32)" in refusal.reason


def test_same_program_merges_come_before_branches():
    """Q, K, V projections in that order, K a different program: Q and V stack
    first; K then would be a branch worth only 3% of the bundle, refused. (Greedy
    in program order took Q + K as branches and left V alone.)"""
    q, k, v = (kernel(n, time=176e-6, key=key) for n, key in (("q", 1), ("k", 2), ("v", 1)))
    plan = plan_horizontal([q, k, v], H200)
    assert plan.bundles == (("q", "v"), ("k",))
    assert [d.taken for d in plan.decisions] == [True, False]


def test_one_tile_program_uses_one_body_s_shared_memory():
    """LLaMA's K and V projections (128 KB of pipeline buffers each): the same tile
    program on other tensors is one body, so it fits as one does; two different
    programs with such buffers would need them side by side, and do not fit."""
    def gemm(name, key, persistent=False):
        return KernelInfo(name, frozenset(), 8, 4, 128, 9e-6, key, dot_dtype="bf16",
                          smem=128 * 1024, persistent=persistent)  # fmt: skip

    same = plan_horizontal([gemm("k", 0), gemm("v", 0)], H200)
    assert same.bundles == (("k", "v"),)
    other = plan_horizontal([gemm("k", 0), gemm("o", 1)], H200)
    assert other.bundles == (("k",), ("o",))
    assert "shared memory (256 KB" in other.decisions[0].reason
    persistent = plan_horizontal([gemm("q", 0, persistent=True), gemm("k", 0)], H200)
    assert persistent.bundles == (("q",), ("k",))
    assert "persistent" in persistent.decisions[0].reason


def test_persistent_kernels_of_one_tile_program_share_a_launch():
    """Persistent GEMMs running one tile program on other tensors (BERT's Q, K and V
    projections of one input) share a launch; a persistent kernel never joins a
    kernel running another program."""
    def gemm(name, key):
        return KernelInfo(name, frozenset(), 8, 4, 384, 9e-6, key, dot_dtype="bf16",
                          smem=161 * 1024, persistent=True)  # fmt: skip

    plan = plan_horizontal([gemm("q", 0), gemm("k", 0), gemm("v", 0)], H200)
    assert plan.bundles == (("q", "k", "v"),)
    assert [d.taken for d in plan.decisions] == [True, True]
    assert "same persistent tile program: 3 grids of 384 tiles" in plan.decisions[-1].reason
    other = plan_horizontal([gemm("q", 0), gemm("o", 1)], H200)
    assert other.bundles == (("q",), ("o",))
    assert "only with kernels running its tile program" in other.decisions[0].reason


def test_persistent_kernels_share_a_launch_only_while_their_operands_fit_the_l2():
    """Members run at once: one shared input and three weights must fit the L2
    together (the shared input counted once)."""
    mb = 2**20

    def gemm(name, weight_mb):
        reads = frozenset({("x", 8 * mb), (f"w_{name}", weight_mb * mb)})
        return KernelInfo(name, frozenset(), 8, 4, 256, 60e-6, 0, dot_dtype="bf16",
                          smem=161 * 1024, persistent=True, reads=reads)  # fmt: skip

    small = plan_horizontal([gemm("q", 2), gemm("k", 2), gemm("v", 2)], H200)
    assert small.bundles == (("q", "k", "v"),)
    big = plan_horizontal([gemm("q", 32), gemm("k", 32), gemm("v", 32)], H200)
    assert big.bundles == (("q",), ("k",), ("v",))
    assert "operands together (72 MB) exceed the L2" in big.decisions[0].reason


def test_a_persistent_bundle_splits_its_programs_among_the_members():
    # 384 tiles each, 132 programs for one: 44 per member of three, 33 of four
    assert persistent_programs(3, 384, 132, H200) == 132
    assert persistent_programs(4, 384, 132, H200) == 132
    # fewer tiles than SMs: each member still gets its share of the SMs, at most its tiles
    assert persistent_programs(3, 64, 64, H200) == 3 * 44
    assert persistent_programs(3, 20, 20, H200) == 60


def test_dynamic_grids_stack_with_their_own_tile_program_and_branch_with_others():
    """A dynamic grid's program count is known at launch: kernels of its tile
    program (one key: one program over the same run-time sizes) stack; others join as
    branches, each bound a run-time count, unless a member has variants or is
    persistent (then it keeps its launch, the refusal said)."""
    def rows(name, key, dynamic=True, variants=False):
        return KernelInfo(name, frozenset(), 4, 1, -1 if dynamic else 8, 4e-6, key, dynamic=dynamic,
                          variants=variants)  # fmt: skip

    plan = plan_horizontal([rows("a", 0), rows("b", 0), rows("c", 1), rows("d", 2, dynamic=False)], H200)
    assert plan.bundles == (("a", "b", "c", "d"),)
    assert "a run-time count of programs" in plan.decisions[0].reason
    assert all("branches of one launch of a run-time count" in d.reason for d in plan.decisions[1:] if d.taken)
    plan = plan_horizontal([rows("a", 0), rows("b", 0), rows("c", 1, variants=True)], H200)
    assert plan.bundles == (("a", "b"), ("c",))
    refused = [d for d in plan.decisions if not d.taken]
    assert refused and all("a dynamic grid with variants, or a persistent one" in d.reason for d in refused)


def test_a_dynamic_persistent_bundle_launches_each_member_its_share():
    # the tiles known at launch: each member's share of the SMs (the kernel takes
    # the least of it and the member's tiles)
    assert persistent_programs(3, None, 132, H200) == 132
    assert persistent_programs(2, None, 264, H200) == 264
