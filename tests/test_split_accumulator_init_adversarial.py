"""Adversarial tests of `split-accumulator-init` (tilefuse/passes/split_accumulator_init.py):
sums that accumulate into an initial tensor (a function argument, a bias broadcast,
another reduction's result, a constant, a fill) against numpy in float64 or torch
eager, through the kernels in the interpreter; and the forms the pass must leave
alone (a max, a payload reading the accumulator twice, integers, 16-bit sums,
dynamic shapes), whose numbers must not change either.

`splits` counts the generics the pass rewrites in each compile (its `_split`,
wrapped), so each test says whether the pass fired."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import tilefuse.passes.split_accumulator_init as sai
from tests.device import DEVICE, on_device
from tests.eager import Fn, eager64
from tilefuse.frontend.program import load_program
from tilefuse.ir.diagnostics import CompileError
from tilefuse.oracle.reference import evaluate
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime.compiled import compile


@pytest.fixture
def splits(monkeypatch):
    """The number of generics `split-accumulator-init` has rewritten so far."""
    count = [0]
    split = sai._split

    def counted(op):
        count[0] += 1
        split(op)

    monkeypatch.setattr(sai, "_split", counted)
    return count


_RNG = np.random.default_rng(0)


def _f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return np.asarray(scale * _RNG.standard_normal(shape), dtype=np.float32)


def _run(text: str, *args: np.ndarray) -> tuple[np.ndarray, ...]:
    prog = compile(text)
    return tuple(o.cpu().numpy() for o in prog(*(on_device(a) for a in args)))


def _left_alone(text: str, *args: np.ndarray) -> list[np.ndarray]:
    """Assert the pass leaves `text` as the stages before it made it; the program after
    it, evaluated by the reference evaluator (for payloads the backend refuses)."""
    module = load_program(text)
    run_pipeline(module, until="fold-operand-extf")
    before = str(module)
    run_pipeline(module, start="split-accumulator-init", until="split-accumulator-init")
    assert str(module) == before
    return evaluate(module, list(args))


def _close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol)


def _d(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(a.astype(np.float64) for a in arrays)


# -- MLIR programs the pass rewrites ---------------------------------------------------------

_ROW_SUM = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r : tensor<6xf32>
}
"""


def test_linalg_reduce_into_an_argument(splits):
    x, c = _f32(6, 40), _f32(6)
    (out,) = _run(_ROW_SUM, x, c)
    assert splits[0] == 1
    xd, cd = _d(x, c)
    _close(out, cd + xd.sum(1))


def test_generic_sum_over_two_dims_acc_on_the_right(splits):
    """`yield addf(x, acc)` (the accumulator the right operand), two reduction dims
    (outer and inner) around a parallel one."""
    text = """
func.func @f(%x: tensor<5x6x7xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1)>], iterator_types = ["reduction", "parallel", "reduction"]} ins(%x : tensor<5x6x7xf32>) outs(%c : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %e = math.exp %a : f32
    %s = arith.addf %e, %acc : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}
"""
    x, c = _f32(5, 6, 7), _f32(6)
    (out,) = _run(text, x, c)
    assert splits[0] == 1
    xd, cd = _d(x, c)
    _close(out, cd + np.exp(xd).sum((0, 2)), rtol=1e-5, atol=1e-4)


def test_full_reduction_into_a_rank_0_argument(splits):
    text = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%x : tensor<6x40xf32>) outs(%c : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  func.return %r : tensor<f32>
}
"""
    x, c = _f32(6, 40), np.array(1.5, dtype=np.float32)
    (out,) = _run(text, x, c)
    assert splits[0] == 1
    _close(out, np.float64(c) + x.astype(np.float64).sum(), atol=1e-4)


def test_long_full_reduction_into_a_rank_0_argument(splits):
    """8192 terms into a 0-d argument: long enough for `split-reduction` to split the
    sum after this pass has taken the initial value out of it (it must be added
    once, not once per partial sum)."""
    text = """
func.func @f(%x: tensor<8192xf32>, %c: tensor<f32>) -> tensor<f32> {
  %r = linalg.reduce ins(%x : tensor<8192xf32>) outs(%c : tensor<f32>) dimensions = [0]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r : tensor<f32>
}
"""
    x, c = _f32(8192), np.array(100.0, dtype=np.float32)
    (out,) = _run(text, x, c)
    assert splits[0] == 1
    _close(out, 100.0 + x.astype(np.float64).sum(), rtol=1e-5, atol=1e-3)


def test_long_row_sums_into_an_argument(splits):
    text = """
