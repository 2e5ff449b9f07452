"""Dynamic dims from torch (issue 18): `torch._dynamo.mark_dynamic` on an example
input makes `tilefuse.torch.compile` compile one program for the marked range
(torch/dynamic.py), checked through the kernels against float64 eager at sizes it
was not traced at."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("torch_mlir")

import torch

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import build, eager64, rel_error
from tilefuse.ir import log
from tilefuse.ir.diagnostics import ArgumentError
from tilefuse.torch import backend
from tilefuse.torch.dynamic import DEFAULT_MAX, SizeSymbol, instance_points, marked_dims
from tilefuse.torch.export import ExportError


@pytest.fixture
def channels():
    yield log.configure
    log.configure("")


TOKENS = (1, 2, 3, 7, 16, 17, 31, 32, 33, 64, 65)
"""1, 2, primes, 2^k - 1, 2^k, 2^k + 1; none is a size the program was traced at."""


def _at(inputs: tuple[torch.Tensor, ...], t: int, seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    out = []
    for x in inputs:
        shape = (x.shape[0], t, *x.shape[2:])
        if x.is_floating_point():
            out.append(torch.randn(shape, generator=g).to(x.device))
        else:  # a padding mask: the last quarter of each row padded
            keep = torch.arange(t)[None, :].expand(shape) < max(1, t - t // 4)
            out.append(keep.to(x.dtype).to(x.device))
    return tuple(out)


@pytest.mark.parametrize("name", ["gpt2_block_sdpa", "bert_layer"])
def test_one_compile_serves_every_token_count(name):
    model, inputs = build(name)
    for x in inputs:  # BERT's padding mask has the tokens too: one size with x's
        torch._dynamo.mark_dynamic(x, 1, min=1, max=2048)
    compiled = tt.compile(model, *inputs)
    ranges = compiled.exported.dim_ranges
    assert ranges is not None and set(map(str, ranges.values())) == {"1:2048"}
    assert "tensor<2x?x64xf32>" in compiled.mlir
    kernels = compiled.kernels
    for t in TOKENS:
        xs = _at(inputs, t, t)
        out = compiled(*xs)
        assert out.shape == (2, t, 64)
        assert rel_error(out, eager64(model, xs)) < 1e-4, t
    assert compiled.kernels == kernels  # one program
    with pytest.raises(ArgumentError, match="outside its declared range 1:2048"):
        compiled(*_at(inputs, 2049, 0))


def test_a_module_that_specialises_the_size_is_an_export_error():
    model, inputs = build("gpt2_block")  # nanoGPT: `bias[:, :, :t, :t]` of a 16x16 buffer
    torch._dynamo.mark_dynamic(inputs[0], 1, min=1, max=2048)
    with pytest.raises(ExportError, match=r"over the marked dynamic dims: .*specialized it to be "
                       "a constant"):  # fmt: skip
        tt.compile(model, *inputs)


def test_marks_and_instance_sizes():
    x = torch.zeros(2, 16, 8)
    torch._dynamo.mark_dynamic(x, 1, min=4, max=100)
    torch._dynamo.mark_dynamic(x, 0)
    assert marked_dims([x]) == {(0, 0): (1, DEFAULT_MAX), (0, 1): (4, 100)}
    points = instance_points([SizeSymbol("s0", 1, DEFAULT_MAX, ((0, 0),)),
                              SizeSymbol("s1", 4, 100, ((0, 1),))])  # fmt: skip
    # the corners, a third point, then checks at even sizes (twice a prime): both
    # symbols at once, then each near its range's end
    assert len(points) == 8 and len({tuple(p.values()) for p in points}) == 8
    assert points[-3:] == [{"s0": 74, "s1": 58}, {"s0": 254, "s1": 29}, {"s0": 37, "s1": 94}]
    assert instance_points([SizeSymbol("s0", 1, 3, ((0, 0),))]) == [
        {"s0": 2}, {"s0": 3}, {"s0": 1}]  # fmt: skip
    assert instance_points([SizeSymbol("s0", 1, 2048, ((0, 0),))]) == [
        {"s0": 37}, {"s0": 53}, {"s0": 41}, {"s0": 74}, {"s0": 254}]  # fmt: skip
    y = torch.zeros(2, 3)
    torch._dynamo.mark_dynamic(y, 1, min=8, max=16)
    with pytest.raises(Exception, match="marked dynamic in 8:16 but has size 3"):
        marked_dims([y])


def test_torch_compile_dynamic_compiles_once_for_batch_and_tokens():
    """`torch.compile(dynamic=True)`: dynamo's symbolic batch and tokens (B, T >= 2;
    dynamo specialises sizes 0 and 1 itself) through one tilefuse program."""
    model, inputs = build("gpt2_block_sdpa")
    torch._dynamo.reset()
    backend._CACHE.clear()
    compiled = torch.compile(model, backend=backend.tilefuse, dynamic=True)
    start = backend.STATS.compiles, backend.STATS.compiled, backend.STATS.fallbacks
    for b, t in [(2, 5), (3, 17), (2, 32), (1 + 4, 33), (2, 2)]:
        (x,) = _at((torch.zeros(b, 1, 64, device=inputs[0].device),), t, b * t)
        with torch.no_grad():
            out = compiled(x)
        assert rel_error(out, eager64(model, (x,))) < 1e-4, (b, t)
    stats = backend.STATS
    assert (stats.compiles, stats.compiled, stats.fallbacks) == (start[0] + 1, start[1] + 1, start[2])


def test_torch_compile_dynamic_outside_the_range_runs_in_eager(channels, capsys):
    channels("fallback")
    torch._dynamo.reset()
    backend._CACHE.clear()
    fn = torch.compile(torch.tanh, backend=backend.tilefuse, dynamic=True)
    x = torch.randn(4, 6, device=DEVICE)
    with torch.no_grad():
        torch.testing.assert_close(fn(x), torch.tanh(x))
        big = torch.randn(DEFAULT_MAX + 1, 2, device=DEVICE)
        torch.testing.assert_close(fn(big), torch.tanh(big))
    err = capsys.readouterr().err
    assert re.search(r"a call runs in eager: @graph_\d+: argument 0 has arg0.0 = 65537, outside "
                     r"its declared range 2:65536", err), err
