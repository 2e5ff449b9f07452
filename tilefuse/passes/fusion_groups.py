"""
`fusion-groups`: wrap the ops the cost model fuses into `tilefuse.group` regions.

Runs after `linalg-generalize`. For each function, `plan_fusion` (cost/fusion.py)
decides the groups; this pass moves each group's ops into one isolated region,
in an order that respects the dependencies between groups. Ops recomputed in a
group (fills, cheap multi-use producers) are cloned into it; constants and
`tensor.empty` are cloned where used. The group carries its decision and its
cost (`#tilefuse.cost`: FLOPs and HBM bytes, for `horizontal-fusion` and the benchmark):

```mlir
%r = tilefuse.group "fused_kernel_0" ins(%x : tensor<70x333xf32>)
    reason "fused reduction: reduce_maximum + sub + reduce_add + div (6 ops)"
    attributes {cost = #tilefuse.cost<flops = 116550, fused_bytes = 186480,
                unfused_bytes = 561680, tc_flops = 0, sfu_ops = 46620, dtype = "f32">}
    { ... } -> (tensor<70x333xf32>)
```
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, cf, func, tensor
from xdsl.dialects.builtin import IndexType, ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.dataflow import (
    FILL,
    HOST_COPIES,
    VIEW_OPS,
    Graph,
    build_graph,
    classify,
    pad_value,
    reshape_root,
    view_source,
)
from tilefuse.analysis.fusion_plan import (
    FusionGroup,
    FusionPlan,
    group_kind,
    plan_fusion,
)
from tilefuse.analysis.value_range import value_range
from tilefuse.ir import forms
from tilefuse.ir.diagnostics import CompileError, warn
from tilefuse.ir.log import channel
from tilefuse.ir.structured import as_structured, host_index, slice_dims
from tilefuse.ir.tilefuse import CostAttr, GroupOp, WindowOp, YieldOp
from tilefuse.passes.order import sort_top_level


def _is_free(op: Operation) -> bool:
    """Ops cloned into every group that uses them: scalar constants, `tensor.empty`,
    a dynamic size (`tensor.dim`, index arithmetic on sizes), and scalars computed
    from sizes and constants (a mean's divisor: `sitofp(index_cast(tensor.dim))`);
    what they read from outside becomes the group's input (the tensor a
    `tensor.dim` asks)."""
    if isinstance(op, tensor.EmptyOp | tensor.DimOp):
        return True
    if isinstance(op, arith.ConstantOp):
        return not isinstance(op.result.type, TensorType)
    if op.dialect_name() != "arith" or len(op.results) != 1 or op.regions:
        return False
    if isinstance(op.results[0].type, IndexType):
        return True
    return not isinstance(op.results[0].type, TensorType) and all(
        isinstance(o.owner, Operation) and _is_free(o.owner) for o in op.operands)


def is_tensor_constant(op: Operation) -> bool:
    """A tensor-valued constant: built once on the host, read by groups as an input."""
    return isinstance(op, arith.ConstantOp) and isinstance(op.result.type, TensorType)


@dataclass(frozen=True)
class FusionGroupsPass(ModulePass):
    """Form kernels: one `tilefuse.group` per fusion group of the cost model."""

    name = "fusion-groups"

    target: str = "h200"
    max_group_ops: int = 24

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        named = forms.first_named_op(op)
        if named is not None:
            raise CompileError.at(named, "must be generalized before fusion-groups: "
                                  "run linalg-generalize first")  # fmt: skip
        target = get_target(self.target)
        for f in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            if any(isinstance(o, GroupOp) for o in f.body.walk()):
                continue
            _erase_dead_ops(f)
            graph = build_graph(f)
            if graph.nodes:
                plan = plan_fusion(graph, target, self.max_group_ops)
                _log_decisions(f, plan)
                rewrite_function(f, graph, plan)
            else:  # no kernels: what is left runs on the host, or is refused
                _check_supported(f.body.block, set())


def _log_decisions(f: func.FuncOp, plan: FusionPlan) -> None:
    """`TILEFUSE_LOG=fusion`: each decision of the plan, one line."""
    log = channel("fusion")
    if log.isEnabledFor(logging.INFO):
        for d in plan.decisions:
            log.info("@%s: %s", f.sym_name.data, d.format())


def _erase_dead_ops(f: func.FuncOp) -> None:
    """Linalg ops on tensors whose results nobody reads compute nothing: drop them."""
    changed = True
    while changed:
        changed = False
        for op in reversed(list(f.body.block.ops)):
            dead = as_structured(op) is not None or _is_free(op)
            if dead and op.results and not any(r.uses for r in op.results):
                for check in (o for o in op.walk() if isinstance(o, cf.AssertOp)):
                    warn(check, "is dropped with the op computing it: nothing reads "
                         "that op's results, so no kernel runs the check")  # fmt: skip
                op.detach()
                op.erase()
                changed = True


def rewrite_function(f: func.FuncOp, graph: Graph, plan: FusionPlan) -> None:
    """Replace the structured ops of `f` by the plan's group ops."""
    block = f.body.block
    structured = set(graph.by_op)
    _check_supported(block, structured)
    terminator = block.last_op
    assert terminator is not None
    replaced: dict[SSAValue, SSAValue] = {}
    covered: dict[Operation, set[Operation]] = {}  # op -> the ops of groups recomputing it
    for group in plan.groups:
        ops = {graph.nodes[i].op for i in group.all_nodes}
        for i in group.recomputed:
            covered.setdefault(graph.nodes[i].op, set()).update(ops)
    for group in _launch_order(graph, plan):
        group_op = _build_group(graph, group, replaced, covered)
        if not group_op.outputs:
            continue  # dead code: nothing outside reads what the group computes
        Rewriter.insert_op(group_op, InsertPoint.before(terminator))
    for old, new in replaced.items():
        old.replace_all_uses_with(new)
    sort_top_level(block)  # reshapes between the groups that compute and read them
    for op in reversed(list(block.ops)):
        if op in structured or (_is_free(op) and not any(r.uses for r in op.results)):
            op.detach()
            op.erase(safe_erase=False)


