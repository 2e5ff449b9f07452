"""
The host function of a generated module: named after the MLIR function, it
allocates each kernel's outputs, runs the ops between kernels with torch (views,
reshapes, copies, constants) and launches the kernels in order.

Tensor constants are data, not source: the module lists them by name, shape and
dtype, and the host function takes the tensors as `constants`, in that order,
built once by whoever loads the module (`runtime/compiled.py`, from each
`HostConstant`'s elements). A splat is `torch.full` with its one number.

```python
CONSTANTS = (("cst", (768, 3072), torch.float32),)  # the host function's `constants`

def main(x, *, constants, dot_dtype=None):
    cst, = constants
```
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    IndexType,
    IntegerType,
    TensorType,
)
from xdsl.ir import BlockArgument, Operation, SSAValue

from tilefuse.analysis.dataflow import pad_value, reshape_root
from tilefuse.analysis.dim_facts import dim_facts, size_origin
from tilefuse.backend.triton.dtypes import torch_dtype
from tilefuse.backend.triton.names import Names
from tilefuse.backend.triton.scalar import literal
from tilefuse.backend.triton.signature import (
    CHECKS_PARAM,
    CONSTEXPR,
    POINTER,
    SIZE,
    KernelSignature,
)
from tilefuse.ir.constants import constant_array, is_splat, stored_elements
from tilefuse.ir.diagnostics import CompileError, op_location
from tilefuse.ir.structured import SIZE_ARITH, SliceDim, slice_dims
from tilefuse.ir.tilefuse import (
    LAYOUT_ATTR,
    SAME_SIZES,
    SERVES,
    STATIC_SIZES,
    VARIANT_OF,
    GroupOp,
    TileGridOp,
    WindowOp,
    variants_of,
)


class SizeReader:
    """The host's expression for a dynamic size: each dynamic dim of an argument is
    read once, at the top (`x_n0 = x.shape[0]`), each dim a host op makes as its own
    size (a reshape's merged rows: GPT-2's `8 x T`) once, after that op (`defined`),
    and every size made from one of them (`dim_facts.size_origin`: through views,
    kernels' results, inits) is that name; any other size is read from its tensor
    (`y.shape[1]`). (A dynamic transformer block read ~100 sizes from tensors a call:
    `.shape` builds a `torch.Size`.)"""

    def __init__(self, f: func.FuncOp, names: Names):
        self.names = names
        self.of_origin: dict[tuple[SSAValue, int], str] = {}
        self.lines: list[str] = []
        for a in f.body.block.args:
            self.lines += self._read(a)

    def _read(self, value: SSAValue) -> list[str]:
        """Name the dynamic dims that are their own origin in `value`."""
        lines = []
        shape = value.type.get_shape() if isinstance(value.type, TensorType) else ()
        for axis, n in enumerate(shape):
            if n == DYNAMIC_INDEX and (isinstance(value, BlockArgument) or size_origin(value, axis) == (value, axis)):
                name = self.names.fresh(f"{self.names(value)}_n{axis}")
                self.of_origin[(value, axis)] = name
                lines.append(f"    {name} = {self.names(value)}.shape[{axis}]")
        return lines

    def used(self, lines: list[str], computed: Sequence[str] = ()) -> list[str]:
        """`lines` without the reads of sizes nothing reads (a result's rows read
        after its reshape, the function returning it), nor the `computed` index
        values nothing reads (a reshape's `output_shape` the host printed as -1),
        to a fixed point: a value read only by a dropped line goes too."""
        removable = [*self.of_origin.values(), *computed]
        while True:
            words = Counter(re.findall(r"\w+", "\n".join(lines)))
            unused = {f"    {name} = " for name in removable if words[name] == 1}
            kept = [line for line in lines if not any(line.startswith(u) for u in unused)]
            if len(kept) == len(lines):
                return kept
            lines = kept

    def defined(self, op: Operation) -> list[str]:
        """After a host op: its results' own dynamic sizes, named."""
        return [line for r in op.results for line in self._read(r)]

    def __call__(self, value: SSAValue, axis: int) -> str:
        if self.of_origin:
            origin = size_origin(value, axis)
            if isinstance(origin, tuple) and origin in self.of_origin:
                return self.of_origin[origin]
        return f"{self.names(value)}.shape[{axis}]"


@dataclass(frozen=True, eq=False)
class HostConstant:
    """A tensor constant the host function takes: its name in the host function,
    shape, torch dtype name (`"bfloat16"`) and elements (`ir.constants.stored_elements`:
    bf16 as its bits, i1 as bool)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    elements: np.ndarray


class HostPrinter:
    """The host function of `f`, whose groups are the kernels of `signatures`."""

    def __init__(self, f: func.FuncOp, launches: list[tuple[GroupOp, list[TileGridOp],
                 list[list[SSAValue]] | None, KernelSignature]],
                 checks: dict[tuple[str, str | None], int] | None = None):  # fmt: skip
        self.f = f
        self.checks = {n: key for key, n in (checks or {}).items()}
        """The kernels' runtime checks by number: (message, location); and the host's
        (`slice_checks`, numbered after the kernels')."""
        self.kernel_checks = bool(self.checks)
        self.slice_checks: dict[Operation, list[tuple[int, int]]] = {}
        """Per host slice, the dims the host checks at each call and their numbers."""
        for op in f.body.block.ops:
            if isinstance(op, tensor.ExtractSliceOp):
                for d in slice_checks(op):
                    number = max(self.checks, default=0) + 1
                    self.checks[number] = (SLICE_CHECK, op_location(op))
                    self.slice_checks.setdefault(op, []).append((d, number))
        self.launches = {g: (grids, stacked, sig) for g, grids, stacked, sig in launches}
        self.by_name = {g.sym_name.data: g for g in self.launches}
        self.tma_checked: set[SSAValue] = set()
        """Tensors a stacked launch made TMA-ready (`_tma_same`): no `_tma` again."""
        self.padded_in_place: set[tensor.PadOp] = set()
        """Pads whose source kernel writes their interior (`_pad_in_place`)."""
        kernels = [sig.name for _, _, _, sig in launches]
        self.gpu_kernels = [sig.gpu.name for _, _, _, sig in launches if sig.gpu is not None]
        """Kernels launched in their group's place on a GPU (`KernelSignature.gpu`)."""
        self.kernels = kernels
        self.names = Names(kernels + self.gpu_kernels)  # kernels are module globals
        self.constants: list[HostConstant] = []
        self.size: SizeReader | None = None
        """Dynamic sizes as the host reads them (made when printing starts)."""
        self.variant_size = "size"
        """The local holding a launch's largest dynamic size (variants pick on it)."""
        self.host_indices: list[str] = []
        """Index values the host function computes (`tensor.dim`, size arithmetic)."""

    def print(self) -> str:
        f, names = self.f, self.names
        entry = names.fresh(f.sym_name.data)  # `@tl` or `@max` must not shadow a global
        args = [names(a) for a in f.body.block.args]
        self.size = size = SizeReader(f, names)
        self.variant_size = names.fresh("size")  # (not an argument's name: `%size`)
        table = [op for op in f.body.block.ops if _is_table_constant(op)]
        self.constants = [HostConstant(names(op.result), tuple(op.result.type.get_shape()),
                                       torch_dtype(op.result.type, op).removeprefix("torch."),
                                       stored_elements(op)) for op in table]  # fmt: skip
        listed = "".join(f"({c.name!r}, {c.shape}, torch.{c.dtype}), " for c in self.constants).rstrip()
        # Without arguments, the kernels run where the runtime runs them.
        device = f"{args[0]}.device" if args else 'torch.device("cuda" if _ON_GPU else "cpu")'
        params = [*args, "*", *(["constants"] if table else []), "dot_dtype=None"]
        params += ["check_error=RuntimeError"] * bool(self.checks)
        launches = sum(isinstance(op, GroupOp) and VARIANT_OF not in op.attributes for op in f.body.block.ops)
        lines = [f"KERNELS = {self.kernels!r}",
                 *([f"GPU_KERNELS = {self.gpu_kernels!r}  # launched in their groups' place on a GPU"]
                   if self.gpu_kernels else []),
                 f"CONSTANTS = ({listed})  # the host function's `constants`: name, shape, dtype",
                 f"ENTRY = {entry!r}  # the host function of @{f.sym_name.data}"]
        if self.checks:
            lines.append(f"CHECKS = {self.checks!r}  # runtime checks: number -> (message, location)")
        lines += ["", f"def {entry}({', '.join(params)}):",
                  f'    """Run @{f.sym_name.data}: {launches} kernel launch(es)."""',
                  f"    device = {device}", *size.lines]  # fmt: skip
        if table:
            lines.append(f"    {', '.join(c.name for c in self.constants)}, = constants")
        if any(sig.has_descriptors for _, _, sig in self.launches.values()):
            lines.append("    _tma_allocator()")
        if self.kernel_checks:  # one flag per call, read once after the kernels ran
            lines.append("    checks = torch.zeros((1,), dtype=torch.int32, device=device)")
        for op in f.body.block.ops:
            if op in self.padded_in_place or VARIANT_OF in op.attributes:
                continue  # (a variant launches where the group it stands in for does)
            lines += _host_empties(op, names)
            lines += self.launch(op) if isinstance(op, GroupOp) else self._host_lines(op)
        return "\n".join(size.used(lines, self.host_indices)) + "\n"

    def _host_lines(self, op: Operation) -> list[str]:
        """The lines of a function-level op other than a kernel, with the host's checks."""
        names, size = self.names, self.size
        assert size is not None
        lines = []
        if isinstance(op, func.ReturnOp) and self.kernel_checks:
            lines += ["    failed = int(checks.item())",
                      "    if failed:",
                      "        raise check_error(*CHECKS[failed])"]  # fmt: skip
        for d, number in self.slice_checks.get(op, []):
            lines += _slice_check(op, d, number, names, size)  # pyright: ignore[reportArgumentType]
        lines += _host_op(op, names, size)
        if _host_index_op(op):
            self.host_indices.append(names(op.results[0]))
        if not isinstance(op, func.ReturnOp):
            lines += size.defined(op)
        return lines

    def launch(self, g: GroupOp) -> list[str]:
        _, stacked, _ = self.launches[g]
        names = self.names
        variants = variants_of(g, self.by_name)
        lines = self._equal_strides(g, stacked, variants)
        for i, v in enumerate(g.inputs):
            if (order := g.input_layout(i)) is not None:  # (a no-op once it is so)
                lines.append(f"    {names(v)} = _in_order({names(v)}, {order})")
        for i, r in enumerate(g.results):
            shape = _result_shape(g, i, names, self._size)
            dtype = torch_dtype(r.type, g)
            if (pad := _pad_in_place(g, r)) is not None:
                # (the kernel writes the pad's interior: no copy; the pad prints nothing)
                self.padded_in_place.add(pad)
                source = _result_sizes(g, i, names, self._size)
                lines += [f"    {names(pad.result)} = {_pad_filled(pad, source, dtype, 'device')}",
                          f"    {names(r)} = {names(pad.result)}[{_pad_spans(pad)}]"]  # fmt: skip
                continue
            lines.append(f"    {names(r)} = {_empty(shape, g.layout(i), dtype, 'device')}")
        if not variants:
            return lines + self._call(g, g)
        # the variant serving the launch's largest dynamic size (`tile-and-fuse`)
        key = self._call(g, g, sizes_only=True)
        size = self.variant_size
        lines.append(f"    {size} = max({', '.join(key)})" if len(key) > 1 else f"    {size} = {key[0]}")
        for k, v in enumerate([*variants, g]):
            if v is g:
                lines.append("    else:")
            else:
                hi = v.attributes[SERVES].get_values()[1]  # pyright: ignore[reportAttributeAccessIssue]
                lines.append(f"    {'if' if k == 0 else 'elif'} {size} <= {hi}:")
            lines += ["    " + s for s in self._call(v, g)]
        return lines

    def _call(self, g: GroupOp, owner: GroupOp, sizes_only: bool = False) -> list[str]:
        """The launch of `g`'s kernel writing `owner`'s results (a variant writes the
        results of the group it stands in for); `sizes_only`: the host expressions of
        its dynamic sizes. A kernel with a GPU twin (`KernelSignature.gpu`) launches the
        twin on a GPU, itself under the interpreter."""
        sig = self.launches[g][2]
        if sig.gpu is None or sizes_only:
            return self._launch(g, sig, owner, sizes_only)
        gpu, here = self._launch(g, sig.gpu, owner), self._launch(g, sig, owner)
        return ["    if _ON_GPU:", *("    " + s for s in gpu), "    else:", *("    " + s for s in here)]

    def _launch(self, g: GroupOp, sig: KernelSignature, owner: GroupOp, sizes_only: bool = False) -> list[str]:
        """`_call` of the kernel `sig` (`g`'s, or its GPU twin)."""
        lines: list[str] = []
        call, size_of = self._tensor_arguments(g, sig, lines, owner.results)
        if sizes_only:
            return list(dict.fromkeys(size_of.values()))
        if sig.has_checks:
            call.append("checks")
        consts = {p.name: p.value for p in sig.params if p.kind is CONSTEXPR}
        if consts:
            dtype, precision = f"tl.{consts['DOT_DTYPE']}", consts["DOT_PRECISION"]
            # (`dot_dtype` lets the interpreter run 16-bit dots in fp32; fp32 and fp64 stay.)
            dot = f"{dtype} if dot_dtype is None else dot_dtype" if precision == "tf32" else dtype
            call.append(f'DOT_DTYPE={dot}, DOT_PRECISION="{precision}"')
        lines += self._size_checks(g, sig, size_of)
        # (ceil-division as integer arithmetic: `triton.cdiv` is a Triton constexpr
        # function, ~2 us a call, one per launch of a dynamic program)
        programs = " * ".join([*([str(sig.programs)] if sig.programs != 1 or not sig.grid_sizes else []),
                               *(_ceil_div(_host_expr(n, size_of), b) for n, b in sig.grid_sizes)])
        # (`sig.programs` is one member's tiles here, its grid static or not: a stack of
        # grids with static counts whose loops take run-time sizes too)
        if sig.persistent:  # (a persistent kernel: one program per tile at most)
            programs = f"min({programs}, {sig.persistent // sig.members})"
        if sig.members > 1:  # (a stacked bundle: each member's programs)
            programs = f"{sig.members} * {programs}"
        if sig.branches:  # (branches of different programs: the sum of theirs)
            programs = " + ".join(
                " * ".join([*([str(n)] if n != 1 or not sizes else []),
                            *(_ceil_div(size_of.get(m, m), b) for m, b in sizes)])
                for n, sizes in sig.branches)  # fmt: skip
        lines.append(f"    {sig.name}[({programs},)]({', '.join(call)}, "
                     f"num_warps={sig.num_warps}, num_stages={sig.num_stages})")  # fmt: skip
        return lines

    def _tensor_arguments(self, g: GroupOp, sig: KernelSignature, lines: list[str],
                          results: Sequence[SSAValue]) -> tuple[list[str], dict[str, str]]:  # fmt: skip
        """The launch's tensor arguments in parameter order (pointer, strides, the
        sizes of its dynamic dims; writing `results`), and each size parameter's
        host expression."""
        names = self.names
        values = [*g.inputs, *results]
        call: list[str] = []
        size_of: dict[str, str] = {}
        for p in sig.params:
            if p.kind is POINTER and p.name != CHECKS_PARAM:
                assert p.tensor is not None
                v = values[p.tensor]
                if p.descriptor and not _host_made(v) and v not in self.tma_checked:
                    lines.append(f"    {names(v)} = _tma({names(v)})")
                call.append(f"{names(v)}, *{names(v)}.stride()" if p.strided else names(v))
            elif p.kind is SIZE:
                assert p.tensor is not None
                size_of[p.name] = self._size(values[p.tensor], p.dim)
                call.append(size_of[p.name])
        for p in sig.host_sizes:  # (not passed: read for the grid and the variant's size)
            assert p.tensor is not None
            size_of[p.name] = self._size(values[p.tensor], p.dim)
        return call, size_of

    def _size(self, value: SSAValue, axis: int) -> str:
        assert self.size is not None
        return self.size(value, axis)

    def _size_checks(self, g: GroupOp, sig: KernelSignature, size_of: dict[str, str]) -> list[str]:
        """Before a launch with dynamic sizes: those the kernel reads as one agree
        (`SAME_SIZES`), and each held whole fits its block (declared ranges bound one
        dim, not a product of them)."""
        lines, at = [], f"@{self.f.sym_name.data}"
        for same in g.attributes.get(SAME_SIZES, ArrayAttr([])).data:  # type: ignore[union-attr]
            read = {self._size(g.inputs[i], axis): f"{self.names(g.inputs[i])}.shape[{axis}]"
                    for i, axis in (a.get_values() for a in same.data)}  # type: ignore[attr-defined]
            if len(read) < 2:  # (one size by construction: nothing to check)
                continue
            said = ", ".join(f"{shown} = {{{n}}}" for n, shown in read.items())
            lines += [f"    if not ({' == '.join(read)}):",
                      f"        raise ValueError(f'{at}: dynamic sizes that must agree differ: {said}')"]  # fmt: skip
        for fixed in g.attributes.get(STATIC_SIZES, ArrayAttr([])).data:  # type: ignore[union-attr]
            i, axis, size = fixed.get_values()  # type: ignore[attr-defined]
            n, shown = self._size(g.inputs[i], axis), f"{self.names(g.inputs[i])}.shape[{axis}]"
            lines += [f"    if {n} != {size}:",
                      f"        raise ValueError(f'{at}: dynamic size {shown} = {{{n}}} must be {size} here')"]  # fmt: skip
        for n, b in sig.whole_sizes:
            if n.isdigit():  # (a static size read by `tensor.dim`: checked here, once)
                if int(n) > b:
                    raise CompileError.at(g, f"holds a dim of size {n} whole in blocks of {b}")
                continue
            size = _host_expr(n, size_of)
            lines += [f"    if {size} > {b}:",
                      f"        raise ValueError(f'{at}: {sig.name} holds a dynamic dim of size "
                      f"{{{size}}} whole in blocks of {b}: compile with a larger declared range')"]  # fmt: skip
        return lines

    def _equal_strides(self, g: GroupOp, stacked, variants: Sequence[GroupOp] = ()) -> list[str]:
        """A stacked kernel reads its first member's strides for every member's
        tensors: make them equal (contiguous copies) when the caller's differ. Tensors
        it (or one of its `variants`, stacks of the same members) reads through TMA
        descriptors: all as TMA reads them with equal strides, else row-major copies
        of all (`_tma_same`)."""
        names = self.names
        lines = []
        outer = dict(zip(g.entry.args, g.inputs, strict=True))
        values_of = [*g.inputs, *g.results]  # (a variant's inputs and results in this order)
        described = {values_of[p.tensor] for k in [g, *variants] for p in self.launches[k][2].params
                     if p.descriptor and p.tensor is not None}  # fmt: skip
        for column in stacked or []:
            values = list(dict.fromkeys(outer[v] for v in column if v in outer))
            if len(values) > 1 and values[0] in described:
                ts = ", ".join(names(v) for v in values)
                lines.append(f"    {ts} = _tma_same({ts})")
                self.tma_checked.update(values)
            elif len(values) > 1:
                ts = ", ".join(names(v) for v in values)
                same = " == ".join(f"{names(v)}.stride()" for v in values)
                lines += [f"    if not ({same}):",
                          f"        {ts} = {', '.join(f'{names(v)}.contiguous()' for v in values)}"]  # fmt: skip
        return lines


def _result_shape(g: GroupOp, i: int, names, read) -> tuple[int, ...] | str:
    """The shape of group result `i`: its type's, or, with dynamic sizes, a tuple
    expression reading them from the inputs (the `tensor.dim`s that size the grid's
    destination, `passes/tile_and_fuse.py`)."""
    shape = tuple(g.results[i].type.get_shape())
    if all(n >= 0 for n in shape):
        return shape
    return _tuple(_result_sizes(g, i, names, read))


def _tuple(parts: list[str]) -> str:
    return f"({', '.join(parts)}{',' if len(parts) == 1 else ''})"


def _result_sizes(g: GroupOp, i: int, names, read) -> list[str]:
    """`_result_shape`'s host expression of each dim of group result `i`."""
    shape = tuple(g.results[i].type.get_shape())
    if all(n >= 0 for n in shape):
        return [str(n) for n in shape]
    dest = g.entry.last_op.operands[i]  # type: ignore[union-attr]
    if isinstance(dest.owner, TileGridOp):
        dest = dest.owner.outs[list(dest.owner.results).index(dest)]
    empty = dest.owner
    if not isinstance(empty, tensor.EmptyOp):
        raise CompileError.at(g, f"has result {i} of dynamic shape whose sizes it does not say")
    sizes = list(reversed(empty.dynamic_sizes))
    if len(sizes) != sum(n < 0 for n in shape):
        raise CompileError.at(g, f"has result {i} of dynamic shape whose sizes it does not say")
    outer = dict(zip(g.entry.args, g.inputs, strict=True))
    return [str(n) if n >= 0 else _host_size(sizes.pop(), outer, read, g) for n in shape]


def _host_size(v: SSAValue, outer: dict, read, at: Operation) -> str:
    """A dynamic size as the host reads it (`read`: `SizeReader`): `tensor.dim` of a
    tensor it has."""
    op = v.owner
    if isinstance(op, tensor.DimOp) and isinstance(op.index.owner, arith.ConstantOp):
        source = outer.get(op.source, op.source)
        return read(source, op.index.owner.value.value.data)  # type: ignore[union-attr]
    if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, IndexType):
        return str(op.value.value.data)  # type: ignore[union-attr]
    if type(op) in SIZE_ARITH:  # (a strided window's rows: `(H + 1) // 2`)
        a, b = (_host_size(o, outer, read, at) for o in op.operands)  # type: ignore[union-attr]
        return f"({a} {SIZE_ARITH[type(op)]} {b})"
    raise CompileError.at(at, "has a dynamic size the host cannot compute (only tensor.dim "
                          "of a tensor with a constant index, constants and their arithmetic)")  # fmt: skip


def _host_made(value: SSAValue) -> bool:
    """Is `value` a tensor the host function allocates row-major (a kernel's result
    or a reshape of one), aligned as TMA needs without a check?"""
    while isinstance(value.owner, tensor.ExpandShapeOp | tensor.CollapseShapeOp):
        value = value.owner.src
    return isinstance(value.owner, GroupOp)


def _is_table_constant(op: Operation) -> bool:
    """A tensor constant the host function takes from `constants` (not a splat)."""
    return (isinstance(op, arith.ConstantOp) and isinstance(op.result.type, TensorType)
            and not is_splat(op))  # fmt: skip


def _host_splat(op: arith.ConstantOp) -> str:
    """A splat tensor constant: `torch.full` (torch rounds the IR's number to the
    tensor's dtype; an integer as a Python int: through a float, an i64 past 2**53
    would round)."""
    value = constant_array(op).reshape(-1)[0]
    text = repr(int(value)) if value.dtype.kind in "iub" else literal(float(value))
    shape, dtype = tuple(op.result.type.get_shape()), torch_dtype(op.result.type, op)
    return f"torch.full({shape}, {text}, dtype={dtype}, device=device)"



def _host_expr(size: str, size_of: dict[str, str]) -> str:
    """A kernel's size expression (a size parameter, or arithmetic on them:
    `(x_n2 + 1) // 2`) with each parameter as the host reads it."""
    if size in size_of:
        return size_of[size]
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: size_of.get(m.group(0), m.group(0)), size)


def _slice_spans(op: tensor.ExtractSliceOp | tensor.InsertSliceOp, names=None) -> str:
    """`o:o+n` (or `o:end:st`) per dim of a slice; `:` for a dynamic dim it keeps
    whole; offsets and sizes the host computes (an extract_slice's `slice_dims`) by
    their names."""
    if isinstance(op, tensor.InsertSliceOp):  # (static: `is_host_copy`)
        dims = [SliceDim(o, n, st) for o, n, st in zip(op.static_offsets.get_values(),
                op.static_sizes.get_values(), op.static_strides.get_values(), strict=True)]  # fmt: skip
    else:
        dims = slice_dims(op)
        assert dims is not None  # (`dynamic_slice_error`)
    spans = []
    for s in dims:
        if s.whole:
            spans.append(":")
            continue
        o, n, st = (names(v) if isinstance(v, SSAValue) else v for v in (s.offset, s.size, s.stride))
        if isinstance(o, int) and isinstance(n, int):
            end = o + (n - 1) * st + 1
        else:
            end = f"{o} + {n}" if st == 1 else f"{o} + ({n} - 1) * {st} + 1"
        spans.append(f"{o}:{end}" + (f":{st}" if st != 1 else ""))
    return ", ".join(spans)


def slice_checks(op: tensor.ExtractSliceOp) -> list[int]:
    """The dims of a host slice of a dynamic dim not kept whole (`x[:, 1:]`, `x[:, t - 1]`,
    `x[:, 3:5]`): the host checks at each call that the slice lies inside its source (a
    Python slice would clamp, a negative offset wrap), unless static offset and size
    fit the least size the dim can have (`dim_facts`: `x[:, 0]` of `T >= 1`)."""
    source = op.source.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
    dims = slice_dims(op) or []
    checked = []
    for d, s in enumerate(dims):
        if source[d] >= 0 or s.whole:
            continue
        if isinstance(s.offset, int) and isinstance(s.size, int):
            facts = dim_facts(op.source, d)
            if facts is not None and s.offset >= 0 and s.offset + (s.size - 1) * s.stride < facts.lo:
                continue
        checked.append(d)
    return checked


SLICE_CHECK = "slices a dim outside its source at this call's sizes"


def _slice_check(op: tensor.ExtractSliceOp, d: int, number: int, names, read) -> list[str]:
    s = (slice_dims(op) or [])[d]
    o, n = (names(v) if isinstance(v, SSAValue) else str(v) for v in (s.offset, s.size))
    extent = read(op.source, d)
    last = f"{o} + ({n} - 1) * {s.stride}" if s.stride != 1 else f"{o} + {n} - 1"
    holds = [*([f"0 <= {o}"] if isinstance(s.offset, SSAValue) else []),
             *([f"1 <= {n}"] if isinstance(s.size, SSAValue) else []), f"{last} < {extent}"]  # fmt: skip
    return [f"    if not ({' and '.join(holds)}):",
            f'        raise check_error(f"{{CHECKS[{number}][0]}} (dim {d}: offset {{{o}}}, '
            f'size {{{n}}}, step {s.stride} of {{{extent}}})", CHECKS[{number}][1])']  # fmt: skip


def _host_slice(op: tensor.ExtractSliceOp, names) -> str:
    """A `tensor.extract_slice` as a torch view (strided; unit dims the slice drops
    squeezed by a reshape, which views)."""
    view = f"{names(op.source)}[{_slice_spans(op, names)}]"
    shape = tuple(op.result.type.get_shape())
    if len(shape) != len(op.static_sizes.get_values()):
        if DYNAMIC_INDEX in shape:
            raise CompileError.at(op, "drops unit dims of a dynamic slice (not built)")
        view += f".reshape({shape})"
    return view


def _window_size(op: WindowOp, j: int, x: str) -> str:
    """The host's size of dynamic view dim `j`: a source dim (a convolution's images),
    or the positions a window slides to along the one source dim `r` that reads it,
    `r = s * j + sum c_k * k + c` with the other view dims `k` static (a convolution's
    output rows over a padded input of dynamic height: `(H - 1 - c - sum c_k (n_k - 1))
    // s + 1`, as torch sizes a convolution's output)."""
    shape = op.result.type.get_shape()  # pyright: ignore[reportAttributeAccessIssue]
    reading = [(r, coeffs, const) for r, (coeffs, const) in enumerate(op.terms()) if coeffs.get(j)]
    if len(reading) == 1:
        r, coeffs, const = reading[0]
        if coeffs == {j: 1} and not const:
            return f"{x}.shape[{r}]"
        if all(shape[k] >= 0 for k in coeffs if k != j):
            reach = const + sum(c * (shape[k] - 1) for k, c in coeffs.items() if k != j)
            step = coeffs[j]
            return f"({x}.shape[{r}] - {reach + 1}) // {step} + 1" if step != 1 else f"{x}.shape[{r}] - {reach}"
    raise CompileError.at(op, "has a dynamic window dim the host cannot size (one that a "
                          "source dim reads with static window dims only)")  # fmt: skip


def _host_window(op: WindowOp, names) -> str:
    """A `tilefuse.window` as `torch.as_strided` over its source (any layout):
    view dim j steps sum_r coeff[r][j] * source.stride(r); the constants move
    the storage offset."""
    x = names(op.source)
    terms = op.terms()

    def combine(pairs: list[tuple[int, int]]) -> str:
        parts = [f"{x}.stride({r})" if c == 1 else f"{c} * {x}.stride({r})" for r, c in pairs if c]
        return " + ".join(parts) or "0"

    rank = len(op.result.type.get_shape())
    strides = [combine([(r, coeffs.get(j, 0)) for r, (coeffs, _) in enumerate(terms)])
               for j in range(rank)]  # fmt: skip
    offset = combine([(r, const) for r, (_, const) in enumerate(terms)])
    shape = op.result.type.get_shape()
    sizes = [str(n) if n >= 0 else _window_size(op, j, x) for j, n in enumerate(shape)]
    shape = f"({', '.join(sizes)}{',' if rank == 1 else ''})"
    return (f"torch.as_strided({x}, {shape}, "
            f"({', '.join(strides)}{',' if rank == 1 else ''}), {x}.storage_offset() + {offset})")  # fmt: skip


def _host_empties(op: Operation, names) -> list[str]:
    """A `tensor.empty` read on the host (returned, reshaped, copied into): its
    contents are undefined; NaN, as the reference evaluator has them."""
    lines = []
    for v in op.operands:
        if isinstance(v.owner, tensor.EmptyOp) and v not in names.of:
            t = v.type
            sizes = list(v.owner.dynamic_sizes)
            if len(sizes) != sum(n < 0 for n in t.get_shape()):
                raise CompileError.at(v.owner, "has a dynamic type but not its sizes")
            sizes.reverse()
            shape = ", ".join(str(n) if n >= 0 else names(sizes.pop()) for n in t.get_shape())
            lines.append(f"    {names(v)} = torch.full(({shape},), float('nan'), "
                         f"dtype={torch_dtype(t, v.owner)}, device=device)")  # fmt: skip
    return lines


def _host_index(op: Operation, names, read) -> str:
    """A function-level index value on the host: a size, a constant, arithmetic."""
    if isinstance(op, tensor.DimOp):
        return _host_size(op.result, {}, read, op)
    if isinstance(op, arith.ConstantOp):
        return str(op.value.value.data)  # pyright: ignore[reportAttributeAccessIssue]
    a, b = (names(v) for v in op.operands)
    return f"{a} {SIZE_ARITH[type(op)]} {b}"


def _reshape_sizes(op: tensor.ExpandShapeOp | tensor.CollapseShapeOp, names) -> str:
    """The result shape of a reshape on the host: static sizes as numbers; with
    one dynamic size, -1; with more, an expand's `output_shape` (sizes the host
    computes: `tensor.dim`s and their arithmetic) and a collapse's products of
    its source's sizes."""
    shape = list(op.result.type.get_shape())  # pyright: ignore[reportAttributeAccessIssue]
    if sum(n < 0 for n in shape) <= 1:
        return repr(tuple(n if n >= 0 else -1 for n in shape))
    if isinstance(op, tensor.ExpandShapeOp):
        given = iter(op.dynamic_output_shape)
        parts = [str(n) if n >= 0 else names(next(given)) for n in shape]
    else:
        groups = [[d.value.data for d in g.data] for g in op.reassociation.data]  # pyright: ignore
        parts = [str(n) if n >= 0 else " * ".join(f"{names(op.src)}.shape[{d}]" for d in dims)
                 for n, dims in zip(shape, groups, strict=True)]  # fmt: skip
    return f"({', '.join(parts)},)"


def _host_index_op(op: Operation) -> bool:
    """A function-level op the host computes an index value with."""
    return isinstance(op, (tensor.DimOp, arith.ConstantOp, *SIZE_ARITH)) and isinstance(op.results[0].type, IndexType)


def _host_op(op: Operation, names, read) -> list[str]:
    """The host function's line(s) for a function-level op other than a kernel."""
    if isinstance(op, func.ReturnOp):
        return [f"    return {', '.join(_returned(v, names) for v in op.operands)}"]
    if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, TensorType):
        return [] if _is_table_constant(op) else [f"    {names(op.result)} = {_host_splat(op)}"]
    if isinstance(op, tensor.ExpandShapeOp | tensor.CollapseShapeOp):
        return [f"    {names(op.result)} = {names(op.src)}.reshape({_reshape_sizes(op, names)})"]
    if _host_index_op(op):
        return [f"    {names(op.results[0])} = {_host_index(op, names, read)}"]
    if isinstance(op, tensor.ExtractSliceOp):
        return [f"    {names(op.result)} = {_host_slice(op, names)}"]
    if isinstance(op, WindowOp):
        return [f"    {names(op.result)} = {_host_window(op, names)}"]
    if isinstance(op, tensor.ConcatOp | tensor.InsertSliceOp | tensor.PadOp):
        return _host_copy(op, names)
    if op.results and all(isinstance(r.type, IndexType) for r in op.results):
        known = ", ".join(o.name.removeprefix("arith.") for o in SIZE_ARITH)
        raise CompileError.at(op, f"computes a size the host cannot: sizes are computed with {known}")
    if not isinstance(op, arith.ConstantOp | tensor.EmptyOp):
        raise CompileError.at(op, "cannot run on the host between kernels")
    return []