func.func @f(%x: tensor<2x4096xf32>, %c: tensor<2xf32>) -> tensor<2xf32> {
  %r = linalg.reduce ins(%x : tensor<2x4096xf32>) outs(%c : tensor<2xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r : tensor<2xf32>
}
"""
    x, c = _f32(2, 4096), np.array([-50.0, 1e3], dtype=np.float32)
    (out,) = _run(text, x, c)
    assert splits[0] == 1
    xd, cd = _d(x, c)
    _close(out, cd + xd.sum(1), rtol=1e-5, atol=1e-3)


def test_matmul_with_a_transposed_output_map(splits):
    """out[j, i] = c[j, i] + sum_k a[i, k] b[k, j]: the output map permutes the
    parallel dims (the epilogue add is the identity over the output's shape)."""
    text = """
func.func @f(%a: tensor<6x12xf32>, %b: tensor<12x5xf32>, %c: tensor<5x6xf32>) -> tensor<5x6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d1, d0)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<6x12xf32>, tensor<12x5xf32>) outs(%c : tensor<5x6xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x6xf32>
  func.return %r : tensor<5x6xf32>
}
"""
    a, b, c = _f32(6, 12), _f32(12, 5), _f32(5, 6)
    (out,) = _run(text, a, b, c)
    assert splits[0] == 1
    ad, bd, cd = _d(a, b, c)
    _close(out, cd + (ad @ bd).T)


def test_init_also_read_as_an_input(splits):
    """r[i] = c[i] + sum_k x[i, k] * c[i]: the initial tensor is an input as well."""
    text = """
func.func @f(%x: tensor<6x9xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %c : tensor<6x9xf32>, tensor<6xf32>) outs(%c : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}
"""
    x, c = _f32(6, 9), _f32(6)
    (out,) = _run(text, x, c)
    assert splits[0] == 1
    xd, cd = _d(x, c)
    _close(out, cd + (xd * cd[:, None]).sum(1))


@pytest.mark.parametrize("value", ["1.5", "-3.0", "0x7F800000"], ids=["one_half", "minus_three", "inf"])
def test_sum_into_a_nonzero_fill(splits, value):
    text = f"""
func.func @f(%x: tensor<6x40xf32>) -> tensor<6xf32> {{
  %v = arith.constant {value} : f32
  %e = tensor.empty() : tensor<6xf32>
  %c = linalg.fill ins(%v : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %r = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {{
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }}
  func.return %r : tensor<6xf32>
}}
"""
    x = _f32(6, 40)
    (out,) = _run(text, x)
    assert splits[0] == 1
    start = float.fromhex("inf") if value.startswith("0x") else float(value)
    _close(out, start + x.astype(np.float64).sum(1))


def test_sum_into_a_broadcast_scalar_argument(splits):
    text = """
func.func @f(%x: tensor<6x40xf32>, %s: tensor<f32>) -> tensor<6xf32> {
  %e = tensor.empty() : tensor<6xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%s : tensor<f32>) outs(%e : tensor<6xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<6xf32>
  %r = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
    }
  func.return %r : tensor<6xf32>
}
"""
    x, s = _f32(6, 40), np.array(-2.25, dtype=np.float32)
    (out,) = _run(text, x, s)
    assert splits[0] == 1
    _close(out, -2.25 + x.astype(np.float64).sum(1))


def test_sum_into_a_dense_constant(splits):
    text = """
func.func @f(%x: tensor<4x40xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<[1.0, -2.0, 0.5, 1000.0]> : tensor<4xf32>
  %r = linalg.reduce ins(%x : tensor<4x40xf32>) outs(%c : tensor<4xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r : tensor<4xf32>
}
"""
    x = _f32(4, 40)
    (out,) = _run(text, x)
    assert splits[0] == 1
    _close(out, np.array([1.0, -2.0, 0.5, 1000.0]) + x.astype(np.float64).sum(1), atol=1e-4)


def test_dense_zero_constant_init(splits):
    """A constant tensor of zeros is not a fill: the pass may split it (harmless); the
    numbers are the plain sum."""
    text = """
func.func @f(%x: tensor<4x40xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<0.0> : tensor<4xf32>
  %r = linalg.reduce ins(%x : tensor<4x40xf32>) outs(%c : tensor<4xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r : tensor<4xf32>
}
"""
    x = _f32(4, 40)
    (out,) = _run(text, x)
    _close(out, x.astype(np.float64).sum(1))


_VIEW_INITS = {
    "expand_shape": ("%c: tensor<12xf32>",
                     "%i = tensor.expand_shape %c [[0, 1]] output_shape [3, 4] : tensor<12xf32> into tensor<3x4xf32>",
                     (12,), lambda c: c.reshape(3, 4)),
    "extract_slice": ("%c: tensor<5x6xf32>",
                      "%i = tensor.extract_slice %c[1, 2] [3, 4] [1, 1] : tensor<5x6xf32> to tensor<3x4xf32>",
                      (5, 6), lambda c: c[1:4, 2:6]),
    "transpose": ("%c: tensor<4x3xf32>",
                  "%et = tensor.empty() : tensor<3x4xf32>\n"
                  "  %i = linalg.transpose ins(%c : tensor<4x3xf32>) outs(%et : tensor<3x4xf32>) permutation = [1, 0]",
                  (4, 3), lambda c: c.T),
}  # fmt: skip


@pytest.mark.parametrize("view", sorted(_VIEW_INITS))
def test_matmul_into_a_view_of_an_argument(splits, view):
    arg, op, shape, ref = _VIEW_INITS[view]
    text = f"""
func.func @f(%a: tensor<3x8xf32>, %b: tensor<8x4xf32>, {arg}) -> tensor<3x4xf32> {{
  {op}
  %m = linalg.matmul ins(%a, %b : tensor<3x8xf32>, tensor<8x4xf32>) outs(%i : tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %m : tensor<3x4xf32>
}}
"""
    a, b, c = _f32(3, 8), _f32(8, 4), _f32(*shape)
    (out,) = _run(text, a, b, c)
    assert splits[0] == 1
    ad, bd, cd = _d(a, b, c)
    _close(out, ref(cd) + ad @ bd)


def _inserted(c: np.ndarray, d: np.ndarray) -> np.ndarray:
    c = c.copy()
    c[1:3, 1:3] = d
    return c


_HOST_INITS = {
    "concat": ("%c1: tensor<2x4xf32>, %c2: tensor<3x4xf32>",
               "%i = tensor.concat dim(0) %c1, %c2 : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>",
               ((2, 4), (3, 4)), lambda c1, c2: np.concatenate([c1, c2])),
    "pad": ("%c: tensor<3x2xf32>",
            "%p = arith.constant 2.5 : f32\n"
            "  %i = tensor.pad %c low[1, 1] high[1, 1] {\n"
            "  ^bb0(%i0: index, %i1: index):\n"
            "    tensor.yield %p : f32\n"
            "  } : tensor<3x2xf32> to tensor<5x4xf32>",
            ((3, 2),), lambda c: np.pad(c, 1, constant_values=2.5)),
    "insert_slice": ("%c: tensor<5x4xf32>, %d: tensor<2x2xf32>",
                     "%i = tensor.insert_slice %d into %c[1, 1] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<5x4xf32>",
                     ((5, 4), (2, 2)), _inserted),
}  # fmt: skip


@pytest.mark.parametrize("how", sorted(_HOST_INITS))
def test_matmul_into_a_host_built_init(splits, how):
    """The initial tensor a concat, a constant pad or an insert_slice of arguments."""
    args, op, shapes, ref = _HOST_INITS[how]
    text = f"""
func.func @f(%a: tensor<5x8xf32>, %b: tensor<8x4xf32>, {args}) -> tensor<5x4xf32> {{
  {op}
  %m = linalg.matmul ins(%a, %b : tensor<5x8xf32>, tensor<8x4xf32>) outs(%i : tensor<5x4xf32>) -> tensor<5x4xf32>
  func.return %m : tensor<5x4xf32>
}}
"""
    a, b, *cs = _f32(5, 8), _f32(8, 4), *(_f32(*s) for s in shapes)
    (out,) = _run(text, a, b, *cs)
    assert splits[0] == 1
    ad, bd, *cds = _d(a, b, *cs)
    _close(out, ref(*cds) + ad @ bd)


def test_keepdim_output_map_with_a_constant(splits):
    """A keep-dim sum, `(d0, d1) -> (d0, 0)`, into a 6x1 argument."""
    text = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<6x1xf32>) -> tensor<6x1xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x40xf32>) outs(%c : tensor<6x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<6x1xf32>
  func.return %r : tensor<6x1xf32>
}
"""
    x, c = _f32(6, 40), _f32(6, 1)
    (out,) = _run(text, x, c)
    assert splits[0] == 1
    xd, cd = _d(x, c)
    _close(out, cd + xd.sum(1, keepdims=True))


def test_payload_reading_the_reduction_index(splits):
    """acc + x * k (`linalg.index` of the reduction loop)."""
    text = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %p = arith.mulf %a, %fi : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}
"""
    x, c = _f32(6, 40), _f32(6)
    (out,) = _run(text, x, c)
    assert splits[0] == 1
    xd, cd = _d(x, c)
    _close(out, cd + (xd * np.arange(40)).sum(1), rtol=1e-5, atol=1e-4)


def test_payload_adding_a_constant_from_outside_the_block(splits):
    """acc + 1.0 for each of 40 steps (the addend defined outside the payload)."""
    text = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %one = arith.constant 1.0 : f32
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %one : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}
"""
    x, c = _f32(6, 40), _f32(6)
    (out,) = _run(text, x, c)
    assert splits[0] == 1
    _close(out, c.astype(np.float64) + 40.0)


_NAMED = {
    "batch_matmul": ("linalg.batch_matmul", ((3, 5, 8), (3, 8, 4), (3, 5, 4)), lambda a, b: a @ b),
    "matvec": ("linalg.matvec", ((5, 8), (8,), (5,)), lambda a, b: a @ b),
    "dot": ("linalg.dot", ((64,), (64,), ()), lambda a, b: np.asarray(a @ b)),
    "matmul_transpose_b": ("linalg.matmul_transpose_b", ((5, 8), (4, 8), (5, 4)), lambda a, b: a @ b.T),
}  # fmt: skip


def _t(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{n}x" for n in shape) + "f32>"


@pytest.mark.parametrize("name", sorted(_NAMED))
def test_named_contraction_into_an_argument(splits, name):
    op, shapes, ref = _NAMED[name]
    ta, tb, tc = map(_t, shapes)
    text = f"""
