"""Runtime checks (`cf.assert`): kept where the program does not prove them, run by
the kernels, failing with `RuntimeCheckError` (the check's message and location)
from the compiled program and from the reference evaluator alike."""

import numpy as np
import pytest
import torch

import tilefuse.runtime as tf
from tests.device import run_on_device
from tilefuse.frontend.parse import parse_module
from tilefuse.ir.context import make_context
from tilefuse.ir.diagnostics import RuntimeCheckError
from tilefuse.oracle.reference import evaluate

ID = "affine_map<(d0, d1) -> (d0, d1)>"
ROW = "affine_map<(d0, d1) -> (d0)>"

# An index read from an argument guards arithmetic (torch-mlir's gather checks),
# fused with its consumer; then a row sum whose payload checks `x != 0`.
PROGRAM = f"""
func.func @checked(%ids: tensor<5x40xi64>, %x: tensor<5x40xf32>) -> (tensor<5x40xf32>, tensor<5xf32>) {{
  %c10 = arith.constant 10 : index
  %c0 = arith.constant 0 : i64
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x40xf32>
  %g = linalg.generic {{indexing_maps = [{ID}, {ID}], iterator_types = ["parallel", "parallel"]}}
      ins(%ids : tensor<5x40xi64>) outs(%e : tensor<5x40xf32>) {{
  ^bb0(%i: i64, %o: f32):
    %idx = arith.index_cast %i : i64 to index
    %lt = arith.cmpi slt, %idx, %c10 : index
    cf.assert %lt, "index must be smaller than dim size"
    %ge = arith.cmpi sge, %i, %c0 : i64
    cf.assert %ge, "index must be larger or equal to 0"
    %f = arith.sitofp %i : i64 to f32
    linalg.yield %f : f32
  }} -> tensor<5x40xf32>
  %y = linalg.generic {{indexing_maps = [{ID}, {ID}, {ID}], iterator_types = ["parallel", "parallel"]}}
      ins(%g, %x : tensor<5x40xf32>, tensor<5x40xf32>) outs(%e : tensor<5x40xf32>) {{
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }} -> tensor<5x40xf32>
  %er = tensor.empty() : tensor<5xf32>
  %init = linalg.fill ins(%zero : f32) outs(%er : tensor<5xf32>) -> tensor<5xf32>
  %sum = linalg.generic {{indexing_maps = [{ID}, {ROW}], iterator_types = ["parallel", "reduction"]}}
      ins(%x : tensor<5x40xf32>) outs(%init : tensor<5xf32>) {{
  ^bb0(%v: f32, %acc: f32):
    %nz = arith.cmpf one, %v, %zero : f32
    cf.assert %nz, "unimplemented: tensor with zero element"
    %r = arith.addf %v, %acc : f32
    linalg.yield %r : f32
  }} -> tensor<5xf32>
  func.return %y, %sum : tensor<5x40xf32>, tensor<5xf32>
}}
"""


@pytest.fixture(scope="module")
def prog():
    return tf.compile(PROGRAM)


def _inputs():
    ids = torch.arange(200, dtype=torch.int64).reshape(5, 40) % 10
    x = torch.rand(5, 40) + 0.5  # never zero
    return ids, x


def test_checks_that_hold_cost_one_flag_and_compute_the_result(prog):
    assert "_check(checks_ptr" in prog.source and "CHECKS = {" in prog.source
    ids, x = _inputs()
    y, total = run_on_device(prog, ids, x)
    torch.testing.assert_close(y, ids.float() + x)
    torch.testing.assert_close(total, x.sum(1))


@pytest.mark.parametrize(("where", "value", "message"), [
    ((3, 17), 10, "index must be smaller than dim size"),
    ((4, 39), -1, "index must be larger or equal to 0"),
])  # fmt: skip
def test_an_index_out_of_range_raises_with_the_message(prog, where, value, message):
    ids, x = _inputs()
    ids[where] = value
    with pytest.raises(RuntimeCheckError, match=message) as kernels:
        run_on_device(prog, ids, x)
    assert kernels.value.location is not None and kernels.value.location.startswith("<input>:")
    assert isinstance(kernels.value, RuntimeError)
    module = parse_module(make_context(), PROGRAM)
    with pytest.raises(RuntimeCheckError, match=message) as oracle:
        evaluate(module, [ids.numpy(), x.numpy()])
    assert oracle.value.location == kernels.value.location


def test_a_check_in_a_reduction_is_run(prog):
    ids, x = _inputs()
    x[2, 5] = 0.0
    with pytest.raises(RuntimeCheckError, match="tensor with zero element"):
        run_on_device(prog, ids, x)


def test_edge_tiles_do_not_check_their_padding(prog):
    """5 x 40 leaves lanes past the end of every tile; they read zeros, which
    would fail `x != 0`."""
    ids, x = _inputs()
    run_on_device(prog, ids, x)  # no error
    assert "tl.where(" in prog.source


def test_a_program_without_checks_reads_no_flag():
    text = PROGRAM.replace('cf.assert %nz, "unimplemented: tensor with zero element"\n', "")
    text = text.replace('cf.assert %lt, "index must be smaller than dim size"\n', "")
    text = text.replace('cf.assert %ge, "index must be larger or equal to 0"\n', "")
    p = tf.compile(text)
    assert "checks" not in p.source and "CHECKS" not in p.source


def test_the_flag_is_zeroed_every_call(prog):
    ids, x = _inputs()
    bad = ids.clone()
    bad[0, 0] = 99
    with pytest.raises(RuntimeCheckError):
        run_on_device(prog, bad, x)
    y, _ = run_on_device(prog, ids, x)  # a later good call passes
    assert np.isfinite(y.numpy()).all()
