"""`cumsum` as a masked sum and `topk` as rounds of reductions
(`tilefuse/torch/decompose.py`): each decomposition against torch's own op (dtypes,
dims, promotion, ties, -inf and NaN), and through `tilefuse.torch.compile` against
eager."""

from __future__ import annotations

import pytest

pytest.importorskip("torch_mlir")

import torch
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import Fn, assert_matches, eager64
from tilefuse.torch.decompose import MAX_SCAN, MAX_TOPK, cumsum, index_copy, topk


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


def _topk_cases():
    g = torch.Generator().manual_seed(0)
    ties = torch.randint(0, 3, (4, 9), generator=g).float()
    special = torch.tensor([[1.0, float("nan"), -float("inf"), 2.0, float("nan"), -float("inf")],
                            [-float("inf")] * 6, [float("nan")] * 3 + [0.0] * 3])  # fmt: skip
    return {"randn": torch.randn(3, 5, 8, generator=g), "ties": ties, "special": special,
            "int": torch.randint(-4, 5, (5, 7), generator=g), "bf16": torch.randn(4, 9, generator=g).bfloat16()}


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("case", sorted(_topk_cases()))
def test_rounds_of_reductions_are_topk(case, largest):
    x = _topk_cases()[case]
    for dim in range(x.dim()):
        for k in (1, 2, x.size(dim)):
            want_v, want_i = torch.topk(x, k, dim, largest=largest)
            got_v, got_i = topk(x, k, dim, largest=largest)
            torch.testing.assert_close(got_v, want_v, rtol=0, atol=0, equal_nan=True)
            if case in ("randn", "bf16"):  # no ties: one answer
                assert torch.equal(got_i, want_i), (case, dim, k)
            # (among equal values torch's order is not promised: the indices hold the
            # values they say, each taken once)
            taken = torch.gather(x, dim, got_i)
            torch.testing.assert_close(taken, got_v, rtol=0, atol=0, equal_nan=True)
            assert all(len(set(r.tolist())) == k for r in got_i.movedim(dim, -1).reshape(-1, k))


def test_a_topk_past_the_bound_is_left_to_torch_mlir():
    assert topk(torch.ones(2, 40), MAX_TOPK + 1) is NotImplemented


def test_mixtral_router_compiles():
    gate = nn.Linear(64, 8, bias=False)

    def router(x):
        weights = torch.softmax(gate(x).float(), dim=-1)
        weights, selected = torch.topk(weights, 2, dim=-1)
        return weights / weights.sum(dim=-1, keepdim=True), selected

    model = Fn(router).to(DEVICE).eval()
    x = torch.randn(2, 8, 64, generator=torch.Generator().manual_seed(3)).to(DEVICE)
    compiled = tt.compile(model, x)
    with torch.no_grad():
        (w, s), (want_w, want_s) = compiled(x), model(x)
    assert torch.equal(s.cpu(), want_s.cpu())
    torch.testing.assert_close(w.cpu(), want_w.cpu(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("count", [1, 3])
def test_select_of_a_gather_is_index_copy(dim, count):
    g = torch.Generator().manual_seed(count)
    x = torch.randn(4, 5, 6, generator=g)
    n = x.size(dim)
    index = torch.randperm(n, generator=g)[:count]
    shape = list(x.shape)
    shape[dim] = count
    source = torch.randn(*shape, generator=g)
    assert torch.equal(index_copy(x, dim, index, source), x.index_copy(dim, index, source))


def test_static_kv_cache_write_compiles():
    model = Fn(lambda cache, k, pos: cache.index_copy(2, pos, k) * 2).to(DEVICE).eval()
    g = torch.Generator().manual_seed(0)
    cache, k = torch.randn(2, 4, 24, 16, generator=g), torch.randn(2, 4, 1, 16, generator=g)
    inputs = (cache.to(DEVICE), k.to(DEVICE), torch.tensor([13]).to(DEVICE))
    compiled = tt.compile(model, *inputs)
    assert len(compiled.kernels) == 2  # which source entry each position takes; the write
    with torch.no_grad():
        assert torch.equal(compiled(*inputs).cpu(), model(*inputs).cpu())
        moved = (inputs[0], inputs[1], torch.tensor([0]).to(DEVICE))
        assert torch.equal(compiled(*moved).cpu(), model(*moved).cpu())
