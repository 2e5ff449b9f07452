"""
`tile-and-fuse`: turn each `tilefuse.group` into a grid of tile programs.

Runs after `fusion-groups`. For every group:

1. Plan (`tiling.plan_tiles`): unify the loop dims of the group's ops
   (`dataflow.shared_dims`) and give each a block size and a mode: split across
   programs (`grid`), whole in the tile, or looped in chunks.
2. Build the tile program: a `tilefuse.tile_grid` whose body computes every op
   of the group on exactly the tile its consumers need, derived through the
   indexing maps. Group inputs are read with `tilefuse.load` at the tile's
   offsets; results are written with `tilefuse.store`. Each producer is computed
   once per program where it does not vary along a looped dim; where it does, it
   is recomputed per chunk inside the loop that needs it (the multi-pass
   fallback for rows longer than the budget). A reduction over a looped dim
   becomes an `scf.for` carrying the accumulator, its initial value (the `fill`)
   computed before the loop (llvm/llvm-project#58398 puts it inside; we must not).
   A sum, max or min over the looped dims keeps one partial per lane of the
   chunk (elementwise in the loop, starting from the combiner's identity) and
   combines the lanes with the initial value once after the loop, so no
   cross-thread reduction runs per chunk.
3. Mask edge tiles: a reduction over a dim whose tiles can be partial gets
   `select(index < extent, x, identity)` before its combiner, so the padding
   that loads read as zero never reaches a result. Contractions read their
   operands straight from zero-padded loads, which makes the products zero.
   A runtime check (`cf.assert`) on such a tile holds past the tensor's end
   (`select(index < extent, cond, true)`).

```mlir
%y = tilefuse.group "fused_kernel_0" ins(%x : tensor<70x333xf32>) ... {
^bb0(%xa: tensor<70x333xf32>):
  %e = tensor.empty() : tensor<70x333xf32>
  %r = tilefuse.tile_grid [18] outs(%e : tensor<70x333xf32>) warps 4 stages 1 {
  ^bb0(%pid: index, %out: tensor<70x333xf32>):
    %row = arith.muli %pid, %c4 : index
    %x_t = tilefuse.load %xa[%row, %c0] : tensor<70x333xf32> -> tensor<4x512xf32>
    ...  // linalg.generic ops on tensor<4x512xf32> / tensor<4xf32> tiles
    tilefuse.store %y_t into %out[%row, %c0] : tensor<4x512xf32> into tensor<70x333xf32>
  } -> (tensor<70x333xf32>)
  tilefuse.yield %r : tensor<70x333xf32>
}
```
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from xdsl.context import Context
from xdsl.dialects import arith, cf, scf, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

from tilefuse.analysis.causal import (
    STATIC,
    below_diagonal,
    exact_mask_decisions,
    key_bound,
)
from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.dataflow import (
    CONTRACTION,
    FILL,
    Graph,
    Node,
    SharedDims,
    build_graph,
    recompute_cone,
    recompute_refusal,
    shared_dims,
)
from tilefuse.analysis.dim_facts import group_facts, size_origin
from tilefuse.analysis.dot import allowing_tf32, grid_dot, tensor_core_dtype
from tilefuse.analysis.patterns import (
    OnlineSoftmax,
    find_online_softmax,
    is_neg_inf_guard,
)
from tilefuse.analysis.tile_plan import (
    GRID,
    WHOLE,
    TilePlan,
    TilingRefused,
    plan_tiles,
    sibling_contractions,
    tile_candidates,
)
from tilefuse.analysis.value_range import value_range
from tilefuse.ir.diagnostics import CompileError, op_location, warn
from tilefuse.ir.dynamic import PLANNING_SIZE_ATTR, planning_size, smallest_size
from tilefuse.ir.structured import (
    IDENTITY,
    SIZE_ARITH,
    arg_reduction,
    combiner_at,
    constant_of,
    dim_of,
    reduction_combiner,
    resolved_size,
    shape_of,
)
from tilefuse.ir.tilefuse import (
    EDGE_CLAMP,
    IN_BOUNDS_AXES,
    SAME_SIZES,
    SERVES,
    SOFTMAX_EXP,
    STATIC_SIZES,
    VARIANT_OF,
    VARIANTS,
    GroupOp,
    LoadOp,
    StoreOp,
    TileGridOp,
    YieldOp,
)
from tilefuse.passes.sibling_loops import fuse_sibling_loops


@dataclass(frozen=True)
class TileAndFusePass(ModulePass):
    """Tile every fusion group from the target's budgets and fuse its ops per tile."""

    name = "tile-and-fuse"

    target: str = "h200"
    smem_budget: int = 0
    """Override the target's shared memory per block (bytes); 0 keeps it."""
    allow_tf32: bool = False
    """Multiply genuinely-f32 `tl.dot`s on TF32 tensor cores (torch's `allow_tf32`)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = get_target(self.target)
        budget = self.smem_budget or None
        groups = [g for g in op.walk() if isinstance(g, GroupOp)]
        # (before any group is tiled: facts read the groups' bodies)
        smallest = {group: own_planning_size(group) for group in groups}
        for group in groups:
            if any(isinstance(o, TileGridOp) for o in group.entry.ops):
                continue
            try:
                for g in [*plan_variants(group, target, budget, smallest[group]), group]:
                    tile_group(g, target, budget)
                    for grid in g.grids if self.allow_tf32 else ():
                        grid.plan = allowing_tf32(grid.plan) if grid.plan is not None else None
            except TilingRefused as e:
                # The group stays as it was: correct, but not a kernel yet; the
                # reason stays with it for whoever needs a kernel (the emitter).
                warn(group, f"left untiled: {e.message}")
                group.untiled = StringAttr(e.message)


def own_planning_size(group: GroupOp) -> int:
    """Price a kernel with dynamic sizes at its own largest one (`dim_facts`) where
    that is not the function's largest declared range end: the rows of B sequences
    of up to T tokens at B x T (`PLANNING_SIZE_ATTR`). Returns the smallest size its
    dynamic dims take (the function's smallest declared one if unknown)."""
    facts = group_facts(group)
    if facts is None:
        return smallest_size(group)
    if PLANNING_SIZE_ATTR not in group.attributes and facts.hi != planning_size(group):
        group.attributes[PLANNING_SIZE_ATTR] = IntAttr(max(facts.hi, 1))
    return max(facts.lo, 1)


VARIANT_SIZES = (128, 1024)
"""Besides the range end, where the sizes a kernel with dynamic sizes serves are cut
into ranges, each planned at its `_planning_point`; where two neighbours' plans
differ, a variant serves the lower one. At most three variants a kernel (issue 18): a
GEMM's M of 8 is not tiled as one of 8192. Measured (H200, linear bf16 K 4096 N 11008,
`tools/experiments/dynamic_gaps.py`, docs/PERF.md): the plan made at M = 128 is within
2% of each static plan for every M <= 128 (memory-bound: the weights' reads), the one
at 1024 within 2% at 1024 and faster than the static one at 256; at 512 it is 13%
slower (the static 128 x 128 tiles fill more waves)."""


def _plan_key(plan: TilePlan) -> tuple:
    return (tuple((d.block, d.mode) for d in plan.dims), plan.num_warps, plan.num_stages,
            plan.group_m)  # fmt: skip


def middle(first: int, top: int) -> int:
    """What the sizes first..top are planned at: the power of two among them nearest
    their geometric middle (odd sizes tile oddly: 362 rows in two 256-row tiles), or
    the top if none. A range planned at its top leaves most SMs idle at its bottom: the
    transformer block's FC2 (1025..4096 tokens) planned at 4096 took 128 x 256 tiles,
    64 of them at 2048 tokens on 132 SMs (0.87x the static build, H100)."""
    powers = [2**k for k in range(max(first, 1).bit_length() - 1, top.bit_length()) if first <= 2**k <= top]
    if not powers:
        return top
    centre = math.log2(max(first, 1) * top) / 2
    return min(powers, key=lambda p: (abs(math.log2(p) - centre), -p))


def _plan_at(group: GroupOp, size: int, target, budget: int | None) -> TilePlan:
    """`group`'s plan priced at `size`."""
    own = group.attributes.get(PLANNING_SIZE_ATTR)
    group.attributes[PLANNING_SIZE_ATTR] = IntAttr(size)
    try:
        return plan_group(group, target, budget)[2]
    finally:
        del group.attributes[PLANNING_SIZE_ATTR]
        if own is not None:
            group.attributes[PLANNING_SIZE_ATTR] = own


def _planning_point(plan_at: Callable[[int], TilePlan], first: int, top: int) -> tuple[int, tuple]:
    """The size the sizes first..top are planned at and that plan's key (`plan_at`: the
    group's plan priced at a size): for a contraction tiled along its dynamic dims (a
    GEMM's M) past the first `VARIANT_SIZES` (up to 128 rows the plan at 128 is within
    2% of each static one: the weights' reads bound it), their `middle`, where the tile
    count decides how many SMs work; else (and where the plan at the middle would hold a
    dynamic dim whole: its block must take the top) the top. A row kernel's programs
    follow its rows at any size; an attention's key loop runs to the keys there are."""
    plan = plan_at(top)
    if (top > VARIANT_SIZES[0] and plan.contraction and all(d.mode == GRID for d in plan.dims if d.dynamic)
            and (size := middle(first, top)) < top):  # fmt: skip
        mid = plan_at(size)
        if not any(d.dynamic and d.mode == WHOLE for d in mid.dims):
            return size, _plan_key(mid)
    return top, _plan_key(plan)


def plan_variants(group: GroupOp, target, budget: int | None, lo: int | None = None) -> list[GroupOp]:
    """For a group with dynamic sizes: the ranges its sizes `lo`..its planning size
    fall into at `VARIANT_SIZES`, each planned at its `_planning_point`, neighbours with
    one plan merged (planned where that plan was made); a copy of the group before it
    for each range but the last (named `<name>_v<k>`), the group itself planned for the
    last. Each carries the sizes it serves (`SERVES`) and the size it is planned at
    (`PLANNING_SIZE_ATTR`)."""
    plan = plan_group(group, target, budget)[2]
    if not any(d.dynamic for d in plan.dims) or group.tile_candidate is not None:
        return []
    hi = planning_size(group)
    lo = smallest_size(group) if lo is None else lo
    plans = {hi: plan}  # (each size's plan, made once)

    def plan_at(size: int) -> TilePlan:
        if size not in plans:
            plans[size] = _plan_at(group, size, target, budget)
        return plans[size]

    ranges: list[tuple[int, int, int]] = []  # (first, top, planned at) of each range, ascending
    last_key = None
    for top in [*sorted(n for n in VARIANT_SIZES if lo <= n < hi), hi]:
        first = ranges[-1][1] + 1 if ranges else lo
        size, key = _planning_point(plan_at, first, top)
        if ranges and key == last_key:  # (one plan: the merged range keeps the point it was made at)
            ranges[-1] = (ranges[-1][0], top, ranges[-1][2])
        else:
            ranges.append((first, top, size))
        last_key = key
    name = group.sym_name.data
    variants = []
    for k, (first, top, size) in enumerate(ranges[:-1]):
        v = group.clone()
        v.sym_name = StringAttr(f"{name}_v{k}")
        v.attributes[PLANNING_SIZE_ATTR] = IntAttr(size)
        v.attributes[VARIANT_OF] = StringAttr(name)
        v.attributes[SERVES] = DenseArrayBase.from_list(i64, [first, top])
        Rewriter.insert_op(v, InsertPoint.before(group))
        variants.append(v)
    first, _, size = ranges[-1]
    group.attributes[PLANNING_SIZE_ATTR] = IntAttr(size)
    if variants:
        group.attributes[VARIANTS] = ArrayAttr([v.sym_name for v in variants])
        group.attributes[SERVES] = DenseArrayBase.from_list(i64, [first, hi])
    return variants


def plan_group(group: GroupOp, target, budget: int | None) -> tuple[Graph, SharedDims, TilePlan]:
    """The group's graph, shared dims and tile plan (the model's, or the autotuner's
    pick among its candidates), checked as tile programs need."""
    graph, dims = _copy_split_reads(group)
    if not graph.nodes:
        raise CompileError.at(group, "has no linalg op to tile")
    _check_dims(graph, dims)
    _check_gathers(graph)
    if (choice := group.tile_candidate) is None:
        plan = plan_tiles(graph, dims, target, budget)
    else:
        # the autotuner's pick among the model's candidates (tiling.tile_candidates)
        candidates = tile_candidates(graph, dims, target, budget)
        index = choice.value.data
        if not 0 <= index < len(candidates):
            raise CompileError.at(group, f"has tile_candidate {index}, but only "
                                  f"{len(candidates)} candidates")  # fmt: skip
        plan = candidates[index]
    _check_loops(graph, dims, plan, group)
    return graph, dims, plan


def tile_group(group: GroupOp, target, budget: int | None) -> TilePlan:
    """Replace `group`'s body by its tile program; returns the plan used."""
    graph, dims, plan = plan_group(group, target, budget)
    new_block = TileProgramBuilder(group, graph, dims, plan).build()
    old = group.body.block
    group.body.insert_block_before(new_block, old)
    for a, b in zip(old.args, new_block.args, strict=True):
        a.replace_all_uses_with(b)
    group.body.detach_block(old)
    old.erase(safe_erase=False)
    return plan


def _check_gathers(graph: Graph) -> None:
    """A gather (`tensor.extract` in a payload) reads memory: the group must not
    compute the tensor it gathers from (`fusion-groups` never makes such a group)."""
    for n in graph.nodes:
        if n.gather_producers:
            raise TilingRefused(
                f"{n.label} reads a tensor the same group computes "
                f"({n.gather_producers[0].label}) by tensor.extract: a gather reads memory",
                op_location(n.op))  # fmt: skip


MAX_COPIES = 64
"""Copies of producers made for split reads in one group, at most."""


def _copy_split_reads(group: GroupOp) -> tuple[Graph, SharedDims]:
    """
    Step 0: give every split read (`SharedDims.split_reads`: a producer of the
    group read along two different loops, as a causal mask's `i - j` of one
    `arange`) its own copy of the producer and of its producers in the group
    (`recompute_cone`), so each copy is tiled along the loops of its one read.
    """
    for _ in range(MAX_COPIES + 1):
        graph = build_graph(group.entry)
        dims = shared_dims(graph, graph.nodes)
        if not dims.split_reads:
            return graph, dims
        if (why := recompute_refusal(graph, graph.nodes, dims)) is not None:
            raise TilingRefused(f"cannot tile: {why}", op_location(group))
        ni, i = dims.split_reads[0]
        reader = graph.nodes[ni]
        cone = recompute_cone(graph, graph.nodes, reader, i)
        copies: dict[SSAValue, SSAValue] = {}
        for node in sorted(cone, key=lambda n: n.index):
            copy = node.op.clone(value_mapper=dict(copies))
            group.entry.insert_op_before(copy, reader.op)
            copies.update(zip(node.op.results, copy.results, strict=True))
        reader.op.operands[i] = copies[reader.op.operands[i]]
    raise TilingRefused(f"cannot tile: more than {MAX_COPIES} producers would be copied for "
                        "reads along different loops", op_location(group))  # fmt: skip


def _check_loops(graph: Graph, dims: SharedDims, plan: TilePlan, group: GroupOp) -> None:
    """Several looped dims share one flat loop: every reduction over any of them
    must reduce all of them (a sum over rows feeding a max over columns would need
    nested loops, which the builder does not make)."""
    looped = {t.dim for t in plan.loop_dims}
    if len(looped) < 2 or plan.contraction:
        return
    for n in graph.nodes:
        reduced = {dims.of[(n.index, d)] for d in n.s.reduction_dims}
        if reduced & looped and not looped <= reduced:
            raise TilingRefused(
                f"cannot tile: {n.label} reduces some but not all of the {len(looped)} looped "
                "dims (rows too long for the budget along two axes)", op_location(group))  # fmt: skip


def _check_dims(graph: Graph, dims: SharedDims) -> None:
    """No two loops of one op are one dim (`shared_dims` keeps them apart; a
    plan must not rely on that silently)."""
    for n in graph.nodes:
        ids = [dims.of[(n.index, d)] for d in range(n.s.num_loops)]
        if len(set(ids)) != len(ids):
            raise TilingRefused(
                "cannot tile: two loops of this op read the same tensor axis",
                op_location(n.op),
            )


@dataclass
class _Scope:
    """Where ops go, and the offsets of looped dims in effect there."""

    block: Block
    loop_offsets: dict[int, SSAValue]
    memo: dict[SSAValue, SSAValue] = field(default_factory=dict)


def _exp_of_difference(block: Block) -> SSAValue:
    sub = arith.SubfOp(block.args[0], block.args[1])
    exp = mathd.ExpOp(sub.result)
    block.add_ops([sub, exp])
    return exp.result


def _mark_softmax_exps(body: Block, m_exp: SSAValue) -> None:
    """Marks `SOFTMAX_EXP` the exponentials of an online loop's body that subtract its
    running maximum `m_exp` (guarded or not): `exp(u - m)` and the correction `exp(m_old -
    m)`. The loop stores nothing: their values reach memory only through the row's sum
    and the reductions linear in it (`find_online_softmax`)."""

    def is_max(v: SSAValue) -> bool:
        if isinstance(v.owner, arith.SelectOp) and is_neg_inf_guard(v, v.owner.rhs):
            v = v.owner.rhs
        if not isinstance(v, BlockArgument):
            return False
        g = v.owner.parent_op()
        return isinstance(g, linalg.GenericOp) and v.index < len(g.inputs) and g.inputs[v.index] is m_exp

    if any(isinstance(op, StoreOp) for op in body.walk()):
        return
    for op in body.walk():
        if isinstance(op, mathd.ExpOp) and isinstance(sub := op.operand.owner, arith.SubfOp) and is_max(sub.rhs):
            op.attributes[SOFTMAX_EXP] = UnitAttr()


def _zero_if_neg_inf(block: Block) -> SSAValue:
    x = block.args[0]
    neg_inf = arith.ConstantOp(FloatAttr(float("-inf"), x.type))
    zero = arith.ConstantOp(FloatAttr(0.0, x.type))
    is_neg_inf = arith.CmpfOp(x, neg_inf.result, "oeq")
    pick = arith.SelectOp(is_neg_inf.result, zero.result, x)
    block.add_ops([neg_inf, zero, is_neg_inf, pick])
    return pick.result


def _product(block: Block) -> SSAValue:
    mul = arith.MulfOp(block.args[0], block.args[1])
    block.add_op(mul)
    return mul.result


def lane_combiner(node: Node) -> type | None:
    """The combiner of a reduction that keeps per-lane partials: sums, maxima and
    minima. Products reduce each chunk whole (`_prod` in the printed kernel) and
    contractions are `tl.dot`s."""
    if node.kind == CONTRACTION:
        return None
    combiner = reduction_combiner(node.s)
    return None if combiner is arith.MulfOp else combiner


class TileProgramBuilder:
    """Builds the tile program of one group (see the module docstring)."""

    def __init__(self, group: GroupOp, graph: Graph, dims: SharedDims, plan: TilePlan):
        self.group, self.graph, self.dims, self.plan = group, graph, dims, plan
        self.tiles = {t.dim: t for t in plan.dims}
        # Looped dims, outermost first; only a contraction has several (its K dims).
        self.loops = sorted(plan.loop_dims, key=lambda t: t.block)
        self.loop_set = {t.dim for t in self.loops}
        self.done: set[Node] = set()
        self.online = self._online_patterns()
        self.zero_padding = self._zero_padding()
        self.outer_offsets: dict[int, SSAValue] = {}
        self.scalars: dict[SSAValue, SSAValue] = {}
        self.decided: dict[tuple[int, SSAValue], bool | float] = {}
        """Conditions known in the loop being built (`_below_diagonal`)."""
        self.siblings = set(sibling_contractions(graph, dims)) if plan.contraction else set()
        """Contractions run in one K loop (the plan counted their tiles together)."""
        self.sibling_loops: list[scf.ForOp] = []
        """Their loops as built, merged once the tile program is complete."""
        self.whole_chunks: set[int] = set()
        """Dynamic dims whose chunks lie inside the tensor in the loop being built
        (`_emit_online`'s loop before the last chunk): no masks along them."""

    def _zero_padding(self) -> dict[Node, set[int]]:
        """Per node, the shared dims past whose end its outputs must be 0: those a
        contraction (or the online reductions) sums its values over. Loads pad
        with 0, but a value computed from padding need not be finite (exp(0 - max)
        is inf for a max below -88.7), and inf * 0 is NaN."""
        zero: dict[Node, set[int]] = {}
        for sm in self.online:
            zero.setdefault(sm.exp_node, set()).update(self.loop_set)
        members = set(self.graph.nodes)
        for c in self.graph.nodes:
            if c.kind != CONTRACTION:
                continue
            reduced = {self.dims.of[(c.index, d)] for d in c.s.reduction_dims}
            for v in c.s.inputs:
                p = self.graph.producer_of(v)
                if p is not None and p in members and p.kind != FILL:
                    zero.setdefault(p, set()).update(reduced)
        return zero

    # -- structure ----------------------------------------------------------

    def build(self) -> Block:
        old = self.group.entry
        block = Block(arg_types=[a.type for a in old.args])
        self.args = dict(zip(old.args, block.args, strict=True))
        yield_op = old.last_op
        assert isinstance(yield_op, YieldOp)
        outputs = list(yield_op.values)
        self.extents = self._extent_values(block)
        empties = [self._full_empty(v) for v in outputs]
        block.add_ops(empties)
        grid_body = Block(
            arg_types=[IndexType()] * len(self.plan.grid) + [v.type for v in outputs]
        )
        sizes = [self.extents[t.dim] for t in self.plan.dims if t.dynamic]
        grid = TileGridOp(self.plan.grid, [e.tensor for e in empties], Region(grid_body),
                          self.plan.num_warps, self.plan.num_stages, sizes=sizes)  # fmt: skip
        grid.location = self.group.location
        block.add_op(grid)
        self.entry, self.grid_op = block, grid
        self.run_time_sizes: dict[tuple[SSAValue, int], SSAValue] = {}
        block.add_op(YieldOp(list(grid.results)))
        self._fill_grid(grid_body, outputs)
        fuse_sibling_loops(grid_body, self.sibling_loops)
        # whether the tiled contractions are tl.dots depends on their tile shapes
        grid.plan = self.plan.attr(grid_dot(grid))
        return block

    def _extent_values(self, block: Block) -> dict[int, SSAValue]:
        """Per dynamic dim, its run-time extent: `tensor.dim` of a group input read
        along it, in the group's entry `block` (the kernel takes it as a size
        argument; `backend/triton/signature.py`)."""
        extents: dict[int, SSAValue] = {}
        inputs = list(self.group.entry.args)
        same = []
        fixed = []
        for t in self.plan.dims:
            if not t.dynamic:  # a dynamic axis read along a static dim must have its size
                fixed += [DenseArrayBase.from_list(i64, [inputs.index(a), x, t.extent])
                          for a, x in self._size_sources(t.dim)]  # fmt: skip
                continue
            sources = self._size_sources(t.dim) or self._made_sources(t.dim)
            if not sources and (computed := self._computed_extent(t.dim, block)) is not None:
                extents[t.dim] = computed
                continue
            if not sources:
                raise TilingRefused("cannot tile: no input of the group is read along one of "
                                    "its dynamic dims, so no kernel argument gives its size",
                                    op_location(self.group))  # fmt: skip
            arg, axis = sources[0]
            dim = tensor.DimOp(self.args[arg], self._index(_Scope(block, {}), axis))
            block.add_op(dim)
            extents[t.dim] = dim.result
            if len(sources) > 1:
                same.append(ArrayAttr([DenseArrayBase.from_list(i64, [inputs.index(a), x])
                                       for a, x in sources]))  # fmt: skip
        if same:
            self.group.attributes[SAME_SIZES] = ArrayAttr(same)
        if fixed:
            self.group.attributes[STATIC_SIZES] = ArrayAttr(fixed)
        return extents

    def _size_sources(self, dim: int) -> list[tuple[SSAValue, int]]:
        """The group inputs and their axes that dynamic shared `dim` reads: one size
        at run time, which the host checks (`SAME_SIZES`)."""
        found: list[tuple[SSAValue, int]] = []
        for n in self.graph.nodes:
            for i, v in enumerate(n.s.operands):
                if v not in self.args or not n.s.maps[i].results:
                    continue
                for axis, loop in enumerate(n.s.operand_dims(i)):
                    if (self.dims.of[(n.index, loop)] == dim and shape_of(v)[axis] < 0
                            and (v, axis) not in found):  # fmt: skip
                        found.append((v, axis))
        return found

    def _output_sizes(self, dim: int) -> Iterator[SSAValue | tuple[SSAValue, int]]:
        """What each output's init along dynamic shared `dim` was sized from
        (`resolved_size`: a tensor's axis, or a size value)."""
        for n in self.graph.nodes:
            for i, v in enumerate(n.s.outputs, start=len(n.s.inputs)):
                for axis, loop in enumerate(n.s.operand_dims(i)):
                    if self.dims.of[(n.index, loop)] == dim and shape_of(v)[axis] < 0:
                        yield resolved_size(v, axis)

    def _made_sources(self, dim: int) -> list[tuple[SSAValue, int]]:
        """For a dynamic `dim` no input is read along (a broadcast into rows of a run-time
        count): the group input and axis an output's init was sized from
        (`tensor.empty(%n)`, `%n = tensor.dim %x`), if any."""
        found = next((at for at in self._output_sizes(dim) if isinstance(at, tuple) and at[0] in self.args), None)
        return [found] if found is not None else []

    def _computed_extent(self, dim: int, block: Block) -> SSAValue | None:
        """For a dynamic `dim` sized by arithmetic on the inputs' sizes and nothing
        reads along (a broadcast into a strided convolution's `(H + 1) // 2` output
        rows): that arithmetic, cloned into the entry `block` (each `tensor.dim` the
        kernel's size parameter); None if an output's size is not such."""
        for at in self._output_sizes(dim):
            if not isinstance(at, tuple) and (made := self._clone_size(at, block)) is not None:
                return made
        return None

    def _clone_size(self, v: SSAValue, block: Block) -> SSAValue | None:
        """Index value `v` (constants, `tensor.dim` of group inputs, index arithmetic)
        rebuilt in `block`; None if it reads anything else."""
        op = v.owner
        if isinstance(op, arith.ConstantOp):
            clone = op.clone()
        elif isinstance(op, tensor.DimOp) and op.source in self.args and isinstance(op.index.owner, arith.ConstantOp):
            clone = tensor.DimOp(self.args[op.source], self._index(_Scope(block, {}), op.index.owner.value.value.data))  # pyright: ignore
        elif type(op) in SIZE_ARITH:
            operands = [self._clone_size(o, block) for o in op.operands]
            if any(o is None for o in operands):
                return None
            clone = type(op)(*operands)  # pyright: ignore[reportCallIssue]
        else:
            return None
        block.add_op(clone)
        return clone.results[0]

    def _full_empty(self, value: SSAValue) -> tensor.EmptyOp:
        """The destination of a group output, its dynamic sizes the extents'."""
        t = value.type
        assert isinstance(t, TensorType)
        if all(n >= 0 for n in t.get_shape()):
            return tensor.EmptyOp([], t)
        dims = self.value_dims(value)
        sizes = [self.extents[d] for d, n in zip(dims, t.get_shape(), strict=True) if n < 0]
        return tensor.EmptyOp(sizes, t)

    def _extent(self, dim: int, scope: _Scope) -> SSAValue:
        """Shared `dim`'s trip count as an index value (a constant when static)."""
        if dim in self.extents:
            return self.extents[dim]
        return self._index(scope, self.tiles[dim].extent)

    def _fill_grid(self, body: Block, outputs: list[SSAValue]) -> None:
        pids = iter(body.args)
        outer = _Scope(body, {})
        for t in self.plan.dims:
            if t.mode == GRID:
                self.outer_offsets[t.dim] = self._mul(outer, next(pids), t.block)
            else:
                self.outer_offsets[t.dim] = self._index(outer, 0)
        dests = body.args[len(self.plan.grid) :]
        online = {sm.max_node: sm for sm in self.online}
        for node in self.graph.nodes:
            if node in self.done:
                continue
            if node in online:
                self._emit_online(online[node], outer)
            elif self._reduces_loop_dim(node):
                self._emit_looped_reduction(node, outer)
            elif not self._touches_loop_dim(node):
                self._emit_node(node, outer)
        for value, dest in zip(outputs, dests, strict=True):
            self._store(value, dest, outer)

    # -- values -------------------------------------------------------------

    def value_dims(self, value: SSAValue) -> tuple[int, ...]:
        """Shared dims of a tensor of the group, one per axis."""
        p = self.graph.producer_of(value)
        if p is not None:
            i = list(p.op.results).index(value)
            return tuple(self.dims.of[(p.index, d)] for d in p.s.operand_dims(len(p.s.inputs) + i))
        for n in self.graph.nodes:
            for i, v in enumerate(n.s.operands):
                if v is value and n.s.maps[i].results:
                    return tuple(self.dims.of[(n.index, d)] for d in n.s.operand_dims(i))
                if v is value and isinstance(v.type, TensorType) and not v.type.get_shape():
                    return ()  # a 0-d tensor (say, a dot's accumulator argument)
        raise CompileError.at(self.group, "has an output that no op of the group computes")

    def _block_of(self, dim: int, scope: _Scope) -> int:
        return self.tiles[dim].block

    def _offset(self, dim: int, scope: _Scope) -> SSAValue:
        return scope.loop_offsets.get(dim, self.outer_offsets[dim])

    def tile_type(self, value: SSAValue, scope: _Scope) -> TensorType:
        t = value.type
        assert isinstance(t, TensorType)
        shape = [self._block_of(d, scope) for d in self.value_dims(value)]
        return TensorType(t.get_element_type(), shape)

    def materialize(
        self, value: SSAValue, scope: _Scope, outer: _Scope, dims: tuple[int, ...] | None = None
    ) -> SSAValue:
        """
        The tile of `value` in `scope`, computing or loading it if needed.

        A group input is loaded along the shared dims `dims` of the operand that
        reads it: one op may read a tensor twice along different dims (a @ a^T).
        """
        if not isinstance(value.type, TensorType):
            return self._scalar(value, scope)
        if value in self.args:
            dims = dims if dims is not None else self.value_dims(value)
            key = (value, dims)
            if key in scope.memo:
                return scope.memo[key]
            home = scope if self.loop_set & set(dims) else outer
            if key not in home.memo:
                offsets = [self._offset(d, home) for d in dims]
                shape = [self._block_of(d, home) for d in dims]
                tile = TensorType(value.type.get_element_type(), shape)
                load = self._mark_in_bounds(LoadOp(self.args[value], offsets, tile), dims)
                home.block.add_op(load)
                home.memo[key] = load.result
            return home.memo[key]
        if value in scope.memo:
            return scope.memo[value]
        home = scope if self._varies_in_loop(value) else outer
        if value in home.memo:
            return home.memo[value]
        producer = self.graph.producer_of(value)
        if producer is None:
            raise CompileError.at(self.group, "reads a tensor it cannot tile")
        self._emit_node(producer, home, outer)
        return home.memo[value]

    def inputs_of(self, node: Node, scope: _Scope, outer: _Scope) -> list[SSAValue]:
        """Tiles of `node`'s inputs, each along the dims its operand reads."""
        return [
            self.materialize(v, scope, outer, self._operand_dims(node, i))
            for i, v in enumerate(node.s.inputs)
        ]

    def _operand_dims(self, node: Node, i: int) -> tuple[int, ...]:
        return tuple(self.dims.of[(node.index, d)] for d in node.s.operand_dims(i))

    def _varies_in_loop(self, value: SSAValue) -> bool:
        return bool(self.loop_set & set(self.value_dims(value)))

    def _touches_loop_dim(self, node: Node) -> bool:
        return any(self.dims.of[(node.index, d)] in self.loop_set for d in range(node.s.num_loops))

    def _reduces_loop_dim(self, node: Node) -> bool:
        return any(self.dims.of[(node.index, d)] in self.loop_set for d in node.s.reduction_dims)

    # -- ops ----------------------------------------------------------------

    def _emit_node(self, node: Node, scope: _Scope, outer: _Scope | None = None) -> None:
        outer = outer or scope
        s = node.s
        inputs = self.inputs_of(node, scope, outer)
        outs = []
        for v, acc in zip(s.outputs, s.payload.args[len(s.inputs) :], strict=True):
            j = len(s.inputs) + len(outs)
            dims = self._operand_dims(node, j)
            outs.append(self.materialize(v, scope, outer, dims) if acc.uses else self._empty(v, dims, scope))
        generic = self._tiled_generic(node, inputs, outs, scope)
        scope.block.add_op(generic)
        for old, new in zip(node.op.results, generic.results, strict=True):
            scope.memo[old] = new

    def _online_patterns(self) -> list[OnlineSoftmax]:
        """Online-softmax patterns whose reductions all run over the one looped dim."""
        if len(self.loops) != 1:
            return []
        (loop,) = self.loops
        found = []
        for sm in find_online_softmax(self.graph):
            reduced = {
                self.dims.of[(n.index, d)] for n in (sm.max_node, *sm.linear) for d in n.s.reduction_dims
            }
            if loop.dim in reduced:
                found.append(sm)
        return found

    def _emit_online(self, sm: OnlineSoftmax, outer: _Scope) -> None:
        """
        One loop over the looped dim for the max and every reduction linear in
        exp(u - max): running max, accumulators rescaled by exp(m_old - m_new).
        """
        a, linear = sm.max_node, [r for r in sm.linear if r not in self.done]
        carried = [self.materialize(a.s.outputs[0], outer, outer)]
        carried += [self.materialize(r.s.outputs[0], outer, outer) for r in linear]
        lb, ub = self._index(outer, 0), self._key_end(sm, outer)
        split = self._below_diagonal(sm, outer, ub)
        (t,) = self.loops
        if split is not None:
            end, self.decided, inside_keys = split
            if inside_keys:  # (below the diagonal of rows there are: keys there are)
                self.whole_chunks = {t.dim}
            elif t.partial and t.dynamic:  # below the diagonal and inside the keys there are: no mask at all
                inside = arith.MinSIOp(end, self._whole_chunks_end(ub, outer))
                outer.block.add_op(inside)
                end, self.whole_chunks = inside.result, {t.dim}
            carried = self._online_loop(a, linear, lb, end, carried, outer)
            self.decided, self.whole_chunks, lb = {}, set(), end
        elif t.partial and (t.dynamic or self._splits_static_keys(t)):
            # The whole chunks of the key dim first, without masks (the keys there
            # are: a mask per element of every chunk costs a third of a dynamic
            # attention kernel), then the last, partial one masked (ViT's 197 keys:
            # three chunks of 64 and one of 5).
            end = self._whole_chunks_end(ub, outer)
            self.whole_chunks = {t.dim}
            carried = self._online_loop(a, linear, lb, end, carried, outer)
            self.whole_chunks, lb = set(), end
        results = self._online_loop(a, linear, lb, ub, carried, outer)
        for node, res in zip([a, *linear], results, strict=True):
            outer.memo[node.op.results[0]] = res
            self.done.add(node)

    def _splits_static_keys(self, t) -> bool:
        """Whether a static key loop the block does not divide is split into its whole
        chunks and a masked last chunk: where its products are 16-bit tensor-core dots
        and it has two whole chunks or more. (The loop body printed twice spills an f32
        FMA dot's registers on sm_90, and one whole chunk is not pipelined: ViT at 197
        keys f32 and head dim 128, `tests/test_edge_masks_adversarial.py`.)"""
        dots = [n.s for n in self.graph.nodes if n.kind == CONTRACTION]
        return bool(dots) and all(tensor_core_dtype(s) for s in dots) and t.extent // t.block >= 2

    def _whole_chunks_end(self, ub: SSAValue, outer: _Scope) -> SSAValue:
        """The end of the whole chunks of the looped dim before `ub`: `(ub // B) * B`."""
        (t,) = self.loops
        chunks = arith.DivSIOp(ub, self._index(outer, t.block))
        end = arith.MuliOp(chunks.result, self._index(outer, t.block))
        outer.block.add_ops([chunks, end])
        return end.result

    def _online_loop(self, a: Node, linear: list[Node], lb: SSAValue, ub: SSAValue,
                     carried: list[SSAValue], outer: _Scope) -> list[SSAValue]:  # fmt: skip
        """The online loop over key chunks `[lb, ub)`: the running max and the
        rescaled accumulators, carried in and returned."""
        (t,) = self.loops
        step = self._index(outer, t.block)
        body = Block(arg_types=[IndexType(), *[v.type for v in carried]])
        inner = _Scope(body, {t.dim: body.args[0]})
        m_old, accs = body.args[1], list(body.args[2:])
        inputs = self.inputs_of(a, inner, outer)
        m_gen = self._tiled_generic(a, inputs, [m_old], inner)
        body.add_op(m_gen)
        m_new = m_gen.results[0]
        # While every element so far is -inf (a masked first chunk), the max is
        # -inf and exp(-inf - -inf) would be NaN: the exponentials use 0 in its
        # place (their terms and the rescale are then 0), the running max stays.
        m_exp = self._pointwise(inner, [m_new], m_new.type, _zero_if_neg_inf)
        inner.memo[a.op.results[0]] = m_exp
        corr = self._pointwise(inner, [m_old, m_exp], m_new.type, _exp_of_difference)
        results = [m_new]
        for r, acc in zip(linear, accs, strict=True):
            scaled = self._rescale(inner, acc, corr, r, a)
            ins = self.inputs_of(r, inner, outer)
            gen = self._tiled_generic(r, ins, [scaled], inner)
            body.add_op(gen)
            results.append(gen.results[0])
        body.add_op(scf.YieldOp(*results))
        _mark_softmax_exps(body, m_exp)
        loop = scf.ForOp(lb, ub, step, carried, Region(body))
        outer.block.add_op(loop)
        return list(loop.results)

    def _below_diagonal(
        self, sm: OnlineSoftmax, outer: _Scope, ub: SSAValue
    ) -> tuple[SSAValue, dict[tuple[int, SSAValue], bool | float], bool] | None:
        """Where a causal mask keeps whole key chunks: the end of the chunks below
        its diagonal (`j - q <= c` in every lane), the mask's conditions decided
        there (`causal.below_diagonal`; a mask read from memory and exact below its
        diagonal, `causal.exact_mask_decisions`: its elements there), and whether
        those chunks are known to lie inside the keys there are, for a loop without
        the mask before the masked one; None when nothing is decided (a mask read
        from memory with no such fact).

        A chunk `[j0, j0 + BK)` of the rows `[q0, q0 + BQ)` is whole where
        `j0 + BK - 1 - q0 <= c`: the first `floor((q0 + c + 1) / BK)` chunks. Those
        end at most at `q0 + c + 1 <= n_q + c` (a tile starts at a row there is), so
        inside the `n_k` keys where `c <= 0` and the key count is the query count
        (self-attention's one sequence length, `_same_size`): the end then needs no
        `min` with the key count. (A run-time count there cost the H200 a third of
        GPT-2's causal attention at T = 2048 in Triton 3.6, numbers unchanged:
        docs/PERF.md.)"""
        (t,) = self.loops
        rows = [(q, c) for q, c in (key_bound(self.graph, self.dims, sm, t.dim) or {}).items() if q != STATIC]
        if len(rows) != 1:
            return None
        q, c = rows[0]
        decided: dict[tuple[int, SSAValue], bool | float] = {
            **below_diagonal(self.graph, self.dims, sm, t.dim, q, c),
            **exact_mask_decisions(self.graph, self.dims, sm, t.dim, q, c)}  # fmt: skip
        if not decided:
            return None
        q0 = self._row_span(q, outer)[0] if self.tiles[q].mode != WHOLE else self._index(outer, 0)
        last = arith.AddiOp(q0, self._index(outer, c + 1))
        low = arith.MaxSIOp(last.result, self._index(outer, 0))  # (then / is floor)
        chunks = arith.DivSIOp(low.result, self._index(outer, t.block))
        start = arith.MuliOp(chunks.result, self._index(outer, t.block))
        outer.block.add_ops([last, low, chunks, start])
        if t.dynamic and c <= 0 and self._same_size(q, t.dim):
            return start.result, decided, True
        end = arith.MinSIOp(start.result, ub)
        outer.block.add_op(end)
        return end.result, decided, False

    def _row_span(self, q: int, outer: _Scope) -> tuple[SSAValue, int]:
        """The first row and the row count the key loops of a tile of query dim `q` are
        bounded by: the tile's own; with a warp-specialised plan (`consumers` tiles a
        program, sharing their key loops) those of the program's tiles together, from
        the offset rounded down to a multiple of their rows (one value for all of
        them: the printer checks the bounds read the tile's offset only so)."""
        block = self.tiles[q].block
        if self.plan.consumers <= 1:
            return self.outer_offsets[q], block
        rows = block * self.plan.consumers
        pair = arith.DivSIOp(self.outer_offsets[q], self._index(outer, rows))
        start = arith.MuliOp(pair.result, self._index(outer, rows))
        outer.block.add_ops([pair, start])
        return start.result, rows

    def _same_size(self, a: int, b: int) -> bool:
        """Dynamic shared dims `a` and `b` are one size at run time: an input read
        along `a` and one read along `b` have sizes made from one (tensor, axis) of
        the function (`dim_facts.size_origin`: through views, inits, `tensor.dim`,
        kernels). (The inputs read along one dim are checked to agree at launch:
        `SAME_SIZES`.)"""
        inputs = list(self.group.entry.args)

        def origins(dim: int) -> set[object]:
            if not self.tiles[dim].dynamic:
                return set()
            sources = self._size_sources(dim) or self._made_sources(dim)
            return {size_origin(self.group.inputs[inputs.index(arg)], axis)  # pyright: ignore
                    for arg, axis in sources}  # fmt: skip

        return bool(origins(a) & origins(b))

    def _key_end(self, sm: OnlineSoftmax, outer: _Scope) -> SSAValue:
        """Where the online loop stops: the extent, or, under a causal mask
        (`causal.key_bound`: every key `j > q + c` of row `q` is -inf, adding
        nothing), `min(extent, q0 + BQ + c)` for the tile's rows `[q0, q0 + BQ)`.
        The mask stays in the loop for the tiles it cuts."""
        (t,) = self.loops
        bounds = key_bound(self.graph, self.dims, sm, t.dim) or {}
        end = t.extent
        for q, c in bounds.items():
            if q == STATIC:
                end = min(end, max(0, c + 1))
            elif self.tiles[q].mode == WHOLE:
                end = min(end, max(0, self.tiles[q].block + c))
        ub = self._index(outer, end)
        if t.dynamic:  # the keys there are, at most the static bound (a dynamic extent is
            # only the planning size)
            extent = self._extent(t.dim, outer)
            if end < t.extent:
                least = arith.MinSIOp(extent, ub)
                outer.block.add_op(least)
                extent = least.result
            ub = extent
        for q, c in bounds.items():
            if q == STATIC or self.tiles[q].mode == WHOLE or \
                    (self.tiles[q].block + c >= t.extent and not t.dynamic):  # fmt: skip
                continue
            start, rows = self._row_span(q, outer)
            last = arith.AddiOp(start, self._index(outer, rows + c))
            limit = arith.MinSIOp(ub, last.result)
            outer.block.add_ops([last, limit])
            ub = limit.result
        return ub

    def _rescale(self, scope: _Scope, acc: SSAValue, corr: SSAValue, r: Node, a: Node) -> SSAValue:
        """acc * corr, corr broadcast from the max's row dims to acc's dims."""
        acc_dims = self.value_dims(r.op.results[0])
        row_dims = self.value_dims(a.op.results[0])
        return self._pointwise(scope, [acc, corr], acc.type, _product,
                               [acc_dims, row_dims], acc_dims)  # fmt: skip

    def _pointwise(self, scope, inputs, result_type, payload, in_dims=None, out_dims=None):
        """A new elementwise linalg.generic on tiles; `payload(block) -> value`."""
        rank = len(result_type.get_shape())
        out_dims = out_dims or list(range(rank))
        in_dims = in_dims or [out_dims] * len(inputs)
        maps = [AffineMap(rank, 0, tuple(AffineDimExpr(out_dims.index(d)) for d in dims))
                for dims in in_dims]  # fmt: skip
        et = result_type.get_element_type()
        block = Block(arg_types=[et] * (len(inputs) + 1))
        value = payload(block)
        block.add_op(linalg.YieldOp(value))
        empty = tensor.EmptyOp([], result_type)
        gen = linalg.GenericOp(
            inputs, [empty.tensor], Region(block),
            [AffineMapAttr(m) for m in [*maps, AffineMap.identity(rank)]],
            [IteratorTypeAttr(IteratorType.PARALLEL)] * rank, [result_type],
        )  # fmt: skip
        scope.block.add_ops([empty, gen])
        return gen.results[0]

    def _emit_looped_reduction(self, node: Node, outer: _Scope) -> None:
        """A reduction over looped dims: nested scf.for over chunks, init outside."""
        s = node.s
        inits = [self.materialize(v, outer, outer) for v in s.outputs]
        results = self._lane_reduction(node, outer, inits)
        if results is None:
            results = self._reduction_loop(node, outer, outer, inits)
        for old, new in zip(node.op.results, results, strict=True):
            outer.memo[old] = new

    def _lane_reduction(self, node: Node, outer: _Scope, inits: list[SSAValue]) -> list[SSAValue] | None:
        """The lane-wise form of a sum/max/min over the looped dims (module doc, 3.)."""
        combiner = lane_combiner(node)
        if combiner is None or len(inits) != 1:
            return None
        n = node.s.num_loops
        et = node.s.outputs[0].type.get_element_type()
        lane_dims = [self.dims.of[(node.index, d)] for d in range(n)]
        lane_type = TensorType(et, [self._block_of(d, outer) for d in lane_dims])
        identity = constant_of(IDENTITY[combiner], et)
        outer.block.add_op(identity)
        lanes = self._pointwise(outer, [identity.result], lane_type, lambda b: b.args[0],
                                [[]], list(range(n)))  # fmt: skip
        body, offsets, bounds = self._chunk_loop(outer, [lane_type])
        inner = _Scope(body, offsets)
        inputs = self.inputs_of(node, inner, outer)
        maps = [*list(node.op.indexing_maps)[: len(inputs)], AffineMapAttr(AffineMap.identity(n))]
        parallel = [IteratorTypeAttr(IteratorType.PARALLEL)] * n
        step = self._tiled_generic(node, inputs, [body.args[1]], inner, (maps, parallel, [lane_type]))
        body.add_ops([step, scf.YieldOp(step.results[0])])
        loop = scf.ForOp(*bounds, [lanes], Region(body))
        outer.block.add_op(loop)
        combine = Block(arg_types=[et, et])
        op = combiner(combine.args[0], combine.args[1])
        combine.add_ops([op, linalg.YieldOp(op.results[0])])
        final = linalg.GenericOp(
            [loop.results[0]], inits, Region(combine),
            [AffineMapAttr(AffineMap.identity(n)), node.op.indexing_maps.data[-1]],
            node.op.iterator_types, [self.tile_type(node.op.results[0], outer)],
        )  # fmt: skip
        final.location = node.op.location
        outer.block.add_op(final)
        return [final.results[0]]

    def _reduction_loop(
        self, node: Node, scope: _Scope, outer: _Scope, carried: list[SSAValue]
    ) -> list[SSAValue]:
        """The reduction in one `scf.for` over the chunks of every looped dim."""
        body, offsets, bounds = self._chunk_loop(scope, [v.type for v in carried])
        inner = _Scope(body, {**scope.loop_offsets, **offsets})
        inputs = self.inputs_of(node, inner, outer)
        generic = self._tiled_generic(node, inputs, list(body.args[1:]), inner)
        body.add_ops([generic, scf.YieldOp(*generic.results)])
        loop = scf.ForOp(*bounds, carried, Region(body))
        scope.block.add_op(loop)
        if node in self.siblings:
            self.sibling_loops.append(loop)
        return list(loop.results)

    def _chunk_loop(self, scope: _Scope, carried_types: list) -> tuple[Block, dict, tuple]:
        """The body block, each looped dim's chunk offset in it, and the bounds of
        one loop over every chunk of every looped dim.

        One looped dim: the iv is the chunk's offset. Several (a contraction over
        heads x head dim, a sum over two axes) share one flat loop whose index is
        split into each dim's chunk by div/mod, so Triton pipelines the whole
        range instead of restarting a short pipeline per outer iteration.
        """
        body = Block(arg_types=[IndexType(), *carried_types])
        if len(self.loops) == 1:
            (t,) = self.loops
            bounds = (self._index(scope, 0), self._extent(t.dim, scope), self._index(scope, t.block))
            return body, {t.dim: body.args[0]}, bounds
        # Chunks per looped dim: a number, or for a dynamic dim its run-time
        # ceil(extent / block), computed before the loop.
        trips: list[int | SSAValue] = [self._chunks(t, scope) if t.dynamic else -(-t.extent // t.block)
                                       for t in self.loops]  # fmt: skip
        here = _Scope(body, {})
        offsets = {}
        for i, t in enumerate(self.loops):
            chunk = body.args[0]
            if (inner := self._product(trips[i + 1 :], scope)) != 1:
                div = arith.DivSIOp(chunk, inner if isinstance(inner, SSAValue) else self._index(here, inner))
                body.add_op(div)
                chunk = div.result
            if i > 0:
                trip = trips[i]
                rem = arith.RemSIOp(chunk, trip if isinstance(trip, SSAValue) else self._index(here, trip))
                body.add_op(rem)
                chunk = rem.result
            offsets[t.dim] = self._mul(here, chunk, t.block)
        total = self._product(trips, scope)
        total = total if isinstance(total, SSAValue) else self._index(scope, total)
        return body, offsets, (self._index(scope, 0), total, self._index(scope, 1))

    def _chunks(self, t, scope: _Scope) -> SSAValue:
        """A dynamic dim's chunks: (extent + block - 1) // block, in `scope`."""
        up = arith.AddiOp(self._extent(t.dim, scope), self._index(scope, t.block - 1))
        chunks = arith.DivSIOp(up.result, self._index(scope, t.block))
        scope.block.add_ops([up, chunks])
        return chunks.result

    def _product(self, factors: list[int | SSAValue], scope: _Scope) -> int | SSAValue:
        """The product of static and run-time factors (a number if all are static),
        computed in `scope`."""
        static = math.prod(f for f in factors if isinstance(f, int))
        result: int | SSAValue = static
        for f in factors:
            if isinstance(f, SSAValue):
                if isinstance(result, int):
                    result = f if result == 1 else self._mul(scope, f, result)
                else:
                    mul = arith.MuliOp(result, f)
                    scope.block.add_op(mul)
                    result = mul.result
        return result

    def _tiled_generic(
        self, node: Node, inputs: list[SSAValue], outs: list[SSAValue], scope: _Scope,
        form: tuple | None = None,
    ) -> linalg.GenericOp:
        """`node` on tiles; `form` = (indexing maps, iterator types, result types)
        replaces the op's own (the lane-wise step of a looped reduction)."""
        s = node.s
        body = Region()
        captured = {
            v: self._scalar(v, scope)
            for op in s.payload.ops
            for v in op.operands
            if isinstance(v.owner, Operation) and v.owner.parent_block() is not s.payload
        }
        s.payload.parent.clone_into(body, value_mapper=captured)
        self._decide(node, body.block, captured)
        self._offset_indices(node, body.block, scope)
        partial = {d for d in range(s.num_loops) if self._is_partial(node, d)}
        clamp_gathers(body.block, in_bounds_axes(s.payload, partial), self._run_time_size)
        if node.kind != CONTRACTION:
            self._mask_partial_reductions(node, body.block, scope)
        if node in self.zero_padding:
            self._mask_partial_outputs(node, body.block, scope)
        self._mask_partial_checks(node, body.block, scope)
        maps, iterators = node.op.indexing_maps, node.op.iterator_types
        result_types = [self.tile_type(r, scope) for r in node.op.results]
        if form is not None:
            maps, iterators, result_types = form
        generic = linalg.GenericOp(inputs, outs, body, maps, iterators, result_types)
        generic.location = node.op.location
        return generic

    def _decide(self, node: Node, block: Block, cloned: dict[SSAValue, SSAValue]) -> None:
        """The conditions `self.decided` knows in the loop being built, as constants
        in `node`'s cloned payload (what computed them erased when unused)."""
        for (index, v), known in self.decided.items():
            if index != node.index or v not in cloned:
                continue
            if not isinstance(known, bool):  # (an additive mask's element there: 0.0)
                const = constant_of(known, v.type)
                block.insert_op_before(const, block.first_op)  # pyright: ignore
                cloned[v].replace_all_uses_with(const.result)
                continue
            const = arith.ConstantOp(IntegerAttr(int(known), IntegerType(1)))
            block.insert_op_before(const, block.first_op)  # pyright: ignore
            old = cloned[v]
            old.replace_all_uses_with(const.result)
            if isinstance(old.owner, Operation):
                _erase_if_unused(old.owner)
            for use in list(const.result.uses):  # select(true, x, y) is x
                sel = use.operation
                if isinstance(sel, arith.SelectOp) and use.index == 0:
                    sel.result.replace_all_uses_with(sel.operands[1 if known else 2])
                    block.erase_op(sel)
            if not const.result.uses:
                block.erase_op(const)

    def _offset_indices(self, node: Node, block: Block, scope: _Scope) -> None:
        """`linalg.index d` counts within the tile; add the tile's offset."""
        for op in list(block.ops):
            if not isinstance(op, linalg.IndexOp):
                continue
            dim = self.dims.of[(node.index, op.dim.value.data)]
            if self.tiles[dim].mode == WHOLE:
                continue
            add = arith.AddiOp(op.result, self._offset(dim, scope))
            block.insert_op_after(add, op)
            op.result.replace_uses_with_if(add.result, lambda use, a=add: use.operation is not a)

    def _mask_partial_reductions(self, node: Node, block: Block, scope: _Scope) -> None:
        partial = [d for d in node.s.reduction_dims if self._is_partial(node, d)]
        if not partial:
            return
        yield_op = block.last_op
        assert yield_op is not None
        # A position is selected where its value wins: masking the value (in its
        # comparison too) keeps padding from winning.
        pair = arg_reduction(block, len(node.s.inputs), node.s.reduction_dims)
        for i, value in enumerate(yield_op.operands):
            if pair is not None and i == pair.index:
                continue
            found = combiner_at(block.args[len(node.s.inputs) + i], value)
            if found is None:
                raise TilingRefused(
                    "cannot mask this reduction's edge tiles: its payload does not end "
                    f"in a recognised combiner ({', '.join(c.name.split('.')[-1] for c in IDENTITY)})",
                    op_location(node.op),
                )  # fmt: skip
            comb, x = found
            users = [comb, pair.compare] if pair is not None and i == pair.value else [comb]
            ops, sel = self._mask(node, partial, x, IDENTITY[type(comb)], scope)
            block.insert_ops_before(ops, min(users, key=block.get_operation_index))
            for user in users:
                user.operands = [sel if o is x else o for o in user.operands]

    def _mask_partial_outputs(self, node: Node, block: Block, scope: _Scope) -> None:
        """Outputs summed over by a contraction or the online reductions: zero past
        the tensor's end (`_zero_padding`)."""
        partial = [
            d for d in node.s.parallel_dims
            if self.dims.of[(node.index, d)] in self.zero_padding[node] and self._is_partial(node, d)
        ]  # fmt: skip
        if not partial:
            return
        yield_op = block.last_op
        assert yield_op is not None
        values = []
        for v in yield_op.operands:
            ops, sel = self._mask(node, partial, v, 0.0, scope)
            for o in ops:
                block.insert_op_before(o, yield_op)
            values.append(sel)
        yield_op.operands = values

    def _mask_partial_checks(self, node: Node, block: Block, scope: _Scope) -> None:
        """A runtime check (`cf.assert`) holds on the lanes past the tensor's end:
        they compute on padding (zeros: `x != 0` would fail there)."""
        partial = [d for d in range(node.s.num_loops) if self._is_partial(node, d)]
        for check in [op for op in block.ops if isinstance(op, cf.AssertOp)]:
            if partial:
                ops, holds = self._mask(node, partial, check.arg, 1, scope)
                for o in ops:
                    block.insert_op_before(o, check)
                check.operands = [holds]

    def _mask(self, node, loops, x, identity, scope):
        ops: list[Operation] = []
        cond = None
        for d in loops:
            dim = self.dims.of[(node.index, d)]
            idx = linalg.IndexOp(d)
            ops.append(idx)
            pos = idx.result
            if self.tiles[dim].mode != WHOLE:
                add = arith.AddiOp(pos, self._offset(dim, scope))
                ops.append(add)
                pos = add.result
            if dim in self.extents:
                cmp = arith.CmpiOp(pos, self.extents[dim], "slt")
                ops.append(cmp)
            else:
                bound = arith.ConstantOp(IntegerAttr(self.tiles[dim].extent, IndexType()))
                cmp = arith.CmpiOp(pos, bound, "slt")
                ops += [bound, cmp]
            if cond is not None:
                both = arith.AndIOp(cond, cmp.result)
                ops.append(both)
                cond = both.result
            else:
                cond = cmp.result
        ident = constant_of(identity, x.type)
        sel = arith.SelectOp(cond, x, ident.result)
        ops += [ident, sel]
        return ops, sel.result

    def _is_partial(self, node: Node, loop: int) -> bool:
        dim = self.dims.of[(node.index, loop)]
        return self.tiles[dim].partial and dim not in self.whole_chunks

    def _in_bounds(self, dim: int) -> bool:
        """Do the tiles of `dim` lie inside the tensors here: the loop's whole chunks, or
        every tile of a dynamic dim that is a multiple of its block (`DimTile.divisor`;
        a static dim's whole tiles the printer sees from its extent)?"""
        t = self.tiles[dim]
        return dim in self.whole_chunks or (t.dynamic and not t.partial)

    def _mark_in_bounds(self, op: _LoadOrStore, dims: tuple[int, ...]) -> _LoadOrStore:
        """`op` (a load or store of a tile along shared `dims`) with the axes `_in_bounds`
        says lie inside marked `IN_BOUNDS_AXES` (the printer masks none of them)."""
        inside = [i for i, d in enumerate(dims) if self._in_bounds(d)]
        if inside:
            op.attributes[IN_BOUNDS_AXES] = DenseArrayBase.from_list(i64, inside)
        return op

    def _store(self, value: SSAValue, dest: SSAValue, outer: _Scope) -> None:
        if not self._varies_in_loop(value):
            tile = self.materialize(value, outer, outer)
            offsets = [self._offset(d, outer) for d in self.value_dims(value)]
            outer.block.add_op(self._mark_in_bounds(StoreOp(tile, dest, offsets), self.value_dims(value)))
            return
        body, loop_offsets, bounds = self._chunk_loop(outer, [])
        inner = _Scope(body, loop_offsets)
        tile = self.materialize(value, inner, outer)
        offsets = [self._offset(d, inner) for d in self.value_dims(value)]
        body.add_op(self._mark_in_bounds(StoreOp(tile, dest, offsets), self.value_dims(value)))
        body.add_op(scf.YieldOp())
        outer.block.add_op(scf.ForOp(*bounds, [], Region(body)))

    # -- small helpers -------------------------------------------------------

    def _empty(self, value: SSAValue, dims: tuple[int, ...], scope: _Scope) -> SSAValue:
        """A tile-shaped init for an output whose old value the payload never reads."""
        shape = [self._block_of(d, scope) for d in dims]
        empty = tensor.EmptyOp([], TensorType(value.type.get_element_type(), shape))
        scope.block.add_op(empty)
        return empty.tensor

    def _scalar(self, value: SSAValue, scope: _Scope) -> SSAValue:
        """A scalar a payload or fill reads from outside it: a constant, or arithmetic
        and casts of constants and the group's dynamic sizes (a mean's divisor, the
        size as a float: `sitofp(index_cast(tensor.dim))`), cloned here, each size
        the kernel's size parameter (`_run_time_size`)."""
        owner = value.owner
        if isinstance(owner, tensor.DimOp) and isinstance(owner.index.owner, arith.ConstantOp):
            return self._run_time_size(owner.source, owner.index.owner.value.value.data)  # pyright: ignore
        if not isinstance(owner, arith.ConstantOp) and not (
                isinstance(owner, Operation) and owner.dialect_name() == "arith" and not owner.regions
                and len(owner.results) == 1 and not isinstance(value.type, TensorType)):  # fmt: skip
            raise CompileError(
                "a scalar operand that is not a constant or computed from the sizes cannot be tiled",
                op_location(owner) if isinstance(owner, Operation) else None,
            )
        operands = {o: self._scalar(o, scope) for o in owner.operands}  # pyright: ignore
        clone = owner.clone(value_mapper=operands)  # pyright: ignore
        scope.block.add_op(clone)
        return clone.results[0]

    def _run_time_size(self, tensor_value: SSAValue, axis: int) -> SSAValue:
        """`tensor.dim` of a group input along a dynamic `axis`, made once in the
        group's entry block (the kernel's size parameter of that dim)."""
        value = self.args.get(tensor_value, tensor_value)
        if (value, axis) not in self.run_time_sizes:
            ops, size = dim_of(value, axis)
            for op in ops:
                self.entry.insert_op_before(op, self.grid_op)
            self.run_time_sizes[(value, axis)] = size
        return self.run_time_sizes[(value, axis)]

    def _index(self, scope: _Scope, value: int) -> SSAValue:
        c = arith.ConstantOp(IntegerAttr(value, IndexType()))
        scope.block.add_op(c)
        return c.result

    def _mul(self, scope: _Scope, value: SSAValue, factor: int) -> SSAValue:
        mul = arith.MuliOp(value, self._index(scope, factor))
        scope.block.add_op(mul)
        return mul.result


_LoadOrStore = TypeVar("_LoadOrStore", LoadOp, StoreOp)


def _erase_if_unused(op: Operation) -> None:
    """Erase `op` if nothing reads it and it has no effect, then what it read."""
    block = op.parent_block()
    if block is None or any(r.uses for r in op.results) or \
            not (isinstance(op, linalg.IndexOp) or is_side_effect_free(op)):  # fmt: skip
        return
    read = [v.owner for v in op.operands if isinstance(v.owner, Operation)]
    block.erase_op(op)
    for producer in read:
        if producer.parent_block() is block:
            _erase_if_unused(producer)


def in_bounds_axes(payload: Block, partial: Collection[int] = ()) -> dict[int, set[int]]:
    """For each of the payload's `tensor.extract`s (by position, in walk order), the
    axes whose index `value_range` proves inside its dim at every point of the op's
    iteration space, and that reads none of the `partial` loops (a partial tile's
    lanes past the extent compute indices outside that space)."""
    found = {}
    gathers = [op for op in payload.walk() if isinstance(op, tensor.ExtractOp)]
    for k, op in enumerate(gathers):
        found[k] = {
            axis for axis, (v, size) in enumerate(zip(op.indices, op.tensor.type.get_shape(), strict=True))
            if (r := value_range(v)) is not None and r.lo >= 0 and r.hi <= size - 1
            and (loops := loops_read(v, payload)) is not None and not loops & set(partial)
        }  # fmt: skip
    return found


def loops_read(v: SSAValue, payload: Block) -> set[int] | None:
    """The loops (`linalg.index` dims) payload value `v` is computed from; None if it
    also reads an element of an operand (then it may follow any loop)."""
    if isinstance(v, BlockArgument):
        return None if v.owner is payload else set()
    op = v.owner
    if op.parent_block() is not payload:
        return set()  # (captured from outside the payload: one value for every lane)
    if isinstance(op, linalg.IndexOp):
        return {op.dim.value.data}
    loops: set[int] = set()
    for operand in op.operands:
        if (read := loops_read(operand, payload)) is None:
            return None
        loops |= read
    return loops


def clamp_gathers(block: Block, in_bounds: Mapping[int, Collection[int]] | None = None,
                  run_time_size: Callable[[SSAValue, int], SSAValue] | None = None) -> None:
    """Clamp each index of the payload's gathers (`tensor.extract` of a tensor
    from outside) to its dim: lanes of an edge tile past the extent compute
    indices nobody stores, and an out-of-bounds extract is undefined; clamped,
    every program reads in bounds (what the gather's consumers store is unchanged).
    The clamp is marked `EDGE_CLAMP` (the printer masks the load instead). A dynamic
    dim is clamped to its run-time size, `run_time_size(tensor, axis)` (a value
    outside `block`). The axes `in_bounds[k]` of the gather at position `k`
    (`in_bounds_axes`) are marked `IN_BOUNDS_AXES` instead.

    ```mlir
    %v = tensor.extract %table[%i] : tensor<11xf32>
    // becomes
    %lo = arith.maxsi %i, %c0 : index
    %in = arith.minsi %lo, %c10 {tilefuse.edge_clamp} : index
    %v = tensor.extract %table[%in] : tensor<11xf32>
    ```
    """
    in_bounds = in_bounds or {}
    gathers = [op for op in block.walk() if isinstance(op, tensor.ExtractOp)]
    for k, op in enumerate(gathers):
        if _defining_block(op.tensor) is block:
            continue
        inside = sorted(in_bounds.get(k, ()))
        if inside:
            op.attributes[IN_BOUNDS_AXES] = DenseArrayBase.from_list(i64, inside)
        indices = []
        for axis, (index, size) in enumerate(zip(op.indices, op.tensor.type.get_shape(), strict=True)):
            if axis in inside:
                indices.append(index)
                continue
            if size < 0 and run_time_size is None:
                raise TilingRefused("cannot tile: a gather (tensor.extract) from a tensor of "
                                    "dynamic size (its clamp needs the run-time size)",
                                    op_location(op))  # fmt: skip
            indices.append(_clamped_index(op, axis, size, run_time_size))
        op.operands = [op.tensor, *indices]


def _clamped_index(op: tensor.ExtractOp, axis: int, size: int,
                   run_time_size: Callable[[SSAValue, int], SSAValue] | None) -> SSAValue:
    """`op`'s index on `axis` clamped to [0, size) (ops inserted before `op`)."""
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    if size < 0:
        assert run_time_size is not None
        one = arith.ConstantOp(IntegerAttr(1, IndexType()))
        last = arith.SubiOp(run_time_size(op.tensor, axis), one.result)
        bounds: list[Operation] = [zero, one, last]
    else:
        last = arith.ConstantOp(IntegerAttr(size - 1, IndexType()))
        bounds = [zero, last]
    low = arith.MaxSIOp(op.indices[axis], zero.result)
    high = arith.MinSIOp(low.result, last.result)
    high.attributes[EDGE_CLAMP] = UnitAttr()
    for new in (*bounds, low, high):
        op.parent_block().insert_op_before(new, op)  # pyright: ignore[reportOptionalMemberAccess]
    return high.result


def _defining_block(value: SSAValue) -> Block | None:
    owner = value.owner
    return owner if isinstance(owner, Block) else owner.parent_block()
