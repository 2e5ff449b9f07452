"""Adversarial tests of the torch front-end and the compiler on encoder, vision and
convolution spellings the zoo (`tilefuse.testing.zoo`) does not have: DistilBERT's
`masked_fill(mask == 0, finfo.min)`, RoBERTa's -10000 extended mask and cumsum
position ids, DeiT's class + distillation tokens, Swin's window attention (window
partition, a relative position bias gathered through an index buffer, `torch.roll`
and its shifted-window mask, patch merging by strided slices), CLIP's quick GELU and
causal mask built in the forward, Whisper's convolutional front, and the convolution
zoo's missing spellings: grouped, depthwise-separable, dilated and transposed
convolutions, `F.interpolate`, PixelShuffle, pools, DenseNet's concat, GroupNorm,
InstanceNorm, LayerNorm over NCHW channels, ConvNeXt-V2's GRN, MobileNetV3's
hard-sigmoid squeeze-excite and a row of activations.

Each case is a small `nn.Module` compiled by `tilefuse.torch.compile`, run (Triton's
interpreter without a GPU) and compared with torch eager in float64
(`tests/eager.py`): f32 within 5e-5 of each output's largest magnitude, bf16
(`model.to(torch.bfloat16)`, bf16 inputs) within 2e-2. Cases tilefuse currently gets
wrong or refuses are `xfail(strict=True)` with what fails."""

from __future__ import annotations

import math
import re

import pytest

pytest.importorskip("torch_mlir")

import torch
import torch.nn.functional as F
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import Fn, assert_matches, eager64
from tilefuse.ir.diagnostics import CompileError
from tilefuse.torch import backend
from tilefuse.torch.decompose import MAX_SCAN

# torch's own warning for `padding="same"` with an even kernel (the case means it),
# an error under CI's `pytest -W error` inside torch.export
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")

RTOL = {torch.float32: 5e-5, torch.bfloat16: 2e-2}


# -- encoders ------------------------------------------------------------------


