"""
The reference evaluator: runs a program with numpy, the oracle for every pass.

`evaluate(module, inputs)` executes the module's entry function on numpy
arrays and returns its results. It interprets every IR form the pipeline
produces (linalg in any spelling, tensor slices, `scf` loops, `tilefuse`
groups), so "this pass preserved meaning" is one comparison of two runs. It
imports only the IR layer: no pass, so no pass can lend it its mistakes.

Scalars follow `oracle/scalar.py`: every op's result is rounded to its IR
type, so an f16/bf16 program is evaluated at its own precision, except that
reductions accumulate in float64 before rounding, as every GPU kernel
accumulates wider.

Linalg ops are vectorised over their whole loop space: each operand is viewed
with one axis per loop (size 1 where it does not vary), the payload runs once
on those arrays, and reductions use the payload's combiner as a numpy
reduction (`np.add.reduce`, `np.maximum.reduce`, ...) or, for a contraction,
`np.einsum`. Payloads with no recognised combiner fall back to a loop over the
reduction indices only, still vectorised over the parallel loops. Maps are
read as written: an input indexed by sums of loops or by constants (a
convolution's `oh + kh`, torch-mlir's `(d0, d1) -> (0, d1)` broadcast of a
size-1 dim) is gathered index by index, and an output indexed by a constant
(a keep-dim reduction's `(d0, d1) -> (d0, 0)`) is computed where the constant
points and written there. A `cf.assert` raises `RuntimeCheckError` (its message
and location) unless its condition holds on every element.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith, cf, func, scf, tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX as DYNAMIC
from xdsl.dialects.builtin import IndexType, IntegerType, ModuleOp, TensorType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap

from tilefuse.ir import tilefuse as tf
from tilefuse.ir.affine import window_terms
from tilefuse.ir.diagnostics import CompileError, check_failure
from tilefuse.ir.dynamic import check_sizes
from tilefuse.ir.linalg_named import SoftmaxOp
from tilefuse.ir.module import entry_function
from tilefuse.ir.structured import (
    REDUCTION,
    StructuredOp,
    as_structured,
    element_type,
    is_window_map,
    shape_of,
)
from tilefuse.oracle.scalar import (
    Env,
    eval_scalar_op,
    int_view,
    numpy_dtype,
    round_to,
    wrapped,
)

# Combiners a reduction payload may end in, and the numpy reduction they become.
COMBINERS: dict[type[Operation], np.ufunc] = {
    arith.AddfOp: np.add, arith.MulfOp: np.multiply, arith.MaximumfOp: np.maximum,
    arith.MinimumfOp: np.minimum, arith.MaxnumfOp: np.fmax, arith.MinnumfOp: np.fmin,
    arith.AddiOp: np.add, arith.MuliOp: np.multiply, arith.MaxSIOp: np.maximum,
    arith.MinSIOp: np.minimum, arith.AndIOp: np.bitwise_and, arith.OrIOp: np.bitwise_or,
    arith.XOrIOp: np.bitwise_xor,
}  # fmt: skip


# ---------------------------------------------------------------------------
# Structured (linalg) ops
# ---------------------------------------------------------------------------


def to_loop_space(array: np.ndarray, dims: Sequence[int], num_loops: int) -> np.ndarray:
    """View `array` (indexed by loops `dims`) with one axis per loop."""
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    moved = np.transpose(array, order) if len(dims) > 1 else array
    shape = [1] * num_loops
    for i in order:
        shape[dims[i]] = array.shape[i]
    return moved.reshape(shape)


def from_loop_space(
    value: np.ndarray, dims: Sequence[int], ranges: Sequence[int]
) -> np.ndarray:
    """Take an array over the loop space back to an operand indexed by `dims`."""
    full_shape = [ranges[d] if d in dims else 1 for d in range(len(ranges))]
    value = np.broadcast_to(value, np.broadcast_shapes(value.shape, tuple(full_shape)))
    drop = tuple(d for d in range(len(ranges)) if d not in dims)
    value = value.reshape([s for d, s in enumerate(value.shape) if d not in drop])
    kept = sorted(dims)
    # (np.ascontiguousarray would make a 0-d result 1-d.)
    return np.asarray(np.transpose(value, [kept.index(d) for d in dims]), order="C")


def eval_payload(
    block: Block, args: Sequence[np.ndarray], env: Env, index: Sequence[np.ndarray]
) -> list[np.ndarray]:
    """Run a payload block on arrays; returns the yielded arrays."""
    local: Env = dict(env)
    for arg, value in zip(block.args, args, strict=True):
        local[arg] = value
    for op in block.ops:
        if isinstance(op, linalg.YieldOp):
            return [local[v] for v in op.operands]
        if isinstance(op, linalg.IndexOp):
            local[op.result] = index[op.dim.value.data]
        elif isinstance(op, cf.AssertOp):
            check(op, local)
        else:
            eval_payload_op(op, local)
    raise CompileError("payload block without linalg.yield")


def check(op: cf.AssertOp, env: Env) -> None:
    """`cf.assert`: raise `RuntimeCheckError` with its message unless the condition
    holds everywhere."""
    if not np.all(env[op.arg]):
        raise check_failure(op)


def eval_payload_op(op: Operation, env: Env) -> None:
    """One scalar op of a payload on arrays over the loop space: `arith`/`math`,
    or a `tensor.extract` of a tensor from outside the payload (a gather)."""
    if isinstance(op, tensor.ExtractOp):
        env[op.result] = extract(op, env)
    else:
        eval_scalar_op(op, env)


def extract(op: tensor.ExtractOp, env: Env) -> np.ndarray:
    """`tensor.extract` at (arrays of) indices, each checked against its dim: an
    index out of range is undefined in the IR, so it is an error here, never
    numpy's wrap-around of negative indices."""
    table = np.asarray(env[op.tensor])
    indices = np.broadcast_arrays(*(np.asarray(env[i], np.int64) for i in op.indices))
    for d, (idx, size) in enumerate(zip(indices, table.shape, strict=True)):
        bad = (idx < 0) | (idx >= size)
        if bad.any():
            raise CompileError.at(op, f"reads index {int(idx[bad].flat[0])} of dim {d} "
                                  f"(size {size}): out of bounds")  # fmt: skip
    return table[tuple(indices)]