func.func @f(%a: {ta}, %b: {tb}, %c: {tc}) -> {tc} {{
  %m = {op} ins(%a, %b : {ta}, {tb}) outs(%c : {tc}) -> {tc}
  func.return %m : {tc}
}}
"""
    a, b, c = (_f32(*s) for s in shapes)
    (out,) = _run(text, a, b, c)
    assert splits[0] == 1
    ad, bd, cd = _d(a, b, c)
    _close(out, cd + ref(ad, bd))


def test_sum_pooling_into_an_argument(splits):
    """A window (`fold-windows` runs after this pass): 3x3 sums, stride 2, into `c`."""
    text = """
func.func @f(%x: tensor<2x3x8x8xf32>, %c: tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32> {
  %w = tensor.empty() : tensor<3x3xf32>
  %r = linalg.pooling_nchw_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<2x3x8x8xf32>, tensor<3x3xf32>) outs(%c : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  func.return %r : tensor<2x3x3x3xf32>
}
"""
    x, c = _f32(2, 3, 8, 8), _f32(2, 3, 3, 3)
    (out,) = _run(text, x, c)
    assert splits[0] == 1
    xd, want = x.astype(np.float64), c.astype(np.float64)
    for i in range(3):
        for j in range(3):
            want[:, :, i, j] += xd[:, :, 2 * i : 2 * i + 3, 2 * j : 2 * j + 3].sum((2, 3))
    _close(out, want)


def test_named_convolution_into_a_full_tensor_argument(splits):
    text = """
func.func @f(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %c: tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> {
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) outs(%c : tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
  func.return %r : tensor<2x4x6x6xf32>
}
"""
    x, w, c = _f32(2, 3, 8, 8), _f32(4, 3, 3, 3), _f32(2, 4, 6, 6)
    (out,) = _run(text, x, w, c)
    assert splits[0] == 1
    want = c + torch.nn.functional.conv2d(torch.from_numpy(x).double(), torch.from_numpy(w).double()).numpy()
    _close(out, want, atol=1e-4)


# -- dynamic sizes (MLIR) ---------------------------------------------------------------------

_DYNAMIC = {
    # a dynamic reduction length into a static output: the pass fires
    "reduction_length": ("""
func.func @f(%x: tensor<6x?xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.reduce ins(%x : tensor<6x?xf32>) outs(%c : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r : tensor<6xf32>
}
""", {"x.1": (1, 4096)}, lambda n: ((6, n), (6,)), lambda x, c: c + x.sum(1), 1),
    "matmul_k": ("""
func.func @f(%a: tensor<4x?xf32>, %b: tensor<?x5xf32>, %c: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %m = linalg.matmul ins(%a, %b : tensor<4x?xf32>, tensor<?x5xf32>) outs(%c : tensor<4x5xf32>) -> tensor<4x5xf32>
  func.return %m : tensor<4x5xf32>
}
""", {"a.1": (1, 512), "b.0": (1, 512)}, lambda n: ((4, n), (n, 5), (4, 5)), lambda a, b, c: c + a @ b, 1),
    # a dynamic output: left alone
    "dynamic_output": ("""
func.func @f(%x: tensor<?x40xf32>, %c: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.reduce ins(%x : tensor<?x40xf32>) outs(%c : tensor<?xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r : tensor<?xf32>
}
""", {"x.0": (1, 512), "c.0": (1, 512)}, lambda n: ((n, 40), (n,)), lambda x, c: c + x.sum(1), 0),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(_DYNAMIC))
def test_dynamic_sizes(splits, name):
    from tilefuse.ir.dynamic import DimRange

    text, ranges, shapes, ref, fired = _DYNAMIC[name]
    prog = compile(text, dim_ranges={k: DimRange(*v) for k, v in ranges.items()})
    assert splits[0] == fired
    for n in (1, 3, 300):
        args = [_f32(*s) for s in shapes(n)]
        (out,) = prog(*(on_device(a) for a in args))
        _close(out.cpu().numpy(), ref(*_d(*args)), atol=1e-4)


# -- chains, shared and returned initial tensors ---------------------------------------------

def test_matmul_into_a_matmul_into_an_argument(splits):
    """m1 = c + a b; m2 = m1 + d e: both rewritten, the second's initial tensor the
    first's epilogue add."""
    text = """
func.func @f(%a: tensor<8x12xf32>, %b: tensor<12x6xf32>, %c: tensor<8x6xf32>, %d: tensor<8x10xf32>, %e: tensor<10x6xf32>) -> tensor<8x6xf32> {
  %m1 = linalg.matmul ins(%a, %b : tensor<8x12xf32>, tensor<12x6xf32>) outs(%c : tensor<8x6xf32>) -> tensor<8x6xf32>
  %m2 = linalg.matmul ins(%d, %e : tensor<8x10xf32>, tensor<10x6xf32>) outs(%m1 : tensor<8x6xf32>) -> tensor<8x6xf32>
  func.return %m2 : tensor<8x6xf32>
}
"""
    a, b, c, d, e = _f32(8, 12), _f32(12, 6), _f32(8, 6), _f32(8, 10), _f32(10, 6)
    (out,) = _run(text, a, b, c, d, e)
    assert splits[0] == 2
    ad, bd, cd, dd, ed = _d(a, b, c, d, e)
    _close(out, cd + ad @ bd + dd @ ed, atol=1e-4)


def test_matmul_into_a_matmul_result_returned_too(splits):
    """The first matmul (from zeros) is the second's initial tensor and a result."""
    text = """
func.func @f(%a: tensor<8x12xf32>, %b: tensor<12x6xf32>, %d: tensor<8x10xf32>, %e: tensor<10x6xf32>) -> (tensor<8x6xf32>, tensor<8x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %em = tensor.empty() : tensor<8x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%em : tensor<8x6xf32>) -> tensor<8x6xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<8x12xf32>, tensor<12x6xf32>) outs(%z : tensor<8x6xf32>) -> tensor<8x6xf32>
  %m2 = linalg.matmul ins(%d, %e : tensor<8x10xf32>, tensor<10x6xf32>) outs(%m1 : tensor<8x6xf32>) -> tensor<8x6xf32>
  func.return %m2, %m1 : tensor<8x6xf32>, tensor<8x6xf32>
}
"""
    a, b, d, e = _f32(8, 12), _f32(12, 6), _f32(8, 10), _f32(10, 6)
    out2, out1 = _run(text, a, b, d, e)
    assert splits[0] == 1
    ad, bd, dd, ed = _d(a, b, d, e)
    _close(out1, ad @ bd, atol=1e-4)
    _close(out2, ad @ bd + dd @ ed, atol=1e-4)


def test_row_sum_into_a_column_sum(splits):
    """s = column sums of x (from zeros); t = s + row sums of y: a reduction's result
    the initial tensor of another reduction over a different dim."""
    text = """
func.func @f(%x: tensor<9x7xf32>, %y: tensor<7x11xf32>) -> tensor<7xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<7xf32>) -> tensor<7xf32>
  %s = linalg.reduce ins(%x : tensor<9x7xf32>) outs(%z : tensor<7xf32>) dimensions = [0]
    (%a: f32, %acc: f32) {
      %r = arith.addf %a, %acc : f32
      linalg.yield %r : f32
    }
  %t = linalg.reduce ins(%y : tensor<7x11xf32>) outs(%s : tensor<7xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %r = arith.addf %a, %acc : f32
      linalg.yield %r : f32
    }
  func.return %t : tensor<7xf32>
}
"""
    x, y = _f32(9, 7), _f32(7, 11)
    (out,) = _run(text, x, y)
    assert splits[0] == 1
    xd, yd = _d(x, y)
    _close(out, xd.sum(0) + yd.sum(1))


def test_one_init_shared_by_two_reductions(splits):
    text = """
func.func @f(%x: tensor<6x40xf32>, %y: tensor<6x13xf32>, %c: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %r1 = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  %r2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%y : tensor<6x13xf32>) outs(%c : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r1, %r2 : tensor<6xf32>, tensor<6xf32>
}
"""
    x, y, c = _f32(6, 40), _f32(6, 13), _f32(6)
    r1, r2 = _run(text, x, y, c)
    assert splits[0] == 2
    xd, yd, cd = _d(x, y, c)
    _close(r1, cd + xd.sum(1))
    _close(r2, cd + (yd * yd).sum(1))


def test_shared_computed_init_two_reductions_and_returned(splits):
    """The initial tensor is computed (exp of an argument), shared by two sums and
    returned as well."""
    text = """
func.func @f(%x: tensor<6x40xf32>, %y: tensor<6x13xf32>, %c: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %e = tensor.empty() : tensor<6xf32>
  %i = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%c : tensor<6xf32>) outs(%e : tensor<6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = math.exp %a : f32
    linalg.yield %t : f32
  } -> tensor<6xf32>
  %r1 = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%i : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  %r2 = linalg.reduce ins(%y : tensor<6x13xf32>) outs(%i : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r1, %i, %r2 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}
"""
    x, y, c = _f32(6, 40), _f32(6, 13), _f32(6)
    r1, i, r2 = _run(text, x, y, c)
    assert splits[0] == 2
    xd, yd, cd = _d(x, y, c)
    _close(i, np.exp(cd))
    _close(r1, np.exp(cd) + xd.sum(1), atol=1e-4)
    _close(r2, np.exp(cd) + yd.sum(1), atol=1e-4)


def test_one_init_shared_by_a_sum_and_a_max(splits):
    """A sum (split) and a max (not) from the same argument."""
    text = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %r1 = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  %r2 = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.maximumf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r1, %r2 : tensor<6xf32>, tensor<6xf32>
}
"""
    x = _f32(6, 40)
    c = np.array([0.0, 10.0, -10.0, 2.0, 1.0, 100.0], dtype=np.float32)
    r1, r2 = _run(text, x, c)
    assert splits[0] == 1
    xd, cd = _d(x, c)
    _close(r1, cd + xd.sum(1))
    np.testing.assert_array_equal(r2, np.maximum(c, x.max(1)))


def test_bias_broadcast_shared_by_two_contractions(splits):
    text = """
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %y: tensor<4x5xf32>, %v: tensor<5x6xf32>, %b: tensor<6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %e = tensor.empty() : tensor<4x6xf32>
  %bb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x6xf32>
  %m1 = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%bb : tensor<4x6xf32>) -> tensor<4x6xf32>
  %m2 = linalg.matmul ins(%y, %v : tensor<4x5xf32>, tensor<5x6xf32>) outs(%bb : tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %m1, %m2 : tensor<4x6xf32>, tensor<4x6xf32>
}
"""
    x, w, y, v, b = _f32(4, 8), _f32(8, 6), _f32(4, 5), _f32(5, 6), _f32(6)
    m1, m2 = _run(text, x, w, y, v, b)
    assert splits[0] == 2
    xd, wd, yd, vd, bd = _d(x, w, y, v, b)
    _close(m1, bd + xd @ wd)
    _close(m2, bd + yd @ vd)


def test_init_argument_returned_too(splits):
    text = """
func.func @f(%a: tensor<8x12xf32>, %b: tensor<12x6xf32>, %c: tensor<8x6xf32>) -> (tensor<8x6xf32>, tensor<8x6xf32>) {
  %m = linalg.matmul ins(%a, %b : tensor<8x12xf32>, tensor<12x6xf32>) outs(%c : tensor<8x6xf32>) -> tensor<8x6xf32>
  func.return %m, %c : tensor<8x6xf32>, tensor<8x6xf32>
}
"""
    a, b, c = _f32(8, 12), _f32(12, 6), _f32(8, 6)
    m, c_out = _run(text, a, b, c)
    assert splits[0] == 1
    ad, bd, cd = _d(a, b, c)
    _close(m, cd + ad @ bd)
    np.testing.assert_array_equal(c_out, c)


def test_bias_broadcast_init_also_used_elementwise(splits):
    """The conv form (a bias broadcast as the initial tensor), the broadcast also read by
    an elementwise op after the contraction: r = bb + x w, q = r * bb."""
    text = """
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>, %b: tensor<6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %e = tensor.empty() : tensor<4x6xf32>
  %bb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x6xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : tensor<4x8xf32>, tensor<8x6xf32>) outs(%bb : tensor<4x6xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %p = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x6xf32>
  %q = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%y, %bb : tensor<4x6xf32>, tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %t = arith.mulf %u, %v : f32
    linalg.yield %t : f32
  } -> tensor<4x6xf32>
  func.return %y, %q : tensor<4x6xf32>, tensor<4x6xf32>
}
"""
    x, w, b = _f32(4, 8), _f32(8, 6), _f32(6)
    y, q = _run(text, x, w, b)
    assert splits[0] == 1
    xd, wd, bd = _d(x, w, b)
    _close(y, bd + xd @ wd)
    _close(q, (bd + xd @ wd) * bd)


# -- attention with an initial tensor ---------------------------------------------------------

_ATTN = """
#x = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @f(%q: tensor<6x8xf32>, %k: tensor<7x8xf32>, %v: tensor<7x8xf32>, %mask: tensor<6x7xf32>, %l0: tensor<6xf32>) -> tensor<6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %es = tensor.empty() : tensor<6x7xf32>
  %s = linalg.matmul_transpose_b ins(%q, %k : tensor<6x8xf32>, tensor<7x8xf32>) outs(%mask : tensor<6x7xf32>) -> tensor<6x7xf32>
  %er = tensor.empty() : tensor<6xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%er : tensor<6xf32>) -> tensor<6xf32>
  %m = linalg.reduce ins(%s : tensor<6x7xf32>) outs(%im : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %t = arith.maximumf %a, %acc : f32
      linalg.yield %t : f32
    }
  %e = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]} ins(%s, %m : tensor<6x7xf32>, tensor<6xf32>) outs(%es : tensor<6x7xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %t = math.exp %d : f32
    linalg.yield %t : f32
  } -> tensor<6x7xf32>
  %l = linalg.reduce ins(%e : tensor<6x7xf32>) outs(%L0 : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %t = arith.addf %a, %acc : f32
      linalg.yield %t : f32
    }
  %p = linalg.generic {indexing_maps = [#x, #r, #x], iterator_types = ["parallel", "parallel"]} ins(%e, %l : tensor<6x7xf32>, tensor<6xf32>) outs(%es : tensor<6x7xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.divf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<6x7xf32>
  %eo = tensor.empty() : tensor<6x8xf32>
  %io = linalg.fill ins(%zero : f32) outs(%eo : tensor<6x8xf32>) -> tensor<6x8xf32>
  %o = linalg.matmul ins(%p, %v : tensor<6x7xf32>, tensor<7x8xf32>) outs(%io : tensor<6x8xf32>) -> tensor<6x8xf32>
  return %o : tensor<6x8xf32>
}
"""


def _attention(q, k, v, mask, l0):
    s = q @ k.T + mask
    e = np.exp(s - s.max(1, keepdims=True))
    return (e / (l0[:, None] + e.sum(1, keepdims=True))) @ v


def test_attention_scores_accumulate_into_the_mask(splits):
    """baddbmm's form in MLIR: q k^T summed into the mask (split), softmax, @ v."""
    text = _ATTN.replace("%L0", "%il").replace(
        "  %l = linalg.reduce",
        "  %il = linalg.fill ins(%zero : f32) outs(%er : tensor<6xf32>) -> tensor<6xf32>\n"
        "  %l = linalg.reduce",
    )
    q, k, v, mask = _f32(6, 8), _f32(7, 8), _f32(7, 8), _f32(6, 7)
    l0 = np.zeros(6, np.float32)
    (out,) = _run(text, q, k, v, mask, l0)
    assert splits[0] == 1
    _close(out, _attention(*_d(q, k, v, mask, l0)), atol=1e-5)


def test_attention_row_sum_from_an_argument(splits):
    """The softmax's row sum starts from an argument `l0` (not a fill): the pass makes
    it sum from zeros then + l0; FlashAttention must not divide by the sum alone nor
    rescale l0 with the running sum."""
    text = _ATTN.replace("%L0", "%l0")
    q, k, v, mask = _f32(6, 8), _f32(7, 8), _f32(7, 8), _f32(6, 7)
    l0 = np.abs(_f32(6)) + 0.5
    (out,) = _run(text, q, k, v, mask, l0)
    assert splits[0] == 2
    _close(out, _attention(*_d(q, k, v, mask, l0)), atol=1e-5)


def test_attention_row_sum_from_a_nonzero_fill(splits):
    """The row sum from a fill of 0.5 (an epsilon in the softmax's denominator)."""
    text = _ATTN.replace("%L0", "%il").replace(
        "  %l = linalg.reduce",
        "  %half = arith.constant 0.5 : f32\n"
        "  %il = linalg.fill ins(%half : f32) outs(%er : tensor<6xf32>) -> tensor<6xf32>\n"
        "  %l = linalg.reduce",
    )
    q, k, v, mask = _f32(6, 8), _f32(7, 8), _f32(7, 8), _f32(6, 7)
    l0 = np.full(6, 0.5, np.float32)
    (out,) = _run(text, q, k, v, mask, l0)
    assert splits[0] == 2
    _close(out, _attention(*_d(q, k, v, mask, l0)), atol=1e-5)


_BATCHED_ATTN = """
#x3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#k3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @attn(%q: tensor<2x6x8xf32>, %k: tensor<2x7x8xf32>, %v: tensor<2x7x8xf32>, %mask: tensor<6x7xf32>) -> tensor<2x6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.35355339 : f32
  %et = tensor.empty() : tensor<2x8x7xf32>
  %kt = linalg.transpose ins(%k : tensor<2x7x8xf32>) outs(%et : tensor<2x8x7xf32>) permutation = [0, 2, 1]
  %es = tensor.empty() : tensor<2x6x7xf32>
  %mb = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, #x3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%mask : tensor<6x7xf32>) outs(%es : tensor<2x6x7xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x6x7xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x6x8xf32>, tensor<2x8x7xf32>) outs(%mb : tensor<2x6x7xf32>) -> tensor<2x6x7xf32>
  %ss = linalg.generic {indexing_maps = [#x3, #x3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x6x7xf32>) outs(%es : tensor<2x6x7xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  } -> tensor<2x6x7xf32>
  %e1 = tensor.empty() : tensor<2x6x1xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2x6x1xf32>) -> tensor<2x6x1xf32>
  %mx = linalg.generic {indexing_maps = [#x3, #k3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ss : tensor<2x6x7xf32>) outs(%im : tensor<2x6x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x6x1xf32>
  %ex = linalg.generic {indexing_maps = [#x3, #k3, #x3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ss, %mx : tensor<2x6x7xf32>, tensor<2x6x1xf32>) outs(%es : tensor<2x6x7xf32>) {
  ^bb0(%a: f32, %m: f32, %o: f32):
    %d = arith.subf %a, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x6x7xf32>
  %iz = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2x6x1xf32>) -> tensor<2x6x1xf32>
  %sm = linalg.generic {indexing_maps = [#x3, #k3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%ex : tensor<2x6x7xf32>) outs(%iz : tensor<2x6x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2x6x1xf32>
  %p = linalg.generic {indexing_maps = [#x3, #k3, #x3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x6x7xf32>, tensor<2x6x1xf32>) outs(%es : tensor<2x6x7xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %r = arith.divf %a, %t : f32
    linalg.yield %r : f32
  } -> tensor<2x6x7xf32>
  %eo = tensor.empty() : tensor<2x6x8xf32>
  %io = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x6x8xf32>) -> tensor<2x6x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x6x7xf32>, tensor<2x7x8xf32>) outs(%io : tensor<2x6x8xf32>) -> tensor<2x6x8xf32>
  func.return %o : tensor<2x6x8xf32>
}
"""


def test_batched_attention_scores_into_a_broadcast_mask(splits):
    """torch-mlir's attention, the scores summed into a 6x7 mask broadcast over the
    batch (baddbmm's form), scaled after: softmax((q k^T + mask) * scale) v."""
    q, k, v, mask = _f32(2, 6, 8), _f32(2, 7, 8), _f32(2, 7, 8), _f32(6, 7)
    mask[:, 5:] = -1e4
    (out,) = _run(_BATCHED_ATTN, q, k, v, mask)
    assert splits[0] == 1
    qd, kd, vd, md = _d(q, k, v, mask)
    s = (qd @ kd.transpose(0, 2, 1) + md) * np.float32(0.35355339)
    e = np.exp(s - s.max(-1, keepdims=True))
    _close(out, (e / e.sum(-1, keepdims=True)) @ vd)


# -- forms the pass must leave alone ----------------------------------------------------------

def test_max_into_an_argument_is_unchanged(splits):
    text = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.maximumf %a, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r : tensor<6xf32>
}
"""
    x = _f32(6, 40)
    c = np.array([0.0, 10.0, -10.0, 2.0, 1.0, 100.0], dtype=np.float32)
    (out,) = _run(text, x, c)
    assert splits[0] == 0
    np.testing.assert_array_equal(out, np.maximum(c, x.max(1)))


def test_payload_reading_the_accumulator_twice_is_unchanged(splits):
    """acc + acc * x: c times the product of (1 + x); split, it would be c alone. Left
    alone (the backend refuses it; the reference evaluator runs it)."""
    text = """