class DistilBertAttention(nn.Module):
    """DistilBERT's MultiHeadSelfAttention: q scaled before the product, the padding
    mask `(mask == 0).view(b, 1, 1, t).expand_as(scores)` filled with `finfo.min`
    through `torch.tensor`."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.q_lin, self.k_lin = nn.Linear(d, d), nn.Linear(d, d)
        self.v_lin, self.out_lin = nn.Linear(d, d), nn.Linear(d, d)
        self.sa_layer_norm = nn.LayerNorm(d, eps=1e-12)

    def forward(self, x, mask):
        b, t, d = x.shape

        def shape(z):
            return z.view(b, -1, self.heads, self.hd).transpose(1, 2)

        q = shape(self.q_lin(x)) / math.sqrt(self.hd)
        k, v = shape(self.k_lin(x)), shape(self.v_lin(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        m = (mask == 0).view(b, 1, 1, t).expand_as(scores)
        scores = scores.masked_fill(m, torch.tensor(torch.finfo(scores.dtype).min))
        w = nn.functional.softmax(scores, dim=-1)
        ctx = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, -1, d)
        return self.sa_layer_norm(self.out_lin(ctx) + x)


class RobertaEmbeddingsAttention(nn.Module):
    """RoBERTa: position ids from the input ids (`cumsum` of the non-padding mask,
    offset by the padding index), word + position + token-type embeddings, LayerNorm,
    and attention with the old extended mask `(1.0 - mask[:, None, None, :]) * -10000.0`."""

    def __init__(self, vocab: int, d: int, heads: int, t: int, pad: int = 1):
        super().__init__()
        self.pad, self.heads, self.hd = pad, heads, d // heads
        self.word = nn.Embedding(vocab, d, padding_idx=pad)
        self.pos = nn.Embedding(t + pad + 1, d, padding_idx=pad)
        self.tok = nn.Embedding(1, d)
        self.ln = nn.LayerNorm(d, eps=1e-5)
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, ids):
        b, t = ids.shape
        m = ids.ne(self.pad).int()
        pos = (torch.cumsum(m, dim=1).type_as(m) * m).long() + self.pad
        x = self.word(ids) + self.pos(pos) + self.tok(torch.zeros_like(ids))
        x = self.ln(x)
        q, k, v = (z.view(b, t, self.heads, self.hd).permute(0, 2, 1, 3)
                   for z in self.qkv(x).chunk(3, dim=-1))  # fmt: skip
        ext = (1.0 - m[:, None, None, :].to(x.dtype)) * -10000.0
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd) + ext
        return torch.matmul(s.softmax(-1), v).permute(0, 2, 1, 3).reshape(b, t, -1)


class DeiT(nn.Module):
    """DeiT's distilled ViT: patch conv, class and distillation tokens `cat` from
    parameters expanded over the batch, position embedding, one attention through
    `F.scaled_dot_product_attention`, and the two heads averaged."""

    def __init__(self, image: int, patch: int, d: int, heads: int, classes: int):
        super().__init__()
        n = (image // patch) ** 2
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.dist_token = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + 2, d) * 0.02)
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.head, self.head_dist = nn.Linear(d, classes), nn.Linear(d, classes)
        self.heads = heads

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        b = x.shape[0]
        x = torch.cat((self.cls_token.expand(b, -1, -1), self.dist_token.expand(b, -1, -1), x),
                      dim=1)  # fmt: skip
        x = x + self.pos_embed
        _, n, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c)
        x = self.norm2(x + self.proj(y))
        return (self.head(x[:, 0]) + self.head_dist(x[:, 1])) / 2



def window_partition(x, w: int):
    b, h, wd, c = x.shape
    x = x.view(b, h // w, w, wd // w, w, c)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, w, w, c)


def window_reverse(windows, w: int, h: int, wd: int):
    b = int(windows.shape[0] / (h * wd / w / w))
    x = windows.view(b, h // w, wd // w, w, w, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(b, h, wd, -1)


def _roll_by_cat(x, shifts, dims):
    """`torch.roll` spelled as a `cat` of two slices per dim."""
    for s, d in zip(shifts, dims, strict=True):
        n = x.shape[d]
        s %= n
        x = torch.cat((x.narrow(d, n - s, s), x.narrow(d, 0, n - s)), dim=d)
    return x


class SwinBlock(nn.Module):
    """Swin's block: window partition by view/permute/contiguous/view, a relative
    position bias gathered from a parameter table through an index buffer, and when
    shifted, `torch.roll` with the shifted-window attention mask buffer."""

    def __init__(self, d: int, heads: int, res: int, window: int, shift: int,
                 roll_by_cat: bool = False):  # fmt: skip
        super().__init__()
        self.d, self.heads, self.res, self.w, self.shift = d, heads, res, window, shift
        self.roll = _roll_by_cat if roll_by_cat else torch.roll
        self.scale = (d // heads) ** -0.5
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window),
                                            indexing="ij")).flatten(1)  # fmt: skip
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += window - 1
        rel[:, :, 1] += window - 1
        rel[:, :, 0] *= 2 * window - 1
        self.register_buffer("relative_position_index", rel.sum(-1))
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        mask = None
        if shift:
            img = torch.zeros(1, res, res, 1)
            cnt = 0
            for hs in (slice(0, -window), slice(-window, -shift), slice(-shift, None)):
                for ws in (slice(0, -window), slice(-window, -shift), slice(-shift, None)):
                    img[:, hs, ws, :] = cnt
                    cnt += 1
            mw = window_partition(img, window).view(-1, window * window)
            mask = mw.unsqueeze(1) - mw.unsqueeze(2)
            mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        self.register_buffer("attn_mask", mask)

    def forward(self, x):
        b, _, c = x.shape
        h = wd = self.res
        shortcut = x
        x = self.norm1(x).view(b, h, wd, c)
        if self.shift:
            x = self.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        xw = window_partition(x, self.w).view(-1, self.w * self.w, c)
        bw, n, _ = xw.shape
        qkv = self.qkv(xw).reshape(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        a = (q * self.scale) @ k.transpose(-2, -1)
        bias = self.table[self.relative_position_index.view(-1)].view(n, n, -1)
        a = a + bias.permute(2, 0, 1).contiguous().unsqueeze(0)
        if self.attn_mask is not None:
            nw = self.attn_mask.shape[0]
            a = a.view(bw // nw, nw, self.heads, n, n) + self.attn_mask.unsqueeze(1).unsqueeze(0)
            a = a.view(-1, self.heads, n, n)
        y = (a.softmax(dim=-1) @ v).transpose(1, 2).reshape(bw, n, c)
        y = window_reverse(self.proj(y).view(-1, self.w, self.w, c), self.w, h, wd)
        if self.shift:
            y = self.roll(y, shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + y.view(b, h * wd, c)
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class PatchMerging(nn.Module):
    """Swin's patch merging: strided slices `x[:, 0::2, 0::2]`, cat, LayerNorm, Linear."""

    def __init__(self, res: int, d: int):
        super().__init__()
        self.res = res
        self.norm = nn.LayerNorm(4 * d)
        self.reduction = nn.Linear(4 * d, 2 * d, bias=False)

    def forward(self, x):
        b, _, c = x.shape
        x = x.view(b, self.res, self.res, c)
        x0, x1 = x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :]
        x2, x3 = x[:, 0::2, 1::2, :], x[:, 1::2, 1::2, :]
        x = torch.cat([x0, x1, x2, x3], -1).view(b, -1, 4 * c)
        return self.reduction(self.norm(x))


