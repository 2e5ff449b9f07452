"""Adversarial tests of the torch front-end and the compiler on decoder-LLM spellings
the zoo (`tilefuse.testing.zoo`) does not have: Falcon's multi-query attention, GQA
through `repeat_interleave`, GPT-NeoX's interleaved fused QKV with partial rotary and a
parallel residual, GPT-J's interleaved rotary built in the forward, Mistral's sliding
window, Gemma's norms, GeGLU and soft-capping, Qwen2, OPT, BLOOM's ALiBi through
`baddbmm`, nanoGPT's and Hugging Face's `masked_fill` masks, a decode step over a KV
cache, and `F.scaled_dot_product_attention` with masks, `scale=` and a causal mask with
T_q != T_k.

Each model runs in f32 (against eager in f64, `F32_RTOL`) and in bf16
(`model.to(torch.bfloat16)`, bf16 inputs, `BF16_RTOL`). Cases that fail today are
`xfail(strict=True)` (`XFAIL`), each with one line saying what fails: all are refusals,
no wrong numbers were found. A note for whoever adds cases: eager in f64 is not always
the oracle it seems. `softmax(s, dtype=torch.float32)` on f64 scores holding
finfo(f64).min rounds them to -inf (NaN rows where eager f32 has uniform ones), and
`masked_fill(finfo(torch.float32).min)` in bf16 is -inf; `LeftPadding` avoids both."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("torch_mlir")

import torch
import torch.nn.functional as F
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import assert_matches, eager64

F32_RTOL = 5e-5
BF16_RTOL = 2e-2


# -- building blocks ------------------------------------------------------------------------


class RMSNorm(nn.Module):
    """LLaMA/Mistral/Qwen2's RMSNorm (f32 inside); `gemma=True` scales by `1 + weight`."""

    def __init__(self, d: int, eps: float = 1e-6, gemma: bool = False):
        super().__init__()
        self.weight = nn.Parameter(0.1 * torch.randn(d) + (0.0 if gemma else 1.0))
        self.eps, self.gemma = eps, gemma

    def forward(self, x):
        dtype = x.dtype
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.gemma:
            return (h * (1.0 + self.weight.float())).to(dtype)
        return self.weight * h.to(dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def rope_tables(t: int, dim: int, base: float = 10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    freqs = torch.outer(torch.arange(t).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def causal_additive(t: int, window: int | None = None) -> torch.Tensor:
    """An additive [1, 1, t, t] mask of finfo(f32).min above the diagonal (and, with
    `window`, at or beyond `window` positions back: Mistral's sliding window)."""
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    allowed = j <= i
    if window is not None:
        allowed = allowed & (i - j < window)
    mask = torch.zeros(t, t).masked_fill(~allowed, torch.finfo(torch.float32).min)
    return mask[None, None]


class SwiGLU(nn.Module):
    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


# -- Falcon: multi-query attention ----------------------------------------------------------


class FalconMQA(nn.Module):
    """Falcon-7B's attention: one fused QKV Linear giving H query heads and one K/V head,
    K and V broadcast over the heads by `matmul` (no expand), parallel attention and MLP
    off one LayerNorm."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.ln = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, d + 2 * self.hd, bias=False)
        self.dense = nn.Linear(d, d, bias=False)
        self.mlp = nn.Sequential(
            nn.Linear(d, 4 * d, bias=False), nn.GELU(), nn.Linear(4 * d, d, bias=False)
        )

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln(x)
        fused = self.qkv(h).view(b, t, self.heads + 2, self.hd)
        q = fused[:, :, :-2].transpose(1, 2)  # [b, H, t, hd]
        k = fused[:, :, -2:-1].transpose(1, 2)  # [b, 1, t, hd]
        v = fused[:, :, -1:].transpose(1, 2)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        s = s.masked_fill(causal, float("-inf"))
        p = s.softmax(dim=-1)
        y = (p @ v).transpose(1, 2).reshape(b, t, d)
        return x + self.dense(y) + self.mlp(h)


class GQARepeatInterleave(nn.Module):
    """GQA with K/V heads repeated by `repeat_interleave(rep, dim=1)` (not expand +
    reshape), eager attention with an additive causal buffer."""

    def __init__(self, d: int, heads: int, kv_heads: int, t: int):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.register_buffer("mask", causal_additive(t))

    def forward(self, x):
        b, t, d = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = q @ k.transpose(2, 3) / math.sqrt(self.hd) + self.mask[:, :, :t, :t]
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj((p @ v).transpose(1, 2).reshape(b, t, d))


# -- GPT-NeoX / Pythia ---------------------------------------------------------------------


class NeoXLayer(nn.Module):
    """GPT-NeoX's layer: fused QKV viewed [b, t, H, 3*hd] (per-head interleaved), rotary
    on the first `rotary_pct` of each head's dims (`torch.cat` with the pass-through
    part), causal `torch.where` with finfo.min, parallel residual
    x + attn(ln1(x)) + mlp(ln2(x))."""

    def __init__(
        self,
        d: int,
        heads: int,
        t: int,
        rotary_pct: float = 0.25,
        persistent: bool = True,
    ):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.rot = int(self.hd * rotary_pct)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.query_key_value = nn.Linear(d, 3 * d)
        self.dense = nn.Linear(d, d)
        self.fc_in, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        cos, sin = rope_tables(t, self.rot)
        # Hugging Face registers its rotary tables with persistent=False
        self.register_buffer("cos", cos, persistent=persistent)
        self.register_buffer("sin", sin, persistent=persistent)
        self.register_buffer(
            "bias", torch.tril(torch.ones(t, t, dtype=torch.bool))[None, None]
        )

    def attn(self, x):
        b, t, d = x.shape
        qkv = (
            self.query_key_value(x)
            .view(b, t, self.heads, 3 * self.hd)
            .permute(0, 2, 1, 3)
        )
        q, k, v = (
            qkv[..., : self.hd],
            qkv[..., self.hd : 2 * self.hd],
            qkv[..., 2 * self.hd :],
        )
        cos, sin = self.cos[:t][None, None], self.sin[:t][None, None]
        q_rot, q_pass = q[..., : self.rot], q[..., self.rot :]
        k_rot, k_pass = k[..., : self.rot], k[..., self.rot :]
        q = torch.cat((q_rot * cos + rotate_half(q_rot) * sin, q_pass), dim=-1)
        k = torch.cat((k_rot * cos + rotate_half(k_rot) * sin, k_pass), dim=-1)
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        s = torch.where(self.bias[:, :, :t, :t], s, torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1).to(v.dtype)
        y = torch.matmul(p, v).permute(0, 2, 1, 3).reshape(b, t, d)
        return self.dense(y)

    def forward(self, x):
        mlp = self.fc_out(F.gelu(self.fc_in(self.ln2(x))))
        return x + self.attn(self.ln1(x)) + mlp


# -- GPT-J ---------------------------------------------------------------------------------


def rotate_every_two(x):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


class GPTJAttention(nn.Module):
    """GPT-J: interleaved rotary (`rotate_every_two`) on the first `rot` dims, sin/cos
    computed in the forward from `torch.arange` and duplicated per pair with
    `repeat_interleave`, one LayerNorm feeding attention and a tanh-GELU MLP in
    parallel."""

    def __init__(self, d: int, heads: int, rot: int):
        super().__init__()
        self.heads, self.hd, self.rot = heads, d // heads, rot
        self.ln = nn.LayerNorm(d)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False)
        self.out_proj = nn.Linear(d, d, bias=False)
        self.fc_in, self.fc_out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def rope(self, x, sin, cos):
        x_rot, x_pass = x[..., : self.rot], x[..., self.rot :]
        x_rot = x_rot * cos + rotate_every_two(x_rot) * sin
        return torch.cat((x_rot, x_pass), dim=-1)

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln(x)
        q = self.q_proj(h).view(b, t, self.heads, self.hd)
        k = self.k_proj(h).view(b, t, self.heads, self.hd)
        v = self.v_proj(h).view(b, t, self.heads, self.hd).permute(0, 2, 1, 3)
        inv_freq = 1.0 / (
            10000 ** (torch.arange(0, self.rot, 2, device=x.device).float() / self.rot)
        )
        pos = torch.arange(t, device=x.device).float()
        sinusoid = torch.einsum("i,j->ij", pos, inv_freq)
        sin = sinusoid.sin().repeat_interleave(2, dim=-1)[None, :, None, :].to(x.dtype)
        cos = sinusoid.cos().repeat_interleave(2, dim=-1)[None, :, None, :].to(x.dtype)
        q = self.rope(q, sin, cos).permute(0, 2, 1, 3)
        k = self.rope(k, sin, cos).permute(0, 2, 1, 3)
        s = torch.matmul(q.float(), k.float().transpose(-1, -2))
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
        s = torch.where(
            causal, s, torch.tensor(torch.finfo(s.dtype).min, dtype=s.dtype)
        )
        s = s / math.sqrt(self.hd)
        p = F.softmax(s, dim=-1).to(v.dtype)
        y = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous().view(b, t, d)
        mlp = self.fc_out(F.gelu(self.fc_in(h), approximate="tanh"))
        return x + self.out_proj(y) + mlp


# -- Mistral ------------------------------------------------------------------------------


class MistralSlidingWindow(nn.Module):
    """Mistral's layer with a sliding-window causal mask as an additive float buffer,
    GQA through expand + reshape, rotary, SwiGLU."""

    def __init__(self, d: int, heads: int, kv_heads: int, t: int, window: int):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.input_layernorm = RMSNorm(d)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d)
        self.mlp = SwiGLU(d, 3 * d)
        cos, sin = rope_tables(t, self.hd)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        self.register_buffer("mask", causal_additive(t, window))

    def forward(self, x):
        b, t, d = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        cos, sin = self.cos[None, None], self.sin[None, None]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        k = (
            k[:, :, None]
            .expand(b, self.kv_heads, rep, t, self.hd)
            .reshape(b, -1, t, self.hd)
        )
        v = (
            v[:, :, None]
            .expand(b, self.kv_heads, rep, t, self.hd)
            .reshape(b, -1, t, self.hd)
        )
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd) + self.mask
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        x = x + self.o_proj(torch.matmul(p, v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.post_attention_layernorm(x))


# -- Gemma --------------------------------------------------------------------------------


class GemmaLayer(nn.Module):
    """Gemma(-2): embedding scale x * sqrt(d), RMSNorm with (1 + weight), MQA through
    SDPA-free eager attention with logit soft-capping cap * tanh(s / cap), GeGLU with
    tanh GELU, a final logit soft-cap on an LM head."""

    def __init__(self, d: int, heads: int, t: int, vocab: int, cap: float = 50.0):
        super().__init__()
        self.heads, self.hd, self.d, self.cap = heads, d // heads, d, cap
        self.input_layernorm = RMSNorm(d, gemma=True)
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, self.hd, bias=False)
        self.v_proj = nn.Linear(d, self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d, gemma=True)
        self.gate_proj = nn.Linear(d, 2 * d, bias=False)
        self.up_proj = nn.Linear(d, 2 * d, bias=False)
        self.down_proj = nn.Linear(2 * d, d, bias=False)
        self.norm = RMSNorm(d, gemma=True)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", causal_additive(t))

    def forward(self, x):
        b, t, d = x.shape
        x = x * torch.tensor(self.d**0.5, dtype=x.dtype)
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, 1, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, 1, self.hd).transpose(1, 2)
        k = k.expand(b, self.heads, t, self.hd)
        v = v.expand(b, self.heads, t, self.hd)
        s = torch.matmul(q, k.transpose(2, 3)) * self.hd**-0.5
        s = torch.tanh(s / self.cap) * self.cap
        s = s + self.mask[:, :, :t, :t]
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        x = x + self.o_proj(torch.matmul(p, v).transpose(1, 2).reshape(b, t, d))
        h = self.post_attention_layernorm(x)
        x = x + self.down_proj(
            F.gelu(self.gate_proj(h), approximate="tanh") * self.up_proj(h)
        )
        logits = self.lm_head(self.norm(x))
        return torch.tanh(logits / 30.0) * 30.0


# -- Qwen2 --------------------------------------------------------------------------------


class Qwen2Attention(nn.Module):
    """Qwen2's attention: biases on Q, K and V only (not on o_proj), rotary, GQA, SDPA
    with `is_causal=True`."""

    def __init__(self, d: int, heads: int, kv_heads: int, t: int):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.norm = RMSNorm(d)
        self.q_proj = nn.Linear(d, d, bias=True)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=True)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=True)
        self.o_proj = nn.Linear(d, d, bias=False)
        cos, sin = rope_tables(t, self.hd, base=1e6)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, x):
        b, t, d = x.shape
        h = self.norm(x)
        q = self.q_proj(h).view(b, t, -1, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, -1, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, -1, self.hd).transpose(1, 2)
        cos, sin = (
            self.cos[:t].unsqueeze(0).unsqueeze(0),
            self.sin[:t].unsqueeze(0).unsqueeze(0),
        )
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        k = (
            k[:, :, None]
            .expand(b, self.kv_heads, rep, t, self.hd)
            .reshape(b, -1, t, self.hd)
        )
        v = (
            v[:, :, None]
            .expand(b, self.kv_heads, rep, t, self.hd)
            .reshape(b, -1, t, self.hd)
        )
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.o_proj(y.transpose(1, 2).reshape(b, t, d))


# -- OPT ----------------------------------------------------------------------------------


class OPTLayer(nn.Module):
    """OPT's decoder layer: pre-LN, q scaled before the matmul (q_proj(x) * scaling),
    heads folded into the batch for `torch.bmm`, an additive causal mask clamped with
    `torch.max(s, finfo.min)`, ReLU FFN."""

    def __init__(self, d: int, heads: int, t: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.scaling = self.hd**-0.5
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.q_proj, self.k_proj = nn.Linear(d, d), nn.Linear(d, d)
        self.v_proj, self.out_proj = nn.Linear(d, d), nn.Linear(d, d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", causal_additive(t))

    def _shape(self, z, b, t):
        return (
            z.view(b, t, self.heads, self.hd)
            .transpose(1, 2)
            .reshape(b * self.heads, t, -1)
        )

    def forward(self, x):
        b, t, d = x.shape
        h = self.self_attn_layer_norm(x)
        q = self._shape(self.q_proj(h) * self.scaling, b, t)
        k, v = self._shape(self.k_proj(h), b, t), self._shape(self.v_proj(h), b, t)
        s = torch.bmm(q, k.transpose(1, 2)).view(b, self.heads, t, t) + self.mask
        s = torch.max(s, torch.tensor(torch.finfo(s.dtype).min, dtype=s.dtype))
        s = s.view(b * self.heads, t, t)
        if s.dtype == torch.float16 or s.dtype == torch.bfloat16:
            p = F.softmax(s, dim=-1, dtype=torch.float32).to(s.dtype)
        else:
            p = F.softmax(s, dim=-1)
        y = (
            torch.bmm(p, v)
            .view(b, self.heads, t, self.hd)
            .transpose(1, 2)
            .reshape(b, t, d)
        )
        x = x + self.out_proj(y)
        return x + self.fc2(F.relu(self.fc1(self.final_layer_norm(x))))


# -- BLOOM --------------------------------------------------------------------------------


def alibi_slopes(heads: int) -> torch.Tensor:
    start = 2 ** (-(2 ** -(math.log2(heads) - 3)))
    return torch.tensor([start ** (i + 1) for i in range(heads)])


class BloomAttention(nn.Module):
    """BLOOM's attention: fused QKV viewed [b, t, H, 3, hd], ALiBi (slope * key
    position, computed in the forward) added by `torch.baddbmm(alibi, q, k^T, beta=1,
    alpha=1/sqrt(hd))` over [b*H, t, t], `masked_fill` of a bool causal mask with
    finfo.min, softmax in f32."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.ln = nn.LayerNorm(d)
        self.query_key_value = nn.Linear(d, 3 * d)
        self.dense = nn.Linear(d, d)
        self.register_buffer("slopes", alibi_slopes(heads))

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln(x)
        fused = self.query_key_value(h).view(b, t, self.heads, 3, self.hd)
        q = fused[..., 0, :].transpose(1, 2).reshape(b * self.heads, t, self.hd)
        k = fused[..., 1, :].permute(0, 2, 3, 1).reshape(b * self.heads, self.hd, t)
        v = fused[..., 2, :].transpose(1, 2).reshape(b * self.heads, t, self.hd)
        pos = torch.arange(t, device=x.device, dtype=x.dtype)
        alibi = self.slopes.to(x.dtype)[:, None] * pos[None, :]  # [H, t]
        alibi = alibi[None].expand(b, -1, -1).reshape(b * self.heads, 1, t)
        s = torch.baddbmm(alibi, q, k, beta=1.0, alpha=1.0 / math.sqrt(self.hd))
        s = s.view(b, self.heads, t, t)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        s = s.masked_fill(causal, torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(x.dtype)
        y = torch.bmm(p.view(b * self.heads, t, t), v)
        y = y.view(b, self.heads, t, self.hd).permute(0, 2, 1, 3).reshape(b, t, d)
        return x + self.dense(y)


# -- masks spelled by masked_fill ---------------------------------------------------------


class NanoGPTMaskedFill(nn.Module):
    """nanoGPT with a 2-D tril buffer longer than the sequence, sliced [:t, :t]."""

    def __init__(self, d: int, heads: int, block: int):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("tril", torch.tril(torch.ones(block, block)))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * k.size(-1) ** -0.5
        att = att.masked_fill(self.tril[:t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return self.c_proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))


class HFPaddingMaskedFill(nn.Module):
    """Hugging Face's padding + causal mask: a bool [b, 1, t, t] mask from an int64
    attention_mask input, `masked_fill(~mask, finfo(dtype).min)`, softmax in f32 then
    `.to(q.dtype)`; padding on the right, so no query row is masked throughout."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q_proj, self.k_proj = nn.Linear(d, d), nn.Linear(d, d)
        self.v_proj, self.o_proj = nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x, attention_mask):
        b, t, d = x.shape
        q, k, v = (
            p(x).view(b, t, self.heads, self.hd).transpose(1, 2)
            for p in (self.q_proj, self.k_proj, self.v_proj)
        )
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=x.device))
        mask = causal[None, None] & attention_mask[:, None, None, :].bool()
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        return self.o_proj(torch.matmul(p, v).transpose(1, 2).reshape(b, t, d))


# -- a decode step over a KV cache --------------------------------------------------------


class DecodeStep(nn.Module):
    """One token's attention over a KV cache passed as inputs: the new key and value
    concatenated on (`torch.cat([k_cache, k_new], dim=2)`), no mask (the query is the
    last position), rotary at position `s` from buffers; returns the output and the
    grown caches."""

    def __init__(self, d: int, heads: int, kv_heads: int, s: int):
        super().__init__()
        self.heads, self.kv_heads, self.hd, self.s = heads, kv_heads, d // heads, s
        self.q_proj = nn.Linear(d, d, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)
        cos, sin = rope_tables(s + 1, self.hd)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, x, k_cache, v_cache):
        b, t, d = x.shape  # t == 1
        q = self.q_proj(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        cos, sin = self.cos[self.s :][None, None], self.sin[self.s :][None, None]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k_all = torch.cat([k_cache, k], dim=2)
        v_all = torch.cat([v_cache, v], dim=2)
        rep = self.heads // self.kv_heads
        kk = k_all.repeat_interleave(rep, dim=1)
        vv = v_all.repeat_interleave(rep, dim=1)
        s = torch.matmul(q, kk.transpose(2, 3)) / math.sqrt(self.hd)
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        y = torch.matmul(p, vv).transpose(1, 2).reshape(b, t, d)
        return self.o_proj(y), k_all, v_all


class DecodeStepSDPA(nn.Module):
    """A decode step through SDPA (no mask, `is_causal=False`) over the grown cache."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)

    def forward(self, x, k_cache, v_cache):
        b, t, d = x.shape
        q, k, v = (
            z.view(b, t, self.heads, self.hd).transpose(1, 2)
            for z in self.qkv(x).chunk(3, dim=-1)
        )
        k = torch.cat([k_cache, k], dim=2)
        v = torch.cat([v_cache, v], dim=2)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, d))


