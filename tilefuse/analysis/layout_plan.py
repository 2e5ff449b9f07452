"""
Physical layouts of the tensors kernels hand each other.

A tensor that one kernel writes and others read is the compiler's own: only its
shape is fixed, not the order of its dims in memory. Kernels take strides, so any
order is correct; the order decides how fast they read it. A convolution reads its
input through a window (`tilefuse.window`): along the windowed dims (rows, columns)
consecutive taps start one element apart, so with those dims innermost (NCHW) a
tile's vectors start at odd addresses and its loads are per element; with the
channels innermost (NHWC) a tap moves the tile by whole channel rows and every
load is 16-byte vectors (the ResNet-50 bottleneck's 3x3 convolution: 372 -> 127 us,
`tools/experiments/conv_layout.py`).

`plan_layouts` picks, for each group result that only windows (or a `tensor.pad`
then windows) read, the order with the consumers' reduction dim innermost, where:
- every window reads that source dim as one plain view dim (`c`, not `oh + kh`),
  which every consuming contraction reduces over, and some other source dim is
  windowed;
- the dim is not innermost already;
- the producing kernel writes tiles at least 8 elements long along it (its stores
  stay vectors) and is no bundle of several grids (a stacked bundle's members share
  strides);
- no result of the function is the tensor (a caller gets row-major tensors).

A result other kernels read across its rows (`_across_layout`: every reader, through
views that keep the dim whole, spans at least `MIN_STORE_RUN` along a dim and fewer
along the innermost one, a tile load or a gather whose index follows a loop) is stored
with that dim innermost, where the producer writes runs of at least as many along it:
ViT's NCHW patch embedding read by a LayerNorm over its channels, one token a program.

A function argument is the caller's, in the caller's layout; where a kernel would
load it per element, the host copies it first (`plan_input_layouts`): a 3x3
convolution's filter `[F, C, KH, KW]` is read in `[F, C]` tiles, one tap at a
time, so its innermost dim is tiled by 1 and C sits at stride 9. Copied with the
reduced dim of the largest tile (C) innermost, each tile row is one 16-byte vector
run. Only small arguments (at most `MAX_COPIED_BYTES`: filters, not activations)
read by contractions whose every load tiles the innermost dim by fewer than
`MIN_STORE_RUN` elements and that dim by at least as many.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import BlockArgument, SSAValue
from xdsl.ir.affine import AffineDimExpr

from tilefuse.ir.dtypes import dtype_bytes
from tilefuse.ir.structured import as_structured
from tilefuse.ir.tilefuse import GroupOp, LoadOp, Merge, StoreOp, WindowOp

MIN_STORE_RUN = 8
"""Elements a producer's tile must write contiguously along the new innermost dim."""

MAX_COPIED_BYTES = 16 << 20
"""The largest argument the host copies into another layout per call."""


@dataclass(frozen=True)
class Layout:
    """Group `group`'s result `result` is stored in `order` (outermost dim first)."""

    group: str
    result: int
    order: tuple[int, ...]
    reason: str


def plan_layouts(f: func.FuncOp) -> list[Layout]:
    """The non-row-major layouts of `f`'s tensors between kernels."""
    return [layout for g in _single_grid_groups(f) for i, r in enumerate(g.results)
            if (layout := _layout_of(g, i, r)) is not None]  # fmt: skip


def _single_grid_groups(f: func.FuncOp) -> list[GroupOp]:
    """`f`'s groups of one tile grid (a stacked bundle's members share strides)."""
    return [g for g in f.body.block.ops if isinstance(g, GroupOp) and len(g.grids) == 1]


@dataclass(frozen=True)
class InputLayout:
    """Group `group`'s input `input` (a function argument) is copied into `order`."""

    group: str
    input: int
    order: tuple[int, ...]
    reason: str


def plan_input_layouts(f: func.FuncOp) -> list[InputLayout]:
    """The function arguments the host copies into another dim order for a kernel."""
    return [layout for g in _single_grid_groups(f) for i, v in enumerate(g.inputs)
            if (layout := _input_layout_of(g, i, v)) is not None]  # fmt: skip