class CLIPLayer(nn.Module):
    """CLIP's text encoder layer: quick GELU `x * sigmoid(1.702 x)` and the causal mask
    built in the forward, `torch.full(..., -inf).triu(1)`."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        mask = torch.full((t, t), float("-inf"), dtype=x.dtype).triu(1)[None, None]
        h = self.ln1(x)
        q, k, v = (p(h).view(b, t, self.heads, self.hd).transpose(1, 2)
                   for p in (self.q, self.k, self.v))  # fmt: skip
        s = (q * self.hd**-0.5) @ k.transpose(-1, -2) + mask
        x = x + self.o((s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d))
        h = self.fc1(self.ln2(x))
        return x + self.fc2(h * torch.sigmoid(1.702 * h))


def sinusoids(length: int, channels: int) -> torch.Tensor:
    inc = math.log(10000) / (channels // 2 - 1)
    inv = torch.exp(-inc * torch.arange(channels // 2))
    t = torch.arange(length)[:, None] * inv[None, :]
    return torch.cat([torch.sin(t), torch.cos(t)], dim=1)


class WhisperFront(nn.Module):
    """Whisper's encoder front: Conv1d + GELU, Conv1d stride 2 + GELU, permute, a
    sinusoidal position buffer added."""

    def __init__(self, mels: int, d: int, frames: int):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(frames // 2, d))
        self.ln = nn.LayerNorm(d)

    def forward(self, x):
        x = F.gelu(self.conv1(x))
        x = F.gelu(self.conv2(x)).permute(0, 2, 1)
        return self.ln(x + self.positional_embedding)


# -- convolutions --------------------------------------------------------------


class ResNeXtBlock(nn.Module):
    """ResNeXt's bottleneck: 1x1, grouped 3x3 (groups=4), 1x1, BatchNorm, ReLU."""

    def __init__(self, c: int, width: int, groups: int = 4):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
            nn.Conv2d(width, width, 3, 1, 1, groups=groups, bias=False), nn.BatchNorm2d(width),
            nn.ReLU(), nn.Conv2d(width, c, 1, bias=False), nn.BatchNorm2d(c))  # fmt: skip

    def forward(self, x):
        return F.relu(x + self.body(x))


class GroupedConv(nn.Module):
    def __init__(self, cin: int, cout: int, groups: int, stride: int = 1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride, 1, groups=groups)

    def forward(self, x):
        return self.conv(x)


class DepthwiseSeparable(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.dw = nn.Conv2d(cin, cin, 3, padding=1, groups=cin)
        self.pw = nn.Conv2d(cin, cout, 1)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return F.relu6(self.bn(self.pw(F.relu6(self.dw(x)))))


class Dilated(nn.Module):
    """DeepLab's atrous convolutions: dilation 2 and 3, same size, summed."""

    def __init__(self, c: int):
        super().__init__()
        self.a = nn.Conv2d(c, c, 3, padding=2, dilation=2)
        self.b = nn.Conv2d(c, c, 3, padding=3, dilation=3, bias=False)

    def forward(self, x):
        return self.a(x) + self.b(x)


class ConvT(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, stride: int, padding: int,
                 output_padding: int = 0, groups: int = 1):  # fmt: skip
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, k, stride, padding, output_padding,
                                     groups=groups)  # fmt: skip

    def forward(self, x):
        return self.up(x)


class Interp(nn.Module):
    def __init__(self, c: int, mode: str, align_corners: bool | None = None,
                 scale: float | None = 2, size: tuple[int, int] | None = None):  # fmt: skip
        super().__init__()
        self.conv = nn.Conv2d(c, c, 1)
        self.mode, self.align, self.scale, self.size = mode, align_corners, scale, size

    def forward(self, x):
        y = F.interpolate(self.conv(x), size=self.size, scale_factor=self.scale,
                          mode=self.mode, align_corners=self.align)  # fmt: skip
        return y


class PixelShuffleUp(nn.Module):
    def __init__(self, c: int, r: int):
        super().__init__()
        self.conv = nn.Conv2d(c, c * r * r, 3, padding=1)
        self.ps = nn.PixelShuffle(r)

    def forward(self, x):
        return F.relu(self.ps(self.conv(x)))


class Pool(nn.Module):
    def __init__(self, pool: nn.Module):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1)
        self.pool = pool

    def forward(self, x):
        return self.pool(self.conv(x))


class DenseLayer(nn.Module):
    """DenseNet's layer: BN-ReLU-1x1-BN-ReLU-3x3, its features concatenated to the input."""

    def __init__(self, c: int, growth: int):
        super().__init__()
        self.norm1, self.conv1 = nn.BatchNorm2d(c), nn.Conv2d(c, 4 * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(4 * growth)
        self.conv2 = nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False)

    def forward(self, x):
        feats = [x]
        for _ in range(2):
            cat = torch.cat(feats, 1)[:, : self.norm1.num_features]
            y = self.conv1(F.relu(self.norm1(cat)))
            y = self.conv2(F.relu(self.norm2(y)))
            feats.append(y)
        return torch.cat(feats, 1)


class GroupNormSiLUConv(nn.Module):
    def __init__(self, c: int, groups: int, affine: bool = True):
        super().__init__()
        self.norm = nn.GroupNorm(groups, c, eps=1e-6, affine=affine)
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return self.conv(F.silu(self.norm(x)))


class InstanceNormBlock(nn.Module):
    """CycleGAN's conv + InstanceNorm + ReLU, the conv padded as `padding_mode` says."""

    def __init__(self, c: int, affine: bool, padding_mode: str = "zeros"):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, padding_mode=padding_mode)
        self.norm = nn.InstanceNorm2d(c, affine=affine)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


class ChannelsFirstLayerNorm(nn.Module):
    """ConvNeXt's LayerNorm over the channels of NCHW: by hand (mean, pow, sqrt)
    or through `F.layer_norm` between permutes."""

    def __init__(self, c: int, by_hand: bool, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(c))
        self.bias = nn.Parameter(0.1 * torch.randn(c))
        self.by_hand, self.eps = by_hand, eps

    def forward(self, x):
        if self.by_hand:
            u = x.mean(1, keepdim=True)
            s = (x - u).pow(2).mean(1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.eps)
            return self.weight[:, None, None] * x + self.bias[:, None, None]
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class GRN(nn.Module):
    """ConvNeXt-V2's global response normalisation (NHWC)."""

    def __init__(self, d: int):
        super().__init__()
        self.gamma = nn.Parameter(0.1 * torch.randn(1, 1, 1, d))
        self.beta = nn.Parameter(0.1 * torch.randn(1, 1, 1, d))

    def forward(self, x):
        gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * nx) + self.beta + x