def is_host_reshape(op: Operation) -> bool:
    """A reshape or static slice the host does as a view, between kernels: of a
    function argument, a tensor constant or a computed result, through any chain
    of views. Kernels never see them; the fusion plan orders the kernels on each
    side of one (`view_producers`). Views of fills or `tensor.empty` (which only
    exist inside kernels) are not views of anything the host has."""
    if not isinstance(op, VIEW_OPS) or not isinstance(op.parent_op(), func.FuncOp):
        return False
    if isinstance(op, tensor.ExtractSliceOp) and dynamic_slice_error(op) is not None:
        return False
    root = reshape_root(view_source(op))
    if isinstance(root, BlockArgument) or isinstance(root.owner, HOST_COPIES):
        return True
    if is_tensor_constant(root.owner):
        return True
    s = as_structured(root.owner)
    # a window of a fill-like generic that reads linalg.index (an iota): the
    # generic is its own kernel, as a pad's source is (`passes/fold_windows.py`
    # folds windows of plain fills and broadcasts)
    return s is not None and (classify(s) != FILL or isinstance(op, WindowOp))


def dynamic_slice_error(op: tensor.ExtractSliceOp) -> str | None:
    """Why the host cannot take `op` as a view, or None: its strides must be static,
    its dynamic offsets and sizes computable by the host (`host_index`: sizes of the
    arguments, constants, their arithmetic), and a dim of static size must hold the
    slice at every size the declared ranges allow (`value_range`: `x[:t]` of a
    128-row buffer with `t` in `1:128`). A dynamic dim's slice (`x[:, 1:]`,
    `x[:, t - 1]`) is checked by the host at each call (`slice_checks`)."""
    dims = slice_dims(op)
    if dims is None:
        return "has dynamic strides: tilefuse slices at static strides (offsets and sizes may be dynamic)"
    source = op.source.type.get_shape()  # pyright: ignore
    for d, s in enumerate(dims):
        values = [v for v in (s.offset, s.size) if isinstance(v, SSAValue)]
        if s.whole or not values:
            continue
        if not all(host_index(v) for v in values):
            return (f"slices dim {d} at an offset or to a size the host cannot compute before "
                    "the kernels run (only sizes of the arguments, constants and their "
                    "arithmetic)")  # fmt: skip
        if source[d] < 0:
            continue  # (checked by the host at each call)
        offset, size = (_int_range(v) for v in (s.offset, s.size))
        if (offset is None or size is None or offset[0] < 0 or size[0] < 1
                or offset[1] + (size[1] - 1) * s.stride >= source[d]):  # fmt: skip
            where = "a dynamic offset" if isinstance(s.offset, SSAValue) else f"offset {s.offset}"
            sizes = "an unbounded size" if size is None else f"sizes {size[0]} to {size[1]}"
            return (f"slices dim {d} (size {source[d]}) from {where} to {sizes}, not inside "
                    "it at every size the declared ranges allow: narrow the dynamic dims' "
                    "ranges")  # fmt: skip
    return None


