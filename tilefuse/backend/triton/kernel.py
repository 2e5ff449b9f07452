"""
The kernel printer: a group's tile grids as one `@triton.jit` kernel.

One handler per op of a tile program (`KernelPrinter.print_op` dispatches on the
op's type):

- `arith.constant`, index arithmetic: inlined into the expressions that use them;
- `tilefuse.load` / `tilefuse.store`: `tl.load` / `tl.store` with offsets from
  strides, and one mask over the dims whose tiles can be partial;
- `linalg.generic` (any structured op) on tiles: `generic.GenericPrinter`;
- `scf.for`: a Python `for` whose carried blocks are reassigned in place.

The text reads like a hand-written kernel: names come from the IR's name hints,
a value that is just another one gets no line of its own, an expression printed
twice is computed once (offsets, masks, payload arithmetic), values nothing reads
are left out. None of this changes what is computed.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from xdsl.dialects import arith, cf, scf, tensor
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue

from tilefuse.analysis.dataflow import tma_input
from tilefuse.analysis.dim_facts import size_origin
from tilefuse.backend.triton import library
from tilefuse.backend.triton.dot import dot_axes, dot_input_dtype, dot_precision
from tilefuse.backend.triton.dtypes import compute_type, kept_shape, tl_dtype
from tilefuse.backend.triton.generic import GenericPrinter, result_hint
from tilefuse.backend.triton.names import Names
from tilefuse.backend.triton.scalar import (
    BINARY,
    CONVERSIONS,
    UNARY,
    WIDE,
    block_constant,
    literal,
    scalar_expr,
)
from tilefuse.backend.triton.signature import (
    CHECKS_PARAM,
    CONSTEXPR,
    POINTER,
    SIZE,
    STRIDE,
    KernelSignature,
    Param,
)
from tilefuse.ir.diagnostics import CompileError, op_location
from tilefuse.ir.dtypes import dtype_bytes
from tilefuse.ir.structured import SIZE_ARITH, as_structured, element_type
from tilefuse.ir.tilefuse import (
    GRID,
    IN_BOUNDS_AXES,
    WHOLE,
    GroupOp,
    LoadOp,
    Merge,
    StoreOp,
    TileGridOp,
    grid_inputs,
    same_tile_program,
)

SCALAR_OPS = (arith.CmpiOp, arith.SelectOp, *CONVERSIONS)
"""Scalar ops of a tile program besides those of the BINARY and UNARY tables (the
conversions: a size as a float, a mean's divisor)."""

KERNEL_LOCALS = ("pid", "tile_id", "seg", "tile", "group", "first_m", "rows", CHECKS_PARAM)
"""Names the kernel's program-id arithmetic uses."""

INDEX, MASK = "tl.int64", "tl.int1"
"""The types offsets (index values) and masks (i1 values) are computed in."""

_IDENT = re.compile(r"[A-Za-z_]\w*")
_ASSIGN = re.compile(r"^(\s*)([A-Za-z_]\w*) = (.*)$")


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


class Emitter:
    """Lines of a kernel body, and what is known about the names they define.

    `value` prints a pure expression once per scope (a `for` body or a branch is a
    scope) and per type it is computed in (`dtypes.compute_type`: a text of
    literals alone reads the same for an f32 value and an f64 one, and two IR values
    of different types never share a name); assigning a name again (a loop-carried
    block) forgets every expression that mentions it.
    """

    def __init__(self, names: Names):
        self.names = names
        self.lines: list[str] = []
        self.indent = 1
        # (expression text, the type it is computed in) -> the name holding it
        self.scopes: list[dict[tuple[str, str], str]] = [{}]
        self.defined: set[str] = set()
        self.wheres: dict[str, tuple[str, str]] = {}  # name -> (mask, other) of its tl.where
        self.helpers: set[str] = set()
        self._last_value: str | None = None  # the name `value` defined on the last line

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)
        self.helpers.update(n for n in _IDENT.findall(line) if n in library.helpers())
        self._last_value = None

    def assign(self, name: str, text: str) -> str:
        if name in self.defined:
            self.forget(name)
        self.emit(f"{name} = {text}")
        self.defined.add(name)
        return name

    def value(self, hint: str, text: str, dtype: str) -> str:
        """A name holding the pure expression `text`, a block computed in `dtype`
        (printed once per scope and type)."""
        key = (text, dtype)
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        name = self.assign(self.names.fresh(hint), text)
        self.scopes[-1][key] = name
        self._last_value = name
        return name

    def forget(self, name: str) -> None:
        """`name` is about to be assigned again: no expression may stand for it."""
        for scope in self.scopes:
            for key, held in list(scope.items()):
                if held == name or _mentions(key[0], name):
                    del scope[key]
        for held, (mask, other) in list(self.wheres.items()):
            if name in (held, mask, other) or _mentions(mask, name):
                del self.wheres[held]

    def rename_last(self, old: str, new: str) -> bool:
        """Make the last line, if `value` just defined `old` there, define `new`."""
        if self._last_value != old:
            return False
        indent, _, rhs = _ASSIGN.match(self.lines[-1]).groups()  # type: ignore[union-attr]
        self.forget(new)
        for scope in self.scopes:
            for key, held in list(scope.items()):
                if held == old:
                    scope[key] = new
        if old in self.wheres and not _mentions(self.wheres[old][0], new):
            self.wheres[new] = self.wheres.pop(old)
        self.lines[-1] = f"{indent}{new} = {rhs}"
        self.defined.discard(old)
        self.defined.add(new)
        self._last_value = None
        return True

    def push(self) -> None:
        self.indent += 1
        self.scopes.append({})

    def pop(self) -> None:
        self.indent -= 1
        self.scopes.pop()