func.func @f(%x: tensor<6x10xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x10xf32>) outs(%c : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.mulf %acc, %a : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}
"""
    x, c = _f32(6, 10, scale=0.2), _f32(6)
    (out,) = _left_alone(text, x, c)
    xd, cd = _d(x, c)
    _close(out, cd * np.prod(1 + xd, axis=1))
    with pytest.raises(CompileError, match="cannot lower"):  # the backend's refusal
        compile(text)
    assert splits[0] == 0


def test_subtracting_payload_is_unchanged(splits):
    """acc - x: not an addf into the accumulator, left alone (the backend refuses it)."""
    text = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x40xf32>) outs(%c : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.subf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}
"""
    x, c = _f32(6, 40), _f32(6)
    (out,) = _left_alone(text, x, c)
    xd, cd = _d(x, c)
    _close(out, cd - xd.sum(1))
    with pytest.raises(CompileError, match="recognised combiner"):  # the backend's refusal
        compile(text)
    assert splits[0] == 0


def test_accumulator_doubled_is_unchanged(splits):
    """yield addf(acc, acc): 2^K c."""
    text = """
func.func @f(%x: tensor<6x5xf32>, %c: tensor<6xf32>) -> tensor<6xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x5xf32>) outs(%c : tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %acc : f32
    linalg.yield %s : f32
  } -> tensor<6xf32>
  func.return %r : tensor<6xf32>
}
"""
    x, c = _f32(6, 5), _f32(6)
    (out,) = _left_alone(text, x, c)
    _close(out, 32.0 * c.astype(np.float64))
    with pytest.raises(CompileError, match="cannot lower"):  # the backend's refusal
        compile(text)
    assert splits[0] == 0