def _int_range(v: int | SSAValue) -> tuple[int, int] | None:
    if isinstance(v, int):
        return v, v
    r = value_range(v)
    if r is None or not (math.isfinite(r.lo) and math.isfinite(r.hi)):
        return None
    return math.ceil(r.lo), math.floor(r.hi)


def is_host_copy(op: Operation) -> bool:
    """A `tensor.concat`, static `tensor.insert_slice` or constant `tensor.pad` by
    static amounts (of a tensor of static or dynamic shape) at function level: the host builds the result with torch
    (`torch.cat`, a slice assignment, a filled tensor) between the kernels that make its
    operands and those that read it."""
    if not isinstance(op, HOST_COPIES) or not isinstance(op.parent_op(), func.FuncOp):
        return False
    if isinstance(op, tensor.PadOp):  # (a dynamic dim grows by its static padding)
        return pad_value(op) is not None and not op.low and not op.high
    return not (isinstance(op, tensor.InsertSliceOp) and (op.offsets or op.sizes or op.strides))


def _check_supported(block: Block, structured: set[Operation]) -> None:
    for op in block.ops:
        if (op in structured or _is_free(op) or isinstance(op, func.ReturnOp)
                or is_host_reshape(op) or is_tensor_constant(op) or is_host_copy(op)):  # fmt: skip
            continue
        if isinstance(op, tensor.ExtractSliceOp) and (why := dynamic_slice_error(op)):
            raise CompileError.at(op, why)
        if isinstance(op, VIEW_OPS):
            raise CompileError.at(
                op, "views a fill or tensor.empty, which exist only inside kernels: "
                "create the tensor in the viewed shape instead")  # fmt: skip
        if isinstance(op, tensor.PadOp):
            raise CompileError.at(op, "pads with dynamic sizes or a computed value, or pads a "
                                  "tensor of dynamic size: tilefuse pads static tensors with "
                                  "static sizes and a constant")  # fmt: skip
        raise CompileError.at(
            op, "cannot be placed among fusion groups (only linalg, constants, "
            "tensor.empty, reshapes and static slices of arguments and results, "
            "tensor.concat, static tensor.insert_slice, static constant tensor.pad "
            "and func.return are supported at function level)"
        )  # fmt: skip


def _launch_order(graph: Graph, plan: FusionPlan) -> list[FusionGroup]:
    """Groups in a dependency-respecting order (ties: by root position)."""
    owner = {i: g.name for g in plan.groups for i in g.nodes}
    deps = {g.name: set() for g in plan.groups}
    for g in plan.groups:
        for i in g.all_nodes:
            for p in [*graph.nodes[i].producers, *graph.nodes[i].view_producers]:
                if p.index in owner and owner[p.index] != g.name and p.index not in g.all_nodes:
                    deps[g.name].add(owner[p.index])
    order, done = [], set()
    pending = sorted(plan.groups, key=lambda g: g.root)
    while pending:
        ready = next(g for g in pending if deps[g.name] <= done)
        order.append(ready)
        done.add(ready.name)
        pending.remove(ready)
    return order