class ConvNeXtV2Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.dwconv = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.pwconv1, self.pwconv2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.grn = GRN(4 * d)

    def forward(self, x):
        y = self.norm(self.dwconv(x).permute(0, 2, 3, 1))
        y = self.pwconv2(self.grn(F.gelu(self.pwconv1(y))))
        return x + y.permute(0, 3, 1, 2)


class MobileNetV3Block(nn.Module):
    """MobileNetV3's inverted residual: Hardswish, squeeze-excite with ReLU and
    hard-sigmoid gates."""

    def __init__(self, c: int, h: int):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, h, 1, bias=False), nn.BatchNorm2d(h),
                                    nn.Hardswish())  # fmt: skip
        self.dw = nn.Sequential(nn.Conv2d(h, h, 5, 1, 2, groups=h, bias=False),
                                nn.BatchNorm2d(h), nn.Hardswish())  # fmt: skip
        self.fc1, self.fc2 = nn.Conv2d(h, h // 4, 1), nn.Conv2d(h // 4, h, 1)
        self.project = nn.Sequential(nn.Conv2d(h, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        y = self.dw(self.expand(x))
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))
        return x + self.project(y * s)


class BatchNormEval(nn.Module):
    """BatchNorm2d and BatchNorm1d in eval, off-default running stats (set by `_stats`)."""

    def __init__(self, c: int):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c, eps=1e-3)
        self.fc = nn.Linear(c, c)
        self.bn1d = nn.BatchNorm1d(c)

    def forward(self, x):
        y = self.bn(self.conv(x))
        return y, self.bn1d(self.fc(y.mean((2, 3))))


class Activations(nn.Module):
    """A row of activations on one conv's output (scaled so each branch is reached),
    each an output."""

    def __init__(self, c: int, scale: float):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.prelu = nn.PReLU(c)
        self.scale = scale

    def forward(self, x):
        y = self.conv(x) * self.scale
        return (F.hardswish(y), F.mish(y), F.elu(y, alpha=0.7), F.leaky_relu(y, 0.2),
                y.clamp(-1.5, 2.0) + torch.clamp(y, min=0.25),
                F.hardtanh(y, -2.0, 2.0) + F.selu(y) + F.celu(y, 0.5),
                F.softplus(y, beta=2.0, threshold=5.0), self.prelu(y),
                F.gelu(y, approximate="tanh"), F.logsigmoid(y))  # fmt: skip


class MHAKeyPadding(nn.Module):
    """`nn.MultiheadAttention` (batch_first) with a boolean key padding mask, as DETR
    and CLIP's ViT call it."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln = nn.LayerNorm(d)

    def forward(self, x, mask):
        h = self.ln(x)
        y, _ = self.attn(h, h, h, key_padding_mask=mask == 0, need_weights=False)
        return x + y


class TorchEncoderLayer(nn.Module):
    """`nn.TransformerEncoderLayer` (batch_first, norm_first, GELU) in eval."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, activation="gelu",
                                                batch_first=True, norm_first=True)  # fmt: skip

    def forward(self, x):
        return self.layer(x)


class SDPAMasked(nn.Module):
    """SDPA with a boolean padding mask (b, 1, 1, t) or a float one, heads by einsum."""

    def __init__(self, d: int, heads: int, boolean: bool):
        super().__init__()
        self.qkv, self.heads, self.boolean = nn.Linear(d, 3 * d), heads, boolean

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        if self.boolean:
            m = mask[:, None, None, :].bool()
        else:
            m = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        return torch.einsum("bhtd->bthd", y).reshape(b, t, d)


