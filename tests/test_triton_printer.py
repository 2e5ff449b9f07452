"""The Triton printer's parts: the helper library as a module, which helpers a
module carries, and the kernel signatures it returns next to the text."""

import ast
import inspect
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from tests.device import on_device
from tilefuse.backend.triton import library, prelude
from tilefuse.backend.triton.emit import emit_module
from tilefuse.backend.triton.signature import CONSTEXPR, POINTER, STRIDE
from tilefuse.frontend.program import load_program
from tilefuse.pipeline import run_pipeline

SAMPLES = Path(__file__).parent.parent / "samples"


@triton.jit
def _apply(x_ptr, y_ptr, out_ptr, N: tl.constexpr, OP: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    if OP == 0:
        r = prelude._roundeven(x)
    elif OP == 1:
        r = prelude._copysign(x, y)
    elif OP == 2:
        r = prelude._neg(x)
    else:
        r = prelude._powf(x, y)
    tl.store(out_ptr + offs, r)


def _run(op: int, x: list[float], y: list[float] | None = None) -> torch.Tensor:
    n = triton.next_power_of_2(len(x))
    xs = on_device(torch.tensor(x + [0.0] * (n - len(x))))
    ys = on_device(torch.tensor((y or [0.0] * len(x)) + [0.0] * (n - len(x))))
    out = torch.empty_like(xs)
    with np.errstate(all="ignore"):  # log of a negative base, as the GPU computes it
        _apply[(1,)](xs, ys, out, N=n, OP=op)
    return out[: len(x)].cpu()


def test_prelude_helpers_run():
    x = [0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997, 3.7]
    assert _run(0, x).tolist() == torch.round(torch.tensor(x)).tolist()
    assert torch.signbit(_run(0, [-0.5]))[0]  # rounds to -0.0
    signs = _run(1, [2.0, 2.0, 3.0], [-0.0, 1.0, -5.0])
    assert signs.tolist() == [-2.0, 2.0, -3.0]
    assert torch.signbit(_run(2, [0.0]))[0]  # -(+0.0) is -0.0
    powers = _run(3, [-2.0, 2.0, -8.0, 1.0], [3.0, 0.5, 1.0 / 3.0, math.inf])
    assert powers[0] == -8.0 and abs(powers[1] - 2**0.5) < 1e-6
    assert math.isnan(powers[2]) and powers[3] == 1.0


@triton.jit
def _reduce(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N)[None, :])
    tl.store(out_ptr, tl.sum(prelude._max_nan(x, axis=1), axis=0))
    tl.store(out_ptr + 1, tl.sum(prelude._prod(x, axis=1), axis=0))


def test_prelude_reductions_propagate_nan_and_multiply():
    out = on_device(torch.empty(2))
    _reduce[(1,)](on_device(torch.tensor([1.0, 2.0, 3.0, 4.0])), out, N=4)
    assert out.tolist() == [4.0, 24.0]
    _reduce[(1,)](on_device(torch.tensor([1.0, float("nan"), 3.0, 4.0])), out, N=4)
    assert math.isnan(out[0].item())


def test_reserved_names_come_from_the_prelude():
    names = library.reserved_names()
    assert {"_tanh_bf16", "_max_nan", "_ON_GPU", "tl", "libdevice", "os"} <= names
    defined = _functions(inspect.getsource(prelude))
    assert set(library.helpers()) == set(defined)
    # `_asin` calls `_atan2`, which calls `_atan` and `_neg`.
    assert library.closure(["_asin"]) == ["_neg", "_atan", "_atan2", "_asin"]


def emitted(name, **kw):
    module = load_program(SAMPLES / f"{name}.mlir", **kw)
    run_pipeline(module)
    return emit_module(module)


def _functions(text: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}


def _called(fn: ast.FunctionDef) -> set[str]:
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}


@pytest.mark.parametrize("name", ["softmax", "bias_gelu", "linear_bias_relu", "attention"])
def test_a_module_carries_only_the_helpers_its_kernels_call(name):
    out = emitted(name)
    functions = _functions(out.text)
    helpers = {n for n in functions if n.startswith("_")}
    todo = [n for k in out.kernels for n in _called(functions[k.name]) if n in helpers]
    reached = set()
    while todo:
        n = todo.pop()
        if n not in reached:
            reached.add(n)
            todo += [m for m in _called(functions[n]) if m in helpers]
    assert helpers == reached
    if name == "softmax":
        assert helpers == {"_max_nan", "_max_nan_combine"}
        assert "libdevice" not in out.text


@pytest.mark.parametrize("name", ["softmax", "linear_bias_relu", "four_layernorms",
                                  "transformer_block"])  # fmt: skip
def test_kernel_signature_is_what_the_kernel_declares(name):
    out = emitted(name)
    functions = _functions(out.text)
    for sig in out.kernels:
        args = functions[sig.name].args.args
        assert [a.arg for a in args] == [p.name for p in sig.params]
        constexpr = [a.annotation is not None and ast.unparse(a.annotation) == "tl.constexpr"
                     for a in args]  # fmt: skip
        assert constexpr == [p.kind is CONSTEXPR for p in sig.params]
        for p in sig.params:
            if p.kind is POINTER:
                assert p.name.endswith("_ptr") and p.shape
            if p.kind is STRIDE:
                assert p.dim is not None and 0 <= p.dim < len(p.shape)
        dot = "tl.dot(" in ast.unparse(functions[sig.name])
        assert sig.has_dot_constexprs == (dot and "DOT_DTYPE" in ast.unparse(functions[sig.name]))
        assert (sig.num_warps, sig.num_stages) != (0, 0) and sig.programs > 0
    launches = [n for n in ast.walk(ast.parse(out.text))
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)]  # fmt: skip
    assert sorted(ast.unparse(c.func.value) for c in launches) == sorted(
        k.name for k in out.kernels)
    for call in launches:
        sig = out.kernel(ast.unparse(call.func.value))
        keywords = {k.arg for k in call.keywords}
        assert ("DOT_DTYPE" in keywords) == sig.has_dot_constexprs
        assert call.func.slice.elts[0].value == sig.programs  # the launch grid
