"""
One view of every linalg op: a loop nest, indexing maps and a scalar payload.

Upstream linalg spells the same thing many ways (`generic`, `matmul`, `fill`,
`reduce`, `broadcast`, `transpose`, named elementwise ops). Everything after
parsing (the evaluator, the cost model, tiling, code generation) reasons about
the one form below, built by `as_structured(op)`:

- `loop_ranges[d]`: the trip count of loop `d`,
- `iterators[d]`: "parallel" or "reduction",
- `maps[i]`: the affine map from loops to operand `i`'s indices (inputs first,
  then outputs; a scalar input has a map with no results),
- `payload`: the block computing one element; its arguments are the input
  elements then the output (accumulator) elements, it ends in `linalg.yield`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    ArrayAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ShapedType,
    TensorType,
    i64,
)
from xdsl.dialects.linalg import abstract_ops
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap

from tilefuse.ir.affine import last_index, window_terms
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.dynamic import planned

PARALLEL = "parallel"
REDUCTION = "reduction"


@dataclass(frozen=True)
class StructuredOp:
    """A linalg op seen as a perfectly nested loop over a scalar payload."""

    op: Operation
    inputs: tuple[SSAValue, ...]
    outputs: tuple[SSAValue, ...]
    maps: tuple[AffineMap, ...]
    iterators: tuple[str, ...]
    payload: Block
    loop_ranges: tuple[int, ...]

    @property
    def num_loops(self) -> int:
        return len(self.iterators)

    @property
    def dynamic_loops(self) -> tuple[int, ...]:
        """Loops whose trip count is a dynamic size (`loop_ranges` holds `DYNAMIC_INDEX`, a negative marker)."""
        return tuple(d for d, r in enumerate(self.loop_ranges) if r == DYNAMIC_INDEX)

    @property
    def planned_ranges(self) -> tuple[int, ...]:
        """`loop_ranges` with a dynamic trip count at its planning size (prices only:
        `ir.dynamic.planning_size`)."""
        return planned(self.loop_ranges, self.op)

    @property
    def operands(self) -> tuple[SSAValue, ...]:
        return self.inputs + self.outputs

    @property
    def input_maps(self) -> tuple[AffineMap, ...]:
        return self.maps[: len(self.inputs)]

    @property
    def output_maps(self) -> tuple[AffineMap, ...]:
        return self.maps[len(self.inputs) :]

    @property
    def reduction_dims(self) -> tuple[int, ...]:
        return tuple(d for d, it in enumerate(self.iterators) if it == REDUCTION)

    @property
    def parallel_dims(self) -> tuple[int, ...]:
        return tuple(d for d, it in enumerate(self.iterators) if it == PARALLEL)

    def operand_dims(self, index: int) -> tuple[int, ...]:
        """The loop dim read by each index of operand `index` (projected maps;
        `passes/fold_windows.py` views windowed reads before anything asks)."""
        try:
            return map_dims(self.maps[index])
        except ValueError as e:
            raise CompileError.at(self.op, f"reads an operand through a window ({e}); "
                                           "fold-windows views it first") from e  # fmt: skip


def map_dims(amap: AffineMap) -> tuple[int, ...]:
    """Loop dims of a projected-permutation map's results, in result order."""
    dims = []
    for expr in amap.results:
        if not isinstance(expr, AffineDimExpr) or expr.position in dims:
            raise ValueError(f"indexing map {amap} is not a projected permutation")
        dims.append(expr.position)
    return tuple(dims)


def _window(op: Operation, amap: AffineMap, error: ValueError, is_input: bool):
    """The terms of an input map that reads a window (`oh + kh`: a convolution);
    a located error for any other map that is not a projected permutation."""
    try:
        if not is_input:
            raise error
        return [window_terms(r) for r in amap.results]
    except ValueError as e:
        raise CompileError.at(op, f"has an unsupported {error}") from e


