"""
A model zoo of ordinary `nn.Module`s, the programs users bring: transformer
blocks, convnets, norms and losses, written the way their reference code writes
them (nanoGPT, Hugging Face LLaMA/BERT/T5/ViT, torchvision ResNet/MobileNet,
ConvNeXt, a diffusion UNet ResBlock), at small sizes, several sizes each.

```python
from tilefuse.testing.zoo import ZOO
model, inputs = ZOO["gpt2_block"].build()
```

Each entry builds a fresh module in eval mode with seeded weights and its
example inputs; nothing here imports tilefuse (the zoo is test data).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

# -- transformers ------------------------------------------------------------


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention: a tril buffer, masked_fill with -inf, softmax."""

    def __init__(self, d: int, heads: int, t: int):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class GPT2Block(nn.Module):
    def __init__(self, d: int, heads: int, t: int, sdpa: bool = False):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = SDPAttention(d, heads) if sdpa else CausalSelfAttention(d, heads, t)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * d, d))  # fmt: skip

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class SDPAttention(nn.Module):
    """Causal attention through `F.scaled_dot_product_attention`."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, c))


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep: int):
    b, h, t, d = x.shape
    if n_rep == 1:
        return x
    x = x[:, :, None, :, :].expand(b, h, n_rep, t, d)
    return x.reshape(b, h * n_rep, t, d)


class LlamaBlock(nn.Module):
    """Hugging Face LLaMA's decoder layer: RMSNorm, rotary embedding, GQA through
    `repeat_kv`, SwiGLU; attention eager (additive causal mask, softmax in f32)
    or through SDPA with `is_causal=True`."""

    def __init__(self, d: int, heads: int, kv_heads: int, hidden: int, t: int,
                 attention: str = "eager"):  # fmt: skip
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.attention = attention
        self.input_layernorm = RMSNorm(d)
        self.q_proj = nn.Linear(d, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d)
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(t).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        mask = torch.full((t, t), torch.finfo(torch.float32).min).triu(1)
        self.register_buffer("causal_mask", mask[None, None])

    def _attend(self, q, k, v):
        if self.attention == "sdpa":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        t = q.shape[2]
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        w = w + self.causal_mask[:, :, :t, :t]
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        return torch.matmul(w, v)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.kv_heads, self.hd).transpose(1, 2)
        cos, sin = self.cos[:t][None, None], self.sin[:t][None, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        y = self._attend(q, repeat_kv(k, rep), repeat_kv(v, rep))
        x = x + self.o_proj(y.transpose(1, 2).reshape(b, t, -1))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class BertLayer(nn.Module):
    """Hugging Face BERT's layer: post-LN, erf GELU, an additive padding mask."""

    def __init__(self, d: int, heads: int, hidden: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.dense = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, hidden)
        self.output = nn.Linear(hidden, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, attention_mask):
        b, t, d = x.shape

        def heads(z):
            return z.view(b, t, self.heads, self.hd).permute(0, 2, 1, 3)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        ext = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd) + ext
        p = nn.functional.softmax(s, dim=-1)
        ctx = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous().view(b, t, d)
        x = self.ln1(self.dense(ctx) + x)
        return self.ln2(self.output(F.gelu(self.intermediate(x))) + x)


