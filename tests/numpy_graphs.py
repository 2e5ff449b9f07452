"""Independent numpy oracle for the sample programs in ``samples/``.

Each entry of :data:`GRAPHS` is a hand-written numpy model of the sample of
the same name (``samples/<name>.mlir``), written the way one would write the
model in numpy -- it is *not* derived from, or an interpretation of, the MLIR.
Tests compare compiled kernels against these functions.

Every function has the signature ``f(*args, dims) -> tuple[np.ndarray, ...]``:

* ``args`` are the sample's function arguments, in the order listed by its
  ``// tilefuse.args:`` header line (any float dtype; they are upcast);
* ``dims`` maps the symbolic names of the ``// tilefuse.dims:`` header line to
  their (possibly re-specialised) sizes; it is used for dimension-derived
  constants (1/N, 1/sqrt(D));
* the result is a tuple with one float64 array per function result.

All arithmetic is done in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

__all__ = ["GRAPHS"]

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _f64(*arrays: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(a, dtype=np.float64) for a in arrays]


def _gelu_tanh(h: np.ndarray) -> np.ndarray:
    return 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))


def _gelu_erf(h: np.ndarray) -> np.ndarray:
    return 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0)))


def _softmax(s: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def relu_add(x, y, *, dims):
    """z = max(x + y, 0)."""
    x, y = _f64(x, y)
    return (np.maximum(x + y, 0.0),)


def elementwise_chain(x, y, *, dims):
    """t1=x*y, t2=t1+x, t3=t2-y, t4=tanh(t3), t5=max(t4,x), t6=t5^2, out=(t6-t4)*0.5."""
    x, y = _f64(x, y)
    t4 = np.tanh(x * y + x - y)
    t5 = np.maximum(t4, x)
    return ((t5 * t5 - t4) * 0.5,)


def bias_gelu(x, b, *, dims):
    """y = gelu_tanh(x + b), b broadcast over rows."""
    x, b = _f64(x, b)
    return (_gelu_tanh(x + b[None, :]),)


def softmax(x, *, dims):
    """y = exp(x - max_row) / sum_row(exp(x - max_row))."""
    (x,) = _f64(x)
    return (_softmax(x, axis=1),)


def layernorm(x, gamma, beta, *, dims):
    """y = (x - mean) / sqrt(var + 1e-5) * gamma + beta over the last dim."""
    x, gamma, beta = _f64(x, gamma, beta)
    return (_layernorm(x, gamma, beta, 1e-5),)


def rmsnorm(x, w, *, dims):
    """y = x / sqrt(mean(x^2) + 1e-6) * w over the last dim."""
    x, w = _f64(x, w)
    return (x / np.sqrt((x**2).mean(axis=1, keepdims=True) + 1e-6) * w,)


def linear_bias_relu(x, w, b, *, dims):
    """y = max(x @ W + b, 0)."""
    x, w, b = _f64(x, w, b)
    return (np.maximum(x @ w + b, 0.0),)


def conv_bias_relu(x, w, b, *, dims):
    """y = max(conv2d(x, w) + b, 0), NHWC x, HWCF w, stride 1, no padding: the
    sum over the K x K window of x[n, oh + i, ow + j, :] @ w[i, j]."""
    x, w, b = _f64(x, w, b)
    k, oh, ow = w.shape[0], x.shape[1] - w.shape[0] + 1, x.shape[2] - w.shape[1] + 1
    y = sum(x[:, i : i + oh, j : j + ow, :] @ w[i, j] for i in range(k) for j in range(w.shape[1]))
    return (np.maximum(y + b, 0.0),)


def mlp(x, w1, b1, w2, b2, *, dims):
    """y = gelu_erf(x @ W1 + b1) @ W2 + b2."""
    x, w1, b1, w2, b2 = _f64(x, w1, b1, w2, b2)
    return (_gelu_erf(x @ w1 + b1) @ w2 + b2,)


def attention(q, k, v, *, dims):
    """out = softmax(Q K^T / sqrt(D)) V for every (batch, head); Q/K/V [B, H, S, D]."""
    q, k, v = _f64(q, k, v)
    scores = np.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(dims["D"])
    return (np.einsum("bhij,bhjd->bhid", _softmax(scores, axis=-1), v),)


def transformer_block(x, gamma1, beta1, wq, wk, wv, wo, gamma2, beta2, w1, b1, w2, b2, *, dims):
    """Pre-LN block: x1 = x + MHA(LN1(x)); y = x1 + gelu_tanh(LN2(x1) @ W1 + b1) @ W2 + b2.

    Per-head projections Wq/Wk/Wv [H, E, Dh]; out-projection Wo [H, Dh, E]
    summed over heads; attention scale 1/sqrt(Dh); LayerNorm eps 1e-5.
    """
    x, gamma1, beta1, wq, wk, wv, wo, gamma2, beta2, w1, b1, w2, b2 = _f64(
        x, gamma1, beta1, wq, wk, wv, wo, gamma2, beta2, w1, b1, w2, b2
    )
    h = _layernorm(x, gamma1, beta1, 1e-5)
    q = np.einsum("se,hed->hsd", h, wq)
    k = np.einsum("se,hed->hsd", h, wk)
    v = np.einsum("se,hed->hsd", h, wv)
    p = _softmax(np.einsum("hid,hjd->hij", q, k) / math.sqrt(dims["Dh"]), axis=-1)
    attn = np.einsum("hij,hjd->hid", p, v)
    x1 = x + np.einsum("hsd,hde->se", attn, wo)
    h2 = _layernorm(x1, gamma2, beta2, 1e-5)
    return (x1 + _gelu_tanh(h2 @ w1 + b1) @ w2 + b2,)


def four_layernorms(x0, x1, x2, x3, gamma, beta, *, dims):
    """y_i = (x_i - mean) / sqrt(var + 1e-5) * gamma + beta for i in 0..3 (shared gamma/beta)."""
    xs = _f64(x0, x1, x2, x3)
    gamma, beta = _f64(gamma, beta)
    return tuple(_layernorm(x, gamma, beta, 1e-5) for x in xs)


GRAPHS: dict[str, Callable[..., tuple[np.ndarray, ...]]] = {
    "relu_add": relu_add,
    "elementwise_chain": elementwise_chain,
    "bias_gelu": bias_gelu,
    "softmax": softmax,
    "layernorm": layernorm,
    "rmsnorm": rmsnorm,
    "linear_bias_relu": linear_bias_relu,
    "conv_bias_relu": conv_bias_relu,
    "mlp": mlp,
    "attention": attention,
    "transformer_block": transformer_block,
    "four_layernorms": four_layernorms,
}