def _check_windows(op: Operation, windows: list, ranges: list[int]) -> None:
    """Every index a window reads is inside its operand (checked at run time, by
    the evaluator, where a size is dynamic)."""
    if any(r < 0 for r in ranges):
        return
    for value, terms in windows:
        for d, t in enumerate(terms):
            last = last_index(t, ranges)
            if 0 <= shape_of(value)[d] <= last:
                raise CompileError.at(op, f"reads index {last} of dim {d} of an operand of "
                                          f"type {value.type}")  # fmt: skip


def is_window_map(amap: AffineMap) -> bool:
    """Does the map read through sums of dims or a dim twice (a window: a
    convolution's input, a diagonal), not a projection?"""
    try:
        map_dims(amap)
    except ValueError:
        return True
    return False


def shape_of(value: SSAValue) -> tuple[int, ...]:
    """Shape of a tensor value (`DYNAMIC_INDEX`, negative, for a dynamic size); () for a scalar."""
    t = value.type
    if isinstance(t, ShapedType):
        return tuple(t.get_shape())
    return ()


def planned_shape(value: SSAValue) -> tuple[int, ...]:
    """`shape_of(value)` with each dynamic size at its planning size (prices only)."""
    shape = shape_of(value)
    if DYNAMIC_INDEX not in shape:
        return shape
    owner = value.owner if isinstance(value.owner, Operation) else value.owner.parent_op()
    return planned(shape, owner) if owner is not None else shape


def element_type(t: Attribute) -> Attribute:
    """Element type of a tensor type; the type itself for a scalar."""
    return t.get_element_type() if isinstance(t, TensorType) else t


def as_structured(op: Operation) -> StructuredOp | None:
    """The structured view of a linalg op; None for any other op."""
    if isinstance(op, linalg.ReduceOp):
        return _reduce(op)
    if isinstance(op, linalg.BroadcastOp):
        return _broadcast(op)
    if not isinstance(op, abstract_ops.LinalgStructuredOperation):
        return None
    block = op.body.block
    maps = tuple(m.data for m in op.get_indexing_maps())
    iterators = tuple(str(it.data) for it in op.get_iterator_types())
    return _build(op, tuple(op.inputs), tuple(op.outputs), maps, iterators, block)


def _reduce(op: linalg.ReduceOp) -> StructuredOp:
    rank = len(shape_of(op.input))
    reduced = set(op.dimensions.get_values())
    kept = [d for d in range(rank) if d not in reduced]
    maps = (AffineMap.identity(rank), _projection(rank, kept))
    iterators = tuple(REDUCTION if d in reduced else PARALLEL for d in range(rank))
    return _build(op, (op.input,), (op.init,), maps, iterators, op.region.block)


def _broadcast(op: linalg.BroadcastOp) -> StructuredOp:
    rank = len(shape_of(op.init))
    added = set(op.dimensions.get_values())
    kept = [d for d in range(rank) if d not in added]
    maps = (_projection(rank, kept), AffineMap.identity(rank))
    return _build(
        op, (op.input,), (op.init,), maps, (PARALLEL,) * rank, op.hidden_region.block
    )


def _projection(rank: int, dims: Sequence[int]) -> AffineMap:
    return AffineMap(rank, 0, tuple(AffineDimExpr(d) for d in dims))


def _build(
    op: Operation,
    inputs: tuple[SSAValue, ...],
    outputs: tuple[SSAValue, ...],
    maps: tuple[AffineMap, ...],
    iterators: tuple[str, ...],
    payload: Block,
) -> StructuredOp:
    ranges: list[int | None] = [None] * len(iterators)
    windows = []
    for i, (value, amap) in enumerate(zip(inputs + outputs, maps, strict=True)):
        if len(shape_of(value)) != len(amap.results):
            raise CompileError.at(op, f"reads operand #{i} of type {value.type} through {amap}")
        try:
            dims = map_dims(amap)
        except ValueError as e:
            windows.append((value, _window(op, amap, e, i < len(inputs))))
            # a window's plain-dim results (a convolution's n and c) bound their loops
            dims = tuple(r.position if isinstance(r, AffineDimExpr) else None for r in amap.results)
        for size, d in zip(shape_of(value), dims, strict=True):
            if d is not None:
                ranges[d] = _loop_size(op, d, ranges[d], size)
    for amap in maps[len(inputs) :]:
        if any(iterators[d] == REDUCTION for d in map_dims(amap)):
            raise CompileError.at(op, "indexes an output with a reduction loop")
    if any(r is None for r in ranges):
        raise CompileError.at(op, "has a loop that no operand's shape bounds")
    _check_windows(op, windows, [r or 0 for r in ranges])
    return StructuredOp(
        op, inputs, outputs, maps, iterators, payload, tuple(r or 0 for r in ranges)
    )


