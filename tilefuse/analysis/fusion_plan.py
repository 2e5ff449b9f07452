"""
Fusion decisions: which ops share a kernel, and why.

`plan_fusion(graph, target)` walks the ops in program order and, for each
consumer, tries to merge the group of each producer into its own. Each try is a
`Decision`, taken or refused, with its reason and numbers:

- pointwise consumers always fuse with their producers;
- a reduction (or a pointwise op over a reduced dim) fuses when one row of
  every value the group keeps on chip fits one program (`budget.fit`: shared
  memory, registers, occupancy; the tile planner's own test), or else when
  looping over the rows in chunks moves no more bytes than the ops apart;
- a pointwise op after a contraction fuses as its epilogue; a reduction over a
  contraction's output would need whole output rows per tile and is refused;
- a contraction never absorbs the producers of its operands (each would be
  recomputed for every output tile);
- a merge that would close a cycle between groups is refused, and so is one
  that would compute a tensor in the kernel that gathers from it;
- groups are capped at `max_group_ops` ops.

A producer used outside its group is an extra output of the group (written
once, read back by its other users) unless recomputing it in the consumer's
group moves fewer bytes than that round trip. `fill` ops are free and are
recomputed in every group that uses them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tilefuse.analysis.budget import COMPUTE_BYTES, Fit, fit, pow2
from tilefuse.analysis.cost.opcost import GroupCost, group_cost, tensor_bytes
from tilefuse.analysis.cost.target import Target
from tilefuse.analysis.dataflow import (
    CONTRACTION,
    FILL,
    POINTWISE,
    REDUCE,
    Graph,
    Node,
    SharedDims,
    is_cast,
    recompute_cone,
    recompute_refusal,
    shared_dims,
)
from tilefuse.analysis.patterns import find_online_softmax
from tilefuse.analysis.tile_plan import flash_tile
from tilefuse.ir.dtypes import dtype_bytes


@dataclass(frozen=True)
class Decision:
    """One fusion decision, taken or refused, in the seed's log style."""

    taken: bool
    kind: str
    ops: tuple[str, ...]
    reason: str
    group: str = ""

    def format(self) -> str:
        names = " + ".join(self.ops)
        if self.kind == "single op":
            return f"[FUSION] single op: {names} -> {self.group} (nothing to fuse)"
        if self.taken:
            return f"[FUSION] fused {self.kind}: {names} -> {self.group} ({self.reason})"
        return f"[FUSION] skipped: {names} ({self.reason})"


@dataclass(frozen=True)
class FusionGroup:
    """Ops that become one kernel; `recomputed` ops are copies of another group's."""

    name: str
    nodes: tuple[int, ...]
    root: int
    recomputed: tuple[int, ...]
    cost: GroupCost

    @property
    def all_nodes(self) -> tuple[int, ...]:
        return tuple(sorted(self.nodes + self.recomputed))


@dataclass(frozen=True)
class FusionPlan:
    """The groups of a function, in launch order, and the decision log."""

    groups: tuple[FusionGroup, ...]
    decisions: tuple[Decision, ...]

    def log(self) -> str:
        return "\n".join(d.format() for d in self.decisions)


@dataclass
class _State:
    graph: Graph
    target: Target
    max_group_ops: int
    group_of: dict[int, int] = field(default_factory=dict)
    members: dict[int, list[int]] = field(default_factory=dict)
    recompute: dict[int, list[int]] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    merged_into: dict[int, int] = field(default_factory=dict)

    def final(self, gid: int) -> int:
        while gid in self.merged_into:
            gid = self.merged_into[gid]
        return gid

    def nodes(self, gid: int) -> list[Node]:
        return [self.graph.nodes[i] for i in self.members[gid]]


def plan_fusion(graph: Graph, target: Target, max_group_ops: int = 24) -> FusionPlan:
    """Decide the fusion groups of `graph` for `target`."""
    st = _State(graph, target, max_group_ops)
    _premerge_attention(st)
    for node in graph.nodes:
        if is_free_fill(node) and not node.external_uses:
            continue  # recomputed where read (_attach_fills); a returned fill is a kernel
        if node.index not in st.group_of:
            st.group_of[node.index] = node.index
            st.members[node.index] = [node.index]
        for p in node.producers:
            if not is_free_fill(p):
                _try_merge(st, p, node)
    _attach_fills(st)
    _sink_casts(st)
    _decide_multi_use(st)
    return _finish(st)


ATTENTION_TAG = "tilefuse.attention"