def without_dead_values(lines: list[str]) -> list[str]:
    """`lines` without assignments to names no line reads (repeated until none is
    left); a block left empty gets a `pass`."""
    while True:
        reads: set[str] = set()
        for line in lines:
            m = _ASSIGN.match(line)
            reads.update(_IDENT.findall(m[3] if m else line))
        kept = [line for line in lines if (m := _ASSIGN.match(line)) is None or m[2] in reads]
        if len(kept) == len(lines):
            break
        lines = kept
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if line.rstrip().endswith(":"):
            depth = len(line) - len(line.lstrip())
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if len(following) - len(following.lstrip()) <= depth:
                out.append(" " * (depth + 4) + "pass")
    return out


def _static_dim(op: tensor.DimOp) -> int | None:
    """The size `tensor.dim` reads when its index is a constant and that axis static."""
    index = op.index.owner
    shape = op.source.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
    if isinstance(index, arith.ConstantOp) and isinstance(index.value, IntegerAttr):
        axis = index.value.value.data
        if 0 <= axis < len(shape) and shape[axis] >= 0:
            return shape[axis]
    return None


def unread_sizes_apart(signature: KernelSignature, body: str) -> KernelSignature:
    """`signature` with the size parameters `body` never names as `host_sizes`."""
    unread = tuple(p for p in signature.params if p.kind is SIZE and not re.search(rf"\b{p.name}\b", body))
    if not unread:
        return signature
    return replace(signature, params=tuple(p for p in signature.params if p not in unread), host_sizes=unread)