def _build_group(graph: Graph, group: FusionGroup, replaced: dict[SSAValue, SSAValue],
                 covered: dict[Operation, set[Operation]]) -> GroupOp:  # fmt: skip
    """`group` as a `tilefuse.group` op; a result leaves it where an op outside reads it,
    unless that op's group computes the result itself (`covered`: the ops of the groups
    recomputing each op)."""
    ops = _canonical_order([graph.nodes[i].op for i in group.all_nodes])
    inputs = _external_inputs(ops)
    body = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = {}
    for v, arg in zip(inputs, body.args, strict=True):
        mapping[v] = arg
    for op in ops:
        _clone_free_operands(op, body, mapping)
        body.add_op(op.clone(value_mapper=mapping))
    own = [graph.nodes[i].op for i in group.nodes]
    members = set(ops)
    outputs = [
        r for op in own for r in op.results
        if any(u.operation not in members and u.operation not in covered.get(op, ()) for u in r.uses)
    ]  # fmt: skip
    body.add_op(YieldOp([mapping[r] for r in outputs]))
    group_op = GroupOp(
        group.name, [replaced.get(v, v) for v in inputs], [r.type for r in outputs],
        Region(body), reason=_reason(graph, group),
    )  # fmt: skip
    c = group.cost
    group_op.cost = CostAttr(c.flops, c.fused_bytes, c.unfused_bytes, c.tc_flops, c.sfu_ops,
                             c.dtype)  # fmt: skip
    root = graph.nodes[group.root].op
    group_op.location = root.location
    for old, new in zip(outputs, group_op.results, strict=True):
        replaced[old] = new
    return group_op


def _canonical_order(ops: Sequence[Operation]) -> list[Operation]:
    """`ops` (in program order) in the order their results are needed: depth first
    from the ops whose results leave the group, each op after the ops it reads, in
    operand order. The order a program happens to write independent ops in (a bias
    cast before or after the accumulator's fill, as torch-mlir writes BERT's Q and K
    projections) then changes neither the group's loop dims nor its tile program, so
    groups computing the same thing are the same program (`horizontal-fusion`)."""
    members, placed, order = set(ops), set(), []

    def place(op: Operation) -> None:
        stack = [(op, False)]
        while stack:
            o, ready = stack.pop()
            if o in placed:
                continue
            if ready:
                placed.add(o)
                order.append(o)
                continue
            stack.append((o, True))
            reads = [v.owner for v in _all_used_values(o)
                     if isinstance(v.owner, Operation) and v.owner in members]  # fmt: skip
            stack += [(r, False) for r in reversed(reads) if r not in placed]

    leaving = [op for op in ops if any(u.operation not in members for r in op.results for u in r.uses)]
    for op in [*leaving, *ops]:
        place(op)
    return order


def _external_inputs(ops: Sequence[Operation]) -> list[SSAValue]:
    """Tensors the ops read that are defined outside them (not free ops)."""
    inside = {r for op in ops for r in op.results}
    inputs: list[SSAValue] = []

    def add(v: SSAValue) -> None:
        if v in inside or v in inputs:
            return
        if isinstance(v.owner, Operation) and _is_free(v.owner):
            for o in v.owner.operands:  # cloned in: what it reads comes in
                add(o)
            return
        inputs.append(v)

    for op in ops:
        for v in _all_used_values(op):
            add(v)
    return inputs


def _all_used_values(op: Operation) -> list[SSAValue]:
    """Operands of `op` and values its regions capture from outside."""
    values = list(op.operands)
    for inner in op.walk():
        for v in inner.operands:
            owner = v.owner
            if (isinstance(owner, Operation) and not op.is_ancestor(owner)) or (not isinstance(owner, Operation) and not op.is_ancestor(owner.parent_op())):
                values.append(v)
    return values


def _clone_free_operands(op: Operation, body: Block, mapping: dict[SSAValue, SSAValue]) -> None:
    for v in _all_used_values(op):
        _clone_free(v, body, mapping)


def _clone_free(v: SSAValue, body: Block, mapping: dict[SSAValue, SSAValue]) -> None:
    """Clone the free op defining `v` into `body`, what it reads first."""
    owner = v.owner
    if v in mapping or not isinstance(owner, Operation) or not _is_free(owner):
        return
    for o in owner.operands:
        _clone_free(o, body, mapping)
    clone = owner.clone(value_mapper=mapping)
    body.add_op(clone)
    for old, new in zip(owner.results, clone.results, strict=True):
        mapping[old] = new


def _reason(graph: Graph, group: FusionGroup) -> str:
    nodes = [graph.nodes[i] for i in group.all_nodes]
    labels = " + ".join(n.label for n in nodes if n.label != "fill")
    return f"{group_kind(nodes)}: {labels} ({len(nodes)} ops)"
