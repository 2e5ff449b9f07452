"""
`narrow-variance`: a variance that torch-mlir widens to f64 is computed in f32.

torch-mlir decomposes `aten.var`, `var_mean`, `std`, `native_layer_norm`,
`native_group_norm` and instance norm the same way: the input is widened to f64,
the mean and the two-pass variance `sum((x - mean)^2) / c` are computed there, and the
result is truncated back to f32. That f64 is the decomposition's choice, not the
program's: ATen computes these statistics in the input's accumulation type, f32 for
f32, bf16 and f16 tensors. On a GPU the f64 costs registers and a third reduction: a
BERT LayerNorm row kernel ran 13.7 us where its f32 form runs in ~10.

The rewrite computes the same variance in f32 when everything it reads is at most
f32 and everything that reads it truncates it to at most f32, in the corrected
two-pass form (Chan, Golub and LeVeque): `sum(d^2) - (sum d)^2 / n`, `d = x - m`. With
`m` the f32 mean, off by `e` from the exact one, `sum(d^2)` alone is `sum((x - mean)^2)
+ n e^2`: a relative error `(e / sigma)^2` with `e ~ eps32 |mean|`, 0.36% for data
`1e4 + 1e-2 randn` (found by adversarial tests). `(sum d)^2 / n` is that `n e^2`; the
difference leaves a few f32 ulps, the size of the truncation the program already does
(tested at mean / sigma up to 1e6 and on constant rows, clamped at 0). It needs `n`,
so the mean must be the sum over a static count divided by that count. A limit of f32:
sums that overflow it (values near 1e19 and up) overflow here where the f64 program's
do not, as ATen's own f32 kernels do on CUDA.

Matched by meaning, through any split of the ops into generics: a reduction that adds
`d * d` (or `d ** 2`) from 0, where `d = e - m`, `e` is an f32 (or narrower) element
widened to f64, and `m` is a sum of the same elements over the same loops (same
reduced dims, same element read at each point, the mean read where the sum wrote it)
over that count. The f64 ops between (the square, the deviation, the
mean, and scalings of the result by a scalar) are the island; its values may be read
only inside it, or by a `truncf` to at most f32 (the variance, or `var_mean`'s mean),
or by size reads. Anything else f64 (an f64 input, an f64 result, `sqrt` before the
truncation, a sum of signed values not used as a mean) is left as it is.

```mlir
%e = linalg.generic ins(%x : tensor<4x8xf32>) outs(%0 : tensor<4x8xf64>) { extf }
%s = linalg.generic {reduction} ins(%e) outs(%zeros : tensor<4xf64>) { addf }
%m = linalg.generic ins(%s) outs(%1 : tensor<4xf64>) { divf %in, %cst_8 : f64 }
%d = linalg.generic ins(%e, %m) outs(%0) { subf }
%q = linalg.generic ins(%d, %d) outs(%0) { mulf }
%v = linalg.generic {reduction} ins(%q) outs(%zeros2 : tensor<4xf64>) { addf }
%var = linalg.generic ins(%v) outs(%2 : tensor<4xf32>) { truncf (divf %in, %cst_8) }
// becomes the same ops on tensor<...xf32>, reading %x itself, with the sum of %d
// beside %v and %v replaced by max(%v - sum_d * sum_d / 8, 0).
```
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from math import prod

from xdsl.context import Context
from xdsl.dialects import arith, func, math, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.dialects.linalg.attrs import IteratorType, IteratorTypeAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.ir.structured import (
    as_structured,
    constant_of,
    element_type,
    filled,
    like,
    shape_of,
    sized_empty,
)
from tilefuse.passes.cleanup import is_generic_fill, is_zero_fill

F32, F64 = Float32Type(), Float64Type()
_ARITH = (arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.DivfOp)
_NARROWER = (BFloat16Type, Float16Type, Float32Type)


@dataclass(frozen=True)
class Read:
    """A tensor element a scalar stands for: `tensor[amap(loops)]`, loops those of the
    reduction the match started from."""

    tensor: SSAValue
    amap: AffineMap


@dataclass(frozen=True)
class Site:
    """A scalar inside a generic's body, that generic's loops reached from the
    starting reduction's loops by `loop_map`."""

    value: SSAValue
    op: linalg.GenericOp
    loop_map: AffineMap