def eval_structured(
    s: StructuredOp, env: Env, outs: Sequence[np.ndarray] | None = None
) -> list[np.ndarray]:
    """Evaluate a linalg op, vectorised over its loop space (on `outs` as the
    output values when given, else the outputs' values in `env`)."""
    n = s.num_loops
    index = [
        np.arange(r).reshape([r if d == k else 1 for k in range(n)])
        for d, r in enumerate(s.loop_ranges)
    ]
    ins = [_input_in_loop_space(s, i, env[v], index) for i, v in enumerate(s.inputs)]
    outs = [env[v] for v in s.outputs] if outs is None else outs
    inits = [
        to_loop_space(x, s.operand_dims(len(s.inputs) + i), n) for i, x in enumerate(outs)
    ]
    if not s.reduction_dims:
        results = eval_payload(s.payload, ins + inits, env, index)
    else:
        for op in s.payload.ops:  # the checks of every iteration, before combining
            if isinstance(op, cf.AssertOp):
                check(op, {op.arg: _eval_value(op.arg, s, ins, inits, env, index)})
        results = _eval_reduction(s, ins, inits, env, index)
    return [
        round_to(
            from_loop_space(r, s.operand_dims(len(s.inputs) + i), s.loop_ranges),
            element_type(s.outputs[i].type),
        )
        for i, r in enumerate(results)
    ]


def _eval_constant_outputs(op: linalg.GenericOp, env: Env) -> list[np.ndarray]:
    """A generic writing an output at a constant index (`(d0, d1) -> (d0, 0)`, a
    keep-dim row sum into `tensor<20x1xf32>`): that output is the sub-array the
    constants select, computed through the map without them, and written back
    there; the rest of the output keeps its value, as in upstream linalg."""
    n_in = len(op.inputs)
    maps = [m.data for m in op.indexing_maps.data]
    picks = [_constant_pick(op, m) for m in maps[n_in:]]
    projected = [
        AffineMap(m.num_dims, m.num_symbols,
                  tuple(r for r in m.results if not isinstance(r, AffineConstantExpr)))
        for m in maps[n_in:]
    ]  # fmt: skip
    s = StructuredOp(op, tuple(op.inputs), tuple(op.outputs), (*maps[:n_in], *projected),
                     tuple(str(it.data) for it in op.iterator_types),
                     op.body.block, _loop_ranges(op, maps, env))  # fmt: skip
    outs = [np.asarray(env[v]) for v in op.outputs]
    results = eval_structured(s, env, [x[p] for x, p in zip(outs, picks, strict=True)])
    return [_written(x, p, r) for x, p, r in zip(outs, picks, results, strict=True)]


