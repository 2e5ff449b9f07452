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
def _erf_kernel(x_ptr, out_ptr, N: tl.constexpr, GPU_FORM: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, prelude._erff(x) if GPU_FORM else prelude._erf(x))


def _erf_ulps(x: torch.Tensor, gpu_form: bool) -> torch.Tensor:
    """|erf(x) - reference| in units of the f32 spacing at the reference (erf in f64)."""
    out = on_device(torch.empty_like(x))
    with np.errstate(all="ignore"):  # (x * x overflows for huge x in the unused polynomial)
        _erf_kernel[(x.numel() // 1024,)](on_device(x), out, N=1024, GPU_FORM=gpu_form)
    want = torch.erf(x.double())
    spacing = torch.nextafter(want.float().abs(), torch.tensor(math.inf)).double() - want.float().abs().double()
    return (out.cpu().double() - want).abs() / spacing


def test_erf_polynomials_are_erf_within_two_ulp():
    """`_erff`, the erf the GPU runs (libdevice's two polynomials, branch-free), is erf
    within libdevice's 2 ulp over f32 from 2^-30 to 16 (both signs), across the switch
    between the polynomials at |x| = 1.00296 and where erf rounds to 1."""
    gen = torch.Generator().manual_seed(0)
    mags = torch.exp2(torch.empty(1 << 16).uniform_(-30.0, 4.0, generator=gen))
    edge = torch.tensor(1.002959966659546)
    near = [edge, torch.nextafter(edge, torch.tensor(0.0)), torch.tensor(1.0), torch.tensor(3.9192059)]
    x = torch.cat([mags, -mags, torch.stack(near), -torch.stack(near)])
    x = torch.cat([x, torch.zeros(-x.numel() % 1024)])
    for gpu_form in (True, False):  # (on the GPU both are the same numbers; on the CPU `_erf` is tl.erf)
        ulps = _erf_ulps(x, gpu_form)
        assert ulps.max() <= 2.0, (gpu_form, x[ulps.argmax()].item(), ulps.max().item())
    ends = on_device(torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 30.0, -30.0] + [0.0] * 1017))
    out = torch.empty_like(ends)
    with np.errstate(all="ignore"):
        _erf_kernel[(1,)](ends, out, N=1024, GPU_FORM=True)
    head = out[:7].cpu()
    assert head[:2].tolist() == [0.0, 0.0] and torch.signbit(head[1]) and not torch.signbit(head[0])
    assert head[2:4].tolist() == [1.0, -1.0] and math.isnan(head[4]) and head[5:7].tolist() == [1.0, -1.0]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="libdevice runs on the GPU only")
def test_erf_is_libdevices_erff_on_the_gpu():
    """All 2^32 f32 inputs on the GPU: `_erf` is within 2 ulp of erf (in f64) and within
    1 ulp of `tl.erf` (libdevice's erff, whose coefficients differ between CUDA releases)
    wherever x is normal, equal on zeros, infinities and NaNs."""
    n, off_by_one = 1 << 24, 0
    for base in range(0, 1 << 32, n):
        bits = torch.arange(base, base + n, dtype=torch.int64, device="cuda")
        x = torch.where(bits >= 1 << 31, bits - (1 << 32), bits).to(torch.int32).view(torch.float32)
        ours, libdevice = torch.empty_like(x), torch.empty_like(x)
        _erf_and_libdevice[(n // 1024,)](x, ours, libdevice, N=1024)
        normal = (x.abs() >= 1.1754943508222875e-38) | (x == 0) | x.isnan()
        steps = (ours.view(torch.int32).long() - libdevice.view(torch.int32).long()).abs()
        steps = torch.where(ours.isnan() & libdevice.isnan(), 0, steps)[normal]
        assert steps.max() <= 1, (hex(base), x[normal][steps.argmax()].item())
        off_by_one += int((steps == 1).sum())
        want = torch.erf(x.double())
        spacing = torch.nextafter(want.float().abs(), torch.tensor(math.inf, device="cuda")).double() - want.float().abs()
        ulps = torch.where(want.isnan(), 0.0, (ours.double() - want).abs() / spacing)[normal]
        assert ulps.max() <= 2.0, (hex(base), x[normal][ulps.argmax()].item(), ulps.max().item())
    print(f"_erf and tl.erf differ by 1 ulp at {off_by_one} inputs")


@triton.jit
def _erf_and_libdevice(x_ptr, ours_ptr, libdevice_ptr, N: tl.constexpr):
    offs = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(ours_ptr + offs, prelude._erf(x))
    tl.store(libdevice_ptr + offs, tl.erf(x))


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