class EinsumAttention(nn.Module):
    """Attention spelled with `torch.einsum` (as timm's and einops-style code)."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.qkv, self.out, self.heads = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d), heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, -1).unbind(2)
        s = torch.einsum("bihd,bjhd->bhij", q, k) * (d // self.heads) ** -0.5
        y = torch.einsum("bhij,bjhd->bihd", s.softmax(-1), v)
        return self.out(y.reshape(b, t, d))


class SwinV2CosineAttention(nn.Module):
    """Swin-V2's cosine attention: normalised q and k, a clamped learned log scale, and
    a continuous position bias from an MLP on a coordinate buffer (`16 * sigmoid`)."""

    def __init__(self, d: int, heads: int, window: int):
        super().__init__()
        self.heads = heads
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(heads, 1, 1)))
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, heads, bias=False))
        r = torch.arange(-(window - 1), window, dtype=torch.float32)
        table = torch.stack(torch.meshgrid(r, r, indexing="ij")).permute(1, 2, 0)[None]
        table = table / (window - 1) * 8
        table = torch.sign(table) * torch.log2(table.abs() + 1.0) / math.log2(8)
        self.register_buffer("relative_coords_table", table)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window),
                                            indexing="ij")).flatten(1)  # fmt: skip
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("relative_position_index", rel[..., 0] * (2 * window - 1) + rel[..., 1])
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        a = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        scale = torch.clamp(self.logit_scale, max=math.log(1.0 / 0.01)).exp()
        a = a * scale
        table = self.cpb_mlp(self.relative_coords_table).view(-1, self.heads)
        bias = table[self.relative_position_index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        a = a + 16 * torch.sigmoid(bias).unsqueeze(0)
        return self.proj((a.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c))


class CLIPHead(nn.Module):
    """CLIP's similarity head: L2-normalised embeddings (`x / x.norm(...)` and
    `F.normalize`), `logit_scale.exp()`, image @ text.t()."""

    def __init__(self, d: int):
        super().__init__()
        self.visual, self.text = nn.Linear(d, d, bias=False), nn.Linear(d, d, bias=False)
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))

    def forward(self, img, txt):
        i = self.visual(img)
        i = i / i.norm(dim=-1, keepdim=True)
        t = F.normalize(self.text(txt), dim=-1)
        logits = self.logit_scale.exp() * i @ t.t()
        return logits, logits.t()


class ChannelShuffle(nn.Module):
    """ShuffleNetV2's unit: `chunk` in two, a branch, cat and channel shuffle."""

    def __init__(self, c: int):
        super().__init__()
        h = c // 2
        self.branch = nn.Sequential(
            nn.Conv2d(h, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU(),
            nn.Conv2d(h, h, 3, 1, 1, groups=h, bias=False), nn.BatchNorm2d(h),
            nn.Conv2d(h, h, 1, bias=False), nn.BatchNorm2d(h), nn.ReLU())  # fmt: skip

    def forward(self, x):
        x1, x2 = x.chunk(2, dim=1)
        out = torch.cat((x1, self.branch(x2)), dim=1)
        b, c, h, w = out.shape
        return out.view(b, 2, c // 2, h, w).transpose(1, 2).contiguous().view(b, c, h, w)


class ConvSamePadding(nn.Module):
    """`padding="same"` with an even kernel (torch pads asymmetrically) and TF-style
    'same' padding by `F.pad` before a strided conv (EfficientNet ports)."""

    def __init__(self, c: int):
        super().__init__()
        self.a = nn.Conv2d(c, c, 4, padding="same")
        self.b = nn.Conv2d(c, c, 3, stride=2)

    def forward(self, x):
        y = self.a(x)
        ih = y.shape[-1]
        pad = max((math.ceil(ih / 2) - 1) * 2 + 3 - ih, 0)
        return self.b(F.pad(y, [pad // 2, pad - pad // 2, pad // 2, pad - pad // 2]))


class Conv1dBlock(nn.Module):
    """A Conformer convolution module: pointwise Conv1d + GLU, depthwise Conv1d,
    BatchNorm1d, SiLU, pointwise Conv1d."""

    def __init__(self, d: int, k: int = 5):
        super().__init__()
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)

    def forward(self, x):
        y = F.glu(self.pw1(x.transpose(1, 2)), dim=1)
        y = self.pw2(F.silu(self.bn(self.dw(y))))
        return x + y.transpose(1, 2)


class Conv3dStem(nn.Module):
    def __init__(self, cin: int, cout: int):
        super().__init__()
        self.conv = nn.Conv3d(cin, cout, 3, stride=(1, 2, 2), padding=1)

    def forward(self, x):
        return F.relu(self.conv(x))


class Unfold(nn.Module):
    """Patches by `F.unfold` (im2col) and a Linear, as T2T-ViT and some patch embeds."""

    def __init__(self, c: int, d: int):
        super().__init__()
        self.proj = nn.Linear(c * 9, d)

    def forward(self, x):
        return self.proj(F.unfold(x, 3, padding=1, stride=2).transpose(1, 2))


class HardSigmoidByHand(nn.Module):
    """MobileNetV3's hard-sigmoid/swish spelled by hand (`relu6(x + 3) / 6`) and
    LayerScale + an eval-mode DropPath (identity) on the residual."""

    def __init__(self, c: int):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)
        self.gamma = nn.Parameter(0.5 * torch.ones(c, 1, 1))
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        y = self.conv(x)
        y = y * F.relu6(y + 3.0) / 6.0
        s = F.relu6(y.mean((2, 3), keepdim=True) + 3.0) / 6.0
        return x + self.drop(self.gamma * (y * s))


class PosEmbedInterp(nn.Module):
    """ViT at another resolution: the patch-grid position embedding resized in the
    forward by bicubic `F.interpolate` (timm's `resample_abs_pos_embed`)."""

    def __init__(self, d: int, grid: int, new_grid: int, mode: str):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, grid * grid, d) * 0.02)
        self.grid, self.new, self.mode = grid, new_grid, mode

    def forward(self, x):
        d = x.shape[-1]
        p = self.pos.reshape(1, self.grid, self.grid, d).permute(0, 3, 1, 2)
        p = F.interpolate(p, size=(self.new, self.new), mode=self.mode, align_corners=False)
        return x + p.permute(0, 2, 3, 1).reshape(1, -1, d)


class MaxPoolCeil(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        y = self.conv(x)
        return (F.max_pool2d(y, 3, 2, ceil_mode=True),
                F.avg_pool2d(y, 3, 2, ceil_mode=True, count_include_pad=False))



# -- the cases -------------------------------------------------------------------


def _stats(model: nn.Module, seed: int) -> nn.Module:
    """Running statistics and norm weights off their defaults (as the zoo does)."""
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d | nn.BatchNorm1d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.3)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) * 2 + 0.2)
            norm = nn.BatchNorm2d | nn.BatchNorm1d | nn.LayerNorm | nn.GroupNorm | nn.InstanceNorm2d
            if isinstance(m, norm) and getattr(m, "weight", None) is not None:
                m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=g))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=g))
    return model