class ViT(nn.Module):
    """ViT's stem and one encoder block: patch conv, class token, position
    embedding, pre-LN attention through `nn.MultiheadAttention`-free heads."""

    def __init__(self, image: int, patch: int, d: int, heads: int):
        super().__init__()
        n = (image // patch) ** 2
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        self.norm1 = nn.LayerNorm(d, eps=1e-6)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embed
        b, n, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        a = (q @ k.transpose(-2, -1)) * (c // self.heads) ** -0.5
        y = (a.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class T5Layer(nn.Module):
    """T5's self-attention and feed-forward layers: RMS LayerNorm without mean
    or bias, unscaled attention with a position-bias input, ReLU feed-forward."""

    def __init__(self, d: int, heads: int, hidden: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)
        self.q, self.k = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.v, self.o = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.wi, self.wo = nn.Linear(d, hidden, bias=False), nn.Linear(hidden, d, bias=False)

    def forward(self, x, position_bias):
        b, t, d = x.shape
        h = self.ln1(x)
        q, k, v = (p(h).view(b, t, self.heads, self.hd).transpose(1, 2)
                   for p in (self.q, self.k, self.v))  # fmt: skip
        s = torch.matmul(q, k.transpose(3, 2)) + position_bias
        w = F.softmax(s.float(), dim=-1).type_as(s)
        x = x + self.o(torch.matmul(w, v).transpose(1, 2).reshape(b, t, d))
        return x + self.wo(F.relu(self.wi(self.ln2(x))))


class MixerBlock(nn.Module):
    def __init__(self, tokens: int, d: int, token_hidden: int, channel_hidden: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, token_hidden), nn.GELU(),
                                       nn.Linear(token_hidden, tokens))  # fmt: skip
        self.channel_mlp = nn.Sequential(nn.Linear(d, channel_hidden), nn.GELU(),
                                         nn.Linear(channel_hidden, d))  # fmt: skip

    def forward(self, x):
        x = x + self.token_mlp(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.norm2(x))


class TinyGPT(nn.Module):
    """Token and position embeddings, one block, a final LayerNorm and an LM
    head tied to the token embedding."""

    def __init__(self, vocab: int, d: int, heads: int, t: int):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(t, d)
        self.block = GPT2Block(d, heads, t)
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        pos = torch.arange(0, idx.shape[1], dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        return self.lm_head(self.ln_f(self.block(x)))


class CrossEntropyHead(nn.Module):
    def __init__(self, d: int, classes: int):
        super().__init__()
        self.fc = nn.Linear(d, classes)

    def forward(self, x, target):
        return F.cross_entropy(self.fc(x), target)


class LogSoftmaxGather(nn.Module):
    def forward(self, logits, target):
        logp = F.log_softmax(logits, dim=-1)
        return -logp.gather(1, target[:, None]).mean()


class OneHotLoss(nn.Module):
    def __init__(self, classes: int):
        super().__init__()
        self.classes = classes

    def forward(self, logits, target):
        onehot = F.one_hot(target, self.classes).to(logits.dtype)
        return -(onehot * F.log_softmax(logits, dim=-1)).sum(-1).mean()


class ArgmaxHead(nn.Module):
    def forward(self, x):
        values, index = x.max(dim=-1)
        return values, index, x.argmin(dim=-1)


class LSTMCellUnrolled(nn.Module):
    def __init__(self, d_in: int, d: int, steps: int):
        super().__init__()
        self.cell = nn.LSTMCell(d_in, d)
        self.steps = steps

    def forward(self, x, h, c):
        for i in range(self.steps):
            h, c = self.cell(x[i], (h, c))
        return h, c


# -- convnets ----------------------------------------------------------------


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))  # fmt: skip

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class Bottleneck(nn.Module):
    def __init__(self, cin: int, width: int):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cin, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cin)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        return F.relu(self.bn3(self.conv3(y)) + x)


class InvertedResidual(nn.Module):
    """MobileNetV2's block: expand 1x1, depthwise 3x3, ReLU6, project 1x1."""

    def __init__(self, c: int, expand: int):
        super().__init__()
        h = c * expand
        self.body = nn.Sequential(
            nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False), nn.BatchNorm2d(h), nn.ReLU6(),
            nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))  # fmt: skip

    def forward(self, x):
        return x + self.body(x)