class KernelPrinter(Emitter):
    """Prints a group's tile grids as one `@triton.jit` kernel.

    One grid: its body, program ids from `tl.program_id(0)`. Several grids (a
    horizontal bundle) are launched side by side: when they run the same tile
    program on other tensors (`same_tile_program`), one body is printed and
    each tensor that differs is picked by segment (`tl.where` on the pointer;
    the host makes their strides equal); otherwise each grid is a branch on
    the program id.
    """

    def __init__(self, name: str, group: GroupOp, grids: Sequence[TileGridOp],
                 stacked: list[list[SSAValue]] | None = None,
                 checks: dict[tuple[str, str | None], int] | None = None):  # fmt: skip
        super().__init__(Names(KERNEL_LOCALS))
        self.checks = checks if checks is not None else {}
        """The module's runtime checks: (message, location) -> number (from 1)."""
        self.uses_checks = False
        self.name, self.group, self.grids = name, group, list(grids)
        self.stacked = stacked if stacked is not None else stacked_tensors(self.grids)
        self.grid = self.grids[0]
        self.expr: dict[SSAValue, str] = {}  # inlined expressions (constants, index math)
        self.shape: dict[SSAValue, tuple[int, ...]] = {}
        self.destinations = [d for g in self.grids for d in g.destinations]
        self.tensors = list(group.entry.args) + self.destinations
        self.merges = _merges(group)
        """Tensors the body sees merged (`GroupOp.input_merges`): their `Merge` and the
        shape of the tensor the host passes (whose strides the kernel takes)."""
        self.bare = pointer_only(self.stacked)
        self.base = {v: self._base_name(v) for v in self.tensors}
        self.ptr = {v: f"{self.base[v]}_ptr" for v in self.tensors}
        self.strides = {v: self.stride_params(v) for v in self.tensors}
        self.sizes = self._size_names()
        """Run-time extents of the tensors' dynamic dims: size parameters."""
        for op in group.entry.ops:  # a dynamic extent: a size parameter; a static one its number
            if isinstance(op, tensor.DimOp) and (size := self._size_param(op)) is not None:
                self.expr[op.result] = size
            elif isinstance(op, tensor.DimOp) and (n := _static_dim(op)) is not None:
                self.expr[op.result] = str(n)
            elif isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType):
                self.expr[op.result] = str(op.value.value.data)  # pyright: ignore[reportAttributeAccessIssue]
            elif type(op) in SIZE_ARITH and all(o in self.expr for o in op.operands):
                # (an extent computed from sizes: `tile_and_fuse._computed_extent`)
                a, b = (self.expr[o] for o in op.operands)
                self.expr[op.results[0]] = f"({a} {SIZE_ARITH[type(op)]} {b})"
        self.hints: dict[LoadOp, str] = {}
        self.uses_dot_constexprs = False
        self.loop_stack: list[Sequence[SSAValue]] = []
        plan = self.grid.plan
        one_body = len(self.grids) == 1 or self.stacked is not None
        self.persistent = plan.persistent.data if one_body and plan is not None else 0
        """Programs launched when they loop over the tiles (0: one per tile); a stacked
        bundle's are split among its members (`horizontal_plan.persistent_programs`)."""
        self.descriptors: dict[tuple[SSAValue, tuple[int, ...]], str] = {}
        """(tensor, tile shape) -> the TMA descriptor loading such tiles of it."""
        self.preamble: list[str] = []
        """Lines before the tile loop (descriptors: made once per program)."""
        self.counts: dict[TileGridOp, list[str]] = {}
        """A dynamic grid's programs per dim (`_counts`)."""

    def _size_names(self) -> dict[tuple[SSAValue, int], str]:
        """A size parameter's name per dynamic dim of the tensors; dims sized from one
        dim of the function (`dim_facts.size_origin`: GPT-2's tokens in x, its
        LayerNorm's output and the Q it projects) share the first one's name, so the
        kernel takes that size once."""
        names: dict[tuple[SSAValue, int], str] = {}
        by_origin: dict[object, str] = {}
        for v in self.tensors:
            for i, n in enumerate(v.type.get_shape()):  # pyright: ignore[reportAttributeAccessIssue]
                if n >= 0:
                    continue
                # (the results' sizes are parameters of their own: a store masked by
                # the size of an input's load is otherwise one value to Triton, kept
                # live across the loops between them (a dynamic attention's query
                # rows: 255 registers against 242, 0.72x the static kernel against
                # 0.95x on an H100)
                key = (size_origin(v, i), v in self.destinations)
                names[(v, i)] = by_origin.setdefault(key, f"{self.base[v]}_n{i}")
        return names

    def _base_name(self, v: SSAValue) -> str:
        """A tensor parameter's stem, from the name of the value the group is
        launched with (`x` for `x_ptr`, `x_s0`, ...)."""
        if v in self.destinations:
            j = self.destinations.index(v)
            hint, fallback = self.group.results[j].name_hint, f"out{j}"
        else:
            i = list(self.group.entry.args).index(v)
            hint, fallback = self.group.inputs[i].name_hint, f"in{i}"
        rank = len(self.host_shape(v))
        base = self.names.fresh(hint or fallback)

        def params(base: str) -> set[str]:
            return {f"{base}_ptr", *(f"{base}_s{i}" for i in range(rank)),
                    *(f"{base}_n{i}" for i in range(rank))}

        while params(base) & self.names.used:
            base = self.names.fresh(base)
        self.names.used |= params(base)
        self.names.used.discard(base)  # free for the tile loaded from it
        return base

    def _size_param(self, op: tensor.DimOp) -> str | None:
        """The size parameter `tensor.dim` of a kernel tensor reads (its index a constant)."""
        index = op.index.owner
        if not isinstance(index, arith.ConstantOp) or not isinstance(index.value, IntegerAttr):
            return None
        return self.sizes.get((op.source, index.value.value.data))

    tiles_together: Mapping[int, int] = MappingProxyType({})
    """Grid dim -> tiles one program takes together along it (the warp-specialised
    attention's consumers, `attention_ws.py`): a run-time count of tiles is counted in
    whole groups (`grid_counts`, `KernelSignature.grid_sizes`: a group's rows the
    block), the last group's extra tiles masked like any past the edge."""

    def grid_counts(self, grid: TileGridOp) -> list[str]:
        """Programs along each grid dim: a number, or `tl.cdiv` of a run-time extent
        by the dim's block (`tiles_together`: whole groups of tiles, times the group)."""
        sizes = dict(self._grid_sizes(grid))
        counts = []
        for j, n in enumerate(grid.grid_shape):
            together = self.tiles_together.get(j, 1)
            count = str(n) if n >= 0 else f"tl.cdiv({sizes[j][0]}, {sizes[j][1]})"
            counts.append(count if n >= 0 or together == 1 else f"{count} * {together}")
        return counts

    def _grid_sizes(self, grid: TileGridOp) -> list[tuple[int, tuple[str, int]]]:
        """Per run-time grid dim, in order: (grid dim, (size, block)); a block of
        `tiles_together` tiles where the program takes them together."""
        dims = grid.plan.dims if grid.plan is not None else ()
        size = dict(zip([k for k, (e, _, _) in enumerate(dims) if e < 0], grid.sizes, strict=True))
        gridded = [k for k, (_, _, m) in enumerate(dims) if m == GRID]
        return [(j, (self.ref(size[k]), dims[k][1] * self.tiles_together.get(j, 1)))
                for j, k in enumerate(gridded) if k in size]  # fmt: skip

    # -- values ----------------------------------------------------------------

    def ref(self, v: SSAValue) -> str:
        if v in self.expr:
            return self.expr[v]
        if v in self.names.of:
            return self.names.of[v]
        raise CompileError(f"the Triton backend met a value it has not computed: {v}")

    def bind(self, v: SSAValue, expression: str, shape: tuple[int, ...] = (),
             hint: str | None = None) -> str:  # fmt: skip
        """Name `v`'s block `expression`: a name chosen in advance (a loop-carried
        block computed in place), the expression itself when it is a name, or a
        new one."""
        self.shape[v] = shape
        if v in self.names.of:
            name = self.names.of[v]
            if expression != name and not self.rename_last(expression, name):
                self.assign(name, expression)
            return name
        if expression in self.defined:
            self.names.of[v] = expression
            return expression
        return self.assign(self.names(v, hint), expression)

    # -- kernel ----------------------------------------------------------------

    def print(self) -> tuple[str, KernelSignature]:
        self.assign("pid", "tl.program_id(0)")
        if self.persistent:
            # (a dynamic grid: its run-time tile count; the host launches at most
            # `persistent` programs, one per tile when there are fewer tiles)
            tiles = (self._product(self._counts(self.grid), range(len(self.grid.grid_shape))) or 1
                     if self.grid.sizes else math.prod(self.grid.grid_shape))  # fmt: skip
            first, step, at = "pid", self.persistent, 1
            if self.stacked is not None:
                # a stacked bundle: program `pid` loops over member `pid // share`'s
                # tiles, reading its tensors through pointers (and descriptors) picked
                # once; a dynamic grid's share is the least of its tiles and the planned
                # share (as the host launches)
                step = self.persistent // len(self.grids)
                if self.grid.sizes:
                    step = self.assign("share", f"min({tiles}, {step})")
                self.assign("seg", f"pid // {step}")
                self.pick_members(self.stacked)
                first, at = self.assign("mpid", f"pid % {step}"), len(self.lines)
            # (Triton pipelines the K loop across tiles when it is the only loop)
            loops = sum(isinstance(op, scf.ForOp) for op in self.grid.body.block.ops)
            self.emit(f"for tile_id in tl.range({first}, {tiles}, {step}, "
                      f"flatten={loops == 1}):")  # fmt: skip
            self.push()
            self.print_grid(self.grid, "tile_id")
            self.pop()
            self.lines[at:at] = self.preamble
        elif len(self.grids) == 1:
            self.print_grid(self.grid, "pid")
        elif self.stacked is not None:
            self.print_stacked(self.stacked)
        else:
            self.print_branches()
        body = without_dead_values(self.lines)
        signature = self.signature(body)
        params = [p.name + (": tl.constexpr" if p.kind is CONSTEXPR else "")
                  for p in signature.params]  # fmt: skip
        fixed = signature.unspecialized
        jit = f"@triton.jit(do_not_specialize={list(fixed)!r})" if fixed else "@triton.jit"
        head = [jit, f"def {self.name}({', '.join(params)}):"]
        return "\n".join(head + body), signature

    def signature(self, body: Sequence[str] = ()) -> KernelSignature:
        """The parameters: per tensor its pointer, strides and dynamic sizes; an input
        the kernel `body` only reads sizes of (its pointer never appears: a dynamic
        program's argument read for a run-time extent) passes those sizes alone, and a
        size `body` never names is a host size (`unread_sizes_apart`)."""
        signature = self._signature(body)
        return unread_sizes_apart(signature, "\n".join(body)) if body else signature

    def _signature(self, body: Sequence[str]) -> KernelSignature:
        params: list[Param] = []
        text = "\n".join(body)
        taken: set[str] = set()  # (a size shared by several tensors: one parameter)
        described_tensors = self._described()
        for k, v in enumerate(self.tensors):
            shape = self.host_shape(v)
            sizes = []
            for i, n in enumerate(shape):
                if n < 0 and self.sizes[(v, i)] not in taken:
                    sizes.append(Param(self.sizes[(v, i)], SIZE, "index", shape, i, tensor=k))
                    taken.add(self.sizes[(v, i)])
            if body and sizes and v not in self.destinations and not re.search(
                    rf"\b{self.ptr_param(v)}\b", text):  # fmt: skip
                params += sizes
                continue
            described = v in described_tensors
            params.append(Param(self.ptr_param(v), POINTER, str(element_type(v.type)), shape,
                                strided=v not in self.bare, descriptor=described, tensor=k))  # fmt: skip
            if v not in self.bare:
                params += [Param(s, STRIDE, "index", shape, i, tensor=k)
                           for i, s in enumerate(self.stride_params(v))]  # fmt: skip
            params += sizes
        if self.uses_checks:
            params.append(Param(CHECKS_PARAM, POINTER, "i32", (1,)))
        if self.uses_dot_constexprs:
            dtype = dot_input_dtype(self.group)
            precision = dot_precision(self.group)
            params += [Param("DOT_DTYPE", CONSTEXPR, "tl.dtype", value=dtype.removeprefix("tl.")),
                       Param("DOT_PRECISION", CONSTEXPR, "str", value=precision)]  # fmt: skip
        grid = self.grid
        if len(self.grids) > 1 and self.stacked is None and any(g.sizes for g in self.grids):
            return KernelSignature(  # (branches of different programs, some of run-time counts)
                self.name, tuple(params), grid.num_warps.value.data, grid.num_stages.value.data,
                0, whole_sizes=tuple(w for g in self.grids for w in self._sizes_of(g)[1]),
                branches=tuple((math.prod(n for n in g.grid_shape if n >= 0), self._sizes_of(g)[0])
                               for g in self.grids))  # fmt: skip
        if grid.sizes:  # (bundled only as a stack: members of one program and sizes)
            static = math.prod(n for n in grid.grid_shape if n >= 0)
            return KernelSignature(
                self.name, tuple(params), grid.num_warps.value.data, grid.num_stages.value.data,
                static, *self._sizes_of(grid), self.persistent, members=len(self.grids))  # fmt: skip
        programs = self.persistent or sum(math.prod(g.grid_shape) for g in self.grids)
        return KernelSignature(self.name, tuple(params), grid.num_warps.value.data,
                               grid.num_stages.value.data, programs)  # fmt: skip

    def _sizes_of(self, grid: TileGridOp) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...]]:
        """A grid's (size parameter, block) per dynamic dim: those the grid spans, and
        those held whole in every tile (`KernelSignature.grid_sizes`, `whole_sizes`)."""
        if not grid.sizes:
            return (), ()
        dynamic = [(self.ref(v), b, m) for v, (_, b, m) in
                   zip(grid.sizes, [d for d in grid.plan.dims if d[0] < 0], strict=True)]  # fmt: skip
        return (tuple(sizes for _, sizes in self._grid_sizes(grid)),
                tuple((n, b) for n, b, m in dynamic if m == WHOLE))

    def _described(self) -> set[SSAValue]:
        """Tensors read through TMA descriptors (a stacked member as its slot's first)."""
        described = {t for t, _ in self.descriptors}
        for column in self.stacked or []:
            if column[0] in described:
                described.update(column)
        return described

    def ptr_param(self, v: SSAValue) -> str:
        return f"{self.base[v]}_ptr"

    def stride_params(self, v: SSAValue) -> list[str]:
        return [f"{self.base[v]}_s{i}" for i in range(len(self.host_shape(v)))]

    def host_shape(self, v: SSAValue) -> tuple[int, ...]:
        """The shape of the tensor the host passes for `v` (a merged one's unmerged)."""
        return self.merges[v][1] if v in self.merges else tuple(v.type.get_shape())  # type: ignore[attr-defined]

    def print_grid(self, grid: TileGridOp, pid: str) -> None:
        self.hints = reread_hints(grid)
        self.print_program_ids(grid, pid)
        if self.persistent:
            for op in loop_first(grid.body.block):
                self.print_op(op)
        else:
            self.print_block(grid.body.block)

    def print_stacked(self, stacked: list[list[SSAValue]]) -> None:
        """One body for grids running the same program: pick each member's tensors.
        (A dynamic grid: its run-time count, each member's tensors of its sizes.)"""
        if self.grid.sizes:
            programs = self._product(self._counts(self.grid), range(len(self.grid.grid_shape))) or "1"
        else:
            programs = str(math.prod(self.grid.grid_shape))
        self.assign("seg", f"pid // {programs}")
        self.pick_members(stacked)
        self.assign("pid", f"pid % {programs}")
        self.print_grid(self.grid, "pid")

    def pick_members(self, stacked: list[list[SSAValue]]) -> None:
        """Member `seg`'s tensor in each slot of a stacked bundle, by pointer."""
        # Picks read the kernel's own parameters: a tensor can be one member's
        # first-slot tensor and another member's tensor in a later slot.
        for column in stacked:
            first = column[0]
            if all(v is first for v in column):
                continue
            pick = self.ptr_param(column[-1])
            for k in range(len(column) - 2, -1, -1):
                pick = f"tl.where(seg == {k}, {self.ptr_param(column[k])}, {pick})"
            # (every member is indexed with the first's strides: the host sees to it)
            self.ptr[first] = self.assign(self.names.fresh(f"{self.base[first]}_sel_ptr"), pick)

    def print_branches(self) -> None:
        """Grids running different programs: one branch per grid, by program id (a
        dynamic grid's programs counted from its run-time sizes, before the branches)."""
        ends, start = [], "0"
        for grid in self.grids:
            if grid.sizes:
                count = self._product(self._counts(grid), range(len(grid.grid_shape))) or "1"
            else:
                count = str(math.prod(grid.grid_shape))
            if start == "0":
                end = count
            elif start.isdigit() and count.isdigit():
                end = str(int(start) + int(count))
            else:
                end = self.assign(self.names.fresh("branch_end"), f"{start} + {count}")
            ends.append((start, end))
            start = end
        for k, (grid, (first, end)) in enumerate(zip(self.grids, ends, strict=True)):
            head = "if" if k == 0 else "elif" if k < len(self.grids) - 1 else "else"
            self.emit(f"{head} pid < {end}:" if head != "else" else "else:")
            self.push()
            local = self.assign(self.names.fresh("lpid"), f"pid - {first}")
            self.print_grid(grid, local)
            self.pop()

    def print_program_ids(self, grid: TileGridOp, pid: str) -> None:
        """Row-major program ids; M and N in grouped order when the plan asks.

        Every id keeps its modulo, the outermost too (`pid` is below the grid's
        size): the bound it tells the compiler changes register allocation (a
        LayerNorm row kernel spilled without it)."""
        shape, ids = grid.grid_shape, grid.program_ids
        plan = grid.plan
        swizzle = plan.swizzle if plan is not None else None
        if grid.sizes:
            self._dynamic_program_ids(grid, pid)
            return
        if swizzle is None:
            order = self._id_order(grid, range(len(ids)))
            for pos, k in enumerate(order):
                stride = math.prod(shape[j] for j in order[pos + 1 :])
                div = f"({pid} // {stride}) % {shape[k]}" if stride > 1 else f"{pid} % {shape[k]}"
                self.bind(ids[k], div, hint=f"pid_{k}")
            return
        im, jn = swizzle
        group_m = plan.group_m
        gm, gn = shape[im], shape[jn]
        rest = [k for k in range(len(shape)) if k not in (im, jn)]
        self._grouped_ids(grid, pid, str(gm), str(gm * gn), str(group_m * gn))
        outer = f"{pid} // {gm * gn}"
        for k in rest:
            stride = math.prod(shape[j] for j in rest if j > k)
            self.bind(ids[k], f"({outer} // {stride}) % {shape[k]}", hint=f"pid_{k}")

    def _grouped_ids(self, grid: TileGridOp, pid: str, gm: str, tiles: str, span: str) -> None:
        """M and N program ids in grouped order: `gm` M tiles, `tiles` M x N tiles,
        `span` tiles per group of `group_m` rows (numbers, or run-time expressions)."""
        assert grid.plan is not None and grid.plan.swizzle is not None
        (im, jn), group_m = grid.plan.swizzle, grid.plan.group_m
        ids = grid.program_ids
        self.assign("tile", f"{pid} % {tiles}")
        self.assign("group", f"tile // {span}")
        self.assign("first_m", f"group * {group_m}")
        self.assign("rows", f"min({gm} - first_m, {group_m})")
        self.bind(ids[im], "first_m + (tile % rows)", hint="pid_m")
        self.bind(ids[jn], f"(tile % {span}) // rows", hint="pid_n")

    def _dynamic_program_ids(self, grid: TileGridOp, pid: str) -> None:
        """Program ids of a grid whose counts are run-time (`tl.cdiv` of a size by the
        block, named once): row-major, or M and N in grouped order."""
        counts = self._counts(grid)

        def product(ks) -> str:
            return self._product(counts, ks)

        ids, plan = grid.program_ids, grid.plan
        swizzle = plan.swizzle if plan is not None else None
        rest = self._id_order(grid, [k for k in range(len(ids)) if swizzle is None or k not in swizzle])
        outer = pid
        if swizzle is not None:
            im, jn = swizzle
            self._grouped_ids(grid, pid, counts[im], product([im, jn]),
                              f"({plan.group_m} * {counts[jn]})")  # fmt: skip
            outer = f"({pid} // {product([im, jn])})" if rest else pid
        for pos, k in enumerate(rest):
            later = product(rest[pos + 1 :])
            # (the outermost id is below its count by the grid's size: no modulo,
            # which by a run-time count is a division and tells the compiler nothing)
            whole = f"({outer} // {later})" if later else outer
            div = whole if k == rest[0] else f"{whole} % {counts[k]}"
            self.bind(ids[k], div, hint=f"pid_{k}")

    @staticmethod
    def _id_order(grid: TileGridOp, ks) -> list[int]:
        """Grid dims `ks` from the slowest-varying program id to the fastest: those of
        one-element blocks (batches, heads) first, then the tiled ones, each in dim
        order. Programs that follow each other share what a batch and head select
        (an attention's K and V: its query tiles run together) whatever order the
        program's loops come in (a dynamic GPT-2 block's attention loops over
        tokens, batch, heads)."""
        dims = grid.plan.dims if grid.plan is not None else ()
        gridded = [d for d in dims if d[2] == GRID]
        if len(gridded) != len(grid.grid_shape):
            return list(ks)
        return sorted(ks, key=lambda k: gridded[k][1] != 1)

    def _counts(self, grid: TileGridOp) -> list[str]:
        """`grid_counts`, each run-time one named once (before a persistent tile loop:
        its bound)."""
        if grid not in self.counts:
            self.counts[grid] = [
                c if c.isdigit() else self.assign(self.names.fresh(f"programs_{k}"), c)
                for k, c in enumerate(self.grid_counts(grid))]  # fmt: skip
        return self.counts[grid]

    @staticmethod
    def _product(counts: list[str], ks) -> str:
        """The product of `counts` at `ks`, "" if all are 1."""
        factors = [counts[k] for k in ks if counts[k] != "1"]
        return " * ".join(factors) if len(factors) < 2 else f"({' * '.join(factors)})"

    def print_block(self, block: Block) -> None:
        for op in block.ops:
            self.print_op(op)

    # -- one handler per op ------------------------------------------------------

    @functools.singledispatchmethod
    def print_op(self, op: Operation) -> None:
        if (s := as_structured(op)) is not None:
            GenericPrinter(self, s).print()
        elif type(op) in BINARY or type(op) in UNARY or isinstance(op, SCALAR_OPS):
            self.expr[op.results[0]] = self._index_expr(op)
        else:
            raise CompileError.at(op, "is not supported by the Triton backend (in a tile "
                                  "program: tilefuse.load/store, scf.for, structured ops, "
                                  "arith and math ops)")  # fmt: skip

    def _index_expr(self, op: Operation) -> str:
        """Scalar arithmetic in the tile program (offsets); of integers, `x * 1` and
        `x + 0` are `x`, `x * 0` is 0."""
        if isinstance(op, arith.MuliOp | arith.AddiOp):
            unit = "1" if isinstance(op, arith.MuliOp) else "0"
            a, b = (self.ref(v) for v in op.operands)
            if isinstance(op, arith.MuliOp) and "0" in (a, b):
                return "0"
            if unit in (a, b):
                return b if a == unit else a
        return scalar_expr(op, self.ref)

    @print_op.register
    def _(self, op: arith.ConstantOp) -> None:
        self.expr[op.result] = self.constant(op)

    @print_op.register
    def _(self, op: tensor.EmptyOp) -> None:
        self.shape[op.tensor] = kept_shape(op.tensor.type)
        self.expr[op.tensor] = "None"

    @print_op.register
    def _(self, op: LoadOp) -> None:
        tile = tuple(op.result.type.get_shape())
        if (desc := self._descriptor(op)) is not None:
            at = ", ".join(self.ref(o) for o in op.offsets)
            self.bind(op.result, f"{desc}.load([{at}])", kept_shape(op.result.type),
                      hint=self.base.get(op.source))  # fmt: skip
            return
        inside = op.attributes.get(IN_BOUNDS_AXES)
        ptr, mask = self._addressing(op.source, op.offsets, tile,
                                     inside.get_values() if inside is not None else ())  # pyright: ignore
        masked = f", mask={mask}, other=0.0" if mask else ""
        # Tiles only multiplied by tl.dot stay in their storage type.
        dot = _only_dot_operand(op.result)
        integer = isinstance(element_type(op.result.type), IntegerType)  # i1 masks, indices
        upcast = "" if dot or integer else f".to({compute_type(op.result.type)})"
        if not dot and op in self.hints:
            masked += f', eviction_policy="{self.hints[op]}"'
        self.bind(op.result, f"tl.load({ptr}{masked}){upcast}", kept_shape(op.result.type),
                  hint=self.base.get(op.source))  # fmt: skip

    @print_op.register
    def _(self, op: StoreOp) -> None:
        tile = tuple(op.value.type.get_shape())
        inside = op.attributes.get(IN_BOUNDS_AXES)
        ptr, mask = self._addressing(op.dest, op.offsets, tile,
                                     inside.get_values() if inside is not None else ())  # pyright: ignore
        dtype = tl_dtype(op.dest.type)
        masked = f", mask={mask}" if mask else ""
        v = self.ref(op.value)
        value = f"_to_bf16({v})" if dtype == "tl.bfloat16" else f"{v}.to({dtype})"
        self.emit(f"tl.store({ptr}, {value}{masked})")

    @print_op.register
    def _(self, op: scf.ForOp) -> None:
        body = op.body.block
        carried = body.args[1:]
        yielded = body.last_op.operands if isinstance(body.last_op, scf.YieldOp) else ()
        for arg, init, res, y in zip(carried, op.iter_args, op.results, yielded, strict=True):
            name = self._carried_name(op, init, res, y)
            self.names.of[arg] = self.names.of[res] = name
            self.shape[arg] = self.shape[res] = self.shape.get(init, ())
            if _in_place(op, arg, y):
                self.names.of[y] = name
        iv = self.names(body.args[0], "k")
        if _at_most_once(op):
            # (a dynamic dim's last, partial chunk: a branch, not a loop Triton
            # would pipeline, with its prologue's registers and buffers)
            self.emit(f"if {self.ref(op.lb)} < {self.ref(op.ub)}:")
            self.push()
            self.assign(iv, self.ref(op.lb))
        else:
            self.emit(f"for {iv} in range({self.ref(op.lb)}, {self.ref(op.ub)}, {self.ref(op.step)}):")
            self.push()
        self.loop_stack.append(carried)
        self.print_block(body)
        self.loop_stack.pop()
        self.pop()

    def _carried_name(self, op: scf.ForOp, init: SSAValue, res: SSAValue, y: SSAValue) -> str:
        """The variable a loop-carried block lives in: its initial value's own
        (renamed on its line) when nothing else reads that value, else a copy."""
        text = self.ref(init)
        hint = res.name_hint or y.name_hint or _structured_hint(y) or "acc"
        line = self._defining_line(text)
        # (an initial value from an enclosing block is read again by each run of the loop)
        here = isinstance(init.owner, Operation) and init.owner.parent_block() is op.parent_block()
        sole = here and len(list(init.uses)) == 1 and self.names.of.get(init) == text and not any(
            w is not init and n == text for w, n in self.names.of.items())  # fmt: skip
        if sole and line is not None:
            name = self.names.fresh(hint)
            self.forget(text)
            indent, _, rhs = _ASSIGN.match(self.lines[line]).groups()  # type: ignore[union-attr]
            self.lines[line] = f"{indent}{name} = {rhs}"
            self.defined.discard(text)
            self.defined.add(name)
            return name
        return self.assign(self.names.fresh(hint), text)

    def _defining_line(self, name: str) -> int | None:
        """The one line that assigns `name`, if no later line reads it."""
        found = [i for i, line in enumerate(self.lines)
                 if (m := _ASSIGN.match(line)) is not None and m[2] == name]  # fmt: skip
        if len(found) != 1:
            return None
        if any(_mentions(line, name) for line in self.lines[found[0] + 1 :]):
            return None
        return found[0]

    @print_op.register
    def _(self, op: scf.YieldOp) -> None:
        carried = self.loop_stack[-1]
        for arg, v in zip(carried, op.operands, strict=True):
            text, name = self.ref(v), self.names.of[arg]
            if text != name:
                self.assign(name, text)

    def constant(self, op: arith.ConstantOp) -> str:
        v = op.value
        if isinstance(v, IntegerAttr):
            if getattr(v.type, "width", None) is not None and v.type.width.data == 1:
                return str(bool(v.value.data))  # an i1: a condition for tl.where
            n = v.value.data
            if not -(2**31) <= n < 2**31:  # (a bare literal takes an int32 tensor's type in
                return f"{WIDE}{n}, tl.int64)"  # Triton and overflows: an int64 scalar)
            return str(n)
        if isinstance(v, FloatAttr):
            return literal(v.value.data)
        raise CompileError.at(op, "has a constant the Triton backend cannot print")

    def check(self, op: cf.AssertOp, cond: str) -> None:
        """A runtime check: lanes where `cond` is false record the check's number
        in the flag the host reads after the kernels ran (`prelude._check`)."""
        if cond == "True":
            return
        key = (op.msg.data, op_location(op))
        number = self.checks.setdefault(key, len(self.checks) + 1)
        self.uses_checks = True
        self.emit(f"_check({CHECKS_PARAM}, {block_constant(op.arg, cond)}, {number})")

    # -- memory ----------------------------------------------------------------

    def _descriptor(self, op: LoadOp) -> str | None:
        """The TMA descriptor `op`'s tile is loaded through, made on first use; None
        for a pointer load. A persistent kernel's `tl.dot` operand tiles of a tensor
        the host passes in row-major order (`dataflow.tma_input`) are, when TMA can load
        them: no unit axis (the tile is the dot's operand as loaded), every axis at
        most 256 elements, the last at least 16 bytes, rows of a multiple of 16
        bytes. Out-of-bounds parts of a tile read as zero, so it needs no mask."""
        source, tile = op.source, tuple(op.result.type.get_shape())
        if not self.persistent or not _only_dot_operand(op.result):
            return None
        args = list(self.group.entry.args)
        if source not in args or not tma_input(self.group, args.index(source)):
            return None
        shape = tuple(source.type.get_shape())
        size = dtype_bytes(source.type)
        if (any(b < 2 or b > 256 for b in tile) or len(tile) > 5
                or tile[-1] * size < 16 or shape[-1] * size % 16):  # fmt: skip
            return None
        key = (source, tile)
        if key not in self.descriptors:
            name = self.names.fresh(f"{self.base[source]}_desc")
            strides = [*self.strides[source][:-1], "1"]
            self.descriptors[key] = name
            dims = [str(n) if n >= 0 else self.sizes[(source, i)] for i, n in enumerate(shape)]
            self.preamble.append(
                f"    {name} = tl.make_tensor_descriptor({self.ptr[source]}, shape=[{', '.join(dims)}], "
                f"strides=[{', '.join(strides)}], block_shape={list(tile)})")  # fmt: skip
        return self.descriptors[key]

    def _offset(self, v: SSAValue, i: int, index: str) -> str:
        """The element offset of index `index` along dim `i` of tensor `v`: times its
        stride; along a merged dim the index divided into the host tensor's dims
        (outermost first), each times its stride."""
        if v not in self.merges:
            return f"{index} * {self.strides[v][i]}"
        merge, shape = self.merges[v]
        dims = merge[i]
        terms = []
        for k, d in enumerate(dims):
            inner = math.prod(shape[e] for e in dims[k + 1 :])
            part = f"({index})" if inner == 1 else f"(({index}) // {inner})"
            part = part if k == 0 else f"({part} % {shape[d]})"
            terms.append(f"{part} * {self.strides[v][d]}")
        return " + ".join(terms)

    def _addressing(self, tensor_value: SSAValue, offsets, tile: Sequence[int],
                    inside: Sequence[int] = ()) -> tuple[str, str]:  # fmt: skip
        """Pointer and mask expressions for a tile of `tensor_value` at `offsets`
        (no mask along the axes `inside`: proven inside the tensor).

        Unit axes of the tile add a scalar offset; the others get an arange,
        expanded over the tile's non-unit axes only.
        """
        full = tensor_value.type.get_shape()
        kept = [i for i, size in enumerate(tile) if size != 1]
        ptr, masks = [self.ptr[tensor_value]], []
        for i, (off, size, extent) in enumerate(zip(offsets, tile, full, strict=True)):
            start = self.ref(off)
            if size == 1:
                if start != "0":
                    ptr.append(self._offset(tensor_value, i, start))
                continue
            arange = f"tl.arange(0, {size})"
            o = self.value(f"offs{i}", arange if start == "0" else f"{start} + {arange}", INDEX)
            index = ", ".join(":" if j == i else "None" for j in kept)
            term = f"{o}[{index}]" if len(kept) > 1 else o
            ptr.append(self._offset(tensor_value, i, term))
            if i in inside:
                continue
            if extent < 0:  # a dynamic dim: its size parameter
                masks.append(f"({term} < {self.sizes[(tensor_value, i)]})")
            elif extent % size != 0:
                masks.append(f"({term} < {extent})")
        mask = self.value("mask", " & ".join(masks), MASK) if masks else ""
        return " + ".join(ptr), mask