# -- F.scaled_dot_product_attention -------------------------------------------------------


class SDPA(nn.Module):
    """SDPA on q, k, v inputs ([b, H, t, hd]) with the keyword arguments given, and an
    attention mask input if `mask` is given."""

    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, q, k, v, *mask):
        return F.scaled_dot_product_attention(q, k, v, *mask, **self.kwargs)


# -- more spellings: rotary, masks, caches, heads, losses ---------------------------------


class MetaComplexRope(nn.Module):
    """Meta's LLaMA reference: rotary through `view_as_complex`, `torch.polar` (in the
    forward here) and `view_as_real(...).flatten(3)`."""

    def __init__(self, d: int, heads: int, t: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.wq, self.wk = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.wv, self.wo = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        freqs = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(t).float(), freqs)
        self.register_buffer("freqs", freqs)  # real: eager64's .double() keeps it

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (
            w(x).view(b, t, self.heads, self.hd) for w in (self.wq, self.wk, self.wv)
        )
        freqs = self.freqs[:t].float()
        fc = torch.polar(torch.ones_like(freqs), freqs).view(1, t, 1, -1)
        qc = torch.view_as_complex(q.float().reshape(b, t, self.heads, -1, 2))
        kc = torch.view_as_complex(k.float().reshape(b, t, self.heads, -1, 2))
        q = torch.view_as_real(qc * fc).flatten(3).type_as(x).transpose(1, 2)
        k = torch.view_as_real(kc * fc).flatten(3).type_as(x).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v.transpose(1, 2), is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, d))


