"""
`fold-softmax-scale`: the online softmax's exponentials as one FMA and an `exp2`.

Not a default stage: opt-in (`tilefuse-opt -p fold-softmax-scale` on tiled IR). The
second rewrite is inexact where the program is exact: `exp(fl(s c) - m)` is 1 at the
row's max, `exp2(fl(s k) - fl(m log2 e))` is off by an ulp of `s k` (1e-5 relative at
scaled scores of ~30, NaN rows past ~1e9), and a two-pass softmax gets it in one pass
only (tests/test_fold_softmax_scale.py, docs/ARCHITECTURE.md).

Runs on tile programs, after `tile-and-fuse`. In the key loop of an online softmax
(FlashAttention's, a long row's) every score costs, as tiled: the scale
(`r = s * c`), the max over `r`, `r - m`, and `exp`, which the GPU computes as
`ex2(x * log2 e)`. Two identities take most of that away (the first exact, the second not):

1. *A positive scale commutes with the max*: `max_j(s_j c) = c max_j s_j` for a
   constant `c > 0` (rounding is monotone, so this holds in floating point too, also
   for infinities and NaN). The max reduces `s` and scales the row.
2. *`exp(s c - m) = exp2(s (c log2 e) - m log2 e)`*: the row term `m log2 e` is one
   multiply per row, the score term one FMA. Not bit-identical to `exp` (the
   argument is rounded once, in the FMA, instead of twice), as every FlashAttention
   kernel computes it; the error is an ulp of the argument.

So each score costs a max, an FMA and an `ex2` instead of two multiplies, a
subtraction, a max and an `ex2`: 1.06-1.19x on the H200's attention kernels
(`tools/experiments/attention_hopper.py`, docs/PERF.md). Only f32 payloads are
rewritten: a 16-bit payload's constants are 16-bit values, and `c log2 e` rounded to
bf16 would move every exponent by up to 2^-9 of itself. Only loops that carry a max
(an online softmax) are touched; everything else is left as it is.

```mlir
%r = linalg.generic ins(%s) { mulf %x, %c }               // c > 0
%m = linalg.generic ins(%r) outs(%m_old) { maximumf }     // reduction
%e = linalg.generic ins(%r, %m') { subf; exp }
// becomes
%t = linalg.generic ins(%s) outs(%neg_inf) { maximumf }   // max of the unscaled scores
%m = linalg.generic ins(%m_old, %t) { maximumf %a, (mulf %b, %c) }
%l = linalg.generic ins(%m') { mulf %x, log2e }           // per row
%e = linalg.generic ins(%s, %l) { subf (mulf %x, c log2e), %y; exp2 }
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, scf, tensor
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AffineMapAttr,
    Float32Type,
    FloatAttr,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.ir.tilefuse import TileGridOp

LOG2E = 1.0 / math.log(2.0)
MAX_COMBINERS = (arith.MaximumfOp, arith.MaxnumfOp)
MAX_FOLDED = 0.999
"""The largest `c log2 e` folded: below 1, `s c log2 e` is finite wherever `s` is."""


@dataclass(frozen=True)
class FoldSoftmaxScalePass(ModulePass):
    """Online-softmax exponentials as `exp2` of one FMA; a positive scale out of the max."""

    name = "fold-softmax-scale"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for grid in [o for o in op.walk() if isinstance(o, TileGridOp)]:
            for loop in [o for o in grid.walk() if isinstance(o, scf.ForOp)]:
                if _carries_max(loop):
                    fold_loop(loop.body.block)


def fold_loop(block: Block) -> None:
    """Both rewrites on the generics of one online-softmax loop body: the exponentials
    are rewritten only of a scaled tile whose max was (so the row max they subtract
    is `c` times a max of `s`, and with `c log2 e < 1` neither `s k` nor
    `m log2 e` can overflow where `s c` did not)."""
    unscaled: dict[SSAValue, tuple[SSAValue, float]] = {}
    for g in [o for o in block.ops if isinstance(o, linalg.GenericOp)]:
        if _max_reduction(g) is None:
            continue
        found = unscaled.get(g.inputs[0]) or _unscaled(g.inputs[0])
        if found is not None:
            unscaled[g.inputs[0]] = found
            _unscale_max(g, *found)
    for g in [o for o in block.ops if isinstance(o, linalg.GenericOp)]:
        found = _exp_of_difference(g)
        args = list(g.body.block.args)
        if found is not None and (x := g.inputs[args.index(found[0].lhs)]) in unscaled:
            _as_exp2(g, *unscaled[x])
    for v in unscaled:
        _erase_if_dead(v.owner)


def _unscaled(v: SSAValue) -> tuple[SSAValue, float] | None:
    """(s, c) with `v = s c` for a constant `c > 0`: `v` a scaled tile, or a masked
    one, `select(keep, u, -inf)` of a scaled `u = t c` (SDPA's causal mask), for
    which `s = select(keep, t, -inf)` is made (`c * -inf = -inf`)."""
    if (found := _scaled(v)) is not None:
        return found
    g = v.owner
    if not (isinstance(g, linalg.GenericOp) and len(g.outputs) == 1 and _parallel(g)
            and isinstance(g.body.block.args[-1].type, Float32Type)):  # fmt: skip
        return None
    pick = g.body.block.last_op.operands[0].owner
    if not isinstance(pick, arith.SelectOp) or len(list(pick.result.uses)) != 1:
        return None
    args = list(g.body.block.args[: len(g.inputs)])
    value, other = ((pick.lhs, pick.rhs) if _constant(pick.rhs) == float("-inf")
                    else (pick.rhs, pick.lhs))  # fmt: skip
    if _constant(other) != float("-inf") or value not in args or len(list(value.uses)) != 1:
        return None
    i = args.index(value)
    inner = _scaled(g.inputs[i])
    if inner is None or g.indexing_maps.data[i].data != g.indexing_maps.data[-1].data:
        return None
    masked = g.clone()
    masked.operands = [inner[0] if j == i else x for j, x in enumerate(g.operands)]
    Rewriter.insert_op(masked, InsertPoint.after(g))
    return masked.results[0], inner[1]


# -- what is matched -----------------------------------------------------------


def _f32(g: linalg.GenericOp) -> bool:
    return all(isinstance(a.type, Float32Type) for a in g.body.block.args)


def _parallel(g: linalg.GenericOp) -> bool:
    return all(it.data == IteratorType.PARALLEL for it in g.iterator_types)


def _constant(v: SSAValue) -> float | None:
    """`v`'s value where it is a float constant (or an f32 `truncf` of one: torch-mlir's
    SDPA scale, an f64 constant rounded)."""
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, FloatAttr):
        return owner.value.value.data
    if isinstance(owner, arith.TruncFOp) and isinstance(v.type, Float32Type):
        wide = _constant(owner.input)
        return None if wide is None else float(np.float32(wide))
    return None


def _identity_maps(g: linalg.GenericOp) -> bool:
    return all(m.data == AffineMap.identity(m.data.num_dims) for m in g.indexing_maps)


def _scaled(v: SSAValue) -> tuple[SSAValue, float] | None:
    """(s, c) where `v` is a pointwise `s * c` of an f32 tile by a constant `c > 0`
    with `c log2 e < MAX_FOLDED`."""
    g = v.owner
    if not (isinstance(g, linalg.GenericOp) and len(g.inputs) == 1 and len(g.outputs) == 1
            and _parallel(g) and _f32(g) and _identity_maps(g)):  # fmt: skip
        return None
    mul, arg = g.body.block.last_op.operands[0].owner, g.body.block.args[0]
    if not isinstance(mul, arith.MulfOp) or len(list(arg.uses)) != 1:
        return None
    other = mul.rhs if mul.lhs is arg else mul.lhs if mul.rhs is arg else None
    c = None if other is None else _constant(other)
    if c is None or not (c > 0 and c * LOG2E < MAX_FOLDED):
        return None
    return g.inputs[0], c


def _carries_max(loop: scf.ForOp) -> bool:
    args = set(loop.body.block.args[1:])
    return any(isinstance(g, linalg.GenericOp) and _max_reduction(g) is not None and g.outputs[0] in args
               for g in loop.body.block.ops)  # fmt: skip


def _max_reduction(g: linalg.GenericOp) -> Operation | None:
    """The combiner of a one-input f32 max reduction, `max(in, acc)` where `in` may
    pass through `select(mask, in, -inf)` (a partial tile's edge), or None."""
    if len(g.inputs) != 1 or len(g.outputs) != 1 or _parallel(g) or not _f32(g):
        return None
    x, acc = g.body.block.args
    yielded = g.body.block.last_op.operands[0].owner
    if not isinstance(yielded, MAX_COMBINERS) or acc not in yielded.operands or len(list(acc.uses)) != 1:
        return None
    for use in x.uses:
        user = use.operation
        if user is yielded:
            continue
        if not (isinstance(user, arith.SelectOp) and use.index == 1 and _constant(user.rhs) == float("-inf")
                and all(u.operation is yielded for u in user.result.uses)):  # fmt: skip
            return None
    return yielded


def _exp_of_difference(g: linalg.GenericOp) -> tuple[arith.SubfOp, mathd.ExpOp] | None:
    """The `in_i - in_j` and its `exp` in an f32 pointwise payload, each input read
    there only by the subtraction, or None."""
    if len(g.outputs) != 1 or not _parallel(g) or not _f32(g):
        return None
    args = set(g.body.block.args[: len(g.inputs)])
    for op in g.body.block.ops:
        if not isinstance(op, arith.SubfOp) or op.lhs not in args or op.rhs not in args or op.lhs is op.rhs:
            continue
        uses = list(op.result.uses)
        if (len(uses) == 1 and isinstance(uses[0].operation, mathd.ExpOp)
                and len(list(op.lhs.uses)) == 1 and len(list(op.rhs.uses)) == 1):  # fmt: skip
            return op, uses[0].operation
    return None


# -- the rewrites --------------------------------------------------------------


def _generic(inputs: list[SSAValue], maps: list[AffineMap], out: TensorType, init: SSAValue | None,
             iterators: list[IteratorTypeAttr], build) -> list[Operation]:  # fmt: skip
    """A linalg.generic (and its `tensor.empty` when `init` is None); `build(block)`
    adds the payload and returns the yielded value."""
    made: list[Operation] = []
    if init is None:
        empty = tensor.EmptyOp([], out)
        made.append(empty)
        init = empty.tensor
    block = Block(arg_types=[Float32Type()] * (len(inputs) + 1))
    block.add_op(linalg.YieldOp(build(block)))
    made.append(linalg.GenericOp(inputs, [init], Region(block), [AffineMapAttr(m) for m in maps],
                                 iterators, [out]))  # fmt: skip
    return made


def _const(block: Block, value: float) -> SSAValue:
    c = arith.ConstantOp(FloatAttr(value, Float32Type()))
    block.add_op(c)
    return c.result


def _unscale_max(g: linalg.GenericOp, s: SSAValue, c: float) -> None:
    """`max(m_old, max_j(s c))` -> `max(m_old, c max_j s)`: the reduction reads `s`
    from -inf (its edge mask unchanged: `c * -inf = -inf`), one pointwise op over the
    row combines it with the carried max."""
    combiner = type(_max_reduction(g))
    m_old, row_t = g.outputs[0], g.outputs[0].type
    rank = len(row_t.get_shape())
    parallel = [IteratorTypeAttr(IteratorType.PARALLEL)] * rank
    neg_inf = arith.ConstantOp(FloatAttr(float("-inf"), Float32Type()))
    fill = _generic([neg_inf.result], [AffineMap(rank, 0, ()), AffineMap.identity(rank)], row_t, None,
                    parallel, lambda b: b.args[0])  # fmt: skip
    Rewriter.insert_op([neg_inf, *fill], InsertPoint.before(g))
    g.operands = [s, fill[-1].results[0]]

    def combine(block: Block) -> SSAValue:
        scaled = arith.MulfOp(block.args[1], _const(block, c))
        op = combiner(block.args[0], scaled.result)
        block.add_ops([scaled, op])
        return op.result

    row = _generic([m_old, g.results[0]], [AffineMap.identity(rank)] * 3, row_t, None, parallel, combine)
    Rewriter.insert_op(row, InsertPoint.after(g))
    row[-1].results[0].name_hint, g.results[0].name_hint = g.results[0].name_hint, None
    g.results[0].replace_uses_with_if(row[-1].results[0], lambda use: use.operation is not row[-1])


def _as_exp2(g: linalg.GenericOp, x_src: SSAValue, c: float) -> None:
    """`exp(x - y)` -> `exp2(s k - y log2 e)` for `x = s c`, `k = c log2 e`, with
    `y log2 e` computed over `y`'s own (row) shape, before its broadcast."""
    sub, exp = _exp_of_difference(g)
    args = list(g.body.block.args)
    i, j = args.index(sub.lhs), args.index(sub.rhs)
    y = g.inputs[j]
    rank_y = len(y.type.get_shape())

    def times_log2e(block: Block) -> SSAValue:
        op = arith.MulfOp(block.args[0], _const(block, LOG2E))
        block.add_op(op)
        return op.result

    y_log2e = _generic([y], [AffineMap.identity(rank_y)] * 2, y.type, None,
                       [IteratorTypeAttr(IteratorType.PARALLEL)] * rank_y, times_log2e)  # fmt: skip
    Rewriter.insert_op(y_log2e, InsertPoint.before(g))
    k = arith.ConstantOp(FloatAttr(c * LOG2E, Float32Type()))
    scaled = arith.MulfOp(sub.lhs, k.result)
    Rewriter.insert_op([k, scaled], InsertPoint.before(sub))
    sub.operands = [scaled.result, sub.rhs]
    Rewriter.replace_op(exp, mathd.Exp2Op(sub.result))
    inputs = list(g.inputs)
    inputs[i], inputs[j] = x_src, y_log2e[-1].results[0]
    g.operands = [*inputs, *g.outputs]


def _erase_if_dead(op: Operation) -> None:
    """`op` (a scale nothing reads any more), the `tensor.empty` it wrote into and
    the constant its payload captured, where nothing else reads them."""
    if op.parent is None or any(r.uses for r in op.results):
        return
    inits = [v.owner for v in op.operands if isinstance(v.owner, tensor.EmptyOp)]
    captured = [v.owner for inner in op.walk() for v in inner.operands
                if isinstance(v.owner, arith.ConstantOp) and v.owner.parent is not inner.parent]  # fmt: skip
    op.detach()
    op.erase()
    for dead in dict.fromkeys([*inits, *captured]):
        if not any(r.uses for r in dead.results):
            dead.detach()
            dead.erase()
