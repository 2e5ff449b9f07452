"""
Tile plans: the tile sizes of a fusion group, chosen from the target's budgets.

`plan_tiles(graph, dims, target)` decides, for every shared loop dim of a group
(`dataflow.shared_dims`), its block size and how it is covered:

- `grid`: split across programs, one program per tile (dims parallel in every op);
- `whole`: the whole extent, padded to a power of two, inside every tile (the
  rows of softmax or LayerNorm);
- `loop`: a loop inside the tile over chunks of `block` (a contraction's `k`,
  or a row too long for the budget), the accumulator carried.

The tile is the largest (powers of two per dim, as Triton blocks need) whose
working set fits the shared-memory budget and whose registers per thread
(live fp32 values spread over the program's threads) leave a useful occupancy
(at least 25%, the `f(o)` floor). For contractions the working set is the
software-pipelined operand tiles (`stages x (BM x BK + BK x BN)`) and the
accumulator lives in registers. The plan records the arithmetic so the IR and
the report can show it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir.affine import AffineDimExpr

from tilefuse.analysis.budget import (
    BYTES_PER_THREAD,
    COMPUTE_BYTES,
    FMA,
    MAX_WARPS,
    MMA,
    REG_OVERHEAD,
    WGMMA,
    OperandTile,
    contraction_smem,
    fit,
    pow2,
    regs_per_thread,
)
from tilefuse.analysis.causal import STATIC, key_bound
from tilefuse.analysis.cost.occupancy import occupancy
from tilefuse.analysis.cost.opcost import payload_library_calls
from tilefuse.analysis.cost.schedule import matmul_programs, simulate
from tilefuse.analysis.cost.target import Target
from tilefuse.analysis.dataflow import (
    CONTRACTION,
    FILL,
    REDUCE,
    Graph,
    Node,
    SharedDims,
    tma_input,
)
from tilefuse.analysis.dim_facts import dim_facts
from tilefuse.analysis.dot import MIN_DOT, operand_dtype
from tilefuse.analysis.patterns import find_online_softmax
from tilefuse.ir.diagnostics import CompileError, op_location
from tilefuse.ir.dtypes import DTYPES, dtype_bytes, dtype_name
from tilefuse.ir.tilefuse import GRID, LOOP, WHOLE, GroupOp, TilePlanAttr

TARGET_TILE_ELEMS = 4096  # per program, for memory-bound groups
MIN_CHUNK = 64


@dataclass(frozen=True)
class DimTile:
    """How one shared dim is tiled."""

    dim: int
    extent: int
    """The trip count; a dynamic dim's planning size (prices only)."""
    block: int
    mode: str
    dynamic: bool = False
    """The trip count is a run-time size: never tiled whole, masked unless `divisor`
    is a multiple of the block."""
    divisor: int = 1
    """A dynamic trip count is a multiple of this (`analysis.dim_facts`)."""
    together: int = 1
    """Tiles of this dim one program takes together (the warp-specialised attention's
    consumers): a run-time count of them is launched in whole groups, so a tile of the
    last group can lie wholly past the end."""

    @property
    def programs(self) -> int:
        """Programs along this dim (at the planning size, for a dynamic dim)."""
        return math.ceil(self.extent / self.block) if self.mode == GRID else 1

    @property
    def partial(self) -> bool:
        """Can a tile of this dim be only partly inside the tensor?"""
        if self.dynamic:
            return self.divisor % (self.block * self.together) != 0
        return self.extent % (self.block * self.together) != 0


@dataclass(frozen=True)
class TilePlan:
    """Tile sizes of one group and the budget arithmetic behind them."""

    dims: tuple[DimTile, ...]
    num_warps: int
    num_stages: int
    working_set: int
    smem_budget: int
    regs_per_thread: int
    occupancy: float
    contraction: bool
    swizzle: tuple[int, int] | None = None
    """Positions (among the grid dims) of M and N, launched in grouped order."""
    group_m: int = 1
    """Tile rows per group in the grouped program order (1: row-major)."""
    schedule_note: str = ""
    """The tile-scheduler simulation that chose the order."""
    persistent: int = 0
    """Programs launched when they loop over the tiles (the Hopper lowering,
    `hopper_lowering`); 0: one program per tile."""
    consumers: int = 0
    """Tiles a warp-specialised attention program runs, a consumer warpgroup each
    (`warp_specialized_attention`); 0: a Triton kernel."""

    @property
    def grid(self) -> tuple[int, ...]:
        """Programs per grid dim; -1 where a dynamic size decides (at launch)."""
        return tuple(-1 if d.dynamic else d.programs for d in self.dims if d.mode == GRID)

    @property
    def loop_dims(self) -> tuple[DimTile, ...]:
        return tuple(d for d in self.dims if d.mode == LOOP)

    def attr(self, dot: str | None = None) -> TilePlanAttr:
        """The plan as the `#tilefuse.tile_plan` its grid carries; `dot`: the tile
        program's `tl.dot` operand dtype (`analysis.dot.grid_dot`)."""
        return TilePlanAttr(
            [(-1 if d.dynamic else d.extent, d.block, d.mode) for d in self.dims],
            self.num_warps, self.num_stages,
            self.working_set, self.smem_budget, self.regs_per_thread, self.occupancy,
            self.swizzle, self.group_m, dot, self.schedule_note, self.persistent, self.consumers,
        )  # fmt: skip

    def describe(self) -> str:
        """The plan in one line (`TilePlanAttr.describe`)."""
        return self.attr().describe()


class TilingRefused(CompileError):
    """A group that cannot be tiled within the budgets."""


def plan_tiles(
    graph: Graph, dims: SharedDims, target: Target, smem_budget: int | None = None
) -> TilePlan:
    """Choose block sizes for the group made of all of `graph`'s nodes."""
    budget = target.smem_per_block if smem_budget is None else smem_budget
    plan = None
    for sm in find_online_softmax(graph):
        if any(r.kind == CONTRACTION for r in sm.linear):
            plan = _plan_attention(graph, dims, target, budget, sm)
            break
    if plan is None and any(n.kind == CONTRACTION for n in graph.nodes):
        plan = _plan_contraction(graph, dims, target, budget)
    if plan is None:
        plan = _plan_memory_bound(graph, dims, target, budget)
    _check_no_split_reduction(graph, dims, plan)
    return _with_dynamic_dims(graph, dims, plan)


def _with_dynamic_dims(graph: Graph, dims: SharedDims, plan: TilePlan) -> TilePlan:
    """The plan made at the planning sizes, its dynamic dims marked: each is split
    across programs or looped over with a run-time trip count; one held whole has
    a block of at least its planning size (the largest declared range end), and
    the host checks the run-time size against that block at every launch. A
    persistent plan over a dynamic grid has a program per SM (`_plan_contraction`): the
    host launches as many or, for fewer tiles at run time, one per tile."""
    dynamic = {d.id for d in dims.dims if d.dynamic}
    if not dynamic:
        return plan
    tiles = tuple(replace(t, dynamic=True, divisor=dim_divisor(graph, dims, t.dim))
                  if t.dim in dynamic else t for t in plan.dims)  # fmt: skip
    assert all(t.block >= t.extent for t in tiles if t.dynamic and t.mode == WHOLE)
    return replace(plan, dims=tiles)


def dim_divisor(graph: Graph, dims: SharedDims, dim: int) -> int:
    """What every run-time trip count of shared `dim` is known to be a multiple of:
    the gcd of the divisor facts of every tensor dim its ops read it along (1 if
    one is unknown)."""
    nodes = {n.index: n for n in graph.nodes}
    found = 0
    for i, loop in dims.dims[dim].members:
        s = nodes[i].s
        for v, m in zip(s.operands, s.maps, strict=True):
            shape = v.type.get_shape() if isinstance(v.type, TensorType) else ()
            for j, e in enumerate(m.results):
                if isinstance(e, AffineDimExpr) and e.position == loop and shape[j] == DYNAMIC_INDEX:
                    facts = dim_facts(v, j)
                    if facts is None:
                        return 1
                    found = math.gcd(found, facts.divisor)
    return found or 1


def _check_no_split_reduction(graph: Graph, dims: SharedDims, plan: TilePlan) -> None:
    """A dim some op reduces must never be split across programs: that miscompiles."""
    for t in plan.dims:
        if t.mode == GRID and dims.dims[t.dim].reduced and t.programs > 1:
            raise TilingRefused(
                f"cannot tile: dim of extent {t.extent} is reduced by one op but would be "
                "split across programs", op_location(graph.nodes[-1].op))  # fmt: skip