def test_integer_sum_into_an_argument_is_unchanged_and_exact(splits):
    text = """
func.func @f(%x: tensor<6x40xi32>, %c: tensor<6xi32>) -> tensor<6xi32> {
  %r = linalg.reduce ins(%x : tensor<6x40xi32>) outs(%c : tensor<6xi32>) dimensions = [1]
    (%a: i32, %acc: i32) {
      %s = arith.addi %a, %acc : i32
      linalg.yield %s : i32
    }
  func.return %r : tensor<6xi32>
}
"""
    x = _RNG.integers(-(2**20), 2**20, (6, 40)).astype(np.int32)
    c = np.array([2**30, -(2**30), 7, 0, -1, 123456789], dtype=np.int32)
    (out,) = _run(text, x, c)
    assert splits[0] == 0
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, (c.astype(np.int64) + x.astype(np.int64).sum(1)).astype(np.int32))


def test_integer_matmul_into_an_argument_is_unchanged_and_exact(splits):
    text = """
func.func @f(%a: tensor<5x9xi32>, %b: tensor<9x4xi32>, %c: tensor<5x4xi32>) -> tensor<5x4xi32> {
  %m = linalg.matmul ins(%a, %b : tensor<5x9xi32>, tensor<9x4xi32>) outs(%c : tensor<5x4xi32>) -> tensor<5x4xi32>
  func.return %m : tensor<5x4xi32>
}
"""
    a = _RNG.integers(-100, 100, (5, 9)).astype(np.int32)
    b = _RNG.integers(-100, 100, (9, 4)).astype(np.int32)
    c = _RNG.integers(-(2**24), 2**24, (5, 4)).astype(np.int32)
    (out,) = _run(text, a, b, c)
    assert splits[0] == 0
    np.testing.assert_array_equal(out, c + a @ b)