def _padding_mask(g: torch.Generator, b: int, t: int) -> torch.Tensor:
    lengths = torch.randint(1, t + 1, (b,), generator=g)
    lengths[0] = t - 3  # at least one row padded
    return (torch.arange(t)[None, :] < lengths[:, None]).to(torch.int64)


def _ids(g: torch.Generator, vocab: int, b: int, t: int, pad: int = 1) -> torch.Tensor:
    ids = torch.randint(2, vocab, (b, t), generator=g)
    ids[0, -3:] = pad
    return ids


def _n(*shape):
    return lambda g: (torch.randn(*shape, generator=g),)


CASES = {
    # encoders
    "distilbert_maskfill": (lambda: DistilBertAttention(32, 4),
                            lambda g: (torch.randn(2, 12, 32, generator=g), _padding_mask(g, 2, 12))),
    "roberta_cumsum_ext_mask": (lambda: RobertaEmbeddingsAttention(50, 32, 2, 10),
                                lambda g: (_ids(g, 50, 2, 10),)),
    "deit_dist_token": (lambda: DeiT(16, 4, 32, 2, 10), _n(2, 3, 16, 16)),
    "swin_window": (lambda: SwinBlock(32, 2, 8, 4, 0), _n(1, 64, 32)),
    "swin_shifted_window": (lambda: SwinBlock(32, 2, 8, 4, 2), _n(1, 64, 32)),
    "swin_shifted_window_roll_by_cat": (lambda: SwinBlock(32, 2, 8, 4, 2, True), _n(1, 64, 32)),
    "roll_minimal": (lambda: Fn(lambda x: torch.roll(2 * x, -2, 1)), _n(1, 8, 4)),
    "swin_patch_merging": (lambda: PatchMerging(8, 16), _n(2, 64, 16)),
    "clip_causal_quick_gelu": (lambda: CLIPLayer(32, 2), _n(2, 8, 32)),
    "whisper_conv_front": (lambda: WhisperFront(16, 32, 16), _n(2, 16, 16)),
    # convolutions
    "resnext_grouped": (lambda: ResNeXtBlock(16, 16, 4), _n(1, 16, 6, 6)),
    "grouped_conv_stride2": (lambda: GroupedConv(8, 16, 4, 2), _n(1, 8, 9, 9)),
    "depthwise_channel_multiplier": (lambda: GroupedConv(4, 8, 4), _n(1, 4, 6, 6)),
    "conv1d_pointwise": (lambda: nn.Conv1d(4, 6, 1), _n(1, 4, 10)),
    "conv1d_depthwise": (lambda: nn.Conv1d(4, 4, 3, padding=1, groups=4), _n(1, 4, 10)),
    "cumsum_minimal": (lambda: Fn(lambda x: torch.cumsum(x, -1)), _n(2, 10)),
    "int_abs_minimal": (lambda: Fn(lambda x: (torch.arange(6) - 2).abs() * x), _n(2, 6)),
    "depthwise_separable": (lambda: DepthwiseSeparable(8, 16), _n(1, 8, 7, 7)),
    "dilated": (lambda: Dilated(8), _n(1, 8, 10, 10)),
    "conv_transpose_s2k4": (lambda: ConvT(4, 4, 4, 2, 1), _n(1, 4, 4, 4)),
    "conv_transpose_s2k3_outpad": (lambda: ConvT(4, 4, 3, 2, 1, 1), _n(1, 4, 5, 5)),
    "conv_transpose_s2k2_groups": (lambda: ConvT(8, 8, 2, 2, 0, 0, 2), _n(1, 8, 5, 5)),
    "interp_nearest_x2": (lambda: Interp(8, "nearest"), _n(1, 8, 6, 6)),
    "interp_nearest_size": (lambda: Interp(8, "nearest", scale=None, size=(9, 7)), _n(1, 8, 6, 5)),
    "interp_bilinear": (lambda: Interp(8, "bilinear", False), _n(1, 8, 6, 6)),
    "interp_bilinear_align": (lambda: Interp(8, "bilinear", True), _n(1, 8, 6, 6)),
    "pixel_shuffle": (lambda: PixelShuffleUp(4, 2), _n(1, 4, 6, 6)),
    "maxpool_3s2p1": (lambda: Pool(nn.MaxPool2d(3, 2, 1)), _n(2, 8, 9, 9)),
    "avgpool_2": (lambda: Pool(nn.AvgPool2d(2)), _n(2, 8, 8, 8)),
    "avgpool_3s2p1_no_pad_count": (lambda: Pool(nn.AvgPool2d(3, 2, 1, count_include_pad=False)),
                                   _n(1, 8, 9, 9)),
    "adaptive_avgpool_1": (lambda: Pool(nn.AdaptiveAvgPool2d((1, 1))), _n(2, 8, 7, 7)),
    "adaptive_avgpool_2": (lambda: Pool(nn.AdaptiveAvgPool2d((2, 2))), _n(2, 8, 8, 8)),
    "adaptive_avgpool_2_uneven": (lambda: Pool(nn.AdaptiveAvgPool2d((2, 2))), _n(1, 8, 7, 7)),
    "adaptive_maxpool_1": (lambda: Pool(nn.AdaptiveMaxPool2d(1)), _n(2, 8, 7, 7)),
    "densenet_concat": (lambda: DenseLayer(8, 4), _n(1, 8, 6, 6)),
    "groupnorm_silu_conv": (lambda: GroupNormSiLUConv(16, 4), _n(2, 16, 8, 8)),
    "groupnorm_1_group_no_affine": (lambda: GroupNormSiLUConv(8, 1, False), _n(2, 8, 6, 6)),
    "instancenorm": (lambda: InstanceNormBlock(8, False), _n(2, 8, 8, 8)),
    "conv_reflect_pad": (lambda: InstanceNormBlock(8, False, "reflect"), _n(2, 8, 8, 8)),
    "conv_circular_pad": (lambda: InstanceNormBlock(8, False, "circular"), _n(2, 8, 8, 8)),
    "conv_replicate_pad": (lambda: InstanceNormBlock(8, True, "replicate"), _n(2, 8, 8, 8)),
    "instancenorm_affine": (lambda: InstanceNormBlock(8, True), _n(2, 8, 8, 8)),
    "layernorm_nchw_by_hand": (lambda: ChannelsFirstLayerNorm(16, True), _n(2, 16, 6, 6)),
    "layernorm_nchw_permute": (lambda: ChannelsFirstLayerNorm(16, False), _n(2, 16, 6, 6)),
    "convnextv2_grn": (lambda: ConvNeXtV2Block(8), _n(2, 8, 6, 6)),
    "mobilenetv3_hardsigmoid_se": (lambda: MobileNetV3Block(8, 16), _n(1, 8, 6, 6)),
    "batchnorm_eval_stats": (lambda: BatchNormEval(8), _n(2, 8, 6, 6)),
    "mha_key_padding": (lambda: MHAKeyPadding(32, 4),
                        lambda g: (torch.randn(2, 10, 32, generator=g), _padding_mask(g, 2, 10))),
    "torch_encoder_layer": (lambda: TorchEncoderLayer(32, 4), _n(2, 10, 32)),
    "sdpa_bool_mask": (lambda: SDPAMasked(32, 2, True),
                       lambda g: (torch.randn(2, 10, 32, generator=g), _padding_mask(g, 2, 10))),
    "sdpa_float_mask": (lambda: SDPAMasked(32, 2, False),
                        lambda g: (torch.randn(2, 10, 32, generator=g), _padding_mask(g, 2, 10))),
    "einsum_attention": (lambda: EinsumAttention(32, 2), _n(2, 10, 32)),
    "swinv2_cosine_cpb": (lambda: SwinV2CosineAttention(32, 2, 4), _n(2, 16, 32)),
    "clip_similarity_head": (lambda: CLIPHead(32),
                             lambda g: (torch.randn(4, 32, generator=g), torch.randn(3, 32, generator=g))),
    "shufflenet_channel_shuffle": (lambda: ChannelShuffle(8), _n(1, 8, 6, 6)),
    "conv_same_even_and_tf_pad": (lambda: ConvSamePadding(8), _n(1, 8, 9, 9)),
    "conformer_conv1d": (lambda: Conv1dBlock(16), _n(2, 12, 16)),
    "conv3d_stem": (lambda: Conv3dStem(3, 8), _n(1, 3, 4, 8, 8)),
    "unfold_patches": (lambda: Unfold(4, 16), _n(2, 4, 8, 8)),
    "hardswish_by_hand_layerscale": (lambda: HardSigmoidByHand(8), _n(2, 8, 6, 6)),
    "pos_embed_bicubic": (lambda: PosEmbedInterp(8, 3, 5, "bicubic"), _n(2, 25, 8)),
    "pos_embed_bilinear_down": (lambda: PosEmbedInterp(16, 6, 4, "bilinear"), _n(2, 16, 16)),
    "pool_ceil_mode": (MaxPoolCeil, _n(1, 8, 8, 8)),
    "maxpool_dilated": (lambda: Fn(lambda x: F.max_pool2d(2 * x, 3, 1, 0, dilation=2)), _n(1, 4, 8, 8)),
    "interp_nearest_scale_1_7": (lambda: Interp(4, "nearest", scale=1.7), _n(1, 4, 6, 6)),
    "interp_nearest_exact_0_6": (lambda: Interp(4, "nearest-exact", scale=0.6), _n(1, 4, 7, 7)),
    "interp_bilinear_scale_1_7": (lambda: Interp(4, "bilinear", False, scale=1.7), _n(1, 4, 6, 6)),
    "interp_bicubic_align": (lambda: Interp(2, "bicubic", True), _n(1, 2, 4, 4)),
    "grid_sample": (lambda: Fn(lambda x, g: F.grid_sample(x, g, align_corners=False)),
                    lambda g: (torch.randn(1, 4, 6, 6, generator=g),
                               torch.rand(1, 5, 5, 2, generator=g) * 2.2 - 1.1)),
    "pixel_unshuffle_flip": (lambda: Fn(lambda x: F.pixel_unshuffle(x.flip(-1, -2) + x, 2)),
                             _n(1, 4, 6, 6)),
    "conv_transpose_dilated": (lambda: nn.ConvTranspose2d(4, 4, 3, stride=2, dilation=2),
                               _n(1, 4, 5, 5)),
    "groupnorm_offset_mean": (lambda: Fn(lambda x: F.group_norm(x + 100.0, 4)), _n(2, 16, 6, 6)),
    "batch_norm_batch_stats": (lambda: Fn(lambda x: F.batch_norm(x, None, None, training=True)),
                               _n(4, 8, 5, 5)),
    "activations": (lambda: Activations(8, 3.0), _n(2, 8, 6, 6)),
    "activations_large_inputs": (lambda: Activations(8, 40.0), _n(1, 8, 5, 5)),
}  # fmt: skip


