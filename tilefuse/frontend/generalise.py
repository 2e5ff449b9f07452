"""
One dynamic program from static instances of it: sizes as functions of symbols.

A front end that can trace a program at any size, but whose lowering to linalg is
only well-behaved at static sizes (torch-mlir's: its dynamic-size lowering writes
shape arithmetic, run-time asserts and broadcast gathers where the static one writes
plain linalg), traces it at a few sizes of its symbols (a sequence length `T`, a
batch `B`) and hands the static modules here:

```python
instances = [Instance({"T": 37}, m37), Instance({"T": 53}, m53), Instance({"T": 41}, m41)]
dynamic = generalise(instances, {"T": (0, 1)})   # T is dim 1 of argument 0
```

The modules must be the same program: the same ops in the same order with the same
attributes, except integers that depend on the symbols (sizes in types, slice and
expand sizes, index constants, a float constant that is a size or its reciprocal:
a mean's divisor). Each such integer is fitted as a multilinear
polynomial with integer coefficients in the symbols (`2*T`, `B*T`, `T + 1`), exactly
over every instance (more instances than monomials: the extra ones check the fit).
The result is the first instance with every varying size `?` in its types, the
symbols read once with `tensor.dim` from their source arguments, and each size an
op needs (`tensor.empty`, `expand_shape`, `extract_slice`, an index constant)
computed from them. What does not fit (another float constant that depends on a
size, `T // 2`, ops that differ between sizes) is a `CompileError` naming the op.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.ir.constants import constant_array, is_splat
from tilefuse.ir.diagnostics import CompileError, op_location
from tilefuse.ir.linalg_named import FillOp
from tilefuse.ir.structured import constant_of, dim_of

Monomial = frozenset[str]


@dataclass(frozen=True)
class Instance:
    """A static module and the symbol values it was traced at."""

    sizes: Mapping[str, int]
    module: ModuleOp


@dataclass(frozen=True)
class SizeExpr:
    """A multilinear polynomial in the symbols with integer coefficients, over a
    positive `divisor` that divides it at every size the symbols' divisors allow
    (`fit`: a view into 4 heads of a width dynamo guards to be a multiple of 4)."""

    terms: tuple[tuple[Monomial, int], ...]
    divisor: int = 1
    floor: bool = False
    """The polynomial over `divisor` rounded down (`floor_fit`: a strided window's
    positions, `(H - 1) // 2 + 1`), not exact."""

    @property
    def constant(self) -> int | None:
        if all(not m for m, _ in self.terms):
            return sum(c for _, c in self.terms) // self.divisor
        return None

    def __str__(self) -> str:
        parts = ["*".join([*([str(c)] if c != 1 or not m else []), *sorted(m)])
                 for m, c in self.terms]  # fmt: skip
        text = " + ".join(parts) or "0"
        return text if self.divisor == 1 else f"({text}) {'//' if self.floor else '/'} {self.divisor}"

    def at(self, point: Mapping[str, int]) -> int:
        """The size at `point` (rounded down over the divisor)."""
        return sum(c * _product(point, m) for m, c in self.terms) // self.divisor


def _monomials(symbols: Sequence[str]) -> list[Monomial]:
    return [frozenset(s) for r in range(len(symbols) + 1)
            for s in itertools.combinations(symbols, r)]  # fmt: skip


def fit(points: Sequence[Mapping[str, int]], values: Sequence[int],
        divisors: Mapping[str, int] | None = None) -> SizeExpr | None:  # fmt: skip
    """The multilinear polynomial through every (point, value), or None (no such
    polynomial, or the points do not fix it): with integer coefficients, or with
    rational ones of least common denominator `D` where the symbols' `divisors`
    (each symbol a multiple of its own) make `D` divide its numerator at every
    size (each term's coefficient times its symbols' divisors a multiple of `D`)."""
    symbols = sorted(points[0])
    basis = _monomials(symbols)
    rows = [[Fraction(_product(p, m)) for m in basis] + [Fraction(v)]
            for p, v in zip(points, values, strict=True)]  # fmt: skip
    pivots: list[int] = []
    r = 0
    for c in range(len(basis)):
        pivot = next((i for i in range(r, len(rows)) if rows[i][c] != 0), None)
        if pivot is None:
            return None  # the points do not determine this monomial's coefficient
        rows[r], rows[pivot] = rows[pivot], rows[r]
        rows[r] = [x / rows[r][c] for x in rows[r]]
        for i in range(len(rows)):
            if i != r and rows[i][c] != 0:
                rows[i] = [a - rows[i][c] * b for a, b in zip(rows[i], rows[r], strict=True)]
        pivots.append(c)
        r += 1
    if any(row[-1] != 0 for row in rows[r:]):
        return None  # the extra points disagree: not multilinear
    coefficients = [rows[i][-1] for i in range(len(basis))]
    d = math.lcm(*(c.denominator for c in coefficients))
    numerators = [(m, int(c * d)) for m, c in zip(basis, coefficients, strict=True) if c]
    if any(n * math.prod((divisors or {}).get(s, 1) for s in m) % d for m, n in numerators):
        return None  # (a size that is not an integer at some size in range)
    return SizeExpr(tuple(numerators), d)


FLOOR_DIVISORS = (2, 3, 4)
"""What `floor_fit` divides by: the strides of convolutions and pools."""


def floor_fit(points: Sequence[Mapping[str, int]], values: Sequence[int]) -> SizeExpr | None:
    """An integer multilinear polynomial `P` and a divisor `d` of `FLOOR_DIVISORS`
    with `P // d` the value at every point (a stride-2 convolution's output rows
    `(H + 1) // 2`), if exactly one such function fits (`P` and `d` without a common
    factor, the least divisor among forms of one function); None otherwise, or where
    the points leave it ambiguous (all sizes odd: `(H + 1) // 2` and `(H + 2) // 2`
    agree there). `P` is fitted through the first
    points at each choice of their remainders, then checked at every point."""
    basis = _monomials(sorted(points[0]))
    m = len(basis)
    if len(points) <= m:
        return None
    found: set[SizeExpr] = set()
    for d in FLOOR_DIVISORS:
        if d**m > 4096:
            continue
        for rems in itertools.product(range(d), repeat=m):
            e = fit(points[:m], [d * v + r for v, r in zip(values, rems, strict=False)])
            if e is None or e.divisor != 1 or math.gcd(d, *(c for _, c in e.terms)) != 1:
                continue
            candidate = SizeExpr(e.terms, d, floor=True)
            if all(candidate.at(p) == v for p, v in zip(points, values, strict=True)):
                found.add(candidate)
    # One function may have several forms (`(2H + 3) // 4` is `(H + 1) // 2`): told
    # apart by their values at small sizes, where they would differ.
    symbols = sorted(points[0])
    grid = [dict(zip(symbols, p, strict=True)) for p in itertools.product(range(1, 25), repeat=len(symbols))]
    functions = {tuple(c.at(p) for p in grid[:4096]): c for c in sorted(found, key=lambda c: -c.divisor)}
    return next(iter(functions.values())) if len(functions) == 1 else None


def _product(point: Mapping[str, int], m: Monomial) -> int:
    out = 1
    for s in m:
        out *= point[s]
    return out


class _Sizes:
    """The size values of the dynamic function, made once each at its entry."""

    def __init__(self, f: func.FuncOp, sources: Mapping[str, tuple[int, int]]):
        self.block = f.body.block
        self.sources = sources
        self.made: dict[object, SSAValue] = {}
        self.ops: list[Operation] = []
        self.shapes: dict[SSAValue, list[SizeExpr]] = {}
        """Each value made dynamic: its dims' sizes."""

    def _add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def index(self, n: int) -> SSAValue:
        key = ("const", n)
        if key not in self.made:
            self.made[key] = self._add(arith.ConstantOp(IntegerAttr(n, IndexType())))
        return self.made[key]

    def symbol(self, s: str) -> SSAValue:
        if s not in self.made:
            arg, axis = self.sources[s]
            dim = tensor.DimOp(self.block.args[arg], self.index(axis))
            dim.result.name_hint = s
            self.made[s] = self._add(dim)
        return self.made[s]

    def value(self, e: SizeExpr) -> SSAValue:
        if e in self.made:
            return self.made[e]
        total: SSAValue | None = None
        for m, c in e.terms:
            term: SSAValue | None = None
            for s in sorted(m):
                v = self.symbol(s)
                term = v if term is None else self._add(arith.MuliOp(term, v))
            if term is None:
                term = self.index(c)
            elif c != 1:
                term = self._add(arith.MuliOp(term, self.index(c)))
            total = term if total is None else self._add(arith.AddiOp(total, term))
        assert total is not None
        if e.divisor != 1:  # (exact where `fit` checked the divisors; else rounded down)
            total = self._add(arith.DivUIOp(total, self.index(e.divisor)))
        self.made[e] = total
        return total

    def insert(self) -> None:
        Rewriter.insert_op(self.ops, InsertPoint.at_start(self.block))


