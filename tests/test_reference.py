"""The reference evaluator on the IR forms later passes produce."""

from pathlib import Path

import numpy as np
import pytest

from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.ir.diagnostics import CompileError
from tilefuse.oracle.reference import evaluate
from tilefuse.oracle.scalar import round_bf16
from tilefuse.pipeline import run_pipeline


def run(text: str, *inputs: np.ndarray) -> list[np.ndarray]:
    return evaluate(load_program(text), list(inputs))


TILED_ROW_SUM = """
func.func @tiled(%x: tensor<6x10xf32>) -> tensor<6xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c10 = arith.constant 10 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  // A reduction loop over column tiles of 4 (the last one partial, 2 wide),
  // the accumulator carried, its init outside the loop.
  %r = scf.for %j = %c0 to %c8 step %c4 iter_args(%acc = %init) -> (tensor<6xf32>) {
    %t = tensor.extract_slice %x[0, %j] [6, 4] [1, 1] : tensor<6x10xf32> to tensor<6x4xf32>
    %s = linalg.reduce ins(%t : tensor<6x4xf32>) outs(%acc : tensor<6xf32>) dimensions = [1]
      (%in: f32, %a: f32) {
        %v = arith.addf %in, %a : f32
        linalg.yield %v : f32
      }
    scf.yield %s : tensor<6xf32>
  }
  %tail = tensor.extract_slice %x[0, 8] [6, 2] [1, 1] : tensor<6x10xf32> to tensor<6x2xf32>
  %out = linalg.reduce ins(%tail : tensor<6x2xf32>) outs(%r : tensor<6xf32>) dimensions = [1]
    (%in: f32, %a: f32) {
      %v = arith.addf %in, %a : f32
      linalg.yield %v : f32
    }
  func.return %out : tensor<6xf32>
}
"""


def test_scf_for_with_slices_and_carried_accumulator():
    x = np.random.default_rng(0).standard_normal((6, 10)).astype(np.float32)
    (out,) = run(TILED_ROW_SUM, x)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-6)


INSERT = """
func.func @insert(%x: tensor<4x4xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = tensor.insert_slice %x into %f[0, 4] [4, 4] [1, 1] : tensor<4x4xf32> into tensor<4x8xf32>
  func.return %a : tensor<4x8xf32>
}
"""


def test_insert_slice():
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    (out,) = run(INSERT, x)
    assert (out[:, :4] == 0).all() and (out[:, 4:] == x).all()


GROUP = """
func.func @g(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %r = tilefuse.group "fused_kernel_0" ins(%x, %y : tensor<8xf32>, tensor<8xf32>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>):
    %e = tensor.empty() : tensor<8xf32>
    %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %v = arith.subf %p, %q : f32
      linalg.yield %v : f32
    } -> tensor<8xf32>
    tilefuse.yield %s : tensor<8xf32>
  } -> (tensor<8xf32>)
  func.return %r : tensor<8xf32>
}
"""


def test_tilefuse_group():
    x, y = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    (out,) = run(GROUP, x, y)
    np.testing.assert_array_equal(out, x - y)


# A reduction whose payload is not `combiner(x, acc)`: a running
# sum of squares with a select; the evaluator must loop over the reduction.
IRREGULAR = """
func.func @irregular(%x: tensor<3x5xf32>) -> tensor<3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x5xf32>) outs(%f : tensor<3xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %half = arith.constant 0.5 : f32
    %scaled = arith.mulf %acc, %half : f32
    %v = arith.addf %scaled, %in : f32
    linalg.yield %v : f32
  } -> tensor<3xf32>
  func.return %r : tensor<3xf32>
}
"""


def test_reduction_without_recognised_combiner_loops_in_order():
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    (out,) = run(IRREGULAR, x)
    acc = np.zeros(3)
    for j in range(5):
        acc = acc * 0.5 + x[:, j]
    np.testing.assert_allclose(out, acc, rtol=1e-6)


INDEX = """
func.func @iota(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %e = tensor.empty() : tensor<3x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %k = arith.muli %i, %j : index
    %ki = arith.index_cast %k : index to i64
    %kf = arith.sitofp %ki : i64 to f32
    %v = arith.addf %in, %kf : f32
    linalg.yield %v : f32
  } -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}
"""


def test_linalg_index():
    x = np.zeros((3, 4), np.float32)
    (out,) = run(INDEX, x)
    np.testing.assert_array_equal(out, np.outer(np.arange(3), np.arange(4)))


def test_bf16_rounding_is_nearest_even():
    # 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1).
    vals = np.array([1 + 2**-8, 1 + 3 * 2**-8, -2.5, np.inf])
    np.testing.assert_array_equal(round_bf16(vals), [1.0, 1 + 2**-6, -2.5, np.inf])


