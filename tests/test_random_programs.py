"""The random program generator: golden rendering, coverage, and the passes on its programs."""

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings

from tests.device import DEVICE, on_device
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.oracle.compare import ELEMENT_FACTOR, relative_error, worst_element
from tilefuse.oracle.reference import evaluate
from tilefuse.pipeline import run_pipeline
from tilefuse.testing.random_programs import (
    Arg,
    Op,
    ProgramSpec,
    SpecError,
    features,
    generate,
    programs,
    render,
)

# softmax over the rows of x, then relu((p @ w) * 1/K)
SOFTMAX_MATMUL = ProgramSpec(
    args=(Arg("x", (3, 5)), Arg("w", (5, 2))),
    ops=(
        Op("fill", "f0", (), (3,), fn="neg_inf"),
        Op("reduce", "m", ("x", "f0"), (3,), fn="max", axis=1),
        Op("reduce_combine", "e", ("x", "m"), (3, 5), fn="sub_exp", axis=0),
        Op("fill", "f1", (), (3,), fn="zero"),
        Op("reduce", "s", ("e", "f1"), (3,), fn="sum", axis=1, named=True, acc_first=True),
        Op("reduce_combine", "p", ("e", "s"), (3, 5), fn="divf", axis=0),
        Op("fill", "f2", (), (3, 2), fn="zero"),
        Op("matmul", "y", ("p", "w", "f2"), (3, 2), named=True),
        Op("unary", "z", ("y",), (3, 2), fn="scale", const=0.2, const_expr="1/K"),
        Op("unary", "r", ("z",), (3, 2), fn="relu", const_inside=True),
    ),
    results=("p", "r"),
    dims=(("M", 3), ("K", 5), ("N", 2)),
)

SOFTMAX_MATMUL_MLIR = """\
// random tensor program (tilefuse.testing.random_programs)
// tilefuse.dims: M=3 K=5 N=2
// tilefuse.dtype: f32
// tilefuse.args: x, w
func.func @random(%x: tensor<3x5xf32>, %w: tensor<5x2xf32>) -> (tensor<3x5xf32>, tensor<3x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %neg_inf = arith.constant 0xFF800000 : f32
  %c_z = arith.constant 0.2 : f32  // tilefuse.expr: 1/K
  %e0 = tensor.empty() : tensor<3xf32>
  %e1 = tensor.empty() : tensor<3x5xf32>
  %e2 = tensor.empty() : tensor<3x2xf32>
  %f0 = linalg.fill ins(%neg_inf : f32) outs(%e0 : tensor<3xf32>) -> tensor<3xf32>
  %m = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x5xf32>) outs(%f0 : tensor<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %t0 = arith.maximumf %in, %acc : f32
    linalg.yield %t0 : f32
  } -> tensor<3xf32>
  %e = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<3x5xf32>, tensor<3xf32>) outs(%e1 : tensor<3x5xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %t0 = arith.subf %in0, %in1 : f32
    %t1 = math.exp %t0 : f32
    linalg.yield %t1 : f32
  } -> tensor<3x5xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<3xf32>) -> tensor<3xf32>
  %s = linalg.reduce ins(%e : tensor<3x5xf32>) outs(%f1 : tensor<3xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %t0 = arith.addf %acc, %in : f32
      linalg.yield %t0 : f32
    }
  %p = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : tensor<3x5xf32>, tensor<3xf32>) outs(%e1 : tensor<3x5xf32>) {
  ^bb0(%in0: f32, %in1: f32, %out: f32):
    %t0 = arith.divf %in0, %in1 : f32
    linalg.yield %t0 : f32
  } -> tensor<3x5xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %y = linalg.matmul ins(%p, %w : tensor<3x5xf32>, tensor<5x2xf32>) outs(%f2 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %z = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%y : tensor<3x2xf32>) outs(%e2 : tensor<3x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t0 = arith.mulf %in, %c_z : f32
    linalg.yield %t0 : f32
  } -> tensor<3x2xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<3x2xf32>) outs(%e2 : tensor<3x2xf32>) {
  ^bb0(%in: f32, %out: f32):
    %k0 = arith.constant 0.0 : f32
    %t0 = arith.maximumf %in, %k0 : f32
    linalg.yield %t0 : f32
  } -> tensor<3x2xf32>
  return %p, %r : tensor<3x5xf32>, tensor<3x2xf32>
}
"""