def _merges(group: GroupOp) -> dict[SSAValue, tuple[Merge, tuple[int, ...]]]:
    """The group's block arguments and tile-grid destinations it sees merged, with
    their `Merge` and the host tensor's shape."""
    found = {}
    for i, arg in enumerate(group.entry.args):
        if (m := group.input_merge(i)) is not None:
            found[arg] = (m, tuple(group.inputs[i].type.get_shape()))  # type: ignore[attr-defined]
    for j, result in enumerate(group.results):
        if (m := group.result_merge(j)) is not None and (dest := group.destination(j)) is not None:
            found[dest] = (m, tuple(result.type.get_shape()))  # type: ignore[attr-defined]
    return found


def _at_most_once(loop: scf.ForOp) -> bool:
    """`loop` runs from `(ub // B) * B` to `ub` by `B`: once or not at all."""
    end, step = loop.lb.owner, _constant(loop.step)
    if not isinstance(end, arith.MuliOp) or step is None or _constant(end.rhs) != step:
        return False
    chunks = end.lhs.owner
    return isinstance(chunks, arith.DivSIOp) and chunks.lhs is loop.ub and _constant(chunks.rhs) == step


def _constant(v: SSAValue) -> int | None:
    c = v.owner
    if isinstance(c, arith.ConstantOp) and isinstance(c.value, IntegerAttr):
        return c.value.value.data
    return None


