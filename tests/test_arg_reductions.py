"""A max/min with the first position it is reached at (`ir/structured.py`'s
`ArgReduction`: torch-mlir's `max(dim)`, `argmax`, `argmin`): the kernels
against the IR's sequential meaning, written out here as a loop, against the
reference evaluator, and against torch where torch and the IR agree (no NaN).

Ties are put across tile and chunk boundaries (a 4 KB budget loops the 3000-wide
rows in 512-wide chunks, the last one partial), NaNs before and after the
extremum. The IR's position is that of the extremum before the first NaN (its
comparison is false once the running value is NaN); torch's is the NaN's own.
"""

import math

import numpy as np
import pytest
import torch

from tests.device import on_device
from tilefuse.frontend.program import load_program
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime.compiled import compile

ARG = """
func.func @f(%x: tensor<{rows}x{n}x{t}>) -> (tensor<{rows}x{t}>, tensor<{rows}xi64>) {{
  %init = arith.constant {init} : {t}
  %zero = arith.constant {start} : i64
  %e = tensor.empty() : tensor<{rows}x{t}>
  %v0 = linalg.fill ins(%init : {t}) outs(%e : tensor<{rows}x{t}>) -> tensor<{rows}x{t}>
  %ei = tensor.empty() : tensor<{rows}xi64>
  %i0 = linalg.fill ins(%zero : i64) outs(%ei : tensor<{rows}xi64>) -> tensor<{rows}xi64>
  %r:2 = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                                          affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}}
      ins(%x : tensor<{rows}x{n}x{t}>) outs(%v0, %i0 : tensor<{rows}x{t}>, tensor<{rows}xi64>) {{
  ^bb0(%in: {t}, %acc: {t}, %acc_i: i64):
    %j = linalg.index 1 : index
    %p = arith.index_cast %j : index to i64
    %v = arith.{comb} %in, %acc : {t}
    %c = {cmp} : {t}
    %i = arith.select %c, %p, %acc_i : i64
    linalg.yield %v, %i : {t}, i64
  }} -> (tensor<{rows}x{t}>, tensor<{rows}xi64>)
  func.return %r#0, %r#1 : tensor<{rows}x{t}>, tensor<{rows}xi64>
}}
"""

FLOAT = {
    "max": dict(comb="maximumf", cmp="arith.cmpf ogt, %in, %acc", init="0xFF800000"),
    "min": dict(comb="minimumf", cmp="arith.cmpf olt, %in, %acc", init="0x7F800000"),
    # the comparison mirrored: acc < x is x > acc
    "max_mirrored": dict(comb="maximumf", cmp="arith.cmpf olt, %acc, %in", init="0xFF800000"),
}
BUDGETS = [0, 4096]


def sequential(x: np.ndarray, is_max: bool, init: float, start: int):
    """The IR's loop, element by element."""
    values, positions = [], []
    for row in x:
        v, i = init, start
        for j, e in enumerate(row.tolist()):
            better = e > v if is_max else e < v  # false on NaN, as cmpf ogt/olt
            i = j if better else i
            v = math.nan if math.isnan(e) or math.isnan(v) else (max(e, v) if is_max else min(e, v))
        values.append(v)
        positions.append(i)
    return np.array(values, x.dtype), np.array(positions, np.int64)


