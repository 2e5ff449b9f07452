"""
Normal forms `linalg-generalize` establishes before anything reads the IR:
constant indices in indexing maps folded away (`fold_unit_dims`), transposes
folded into their readers' maps (`fold_transposes`), and function-level scalar
arithmetic on constants folded to constants (`fold_host_scalars`).

Frameworks print broadcasts of size-1 dims and keep-dim reductions with
constant results in the maps: `affine_map<(d0, d1) -> (0, d1)>` reads a
`tensor<1x70xf32>` bias in every row, `(d0, d1) -> (d0, 0)` writes row sums
into a `tensor<20x1xf32>`. The rest of the compiler works on projected
permutations, so, as upstream's `linalg-fold-unit-extent-dims` does, each such
operand is viewed without its constant-indexed dims (`tensor.collapse_shape`,
a host view) and the constant results leave the maps; a result with such dims
is computed collapsed and expanded back for its users. A collapse of an
expansion made here folds away, so chains of keep-dim ops (softmax written
with `tensor<Nx1>` statistics) meet directly and still fuse.

Only the constant 0 on a dim of size 1 is folded: any other constant is a
slice, left for the located error that follows.
"""

from __future__ import annotations

from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.ir.structured import reassociation, with_inputs


def fold_unit_dims(module: ModuleOp) -> None:
    """Rewrite every function-level `linalg.generic` with constant map results."""
    for op in list(module.walk()):
        if isinstance(op, linalg.GenericOp) and isinstance(op.parent_op(), func.FuncOp):
            maps = [m.data for m in op.indexing_maps.data]
            drops = [_dropped(m, v) for m, v in zip(maps, op.operands, strict=True)]
            if any(drops) and all(d is not None for d in drops):
                _rewrite(op, maps, drops)


def _dropped(amap: AffineMap, value: SSAValue) -> list[int] | None:
    """Positions of `value`'s dims indexed by the constant 0 with extent 1 (None
    if another constant appears: not ours to fold)."""
    if not isinstance(value.type, TensorType):
        return []
    shape = value.type.get_shape()
    drop = []
    for i, r in enumerate(amap.results):
        if isinstance(r, AffineConstantExpr):
            if r.value != 0 or shape[i] != 1:
                return None
            drop.append(i)
    return drop


def _reassociation(rank: int, drop: list[int]) -> list[list[int]]:
    """Groups of source dims per kept dim: dropped unit dims join a neighbour."""
    kept = [i for i in range(rank) if i not in drop]
    if not kept:
        return []
    groups = [[k] for k in kept]
    for d in drop:
        after = next((g for g in groups if g[0] > d), None)
        (after if after is not None else groups[-1]).append(d)
    return [sorted(g) for g in groups]


def _collapse(value: SSAValue, drop: list[int], before: Operation) -> SSAValue:
    t = value.type
    assert isinstance(t, TensorType)
    shape = [n for i, n in enumerate(t.get_shape()) if i not in drop]
    groups = _reassociation(len(t.get_shape()), drop)
    owner = value.owner
    if (isinstance(owner, tensor.ExpandShapeOp) and owner.reassociation == reassociation(groups)
            and list(owner.src.type.get_shape()) == shape):  # fmt: skip
        return owner.src  # the expansion this pass made for a producer
    view = tensor.CollapseShapeOp(operands=[value], result_types=[TensorType(t.get_element_type(), shape)],
                                  properties={"reassociation": reassociation(groups)})  # fmt: skip
    Rewriter.insert_op(view, InsertPoint.before(before))
    return view.result


def _rewrite(op: linalg.GenericOp, maps: list[AffineMap], drops: list[list[int]]) -> None:
    n_in = len(op.inputs)
    # A value with every dim constant (a keep-dim sum over all dims, 1x1) keeps its
    # last one, indexed by a new parallel loop of extent 1: views of rank 0 are
    # not expressible as xDSL's expand_shape.
    whole = [bool(d) and len(d) == len(v.type.get_shape()) for v, d in zip(op.operands, drops, strict=True)]
    drops = [d[:-1] if w else d for d, w in zip(drops, whole, strict=True)]
    unit = AffineDimExpr(maps[0].num_dims)
    num_dims = maps[0].num_dims + any(whole)
    new_maps = []
    for i, (m, d) in enumerate(zip(maps, drops, strict=True)):
        results = [unit if whole[i] and j not in d and isinstance(r, AffineConstantExpr) else r
                   for j, r in enumerate(m.results) if j not in d]  # fmt: skip
        new_maps.append(AffineMapAttr(AffineMap(num_dims, m.num_symbols, tuple(results))))
    iterators = op.iterator_types
    if any(whole):
        iterators = ArrayAttr([*iterators.data, linalg.IteratorTypeAttr.parallel()])
    operands = [_collapse(v, d, op) if d else v for v, d in zip(op.operands, drops, strict=True)]
    outs = operands[n_in:]
    body = op.body.clone()
    new = linalg.GenericOp(operands[:n_in], outs, body, new_maps, iterators,
                           [v.type for v in outs])  # fmt: skip
    new.location = op.location
    Rewriter.insert_op(new, InsertPoint.before(op))
    for old, res, d in zip(op.results, new.results, drops[n_in:], strict=True):
        value = res
        if d:
            t = old.type
            expand = tensor.ExpandShapeOp(res, [], reassociation(_reassociation(len(t.get_shape()), d)),
                                          list(t.get_shape()), t)  # fmt: skip
            Rewriter.insert_op(expand, InsertPoint.before(op))
            value = expand.result
        old.replace_all_uses_with(value)
    op.detach()
    op.erase()


