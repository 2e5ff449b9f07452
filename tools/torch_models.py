"""
The samples written as ordinary PyTorch, for `tools/bench.py`.

Each function takes the sample's arguments (torch tensors, in the order of the
MLIR function) and returns a tuple of outputs, computing the same graph the way
a PyTorch user writes it, so torch eager and `torch.compile` run the same model
tilefuse compiles. Dims come from the sample's header (`dims`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F


def _gelu_tanh(h):
    return 0.5 * h * (1.0 + torch.tanh(0.7978845608 * (h + 0.044715 * h * h * h)))


def _layernorm(x, gamma, beta, eps=1e-5):
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps) * gamma + beta


def relu_add(x, y, dims):
    return (torch.relu(x + y),)


def elementwise_chain(x, y, dims):
    t4 = torch.tanh(x * y + x - y)
    t5 = torch.maximum(t4, x)
    return ((t5 * t5 - t4) * 0.5,)


def bias_gelu(x, b, dims):
    return (_gelu_tanh(x + b),)


def softmax(x, dims):
    return (torch.softmax(x, dim=-1),)


def layernorm(x, gamma, beta, dims):
    return (_layernorm(x, gamma, beta),)


def rmsnorm(x, w, dims):
    return (x * torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + 1e-6) * w,)


def linear_bias_relu(x, w, b, dims):
    return (torch.relu(x @ w + b),)


def mlp(x, w1, b1, w2, b2, dims):
    return (F.gelu(x @ w1 + b1) @ w2 + b2,)


def attention(q, k, v, dims):
    scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(dims["D"]))
    return (torch.softmax(scores, dim=-1) @ v,)


def transformer_block(x, gamma1, beta1, wq, wk, wv, wo, gamma2, beta2, w1, b1, w2, b2, dims):
    h = _layernorm(x, gamma1, beta1)
    q = torch.einsum("se,hed->hsd", h, wq)
    k = torch.einsum("se,hed->hsd", h, wk)
    v = torch.einsum("se,hed->hsd", h, wv)
    p = torch.softmax((q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(dims["Dh"])), dim=-1)
    x1 = x + torch.einsum("hsd,hde->se", p @ v, wo)
    h2 = _layernorm(x1, gamma2, beta2)
    return (x1 + _gelu_tanh(h2 @ w1 + b1) @ w2 + b2,)


def four_layernorms(x0, x1, x2, x3, gamma, beta, dims):
    return tuple(_layernorm(x, gamma, beta) for x in (x0, x1, x2, x3))


def conv_bias_relu(x, w, b, dims):
    """NHWC in, HWCF filter: the NCHW views torch's conv2d takes are
    channels-last strided, so cuDNN runs its NHWC kernels on them."""
    y = F.conv2d(x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1))
    return (torch.relu(y.permute(0, 2, 3, 1) + b),)


MODELS: dict[str, Callable[..., tuple[torch.Tensor, ...]]] = {
    f.__name__: f
    for f in (relu_add, elementwise_chain, bias_gelu, softmax, layernorm, rmsnorm,
              linear_bias_relu, conv_bias_relu, mlp, attention, transformer_block,
              four_layernorms)
}  # fmt: skip
