"""bf16/f16 `F.scaled_dot_product_attention` in the precision of torch's fused GPU
kernels (`tilefuse.torch.attention`): P rounded to the input dtype before P V, both
products of the inputs' exact values, so both dots run on bf16 tensor cores; f32
attention and dropout keep ATen's own SDPA."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch_mlir")

import torch
import torch.nn.functional as F
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import Fn, rel_error
from tilefuse.frontend.program import load_program
from tilefuse.report import analyze_program, format_report
from tilefuse.torch import attention, backend

BF16_STEP = 2.0**-8
"""One rounding of bf16 (8 significant bits) relative to the value."""


def inputs(b=2, h=4, hk=4, lq=24, lk=24, d=16, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, lq, d, generator=g).to(dtype)
    k = torch.randn(b, hk, lk, d, generator=g).to(dtype)
    v = torch.randn(b, hk, lk, d, generator=g).to(dtype)
    return q, k, v


def rounded_p_reference(q, k, v, mask=None, causal=False, scale=None):
    """Attention in f64 with P rounded to the inputs' dtype: the fused kernels' math."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    if k.size(-3) != q.size(-3):
        k64 = k64.repeat_interleave(q.size(-3) // k.size(-3), -3)
        v64 = v64.repeat_interleave(q.size(-3) // k.size(-3), -3)
    s = q64 @ k64.transpose(-2, -1) * (1 / math.sqrt(q.size(-1)) if scale is None else scale)
    if causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -math.inf)
    if mask is not None and mask.dtype == torch.bool:
        s = s.masked_fill(~mask, -math.inf)
    elif mask is not None:
        s = s + mask.double()
    p = torch.softmax(s, -1).nan_to_num(0.0)  # rows with no key left: zeros, as ATen's
    return p.to(q.dtype).double() @ v64


CASES = {
    "plain": {},
    "causal": {"causal": True},
    "causal_longer_keys": {"causal": True, "lk": 40},
    "scale": {"scale": 0.3},
    "bool_mask": {"mask": "bool"},
    "float_mask": {"mask": "float"},
    "gqa": {"hk": 2, "causal": True},
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("case", sorted(CASES))
def test_flash_precision_sdpa_rounds_p_and_nothing_else(case, dtype):
    spec = dict(CASES[case])
    q, k, v = inputs(hk=spec.pop("hk", 4), lk=spec.pop("lk", 24), dtype=dtype)
    mask = spec.pop("mask", None)
    if mask == "bool":
        mask = torch.rand(q.size(-2), k.size(-2), generator=torch.Generator().manual_seed(1)) > 0.5
        mask[3] = False  # a row with no key: zeros, as ATen's safe softmax gives
    elif mask == "float":
        mask = torch.randn(q.size(-2), k.size(-2)).to(dtype)
    causal, scale = spec.pop("causal", False), spec.pop("scale", None)
    got = attention.flash_precision_sdpa(q, k, v, mask, causal, scale,
                                         enable_gqa=k.size(-3) != q.size(-3))  # fmt: skip
    assert got.dtype == dtype
    want = rounded_p_reference(q, k, v, mask, causal, scale)
    # what is left: f32 sums (not f64) and the one rounding of O to the dtype
    assert rel_error(got.double(), want) <= 2 * BF16_STEP
    mask64 = mask.double() if mask is not None and mask.is_floating_point() else mask
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), mask64, 0.0, causal,
                                           scale=scale, enable_gqa=k.size(-3) != q.size(-3))  # fmt: skip
    exact = exact.nan_to_num(0.0)
    assert rel_error(got.double(), exact) <= 4 * BF16_STEP
    if mask is not None and mask.dtype == torch.bool:
        assert torch.all(got[..., 3, :] == 0)


def test_f32_attention_and_dropout_keep_atens_sdpa():
    q, k, v = inputs(dtype=torch.float32)
    assert not attention.rewrites(q, 0.0)
    assert not attention.rewrites(q.bfloat16(), 0.1)
    assert attention.rewrites(q.bfloat16(), 0.0) and attention.rewrites(q.half(), 0.0)
    torch.testing.assert_close(attention.reduced_precision_sdpa(q, k, v, is_causal=True),
                               F.scaled_dot_product_attention(q, k, v, is_causal=True))  # fmt: skip


class Causal(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def test_bf16_sdpa_compiles_to_one_flash_kernel_of_bf16_dots():
    q, k, v = inputs(lq=64, lk=64, d=32)
    compiled = tt.compile(Causal(), q, k, v)
    assert len(compiled.kernels) == 1, compiled.kernels
    assert "flash-attention" in compiled.source
    assert "DOT_DTYPE=tl.float32" not in compiled.source  # no IEEE-f32 dot
    want = rounded_p_reference(q, k, v, causal=True)
    got = compiled(q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)).cpu()
    assert rel_error(got.double(), want) <= 2 * BF16_STEP


class Grouped(nn.Module):
    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, enable_gqa=True)


@pytest.mark.parametrize("causal", [False, True])
def test_gqa_reads_the_shared_kv_heads_in_the_attention_kernel(causal):
    """4 query heads per KV head (`repeat_interleave`: a broadcast and a collapse):
    the attention runs over (B, KV heads, 4) and reads K and V where they are, no
    copy kernel expanding them (`propagate-reshapes`' expansion clusters)."""
    q, k, v = inputs(b=2, h=8, hk=2, lq=80, lk=80, d=32)
    compiled = tt.compile(Grouped(causal), q, k, v)
    assert len(compiled.kernels) == 1, compiled.source
    kernel = compiled.source.split("def fused_kernel_0(")[1].split("):")[0]
    # K and V are the [2, 2, 80, 32] arguments, each read with its 4 strides
    assert all(f"arg{i}_s3" in kernel and f"arg{i}_s4" not in kernel for i in (1, 2)), kernel
    want = rounded_p_reference(q, k, v, causal=causal)
    got = compiled(q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)).cpu()
    assert rel_error(got.double(), want) <= 2 * BF16_STEP