# ---------------------------------------------------------------------------
# Memory-bound groups (pointwise, reductions)
# ---------------------------------------------------------------------------


def _values(graph: Graph, dims: SharedDims) -> list[tuple[int, ...]]:
    """Shared dims of every distinct tile a group keeps on chip (a tensor read
    along two different loops is two tiles)."""
    seen: dict[tuple[object, tuple[int, ...]], None] = {}
    for n in graph.nodes:
        if n.kind == FILL:
            continue
        for i, v in enumerate(n.s.inputs):
            if n.s.input_maps[i].results:
                seen[(v, tuple(dims.of[(n.index, d)] for d in n.s.operand_dims(i)))] = None
        for i, r in enumerate(n.op.results):
            loops = n.s.operand_dims(len(n.s.inputs) + i)
            seen[(r, tuple(dims.of[(n.index, d)] for d in loops))] = None
    return [d for _, d in seen]


def _working_set(values: list[tuple[int, ...]], blocks: dict[int, int]) -> int:
    return sum(math.prod(blocks[d] for d in v) * COMPUTE_BYTES for v in values)


POINTWISE_TILE_ELEMS = 1024
POINTWISE_BYTES_PER_THREAD = 16
"""A pointwise group (no reduced dim) launches smaller programs: 1024
elements, one 16-byte vector of each tensor per thread (f32 8 warps, bf16 4).
H200, 8192x8192, against 4096 elements at 64 bytes per thread: bias+GELU bf16
0.0693 -> 0.0680 ms, relu_add f32 0.1907 -> 0.1896, chain bf16 0.0986 ->
0.0981, relu_add bf16 within 0.5% either way
(tools/experiments/elementwise_tiles.py, docs/PERF.md). Row groups keep
TARGET_TILE_ELEMS and BYTES_PER_THREAD."""


def _launch_shape(dims: SharedDims) -> tuple[int, int]:
    """(elements per program, bytes of each tensor a thread moves): pointwise
    groups (no reduced dim) and row groups differ (see POINTWISE_TILE_ELEMS)."""
    if all(d.is_grid for d in dims.dims):
        return POINTWISE_TILE_ELEMS, POINTWISE_BYTES_PER_THREAD
    return TARGET_TILE_ELEMS, BYTES_PER_THREAD


def _storage_bytes(graph: Graph) -> int:
    """The widest element type among the group's tensors (arguments, results
    and intermediates: an fp32 intermediate keeps fp32 warps)."""
    return max((dtype_bytes(v.type) for n in graph.nodes for v in (*n.op.operands, *n.op.results)
                if isinstance(v.type, TensorType)), default=COMPUTE_BYTES)  # fmt: skip


def _fit(
    target: Target,
    values: list[tuple[int, ...]],
    blocks: dict[int, int],
    budget: int,
    storage_bytes: int = COMPUTE_BYTES,
    per_thread: int = 0,
    more_warps: bool = True,
) -> tuple[bool, int, int, float]:
    """Does a block assignment fit (`budget.fit`)? -> (fits, warps, regs, occupancy),
    with warps for tensors of `storage_bytes` elements, `per_thread` bytes of each
    per thread (default BYTES_PER_THREAD), more where registers ask (`more_warps`)."""
    ws = _working_set(values, blocks)
    f = fit(target, ws, math.prod(blocks.values()), budget, storage_bytes, per_thread,
            more_warps)  # fmt: skip
    return f.fits, f.warps, f.regs, f.occupancy


def _plan_memory_bound(graph: Graph, dims: SharedDims, target: Target, budget: int) -> TilePlan:
    values = _values(graph, dims)
    blocks = {d.id: (1 if d.is_grid else pow2(d.extent)) for d in dims.dims}
    modes = {d.id: (GRID if d.is_grid else WHOLE) for d in dims.dims}
    if not _fit(target, values, blocks, budget)[0]:
        _loop_longest_inner(graph, dims, target, values, blocks, modes, budget)
    elif (streamed := _streamed_row(graph, dims)) is not None:
        return _plan_streamed(graph, dims, target, budget, values, streamed)
    tile_elems, per_thread = _launch_shape(dims)
    for d in _grid_growth_order(graph, dims):
        while blocks[d.id] < pow2(d.extent) and math.prod(blocks.values()) < tile_elems:
            trial = {**blocks, d.id: blocks[d.id] * 2}
            # (more rows per program only where they fit the warps their size asks)
            if not _fit(target, values, trial, budget, per_thread=per_thread,
                        more_warps=False)[0]:  # fmt: skip
                break
            blocks = trial
    # The tile is sized as f32; it launches with `per_thread` bytes of each
    # tensor per thread (fewer warps for 16-bit storage).
    _, warps, regs, occ = _fit(target, values, blocks, budget, _storage_bytes(graph), per_thread)
    tiles = tuple(DimTile(d.id, d.extent, blocks[d.id], modes[d.id]) for d in dims.dims)
    return TilePlan(tiles, warps, 1, _working_set(values, blocks), budget, regs, occ, False)


STREAM_CHUNK = 2048
"""Elements per chunk when a long row is streamed (see `_streamed_row`)."""
VECTOR_BYTES = 16


def _streamed_row(graph: Graph, dims: SharedDims):
    """The row dim to stream in chunks, or None.

    A group of plain row reductions (LayerNorm, RMSNorm: one pass per reduction,
    then the writing pass) over rows of at least two chunks reads each row once
    from HBM and again from L2 when it loops over the row in chunks, as
    Inductor's looped reductions do; the printer marks the re-read passes
    `evict_last`. Measured on the H200 (LayerNorm 16384x4096): f32 0.135 ->
    0.128 ms, bf16 0.0705 -> 0.0692 ms (tools/experiments/row_loop.py).
    Online softmax (one max-and-sum pass) keeps its own plan.
    """
    inner = [d for d in dims.dims if not d.is_grid]
    if len(inner) != 1 or inner[0].extent < 2 * STREAM_CHUNK or find_online_softmax(graph):
        return None
    reduces = any(
        n.kind == REDUCE and any(dims.of[(n.index, r)] == inner[0].id for r in n.s.reduction_dims)
        for n in graph.nodes
    )
    return inner[0] if reduces else None


