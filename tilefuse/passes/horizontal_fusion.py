"""
`horizontal-fusion`: independent kernels share one launch.

Runs after `tile-and-fuse`. `plan_horizontal` (cost/horizontal.py) picks
bundles of tiled groups with no path between them; each bundle becomes one
group whose body holds the members' tile grids one after another, yielding all
their results:

```mlir
%y0, %y1 = tilefuse.group "fused_kernel_0" ins(%x0, %g, %b, %x1 : ...)
    reason "horizontal fusion of fused_kernel_0 + fused_kernel_1 (...)" {
^bb0(%0: ..., %1: ..., %2: ..., %3: ...):
  %4 = tilefuse.tile_grid [9] outs(...) ... { reads %0, %1, %2 }
  %5 = tilefuse.tile_grid [9] outs(...) ... { reads %3, %1, %2 }
  tilefuse.yield %4, %5 : ...
} -> (...)
```

A group is one kernel, so its grids run as one launch: the Triton printer
concatenates them (program ids `[0, 9)` run the first grid, `[9, 18)` the
second), sharing one body when the grids run the same tile program
(`same_tile_program`). The function's top-level ops are then put back in a
dependency order, since a bundle sits where its last member was.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

from tilefuse.analysis.cost.roofline import roofline_mixed
from tilefuse.analysis.cost.target import Target, get_target
from tilefuse.analysis.dataflow import host_sources, is_contraction
from tilefuse.analysis.horizontal_plan import (
    HorizontalPlan,
    KernelInfo,
    plan_horizontal,
)
from tilefuse.ir.structured import as_structured, element_type
from tilefuse.ir.tilefuse import GroupOp, TileGridOp, YieldOp, same_tile_program

COST_KEYS = ("flops", "fused_bytes", "unfused_bytes", "tc_flops", "sfu_ops")


@dataclass(frozen=True)
class HorizontalFusionPass(ModulePass):
    """Merge independent tiled groups into one launch where the cost model says so."""

    name = "horizontal-fusion"

    target: str = "h200"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = get_target(self.target)
        for f in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            fuse_horizontally(f, target)


def grids(group: GroupOp) -> list[TileGridOp]:
    return [o for o in group.entry.ops if isinstance(o, TileGridOp)]


def fuse_horizontally(f: func.FuncOp, target: Target) -> HorizontalPlan:
    """Plan and apply the bundles of `f`; returns the plan (decisions included)."""
    groups = [o for o in f.body.block.ops if isinstance(o, GroupOp)]
    infos = _kernel_infos(groups, target)
    plan = plan_horizontal(infos, target)
    by_name = {g.sym_name.data: g for g in groups}
    why = {d.ops: d.reason for d in plan.decisions if d.taken}
    merged = False
    for bundle in plan.bundles:
        if len(bundle) > 1:
            reason = next((r for ops, r in why.items() if ops == bundle), "")
            merge_groups([by_name[n] for n in bundle], reason)
            merged = True
    if merged:
        sort_top_level(f.body.block)
    return plan


def _kernel_infos(groups: list[GroupOp], target: Target) -> list[KernelInfo]:
    keys: list[TileGridOp] = []  # one grid per distinct tile program
    out = []
    for g in groups:
        deps = frozenset(
            owner.sym_name.data for v in g.inputs for root in host_sources(v)
            if isinstance(owner := root.owner, GroupOp)
        )
        gs = grids(g)
        if len(gs) != 1 or not all(k in g.attributes for k in COST_KEYS):
            # untiled (or already merged): a node of the graph, never a member
            out.append(KernelInfo(g.sym_name.data, deps, 0, 0, 0, 0.0, -1 - len(out),
                                  mergeable=False))  # fmt: skip
            continue
        (grid,) = gs
        key = next((i for i, k in enumerate(keys) if same_tile_program(k, grid) is not None), None)
        if key is None:
            keys.append(grid)
            key = len(keys) - 1
        a = {k: g.attributes[k].value.data for k in COST_KEYS}
        time = roofline_mixed(a["flops"], a["fused_bytes"], target, "bf16", a["tc_flops"],
                              a["sfu_ops"], launches=0).time  # fmt: skip
        out.append(KernelInfo(
            g.sym_name.data, deps, grid.num_warps.value.data, grid.num_stages.value.data,
            math.prod(grid.grid_shape), time, key, dot_dtype=_dot_dtype(g),
        ))  # fmt: skip
    return out


def _dot_dtype(g: GroupOp) -> str | None:
    """The operand element type(s) of the group's contractions, if it has any."""
    types = sorted({str(element_type(s.inputs[0].type)) for op in g.walk()
                    if (s := as_structured(op)) is not None and is_contraction(s)})  # fmt: skip
    return ",".join(types) or None


def merge_groups(members: list[GroupOp], reason: str) -> GroupOp:
    """Replace `members` by one group running their grids in order."""
    inputs: list[SSAValue] = []
    for g in members:
        inputs += [v for v in g.inputs if v not in inputs]
    block = Block(arg_types=[v.type for v in inputs])
    arg_of = dict(zip(inputs, block.args, strict=True))
    yielded: list[SSAValue] = []
    for g in members:
        for old, v in zip(g.entry.args, g.inputs, strict=True):
            old.replace_all_uses_with(arg_of[v])
        for op in list(g.entry.ops):
            op.detach()
            if isinstance(op, YieldOp):
                yielded += op.values
                op.erase(safe_erase=False)
            else:
                block.add_op(op)
    block.add_op(YieldOp(yielded))
    names = " + ".join(g.sym_name.data for g in members)
    parts = "; ".join(f"{g.sym_name.data}: {g.reason.data if g.reason else ''}" for g in members)
    merged = GroupOp(members[0].sym_name.data, inputs, [v.type for v in yielded],
                     Region(block), f"horizontal fusion of {names} ({reason}): {parts}")  # fmt: skip
    _merge_attributes(merged, members)
    last = members[-1]
    last.parent_block().insert_op_before(merged, last)
    results = iter(merged.results)
    for g in members:
        for r in g.results:
            r.replace_all_uses_with(next(results))
    for g in members:
        g.detach()
        g.erase(safe_erase=False)
    return merged


def _merge_attributes(merged: GroupOp, members: list[GroupOp]) -> None:
    """Costs add up; the tile plans are listed; branches run at the largest warps."""
    for k in COST_KEYS:
        merged.attributes[k] = IntegerAttr(sum(g.attributes[k].value.data for g in members), i64)
    tiles = list(dict.fromkeys(g.attributes["tile"].data for g in members if "tile" in g.attributes))
    merged.attributes["tile"] = StringAttr(f"{len(members)} grids: " + " | ".join(tiles))
    merged.attributes["tile_sizes"] = members[0].attributes.get(
        "tile_sizes", DenseArrayBase.from_list(i64, [])
    )
    warps = max(g.num_warps.value.data for g in grids(merged))
    for g in grids(merged):
        g.num_warps = IntegerAttr(warps, i64)


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
