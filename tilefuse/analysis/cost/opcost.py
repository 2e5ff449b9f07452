"""
What each op and each candidate group costs, read off the IR alone.

FLOPs: the arithmetic ops in a payload (`arith` float ops and `math` ops, one
FLOP each; `math.fma` two) times the loop nest's trip count, so a contraction's
`mulf` + `addf` gives the usual `2·M·N·K`.

Bytes, counted at each tensor's element size, every tensor moved exactly once
(perfect on-chip reuse within a kernel, which the tile plan makes true):

- **unfused**, op by op: every op reads its tensor inputs, reads its init if
  the payload uses the accumulator (a reduction's or contraction's fill), and
  writes its results. A `fill` writes its result. Every intermediate therefore
  crosses HBM twice (written by its producer, read by each consumer).
- **fused**, a group as one kernel: tensors produced outside the group are read
  once (once per pass when rows exceed on-chip memory), results used outside
  the group (or returned) are written once; intermediates and fills (always
  recomputed where used) stay on chip.

A gather (`tensor.extract` in a payload) reads one element per loop iteration at
computed indices, at most the whole tensor: an embedding lookup of T tokens costs
T rows of the table, fused or not, never the table.

For `z = relu(x + y)` as two ops over N elements this gives 5N unfused (add
reads 2N, writes N; relu reads N, writes N) and 3N fused; a chain of K unary
ops moves 2KN unfused and 2N fused. Seed 000 rounds these to "2x" and "K round
trips become 1"; the counts here are exact for the IR given.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue

from tilefuse.analysis.dataflow import (
    CONTRACTION,
    FILL,
    Graph,
    Node,
    gathers,
    recompute_cone,
    shared_dims,
)
from tilefuse.analysis.dot import tensor_core_dtype
from tilefuse.ir.dtypes import dtype_bytes
from tilefuse.ir.structured import StructuredOp, planned_shape

_FREE = (arith.ConstantOp, arith.IndexCastOp, arith.ExtFOp, arith.TruncFOp,
         arith.SIToFPOp, arith.UIToFPOp, arith.SelectOp, arith.CmpiOp)  # fmt: skip


def tensor_bytes(value: SSAValue) -> int:
    """Bytes of a tensor value; 0 for scalars."""
    if not isinstance(value.type, TensorType):
        return 0
    return math.prod(planned_shape(value)) * dtype_bytes(value.type)


def gathered_bytes(s: StructuredOp, read: Collection[SSAValue] = ()) -> int:
    """Bytes the payload's gathers read: an element per loop iteration for each
    distinct gathered tensor, at most that tensor's size; nothing for a tensor
    in `read` (the kernel reads it whole anyway)."""
    trips = math.prod(s.planned_ranges)
    tables = [t for t in dict.fromkeys(g.tensor for g in gathers(s)) if t not in read]
    return sum(min(trips, math.prod(planned_shape(t))) * dtype_bytes(t.type) for t in tables)


def payload_flops(s: StructuredOp) -> int:
    """FLOPs for one iteration of the loop nest."""
    flops = 0
    for op in s.payload.ops:
        if isinstance(op, mathd.FmaOp):
            flops += 2
        elif op.dialect_name() == "math" or (
            op.dialect_name() == "arith" and not isinstance(op, _FREE)
        ):
            flops += 1
    return flops


# Transcendentals run on the special function units (MUFU): 16 lanes per SM
# per clock against 128 for FP32 FMA (2 FLOPs), so one costs ~16 FLOP-slots.
_SFU = (mathd.ExpOp, mathd.Exp2Op, mathd.LogOp, mathd.Log2Op, mathd.Log1pOp, mathd.TanhOp,
        mathd.ErfOp, mathd.SqrtOp, mathd.RsqrtOp, mathd.SinOp, mathd.CosOp, mathd.PowFOp,
        mathd.ExpM1Op, mathd.Log10Op, mathd.TanOp, mathd.SinhOp, mathd.CoshOp,
        mathd.AtanOp, mathd.Atan2Op, mathd.AsinOp, mathd.AcosOp, mathd.AsinhOp,
        mathd.AcoshOp, mathd.AtanhOp, arith.DivfOp)  # fmt: skip


# Math ops printed as long library code (erf: two polynomials and an exponential; the prelude's
# pow/log1p/expm1/sinh/cosh/tan, full-range sin/cos), inlined once per element a
# thread holds: what makes a GEMM epilogue slow to compile.
_LIBRARY_CALLS = (mathd.ErfOp, mathd.PowFOp, mathd.Log1pOp, mathd.ExpM1Op, mathd.TanOp,
                  mathd.SinhOp, mathd.CoshOp, mathd.SinOp, mathd.CosOp, mathd.AtanOp,
                  mathd.Atan2Op, mathd.AsinOp, mathd.AcosOp, mathd.AsinhOp, mathd.AcoshOp,
                  mathd.AtanhOp)  # fmt: skip


def payload_library_calls(s: StructuredOp) -> int:
    """Ops per loop iteration printed as inlined library code (erf, pow, ...)."""
    return sum(1 for op in s.payload.ops if isinstance(op, _LIBRARY_CALLS))


def payload_sfu_ops(s: StructuredOp) -> int:
    """Transcendental ops (exp, tanh, rsqrt, divide, ...) per loop iteration."""
    return sum(1 for op in s.payload.ops if isinstance(op, _SFU))


def uses_accumulator(s: StructuredOp) -> list[bool]:
    """For each output: does the payload read its current value?"""
    accs = s.payload.args[len(s.inputs) :]
    return [bool(a.uses) for a in accs]


@dataclass(frozen=True)
class OpCost:
    """FLOPs and HBM traffic of one op run as its own kernel."""

    flops: int
    bytes_read: int
    bytes_written: int
    tc_flops: int = 0
    """FLOPs a low-precision contraction runs on tensor cores."""
    sfu_ops: int = 0
    """Transcendentals, on the special function units."""
    tc_dtype: str | None = None
    """The dtype of the tensor-core work (`dot.tensor_core_dtype`)."""

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written


def op_cost(node: Node) -> OpCost:
    """Cost of `node` alone (unfused)."""
    s = node.s
    trips = math.prod(s.planned_ranges)
    flops = payload_flops(s) * trips
    tc_dtype = tensor_core_dtype(s) if node.kind == CONTRACTION else None
    tc = flops if tc_dtype is not None else 0
    read = sum(tensor_bytes(v) for v in s.inputs) + gathered_bytes(s, s.inputs)
    read += sum(
        tensor_bytes(v)
        for v, used in zip(s.outputs, uses_accumulator(s), strict=True)
        if used
    )
    written = sum(tensor_bytes(r) for r in node.op.results)
    return OpCost(flops, read, written, tc, payload_sfu_ops(s) * trips, tc_dtype)


@dataclass(frozen=True)
class GroupCost:
    """A candidate group: its traffic unfused (op by op) and fused (one kernel)."""

    flops: int
    unfused_bytes: int
    fused_bytes_read: int
    fused_bytes_written: int
    kernels_unfused: int
    passes: int = 1
    """Passes over the inputs: more than one when rows exceed on-chip memory."""
    tc_flops: int = 0
    sfu_ops: int = 0
    dtype: str = "f32"
    """The dtype tensor-core work runs in (its first contraction's); "f32" without."""

    @property
    def fused_bytes(self) -> int:
        return self.fused_bytes_read * self.passes + self.fused_bytes_written


def group_cost(graph: Graph, nodes: Sequence[Node], passes: int = 1) -> GroupCost:
    """Fused vs unfused traffic of running `nodes` as one kernel (`passes` over inputs)."""
    members = set(nodes)
    # a producer read along two different loops is computed once per read
    split = shared_dims(graph, nodes).split_reads
    again = [op_cost(p) for ni, i in split for p in recompute_cone(graph, nodes, graph.nodes[ni], i)]
    costs = [op_cost(n) for n in nodes]
    inputs: dict[SSAValue, None] = {}
    for n in nodes:
        for v in n.s.operands:
            p = graph.producer_of(v)
            if p is not None and p.kind == FILL:
                continue  # fills are recomputed in every group that reads them
            outside = p is None or p not in members
            if outside and (v in n.s.inputs or _reads_init(n, v)):
                inputs[v] = None
    outputs = [
        r
        for n in nodes
        for r in n.op.results
        if any(graph.by_op.get(u.operation) not in members for u in r.uses)
    ]
    return GroupCost(
        flops=sum(c.flops for c in costs) + sum(c.flops for c in again),
        unfused_bytes=sum(c.bytes for c in costs),
        fused_bytes_read=sum(tensor_bytes(v) for v in inputs)
        + sum(gathered_bytes(n.s, inputs) for n in nodes),
        fused_bytes_written=sum(tensor_bytes(r) for r in outputs),
        kernels_unfused=len(nodes),
        passes=passes,
        tc_flops=sum(c.tc_flops for c in costs),
        sfu_ops=sum(c.sfu_ops for c in costs) + sum(c.sfu_ops for c in again),
        dtype=next((c.tc_dtype for c in costs if c.tc_dtype is not None), "f32"),
    )


def _reads_init(node: Node, value: SSAValue) -> bool:
    s = node.s
    for v, used in zip(s.outputs, uses_accumulator(s), strict=True):
        if v is value and used:
            return True
    return False