def loop_first(block: Block) -> list[Operation]:
    """`block`'s ops with those before its first loop that the loop does not read
    moved after it (an epilogue's bias load): in a persistent kernel's flattened
    tile loop, Triton pipelines the K loop across tiles only when nothing but the
    loop's own inputs comes before it (H200: a bias load there made GPT-2's GEMMs
    3-4x slower)."""
    ops = list(block.ops)
    first = next((i for i, op in enumerate(ops) if isinstance(op, scf.ForOp)), None)
    if first is None:
        return ops
    needed: set[Operation] = set()
    stack = [ops[first]]
    while stack:
        op = stack.pop()
        for inner in op.walk():
            for v in inner.operands:
                owner = v.owner
                if isinstance(owner, Operation) and owner.parent_block() is block and owner not in needed:
                    needed.add(owner)
                    stack.append(owner)
    early = [op for op in ops[:first] if op in needed]
    late = [op for op in ops[:first] if op not in needed]
    return [*early, ops[first], *late, *ops[first + 1 :]]


def _only_dot_operand(value: SSAValue) -> bool:
    """Is every use of `value` an input of a contraction printed as tl.dot?"""
    for use in value.uses:
        s = as_structured(use.operation)
        if s is None or value not in s.inputs or dot_axes(s) is None:
            return False
    return bool(value.uses)


