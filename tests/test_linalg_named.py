"""Upstream named linalg ops that xDSL lacks: syntax, meaning (vs numpy), kernels."""

import numpy as np
import pytest
import torch

from tests.device import on_device
from tilefuse.frontend.parse import parse_module
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.ir.context import make_context
from tilefuse.oracle.compare import relative_error
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime.compiled import compile

CONTRACTIONS = {
    "batch_matmul": ("2x5x3", "2x3x4", "2x5x4", lambda a, b: a @ b),
    "batch_matmul_transpose_b": ("2x5x3", "2x4x3", "2x5x4", lambda a, b: a @ b.transpose(0, 2, 1)),
    "matmul_transpose_b": ("5x3", "4x3", "5x4", lambda a, b: a @ b.T),
    "matmul_transpose_a": ("3x5", "3x4", "5x4", lambda a, b: a.T @ b),
}


def contraction_program(name, sa, sb, so):
    return f"""
func.func @f(%a: tensor<{sa}xf32>, %b: tensor<{sb}xf32>, %c: tensor<{so}xf32>) -> tensor<{so}xf32> {{
  %r = linalg.{name} ins(%a, %b : tensor<{sa}xf32>, tensor<{sb}xf32>) outs(%c : tensor<{so}xf32>) -> tensor<{so}xf32>
  func.return %r : tensor<{so}xf32>
}}
"""


@pytest.mark.parametrize("name", sorted(CONTRACTIONS))
def test_contraction_means_what_upstream_says(name):
    sa, sb, so, ref = CONTRACTIONS[name]
    text = contraction_program(name, sa, sb, so)
    module = load_program(text)
    a, b, c = random_inputs(module, 1)
    (out,) = evaluate(module, [a, b, c])
    np.testing.assert_allclose(out, c + ref(a.astype(np.float64), b.astype(np.float64)), rtol=1e-5)
    # and through the Triton kernels (interpreter)
    (k,) = compile(text)(*map(on_device, (a, b, c)))
    assert relative_error(k.cpu().numpy(), out) < 1e-5