class SqueezeExcite(nn.Module):
    def __init__(self, c: int, r: int):
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(c, c // r, 1), nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.expand(F.silu(self.reduce(s))))


class MBConv(nn.Module):
    """EfficientNet's block: expand, depthwise, SiLU, squeeze-excite, project."""

    def __init__(self, c: int, expand: int, k: int = 3):
        super().__init__()
        h = c * expand
        self.expand = nn.Sequential(nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h),
                                    nn.SiLU())  # fmt: skip
        self.dw = nn.Sequential(nn.Conv2d(h, h, k, 1, k // 2, groups=h, bias=False),
                                nn.BatchNorm2d(h), nn.SiLU())  # fmt: skip
        self.se = SqueezeExcite(h, 4)
        self.project = nn.Sequential(nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        return x + self.project(self.se(self.dw(self.expand(x))))


class ConvNeXtBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.dwconv = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.pwconv1, self.pwconv2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.gamma = nn.Parameter(1e-1 * torch.ones(d))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.pwconv2(F.gelu(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class UNetResBlock(nn.Module):
    """A diffusion UNet's ResBlock: GroupNorm, SiLU, conv, a time embedding
    added per channel, a skip 1x1 conv when the width changes."""

    def __init__(self, cin: int, cout: int, temb: int, groups: int):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(groups, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.temb_proj = nn.Linear(temb, cout)
        self.norm2, self.conv2 = nn.GroupNorm(groups, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb_proj(F.silu(t))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


# -- the registry --------------------------------------------------------------


@dataclass(frozen=True)
class ZooModel:
    """A zoo entry: how to build the module and its example inputs."""

    name: str
    family: str
    make: Callable[[], nn.Module]
    inputs: Callable[[torch.Generator], tuple[Any, ...]]
    tags: frozenset[str] = field(default=frozenset())

    def build(self, seed: int = 0) -> tuple[nn.Module, tuple[Any, ...]]:
        torch.manual_seed(seed)
        model = self.make().eval()
        _randomize_norms(model, seed)
        return model, self.inputs(torch.Generator().manual_seed(seed))


def _randomize_norms(model: nn.Module, seed: int) -> None:
    """Running statistics and norm weights off their defaults (1, 0), so a
    compiler that dropped them would be seen."""
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            norm = isinstance(m, nn.BatchNorm2d | nn.LayerNorm | nn.GroupNorm | RMSNorm)
            if norm and m.weight is not None:
                m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=g))


def _normal(*shape: int) -> Callable[[torch.Generator], tuple[Any, ...]]:
    return lambda g: (torch.randn(*shape, generator=g),)


def _ints(high: int, *shape: int) -> Callable[[torch.Generator], torch.Tensor]:
    return lambda g: torch.randint(0, high, shape, generator=g)


ZOO: dict[str, ZooModel] = {}


def _add(name: str, family: str, make: Callable[[], nn.Module],
         inputs: Callable[[torch.Generator], tuple[Any, ...]], *tags: str) -> None:  # fmt: skip
    ZOO[name] = ZooModel(name, family, make, inputs, frozenset(tags))


def _padding_mask(b: int, t: int) -> Callable[[torch.Generator], torch.Tensor]:
    def mask(g: torch.Generator) -> torch.Tensor:
        lengths = torch.randint(1, t + 1, (b,), generator=g)
        return (torch.arange(t)[None, :] < lengths[:, None]).to(torch.int64)

    return mask


_add("gpt2_block", "gpt2", lambda: GPT2Block(64, 4, 16), _normal(2, 16, 64), "fast")
_add("gpt2_block_odd", "gpt2", lambda: GPT2Block(48, 3, 13), _normal(3, 13, 48))
_add("gpt2_block_sdpa", "gpt2", lambda: GPT2Block(64, 2, 16, sdpa=True), _normal(2, 16, 64))
_add("llama_eager", "llama", lambda: LlamaBlock(64, 4, 2, 160, 16), _normal(2, 16, 64), "fast")
_add("llama_sdpa", "llama", lambda: LlamaBlock(64, 4, 2, 160, 16, "sdpa"), _normal(2, 16, 64))
_add("llama_mha_odd", "llama", lambda: LlamaBlock(96, 3, 3, 200, 11), _normal(1, 11, 96))
_add("bert_layer", "bert", lambda: BertLayer(64, 4, 256),
     lambda g: (torch.randn(2, 16, 64, generator=g), _padding_mask(2, 16)(g)), "fast")  # fmt: skip
_add("bert_layer_odd", "bert", lambda: BertLayer(48, 2, 100),
     lambda g: (torch.randn(3, 9, 48, generator=g), _padding_mask(3, 9)(g)))  # fmt: skip
_add("vit", "vit", lambda: ViT(32, 8, 64, 4), _normal(2, 3, 32, 32), "fast")
_add("vit_odd", "vit", lambda: ViT(28, 7, 48, 3), _normal(1, 3, 28, 28))
_add("t5_layer", "t5", lambda: T5Layer(64, 4, 128),
     lambda g: (torch.randn(2, 12, 64, generator=g), torch.randn(1, 4, 12, 12, generator=g)))  # fmt: skip
_add("mixer", "mixer", lambda: MixerBlock(16, 32, 64, 128), _normal(2, 16, 32), "fast")
_add("mixer_odd", "mixer", lambda: MixerBlock(9, 24, 20, 50), _normal(3, 9, 24))
_add("tiny_gpt", "gpt2", lambda: TinyGPT(97, 32, 2, 8), lambda g: (_ints(97, 2, 8)(g),), "fast")
_add("cross_entropy", "loss", lambda: CrossEntropyHead(32, 10),
     lambda g: (torch.randn(8, 32, generator=g), _ints(10, 8)(g)), "fast")  # fmt: skip
_add("log_softmax_gather", "loss", LogSoftmaxGather,
     lambda g: (torch.randn(6, 17, generator=g), _ints(17, 6)(g)))  # fmt: skip
_add("one_hot_loss", "loss", lambda: OneHotLoss(11),
     lambda g: (torch.randn(5, 11, generator=g), _ints(11, 5)(g)))  # fmt: skip
_add("argmax_head", "loss", ArgmaxHead, _normal(7, 19))
_add("lstm_cell", "lstm", lambda: LSTMCellUnrolled(16, 32, 3),
     lambda g: (torch.randn(3, 4, 16, generator=g), torch.randn(4, 32, generator=g),
                torch.randn(4, 32, generator=g)), "fast")  # fmt: skip
_add("resnet_basic", "resnet", lambda: BasicBlock(16, 16), _normal(2, 16, 12, 12), "fast")
_add("resnet_basic_down", "resnet", lambda: BasicBlock(8, 16, 2), _normal(2, 8, 11, 11))
_add("resnet_bottleneck", "resnet", lambda: Bottleneck(32, 8), _normal(1, 32, 10, 10))
_add("mobilenet_v2", "mobilenet", lambda: InvertedResidual(8, 4), _normal(2, 8, 10, 10), "fast")
_add("efficientnet_mbconv", "efficientnet", lambda: MBConv(8, 4), _normal(2, 8, 9, 9))
_add("efficientnet_mbconv5", "efficientnet", lambda: MBConv(8, 3, 5), _normal(1, 8, 7, 7))
_add("convnext", "convnext", lambda: ConvNeXtBlock(16), _normal(2, 16, 9, 9), "fast")
_add("unet_resblock", "unet", lambda: UNetResBlock(16, 32, 24, 4),
     lambda g: (torch.randn(2, 16, 8, 8, generator=g), torch.randn(2, 24, generator=g)),
     "fast")  # fmt: skip
_add("unet_resblock_same", "unet", lambda: UNetResBlock(16, 16, 8, 8),
     lambda g: (torch.randn(1, 16, 6, 6, generator=g), torch.randn(1, 8, generator=g)))  # fmt: skip
_add("layernorm", "norm", lambda: nn.LayerNorm(40), _normal(3, 7, 40))
_add("groupnorm", "norm", lambda: nn.GroupNorm(4, 12), _normal(2, 12, 5, 5))
_add("batchnorm", "norm", lambda: nn.BatchNorm2d(6), _normal(2, 6, 4, 4))
_add("rmsnorm", "norm", lambda: RMSNorm(40), _normal(3, 40))
_add("pow_cube", "elementwise", lambda: _Lambda(lambda x: x.pow(2) + x**3 - x.pow(-2)),
     _normal(4, 9))  # fmt: skip
_add("all_any", "elementwise", lambda: _Lambda(lambda x: ((x > 0).all(-1), (x > 1).any(-1))),
     _normal(4, 9))  # fmt: skip


BENCH: dict[str, ZooModel] = {
    name: ZooModel(name, family, make, inputs, frozenset({"bench"}))
    for name, family, make, inputs in (
        ("gpt2_1024", "gpt2", lambda: GPT2Block(1024, 16, 1024), _normal(8, 1024, 1024)),
        ("llama_eager_1024", "llama", lambda: LlamaBlock(1024, 16, 4, 2816, 1024),
         _normal(8, 1024, 1024)),
        ("bert_base", "bert", lambda: BertLayer(768, 12, 3072),
         lambda g: (torch.randn(16, 512, 768, generator=g),
                    torch.ones(16, 512, dtype=torch.int64))),
        ("vit_b16", "vit", lambda: ViT(224, 16, 768, 12), _normal(64, 3, 224, 224)),
    )
}  # fmt: skip
"""Zoo models at the sizes issue 16's benchmark runs them (in bf16:
`model.to(torch.bfloat16)`, float inputs too): GPT-2 width 1024 B8 T1024, the
LLaMA block dim 1024 (16 heads, 4 KV heads, SwiGLU 2816) B8 T1024, BERT-base
B16 T512, ViT-B/16 B64 (197 tokens). Too big for the interpreter; the sm_90
compile check (`tests/test_gpu_compile.py`) compiles every kernel of them."""


class _Lambda(nn.Module):
    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)