def _premerge_attention(st: _State) -> None:
    """Ops the flash-attention pass tagged become one kernel (FlashAttention)."""
    tagged: dict[str, list[Node]] = {}
    for node in st.graph.nodes:
        tag = node.op.attributes.get(ATTENTION_TAG)
        if tag is not None and node.kind != FILL:
            tagged.setdefault(tag.data, []).append(node)
    for nodes in tagged.values():
        gid = nodes[0].index
        st.members[gid] = [n.index for n in nodes]
        for n in nodes:
            st.group_of[n.index] = gid
        contraction = next(n for n in nodes if n.kind == CONTRACTION)
        head_dim = math.prod(contraction.s.planned_ranges[d] for d in contraction.s.reduction_dims)
        ebytes = dtype_bytes(contraction.s.inputs[0].type)
        _, _, rule = flash_tile(st.target, head_dim, ebytes)
        reason = (f"{len(nodes)} nodes; FlashAttention: scores stay on chip, online softmax "
                  f"over key tiles; {rule}")  # fmt: skip
        labels = (nodes[0].label, "...", nodes[-1].label)
        st.decisions.append(Decision(True, "flash-attention", labels, reason, group=f"@{gid}"))


def _try_merge(st: _State, producer: Node, consumer: Node) -> None:
    gp, gc = st.group_of[producer.index], st.group_of[consumer.index]
    if gp == gc:
        return
    merged = st.nodes(gp) + st.nodes(gc)
    labels = (group_label(st.nodes(gp)), consumer.label)
    refusal = _refusal(st, producer, consumer, gp, gc, merged)
    if refusal == REDUCES_PRODUCT_ROWS and (tail := _peel_tail(st, producer, gp)) is not None:
        gp, moved = tail
        merged = st.nodes(gp) + st.nodes(gc)
        refusal = _refusal(st, producer, consumer, gp, gc, merged)
        if refusal is not None:
            _unpeel(st, gp, moved)
        else:
            st.decisions.append(Decision(
                True, "peel", tuple(st.graph.nodes[i].label for i in st.members[gp]),
                f"moved out of {moved}'s epilogue: {consumer.label} reduces over the "
                f"contraction's output dim, and what they read from it is stored anyway",
                group=f"@{gp}"))  # fmt: skip
    if refusal is not None:
        st.decisions.append(Decision(False, group_kind(merged), labels, refusal))
        return
    for i in st.members.pop(gc):
        st.group_of[i] = gp
        st.members[gp].append(i)
    st.merged_into[gc] = gp
    st.members[gp].sort()
    note = f"{len(merged)} nodes" + _passes_note(st, merged) + _recompute_note(st, merged)
    st.decisions.append(Decision(True, group_kind(merged), labels, note, group=f"@{gp}"))


def _recompute_note(st: _State, merged: list[Node]) -> str:
    """The producers computed once per read along another loop (`y[j] - y[i]`)."""
    dims = shared_dims(st.graph, merged)
    again = {p.label for ni, i in dims.split_reads
             for p in recompute_cone(st.graph, merged, st.graph.nodes[ni], i)}  # fmt: skip
    if not again:
        return ""
    return f"; {' + '.join(sorted(again))} computed once per read along different loops"


REDUCES_PRODUCT_ROWS = "a reduction over a contraction's output dim needs whole product rows per tile"


def _peel_tail(st: _State, producer: Node, gp: int) -> tuple[int, int] | None:
    """
    Move the pointwise tail of a contraction's epilogue that ends in `producer`
    out of group `gp` into a group of its own -> (its id, gp); None where it
    cannot. A row reduction cannot join an epilogue (`REDUCES_PRODUCT_ROWS`), but
    the pointwise ops it reads there can join the reduction: RMSNorm after a
    residual add, `ext(h)` then `h^2` in the down-projection's epilogue, would
    otherwise be stored in f32 and the norm split in two kernels. The tail is
    `producer` and the pointwise ops of `gp` read only by the tail; every value it
    reads from what stays in `gp` must be stored by `gp` anyway (read by another
    kernel or returned), so moving it adds no traffic (a cast among those is then
    recomputed by its readers, `_sink_casts`).
    """
    group = set(st.members[gp])
    nodes = st.graph.nodes
    if producer.kind != POINTWISE or any(ATTENTION_TAG in nodes[i].op.attributes for i in group):
        return None
    tail = _tail(st, producer, group)
    if tail is None or tail == group or all(is_cast(nodes[i]) for i in tail):
        return None  # (a tail of casts leaves later, recomputed by every reader: _sink_casts)
    key = next((i for i in sorted(tail) if i not in st.members), None)
    if key is None:
        return None
    # (every op began as a group of its own, merged into `gp` when visited: no
    # decision names that group, so its id is free again)
    st.merged_into.pop(key, None)
    st.members[gp] = [i for i in st.members[gp] if i not in tail]
    st.members[key] = sorted(tail)
    for i in tail:
        st.group_of[i] = key
    return key, gp