ELEMENTWISE = {
    "tanh": np.tanh, "abs": np.abs, "negf": np.negative, "floor": np.floor, "ceil": np.ceil,
    "square": np.square, "reciprocal": lambda x: 1 / x,
    "rsqrt": lambda x: 1 / np.sqrt(np.abs(x) + 1), "erf": None,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_unary_elementwise(name):
    text = f"""
func.func @f(%x: tensor<7x9xf32>, %o: tensor<7x9xf32>) -> tensor<7x9xf32> {{
  %r = linalg.{name} ins(%x : tensor<7x9xf32>) outs(%o : tensor<7x9xf32>) -> tensor<7x9xf32>
  func.return %r : tensor<7x9xf32>
}}
"""
    module = load_program(text)
    x, o = random_inputs(module, 2)
    if name == "rsqrt":
        x = np.abs(x) + 1
    (out,) = evaluate(module, [x, o])
    if name == "erf":
        from math import erf

        expected = np.vectorize(erf)(x.astype(np.float64))
    elif name == "rsqrt":
        expected = 1 / np.sqrt(x.astype(np.float64))
    else:
        expected = ELEMENTWISE[name](x.astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=2e-6, atol=1e-6)


def test_binary_elementwise_and_round_trip():
    text = """
func.func @f(%x: tensor<4x6xf32>, %y: tensor<4x6xf32>, %o: tensor<4x6xf32>) -> (tensor<4x6xf32>, tensor<4x6xf32>) {
  %d = linalg.div ins(%x, %y : tensor<4x6xf32>, tensor<4x6xf32>) outs(%o : tensor<4x6xf32>) -> tensor<4x6xf32>
  %p = linalg.powf ins(%y, %x : tensor<4x6xf32>, tensor<4x6xf32>) outs(%o : tensor<4x6xf32>) -> tensor<4x6xf32>
  func.return %d, %p : tensor<4x6xf32>, tensor<4x6xf32>
}
"""
    module = load_program(text)
    x, y, o = random_inputs(module, 3)
    y = np.abs(y) + 0.5
    d, p = evaluate(module, [x, y, o])
    np.testing.assert_allclose(d, x / y, rtol=1e-6)
    np.testing.assert_allclose(p, y.astype(np.float64) ** x, rtol=1e-5)
    printed = str(parse_module(make_context(), text))
    assert "linalg.div ins(" in printed and "linalg.powf ins(" in printed
    assert str(parse_module(make_context(), printed)) == printed


VIEWS = """
func.func @f(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [4, 8, 8] : tensor<4x64xf32> into tensor<4x8x8xf32>
  %o = tensor.empty() : tensor<4x8x8xf32>
  %r = linalg.exp ins(%e : tensor<4x8x8xf32>) outs(%o : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %c = tensor.collapse_shape %r [[0], [1, 2]] : tensor<4x8x8xf32> into tensor<4x64xf32>
  func.return %c : tensor<4x64xf32>
}
"""


def test_reshapes_of_arguments_and_results_fold_away():
    """expand, exp, collapse: propagate-reshapes runs the exp in the collapsed
    shape, where the two reshapes meet and fold: one kernel, no view left."""
    prog = compile(VIEWS)
    assert len(prog.kernels) == 1 and ".reshape(" not in prog.source
    x = torch.randn(4, 64)
    (y,) = prog(on_device(x))
    torch.testing.assert_close(y.cpu(), torch.exp(x))


def test_a_reshape_between_elementwise_ops_does_not_split_them():
    """exp, a reshape, tanh: the reshape folds (propagate-reshapes), so exp and tanh
    are one kernel (a reshape that stays between kernels, and orders them, is
    tests/programs/reshape_stays_between_kernels.mlir)."""
    text = VIEWS.replace("func.return %c : tensor<4x64xf32>", """%o2 = tensor.empty() : tensor<4x64xf32>
  %t = linalg.tanh ins(%c : tensor<4x64xf32>) outs(%o2 : tensor<4x64xf32>) -> tensor<4x64xf32>
  func.return %t : tensor<4x64xf32>""")
    prog = compile(text)
    assert len(prog.kernels) == 1 and ".reshape(" not in prog.source
    x = torch.randn(4, 64)
    (y,) = prog(on_device(x))
    torch.testing.assert_close(y.cpu(), torch.tanh(torch.exp(x)))


ATTENTION = """
func.func @attn(%q: tensor<2x40x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x16xf32>) -> tensor<2x40x16xf32> {
  %z = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.25 : f32
  %e = tensor.empty() : tensor<2x40x40xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %s = linalg.batch_matmul_transpose_b ins(%q, %k : tensor<2x40x16xf32>, tensor<2x40x16xf32>) outs(%f : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %ss = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x40x40xf32>) outs(%e : tensor<2x40x40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %scale : f32
    linalg.yield %m : f32
  } -> tensor<2x40x40xf32>
  %er = tensor.empty() : tensor<2x40xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%er : tensor<2x40xf32>) -> tensor<2x40xf32>
  %mx = linalg.reduce ins(%ss : tensor<2x40x40xf32>) outs(%mi : tensor<2x40xf32>) dimensions = [2]
    (%in: f32, %acc: f32) {
      %t = arith.maximumf %in, %acc : f32
      linalg.yield %t : f32
    }
  %ex = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ss, %mx : tensor<2x40x40xf32>, tensor<2x40xf32>) outs(%e : tensor<2x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<2x40x40xf32>
  %si = linalg.fill ins(%z : f32) outs(%er : tensor<2x40xf32>) -> tensor<2x40xf32>
  %sm = linalg.reduce ins(%ex : tensor<2x40x40xf32>) outs(%si : tensor<2x40xf32>) dimensions = [2]
    (%in: f32, %acc: f32) {
      %t = arith.addf %in, %acc : f32
      linalg.yield %t : f32
    }
  %p = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (b, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ex, %sm : tensor<2x40x40xf32>, tensor<2x40xf32>) outs(%e : tensor<2x40x40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x40x40xf32>
  %eo = tensor.empty() : tensor<2x40x16xf32>
  %fo = linalg.fill ins(%z : f32) outs(%eo : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x40x40xf32>, tensor<2x40x16xf32>) outs(%fo : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  return %o : tensor<2x40x16xf32>
}
"""


def test_attention_from_named_batch_matmuls_becomes_flash_attention():
    """softmax(Q K^T s) V spelled with batch_matmul_transpose_b / batch_matmul, as
    upstream prints it: one FlashAttention kernel, against numpy."""
    prog = compile(ATTENTION)
    assert len(prog.kernels) == 1 and "# fused_kernel_0: flash-attention" in prog.source
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 40, 16)).astype(np.float32) for _ in range(3))
    s = q.astype(np.float64) @ k.transpose(0, 2, 1) * 0.25
    p = np.exp(s - s.max(-1, keepdims=True))
    expected = (p / p.sum(-1, keepdims=True)) @ v
    (out,) = prog(*map(on_device, (q, k, v)))
    assert relative_error(out.cpu().numpy(), expected) < 1e-5