def test_bf16_program_rounds_results():
    text = GROUP.replace("f32", "bf16")
    x = np.array([1.0 + 2**-8] * 8, np.float32)
    (out,) = run(text, x, np.zeros(8, np.float32))
    assert (out == 1.0).all()


def test_wrong_argument_count_and_shape_are_errors():
    module = load_program(GROUP)
    with pytest.raises(CompileError, match="takes 2 arguments"):
        evaluate(module, [np.zeros(8)])
    with pytest.raises(CompileError, match="shape"):
        evaluate(module, [np.zeros(7), np.zeros(8)])


def test_random_inputs_are_not_degenerate():
    module = load_program(GROUP)
    a, b = random_inputs(module, seed=3)
    assert a.std() > 0.3 and not np.array_equal(a, b)


def test_relative_error_compares_nans_and_infinities_by_position():
    from tilefuse.oracle.compare import relative_error

    ref = np.array([1.0, np.nan, np.inf, -2.0])
    assert relative_error(np.array([1.0, np.nan, np.inf, -2.0]), ref) == 0.0
    assert 0 < relative_error(np.array([1.1, np.nan, np.inf, -2.0]), ref) < 0.1
    for out in ([1.0, 0.0, np.inf, -2.0], [1.0, np.nan, -np.inf, -2.0],
                [np.nan, np.nan, np.inf, -2.0], [1.0, np.nan, np.inf, np.inf]):  # fmt: skip
        assert relative_error(np.array(out), ref) == np.inf, out


def test_a_0d_result_keeps_its_shape():
    src = """
func.func @d(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %i = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %d = linalg.dot ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%i : tensor<f32>) -> tensor<f32>
  func.return %d : tensor<f32>
}"""
    a, b = np.arange(8, dtype=np.float32), np.ones(8, np.float32)
    (d,) = evaluate(load_program(src), [a, b])
    assert np.asarray(d).shape == () and float(d) == 28.0


# Constant map results as torch-mlir prints them: a keep-dim row max and sum
# written at column 0 of tensor<3x1xf32>, read back at column 0; and a column
# written at index 2 of a wider output that keeps its other columns.
KEEPDIM = """
#x = affine_map<(d0, d1) -> (d0, d1)>
#k = affine_map<(d0, d1) -> (d0, 0)>
func.func @keepdim(%x: tensor<3x5xf32>, %w: tensor<3x4xf32>) -> (tensor<3x5xf32>, tensor<3x1xf32>, tensor<3x4xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<3x1xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<3x1xf32>) -> tensor<3x1xf32>
  %m = linalg.generic {indexing_maps = [#x, #k], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x5xf32>) outs(%im : tensor<3x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x5xf32>
  %d = linalg.generic {indexing_maps = [#x, #k, #x], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<3x5xf32>, tensor<3x1xf32>) outs(%e : tensor<3x5xf32>) {
  ^bb0(%a: f32, %mm: f32, %o: f32):
    %r = arith.subf %a, %mm : f32
    linalg.yield %r : f32
  } -> tensor<3x5xf32>
  %col = linalg.generic {indexing_maps = [#x, affine_map<(d0, d1) -> (d0, 2)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<3x5xf32>) outs(%w : tensor<3x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  func.return %d, %m, %col : tensor<3x5xf32>, tensor<3x1xf32>, tensor<3x4xf32>
}
"""


def test_constant_map_results_read_and_write_where_they_point():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((3, 5)), rng.standard_normal((3, 4))
    d, m, col = run(KEEPDIM, x.astype(np.float32), w.astype(np.float32))
    x, w = x.astype(np.float32).astype(np.float64), w.astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(m, x.max(1, keepdims=True))
    np.testing.assert_allclose(d, x - x.max(1, keepdims=True), rtol=1e-6)
    want = w.copy()
    want[:, 2] += x.sum(1)
    np.testing.assert_allclose(col, want, rtol=1e-6)


PROGRAMS = Path(__file__).parent / "programs"


@pytest.mark.parametrize("name", ["keepdim_softmax", "keepdim_over_all_dims", "constant_map_bias"])
def test_unit_dim_folding_keeps_meaning(name):
    """The oracle reads constant map results as written, and `fold-unit-dims`
    folds them away (`passes/fold_unit_dims.py`): two independent readings agree."""
    module = load_program(PROGRAMS / f"{name}.mlir")
    inputs = random_inputs(module, seed=1)
    before = evaluate(module, inputs)
    run_pipeline(module, until="fold-unit-dims")
    assert "(0" not in str(module) and ", 0)" not in str(module)
    for out, ref in zip(evaluate(module, inputs), before, strict=True):
        np.testing.assert_allclose(out, ref, rtol=1e-6)