@dataclass
class Island:
    """The f64 generics (and reshapes by unit dims) of one variance, and the generics
    truncating its values."""

    ops: list[Operation] = field(default_factory=list)
    exits: list[linalg.GenericOp] = field(default_factory=list)
    total: linalg.GenericOp | None = None
    """The sum of squared deviations."""
    deviation: Site | None = None
    """The deviation `x - m` it squares (in its own body, or yielded by a generic)."""


def _maps(op: linalg.GenericOp) -> list[AffineMap]:
    return [m.data for m in op.indexing_maps.data]


def _parallel(op: linalg.GenericOp) -> bool:
    return all(str(i.data) == "parallel" for i in op.iterator_types)


def _passes_through(op: Operation | None) -> bool:
    """A pointwise f64 generic writing each point of its result once: its output map
    names distinct loops, and the loops it leaves out run once."""
    if not (isinstance(op, linalg.GenericOp) and _parallel(op) and len(op.outputs) == 1
            and isinstance(element_type(op.results[0].type), Float64Type)):  # fmt: skip
        return False
    written = [getattr(e, "position", None) for e in _maps(op)[-1].results]
    if None in written or len(set(written)) != len(written):
        return False
    structured = as_structured(op)
    return structured is not None and all(
        r == 1 for d, r in enumerate(structured.loop_ranges) if d not in written)


def _loops_of(op: linalg.GenericOp, amap: AffineMap) -> AffineMap:
    """From loops that reach `op`'s result at `amap`, to `op`'s loops (a loop its
    result leaves out is 0)."""
    out = _maps(op)[-1]
    written = [e.position for e in out.results if isinstance(e, AffineDimExpr)]
    results = [amap.results[written.index(d)] if d in written else AffineConstantExpr(0)
               for d in range(out.num_dims)]  # fmt: skip
    return AffineMap(amap.num_dims, amap.num_symbols, tuple(results))


def _element(site: Site, island: list[Operation]) -> Site | Read:
    """What `site` computes: a scalar op in some generic's body (stepping into the
    pointwise f64 producers of the tensors it reads, which join `island`), or the
    element of a tensor nothing steps into."""
    value, op, loop_map = site.value, site.op, site.loop_map
    while isinstance(value, BlockArgument) and value.block is op.body.block:
        if value.index >= len(op.inputs):
            return Read(op.outputs[0], loop_map)  # an init's old value: never a match
        tensor_value = op.inputs[value.index]
        if not isinstance(tensor_value.type, TensorType):
            return Read(tensor_value, AffineMap(loop_map.num_dims, 0, ()))
        amap = _maps(op)[value.index].compose(loop_map)
        while (source := _unit_reshape_source(tensor_value)) is not None:
            island.append(tensor_value.owner)
            amap, tensor_value = _through_unit_dims(amap, tensor_value, source), source
        producer = tensor_value.owner if isinstance(tensor_value, OpResult) else None
        if not _passes_through(producer) or is_generic_fill(producer):
            return Read(tensor_value, amap)
        assert isinstance(producer, linalg.GenericOp)
        island.append(producer)
        yielded = producer.body.block.last_op
        assert isinstance(yielded, linalg.YieldOp)
        value, op, loop_map = yielded.operands[0], producer, _loops_of(producer, amap)
    return Site(value, op, loop_map)


_RESHAPES = (tensor.ExpandShapeOp, tensor.CollapseShapeOp)