def test_bf16_sum_into_a_bf16_argument_is_unchanged(splits):
    """A 16-bit accumulator: not split (each step rounds to bf16)."""
    text = """
func.func @f(%a: tensor<4x16xbf16>, %b: tensor<16x8xbf16>, %c: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %m = linalg.matmul ins(%a, %b : tensor<4x16xbf16>, tensor<16x8xbf16>) outs(%c : tensor<4x8xbf16>) -> tensor<4x8xbf16>
  func.return %m : tensor<4x8xbf16>
}
"""
    a, b, c = (torch.randn(*s, generator=torch.Generator().manual_seed(i)).bfloat16()
               for i, s in enumerate(((4, 16), (16, 8), (4, 8))))  # fmt: skip
    prog = compile(text)
    (out,) = prog(*(t.to(DEVICE) for t in (a, b, c)))
    assert splits[0] == 0
    want = c.double() + a.double() @ b.double()
    torch.testing.assert_close(out.cpu().double(), want, rtol=2e-2, atol=5e-2)


def test_two_output_generic_is_unchanged(splits):
    """A sum and a max into two arguments in one generic: one output only is split."""
    text = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<6xf32>, %d: tensor<6xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x40xf32>) outs(%c, %d : tensor<6xf32>, tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32, %mx: f32):
    %s = arith.addf %acc, %a : f32
    %m = arith.maximumf %mx, %a : f32
    linalg.yield %s, %m : f32, f32
  } -> (tensor<6xf32>, tensor<6xf32>)
  func.return %r#0, %r#1 : tensor<6xf32>, tensor<6xf32>
}
"""
    x, c, d = _f32(6, 40), _f32(6), _f32(6)
    s, m = _run(text, x, c, d)
    assert splits[0] == 0
    xd, cd = _d(x, c)
    _close(s, cd + xd.sum(1))
    np.testing.assert_array_equal(m, np.maximum(d, x.max(1)))


@pytest.mark.parametrize("kept", [0, 1], ids=["sum_kept", "max_kept"])
def test_two_output_generic_with_one_result_unused(splits, kept):
    """`drop-unused-results` (before this pass) leaves one output: the sum, then split;
    or the max, left alone."""
    text = """
func.func @f(%x: tensor<6x40xf32>, %c: tensor<6xf32>, %d: tensor<6xf32>) -> tensor<6xf32> {
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<6x40xf32>) outs(%c, %d : tensor<6xf32>, tensor<6xf32>) {
  ^bb0(%a: f32, %acc: f32, %mx: f32):
    %s = arith.addf %acc, %a : f32
    %m = arith.maximumf %mx, %a : f32
    linalg.yield %s, %m : f32, f32
  } -> (tensor<6xf32>, tensor<6xf32>)
  func.return %r#KEPT : tensor<6xf32>
}
""".replace("KEPT", str(kept))
    x, c, d = _f32(6, 40), _f32(6), _f32(6)
    (out,) = _run(text, x, c, d)
    assert splits[0] == (1 if kept == 0 else 0)
    if kept == 0:
        _close(out, c.astype(np.float64) + x.astype(np.float64).sum(1))
    else:
        np.testing.assert_array_equal(out, np.maximum(d, x.max(1)))


def test_zero_fill_and_empty_inits_are_unchanged(splits):
    """Named and generic zero fills: nothing to split."""
    text = """
func.func @f(%x: tensor<6x40xf32>) -> (tensor<6xf32>, tensor<6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e : tensor<6xf32>) -> tensor<6xf32>
  %z2 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%e : tensor<6xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  } -> tensor<6xf32>
  %r1 = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%z1 : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
  %r2 = linalg.reduce ins(%x : tensor<6x40xf32>) outs(%z2 : tensor<6xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %t = arith.mulf %a, %a : f32
      %s = arith.addf %t, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r1, %r2 : tensor<6xf32>, tensor<6xf32>
}
"""
    x = _f32(6, 40)
    r1, r2 = _run(text, x)
    assert splits[0] == 0
    xd = x.astype(np.float64)
    _close(r1, xd.sum(1))
    _close(r2, (xd * xd).sum(1), atol=1e-4)


# -- f64 and mixed precision ------------------------------------------------------------------

def test_f64_matmul_into_an_argument(splits):
    text = """
