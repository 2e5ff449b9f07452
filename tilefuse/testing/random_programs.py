"""
Random, valid tensor programs as MLIR text, for property-based tests of the passes.

A program is a `ProgramSpec`: the function arguments, a list of `Op`s (kind,
operands, result shape and a few kind-specific fields) and the returned values.
`render(spec)` prints it as one `func.func @random(...)` in the upstream syntax
the samples use; `generate(rng)` draws a spec from a `random.Random`; and
`programs()` is the hypothesis strategy over rendered texts:

```python
@given(programs(max_ops=6))
def test_pass_keeps_meaning(text):
    module = load_program(text)
```

Op kinds (all `linalg.generic` unless `named`):

- `unary`: tanh, relu (`maximumf` with 0), `mulf` by a constant (`scale`), negf,
  `exp(tanh x)` (`tanh_exp`), `x / (1 + x*x)` (`soft_recip`);
- `binary`: addf, subf, mulf, maximumf of two values of one shape;
- `broadcast_binary`: the same of a 2-D value and a 1-D vector read through
  `(d0, d1) -> (d<axis>)`; `swap` puts the vector first;
- `transpose`: `(d0, d1) -> (d1, d0)`, or `linalg.transpose`;
- `broadcast`: a vector to 2-D along `axis`, or `linalg.broadcast`;
- `reduce`: sum or max of a 2-D value over dim `axis` into a `linalg.fill`
  (0 or -inf), or `linalg.reduce`; `swap` orders the loops (kept dim inner);
- `reduce_combine`: a 2-D value combined with a reduction of itself broadcast
  back (`x - r`, `exp(x - max x)`, `e / sum e`): the softmax pattern;
- `matmul`: `linalg.fill` 0 then `linalg.matmul`, or a generic contraction
  (`swap`: B is read transposed, `(m, n, k) -> (n, k)`).

`fill` ops are the accumulators of `reduce` and `matmul` (one can feed several).
Values stay finite on standard-normal inputs: each value carries a bound on its
magnitude, and one that grows past `LIMIT` (a sum, a matmul, a product) is
normalised right away by `mulf 1/size` or `tanh` before anything else reads it.
The only division is by `1 + x*x` or by a sum of `exp(x - max x)` (at least 1).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

Shape = tuple[int, ...]
T = TypeVar("T")

KINDS = (
    "unary", "binary", "broadcast_binary", "transpose", "broadcast", "reduce",
    "reduce_combine", "matmul",
)  # fmt: skip
UNARY_FNS = ("tanh", "relu", "scale", "negf", "tanh_exp", "soft_recip")
BINARY_FNS = ("addf", "subf", "mulf", "maximumf")
COMBINE_FNS = ("subf", "sub_exp", "divf")
REDUCE_FNS = ("sum", "max")
FILL_FNS = ("zero", "neg_inf")
NAMED_KINDS = ("transpose", "broadcast", "reduce", "matmul")
NEG_INF = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80", "f64": "0xFFF0000000000000"}
DIM_NAMES = ("M", "N", "K", "L")
SCALES = (0.5, -0.25, 2.0, 1.5, -1.0, 0.125, 0.3)

LIMIT = 32.0  # largest magnitude bound of a value other ops may read
MATMUL_OPERAND_LIMIT = 16.0  # so a raw matmul stays below 16 * 16 * 96 (f16-safe)
INPUT_BOUND = 5.0  # standard-normal inputs, for the sizes drawn here


@dataclass(frozen=True)
class Arg:
    """A function argument: a tensor of this shape."""

    name: str
    shape: Shape


@dataclass(frozen=True)
class Op:
    """One op of a program; `operands` and `result` are SSA names without `%`.

    - `fn`: the payload (see the `*_FNS` tuples) or, for `fill`, `zero`/`neg_inf`;
    - `axis`: `reduce`: the reduced dim; `broadcast_binary`, `reduce_combine`,
      `broadcast`: the dim of the 2-D value the vector runs along;
    - `named`: the named op instead of `linalg.generic` (`NAMED_KINDS`);
    - `swap`: vector first (`broadcast_binary`), kept loop inner (`reduce`),
      B transposed (`matmul`);
    - `acc_first`: the combiner reads the accumulator first (`reduce`, `matmul`);
    - `const`/`const_expr`: the factor of `scale` (and its `tilefuse.expr`);
    - `const_inside`: payload constants defined in the payload, not captured.
    """

    kind: str
    result: str
    operands: tuple[str, ...]
    shape: Shape
    fn: str = ""
    axis: int = 0
    named: bool = False
    swap: bool = False
    acc_first: bool = False
    const: float | None = None
    const_expr: str = ""
    const_inside: bool = False


@dataclass(frozen=True)
class ProgramSpec:
    """A whole program: arguments, ops in program order, returned values."""

    args: tuple[Arg, ...]
    ops: tuple[Op, ...]
    results: tuple[str, ...]
    dtype: str = "f32"
    dims: tuple[tuple[str, int], ...] = ()  # the `tilefuse.dims` header, if any

    def shapes(self) -> dict[str, Shape]:
        """Shape of every value by name."""
        shapes = {a.name: a.shape for a in self.args}
        shapes.update((op.result, op.shape) for op in self.ops)
        return shapes


# ---------------------------------------------------------------------------
# Checking a spec
# ---------------------------------------------------------------------------


class SpecError(ValueError):
    """A spec that would not type-check."""


def _require(cond: bool, op: Op, what: str) -> None:
    if not cond:
        raise SpecError(f"{op.kind} op {op.result}: {what}")


def _check_fill(op: Op, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    _require(op.operands == () and op.fn in FILL_FNS, op, "a fill has no operands, fn zero/neg_inf")


def _check_unary(op: Op, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    _require(len(op.operands) == 1 and op.fn in UNARY_FNS, op, "one operand, a unary fn")
    _require(shapes[op.operands[0]] == op.shape, op, "result shape is the operand's")
    _require((op.fn == "scale") == (op.const is not None), op, "const is the factor of scale")


def _check_binary(op: Op, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    _require(len(op.operands) == 2 and op.fn in BINARY_FNS, op, "two operands, a binary fn")
    _require(all(shapes[v] == op.shape for v in op.operands), op, "operands of the result shape")


def _check_vector_operand(op: Op, shapes: dict[str, Shape]) -> None:
    m, v = (shapes[x] for x in op.operands)
    _require(len(op.shape) == 2 and m == op.shape, op, "the first operand has the 2-D result shape")
    _require(op.axis in (0, 1) and v == (op.shape[op.axis],), op, "the vector runs along axis")


def _check_broadcast_binary(op: Op, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    _require(len(op.operands) == 2 and op.fn in BINARY_FNS, op, "(matrix, vector), a binary fn")
    _check_vector_operand(op, shapes)


def _check_reduce_combine(op: Op, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    _require(len(op.operands) == 2 and op.fn in COMBINE_FNS, op, "(matrix, vector), a combine fn")
    _check_vector_operand(op, shapes)
    _require(not op.swap, op, "the reduction is the second operand")
    r = ops.get(op.operands[1])
    _require(
        r is not None and r.kind == "reduce" and r.operands[0] == op.operands[0],
        op, "the vector is a reduction of the matrix",
    )  # fmt: skip


def _check_transpose(op: Op, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    _require(len(op.operands) == 1, op, "one operand")
    x = shapes[op.operands[0]]
    _require(len(x) == 2 and op.shape == (x[1], x[0]), op, "the result is the transposed shape")


def _check_broadcast(op: Op, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    _require(len(op.operands) == 1 and len(op.shape) == 2, op, "one operand, a 2-D result")
    _require(op.axis in (0, 1) and shapes[op.operands[0]] == (op.shape[op.axis],), op,
             "the vector runs along axis")  # fmt: skip


def _check_init(op: Op, init: str, fn: str, ops: dict[str, Op]) -> None:
    f = ops.get(init)
    _require(f is not None and f.kind == "fill" and f.fn == fn and f.shape == op.shape, op,
             f"the accumulator is a {fn} fill of the result shape")  # fmt: skip


def _check_reduce(op: Op, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    _require(len(op.operands) == 2 and op.fn in REDUCE_FNS, op, "(input, init), sum or max")
    x = shapes[op.operands[0]]
    _require(len(x) == 2 and op.axis in (0, 1), op, "a 2-D input, axis 0 or 1")
    _require(op.shape == (x[1 - op.axis],), op, "the result drops the reduced dim")
    _require(not (op.named and op.swap), op, "swap is for the generic form only")
    _check_init(op, op.operands[1], "zero" if op.fn == "sum" else "neg_inf", ops)


def _check_matmul(op: Op, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    _require(len(op.operands) == 3, op, "(a, b, init)")
    a, b = shapes[op.operands[0]], shapes[op.operands[1]]
    _require(len(a) == 2 and len(b) == 2, op, "2-D operands")
    n = b[0] if op.swap else b[1]
    k = b[1] if op.swap else b[0]
    _require(a[1] == k and op.shape == (a[0], n), op, "[M, K] x [K, N] -> [M, N]")
    _require(not (op.named and op.swap), op, "a transposed B is for the generic form only")
    _check_init(op, op.operands[2], "zero", ops)


_CHECKS: dict[str, Callable[[Op, dict[str, Shape], dict[str, Op]], None]] = {
    "fill": _check_fill, "unary": _check_unary, "binary": _check_binary,
    "broadcast_binary": _check_broadcast_binary, "reduce_combine": _check_reduce_combine,
    "transpose": _check_transpose, "broadcast": _check_broadcast,
    "reduce": _check_reduce, "matmul": _check_matmul,
}  # fmt: skip


# SSA names `render` uses itself: constants, empties, payload arguments and values.
RESERVED = re.compile(r"(in\d?|out|acc|zero|neg_inf|one|[etk]\d+|c_\w*)")
NAME = re.compile(r"[A-Za-z_][\w$.]*")


def check(spec: ProgramSpec) -> None:
    """Raise `SpecError` unless every op of `spec` type-checks."""
    shapes = {a.name: a.shape for a in spec.args}
    ops: dict[str, Op] = {}
    if len(shapes) != len(spec.args):
        raise SpecError("argument names must be distinct")
    for name in [*shapes, *(op.result for op in spec.ops)]:
        if RESERVED.fullmatch(name) or not NAME.fullmatch(name):
            raise SpecError(f"{name!r} is not a usable SSA name (reserved or malformed)")
    for op in spec.ops:
        if op.kind not in _CHECKS:
            raise SpecError(f"unknown op kind {op.kind!r}")
        if op.result in shapes:
            raise SpecError(f"{op.result} is defined twice")
        missing = [v for v in op.operands if v not in shapes]
        _require(not missing, op, f"uses undefined {missing}")
        _CHECKS[op.kind](op, shapes, ops)
        shapes[op.result] = op.shape
        ops[op.result] = op
    _check_results(spec, shapes, ops)


def _check_results(spec: ProgramSpec, shapes: dict[str, Shape], ops: dict[str, Op]) -> None:
    if not spec.results:
        raise SpecError("a program returns at least one value")
    for v in spec.results:
        if v not in shapes or (v in ops and ops[v].kind == "fill"):
            raise SpecError(f"cannot return {v}")
    if spec.dtype not in NEG_INF:
        raise SpecError(f"unsupported element type {spec.dtype}")


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------


def _literal(value: float) -> str:
    """An MLIR float literal (always with a '.')."""
    text = repr(float(value))
    if "e" in text or "." not in text:
        text = f"{value:.9e}"
    return text


def _affine(loops: int, dims: Sequence[int]) -> str:
    ds = ", ".join(f"d{i}" for i in range(loops))
    return f"affine_map<({ds}) -> ({', '.join(f'd{d}' for d in dims)})>"


class _Body:
    """A payload block under construction."""

    def __init__(self, t: str, args: Sequence[str]) -> None:
        self.t = t
        self.args = [f"%{a}" for a in args]
        self.lines: list[str] = []
        self.count = 0

    def emit(self, rhs: str) -> str:
        name = f"%t{self.count}"
        self.count += 1
        self.lines.append(f"{name} = {rhs} : {self.t}")
        return name

    def header(self) -> str:
        return ", ".join(f"{a}: {self.t}" for a in self.args)


class _Renderer:
    def __init__(self, spec: ProgramSpec) -> None:
        self.spec = spec
        self.t = spec.dtype
        self.shapes = spec.shapes()
        self.empties: dict[Shape, str] = {}
        self.lines: list[str] = []

    def ty(self, shape: Shape) -> str:
        return f"tensor<{''.join(f'{s}x' for s in shape)}{self.t}>"

    def tys(self, names: Sequence[str]) -> str:
        return ", ".join(self.ty(self.shapes[v]) for v in names)

    def empty(self, shape: Shape) -> str:
        return self.empties[shape]

    # -- top level ----------------------------------------------------------

    def text(self) -> str:
        spec = self.spec
        header = ["// random tensor program (tilefuse.testing.random_programs)"]
        if spec.dims:
            header.append("// tilefuse.dims: " + " ".join(f"{n}={s}" for n, s in spec.dims))
        header.append(f"// tilefuse.dtype: {self.t}")
        header.append("// tilefuse.args: " + ", ".join(a.name for a in spec.args))
        params = ", ".join(f"%{a.name}: {self.ty(a.shape)}" for a in spec.args)
        outs = self.tys(spec.results)
        if len(spec.results) > 1:
            outs = f"({outs})"
        self.lines = [*header, f"func.func @random({params}) -> {outs} {{"]
        self.constants()
        self.declare_empties()
        for op in spec.ops:
            getattr(self, f"op_{op.kind}")(op)
        results = ", ".join(f"%{v}" for v in spec.results)
        self.lines += [f"  return {results} : {self.tys(spec.results)}", "}", ""]
        return "\n".join(self.lines)

    def constants(self) -> None:
        ops = self.spec.ops
        outer = [op for op in ops if not op.const_inside]
        if any(op.fn == "zero" for op in ops) or any(op.fn == "relu" for op in outer):
            self.lines.append(f"  %zero = arith.constant 0.0 : {self.t}")
        if any(op.fn == "neg_inf" for op in ops):
            self.lines.append(f"  %neg_inf = arith.constant {NEG_INF[self.t]} : {self.t}")
        if any(op.fn == "soft_recip" for op in outer):
            self.lines.append(f"  %one = arith.constant 1.0 : {self.t}")
        for op in outer:
            if op.const is not None:
                self.lines.append(f"  %c_{op.result} = {self.const_text(op)}")

    def const_text(self, op: Op) -> str:
        assert op.const is not None
        expr = f"  // tilefuse.expr: {op.const_expr}" if op.const_expr else ""
        return f"arith.constant {_literal(op.const)} : {self.t}{expr}"

    def declare_empties(self) -> None:
        for op in self.spec.ops:
            if op.kind not in ("reduce", "matmul") and op.shape not in self.empties:
                name = f"%e{len(self.empties)}"
                self.empties[op.shape] = name
                self.lines.append(f"  {name} = tensor.empty() : {self.ty(op.shape)}")

    # -- generic ops ----------------------------------------------------------

    def generic(
        self,
        op: Op,
        ins: Sequence[tuple[str, Sequence[int]]],
        out: tuple[str, Sequence[int]],
        iterators: Sequence[str],
        body: _Body,
        result: str,
    ) -> None:
        loops = len(iterators)
        maps = [_affine(loops, dims) for _, dims in [*ins, out]]
        lead = "      indexing_maps = ["
        its = ", ".join(f'"{it}"' for it in iterators)
        in_names = [v for v, _ in ins]
        ins_text = ", ".join(f"%{v}" for v in in_names)
        self.lines += [
            f"  %{op.result} = linalg.generic {{",
            lead + (",\n" + " " * len(lead)).join(maps) + "],",
            f"      iterator_types = [{its}]}}",
            f"      ins({ins_text} : {self.tys(in_names)}) outs({out[0]} : {self.ty(op.shape)}) {{",
            f"  ^bb0({body.header()}):",
            *(f"    {line}" for line in body.lines),
            f"    linalg.yield {result} : {self.t}",
            f"  }} -> {self.ty(op.shape)}",
        ]

    def payload_const(self, op: Op, body: _Body, outer: str, value: float) -> str:
        """A payload constant: captured from the function, or defined in the payload."""
        if not op.const_inside:
            return outer
        name = f"%k{len(body.lines)}"
        expr = f"  // tilefuse.expr: {op.const_expr}" if op.const_expr else ""
        body.lines.append(f"{name} = arith.constant {_literal(value)} : {self.t}{expr}")
        return name

    def op_fill(self, op: Op) -> None:
        value = "%zero" if op.fn == "zero" else "%neg_inf"
        ty = self.ty(op.shape)
        self.lines.append(
            f"  %{op.result} = linalg.fill ins({value} : {self.t}) "
            f"outs({self.empty(op.shape)} : {ty}) -> {ty}"
        )

    def op_unary(self, op: Op) -> None:
        body = _Body(self.t, ["in", "out"])
        x = "%in"
        if op.fn == "tanh":
            r = body.emit(f"math.tanh {x}")
        elif op.fn == "relu":
            zero = self.payload_const(op, body, "%zero", 0.0)
            r = body.emit(f"arith.maximumf {x}, {zero}")
        elif op.fn == "scale":
            assert op.const is not None
            c = self.payload_const(op, body, f"%c_{op.result}", op.const)
            r = body.emit(f"arith.mulf {x}, {c}")
        elif op.fn == "negf":
            r = body.emit(f"arith.negf {x}")
        elif op.fn == "tanh_exp":
            r = body.emit(f"math.exp {body.emit(f'math.tanh {x}')}")
        else:  # soft_recip: x / (1 + x*x)
            one = self.payload_const(op, body, "%one", 1.0)
            sq = body.emit(f"arith.mulf {x}, {x}")
            r = body.emit(f"arith.divf {x}, {body.emit(f'arith.addf {sq}, {one}')}")
        ident = tuple(range(len(op.shape)))
        self.generic(op, [(op.operands[0], ident)], (self.empty(op.shape), ident),
                     ["parallel"] * len(op.shape), body, r)  # fmt: skip

    def op_binary(self, op: Op) -> None:
        body = _Body(self.t, ["in0", "in1", "out"])
        r = body.emit(f"arith.{op.fn} %in0, %in1")
        ident = tuple(range(len(op.shape)))
        ins = [(v, ident) for v in op.operands]
        self.generic(op, ins, (self.empty(op.shape), ident), ["parallel"] * len(op.shape), body, r)

    def vector_generic(self, op: Op, fn: Callable[[_Body, str, str], str]) -> None:
        m, v = op.operands
        ins = [(m, (0, 1)), (v, (op.axis,))]
        if op.swap:
            ins.reverse()
        body = _Body(self.t, ["in0", "in1", "out"])
        r = fn(body, "%in0", "%in1")
        self.generic(op, ins, (self.empty(op.shape), (0, 1)), ["parallel"] * 2, body, r)

    def op_broadcast_binary(self, op: Op) -> None:
        self.vector_generic(op, lambda b, x, y: b.emit(f"arith.{op.fn} {x}, {y}"))

    def op_reduce_combine(self, op: Op) -> None:
        def combine(body: _Body, x: str, r: str) -> str:
            if op.fn == "divf":
                return body.emit(f"arith.divf {x}, {r}")
            d = body.emit(f"arith.subf {x}, {r}")
            return body.emit(f"math.exp {d}") if op.fn == "sub_exp" else d

        self.vector_generic(op, combine)

    def op_transpose(self, op: Op) -> None:
        x = op.operands[0]
        if op.named:
            self.lines.append(
                f"  %{op.result} = linalg.transpose ins(%{x} : {self.tys([x])}) "
                f"outs({self.empty(op.shape)} : {self.ty(op.shape)}) permutation = [1, 0]"
            )
            return
        body = _Body(self.t, ["in", "out"])
        self.generic(op, [(x, (1, 0))], (self.empty(op.shape), (0, 1)), ["parallel"] * 2,
                     body, "%in")  # fmt: skip

    def op_broadcast(self, op: Op) -> None:
        v = op.operands[0]
        if op.named:
            self.lines.append(
                f"  %{op.result} = linalg.broadcast ins(%{v} : {self.tys([v])}) "
                f"outs({self.empty(op.shape)} : {self.ty(op.shape)}) dimensions = [{1 - op.axis}]"
            )
            return
        body = _Body(self.t, ["in", "out"])
        self.generic(op, [(v, (op.axis,))], (self.empty(op.shape), (0, 1)), ["parallel"] * 2,
                     body, "%in")  # fmt: skip

    def combiner(self, op: Op, body: _Body, x: str) -> str:
        comb = "addf" if op.fn == "sum" else "maximumf"
        a, b = (body.args[-1], x) if op.acc_first else (x, body.args[-1])
        return body.emit(f"arith.{comb} {a}, {b}")

    def op_reduce(self, op: Op) -> None:
        x, init = op.operands
        body = _Body(self.t, ["in", "acc"])
        r = self.combiner(op, body, "%in")
        if op.named:
            self.lines += [
                f"  %{op.result} = linalg.reduce ins(%{x} : {self.tys([x])}) "
                f"outs(%{init} : {self.ty(op.shape)}) dimensions = [{op.axis}]",
                f"    ({body.header()}) {{",
                *(f"      {line}" for line in body.lines),
                f"      linalg.yield {r} : {self.t}",
                "    }",
            ]
            return
        kept = 1 - op.axis
        if op.swap:  # loop d0 runs over the reduced dim
            its, in_dims, out_dims = ["reduction", "parallel"], (0, 1), (1,)
            if op.axis == 1:
                in_dims, out_dims = (1, 0), (1,)
        else:  # loop d0 runs over the kept dim
            its, in_dims, out_dims = ["parallel", "reduction"], (0, 1), (0,)
            if kept == 1:
                in_dims = (1, 0)
        self.generic(op, [(x, in_dims)], (f"%{init}", out_dims), its, body, r)

    def op_matmul(self, op: Op) -> None:
        a, b, init = op.operands
        ty = self.ty(op.shape)
        if op.named:
            self.lines.append(
                f"  %{op.result} = linalg.matmul ins(%{a}, %{b} : {self.tys([a, b])}) "
                f"outs(%{init} : {ty}) -> {ty}"
            )
            return
        body = _Body(self.t, ["in0", "in1", "acc"])
        p = body.emit("arith.mulf %in0, %in1")
        r = body.emit(f"arith.addf %acc, {p}" if op.acc_first else f"arith.addf {p}, %acc")
        b_dims = (1, 2) if op.swap else (2, 1)
        self.generic(op, [(a, (0, 2)), (b, b_dims)], (f"%{init}", (0, 1)),
                     ["parallel", "parallel", "reduction"], body, r)  # fmt: skip


def render(spec: ProgramSpec) -> str:
    """The MLIR text of `spec`: one `func.func @random(...)`, with a tilefuse header."""
    check(spec)
    return _Renderer(spec).text()


# ---------------------------------------------------------------------------
# Generating
# ---------------------------------------------------------------------------


# Random choices go through small-range integers, which hypothesis's `st.randoms()`
# draws near-uniformly and shrinks to the minimum: the first item, and False.


def _weighted(rng: random.Random, items: Sequence[tuple[T, int]]) -> T:
    return rng.choice([item for item, weight in items for _ in range(weight)])


def _chance(rng: random.Random, percent: int) -> bool:
    return rng.randint(1, 100) > 100 - percent


def _draw_sizes(rng: random.Random, max_dim: int) -> list[int]:
    """2-4 distinct sizes in 1..max_dim: mostly arbitrary, some powers of two, some 1."""
    count = min(rng.randint(2, 4), max_dim)
    powers = [p for p in (2, 4, 8, 16, 32, 64, 128) if p <= max_dim] or [1]
    sizes: list[int] = []
    while len(sizes) < count:
        r = rng.randint(1, 100)
        if r <= 8:
            size = 1
        elif r <= 25:
            size = rng.choice(powers)
        else:
            size = rng.randint(1, max_dim)
        while size in sizes:  # the next free size: no rejection loop on any stream
            size = size % max_dim + 1
        sizes.append(size)
    return sizes


KIND_WEIGHTS: tuple[tuple[str, int], ...] = (
    ("unary", 3), ("binary", 3), ("broadcast_binary", 3), ("transpose", 1),
    ("broadcast", 1), ("reduce", 2), ("reduce_combine", 2), ("matmul", 2),
)  # fmt: skip
UNARY_BOUND: dict[str, Callable[[float, float], float]] = {
    "tanh": lambda b, c: 1.0, "relu": lambda b, c: b, "scale": lambda b, c: b * abs(c),
    "negf": lambda b, c: b, "tanh_exp": lambda b, c: math.e, "soft_recip": lambda b, c: 0.5,
}  # fmt: skip
BINARY_BOUND: dict[str, Callable[[float, float], float]] = {
    "addf": lambda a, b: a + b, "subf": lambda a, b: a + b, "mulf": lambda a, b: a * b,
    "maximumf": max,
}  # fmt: skip


class _Generator:
    def __init__(self, rng: random.Random, max_ops: int, max_dim: int, dtype: str) -> None:
        self.rng = rng
        self.dtype = dtype
        self.budget = rng.randint(1, max(1, max_ops))
        self.sizes = _draw_sizes(rng, max(1, max_dim))
        self.dim_name = dict(zip(self.sizes, DIM_NAMES, strict=False))
        self.args: list[Arg] = []
        self.ops: list[Op] = []
        self.shapes: dict[str, Shape] = {}
        self.bound: dict[str, float] = {}
        self.live: list[str] = []  # values later ops may read
        self.fills: dict[tuple[Shape, str], str] = {}

    def run(self) -> ProgramSpec:
        self.draw_args()
        while self.budget > 0:
            budget = self.budget
            getattr(self, f"gen_{_weighted(self.rng, KIND_WEIGHTS)}")()
            if self.budget == budget:  # that kind had nothing to work on
                self.gen_unary()
        return ProgramSpec(
            tuple(self.args), tuple(self.ops), self.draw_results(), self.dtype,
            tuple((self.dim_name[s], s) for s in self.sizes),
        )  # fmt: skip

    # -- helpers -------------------------------------------------------------

    def draw_args(self) -> None:
        rng = self.rng
        for i in range(rng.randint(1, 3)):
            if i == 0 or _chance(rng, 70):
                shape: Shape = (rng.choice(self.sizes), rng.choice(self.sizes))
            else:
                shape = (rng.choice(self.sizes),)
            name = f"a{i}"
            self.args.append(Arg(name, shape))
            self.shapes[name] = shape
            self.bound[name] = INPUT_BOUND
            self.live.append(name)

    def draw_results(self) -> tuple[str, ...]:
        rng = self.rng
        produced = [op.result for op in self.ops if op.kind != "fill"]
        used = {v for op in self.ops for v in op.operands}
        sinks = [v for v in produced if v not in used]
        if sinks and _chance(rng, 50):
            chosen = sinks
        else:
            chosen = rng.sample(produced, rng.randint(1, min(3, len(produced))))
        if _chance(rng, 5):  # an argument returned as it is
            chosen.insert(rng.randint(0, len(chosen)), rng.choice(self.args).name)
        return tuple(chosen)

    def pick(self, pred: Callable[[str], bool] = lambda v: True) -> str | None:
        """A live value satisfying `pred`: often the newest, else any."""
        candidates = [v for v in self.live if pred(v)]
        if not candidates:
            return None
        return candidates[-1] if _chance(self.rng, 50) else self.rng.choice(candidates)

    def rank(self, n: int) -> Callable[[str], bool]:
        return lambda v: len(self.shapes[v]) == n

    def emit(self, kind: str, operands: Sequence[str], shape: Shape, bound: float, **kw) -> str:
        name = f"v{sum(op.kind != 'fill' for op in self.ops)}"
        self.ops.append(Op(kind, name, tuple(operands), shape, **kw))
        self.shapes[name] = shape
        self.bound[name] = bound
        self.live.append(name)
        self.budget -= 1
        return name

    def settle(self, v: str, size: int | None = None) -> None:
        """Normalise `v` if it grew past LIMIT: `mulf 1/size` (a mean) or tanh."""
        b = self.bound[v]
        if b <= LIMIT:
            return
        self.live.remove(v)
        if self.budget == 0:
            return
        inside = _chance(self.rng, 50)
        if size and b / size <= LIMIT and _chance(self.rng, 70):
            self.emit("unary", [v], self.shapes[v], b / size, fn="scale", const=1.0 / size,
                      const_expr=f"1/{self.dim_name[size]}", const_inside=inside)  # fmt: skip
        else:
            self.emit("unary", [v], self.shapes[v], 1.0, fn="tanh")

    def fill(self, shape: Shape, fn: str) -> str:
        key = (shape, fn)
        if key in self.fills and _chance(self.rng, 60):
            return self.fills[key]
        name = f"f{sum(op.kind == 'fill' for op in self.ops)}"
        self.ops.append(Op("fill", name, (), shape, fn=fn))
        self.fills[key] = name
        return name

    # -- op kinds ------------------------------------------------------------

    def gen_unary(self) -> None:
        rng = self.rng
        x = self.pick()
        assert x is not None  # the arguments are always live
        fn = rng.choice(UNARY_FNS)
        const = rng.choice(SCALES) if fn == "scale" else None
        inside = fn in ("scale", "relu", "soft_recip") and _chance(rng, 50)
        bound = UNARY_BOUND[fn](self.bound[x], const or 0.0)
        v = self.emit("unary", [x], self.shapes[x], bound, fn=fn, const=const,
                      const_inside=inside)  # fmt: skip
        self.settle(v)

    def gen_binary(self) -> None:
        x = self.pick()
        assert x is not None
        y = self.pick(lambda v: self.shapes[v] == self.shapes[x])
        assert y is not None  # x itself
        fn = self.rng.choice(BINARY_FNS)
        bound = BINARY_BOUND[fn](self.bound[x], self.bound[y])
        self.settle(self.emit("binary", [x, y], self.shapes[x], bound, fn=fn))

    def vector_for(self, m: str) -> Callable[[str], bool]:
        return lambda v: len(self.shapes[v]) == 1 and self.shapes[v][0] in self.shapes[m]

    def gen_broadcast_binary(self) -> None:
        m = self.pick(lambda m: self.rank(2)(m) and any(map(self.vector_for(m), self.live)))
        if m is None:
            return
        v = self.pick(self.vector_for(m))
        assert v is not None
        axes = [i for i in (0, 1) if self.shapes[m][i] == self.shapes[v][0]]
        fn = self.rng.choice(BINARY_FNS)
        bound = BINARY_BOUND[fn](self.bound[m], self.bound[v])
        self.settle(self.emit("broadcast_binary", [m, v], self.shapes[m], bound, fn=fn,
                              axis=self.rng.choice(axes), swap=_chance(self.rng, 30)))  # fmt: skip

    def gen_transpose(self, x: str | None = None) -> str | None:
        x = x or self.pick(self.rank(2))
        if x is None:
            return None
        shape = self.shapes[x]
        return self.emit("transpose", [x], (shape[1], shape[0]), self.bound[x],
                         named=_chance(self.rng, 50))  # fmt: skip

    def gen_broadcast(self) -> None:
        v = self.pick(self.rank(1))
        if v is None:
            return
        axis = self.rng.randint(0, 1)
        shape = [self.rng.choice(self.sizes)] * 2
        shape[axis] = self.shapes[v][0]
        self.emit("broadcast", [v], tuple(shape), self.bound[v], axis=axis,
                  named=_chance(self.rng, 50))  # fmt: skip

    def reduction(self, x: str, axis: int, fn: str) -> str:
        rng = self.rng
        shape = (self.shapes[x][1 - axis],)
        init = self.fill(shape, "zero" if fn == "sum" else "neg_inf")
        named = _chance(rng, 40)
        size = self.shapes[x][axis]
        bound = self.bound[x] * (size if fn == "sum" else 1)
        return self.emit("reduce", [x, init], shape, bound, fn=fn, axis=axis, named=named,
                         swap=not named and _chance(rng, 30), acc_first=_chance(rng, 50))

    def gen_reduce(self) -> None:
        x = self.pick(self.rank(2))
        if x is None:
            return
        axis = self.rng.randint(0, 1)
        self.settle(self.reduction(x, axis, self.rng.choice(REDUCE_FNS)), self.shapes[x][axis])

    def gen_reduce_combine(self) -> None:
        """The softmax pattern: r = reduce(x); y = x - r or exp(x - max x); y / sum y."""
        rng = self.rng
        x = self.pick(self.rank(2))
        if x is None or self.budget < 2:
            return
        axis = rng.randint(0, 1)
        fn = rng.choice(("subf", "sub_exp"))
        r = self.reduction(x, axis, "max" if fn == "sub_exp" else rng.choice(REDUCE_FNS))
        self.retire_if_large(r)
        bound = 1.0 if fn == "sub_exp" else self.bound[x] + self.bound[r]
        y = self.emit("reduce_combine", [x, r], self.shapes[x], bound, fn=fn, axis=1 - axis)
        if fn == "sub_exp" and self.budget >= 2 and _chance(rng, 80):
            s = self.reduction(y, axis, "sum")  # >= 1: exp(0) at the max
            self.retire_if_large(s)
            self.emit("reduce_combine", [y, s], self.shapes[x], 1.0, fn="divf", axis=1 - axis)
        self.settle(y)

    def retire_if_large(self, v: str) -> None:
        if self.bound[v] > LIMIT:
            self.live.remove(v)

    def gen_matmul(self) -> None:
        rng = self.rng
        small = lambda v: self.rank(2)(v) and self.bound[v] <= MATMUL_OPERAND_LIMIT  # noqa: E731
        a = self.pick(small)
        if a is None:
            return
        k = self.shapes[a][1]
        direct = [v for v in self.live if small(v) and self.shapes[v][0] == k]
        transposed = [v for v in self.live if small(v) and self.shapes[v][1] == k]
        swap, named = False, _chance(rng, 50)
        if direct and _chance(rng, 60):
            b = rng.choice(direct)
        elif self.budget >= 2 and _chance(rng, 30):
            b = self.gen_transpose(rng.choice(transposed))
            assert b is not None
        else:
            b, swap, named = rng.choice(transposed), True, False
        m, n = self.shapes[a][0], self.shapes[b][0 if swap else 1]
        init = self.fill((m, n), "zero")
        bound = self.bound[a] * self.bound[b] * k
        v = self.emit("matmul", [a, b, init], (m, n), bound, named=named, swap=swap,
                      acc_first=_chance(rng, 50))  # fmt: skip
        self.settle(v, k)


def generate(
    rng: random.Random, max_ops: int = 6, max_dim: int = 96, dtype: str = "f32"
) -> ProgramSpec:
    """A random valid program with 1..max_ops compute ops (fills not counted)."""
    return _Generator(rng, max_ops, max_dim, dtype).run()


def program_specs(
    max_ops: int = 6, max_dim: int = 96, dtypes: Sequence[str] = ("f32",)
) -> SearchStrategy[ProgramSpec]:
    """Hypothesis strategy over `ProgramSpec`s (shrinks through `st.randoms`)."""
    from hypothesis import strategies as st

    @st.composite
    def specs(draw: st.DrawFn) -> ProgramSpec:
        dtype = draw(st.sampled_from(tuple(dtypes)))
        rng = draw(st.randoms(use_true_random=False))
        return generate(rng, max_ops, max_dim, dtype)

    return specs()


def programs(
    max_ops: int = 6, max_dim: int = 96, dtypes: Sequence[str] = ("f32",)
) -> SearchStrategy[str]:
    """Hypothesis strategy over MLIR texts of random valid programs."""
    from hypothesis import strategies as st

    @st.composite
    def texts(draw: st.DrawFn) -> str:
        return render(draw(program_specs(max_ops, max_dim, dtypes)))

    return texts()


# ---------------------------------------------------------------------------
# Coverage
# ---------------------------------------------------------------------------


def _op_features(op: Op) -> set[str]:
    out = {op.kind}
    if op.fn:
        out.add(f"{op.kind}:{op.fn}")
    if op.kind in NAMED_KINDS:
        out.add(f"{op.kind}:{'named' if op.named else 'generic'}")
    if op.kind in ("reduce", "broadcast_binary", "broadcast", "reduce_combine"):
        out.add(f"{op.kind}:axis{op.axis}")
    if op.swap:
        out.add(f"{op.kind}:swap")
    if op.acc_first:
        out.add(f"{op.kind}:acc_first")
    if op.const is not None or op.fn in ("relu", "soft_recip"):
        out.add("const:inside" if op.const_inside else "const:outside")
    return out


def features(spec: ProgramSpec) -> set[str]:
    """Labels for what a program exercises (kinds, payloads, forms, sharing)."""
    out = set().union(*(_op_features(op) for op in spec.ops))
    uses: dict[str, int] = {}
    for v in (v for op in spec.ops for v in op.operands):
        uses[v] = uses.get(v, 0) + 1
    fills = {op.result for op in spec.ops if op.kind == "fill"}
    labels = {
        "multi_use": any(n > 1 for v, n in uses.items() if v not in fills),
        "shared_fill": any(uses.get(v, 0) > 1 for v in fills),
        "multi_result": len(spec.results) > 1,
        "returns_arg": any(a.name in spec.results for a in spec.args),
        "vector_op": any(
            len(op.shape) == 1 for op in spec.ops if op.kind in ("unary", "binary")
        ),
        "unit_dim": any(1 in s for s in spec.shapes().values()),
        "vector_arg": any(len(a.shape) == 1 for a in spec.args),
    }
    return out | {label for label, present in labels.items() if present}
