"""
Horizontal fusion: independent kernels launched as one.

Vertical fusion (cost/fusion.py) joins producers and consumers. What it leaves
are kernels with no data between them: four LayerNorms of four tensors, the
Q, K and V projections of one input. Each still pays a launch, and each small
grid its own tail wave. `plan_horizontal` decides which of them share a launch:
one kernel whose grid is the members' grids side by side, each program running
the member its id falls in.

The rule, per candidate joining a bundle (kernels in program order, greedy):

- **independent**: no path between the candidate and the bundle, through any
  other kernel or bundle (checked on the contracted graph, so two bundles can
  never wait on each other);
- **one operand type for `tl.dot`**: a kernel has one `DOT_DTYPE`, so
  contractions on different types stay apart;
- **persistent kernels** (the Hopper lowering) join only kernels running the same
  tile program: the bundle's programs are split among the members, each program
  looping over one member's tiles, so it makes that member's TMA descriptors once
  (`persistent_programs`; BERT's Q, K and V projections of one input), and only while
  the tensors the members read fit the L2 together: the members run at once, and
  LLaMA-7B-sized projections (three 32 MB weights) evicted each other's tiles (H100:
  241 us stacked against 180 us as three launches; BERT's, 16 MB in all, 53 against
  64 us);
- **dynamic grids** (their program counts known at launch) stack with kernels
  running the same tile program whose grids are sized from the same run-time
  sizes (`dim_facts.size_origin`): a program finds its member as `pid // share`
  with `share` computed from those sizes in the kernel. As branches of different
  programs, each branch's bound is the run-time count of the programs before it
  (computed in the kernel from the size parameters, and by the host for the
  launch), for members without variants that are not persistent. A kernel with variants (`tile-and-fuse`'s
  `VARIANTS`) joins as its whole family: every variant runs the same tile
  program as the other members' variant serving the same sizes, and each level
  becomes a bundle (the transformer block's Q, K and V projections at a
  dynamic sequence length: three launches -> one, whichever variant runs);
- **one launch configuration**: equal `num_stages` (they size the pipelined
  loops' shared memory); branches of different programs run at the largest
  member's `num_warps`, which changes no result;
- **shared memory of all branches**: every member is a branch with buffers of
  its own, and Triton's allocator does not reliably overlay the branches'
  pipeline buffers (sm_90, triton 3.9: LLaMA's Q, K and V projections, 192 +
  144 + 144 KB, took 288 KB; BERT's, 3 x 192 KB, took 576 KB, both over the
  227 KB limit). So the contractions' buffers are added, plus the largest
  scratch of the other members (one op's, never live across a branch), and the
  sum must fit the budget;
- **worth it**: members running the same tile program (equal `body_key`) are
  always merged: the kernel is compiled once and its launch saved. Different
  programs become branches of one kernel (more code to compile, registers and
  shared memory at the largest member's), so they are merged only while the
  launch saved is at least `MIN_SAVING` of the bundle's predicted time, and at
  most `MAX_BRANCHES` programs share a kernel.

Every merge and every refusal between independent kernels is logged in the
fusion log's style (`Decision`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, TensorType

from tilefuse.analysis.cost.opcost import tensor_bytes
from tilefuse.analysis.cost.roofline import format_seconds, predicted_time
from tilefuse.analysis.cost.target import Target
from tilefuse.analysis.dataflow import host_sources
from tilefuse.analysis.dim_facts import size_origin
from tilefuse.analysis.dot import contraction_dtypes
from tilefuse.analysis.fusion_plan import Decision
from tilefuse.ir.tilefuse import (
    SERVES,
    VARIANT_OF,
    GroupOp,
    TileGridOp,
    grid_inputs,
    same_tile_program,
    variants_of,
)

MIN_SAVING = 0.05
"""A launch saved must be worth this share of the merged kernel's time."""

MAX_BRANCHES = 4
"""At most this many different tile programs in one kernel."""