func.func @f(%a: tensor<8x20xf64>, %b: tensor<20x6xf64>, %c: tensor<8x6xf64>) -> tensor<8x6xf64> {
  %m = linalg.matmul ins(%a, %b : tensor<8x20xf64>, tensor<20x6xf64>) outs(%c : tensor<8x6xf64>) -> tensor<8x6xf64>
  func.return %m : tensor<8x6xf64>
}
"""
    a, b, c = _RNG.standard_normal((8, 20)), _RNG.standard_normal((20, 6)), _RNG.standard_normal((8, 6))
    c[0, 0] = 1e12  # a large initial value: its bits beyond f32's must survive
    (out,) = _run(text, a, b, c)
    assert splits[0] == 1
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, c + a @ b, rtol=1e-12, atol=1e-12)


def test_f32_operands_into_an_f64_argument(splits):
    text = """
func.func @f(%a: tensor<4x80xf32>, %b: tensor<80x5xf32>, %c: tensor<4x5xf64>) -> tensor<4x5xf64> {
  %r = linalg.matmul ins(%a, %b : tensor<4x80xf32>, tensor<80x5xf32>) outs(%c : tensor<4x5xf64>) -> tensor<4x5xf64>
  func.return %r : tensor<4x5xf64>
}
"""
    a, b = _f32(4, 80), _f32(80, 5)
    c = _RNG.standard_normal((4, 5)) + 1e9
    (out,) = _run(text, a, b, c)
    assert splits[0] == 1
    np.testing.assert_allclose(out, c + a.astype(np.float64) @ b.astype(np.float64), rtol=1e-12, atol=1e-9)


def test_bf16_operands_into_an_f32_argument(splits):
    """bf16 operands widened in the payload, the sum f32 into an f32 argument: split."""
    text = """
func.func @f(%a: tensor<4x16xbf16>, %b: tensor<16x8xbf16>, %c: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x16xbf16>, tensor<16x8xbf16>) outs(%c : tensor<4x8xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xf = arith.extf %x : bf16 to f32
    %yf = arith.extf %y : bf16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  func.return %r : tensor<4x8xf32>
}
"""
    g = torch.Generator().manual_seed(3)
    a, b = torch.randn(4, 16, generator=g).bfloat16(), torch.randn(16, 8, generator=g).bfloat16()
    c = torch.randn(4, 8, generator=g)
    (out,) = compile(text)(*(t.to(DEVICE) for t in (a, b, c)))
    assert splits[0] == 1
    want = c.double() + a.double() @ b.double()
    torch.testing.assert_close(out.cpu().double(), want, rtol=1e-5, atol=1e-5)


# -- torch modules ----------------------------------------------------------------------------

def _tt():
    pytest.importorskip("torch_mlir")
    import tilefuse.torch

    return tilefuse.torch


def _randn(*shape: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def _check_module(module: nn.Module, inputs: tuple[torch.Tensor, ...], rtol: float = 1e-4,
                  atol: float = 1e-5) -> object:  # fmt: skip
    """Compile `module` on `inputs`, compare with float64 eager; the compiled module."""
    module = module.eval().to(DEVICE)
    inputs = tuple(x.to(DEVICE) for x in inputs)
    with torch.no_grad():
        compiled = _tt().compile(module, *inputs)
        got = compiled(*inputs)
    want = eager64(module, inputs)
    torch.testing.assert_close(got.cpu().double(), want.double(), rtol=rtol, atol=atol)
    return compiled


def _fresh(module_fn, dtype=torch.float64):
    torch.manual_seed(0)
    return module_fn().to(dtype)


LINEARS = {
    "linear_bias": (lambda: nn.Linear(16, 8), ((4, 16),)),
    "linear_3d_bias": (lambda: nn.Linear(16, 8), ((2, 3, 16),)),
    "addmm_bias_vector": (lambda: Fn(lambda c, a, b: torch.addmm(c, a, b)), ((5,), (6, 12), (12, 5))),
    "addmm_full_matrix": (lambda: Fn(lambda c, a, b: torch.addmm(c, a, b)), ((6, 5), (6, 12), (12, 5))),
    "addmm_beta_alpha": (lambda: Fn(lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0)),
                         ((6, 5), (6, 12), (12, 5))),
    "addmm_beta_zero": (lambda: Fn(lambda c, a, b: torch.addmm(c, a, b, beta=0.0, alpha=-1.0)),
                        ((6, 5), (6, 12), (12, 5))),
    "baddbmm": (lambda: Fn(lambda c, a, b: torch.baddbmm(c, a, b)), ((2, 6, 5), (2, 6, 12), (2, 12, 5))),
    "baddbmm_beta_alpha": (lambda: Fn(lambda c, a, b: torch.baddbmm(c, a, b, beta=0.25, alpha=-1.5)),
                           ((2, 6, 5), (2, 6, 12), (2, 12, 5))),
    "baddbmm_broadcast_c": (lambda: Fn(lambda c, a, b: torch.baddbmm(c, a, b)), ((1, 5), (2, 6, 12), (2, 12, 5))),
    "addbmm": (lambda: Fn(lambda c, a, b: torch.addbmm(c, a, b, beta=0.5)), ((6, 5), (3, 6, 12), (3, 12, 5))),
    "addr": (lambda: Fn(lambda c, a, b: torch.addr(c, a, b)), ((6, 5), (6,), (5,))),
    "bilinear": (lambda: nn.Bilinear(4, 5, 3), ((2, 4), (2, 5))),
    "mlp": (lambda: nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)), ((3, 16),)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(LINEARS))
def test_linear_and_addmm(name):
    make, shapes = LINEARS[name]
    module = _fresh(make, torch.float32)
    inputs = tuple(_randn(*s, seed=i) for i, s in enumerate(shapes))
    _check_module(module, inputs)


def _masked_attention(mask, q, k, v):
    s = torch.baddbmm(mask, q, k.transpose(1, 2), alpha=q.shape[-1] ** -0.5)
    return torch.bmm(torch.softmax(s, -1), v)


def test_baddbmm_attention_mask_softmax_at_v():
    mask = torch.zeros(2, 6, 7)
    mask[:, :, 5:] = -1e4  # the last two keys masked
    inputs = (mask, _randn(2, 6, 8, seed=1), _randn(2, 7, 8, seed=2), _randn(2, 7, 8, seed=3))
    _check_module(Fn(_masked_attention), inputs)


def test_attention_output_accumulated_into_a_residual():
    """res + softmax(q k^T) v as baddbmm spells it."""

    def f(res, q, k, v):
        p = torch.softmax(q @ k.transpose(1, 2), -1)
        return torch.baddbmm(res, p, v)

    inputs = (_randn(2, 6, 8, seed=0), _randn(2, 6, 8, seed=1), _randn(2, 7, 8, seed=2),
              _randn(2, 7, 8, seed=3))  # fmt: skip
    _check_module(Fn(f), inputs)


CONVS = {
    "conv1d": (lambda: nn.Conv1d(3, 4, 3), (2, 3, 10)),
    "conv1d_stride_pad": (lambda: nn.Conv1d(3, 5, 4, stride=2, padding=2), (2, 3, 11)),
    "conv2d": (lambda: nn.Conv2d(3, 4, 3, padding=1), (2, 3, 6, 6)),
    "conv2d_stride_dilation": (lambda: nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2), (2, 4, 9, 9)),
    "conv2d_patch": (lambda: nn.Conv2d(3, 8, 4, stride=4), (2, 3, 8, 12)),
    "conv2d_1x1": (lambda: nn.Conv2d(5, 7, 1), (2, 5, 4, 3)),
    "conv3d": (lambda: nn.Conv3d(2, 3, 2), (1, 2, 4, 4, 4)),
    "conv_transpose2d": (lambda: nn.ConvTranspose2d(3, 4, 3, stride=2), (1, 3, 4, 4)),
    "conv_transpose2d_pad": (lambda: nn.ConvTranspose2d(4, 2, 4, stride=2, padding=1), (2, 4, 3, 5)),
    "grouped": (lambda: nn.Conv2d(4, 6, 3, groups=2), (1, 4, 6, 6)),
    "depthwise": (lambda: nn.Conv2d(4, 4, 3, groups=4, padding=1), (2, 4, 6, 6)),
    "depthwise_multiplier": (lambda: nn.Conv2d(3, 6, 3, groups=3), (1, 3, 6, 5)),
    "grouped_conv1d": (lambda: nn.Conv1d(6, 4, 3, groups=2), (2, 6, 9)),
    "pad_reflect": (lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"), (2, 3, 6, 6)),
    "pad_circular": (lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular"), (2, 3, 6, 6)),
    "pad_same": (lambda: nn.Conv2d(3, 4, 3, padding="same"), (2, 3, 6, 6)),
    "output_1x1": (lambda: nn.Conv2d(3, 8, 6), (2, 3, 6, 6)),
    "conv_transpose2d_groups": (lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, output_padding=1, groups=2),
                                (1, 4, 4, 4)),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(3, 4, 3, stride=2), (2, 3, 5)),
    "conv_transpose3d": (lambda: nn.ConvTranspose3d(2, 3, 2, stride=2), (1, 2, 2, 3, 3)),
    "conv_bn": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)), (2, 3, 6, 6)),
    "conv_softmax": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.Softmax(1)), (2, 3, 6, 6)),
    "conv_pool_linear": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                               nn.Linear(4, 5)), (2, 3, 6, 6)),
    # long batches (merge-positions' rule, after this pass)
    "long_batch_conv2d": (lambda: nn.Conv2d(2, 3, 3), (64, 2, 4, 4)),
    "long_batch_conv1d": (lambda: nn.Conv1d(2, 3, 3), (100, 2, 6)),
    "long_batch_patch": (lambda: nn.Conv2d(3, 4, 2, stride=2), (128, 3, 2, 2)),
    "long_batch_nhwc_out": (lambda: nn.Sequential(nn.Conv2d(3, 4, 2), Fn(lambda y: y.permute(0, 2, 3, 1))),
                            (96, 3, 3, 3)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CONVS))
def test_convolution_with_a_bias(name, splits):
    make, shape = CONVS[name]
    module = _fresh(make, torch.float32)
    _check_module(module, (_randn(*shape),))
    assert splits[0] >= 1


class _ConvBlock(nn.Module):
    """conv(bias) -> relu -> conv(bias) + residual: two splits, each epilogue fused with
    what follows."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 4, 1)

    def forward(self, x):
        return x + self.b(torch.relu(self.a(x)))


