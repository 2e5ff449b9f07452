"""
`drop-unused-results`: results of a multi-result `linalg.generic` nothing reads are dropped.

torch-mlir exports every `max(dim)` (so every `F.softmax` and SDPA) as a max with
the position it is reached at, and the position is often unused. The unused result
goes, with its init operand, its indexing map, its payload argument, its yielded
value and the payload ops that only computed it; the max is then a plain max
reduction. A result whose accumulator a kept result still reads stays, as do the
results of a generic whose other operands would no longer bound every loop; a
multi-result generic none of whose results is read is erased. The inits left
unread (fills, empties) are erased too, and an init a generic's payload never
reads that a fill made is replaced by the fill's own init (`skip_unread_fills`).

```mlir
%r:2 = linalg.generic ... outs(%max0, %idx0 : tensor<7xf32>, tensor<7xi64>) {
^bb0(%in: f32, %out: f32, %out_i: i64):
  %j = linalg.index 1 : index
  %p = arith.index_cast %j : index to i64
  %m = arith.maximumf %in, %out : f32
  %c = arith.cmpf ogt, %in, %out : f32
  %s = arith.select %c, %p, %out_i : i64
  linalg.yield %m, %s : f32, i64
} -> (tensor<7xf32>, tensor<7xi64>)        // only %r#0 is read
// becomes
%r = linalg.generic ... outs(%max0 : tensor<7xf32>) {
^bb0(%in: f32, %out: f32):
  %m = arith.maximumf %in, %out : f32
  linalg.yield %m : f32
} -> tensor<7xf32>
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import tensor
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from tilefuse.passes.cleanup import erase_dead_views, is_generic_fill


def _read_by(values: list[SSAValue], block: Block) -> set[SSAValue]:
    """Every value of `block` (arguments included) that `values` are computed from."""
    seen: set[SSAValue] = set()
    stack = list(values)
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v.owner, Operation) and v.owner.parent_block() is block:
            stack.extend(v.owner.operands)
    return seen


def droppable(op: linalg.GenericOp) -> list[int]:
    """The results of `op` that can go: unread, their accumulator read by no kept
    result, and the loops still bounded by the maps left."""
    block = op.body.block
    yield_op = block.last_op
    assert yield_op is not None
    dead = [k for k, r in enumerate(op.results) if not r.uses]
    kept = [k for k in range(len(op.results)) if k not in dead]
    needed = _read_by([yield_op.operands[k] for k in kept], block)
    accs = block.args[len(op.inputs) :]
    dead = [k for k in dead if accs[k] not in needed]
    maps = [m.data for m in op.indexing_maps.data]
    left = maps[: len(op.inputs)] + [maps[len(op.inputs) + k] for k in range(len(accs)) if k not in dead]
    used = set().union(*(m.used_dims() for m in left))
    return dead if len(used) == len(op.iterator_types) else []


def drop_unused_results(op: linalg.GenericOp) -> None:
    """Rebuild a multi-result generic without the results `droppable` allows (or
    erase it if none is read)."""
    if len(op.results) < 2:
        return
    if not any(r.uses for r in op.results):
        Rewriter.erase_op(op)
        return
    dead = droppable(op)
    if not dead:
        return
    n_in = len(op.inputs)
    keep = [k for k in range(len(op.results)) if k not in dead]
    maps = list(op.indexing_maps.data)
    body = op.detach_region(op.body)
    block = body.block
    yield_op = block.last_op
    assert yield_op is not None
    yield_op.operands = [yield_op.operands[k] for k in keep]
    for payload_op in reversed(list(block.ops)):
        if payload_op is not yield_op and not any(r.uses for r in payload_op.results):
            block.erase_op(payload_op)
    for k in reversed(dead):
        block.erase_arg(block.args[n_in + k])
    new = linalg.GenericOp(
        list(op.inputs), [op.outputs[k] for k in keep], body,
        [*maps[:n_in], *(maps[n_in + k] for k in keep)],
        op.iterator_types, [op.results[k].type for k in keep], op.doc, op.library_call,
    )  # fmt: skip
    new.location = op.location
    results = iter(new.results)
    Rewriter.replace_op(op, new, [None if k in dead else next(results) for k in range(len(op.results))])


def skip_unread_fills(op: linalg.GenericOp) -> None:
    """An init `op`'s payload never reads (a gather's, a pointwise op's) made by a
    fill: `op` writes the fill's own init instead, and a fill left unread goes (as
    upstream's `RemoveOutsDependency`). The fill would otherwise be a producer of
    `op` in its fusion group whose loops nothing else bounds: a dynamic size
    computed from the arguments' (`2 * T - 2`) that no kernel input gives."""
    accs = op.body.block.args[len(op.inputs) :]
    for k, (init, acc) in enumerate(zip(op.outputs, accs, strict=True)):
        fill = init.owner
        if acc.uses or not (isinstance(fill, linalg.FillOp) or is_generic_fill(fill)):
            continue
        if not isinstance(fill.outputs[0].owner, tensor.EmptyOp):  # pyright: ignore[reportAttributeAccessIssue]
            continue  # (a fill into an argument: left as it is)
        op.operands[len(op.inputs) + k] = fill.outputs[0]  # pyright: ignore[reportAttributeAccessIssue]
        if not any(r.uses for r in fill.results):  # pyright: ignore[reportAttributeAccessIssue]
            Rewriter.erase_op(fill)  # pyright: ignore[reportArgumentType]


@dataclass(frozen=True)
class DropUnusedResultsPass(ModulePass):
    """Drop the unread results of multi-result `linalg.generic` ops."""

    name = "drop-unused-results"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for generic in [o for o in op.walk() if isinstance(o, linalg.GenericOp)]:
            drop_unused_results(generic)
        for generic in [o for o in op.walk() if isinstance(o, linalg.GenericOp)]:
            skip_unread_fills(generic)
        erase_dead_views(op)
