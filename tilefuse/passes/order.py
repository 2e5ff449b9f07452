"""
Op order: after a rewrite moves ops (a bundle of groups sits where its last member
was), the function's top-level ops are put back in a dependency order. Shared by the
passes that group or merge ops, so none imports another's internals.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator


def sort_top_level(block: Block) -> None:
    """Reorder `block`'s ops so that every op follows what it uses (stable)."""
    ops = list(block.ops)
    terminator = ops.pop() if ops and ops[-1].has_trait(IsTerminator) else None
    position = {op: i for i, op in enumerate(ops)}
    if all(position.get(v.owner, -1) < position[op] for op in ops for v in _operands_deep(op)
           if isinstance(v.owner, Operation) and v.owner in position):  # fmt: skip
        return  # already in a dependency order: keep the program's order
    placed: set[Operation] = set()
    order: list[Operation] = []

    def place(op: Operation) -> None:
        if op in placed:
            return
        placed.add(op)
        for v in _operands_deep(op):
            owner = v.owner
            if isinstance(owner, Operation) and owner in position:
                place(owner)
        order.append(op)

    for op in ops:
        place(op)
    for op in order:
        op.detach()
        if terminator is None:
            block.add_op(op)
        else:
            block.insert_op_before(op, terminator)


def _operands_deep(op: Operation) -> list[SSAValue]:
    return [v for o in op.walk() for v in o.operands]