def _tail(st: _State, producer: Node, group: set[int]) -> set[int] | None:
    """`_peel_tail`'s ops: `producer` and the pointwise ops of `group` only they
    read; None where the group reads one of them or would store a value only they
    read."""
    nodes = st.graph.nodes
    tail = {producer.index}
    grown = True
    while grown:
        grown = False
        for i in list(tail):
            for q in nodes[i].producers:
                if (q.index in group and q.index not in tail and q.kind == POINTWISE
                        and not q.external_uses and all(c.index in tail for c in q.consumers)):  # fmt: skip
                    tail.add(q.index)
                    grown = True
    if any(c.index in group - tail for i in tail for c in nodes[i].consumers):
        return None  # the epilogue reads the tail
    for i in tail:
        for q in nodes[i].producers:
            if q.index in group - tail and not (
                    q.external_uses or any(c.index not in group for c in q.consumers)):  # fmt: skip
                return None  # the epilogue would store a value only the tail reads
    return tail


def _unpeel(st: _State, key: int, home: int) -> None:
    """Undo `_peel_tail`: group `key`'s ops go back to `home`."""
    for i in st.members.pop(key):
        st.group_of[i] = home
        st.members[home].append(i)
    st.members[home].sort()


def _refusal(
    st: _State, producer: Node, consumer: Node, gp: int, gc: int, merged: list[Node]
) -> str | None:
    """Why the groups of `producer` and `consumer` must stay apart, or None."""
    if consumer.kind == CONTRACTION:
        return (
            "a contraction reads its operands tile by tile; fusing their producer "
            "would recompute it for every output tile"
        )
    dims = shared_dims(st.graph, merged)
    has_contraction = any(n.kind == CONTRACTION for n in merged)
    if has_contraction and consumer.kind == REDUCE and _reduces_contraction_dim(dims, merged):
        return REDUCES_PRODUCT_ROWS
    if len(merged) > st.max_group_ops:
        return f"group size limit: {len(merged)} > {st.max_group_ops} ops"
    if (why := _gathers_within(merged)) is not None:
        return why
    if _creates_cycle(st, gp, gc):
        return "merging would create a cycle between kernels"
    if len({n.op.attributes[ATTENTION_TAG].data for n in merged if ATTENTION_TAG in n.op.attributes}) > 1:
        return TWO_ATTENTIONS
    if (why := _recomputed_reduction(dims, merged)) is not None:
        return why
    if (why := recompute_refusal(st.graph, merged, dims)) is not None:
        return why
    if (why := _sibling_refusal(st, gp, gc, merged, dims)) is not None:
        return why
    return _budget_refusal(st, merged)


TWO_ATTENTIONS = (
    "two FlashAttentions: each runs its own key loop at the tile its head dim and "
    "scores plan; one kernel holding both plans neither (what one writes, the other's "
    "epilogue reads)"
)


SIBLING_EFFICIENCY = 0.79
"""Throughput of two sibling contractions in one K loop (two accumulators of 128 x 128:
SwiGLU's gate and up projections) relative to the same two run apart, each at its own
tile (128 x 256): 545 against 694 TF/s on the H100 at 1024 x 4096 x 11008 (docs/PERF.md,
`tools/experiments/sibling_split.py`)."""
SPLIT_MARGIN = 1.5
"""How much the shared loop's loss must exceed the round trip before the siblings are
kept apart: `SIBLING_EFFICIENCY` was measured at one shape, and apart each GEMM runs
below its long-K rate at short K (587 against 694 TF/s at K = 1024 and 4096, H100). At
K = 1024 (LLaMA d1024: loss 1.48x the round trip) the H100 measured one kernel 4%
faster; at K = 2048 and 4096 (3.0x and 5.9x) apart was 2% and 17% faster."""


def _siblings(st: _State, ours: set[int], theirs: set[int], dims) -> bool:
    """Does a contraction of `ours` read an input of one of `theirs` over the same
    reduction dims (the shape `tile_plan.sibling_contractions` runs in one loop)?"""
    def contractions(ids: set[int]) -> list[Node]:
        return [st.graph.nodes[i] for i in sorted(ids) if st.graph.nodes[i].kind == CONTRACTION]

    def reduced(n: Node) -> list[int]:
        return sorted(dims.of[(n.index, d)] for d in n.s.reduction_dims)

    return any(set(a.s.inputs) & set(b.s.inputs) and reduced(a) == reduced(b)
               for a in contractions(ours) for b in contractions(theirs))  # fmt: skip


