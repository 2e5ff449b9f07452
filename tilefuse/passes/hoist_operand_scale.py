"""
`hoist-operand-scale`: a contraction of a factor times a scalar becomes the scalar
times the contraction.

ATen's math attention, what torch.export traces for f32 SDPA, scales Q and K each by
`sqrt(scale)` before their product; Hugging Face's eager attention scales Q; a bf16
model often writes `q.float() * scale`. Each scaled factor is an elementwise generic
that a contraction reads tile by tile, so fusion leaves it a kernel of its own (its
output written and read back: for SDPA two launches before attention), and a widened
16-bit factor multiplied by an inexact scale is no longer a product of two 16-bit
values: the dot runs in IEEE f32 (`analysis/dot.py`).

A sum of products is linear in each factor: `sum_k (a_k c) b_k = c sum_k a_k b_k`
for a scalar `c` (and `/ c` alike), when the sum starts from 0. So a contraction
whose init is a fill of 0 and one of whose factors (read by nothing else but size
reads) is an f32
elementwise generic yielding `x * c` or `x / c`, `x` its input element (or that
element widened from 16 bits) and `c` the same at every point (a constant, a 0-d
input), reads `x` instead (a view, which `fold-operand-extf` then folds), and an
elementwise generic multiplies (or divides) its result by `c`: an epilogue, or in
attention the scale on the scores, which `flash-attention` takes.

Exact in real arithmetic; in f32 the scale is rounded once per output instead of once
per factor element, a relative difference of an ulp or two (docs/ARCHITECTURE.md,
"Roundings a fused kernel moves"). 16-bit payloads are left as they are: a bf16 `x c`
rounds to 8 bits, a difference eager would see.

```mlir
%qs = linalg.generic ins(%q) outs(%e) { ^bb0(%a: f32, %o: f32):
        %c = arith.truncf %cst : f64 to f32
        %m = arith.mulf %a, %c : f32
        linalg.yield %m : f32 }
%s = linalg.generic ins(%qs, %k) outs(%zeros) { mulf; addf }   // a contraction
// becomes
%qv = linalg.generic ins(%q) outs(%e) { ^bb0(%a: f32, %o: f32): linalg.yield %a : f32 }
%s0 = linalg.generic ins(%qv, %k) outs(%zeros) { mulf; addf }
%s = linalg.generic ins(%s0) outs(%e2) { ^bb0(%a: f32, %o: f32):
        %c = arith.truncf %cst : f64 to f32
        %m = arith.mulf %a, %c : f32
        linalg.yield %m : f32 }
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    Float32Type,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tilefuse.analysis.dataflow import factor_positions, is_contraction
from tilefuse.ir.structured import as_structured, like, sized_empty
from tilefuse.passes.cleanup import is_zero_fill


@dataclass(frozen=True)
class HoistOperandScalePass(ModulePass):
    """Move a scalar multiply (or divide) of a contraction's factor to its result."""

    name = "hoist-operand-scale"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(HoistScaleOutOfContraction()).rewrite_module(op)


@dataclass(frozen=True)
class Scale:
    """An elementwise generic yielding `x * c` or `x / c` (`divides`)."""

    x: SSAValue
    """Its input element, or that element widened by `arith.extf`."""
    c: SSAValue
    """The scale: computed from constants, values defined outside, 0-d inputs."""
    divides: bool
    cone: tuple[Operation, ...]
    """The payload ops computing `c`, in order."""


