"""`math.fpowi` through the kernels: exact signs for negative bases, reciprocals for
negative exponents, constant exponents unrolled, others through `_fpowi`."""

import numpy as np
import pytest
import torch

import tilefuse.runtime as tf
from tests.device import run_on_device
from tilefuse.frontend.parse import parse_module
from tilefuse.ir.context import make_context
from tilefuse.oracle.reference import evaluate

PROGRAM = """
#m = affine_map<(d0) -> (d0)>
func.func @powi(%x: tensor<16xf32>, %n: tensor<16xi32>) -> (tensor<16xf32>, tensor<16xf32>) {{
  %k = arith.constant {k} : i64
  %e = tensor.empty() : tensor<16xf32>
  %r:2 = linalg.generic {{indexing_maps = [#m, #m, #m, #m], iterator_types = ["parallel"]}}
      ins(%x, %n : tensor<16xf32>, tensor<16xi32>) outs(%e, %e : tensor<16xf32>, tensor<16xf32>) {{
  ^bb0(%b: f32, %p: i32, %o1: f32, %o2: f32):
    %c = math.fpowi %b, %k : f32, i64
    %v = math.fpowi %b, %p : f32, i32
    linalg.yield %c, %v : f32, f32
  }} -> (tensor<16xf32>, tensor<16xf32>)
  func.return %r#0, %r#1 : tensor<16xf32>, tensor<16xf32>
}}
"""

BASES = torch.tensor([-2.0, -0.0, 0.0, -1.5, 3.0, -1.0, float("nan"), -0.5,
                      float("-inf"), 1.25, -3.0, 0.75, -1e-3, 7.0, -0.9, 2.0])  # fmt: skip
POWERS = torch.tensor([-3, -1, -2, 5, 0, 7, 0, -4, 3, 9, -5, 2, 1, -1, 11, 0], dtype=torch.int32)


def _exact(x: torch.Tensor, n) -> torch.Tensor:
    return torch.pow(x.double(), n if isinstance(n, int) else n.double()).float()


@pytest.mark.parametrize("k", [2, 3, -2, -3, 0, 1, 5, 8, -7])
def test_fpowi_matches_torch_for_negative_bases(k):
    prog = tf.compile(PROGRAM.format(k=k))
    assert "_powf" not in prog.source  # never exp(n log x): NaN for a negative base
    c, v = run_on_device(prog, BASES, POWERS)
    torch.testing.assert_close(c, _exact(BASES, k), equal_nan=True, rtol=1e-6, atol=0)
    torch.testing.assert_close(v, _exact(BASES, POWERS), equal_nan=True, rtol=1e-6, atol=0)
    assert not torch.isnan(c[BASES.isfinite()]).any()


def test_the_reference_evaluator_agrees():
    module = parse_module(make_context(), PROGRAM.format(k=-3))
    c, v = evaluate(module, [BASES.numpy(), POWERS.numpy()])
    np.testing.assert_allclose(c, _exact(BASES, -3).numpy(), rtol=1e-6)
    np.testing.assert_allclose(v, _exact(BASES, POWERS).numpy(), rtol=1e-6)