def _constant_pick(op: Operation, amap: AffineMap) -> tuple[int | slice, ...]:
    """The index an output map selects: its constants, and every element along
    its dims."""
    if not all(isinstance(r, AffineDimExpr | AffineConstantExpr) for r in amap.results):
        raise CompileError.at(op, f"writes an output through {amap}, which the "
                                  "reference evaluator cannot evaluate")  # fmt: skip
    return tuple(r.value if isinstance(r, AffineConstantExpr) else slice(None)
                 for r in amap.results)  # fmt: skip


def _loop_ranges(op: linalg.GenericOp, maps: list[AffineMap], env: Env) -> tuple[int, ...]:
    """Each loop's trip count: the size of a dim some map indexes by that loop alone
    (in the arrays: a dynamic dim's size at run time)."""
    ranges = [0] * maps[0].num_dims
    for value, amap in zip(op.operands, maps, strict=True):
        for size, r in zip(np.shape(env[value]), amap.results, strict=True):
            if isinstance(r, AffineDimExpr):
                ranges[r.position] = size
    return tuple(ranges)


def _written(out: np.ndarray, pick: tuple, value: np.ndarray) -> np.ndarray:
    """`out` with `value` written at `pick`."""
    if value.size == out.size:  # the constants pick size-1 dims: all of `out`
        return value.reshape(out.shape)
    with np.errstate(invalid="ignore"):  # an integer written into tensor.empty's NaNs
        result = out.astype(value.dtype)
    result[pick] = value
    return result


def _has_constant_outputs(op: Operation) -> bool:
    if not isinstance(op, linalg.GenericOp):
        return False
    maps = op.indexing_maps.data[len(op.inputs) :]
    return any(isinstance(r, AffineConstantExpr) for m in maps for r in m.data.results)


def _input_in_loop_space(
    s: StructuredOp, i: int, array: np.ndarray, index: list[np.ndarray]
) -> np.ndarray:
    """Input `i` over the loop space; a windowed read (a convolution's `oh + kh`)
    gathers its elements by computing each index from the loop indices."""
    if not is_window_map(s.maps[i]):
        return to_loop_space(array, s.operand_dims(i), s.num_loops)
    terms = [window_terms(r) for r in s.maps[i].results]
    for d, (coeffs, const) in enumerate(terms):  # static sizes: checked at load time
        last = const + sum(c * (s.loop_ranges[k] - 1) for k, c in coeffs.items() if c > 0)
        first = const + sum(c * (s.loop_ranges[k] - 1) for k, c in coeffs.items() if c < 0)
        if first < 0 or last >= np.shape(array)[d]:
            raise CompileError.at(s.op, f"reads index {last if first >= 0 else first} of dim {d} "
                                  f"of operand {i}, of size {np.shape(array)[d]} at run time")  # fmt: skip
    return _gather(array, terms, index, [1] * s.num_loops)


def _gather(array, terms, index: list[np.ndarray], shape) -> np.ndarray:
    """`array` read at sum(c * index[d]) + const per dim (`terms`: a window's
    coefficients and constants), over `shape`."""
    base = np.zeros(shape, np.int64)
    idx = tuple(base + const + sum((c * index[d] for d, c in coeffs.items()), base)
                for coeffs, const in terms)  # fmt: skip
    return np.asarray(array)[idx]


def _loop_dims(s: StructuredOp, i: int) -> tuple[int, ...]:
    """The loop dims operand `i` varies along (a window's: every dim it sums)."""
    if not is_window_map(s.maps[i]):
        return s.operand_dims(i)
    return tuple(sorted({d for r in s.maps[i].results for d in window_terms(r)[0]}))