class HFRopePositionIds(nn.Module):
    """Hugging Face's current rotary: `inv_freq[None, :, None] @ position_ids[:, None, :]`
    in the forward, position_ids an input (offset in one row)."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q, self.k = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.v, self.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.register_buffer(
            "inv_freq", 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        )

    def forward(self, x, position_ids):
        b, t, d = x.shape
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype)[:, None], emb.sin().to(x.dtype)[:, None]
        q, k, v = (
            p(x).view(b, t, self.heads, self.hd).transpose(1, 2)
            for p in (self.q, self.k, self.v)
        )
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, d))


class GatherRope(nn.Module):
    """Older Hugging Face rotary: `cos[position_ids].unsqueeze(1)` from buffers."""

    def __init__(self, d: int, heads: int, t: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q, self.k = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        cos, sin = rope_tables(t, self.hd)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)

    def forward(self, x, position_ids):
        b, t, _ = x.shape
        cos, sin = (
            self.cos[position_ids].unsqueeze(1),
            self.sin[position_ids].unsqueeze(1),
        )
        q = self.q(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        return (q @ k.transpose(-1, -2)).softmax(-1)


class EinsumAttention(nn.Module):
    """Attention through `einsum` ("bqhd,bkhd->bhqk"), qkv `unbind`, a `triu` of -inf."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, self.hd).unbind(2)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) * self.hd**-0.5
        m = torch.full((t, t), float("-inf"), dtype=x.dtype, device=x.device).triu(1)
        p = (s + m).softmax(-1)
        return self.o(torch.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, t, d))


