"""torch eager as the oracle of the torch front-end's tests (tests/test_zoo.py,
tests/test_torch_frontend.py, tests/test_backend_cuda_graphs.py): models and inputs on
`DEVICE` (where tilefuse runs its kernels), references in float64 on the CPU, errors
relative to each output's largest value."""

from __future__ import annotations

import copy

import torch
from torch import nn

from tests.device import DEVICE
from tilefuse.testing.zoo import ZOO


class Fn(nn.Module):
    """A function as a module (the sweeps' smallest reproductions)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def randn(*shape: int, seed: int = 0, device: torch.device | str = DEVICE) -> torch.Tensor:
    """Seeded standard normals of `shape` on `device` (`DEVICE` unless given)."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(device)


def build(name: str) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The zoo model `name` and its inputs on `DEVICE`."""
    model, inputs = ZOO[name].build()
    return model.to(DEVICE), tuple(x.to(DEVICE) for x in inputs)


def eager64(model: nn.Module, inputs: tuple) -> object:
    """`model` on `inputs` in float64 on the CPU (a copy of the model: it stays put)."""
    ref = copy.deepcopy(model).cpu().double()
    with torch.no_grad():
        return ref(*[x.cpu().double() if x.is_floating_point() else x.cpu() for x in inputs])


def flat(outputs: object) -> list[torch.Tensor]:
    """The tensors of nested tuples and lists of outputs, in order."""
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    return [t for o in outputs for t in flat(o)]


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """The largest difference relative to the reference's largest magnitude."""
    out, ref = out.detach().cpu().double(), ref.detach().cpu().double()
    return float((out - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def assert_matches(name: str, outputs: object, expected: object, rtol: float) -> None:
    """Outputs of the shapes expected, floats within `rtol` (`rel_error`), the rest equal."""
    outputs, expected = flat(outputs), flat(expected)
    assert len(outputs) == len(expected), name
    for out, ref in zip(outputs, expected, strict=True):
        assert out.shape == ref.shape, name
        if ref.is_floating_point():
            err = rel_error(out, ref)
            assert err <= rtol, f"{name}: relative error {err:.3g}"
        else:
            assert torch.equal(out.cpu().to(ref.dtype), ref.cpu()), name