def _input_layout_of(g: GroupOp, i: int, v: SSAValue) -> InputLayout | None:
    shape = v.type.get_shape()  # type: ignore[attr-defined]
    rank = len(shape)
    if not isinstance(v, BlockArgument) or rank < 3 or any(d < 0 for d in shape):
        return None
    if math.prod(shape) * dtype_bytes(v.type) > MAX_COPIED_BYTES:
        return None
    arg = g.entry.args[i]
    loads = [u.operation for u in arg.uses]
    if not loads or not all(isinstance(o, LoadOp) for o in loads):
        return None
    plain, reduced = _intersection(_reduced_dims_of_loads(arg))
    merge = g.input_merge(i)
    tiles = [_host_tile(o.result.type.get_shape(), merge, rank) for o in loads]  # type: ignore[attr-defined]
    if not plain or not reduced or any(t[-1] >= MIN_STORE_RUN for t in tiles):
        return None
    c = max(reduced, key=lambda d: min(t[d] for t in tiles))
    run = min(t[c] for t in tiles)
    if run < MIN_STORE_RUN or all(shape[d] == 1 for d in range(c + 1, rank)):
        return None  # (innermost already, or as good: only unit dims after it)
    order = (*(d for d in range(rank) if d != c), c)
    return InputLayout(g.sym_name.data, i, order,
                       f"dim {c} innermost: {g.sym_name.data} reduces over it in tiles of {run}, "
                       f"its innermost dim in tiles of {min(t[-1] for t in tiles)}")  # fmt: skip


def _windows(v: SSAValue) -> list[WindowOp] | None:
    """The windows reading `v` (directly or through one pad), or None if anything
    else reads it."""
    found = []
    for use in v.uses:
        op = use.operation
        if isinstance(op, WindowOp):
            found.append(op)
        elif isinstance(op, tensor.PadOp) and (inner := _windows(op.result)) is not None:
            found += inner
        else:
            return None
    return found


def _reduced_view_dims(w: WindowOp) -> set[int] | None:
    """The view dims of `w` that every contraction reading it reduces over; None
    if a reader is not a group's contraction reading a plain projection of it."""
    uses = list(w.result.uses)
    if not all(isinstance(u.operation, GroupOp) for u in uses):
        return None
    plain, reduced = _intersection(dims for u in uses
                                   for dims in _reduced_dims_of_loads(u.operation.entry.args[u.index]))  # type: ignore[attr-defined]  # fmt: skip
    return reduced if plain else None


def _intersection(sets: Iterable[set[int] | None]) -> tuple[bool, set[int] | None]:
    """Whether every set is one (no None), and their intersection (None: no sets)."""
    common: set[int] | None = None
    for dims in sets:
        if dims is None:
            return False, None
        common = dims if common is None else common & dims
    return True, common


def _host_tile(tile: Sequence[int], merge: Merge | None, rank: int) -> tuple[int, ...]:
    """A tile of a merged block argument as extents along the host tensor's dims:
    a dim merged with others is loaded element by element (its index is divided
    out of the merged one), so 1; a dim seen as it is, the tile's extent."""
    if merge is None:
        return tuple(tile)
    host = [1] * rank
    for extent, dims in zip(tile, merge, strict=True):
        if len(dims) == 1:
            host[dims[0]] = extent
    return tuple(host)


def _reduced_dims_of_loads(arg: BlockArgument):
    """Per generic reading a tile of `arg`: the dims of the host tensor it reduces
    over (None where the tile is not read through plain dims)."""
    group = arg.block.parent_op()
    merge = group.input_merge(arg.index) if isinstance(group, GroupOp) else None
    for dims in _reduced_tile_dims(arg):
        yield dims if dims is None or merge is None else {merge[d][0] for d in dims if len(merge[d]) == 1}