# What a few hundred draws must exercise between them.
EXPECTED_FEATURES = {
    "fill:zero", "fill:neg_inf", "multi_use", "multi_result", "shared_fill", "unit_dim",
    "vector_arg", "vector_op", "returns_arg", "const:inside", "const:outside",
    *(f"unary:{fn}" for fn in ("tanh", "relu", "scale", "negf", "tanh_exp", "soft_recip")),
    *(f"{kind}:{fn}" for kind in ("binary", "broadcast_binary")
      for fn in ("addf", "subf", "mulf", "maximumf")),
    "broadcast_binary:axis0", "broadcast_binary:axis1", "broadcast_binary:swap",
    "reduce:sum", "reduce:max", "reduce:axis0", "reduce:axis1", "reduce:named",
    "reduce:generic", "reduce:swap", "reduce:acc_first",
    "reduce_combine:subf", "reduce_combine:sub_exp", "reduce_combine:divf",
    "reduce_combine:axis0", "reduce_combine:axis1",
    "transpose:named", "transpose:generic",
    "broadcast:named", "broadcast:generic", "broadcast:axis0", "broadcast:axis1",
    "matmul:named", "matmul:generic", "matmul:swap", "matmul:acc_first",
}  # fmt: skip


def run_passes(text: str, seed: int = 0) -> None:
    """Parse, evaluate, generalize + fusion-groups, verify, evaluate again: same results."""
    module = load_program(text)
    inputs = random_inputs(module, seed)
    before = evaluate(module, inputs)
    for out in before:
        assert np.isfinite(out).all(), "a program's outputs must be finite"
    run_pipeline(module, until="fusion-groups")
    after = evaluate(module, inputs)
    assert len(after) == len(before)
    for out, ref in zip(after, before, strict=True):
        assert out.shape == ref.shape and out.dtype == ref.dtype
        assert relative_error(out, ref) <= 1e-6


def test_render_matches_golden():
    assert render(SOFTMAX_MATMUL) == SOFTMAX_MATMUL_MLIR


def test_golden_evaluates_like_numpy():
    module = load_program(SOFTMAX_MATMUL_MLIR)
    x, w = random_inputs(module, 3)
    p, r = evaluate(module, [x, w])
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    want_p = e / e.sum(axis=1, keepdims=True)
    assert relative_error(p, want_p) <= 1e-6
    assert relative_error(r, np.maximum(want_p @ w * 0.2, 0.0)) <= 1e-6
    run_passes(SOFTMAX_MATMUL_MLIR)


def test_golden_header_respecializes():
    module = load_program(SOFTMAX_MATMUL_MLIR, dims={"K": 7, "M": 4}, dtype="bf16")
    x, w = random_inputs(module, 0)
    assert x.shape == (4, 7) and w.shape == (7, 2)
    assert all(np.isfinite(out).all() for out in evaluate(module, [x, w]))


@settings(max_examples=50, deadline=None)
@given(programs())
def test_random_programs_keep_their_meaning_through_the_passes(text):
    run_passes(text)


@settings(max_examples=15, deadline=None)
@given(programs(max_ops=8, max_dim=40, dtypes=("f16", "bf16")))
def test_low_precision_programs_keep_their_meaning_through_the_passes(text):
    run_passes(text, seed=1)


def test_generator_covers_every_op_kind():
    seen = set().union(*(features(generate(random.Random(seed))) for seed in range(300)))
    assert EXPECTED_FEATURES - seen == set()


@pytest.mark.parametrize(("max_ops", "max_dim"), [(1, 1), (3, 2), (6, 96), (12, 17)])
def test_generate_respects_its_limits(max_ops, max_dim):
    for seed in range(60):
        spec = generate(random.Random(seed), max_ops=max_ops, max_dim=max_dim)
        assert spec == generate(random.Random(seed), max_ops=max_ops, max_dim=max_dim)
        assert 1 <= sum(op.kind != "fill" for op in spec.ops) <= max_ops
        assert 1 <= len(spec.args) <= 3 and spec.results
        sizes = [s for shape in spec.shapes().values() for s in shape]
        assert all(1 <= s <= max_dim for s in sizes)
        assert len({s for _, s in spec.dims}) == len(spec.dims) <= 4
        render(spec)


def _with_op(index: int, op: Op) -> ProgramSpec:
    ops = list(SOFTMAX_MATMUL.ops)
    ops[index] = op
    return ProgramSpec(SOFTMAX_MATMUL.args, tuple(ops), SOFTMAX_MATMUL.results)


@pytest.mark.parametrize(
    "spec",
    [
        # reduced dim not dropped
        _with_op(1, Op("reduce", "m", ("x", "f0"), (5,), fn="max", axis=1)),
        # a max reduction accumulating into a 0 fill
        _with_op(1, Op("reduce", "m", ("x", "f1"), (3,), fn="max", axis=1)),
        # vector along the wrong axis
        _with_op(2, Op("reduce_combine", "e", ("x", "m"), (3, 5), fn="sub_exp", axis=1)),
        # inner dims of the matmul disagree
        _with_op(7, Op("matmul", "y", ("p", "p", "f2"), (3, 2), named=True)),
        # a name the renderer uses itself
        _with_op(9, Op("unary", "t0", ("z",), (3, 2), fn="relu")),
        ProgramSpec(SOFTMAX_MATMUL.args, SOFTMAX_MATMUL.ops, ()),
        ProgramSpec(SOFTMAX_MATMUL.args, SOFTMAX_MATMUL.ops, ("f2",)),
    ],
)
def test_render_rejects_ill_typed_specs(spec):
    with pytest.raises(SpecError):
        render(spec)


