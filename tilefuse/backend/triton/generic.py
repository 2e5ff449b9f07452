"""
One structured op on tiles (a `linalg.generic`) as block arithmetic.

The op's loop space is the block space: each operand is permuted and expanded
(`None` indexing) by its indexing map, the payload becomes elementwise block
expressions (`scalar.scalar_expr`), a reduction `tl.sum`/`tl.max`/... along its
reduction axes, and a contraction that `dot.dot_axes` accepts one `tl.dot` with
fp32 accumulation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.dialects import arith, cf, tensor
from xdsl.dialects.builtin import Float64Type, IntegerType
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Operation, SSAValue

from tilefuse.analysis.dataflow import is_contraction, product_operand
from tilefuse.backend.triton.dot import DotAxes, dot_axes, narrower_than_its_factors
from tilefuse.backend.triton.dtypes import compute_type, kept_shape
from tilefuse.backend.triton.scalar import (
    BINARY,
    I1_REDUCE,
    REDUCE,
    int_width,
    scalar_expr,
    wide_value,
)
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.structured import (
    ArgReduction,
    StructuredOp,
    arg_reduction_of,
    element_type,
)
from tilefuse.ir.tilefuse import EDGE_CLAMP, IN_BOUNDS_AXES

if TYPE_CHECKING:
    from tilefuse.backend.triton.kernel import KernelPrinter


class GenericPrinter:
    """
    One `linalg.generic` on tiles as block arithmetic in its loop space.

    Loops of trip count 1 (batch dims, a program's single row) are dropped
    everywhere: tiles are blocks of their non-unit axes only, so no reshape or
    layout change is ever needed to line operands up.
    """

    def __init__(self, kernel: KernelPrinter, s: StructuredOp):
        self.k, self.s = kernel, s
        self.space = tuple(s.loop_ranges)
        self.kept = [d for d in range(s.num_loops) if self.space[d] != 1]
        self.pos = {d: i for i, d in enumerate(self.kept)}
        self.n = len(self.kept)
        self.checked: set[cf.AssertOp] = set()

    def kdims(self, dims: Sequence[int]) -> list[int]:
        return [d for d in dims if self.space[d] != 1]

    def kshape(self, dims: Sequence[int] | None = None) -> tuple[int, ...]:
        return tuple(self.space[d] for d in (self.kept if dims is None else dims))

    def to_loop_space(self, value: str, dims: Sequence[int]) -> str:
        """Permute a block indexed by loops `dims` to loop order, expand the rest."""
        kd = self.kdims(dims)
        if not kd:
            return value
        order = sorted(range(len(kd)), key=lambda i: self.pos[kd[i]])
        if order != list(range(len(kd))):
            value = f"tl.permute({value}, {tuple(order)})"
        if len(kd) == self.n:
            return value
        present = {self.pos[d] for d in kd}
        index = ", ".join(":" if i in present else "None" for i in range(self.n))
        return f"{value}[{index}]"

    def from_loop_space(self, value: str, dims: Sequence[int], vdims: set[int]) -> str:
        """A loop-space block (varying along `vdims`) as an operand indexed by `dims`."""
        kd = self.kdims(dims)
        if not kd:
            return value
        if not vdims >= set(kd):
            full = tuple(self.space[d] if d in kd else 1 for d in self.kept)
            value = f"tl.broadcast_to({value}, {full})"
        ordered = sorted(kd, key=lambda d: self.pos[d])
        if len(kd) != self.n:
            value = f"tl.reshape({value}, {self.kshape(ordered)})"
        order = [ordered.index(d) for d in kd]
        if order != list(range(len(kd))):
            value = f"tl.permute({value}, {tuple(order)})"
        return value

    def print(self) -> None:
        s = self.s
        if (axes := dot_axes(s)) is not None:
            self.print_dot(axes)
            return
        env: dict[SSAValue, tuple[str, set[int]]] = {}
        for i, (v, arg) in enumerate(zip(s.inputs, s.payload.args, strict=False)):
            dims = s.operand_dims(i)
            env[arg] = (self.to_loop_space(self.k.ref(v), dims), set(self.kdims(dims)))
        for j, v in enumerate(s.outputs):
            arg = s.payload.args[len(s.inputs) + j]
            if arg.uses:
                dims = s.operand_dims(len(s.inputs) + j)
                env[arg] = (self.to_loop_space(self.k.ref(v), dims), set(self.kdims(dims)))
        if s.reduction_dims:
            for op in s.payload.ops:  # checks first: the reduction prints up to its values
                if isinstance(op, cf.AssertOp):
                    self.check(op, self.run_payload(env, stop=op.arg)[0][0])
            self.print_reduction(env)
        else:
            yielded = self.run_payload(env, stop=None)
            for j, r in enumerate(s.op.results):
                self.store_result(r, j, *yielded[j])

    def check(self, op: cf.AssertOp, cond: str) -> None:
        if op not in self.checked:
            self.checked.add(op)
            self.k.check(op, cond)

    def store_result(self, result: SSAValue, j: int, value: str, vdims: set[int]) -> None:
        dims = self.s.operand_dims(len(self.s.inputs) + j)
        shape = kept_shape(result.type)
        hint = self.result_hint(j)
        if not vdims:  # a fill, a 0-d result: in its own compute type (integers in
            # theirs: an f32 fill rounds past 2**24; a dot's accumulator f32, or f64
            # for an f64 dot: Triton 3.6 refuses an f64 one for an f32 dot)
            dtype = compute_type(result.type)
            self.k.bind(result, f"tl.full({shape}, {wide_value(value)}, {dtype})", shape, hint)
            return
        self.k.bind(result, self.from_loop_space(value, dims, vdims), shape, hint)

    def result_hint(self, j: int) -> str | None:
        return result_hint(self.s, j)

    def run_payload(self, env, stop: SSAValue | None) -> list[tuple[str, set[int]]]:
        """Emit the payload's ops; returns the yielded (expr, dims) pairs."""
        for op in self.s.payload.ops:
            if isinstance(op, linalg.YieldOp):  # (a value captured from the kernel body: a fill's)
                return [env[v] if v in env else (self.k.ref(v), set()) for v in op.operands]
            if stop is not None and stop in env:
                return [env[stop]]
            if isinstance(op, linalg.IndexOp):
                env[op.result] = self._index(op.dim.value.data)
                continue
            if isinstance(op, arith.ConstantOp):
                env[op.result] = (self.k.constant(op), set())
                continue
            if isinstance(op, cf.AssertOp):
                self.check(op, self._operand(op.arg, env))
                continue
            if isinstance(op, tensor.ExtractOp):
                env[op.result] = self._gather(op, env)
                continue
            if op.dialect_name() not in ("arith", "math"):
                raise CompileError.at(op, "is not supported in a payload by the Triton backend "
                                      "(arith and math ops, linalg.index, tensor.extract, "
                                      "cf.assert)")  # fmt: skip
            operands = [self._operand(v, env) for v in op.operands]
            dims = set().union(*(env[v][1] for v in op.operands if v in env))
            env[op.results[0]] = (self._payload_value(op, operands), dims)
        if stop is not None and stop in env:
            return [env[stop]]
        raise CompileError.at(self.s.op, "has a payload without linalg.yield")

    def _payload_value(self, op: Operation, operands: list[str]) -> str:
        """The name of a payload op's block; a select by a mask the selected block
        was already selected by (with the same other value) is that block."""
        if isinstance(op, arith.SelectOp) and self.k.wheres.get(operands[1]) == (
            operands[0], operands[2]):  # fmt: skip
            return operands[1]
        dtype = compute_type(op.results[0].type)
        text = scalar_expr(op, lambda v, ops=operands, o=op: ops[list(o.operands).index(v)],
                           lambda t: self.k.value("pw", t, dtype))  # fmt: skip
        if text in self.k.defined:  # a cast to the compute type it is already in
            return text
        name = self.k.value(op.results[0].name_hint or "t", text, dtype)
        if isinstance(op, arith.SelectOp):
            self.k.wheres.setdefault(name, (operands[0], operands[2]))
        return name

    def _index(self, d: int) -> tuple[str, set[int]]:
        if self.space[d] == 1:
            return "0", set()
        index = ", ".join(":" if i == self.pos[d] else "None" for i in range(self.n))
        suffix = f"[{index}]" if self.n > 1 else ""
        return f"tl.arange(0, {self.space[d]}){suffix}", {d}

    def _gather(self, op: tensor.ExtractOp, env) -> tuple[str, set[int]]:
        """`tensor.extract` of a kernel argument at computed indices: one `tl.load`
        per lane from the tensor in memory, every index clamped to its dim (an
        out-of-bounds extract is undefined; no lane ever reads outside the tensor),
        except the axes tile-and-fuse proved inside (`IN_BOUNDS_AXES`). An index
        tile-and-fuse clamped for the lanes past the tile's extent (`EDGE_CLAMP`) is
        masked to its dim instead."""
        table = op.tensor
        if table not in self.k.ptr:
            raise CompileError.at(op, "gathers from a tensor computed in the same kernel: "
                                  "the Triton backend gathers from kernel arguments")  # fmt: skip
        terms, dims, masks = [self.k.ptr[table]], set(), []
        shape = table.type.get_shape()
        inside = op.attributes.get(IN_BOUNDS_AXES)
        inside = inside.get_values() if inside is not None else ()  # pyright: ignore
        for axis, (v, size, stride) in enumerate(zip(op.indices, shape, self.k.strides[table], strict=True)):
            if size == 1:
                continue  # the only index in bounds is 0
            extent = str(size) if size >= 0 else self.k.sizes[(table, axis)]
            if isinstance(v.owner, arith.ConstantOp) and size >= 0:
                index = str(min(max(v.owner.value.value.data, 0), size - 1))
            elif (unclamped := edge_clamped(v)) is not None and unclamped in env and env[unclamped][1]:
                # (an index the same at every lane stays clamped: nothing to vectorise,
                # and the interpreter cannot combine a 0-d mask with a tile's)
                index = self._operand(unclamped, env)
                masks.append(f"({index} >= 0) & ({index} < {extent})")
                dims |= env[unclamped][1]
            else:
                index = self._operand(v, env)
                last = str(size - 1) if size >= 0 else f"{extent} - 1"
                if not clamped(v, size, (table, axis)) and axis not in inside:
                    index = self.k.value("idx", f"tl.minimum(tl.maximum({index}, 0), {last})",
                                         compute_type(v.type))  # fmt: skip
                dims |= env[v][1] if v in env else set()
            if index != "0":
                terms.append(f"{index} * {stride}")
        integer = isinstance(element_type(table.type), IntegerType)
        dtype = compute_type(op.result.type)
        mask = f", mask={' & '.join(masks)}, other=0" if masks else ""
        text = f"tl.load({' + '.join(terms)}{mask})" + ("" if integer else f".to({dtype})")
        return self.k.value(op.result.name_hint or "gathered", text, dtype), dims

    def _operand(self, v: SSAValue, env) -> str:
        if v in env:
            return env[v][0]
        return self.k.ref(v)  # captured from the kernel body (offsets, constants)

    def print_reduction(self, env) -> None:
        s = self.s
        yield_op = s.payload.last_op
        assert yield_op is not None
        pair = arg_reduction_of(s)
        for j, value in enumerate(yield_op.operands):
            if pair is not None and j == pair.index:
                continue
            if pair is not None and j == pair.value:
                self._print_arg_reduction(env, pair)
                continue
            comb = value.owner
            acc = s.payload.args[len(s.inputs) + j]
            if (not isinstance(comb, Operation) or type(comb) not in REDUCE
                    or acc not in comb.operands or len(list(acc.uses)) != 1):  # fmt: skip
                raise CompileError.at(
                    s.op, "is a reduction the Triton backend cannot lower: its payload "
                    "must end in addf/mulf/maximumf/minimumf/maxnumf/minnumf/addi/maxsi/minsi/"
                    "andi/ori/xori of the accumulator, which it reads nowhere else, or be a "
                    "max/min with the first position reached (argmax, argmin)")  # fmt: skip
            reduce, combine = REDUCE[type(comb)], BINARY.get(type(comb), "")
            if int_width(acc) == 1:
                if type(comb) not in I1_REDUCE:
                    raise CompileError.at(s.op, f"reduces i1 values by {comb.name}, which the Triton "
                                          "backend does not lower (andi, ori, xori, maxsi, minsi and addi "
                                          "it does): extend them to a wider integer first (arith.extui)")  # fmt: skip
                reduce, combine = I1_REDUCE[type(comb)]
            x = comb.operands[1] if comb.operands[0] is acc else comb.operands[0]
            expr = self._reduced(reduce, self._in_loop_space(env, x))
            red = self.k.value("red", expr, compute_type(x.type))
            self._bind_reduced(j, lambda acc_value, r=red, c=combine: c.format(acc_value, r))

    def _in_loop_space(self, env, x: SSAValue) -> str:
        """Payload value `x` as a block over the whole loop space."""
        expr, dims = self.run_payload(env, stop=x)[0]
        if dims != set(self.kept):
            expr = f"tl.broadcast_to({expr}, {self.kshape()})"
        return expr

    def _reduced(self, reduce: str, expr: str, *args: str) -> str:
        """`reduce(expr, *args, axis)` over every (kept) reduction axis, innermost first."""
        # Reduce without keep_dims: the result keeps the reduction's own
        # (sliced) layout, so broadcasting it back later costs no
        # layout conversion (a reshape here made Triton 3.6 kernels 100x slower).
        for d in sorted(self.kdims(self.s.reduction_dims), key=self.pos.get, reverse=True):
            expr = f"{reduce}({', '.join([expr, *args])}, axis={self.pos[d]})"
        return expr

    def _out_order(self, j: int) -> tuple[list[int], list[int]]:
        """Output `j`'s permutation to the kept loops' order, and back."""
        s = self.s
        out_dims = self.kdims(s.operand_dims(len(s.inputs) + j))
        kept = [d for d in self.kept if d not in s.reduction_dims]
        if sorted(out_dims, key=self.pos.get) != kept:
            raise CompileError.at(s.op, "has an output that does not cover its parallel loops")
        to_sorted = sorted(range(len(out_dims)), key=lambda i: self.pos[out_dims[i]])
        return to_sorted, [kept.index(d) for d in out_dims]

    def _acc(self, j: int) -> str:
        """Output `j`'s initial value in the kept loops' order."""
        to_sorted, _ = self._out_order(j)
        acc_value = self.k.ref(self.s.outputs[j])
        if to_sorted != list(range(len(to_sorted))):
            acc_value = f"tl.permute({acc_value}, {tuple(to_sorted)})"
        return acc_value

    def _bind_reduced(self, j: int, final) -> None:
        """Bind result `j` to `final(its initial value)`, back in its own axis order."""
        _, back = self._out_order(j)
        value = final(self._acc(j))
        if back != list(range(len(back))):
            value = f"tl.permute({value}, {tuple(back)})"
        result = self.s.op.results[j]
        self.k.bind(result, value, kept_shape(result.type), self.result_hint(j))

    def _print_arg_reduction(self, env, pair: ArgReduction) -> None:
        """A max/min and its first position (`ArgReduction`), exactly as the IR's
        sequential loop computes them from the accumulators: the extremum of the
        block (NaN if any element is), and the first position of the extremum of
        the elements before the block's first NaN (`_arg_max` and friends), taken
        where it is strictly past the accumulated one."""
        s = self.s
        if self._out_order(pair.value) != self._out_order(pair.index):
            raise CompileError.at(s.op, "has a max/min and its position in outputs of different "
                                  "layouts, which the Triton backend does not lower")  # fmt: skip
        if int_width(pair.x) == 1:
            raise CompileError.at(s.op, "takes the position of a max/min of i1 values, which the "
                                  "Triton backend does not lower: extend them first (arith.extui)")  # fmt: skip
        x = self._in_loop_space(env, pair.x)
        dtype = compute_type(pair.x.type)
        x = x if x.isidentifier() else self.k.value("x", x, dtype)
        position = self._in_loop_space(env, pair.position)
        red = self.k.value("red", self._reduced(REDUCE[type(pair.combiner)], x), dtype)
        combine = BINARY[type(pair.combiner)]
        acc_value = self._acc(pair.value)
        integer = isinstance(element_type(pair.x.type), IntegerType)
        helper = ("_arg_max" if pair.is_max else "_arg_min") + ("_int" if integer else "")
        sign = ">" if pair.is_max else "<"

        def index(acc: str) -> str:
            if not self.kdims(s.reduction_dims):  # one element: its position where it is past acc
                return f"tl.where({x} {sign} {acc_value}, {position}, {acc})"
            return self._reduced(helper, x, position, acc_value, acc)

        self._bind_reduced(pair.value, lambda acc: combine.format(acc, red))
        self._bind_reduced(pair.index, index)

    # -- contractions ------------------------------------------------------------

    def print_dot(self, axes: DotAxes) -> None:
        s = self.s
        m, n, k = axes.m, axes.n, axes.k
        mul = next(op for op in s.payload.ops if isinstance(op, arith.MulfOp))
        ins = list(s.payload.args[: len(s.inputs)])
        first = ins.index(product_operand(mul.operands[0]))
        lhs_i = first if any(d in s.operand_dims(first) for d in m) else 1 - first
        rhs_i = 1 - lhs_i
        out_dims = self.kdims(s.operand_dims(2))
        if list(m + n) != out_dims and list(n + m) == out_dims:
            # The output is (n, m): compute it as B^T A^T, so that a K loop's
            # accumulator keeps one layout (permuted in and out of the dot at
            # every step, a conv's [co, w] tile went through shared memory twice).
            m, n, lhs_i, rhs_i = n, m, rhs_i, lhs_i
        M, N, K = (math.prod(self.space[d] for d in g) for g in (m, n, k))
        a = self._matrix(s.inputs[lhs_i], s.operand_dims(lhs_i), m, k, (M, K))
        b = self._matrix(s.inputs[rhs_i], s.operand_dims(rhs_i), k, n, (K, N))
        acc = self._matrix(s.outputs[0], s.operand_dims(2), m, n, (M, N))
        # tl.dot's result type defaults to fp32; an f64 accumulator must say so
        # (Triton 3.6 asserts the accumulator's type equals out_dtype).
        # Operands of an f64 accumulator are widened to f64 (exact; upstream's
        # named-op semantics), whatever their storage type.
        wide = isinstance(element_type(s.outputs[0].type), Float64Type)
        # A dot multiplying in f32 next to a 16-bit one keeps its own type.
        own = not wide and narrower_than_its_factors(s)
        cast, precision, out_dtype = (("tl.float64", '"ieee"', ", out_dtype=tl.float64") if wide
                                      else ("tl.float32", '"ieee"', "") if own
                                      else ("DOT_DTYPE", "DOT_PRECISION", ""))  # fmt: skip
        self.k.uses_dot_constexprs |= not wide and not own
        dot = (f"tl.dot({a}.to({cast}), {b}.to({cast}), {acc}, "
               f"input_precision={precision}{out_dtype})")  # fmt: skip
        # Back from (m..., n...) to the output's axis order.
        grouped = m + n
        order = [grouped.index(d) for d in out_dims]
        result = s.op.results[0]
        if len(grouped) == 2 and order == list(range(len(order))):
            self.k.bind(result, dot, kept_shape(result.type), self.result_hint(0) or "acc")
            return
        value = dot
        if len(grouped) != 2:
            dot = self.k.value("dot", dot, compute_type(s.outputs[0].type))
            value = f"tl.reshape({dot}, {self.kshape(grouped)})"
        if order != list(range(len(order))):
            value = f"tl.permute({value}, {tuple(order)})"
        self.k.bind(result, value, kept_shape(result.type), self.result_hint(0))

    def _matrix(self, v: SSAValue, dims: Sequence[int], rows, cols, shape) -> str:
        """Operand `v` (axes = loops `dims`) as a 2-D [rows, cols] block."""
        kd = self.kdims(dims)
        wanted = list(rows) + list(cols)
        order = [kd.index(d) for d in wanted]
        value = self.k.ref(v)
        if order != list(range(len(order))):
            value = f"tl.permute({value}, {tuple(order)})"
        if len(wanted) == 2:
            return value  # already 2-D: a reshape would only risk a layout change
        return f"tl.reshape({value}, {shape})"


def edge_clamped(v: SSAValue) -> SSAValue | None:
    """The index `v` clamps, if `v` is tile-and-fuse's clamp of a gather index for
    the lanes past the tile's extent (`minsi(maxsi(x, 0), last)` marked `EDGE_CLAMP`);
    else None."""
    high = v.owner
    if not isinstance(high, arith.MinSIOp) or EDGE_CLAMP not in high.attributes:
        return None
    low = high.lhs.owner
    return low.lhs if isinstance(low, arith.MaxSIOp) else None


def clamped(v: SSAValue, size: int, dim: tuple[SSAValue, int] | None = None) -> bool:
    """Is index `v` already clamped to [0, size) (`minsi(maxsi(x, 0), size - 1)`,
    as `tile-and-fuse` clamps a gather's indices, in either order)? A dynamic `size`
    (-1): clamped to `tensor.dim` of `dim` (the gathered tensor, its axis) minus 1."""
    def is_last(c: SSAValue, value: int) -> bool:
        if isinstance(c.owner, arith.ConstantOp):
            return c.owner.value.value.data == value  # pyright: ignore
        if value >= 0 or dim is None or not isinstance(sub := c.owner, arith.SubiOp):
            return False
        read, one = sub.lhs.owner, sub.rhs.owner
        return (isinstance(read, tensor.DimOp) and read.source is dim[0]
                and isinstance(read.index.owner, arith.ConstantOp)
                and read.index.owner.value.value.data == dim[1]  # pyright: ignore
                and isinstance(one, arith.ConstantOp) and one.value.value.data == 1)  # pyright: ignore  # fmt: skip

    def bound(op: Operation, kind: type, value: int) -> SSAValue | None:
        if not isinstance(op, kind):
            return None
        a, b = op.operands
        for x, c in ((a, b), (b, a)):
            if is_last(c, value):
                return x
        return None

    outer = v.owner
    for first, second in ((arith.MinSIOp, arith.MaxSIOp), (arith.MaxSIOp, arith.MinSIOp)):
        limits = {arith.MinSIOp: size - 1, arith.MaxSIOp: 0}
        inner = bound(outer, first, limits[first]) if isinstance(outer, Operation) else None
        if inner is not None and isinstance(inner.owner, Operation) and bound(
                inner.owner, second, limits[second]) is not None:  # fmt: skip
            return True
    return False


REDUCTION_NAMES = {"tl.sum": "total", "_prod": "product", "_max_nan": "maximum",
                   "tl.max": "maximum", "_min_nan": "minimum", "tl.min": "minimum"}  # fmt: skip
"""Names of reduction results the IR leaves unnamed, by reduction."""


def result_hint(s: StructuredOp, j: int) -> str | None:
    """A name for result `j` of `s`: its own hint, else that of the payload value
    it yields (or of the operand a fill yields), else what a reduction (not a
    contraction) computes."""
    if s.op.results[j].name_hint:
        return s.op.results[j].name_hint
    yield_op = s.payload.last_op
    if yield_op is None or j >= len(yield_op.operands):
        return None
    y = yield_op.operands[j]
    if y in s.payload.args[: len(s.inputs)]:
        return s.inputs[list(s.payload.args).index(y)].name_hint
    if y.name_hint or not s.reduction_dims or is_contraction(s):
        return y.name_hint
    comb = y.owner
    if isinstance(comb, arith.SelectOp):  # the position of an argmax/argmin
        return "position"
    return REDUCTION_NAMES.get(REDUCE.get(type(comb), ""))  # type: ignore[arg-type]

