"""`frontend/generalise.py`: one dynamic program from static instances of it."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from tilefuse.frontend.generalise import Instance, SizeExpr, fit, floor_fit, generalise
from tilefuse.frontend.parse import parse_module
from tilefuse.ir.context import make_context
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.dynamic import DimRange, set_ranges
from tilefuse.ir.module import entry_function
from tilefuse.ir.resources import module_text
from tilefuse.oracle.reference import evaluate
from tilefuse.torch.dynamic import SizeSymbol, instance_points, symbol_divisors


def test_fit_finds_integer_polynomials_and_checks_the_extra_points():
    one = [{"T": 37}, {"T": 53}, {"T": 41}]
    assert str(fit(one, [74, 106, 82])) == "2*T"
    assert str(fit(one, [38, 54, 42])) == "1 + T"
    assert fit(one, [5, 5, 5]) == SizeExpr(((frozenset(), 5),))
    assert fit(one, [18, 26, 20]) is None  # T // 2: not an integer polynomial
    assert fit(one, [37, 53, 40]) is None  # the third point disagrees
    assert fit(one[:2], [37, 53]) is not None and fit([{"T": 37}], [37]) is None
    two = [{"B": 2, "T": 37}, {"B": 3, "T": 37}, {"B": 2, "T": 53}, {"B": 3, "T": 53},
           {"B": 5, "T": 41}]  # fmt: skip
    assert str(fit(two, [p["B"] * p["T"] * 4 + 1 for p in two])) == "1 + 4*B*T"


PROGRAM = """
func.func @f(%x: tensor<2x{T}x8xf32>) -> tensor<2x{T}x4xf32> {{
  %s = tensor.extract_slice %x[0, 0, 4] [2, {T}, 4] [1, 1, 1] : tensor<2x{T}x8xf32> to tensor<2x{T}x4xf32>
  %c = tensor.collapse_shape %s [[0, 1], [2]] : tensor<2x{T}x4xf32> into tensor<{T2}x4xf32>
  %e = tensor.empty() : tensor<{T2}x4xf32>
  %y = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]}} ins(%c : tensor<{T2}x4xf32>) outs(%e : tensor<{T2}x4xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %n = arith.constant {T} : index
    %r = arith.remui %i, %n : index
    %ri = arith.index_cast %r : index to i64
    %rf = arith.sitofp %ri : i64 to f32
    %v = arith.addf %a, %rf : f32
    linalg.yield %v : f32
  }} -> tensor<{T2}x4xf32>
  %z = tensor.expand_shape %y [[0, 1], [2]] output_shape [2, {T}, 4] : tensor<{T2}x4xf32> into tensor<2x{T}x4xf32>
  return %z : tensor<2x{T}x4xf32>
}}
"""


def _instances(text: str, sizes=(37, 53, 41)) -> list[Instance]:
    return [Instance({"T": t}, parse_module(make_context(), text.format(T=t, T2=2 * t), "f.mlir"))
            for t in sizes]  # fmt: skip


def test_sizes_become_dynamic_and_are_computed_from_the_symbols():
    module = generalise(_instances(PROGRAM), {"T": (0, 1)})
    text = module_text(module)
    assert "func.func @f(%x: tensor<2x?x8xf32>) -> tensor<2x?x4xf32>" in text
    assert "%T = tensor.dim %x, %" in text
    assert "tensor.empty(%" in text and ": tensor<?x4xf32>" in text  # 2*T, computed
    # the slice keeps the whole dim: its size is its source's (the form fusion reads)
    assert "tensor.extract_slice %x[0, 0, 4] [2, %" in text
    assert "output_shape [2, %T, 4]" in text
    assert "arith.remui %i, %T" in text  # the index constant is the size
    # the same program as each instance: evaluate it at sizes none was traced at
    f = entry_function(module)
    set_ranges(f, {"x.1": DimRange(1, 100)})
    reparsed = parse_module(make_context(), module_text(module), "g.mlir",
                            dim_ranges={"x.1": DimRange(1, 100)})  # fmt: skip
    for t in (1, 5, 64):
        x = np.random.default_rng(t).standard_normal((2, t, 8)).astype(np.float32)
        (got,) = evaluate(reparsed, [x])
        want = x[:, :, 4:] + (np.arange(2 * t) % t).reshape(2, t, 1)
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize(("constant", "want"), [("{T}.0", lambda t: t), ("{R}", lambda t: 1 / t)])
def test_a_float_constant_that_is_a_size_or_its_reciprocal_is_computed_from_it(constant, want):
    """A mean's divisor (`T` as a float) or its reciprocal, a float constant at each
    static size: `sitofp(index_cast(T))` (divided into 1)."""
    text = PROGRAM.replace("%rf = arith.sitofp %ri : i64 to f32", f"%rf = arith.constant {constant} : f32")
    instances = [Instance({"T": t}, parse_module(make_context(), text.format(T=t, T2=2 * t, R=repr(float(
        np.float32(1 / t)))), "f.mlir")) for t in (37, 53, 41)]  # fmt: skip
    module = generalise(instances, {"T": (0, 1)})
    assert "arith.sitofp" in module_text(module)
    reparsed = parse_module(make_context(), module_text(module), "g.mlir", dim_ranges={"x.1": DimRange(1, 100)})
    for t in (1, 5, 64):
        x = np.random.default_rng(t).standard_normal((2, t, 8)).astype(np.float32)
        (got,) = evaluate(reparsed, [x])
        np.testing.assert_allclose(got, x[:, :, 4:] + np.float32(want(t)), rtol=1e-6)


def test_what_varies_otherwise_is_a_located_refusal():
    scaled = PROGRAM.replace("%rf = arith.sitofp %ri : i64 to f32",
                             "%rf = arith.constant {T}.5 : f32")  # fmt: skip
    with pytest.raises(CompileError, match=r"f.mlir:\d+:\d+: .*'arith.constant' op has value "
                       r"= 37.5 in one instance, 53.5 in another, and it is not a size or the "
                       r"reciprocal of one"):  # fmt: skip
        generalise(_instances(scaled), {"T": (0, 1)})
    halved = PROGRAM.replace("%n = arith.constant {T} : index", "%n = arith.constant {H} : index")
    texts = [halved.format(T=t, T2=2 * t, H=t // 2) for t in (37, 53, 41)]
    instances = [Instance({"T": t}, parse_module(make_context(), s, "f.mlir"))
                 for t, s in zip((37, 53, 41), texts, strict=True)]  # fmt: skip
    with pytest.raises(CompileError, match=r"has the value 18 at \{'T': 37\}, 26 at \{'T': 53\}, "
                       r"20 at \{'T': 41\}, not an integer polynomial of the sizes"):  # fmt: skip
        generalise(instances, {"T": (0, 1)})
    other = PROGRAM.replace("arith.addf %a, %rf", "arith.mulf %a, %rf")
    mixed = _instances(PROGRAM, (37, 53)) + _instances(other, (41,))
    with pytest.raises(CompileError, match=r"'arith\.addf' op stands where another instance has "
                       r"'arith\.mulf'"):  # fmt: skip
        generalise(mixed, {"T": (0, 1)})
    with pytest.raises(ValueError, match="1 symbols need 3 instances"):
        generalise(_instances(PROGRAM, (37, 53)), {"T": (0, 1)})


def test_floor_fit_finds_strided_sizes_when_the_points_fix_them():
    """A stride-2 convolution's rows `(H + 1) // 2` and `T // 2`: one function each
    (its forms over 4 are the same function); at odd sizes only, `(H + 1) // 2` and
    `(H + 2) // 2` agree: ambiguous, no fit; a size no divisor rounds to: none."""
    points = [{"H": h} for h in (37, 53, 41, 74, 254)]
    e = floor_fit(points, [(h["H"] + 1) // 2 for h in points])
    assert e is not None and str(e) == "(1 + H) // 2" and e.at({"H": 10}) == 5
    assert str(floor_fit(points, [h["H"] // 2 for h in points])) == "(H) // 2"
    # (no point a multiple of 3: H // 3 and (H - 1) // 3 agree at every one)
    assert floor_fit(points, [(h["H"] - 3) // 3 + 1 for h in points]) is None
    odd = [{"H": h} for h in (37, 53, 41, 43, 59)]
    assert floor_fit(odd, [(h["H"] + 1) // 2 for h in odd]) is None
    assert floor_fit(points, [h["H"] * h["H"] // 7 for h in points]) is None
    two = [{"B": b, "H": h} for b in (3, 5) for h in (37, 53)] + [{"B": 7, "H": 74}, {"B": 2, "H": 254}]
    e = floor_fit(two, [p["B"] * ((p["H"] + 1) // 2) for p in two])
    assert e is None  # (B * ((H + 1) // 2) is not one polynomial rounded down)
    e = floor_fit(two, [(p["B"] * p["H"] + 1) // 2 for p in two])
    assert e is not None and e.at({"B": 3, "H": 7}) == 11


def test_fit_divides_where_the_symbols_divisors_allow():
    """A head width of `w / 4` where dynamo guards `w` to be a multiple of 4: a
    polynomial over 4. Without that divisor, or over a denominator the divisors do
    not make exact (`w / 8`), no fit."""
    points = [{"w": 4 * p} for p in (37, 53, 41, 43)]
    quarter = [p["w"] // 4 for p in points]
    assert fit(points, quarter) is None
    e = fit(points, quarter, {"w": 4})
    assert e == SizeExpr(((frozenset({"w"}), 1),), 4) and str(e) == "(w) / 4"
    assert fit(points, [3 * p["w"] // 8 for p in points], {"w": 4}) is None
    two = [{"b": b, "w": w} for b in (3, 5) for w in (8, 12)] + [{"b": 7, "w": 20}]
    e = fit(two, [p["b"] * p["w"] // 4 + 1 for p in two], {"w": 4})
    assert e is not None and e.divisor == 4 and e.constant is None


def test_instance_points_keep_to_the_guards():
    w = sympy.Symbol("s1", integer=True, positive=True)
    guards = [sympy.Eq(sympy.Mod(w, 4), 0), sympy.Ne(w, 4)]
    found = [SizeSymbol("s1", 2, 4096, ((0, 1),))]
    points = instance_points(found, guards)
    assert len(points) >= 3 and all(p["s1"] % 4 == 0 and p["s1"] != 4 for p in points)
    assert len({p["s1"] for p in points}) >= 3
    assert symbol_divisors(found, guards) == {"s1": 4}