class LeftPadding(nn.Module):
    """Hugging Face masks with LEFT padding: query rows masked throughout, which softmax
    over finfo(dtype).min makes uniform. `additive=True`: causal and padding masks of
    finfo.min added (overflowing to -inf where both mask), as older BERT-derived code."""

    def __init__(self, additive: bool = False):
        super().__init__()
        self.additive = additive

    def forward(self, q, k, v, attention_mask):
        t = q.shape[2]
        lowest = torch.finfo(q.dtype).min
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if self.additive:
            causal = torch.full((t, t), lowest, dtype=q.dtype, device=q.device).triu(1)
            pad = (1.0 - attention_mask[:, None, None, :].to(q.dtype)) * lowest
            s = s + causal + pad
        else:
            causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=q.device))
            s = s.masked_fill(
                ~(causal[None, None] & attention_mask[:, None, None, :].bool()), lowest
            )
        return torch.matmul(F.softmax(s, dim=-1), v)


class MaskedAttention(nn.Module):
    """Eager causal attention, the mask a `tril` built in the forward, or (`buffer=True`)
    nanoGPT's [1, 1, T, T] buffer."""

    def __init__(self, t: int, buffer: bool = False):
        super().__init__()
        self.buffer = buffer
        self.register_buffer("tril", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

    def forward(self, q, k, v):
        t = q.shape[2]
        if self.buffer:
            keep = self.tril[:, :, :t, :t] != 0
        else:
            keep = torch.tril(torch.ones(t, t, dtype=torch.bool, device=q.device))[
                None, None
            ]
        s = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
        return F.softmax(s.masked_fill(~keep, float("-inf")), dim=-1) @ v


class SlidingWindowLong(nn.Module):
    """A sliding window over several key blocks: an additive buffer, or (`sdpa=True`) a
    bool mask built in the forward from `arange` for SDPA."""

    def __init__(self, t: int, window: int, sdpa: bool = False):
        super().__init__()
        self.window, self.sdpa = window, sdpa
        self.register_buffer("mask", causal_additive(t, window))

    def forward(self, q, k, v):
        if self.sdpa:
            i = torch.arange(q.shape[2], device=q.device)
            keep = (i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < self.window)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]) + self.mask
        return F.softmax(s, dim=-1) @ v