_SIZE_ATTRS = {
    ("tensor.extract_slice", "static_offsets"),
    ("tensor.extract_slice", "static_sizes"),
    ("tensor.extract_slice", "static_strides"),
    ("tensor.expand_shape", "static_output_shape"),
    ("arith.constant", "value"),
}


class _Generaliser:
    """Compare the instances op by op and record what varies, fitted."""

    def __init__(self, instances: Sequence[Instance], divisors: Mapping[str, int] | None = None):
        self.points = [i.sizes for i in instances]
        self.walks = [list(i.module.walk()) for i in instances]
        self.divisors = divisors

    def error(self, op: Operation, why: str) -> CompileError:
        return CompileError(f"'{op.name}' op {why}: the program is not the same at every "
                            "size, so it cannot compile once for a range of sizes",
                            op_location(op))  # fmt: skip

    def fitted(self, op: Operation, values: Sequence[int], what: str) -> SizeExpr:
        e = fit(self.points, values, self.divisors) or floor_fit(self.points, values)
        if e is None:
            sizes = ", ".join(f"{v} at {dict(p)}" for v, p in zip(values, self.points, strict=True))
            raise self.error(op, f"has {what} {sizes}, not an integer polynomial of the sizes")
        return e

    def shape(self, op: Operation, types: Sequence[Attribute]) -> list[SizeExpr] | None:
        """Each dim of a tensor type across the instances, fitted; None when static."""
        first = types[0]
        if not isinstance(first, TensorType):
            return None
        shapes = [t.get_shape() for t in types]  # pyright: ignore[reportAttributeAccessIssue]
        if all(s == shapes[0] for s in shapes) and all(t == first for t in types):
            return None
        if any(not isinstance(t, TensorType) or t.element_type != first.element_type
               or len(t.get_shape()) != len(shapes[0]) for t in types):  # fmt: skip
            raise self.error(op, f"has type {first} in one instance, {types[1]} in another")
        return [self.fitted(op, [s[d] for s in shapes], "a size")
                for d in range(len(shapes[0]))]  # fmt: skip

    def compare(self) -> dict[Operation, dict[str, list[SizeExpr]]]:
        """Per op of the first instance, what varies: `results`/`args` shapes
        (one list per value, by index) and the varying size attributes."""
        if len({len(w) for w in self.walks}) != 1:
            raise CompileError("the instances have different numbers of ops: the program "
                               "is not the same at every size")  # fmt: skip
        varying: dict[Operation, dict[str, list[SizeExpr]]] = {}
        for ops in zip(*self.walks, strict=True):
            found = self.compare_op(ops)
            if found:
                varying[ops[0]] = found
        return varying

    def compare_op(self, ops: Sequence[Operation]) -> dict[str, list[SizeExpr]]:
        op = ops[0]
        if any(o.name != op.name or len(o.results) != len(op.results)
               or len(o.operands) != len(op.operands) for o in ops):  # fmt: skip
            other = next(o for o in ops if o.name != op.name or len(o.results) != len(op.results))
            raise self.error(op, f"stands where another instance has '{other.name}'")
        found = self.value_shapes(ops)
        for key in sorted(set(op.properties) | set(op.attributes)):
            values = [o.properties.get(key, o.attributes.get(key)) for o in ops]
            if all(v == values[0] for v in values):
                continue
            if key == "function_type":
                continue  # follows from the entry block's argument and result types
            if (op.name, key) not in _SIZE_ATTRS:
                raise self.error(op, f"has attribute {key} = {values[0]} in one instance, "
                                     f"{values[1]} in another")  # fmt: skip
            if all(isinstance(v, FloatAttr) for v in values):
                key, fitted = self.float_value(op, [v.value.data for v in values])  # pyright: ignore
                found[key] = [fitted]
                continue
            if self.varying_splats(ops):  # (a 0-d tensor of T or 1 / T: `x * (1.0 / x.shape[1])`)
                numbers = [constant_array(o).flat[0] for o in ops]
                if isinstance(ops[0].results[0].type.get_element_type(), AnyFloat):  # pyright: ignore
                    key, fitted = self.float_value(op, [float(n) for n in numbers])
                else:
                    key, fitted = "value", self.fitted(op, [int(n) for n in numbers], "a value")
                found[f"splat_{key}"] = [fitted]
                continue
            found[key] = self.attribute(ops, key, values)
        return found

    @staticmethod
    def varying_splats(ops: Sequence[Operation]) -> bool:
        """Splat constants (floats, or integers wider than i1) of one static type whose
        value varies (a size: `where(m, arange(n), n)`)."""
        types = [o.results[0].type for o in ops]
        return (all(t == types[0] for t in types) and isinstance(types[0], TensorType)
                and (isinstance(et := types[0].get_element_type(), AnyFloat)
                     or (isinstance(et, IntegerType) and et.width.data > 1))
                and all(isinstance(o, arith.ConstantOp) and is_splat(o) for o in ops)
                and len({_splat_bits(o) for o in ops}) > 1)  # fmt: skip

    def float_value(self, op: Operation, values: Sequence[float]) -> tuple[str, SizeExpr]:
        """A float constant that varies with the sizes: a size as a float (`value`: a
        mean's divisor, `T` or `B*T`) or its reciprocal (`reciprocal`: `1 / T`), each
        fitted as an integer polynomial of the sizes."""
        for key, numbers in (("value", values), ("reciprocal", [1 / v if v else math.inf for v in values])):
            rounded = [round(n) if math.isfinite(n) else None for n in numbers]
            if all(r is not None and r != 0 and abs(n - r) <= 1e-6 * abs(r)
                   for n, r in zip(numbers, rounded, strict=True)):  # fmt: skip
                e = fit(self.points, rounded, self.divisors)  # pyright: ignore[reportArgumentType]
                if e is not None:
                    return key, e
        raise self.error(op, f"has value = {values[0]} in one instance, {values[1]} in another, "
                             "and it is not a size or the reciprocal of one")  # fmt: skip

    def value_shapes(self, ops: Sequence[Operation]) -> dict[str, list[SizeExpr]]:
        """The varying shapes of the op's results (`result<i>`) and of its regions'
        block arguments (`arg<region>.<block>.<i>`)."""
        op = ops[0]
        found: dict[str, list[SizeExpr]] = {}
        for i in range(len(op.results)):
            shape = self.shape(op, [o.results[i].type for o in ops])
            if shape is not None:
                found[f"result{i}"] = shape
        for r, region in enumerate(op.regions):
            for b, block in enumerate(region.blocks):
                for a in range(len(block.args)):
                    shape = self.shape(op, [o.regions[r].blocks[b].args[a].type for o in ops])
                    if shape is not None:
                        found[f"arg{r}.{b}.{a}"] = shape
        return found

    def attribute(self, ops: Sequence[Operation], key: str,
                  values: Sequence[Attribute]) -> list[SizeExpr]:  # fmt: skip
        op = ops[0]
        if isinstance(values[0], IntegerAttr):
            if not all(isinstance(v, IntegerAttr) for v in values):
                raise self.error(op, f"has {key} of different kinds")
            return [self.fitted(op, [v.value.data for v in values], "the value")]  # pyright: ignore
        if isinstance(values[0], DenseIntOrFPElementsAttr):
            types = [v.type for v in values]  # pyright: ignore[reportAttributeAccessIssue]
            if not all(is_splat(o) for o in ops) or len({_splat_bits(o) for o in ops}) != 1:
                raise self.error(op, f"has a {key} whose elements vary with the sizes")
            return self.shape(op, types) or []
        if isinstance(values[0], DenseArrayBase):
            lists = [v.get_values() for v in values]  # pyright: ignore[reportAttributeAccessIssue]
            if len({len(x) for x in lists}) != 1:
                raise self.error(op, f"has {key} of different lengths")
            return [self.fitted(op, [x[d] for x in lists], key) for d in range(len(lists[0]))]
        raise self.error(op, f"has {key} = {values[0]} in one instance, {values[1]} in another, "
                             "and it is not an integer size")  # fmt: skip