@dataclass(frozen=True)
class KernelInfo:
    """What the planner knows of one tiled group."""

    name: str
    deps: frozenset[str]
    """Kernels whose results this one reads directly."""
    num_warps: int
    num_stages: int
    programs: int
    time: float
    """Predicted seconds, launch excluded."""
    body_key: int
    """Kernels with equal keys run the same tile program on other tensors."""
    mergeable: bool = True
    """False for kernels that only constrain the order (untiled groups)."""
    dot_dtype: str | None = None
    """Operand type of the kernel's tl.dot, if any: one kernel has one."""
    smem: int = 0
    """Shared memory of its tile program (the plan's working set: a contraction's
    pipeline buffers; an upper bound of a memory-bound program's scratch)."""
    smem_budget: int = 0
    """The budget its plan was made for (0: the target's)."""
    persistent: bool = False
    """Its programs loop over its tiles (`TilePlan.persistent`)."""
    reads: frozenset = frozenset()
    """(tensor, bytes) of each tensor it reads: members of a bundle that read one
    tensor share it in L2."""
    dynamic: bool = False
    """Its grid's program count is known at launch (`TileGridOp.sizes`)."""
    variants: bool = False
    """It stands for a family of variants (`tile-and-fuse`'s, by the sizes each serves)."""
    warp_specialized: bool = False
    """Its plan is a warp-specialised attention (`TilePlanAttr.consumers`): on sm_90 a Gluon
    kernel of its one grid is launched in its place."""


@dataclass(frozen=True)
class HorizontalPlan:
    bundles: tuple[tuple[str, ...], ...]
    """Kernel names per launch, in program order; singletons included."""
    decisions: tuple[Decision, ...]

    def log(self) -> str:
        return "\n".join(d.format() for d in self.decisions)


class _Bundles:
    """Bundles of kernels and the graph between bundles."""

    def __init__(self, kernels: Sequence[KernelInfo]):
        self.kernels = {k.name: k for k in kernels}
        self.of = {k.name: i for i, k in enumerate(kernels)}
        self.members: dict[int, list[str]] = {i: [k.name] for i, k in enumerate(kernels)}

    def succs(self, b: int) -> set[int]:
        out = set()
        for k in self.kernels.values():
            if self.of[k.name] != b and any(self.of[d] == b for d in k.deps if d in self.of):
                out.add(self.of[k.name])
        return out

    def reaches(self, src: int, dst: int) -> bool:
        seen, stack = {src}, [src]
        while stack:
            for s in self.succs(stack.pop()):
                if s == dst:
                    return True
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        return False

    def merge(self, b: int, b2: int) -> None:
        """Bundle `b2` joins bundle `b`."""
        for name in self.members[b2]:
            self.of[name] = b
        self.members[b] += self.members.pop(b2)


def plan_horizontal(kernels: Sequence[KernelInfo], target: Target) -> HorizontalPlan:
    """Which independent kernels share a launch, and why (see the module doc).

    Two passes, so the order of the program does not decide: first every kernel
    joins an earlier bundle running the same tile program; then bundles join
    earlier bundles as branches where that pays."""
    state = _Bundles(kernels)
    decisions: list[Decision] = []
    for same_program in (True, False):
        for b2 in sorted(state.members):
            if b2 not in state.members or not state.kernels[state.members[b2][0]].mergeable:
                continue
            joining = [state.kernels[m] for m in state.members[b2]]
            for b in [b for b in sorted(state.members) if b < b2]:
                bundle = [state.kernels[m] for m in state.members[b]]
                if not bundle[0].mergeable or state.reaches(b, b2) or state.reaches(b2, b):
                    continue  # dependent: not a candidate, nothing to explain
                same = {m.body_key for m in bundle} == {m.body_key for m in joining} and \
                    len({m.body_key for m in bundle}) == 1
                if same != same_program:
                    continue
                ok, reason = _accept(joining, bundle, target)
                members = (*state.members[b], *state.members[b2])
                decisions.append(Decision(ok, "horizontal", members, reason, state.members[b][0]))
                if ok:
                    state.merge(b, b2)
                    break
    bundles = tuple(tuple(state.members[b]) for b in sorted(state.members))
    return HorizontalPlan(bundles, tuple(decisions))