def extracted_scalars_as_operands(module: ModuleOp) -> None:
    """`%v = tensor.extract %t[]` of a 0-d tensor at function level, read inside
    `linalg.generic` payloads (torch-mlir's scalar operands): each such generic
    reads `%t` as a 0-d input instead (map `-> ()`), its payload the new block
    argument. Uses outside payloads are left (refused later, with a location)."""
    for op in list(module.walk()):
        if not (isinstance(op, tensor.ExtractOp) and isinstance(op.parent_op(), func.FuncOp)
                and not op.indices and isinstance(op.tensor.type, TensorType)):  # fmt: skip
            continue
        readers = {u.operation for u in op.result.uses}
        generics = {g for r in readers if (g := _enclosing_function_generic(r)) is not None}
        for g in generics:
            _read_as_operand(g, op.result, op.tensor)
        if not op.result.uses:
            op.detach()
            op.erase()


def _enclosing_function_generic(op: Operation) -> linalg.GenericOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, linalg.GenericOp):
        parent = parent.parent_op()
    if parent is None or not isinstance(parent.parent_op(), func.FuncOp):
        return None
    return parent


def _read_as_operand(g: linalg.GenericOp, scalar: SSAValue, source: SSAValue) -> None:
    n_in = len(g.inputs)
    body = g.body.clone()
    arg = body.block.insert_arg(scalar.type, n_in)
    for inner in body.walk():
        inner.operands = [arg if v is scalar else v for v in inner.operands]
    maps = [m.data for m in g.indexing_maps.data]
    maps.insert(n_in, AffineMap(maps[-1].num_dims, 0, ()))
    Rewriter.replace_op(g, with_inputs(g, [*g.inputs, source], maps, body))


def fold_host_scalars(module: ModuleOp) -> None:
    """Function-level scalar `arith`/`math` ops of constants (a scale computed as
    1 / sqrt(64), say) become constants, so kernels capture them as literals;
    `tensor.cast`s between equal static types disappear."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import AnyFloat, FloatAttr

    from tilefuse.oracle.reference import eval_scalar_op

    for op in list(module.walk()):
        if not isinstance(op.parent_op(), func.FuncOp):
            continue
        if isinstance(op, tensor.CastOp) and op.source.type == op.dest.type:
            op.dest.replace_all_uses_with(op.source)
            op.detach()
            op.erase()
            continue
        scalar = len(op.results) == 1 and not isinstance(op.results[0].type, TensorType)
        if (not scalar or isinstance(op, arith.ConstantOp) or op.regions
                or not op.name.startswith(("arith.", "math."))
                or not all(isinstance(v.owner, arith.ConstantOp) for v in op.operands)):  # fmt: skip
            continue
        env: dict = {}
        for v in op.operands:
            eval_scalar_op(v.owner, env)
        try:
            eval_scalar_op(op, env)
            t = op.results[0].type
            value = env[op.results[0]]
            attr = FloatAttr(float(value), t) if isinstance(t, AnyFloat) else IntegerAttr(int(value), t)
        except Exception:  # not foldable here (say, an integer overflow): left as is
            continue
        const = arith.ConstantOp(attr)
        Rewriter.replace_op(op, const)


def fold_transposes(module: ModuleOp) -> None:
    """A `linalg.generic` that only permutes its input (a generalized
    `linalg.transpose`) is folded into the generics reading its result: they
    read the input through the composed map instead (K^T for Q K^T becomes a
    permuted load of K inside the attention kernel, not a copy through HBM)."""
    for op in list(module.walk()):
        if not (isinstance(op, linalg.GenericOp) and isinstance(op.parent_op(), func.FuncOp)):
            continue
        permutation = _pure_permutation(op)
        if permutation is None:
            continue
        for use in list(op.results[0].uses):
            reader = use.operation
            if not isinstance(reader, linalg.GenericOp) or use.index >= len(reader.inputs):
                continue  # read as an output (an accumulator): keep the copy
            maps = [m.data for m in reader.indexing_maps.data]
            maps[use.index] = permutation.compose(maps[use.index])
            operands = list(reader.operands)
            operands[use.index] = op.inputs[0]
            reader.operands = operands
            reader.properties["indexing_maps"] = ArrayAttr([AffineMapAttr(m) for m in maps])
        if not op.results[0].uses:
            op.detach()
            op.erase()


def _pure_permutation(op: linalg.GenericOp) -> AffineMap | None:
    """The input map of a generic that copies its one input through a
    permutation into an identity-mapped output of the same type; else None."""
    if len(op.inputs) != 1 or len(op.outputs) != 1 or not isinstance(op.inputs[0].type, TensorType):
        return None
    in_map, out_map = (m.data for m in op.indexing_maps.data)
    block = op.body.block
    last = block.last_op
    if (not isinstance(last, linalg.YieldOp) or last is not block.first_op
            or last.operands[0] is not block.args[0]
            or out_map != AffineMap.identity(out_map.num_dims)
            or sorted(str(r) for r in in_map.results) != sorted(str(r) for r in out_map.results)
            or len(in_map.results) != in_map.num_dims
            or op.inputs[0].type.get_element_type() != op.outputs[0].type.get_element_type()):  # fmt: skip
        return None
    if any(str(i.data) != "parallel" for i in op.iterator_types):
        return None
    return in_map