def test_conv_block_with_residual(splits):
    _check_module(_fresh(_ConvBlock, torch.float32), (_randn(2, 4, 5, 5),))
    assert splits[0] == 2


def test_conv_with_a_computed_bias(splits):
    w, b = _randn(4, 3, 3, 3, seed=1), _randn(4, seed=2)
    f = Fn(lambda x, w, b: torch.nn.functional.conv2d(x, w, b * 2 + 1))
    _check_module(f, (_randn(2, 3, 6, 6), w, b))
    assert splits[0] == 1


class _TwoUses(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.c(x)
        return y, torch.relu(y) * y


def test_conv_output_returned_and_reused(splits):
    module = _fresh(_TwoUses, torch.float32).eval()
    x = _randn(2, 3, 6, 6)
    with torch.no_grad():
        got = _tt().compile(module, x)(x)
    want = eager64(module, (x,))
    assert splits[0] == 1
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g.cpu().double(), w, rtol=1e-4, atol=1e-5)


def test_torch_compile_backend_forward_and_gradients(splits):
    """`torch.compile(backend=tilefuse)`: inference, then a training step whose
    gradients match eager's."""
    import copy

    _tt()
    from tilefuse.torch import backend

    def make():
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.Tanh(), nn.Flatten(), nn.Linear(64, 5))

    model = _fresh(make, torch.float32)
    ref = copy.deepcopy(model)
    compiled = torch.compile(model, backend=backend.tilefuse)
    x = _randn(2, 3, 6, 6)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), ref(x), rtol=1e-4, atol=1e-5)
    assert splits[0] >= 1
    compiled(x).square().sum().backward()
    ref(x).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_conv_without_bias_is_unchanged(splits):
    _check_module(_fresh(lambda: nn.Conv2d(3, 4, 3, bias=False), torch.float32), (_randn(2, 3, 6, 6),))
    assert splits[0] == 0


def test_f64_conv_with_bias(splits):
    conv = _fresh(lambda: nn.Conv2d(3, 4, 3))
    conv.bias.data += 1e9  # a large bias: f64's bits must survive the reassociation
    x = _randn(2, 3, 6, 6, dtype=torch.float64)
    compiled = _tt().compile(conv, x)
    with torch.no_grad():
        got, want = compiled(x), conv(x)
    assert splits[0] == 1
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-6)


def test_f64_linear(splits):
    lin = _fresh(lambda: nn.Linear(16, 8))
    x = _randn(4, 16, dtype=torch.float64)
    compiled = _tt().compile(lin, x)
    with torch.no_grad():
        got, want = compiled(x), lin(x)
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)


BF16 = {
    "conv2d": (lambda: nn.Conv2d(3, 8, 3, padding=1), (2, 3, 6, 6)),
    "conv1d": (lambda: nn.Conv1d(3, 8, 3), (2, 3, 9)),
    "depthwise": (lambda: nn.Conv2d(4, 4, 3, groups=4), (1, 4, 6, 6)),
    "linear": (lambda: nn.Linear(32, 8), (4, 32)),
    "conv_linear": (lambda: nn.Sequential(nn.Conv2d(3, 4, 2, stride=2), nn.Flatten(), nn.Linear(36, 5)),
                    (2, 3, 6, 6)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(BF16))
def test_bf16_module_against_f32_eager(name, splits):
    """bf16 weights and inputs; torch-mlir's accumulation is f32. Against eager in f32
    on the same bf16 values, within bf16's rounding of the output."""
    make, shape = BF16[name]
    module = _fresh(make, torch.bfloat16).eval()
    x = _randn(*shape, dtype=torch.bfloat16)
    compiled = _tt().compile(module, x)
    with torch.no_grad():
        got = compiled(x)
        want = _fresh(make, torch.bfloat16).float()(x.float())
    assert got.dtype == torch.bfloat16
    err = float((got.float() - want).abs().max() / want.abs().max())
    assert err < 1e-2, err
    if name.startswith(("conv", "depthwise")):  # torch-mlir's f32 sum into the bias: split
        assert splits[0] >= 1


def test_dynamic_batch_conv_with_bias(splits):
    """A batch marked dynamic: the pass leaves `?` shapes alone; numbers at sizes the
    program was not traced at."""
    conv = _fresh(lambda: nn.Conv1d(3, 5, 3), torch.float32).eval()
    x = _randn(4, 3, 10)
    torch._dynamo.mark_dynamic(x, 0, min=2, max=64)
    compiled = _tt().compile(conv, x)
    assert splits[0] == 0
    for n in (2, 7, 33):
        y = _randn(n, 3, 10, seed=n)
        with torch.no_grad():
            got = compiled(y)
        torch.testing.assert_close(got.cpu().double(), eager64(conv, (y,)), rtol=1e-4, atol=1e-5)