def _loop_size(op: Operation, d: int, known: int | None, size: int) -> int:
    """Loop `d`'s size once an operand says `size` of it: a static size says more
    than a dynamic one (`DYNAMIC_INDEX`); two static ones must agree."""
    if known is None or known == DYNAMIC_INDEX:
        return size
    if size != DYNAMIC_INDEX and size != known:
        raise CompileError.at(op, f"gives loop d{d} two sizes ({known} and {size})")
    return known


IDENTITY = {
    arith.AddfOp: 0.0, arith.MulfOp: 1.0, arith.MaximumfOp: float("-inf"),
    arith.MinimumfOp: float("inf"), arith.MaxnumfOp: float("-inf"),
    arith.MinnumfOp: float("inf"), arith.AddiOp: 0, arith.MaxSIOp: float("-inf"),
    arith.MinSIOp: float("inf"), arith.AndIOp: -1, arith.OrIOp: 0, arith.XOrIOp: 0,
}  # fmt: skip
"""Reduction combiners and their identities (an infinity in an integer type is
that type's smallest or largest signed value, -1 all ones, true for an i1: see
`constant_of`): the compiler's one table of them (`combiner_at` matches them, and
`arg_reduction` the value + index pairs built on the max/min ones). The oracle
keeps its own on purpose."""


CMPF_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt",
                   "uge", "ult", "ule", "une", "uno", "true")  # fmt: skip


def cmpf_predicate(op: arith.CmpfOp) -> str:
    """The name of an `arith.cmpf`'s predicate (`oeq`, `ult`, ...)."""
    return CMPF_PREDICATES[op.predicate.value.data]


def constant_of(value: float, t: Attribute) -> arith.ConstantOp:
    """An `arith.constant` of `value` in the scalar type `t` (integers too; -inf
    and inf are an integer type's smallest and largest signed values)."""
    if isinstance(t, IntegerType | IndexType):
        if math.isinf(value):
            bits = t.width.data if isinstance(t, IntegerType) else 64
            value = -(2 ** (bits - 1)) if value < 0 else 2 ** (bits - 1) - 1
        return arith.ConstantOp(IntegerAttr(int(value), t))
    return arith.ConstantOp(FloatAttr(value, t))


def combiner_at(acc: SSAValue, value: SSAValue) -> tuple[Operation, SSAValue] | None:
    """`value = acc <op> x` with `op` a combiner of IDENTITY -> (the op, x), or None."""
    op = value.owner
    if not isinstance(op, Operation) or type(op) not in IDENTITY or acc not in op.operands:
        return None
    return op, op.operands[1] if op.operands[0] is acc else op.operands[0]


ARG_PREDICATES = {
    arith.MaximumfOp: ("ogt", "olt"), arith.MinimumfOp: ("olt", "ogt"),
    arith.MaxSIOp: ("sgt", "slt"), arith.MinSIOp: ("slt", "sgt"),
}  # fmt: skip
"""The comparisons `x <p> acc` (and `acc <p'> x`, its mirror) that make a max/min
combiner's position the first position of the extremum: strict, and for floats
ordered (false on NaN), as torch-mlir spells `max(dim)`, `argmax` and `argmin`."""

CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