def _plan_streamed(graph, dims, target, budget, values, row) -> TilePlan:
    """One row per program, looped in STREAM_CHUNK chunks; warps so that each
    thread moves one 16-byte vector of the widest row input per chunk."""
    blocks = {d.id: (STREAM_CHUNK if d.id == row.id else 1) for d in dims.dims}
    ebytes = max((dtype_bytes(n.s.inputs[i].type) for n in graph.nodes if n.kind == REDUCE
                  for i in range(len(n.s.inputs))), default=COMPUTE_BYTES)  # fmt: skip
    warps = max(4, min(MAX_WARPS, STREAM_CHUNK * ebytes // VECTOR_BYTES // target.warp_size))
    ws = _working_set(values, blocks)
    regs = regs_per_thread(target, ws, warps)
    occ = occupancy(target, min(regs, target.max_regs_per_thread), warps * target.warp_size, 0)
    tiles = tuple(DimTile(d.id, d.extent, blocks[d.id], LOOP if d.id == row.id else GRID)
                  for d in dims.dims)  # fmt: skip
    return TilePlan(tiles, warps, 1, ws, budget, regs, occ.occupancy, False)


def _loop_longest_inner(graph, dims, target, values, blocks, modes, budget) -> None:
    """Loop the longest inner dim in chunks; if even MIN_CHUNK-wide chunks do not fit
    (several large inner dims: a sum over a whole matrix), loop the inner dims other
    than the contiguous one a row at a time, then chunk the contiguous one."""
    inner = [d for d in dims.dims if not d.is_grid]
    longest = max(inner, key=lambda d: d.extent)
    if _chunk_to_fit(longest, target, values, blocks, modes, budget):
        return
    blocks[longest.id], modes[longest.id] = pow2(longest.extent), WHOLE
    contiguous = _contiguous_dim(graph, dims, inner)
    for d in [d for d in inner if d.id != contiguous.id]:
        blocks[d.id], modes[d.id] = 1, LOOP
        if _fit(target, values, blocks, budget)[0]:
            return
    if not _chunk_to_fit(contiguous, target, values, blocks, modes, budget):
        raise TilingRefused(
            f"cannot tile: even one row in chunks of {MIN_CHUNK} needs "
            f"{_working_set(values, blocks) / 1024:.1f} KB > budget {budget / 1024:.1f} KB",
            op_location(graph.nodes[-1].op),
        )


def _chunk_to_fit(dim, target, values, blocks, modes, budget) -> bool:
    """Loop `dim` in halving chunks (down to MIN_CHUNK) until the tile fits."""
    modes[dim.id] = LOOP
    chunk = blocks[dim.id]
    while chunk > MIN_CHUNK:
        chunk //= 2
        blocks[dim.id] = chunk
        if _fit(target, values, blocks, budget)[0]:
            return True
    return False


def _contiguous_dim(graph: Graph, dims: SharedDims, inner: list):
    """The inner dim that is the last (contiguous) axis of the first tensor the group
    reads along inner dims; the longest inner dim if none."""
    ids = {d.id for d in inner}
    for n in graph.nodes:
        for i in range(len(n.s.inputs)):
            axes = [dims.of[(n.index, d)] for d in n.s.operand_dims(i)]
            if axes and axes[-1] in ids:
                return dims.dims[axes[-1]]
    return max(inner, key=lambda d: d.extent)


def _grid_growth_order(graph: Graph, dims: SharedDims) -> list:
    """Grid dims, the root result's innermost (contiguous) axis first."""
    root = graph.nodes[-1]
    out_loops = root.s.operand_dims(len(root.s.inputs))
    order = [dims.of[(root.index, d)] for d in reversed(out_loops)]
    order += [d.id for d in dims.dims if d.id not in order]
    return [dims.dims[i] for i in order if dims.dims[i].is_grid]


# ---------------------------------------------------------------------------
# Contractions (+ epilogues)
# ---------------------------------------------------------------------------

MMA_BLOCKS = (256, 128, 64, 32, MIN_DOT)
"""Contraction blocks: each at least MIN_DOT, so that the contraction is a `tl.dot`."""
MAX_ACC_REGS = 128


@dataclass(frozen=True)
class _Operand:
    """How one `tl.dot` operand's tile is made (`budget.OperandTile`, in shared
    dims): the dims of its tile, the (dims, element bytes) of each tensor loaded
    to make it, and whether it is loaded as is in the dot's dtype."""

    dims: tuple[int, ...]
    loads: tuple[tuple[tuple[int, ...], int], ...]
    direct: bool

    def tile(self, blocks: dict[int, int]) -> OperandTile:
        def elems(ds: tuple[int, ...]) -> int:
            return math.prod(blocks[d] for d in ds)

        return OperandTile(elems(self.dims), tuple((elems(d), b) for d, b in self.loads),
                           self.direct)  # fmt: skip


@dataclass(frozen=True)
class _Roles:
    """The dims of a contraction: the primary M, N, K get MMA blocks."""

    m: int | None
    n: int | None
    k: int
    other_k: tuple[int, ...]
    a_bytes: int
    """Bytes of an element of the M-side operand's tiles, in the type they are
    loaded in (its storage type: a bf16 factor of an f32 dot is 2)."""
    b_bytes: int
    """The same for the N-side operand."""
    a: _Operand
    b: _Operand
    dot_bytes: int
    """Bytes of an element of the dot's operand type (`analysis.dot.operand_dtype`)."""
    acc_bytes: int
    """Bytes of an element of the accumulator the epilogue converts (`_accumulator_bytes`)."""
    store_bytes: int
    """Bytes of an element of the widest tensor the group writes."""
    extra: tuple[tuple[_Operand, bool], ...] = ()
    """Operand tiles the sibling contractions (`sibling_contractions`) load in the
    same K loop besides `a` and `b`, each with whether it is a B (N-side) operand."""
    accumulators: int = 1
    """Accumulators live in the K loop: one per contraction it runs."""
    held: tuple[_Operand, ...] = ()
    """Operand tiles of the group's other contractions (over other reduction dims,
    `held_dims`), which every tile computes once with their reduction whole."""
    held_dims: tuple[int, ...] = ()

    @property
    def operand_bytes(self) -> int:
        return max(self.a_bytes, self.b_bytes)


def _operand(graph: Graph, dims: SharedDims, node, i: int, dot: str) -> _Operand:
    """Operand `i` of the contraction `node`: read as is, or made by the fused
    producers in `graph` from the tensors they load (their leaves)."""
    own = tuple(dims.of[(node.index, d)] for d in node.s.operand_dims(i))
    value = node.s.inputs[i]
    if graph.producer_of(value) is None:
        return _Operand(own, ((own, dtype_bytes(value.type)),), dtype_name(value.type) == dot)
    loads: dict[tuple[object, tuple[int, ...]], int] = {}
    stack, seen = [graph.producer_of(value)], set()
    while stack:
        p = stack.pop()
        if p is None or p.index in seen:
            continue
        seen.add(p.index)
        for j, v in enumerate(p.s.inputs):
            if graph.producer_of(v) is not None:
                stack.append(graph.producer_of(v))
            elif p.s.input_maps[j].results:
                ds = tuple(dims.of[(p.index, d)] for d in p.s.operand_dims(j))
                loads[(v, ds)] = dtype_bytes(v.type)
    return _Operand(own, tuple((ds, b) for (_, ds), b in loads.items()), False)


def _store_bytes(graph: Graph) -> int:
    """Bytes of an element of the widest tensor the group writes."""
    out = [r for n in graph.nodes if n.external_uses or n is graph.nodes[-1] for r in n.op.results]
    return max(dtype_bytes(r.type) for r in out)


def _accumulator_bytes(graph: Graph) -> int:
    """Bytes of an element of the accumulator the epilogue converts: f32, or the
    widest tensor the group writes (an f64 accumulator). Triton converts the
    accumulator or the stored value; the wider is counted."""
    return max(COMPUTE_BYTES, _store_bytes(graph))


def sibling_contractions(graph: Graph, dims: SharedDims) -> list[Node]:
    """The group's primary contraction and the others tile-and-fuse runs in its K loop
    (`passes/sibling_loops.py`): those over the same reduction dims (one K: LLaMA's
    gate and up projections of one input), with the same output dims and dot operand
    type, that neither feed it nor are fed by it. Their loops become one: each K step
    loads every operand tile of all of them, and every accumulator is live."""
    contractions = [n for n in graph.nodes if n.kind == CONTRACTION]
    if not contractions:
        return []
    first = max(contractions, key=lambda n: _primary_rank(n, dims))

    def shape(n: Node) -> tuple:
        return (sorted(dims.of[(n.index, d)] for d in n.s.reduction_dims),
                tuple(dims.of[(n.index, d)] for d in n.s.operand_dims(len(n.s.inputs))),
                operand_dtype(n.s), len(n.s.inputs))  # fmt: skip

    return [first] + [n for n in contractions if n is not first and shape(n) == shape(first)
                      and not _reaches(graph, n, first) and not _reaches(graph, first, n)]


def _primary_rank(n: Node, dims: SharedDims) -> tuple[bool, int]:
    """Which contraction of a group its tiles are planned for (the largest rank; the
    first written of equals): one with an M and an N side (a matrix product, not a row
    dot whose output dims both operands have), then the longest reduction (a 3x3
    convolution's 9 x C over a 1x1 skip convolution's C added to it)."""
    a, b = (set(n.s.operand_dims(i)) for i in range(2))
    out = n.s.operand_dims(len(n.s.inputs))
    both_sides = any(d in a and d not in b for d in out) and any(d in b and d not in a for d in out)
    return both_sides, math.prod(dims.dim(n, d).extent for d in n.s.reduction_dims)


def _reaches(graph: Graph, src: Node, dst: Node) -> bool:
    """Does `dst` read, through the group's ops, what `src` computes?"""
    stack, seen = [dst], set()
    while stack:
        n = stack.pop()
        for v in n.s.inputs + n.s.outputs:
            p = graph.producer_of(v)
            if p is src:
                return True
            if p is not None and p.index not in seen:
                seen.add(p.index)
                stack.append(p)
    return False


def _roles(graph: Graph, dims: SharedDims) -> _Roles:
    siblings = sibling_contractions(graph, dims)
    node = siblings[0]
    a_dims, b_dims = (set(node.s.operand_dims(i)) for i in range(2))
    out_dims = node.s.operand_dims(2)
    ext = {d.id: d.extent for d in dims.dims}

    def primary(loops, operand: int | None = None) -> tuple[int | None, tuple[int, ...]]:
        ids = [dims.of[(node.index, d)] for d in loops]
        if not ids:
            return None, ()
        best = max(reversed(ids), key=lambda i: ext[i])
        if operand is not None:
            best = _contiguous_side(loops, node.s.operand_dims(operand), ext, dims.of, node.index, best)
        return best, tuple(i for i in ids if i != best)

    m, _ = primary([d for d in out_dims if d in a_dims and d not in b_dims], 0)
    n, _ = primary([d for d in out_dims if d in b_dims and d not in a_dims], 1)
    k, other_k = primary(node.s.reduction_dims)
    assert k is not None
    a_bytes, b_bytes = (dtype_bytes(node.s.inputs[i].type) for i in range(2))
    dot = operand_dtype(node.s)
    a, b = (_operand(graph, dims, node, i, dot) for i in range(2))
    dot_bytes = DTYPES[dot].bytes if dot in DTYPES else COMPUTE_BYTES
    counted = {(v, tuple(dims.of[(node.index, d)] for d in node.s.operand_dims(i)))
               for i, v in enumerate(node.s.inputs)}  # fmt: skip
    extra = []
    for s in siblings[1:]:
        for i, v in enumerate(s.s.inputs):
            key = (v, tuple(dims.of[(s.index, d)] for d in s.s.operand_dims(i)))
            if key not in counted:
                counted.add(key)
                tile = _operand(graph, dims, s, i, dot)
                extra.append((tile, n is not None and n in tile.dims))
    held, held_dims = [], set()
    for c in graph.nodes:
        if c.kind == CONTRACTION and c not in siblings:
            held += [_operand(graph, dims, c, i, dot) for i in range(len(c.s.inputs))]
            held_dims |= {dims.of[(c.index, d)] for d in c.s.reduction_dims} - {k, *other_k}
    return _Roles(m, n, k, other_k, a_bytes, b_bytes, a, b, dot_bytes, _accumulator_bytes(graph),
                  _store_bytes(graph), tuple(extra), len(siblings), tuple(held),
                  tuple(sorted(held_dims)))  # fmt: skip


MIN_CONTIGUOUS_SIDE = 16
"""The least extent of a loop that takes an MMA side for being its operand's
innermost one (`tl.dot`'s smallest M and N)."""


def _contiguous_side(loops, operand_dims: tuple[int, ...], ext: dict[int, int], of, index: int,
                     largest: int) -> int:  # fmt: skip
    """The loop among `loops` (an MMA side's) that takes the side's block: the one the
    operand reads innermost (latest in its dims: the smallest stride of a row-major
    tensor or window view) when it has at least `MIN_CONTIGUOUS_SIDE` iterations, else
    the `largest`. An NCHW 1x1 convolution over 28 x 28 pixels of 32 images tiled the
    images (the largest loop) at one pixel: every element of its A tile a separate
    32-byte sector, 139 us where 28 contiguous columns a row take about 40."""
    order = [d for d in operand_dims if d in loops]
    if order and ext[of[(index, order[-1])]] >= MIN_CONTIGUOUS_SIDE:
        return of[(index, order[-1])]
    return largest


def _epilogue_library_calls(graph: Graph) -> int:
    """Library-code math ops (erf, pow, ...) of the ops after the first contraction:
    the epilogue, applied per accumulator value (a heuristic: a second contraction
    or a sibling after it counts too)."""
    at = next(i for i, n in enumerate(graph.nodes) if n.kind == CONTRACTION)
    return sum(payload_library_calls(n.s) for n in graph.nodes[at + 1 :])


def _plan_contraction(graph: Graph, dims: SharedDims, target: Target, budget: int) -> TilePlan:
    roles = _roles(graph, dims)
    ext = {d.id: d.extent for d in dims.dims}
    calls = _epilogue_library_calls(graph)
    best = None
    single = _single_k_step(roles, ext)
    if not single and hopper_lowering(graph, target, roles, calls):
        contractions = sum(n.kind == CONTRACTION for n in graph.nodes)
        best = _best_candidate(target, budget, roles, ext, calls, True, contractions)
    hopper = best is not None
    if best is None:
        best = _best_candidate(target, budget, roles, ext, calls, hopper=False, single_step=single)
    if best is None:
        raise TilingRefused("cannot tile the contraction within the shared-memory budget",
                            op_location(graph.nodes[-1].op))  # fmt: skip
    blocks, warps, stages, ws, regs, occ = (best.blocks, best.warps, best.stages,
                                            best.working_set, best.regs, best.occupancy)
    note = ""
    if warps > _contraction_warps(blocks.get(roles.m, 1), blocks.get(roles.n, 1), 0):
        note = (f"{warps} warps: {calls} library call(s) per element of the epilogue, "
                f"at most {EPILOGUE_CALLS_PER_THREAD} inlined per thread")  # fmt: skip
    tiles = []
    for d in dims.dims:
        if d.id == roles.k or d.id in roles.other_k:
            mode = LOOP if blocks[d.id] < d.extent else WHOLE
        elif d.reduced:
            # Reduced by another op of the group (not the contraction): whole.
            mode = WHOLE
            blocks[d.id] = pow2(d.extent)
        else:
            mode = GRID
        tiles.append(DimTile(d.id, d.extent, blocks[d.id], mode))
    plan = TilePlan(tuple(tiles), warps, stages, ws, budget, regs, occ, True, schedule_note=note)
    if hopper:
        # (a run-time tile count: every SM, whatever the count at the planning size)
        slots = target.sm_count * best.per_sm
        programs = math.prod(t.programs for t in tiles)
        dynamic = any(d.dynamic and t.mode == GRID for d, t in zip(dims.dims, tiles, strict=True))
        plan = replace(plan, persistent=slots if dynamic else min(programs, slots))
    return _choose_order(plan, roles, target)


def hopper_lowering(graph: Graph, target: Target, roles: _Roles, library_calls: int) -> bool:
    """May this contraction take the Hopper lowering: a persistent grid (each
    program loops over output tiles, the next tile's loads overlapping this one's
    epilogue) whose operand tiles arrive by TMA (`tl.make_tensor_descriptor`)? On
    sm_90 targets, for 16-bit dots with an M and an N, every contraction's operands
    tensors the host passes row-major (`dataflow.tma_input`) read as they are
    stored (no producer fused into a K step), and an epilogue of at most
    `HOPPER_LIBRARY_CALLS` library calls per element.
    Measured on the H200 at the models' Linear shapes: 1.1-1.4x the pointer loop
    (tools/experiments/gemm_tma.py, docs/PERF.md). Tiles of at least 128 x 128, and
    a grid of at least one wave, or the pointer loop."""
    if not (target.compute_capability[0] == 9 and roles.dot_bytes == 2
            and library_calls <= HOPPER_LIBRARY_CALLS
            and roles.m is not None and roles.n is not None
            and roles.a.direct and roles.b.direct):  # fmt: skip
        return False
    group = graph.block.parent_op()
    if not isinstance(group, GroupOp):
        return False
    args = list(graph.block.args)
    return all(v in args and tma_input(group, args.index(v))
               for n in graph.nodes if n.kind == CONTRACTION for v in n.s.inputs)  # fmt: skip


HOPPER_LIBRARY_CALLS = 1
"""Library calls per element an epilogue of the Hopper lowering may have. An erf
(GELU) spilled in the persistent loop in the fifth session; today both lowerings of
BERT's and ViT's FC1 spill 14 words. Timed side by side on an H100
(`tools/experiments/erf_gemm_lowering.py`, docs/PERF.md, 2026-12-06): the FC1 + erf
GELU kernel 104.1 -> 99.6 us (BERT-base), 177.9 -> 145.8 (ViT-B/16), 80.3 -> 79.4
(BERT-large) with 1; the MLP sample's (8192 x 4096 x 16384) within noise (H100,
eighteenth session). Two calls an element stay on the pointer loop (not timed)."""

HOPPER_MIN_TILE = 128 * 128
"""The smallest BM x BN the Hopper lowering takes (measured from 128 x 128 up)."""

HOPPER_MIN_WAVE = 0.9
"""The least share of the SMs a Hopper lowering's tiles must keep busy when they are
fewer than the SMs (else the pointer loop's smaller tiles): 128 tiles of 128 x 256 on
132 SMs (a 1024 x 4096 projection) run, 32 of them (a 256-token one) do not."""


def _k_block(roles: _Roles, ext) -> int:
    """The K tile of a contraction: 64 for 16-bit operands, 32 for wider ones."""
    return min(max(MIN_DOT, pow2(ext[roles.k])), 64 if roles.operand_bytes <= 2 else 32)


def _single_k_step(roles: _Roles, ext) -> bool:
    """Whether the contraction's whole reduction is one K step (a 1 x 1
    convolution over 64 channels): no K loop for stages or the Hopper lowering's
    pipeline to overlap, so loads wait unless other programs on the SM run."""
    return not roles.other_k and ext[roles.k] <= _k_block(roles, ext)


def _best_candidate(target, budget, roles: _Roles, ext, calls: int, hopper: bool,
                    contractions: int = 1, single_step: bool = False):  # fmt: skip
    """The best-scoring (BM, BN) candidate; for the Hopper lowering of a group with
    several contractions (LLaMA's gate and up projections: one accumulator live
    while the next loop runs), at most 128 x 128 per accumulator. With a single K
    step the score weighs the tile's efficiency by the programs resident per SM:
    latency is hidden by other programs or not at all (the bottleneck's
    last 1 x 1, K = 64, on the H200: 128 x 256 tiles 55 us, 64 x 64 37 us,
    docs/PERF.md)."""
    best = None
    for bm in _mma_sizes(ext, roles.m):
        for bn in _mma_sizes(ext, roles.n):
            if hopper and (bm * bn < HOPPER_MIN_TILE
                           or (contractions > 1 and bm * bn > HOPPER_MIN_TILE)):  # fmt: skip
                continue
            cand = _contraction_candidate(target, budget, roles, ext, bm, bn, calls, hopper, single_step)
            if cand is not None and hopper and cand.programs < HOPPER_MIN_WAVE * target.sm_count:
                continue  # well under one wave of tiles: the pointer loop's smaller ones
            if cand is not None and (best is None or cand.score > best.score):
                best = cand
    return best


SIM_WAVES = 4  # waves of programs simulated
SIM_K_STEPS = 64  # K steps simulated (at most): the reuse pattern of the whole loop


def _choose_order(plan: TilePlan, roles: _Roles, target: Target) -> TilePlan:
    """Grouped program order when the tile-scheduler simulation says it saves HBM reads."""
    grid_ids = [t.dim for t in plan.dims if t.mode == GRID]
    tiles = {t.dim: t for t in plan.dims}
    if roles.m is None or roles.n is None:
        return plan
    tm, tn, tk = tiles[roles.m], tiles[roles.n], tiles[roles.k]
    if tm.programs < 2 or tn.programs < 2:
        return plan
    k = min(tk.extent, SIM_K_STEPS * tk.block)
    misses = _order_misses(tm.extent, tn.extent, k, tm.block, tn.block, tk.block,
                           roles.operand_bytes, target.l2_bytes, target.sm_count)  # fmt: skip
    earlier = f"{plan.schedule_note}; " if plan.schedule_note else ""
    if misses["grouped"] >= misses["row"]:
        return replace(plan, schedule_note=f"{earlier}row order: L2 sim reads "
                       f"{misses['row'] / 2**20:.0f} MB vs {misses['grouped'] / 2**20:.0f} MB grouped")  # fmt: skip
    swizzle = (grid_ids.index(roles.m), grid_ids.index(roles.n))
    note = (f"{earlier}grouped order (8 rows): L2 sim reads {misses['grouped'] / 2**20:.0f} MB "
            f"vs {misses['row'] / 2**20:.0f} MB row-major in the first {SIM_WAVES} waves")  # fmt: skip
    return replace(plan, swizzle=swizzle, group_m=8, schedule_note=note)


@functools.lru_cache(maxsize=256)
def _order_misses(m, n, k, bm, bn, bk, operand_bytes, l2_bytes, sm_count) -> dict[str, int]:
    """Simulated HBM bytes of the first waves in row and grouped order (memoised:
    a model's layers repeat the same matmul shapes)."""
    misses = {}
    for order, group in (("row", 1), ("grouped", 8)):
        # A few waves show the steady state; simulating every program costs seconds.
        programs = matmul_programs(m, n, k, bm, bn, bk, operand_bytes, order, group,
                                   SIM_WAVES * sm_count)  # fmt: skip
        stats = simulate(programs, l2_bytes, sm_count)
        misses[order] = sum(o.hbm_bytes for o in stats.operands)
    return misses


def _mma_sizes(ext: dict[int, int], dim: int | None) -> list[int]:
    if dim is None:
        return [1]
    cap = max(MIN_DOT, pow2(ext[dim]))
    return [b for b in MMA_BLOCKS if b <= cap]


# Each library call of an epilogue (libdevice's erf, ...) is inlined once per
# accumulator value a thread holds. The MLP's erf on a 256x128 tile at 8 warps
# (128 values per thread) made a 327 KB cubin that took Triton 2.0 s to compile;
# at 16 warps, 171 KB and 1.1 s, for 5% more kernel time (H200:
# tools/experiments/gemm_warps.py). `--autotune` still tries the 8-warp plan.
EPILOGUE_CALLS_PER_THREAD = 64
MAX_GEMM_WARPS = 16
# Registers of a wgmma program besides its accumulator (addresses, pipeline
# state, epilogue temporaries): ptxas gave 186 for 128 accumulator values at
# 8 warps and 108 for 64 at 16 warps (gpu_check, sm_90).
GEMM_REG_BASE = 58


def _contraction_warps(bm: int, bn: int, library_calls: int) -> int:
    """4 warps for small tiles, 8 from 128x128; more when the epilogue's inlined
    library code per thread would pass EPILOGUE_CALLS_PER_THREAD."""
    warps = 8 if bm * bn >= 128 * 128 else 4
    if library_calls:
        need = math.ceil(bm * bn * library_calls / (EPILOGUE_CALLS_PER_THREAD * 32))
        warps = max(warps, min(MAX_GEMM_WARPS, pow2(need)))
    return warps


@dataclass(frozen=True)
class _Candidate:
    """One (BM, BN) choice of a contraction: its score (higher is better) and the
    budget numbers behind it."""

    score: tuple[float, int, int]
    blocks: dict[int, int]
    warps: int
    stages: int
    working_set: int
    regs: int
    occupancy: float
    per_sm: int
    """Programs resident per SM."""
    programs: int
    """Output tiles."""


def _contraction_candidate(target, budget, roles: _Roles, ext, bm: int, bn: int, calls: int = 0,
                           hopper: bool = False, single_step: bool = False) -> _Candidate | None:  # fmt: skip
    """Score and budget numbers of one (BM, BN) choice, or None if it does not fit
    (`single_step`: the score weighs the tile by the programs resident per SM,
    `_best_candidate`)."""
    k = roles.k
    bk = _k_block(roles, ext)
    warps = _contraction_warps(bm, bn, calls)
    threads = warps * target.warp_size
    acc_regs = math.ceil(bm * bn / threads) * roles.accumulators
    if acc_regs > MAX_ACC_REGS:
        return None
    blocks = dict.fromkeys(ext, 1)  # batch dims and secondary K dims (looped one by one)
    if roles.m is not None:
        blocks[roles.m] = bm
    if roles.n is not None:
        blocks[roles.n] = bn
    blocks[k] = bk
    for stages in (4, 3, 2, 1):
        ws = _contraction_smem(roles, ext, blocks, warps, stages, hopper)
        if ws <= budget:
            break
    else:
        return None
    regs = min(target.max_regs_per_thread, acc_regs + GEMM_REG_BASE)
    resident = occupancy(target, regs, threads, ws)
    occ = resident.occupancy
    if occ <= 0:
        return None
    programs = math.prod(
        math.ceil(ext[d] / blocks[d]) for d in ext if d != k and d not in roles.other_k
    )
    busy = wave_efficiency(programs, target.sm_count, resident.blocks_per_sm)
    efficiency = tile_efficiency(bm, bn, HOPPER_TILE_EFFICIENCY if hopper else TILE_EFFICIENCY)
    score = (round(busy * efficiency * (occ if single_step else 1.0), 3), bm * bn, stages)
    return _Candidate(score, blocks, warps, stages, ws, regs, occ, resident.blocks_per_sm, programs)


TILE_EFFICIENCY = {(256, 128): 1.0, (128, 256): 0.9, (128, 128): 0.92, (64, 128): 0.82,
                   (128, 64): 0.78}  # fmt: skip
"""Mainloop throughput of a BM x BN contraction tile relative to 256 x 128 (H200, bf16
Linear GEMMs at transformer shapes, all waves full: tools/experiments/gemm_tiles.py,
docs/PERF.md)."""
ELONGATED = 0.85
"""Tiles with one side 4x the other or more (unmeasured; fewer operand reuses than a
square tile of the same area)."""


HOPPER_TILE_EFFICIENCY = {(128, 256): 1.0, (256, 128): 0.96, (128, 128): 0.91,
                          (64, 128): 0.8, (128, 64): 0.76}  # fmt: skip
"""The same for the Hopper lowering (persistent, TMA operands), relative to 128 x 256:
tools/experiments/gemm_tma.py on the H200 at 8192 x {1024, 2816, 4096, 5632} x K,
docs/PERF.md (64-wide tiles: unmeasured, scaled as the pointer loop's)."""


def tile_efficiency(bm: int, bn: int, table: dict[tuple[int, int], float] = TILE_EFFICIENCY) -> float:
    """`table`'s efficiency of a BM x BN tile; other shapes by their area against the
    measured ones (below 64 x 128: by the square root of the area, as operand reuse
    goes with a tile's side), times `ELONGATED`."""
    if (bm, bn) in table:
        return table[(bm, bn)]
    area = bm * bn
    eff = 1.0 if area >= 256 * 128 else 0.92 if area >= 128 * 128 else 0.82 * min(1.0, (area / 8192) ** 0.5)
    return eff * (ELONGATED if max(bm, bn) >= 4 * min(bm, bn) else 1.0)


def wave_efficiency(programs: int, sms: int, per_sm: int = 1) -> float:
    """The fraction of the GPU `programs` keep busy: over several waves of
    `sms x per_sm` programs (`per_sm` resident on each SM), the slots filled; in one
    wave, the SMs given a program. 192 tiles on 132 SMs, one per SM, run in two
    waves, the second 45% full: 0.73. The H200 measured it: at 8192 x 768 x 768,
    256 x 128 tiles (192 programs) ran at 329 TF/s and 128 x 128 tiles (384
    programs, 0.97) at 362."""
    slots = sms * max(1, per_sm)
    if programs <= slots:
        return min(programs, sms) / sms
    return programs / (math.ceil(programs / slots) * slots)



WGMMA_ROWS_PER_WARP = 16
"""Rows of a wgmma accumulator per warp: the epilogue converts the accumulator
`min(BM, 16 x warps)` rows at a time."""


PERSISTENT_SMEM_SLACK = 1024
"""Barriers and alignment of a persistent contraction's buffers (ptxas: 24-32 B)."""


def _contraction_smem(roles: _Roles, ext, blocks: dict[int, int], warps: int,
                      stages: int = 1, persistent: bool = False) -> int:  # fmt: skip
    """Shared memory of one contraction tile (`budget.contraction_smem`): pipelined
    when the K loop has more than one trip; the group's other contractions' operand
    tiles once each, their reductions whole (one tile each in the dot's type). A
    persistent program's epilogue runs
    while the next tile's loads are in flight, so its layout conversion does not
    reuse the pipeline's buffers: they add, at most a BM x BN tile of the stored
    type (ptxas, sm_90, Triton 3.9: 8-64 KB for bf16 stores of 64-256 x 128-256
    tiles at 4-16 warps, 64-128 KB for f32 ones; `tools/experiments/smem_tma.py`)."""
    if persistent:
        bm, bn = (blocks.get(d, 1) if d is not None else 1 for d in (roles.m, roles.n))
        operands = _contraction_smem(replace(roles, acc_bytes=0), ext, blocks, warps, stages)
        return operands + bm * bn * roles.store_bytes + PERSISTENT_SMEM_SLACK
    whole = {**blocks, **{d: pow2(ext[d]) for d in roles.held_dims}}
    held = sum(t.tile(whole).elements for t in roles.held) * roles.dot_bytes
    trips = math.ceil(ext[roles.k] / blocks[roles.k]) * math.prod(ext[d] for d in roles.other_k)
    bm = blocks.get(roles.m, 1) if roles.m is not None else 1
    bn = blocks.get(roles.n, 1) if roles.n is not None else 1
    mma = FMA if roles.dot_bytes > 2 else WGMMA if bm >= 64 else MMA
    rows = min(bm, WGMMA_ROWS_PER_WARP * warps) if mma == WGMMA else bm
    return held + contraction_smem(roles.a.tile(blocks), roles.b.tile(blocks), roles.dot_bytes,
                                   stages, trips > 1, rows * bn * roles.acc_bytes, mma,
                                   ext[roles.k] % blocks[roles.k] != 0,
                                   tuple((t.tile(blocks), second) for t, second in roles.extra))  # fmt: skip


FLASH_MIN_BLOCK, FLASH_MAX_BLOCK = 16, 128
# fp32 operands take the FMA path of tl.dot ("ieee"): a 128x128 tile spills
# (ptxas: 21 KB of stack per thread), 64x64 still spills a little, 32x32 does not.
FLASH_MAX_BLOCK_F32 = 32


def flash_tile(target: Target, head_dim: int, elem_bytes: int) -> tuple[int, int, str]:
    """
    FlashAttention's query/key tile (seed 003): `B_r = B_c = floor(M / (4 d b))`
    for shared memory `M`, head dim `d` and `b` bytes per element, rounded down to
    a power of two, then clamped to [16, 128] so the score tile and the output
    accumulator (`B_r x B_c` and `B_r x d` fp32) stay in registers.
    """
    m = target.smem_per_block
    raw = m // (4 * head_dim * elem_bytes)
    block = 1 << max(0, raw.bit_length() - 1)
    cap = FLASH_MAX_BLOCK_F32 if elem_bytes >= 4 else FLASH_MAX_BLOCK
    clamped = max(FLASH_MIN_BLOCK, min(cap, block))
    rule = (f"B_r = B_c = floor({m} / (4 x {head_dim} x {elem_bytes})) = {raw} -> "
            f"{block} (power of two) -> {clamped} (register clamp)")  # fmt: skip
    return clamped, clamped, rule


def _plan_attention(graph: Graph, dims: SharedDims, target: Target, budget: int, sm) -> TilePlan:
    """FlashAttention tiles: B_r query rows per program, key tiles of B_c in a loop."""
    a = sm.max_node
    (j_loop,) = a.s.reduction_dims
    j = dims.of[(a.index, j_loop)]
    scores = [n for n in graph.nodes if n.kind == CONTRACTION and n not in sm.linear]
    head_dims = {dims.of[(n.index, d)] for n in scores for d in n.s.reduction_dims}
    rows = [dims.of[(a.index, d)] for d in a.s.operand_dims(1)]
    out_dims: set[int] = set()
    for out in (r for r in sm.linear if r.kind == CONTRACTION):
        out_dims |= {dims.of[(out.index, d)] for d in out.s.operand_dims(len(out.s.inputs))
                     if dims.of[(out.index, d)] not in rows}  # fmt: skip
    ext = {d.id: d.extent for d in dims.dims}
    row = max(reversed(_query_rows(scores, dims, j, rows)), key=lambda d: ext[d])
    head = math.prod(pow2(ext[d]) for d in head_dims)
    out_width = math.prod(pow2(ext[d]) for d in out_dims)
    ebytes = dtype_bytes(scores[0].s.inputs[0].type) if scores else COMPUTE_BYTES
    outs = [r for r in sm.linear if r.kind == CONTRACTION]
    p_dtype = operand_dtype(outs[0].s) if outs else "f32"
    br, bc, _ = flash_tile(target, head, ebytes)
    if ebytes <= 2:
        # Key tile = head dim within [64, 128]: calibrated on the H200 with
        # tools/experiments/tile_sweep.py (d=128: 128x128 best; d=64: 128x64).
        bc = min(bc, max(64, min(128, head)))
    br = min(br, max(MIN_DOT, pow2(ext[row])))
    bc = min(bc, max(MIN_DOT, pow2(ext[j])))
    why_not = warp_specialized_attention(graph, dims, target, sm, head_dims | out_dims, head, out_width,
                                         ebytes, p_dtype)  # fmt: skip
    if why_not is None:
        ws_plan = _plan_warp_specialized(dims, target, budget, j, row, head_dims | out_dims, head, out_width)
        if ws_plan.working_set <= budget:
            return ws_plan
        why_not = f"its {ws_plan.working_set} B of shared memory over the budget, {budget} B"
    # Three stages pipeline the K/V tile loads (the sweep: 0.72x -> 0.77x SDPA at d=128).
    stages = 3 if ebytes <= 2 else 2
    p_bytes = DTYPES[p_dtype].bytes if p_dtype in DTYPES else COMPUTE_BYTES
    while True:
        tiles = _flash_tiles(dims, j, row, head_dims | out_dims, br, bc)
        blocks = {t.dim: t.block for t in tiles}
        # One trip of the key loop (all keys in one tile) is not pipelined: one buffer each.
        buffered = stages if bc < ext[j] else 2
        ws = _attention_smem(br, bc, head, out_width, ebytes, p_bytes, buffered, pipelined=bc < ext[j])
        ws += (buffered - 1) * _key_tile_loads(graph, dims, j, blocks, scores + outs)  # fmt: skip
        # Over the budget (an f32 P x V of bf16 values: V again in f32, the probabilities
        # in f32), fewer stages, then smaller key and query tiles.
        if ws <= budget or max(br, bc) <= MIN_DOT:
            break
        if stages > 2:
            stages -= 1
        elif bc >= br:
            bc //= 2
        else:
            br //= 2
    # The score tile and the output accumulator live in registers: 8 warps keep
    # a 128x128 tile (bf16) or a 64x64 one (fp32, FMA dot) free of spills.
    warps = 8 if br * bc >= 64 * 64 else 4
    regs = min(target.max_regs_per_thread,
               math.ceil((br * bc + br * out_width) / (warps * target.warp_size)) + REG_OVERHEAD + 16)  # fmt: skip
    occ = occupancy(target, regs, warps * target.warp_size, ws).occupancy
    # (why a 16-bit attention on Hopper keeps the Triton kernel: the plan says so)
    note = f"not warp-specialised: {why_not}" if target.compute_capability[0] == 9 and ebytes == 2 else ""
    return TilePlan(tuple(tiles), warps, stages, ws, budget, regs, occ, True, schedule_note=note)


def _flash_tiles(dims: SharedDims, j: int, row: int, whole: set[int], br: int, bc: int) -> list[DimTile]:
    """FlashAttention's tiles: `br` query rows (`row`) a program, the key dim `j` looped in
    tiles of `bc`, the head and output dims (`whole`) whole, the other dims one a program."""
    tiles = []
    for d in dims.dims:
        if d.id == j:
            tiles.append(DimTile(d.id, d.extent, bc, LOOP if bc < d.extent else WHOLE))
        elif d.id in whole:
            tiles.append(DimTile(d.id, d.extent, pow2(d.extent), WHOLE))
        else:
            tiles.append(DimTile(d.id, d.extent, br if d.id == row else 1, GRID))
    return tiles


WS_QUERY_ROWS = 64
"""Query rows of one consumer warpgroup in the warp-specialised attention (a wgmma's
64-row M: a 64 x 128 score tile and a 64 x 128 output accumulator in 240 registers)."""
WS_KEY_BLOCK = 128
WS_CONSUMERS = 2
WS_STAGES = 2
"""K and V tiles in flight: more stages changed nothing measured (the producer warp
keeps up with two; tools/experiments/attention_gluon.py, docs/PERF.md)."""
WS_CONSUMER_REGS = 240
WS_SYNC_BYTES = 512
"""The mbarriers and what the partitions exchange in shared memory (ptxas: 296-312 B at
head dim 128, Triton 3.6 and 3.9)."""


def warp_specialized_attention(graph: Graph, dims: SharedDims, target: Target, sm, widths: set[int],
                               head: int, out_width: int, ebytes: int, p_dtype: str) -> str | None:  # fmt: skip
    """Why this FlashAttention group cannot take the warp-specialised Hopper kernel
    (None: it can). That kernel (FlashAttention-3's schedule, printed in Gluon by
    `backend/triton/attention_ws.py`): a producer warp loads key and value tiles by
    TMA into rings of shared memory; two consumer warpgroups, each with 64 query rows
    of its own (two consecutive tiles of the grid), run the key loop with both
    products on asynchronous wgmma, the softmax of one key tile overlapping the
    P x V product of the previous. Measured on an H100 at head dim 128, bf16: 0.87-0.99x
    cuDNN's SDPA where Triton's loop reaches 0.67-0.70x (docs/PERF.md); at head dim 64
    it is no faster than the Triton loop, so it is not taken there.

    It takes: an sm_90 target; one score contraction and one P x V contraction,
    16-bit operands read as the host passes them (Q, K, V kernel arguments; K and V
    row-major for TMA); head dim and output width 128 (`widths`, their shared dims: not
    run-time sizes, which the plan prices at one value); no tensor read along the key dim
    besides K and V (masks, biases from memory: later); static query rows a multiple of
    two tiles (the two consumers' tiles share a batch and head; a run-time count of
    query tiles is launched in pairs, the odd one's partner masked) and more than one
    key tile (at the size the plan is made for: a run-time key count's last tile is
    loaded by TMA, zeros past the end, and masked like the Triton kernel's). A causal
    bound is fine: tile-and-fuse bounds the consumers' key loops by their rows together
    (`TileProgramBuilder._row_span`)."""
    reasons = []
    if target.compute_capability[0] != 9:
        reasons.append("not an sm_90 target")
    if ebytes != 2 or DTYPES.get(p_dtype) is None or DTYPES[p_dtype].bytes != 2:
        reasons.append("operands not 16-bit")
    if head != 128 or out_width != 128:
        reasons.append(f"head dim {head}, output width {out_width} (128 measured)")
    if any(dims.dims[d].dynamic for d in widths):
        reasons.append("a run-time head dim or output width")
    scores = [n for n in graph.nodes if n.kind == CONTRACTION and n not in sm.linear]
    outs = [r for r in sm.linear if r.kind == CONTRACTION]
    if len(scores) != 1 or len(outs) != 1 or len(sm.linear) != 2:
        reasons.append("not one score product, one row sum and one P x V product")
    elif not reasons:
        reasons += _ws_operand_reasons(graph, dims, sm, scores[0], outs[0])
    return "; ".join(dict.fromkeys(reasons)) or None


def _ws_operand_reasons(graph: Graph, dims: SharedDims, sm, score: Node, out: Node) -> list[str]:
    """`warp_specialized_attention`'s conditions on the operands, the mask and the sizes."""
    reasons = []
    a = sm.max_node
    (j_loop,) = a.s.reduction_dims
    j = dims.of[(a.index, j_loop)]
    group = graph.block.parent_op()
    args = list(graph.block.args)
    for n, i in ((score, 0), (score, 1), (out, 1)):
        v = n.s.inputs[i]
        if graph.producer_of(v) is not None or v not in args or not isinstance(group, GroupOp):
            reasons.append("an operand computed in the group")
        elif (n, i) != (score, 0) and not tma_input(group, args.index(v)):
            reasons.append("K or V not row-major for TMA")
    if _key_tile_loads(graph, dims, j, {d.id: 1 for d in dims.dims}, [score, out]):
        reasons.append("a tensor read along the key dim besides K and V")
    rows = [dims.of[(a.index, d)] for d in a.s.operand_dims(1)]
    row = max(_query_rows([score], dims, j, rows), key=lambda d: dims.dims[d].extent)
    if not dims.dims[row].dynamic and dims.dims[row].extent % (WS_CONSUMERS * WS_QUERY_ROWS):
        reasons.append(f"query rows not a multiple of {WS_CONSUMERS * WS_QUERY_ROWS}")
    if dims.dims[j].extent <= WS_KEY_BLOCK:
        reasons.append("one key tile")
    if not WS_CAUSAL and any(q != STATIC for q in key_bound(graph, dims, sm, j) or {}):
        reasons.append(WS_CAUSAL_HELD)
    return reasons


WS_CAUSAL = False
"""Whether an attention whose key loops a causal mask bounds (`causal.key_bound`) may
take the warp-specialised kernel. Held back: its first launch hung on an H100 (Triton 3.6)
in a program of two causal attentions at B2 H16 S2048 D128, 512 programs a launch, where
the same program without the masks ran (docs/PERF.md, thirty-first session); the kernel
is the same as one causal attention's, and since the kernel's softmax exponentials
changed it had run causal on a GPU only over one wave of programs (run-time sizes, B1 H2). The
CPU emulator finds no deadlock in it. The Triton loop serves causal attention until a
GPU run clears the kernel (`tools/experiments/causal_ws_check.py` sets this to True)."""
WS_CAUSAL_HELD = ("a causal key bound: held back, its kernel hung on an H100 in a program of two causal "
                  "attentions (docs/PERF.md)")


def _plan_warp_specialized(dims: SharedDims, target: Target, budget: int, j: int, row: int,
                           whole: set[int], head: int, out_width: int) -> TilePlan:  # fmt: skip
    """The warp-specialised attention's tiles: 64 query rows a consumer, key tiles of 128
    in a loop, the head and output dims whole; a program's shared memory is its
    consumers' Q tiles and the K and V rings."""
    tiles = []
    for d in dims.dims:
        if d.id == j:
            tiles.append(DimTile(d.id, d.extent, WS_KEY_BLOCK, LOOP))
        elif d.id in whole:
            tiles.append(DimTile(d.id, d.extent, pow2(d.extent), WHOLE))
        else:
            tiles.append(DimTile(d.id, d.extent, WS_QUERY_ROWS if d.id == row else 1, GRID,
                                 together=WS_CONSUMERS if d.id == row else 1))  # fmt: skip
    ws = WS_CONSUMERS * WS_QUERY_ROWS * head * 2 + WS_STAGES * WS_KEY_BLOCK * (head + out_width) * 2
    ws += WS_SYNC_BYTES
    threads = (WS_CONSUMERS * 4 + 4) * target.warp_size  # (the producer warp's group counts whole)
    regs = min(target.max_regs_per_thread, target.regs_per_sm // threads // 8 * 8)  # (at launch)
    occ = occupancy(target, regs, threads, ws).occupancy
    return TilePlan(tuple(tiles), 4, WS_STAGES, ws, budget, WS_CONSUMER_REGS, occ, True,
                    consumers=WS_CONSUMERS)  # fmt: skip


def _key_tile_loads(graph: Graph, dims: SharedDims, j: int, blocks: dict[int, int],
                    contractions: list) -> int:  # fmt: skip
    """Bytes of one key step's tiles of the tensors the group reads along the key dim
    `j` besides the contractions' operands (masks, biases): Triton pipelines them like
    any other load of the loop (`stages - 1` buffers, the loaded dtype)."""
    total, seen = 0, set()
    for n in graph.nodes:
        for i, v in enumerate(n.s.inputs):
            if n in contractions or graph.producer_of(v) is not None or v in seen:
                continue
            ds = [dims.of[(n.index, d)] for d in n.s.operand_dims(i)]
            if j in ds:
                seen.add(v)
                total += math.prod(blocks[d] for d in ds) * dtype_bytes(v.type)
    return total


def _query_rows(scores, dims: SharedDims, j: int, rows: list[int]) -> list[int]:
    """The query-row dims among the scores' `rows`: those of the score contraction's
    Q operand (the one without the key dim `j`) that its K operand lacks. Batch and
    head dims are in both and are never the rows (ViT's B x H, 768, is larger than
    its 197 queries: picking it made one program per query row, no `tl.dot`)."""
    for n in scores:
        operands = [{dims.of[(n.index, d)] for d in n.s.operand_dims(i)} for i in range(2)]
        with_j = [i for i in range(2) if j in operands[i]]
        if len(with_j) == 1:
            q, k = operands[1 - with_j[0]], operands[with_j[0]]
            found = [d for d in rows if d in q and d not in k]
            if found:
                return found
    return rows


def _attention_smem(br: int, bc: int, head: int, width: int, ebytes: int, p_bytes: int,
                    stages: int, pipelined: bool = True) -> int:  # fmt: skip
    """Shared memory of a FlashAttention tile as Triton allocates it (sm_90, 3.6
    and 3.9, `tests/test_gpu_compile.py`), the larger of two counts:

    - the Q tile once, `stages - 1` buffers of the K and V tiles, the probabilities
      (`B_r x B_c` in the second dot's dtype, `p_bytes`) on their way to it, and V
      once more in that dtype when it is stored in another (f32 probabilities times
      bf16 values), and the row statistics' reduction scratch;
    - a pipelined key loop: the Q tile and `stages` buffers of the K and V tiles.
      ptxas gives exactly that for bf16 at head dims 64 and 128, `B_r` and `B_c` 64
      and 128 (Triton 3.6 and 3.9: d 128 at 128 x 128, 3 stages, 224 KB, which the
      first count put at 192.5 KB; `tools/experiments/attention_smem.py`).

    All keys in one tile (no key loop), 16-bit operands: the K and V tiles once (Q
    and the probabilities stay in registers; ptxas, Triton 3.9 and 3.6: exactly that
    at 64 x 64 / d 64, 64 x 64 / d 128 and 128 x 128 / d 128, which the staged count put
    at twice as much). An f32 dot keeps the staged count (ViT's small f32 heads: 6 KB
    where K and V are 4 KB)."""
    q, kv = br * head * ebytes, bc * (head + width) * ebytes
    p = br * bc * p_bytes
    v_again = bc * width * p_bytes if p_bytes != ebytes else 0
    if not pipelined and ebytes <= 2:
        return kv + v_again
    staged = q + max(1, stages - 1) * kv + p + v_again + br * COMPUTE_BYTES
    if v_again and pipelined:  # (f32 probabilities times 16-bit values: every K/V stage
        # besides the f32 P and V tiles; ptxas 256 KB at 128 x 128, 2 stages, head dim 128,
        # where the count above said 224.5: the kernel did not launch)
        staged = max(staged, stages * kv + p + v_again)
    return max(staged, q + stages * kv)


# ---------------------------------------------------------------------------
# Candidates for the optional autotuner
# ---------------------------------------------------------------------------


def tile_candidates(
    graph: Graph, dims: SharedDims, target: Target, smem_budget: int | None = None,
    limit: int = 4,
) -> list[TilePlan]:  # fmt: skip
    """The model's plan first, then up to `limit - 1` neighbours within the budgets.

    Neighbours change one launch or tile choice at a time: half and double the
    warps; for pipelined loops one stage fewer or more (shared memory
    permitting); for memory-bound groups half and double the block of the
    first grid dim (the rows per program). The autotuner (`tilefuse.runtime.autotune`)
    times them on the GPU; nothing here is needed for the default.
    """
    base = plan_tiles(graph, dims, target, smem_budget)
    out = [base]
    for cand in _neighbours(graph, dims, target, base):
        if len(out) >= limit:
            break
        if cand not in out and cand.working_set <= base.smem_budget:
            _check_no_split_reduction(graph, dims, cand)
            out.append(_with_dynamic_dims(graph, dims, cand))
    return out


def _neighbours(graph: Graph, dims: SharedDims, target: Target, base: TilePlan):
    yield from _launch_neighbours(target, base)
    if not base.contraction:
        yield from _block_neighbours(graph, dims, target, base)


def _launch_neighbours(target: Target, base: TilePlan):
    """Half and double the warps; one pipeline stage fewer or more for loops."""
    for warps in (base.num_warps * 2, base.num_warps // 2):
        regs = math.ceil(base.regs_per_thread * base.num_warps / max(warps, 1))
        if 2 <= warps <= MAX_WARPS and regs <= target.max_regs_per_thread:
            yield replace(base, num_warps=warps, regs_per_thread=regs)
    if base.loop_dims:
        per_stage = base.working_set // base.num_stages
        for stages in (base.num_stages - 1, base.num_stages + 1):
            # (a persistent plan's working set is not per stage: its epilogue buffer
            # adds; one stage fewer always fits, one more is not offered)
            if stages >= 1 and not (base.persistent and stages > base.num_stages):
                yield replace(base, num_stages=stages, working_set=per_stage * stages)


def _block_neighbours(graph: Graph, dims: SharedDims, target: Target, base: TilePlan):
    """Half and double the block of the first grid dim (rows per program)."""
    values = _values(graph, dims)
    grid = {t.dim: t for t in base.dims if t.mode == GRID and t.programs > 1}
    first = next((grid[d.id] for d in _grid_growth_order(graph, dims) if d.id in grid), None)
    if first is None:
        return
    per_thread = _launch_shape(dims)[1]
    for block in (first.block * 2, first.block // 2):
        if not 1 <= block <= pow2(first.extent):
            continue
        blocks = {t.dim: (block if t.dim == first.dim else t.block) for t in base.dims}
        fits, _, regs, occ = _fit(target, values, blocks, base.smem_budget, per_thread=per_thread)
        if fits:
            # Launched as the model's own plans are (see _plan_memory_bound).
            _, warps, regs, occ = _fit(target, values, blocks, base.smem_budget,
                                       _storage_bytes(graph), per_thread)  # fmt: skip
            tiles = tuple(replace(t, block=blocks[t.dim]) for t in base.dims)
            yield replace(base, dims=tiles, num_warps=warps, regs_per_thread=regs,
                          occupancy=occ, working_set=_working_set(values, blocks))  # fmt: skip
