"""The model zoo (tilefuse.testing.zoo) as users bring it: each `nn.Module`
exported by torch-mlir as it is, with no hand edits, compiled by
`tilefuse.torch.compile`, run through the kernels (the interpreter here) and
compared with torch eager in float64; the number of kernels each model becomes
is asserted, so fusion cannot silently regress.

The models tagged "fast" run by default; the whole zoo runs with `--zoo`
(as `.ci/run` does)."""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("torch_mlir")

import torch
from torch import nn

import tilefuse.torch as tt
from tilefuse.ir.diagnostics import CompileError
from tilefuse.testing.zoo import ZOO

KERNELS: dict[str, int] = {}
"""Kernels each zoo model becomes."""

REFUSED: dict[str, str] = {}
"""Zoo models tilefuse refuses, with the reason its located error gives."""

RTOL = 2e-5
"""Kernels in f32 against eager in f64, relative to each output's largest value."""


def _eager64(model: nn.Module, inputs: tuple) -> object:
    ref = copy.deepcopy(model).double()
    with torch.no_grad():
        return ref(*[x.double() if x.is_floating_point() else x for x in inputs])


def _flat(outputs: object) -> list[torch.Tensor]:
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [t for o in outputs for t in _flat(o)]


def _params() -> list:
    return [
        pytest.param(name, marks=() if "fast" in entry.tags else pytest.mark.zoo)
        for name, entry in sorted(ZOO.items())
    ]


@pytest.mark.parametrize("name", _params())
def test_zoo_model_matches_eager(name):
    model, inputs = ZOO[name].build()
    if name in REFUSED:
        with pytest.raises(CompileError,
                           match=REFUSED[name]):  # fmt: skip
            tt.compile(model, *inputs)
        return
    compiled = tt.compile(model, *inputs)
    outputs = _flat(compiled(*inputs))
    expected = _flat(_eager64(model, inputs))
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected, strict=True):
        assert out.shape == ref.shape
        if ref.is_floating_point():
            scale = float(ref.abs().max().clamp_min(1e-30))
            err = float((out.double() - ref).abs().max()) / scale
            assert err <= RTOL, f"{name}: relative error {err:.3g}"
        else:
            assert torch.equal(out.to(ref.dtype), ref), name
    assert len(compiled.kernels) == KERNELS[name], compiled.kernels


def test_the_zoo_compiles_as_exported():
    """At least 95% of the zoo compiles with no hand edits (issue #15)."""
    assert len(REFUSED) <= 0.05 * len(ZOO), sorted(REFUSED)