def _pad_in_place(g: GroupOp, r: SSAValue) -> tensor.PadOp | None:
    """The static constant pad that is the only reader of kernel result `r`, if the
    kernel can write the pad's interior through a view (one grid: a stacked
    bundle's members share strides)."""
    uses = list(r.uses)
    if len(g.grids) != 1 or len(uses) != 1:
        return None
    pad = uses[0].operation
    return pad if isinstance(pad, tensor.PadOp) and pad_value(pad) is not None else None


def _pad_filled(op: tensor.PadOp, source: list[str], dtype: str, device: str) -> str:
    """A tensor of the pad's shape filled with its value (in the dim order
    `choose-layouts` gave it); `source`: the host expression of each of the padded
    tensor's sizes (a dynamic dim's grows by the static padding too)."""
    value = pad_value(op)
    assert value is not None
    data = value.owner.value.value.data  # type: ignore[union-attr]
    fill = repr(int(data)) if isinstance(value.type, IntegerType) else literal(float(data))
    shape: tuple[int, ...] | str = tuple(op.result.type.get_shape())  # type: ignore[attr-defined]
    if any(n < 0 for n in shape):  # type: ignore[union-attr]
        grow = [lo + hi for lo, hi in zip(op.static_low.get_values(), op.static_high.get_values(), strict=True)]
        shape = _tuple([str(n) if n >= 0 else f"{x} + {d}" if d else x
                        for n, x, d in zip(shape, source, grow, strict=True)])  # fmt: skip
    order = op.attributes.get(LAYOUT_ATTR)
    if isinstance(order, DenseArrayBase):
        return f"{_empty(shape, tuple(order.get_values()), dtype, device)}.fill_({fill})"  # type: ignore[arg-type]
    return f"torch.full({shape}, {fill}, dtype={dtype}, device={device})"