def _accept(joining: list[KernelInfo], bundle: list[KernelInfo], target: Target) -> tuple[bool, str]:
    everyone = [*bundle, *joining]
    keys = {m.body_key for m in everyone}
    saved = format_seconds(target.launch_overhead)
    if any(m.warp_specialized for m in everyone):
        return False, ("horizontal: a warp-specialised attention launches alone (its Gluon "
                       "kernel runs one grid's tile program)")  # fmt: skip
    if len(keys) > 1 and any(m.dynamic for m in everyone) and any(m.variants or m.persistent for m in everyone):
        return False, ("horizontal: a dynamic grid with variants, or a persistent one, shares "
                       "a launch only with kernels running its tile program on tensors of "
                       "its sizes (a branch per variant and member is not built)")  # fmt: skip
    if any(m.persistent for m in everyone):
        return _accept_persistent(everyone, target)
    dots = {m.dot_dtype for m in everyone} - {None}
    if len(dots) > 1:
        return False, f"horizontal: contractions on different operand types ({', '.join(sorted(dots))})"
    stages = sorted({m.num_stages for m in everyone})
    if len(stages) > 1:
        return False, (
            f"horizontal: pipeline depths differ ({joining[0].num_stages} stages vs "
            f"{bundle[0].num_stages})"
        )
    smem, budget = _bundle_smem(everyone, target)
    if len(keys) > 1 and smem > budget:  # (one tile program: one body, its own buffers)
        return False, (
            f"horizontal: the branches' shared memory ({smem / 1024:.0f} KB, each "
            f"contraction's buffers its own) exceeds the budget ({budget / 1024:.0f} KB)"
        )
    programs = sum(m.programs for m in everyone)
    if len(keys) == 1:
        count = "a run-time count of" if everyone[0].programs < 0 else str(programs)
        return True, (
            f"independent, same tile program: {len(everyone)} grids in one launch of "
            f"{count} programs, one compile, {saved} launch saved"
        )
    if len(keys) > MAX_BRANCHES:
        return False, f"horizontal: more than {MAX_BRANCHES} different tile programs in one kernel"
    total = sum(m.time for m in everyone)
    if target.launch_overhead < MIN_SAVING * total:
        return False, (
            f"horizontal: a {saved} launch is {target.launch_overhead / total:.1%} of "
            f"{format_seconds(total)}, under {MIN_SAVING:.0%}: not worth a branching kernel"
        )
    warps = max(m.num_warps for m in everyone)
    count = "a run-time count of" if any(m.dynamic for m in everyone) else str(programs)
    return True, (
        f"independent, {len(keys)} tile programs as branches of one launch of "
        f"{count} programs at {warps} warps, {saved} launch saved"
    )


def _accept_persistent(everyone: list[KernelInfo], target: Target) -> tuple[bool, str]:
    """A bundle with a persistent member: one tile program, operands within the L2."""
    if len({m.body_key for m in everyone}) > 1 or not all(m.persistent for m in everyone):
        return False, ("horizontal: a persistent kernel shares a launch only with kernels "
                       "running its tile program (its TMA operands are made once per "
                       "program, for one member)")  # fmt: skip
    read = sum(b for _, b in frozenset().union(*(m.reads for m in everyone)))
    if read > target.l2_bytes:
        return False, (
            f"horizontal: the members' operands together ({read / 2**20:.0f} MB) exceed "
            f"the L2 ({target.l2_bytes / 2**20:.0f} MB): run together, each member's "
            f"tiles would evict the others' operands; apart, each streams its own")
    tiles = "a run-time count of" if everyone[0].programs < 0 else str(everyone[0].programs)
    return True, (
        f"independent, same persistent tile program: {len(everyone)} grids of {tiles} "
        f"tiles in one launch, its programs split among them (each makes its member's "
        f"TMA descriptors once), one compile, {format_seconds(target.launch_overhead)} "
        f"launch saved"
    )

def branches_smem(branches: Iterable[tuple[int, bool]]) -> int:
    """Shared memory of one kernel whose branches use (bytes, has a contraction)
    each: the contractions' pipeline buffers added (Triton's allocator may give
    every branch its own), plus the largest scratch of the others (live for one
    op, so shared)."""
    branches = list(branches)
    return (sum(b for b, dot in branches if dot)
            + max((b for b, dot in branches if not dot), default=0))  # fmt: skip


def _bundle_smem(members: list[KernelInfo], target: Target) -> tuple[int, int]:
    """(shared memory of one kernel running `members` as branches, its budget)."""
    smem = branches_smem((m.smem, m.dot_dtype is not None) for m in members)
    budgets = [m.smem_budget for m in members if m.smem_budget]
    return smem, min(budgets, default=target.smem_per_block)


