"""
`narrow-variance` end to end: the statistics torch-mlir widens to f64 (`var`, `std`,
`var_mean`, LayerNorm, GroupNorm) run in f32 in the emitted kernels and match eager
within f32 rounding, including data whose mean is far from 0 (where a one-pass
variance would lose its digits); a genuinely f64 computation stays f64. Runs the
emitted kernels (interpreter on CPU).
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

import tilefuse.torch as tt
from tests.eager import Fn

pytestmark = pytest.mark.filterwarnings("ignore")


def _arithmetic_f64(source: str) -> bool:
    """Does a kernel compute in f64 (beyond rounding an f64 constant to f32)?"""
    lines = [ln for ln in source.splitlines() if "tl.float64" in ln]
    return any(".to(tl.float32)" not in ln or "tl.full((), " not in ln for ln in lines)


torch.manual_seed(0)
NARROWED = {
    "var": (Fn(lambda x: x.var(dim=-1)), lambda: torch.randn(6, 48) + 1000.0, 1),
    "var_biased_keepdim": (Fn(lambda x: x.var(dim=-1, unbiased=False, keepdim=True)),
                           lambda: torch.randn(6, 48) * 0.01, 1),
    "std": (Fn(lambda x: x.std(dim=-1)), lambda: torch.randn(6, 48) * 3, 1),
    "var_mean": (Fn(lambda x: torch.var_mean(x, dim=1)), lambda: torch.randn(6, 48) - 20, 1),
    "var_all": (Fn(lambda x: x.var()), lambda: torch.randn(6, 48), 1),
    "layer_norm": (nn.LayerNorm(48), lambda: torch.randn(6, 48) * 3 + 5, 1),
    "layer_norm_bf16": (nn.LayerNorm(48).bfloat16(), lambda: torch.randn(6, 48).bfloat16(), 1),
    "group_norm": (nn.GroupNorm(2, 4), lambda: torch.randn(2, 4, 3, 5), 3),
    # the mean read back through reshapes by unit dims ([8] -> [1, 8, 1, 1] -> [1, 8])
    "instance_norm": (nn.InstanceNorm2d(4, affine=True), lambda: torch.randn(2, 4, 3, 5) + 3, 3),
    "std_mean": (Fn(lambda x: torch.std_mean(x, dim=-1)), lambda: torch.randn(6, 48), 1),
    "var_two_dims": (Fn(lambda x: x.var(dim=(1, 2), correction=2)), lambda: torch.randn(4, 6, 8), 1),
    "layer_norm_two_dims": (nn.LayerNorm((8, 16)), lambda: torch.randn(3, 8, 16), 1),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(NARROWED))
def test_variance_in_f32(name: str) -> None:
    module, make, kernels = NARROWED[name]
    x = make()
    compiled = tt.compile(module, x)
    assert len(compiled.kernels) == kernels
    assert not _arithmetic_f64(compiled.source), compiled.source
    outs, refs = compiled(x), module(x)
    outs = outs if isinstance(outs, tuple) else (outs,)
    refs = refs if isinstance(refs, tuple) else (refs,)
    with torch.no_grad():
        exact = copy.deepcopy(module).double()(x.double())
    exact = exact if isinstance(exact, tuple) else (exact,)
    for out, ref, best in zip(outs, refs, exact, strict=True):
        if out.dtype == torch.bfloat16:  # a bf16 ulp at most, as often as eager's rounding differs
            torch.testing.assert_close(out, ref)
            assert (out != ref).float().mean() < 0.01
        else:  # within a few f32 ulps of the exact statistic, as eager is
            torch.testing.assert_close(out.double(), best.double(), rtol=4e-6, atol=1e-6)


def test_f64_sum_stays_f64() -> None:
    """A sum of signed values in f64 is not a variance: the f32 sum could cancel."""
    x = torch.tensor([[1e8, 1.0, -1e8, 1.0] * 4])
    fn = Fn(lambda x: x.double().sum(-1).float())
    compiled = tt.compile(fn, x)
    assert "tl.float64" in compiled.source
    assert compiled(x).item() == 8.0  # in f32 the 1s are lost next to 1e8


def test_layer_norm_one_mean() -> None:
    """torch-mlir's LayerNorm subtracts an f32 mean and computes the variance from an
    f64 one: narrowed, they are one sum; with the squared deviations and the
    deviations (the corrected two-pass form) three reductions a row, all f32."""
    x = torch.randn(4, 64)
    compiled = tt.compile(nn.LayerNorm(64), x)
    assert compiled.source.count("tl.sum(") == 3
    assert not _arithmetic_f64(compiled.source)



def test_variance_over_a_dynamic_dim() -> None:
    """A variance over a dynamic dim stays f64 (the corrected form needs the count of
    summed values, known only at run time); over static rows of a dynamic batch it is
    narrowed. Both right at every size."""
    for dim, narrowed in ((1, False), (0, True)):
        x = torch.randn(40, 40, 32) + 3
        torch._dynamo.mark_dynamic(x, dim, min=2, max=512)
        fn = Fn(lambda x: x.var(dim=1))
        compiled = tt.compile(fn, x)
        assert _arithmetic_f64(compiled.source) != narrowed
        for t in (2, 17, 129):
            y = torch.randn(*((t, 40, 32) if dim == 0 else (40, t, 32))) + 3
            torch.testing.assert_close(compiled(y).double(), y.double().var(dim=1), rtol=4e-6, atol=1e-6)