def _combiner(s: StructuredOp, i: int) -> tuple[Operation, SSAValue] | None:
    """If output `i` yields `comb(x, acc_i)`, return (comb op, x)."""
    yield_op = s.payload.last_op
    assert yield_op is not None
    acc = s.payload.args[len(s.inputs) + i]
    value = yield_op.operands[i]
    op = value.owner
    if not isinstance(op, Operation) or type(op) not in COMBINERS:
        return None
    a, b = op.operands
    other = b if a is acc else a if b is acc else None
    if other is None or _depends_on_accumulators(other, s):
        return None
    return op, other


def _depends_on_accumulators(value: SSAValue, s: StructuredOp) -> bool:
    accs = set(s.payload.args[len(s.inputs) :])
    stack, seen = [value], set()
    while stack:
        v = stack.pop()
        if v in accs:
            return True
        if v in seen or not isinstance(v.owner, Operation):
            continue
        seen.add(v)
        stack.extend(v.owner.operands)
    return False


def _eval_reduction(
    s: StructuredOp,
    ins: list[np.ndarray],
    inits: list[np.ndarray],
    env: Env,
    index: list[np.ndarray],
) -> list[np.ndarray]:
    combiners = [_combiner(s, i) for i in range(len(s.outputs))]
    if any(c is None for c in combiners):
        return _eval_reduction_loop(s, ins, inits, env, index)
    axes = s.reduction_dims
    results = []
    for init, comb, out in zip(inits, combiners, s.outputs, strict=True):
        assert comb is not None
        op, x = comb
        et = element_type(out.type)
        if (partial := _einsum_contraction(s, op, x, ins)) is None:
            # integers combined as signed values (a true i1 is -1), wrapped after
            contrib = int_view(_eval_value(x, s, ins, inits, env, index), et, False)
            full = np.broadcast_shapes(contrib.shape, tuple(s.loop_ranges))
            partial = COMBINERS[type(op)].reduce(
                np.broadcast_to(contrib, full), axis=axes, keepdims=True
            )
        with np.errstate(all="ignore"):
            value = COMBINERS[type(op)](int_view(init, et, False), partial)
        results.append(wrapped(value, et))
    return results


def _eval_value(
    x: SSAValue,
    s: StructuredOp,
    ins: list[np.ndarray],
    inits: list[np.ndarray],
    env: Env,
    index: list[np.ndarray],
) -> np.ndarray:
    """Evaluate payload value `x` over the full loop space."""
    local: Env = dict(env)
    for arg, value in zip(s.payload.args, ins + inits, strict=True):
        local[arg] = value
    for op in s.payload.ops:
        if x in local:
            break
        if isinstance(op, linalg.IndexOp):
            local[op.result] = index[op.dim.value.data]
        elif not isinstance(op, linalg.YieldOp | cf.AssertOp):
            eval_payload_op(op, local)
    return local[x]


def _einsum_contraction(
    s: StructuredOp, comb: Operation, x: SSAValue, ins: list[np.ndarray]
) -> np.ndarray | None:
    """`sum(a * b)` over two input elements: evaluate with einsum, unmaterialised."""
    mul = x.owner
    if not (isinstance(comb, arith.AddfOp) and isinstance(mul, arith.MulfOp)):
        return None
    args = list(s.payload.args[: len(s.inputs)])
    if not all(o in args for o in mul.operands):
        return None
    letters = "abcdefghijklmnopqrstuvwxyz"
    positions = [args.index(o) for o in mul.operands]
    dims = [_loop_dims(s, i) for i in positions]
    present = set(dims[0]) | set(dims[1])
    if any(d not in present for d in s.parallel_dims):
        return None
    keep = "".join(letters[d] for d in s.parallel_dims)
    arrays = [ins[i].reshape([ins[i].shape[d] for d in sorted(ds)]) for i, ds in zip(positions, dims, strict=True)]
    specs = ["".join(letters[d] for d in sorted(ds)) for ds in dims]
    out = np.einsum(f"{specs[0]},{specs[1]}->{keep}", *arrays, optimize=True)
    shape = [1 if it == REDUCTION else r for r, it in zip(s.loop_ranges, s.iterators, strict=True)]
    return out.reshape(shape)