def generalise(instances: Sequence[Instance], sources: Mapping[str, tuple[int, int]],
               divisors: Mapping[str, int] | None = None) -> ModuleOp:  # fmt: skip
    """The first instance's module made dynamic in the symbols of `sources`
    (symbol -> (argument, dim) of the entry function where it is read; `divisors`:
    what each symbol is a multiple of, over its whole range); the instances must fix
    the fits (at least one point more than the monomials in the symbols, which are
    2 ** len(sources)). A `CompileError` when they do not agree as one program."""
    if len(instances) < 2 ** len(sources) + 1:
        raise ValueError(f"{len(sources)} symbols need {2 ** len(sources) + 1} instances")
    varying = _Generaliser(instances, divisors).compare()
    module = instances[0].module
    (f,) = [op for op in module.ops if isinstance(op, func.FuncOp)]
    sizes = _Sizes(f, sources)
    for op, found in varying.items():
        _rewrite(op, found, sizes)
    f.function_type = FunctionType.from_lists(
        [a.type for a in f.body.block.args],
        [v.type for v in f.body.block.last_op.operands],  # pyright: ignore[reportOptionalMemberAccess]
    )
    sizes.insert()
    return module


def _dynamic_type(t: Attribute, shape: Sequence[SizeExpr]) -> TensorType:
    assert isinstance(t, TensorType)
    dims = [DYNAMIC_INDEX if e.constant is None else e.constant for e in shape]
    return TensorType(t.element_type, dims)