def _structured_hint(y: SSAValue) -> str | None:
    """The name a structured op's result would get (`generic.result_hint`)."""
    if not isinstance(y, OpResult) or (s := as_structured(y.owner)) is None:
        return None
    return result_hint(s, y.index)


def _in_place(loop: scf.ForOp, arg: SSAValue, y: SSAValue) -> bool:
    """Can the block `y` that `loop` yields for `arg` be computed straight into
    `arg`'s variable? It must be a load or a one-result structured op of the body,
    read only by the yield, and nothing after it may read `arg`."""
    body = loop.body.block
    owner = y.owner
    if not isinstance(owner, Operation) or owner.parent_block() is not body:
        return False
    computed = isinstance(owner, LoadOp) or as_structured(owner) is not None
    if not computed or len(owner.results) != 1 or len(list(y.uses)) != 1:
        return False
    if list(body.last_op.operands).count(y) != 1:  # type: ignore[union-attr]
        return False
    order = {op: i for i, op in enumerate(body.ops)}
    for use in arg.uses:
        op = use.operation
        while op.parent_block() is not body:
            op = op.parent_op()  # type: ignore[assignment]
        if order[op] > order[owner]:
            return False
    return True


def _same_run_time_sizes(a: TileGridOp, b: TileGridOp) -> bool:
    """Do two grids' run-time extents have one origin each (`size_origin`): one size at
    every call, so a stack may count every member's programs by the first's? (The same
    program over rows of independent dynamic sizes is two branches, not a stack.)"""
    return len(a.sizes) == len(b.sizes) and all(
        size_origin(x) == size_origin(y) for x, y in zip(a.sizes, b.sizes, strict=True))


