"""Range facts of module buffers (`torch/buffers.py`, `analysis/value_range.py`):
a BatchNorm's `running_var`, checked finite and non-negative on the host, proves
torch-mlir's `sqrt(var + eps) != 0` check, so a ResNet bottleneck's kernels check
nothing and its host code reads no check flag; a variance written since (NaN,
negative, exactly -eps) runs the program compiled without facts, whose kernels
check again. And the float arithmetic of `value_range` is sound: every value the
ops can give in their type lies in the range it finds."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
import torch

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import rel_error
from tilefuse.analysis.value_range import NO_FACTS, Range, argument_range, value_range
from tilefuse.frontend.parse import parse_module
from tilefuse.ir.context import make_context
from tilefuse.ir.diagnostics import RuntimeCheckError
from tilefuse.ir.module import entry_function
from tilefuse.testing.zoo import Bottleneck
from tilefuse.torch import buffers
from tilefuse.torch.buffers import Guard, range_attr, range_fact, range_holds
from tilefuse.torch.export import state_tensor


def bottleneck(dtype: torch.dtype) -> tuple[torch.nn.Module, torch.Tensor]:
    """`Bottleneck(32, 8)` in eval mode with trained-looking statistics (some
    variance exactly 0: an untrained channel) and an input, on `DEVICE`."""
    torch.manual_seed(0)
    m = Bottleneck(32, 8).eval()
    for bn in (m.bn1, m.bn2, m.bn3):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.2, 0.2)
    m.bn2.running_var[3] = 0.0
    return m.to(DEVICE, dtype), torch.randn(1, 32, 8, 8).to(DEVICE, dtype)


def _f64(model, x):
    with torch.no_grad():
        return copy.deepcopy(model).cpu().double()(x.cpu().double())


def _var_guards(compiled) -> list[str]:
    names = [n for n, _ in compiled.exported.state]
    return sorted(names[g.index] for g in compiled.guards if g.range is not None)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_bottleneck_batchnorm_checks_cost_nothing(dtype):
    model, x = bottleneck(dtype)
    compiled = tt.compile(model, x)
    assert "_check(" not in compiled.source
    assert "checks.item()" not in compiled.source
    # only the buffers a check reads get a fact: not the means, nor the step counters
    assert _var_guards(compiled) == ["bn1.running_var", "bn2.running_var", "bn3.running_var"]
    tol = 3e-2 if dtype == torch.bfloat16 else 1e-4
    assert rel_error(compiled(x), _f64(model, x)) <= tol
    assert compiled.unguarded is None


def test_a_write_within_the_range_keeps_the_folded_program():
    model, x = bottleneck(torch.float32)
    compiled = tt.compile(model, x)
    with torch.no_grad():
        model.bn1.running_var.mul_(0.9)  # min 0.45 >= 0.25, max 1.8 <= 2: in the bounds
    assert rel_error(compiled(x), _f64(model, x)) <= 1e-4
    assert compiled.unguarded is None


@pytest.mark.parametrize("value", [float("nan"), -1.0, "minus_eps", float("inf")])
def test_a_variance_written_outside_its_range_is_checked_by_the_kernels(value):
    model, x = bottleneck(torch.float32)
    compiled = tt.compile(model, x)
    assert "checks.item()" not in compiled.source
    with torch.no_grad():  # -f32(1e-5) + f32(1e-5) = 0: sqrt(0) = 0 fails the check
        model.bn2.running_var.fill_(-1e-5 if value == "minus_eps" else value)
    if value == float("inf"):  # sqrt(inf) = inf != 0: the check passes, eager agrees
        got = compiled(x)
        assert compiled.unguarded is not None
        assert torch.equal(got.isnan(), _f64(model, x).isnan().to(got.device))
    else:
        with pytest.raises(RuntimeCheckError, match="tensor with zero element"):
            compiled(x)
        assert compiled.unguarded is not None
        assert "checks.item()" in compiled.unguarded.source
    # a fresh variance in the bounds: the folded program runs again
    model.bn2.running_var = torch.ones(8, device=DEVICE)
    state = [b.detach() for b in _state(compiled)]
    assert compiled._program(state) is compiled.program
    assert rel_error(compiled(x), _f64(model, x)) <= 1e-4


def _state(compiled):
    return [state_tensor(compiled.module, n, p) for n, p in compiled.exported.state]


def test_range_fact_of_finite_nan_inf_empty_and_integer_buffers():
    assert range_fact(torch.tensor([0.3, 1.7])) == (0.25, 2.0)  # outward to powers of two
    assert range_fact(torch.tensor([-3.0, 5.0])) == (-4.0, 8.0)
    assert range_fact(torch.tensor([-1.0, -0.75])) == (-1.0, -0.5)
    assert range_fact(torch.tensor([0.0, -0.0])) == (0.0, 0.0)
    assert range_fact(torch.tensor([1.0, 1.0], dtype=torch.bfloat16)) == (1.0, 1.0)
    assert range_fact(torch.tensor([60000.0], dtype=torch.float16)) == (32768.0, 65504.0)  # not past max
    assert range_fact(torch.tensor([1.0, float("nan")])) is None
    assert range_fact(torch.tensor([1.0, float("inf")])) is None
    assert range_fact(torch.tensor([-float("inf")], dtype=torch.bfloat16)) is None
    assert range_fact(torch.empty(0)) is None
    assert range_fact(torch.tensor([1, 2])) is None  # integers: not ranged
    assert range_fact(torch.tensor([True])) is None
    assert range_fact(torch.ones(2, dtype=torch.complex64)) is None
    assert range_fact(torch.ones(2, device="meta")) is None
    t = torch.tensor([0.3, 1.7])
    assert range_holds(t, 0.25, 2.0) and range_holds(t, float(t[0]), float(t[1]))  # exact ends
    assert not range_holds(t, 0.5, 2.0) and not range_holds(t, 0.25, 1.5)
    assert not range_holds(torch.tensor([1.0, float("nan")]), -10.0, 10.0)
    assert not range_holds(torch.tensor([float("inf")]), -10.0, 10.0)
    assert not range_holds(torch.empty(0), -10.0, 10.0)


def test_range_attribute_round_trips_exactly():
    lo, hi = float(np.float32(-9.99999974737875163e-06)), 2.0**-149
    attr = range_attr(lo, hi)
    text = (f"func.func @f(%a: tensor<2xf64> {{{attr}}}) -> tensor<2xf64> {{\n"
            "  func.return %a : tensor<2xf64>\n}\n")  # fmt: skip
    f = entry_function(parse_module(make_context(), text), "f")
    assert argument_range(f.body.blocks.first.args[0]) == Range(lo, hi)


def test_guard_carries_mask_and_range_and_reduces_only_when_the_buffer_changes(monkeypatch):
    mask = torch.tril(torch.ones(4, 4))
    g = Guard.of(0, mask, ranged=True)
    assert g is not None and g.mask == ("tilefuse.zero_above", 0) and g.range == (0.0, 1.0)
    assert g.exact  # (a tril of ones: every key at and below the diagonal kept)
    assert g.attr == "tilefuse.zero_above = 0 : i64, tilefuse.mask_exact, " + range_attr(0.0, 1.0)
    assert Guard.of(0, mask).range is None  # not ranged: the mask alone
    assert Guard.of(0, torch.ones(8)) is None and Guard.of(0, torch.ones(8), ranged=True).mask is None
    assert Guard.of(0, torch.tensor([1.0, float("nan")]), ranged=True) is None
    assert Guard.of(0, torch.arange(4), ranged=True) is None
    calls = []
    real = buffers.range_holds
    monkeypatch.setattr(buffers, "range_holds", lambda *a: calls.append(1) or real(*a))
    var = torch.ones(8)
    g = Guard.of(0, var, ranged=True)
    assert all(g.check(var) for _ in range(100)) and not calls  # a tuple compare a call
    var.fill_(-1.0)  # written: its version moved
    assert not g.check(var) and not g.check(var) and len(calls) == 1
    var.fill_(1.0)
    assert g.check(var) and len(calls) == 2


# value_range on float payloads: every value the op gives (numpy, rounding to
# nearest in the type) lies in its range, and the range is None where NaN may be.

F = {"f32": np.float32, "f16": np.float16, "f64": np.float64}


def _program(op: str, t: str, a: tuple[float, float], b: tuple[float, float] | None) -> str:
    args = [f"%a: tensor<4x{t}> {{{range_attr(*a)}}}"]
    if b is not None:
        args.append(f"%b: tensor<4x{t}> {{{range_attr(*b)}}}")
    n = len(args)
    maps = ", ".join(["affine_map<(d0) -> (d0)>"] * (n + 1))
    ins = ", ".join(["%a", "%b"][:n])
    ops = "math.sqrt %x" if op == "sqrt" else f"arith.{op} %x" if n == 1 else f"arith.{op} %x, %y"
    return (f"func.func @f({', '.join(args)}) -> tensor<4x{t}> {{\n"
            f"  %e = tensor.empty() : tensor<4x{t}>\n"
            f"  %r = linalg.generic {{indexing_maps = [{maps}], iterator_types = [\"parallel\"]}} "
            f"ins({ins} : {', '.join([f'tensor<4x{t}>'] * n)}) outs(%e : tensor<4x{t}>) {{\n"
            f"  ^bb0({', '.join(['%x: ' + t, '%y: ' + t][:n])}, %o: {t}):\n"
            f"    %z = {ops} : {t}\n    linalg.yield %z : {t}\n  }} -> tensor<4x{t}>\n"
            f"  func.return %r : tensor<4x{t}>\n}}\n")  # fmt: skip


def _range(op: str, t: str, a, b=None, facts=None) -> Range | None:
    f = entry_function(parse_module(make_context(), _program(op, t, a, b)), "f")
    ret = f.body.blocks.first.last_op
    return value_range(ret.operands[0]) if facts is None else value_range(ret.operands[0], facts=facts)


def _samples(lo: float, hi: float, dt) -> np.ndarray:
    rng = np.random.default_rng(0)
    edges = np.array([lo, hi, 0.0, -0.0, np.nextafter(dt(lo), dt(hi)), np.nextafter(dt(hi), dt(lo))])
    xs = np.concatenate([edges, rng.uniform(lo, hi, 64)]).astype(dt)
    return xs[(xs >= lo) & (xs <= hi)]


_OPS = {"addf": np.add, "subf": np.subtract, "mulf": np.multiply, "divf": np.divide,
        "maximumf": np.maximum, "minimumf": np.minimum}  # fmt: skip
_CASES = [(0.0, 1.0), (-2.0, -0.5), (-3.0, 5.0), (1e-5, 1e-5), (0.5, 60000.0), (-1e-38, 1e-38)]


@pytest.mark.parametrize("t", ["f32", "f16", "f64"])
@pytest.mark.parametrize("op", sorted(_OPS))
def test_float_binary_ranges_hold_every_value(op, t):
    dt = F[t]
    with np.errstate(all="ignore"):
        for a, b in itertools.product(_CASES, repeat=2):
            if t == "f16" and max(abs(a[0]), abs(a[1]), abs(b[0]), abs(b[1])) > 65504:
                continue
            r = _range(op, t, a, b)
            xs, ys = _samples(*a, dt), _samples(*b, dt)
            got = _OPS[op](xs[:, None], ys[None, :]).astype(dt).ravel()
            if r is None:
                continue
            assert not np.isnan(got).any(), (op, t, a, b, r)
            assert ((got >= r.lo) & (got <= r.hi)).all(), (op, t, a, b, r, got.min(), got.max())
    # where NaN may come, no range: 0 / 0
    assert _range("divf", t, (0.0, 1.0), (0.0, 1.0)) is None


@pytest.mark.parametrize("t", ["f32", "f16", "f64"])
def test_sqrt_and_negf_ranges(t):
    dt = F[t]
    for a in [(0.0, 4.0), (1e-5, 2.0), (0.0, 0.0), (2.0**-20, 2.0**-20)]:
        r = _range("sqrt", t, a)
        got = np.sqrt(_samples(*a, dt))
        assert r is not None and ((got >= r.lo) & (got <= r.hi)).all(), (a, r)
        # sqrt of x > 0 is > 0, unless x is subnormal (f16's 1e-5), maybe flushed to 0
        assert (r.lo > 0) == (a[0] >= np.finfo(dt).tiny)
    assert _range("sqrt", t, (-1e-3, 1.0)) is None  # NaN below 0
    assert _range("negf", t, (-3.0, 5.0)) == Range(-5.0, 3.0)


def test_rounding_is_outward_and_overflow_is_infinite_never_nan():
    # f32(1e-5) < 1e-5: the constant's range holds the value its type gives
    r = _range("addf", "f32", (0.0, 0.0), (1e-5, 1e-5))
    assert r.lo <= float(np.float32(1e-5)) <= r.hi and r.lo > 0
    # f16: 60000 + 60000 overflows to inf (a range to inf, not None); inf - inf is NaN
    r = _range("addf", "f16", (0.5, 60000.0), (0.5, 60000.0))
    assert r is not None and r.hi == math.inf
    # subnormal sums may flush to 0 on the GPU: a range reaching them starts at 0
    r = _range("addf", "f32", (0.0, 0.0), (2.0**-140, 2.0**-140))
    assert r is not None and r.lo == 0.0
    # no facts: nothing is known of a function argument
    assert _range("addf", "f32", (0.0, 1.0), (1.0, 1.0), facts=NO_FACTS) is None


def test_an_infinite_end_gives_no_range_where_nan_may_come():
    """f16 60000 + 60000 = inf; inf - inf and inf * 0 are NaN: no range, and the
    comparison reading it is unknown, never proved."""
    text = (f"func.func @f(%a: tensor<4xf16> {{{range_attr(0.0, 60000.0)}}}) -> tensor<4xi1> {{\n"
            "  %zero = arith.constant 0.0 : f16\n"
            "  %e = tensor.empty() : tensor<4xi1>\n"
            "  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], "
            "iterator_types = [\"parallel\"]} ins(%a : tensor<4xf16>) outs(%e : tensor<4xi1>) {\n"
            "  ^bb0(%x: f16, %o: i1):\n"
            "    %s = arith.addf %x, %x : f16\n    %d = arith.subf %s, %s : f16\n"
            "    %m = arith.mulf %s, %zero : f16\n    %c = arith.cmpf oeq, %d, %d : f16\n"
            "    linalg.yield %c : i1\n  } -> tensor<4xi1>\n"
            "  func.return %r : tensor<4xi1>\n}\n")  # fmt: skip
    f = entry_function(parse_module(make_context(), text), "f")
    ops = {str(op.results[0].name_hint): op for op in f.walk() if op.results}
    assert value_range(ops["s"].results[0]).hi == math.inf
    assert value_range(ops["d"].results[0]) is None
    assert value_range(ops["m"].results[0]) is None
    assert value_range(ops["c"].results[0]) == Range(0, 1)