def _unit_reshape_source(value: SSAValue) -> SSAValue | None:
    """The f64 source of `value` if `value` reshapes it only by adding or dropping
    dims of size 1 (instance norm's mean, `[N*C] -> [1, N*C, 1, 1] -> [1, N*C]`)."""
    op = value.owner
    if not isinstance(op, _RESHAPES) or not isinstance(element_type(value.type), Float64Type):
        return None
    source = op.operands[0]
    shapes = shape_of(value), shape_of(source)
    if any(n < 0 for s in shapes for n in s):
        return None
    return source if [n for n in shapes[0] if n != 1] == [n for n in shapes[1] if n != 1] else None


def _through_unit_dims(amap: AffineMap, value: SSAValue, source: SSAValue) -> AffineMap:
    """`amap` (indices of `value`) as indices of `source`, which `value` reshapes by
    dims of size 1 only: the same indices of the other dims, 0 in the unit ones."""
    kept = iter([e for e, n in zip(amap.results, shape_of(value), strict=True) if n != 1])
    results = [AffineConstantExpr(0) if n == 1 else next(kept) for n in shape_of(source)]
    return AffineMap(amap.num_dims, amap.num_symbols, tuple(results))


def _invariant(value: SSAValue, op: linalg.GenericOp) -> bool:
    """A scalar the same at every point: defined outside `op`'s body."""
    owner = value.owner
    block = owner if isinstance(owner, Block) else owner.parent_block()
    return block is not op.body.block and not isinstance(value.type, TensorType)


def _scaling(site: Site) -> tuple[SSAValue, SSAValue, bool] | None:
    """The operand `site` divides (True) or multiplies (False) by a scalar the same
    everywhere, that scalar, and which."""
    owner = site.value.owner
    if isinstance(owner, arith.DivfOp) and _invariant(owner.rhs, site.op):
        return owner.lhs, owner.rhs, True
    if isinstance(owner, arith.MulfOp):
        for a, b in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
            if _invariant(b, site.op):
                return a, b, False
    return None


def _scaled(site: Site) -> SSAValue | None:
    """The operand `site` divides or multiplies by a scalar the same everywhere."""
    scaling = _scaling(site)
    return scaling[0] if scaling is not None else None


def _count(op: linalg.GenericOp) -> int | None:
    """How many points each result of the reduction `op` sums (static only)."""
    structured = as_structured(op)
    if structured is None:
        return None
    ranges = [r for r, i in zip(structured.loop_ranges, structured.iterators, strict=True) if i == "reduction"]
    return prod(ranges) if all(r > 0 for r in ranges) else None


def _is_mean_scale(scale: SSAValue, divides: bool, count: int) -> bool:
    """Is dividing (multiplying) by `scale` taking the mean of `count` values?"""
    const = scale.owner
    if not isinstance(const, arith.ConstantOp) or not isinstance(const.value, FloatAttr):
        return False
    c = const.value.value.data
    return c == count if divides else c != 0 and abs(c * count - 1) <= 1e-12


def _summand(op: Operation | None) -> SSAValue | None:
    """What a reduction generic adds into a fill of 0 at each point (a value of its
    body not read from the accumulator), if it is one."""
    if not isinstance(op, linalg.GenericOp) or _parallel(op) or len(op.outputs) != 1:
        return None
    block = op.body.block
    add = block.last_op.operands[0].owner if block.last_op else None
    acc = block.args[-1]
    if not isinstance(add, arith.AddfOp) or acc not in (add.lhs, add.rhs) or sum(1 for _ in acc.uses) != 1:
        return None
    if not is_zero_fill(op.outputs[0]):
        return None
    return add.rhs if add.lhs is acc else add.lhs


def _widened(site: Site | Read, island: list[Operation]) -> Read | None:
    """The f32-or-narrower tensor element `site` widens to f64."""
    if not isinstance(site, Site) or not isinstance(site.value.owner, arith.ExtFOp):
        return None
    source = _element(Site(site.value.owner.input, site.op, site.loop_map), island)
    if not isinstance(source, Read) or not isinstance(element_type(source.tensor.type), _NARROWER):
        return None
    return source