def _pad_spans(op: tensor.PadOp) -> str:
    """The slice of a pad's result its source fills (a dynamic dim's to `-high`)."""
    lows, highs = op.static_low.get_values(), op.static_high.get_values()
    return ", ".join(f"{lo}:{lo + n}" if n >= 0 else f"{lo}:{-hi if hi else ''}"
                     for lo, hi, n in zip(lows, highs, op.source.type.get_shape(), strict=True))  # type: ignore[attr-defined]  # fmt: skip


def _empty(shape: tuple[int, ...] | str, order: tuple[int, ...] | None, dtype: str,
           device: str) -> str:  # fmt: skip
    """An uninitialised tensor, its dims stored in `order` (outermost first) if given."""
    if order is None:
        return f"torch.empty({shape}, dtype={dtype}, device={device})"
    return f"torch.empty_permuted({shape}, {order}, dtype={dtype}, device={device})"


def _returned(v: SSAValue, names) -> str:
    """A returned value; a copy where it is (a view of) a constant of the table,
    which every call shares and a caller could write to."""
    owner = reshape_root(v).owner
    return f"{names(v)}.clone()" if isinstance(owner, Operation) and _is_table_constant(owner) else names(v)


def _host_copy(op: tensor.ConcatOp | tensor.InsertSliceOp | tensor.PadOp, names) -> list[str]:
    """`tensor.concat` as `torch.cat`; a static `tensor.insert_slice` as a copy of
    the destination with the source assigned into the slice (a new tensor: the
    destination may be read elsewhere); a static `tensor.pad` as a filled tensor
    with the source assigned into it."""
    r = names(op.result)
    if isinstance(op, tensor.PadOp):  # (not F.pad: its value is a float, an i64 past 2**53 rounds)
        x = names(op.source)
        source = [str(n) if n >= 0 else f"{x}.shape[{d}]" for d, n in enumerate(op.source.type.get_shape())]  # type: ignore[attr-defined]
        return [f"    {r} = {_pad_filled(op, source, f'{x}.dtype', f'{x}.device')}",
                f"    {r}[{_pad_spans(op)}] = {x}"]  # fmt: skip
    if isinstance(op, tensor.ConcatOp):
        parts = ", ".join(names(v) for v in op.inputs)
        return [f"    {r} = torch.cat([{parts}], dim={op.dim.value.data})"]
    sizes = tuple(op.static_sizes.get_values())
    return [f"    {r} = {names(op.dest)}.clone()",
            f"    {r}[{_slice_spans(op)}] = {names(op.source)}.reshape({sizes})"]  # fmt: skip


def _ceil_div(size: str, block: int) -> str:
    """Host code for `ceil(size / block)` of a nonnegative integer size."""
    return size if block == 1 else f"(({size} + {block - 1}) // {block})"