def _reduced_tile_dims(arg: BlockArgument):
    """Per generic reading a tile of `arg`: the tile dims it reduces over (None
    where the tile is not read through plain dims)."""
    for load_use in list(arg.uses):
        load = load_use.operation
        if not isinstance(load, LoadOp):
            yield None
            continue
        for use in load.result.uses:
            op = use.operation
            if not isinstance(op, linalg.GenericOp) or use.index >= len(op.inputs):
                yield None
                continue
            amap = op.indexing_maps.data[use.index].data
            kinds = [t.data.value for t in op.iterator_types.data]
            if not all(isinstance(e, AffineDimExpr) for e in amap.results):
                yield None
                continue
            yield {k for k, e in enumerate(amap.results)
                   if isinstance(e, AffineDimExpr) and kinds[e.position] == "reduction"}  # fmt: skip


def _channel(windows: list[WindowOp]) -> int | None:
    """The source dim every window reads as one reduced view dim, with some other
    source dim windowed; None if there is none or several."""
    found: set[int] | None = None
    windowed = False
    for w in windows:
        reduced = _reduced_view_dims(w)
        if reduced is None:
            return None
        plain = set()
        for s, (coeffs, const) in enumerate(w.terms()):
            windowed |= len(coeffs) > 1
            if len(coeffs) == 1 and const == 0 and set(coeffs.values()) == {1} and next(iter(coeffs)) in reduced:
                plain.add(s)
        found = plain if found is None else found & plain
    if not windowed or found is None or len(found) != 1:
        return None
    return next(iter(found))


def _store_runs(g: GroupOp, i: int, dim: int) -> int | None:
    """The shortest tile extent along `dim` of the stores writing result `i`."""
    dest = g.destination(i)
    if dest is None:
        return None
    rank = len(g.results[i].type.get_shape())  # type: ignore[attr-defined]
    runs = [_host_tile(u.operation.value.type.get_shape(), g.result_merge(i), rank)[dim]
            for u in dest.uses if isinstance(u.operation, StoreOp)]  # fmt: skip
    return min(runs) if runs else None


def _layout_of(g: GroupOp, i: int, r: SSAValue) -> Layout | None:
    return _window_layout(g, i, r) or _across_layout(g, i, r)


def _window_layout(g: GroupOp, i: int, r: SSAValue) -> Layout | None:
    rank = len(r.type.get_shape())  # type: ignore[attr-defined]
    windows = _windows(r)
    if not windows or any(isinstance(u.operation, func.ReturnOp) for u in r.uses):
        return None
    c = _channel(windows)
    if c is None or c == rank - 1:
        return None
    extent = r.type.get_shape()[c]  # type: ignore[attr-defined]
    run = _store_runs(g, i, c)
    if run is None or run < min(MIN_STORE_RUN, extent):
        return None
    order = (*(d for d in range(rank) if d != c), c)
    readers = sorted({u.operation.sym_name.data for w in windows for u in w.result.uses
                      if isinstance(u.operation, GroupOp)})  # fmt: skip
    return Layout(g.sym_name.data, i, order,
                  f"dim {c} innermost: the reduction dim of the window(s) {', '.join(readers)} "
                  f"read (their windowed dims are not), written in runs of {run}")  # fmt: skip



def _across_layout(g: GroupOp, i: int, r: SSAValue) -> Layout | None:
    """Dim `c` innermost where every kernel reading `r` (directly or through views that
    keep `c` a dim of its own) reads tiles or gathers at least `MIN_STORE_RUN` long along
    `c` and shorter along the innermost dim: an NCHW convolution's result read along
    the channels by a LayerNorm over tokens (ViT's `flatten(2).transpose(1, 2)`), each
    element a load of its own, 196 elements from the next, until stored channels-last."""
    shape = r.type.get_shape()  # type: ignore[attr-defined]
    rank = len(shape)
    if rank < 2 or any(n < 0 for n in shape):
        return None
    spans = _reader_spans(r, list(range(rank)), rank)
    if not spans or any(t[-1] >= MIN_STORE_RUN for t in spans):
        return None
    across = [d for d in range(rank - 1) if all(t[d] >= MIN_STORE_RUN for t in spans)]
    if not across:
        return None
    c = max(across, key=lambda d: min(t[d] for t in spans))
    run = _store_runs(g, i, c)
    if run is None or run < MIN_STORE_RUN:
        return None
    order = (*(d for d in range(rank) if d != c), c)
    return Layout(g.sym_name.data, i, order,
                  f"dim {c} innermost: its readers read it in runs of {min(t[c] for t in spans)}, "
                  f"the innermost dim in runs of {max(t[-1] for t in spans)}; written in runs of {run}")  # fmt: skip