@dataclass(frozen=True)
class ArgReduction:
    """A max/min reduction and the position where it was first reached.

    ```mlir
    ^bb0(%x: f32, %acc: f32, %acc_i: i64):
      %j = linalg.index 1 : index            // the one reduction loop
      %p = arith.index_cast %j : index to i64
      %v = arith.maximumf %x, %acc : f32     // `combiner`, outputs[value]
      %c = arith.cmpf ogt, %x, %acc : f32    // `compare`
      %i = arith.select %c, %p, %acc_i : i64 // `select`, outputs[index]
      linalg.yield %v, %i : f32, i64
    ```

    Sequentially (the IR's meaning): the position moves only where `x` is strictly
    past the running extremum, so ties keep the first position; once a NaN has
    been combined (maximumf/minimumf propagate it) every later comparison is
    false, so the position is that of the extremum *before the first NaN*
    (torch's argmax returns the NaN's own position instead: torch-mlir's IR
    differs from torch there, and the IR is the program)."""

    value: int
    """The output holding the extremum."""
    index: int
    """The output holding its position."""
    combiner: Operation
    compare: Operation
    select: Operation
    x: SSAValue
    """The value compared and combined (the same SSA value in both)."""
    position: SSAValue
    """The selected position: `linalg.index` of `dim`, cast or offset by values
    from outside the payload (a tile's offset): increasing along `dim`."""
    dim: int

    @property
    def is_max(self) -> bool:
        return isinstance(self.combiner, arith.MaximumfOp | arith.MaxSIOp)


def _predicate(op: Operation) -> str | None:
    if isinstance(op, arith.CmpfOp):
        return cmpf_predicate(op)
    if isinstance(op, arith.CmpiOp):
        return CMPI_PREDICATES[op.predicate.value.data]
    return None


def _in_block(v: SSAValue, block: Block) -> bool:
    owner = v.owner
    return owner is block or (isinstance(owner, Operation) and owner.parent_block() is block)


def _position_dim(v: SSAValue, block: Block) -> int | None:
    """The loop `v` counts along, if `v` is `linalg.index d` cast or offset by
    values defined outside `block`; else None."""
    while isinstance(op := v.owner, Operation) and op.parent_block() is block:
        if isinstance(op, linalg.IndexOp):
            return op.dim.value.data
        inside = [o for o in op.operands if _in_block(o, block)]
        if not isinstance(op, arith.IndexCastOp | arith.AddiOp) or len(inside) != 1:
            return None
        v = inside[0]
    return None


def arg_reduction(
    payload: Block, num_inputs: int, reduction_dims: Sequence[int]
) -> ArgReduction | None:
    """The value + position pair of a reduction payload (see `ArgReduction`), or
    None: two outputs, one yielding `acc <max/min> x` (`combiner_at`), the other
    `select(x <strict> acc, position, acc_i)`, the accumulators read nowhere
    else, over one reduction loop that the position counts along."""
    yield_op = payload.last_op
    if yield_op is None or len(reduction_dims) != 1:
        return None
    accs = payload.args[num_inputs:]
    for i, y in enumerate(yield_op.operands):
        sel = y.owner
        if not isinstance(sel, arith.SelectOp) or sel.rhs is not accs[i]:
            continue
        for v, acc in enumerate(accs):
            found = None if v == i else combiner_at(acc, yield_op.operands[v])
            if found is None or type(found[0]) not in ARG_PREDICATES:
                continue
            comb, x = found
            cmp = sel.cond.owner
            pred = _predicate(cmp) if isinstance(cmp, Operation) else None
            strict, mirrored = ARG_PREDICATES[type(comb)]
            if not ((pred == strict and tuple(cmp.operands) == (x, acc))
                    or (pred == mirrored and tuple(cmp.operands) == (acc, x))):  # fmt: skip
                continue
            if {u.operation for u in acc.uses} != {comb, cmp} or len(list(accs[i].uses)) != 1:
                continue
            if _position_dim(sel.lhs, payload) != reduction_dims[0]:
                continue
            return ArgReduction(v, i, comb, cmp, sel, x, sel.lhs, reduction_dims[0])
    return None