def test_a_causal_sdpa_of_one_query_and_one_key_compiles():
    """T = 1 (a decode step's shape): the causal mask's `arange` folds to a constant
    fill that torch-mlir views as [1, 1]; a view of a fill is a fill of the new
    shape (was refused: "views a fill")."""
    q, k, v = inputs(lq=1, lk=1, d=32)
    compiled = tt.compile(Causal(), q, k, v)
    want = rounded_p_reference(q, k, v, causal=True)
    got = compiled(q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)).cpu()
    assert rel_error(got.double(), want) <= 2 * BF16_STEP


def test_f32_sdpa_stays_an_f32_attention():
    """ATen's math scales Q and K each by sqrt(scale) before their product: both
    scales move onto the scores (`hoist-operand-scale`), one kernel (were two more,
    writing the scaled Q and K)."""
    q, k, v = inputs(lq=64, lk=64, d=32, dtype=torch.float32)
    compiled = tt.compile(Causal(), q, k, v)
    assert len(compiled.kernels) == 1, compiled.kernels
    assert "flash-attention" in compiled.source
    assert 'DOT_PRECISION="ieee"' in compiled.source
    want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    got = compiled(q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)).cpu()
    assert rel_error(got.double(), want) <= 1e-5


def test_the_torch_compile_backend_writes_sdpa_the_same_way():
    torch._dynamo.reset()
    q, k, v = inputs(lq=64, lk=64, d=32)
    before = backend.STATS.compiled, backend.STATS.fallbacks
    with torch.no_grad():
        got = torch.compile(Causal(), backend=backend.tilefuse, dynamic=False)(
            q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)).cpu()
    assert (backend.STATS.compiled - before[0], backend.STATS.fallbacks - before[1]) == (1, 0)
    want = rounded_p_reference(q, k, v, causal=True)
    assert rel_error(got.double(), want) <= 2 * BF16_STEP


class Masked(nn.Module):
    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def test_f32_sdpa_with_a_boolean_mask_masks():
    # (torch-mlir's import of ATen's math added a boolean mask as 0.0/1.0)
    q, k, v = inputs(lq=32, lk=40, d=16, dtype=torch.float32)
    mask = torch.rand(32, 40, generator=torch.Generator().manual_seed(2)) > 0.4
    mask[5] = False
    compiled = tt.compile(Masked(), q, k, v, mask)
    got = compiled(*(t.to(DEVICE) for t in (q, k, v, mask))).cpu()
    want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask)
    assert rel_error(got.double(), want.nan_to_num(0.0)) <= 1e-5


SCALED_FACTORS = {
    # Hugging Face's eager attention: the scale on Q (or K) after the upcast
    "scale_on_q": lambda q, k, v: torch.softmax((q.float() * 32**-0.5) @ k.float().transpose(-1, -2), -1).to(q.dtype) @ v,
    "division_on_k": lambda q, k, v: torch.softmax(q.float() @ (k.float().transpose(-1, -2) / math.sqrt(32)), -1).to(q.dtype) @ v,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SCALED_FACTORS))
def test_a_scaled_factor_keeps_one_attention_kernel_of_bf16_dots(name):
    """A bf16 factor widened and scaled is no product of two bf16 values until the
    scale moves onto the scores (`hoist-operand-scale`): then one flash-attention
    kernel of bf16 dots (were two kernels, the scaled factor written in f32 and the
    scores an IEEE-f32 dot)."""
    fn = SCALED_FACTORS[name]
    q, k, v = inputs(lq=64, lk=64, d=32)
    compiled = tt.compile(Fn(fn), q, k, v)
    assert len(compiled.kernels) == 1, compiled.kernels
    assert "flash-attention" in compiled.source
    assert "DOT_DTYPE=tl.float32" not in compiled.source
    want = rounded_p_reference(q, k, v)
    got = compiled(q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)).cpu()
    assert rel_error(got.double(), want) <= 2 * BF16_STEP


def test_dynamic_f32_sdpa_is_one_kernel_and_reported_so():
    """Over a dynamic sequence length the scaled Q and K are also read by size reads
    (`tensor.dim`), which do not keep the scales; the report prices the program as
    fusion-groups sees it (after resolve-dims: it listed the mask's and the inits'
    fills, read only by size reads, as five more kernels of 103 GB at the range end)."""
    q, k, v = inputs(lq=37, lk=37, d=16, dtype=torch.float32)
    for x in (q, k, v):
        torch._dynamo.mark_dynamic(x, 2)
    compiled = tt.compile(Causal(), q, k, v)
    assert len(compiled.kernels) == 1, compiled.kernels
    program = load_program(compiled.mlir, dim_ranges=compiled.exported.dim_ranges)
    report = format_report(analyze_program(program, "h200"))
    assert "-> 1 kernels" in report, report
    for t in (1, 5, 40):
        q, k, v = inputs(lq=t, lk=t, d=16, dtype=torch.float32, seed=t)
        want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
        got = compiled(q.to(DEVICE), k.to(DEVICE), v.to(DEVICE)).cpu()
        assert rel_error(got.double(), want) <= 1e-5, t