def _sibling_refusal(st: _State, gp: int, gc: int, merged: list[Node], dims) -> str | None:
    """Two groups each holding a contraction that would share one K loop (siblings:
    `tile_plan.sibling_contractions`, joined by a reader of both, SwiGLU's product):
    one kernel loses `1 / SIBLING_EFFICIENCY - 1` of their tensor-core time; apart,
    what the first writes for the second makes a round trip through HBM. Kept apart
    when the loss is the larger (sm_90, where the shared loop was measured). LLaMA's
    MLP at 1024 tokens x 4096 x 11008: 339 us as one kernel, 280 apart (H100)."""
    if st.target.compute_capability < (9, 0):
        return None
    ours, theirs = set(st.members[gp]), set(st.members[gc])
    if not _siblings(st, ours, theirs, dims):
        return None
    cost = group_cost(st.graph, merged)
    if not cost.tc_flops or cost.dtype not in st.target.peak_tensor_flops:
        return None  # no tensor-core loop (an IEEE f32 dot): not what was measured
    lost = cost.tc_flops / st.target.peak_flops(cost.dtype, True) * (1 / SIBLING_EFFICIENCY - 1)
    readers = {st.graph.nodes[j].op for j in theirs}
    crossing = {r for i in ours for r in st.graph.nodes[i].op.results
                if any(u.operation in readers for u in r.uses)}  # fmt: skip
    moved = 2 * sum(tensor_bytes(r) for r in crossing)
    round_trip = moved / st.target.hbm_bandwidth
    if lost <= SPLIT_MARGIN * round_trip:
        return None
    return (f"sibling contractions in one K loop run at {SIBLING_EFFICIENCY} of apart: "
            f"{lost * 1e6:.1f} us lost, over {SPLIT_MARGIN}x the {round_trip * 1e6:.1f} us "
            f"round trip of {_kb(moved)} apart")  # fmt: skip


def _gathers_within(merged: list[Node]) -> str | None:
    """A gather (`tensor.extract` in a payload) reads its tensor from memory at
    computed indices: that tensor cannot be a tile computed in the same kernel."""
    members = set(merged)
    for n in merged:
        for p in n.gather_producers:
            if p in members:
                return (f"{n.label} reads the result of {p.label} by tensor.extract at computed "
                        "indices (a gather): it must be in memory, written by an earlier kernel")  # fmt: skip
    return None


def _recomputed_reduction(dims: SharedDims, nodes: list[Node]) -> str | None:
    """
    A reduction whose result lacks one of the group's grid dims would be
    recomputed by every program along that dim (the model does not price that):
    refuse instead.
    """
    grid = {d.id for d in dims.dims if d.is_grid and d.extent > 1} - _attention_whole_dims(dims, nodes)
    for n in nodes:
        if n.kind != REDUCE:
            continue
        out = {dims.of[(n.index, d)] for d in n.s.operand_dims(len(n.s.inputs))}
        missing = grid - out
        if missing:
            extent = max(dims.dims[d].extent for d in missing)
            return (f"{n.label} would be recomputed for every tile along a dim of "
                    f"extent {extent} it does not have")  # fmt: skip
    return None


def _attention_whole_dims(dims: SharedDims, nodes: list[Node]) -> set[int]:
    """The dims a FlashAttention program holds whole: the output dims of its
    contractions that are not rows of its reductions (`P V`'s head dim). An
    epilogue read along them (the output's cast, its head-merging copy) is no
    reason to recompute the softmax: every program has whole rows of `o`."""
    tagged = [n for n in nodes if ATTENTION_TAG in n.op.attributes]

    def out_dims(n: Node) -> set[int]:
        return {dims.of[(n.index, d)] for d in n.s.operand_dims(len(n.s.inputs))}

    rows = set().union(*(out_dims(n) for n in tagged if n.kind == REDUCE))
    return set().union(*(out_dims(n) for n in tagged if n.kind == CONTRACTION)) - rows


def _reduces_contraction_dim(dims: SharedDims, merged: list[Node]) -> bool:
    contraction_parallel = {
        dims.of[(n.index, d)] for n in merged if n.kind == CONTRACTION for d in n.s.parallel_dims
    }
    reduced = {
        dims.of[(n.index, d)] for n in merged if n.kind == REDUCE for d in n.s.reduction_dims
    }
    return bool(contraction_parallel & reduced)