def _entry_argument_source(op: Operation, found: dict[str, list[SizeExpr]],
                           sources: Mapping[str, tuple[int, int]]) -> None:  # fmt: skip
    """An entry argument's varying dims must each be one symbol read from it, or
    the same as such a one (another argument with the symbol's size)."""
    for key, shape in found.items():
        for d, e in enumerate(shape):
            if e.constant is None and not (len(e.terms) == 1 and e.terms[0][1] == 1
                                           and len(e.terms[0][0]) == 1 and e.divisor == 1):  # fmt: skip
                raise CompileError(f"argument {key.rsplit('.', 1)[-1]} dim {d} has size {e}: "
                                   "a dynamic argument dim must be one symbol",
                                   op_location(op))  # fmt: skip


def _rewrite(op: Operation, found: dict[str, list[SizeExpr]], sizes: _Sizes) -> None:
    if isinstance(op, func.FuncOp):
        _entry_argument_source(op, found, sizes.sources)
    for key, shape in found.items():
        if key.startswith("arg"):
            r, b, a = (int(x) for x in key[3:].split("."))
            arg = op.regions[r].blocks[b].args[a]
            new = Rewriter.replace_value_with_new_type(arg, _dynamic_type(arg.type, shape))
            sizes.shapes[new] = shape
    rewrite = _REWRITES.get(type(op))
    if rewrite is not None:
        rewrite(op, found, sizes)
        return
    for key, shape in found.items():
        if key.startswith("result"):
            result = op.results[int(key.removeprefix("result"))]
            new = Rewriter.replace_value_with_new_type(result, _dynamic_type(result.type, shape))
            sizes.shapes[new] = shape