def build(name: str, seed: int = 0, dtype: torch.dtype = torch.float32):
    """The case `name`: its module in eval mode with seeded weights, and its inputs."""
    make, inputs = CASES[name]
    torch.manual_seed(seed)
    model = _stats(make().eval(), seed).to(dtype).to(DEVICE)
    xs = inputs(torch.Generator().manual_seed(seed))
    xs = tuple((x.to(dtype) if x.is_floating_point() else x).to(DEVICE) for x in xs)
    return model, xs


XFAIL: dict[tuple[str, str], str] = {}
"""(case, dtype) -> what fails, for the cases tilefuse currently gets wrong or refuses."""


def _params():
    for name in CASES:
        for dt in ("f32", "bf16"):
            why = XFAIL.get((name, dt)) or XFAIL.get((name, "*"))
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            yield pytest.param(name, dt, id=f"{name}-{dt}", marks=marks)


DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


@pytest.mark.parametrize(("name", "dt"), list(_params()))
def test_spelling_matches_eager(name, dt):
    dtype = DTYPES[dt]
    model, inputs = build(name, dtype=dtype)
    with torch.no_grad():
        compiled = tt.compile(model, *inputs)
        out = compiled(*inputs)
    assert_matches(name, out, eager64(model, inputs), RTOL[dtype])