def rows_with_ties_and_nans(n: int, rows: int = 9) -> np.ndarray:
    """Small integers (many ties), the row's extremum placed again across tile
    and chunk boundaries; NaNs at the start, before and after the extremum."""
    gen = np.random.default_rng(n)
    x = gen.integers(-3, 4, (9, n)).astype(np.float32)
    ties = [(5, n - 1), (n // 2 - 1, n // 2), (511 % (n - 2), 512 % (n - 2)), (0, n - 1)]
    for r, (a, b) in enumerate(ties):
        x[r, [a, b]] = 7.0  # row r's maximum, twice
        x[r, [a + 1, b - 1]] = -7.0  # and its minimum
    x[4, 3] = np.nan  # before the extremum
    x[5, 600 % n] = np.nan  # after one
    x[5, :2] = 9.0
    x[6, 0] = np.nan  # first
    x[7, :] = -np.inf  # never past the init
    x[8, :] = np.nan
    return x[:rows]


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("n", [19, 3000])
@pytest.mark.parametrize("kind", sorted(FLOAT))
def test_float_position_is_the_ir_sequential_one(kind, n, budget):
    spec = FLOAT[kind]
    text = ARG.format(rows=9, n=n, t="f32", start=0, **spec)
    x = rows_with_ties_and_nans(n)
    values, positions = compile(text, smem_budget=budget)(on_device(x))
    init = -math.inf if "max" in kind else math.inf
    want_v, want_i = sequential(x, "max" in kind, init, 0)
    np.testing.assert_array_equal(values.cpu().numpy(), want_v)
    np.testing.assert_array_equal(positions.cpu().numpy(), want_i)
    ref_v, ref_i = evaluate(load_program(text), [x])
    np.testing.assert_array_equal(ref_v, want_v)
    np.testing.assert_array_equal(ref_i, want_i)


@pytest.mark.parametrize("budget", BUDGETS)
def test_the_position_starts_from_the_accumulators(budget):
    """An init of 3.0 at position 42: elements up to 3.0 never move it (a row
    entirely below keeps 42), and a NaN init keeps it whatever follows."""
    text = ARG.format(rows=3, n=3000, t="f32", start=42, comb="maximumf",
                      cmp="arith.cmpf ogt, %in, %acc", init="3.0")  # fmt: skip
    x = rows_with_ties_and_nans(3000, rows=3)
    x[1] = np.minimum(x[1], 3.0)
    values, positions = compile(text, smem_budget=budget)(on_device(x))
    want_v, want_i = sequential(x, True, 3.0, 42)
    assert want_i[1] == 42
    np.testing.assert_array_equal(values.cpu().numpy(), want_v)
    np.testing.assert_array_equal(positions.cpu().numpy(), want_i)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("kind", ["max", "min"])
def test_without_nan_it_is_torch(kind, budget):
    """torch-mlir's `x.max(dim)` / `x.argmin(dim)`: torch's values and first
    positions on ties."""
    text = ARG.format(rows=9, n=3000, t="f32", start=0, **FLOAT[kind])
    x = np.nan_to_num(rows_with_ties_and_nans(3000), nan=1.0, neginf=-3.0)
    values, positions = compile(text, smem_budget=budget)(on_device(x))
    t = torch.from_numpy(x)
    want = t.max(dim=1) if kind == "max" else t.min(dim=1)
    assert torch.equal(values.cpu(), want.values)
    assert torch.equal(positions.cpu(), want.indices)
    assert torch.equal(positions.cpu(), t.argmax(1) if kind == "max" else t.argmin(1))


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("kind", ["max", "min"])
def test_integer_position(kind, budget):
    """`maxsi` + `cmpi sgt` (torch-mlir's `max(dim)` of an integer tensor), at
    the type's extremes (a zero padding would win)."""
    comb, pred = ("maxsi", "sgt") if kind == "max" else ("minsi", "slt")
    init = -(2**31) if kind == "max" else 2**31 - 1
    text = ARG.format(rows=4, n=3000, t="i32", start=0, comb=comb, init=init,
                      cmp=f"arith.cmpi {pred}, %in, %acc")  # fmt: skip
    gen = np.random.default_rng(1)
    x = gen.integers(-5, 5, (4, 3000)).astype(np.int32)
    x[0] = -(2**31)  # all the init: position 0
    x[1] = np.where(x[1] > 0, -x[1], x[1]) - 100  # all below zero
    x[1, [700, 2999]] = -1
    x[2, [0, 1500]] = 2**31 - 1
    values, positions = compile(text, smem_budget=budget)(on_device(x))
    t = torch.from_numpy(x)
    want = t.max(dim=1) if kind == "max" else t.min(dim=1)
    assert torch.equal(values.cpu(), want.values)
    assert torch.equal(positions.cpu(), want.indices)