def _eval_reduction_loop(
    s: StructuredOp,
    ins: list[np.ndarray],
    inits: list[np.ndarray],
    env: Env,
    index: list[np.ndarray],
) -> list[np.ndarray]:
    """General reductions: iterate over reduction indices, vectorised otherwise."""
    red = s.reduction_dims
    par_shape = [1 if d in red else r for d, r in enumerate(s.loop_ranges)]
    accs = [np.broadcast_to(a, par_shape).copy() for a in inits]
    for point in itertools.product(*(range(s.loop_ranges[d]) for d in red)):
        sl = [slice(None)] * s.num_loops
        for d, k in zip(red, point, strict=True):
            sl[d] = slice(k, k + 1)
        accs = eval_payload(s.payload, _pick(ins, sl) + accs, env, _pick(index, sl))
    return accs


def _pick(arrays: list[np.ndarray], sl: list[slice]) -> list[np.ndarray]:
    out = []
    for a in arrays:
        view = tuple(s if a.shape[d] != 1 else slice(None) for d, s in enumerate(sl))
        out.append(a[view])
    return out


# ---------------------------------------------------------------------------
# Tensor, scf, func and tilefuse ops
# ---------------------------------------------------------------------------


def _static_or_dynamic(static: Sequence[int], dynamic: Sequence[SSAValue], env: Env) -> list[int]:
    return list(_sizes(static, dynamic, env))


def _slice_spec(op: tensor.ExtractSliceOp | tensor.InsertSliceOp, env: Env) -> tuple[slice, ...]:
    offsets = _static_or_dynamic(op.static_offsets.get_values(), op.offsets, env)
    sizes = _static_or_dynamic(op.static_sizes.get_values(), op.sizes, env)
    strides = _static_or_dynamic(op.static_strides.get_values(), op.strides, env)
    full = np.shape(env[op.source if isinstance(op, tensor.ExtractSliceOp) else op.dest])
    for d, (o, n, st, extent) in enumerate(zip(offsets, sizes, strides, full, strict=True)):
        if o < 0 or n < 1 or st < 1 or o + (n - 1) * st >= extent:
            raise CompileError.at(op, f"reads [{o}, {o + (n - 1) * st}] step {st} of dim {d} "
                                  f"(size {extent}) at run time: outside it, or empty")  # fmt: skip
    return tuple(
        slice(o, o + sz * st, st) for o, sz, st in zip(offsets, sizes, strides, strict=True)
    )


def _result_shape(op: Operation) -> tuple[int, ...]:
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return tuple(t.get_shape())


# -- dynamic sizes ------------------------------------------------------------
# A dynamic dim (`?`) takes its size from the arrays: `tensor.dim` reads it,
# `tensor.empty` and `expand_shape` take it from their index operands, a linalg
# op's loops from its operands (which must agree, as upstream's runtime checks
# require: numpy would broadcast a 1 silently).


def _at_run_time_sizes(s: StructuredOp, env: Env) -> StructuredOp:
    """`s` with its loop ranges from its operands' arrays where a type is dynamic;
    a located error where two operands disagree on a loop's size."""
    if not any(DYNAMIC in shape_of(v) for v in s.operands):
        return s
    ranges: list[int | None] = [None] * s.num_loops
    for i, v in enumerate(s.operands):
        for axis, (size, r) in enumerate(zip(np.shape(env[v]), s.maps[i].results, strict=True)):
            if not isinstance(r, AffineDimExpr):
                continue
            known = ranges[r.position]
            if known is not None and known != size:
                raise CompileError.at(s.op, f"has loop d{r.position} of {known} iterations by one "
                                      f"operand and {size} by dim {axis} of operand {i}: the sizes "
                                      "of its dynamic dims disagree at run time")  # fmt: skip
            ranges[r.position] = size
    if None in ranges:
        raise CompileError.at(s.op, "has a loop no operand dim gives the size of")
    return dataclasses.replace(s, loop_ranges=tuple(r for r in ranges if r is not None))


def _sizes(static: Sequence[int], dynamic: Sequence[SSAValue], env: Env) -> tuple[int, ...]:
    dyn = iter(dynamic)
    return tuple(int(env[next(dyn)]) if v == DYNAMIC else v for v in static)


def _positive_sizes(op: Operation, sizes: Sequence[int]) -> tuple[int, ...]:
    if any(n < 1 for n in sizes):
        raise CompileError.at(op, f"makes a tensor of sizes {list(sizes)} at run time: "
                              "every dim needs at least one element")  # fmt: skip
    return tuple(sizes)


