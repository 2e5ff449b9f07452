"""
Causal masks, by meaning: the keys an online softmax's mask removes from every row.

`key_bound(graph, dims, sm, key_dim)` reads the scores `u` of an online softmax
(`patterns.OnlineSoftmax`, a max and the reductions linear in `e = exp(u - max)`
over the key dim `j`) as a function of the loop indices and finds bounds
`j - q <= c` (or `j <= c`) outside of which every score is `-inf`, for `q` a row dim
of the max (the query index `i`) and a compile-time `c`:

```mlir
%keep = arith.cmpi sle, %j_minus_i, %c0 : i64         // j - i <= 0
%all = arith.andi %keep, %true_mask : i1              // other factors only mask more
%u = arith.select %all, %s, %neg_inf : f32            // or s + select(keep, 0, -inf)
```

gives `{i: 0}`. A key past the bound has `u = -inf`, so `max(m, -inf) = m` and
`exp(-inf - m) = 0` (`m` finite, or the 0 the online loop uses while the row is all
-inf): it adds exactly nothing to the max and to every reduction linear in `e`, and
the key loop of a query tile may stop after its last row's last kept key.

The scores are evaluated by abstract interpretation over the group's pointwise ops
(read through pure-dim maps, so shared dims are the indices), constants (in the
payload, captured, or a splat tensor given to the group) and `linalg.index`:
integers as affine forms of the shared dims, conditions by where they can be true and
where false, floats by where they can be other than `-inf` (`Keep`). What is not
understood knows nothing (`ANY`): an `and` with it keeps the other factor's bound, an
`or`, a `select` between two unknowns or an additive finite mask gives none.

A `+` counts `x + (-inf)` as `-inf`, which holds for every score but `+inf` and NaN
(then the program's row is NaN; a skipped key cannot make it so), and a skipped key
drops `0 * v_j` from `P V`, which is not 0 for a non-finite `v_j`: skipping is exact
for finite scores and values, as in every FlashAttention kernel.

A mask read from memory is understood only from a fact on the function argument it
is read from (a module buffer, checked on the host by the torch front-end and
guarded at each call): `{tilefuse.neg_inf_above = c}` (every element `[..., i, j]`
with `j - i > c` is `-inf`), `{tilefuse.zero_above = c}` (0 or false there: a tril
buffer compared `== 0`) and `{tilefuse.huge_above = c}` (at most `-2^120` there,
finite with `|x| <= 2^100` elsewhere: LLaMA's `finfo.min` mask). The argument is read
through views keeping its last two dims (unit-dim reshapes, slices at constant
offsets: `c` shifts by the row offset minus the column offset) and a pure-dim map
whose last two results are a row dim and the key dim. A huge mask gives a bound only
added once to a score known finite (a contraction's output, scaled by a moderate
constant; `|s| < 2^100` assumed, as finite scores are) and only for `c >= 0`: every row
then keeps key 0, its max is a kept score (`> -2^101`), and a masked key's
`exp(u - m)` with `u - m < -2^118` is exactly 0, as `-inf`'s is. A row keeping no key
would be a softmax over the masked scores, which skipping would change.

`exact_mask_decisions` reads `{tilefuse.mask_exact}` beside such an attribute (every
element with `j - i <= c` keeps its key: nonzero, or +0.0 for the additive kinds): in the
key tiles below the diagonal the mask's elements, or their zero tests, are constants.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap

from tilefuse.analysis.dataflow import (
    CONTRACTION,
    FILL,
    POINTWISE,
    Graph,
    Node,
    SharedDims,
)
from tilefuse.analysis.patterns import OnlineSoftmax
from tilefuse.ir.constants import constant_array, is_splat
from tilefuse.ir.structured import cmpf_predicate
from tilefuse.ir.tilefuse import GroupOp

STATIC = -1
"""The `q` of a bound `j <= c` that no row dim enters."""

NEG_INF_ABOVE, ZERO_ABOVE, HUGE_ABOVE = "tilefuse.neg_inf_above", "tilefuse.zero_above", \
    "tilefuse.huge_above"  # fmt: skip
MASK_ATTRS = (NEG_INF_ABOVE, ZERO_ABOVE, HUGE_ABOVE)
"""Function argument attributes: every `[..., i, j]` with `j - i > c` is -inf, 0, or
at most `HUGE` (and the rest finite with `|x| <= NORMAL`)."""
MASK_EXACT = "tilefuse.mask_exact"
"""Beside a mask attribute: every `[..., i, j]` with `j - i <= c` keeps its key, nonzero
(true) for `ZERO_ABOVE`, exactly +0.0 for the additive kinds: a causal mask and nothing
else (`exact_mask_decisions`)."""
HUGE, NORMAL = -(2.0**120), 2.0**100


@dataclass(frozen=True)
class Keep:
    """Where a value can be live (a condition true, or false; a float other than
    -inf): only where `j - q <= c` for every `q: c` of `bounds` (`j <= c` for
    `STATIC`), nowhere when `never`."""

    bounds: dict[int, int] = field(default_factory=dict)
    never: bool = False
    finite: bool = False
    """Certainly finite, `|x| < 2^101`, everywhere (a score; never after `both`)."""

    def both(self, other: Keep) -> Keep:
        """Live only where both are (a conjunction)."""
        if self.never or other.never:
            return NEVER
        merged = dict(self.bounds)
        for q, c in other.bounds.items():
            merged[q] = min(merged.get(q, c), c)
        return Keep(merged)

    def either(self, other: Keep) -> Keep:
        """Live where either is (a disjunction)."""
        if self.never:
            return other
        if other.never:
            return self
        return Keep({q: max(c, other.bounds[q]) for q, c in self.bounds.items() if q in other.bounds})


ANY, NEVER = Keep(), Keep(never=True)


@dataclass(frozen=True)
class Affine:
    """An integer `sum coeffs[d] * index_d + const` over shared dims `d`."""

    coeffs: dict[int, int]
    const: int

    def plus(self, other: Affine, sign: int = 1) -> Affine:
        coeffs = dict(self.coeffs)
        for d, a in other.coeffs.items():
            coeffs[d] = coeffs.get(d, 0) + sign * a
        return Affine({d: a for d, a in coeffs.items() if a}, self.const + sign * other.const)

    def times(self, k: int) -> Affine:
        return Affine({d: a * k for d, a in self.coeffs.items() if a * k}, self.const * k)

    @property
    def non_negative(self) -> bool:
        return self.const >= 0 and all(a >= 0 for a in self.coeffs.values())


@dataclass(frozen=True)
class Cond:
    """An i1: where it can be true, where it can be false."""

    true: Keep
    false: Keep

    def negated(self) -> Cond:
        return Cond(self.false, self.true)


TRUE, FALSE, UNKNOWN = Cond(ANY, NEVER), Cond(NEVER, ANY), Cond(ANY, ANY)
FINITE = Keep(finite=True)


@dataclass(frozen=True)
class Zero:
    """A value that is 0 (or false) but where `where` is live."""

    where: Keep


@dataclass(frozen=True)
class Huge:
    """A float at most `-2^118` (or -inf) but where `where` is live, finite with
    `|x| < 2^101` there; `added`: a mask added to a finite score (module doc)."""

    where: Keep
    added: bool = False


Fact = Keep | Cond | Affine | Zero | Huge | None


def key_bound(graph: Graph, dims: SharedDims, sm: OnlineSoftmax, key_dim: int) -> dict[int, int] | None:
    """Bounds `{q: c}` with every score of `sm` past `j - q <= c` equal to -inf (`q`
    a row dim of its max, or `STATIC` for `j <= c`; `{STATIC: -1}`: every score is
    -inf); None when the mask (if any) is not understood so."""
    a = sm.max_node
    if {dims.of[(a.index, d)] for d in a.s.reduction_dims} != {key_dim}:
        return None
    rows = {dims.of[(a.index, d)] for d in a.s.parallel_dims}
    keep = _Scores(graph, dims, key_dim, rows).operand(a, 0)
    if isinstance(keep, Huge) and keep.added and keep.where.bounds and \
            all(q != STATIC and c >= 0 for q, c in keep.where.bounds.items()):  # fmt: skip
        return dict(keep.where.bounds)
    if not isinstance(keep, Keep):
        return None
    if keep.never:
        return {STATIC: -1}
    return dict(keep.bounds) or None


def below_diagonal(graph: Graph, dims: SharedDims, sm: OnlineSoftmax, key_dim: int,
                   q: int, c: int) -> dict[tuple[int, SSAValue], bool]:
    """The conditions of `sm`'s scores that are constant wherever `j - q <= c`
    (the key tiles a causal mask keeps whole, below its diagonal): `(node index,
    i1 value of its payload) -> its value there`. Only a comparison of `a (j - q) + k`
    with 0 is decided (true or false on the whole half-plane, which reaches down to
    `j - q = -inf`); a condition on other dims too (a padding length) is not."""
    scores = _evaluated(graph, dims, sm, key_dim)
    decided = {}
    for (index, v), fact in list(scores.memo.items()):
        if not isinstance(fact, Cond) or not isinstance(op := v.owner, arith.CmpiOp):
            continue
        x, y = scores.args(op, graph.nodes[index])
        pred = _PREDICATES[op.predicate.value.data]
        if not isinstance(x, Affine) or not isinstance(y, Affine) or pred in ("eq", "ne") or \
                (pred.startswith("u") and not (x.non_negative and y.non_negative)):  # fmt: skip
            continue
        d = x.plus(y, -1)
        slope = d.coeffs.get(key_dim, 0)
        if slope == 0 or d.coeffs != {key_dim: slope, q: -slope}:
            continue
        holds = {"slt": lambda n: n < 0, "sle": lambda n: n <= 0,
                 "sgt": lambda n: n > 0, "sge": lambda n: n >= 0}[_SIGNED[pred]]  # fmt: skip
        at_edge, far_below = holds(slope * c + d.const), holds(-slope)  # far below: the sign of -slope * inf
        if at_edge == far_below:  # monotone in j - q: so between
            decided[(index, v)] = at_edge
    return decided


def exact_mask_decisions(graph: Graph, dims: SharedDims, sm: OnlineSoftmax, key_dim: int,
                         q: int, c: int) -> dict[tuple[int, SSAValue], bool | float]:
    """What `sm`'s scores read of masks exact below their diagonal (`MASK_EXACT`) is
    wherever `j - q <= c` (inside that diagonal): a boolean mask's element true, a zero
    test of another (`x == 0`, `x != 0`, through widenings) false or true, an additive
    mask's element 0.0. `(node index, payload value) -> its value there`: the loop over
    those key tiles (`below_diagonal`'s) then reads no mask at all."""
    scores = _evaluated(graph, dims, sm, key_dim)
    decided: dict[tuple[int, SSAValue], bool | float] = {}
    for index, v in list(scores.memo):
        node = graph.nodes[index]
        if not isinstance(v, BlockArgument) or v.block is not node.s.payload or v.index >= len(node.s.inputs):
            continue
        mask = argument_mask(node.s.inputs[v.index])
        if mask is None or not mask[2] or c > mask[1] or scores.mask_rows(node, node.s.input_maps[v.index]) != q:
            continue
        if mask[0] != ZERO_ABOVE:
            if not isinstance(v.type, IntegerType | IndexType):
                decided[(index, v)] = 0.0
        elif isinstance(v.type, IntegerType) and v.type.width.data == 1:
            decided[(index, v)] = True
        else:
            decided.update(((index, r), known) for r, known in _zero_tests(scores, v, node))
    return decided


def _zero_tests(s: _Scores, v: SSAValue, node: Node) -> list[tuple[SSAValue, bool]]:
    """The tests `x == 0` (ordered) and `x != 0` (unordered) of `v`, or of `v` widened,
    in `node`'s payload, with their value where `v` is nonzero (NaN too; a rounding
    could make a small value 0)."""
    found = []
    for use in v.uses:
        op = use.operation
        if isinstance(op, arith.ExtFOp):
            found += _zero_tests(s, op.results[0], node)
        elif isinstance(op, arith.CmpfOp | arith.CmpiOp) and s.constant(op.operands[1 - use.index], node) == 0:
            pred = cmpf_predicate(op) if isinstance(op, arith.CmpfOp) else _PREDICATES[op.predicate.value.data]
            if pred in ("oeq", "eq", "une", "ne"):
                found.append((op.results[0], pred in ("une", "ne")))
    return found


def _evaluated(graph: Graph, dims: SharedDims, sm: OnlineSoftmax, key_dim: int) -> _Scores:
    """The abstract interpretation of `sm`'s scores, every value it read memoized."""
    a = sm.max_node
    scores = _Scores(graph, dims, key_dim, {dims.of[(a.index, d)] for d in a.s.parallel_dims})
    scores.operand(a, 0)
    return scores


def _top(t: Attribute) -> Fact:
    if isinstance(t, IntegerType) and t.width.data == 1:
        return UNKNOWN
    return None if isinstance(t, IntegerType | IndexType) else ANY


def _pure_dims(m: AffineMap) -> bool:
    return all(isinstance(r, AffineDimExpr) for r in m.results)


def _scalar_constant(value: SSAValue) -> int | float | None:
    """The number `value` always is: a scalar constant, or a splat tensor constant
    (also one given to a group: the block argument's operand)."""
    if isinstance(value, BlockArgument) and isinstance(g := value.block.parent_op(), GroupOp) and \
            value.block is g.entry:  # fmt: skip
        value = g.inputs[value.index]
    op = value.owner
    if not isinstance(op, arith.ConstantOp):
        return None
    if isinstance(op.value, IntegerAttr | FloatAttr):
        return op.value.value.data
    if not isinstance(op.result.type, TensorType) or not is_splat(op):
        return None
    return constant_array(op).flat[0].item()


def _constant_fact(x: int | float, t: Attribute) -> Fact:
    if isinstance(t, IntegerType) and t.width.data == 1:
        return TRUE if x else FALSE
    if isinstance(t, IntegerType | IndexType):
        return Affine({}, int(x))
    return NEVER if x == -math.inf else ANY


_SIGNED = {"slt": "slt", "sle": "sle", "sgt": "sgt", "sge": "sge",
           "ult": "slt", "ule": "sle", "ugt": "sgt", "uge": "sge", "eq": "eq", "ne": "ne"}  # fmt: skip
_PREDICATES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_NEGATED = {"slt": "sge", "sle": "sgt", "sgt": "sle", "sge": "slt", "eq": "ne", "ne": "eq"}


class _Scores:
    """The abstract interpretation of the module docstring."""

    def __init__(self, graph: Graph, dims: SharedDims, key_dim: int, rows: set[int]):
        self.graph, self.dims, self.key, self.rows = graph, dims, key_dim, rows
        self.memo: dict[tuple[int, SSAValue], Fact] = {}

    def operand(self, node: Node, k: int) -> Fact:
        """The fact of `node`'s input `k`, at `node`'s loop point."""
        v = node.s.inputs[k]
        t = v.type.get_element_type() if isinstance(v.type, TensorType) else v.type
        if (x := _scalar_constant(v)) is not None:
            return _constant_fact(x, t)
        m = node.s.input_maps[k]
        if (mask := argument_mask(v)) is not None:
            return self.mask(node, m, t, *mask[:2])
        p = self.graph.producer_of(v)
        if p is not None and p.kind == CONTRACTION and _pure_dims(m) and not isinstance(t, IntegerType):
            return FINITE  # Q K^T: finite, |s| < 2^100 (module doc)
        if p is None or p.kind not in (POINTWISE, FILL) or not _pure_dims(m):
            return _top(t)
        r = list(p.op.results).index(v)
        out_map = p.s.output_maps[r]
        if not _pure_dims(out_map) or len(set(out_map.results)) != p.s.num_loops:
            return _top(t)
        yielded = p.s.payload.last_op
        assert yielded is not None
        return self.value(yielded.operands[r], p)

    def mask_rows(self, node: Node, m: AffineMap) -> int | None:
        """The row dim of a mask `node` reads through `m` (a pure-dim map whose last two
        results are a row dim of the max and the key dim); None if it is read otherwise."""
        if not _pure_dims(m) or len(m.results) < 2:
            return None
        rows, cols = (self.dims.of[(node.index, r.position)] for r in m.results[-2:])  # type: ignore[attr-defined]
        return rows if cols == self.key and rows in self.rows else None

    def mask(self, node: Node, m: AffineMap, t: Attribute, kind: str, c: int) -> Fact:
        """The fact of an argument with a mask attribute, read by `node` through `m`."""
        rows = self.mask_rows(node, m)
        if rows is None:
            return _top(t)
        where = Keep({rows: c})
        if kind == ZERO_ABOVE:
            return Cond(where, ANY) if isinstance(t, IntegerType) and t.width.data == 1 else Zero(where)
        if isinstance(t, IntegerType | IndexType):
            return _top(t)
        return where if kind == NEG_INF_ABOVE else Huge(where)

    def value(self, v: SSAValue, node: Node) -> Fact:
        key = (node.index, v)
        if key not in self.memo:
            self.memo[key] = self._value(v, node)
        return self.memo[key]

    def _value(self, v: SSAValue, node: Node) -> Fact:
        block = node.s.payload
        if isinstance(v, BlockArgument) and v.block is block:
            return self.operand(node, v.index) if v.index < len(node.s.inputs) else _top(v.type)
        if (x := _scalar_constant(v)) is not None:
            return _constant_fact(x, v.type)
        op = v.owner
        if not isinstance(op, Operation) or op.parent_block() is not block:
            return _top(v.type)
        rule = _RULES.get(type(op))
        return rule(self, op, node) if rule is not None else _top(v.type)

    def constant(self, v: SSAValue, node: Node) -> int | float | None:
        """The number `v` (in `node`'s payload) always is, if a constant."""
        if isinstance(v, BlockArgument) and v.block is node.s.payload:
            return _scalar_constant(node.s.inputs[v.index]) if v.index < len(node.s.inputs) else None
        return _scalar_constant(v)

    def args(self, op: Operation, node: Node) -> list[Fact]:
        return [self.value(x, node) for x in op.operands]

    def bound(self, e: Affine) -> Keep:
        """Where `e <= 0` can hold: `a j - a q + k <= 0` is `j - q <= floor(-k / a)`."""
        a = e.coeffs.get(self.key, 0)
        rest = {d: b for d, b in e.coeffs.items() if d != self.key}
        if a <= 0:
            return ANY
        if not rest:
            return Keep({STATIC: (-e.const) // a})
        if len(rest) == 1 and (q := next(iter(rest))) in self.rows and rest[q] == -a:
            return Keep({q: (-e.const) // a})
        return ANY

    def compare(self, pred: str, d: Affine) -> Keep:
        """Where `d pred 0` can hold (signed)."""
        if pred == "slt":
            return self.bound(d.plus(Affine({}, 1)))
        if pred == "sle":
            return self.bound(d)
        if pred == "sgt":
            return self.bound(d.times(-1).plus(Affine({}, 1)))
        if pred == "sge":
            return self.bound(d.times(-1))
        if pred == "eq":
            return self.bound(d).both(self.bound(d.times(-1)))
        return ANY


def _outside(value: SSAValue) -> SSAValue:
    """A group's block argument as the group's operand."""
    if isinstance(value, BlockArgument) and isinstance(g := value.block.parent_op(), GroupOp) and \
            value.block is g.entry:  # fmt: skip
        return g.inputs[value.index]
    return value


def _trailing_kept(src: Attribute, dst: Attribute) -> bool:
    """A reshape from `src` to `dst` keeps each element's last two indices."""
    if not isinstance(src, TensorType) or not isinstance(dst, TensorType):
        return False
    a, b = src.get_shape(), dst.get_shape()
    return (len(a) >= 2 and len(b) >= 2 and a[-2:] == b[-2:] and -1 not in a + b
            and [n for n in a if n != 1] == [n for n in b if n != 1])  # fmt: skip


def argument_mask(value: SSAValue) -> tuple[str, int, bool] | None:
    """(attribute, c, exact) of the function argument with a mask attribute `value` is,
    read through views keeping its last two dims (`c` in `value`'s own indices; `exact`:
    it has `MASK_EXACT` too)."""
    shift = 0
    value = _outside(value)
    while isinstance(op := value.owner, Operation):
        if isinstance(op, tensor.CollapseShapeOp | tensor.ExpandShapeOp):
            if not _trailing_kept(op.src.type, op.result.type):
                return None
            value = op.src
        elif isinstance(op, tensor.ExtractSliceOp):
            src, dst = op.source.type, op.result.type
            if not isinstance(src, TensorType) or not isinstance(dst, TensorType) or \
                    dst.get_num_dims() != src.get_num_dims() or op.offsets or op.strides or \
                    any(x != 1 for x in op.static_strides.get_values()) or \
                    any(x < 0 for x in op.static_offsets.get_values()):  # fmt: skip
                return None  # dynamic, strided or rank-reducing
            offsets = op.static_offsets.get_values()
            shift += offsets[-2] - offsets[-1]  # j' > i' + c + oi - oj
            value = op.source
        else:
            return None
        value = _outside(value)
    if not isinstance(value, BlockArgument) or not isinstance(f := value.block.parent_op(), func.FuncOp) or \
            value.block is not f.body.blocks.first or f.arg_attrs is None or \
            len(f.arg_attrs.data) != len(value.block.args):  # fmt: skip
        return None
    attrs = f.arg_attrs.data[value.index].data
    for name in MASK_ATTRS:
        if isinstance(a := attrs.get(name), IntegerAttr):
            return name, a.value.data + shift, MASK_EXACT in attrs
    return None


def _index(s: _Scores, op: linalg.IndexOp, node: Node) -> Fact:
    return Affine({s.dims.of[(node.index, op.dim.value.data)]: 1}, 0)


def _same(s: _Scores, op: Operation, node: Node) -> Fact:
    return s.value(op.operands[0], node)


def _int_cast(s: _Scores, op: Operation, node: Node) -> Fact:
    """An index cast keeps the value when the result holds every index (index, or
    at least 32 bits: sizes stay below 2^31); a narrower one wraps: unknown."""
    t = op.results[0].type
    if isinstance(t, IntegerType) and t.width.data < 32:
        return None
    return s.value(op.operands[0], node)


def _add_sub(s: _Scores, op: Operation, node: Node) -> Fact:
    x, y = s.args(op, node)
    if isinstance(x, Affine) and isinstance(y, Affine):
        return x.plus(y, 1 if isinstance(op, arith.AddiOp) else -1)
    return None


def _mul(s: _Scores, op: Operation, node: Node) -> Fact:
    x, y = s.args(op, node)
    if isinstance(x, Affine) and isinstance(y, Affine):
        if not y.coeffs:
            return x.times(y.const)
        if not x.coeffs:
            return y.times(x.const)
    return None


def _zero_test(s: _Scores, op: Operation, node: Node, equal: bool) -> Fact:
    """`x == 0` / `x != 0` of a `Zero` `x`: true / false but where it is live."""
    for a, b in (op.operands, reversed(op.operands)):
        z = s.value(a, node)
        if isinstance(z, Zero) and s.constant(b, node) == 0:
            return Cond(ANY, z.where) if equal else Cond(z.where, ANY)
    return None


_CMPF_EQ, _CMPF_NE = {1, 8}, {6, 13}  # oeq, ueq; one, une


def _cmpf(s: _Scores, op: arith.CmpfOp, node: Node) -> Fact:
    pred = op.predicate.value.data
    if pred in _CMPF_EQ | _CMPF_NE and (c := _zero_test(s, op, node, pred in _CMPF_EQ)) is not None:
        return c
    return UNKNOWN


def _cmpi(s: _Scores, op: arith.CmpiOp, node: Node) -> Fact:
    pred = _PREDICATES[op.predicate.value.data]
    if pred in ("eq", "ne") and (c := _zero_test(s, op, node, pred == "eq")) is not None:
        return c
    x, y = s.args(op, node)
    if isinstance(x, Cond) or isinstance(y, Cond):
        return _cmp_conditions(pred, x, y)
    if not isinstance(x, Affine) or not isinstance(y, Affine):
        return UNKNOWN
    if pred.startswith("u") and not (x.non_negative and y.non_negative):
        return UNKNOWN  # unsigned is signed only where both sides are non-negative
    signed = _SIGNED[pred]
    d = x.plus(y, -1)
    return Cond(s.compare(signed, d), s.compare(_NEGATED[signed], d))


def _cmp_conditions(pred: str, x: Fact, y: Fact) -> Fact:
    """`c == true`, `c != false`, `c == false` (torch-mlir's `logical_not`), ..."""
    for c, k in ((x, y), (y, x)):
        if isinstance(c, Cond) and k in (TRUE, FALSE) and pred in ("eq", "ne"):
            return c if (pred == "eq") == (k == TRUE) else c.negated()
    return UNKNOWN


def _andi(s: _Scores, op: Operation, node: Node) -> Fact:
    x, y = s.args(op, node)
    if isinstance(x, Cond) and isinstance(y, Cond):
        return Cond(x.true.both(y.true), x.false.either(y.false))
    return _top(op.results[0].type)


def _ori(s: _Scores, op: Operation, node: Node) -> Fact:
    x, y = s.args(op, node)
    if isinstance(x, Cond) and isinstance(y, Cond):
        return Cond(x.true.either(y.true), x.false.both(y.false))
    return _top(op.results[0].type)


def _xori(s: _Scores, op: Operation, node: Node) -> Fact:
    x, y = s.args(op, node)
    for c, k in ((x, y), (y, x)):
        if isinstance(c, Cond) and k in (TRUE, FALSE):
            return c.negated() if k == TRUE else c
    return _top(op.results[0].type)


def _select(s: _Scores, op: arith.SelectOp, node: Node) -> Fact:
    c, x, y = s.args(op, node)
    if not isinstance(c, Cond):
        return _top(op.result.type)
    if isinstance(x, Cond) and isinstance(y, Cond):
        return Cond(c.true.both(x.true).either(c.false.both(y.true)),
                    c.true.both(x.false).either(c.false.both(y.false)))  # fmt: skip
    if isinstance(x, Keep) and isinstance(y, Keep):
        return c.true.both(x).either(c.false.both(y))
    return _top(op.result.type)


def _addf(s: _Scores, op: Operation, node: Node) -> Fact:
    x, y = s.args(op, node)  # x + (-inf) is -inf but for x = +inf or NaN (module doc)
    for h, f in ((x, y), (y, x)):  # a huge mask added once to a finite score
        if isinstance(h, Huge) and not h.added and isinstance(f, Keep) and f.finite:
            return Huge(h.where, added=True)
    return x.both(y) if isinstance(x, Keep) and isinstance(y, Keep) else ANY


_WIDE = (BFloat16Type, Float32Type, Float64Type)
"""Float types with f32's exponent range at least: a rounding keeps `|x| < 2^101`
finite and `-2^118` at most `-2^118` (or -inf)."""


def _truncf(s: _Scores, op: Operation, node: Node) -> Fact:
    x = s.value(op.operands[0], node)
    if isinstance(op.results[0].type, _WIDE) or isinstance(x, Zero):
        return x
    if isinstance(x, Keep):
        return Keep(x.bounds, x.never)  # f16 may overflow a finite score
    return ANY


def _scaled(s: _Scores, op: Operation, node: Node) -> Fact:
    """`x * c`, `c * x`, `x / c` for a finite `c > 0` keeps -inf."""
    lhs, rhs = op.operands
    for x, c in ((lhs, rhs), (rhs, lhs)) if isinstance(op, arith.MulfOp) else ((lhs, rhs),):
        k = s.constant(c, node)
        if k is not None and 0 < k < math.inf:
            v = s.value(x, node)
            if not isinstance(v, Keep):
                return ANY  # a scaled huge mask may be small
            moderate = 2.0**-20 <= k <= 2.0**20
            return v if moderate or not v.finite else Keep(v.bounds, v.never)
    return ANY


def _max(s: _Scores, op: Operation, node: Node) -> Fact:
    x, y = s.args(op, node)
    return x.either(y) if isinstance(x, Keep) and isinstance(y, Keep) else ANY


def _min(s: _Scores, op: Operation, node: Node) -> Fact:
    x, y = s.args(op, node)
    return x.both(y) if isinstance(x, Keep) and isinstance(y, Keep) else ANY


_RULES: dict[type, Callable[..., Fact]] = {
    linalg.IndexOp: _index, arith.IndexCastOp: _int_cast, arith.ExtSIOp: _same,
    arith.AddiOp: _add_sub, arith.SubiOp: _add_sub, arith.MuliOp: _mul, arith.CmpiOp: _cmpi,
    arith.CmpfOp: _cmpf, arith.AndIOp: _andi, arith.OrIOp: _ori, arith.XOrIOp: _xori, arith.SelectOp: _select,
    arith.AddfOp: _addf, arith.MulfOp: _scaled, arith.DivfOp: _scaled,
    arith.TruncFOp: _truncf, arith.ExtFOp: _same,
    arith.MaximumfOp: _max, arith.MaxnumfOp: _max, arith.MinimumfOp: _min, arith.MinnumfOp: _min,
}  # fmt: skip
