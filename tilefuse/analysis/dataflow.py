"""
The dataflow graph of a function's linalg ops, and the loop dims they share.

`build_graph(func)` lists the structured ops in program order with their
producer/consumer edges; values used by anything that is not a linalg op (the
function's return, a tensor op) count as *external* uses. A tensor a payload
reads by `tensor.extract` (a gather: an embedding table, a row's target) is read
from memory at computed indices: its producer is ordered before the op, never
fused with it (`gather_producers`). `shared_dims(graph,
nodes)` unifies the loop dims of a set of ops through the indexing maps of the
edges between them: in softmax, the row loop of the max-reduction, of the `exp`
and of the division are one dim; so are the column loops. Which of these dims
are parallel in every op decides the tile grid.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, cf, func, tensor
from xdsl.dialects.builtin import TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue

from tilefuse.ir.structured import REDUCTION, StructuredOp, as_structured, shape_of
from tilefuse.ir.tilefuse import LAYOUT_ATTR, GroupOp, WindowOp

FILL, POINTWISE, REDUCE, CONTRACTION = "fill", "pointwise", "reduction", "contraction"


@dataclass(eq=False)
class Node:
    """One linalg op of the graph."""

    index: int
    s: StructuredOp
    kind: str
    producers: list[Node] = field(default_factory=list)
    consumers: list[Node] = field(default_factory=list)
    external_uses: int = 0
    view_producers: list[Node] = field(default_factory=list)
    """Producers read through host-side reshapes: an order, never a fusion edge."""
    view_consumers: list[Node] = field(default_factory=list)
    gather_producers: list[Node] = field(default_factory=list)
    """Producers of tensors the payload gathers from (`gathers`); also view producers."""

    @property
    def op(self) -> Operation:
        return self.s.op

    @property
    def label(self) -> str:
        """A short name for logs: the payload's main op, e.g. `exp` or `matmul`."""
        return op_label(self)

    def __repr__(self) -> str:
        return f"Node({self.index}, {self.label})"


@dataclass
class Graph:
    """Structured ops of one block (a function's or a group's), in program order."""

    block: Block
    nodes: list[Node]
    by_op: dict[Operation, Node]

    def producer_of(self, value: SSAValue) -> Node | None:
        owner = value.owner
        return self.by_op.get(owner) if isinstance(owner, Operation) else None


def classify(s: StructuredOp) -> str:
    """fill, pointwise, reduction, or contraction (a sum of products of two tensors)."""
    tensor_inputs = [v for v, m in zip(s.inputs, s.input_maps, strict=True) if m.results]
    if not tensor_inputs and not s.reduction_dims:
        return FILL
    if not s.reduction_dims:
        return POINTWISE
    return CONTRACTION if is_contraction(s) else REDUCE


def product_operand(v: SSAValue) -> SSAValue:
    """A factor of a contraction's product: the block argument it is, or that an
    exact widening (`arith.extf`, as mixed-precision named ops have) reads."""
    if isinstance(v.owner, arith.ExtFOp):
        return v.owner.input
    return v


def factor_positions(op: linalg.GenericOp) -> list[int]:
    """Input positions of the block arguments a contraction's `mulf` multiplies."""
    mul = next(o for o in op.body.block.ops if isinstance(o, arith.MulfOp))
    args = list(op.body.block.args[: len(op.inputs)])
    return [args.index(a) for a in (product_operand(v) for v in mul.operands) if a in args]


def is_contraction(s: StructuredOp) -> bool:
    """`acc + a * b` over block arguments `a`, `b` of two tensor inputs (each
    possibly widened by `arith.extf`)."""
    yield_op = s.payload.last_op
    if yield_op is None or len(yield_op.operands) != 1 or len(s.outputs) != 1:
        return False
    add = yield_op.operands[0].owner
    if not isinstance(add, arith.AddfOp):
        return False
    acc = s.payload.args[len(s.inputs)]
    others = [o for o in add.operands if o is not acc]
    if len(others) != 1 or not isinstance(mul := others[0].owner, arith.MulfOp):
        return False
    ins = s.payload.args[: len(s.inputs)]
    a, b = (product_operand(o) for o in mul.operands)
    checked = any(isinstance(op, cf.AssertOp) for op in s.payload.ops)  # not a tl.dot
    return a in ins and b in ins and a is not b and not checked


