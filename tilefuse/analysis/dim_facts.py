"""
What is known of a dynamic size: {min, max, divisor} facts (issue 18).

The declared ranges bound the arguments' dynamic dims (`tilefuse.dim_ranges`);
every other dynamic size of the program is made from them: a collapse multiplies
its group's sizes (GPT-2's tokens `8 x ?` are rows `?` of up to 8 x 2048), a
`tensor.empty` or `expand_shape` takes size values (`tensor.dim` and index
arithmetic on it), a linalg result has its init's. `dim_facts` follows a dim to
where it was made and computes its facts on the way back:

```python
dim_facts(rows, 0)      # DimFacts(lo=8, hi=16384, divisor=8)
group_facts(group)      # the facts every dynamic dim of a kernel's tensors obeys
```

None where a step is not understood (the facts of the whole function then stand:
`ir.dynamic.planning_size`). The tile planner prices a kernel at its own largest
size (`tile_and_fuse`): a GEMM over the rows of a batch of sequences is planned at
batch x the longest sequence, not at the longest sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue

from tilefuse.ir.dynamic import argument_name, declared_ranges
from tilefuse.ir.structured import made_size
from tilefuse.ir.tilefuse import GroupOp, TileGridOp, YieldOp


@dataclass(frozen=True)
class DimFacts:
    """A size lies in `lo`..`hi` and is a multiple of `divisor`."""

    lo: int
    hi: int
    divisor: int = 1

    @staticmethod
    def exact(n: int) -> DimFacts:
        return DimFacts(n, n, max(abs(n), 1))

    def __mul__(self, other: DimFacts) -> DimFacts:
        corners = [a * b for a in (self.lo, self.hi) for b in (other.lo, other.hi)]
        return DimFacts(min(corners), max(corners), self.divisor * other.divisor)

    def __add__(self, other: DimFacts) -> DimFacts:
        return DimFacts(self.lo + other.lo, self.hi + other.hi,
                        math.gcd(self.divisor, other.divisor))  # fmt: skip

    def __sub__(self, other: DimFacts) -> DimFacts:
        return DimFacts(self.lo - other.hi, self.hi - other.lo,
                        math.gcd(self.divisor, other.divisor))  # fmt: skip

    def floordiv(self, c: int) -> DimFacts:
        return DimFacts(self.lo // c, self.hi // c, self.divisor // c if self.divisor % c == 0 else 1)

    def ceildiv(self, c: int) -> DimFacts:
        exact = self.divisor % c == 0
        return DimFacts(-(-self.lo // c), -(-self.hi // c), self.divisor // c if exact else 1)

    def join(self, other: DimFacts) -> DimFacts:
        """Facts both sizes obey."""
        return DimFacts(min(self.lo, other.lo), max(self.hi, other.hi),
                        math.gcd(self.divisor, other.divisor))  # fmt: skip


def dim_facts(value: SSAValue, axis: int, depth: int = 0) -> DimFacts | None:
    """The facts of dim `axis` of tensor `value` (a dynamic one); None if unknown."""
    at: tuple[SSAValue, int] | DimFacts | None = (value, axis)
    for _ in range(256):  # (a chain of views and ops; never a cycle in SSA)
        if not isinstance(at, tuple) or depth > 64:
            return at if isinstance(at, DimFacts) else None
        at = _step(*at, depth)
    return None


def _step(value: SSAValue, axis: int, depth: int) -> tuple[SSAValue, int] | DimFacts | None:
    """One step of `dim_facts`: the facts, or the (tensor, axis) the size is that of."""
    shape = value.type.get_shape() if isinstance(value.type, TensorType) else ()
    if axis < len(shape) and shape[axis] != DYNAMIC_INDEX:
        return DimFacts.exact(shape[axis])
    if isinstance(value, BlockArgument):
        return _argument_step(value, axis)
    op = value.owner
    if isinstance(op, GroupOp):  # a kernel's result: as its body yields it
        last = op.body.block.last_op
        if not isinstance(last, YieldOp):
            return None
        return last.operands[list(op.results).index(value)], axis
    if isinstance(op, tensor.CollapseShapeOp):
        facts = DimFacts.exact(1)
        for d in (d.value.data for d in op.reassociation.data[axis].data):  # pyright: ignore
            f = dim_facts(op.src, d, depth + 1)
            if f is None:
                return None
            facts = facts * f
        return facts
    step = made_size(value, axis)
    if step is None or isinstance(step, tuple):
        return step
    return size_facts(step, depth + 1)


def _argument_step(value: BlockArgument, axis: int) -> tuple[SSAValue, int] | DimFacts | None:
    """A function argument's declared facts; a kernel's argument is its operand."""
    parent = value.block.parent_op()
    if isinstance(parent, func.FuncOp):
        r = declared_ranges(parent).get(f"{argument_name(parent, value.index)}.{axis}")
        return DimFacts(r.lo, r.hi, r.divisor) if r is not None else None
    if isinstance(parent, GroupOp) and value.index < len(parent.inputs):
        return parent.inputs[value.index], axis
    return None


def size_facts(value: SSAValue, depth: int = 0) -> DimFacts | None:
    """The facts of an index value: a read size (`tensor.dim`), a constant, or
    products, sums and quotients by constants of such; None if unknown."""
    op = value.owner
    if depth > 64 or not isinstance(op, Operation):
        return None
    if isinstance(op, tensor.DimOp):
        index = op.index.owner
        if isinstance(index, arith.ConstantOp):
            return dim_facts(op.source, index.value.value.data, depth + 1)  # pyright: ignore
        return None
    if isinstance(op, arith.ConstantOp):
        n = getattr(op.value, "value", None)
        return DimFacts.exact(n.data) if isinstance(getattr(n, "data", None), int) else None  # pyright: ignore
    if isinstance(op, arith.IndexCastOp):
        return size_facts(op.input, depth + 1)
    if isinstance(op, (arith.MuliOp, arith.AddiOp, arith.SubiOp)):  # (`T - 1`: `x[:, 1:]`)
        a, b = size_facts(op.lhs, depth + 1), size_facts(op.rhs, depth + 1)
        if a is None or b is None:
            return None
        return a * b if isinstance(op, arith.MuliOp) else a + b if isinstance(op, arith.AddiOp) else a - b
    if isinstance(op, (arith.DivUIOp, arith.DivSIOp, arith.FloorDivSIOp, arith.CeilDivUIOp,
                       arith.CeilDivSIOp)):  # fmt: skip
        a, c = size_facts(op.lhs, depth + 1), size_facts(op.rhs, depth + 1)
        if a is None or c is None or c.lo != c.hi or c.lo <= 0:
            return None
        ceil = isinstance(op, (arith.CeilDivUIOp, arith.CeilDivSIOp))
        return a.ceildiv(c.lo) if ceil else a.floordiv(c.lo)
    return None


def size_origin(value: SSAValue, axis: int | None = None) -> SSAValue | tuple[SSAValue, int]:
    """Where dynamic dim `axis` of `value` was sized: the (tensor, axis) or size value
    it is by construction, followed through views, inits, `tensor.dim` and kernels (a
    group's result is what its body yields, a tile grid's its destination's, a
    group's argument its operand). Two dims of one origin are one size at run time.

    Unlike `resolved_size` it does not take an `expand_shape`'s `output_shape` on
    trust: the sizes it states are what the source must have, not what it has (an
    argument expanded by another's size: the host reshapes and checks). An expanded
    dim alone in its group (the others 1) is its source's dim; any other is its own
    origin. Without `axis`, `value` is a size (an index: a grid's run-time extent)."""
    at: SSAValue | tuple[SSAValue, int] = value if axis is None else (value, axis)
    for _ in range(256):  # (views and kernels: never a cycle in SSA)
        if not isinstance(at, tuple):
            read = at.owner
            index = read.index.owner if isinstance(read, tensor.DimOp) else None
            if not isinstance(index, arith.ConstantOp):
                return at
            at = (read.source, index.value.value.data)  # pyright: ignore
        step = _origin_step(*at)
        if step is None:
            return at
        at = step
    return at


def _origin_step(v: SSAValue, axis: int) -> SSAValue | tuple[SSAValue, int] | None:
    """One step of `size_origin`; None where the size is its own origin."""
    shape = v.type.get_shape() if isinstance(v.type, TensorType) else ()
    if axis >= len(shape) or shape[axis] != DYNAMIC_INDEX:
        return None
    op = v.owner
    if isinstance(v, BlockArgument):
        parent = v.block.parent_op()
        if isinstance(parent, TileGridOp) and v in parent.destinations:
            return parent.outs[parent.destinations.index(v)], axis
        if isinstance(parent, GroupOp) and v.index < len(parent.inputs):
            return parent.inputs[v.index], axis
        return None
    if isinstance(op, GroupOp) and isinstance(last := op.body.block.last_op, YieldOp):
        return last.operands[list(op.results).index(v)], axis
    if isinstance(op, TileGridOp):
        return op.outs[list(op.results).index(v)], axis
    if isinstance(op, tensor.ExpandShapeOp):
        for k, group in enumerate(op.reassociation.data):  # pyright: ignore[reportAttributeAccessIssue]
            dims = [d.value.data for d in group.data]  # pyright: ignore[reportAttributeAccessIssue]
            if axis in dims:  # (its group's other dims all 1: it is its source's dim)
                alone = all(shape[d] == 1 for d in dims if d != axis)
                return (op.src, k) if alone else None
        return None
    return made_size(v, axis)


def group_facts(group: GroupOp) -> DimFacts | None:
    """Facts every dynamic dim of a kernel's tensors (inputs and results) obeys; None
    if it has none or one is unknown."""
    facts = None
    for v in [*group.inputs, *group.results]:
        for d, n in enumerate(v.type.get_shape()):  # pyright: ignore[reportAttributeAccessIssue]
            if n != DYNAMIC_INDEX:
                continue
            f = dim_facts(v, d)
            if f is None:
                return None
            facts = f if facts is None else facts.join(f)
    return facts