def check_result_shapes(op: Operation, env: Env) -> None:
    """The arrays `op` made have its result types' static sizes (a `tensor.cast` to a
    static shape, a static op reading a dynamic value: a located error, not a wrong
    shape passed on)."""
    for r in op.results:
        if isinstance(r.type, TensorType) and r in env:
            shape, want = np.shape(env[r]), r.type.get_shape()
            if len(shape) != len(want) or any(w not in (DYNAMIC, n) for n, w in zip(shape, want, strict=True)):
                raise CompileError.at(op, f"makes a {tuple(shape)} tensor at run time, where its "
                                      f"type is {r.type}")  # fmt: skip


def _eval_empty(op: tensor.EmptyOp, env: Env) -> None:
    t = op.tensor.type
    assert isinstance(t, TensorType)
    env[op.tensor] = np.full(_positive_sizes(op, _sizes(t.get_shape(), op.dynamic_sizes, env)), np.nan)


def _eval_dim(op: tensor.DimOp, env: Env) -> None:
    x, axis = np.asarray(env[op.source]), int(env[op.index])
    if not 0 <= axis < x.ndim:
        raise CompileError.at(op, f"reads dim {axis} of a {x.ndim}-d tensor")
    env[op.result] = np.int64(x.shape[axis])


def _eval_expand(op: tensor.ExpandShapeOp, env: Env) -> None:
    shape = _positive_sizes(op, _sizes(op.static_output_shape.get_values(), op.dynamic_output_shape, env))
    x = np.asarray(env[op.src])
    groups = [[i.value.data for i in g] for g in op.reassociation]  # pyright: ignore
    if any(math.prod(shape[d] for d in g) != n for g, n in zip(groups, x.shape, strict=True)):
        raise CompileError.at(op, f"expands {x.shape} into {shape}: the sizes differ at run time")
    env[op.result] = np.reshape(x, shape)


def _eval_collapse(op: tensor.CollapseShapeOp, env: Env) -> None:
    x = np.asarray(env[op.src])
    groups = [[i.value.data for i in g] for g in op.reassociation]  # pyright: ignore
    env[op.result] = np.reshape(x, [math.prod(x.shape[d] for d in g) for g in groups])


def eval_op(op: Operation, env: Env) -> list[np.ndarray] | None:
    """Evaluate one op; returns the values of a terminator, else None."""
    if _has_constant_outputs(op):
        _bind(op, _eval_constant_outputs(op, env), env)
    elif (s := as_structured(op)) is not None:
        _bind(op, eval_structured(_at_run_time_sizes(s, env), env), env)
    elif isinstance(op, func.ReturnOp | scf.YieldOp | tf.YieldOp):
        return [env[v] for v in op.operands]
    elif isinstance(op, cf.AssertOp):
        check(op, env)
    elif type(op) in _HANDLERS:
        _HANDLERS[type(op)](op, env)
    elif op.dialect_name() in ("arith", "math"):
        eval_scalar_op(op, env)
    else:
        raise CompileError.at(op, "is not supported by the reference evaluator")
    return None


def _bind(op: Operation, values: Sequence[np.ndarray], env: Env) -> None:
    for r, v in zip(op.results, values, strict=True):
        env[r] = v


def _eval_group(op: tf.GroupOp, env: Env) -> None:
    """A group's body on its inputs, each seen through its merge (`input_merges`: the
    merged dims moved together and flattened), its results unmerged back."""
    inputs = [_merged(env[v], op.input_merge(i)) for i, v in enumerate(op.inputs)]
    results = eval_block(op.entry, inputs, {})
    _bind(op, [_unmerged(r, op.result_merge(i), op.results[i].type.get_shape())
               for i, r in enumerate(results)], env)  # fmt: skip


def _merged(a: np.ndarray, merge: tf.Merge | None) -> np.ndarray:
    if merge is None:
        return a
    order = [d for dims in merge for d in dims]
    return np.transpose(a, order).reshape(tf.merged_shape(a.shape, merge))


def _unmerged(a: np.ndarray, merge: tf.Merge | None, shape: Sequence[int]) -> np.ndarray:
    if merge is None:
        return a
    order = [d for dims in merge for d in dims]
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return np.transpose(np.reshape(a, [shape[d] for d in order]), inverse)