def _budget_refusal(st: _State, merged: list[Node]) -> str | None:
    """
    Does one row (every grid dim at 1) of the group's on-chip values fit?

    If not, the group can still run as one kernel that loops over its rows in
    chunks, one pass over HBM per reduction (the multi-pass fallback); that is
    taken when it moves no more bytes than the ops apart (one launch fewer).
    """
    row = row_fit(st.graph, merged, st.target)
    if row.fits:
        return None
    passes = reduction_passes(st.graph, merged, st.target)
    cost = group_cost(st.graph, merged, passes)
    if cost.fused_bytes <= cost.unfused_bytes:  # ties: one launch fewer
        return None
    spill = spilled_bytes(st.graph, merged, st.target.smem_per_block)
    return (
        f"{_row_over(st, merged, row)}; {passes} passes would move {_kb(cost.fused_bytes)}, "
        f"spilling {_kb(cost.fused_bytes // passes + spill)}, "
        f"not less than {_kb(cost.unfused_bytes)} unfused"
    )


def row_fit(graph: Graph, nodes: Sequence[Node], target: Target) -> Fit:
    """Does one row of the group's on-chip values (grid dims at 1, inner dims
    whole) fit one program (`budget.fit`, the tile planner's first try)?"""
    dims = shared_dims(graph, nodes)
    elements = math.prod(pow2(d.extent) for d in dims.dims if not d.is_grid)
    return fit(target, row_working_set(graph, nodes), elements, target.smem_per_block)


def _row_over(st: _State, nodes: Sequence[Node], row: Fit) -> str:
    """Why one row does not fit: shared memory, or registers at the occupancy floor."""
    row_bytes, budget = row_working_set(st.graph, nodes), st.target.smem_per_block
    if row_bytes > budget:
        return f"SRAM: one row of the fused values is {_kb(row_bytes)} > budget {_kb(budget)}"
    return (f"registers: one row of the fused values ({_kb(row_bytes)}) needs {row.regs} "
            f"registers per thread at {row.warps} warps, occupancy {row.occupancy:.2f}")  # fmt: skip


def reduction_passes(graph: Graph, nodes: Sequence[Node], target: Target) -> int:
    """
    Passes over HBM a group needs: 1 when a row fits on chip (`row_fit`); else one
    per reduction over a row dim plus one to write the results.
    """
    if row_fit(graph, nodes, target).fits:
        return 1
    dims = shared_dims(graph, nodes)
    reductions = sum(
        1
        for n in nodes
        if n.kind == REDUCE and any(not dims.dim(n, d).is_grid for d in n.s.reduction_dims)
    )
    members = set(nodes)
    # Online softmax: reductions linear in exp(u - max) share the max's pass.
    folded = sum(
        sum(1 for r in sm.linear if r in members and r.kind == REDUCE)
        for sm in find_online_softmax(graph)
        if sm.max_node in members and sm.exp_node in members
    )
    return reductions - folded + 1


def _passes_note(st: _State, merged: list[Node]) -> str:
    passes = reduction_passes(st.graph, merged, st.target)
    if passes == 1:
        return ""
    row = row_working_set(st.graph, merged)

    members = set(merged)
    online = any(sm.max_node in members and sm.exp_node in members and
                 any(r in members for r in sm.linear) for sm in find_online_softmax(st.graph))  # fmt: skip
    how = "online softmax, " if online else ""
    if row <= st.target.smem_per_block:  # within shared memory, over the register file
        fit_ = row_fit(st.graph, merged, st.target)
        return f"; rows of {_kb(row)} need {fit_.regs} registers per thread: {how}{passes} passes over HBM"
    return (
        f"; rows of {_kb(row)} exceed {_kb(st.target.smem_per_block)}: "
        f"{how}{passes} passes over HBM"
    )


def spilled_bytes(graph: Graph, nodes: Sequence[Node], budget: int) -> int:
    """
    HBM traffic added when a group's rows do not fit `budget` (seed 000).

    Intermediates leave the chip largest first until one row fits; each one
    spilled is written once and read back once.
    """
    rows = _row_bytes(graph, nodes)
    row = sum(rows.values())
    members = set(nodes)
    intermediates = sorted(
        (
            (tensor_bytes(r), r)
            for n in nodes
            if n.kind != FILL
            for r in n.op.results
            if all(graph.by_op.get(u.operation) in members for u in r.uses)
        ),
        key=lambda item: -item[0],
    )
    spill = 0
    for full, value in intermediates:
        if row <= budget:
            break
        row -= sum(b for (v, _), b in rows.items() if v == value)
        spill += 2 * full
    return spill