class SoftcapCausal(nn.Module):
    """Gemma-2's soft-capping over several key blocks, masked with -inf after the cap."""

    def forward(self, q, k, v):
        t = q.shape[2]
        s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
        s = 20.0 * torch.tanh(s / 20.0)
        causal = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        return s.masked_fill(causal, float("-inf")).softmax(-1) @ v


class MPTAlibi(nn.Module):
    """MPT's ALiBi built in the forward: `arange(1 - t, 1).view(1, 1, 1, t)` times the
    slopes `.view(1, H, 1, 1)`, a causal masked_fill with finfo.min."""

    def forward(self, q, k, v):
        h, t = q.shape[1], q.shape[2]
        slopes = 1.0 / torch.pow(
            2, torch.arange(1, h + 1, device=q.device).float() * (8.0 / h)
        )
        bias = torch.arange(1 - t, 1, device=q.device, dtype=torch.int32).view(
            1, 1, 1, t
        )
        bias = (bias * slopes.view(1, h, 1, 1)).to(q.dtype)
        s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5 + bias
        causal = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        return s.masked_fill(causal, torch.finfo(q.dtype).min).softmax(-1) @ v


class StaticCacheDecode(nn.Module):
    """Hugging Face's StaticCache: `k_cache.index_copy(2, cache_position, k)`, the mask
    `arange(S) <= cache_position`, SDPA; returns the output and the caches."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q, self.k = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.v, self.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)

    def forward(self, x, k_cache, v_cache, cache_position):
        b, t, d = x.shape
        q, k, v = (
            p(x).view(b, t, self.heads, self.hd).transpose(1, 2)
            for p in (self.q, self.k, self.v)
        )
        k_cache = k_cache.index_copy(2, cache_position, k)
        v_cache = v_cache.index_copy(2, cache_position, v)
        keep = (
            torch.arange(k_cache.shape[2], device=x.device)[None, :]
            <= cache_position[:, None]
        )
        y = F.scaled_dot_product_attention(
            q, k_cache, v_cache, attn_mask=keep[None, None]
        )
        return self.o(y.transpose(1, 2).reshape(b, t, d)), k_cache, v_cache


class SliceAssignCache(nn.Module):
    """A cache written by slice assignment on a clone (`k_cache[:, :, p:p+1] = k`), the
    attention over its first p + 1 positions."""

    def __init__(self, pos: int):
        super().__init__()
        self.pos = pos

    def forward(self, q, k, v, k_cache, v_cache):
        k_cache, v_cache = k_cache.clone(), v_cache.clone()
        k_cache[:, :, self.pos : self.pos + 1] = k
        v_cache[:, :, self.pos : self.pos + 1] = v
        n = self.pos + 1
        y = F.scaled_dot_product_attention(q, k_cache[:, :, :n], v_cache[:, :, :n])
        return y, k_cache, v_cache


class BaddbmmEmpty(nn.Module):
    """Older GPT-NeoX/BLOOM: `torch.baddbmm(torch.empty(...), q, k^T, beta=0.0,
    alpha=scale)` (beta=0 must ignore the uninitialised input)."""

    def forward(self, q, k, v):
        bh, t, d = q.shape
        base = torch.empty(bh, t, t, dtype=q.dtype, device=q.device)
        s = torch.baddbmm(
            base, q, k.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(d)
        )
        return torch.bmm(s.softmax(-1), v)


class CausalLMLoss(nn.Module):
    """The causal LM loss: final norm, LM head in f32, shifted logits and labels,
    `cross_entropy(ignore_index=-100)`."""

    def __init__(self, d: int, vocab: int):
        super().__init__()
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, x, labels):
        logits = self.lm_head(self.norm(x)).float()
        shift_logits = logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        return F.cross_entropy(
            shift_logits.view(-1, shift_logits.size(-1)),
            shift_labels.view(-1),
            ignore_index=-100,
        )


class GreedyHead(nn.Module):
    """A decode head: the last position's logits, `argmax`, temperature softmax."""

    def __init__(self, d: int, vocab: int):
        super().__init__()
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        logits = self.lm_head(self.norm(x))[:, -1, :]
        return logits.argmax(-1), F.softmax(logits / 0.7, dim=-1)