def _eval_extract_slice(op: tensor.ExtractSliceOp, env: Env) -> None:
    src = env[op.source][_slice_spec(op, env)]
    want = _result_shape(op)
    if len(want) == src.ndim:
        shape = src.shape
    elif DYNAMIC not in want:
        shape = want  # rank-reducing: the unit dims dropped
    else:
        raise CompileError.at(op, "drops unit dims of a slice with dynamic sizes, which the "
                              "reference evaluator does not evaluate")  # fmt: skip
    env[op.result] = src.reshape(shape).copy()


def _eval_concat(op: tensor.ConcatOp, env: Env) -> None:
    parts, axis = [np.asarray(env[v]) for v in op.inputs], op.dim.value.data
    if len({p.shape[:axis] + p.shape[axis + 1 :] for p in parts}) > 1:
        raise CompileError.at(op, f"concatenates {[p.shape for p in parts]} along dim {axis}: "
                              "the other dims differ at run time")  # fmt: skip
    env[op.result] = np.concatenate(parts, axis=axis)


def _eval_insert_slice(op: tensor.InsertSliceOp, env: Env) -> None:
    dest = env[op.dest].copy()
    view = _slice_spec(op, env)
    if np.size(env[op.source]) != dest[view].size:
        raise CompileError.at(op, f"inserts a {np.shape(env[op.source])} tensor into a "
                              f"{dest[view].shape} slice at run time")  # fmt: skip
    dest[view] = np.reshape(env[op.source], dest[view].shape)
    env[op.result] = dest


def _eval_call(op: func.CallOp, env: Env) -> None:
    callee = _lookup(op, op.callee.root_reference.data)
    _bind(op, eval_block(callee.body.block, [env[v] for v in op.arguments], {}), env)


def _eval_softmax(op, env: Env) -> None:
    x = np.asarray(env[op.input], np.float64)
    d = op.dimension.value.data
    e = np.exp(x - x.max(axis=d, keepdims=True))
    env[op.result] = round_to(e / e.sum(axis=d, keepdims=True), op.result.type.get_element_type())


_HANDLERS = {
    tensor.EmptyOp: _eval_empty,
    tensor.DimOp: _eval_dim,
    tensor.ExtractSliceOp: _eval_extract_slice,
    tensor.ConcatOp: lambda op, env: _eval_concat(op, env),
    tensor.CastOp: lambda op, env: env.__setitem__(op.dest, env[op.source]),
    tensor.InsertSliceOp: _eval_insert_slice,
    scf.ForOp: lambda op, env: _eval_for(op, env),
    tf.TileGridOp: lambda op, env: _eval_grid(op, env),
    tf.LoadOp: lambda op, env: env.__setitem__(
        op.result, _load_tile(env[op.source], [int(env[o]) for o in op.offsets], _result_shape(op))),
    tf.StoreOp: lambda op, env: _store_tile(
        np.reshape(env[op.value], op.value.type.get_shape()), env[op.dest],
        [int(env[o]) for o in op.offsets]),
    tf.GroupOp: lambda op, env: _eval_group(op, env),
    func.CallOp: _eval_call,
    SoftmaxOp: _eval_softmax,
    tensor.ExpandShapeOp: _eval_expand,
    tensor.CollapseShapeOp: _eval_collapse,
    tf.WindowOp: lambda op, env: _eval_window(op, env),
    tensor.ExtractOp: lambda op, env: env.__setitem__(op.result, extract(op, env)),
    tensor.PadOp: lambda op, env: _eval_pad(op, env),
}  # fmt: skip
"""Ops other than structured, terminators and scalars: one evaluator each."""


def _eval_pad(op: tensor.PadOp, env: Env) -> None:
    """A static `tensor.pad` whose region yields one value for every position."""
    block = op.region.block
    local = dict(env)
    for op_ in block.ops:
        if isinstance(op_, tensor.YieldOp):
            value = local[op_.operands[0]]
            break
        eval_scalar_op(op_, local)
    else:
        raise CompileError.at(op, "has no tensor.yield")
    widths = list(zip(_static_or_dynamic(op.static_low.get_values(), op.low, env),
                      _static_or_dynamic(op.static_high.get_values(), op.high, env), strict=True))  # fmt: skip
    source = np.asarray(env[op.source])  # in its own dtype: an i64 past 2**53 keeps its bits
    env[op.result] = np.pad(source, widths, constant_values=np.asarray(value).astype(source.dtype))