def run_pipeline_check(text: str, seed: int = 0, smem_budget: int = 0) -> None:
    """The whole pipeline (to tile programs) keeps meaning, within the dtype's tolerance."""
    from tilefuse.frontend.specialize import read_header
    from tilefuse.oracle.compare import tolerance

    module = load_program(text)
    inputs = random_inputs(module, seed)
    before = evaluate(module, inputs)
    options = {"tile-and-fuse": {"smem_budget": smem_budget}} if smem_budget else {}
    run_pipeline(module, until="tile-and-fuse", options=options)
    after = evaluate(module, inputs)
    tol = tolerance(read_header(text).dtype or "f32")
    for out, ref in zip(after, before, strict=True):
        assert relative_error(out, ref) <= max(tol, 1e-6), text


@settings(max_examples=300, deadline=None)
@given(programs(max_ops=8))
def test_random_programs_through_tile_and_fuse(text):
    run_pipeline_check(text)


@settings(max_examples=100, deadline=None)
@given(programs(max_ops=6, max_dim=200))
def test_random_programs_through_tile_and_fuse_with_tiny_sram(text):
    # 2 KB of shared memory: rows loop in chunks, tiles are partial everywhere.
    run_pipeline_check(text, seed=3, smem_budget=2048)


@settings(max_examples=40, deadline=None)
@given(programs(max_ops=8, max_dim=40, dtypes=("f16", "bf16")))
def test_low_precision_programs_through_tile_and_fuse(text):
    run_pipeline_check(text, seed=2)


FOUND = Path(__file__).parent / "programs" / "random"
"""Programs hypothesis found failing once, run every time."""


@settings(max_examples=40, deadline=None)
@given(programs(max_ops=6, max_dim=64))
@example(text=(FOUND / "broadcast_along_k.mlir").read_text())
@example(text=(FOUND / "broadcast_only_sizes_k.mlir").read_text())
def test_random_programs_through_triton_kernels(text):
    """Every random program compiles to kernels that match the evaluator (interpreter)."""
    for out, ref in _through_kernels(text, seed=4):
        assert relative_error(out, ref) <= 1e-5, text
        assert worst_element(out, ref)[0] <= ELEMENT_FACTOR * 1e-5, text  # one wrong lane


def _through_kernels(text: str, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(kernel output, evaluator output) pairs of `text` on random inputs."""
    from tilefuse.runtime.compiled import compile
    from tilefuse.tools.run import to_torch

    module = load_program(text)
    inputs = random_inputs(module, seed)
    outs = compile(text)(*to_torch(inputs, module, DEVICE))
    return [(o.double().cpu().numpy(), r) for o, r in zip(outs, evaluate(module, inputs), strict=True)]


@settings(max_examples=25, deadline=None)
@given(programs(max_ops=5, max_dim=150))
def test_random_programs_through_triton_kernels_with_tiny_sram(text):
    """Rows looped in chunks (2 KB of shared memory), through the kernels (interpreter)."""
    from tilefuse.ir.diagnostics import CompileError
    from tilefuse.runtime.compiled import compile

    module = load_program(text)
    inputs = random_inputs(module, 6)
    refs = evaluate(module, inputs)
    try:
        prog = compile(text, smem_budget=2048)
    except CompileError as e:
        assert "was not tiled" in str(e), text  # a refusal: checked by the evaluator tests
        return
    outs = prog(*map(on_device, inputs))
    for out, ref in zip(outs, refs, strict=True):
        assert relative_error(out.cpu().numpy(), ref) <= 1e-5, text
        assert worst_element(out.cpu().numpy(), ref)[0] <= ELEMENT_FACTOR * 1e-5, text


@settings(max_examples=15, deadline=None)
@given(programs(max_ops=6, max_dim=48, dtypes=("f16", "bf16")))
def test_low_precision_programs_through_triton_kernels(text):
    """f16/bf16 programs through the kernels (interpreter): every tile computes in
    fp32 (a bf16 contraction too small for tl.dot once multiplied in bf16)."""
    from tilefuse.frontend.specialize import read_header
    from tilefuse.oracle.compare import tolerance

    tol = tolerance(read_header(text).dtype or "f32")
    pairs = _through_kernels(text, seed=5)
    if all(relative_error(out, ref) <= 4 * tol for out, ref in pairs):
        return
    # The reference rounds op by op; an ill-conditioned program (x - tanh(x) of
    # small x) is judged against its f64 evaluation instead, as tilefuse-run does.
    inputs = [x.astype(np.float64) for x in random_inputs(load_program(text), 5)]
    exact = evaluate(load_program(text, dtype="f64"), inputs)
    for (out, _), ref in zip(pairs, exact, strict=True):
        assert relative_error(out, ref) <= 4 * tol, text