class MixtralRouter(nn.Module):
    """Mixtral's router: softmax over experts in f32, `torch.topk(2)`, renormalised."""

    def __init__(self, d: int, experts: int):
        super().__init__()
        self.gate = nn.Linear(d, experts, bias=False)

    def forward(self, x):
        weights = F.softmax(self.gate(x), dim=-1, dtype=torch.float32)
        weights, selected = torch.topk(weights, 2, dim=-1)
        return weights / weights.sum(dim=-1, keepdim=True), selected


class FusedGQASplit(nn.Module):
    """Phi-3: fused qkv split unequally [d, kv, kv], SDPA with `enable_gqa=True`, fused
    gate_up `chunk(2)`."""

    def __init__(self, d: int, heads: int, kv_heads: int):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.qkv = nn.Linear(d, d + 2 * kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate_up = nn.Linear(d, 4 * d, bias=False)
        self.down = nn.Linear(2 * d, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        kv = self.kv_heads * self.hd
        q, k, v = self.qkv(x).split([d, kv, kv], dim=-1)
        q = q.view(b, t, self.heads, self.hd).transpose(1, 2)
        k = k.view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = v.view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(y.transpose(1, 2).reshape(b, t, d))
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class SDPAExpandKV(nn.Module):
    """Falcon through SDPA: one K/V head `expand_as` the query heads."""

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(
            q, k.expand_as(q), v.expand_as(q), is_causal=True
        )


class SDPAPaddingMask(nn.Module):
    """SDPA with a padding-only bool mask [b, 1, 1, tk] from an int64 attention_mask."""

    def forward(self, q, k, v, attention_mask):
        keep = attention_mask[:, None, None, :].bool()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


class MetaTypeAs(nn.Module):
    """Meta's LLaMA reference: a `full(-inf).triu(1).type_as(q)` mask added, softmax of
    `scores.float()` then `.type_as(q)`."""

    def forward(self, q, k, v):
        t = q.shape[2]
        mask = torch.full((t, t), float("-inf"), device=q.device).triu(1).type_as(q)
        s = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(q.shape[-1]) + mask
        return torch.matmul(F.softmax(s.float(), dim=-1).type_as(q), v)


# -- the cases ----------------------------------------------------------------------------


def _randn(*shapes):
    return lambda g: tuple(torch.randn(*s, generator=g) for s in shapes)


def _padding(b: int, t: int, g: torch.Generator) -> torch.Tensor:
    lengths = torch.randint(t // 2, t + 1, (b,), generator=g)
    return (torch.arange(t)[None, :] < lengths[:, None]).to(torch.int64)


def _sdpa_mask(kind: str, b: int, h: int, tq: int, tk: int):
    def make(g: torch.Generator):
        q = torch.randn(b, h, tq, 16, generator=g)
        k = torch.randn(b, h, tk, 16, generator=g)
        v = torch.randn(b, h, tk, 16, generator=g)
        keep = torch.rand(b, 1, tq, tk, generator=g) > 0.3
        keep[..., 0] = True  # no row masked throughout
        if kind == "bool":
            return q, k, v, keep
        return (
            q,
            k,
            v,
            torch.zeros(b, 1, tq, tk).masked_fill(~keep, -1e4)
            + 0.1 * torch.randn(b, 1, tq, tk, generator=g),
        )

    return make


def _left_padding(b: int, t: int):
    def make(g: torch.Generator):
        q, k, v = (torch.randn(b, 2, t, 16, generator=g) for _ in range(3))
        mask = torch.ones(b, t, dtype=torch.int64)
        mask[0, : t // 2 + 3] = 0
        mask[1, :2] = 0
        return q, k, v, mask

    return make


def _position_ids(g: torch.Generator):
    return torch.randn(2, 12, 64, generator=g), torch.stack(
        [torch.arange(12), torch.arange(12) + 3]
    )


def _static_cache(g: torch.Generator):
    x, kc, vc = (
        torch.randn(*s, generator=g)
        for s in ((2, 1, 64), (2, 4, 24, 16), (2, 4, 24, 16))
    )
    return x, kc, vc, torch.tensor([13])


def _labels(g: torch.Generator):
    labels = torch.randint(0, 97, (2, 12), generator=g)
    labels[0, 7:] = -100
    return torch.randn(2, 12, 64, generator=g), labels


def _right_padding_qkv(g: torch.Generator):
    mask = torch.ones(2, 16, dtype=torch.int64)
    mask[0, 10:] = 0
    return (*(torch.randn(2, 2, 16, 16, generator=g) for _ in range(3)), mask)


def _fully_masked_rows(g: torch.Generator):
    q, k, v = (torch.randn(1, 2, 8, 16, generator=g) for _ in range(3))
    keep = torch.rand(1, 1, 8, 8, generator=g) > 0.3
    keep[..., 0, 0] = True
    keep[..., 3, :] = False  # torch's SDPA gives such a row zeros
    return q, k, v, keep


CASES = {
    "falcon_mqa": (lambda: FalconMQA(64, 4), _randn((2, 16, 64))),
    "gqa_repeat_interleave": (
        lambda: GQARepeatInterleave(64, 4, 2, 16),
        _randn((2, 16, 64)),
    ),
    "neox_partial_rotary_parallel": (lambda: NeoXLayer(64, 4, 16), _randn((2, 16, 64))),
    "gptj_interleaved_rotary": (lambda: GPTJAttention(64, 4, 8), _randn((2, 16, 64))),
    "mistral_sliding_window": (
        lambda: MistralSlidingWindow(64, 4, 2, 16, 5),
        _randn((1, 16, 64)),
    ),
    "gemma_softcap": (lambda: GemmaLayer(64, 4, 16, 96), _randn((2, 16, 64))),
    "qwen2_qkv_bias_sdpa": (lambda: Qwen2Attention(64, 4, 2, 16), _randn((2, 16, 64))),
    "opt_bmm_relu": (lambda: OPTLayer(64, 4, 16), _randn((2, 16, 64))),
    "bloom_alibi_baddbmm": (lambda: BloomAttention(64, 4), _randn((2, 16, 64))),
    "nanogpt_tril_slice": (lambda: NanoGPTMaskedFill(64, 4, 32), _randn((2, 16, 64))),
    "hf_padding_masked_fill": (
        lambda: HFPaddingMaskedFill(64, 4),
        lambda g: (torch.randn(2, 16, 64, generator=g), _padding(2, 16, g)),
    ),
    "decode_step_kv_cache": (
        lambda: DecodeStep(64, 4, 2, 15),
        _randn((2, 1, 64), (2, 2, 15, 16), (2, 2, 15, 16)),
    ),
    "decode_step_sdpa": (
        lambda: DecodeStepSDPA(64, 4),
        _randn((2, 1, 64), (2, 4, 23, 16), (2, 4, 23, 16)),
    ),
    "sdpa_bool_mask": (lambda: SDPA(), _sdpa_mask("bool", 2, 2, 16, 16)),
    "sdpa_float_mask": (lambda: SDPA(), _sdpa_mask("float", 2, 2, 16, 16)),
    "sdpa_scale": (lambda: SDPA(scale=0.3), _randn(*[(2, 2, 16, 16)] * 3)),
    "sdpa_causal_scale": (
        lambda: SDPA(is_causal=True, scale=0.05),
        _randn(*[(2, 2, 16, 16)] * 3),
    ),
    "sdpa_causal_tq_lt_tk": (
        lambda: SDPA(is_causal=True),
        _randn((2, 2, 8, 16), (2, 2, 16, 16), (2, 2, 16, 16)),
    ),
    "sdpa_causal_tq_gt_tk": (
        lambda: SDPA(is_causal=True),
        _randn((2, 2, 16, 16), (2, 2, 8, 16), (2, 2, 8, 16)),
    ),
    "sdpa_bool_mask_tq_ne_tk": (lambda: SDPA(), _sdpa_mask("bool", 1, 2, 8, 24)),
    "sdpa_enable_gqa": (
        lambda: SDPA(enable_gqa=True, is_causal=True),
        _randn((2, 4, 16, 16), (2, 2, 16, 16), (2, 2, 16, 16)),
    ),
    "neox_nonpersistent_buffers": (
        lambda: NeoXLayer(64, 4, 16, persistent=False),
        _randn((2, 16, 64)),
    ),
    "meta_complex_rope": (lambda: MetaComplexRope(64, 4, 16), _randn((2, 16, 64))),
    "hf_rope_position_ids": (lambda: HFRopePositionIds(64, 4), _position_ids),
    "gather_rope_position_ids": (lambda: GatherRope(64, 4, 16), _position_ids),
    "einsum_attention": (lambda: EinsumAttention(64, 4), _randn((2, 16, 64))),
    "left_padding_masked_fill": (LeftPadding, _left_padding(2, 80)),
    "left_padding_additive_twice": (
        lambda: LeftPadding(additive=True),
        _left_padding(2, 80),
    ),
    "masked_attention_b1_h1": (
        lambda: MaskedAttention(8),
        _randn(*[(1, 1, 8, 16)] * 3),
    ),
    "masked_attention_b1_h1_buffer": (
        lambda: MaskedAttention(8, buffer=True),
        _randn(*[(1, 1, 8, 16)] * 3),
    ),
    "sliding_window_80": (
        lambda: SlidingWindowLong(80, 17),
        _randn(*[(1, 2, 80, 16)] * 3),
    ),
    "sliding_window_sdpa_80": (
        lambda: SlidingWindowLong(80, 17, sdpa=True),
        _randn(*[(1, 2, 80, 16)] * 3),
    ),
    "softcap_causal_80": (SoftcapCausal, _randn(*[(1, 2, 80, 16)] * 3)),
    "mpt_alibi_arange_view": (MPTAlibi, _randn(*[(2, 4, 16, 16)] * 3)),
    "decode_step_b1_mqa": (
        lambda: DecodeStep(64, 4, 1, 15),
        _randn((1, 1, 64), (1, 1, 15, 16), (1, 1, 15, 16)),
    ),
    "decode_static_cache_index_copy": (lambda: StaticCacheDecode(64, 4), _static_cache),
    "decode_slice_assign_cache": (
        lambda: SliceAssignCache(9),
        _randn(*[(2, 2, 1, 16)] * 3, (2, 2, 16, 16), (2, 2, 16, 16)),
    ),
    "baddbmm_empty_beta0": (BaddbmmEmpty, _randn(*[(4, 16, 16)] * 3)),
    "causal_lm_loss": (lambda: CausalLMLoss(64, 97), _labels),
    "greedy_head": (lambda: GreedyHead(64, 97), _randn((2, 8, 64))),
    "mixtral_router_topk": (lambda: MixtralRouter(64, 8), _randn((2, 8, 64))),
    "phi3_fused_gqa_split": (lambda: FusedGQASplit(64, 4, 2), _randn((2, 16, 64))),
    "meta_type_as": (MetaTypeAs, _randn(*[(2, 2, 16, 16)] * 3)),
    "sdpa_expand_kv": (
        SDPAExpandKV,
        _randn((2, 4, 16, 16), (2, 1, 16, 16), (2, 1, 16, 16)),
    ),
    "sdpa_padding_mask": (SDPAPaddingMask, _right_padding_qkv),
    "sdpa_fully_masked_rows": (SDPA, _fully_masked_rows),
    "sdpa_mask_2d": (
        SDPA,
        lambda g: (*_randn(*[(2, 2, 8, 16)] * 3)(g), torch.randn(8, 8, generator=g)),
    ),
    "sdpa_causal_decode_tq1": (
        lambda: SDPA(is_causal=True),
        _randn((2, 2, 1, 16), (2, 2, 13, 16), (2, 2, 13, 16)),
    ),
    "sdpa_causal_tq_lt_tk_80": (
        lambda: SDPA(is_causal=True),
        _randn((1, 2, 40, 16), (1, 2, 80, 16), (1, 2, 80, 16)),
    ),
}

XFAIL: dict[tuple[str, str], str] = {
    (name, key): why
    for key in ("f32", "bf16")
    for name, why in {
    }.items()
}
"""(case, dtype) -> what fails, for the cases that fail today."""


def build(name: str, dtype: torch.dtype, seed: int = 0):
    make, inputs = CASES[name]
    torch.manual_seed(seed)
    model = make().eval()
    xs = inputs(torch.Generator().manual_seed(seed))
    model = model.to(DEVICE, dtype)
    xs = tuple(
        x.to(DEVICE, dtype) if x.is_floating_point() else x.to(DEVICE) for x in xs
    )
    return model, xs


def _params():
    for name in CASES:
        for key, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            marks = ()
            if (name, key) in XFAIL:
                marks = (pytest.mark.xfail(strict=True, reason=XFAIL[name, key]),)
            yield pytest.param(name, dtype, id=f"{name}-{key}", marks=marks)


@pytest.mark.parametrize(("name", "dtype"), list(_params()))
def test_llm_spelling_matches_eager(name, dtype):
    model, inputs = build(name, dtype)
    with torch.no_grad():
        compiled = tt.compile(model, *inputs)
        outputs = compiled(*inputs)
    rtol = F32_RTOL if dtype == torch.float32 else BF16_RTOL
    assert_matches(name, outputs, eager64(model, inputs), rtol)