def fused_cost_with_budget(graph: Graph, nodes: Sequence[Node], target: Target) -> int:
    """Fused bytes of `nodes`, plus what spills when rows exceed shared memory."""
    return group_cost(graph, nodes).fused_bytes + spilled_bytes(
        graph, nodes, target.smem_per_block
    )


def row_working_set(graph: Graph, nodes: Sequence[Node]) -> int:
    """Bytes of the group's distinct values with grid dims at 1 and inner dims whole."""
    return sum(_row_bytes(graph, nodes).values())


def _row_bytes(graph: Graph, nodes: Sequence[Node]) -> dict[tuple[object, tuple[int, ...]], int]:
    dims = shared_dims(graph, nodes)
    seen: dict[tuple[object, tuple[int, ...]], int] = {}
    for n in nodes:
        if n.kind == FILL:
            continue
        operands = [(v, n.s.operand_dims(i)) for i, v in enumerate(n.s.inputs)]
        operands += [
            (r, n.s.operand_dims(len(n.s.inputs) + i)) for i, r in enumerate(n.op.results)
        ]
        for value, loops in operands:
            inner = [pow2(dims.dim(n, d).extent) for d in loops if not dims.dim(n, d).is_grid]
            # a tensor read along two different loops is two tiles
            seen[(value, tuple(dims.of[(n.index, d)] for d in loops))] = math.prod(inner) * COMPUTE_BYTES
    return seen


def _creates_cycle(st: _State, ga: int, gb: int) -> bool:
    """Is there a path between the two groups through a third group?

    Paths are between groups, not ops: once ops share a kernel, everything the
    kernel reads must be ready before any of it runs.
    """
    return (_group_path(st, ga, gb) or _group_path(st, gb, ga)
            or _view_edge(st, ga, gb) or _view_edge(st, gb, ga))  # fmt: skip


def _view_edge(st: _State, src: int, dst: int) -> bool:
    """Does group `dst` read a result of `src` through a host-side reshape?"""
    return any(st.group_of.get(c.index) == dst
               for i in st.members[src] for c in st.graph.nodes[i].view_consumers)  # fmt: skip


def _group_edges(st: _State, gid: int) -> set[int]:
    """Groups that read a result of group `gid`."""
    out = set()
    for i in st.members[gid]:
        for c in [*st.graph.nodes[i].consumers, *st.graph.nodes[i].view_consumers]:
            if c.index in st.group_of and st.group_of[c.index] != gid:
                out.add(st.group_of[c.index])
    return out


def _group_path(st: _State, src: int, dst: int) -> bool:
    """A path src -> (some other group) -> ... -> dst."""
    stack = [g for g in _group_edges(st, src) if g != dst]
    seen: set[int] = set()
    while stack:
        g = stack.pop()
        if g in seen:
            continue
        seen.add(g)
        for h in _group_edges(st, g):
            if h == dst:
                return True
            if h != src:
                stack.append(h)
    return False


def is_free_fill(node: Node) -> bool:
    """A fill that reads no computed tensor (a constant, a 0-d argument, or a
    scalar op on those): free to recompute in every group that reads it. A
    broadcast of a computed 0-d tensor is classified a fill too, but depends on
    its producer's kernel: it is placed in a group like any other op."""
    return node.kind == FILL and not node.producers


def _attach_fills(st: _State) -> None:
    """Fills are free: recompute each in every group that reads it."""
    for node in st.graph.nodes:
        if not is_free_fill(node):
            continue
        for c in node.consumers:
            gid = st.group_of[c.index]
            if node.index not in st.recompute.setdefault(gid, []):
                st.recompute[gid].append(node.index)


def _decide_multi_use(st: _State) -> None:
    """A producer read by other groups: export it once, or recompute it there."""
    for node in st.graph.nodes:
        home = st.group_of.get(node.index)
        if is_free_fill(node) or node.index not in st.members.get(home, []):
            continue  # a fill, or a cast its readers recompute (_sink_casts)
        readers = []
        for c in node.consumers:
            other = st.group_of[c.index]
            if other != home and other not in readers:
                readers.append(other)
        exported = [g for g in readers if not _recompute_in(st, node, g)]
        used_at_home = any(st.group_of[c.index] == home for c in node.consumers)
        if exported and used_at_home:
            round_trip = 2 * sum(tensor_bytes(r) for r in node.op.results)
            st.decisions.append(Decision(
                False, "multi-use", (node.label,),
                f"kept as an extra output of its group, read back by {len(exported)} "
                f"other kernel(s): {_kb(round_trip)} round trip; recompute not cheaper"))  # fmt: skip