def arg_reduction_of(s: StructuredOp) -> ArgReduction | None:
    """`arg_reduction` of a structured op's payload."""
    return arg_reduction(s.payload, len(s.inputs), s.reduction_dims)


def reduction_combiner(s: StructuredOp) -> type | None:
    """The combiner of a one-output reduction whose payload ends in `acc <op> x`
    with the accumulator read nowhere else (sum, product, max, min), or None."""
    if len(s.outputs) != 1 or not s.reduction_dims or s.payload.last_op is None:
        return None
    acc = s.payload.args[-1]
    found = combiner_at(acc, s.payload.last_op.operands[0])
    if found is None or len(list(acc.uses)) != 1:
        return None
    return type(found[0])


def sized_empty(t: TensorType, sizes: Sequence[tuple[SSAValue, int]] = ()) -> list[Operation]:
    """A `tensor.empty` of type `t`, each dynamic size read (`tensor.dim`) from the
    (tensor, axis) of `sizes`, one per dynamic dim in order: the ops, the empty last."""
    dynamic = [d for d, n in enumerate(t.get_shape()) if n < 0]
    if len(sizes) != len(dynamic):
        raise CompileError(f"internal: a {t} made without its {len(dynamic)} dynamic size(s)")
    ops: list[Operation] = []
    values = []
    for value, axis in sizes:
        made, size = dim_of(value, axis)
        ops += made
        values.append(size)
    return [*ops, tensor.EmptyOp(values, t)]


def like(t: TensorType, value: SSAValue) -> list[tuple[SSAValue, int]]:
    """The `sizes` of `sized_empty` for a `t` shaped as `value`: its dynamic dims'."""
    return [(value, d) for d, n in enumerate(t.get_shape()) if n < 0]


def _dynamic_position(t: TensorType, axis: int) -> int:
    """Among `t`'s dynamic dims, the place of `axis` (a dynamic one)."""
    return sum(1 for n in t.get_shape()[:axis] if n == DYNAMIC_INDEX)


def made_size(value: SSAValue, axis: int) -> SSAValue | tuple[SSAValue, int] | None:
    """The size of dynamic dim `axis` of `value` as it was made: a size value, or
    (a tensor, its axis) to read it from instead; None where nothing says more (a
    static axis too: its size is its type's)."""
    op = value.owner
    if not isinstance(op, Operation):
        return None
    shape = value.type.get_shape() if isinstance(value.type, TensorType) else ()
    if axis >= len(shape) or shape[axis] != DYNAMIC_INDEX:
        return None
    if isinstance(op, tensor.EmptyOp):
        return op.dynamic_sizes[_dynamic_position(op.tensor.type, axis)]  # pyright: ignore
    if op.name.startswith("linalg.") and hasattr(op, "outputs"):  # a result has its init's shape
        return op.outputs[list(op.results).index(value)], axis  # pyright: ignore[reportAttributeAccessIssue]
    if isinstance(op, tensor.ExpandShapeOp):
        return op.dynamic_output_shape[_dynamic_position(op.result.type, axis)]  # pyright: ignore
    if isinstance(op, tensor.CollapseShapeOp):
        group = [d.value.data for d in op.reassociation.data[axis].data]  # pyright: ignore
        source = op.src.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
        dynamic = [d for d in group if source[d] == DYNAMIC_INDEX]
        if len(dynamic) == 1 and all(source[d] == 1 for d in group if d != dynamic[0]):
            return op.src, dynamic[0]
        return None
    if isinstance(op, tensor.ExtractSliceOp):
        rank_kept = len(op.result.type.get_shape()) == len(op.source.type.get_shape())  # pyright: ignore
        dims = slice_dims(op) if rank_kept else None
        if dims is None:
            return None
        s = dims[axis]
        return (op.source, axis) if s.whole else s.size if isinstance(s.size, SSAValue) else None
    return None