def test_tensor_constants_are_built_on_the_host():
    text = """
func.func @f(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %b = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %h = arith.constant dense<0.5> : tensor<4x3xf32>
  %o = tensor.empty() : tensor<4x3xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<4x3xf32>, tensor<3xf32>) outs(%o : tensor<4x3xf32>) {
  ^bb0(%a: f32, %c: f32, %d: f32):
    %r = arith.addf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %m = linalg.mul ins(%s, %h : tensor<4x3xf32>, tensor<4x3xf32>) outs(%o : tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %m : tensor<4x3xf32>
}
"""
    prog = compile(text)
    # a splat is one number in the kernel (scalar-operands), nothing built on the host;
    # other tensor constants are data handed to the host function (`CONSTANTS`), never
    # literals in the source
    assert "torch.full((), 0.5" not in prog.source and "* 0.5)" in prog.source
    assert "1.0, 2.0" not in prog.source
    assert "CONSTANTS = (('b', (3,), torch.float32),)" in prog.source
    x = torch.randn(4, 3)
    (y,) = prog(on_device(x))
    torch.testing.assert_close(y.cpu(), (x + torch.tensor([1.0, 2.0, 3.0])) * 0.5)


SOFTMAX_ATTENTION = """
func.func @attn(%q: tensor<2x40x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x16xf32>) -> tensor<2x40x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x40x40xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %s = linalg.batch_matmul_transpose_b ins(%q, %k : tensor<2x40x16xf32>, tensor<2x40x16xf32>) outs(%f : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x40x40xf32>) outs(%e : tensor<2x40x40xf32>) -> tensor<2x40x40xf32>
  %eo = tensor.empty() : tensor<2x40x16xf32>
  %fo = linalg.fill ins(%z : f32) outs(%eo : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x40x40xf32>, tensor<2x40x16xf32>) outs(%fo : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  func.return %o : tensor<2x40x16xf32>
}
"""


def test_softmax_op_matches_torch_and_feeds_flash_attention():
    x = torch.randn(3, 5, 300)
    text = """
func.func @f(%x: tensor<3x5x300xf32>) -> tensor<3x5x300xf32> {
  %o = tensor.empty() : tensor<3x5x300xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<3x5x300xf32>) outs(%o : tensor<3x5x300xf32>) -> tensor<3x5x300xf32>
  func.return %r : tensor<3x5x300xf32>
}
"""
    (y,) = compile(text)(on_device(x))
    torch.testing.assert_close(y.cpu(), torch.softmax(x, dim=1))
    module = load_program(text)
    (ev,) = evaluate(module, [x.numpy()])  # the evaluator's own softmax
    assert relative_error(ev, torch.softmax(x, dim=1).numpy()) < 1e-6

    prog = compile(SOFTMAX_ATTENTION)
    assert len(prog.kernels) == 1 and "flash-attention" in prog.source
    q, k, v = (torch.randn(2, 40, 16) for _ in range(3))
    (o,) = prog(*map(on_device, (q, k, v)))
    torch.testing.assert_close(o.cpu(), torch.softmax(q @ k.transpose(1, 2), -1) @ v, rtol=1e-4, atol=1e-5)