def _replace_empty(op: tensor.EmptyOp, found: dict[str, list[SizeExpr]], sizes: _Sizes) -> None:
    (shape,) = found.values()
    t = _dynamic_type(op.tensor.type, shape)
    empty = tensor.EmptyOp([sizes.value(e) for e in shape if e.constant is None], t)
    Rewriter.replace_op(op, empty)
    sizes.shapes[empty.tensor] = shape


def _replace_constant(op: arith.ConstantOp, found: dict[str, list[SizeExpr]],
                      sizes: _Sizes) -> None:  # fmt: skip
    """A size constant as the size's value; a splat of a varying shape filled."""
    t = op.result.type
    splat = next((k for k in found if k.startswith("splat_")), None)
    if splat is not None:  # a 0-d (or static splat) tensor of a size (as a float)
        assert isinstance(t, TensorType)
        et = t.get_element_type()
        if isinstance(et, AnyFloat):
            made = _float_size(found[splat][0], splat.removeprefix("splat_"), et, sizes)
        else:
            made = [arith.IndexCastOp(sizes.value(found[splat][0]), et)]
        empty = tensor.EmptyOp([], t)
        fill = FillOp([made[-1].results[0]], [empty.tensor], [t])
        Rewriter.replace_op(op, [*made, empty, fill])
        return
    if isinstance(t, TensorType):
        _replace_splat(op, found["value"], sizes)
        return
    if isinstance(t, AnyFloat):  # a size as a float, or its reciprocal
        key = "value" if "value" in found else "reciprocal"
        Rewriter.replace_op(op, _float_size(found[key][0], key, t, sizes))
        return
    value = sizes.value(found["value"][0])
    if isinstance(t, IntegerType):
        cast = arith.IndexCastOp(value, t)
        Rewriter.replace_op(op, cast)
    elif isinstance(t, IndexType):
        op.result.replace_all_uses_with(value)
        Rewriter.erase_op(op)
    else:
        raise CompileError(f"'arith.constant' op of type {t} depends on the sizes", op_location(op))


