"""
`scalar-operands`: a 0-d tensor's extracted scalar read in a payload becomes an
operand; a splat tensor constant read by a generic becomes its element, in the payload.

torch-mlir passes a scalar as a 0-d tensor and extracts it at function level
(`%v = tensor.extract %t[]`) for payloads to read. Kernels take tensors, not host
scalars: each `linalg.generic` whose payload reads `%v` reads `%t` instead, as a
0-d input with the map `-> ()`, its payload the new block argument. Uses outside
payloads are left (refused later, with a location).

```mlir
%v = tensor.extract %t[] : tensor<f32>
%r = linalg.generic {indexing_maps = [#id, #id], ...} ins(%x) outs(%o) {
^bb0(%a: f32, %b: f32):
  %s = arith.mulf %a, %v : f32
  linalg.yield %s : f32
}
// becomes
%r = linalg.generic {indexing_maps = [#id, affine_map<(d0) -> ()>, #id], ...}
       ins(%x, %t : tensor<8xf32>, tensor<f32>) outs(%o) {
^bb0(%a: f32, %v2: f32, %b: f32):
  %s = arith.mulf %a, %v2 : f32
  linalg.yield %s : f32
}
```

A splat constant input (`dense<true> : tensor<1024x1024xi1>`, what torch-mlir
makes of a causal mask's `full_like(True)`; SDPA's `dense<0xFF800000> : tensor<f32>`),
or a function-level fill of a scalar constant read by an elementwise generic (a splat
of dynamic shape: SDPA's zeros for masked rows), is its element, an `arith.constant` in the payload: a kernel loads nothing for it
(not a tile of a materialised megabyte per step) and later passes see the value
(`SplatConstantAsScalar`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    AnyFloat,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilefuse.ir.constants import constant_array, is_splat, stored_elements
from tilefuse.ir.structured import with_inputs


@dataclass(frozen=True)
class ScalarOperandsPass(ModulePass):
    """Read 0-d tensors' extracted scalars in payloads as 0-d operands."""

    name = "scalar-operands"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        walker = PatternRewriteWalker(ExtractedScalarAsOperand(), apply_recursively=False)
        walker.rewrite_module(op)
        PatternRewriteWalker(SplatConstantAsScalar(), apply_recursively=False).rewrite_module(op)