def _recompute_in(st: _State, node: Node, other: int) -> bool:
    """Recompute `node` in group `other` (with the pointwise ops and fills it is computed
    from: `_pointwise_cone`) if that moves fewer bytes than a round trip."""
    consumers = [c for c in node.consumers if st.group_of[c.index] == other]
    if node.kind != POINTWISE or any(c.kind == CONTRACTION for c in consumers):
        return False
    cone = _pointwise_cone(st, node, other)
    if cone is None:
        return False
    members = [st.graph.nodes[i] for i in st.members[other]]
    if _gathers_within([*members, *cone]) is not None:
        return False
    round_trip = 2 * sum(tensor_bytes(r) for r in node.op.results)
    reads = {v for n in members for v in n.s.inputs}
    outside = {v for n in cone if n.kind != FILL for v in n.s.inputs
               if st.graph.producer_of(v) is None and v not in reads}  # fmt: skip
    extra_reads = sum(tensor_bytes(v) for v in outside)
    if extra_reads >= round_trip:
        return False
    merged = [*members, *cone]
    if recompute_refusal(st.graph, merged, shared_dims(st.graph, merged)) is not None:
        return False
    st.recompute.setdefault(other, []).extend(n.index for n in cone)
    ops = f"{len(cone)} ops " if len(cone) > 1 else ""
    st.decisions.append(Decision(
        True, "recompute", (node.label, consumers[0].label),
        f"recompute {ops}reads {_kb(extra_reads)} < round trip {_kb(round_trip)}",
        group=f"@{other}"))  # fmt: skip
    return True


def _pointwise_cone(st: _State, node: Node, other: int) -> list[Node] | None:
    """`node` and what group `other` needs to compute it itself: its producers, theirs,
    ... up to the function's arguments, each pointwise or a fill (a causal mask two
    attentions share, computed from index ranges); None if the cone reaches another
    kind of op or a view. Ops `other` has already are not repeated."""
    have = {*st.members[other], *st.recompute.get(other, [])}
    cone: list[Node] = []
    seen: set[int] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if n.index in seen or n.index in have:
            continue
        seen.add(n.index)
        if n.kind not in (POINTWISE, FILL) or n.view_producers or n.gather_producers:
            return None
        cone.append(n)
        stack.extend(n.producers)
    return sorted(cone, key=lambda n: n.index)


def _sink_casts(st: _State) -> None:
    """
    A cast (`is_cast`: extf, truncf, sitofp, ... of one tensor) whose result leaves
    its group is recomputed by the groups that read it, from the value it casts:
    no group stores a value and that value in another dtype. torch-mlir's
    LayerNorm widens its f32 input to f64 for `var_mean`; fused into a matmul's
    epilogue, the `extf` would make the GEMM kernel compute in f64 and store the
    residual sum twice (f32 and f64). Casts are visited last first, so a chain of
    them (bf16 -> f32 -> f64) moves whole. A cast stays where it is when it is read
    in its own group, returned or read through a host view, read as a
    contraction's operand, by a FlashAttention kernel, or when the reader's
    group would need more passes over its rows; a narrowing cast also stays
    unless the wider value leaves its group anyway (storing the narrow value is
    cheaper).
    """
    for node in reversed(st.graph.nodes):
        if not is_cast(node) or node.index not in st.members.get(st.group_of[node.index], []):
            continue
        home = st.group_of[node.index]
        readers, why = _cast_readers(st, node, home)
        if not readers:
            continue  # no other kernel reads it
        why = why or _cast_stays(st, node, home, readers)
        if why is not None:
            st.decisions.append(Decision(False, "cast", (node.label,), why))
            continue
        st.members[home].remove(node.index)
        st.group_of[node.index] = readers[0]  # computed there (and in any other reader)
        src, dst = node.s.inputs[0].type, node.op.results[0].type
        for gid in readers:
            st.recompute.setdefault(gid, []).append(node.index)
            reader = next(c for c in node.consumers if c.index in _in_group(st, gid))
            st.decisions.append(Decision(
                True, "recompute", (node.label, reader.label),
                f"a cast {_elt(src)} -> {_elt(dst)} leaving its group is recomputed by its "
                f"reader from the {_elt(src)} value: its group stores no second copy in "
                f"{_elt(dst)} ({_kb(tensor_bytes(node.op.results[0]))} not written)",
                group=f"@{gid}"))  # fmt: skip
        if not st.members[home]:
            del st.members[home]
            st.merged_into[home] = readers[0]


def _in_group(st: _State, gid: int) -> set[int]:
    """The ops group `gid` computes: its members and the ops it recomputes."""
    return set(st.members.get(gid, [])) | set(st.recompute.get(gid, []))


