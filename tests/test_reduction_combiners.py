"""Reductions by product (`arith.mulf`) and signed integer max/min (`maxsi`,
`minsi`): whole rows and rows looped in chunks whose last one is partial (the
padding must be the combiner's identity: 1, the type's smallest or largest
value), against torch."""

import pytest
import torch

from tests.device import on_device
from tilefuse.program import load_program
from tilefuse.reference import evaluate
from tilefuse.runtime import compile

REDUCE = """
func.func @f(%x: tensor<5x{n}x{t}>) -> tensor<5x{t}> {{
  %init = arith.constant {init} : {t}
  %e = tensor.empty() : tensor<5x{t}>
  %o = linalg.fill ins(%init : {t}) outs(%e : tensor<5x{t}>) -> tensor<5x{t}>
  %r = linalg.reduce ins(%x : tensor<5x{n}x{t}>) outs(%o : tensor<5x{t}>) dimensions = [1]
    (%in: {t}, %acc: {t}) {{
      %p = arith.{op} %in, %acc : {t}
      linalg.yield %p : {t}
    }}
  func.return %r : tensor<5x{t}>
}}
"""

# 3000 columns: one 4096-wide tile at the default budget; 512-wide chunks, the
# last one 440 wide, at a 4 KB budget.
BUDGETS = [0, 4096]


@pytest.mark.parametrize("budget", BUDGETS)
def test_product_of_a_row(budget):
    text = REDUCE.format(n=3000, t="f32", init="1.0", op="mulf")
    x = torch.rand(5, 3000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x = (x * 0.02 + 0.99).float()  # products stay near 1
    (got,) = compile(text, smem_budget=budget)(on_device(x))
    want = torch.prod(x.double(), dim=1)
    assert torch.allclose(got.cpu().double(), want, rtol=2e-5, atol=0)
    (ref,) = evaluate(load_program(text), [x.numpy()])
    assert torch.allclose(torch.from_numpy(ref).double(), want, rtol=2e-5, atol=0)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("width", [8, 32, 64])
@pytest.mark.parametrize("op", ["maxsi", "minsi"])
def test_signed_integer_max_and_min_of_rows(op, width, budget):
    """Rows all below zero for max, all above for min: a zero (or any other
    non-identity) padding would win."""
    t = f"i{width}"
    lo, hi = -(2 ** (width - 1)), 2 ** (width - 1) - 1
    init = lo if op == "maxsi" else hi
    text = REDUCE.format(n=3000, t=t, init=init, op=op)
    dtype = {8: torch.int8, 32: torch.int32, 64: torch.int64}[width]
    gen = torch.Generator().manual_seed(width)
    x = torch.randint(lo + 1, 0, (5, 3000), generator=gen, dtype=torch.int64)
    if op == "minsi":
        x = -x
    x = x.to(dtype)
    (got,) = compile(text, smem_budget=budget)(on_device(x))
    want = x.max(dim=1).values if op == "maxsi" else x.min(dim=1).values
    assert torch.equal(got.cpu(), want)
    (ref,) = evaluate(load_program(text), [x.numpy()])
    assert torch.equal(torch.from_numpy(ref), want)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("width", [32, 64])
def test_integer_sum_of_large_values_is_exact(width, budget):
    """Sums past 2**24: the accumulator's fill was an f32 block, which rounded
    them (a miscompile of `addi` reductions before this test)."""
    t = f"i{width}"
    text = REDUCE.format(n=3000, t=t, init=0, op="addi")
    big = 2**20 if width == 32 else 2**40  # sums of about 2**25 and 2**45
    gen = torch.Generator().manual_seed(width)
    x = torch.randint(-big, big, (5, 3000), generator=gen, dtype=torch.int64)
    x = x.to(torch.int32 if width == 32 else torch.int64)
    (got,) = compile(text, smem_budget=budget)(on_device(x))
    assert torch.equal(got.cpu(), x.sum(dim=1, dtype=x.dtype))