def resolved_size(value: SSAValue, axis: int) -> SSAValue | tuple[SSAValue, int]:
    """`made_size` followed to its end: the earliest size or (tensor, axis) known."""
    at: SSAValue | tuple[SSAValue, int] = (value, axis)
    for _ in range(256):  # (a chain of views and ops; never a cycle in SSA)
        if not isinstance(at, tuple):
            read = at.owner
            index = read.index.owner if isinstance(read, tensor.DimOp) else None
            if not isinstance(index, arith.ConstantOp):
                return at
            at = (read.source, index.value.value.data)  # pyright: ignore  # a read size: whose?
        step = made_size(*at)
        if step is None:
            return at
        at = step
    return at


def made_value(value: SSAValue, axis: int) -> SSAValue | None:
    """The first size value on `resolved_size`'s chain from (`value`, `axis`): the
    operand a `tensor.empty` or `expand_shape` was given; None if it meets none."""
    at: SSAValue | tuple[SSAValue, int] = (value, axis)
    for _ in range(256):
        if not isinstance(at, tuple):
            return at
        step = made_size(*at)
        if step is None:
            return None
        at = step
    return None


@dataclass(frozen=True)
class SliceDim:
    """One dim of a `tensor.extract_slice`: its offset and size (a number, or the
    index value giving it: the host computes it), and its static stride; `whole`:
    a dynamic size that is its source's whole dim (offset 0, stride 1, the size
    `tensor.dim` of the source or the value both were made with)."""

    offset: int | SSAValue
    size: int | SSAValue
    stride: int
    whole: bool = False


def slice_dims(op: tensor.ExtractSliceOp) -> list[SliceDim] | None:
    """`op`'s dims (`SliceDim`); None if it has a dynamic stride."""
    if op.strides:
        return None
    offsets, sizes = iter(op.offsets), iter(op.sizes)
    dims = []
    for d, (o, n, st) in enumerate(zip(op.static_offsets.get_values(), op.static_sizes.get_values(),
                                       op.static_strides.get_values(), strict=True)):  # fmt: skip
        offset = next(offsets) if o == DYNAMIC_INDEX else o
        size = next(sizes) if n == DYNAMIC_INDEX else n
        whole = isinstance(size, SSAValue) and offset == 0 and st == 1 and _same_size(size, op.source, d)
        dims.append(SliceDim(offset, size, st, whole))
    return dims


SIZE_ARITH = {arith.AddiOp: "+", arith.SubiOp: "-", arith.MuliOp: "*", arith.DivUIOp: "//"}
"""Index arithmetic on sizes, as the host (Python ints) and a kernel's entry (its size
parameters) compute it: the operator each prints."""


def host_index(v: SSAValue) -> bool:
    """Can the host compute index value `v` before any kernel runs: a constant, a
    `tensor.dim` (constant index) of a function argument, `SIZE_ARITH` of such?"""
    op = v.owner
    if isinstance(op, arith.ConstantOp):
        return True
    if isinstance(op, tensor.DimOp):
        return isinstance(op.index.owner, arith.ConstantOp) and isinstance(op.source, BlockArgument)
    return type(op) in SIZE_ARITH and all(host_index(o) for o in op.operands)  # pyright: ignore


def _same_size(size: SSAValue, value: SSAValue, axis: int) -> bool:
    """Is `size` the size of `value` along `axis` (read, or as both were made)?"""
    return _size_of(size) == resolved_size(value, axis)


def _size_of(size: SSAValue) -> SSAValue | tuple[SSAValue, int]:
    """A size value as `resolved_size` names it (a `tensor.dim` read: whose it is)."""
    owner = size.owner
    index = owner.index.owner if isinstance(owner, tensor.DimOp) else None
    if isinstance(index, arith.ConstantOp):
        return resolved_size(owner.source, index.value.value.data)  # pyright: ignore
    return size


def dim_of(value: SSAValue, axis: int) -> tuple[list[Operation], SSAValue]:
    """`tensor.dim` of `value` along `axis`: the ops (index constant, dim) and the size."""
    index = arith.ConstantOp(IntegerAttr(axis, IndexType()))
    dim = tensor.DimOp(value, index)
    return [index, dim], dim.result


