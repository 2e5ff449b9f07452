"""
Sibling K loops become one loop.

A group with two contractions over the same reduction range that do not feed each
other (LLaMA's SwiGLU: `silu(x @ Wg) * (x @ Wu)`) is tiled by `tile-and-fuse` as two
`scf.for` loops in one tile program, one accumulator each. Run one after the other,
each loop streams the shared operand `x` again and starts its software pipeline
again. `fuse_sibling_loops` merges them: one loop over the same chunks carrying both
accumulators, every tile a body loads once (two loads of the same tile of the same
tensor at the same offsets are one: group inputs are never written in the tile
program):

```mlir
%g = scf.for %k = %c0 to %c2048 step %c64 iter_args(%a = %zero) -> (tensor<128x128xf32>) {
  %x = tilefuse.load %xa[%m, %k] ...   %w = tilefuse.load %wg[%n, %k] ...
  ... dot ...
}
%s = ... silu(%g) ...
%u = scf.for %k2 = %c0 to %c2048 step %c64 iter_args(%b = %zero) -> (...) {
  %x2 = tilefuse.load %xa[%m, %k2] ...   %w2 = tilefuse.load %wu[%n, %k2] ...
  ... dot ...
}
```

becomes one loop yielding `(%g, %u)` with one load of `%xa`, then `silu(%g)`. The
tile planner counts the merged loop's operand tiles and accumulators
(`tile_plan.sibling_contractions`); both loops must hold a contraction (a `dot`-shaped
generic: a reduction accumulating into the carried value), so the merge never adds
buffers the plan did not count.
"""

from __future__ import annotations

from collections.abc import Collection

from xdsl.dialects import arith, scf
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue

from tilefuse.ir.tilefuse import LoadOp, StoreOp


def fuse_sibling_loops(block: Block, siblings: Collection[scf.ForOp]) -> scf.ForOp | None:
    """Merge the loops of `block` among `siblings` (the K loops of the contractions
    the plan counted as one loop, `tile_plan.sibling_contractions`) where they can
    be (module doc); the merged loop, if any."""
    loops = [op for op in block.ops if op in siblings and _holds_contraction(op)]
    fused = None
    while len(loops) > 1:
        a = loops.pop(0)
        b = next((b for b in loops if _mergeable(a, b)), None)
        if b is None:
            continue
        loops.remove(b)
        fused = _merge(a, b)
        loops.insert(0, fused)
    return fused


def _holds_contraction(loop: scf.ForOp) -> bool:
    """The loop accumulates a contraction: a generic with a reduction whose output is
    one of the loop's carried values."""
    carried = set(loop.body.block.args[1:])
    return any(isinstance(op, linalg.GenericOp) and len(op.inputs) == 2
               and any(t.data.value == "reduction" for t in op.iterator_types.data)
               and any(v in carried for v in op.outputs)
               for op in loop.body.block.ops)  # fmt: skip


def _same_value(a: SSAValue, b: SSAValue) -> bool:
    """One SSA value, or two index constants of one value."""
    if a is b:
        return True
    oa, ob = a.owner, b.owner
    return (isinstance(oa, arith.ConstantOp) and isinstance(ob, arith.ConstantOp)
            and oa.value == ob.value)  # fmt: skip


def _uses_inside(op: Operation) -> set[SSAValue]:
    """Values `op` and the ops nested in it read that are defined outside it."""
    inner: set[SSAValue] = set()
    used: set[SSAValue] = set()
    for o in op.walk():
        for r in o.regions:
            for b in r.blocks:
                inner.update(b.args)
        inner.update(o.results)
        used.update(o.operands)
    return used - inner


def _between(a: scf.ForOp, b: scf.ForOp) -> list[Operation]:
    ops, op = [], a.next_op
    while op is not None and op is not b:
        ops.append(op)
        op = op.next_op
    return ops


def _mergeable(a: scf.ForOp, b: scf.ForOp) -> bool:
    """Same bounds, `b` reads nothing computed from `a`, and nothing in between or
    in either loop writes memory (so the ops between that `b` needs can move above
    `a`)."""
    if not all(_same_value(x, y) for x, y in ((a.lb, b.lb), (a.ub, b.ub), (a.step, b.step))):
        return False
    if any(isinstance(o, StoreOp) for op in (a, b, *_between(a, b)) for o in op.walk()):
        return False
    after_a = set(a.results)
    for op in _between(a, b):
        if _uses_inside(op) & after_a:
            after_a.update(op.results)
    return not (_uses_inside(b) & after_a)


def _merge(a: scf.ForOp, b: scf.ForOp) -> scf.ForOp:
    """One loop at `a`'s place: `a`'s body, then `b`'s, both accumulators carried."""
    block = a.parent_block()
    assert block is not None
    after_a = set(a.results)
    for op in _between(a, b):  # what does not depend on `a` moves above it
        if _uses_inside(op) & after_a:
            after_a.update(op.results)
        else:
            op.detach()
            block.insert_op_before(op, a)
    na = len(a.iter_args)
    body = Block(arg_types=[a.body.block.args[0].type, *(v.type for v in a.iter_args),
                            *(v.type for v in b.iter_args)])  # fmt: skip
    yielded: list[SSAValue] = []
    for loop, args in ((a, body.args[1 : 1 + na]), (b, body.args[1 + na :])):
        mapping: dict[SSAValue, SSAValue] = {loop.body.block.args[0]: body.args[0]}
        mapping.update(zip(loop.body.block.args[1:], args, strict=True))
        for op in loop.body.block.ops:
            if isinstance(op, scf.YieldOp):
                yielded += [mapping.get(v, v) for v in op.operands]
                continue
            body.add_op(op.clone(value_mapper=mapping))
    body.add_op(scf.YieldOp(*yielded))
    _share_loads(body)
    fused = scf.ForOp(a.lb, a.ub, a.step, [*a.iter_args, *b.iter_args], Region(body))
    block.insert_op_before(fused, a)
    for old, new in zip([*a.results, *b.results], fused.results, strict=True):
        old.replace_all_uses_with(new)
    for loop in (a, b):
        block.erase_op(loop)
    return fused


def _share_loads(body: Block) -> None:
    """Loads of one tile of one tensor at the same offsets: the first serves all."""
    seen: dict[tuple, LoadOp] = {}
    for op in list(body.ops):
        if not isinstance(op, LoadOp):
            continue
        key = (op.source, tuple(op.offsets), op.result.type,
               tuple(sorted((k, str(v)) for k, v in op.attributes.items())))  # fmt: skip
        first = seen.setdefault(key, op)
        if first is not op:
            op.result.replace_all_uses_with(first.result)
            body.erase_op(op)
