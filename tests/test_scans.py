"""`cumsum` as a masked sum (`tilefuse/torch/scans.py`): the decomposition against
`torch.cumsum` (dtypes, dims, promotion), and through `tilefuse.torch.compile` as one
reduction kernel against float64 eager."""

from __future__ import annotations

import pytest

pytest.importorskip("torch_mlir")

import torch
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import assert_matches, eager64
from tilefuse.torch.scans import MAX_SCAN, cumsum


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _ints(*shape: int) -> torch.Tensor:
    return torch.randint(-5, 6, shape, generator=torch.Generator().manual_seed(len(shape)))


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("kind", ["int32", "bool", "int64", "float32", "bfloat16"])
def test_masked_sum_is_cumsum(kind, dim):
    x = _ints(3, 7, 5)
    x = x > 0 if kind == "bool" else x.to(getattr(torch, kind))
    want = torch.cumsum(x, dim)
    got = cumsum(x, dim)
    assert got.dtype == want.dtype
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_dtype_argument_and_a_scalar():
    x = _ints(4, 6)
    torch.testing.assert_close(cumsum(x, 1, dtype=torch.float64), torch.cumsum(x, 1, dtype=torch.float64))
    s = torch.tensor(3)
    assert torch.equal(cumsum(s, 0), torch.cumsum(s, 0))


def test_a_scan_past_the_bound_is_left_to_torch_mlir():
    assert cumsum(torch.ones(2, MAX_SCAN + 1), 1) is NotImplemented


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_cumsum_compiles_to_one_kernel(dtype):
    x = _ints(4, 33).to(dtype).to(DEVICE)
    model = Fn(lambda x: torch.cumsum(x, 1) * 2)
    compiled = tt.compile(model, x)
    assert len(compiled.kernels) == 1
    with torch.no_grad():
        out = compiled(x)
    if dtype == torch.int64:
        assert torch.equal(out.cpu(), model(x).cpu())
    else:
        assert_matches("cumsum", out, eager64(model, (x,)), 1e-6)