def test_backend_compiles_a_bf16_grouped_conv():
    """A bf16 grouped convolution (`linalg.conv_2d_ngchw_gfchw`, bf16 into f32) crashed
    xDSL's parser with a bare AssertionError, which escaped the backend
    (BackendCompilerFailed) instead of an eager fallback; the op is tilefuse's own now."""
    torch._dynamo.reset()
    model, inputs = build("grouped_conv_stride2", dtype=torch.bfloat16)
    with torch.no_grad():
        out = torch.compile(model, backend=backend.tilefuse, dynamic=False)(*inputs)
    assert_matches("grouped_conv_stride2", out, eager64(model, inputs), RTOL[torch.bfloat16])


def test_backend_falls_back_on_a_refused_graph():
    """A refused graph (a cumsum longer than `decompose.MAX_SCAN`: tm_tensor.scan) runs in
    eager through the backend, counted as a fallback."""
    torch._dynamo.reset()
    model = Fn(lambda x: torch.cumsum(x, -1))
    inputs = (torch.randn(2, MAX_SCAN + 1, generator=torch.Generator().manual_seed(0)).to(DEVICE),)
    before = backend.STATS.fallbacks
    with torch.no_grad():
        out = torch.compile(model, backend=backend.tilefuse, dynamic=False)(*inputs)
    assert backend.STATS.fallbacks == before + 1
    assert_matches("cumsum_long", out, eager64(model, inputs), RTOL[torch.float32])


def test_backend_compiles_a_short_cumsum():
    torch._dynamo.reset()
    model, inputs = build("cumsum_minimal")
    before = backend.STATS.fallbacks, backend.STATS.compiled
    with torch.no_grad():
        out = torch.compile(model, backend=backend.tilefuse, dynamic=False)(*inputs)
    assert (backend.STATS.fallbacks, backend.STATS.compiled) == (before[0], before[1] + 1)
    assert_matches("cumsum_minimal", out, eager64(model, inputs), RTOL[torch.float32])


REFUSALS = {
    "roll_minimal": "aten.roll", "cumsum_minimal": "aten.cumsum", "int_abs_minimal": "aten.abs",
    "conv_circular_pad": "test_vision_spellings_adversarial.py",
}  # fmt: skip
"""Cases tilefuse refuses today, and what its located error names (the torch op or the
user's line). Each either compiles and matches eager, or is refused so."""


@pytest.mark.parametrize("name", sorted(REFUSALS))
def test_refusal_is_a_located_compile_error(name):
    model, inputs = build(name)
    try:
        compiled = tt.compile(model, *inputs)
    except CompileError as e:
        assert re.search(REFUSALS[name], str(e)), str(e)
        assert e.location, str(e)
        return
    assert_matches(name, compiled(*inputs), eager64(model, inputs), RTOL[torch.float32])


def test_roll_compiles():
    """torch.roll was refused as a dynamic shape (torch-mlir casts its static slices
    to `?` before the concat), the message telling the user to declare dim ranges."""
    model, inputs = build("roll_minimal")
    compiled = tt.compile(model, *inputs)
    assert_matches("roll_minimal", compiled(*inputs), eager64(model, inputs), RTOL[torch.float32])