def _mean_of(mean: Site | Read, element: Read, total: linalg.GenericOp,
             island: list[Operation]) -> bool:  # fmt: skip
    """Is `mean` (reached from `total`'s loops) the mean of `element` over `total`'s
    reduced dims (their sum over its static count), read where that sum wrote it?"""
    scaling = _scaling(mean) if isinstance(mean, Site) else None
    if scaling is None:
        return False
    assert isinstance(mean, Site)
    scaled, scale, divides = scaling
    partial = _element(Site(scaled, mean.op, mean.loop_map), island)
    owner = partial.tensor.owner if isinstance(partial, Read) else None
    summand = _summand(owner)
    if not isinstance(partial, Read) or summand is None:
        return False
    assert isinstance(owner, linalg.GenericOp)
    loops = AffineMap.identity(len(owner.iterator_types))
    summed = _widened(_element(Site(summand, owner, loops), island), island)
    island.append(owner)
    count = _count(owner)
    if summed is None or summed.tensor is not element.tensor or count is None \
            or count != _count(total) or not _is_mean_scale(scale, divides, count):
        return False
    shape = shape_of(partial.tensor)
    kept = _coords(partial.amap, element.amap, shape), _coords(_maps(owner)[-1], summed.amap, shape)
    dims = _summed_dims(total, element), _summed_dims(owner, summed)
    return None not in kept and kept[0] == kept[1] and dims[0] is not None and dims[0] == dims[1]