def scaled_size(size: SSAValue, factor: int, divide: bool) -> tuple[list[Operation], SSAValue]:
    """`size` times (or over) a static `factor`: a reshape group's static sizes."""
    if factor == 1:
        return [], size
    c = arith.ConstantOp(IntegerAttr(factor, IndexType()))
    op = arith.DivUIOp(size, c.result) if divide else arith.MuliOp(size, c.result)
    return [c, op], op.result


def expand_sizes(src: SSAValue, groups: Sequence[Sequence[int]],
                 shape: Sequence[int]) -> tuple[list[Operation], list[SSAValue]]:  # fmt: skip
    """The `output_shape` operands of an expand_shape of `src` into `shape`: a group
    with one dynamic dim takes `src`'s size over the group's static product (a
    located refusal for two dynamic dims in one group)."""
    ops: list[Operation] = []
    values = []
    for g, dims in enumerate(groups):
        dynamic = [d for d in dims if shape[d] < 0]
        if not dynamic:
            continue
        if len(dynamic) > 1:
            raise CompileError(f"expands a dim into {len(dynamic)} dynamic sizes (not built)")
        made, size = dim_of(src, g)
        scale, size = scaled_size(size, math.prod(shape[d] for d in dims if shape[d] >= 0), True)
        ops += [*made, *scale]
        values.append(size)
    return ops, values


def filled(t: TensorType, value: float,
           sizes: Sequence[tuple[SSAValue, int]] = ()) -> tuple[SSAValue, list[Operation]]:  # fmt: skip
    """`t` filled with the scalar `value`, as the generic `linalg.fill` becomes:
    the tensor and the ops making it (constant, empty, generic); `sizes` as
    `sized_empty`'s."""
    et = t.get_element_type()
    const = constant_of(value, et)
    *dims, empty = sized_empty(t, sizes)
    assert isinstance(empty, tensor.EmptyOp)
    rank = len(t.get_shape())
    block = Block(arg_types=[et, et])
    block.add_op(linalg.YieldOp(block.args[0]))
    fill = linalg.GenericOp(
        [const.result], [empty.tensor], Region(block),
        [AffineMapAttr(AffineMap(rank, 0, ())), AffineMapAttr(AffineMap.identity(rank))],
        [IteratorTypeAttr(IteratorType.PARALLEL)] * rank, [t],
    )  # fmt: skip
    return fill.results[0], [const, *dims, empty, fill]


def with_inputs(
    op: linalg.GenericOp, inputs: Sequence[SSAValue], maps: Sequence[AffineMap], body: Region,
    iterators: ArrayAttr | None = None,
) -> linalg.GenericOp:
    """`op` rebuilt to read other inputs (`maps`: theirs, then the outputs'),
    with `body` (block arguments to match); its outputs, location and (unless
    `iterators` replaces them) iterators kept. The caller puts it in `op`'s place."""
    new = linalg.GenericOp(list(inputs), list(op.outputs), body, [AffineMapAttr(m) for m in maps],
                           op.iterator_types if iterators is None else iterators,
                           [r.type for r in op.results])  # fmt: skip
    new.location = op.location
    return new


def reassociation(groups: Sequence[Sequence[int]]) -> ArrayAttr:
    """The `reassociation` of an expand/collapse_shape: the source dims of each group."""
    return ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])


def collapse_groups(fine: Sequence[int], coarse: Sequence[int]) -> list[list[int]] | None:
    """The reassociation of a collapse of static shape `fine` into `coarse`: runs of
    `fine`'s dims whose products are `coarse`'s sizes in order (unit dims join the run
    after them; trailing ones the last run), or None if there is none."""
    groups: list[list[int]] = []
    j = 0
    for n in coarse:
        group, product = [], 1
        while j < len(fine) and (not group or product < n):
            group.append(j)
            product *= fine[j]
            j += 1
        if not group or product != n:
            return None  # (a coarse dim left when the fine ones are used up: no collapse)
        groups.append(group)
    if any(fine[d] != 1 for d in range(j, len(fine))):
        return None
    groups[-1] += range(j, len(fine))
    return groups