CASTS = (arith.ExtFOp, arith.TruncFOp, arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp,
         arith.FPToUIOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
"""Conversions that only change a value's element type."""


def is_cast(node: Node) -> bool:
    """A pointwise op that only changes the element type of its one tensor input:
    its payload is a chain of conversions (`CASTS`) of that input, read along the
    same loops as the result is written (no broadcast, no transpose)."""
    s = node.s
    if node.kind != POINTWISE or len(s.inputs) != 1 or len(s.outputs) != 1:
        return False
    if s.input_maps[0] != s.output_maps[0]:
        return False
    yield_op = s.payload.last_op
    if yield_op is None or len(yield_op.operands) != 1:
        return False
    ops = [op for op in s.payload.ops if op is not yield_op]
    value = yield_op.operands[0]
    for op in reversed(ops):
        if not isinstance(op, CASTS) or value is not op.results[0]:
            return False
        value = op.operands[0]
    return bool(ops) and value is s.payload.args[0]


def op_label(node: Node) -> str:
    if node.kind == CONTRACTION:
        return "matmul"
    if node.kind == FILL:
        return "fill"
    if node.kind != REDUCE and gathers(node.s):
        return "gather"
    # (named by the ops on the elements or indices: not a scale's `truncf` of a constant)
    varying: set[SSAValue] = set(node.s.payload.args)
    names = []
    for op in node.s.payload.ops:
        if isinstance(op, linalg.IndexOp) or any(v in varying for v in op.operands):
            varying.update(op.results)
            if op.dialect_name() in ("arith", "math"):
                names.append(op.name.split(".")[-1].removesuffix("f"))
    if not names:
        return "copy"
    main = names[-1] if node.kind == REDUCE else names[0]
    return f"reduce_{main}" if node.kind == REDUCE else main


def build_graph(f: func.FuncOp | Block) -> Graph:
    """The structured ops of a function's body (or of a block) with their edges."""
    block = f.body.block if isinstance(f, func.FuncOp) else f
    nodes: list[Node] = []
    by_op: dict[Operation, Node] = {}
    for op in block.ops:
        if (s := as_structured(op)) is not None:
            node = Node(len(nodes), s, classify(s))
            nodes.append(node)
            by_op[op] = node
    graph = Graph(block, nodes, by_op)
    for node in nodes:
        for value in node.s.operands:
            if (p := graph.producer_of(value)) is not None and p not in node.producers:
                node.producers.append(p)
                p.consumers.append(node)
        for result in node.op.results:
            node.external_uses += sum(1 for use in result.uses if use.operation not in by_op)
    _link_views(graph)
    return graph


def _link_views(graph: Graph) -> None:
    """Edges through host-side views and copies, and to the tensors payloads
    gather from: they order kernels, never fuse them."""
    for node in graph.nodes:
        for value in node.s.operands:
            for p in _through_host_ops(graph, value):
                if p not in node.view_producers:
                    node.view_producers.append(p)
                    p.view_consumers.append(node)
        for value in dict.fromkeys(g.tensor for g in gathers(node.s)):
            for source in host_sources(value):
                if (p := graph.producer_of(source)) is None or p is node:
                    continue
                if p not in node.gather_producers:
                    node.gather_producers.append(p)
                if p not in node.view_producers:
                    node.view_producers.append(p)
                    p.view_consumers.append(node)


def gathers(s: StructuredOp) -> list[tensor.ExtractOp]:
    """The payload's `tensor.extract`s of tensors defined outside the op (gathers at
    computed indices), in payload order."""
    return [op for op in s.payload.walk() if isinstance(op, tensor.ExtractOp)
            and not s.op.is_ancestor(_defining_op(op.tensor))]  # fmt: skip


def _defining_op(value: SSAValue) -> Operation:
    owner = value.owner
    return owner if isinstance(owner, Operation) else owner.parent_op()  # type: ignore[return-value]


VIEW_OPS = (tensor.ExpandShapeOp, tensor.CollapseShapeOp, tensor.ExtractSliceOp, WindowOp)
"""Ops the host runs as tensor views between kernels (at function level)."""


def view_source(op: Operation) -> SSAValue:
    """The tensor a view op views."""
    return op.source if isinstance(op, tensor.ExtractSliceOp | WindowOp) else op.src


def reshape_root(value: SSAValue) -> SSAValue:
    """The value `value` views through a chain of host-side views (reshapes,
    slices; itself if none)."""
    while isinstance(value.owner, VIEW_OPS):
        value = view_source(value.owner)
    return value


HOST_COPIES = (tensor.ConcatOp, tensor.InsertSliceOp, tensor.PadOp)
"""Ops the host runs as torch copies between kernels (`torch.cat`, a slice
assignment, a filled tensor with the source assigned in)."""


def pad_value(op: tensor.PadOp) -> SSAValue | None:
    """The constant a static `tensor.pad` fills with (its region yields an
    `arith.constant`, from inside or outside the region); None otherwise."""
    if op.low or op.high:
        return None
    block = op.region.block
    yielded = block.last_op.operands[0] if block.last_op is not None and block.last_op.operands else None
    if yielded is None or not isinstance(yielded.owner, arith.ConstantOp):
        return None
    return yielded


def host_sources(value: SSAValue) -> list[SSAValue]:
    """The values `value` is made of through host-side views and copies (itself
    if it is none of them)."""
    owner = value.owner
    if isinstance(owner, VIEW_OPS):
        return host_sources(view_source(owner))
    if isinstance(owner, HOST_COPIES):
        return [r for v in owner.operands if isinstance(v.type, TensorType) for r in host_sources(v)]
    return [value]


def tma_tensor(value: SSAValue) -> bool:
    """Is the host-side tensor `value` row-major, as a TMA descriptor reads it? Views
    (reshapes, slices) of a function argument, a constant or a kernel's or a host
    copy's row-major result are (the host checks alignment and strides at the launch,
    `host_prelude._tma`); a window view and a tensor stored in another dim order are not."""
    while isinstance(value.owner, VIEW_OPS):
        if isinstance(value.owner, WindowOp):
            return False
        value = view_source(value.owner)
    owner = value.owner
    if isinstance(owner, GroupOp):
        return owner.layout(value.index) is None  # type: ignore[attr-defined]
    return not (isinstance(owner, Operation) and LAYOUT_ATTR in owner.attributes)


def tma_input(group: GroupOp, i: int) -> bool:
    """Does a TMA descriptor read group input `i` as the host passes it: row-major
    (`tma_tensor`) and seen as it is (no `input_merges`: a merged one is read by
    dividing its index)?"""
    return tma_tensor(group.inputs[i]) and group.input_merge(i) is None


def _through_host_ops(graph: Graph, value: SSAValue) -> list[Node]:
    """The nodes whose results `value` views or copies on the host, if any."""
    if not isinstance(value.owner, VIEW_OPS + HOST_COPIES):
        return []
    return [p for v in host_sources(value) if (p := graph.producer_of(v)) is not None]


# ---------------------------------------------------------------------------
# Shared loop dims
# ---------------------------------------------------------------------------

DimKey = tuple[int, int]  # (node index, loop dim of that node)


@dataclass(frozen=True)
class SharedDim:
    """A loop dim shared by several ops of a group."""

    id: int
    extent: int
    """The trip count; a dynamic one at its planning size (`ir.dynamic.planning_size`)."""
    members: tuple[DimKey, ...]
    reduced: bool  # a reduction dim in at least one member op
    dynamic: bool = False
    """Its trip count is known only at run time (`extent` only prices it)."""

    @property
    def is_grid(self) -> bool:
        """Parallel in every op: can be split across programs."""
        return not self.reduced


@dataclass(frozen=True)
class SharedDims:
    """The loop dims of a group, and which shared dim each op loop belongs to."""

    dims: tuple[SharedDim, ...]
    of: dict[DimKey, int]
    split_reads: tuple[tuple[int, int], ...] = ()
    """Reads (node index, operand index) of a producer of the group that would
    make two loops of one op one dim (`y[j] - y[i]` with `y` computed in the
    group): left apart, each to be served by its own copy of the producer
    (`recompute_refusal`). Empty once the tiler has made those copies."""

    def dim(self, node: Node, loop: int) -> SharedDim:
        return self.dims[self.of[(node.index, loop)]]


class _LoopSets:
    """Union-find over op loops that keeps two loops of one op apart."""

    def __init__(self, nodes: Sequence[Node]):
        self.parent: dict[DimKey, DimKey] = {}
        self.loops: dict[DimKey, dict[int, int]] = {}
        for n in nodes:
            for d in range(n.s.num_loops):
                self.parent[(n.index, d)] = (n.index, d)
                self.loops[(n.index, d)] = {n.index: d}

    def find(self, k: DimKey) -> DimKey:
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def unite(self, pairs: Sequence[tuple[DimKey, DimKey]]) -> bool:
        """Unite every pair, or none if that would put two loops of one op in
        one set."""
        parent, loops = dict(self.parent), dict(self.loops)
        for a, b in pairs:
            ra, rb = self.find(a), self.find(b)
            if ra == rb:
                continue
            mine, theirs = self.loops[ra], self.loops[rb]
            if any(mine.get(n, d) != d for n, d in theirs.items()):
                self.parent, self.loops = parent, loops
                return False
            self.parent[rb] = ra
            self.loops[ra] = {**mine, **theirs}
        return True


def shared_dims(graph: Graph, nodes: Sequence[Node]) -> SharedDims:
    """
    Unify the loop dims of `nodes` along the edges between them.

    A producer's loops are its consumers' loops that read its result; the
    same axis of a tensor read from outside the group is, where that keeps an
    op's loops apart, the same dim in every op that reads it. One op reading a
    tensor along two of its loops keeps them apart: a group input is then read
    twice (two loads); a producer of the group is a split read, computed once
    per read (`SharedDims.split_reads`).
    """
    members = {n.index for n in nodes}
    sets = _LoopSets(nodes)
    split: list[tuple[int, int]] = []
    first_reader: dict[tuple[SSAValue, int], DimKey] = {}
    for inner in (True, False):  # edges inside the group first: they must hold
        for n, i, p in _read_operands(graph, nodes):
            if inner and p is not None and p.index in members:
                result = list(p.op.results).index(n.s.operands[i])
                theirs = p.s.operand_dims(len(p.s.inputs) + result)
                pairs = [((n.index, mine), (p.index, d))
                         for mine, d in zip(n.s.operand_dims(i), theirs, strict=True)]  # fmt: skip
                if not sets.unite(pairs):
                    split.append((n.index, i))
            elif not inner and (p is None or p.index not in members):
                for axis, mine in enumerate(n.s.operand_dims(i)):
                    other = first_reader.setdefault((n.s.operands[i], axis), (n.index, mine))
                    sets.unite([((n.index, mine), other)])
    _unite_siblings(nodes, sets)
    return _collect(nodes, sets.parent, sets.find, tuple(split))


def _unite_siblings(nodes: Sequence[Node], sets: _LoopSets) -> None:
    """Pointwise ops writing tensors of one static shape over all their loops run
    over one loop nest where nothing else ties their loops (two gathers by one index:
    the tables' axes are read by neither's producer); kept apart, the group's grid was
    the product of both nests (98304 programs for 64 tiles' work)."""
    first: dict[tuple[int, ...], Node] = {}
    for n in nodes:
        out = len(n.s.inputs)
        if n.kind != POINTWISE or len(n.s.outputs) != 1 or min(shape_of(n.s.operands[out]), default=0) < 1:
            continue
        dims = n.s.operand_dims(out)
        if sorted(dims) != list(range(len(n.s.iterators))):
            continue  # (an output that does not index every loop)
        other = first.setdefault(shape_of(n.s.operands[out]), n)
        if other is not n:
            theirs = other.s.operand_dims(len(other.s.inputs))
            sets.unite([((n.index, d), (other.index, e)) for d, e in zip(dims, theirs, strict=True)])


def _read_operands(graph: Graph, nodes: Sequence[Node]) -> list[tuple[Node, int, Node | None]]:
    """(op, operand index, producer) of every operand whose value the op reads
    (an init the payload never reads only carries a shape)."""
    return [
        (n, i, graph.producer_of(v))
        for n in nodes
        for i, v in enumerate(n.s.operands)
        if i < len(n.s.inputs) or n.s.payload.args[i].uses
    ]


def recompute_cone(graph: Graph, nodes: Sequence[Node], reader: Node, i: int) -> list[Node]:
    """The ops a copy of the producer read by operand `i` of `reader` computes:
    that producer and its producers in the group, up to results with no axes
    (a 0-d value reads the same along any loops)."""
    members, cone = set(nodes), []
    stack = [reader.s.operands[i]]
    while stack:
        value = stack.pop()
        p = graph.producer_of(value)
        if p is None or p not in members or not shape_of(value) or p in cone:
            continue
        cone.append(p)
        stack += p.s.operands
    return cone


def recompute_refusal(graph: Graph, nodes: Sequence[Node], dims: SharedDims) -> str | None:
    """
    Why the split reads of `dims` cannot each get their own copy of the
    producer they read, or None: the copy recomputes its `recompute_cone`,
    which must hold only pointwise ops and fills.
    """
    for ni, i in dims.split_reads:
        reader = graph.nodes[ni]
        for p in recompute_cone(graph, nodes, reader, i):
            if p.kind not in (FILL, POINTWISE):
                return (f"{reader.label} reads a result computed from {p.label} along two "
                        f"different loops, and a {p.kind} is not recomputed per read")  # fmt: skip
    return None


def _collect(nodes: Iterable[Node], parent: dict[DimKey, DimKey], find,
             split: tuple[tuple[int, int], ...]) -> SharedDims:  # fmt: skip
    groups: dict[DimKey, list[DimKey]] = {}
    for key in parent:
        groups.setdefault(find(key), []).append(key)
    by_index = {n.index: n for n in nodes}
    dims, of = [], {}
    for i, keys in enumerate(sorted(groups.values())):
        # one size at run time: a member whose type knows it statically says it
        static = [by_index[n].s.loop_ranges[d] for n, d in keys if by_index[n].s.loop_ranges[d] >= 0]
        n0, d0 = keys[0]
        extent = static[0] if static else by_index[n0].s.planned_ranges[d0]
        reduced = any(by_index[n].s.iterators[d] == REDUCTION for n, d in keys)
        dims.append(SharedDim(i, extent, tuple(sorted(keys)), reduced, dynamic=not static))
        for k in keys:
            of[k] = i
    return SharedDims(tuple(dims), of, split)
