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
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.passes import ModulePass

from tilefuse.analysis.cost.target import Target, get_target
from tilefuse.analysis.horizontal_plan import (
    HorizontalPlan,
    family,
    kernel_infos,
    persistent_programs,
    plan_horizontal,
)
from tilefuse.ir.dynamic import PLANNING_SIZE_ATTR
from tilefuse.ir.tilefuse import (
    SAME_SIZES,
    SERVES,
    STATIC_SIZES,
    VARIANT_OF,
    VARIANTS,
    GroupOp,
    YieldOp,
)
from tilefuse.passes.order import sort_top_level


@dataclass(frozen=True)
class HorizontalFusionPass(ModulePass):
    """Merge independent tiled groups into one launch where the cost model says so."""

    name = "horizontal-fusion"

    target: str = "h200"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = get_target(self.target)
        for f in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            fuse_horizontally(f, target)


def fuse_horizontally(f: func.FuncOp, target: Target) -> HorizontalPlan:
    """Plan and apply the bundles of `f`; returns the plan (decisions included).

    A bundle of groups with variants (`tile-and-fuse`) is a bundle per level: the
    members' variants serving the same sizes merge as their groups do, and the
    merged group names the merged variants."""
    groups = [o for o in f.body.block.ops if isinstance(o, GroupOp)]
    plan = plan_horizontal(kernel_infos(groups, target), target)
    by_name = {g.sym_name.data: g for g in groups}
    why = {d.ops: d.reason for d in plan.decisions if d.taken}
    merged = False
    for bundle in plan.bundles:
        if len(bundle) > 1:
            reason = next((r for ops, r in why.items() if ops == bundle), "")
            families = [family(by_name[n], by_name) for n in bundle]
            levels = [merge_groups(list(level), reason, target)
                      for level in zip(*families, strict=True)]  # fmt: skip
            *variants, base = levels
            if variants:
                base.attributes[VARIANTS] = ArrayAttr([v.sym_name for v in variants])
                for v in variants:
                    v.attributes[VARIANT_OF] = base.sym_name
            merged = True
    if merged:
        sort_top_level(f.body.block)
    return plan


def merge_groups(members: list[GroupOp], reason: str, target: Target) -> GroupOp:
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
    _merge_attributes(merged, members, target)
    _merge_size_facts(merged, members, inputs)
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


def _merge_size_facts(merged: GroupOp, members: list[GroupOp], inputs: list[SSAValue]) -> None:
    """What the host checks of the members' dynamic sizes (`SAME_SIZES`,
    `STATIC_SIZES`: input indices, renumbered for the merged group's inputs), and
    the sizes the members serve and were planned at (equal: `kernel_infos`)."""
    same: list[Attribute] = []
    fixed: list[Attribute] = []
    for g in members:
        index = [inputs.index(v) for v in g.inputs]
        for group in g.attributes.get(SAME_SIZES, ArrayAttr([])).data:  # pyright: ignore
            same.append(ArrayAttr([DenseArrayBase.from_list(i64, [index[i], axis])
                                   for i, axis in (a.get_values() for a in group.data)]))  # fmt: skip
        for entry in g.attributes.get(STATIC_SIZES, ArrayAttr([])).data:  # pyright: ignore
            i, axis, size = entry.get_values()
            fixed.append(DenseArrayBase.from_list(i64, [index[i], axis, size]))
    if same:
        merged.attributes[SAME_SIZES] = ArrayAttr(same)
    if fixed:
        merged.attributes[STATIC_SIZES] = ArrayAttr(fixed)
    for name in (SERVES, PLANNING_SIZE_ATTR):
        if name in members[0].attributes:
            merged.attributes[name] = members[0].attributes[name]


def _merge_attributes(merged: GroupOp, members: list[GroupOp], target: Target) -> None:
    """Costs add up; each grid keeps its tile plan; branches run at the largest warps;
    a persistent bundle's plans launch the bundle's programs (`persistent_programs`)."""
    costs = [g.cost for g in members if g.cost is not None]
    if costs:
        total = costs[0]
        for c in costs[1:]:
            total = total + c
        merged.cost = total
    warps = max(g.num_warps.value.data for g in merged.grids)
    for g in merged.grids:
        g.num_warps = IntegerAttr(warps, i64)
    plans = [g.plan for g in merged.grids]
    if all(p is not None and p.persistent.data for p in plans):
        first = plans[0]
        assert first is not None
        tiles = math.prod(merged.grids[0].grid_shape) if not merged.grids[0].sizes else None
        programs = persistent_programs(len(plans), tiles, first.persistent.data, target)
        for g in merged.grids:
            assert g.plan is not None
            g.plan = g.plan.with_persistent(programs)