def _float_size(e: SizeExpr, key: str, t: Attribute, sizes: _Sizes) -> list[Operation]:
    """Ops computing size `e` as a float of type `t` (`key` "value"), or its
    reciprocal ("reciprocal"); the last one's result is it."""
    cast = arith.IndexCastOp(sizes.value(e), IntegerType(64))
    size = arith.SIToFPOp(cast.result, t)
    if key == "value":
        return [cast, size]
    one = constant_of(1.0, t)
    return [cast, size, one, arith.DivfOp(one.result, size.result)]


def _replace_splat(op: arith.ConstantOp, shape: list[SizeExpr], sizes: _Sizes) -> None:
    """A splat constant whose shape varies: its value filled into an empty."""
    t = _dynamic_type(op.result.type, shape)
    et = t.get_element_type()
    first = constant_array(op).flat[0]
    if isinstance(et, IntegerType):
        scalar = arith.ConstantOp(IntegerAttr(int(first) & ((1 << et.width.data) - 1)
                                              if et.width.data == 1 else int(first), et))  # fmt: skip
    else:
        scalar = constant_of(float(first), et)
    empty = tensor.EmptyOp([sizes.value(e) for e in shape if e.constant is None], t)
    fill = FillOp([scalar.result], [empty.tensor], [t])
    Rewriter.replace_op(op, [scalar, empty, fill])


def _splat_bits(op: Operation) -> bytes:
    assert isinstance(op, arith.ConstantOp)
    return constant_array(op).flat[0].tobytes()


def _static_or_value(shape: list[SizeExpr] | None, static: Sequence[int],
                     sizes: _Sizes) -> list[SSAValue | int]:  # fmt: skip
    if shape is None:
        return list(static)
    return [e.constant if e.constant is not None else sizes.value(e) for e in shape]


def _result_type(op: Operation, found: dict[str, list[SizeExpr]]) -> Attribute:
    shape = found.get("result0")
    t = op.results[0].type
    return t if shape is None else _dynamic_type(t, shape)


def _replace_slice(op: tensor.ExtractSliceOp, found: dict[str, list[SizeExpr]],
                   sizes: _Sizes) -> None:  # fmt: skip
    """Sizes as values; a size that is its source's whole dim (offset 0, stride 1)
    as `tensor.dim` of the source, the form the compiler reads as a whole dim."""
    if op.offsets or op.sizes or op.strides:
        raise CompileError("'tensor.extract_slice' op with dynamic operands is not generalised",
                           op_location(op))  # fmt: skip
    offsets = _static_or_value(found.get("static_offsets"), op.static_offsets.get_values(), sizes)
    strides = _static_or_value(found.get("static_strides"), op.static_strides.get_values(), sizes)
    extents = sizes.shapes.get(op.source)
    shape = found.get("static_sizes")
    ops: list[Operation] = []
    lengths: list[SSAValue | int] = list(op.static_sizes.get_values())
    for d, e in enumerate(shape or []):
        if e.constant is not None:
            continue
        if extents is not None and extents[d] == e and offsets[d] == 0 and strides[d] == 1:
            made, lengths[d] = dim_of(op.source, d)
            ops += made
        else:
            lengths[d] = sizes.value(e)
    new = tensor.ExtractSliceOp(op.source, offsets, lengths, strides, _result_type(op, found))
    Rewriter.replace_op(op, [*ops, new])
    sizes.shapes[new.result] = found.get("result0") or []


def _replace_expand(op: tensor.ExpandShapeOp, found: dict[str, list[SizeExpr]],
                    sizes: _Sizes) -> None:  # fmt: skip
    t = _result_type(op, found)
    assert isinstance(t, TensorType)
    shape = found.get("static_output_shape") or found.get("result0")
    values = [sizes.value(e) for e in shape or [] if e.constant is None]
    new = tensor.ExpandShapeOp(op.src, values, op.reassociation, t.get_shape(), t)
    Rewriter.replace_op(op, new)
    if shape:
        sizes.shapes[new.result] = shape



_REWRITES = {
    tensor.EmptyOp: _replace_empty,
    arith.ConstantOp: _replace_constant,
    tensor.ExtractSliceOp: _replace_slice,
    tensor.ExpandShapeOp: _replace_expand,
}
"""The ops whose sizes are operands or attributes: rebuilt with the sizes' values."""
