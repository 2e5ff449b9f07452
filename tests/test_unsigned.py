"""Unsigned integer tensors through the torch front end (`tilefuse/torch/unsigned.py`):
`uint8` images, masks and tables as users pass them. torch-mlir aborted the process on
`x - 1` of a `uint8` tensor; every op on one is now computed on its values widened.
Each integer result is compared with eager bit for bit (a float one within 1e-6), in its dtype, at values that wrap
(`0`, `255`), with integer operands outside `uint8`'s range (which ATen reads modulo
256)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch_mlir")

import torch
import torch.nn.functional as F
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import Fn, assert_matches, eager64
from tilefuse.ir.diagnostics import ArgumentError
from tilefuse.torch import backend


def u8(*shape: int, seed: int = 0) -> torch.Tensor:
    """Random bytes, with 0 and 255 among them."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    x.view(-1)[:2] = torch.tensor([0, 255], dtype=torch.uint8)
    return x.to(DEVICE)


ARITHMETIC = lambda x, y: (x + 3, x - y, x * y, x * 3, -x, ~x, x + 300, x - 300, x * -1,  # noqa: E731
                           x // 3, x % 7, x % 300, x // 300, torch.rsub(x, 300), x / 300, x / -2,
                           torch.atan2(x, torch.tensor(300).to(x.device)), torch.div(x, y | 1, rounding_mode="trunc"), x % (y | 1), x % -3, x // -2,
                           x >> 1, x << 1, x >> 9, x & y, x | 1, x ^ y, x ^ 300, x.abs())  # fmt: skip
"""Ops whose results wrap modulo 256, shifts, bit operations."""

COMPARISONS = lambda x, y: (x > y, x == 44, x == 300, x > -1, x < 300, torch.maximum(x, y),  # noqa: E731
                            torch.minimum(x, torch.tensor(-1).to(x.device)), x.clamp(10, 200),
                            x.clamp(min=-5), torch.where(x > 100, x, y), torch.where(x > 100, x, -1),
                            x.amax(1), x.amin(0), x.argmax(1), x.max(1).values, x > 2.5)  # fmt: skip
"""Comparisons, selections and reductions, with operands ATen reads as uint8 (-1: 255)."""

PROMOTIONS = lambda x, y: (x.sum(1), torch.cumsum(x, 1), x.float() / 255, x * 0.5, x.long() * 1000,  # noqa: E731
                           x + torch.arange(x.shape[1], device=x.device), x.half(), x.to(torch.int8),
                           torch.cat([x, y], 1), x[:, ::2].contiguous(), x.t().contiguous(), x / 3,
                           (x.float() * 0.7).to(torch.uint8), torch.ones(256, 2, device=x.device)[x.long()])  # fmt: skip
"""Results in other dtypes (int64 sums, floats), data movement, conversions to uint8."""


@pytest.mark.parametrize("fn", [ARITHMETIC, COMPARISONS, PROMOTIONS], ids=["arithmetic", "comparisons", "promotions"])
def test_ops_on_uint8_match_eager_bit_for_bit(fn):
    x, y = u8(6, 40), u8(6, 40, seed=1)
    compiled = tt.compile(Fn(fn), x, y)
    got, want = compiled(x, y), fn(x, y)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype, (i, g.dtype, w.dtype)
        if w.is_floating_point():  # (atan2: our polynomial, not libm's)
            assert torch.allclose(g, w, rtol=1e-6, atol=0), (i, g, w)
        else:
            assert torch.equal(g, w), (i, g, w)


class Preprocess(nn.Module):
    """An image model taking the bytes of an image: scaled, normalised, convolved."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, image):
        x = (image.float() / 255 - self.mean) / self.std
        return F.relu(self.conv(x))


def test_an_image_model_takes_uint8_bytes():
    torch.manual_seed(0)
    model, image = Preprocess().to(DEVICE).eval(), u8(2, 3, 12, 12)
    compiled = tt.compile(model, image)
    assert_matches("preprocess", compiled(image), eager64(model, (image,)), 5e-5)


def test_a_byte_mask_and_a_uint8_result():
    fn = Fn(lambda x, mask: (x.masked_fill(mask.bool(), 0.0), mask * 2 + 1))
    x, mask = torch.randn(4, 16).to(DEVICE), (u8(4, 16) > 128).to(torch.uint8)
    got, want = tt.compile(fn, x, mask)(x, mask), fn(x, mask)
    assert torch.equal(got[0], want[0])
    assert got[1].dtype == torch.uint8 and torch.equal(got[1], want[1])


def test_a_signed_tensor_where_an_unsigned_one_was_compiled_is_refused():
    """The program computes on the bits: int8 bits read as uint8 would be another function."""
    fn = Fn(lambda x: x.float() + 1)
    compiled = tt.compile(fn, u8(4, 8))
    with pytest.raises(ArgumentError, match=r"input 0 of Fn was compiled as a torch.uint8 tensor, got torch.int8"):
        compiled(u8(4, 8).to(torch.int8))
    signed = tt.compile(fn, u8(4, 8).to(torch.int8))
    with pytest.raises(ArgumentError, match=r"must be a torch.int8 tensor .* not torch.uint8"):
        signed(u8(4, 8))


def test_uint8_through_the_torch_compile_backend():
    torch._dynamo.reset()
    fn = Fn(lambda x, y: ((x - y) // 3, (x.float() / 255).sum(1), x == 300))
    x, y = u8(6, 40), u8(6, 40, seed=1)
    before = backend.STATS.fallbacks
    got = torch.compile(fn, backend=backend.tilefuse, dynamic=False)(x, y)
    assert backend.STATS.fallbacks == before
    for g, w in zip(got, fn(x, y), strict=True):
        assert g.dtype == w.dtype and torch.allclose(g, w), (g, w)
