"""fold-softmax-scale through the emitted kernels: SDPA's attention (the torch
front-end, bf16) gets exp2 of one multiply-subtract and the max of the unscaled
scores, and computes what torch computes in f64; where the fold could overflow
(a scale with `c log2 e >= 1`) or the payload is 16-bit, the kernel keeps `exp`."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import rel_error

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


@pytest.mark.parametrize(("causal", "h", "hkv", "t", "d"), [
    (False, 4, 4, 80, 32),   # partial key tiles: the edge mask stays on the unscaled scores
    (True, 4, 4, 96, 32),    # SDPA's causal select of -inf between the scale and the max
    (False, 4, 2, 160, 64),  # GQA
    (True, 2, 1, 130, 16),
])  # fmt: skip
def test_sdpa_folds_the_scale_and_matches_torch(causal, h, hkv, t, d):
    model = SDPA(causal)
    q, k, v = _inputs(h, hkv, t, d)
    compiled = tt.compile(model, q, k, v)
    kernel = _attention_kernel(compiled.source)
    assert "tl.exp2(" in kernel
    # The scores are scaled once, by c log2 e, in the exponent (1 / sqrt(d) * log2 e).
    k_const = (d**-0.5) * 1.4426950408889634
    assert any(abs(float(x) - k_const) < 1e-6 for x in re.findall(r"\* ([0-9.]+)\)", kernel))
    assert rel_error(compiled(q, k, v), _reference(model, q, k, v)) <= BF16_TOL


def test_a_scale_whose_fold_could_overflow_keeps_exp():
    """`c log2 e >= 1` (scale 1): `s c log2 e` could overflow where `s c` does not."""
    model = SDPA(False, scale=1.0)
    q, k, v = _inputs(2, 2, 64, 16)
    compiled = tt.compile(model, q, k, v)
    kernel = _attention_kernel(compiled.source)
    assert "tl.exp2(" not in kernel and "tl.exp(" in kernel
    assert rel_error(compiled(q, k, v), _reference(model, q, k, v)) <= BF16_TOL


def test_nan_in_a_query_row_stays_nan():
    """A NaN score makes its row NaN with or without the fold (the max of the
    unscaled scores propagates it as the max of the scaled ones did)."""
    model = SDPA(True)
    q, k, v = _inputs(2, 2, 64, 16)
    q = q.clone()
    q[0, 1, 5, 3] = float("nan")
    compiled = tt.compile(model, q, k, v)
    out, ref = compiled(q, k, v).cpu().double(), _reference(model, q, k, v)
    assert torch.equal(out.isnan(), ref.isnan())
    assert out.isnan().any()
    keep = ~ref.isnan()
    assert (out[keep] - ref[keep]).abs().max() <= BF16_TOL * ref[keep].abs().max()
