"""`tilefuse-run --check`: one wrong element among many is a mismatch even when
the tensor's relative error is within tolerance."""

import argparse

import numpy as np
import torch

from tilefuse.frontend.program import load_program
from tilefuse.oracle.compare import (
    ELEMENT_FACTOR,
    relative_error,
    tolerance,
    worst_element,
)
from tilefuse.oracle.reference import evaluate
from tilefuse.tools.run import check_outputs

COPY = """
func.func @f(%x: tensor<1000x1000xf32>) -> tensor<1000x1000xf32> {
  %e = tensor.empty() : tensor<1000x1000xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<1000x1000xf32>) outs(%e : tensor<1000x1000xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<1000x1000xf32>
  func.return %r : tensor<1000x1000xf32>
}
"""


def test_worst_element_scales_each_error_by_its_size_and_the_rms():
    ref = np.array([[1.0, -2.0], [0.0, 4.0]])
    out = ref.copy()
    out[1, 0] = 0.05  # near zero: judged against the rms (2.29)
    worst, at = worst_element(out, ref)
    assert at == (1, 0) and abs(worst - 0.05 / np.sqrt(21 / 4)) < 1e-12
    assert worst_element(ref, ref) == (0.0, (0, 0))
    assert worst_element(np.array([np.nan]), np.array([np.nan])) == (0.0, ())


def test_one_wrong_element_in_a_million_is_a_mismatch(capsys):
    module = load_program(COPY)
    x = np.random.default_rng(0).standard_normal((1000, 1000)).astype(np.float32)
    (ref,) = evaluate(module, [x])
    out = torch.from_numpy(ref.astype(np.float32).copy())
    out[123, 456] += 0.005  # 5e-6 of the whole: the relative error alone passes
    assert relative_error(out.double().numpy(), ref) < tolerance("f32")
    args = argparse.Namespace(file="<input>", dims=None, dtype=None)
    assert check_outputs(args, {}, module, [x], [out]) == 1
    text = capsys.readouterr().out
    assert "element [123, 456] off by" in text and "MISMATCH" in text
    assert f"bound {ELEMENT_FACTOR * tolerance('f32'):.0e}" in text
    out[123, 456] -= 0.005
    assert check_outputs(args, {}, module, [x], [out]) == 0