def stacked_tensors(grids: Sequence[TileGridOp]) -> list[list[SSAValue]] | None:
    """For a bundle of grids running one tile program: per tensor the first grid
    reads or writes, the tensor each grid uses in its place. None for a single
    grid or when the programs differ."""
    if len(grids) < 2:
        return None
    first = grids[0]
    columns = [[v] for v in grid_inputs(first) if isinstance(v, BlockArgument)]  # (tensors, not sizes)
    columns += [[d] for d in first.destinations]
    for other in grids[1:]:
        pairs = same_tile_program(first, other)
        if pairs is None or not _same_run_time_sizes(first, other):
            return None
        mapped = dict(pairs)
        for column in columns[: len(pairs)]:
            column.append(mapped[column[0]])
        for column, d in zip(columns[len(pairs) :], other.destinations, strict=True):
            column.append(d)
    return columns


def pointer_only(stacked: list[list[SSAValue]] | None) -> set[SSAValue]:
    """Tensors of a stacked bundle (`stacked_tensors`) passed as a bare pointer:
    the shared body indexes every member's tensor with the first member's strides."""
    if stacked is None:
        return set()
    firsts = {column[0] for column in stacked}
    return {v for column in stacked for v in column[1:] if v not in firsts}


def reread_hints(grid: TileGridOp) -> dict[LoadOp, str]:
    """L2 hints for a tensor the program streams in several loops (one pass per
    row reduction, then the writing pass): keep it in L2 (`evict_last`) in every
    pass but its last (`evict_first`), so the re-reads hit L2, as Inductor's
    looped reductions do."""
    passes: dict[SSAValue, list[tuple[int, LoadOp]]] = {}
    loops = [op for op in grid.body.block.ops if isinstance(op, scf.ForOp)]
    for i, loop in enumerate(loops):
        for load in loop.walk():
            if isinstance(load, LoadOp):
                passes.setdefault(load.source, []).append((i, load))
    hints = {}
    for found in passes.values():
        last = max(i for i, _ in found)
        if last != min(i for i, _ in found):
            for i, load in found:
                hints[load] = "evict_first" if i == last else "evict_last"
    return hints
