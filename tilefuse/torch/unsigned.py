"""
Unsigned integer tensors (`torch.uint8` images, masks, tables) as torch-mlir can lower them.

torch-mlir writes an unsigned tensor as a signless one (`tensor<...xi8>`) and lowers
its conversions right (`arith.extui`, `arith.uitofp`), but not its arithmetic: `x - 1`,
`x * 2`, `x // 3` and `x % 3` of a `uint8` tensor abort the process in its lowering,
`bitwise_or` is left illegal, `max` and `clamp` become `maxui`/`minui`.

ATen computes an op on `uint8` values as on the integers they stand for, the result
reduced modulo 256 where it is `uint8` again (`x * 3`, `-x`, `x << 1` wrap), an
integer operand of a pointwise op that returns `uint8` or compares in it read as a
`uint8` first (`x == 300` compares with 44, `x + 300` adds 44; `x / 300`, whose common
dtype is float, divides by 300). So does the op on the values
widened to `int32`, those operands reduced modulo 256, followed by a conversion back
to `uint8` (a truncation: modulo 2^32 and then 2^8 is modulo 2^8); a comparison, a
division, a maximum, a sum (`int64` in ATen either way) or a conversion to float
reads the same values. `widen_unsigned` rewrites every op that reads an unsigned tensor so: the
graph then holds unsigned values only at its placeholders, its outputs and the
dtype conversions between them, which torch-mlir lowers.

The compiled program's arguments and results are signless: `UnsignedIO` passes an
unsigned tensor as its signed view of the same bits (`x.view(torch.int8)`, no copy)
and views an unsigned output back.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Graph, Node
from torch.utils import _pytree as pytree

from tilefuse.ir.diagnostics import ArgumentError, CompileError
from tilefuse.torch.aten_graph import inline, traced, user_line

aten, prims = torch.ops.aten, torch.ops.prims

WIDER = {torch.uint8: torch.int32, torch.uint16: torch.int32, torch.uint32: torch.int64}
"""What an op on an unsigned dtype computes in: a signed dtype holding every value."""

SIGNED = {torch.uint8: torch.int8, torch.uint16: torch.int16, torch.uint32: torch.int32,
          torch.uint64: torch.int64}  # fmt: skip
"""The signed dtype of the same width: the program's view of an unsigned tensor."""

KEPT = frozenset({aten._to_copy.default, prims.convert_element_type.default,
                  aten._assert_tensor_metadata.default, aten.sym_size.int, aten.sym_stride.int,
                  aten.sym_numel.default, aten.view.dtype})  # fmt: skip
"""Ops left on unsigned tensors: dtype conversions (torch-mlir lowers them from and to
unsigned dtypes), a bitcast (widened, it would view other bits) and ops that read only
a tensor's metadata."""


