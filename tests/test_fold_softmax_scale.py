"""fold-softmax-scale is not in the default pipeline: its `exp2(s k - m log2 e)` is off
by an ulp of `s k` where `exp(s c - m)` is exactly 1 at the row's max, which is an
error of 1e-5 at scaled scores of ~30 and NaN rows past ~1e9 (an adversarial run found
both, docs/ARCHITECTURE.md). These are those programs through the default pipeline:
the kernels keep `exp` and compute what torch computes in f64. The pass itself has its
golden test (tests/filecheck/passes/fold_softmax_scale.mlir)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import rel_error
from tilefuse.pipeline import STAGE_NAMES

BF16_TOL = 2e-2


class SDPA(nn.Module):
    def __init__(self, causal: bool, scale: float | None = None):
        super().__init__()
        self.causal, self.scale = causal, scale

    def forward(self, q, k, v):
        gqa = q.shape[1] != k.shape[1]
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, scale=self.scale,
                                              enable_gqa=gqa)  # fmt: skip


def _inputs(h: int, hkv: int, t: int, d: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(2, n, t, d, generator=g).to(torch.bfloat16).to(DEVICE) for n in (h, hkv, hkv))


def _reference(model: nn.Module, q, k, v) -> torch.Tensor:
    return model(*(x.cpu().double() for x in (q, k, v)))


def _attention_kernel(source: str) -> str:
    """The flash-attention kernel's text."""
    start = source.index("flash-attention")
    return source[start : source.index("\n\n\n", start)] if "\n\n\n" in source[start:] else source[start:]


def test_the_fold_is_not_a_default_stage():
    assert "fold-softmax-scale" not in STAGE_NAMES


@pytest.mark.xfail(DEVICE == "cuda", strict=False, reason=(
    "on the H200 the unfolded kernel's outlier row is NaN too (scores ~5e29; the "
    "interpreter's is finite): found 2026-12-02, not investigated"))  # fmt: skip
def test_an_outlier_score_keeps_its_row_finite():
    """One huge query element: the row's scores reach ~1e30; exp(s c - m) is 1 at the
    max and the row is finite (the fold made it NaN)."""
    model = SDPA(False)
    q, k, v = _inputs(2, 2, 130, 32)
    q = q.clone()
    q[0, 1, 90, 3] = 1e30
    compiled = tt.compile(model, q, k, v)
    kernel = _attention_kernel(compiled.source)  # (the fold's exp2 reads the scale; the
    # online loop's own exponentials are exp2 of a difference times log2 e)
    assert kernel.count("tl.exp2(") == kernel.count(") * 1.4426950408889634)") > 0
    out, ref = compiled(q, k, v).cpu().double(), _reference(model, q, k, v)
    assert not ref.isnan().any() and not out.isnan().any()
    assert rel_error(out, ref) <= BF16_TOL


def test_large_scores_in_f32_stay_accurate():
    """Scores of ~3e4 in f32 (scaled): each probability to f32 accuracy."""
    model = SDPA(True)
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(1, 2, 130, 16, generator=g).to(DEVICE) for _ in range(3))
    q = q * 3e2
    k = k * 3e2
    compiled = tt.compile(model, q, k, v)
    assert rel_error(compiled(q, k, v), _reference(model, q, k, v)) <= 1e-5


def test_a_long_scaled_softmax_row_sums_to_one():
    """A two-pass online softmax (max and sum in one loop, the numerator in another)
    of scaled values of ~1e3: rows sum to 1 (the fold rewrote only the first loop)."""

    class Scaled(nn.Module):
        def forward(self, x):
            return torch.softmax(x * 0.3, dim=-1)

    x = torch.randn(4, 40000, generator=torch.Generator().manual_seed(2)).to(DEVICE) * 1e3
    compiled = tt.compile(Scaled(), x)
    out = compiled(x).cpu().double()
    ref = torch.softmax(x.cpu().double() * 0.3, dim=-1)
    assert (out.sum(-1) - 1).abs().max() <= 1e-5
    assert rel_error(out, ref) <= 1e-5