def _reader_spans(v: SSAValue, dims: list[int | None], rank: int) -> list[tuple[int, ...]] | None:
    """Per reading of `v` by a kernel, the extent it spans along each dim of a result of
    rank `rank` (`dims[k]`: the result dim `v`'s dim k is, None where it is several);
    None where something else reads it (returned, a window, a tile of a merged input)."""
    spans: list[tuple[int, ...]] = []
    for use in v.uses:
        op = use.operation
        if isinstance(op, tensor.CollapseShapeOp | tensor.ExpandShapeOp):
            inner = _view_dims(op, dims)
            found = _reader_spans(op.result, inner, rank) if inner is not None else None
        elif isinstance(op, GroupOp) and op.input_merge(use.index) is None:
            found = [_on_result(t, dims, rank) for t in _arg_spans(op.entry.args[use.index])]
            found = None if any(t is None for t in found) else found
        else:
            return None
        if found is None:
            return None
        spans += found  # pyright: ignore[reportOperatorIssue]
    return spans


def _view_dims(op: tensor.CollapseShapeOp | tensor.ExpandShapeOp, dims: list[int | None]) -> list[int | None] | None:
    """The result dim each dim of view `op`'s result is (see `_reader_spans`)."""
    groups = [[i.value.data for i in g] for g in op.reassociation]  # pyright: ignore[reportAttributeAccessIssue]
    if isinstance(op, tensor.CollapseShapeOp):
        return [dims[g[0]] if len(g) == 1 else None for g in groups]
    out: list[int | None] = [None] * sum(len(g) for g in groups)
    for k, g in enumerate(groups):
        if len(g) == 1:
            out[g[0]] = dims[k]
    return out


def _on_result(span: tuple[int, ...] | None, dims: list[int | None], rank: int) -> tuple[int, ...] | None:
    if span is None:
        return None
    out = [1] * rank
    for extent, d in zip(span, dims, strict=True):
        if d is not None:
            out[d] = extent
        elif extent >= MIN_STORE_RUN:
            return None  # (a run along merged dims: left to the row-major order)
    return tuple(out)


def _arg_spans(arg: BlockArgument):
    """Per tile load or element gather of a group's input `arg`: its extent along each
    of the input's dims (a gather: the trip count of the loop its index follows)."""
    for use in arg.uses:
        op = use.operation
        if isinstance(op, LoadOp):
            yield tuple(op.result.type.get_shape())  # pyright: ignore[reportAttributeAccessIssue]
        elif isinstance(op, tensor.ExtractOp):
            yield _gather_span(op)
        else:
            yield None


def _gather_span(op: tensor.ExtractOp) -> tuple[int, ...] | None:
    generic = op.parent_op()
    s = as_structured(generic) if isinstance(generic, linalg.GenericOp) else None
    if s is None:
        return None
    return tuple(s.loop_ranges[loop] if (loop := _index_loop(i)) is not None else 1 for i in op.indices)


_INDEX_STEPS = (arith.AddiOp, arith.SubiOp, arith.MinSIOp, arith.MaxSIOp)


def _index_loop(v: SSAValue, depth: int = 8) -> int | None:
    """The loop an index follows one for one (`linalg.index`, plus or minus, clamped),
    or None."""
    op = v.owner
    if isinstance(op, linalg.IndexOp):
        return op.dim.value.data
    if depth == 0 or not isinstance(op, _INDEX_STEPS):
        return None
    loops = {_index_loop(o, depth - 1) for o in op.operands} - {None}
    return loops.pop() if len(loops) == 1 else None