def _unsigned(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype in SIGNED


def _values(node: Node) -> list[Any]:
    value = node.meta.get("val")
    return list(value) if isinstance(value, list | tuple) else [value]


def _wrapped(operand: Any, unsigned: torch.Tensor) -> Any:
    """An integer operand of a pointwise op on `unsigned` as ATen reads it: in the
    unsigned dtype (`x == 300` of a `uint8` x compares with 44, `x.clamp(min=-5)` clamps
    at 251) where that is the op's common dtype, else as it is."""
    dtype = unsigned.dtype
    if isinstance(operand, bool) or not isinstance(operand, int | torch.Tensor):
        return operand
    if isinstance(operand, torch.Tensor) and (operand.dtype in SIGNED or operand.is_floating_point()
                                              or operand.is_complex() or operand.dtype == torch.bool):  # fmt: skip
        return operand
    if torch.result_type(unsigned, operand) != dtype:
        return operand
    if isinstance(operand, int):
        return operand % (1 << (8 * dtype.itemsize))
    return operand.to(dtype)


def _widened(target: Any, results: list[torch.dtype | None]) -> Any:
    """`target` on its unsigned arguments widened (`WIDER`), a pointwise op's integer
    operands first read in the unsigned dtype (`_wrapped`), each result converted back
    to its dtype."""
    # ATen casts a pointwise op's operands to its common dtype: the unsigned one where
    # the op returns it or compares in it (`x % 300`, `x == 300`), not where it promotes
    # integers to float (`x / 300` divides by 300)
    wraps = torch.Tag.pointwise in getattr(target, "tags", ()) and \
        (results[0] in SIGNED or results[0] == torch.bool)  # fmt: skip

    def widened(*args: Any, **kwargs: Any) -> Any:
        unsigned = next((a for a in pytree.tree_leaves((args, kwargs)) if _unsigned(a)), None)
        if wraps and unsigned is not None:
            args, kwargs = pytree.tree_map(lambda a: _wrapped(a, unsigned), (args, kwargs))
        args, kwargs = pytree.tree_map(lambda a: a.to(WIDER[a.dtype]) if _unsigned(a) else a,
                                       (args, kwargs))  # fmt: skip
        out = target(*args, **kwargs)
        outs = list(out) if isinstance(out, list | tuple) else [out]
        outs = [o.to(d) if d is not None and o.dtype != d else o for o, d in zip(outs, results, strict=True)]
        return tuple(outs) if isinstance(out, list | tuple) else outs[0]

    return widened


def _rewrite(graph: Graph, node: Node) -> bool:
    """`node` computed on its unsigned arguments widened; False (the graph unchanged)
    where it cannot be (an argument in a list, a tuple result read other than by index)."""
    if not all(isinstance(v, torch.Tensor) and v.dtype in WIDER for a in node.all_input_nodes
               for v in [a.meta.get("val")] if _unsigned(v)):  # fmt: skip
        return False  # (uint64: nothing wider)
    values = _values(node)
    tuple_result = isinstance(node.meta.get("val"), list | tuple)
    if tuple_result and any(user.target is not operator.getitem for user in node.users):
        return False
    results = [v.dtype if isinstance(v, torch.Tensor) else None for v in values]
    found = traced(tuple(node.args), dict(node.kwargs), _widened(node.target, results))
    if found is None:
        return False
    outs = inline(graph, node, *found)
    if tuple_result:
        for user in list(node.users):
            user.replace_all_uses_with(outs[user.args[1]])  # pyright: ignore[reportArgumentType]
            graph.erase_node(user)
    else:
        node.replace_all_uses_with(outs[0])  # pyright: ignore[reportArgumentType]
    graph.erase_node(node)
    return True


def widen_unsigned(graph: Graph) -> bool:
    """Rewrite each op of `graph` that reads an unsigned tensor, other than a dtype
    conversion, on its values widened (the module docstring); whether it changed. An
    op it cannot rewrite is a located `CompileError` (never handed to torch-mlir,
    whose lowering aborts on some)."""
    changed = False
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target in KEPT:
            continue
        if not any(_unsigned(a.meta.get("val")) for a in node.all_input_nodes):
            continue
        if not _rewrite(graph, node):
            dtype = next(v.dtype for a in node.all_input_nodes for v in [a.meta.get("val")] if _unsigned(v))
            raise CompileError(f"{node.target}{user_line(node)} on a {dtype} tensor is not supported: "
                               "tilefuse computes on unsigned tensors by widening them, and cannot "
                               "widen this op's arguments (convert them to a signed dtype first)")  # fmt: skip
        changed = True
    return changed


@dataclass(frozen=True)
class UnsignedIO:
    """Which of a program's arguments and results are unsigned tensors (by position,
    with their dtypes): passed to and taken from the program as their signed views."""

    inputs: tuple[tuple[int, torch.dtype], ...] = ()
    outputs: tuple[tuple[int, torch.dtype], ...] = ()

    @staticmethod
    def of(graph: Graph) -> UnsignedIO:
        """Read from the graph's placeholders and outputs (before or after `widen_unsigned`)."""
        placeholders = [n.meta.get("val") for n in graph.nodes if n.op == "placeholder"]
        out = graph.output_node().args[0]
        returned = [o.meta.get("val") if isinstance(o, Node) else o
                    for o in (out if isinstance(out, list | tuple) else [out])]  # fmt: skip
        return UnsignedIO(tuple((i, v.dtype) for i, v in enumerate(placeholders) if _unsigned(v)),
                          tuple((i, v.dtype) for i, v in enumerate(returned) if _unsigned(v)))  # fmt: skip

    def __bool__(self) -> bool:
        return bool(self.inputs or self.outputs)

    def arguments(self, args: Sequence[Any], name: str, check: bool = True) -> list[Any]:
        """`args` with each unsigned one as its signed view; `check`: an
        `ArgumentError` where one is not of the dtype compiled for (its signed view
        would compute another function)."""
        args = list(args)
        for i, dtype in self.inputs:
            a = args[i]
            if check and (not isinstance(a, torch.Tensor) or a.dtype != dtype):
                got = a.dtype if isinstance(a, torch.Tensor) else type(a).__name__
                raise ArgumentError(f"input {i} of {name} was compiled as a {dtype} tensor, got {got}")
            args[i] = a.view(SIGNED[dtype])
        return args

    def results(self, outputs: Sequence[Any]) -> list[Any]:
        """`outputs` with each unsigned one viewed back from its signed view."""
        outputs = list(outputs)
        for i, dtype in self.outputs:
            outputs[i] = outputs[i].view(dtype)
        return outputs