def _cast_readers(st: _State, node: Node, home: int) -> tuple[list[int], str | None]:
    """The groups other than `home` that read `node`, and why `home` must still
    store it (None when it need not): it is returned, read through a host view or
    a gather, or read in `home` itself."""
    readers: list[int] = []
    at_home = False
    for c in node.consumers:
        holders = [g for g in st.members if c.index in _in_group(st, g)]
        at_home |= home in holders
        readers += [g for g in holders if g != home and g not in readers]
    if node.external_uses:
        return readers, "kept as an output of its group: the function returns it"
    if node.view_consumers:
        return readers, "kept as an output of its group: a kernel reads it through a host view"
    if at_home and readers:
        return readers, "kept as an output of its group: read there too"
    return readers, None


def _cast_stays(st: _State, node: Node, home: int, readers: list[int]) -> str | None:
    """Why the cast `node` must stay an output of its group `home`, or None."""
    for gid in readers:
        group = [st.graph.nodes[i] for i in sorted(_in_group(st, gid))]
        users = [c for c in node.consumers if c in group]
        if any(c.kind == CONTRACTION for c in users):
            return ("kept as an output of its group: a contraction reads it as an operand, "
                    "tile by tile")  # fmt: skip
        if any(ATTENTION_TAG in n.op.attributes for n in group):
            return "kept as an output of its group: a FlashAttention kernel reads it"
        merged = sorted([*group, node], key=lambda n: n.index)
        if _gathers_within(merged) is not None:
            return "kept as an output of its group: its reader gathers from it"
        dims = shared_dims(st.graph, merged)
        if recompute_refusal(st.graph, merged, dims) is not None:
            return "kept as an output of its group: its reader reads it along two loops"
        if reduction_passes(st.graph, merged, st.target) > reduction_passes(st.graph, group, st.target):
            return ("kept as an output of its group: recomputing it would add a pass "
                    "over its reader's rows")  # fmt: skip
    src, dst = node.s.inputs[0], node.op.results[0]
    if tensor_bytes(src) > tensor_bytes(dst):
        producer = st.graph.producer_of(src)
        leaves = producer is not None and (producer.external_uses or producer.view_consumers or any(
            c is not node and st.group_of[c.index] != home for c in producer.consumers))
        if not leaves:
            return (f"kept as an output of its group: the {_elt(dst.type)} value is narrower "
                    f"than the {_elt(src.type)} one it casts, which no other kernel reads")  # fmt: skip
    return None


def _elt(t) -> str:
    """The element type of a tensor type, for logs (`f32`)."""
    return str(getattr(t, "element_type", t))


def _finish(st: _State) -> FusionPlan:
    groups = []
    renames: dict[str, str] = {}
    for k, gid in enumerate(sorted(st.members, key=lambda g: max(st.members[g]))):
        name = f"fused_kernel_{k}"
        renames[f"@{gid}"] = name
        nodes = st.members[gid]
        recomputed = sorted(set(st.recompute.get(gid, [])) - set(nodes))
        all_nodes = [st.graph.nodes[i] for i in sorted(nodes + recomputed)]
        root = max(nodes)
        passes = reduction_passes(st.graph, all_nodes, st.target)
        groups.append(FusionGroup(name, tuple(nodes), root, tuple(recomputed),
                                  group_cost(st.graph, all_nodes, passes)))  # fmt: skip
    decisions = [
        Decision(d.taken, d.kind, d.ops, d.reason,
                 renames[f"@{st.final(int(d.group[1:]))}"] if d.group else "")
        for d in st.decisions
    ]  # fmt: skip
    for g in groups:
        if len(g.nodes) == 1 and all(st.graph.nodes[i].kind == FILL for i in g.recomputed):
            label = st.graph.nodes[g.root].label
            decisions.append(Decision(True, "single op", (label,), "1 node", g.name))
    return FusionPlan(tuple(groups), tuple(decisions))
    return FusionPlan(tuple(groups), decisions)


def group_kind(nodes: Iterable[Node]) -> str:
    nodes = list(nodes)
    if any(ATTENTION_TAG in n.op.attributes for n in nodes):
        return "flash-attention"
    kinds = {n.kind for n in nodes} - {FILL}
    if CONTRACTION in kinds:
        return "epilogue"
    if REDUCE in kinds:
        return "reduction"
    return "pointwise"


def group_label(nodes: Sequence[Node]) -> str:
    labels = [n.label for n in nodes if not is_free_fill(n)]
    return " + ".join(labels) if len(labels) <= 3 else f"{labels[0]} ... {labels[-1]}"


def _kb(n: float) -> str:
    return f"{n / 1024:.1f} KB"