def _coords(amap: AffineMap, element: AffineMap, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The results of `amap` as the dims of the element they index (`element` maps
    the same loops to the element), dropping dims of size 1; None if a result is
    not a loop that indexes the element."""
    loops = [getattr(e, "position", None) for e in element.results]
    coords = []
    for k, e in enumerate(amap.results):
        if shape[k] == 1:
            continue
        if not isinstance(e, AffineDimExpr) or e.position not in loops:
            return None
        coords.append(loops.index(e.position))
    return tuple(coords)


def _summed_dims(op: linalg.GenericOp, element: Read) -> set[int] | None:
    """The element's dims (of size other than 1) that `op`'s reduction loops run
    along, if each of them runs along one."""
    reduced = {d for d, i in enumerate(op.iterator_types) if str(i.data) == "reduction"}
    indexed = [getattr(e, "position", None) for e in element.amap.results]
    if not reduced <= set(indexed):
        return None
    shape = shape_of(element.tensor)
    return {j for j, d in enumerate(indexed) if d in reduced and shape[j] != 1}


def _squared(site: Site | Read, island: list[Operation]) -> Site | Read | None:
    """The value `site` squares (`d * d` or `d ** 2`)."""
    if not isinstance(site, Site):
        return None
    owner = site.value.owner
    if isinstance(owner, arith.MulfOp):
        a = _element(Site(owner.lhs, site.op, site.loop_map), island)
        b = _element(Site(owner.rhs, site.op, site.loop_map), island)
        return a if a == b else None
    if isinstance(owner, math.PowFOp) and _invariant(owner.rhs, site.op):
        const = owner.rhs.owner
        if isinstance(const, arith.ConstantOp) and const.value.value.data == 2.0:
            return _element(Site(owner.lhs, site.op, site.loop_map), island)
    return None


def match(total: linalg.GenericOp) -> Island | None:
    """The island of the f64 variance `total` sums, if `total` is one."""
    summand = _summand(total)
    if summand is None or not isinstance(element_type(total.results[0].type), Float64Type):
        return None
    island: list[Operation] = [total]
    loops = AffineMap.identity(len(total.iterator_types))
    deviation = _squared(_element(Site(summand, total, loops), island), island)
    if not isinstance(deviation, Site) or not isinstance(deviation.value.owner, arith.SubfOp):
        return None
    sub = deviation.value.owner
    element = _widened(_element(Site(sub.lhs, deviation.op, deviation.loop_map), island), island)
    mean = _element(Site(sub.rhs, deviation.op, deviation.loop_map), island)
    if element is None or not _mean_of(mean, element, total, island):
        return None
    yielded = deviation.op.body.block.last_op
    if deviation.op is not total and (yielded is None or yielded.operands[0] is not deviation.value):
        return None  # the deviation is neither in the sum's payload nor a tensor (not correctable)
    island_ = Island(list(dict.fromkeys(island)), total=total, deviation=deviation)
    return _closed(_tail(island_, total))


def _tail(island: Island, total: linalg.GenericOp) -> Island:
    """`island` with the pointwise generics scaling `total`'s result by a scalar."""
    frontier = [total]
    while frontier:
        op = frontier.pop()
        for use in op.results[0].uses:
            user = use.operation
            if not _passes_through(user) or user in island.ops or len(user.inputs) != 1:
                continue
            assert isinstance(user, linalg.GenericOp)
            yielded = user.body.block.last_op
            assert yielded is not None
            site = Site(yielded.operands[0], user, AffineMap.identity(1))
            if _scaled(site) is user.body.block.args[0]:
                island.ops.append(user)
                frontier.append(user)
    return island


def _only_truncated(value: SSAValue, op: linalg.GenericOp) -> bool:
    """Is the f64 scalar `value` (in `op`'s body) only scaled by scalars the same
    everywhere and then truncated?"""
    for use in value.uses:
        inner = use.operation
        if isinstance(inner, arith.TruncFOp):
            continue
        other = [v for v in inner.operands if v is not value]
        if not (isinstance(inner, _ARITH) and len(other) == 1 and _invariant(other[0], op)
                and _only_truncated(inner.results[0], op)):  # fmt: skip
            return False
    return True


def _truncates(user: Operation, value: SSAValue) -> bool:
    """A generic reading `value` only to truncate it to at most f32 (after scaling
    it by scalars, as a variance's `/ (n - 1)`)."""
    if not isinstance(user, linalg.GenericOp):
        return False
    args = [a for a, v in zip(user.body.block.args, user.operands, strict=True) if v is value]
    return all(a.index < len(user.inputs) and _only_truncated(a, user) for a in args)


def _closed(island: Island) -> Island | None:
    """`island`, if its values are read only inside it, by truncations to at most
    f32 (which become its exits) or by size reads, and its bodies do only
    arithmetic; else None."""
    made = {r for op in island.ops for r in op.results}
    for op in island.ops:
        body = op.body.block.ops if isinstance(op, linalg.GenericOp) else ()
        if any(not isinstance(inner, (*_ARITH, arith.ExtFOp, math.PowFOp, linalg.YieldOp)) for inner in body):
            return None
        inputs = op.inputs if isinstance(op, linalg.GenericOp) else op.operands[:1]
        if any(isinstance(element_type(v.type), Float64Type) and isinstance(v.type, TensorType) and v not in made
               for v in inputs):  # fmt: skip
            return None  # f64 data from outside the variance
        for use in op.results[0].uses:
            user = use.operation
            if user in island.ops or user in island.exits or isinstance(user, tensor.DimOp):
                continue
            if not _truncates(user, op.results[0]):
                return None
            island.exits.append(user)
    return island


def _narrow_operand(value: SSAValue, before: Operation) -> SSAValue:
    """An f64 scalar from outside a body as f32 (a constant anew, else truncated)."""
    const = value.owner
    if isinstance(const, arith.ConstantOp):
        new = constant_of(const.value.value.data, F32)
    else:
        new = arith.TruncFOp(value, F32)
    Rewriter.insert_op(new, InsertPoint.before(before))
    return new.results[0]


def _narrow_body(op: linalg.GenericOp) -> None:
    """`op`'s body with its f64 values f32 (its f32-or-narrower inputs widened
    to f32 instead of f64)."""
    block = op.body.block
    for arg in block.args:
        if isinstance(arg.type, Float64Type):
            Rewriter.replace_value_with_new_type(arg, F32)
    for inner in list(block.ops):
        if isinstance(inner, arith.ExtFOp) and isinstance(inner.result.type, Float64Type):
            if isinstance(inner.input.type, Float32Type):
                inner.result.replace_all_uses_with(inner.input)
                Rewriter.erase_op(inner)
            else:
                Rewriter.replace_value_with_new_type(inner.result, F32)
            continue
        for i, operand in enumerate(inner.operands):
            if isinstance(operand.type, Float64Type) and operand.owner not in block.ops:
                inner.operands[i] = _narrow_operand(operand, op)
        if isinstance(inner, (*_ARITH, math.PowFOp, arith.MaximumfOp)):
            Rewriter.replace_value_with_new_type(inner.results[0], F32)


def _narrow(op: linalg.GenericOp) -> linalg.GenericOp:
    """Replace `op` by its f32 form (a new init of f32: a fill of 0 for a sum)."""
    t = op.results[0].type
    assert isinstance(t, TensorType)
    t32 = TensorType(F32, t.get_shape())
    sizes = like(t, op.outputs[0])
    if _parallel(op):
        *made, empty = sized_empty(t32, sizes)
        init, made = empty.results[0], [*made, empty]
    else:
        init, made = filled(t32, 0.0, sizes)
    old_init = op.outputs[0]
    region = op.detach_region(op.body)
    new = linalg.GenericOp(list(op.inputs), [init], region, op.indexing_maps,
                           op.iterator_types, [t32])  # fmt: skip
    new.location = op.location
    Rewriter.insert_op([*made, new], InsertPoint.before(op))
    _narrow_body(new)
    op.results[0].replace_all_uses_with(new.results[0])
    Rewriter.erase_op(op)
    _erase_if_dead(old_init)
    return new


def _erase_if_dead(value: SSAValue) -> None:
    """Erase the op making `value` (an init: an empty, a fill and its empty) once
    nothing reads it."""
    op = value.owner
    if not isinstance(op, tensor.EmptyOp | linalg.GenericOp) or any(r.uses for r in op.results):
        return
    operands = list(op.operands)
    Rewriter.erase_op(op)
    for v in operands:
        if isinstance(v.type, TensorType):
            _erase_if_dead(v)


def _narrow_uses(value: SSAValue, op: linalg.GenericOp) -> None:
    """The scalings and truncations of the (now f32) `value` in `op`'s body, in f32."""
    for use in list(value.uses):
        inner = use.operation
        if isinstance(inner, arith.TruncFOp):
            if isinstance(inner.result.type, Float32Type):
                inner.result.replace_all_uses_with(value)
                Rewriter.erase_op(inner)
            else:
                Rewriter.replace_op(inner, arith.TruncFOp(value, inner.result.type))
            continue
        for i, operand in enumerate(inner.operands):
            if operand is not value and isinstance(operand.type, Float64Type):
                inner.operands[i] = _narrow_operand(operand, op)
        _narrow_uses(Rewriter.replace_value_with_new_type(inner.results[0], F32), op)


def _narrow_exit(op: linalg.GenericOp) -> None:
    """A generic that truncated an island's f64 value now reads it in f32."""
    for arg in list(op.body.block.args):
        if isinstance(arg.type, Float64Type) and isinstance(element_type(op.operands[arg.index].type), Float32Type):
            _narrow_uses(Rewriter.replace_value_with_new_type(arg, F32), op)


def _linear_sum(island: Island) -> linalg.GenericOp:
    """A reduction over the variance's loops summing the deviation itself (f64, as
    the island still is): the payload's own deviation (a copy of the sum whose add
    reads it instead of its square), or the tensor of deviations read the way the
    sum reads its squares."""
    total, dev = island.total, island.deviation
    assert total is not None and dev is not None
    if dev.op is total:
        clone = total.clone()
        ops_total, ops_clone = list(total.body.block.ops), list(clone.body.block.ops)
        dv = ops_clone[ops_total.index(dev.value.owner)].results[0]
        add = clone.body.block.last_op.operands[0].owner
        acc = clone.body.block.args[-1]
        square = add.operands[0 if add.operands[1] is acc else 1].owner
        add.operands[0 if add.operands[1] is acc else 1] = dv
        if not any(r.uses for r in square.results):
            Rewriter.erase_op(square)
        return clone
    deviations = dev.op.results[0]
    amap = _maps(dev.op)[-1].compose(dev.loop_map)
    block = Block(arg_types=[F64, F64])
    add = arith.AddfOp(block.args[0], block.args[1])
    block.add_ops([add, linalg.YieldOp(add.result)])
    return linalg.GenericOp([deviations], [total.outputs[0]], Region(block),
                            [AffineMapAttr(amap), total.indexing_maps.data[-1]],
                            total.iterator_types, [total.results[0].type])  # fmt: skip


def _correct(island: Island) -> None:
    """Make the island's sum of squared deviations `sum d^2 - (sum d)^2 / n` (Chan,
    Golub and LeVeque's corrected two-pass form): in real arithmetic the same for the
    exact mean; in f32 it cancels the `n e^2` the f32 mean's error `e` adds, which
    a data of large mean and small spread would see (1e4 + 1e-2 randn: 0.36%). Clamped
    at 0 (the rounding may go below)."""
    total = island.total
    assert total is not None
    count = _count(total)
    assert count is not None
    linear = _linear_sum(island)
    t = total.results[0].type
    assert isinstance(t, TensorType)
    rank = len(t.get_shape())
    n, zero = constant_of(float(count), F64), constant_of(0.0, F64)
    *sizes, empty = sized_empty(t, like(t, total.results[0]))
    block = Block(arg_types=[F64, F64, F64])
    sq, lin = block.args[0], block.args[1]
    ops = [arith.MulfOp(lin, lin)]
    ops.append(arith.DivfOp(ops[-1].result, n.result))
    ops.append(arith.SubfOp(sq, ops[-1].result))
    ops.append(arith.MaximumfOp(ops[-1].result, zero.result))
    block.add_ops([*ops, linalg.YieldOp(ops[-1].result)])
    identity = AffineMapAttr(AffineMap.identity(rank))
    corrected = linalg.GenericOp([total.results[0], linear.results[0]], [empty.results[0]], Region(block),
                                 [identity] * 3, [IteratorTypeAttr(IteratorType.PARALLEL)] * rank, [t])  # fmt: skip
    corrected.location = linear.location = total.location
    Rewriter.insert_op([linear, n, zero, *sizes, empty, corrected], InsertPoint.after(total))
    for use in list(total.results[0].uses):
        if use.operation is not corrected and use.operation not in sizes:  # (its init's sizes)
            use.operation.operands[use.index] = corrected.results[0]
    island.ops += [linear, corrected]


def _retype(op: Operation) -> None:
    """A reshape of the island, now of f32 (its source is narrowed before it)."""
    t = op.results[0].type
    assert isinstance(t, TensorType)
    Rewriter.replace_value_with_new_type(op.results[0], TensorType(F32, t.get_shape()))


def _drop_copy(op: linalg.GenericOp) -> None:
    """Read the input of a narrowed generic that now only copies it (the widening
    of an f32 input, an f32 variance's truncation)."""
    maps = _maps(op)
    yielded = op.body.block.last_op
    assert yielded is not None
    if (len(op.inputs) == 1 and yielded.operands[0] is op.body.block.args[0]
            and op.inputs[0].type == op.results[0].type
            and all(m == AffineMap.identity(m.num_dims) for m in maps)):  # fmt: skip
        op.results[0].replace_all_uses_with(op.inputs[0])
        init = op.outputs[0]
        Rewriter.erase_op(op)
        _erase_if_dead(init)


def _same_scalar(a: SSAValue, b: SSAValue) -> bool:
    """The same value from outside two bodies: one value, or equal constants."""
    ca, cb = a.owner, b.owner
    return a is b or (isinstance(ca, arith.ConstantOp) and isinstance(cb, arith.ConstantOp)
                      and ca.value == cb.value)  # fmt: skip


def _same_body(a: linalg.GenericOp, b: linalg.GenericOp) -> bool:
    """Do the two bodies compute the same from their block arguments (ops of one
    kind and attributes in one order, outside values the same)?"""
    ops_a, ops_b = list(a.body.block.ops), list(b.body.block.ops)
    if len(ops_a) != len(ops_b):
        return False
    pairs: dict[SSAValue, SSAValue] = dict(zip(a.body.block.args, b.body.block.args, strict=True))
    for x, y in zip(ops_a, ops_b, strict=True):
        if x.name != y.name or x.properties != y.properties or x.result_types != y.result_types:
            return False
        for u, v in zip(x.operands, y.operands, strict=True):
            if pairs.get(u, u) is not v and not _same_scalar(u, v):
                return False
        pairs.update(zip(x.results, y.results, strict=True))
    return True


def _same_generic(a: linalg.GenericOp, b: linalg.GenericOp) -> bool:
    """Do `a` and `b` compute one tensor (same inputs, maps and loops, inits that are
    equal fills or unread, same body)?"""
    if (list(a.inputs) != list(b.inputs) or a.indexing_maps != b.indexing_maps
            or a.iterator_types != b.iterator_types or a.result_types != b.result_types):  # fmt: skip
        return False
    inits = a.outputs[0].owner, b.outputs[0].owner
    if a.body.block.args[-1].uses:
        if not all(is_generic_fill(i) for i in inits):
            return False
        assert isinstance(inits[0], linalg.GenericOp) and isinstance(inits[1], linalg.GenericOp)
        if not _same_scalar(inits[0].inputs[0], inits[1].inputs[0]):
            return False
    return _same_body(a, b)


def _merge_duplicate(op: linalg.GenericOp) -> None:
    """If a generic of the block computes what `op` computes, keep the first of the two:
    the f32 mean torch-mlir's layer norm already subtracts is the variance's mean."""
    block = op.parent_block()
    for use in list(op.inputs[0].uses) if op.inputs else []:
        other = use.operation
        if other is op or not isinstance(other, linalg.GenericOp) or other.parent_block() is not block:
            continue
        if _same_generic(op, other):
            first, second = (op, other) if block.get_operation_index(op) < block.get_operation_index(other) else (other, op)
            second.results[0].replace_all_uses_with(first.results[0])
            init = second.outputs[0]
            Rewriter.erase_op(second)
            _erase_if_dead(init)
            return


def _islands(f: func.FuncOp) -> Iterator[Island]:
    taken: set[Operation] = set()
    for op in list(f.walk()):
        if isinstance(op, linalg.GenericOp) and op not in taken and (island := match(op)):
            taken.update(island.ops)
            yield island


def narrow_variances(f: func.FuncOp) -> int:
    """Narrow every f64 variance island of `f`; how many."""
    islands = list(_islands(f))
    for island in islands:
        _correct(island)
        order = {op: i for i, op in enumerate(f.walk())}
        exits = list(dict.fromkeys(island.exits))
        narrowed = []
        for op in sorted(island.ops, key=order.__getitem__):  # producers first
            if isinstance(op, linalg.GenericOp):
                narrowed.append(_narrow(op))
            else:
                _retype(op)
        for op in exits:
            _narrow_exit(op)
        for op in [*narrowed, *exits]:
            _drop_copy(op)
        for op in narrowed:
            if op.parent is not None:
                _merge_duplicate(op)
    for op in list(f.walk()) if islands else []:  # the f64 constants they read
        if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, Float64Type) and not op.result.uses:
            Rewriter.erase_op(op)
    return len(islands)


@dataclass(frozen=True)
class NarrowVariancePass(ModulePass):
    """Compute in f32 the f64 variances torch-mlir's decompositions write (the
    mean and the sum of squared deviations of f32-or-narrower values, truncated back
    to f32), as ATen computes them."""

    name = "narrow-variance"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.walk():
            if isinstance(f, func.FuncOp):
                narrow_variances(f)