def kernel_infos(groups: list[GroupOp], target: Target) -> list[KernelInfo]:
    """What `plan_horizontal` needs of each tiled group of a function, in order: its
    launch shape, predicted time, the groups it reads, and which tile program it runs
    (groups running the same program on other tensors share one key). A group with
    variants stands for its family: its key is its variants' and its own programs,
    the sizes each serves, and the run-time sizes of its grids; the variants
    themselves are no kernels of their own here (`family`)."""
    keys: list[tuple[TileGridOp, ...]] = []  # one family of grids per distinct key
    out = []
    by_name = {g.sym_name.data: g for g in groups}
    for g in groups:
        if VARIANT_OF in g.attributes:
            continue  # (launched where the group it stands in for is: planned with it)
        deps = frozenset(
            owner.sym_name.data for v in g.inputs for root in host_sources(v)
            if isinstance(owner := root.owner, GroupOp)
        )
        levels = family(g, by_name)
        if any(len(m.grids) != 1 for m in levels) or g.cost is None or g.merged:
            # untiled (or already merged; or seeing tensors through `input_merges`,
            # which a bundle's shared strides cannot): a node, never a member
            out.append(KernelInfo(g.sym_name.data, deps, 0, 0, 0, 0.0, -1 - len(out),
                                  mergeable=False))  # fmt: skip
            continue
        grids = tuple(m.grids[0] for m in levels)
        key = next((i for i, k in enumerate(keys) if _same_family(k, grids)), None)
        if key is None:
            keys.append(grids)
            key = len(keys) - 1
        grid = grids[-1]
        out.append(KernelInfo(
            g.sym_name.data, deps, grid.num_warps.value.data, grid.num_stages.value.data,
            math.prod(grid.grid_shape), predicted_time(g.cost, target), key,
            dot_dtype=",".join(contraction_dtypes(grid)) or None,
            smem=plan.working_set.data if (plan := grid.plan) is not None else 0,
            smem_budget=plan.smem_budget.data if plan is not None else 0,
            persistent=plan is not None and plan.persistent.data > 0,
            reads=frozenset((v, tensor_bytes(v)) for v in g.inputs),
            dynamic=bool(grid.sizes), variants=len(levels) > 1,
            warp_specialized=plan is not None and plan.consumers.data > 0,
        ))  # fmt: skip
    return out


def family(g: GroupOp, by_name: Mapping[str, GroupOp]) -> list[GroupOp]:
    """`g`'s variants in the order of the sizes they serve, then `g`."""
    return [*variants_of(g, by_name), g]


def _same_family(a: tuple[TileGridOp, ...], b: tuple[TileGridOp, ...]) -> bool:
    """Each level of `b` runs `a`'s tile program for the same sizes, on tensors whose
    dynamic dims are those of `a`'s at run time (one `size_origin` each)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        pairs = same_tile_program(x, y)
        if pairs is None or _serves(x) != _serves(y):
            return False
        for v, w in [*pairs, *zip(x.outs, y.outs, strict=True)]:
            shape = v.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
            if any(n < 0 and size_origin(v, i) != size_origin(w, i) for i, n in enumerate(shape)):
                return False
        sizes = [(v, w) for v, w in zip(grid_inputs(x), grid_inputs(y), strict=True)
                 if not isinstance(v.type, TensorType)]  # fmt: skip
        if any(size_origin(v) != size_origin(w) for v, w in [*sizes, *zip(x.sizes, y.sizes, strict=True)]):
            return False
    return True


def _serves(grid: TileGridOp) -> tuple[int, ...]:
    group = grid.parent_op()
    serves = group.attributes.get(SERVES) if group is not None else None
    return tuple(serves.get_values()) if isinstance(serves, DenseArrayBase) else ()  # pyright: ignore


def persistent_programs(members: int, tiles: int | None, persistent: int, target: Target) -> int:
    """Programs of a persistent bundle of `members` grids of `tiles` tiles each, whose
    plan launches `persistent` programs for one grid: each member gets as many
    programs as it has tiles, at most its share of the slots one grid fills (its
    `persistent` when that is below its tiles, else the SMs), so the bundle fills
    the GPU as one grid does. A multiple of `members`: program `pid` runs member
    `pid // (programs / members)`. A dynamic grid (`tiles` None) gets the whole
    share; the kernel takes each member's programs as the least of its share and
    its run-time tiles, and the host launches that many per member."""
    slots = persistent if tiles is not None and persistent < tiles else max(persistent, target.sm_count)
    share = -(-slots // members)
    return members * (share if tiles is None else min(tiles, share))
