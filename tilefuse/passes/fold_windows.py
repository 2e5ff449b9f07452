"""
`fold-windows`: windowed reads become strided views; convolutions become contractions.

A convolution reads its input at `oh * stride + kh * dilation`, which is not a
projected permutation, the form tiling and code generation work on. It is
still a strided view of the input: `P[n, oh, kh, ow, kw, c] = x[n, oh * s + kh
* d, ow * s + kw * d, c]` has strides `(sN, s * sH, d * sH, s * sW, d * sW,
sC)` (im2col without the copy). The pass puts a `tilefuse.window` with
that map in front of every such input and reads it through the projection on
the view's dims, so

    out[n, oh, ow, f] += x[n, oh + kh, ow + kw, c] * w[kh, kw, c, f]

becomes the contraction `out[n, oh, ow, f] += P[n, oh, kh, ow, kw, c] *
w[kh, kw, c, f]` over (kh, kw, c), tiled and lowered to `tl.dot` like any
other, with its bias and activation fused as an epilogue. The host makes the
view with `torch.as_strided`; the kernel reads the input through it, each
input element from HBM once and from L2 for its other windows. A window of an
empty or of a fill is made in the window's shape instead, and the empties and
fills left unread are erased (`passes/cleanup.py`).

```mlir
%r = linalg.generic {indexing_maps = [affine_map<(i) -> (i, i)>, #id, #id], ...}
       ins(%x, %y : tensor<5x5xf32>, tensor<5xf32>) ...
// becomes
%d = tilefuse.window %x affine_map<(d0) -> (d0, d0)> : tensor<5x5xf32> -> tensor<5xf32>
%r = linalg.generic {indexing_maps = [#id, #id, #id], ...}
       ins(%d, %y : tensor<5xf32>, tensor<5xf32>) ...
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, ModuleOp, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from tilefuse.analysis.dataflow import FILL, classify
from tilefuse.ir.affine import window_terms
from tilefuse.ir.structured import as_structured, is_window_map, with_inputs
from tilefuse.ir.tilefuse import WindowOp
from tilefuse.passes.cleanup import erase_dead_views


@dataclass(frozen=True)
class FoldWindowsPass(ModulePass):
    """View every windowed input of a function-level generic (convolutions, pooling)."""

    name = "fold-windows"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ViewWindowedInputs(), apply_recursively=False).rewrite_module(op)
        erase_dead_views(op)


class ViewWindowedInputs(RewritePattern):
    """View every windowed input of a function-level `linalg.generic`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: linalg.GenericOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp):
            return
        maps = [m.data for m in op.indexing_maps.data]
        if not any(is_window_map(m) for m in maps[: len(op.inputs)]):
            return
        ranges = as_structured(op).loop_ranges  # checks the windows stay inside
        operands = list(op.operands)
        for i, amap in enumerate(maps[: len(op.inputs)]):
            if is_window_map(amap):
                view, maps[i] = _view(op.inputs[i], amap, ranges)
                view.location = op.location
                created = _created(op.inputs[i], view.result.type)
                if created:
                    view.erase()  # never inserted: it must not keep the source alive
                new_ops = created[1] if created else [view]
                rewriter.insert(new_ops, InsertPoint.before(op))
                operands[i] = created[0] if created else view.result
        op.operands = operands
        op.properties["indexing_maps"] = ArrayAttr([AffineMapAttr(m) for m in maps])
        rewriter.notify_op_modified(op)
        _drop_unread_inputs(op, rewriter)


def _created(value, view_type: TensorType):
    """A window of `tensor.empty` is an empty of the window's shape; a window of
    a fill or a broadcast of scalars (a generic whose inputs are all 0-d and whose
    payload does not read `linalg.index`) is the same generic over the window's
    shape: neither exists outside kernels to be viewed. (value, ops), or None."""
    owner = value.owner
    if isinstance(owner, tensor.EmptyOp):
        empty = tensor.EmptyOp([], view_type)
        return empty.tensor, [empty]
    s = as_structured(owner) if isinstance(owner, linalg.GenericOp) else None
    if s is None or classify(s) != FILL or len(s.outputs) != 1 or any(
            m.results for m in s.input_maps) or any(
            isinstance(o, linalg.IndexOp) for o in s.payload.ops) or s.payload.args[-1].uses:  # fmt: skip
        return None  # (reading its output, it is not a function of its scalars alone)
    rank = len(view_type.get_shape())
    empty = tensor.EmptyOp([], view_type)
    maps = [AffineMapAttr(AffineMap(rank, 0, ())) for _ in s.inputs]
    maps.append(AffineMapAttr(AffineMap.identity(rank)))
    generic = linalg.GenericOp(s.inputs, [empty.tensor], s.payload.parent.clone(), maps,
                               [linalg.IteratorTypeAttr.parallel()] * rank, [view_type])  # fmt: skip
    generic.location = owner.location
    return generic.results[0], [empty, generic]


def _drop_unread_inputs(op: linalg.GenericOp, rewriter: PatternRewriter) -> None:
    """Inputs the payload never reads, once the view bounds their loops: a
    pooling's window-shape operand (upstream passes a `tensor.empty` for it),
    which no kernel could load."""
    maps = [m.data for m in op.indexing_maps.data]
    args = op.body.block.args
    unread = [i for i in range(len(op.inputs)) if not args[i].uses]
    bounded = {r.position for i, m in enumerate(maps) if i not in unread for r in m.results
               if isinstance(r, AffineDimExpr)}  # fmt: skip
    if not unread or len(bounded) < maps[0].num_dims:
        return
    body = op.body.clone()
    for i in reversed(unread):
        body.block.erase_arg(body.block.args[i])
    keep = [i for i in range(len(op.operands)) if i not in unread]
    inputs = [op.inputs[i] for i in keep if i < len(op.inputs)]
    new = with_inputs(op, inputs, [maps[i] for i in keep], body)
    for r in new.results:  # every result named after the first, as before
        r.name_hint = r.name_hint or op.results[0].name_hint
    rewriter.replace(op, new)


def _view(value, amap: AffineMap, ranges: tuple[int, ...]) -> tuple[WindowOp, AffineMap]:
    """The window of `value` that `amap` reads, and the projection that reads it."""
    terms = [window_terms(r) for r in amap.results]
    dims = list(dict.fromkeys(d for coeffs, _ in terms for d in coeffs))  # first-seen order
    position = {d: i for i, d in enumerate(dims)}
    results = [_sum(coeffs, const, position) for coeffs, const in terms]
    t = value.type
    assert isinstance(t, TensorType)
    view_type = TensorType(t.get_element_type(), [ranges[d] for d in dims])
    view = WindowOp(value, AffineMap(len(dims), 0, tuple(results)), view_type)
    projection = AffineMap(amap.num_dims, 0, tuple(AffineDimExpr(d) for d in dims))
    return view, projection


def _sum(coeffs: dict[int, int], const: int, position: dict[int, int]) -> AffineExpr:
    """sum(c * view dim) + const, as MLIR prints it: `d0 * 2 + d1 + 1`."""
    expr: AffineExpr | None = None
    for d, c in coeffs.items():
        term = AffineDimExpr(position[d])
        term = term * c if c != 1 else term
        expr = term if expr is None else expr + term
    if expr is None:
        return AffineConstantExpr(const)
    return expr + const if const else expr