class SplatConstantAsScalar(RewritePattern):
    """A `linalg.generic` input that is a splat tensor constant (every element
    the same: `dense<true> : tensor<1024x1024xi1>` where torch-mlir lowers
    `torch.ones(...).tril()` or `full_like(True)`, `dense<0xFF800000> : tensor<f32>`
    for SDPA's mask value) is its element, an `arith.constant` in the payload: a
    kernel neither loads a tile of a materialised tensor per step nor a scalar it
    could know, and later passes see the value (a select of `-inf` is a mask)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: linalg.GenericOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp):
            return
        maps = [m.data for m in op.indexing_maps.data]
        # (a fill only into an elementwise generic: a contraction or reduction over a
        # fill keeps reading it, as it is tiled and planned)
        fills = all(str(i.data) == "parallel" for i in op.iterator_types)
        splat = [i for i, v in enumerate(op.inputs) if _splat_element(v, fills) is not None]
        if not splat:
            return
        body = op.body.clone()
        block = body.block
        for i in reversed(splat):
            scalar = arith.ConstantOp(_splat_element(op.inputs[i], fills))  # pyright: ignore
            block.insert_op_before(scalar, block.first_op)
            block.args[i].replace_all_uses_with(scalar.result)
            block.erase_arg(block.args[i])
        keep = [i for i in range(len(op.inputs)) if i not in splat]
        inputs = [op.inputs[i] for i in keep]
        new_maps = [maps[i] for i in keep] + maps[len(op.inputs):]
        consts = [op.inputs[i].owner for i in splat]
        rewriter.replace(op, with_inputs(op, inputs, new_maps, body))
        for const in dict.fromkeys(consts):
            if not any(r.uses for r in const.results):
                rewriter.erase(const)


def _splat_element(v: SSAValue, fills: bool = True) -> FloatAttr | IntegerAttr | None:
    """The element of a tensor every element of which is one constant, known here:
    a splat `arith.constant`, or (`fills`) a function-level fill of a scalar constant
    (`linalg.fill`, or a generic yielding its one scalar input: `generalise`'s form
    of a splat constant of dynamic shape)."""
    if not isinstance(v, OpResult) or not isinstance(v.type, TensorType):
        return None
    element = v.type.get_element_type()
    if not isinstance(element, AnyFloat | IntegerType):
        return None
    op = v.owner
    if isinstance(op, arith.ConstantOp):
        if not is_splat(op):
            return None
        value = _first(op)
        return FloatAttr(value, element) if isinstance(element, AnyFloat) else IntegerAttr(value, element)
    if not fills or not isinstance(op.parent_op(), func.FuncOp) or len(op.results) != 1:
        return None
    if isinstance(op, linalg.FillOp):
        scalar = op.inputs[0]
    elif isinstance(op, linalg.GenericOp) and len(op.inputs) == 1 and len(op.outputs) == 1:
        block, scalar = op.body.block, op.inputs[0]
        last = block.last_op
        if (isinstance(scalar.type, TensorType) or not isinstance(last, linalg.YieldOp)
                or last is not block.first_op or last.operands[0] is not block.args[0]):  # fmt: skip
            return None
    else:
        return None
    const = scalar.owner
    if not isinstance(const, arith.ConstantOp) or const.result.type != element:
        return None
    return const.value if isinstance(const.value, FloatAttr | IntegerAttr) else None  # pyright: ignore


def _first(op: arith.ConstantOp) -> int | float:
    """A splat constant's element as the Python number its attribute takes."""
    value = stored_elements(op).flat[0]
    element = op.result.type.get_element_type()
    return float(constant_array(op).flat[0]) if isinstance(element, AnyFloat) else int(value)


class ExtractedScalarAsOperand(RewritePattern):
    """`%v = tensor.extract %t[]` of a 0-d tensor at function level, read inside
    `linalg.generic` payloads (torch-mlir's scalar operands): each such generic
    reads `%t` as a 0-d input instead (map `-> ()`), its payload the new block
    argument. Uses outside payloads are left (refused later, with a location)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.ExtractOp, rewriter: PatternRewriter) -> None:
        if (not isinstance(op.parent_op(), func.FuncOp) or op.indices
                or not isinstance(op.tensor.type, TensorType)):  # fmt: skip
            return
        readers = {u.operation for u in op.result.uses}
        generics = {g for r in readers if (g := _enclosing_function_generic(r)) is not None}
        for g in generics:
            _read_as_operand(g, op.result, op.tensor, rewriter)
        if not op.result.uses:
            rewriter.erase(op)


def _enclosing_function_generic(op: Operation) -> linalg.GenericOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, linalg.GenericOp):
        parent = parent.parent_op()
    if parent is None or not isinstance(parent.parent_op(), func.FuncOp):
        return None
    return parent


def _read_as_operand(g: linalg.GenericOp, scalar: SSAValue, source: SSAValue,
                     rewriter: PatternRewriter) -> None:  # fmt: skip
    n_in = len(g.inputs)
    body = g.body.clone()
    arg = body.block.insert_arg(scalar.type, n_in)
    for inner in body.walk():
        inner.operands = [arg if v is scalar else v for v in inner.operands]
    maps = [m.data for m in g.indexing_maps.data]
    maps.insert(n_in, AffineMap(maps[-1].num_dims, 0, ()))
    new = with_inputs(g, [*g.inputs, source], maps, body)
    for r in new.results:  # every result named after the first, as before
        r.name_hint = r.name_hint or g.results[0].name_hint
    rewriter.replace(g, new)