def _eval_window(op: tf.WindowOp, env: Env) -> None:
    shape = _result_shape(op)
    index = [np.arange(r).reshape([r if d == k else 1 for k in range(len(shape))])
             for d, r in enumerate(shape)]  # fmt: skip
    env[op.result] = _gather(env[op.source], op.terms(), index, shape)


def _tile_window(offsets: Sequence[int], tile: Sequence[int], full: Sequence[int]):
    """The in-bounds part of a tile: slices into the tensor and into the tile."""
    src, dst = [], []
    for o, t, f in zip(offsets, tile, full, strict=True):
        lo, hi = min(max(o, 0), f), min(max(o + t, 0), f)
        src.append(slice(lo, hi))
        dst.append(slice(lo - o, hi - o))
    return tuple(src), tuple(dst)


def _load_tile(source: np.ndarray, offsets: list[int], shape: tuple[int, ...]) -> np.ndarray:
    tile = np.zeros(shape, dtype=source.dtype)
    src, dst = _tile_window(offsets, shape, source.shape)
    tile[dst] = source[src]
    return tile


def _store_tile(value: np.ndarray, dest: np.ndarray, offsets: list[int]) -> None:
    src, dst = _tile_window(offsets, value.shape, dest.shape)
    dest[src] = value[dst]


def _eval_grid(op: tf.TileGridOp, env: Env) -> None:
    """Run every program of the grid in order; stores write the destinations."""
    dests = [env[v].copy() for v in op.outs]
    for pid in itertools.product(*(range(g) for g in op.grid_shape)):
        eval_block(op.body.block, [np.asarray(p) for p in pid] + dests, env)
    for r, v in zip(op.results, dests, strict=True):
        env[r] = v


def _eval_for(op: scf.ForOp, env: Env) -> None:
    lb, ub, step = (int(env[v]) for v in (op.lb, op.ub, op.step))
    carried = [env[v] for v in op.iter_args]
    for i in range(lb, ub, step):
        carried = eval_block(op.body.block, [np.asarray(i), *carried], env)
    for r, v in zip(op.results, carried, strict=True):
        env[r] = v


def _lookup(op: Operation, name: str) -> func.FuncOp:
    module = op.get_toplevel_object()
    for f in module.walk():
        if isinstance(f, func.FuncOp) and f.sym_name.data == name:
            return f
    raise CompileError.at(op, f"calls @{name}, which does not exist")


def eval_block(block: Block, args: Sequence[np.ndarray], outer: Env) -> list[np.ndarray]:
    """Run a block with the given argument values; returns its terminator's values."""
    env: Env = dict(outer)
    for arg, value in zip(block.args, args, strict=True):
        env[arg] = value
    for op in block.ops:
        if (results := eval_op(op, env)) is not None:
            return results
        check_result_shapes(op, env)
    return []


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


def evaluate(
    module: ModuleOp, inputs: Sequence[np.ndarray], name: str | None = None
) -> list[np.ndarray]:
    """Run the entry function on `inputs`; results come back in their IR dtypes."""
    f = entry_function(module, name)
    arg_types = f.function_type.inputs.data
    if len(inputs) != len(arg_types):
        raise CompileError(
            f"@{f.sym_name.data} takes {len(arg_types)} arguments, got {len(inputs)}"
        )
    check_sizes(f, [tuple(np.shape(x)) for x in inputs])
    args = []
    for x, t in zip(inputs, arg_types, strict=True):
        et = element_type(t)  # integers read as int64: through float64, an i64 past 2**53 rounds
        wide = np.int64 if isinstance(et, IntegerType | IndexType) and np.asarray(x).dtype != bool else np.float64
        args.append(round_to(np.asarray(x, wide), et))
    results = eval_block(f.body.block, args, {})
    out_types = f.function_type.outputs.data
    return [
        np.asarray(r).astype(numpy_dtype(element_type(t)))
        for r, t in zip(results, out_types, strict=True)
    ]