class HoistScaleOutOfContraction(RewritePattern):
    """A function-level contraction from 0 reading a scaled factor (`scale_of`)
    reads the unscaled factor; its result is scaled after it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: linalg.GenericOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp):
            return
        s = as_structured(op)
        if s is None or not is_contraction(s) or not is_zero_fill(op.outputs[0]):
            return
        if not isinstance(op.results[0].type, TensorType) or op.results[0].type.get_element_type() != Float32Type():
            return
        for i in factor_positions(op):
            scaled = op.inputs[i].owner
            readers = [u.operation for u in op.inputs[i].uses]
            if not isinstance(scaled, linalg.GenericOp) or readers.count(op) != 1 or \
                    not all(isinstance(o, tensor.DimOp) for o in readers if o is not op):  # fmt: skip
                continue  # (read twice, or by another op; a size read is the unscaled tensor's)
            scale = scale_of(scaled)
            if scale is None:
                continue
            unscaled = _unscaled(scaled, scale)
            rewriter.insert(unscaled, InsertPoint.before(scaled))
            op.inputs[i].replace_all_uses_with(unscaled.results[0])
            rewriter.notify_op_modified(op)
            *made, after = _scaling(op.results[0], scaled, scale)
            rewriter.insert([*made, after], InsertPoint.after(op))
            new = {after, *made}  # (their size reads stay the contraction's)
            op.results[0].replace_uses_with_if(after.results[0], lambda use, n=new: use.operation not in n)
            rewriter.erase(scaled)
            return


def scale_of(op: linalg.GenericOp) -> Scale | None:
    """`op` as a `Scale` of its first input (its other inputs 0-d), with an
    identity-mapped f32 output and a view of the input (a permutation or broadcast);
    None otherwise."""
    maps = [m.data for m in op.indexing_maps.data]
    if (len(op.outputs) != 1 or not op.inputs or any(str(i.data) != "parallel" for i in op.iterator_types)
            or maps[-1] != AffineMap.identity(maps[-1].num_dims) or any(m.results for m in maps[1:-1])):  # fmt: skip
        return None
    dims = [r.position for r in maps[0].results if isinstance(r, AffineDimExpr)]
    if len(dims) != len(maps[0].results) or len(set(dims)) != len(dims):
        return None
    block = op.body.block
    yielded = block.last_op
    if not isinstance(yielded, linalg.YieldOp) or yielded.operands[0].type != Float32Type():
        return None
    scaled = yielded.operands[0].owner
    if not isinstance(scaled, arith.MulfOp | arith.DivfOp):
        return None
    a, b = scaled.operands
    for x, c in ((a, b), (b, a)) if isinstance(scaled, arith.MulfOp) else ((a, b),):
        if _element(x, block) and (cone := _invariant_cone(c, block)) is not None:
            used = {*cone, scaled, yielded} | ({x.owner} if isinstance(x.owner, Operation) else set())
            if set(block.ops) == used:
                return Scale(x, c, isinstance(scaled, arith.DivfOp), cone)
    return None


def _element(x: SSAValue, block: Block) -> bool:
    """The first input's element, or it widened from 16 bits (`arith.extf`)."""
    if isinstance(x.owner, arith.ExtFOp) and x.owner.parent_block() is block:
        return x.owner.input is block.args[0] and x.owner.input.type.bitwidth == 16  # pyright: ignore
    return x is block.args[0]


def _invariant_cone(c: SSAValue, block: Block) -> tuple[Operation, ...] | None:
    """The payload ops `c` is computed by, if none reads the first input's element or
    the output's (a value of the payload's other block arguments, the 0-d inputs,
    and of values from outside); None otherwise."""
    found: set[Operation] = set()
    pending = [c]
    while pending:
        v = pending.pop()
        if isinstance(v, BlockArgument):
            if v.block is block and (v.index == 0 or v.index == len(block.args) - 1):
                return None
            continue
        owner = v.owner
        if isinstance(owner, Operation) and owner.parent_block() is block and owner not in found:
            if owner.regions:
                return None
            found.add(owner)
            pending += owner.operands
    return tuple(o for o in block.ops if o in found)


def _unscaled(op: linalg.GenericOp, scale: Scale) -> linalg.GenericOp:
    """`op` yielding its element `x` without the scale: a view of its first input."""
    block = op.body.block
    new = Block(arg_types=[block.args[0].type, block.args[-1].type])
    value: SSAValue = new.args[0]
    if isinstance(scale.x.owner, arith.ExtFOp):
        ext = arith.ExtFOp(value, Float32Type())
        new.add_op(ext)
        value = ext.result
    new.add_op(linalg.YieldOp(value))
    maps = [op.indexing_maps.data[0], op.indexing_maps.data[-1]]
    unscaled = linalg.GenericOp([op.inputs[0]], list(op.outputs), Region(new), maps,
                                op.iterator_types, [r.type for r in op.results])  # fmt: skip
    unscaled.location = op.location
    return unscaled


def _scaling(result: SSAValue, op: linalg.GenericOp, scale: Scale) -> list[Operation]:
    """The contraction's `result` times (over) the scale of `op`, recomputed as `op`
    computes it (its 0-d inputs read again): the ops, the generic last."""
    t = result.type
    assert isinstance(t, TensorType)
    rank = len(t.get_shape())
    *sizes, empty = sized_empty(t, like(t, result))
    scalars = list(op.inputs[1:])
    block = op.body.block
    new = Block(arg_types=[Float32Type(), *(a.type for a in block.args[1:-1]), Float32Type()])
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args[1:-1], new.args[1:-1], strict=True))
    for o in scale.cone:
        clone = o.clone(value_mapper=mapping)
        new.add_op(clone)
        mapping.update(zip(o.results, clone.results, strict=True))
    c = mapping.get(scale.c, scale.c)
    scaled = arith.DivfOp(new.args[0], c) if scale.divides else arith.MulfOp(new.args[0], c)
    new.add_ops([scaled, linalg.YieldOp(scaled.result)])
    scalar_map = AffineMapAttr(AffineMap(rank, 0, ()))
    identity = AffineMapAttr(AffineMap.identity(rank))
    generic = linalg.GenericOp([result, *scalars], [empty.results[0]], Region(new),
                               [identity, *[scalar_map] * len(scalars), identity],
                               [IteratorTypeAttr(IteratorType.PARALLEL)] * rank, [t])  # fmt: skip
    generic.location = op.location
    return [*sizes, empty, generic]

