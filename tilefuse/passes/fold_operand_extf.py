"""
`fold-operand-extf`: the `arith.extf` of a contraction's operand moves into its payload.

torch-mlir writes a bf16 `nn.Linear` as an elementwise generic widening each operand
to f32 (the weight's after a transpose) and an f32 contraction of the copies. A
generic that only widens, transposes or broadcasts its one input (a view of it,
elementwise `arith.extf` or plain copy) and is read as a factor of a contraction is
folded into the contraction: the contraction reads the input itself through the
composed map and widens it in its payload. The f32 copy is then never materialised,
the kernel loads the 16-bit tensor, and `analysis/dot.py` sees a product of two
16-bit values (exact in f32): a 16-bit `tl.dot`. The widening stays for its other
readers; once nothing reads it, it is erased.

```mlir
%wf = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>,
                                       affine_map<(d0, d1) -> (d0, d1)>], ...}
        ins(%w : tensor<32x64xbf16>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %0 = arith.extf %in : bf16 to f32
    linalg.yield %0 : f32
}
%y = linalg.generic {indexing_maps = [#a, affine_map<(d0, d1, d2) -> (d2, d1)>, #o], ...}
       ins(%x, %wf : tensor<16x64xf32>, tensor<64x32xf32>) ... {
  ^bb0(%a: f32, %b: f32, %c: f32): ... arith.mulf %a, %b ...
}
// becomes
%y = linalg.generic {indexing_maps = [#a, affine_map<(d0, d1, d2) -> (d1, d2)>, #o], ...}
       ins(%x, %w : tensor<16x64xf32>, tensor<32x64xbf16>) ... {
  ^bb0(%a: f32, %b: bf16, %c: f32):
    %bf = arith.extf %b : bf16 to f32
    ... arith.mulf %a, %bf ...
}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr, ModuleOp, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, BlockArgument
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilefuse.analysis.dataflow import factor_positions, is_contraction
from tilefuse.ir.structured import as_structured
from tilefuse.passes.cleanup import erase_dead_views


@dataclass(frozen=True)
class FoldOperandExtfPass(ModulePass):
    """Fold widening views (extf, transposes, broadcasts) of a contraction's
    factors into the contraction's maps and payload."""

    name = "fold-operand-extf"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldWideningIntoContraction()).rewrite_module(op)
        erase_dead_views(op)


class FoldWideningIntoContraction(RewritePattern):
    """A function-level contraction reading a factor from a widening view (see
    `widening_view`) reads the view's input instead, widened in its payload."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: linalg.GenericOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp):
            return
        s = as_structured(op)
        if s is None or not is_contraction(s):
            return
        block = op.body.block
        for i in factor_positions(op):
            view = op.inputs[i].owner
            if not isinstance(view, linalg.GenericOp) or (in_map := widening_view(view)) is None:
                continue
            maps = [m.data for m in op.indexing_maps.data]
            before = _dims(maps[i])
            maps[i] = in_map.compose(maps[i])
            reduced = {d for d, it in enumerate(op.iterator_types) if str(it.data) == "reduction"}
            if (before - _dims(maps[i])) & reduced:
                # A broadcast along K: the factor would not be a matrix of the product
                # (and, folded in both factors, no operand would size the loop). The
                # output has every parallel loop, so only a K loop can be lost.
                continue
            operands = list(op.operands)
            operands[i] = view.inputs[0]
            op.operands = operands
            op.properties["indexing_maps"] = ArrayAttr([AffineMapAttr(m) for m in maps])
            _retype_arg(block, i, view)
            rewriter.notify_op_modified(op)
            if not view.results[0].uses:
                rewriter.erase(view)
            return  # the walker comes back for the other factor (and chains)


def _dims(amap: AffineMap) -> set[int]:
    return {r.position for r in amap.results if isinstance(r, AffineDimExpr)}



def _retype_arg(block: Block, i: int, view: linalg.GenericOp) -> None:
    """Block argument `i` of the contraction now holds the view's input element:
    widen it as the view did (`arith.extf`), if it did."""
    old = block.args[i]
    narrow = view.inputs[0].type.get_element_type()
    if narrow == old.type:
        return
    new = block.insert_arg(narrow, i)
    ext = arith.ExtFOp(new, old.type)
    block.insert_op_before(ext, block.first_op)
    old.replace_all_uses_with(ext.result)
    block.erase_arg(old)


def widening_view(op: linalg.GenericOp) -> AffineMap | None:
    """The input map of a generic that yields its one input's element, exactly
    widened by `arith.extf` or as it is, at every point of an identity-mapped
    output (a transpose or broadcast of the input, or its elementwise widening);
    else None."""
    if (len(op.inputs) != 1 or len(op.outputs) != 1 or not isinstance(op.inputs[0].type, TensorType)
            or any(str(i.data) != "parallel" for i in op.iterator_types)):  # fmt: skip
        return None
    in_map, out_map = (m.data for m in op.indexing_maps.data)
    dims = [r.position for r in in_map.results if isinstance(r, AffineDimExpr)]
    if out_map != AffineMap.identity(out_map.num_dims) or len(dims) != len(in_map.results) \
            or len(set(dims)) != len(dims):  # fmt: skip
        return None
    block = op.body.block
    yielded = block.last_op
    if not isinstance(yielded, linalg.YieldOp):
        return None
    value = yielded.operands[0]
    if isinstance(value.owner, arith.ExtFOp) and value.owner is block.first_op \
            and value.owner.next_op is yielded:  # fmt: skip
        if str(value.owner.result.type) != "f32":
            return None  # only 16-bit -> f32 pays (Triton's f64 dot takes f64 operands)
        value = value.owner.input
    elif yielded is not block.first_op:
        return None
    if not isinstance(value, BlockArgument) or value is not block.args[0]:
        return None
    return in_map
