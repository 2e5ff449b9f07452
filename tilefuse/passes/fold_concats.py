"""
`fold-concats`: a concatenation read by generics is computed where it is read.

`tensor.concat` is a host copy (`torch.cat`): its pieces are materialised first, so
a concat splits the kernels on either side. LLaMA's RoPE (`rotate_half`) is
`concat(-x[..., d/2:], x[..., :d/2])` of the heads, and the copy of the permuted
heads the slices read, the negation and the concat are three kernels for what is
an offset read. Here a function-level concat whose every reader is a generic
becomes a generic over the concat's shape that, at each point, selects the piece
along the concat dim (`linalg.index`, `arith.cmpi`, `arith.select`) and reads it
at the shifted index. The read of a piece looks through, as index arithmetic:

- a static `tensor.extract_slice` (offset and stride added to the index),
- another concat (its pieces selected the same way),
- a pure-permutation generic (a transpose: the index permuted),
- an elementwise generic that only this concat reads (its payload is inlined,
  each of its inputs read the same way through its map);

anything else (a generic's result read elsewhere too, an argument, a view) is
read with `tensor.extract`, a gather of a tensor in memory. Every read is in
bounds: pieces of one length `n` (`rotate_half`'s halves) are read at `i mod n`
along the concat dim, the index within whichever piece `i` falls in, which keeps
runs of `n` consecutive lanes reading consecutive elements (16-byte loads);
otherwise the indices of the pieces not selected are clamped into their piece. The
new generic is elementwise, so fusion puts it in the kernel of its reader.

```mlir
%lo = tensor.extract_slice %x[0, 0] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
%hi = tensor.extract_slice %x[0, 8] [4, 8] [1, 1] : tensor<4x16xf32> to tensor<4x8xf32>
%n = linalg.generic {maps = [id, id]} ins(%hi) outs(%e) { negf }
%r = tensor.concat dim(1) %n, %lo : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
// becomes
%r = linalg.generic {maps = [id]} outs(%e2 : tensor<4x16xf32>) {
  %i = linalg.index 0  %j = linalg.index 1
  %a = tensor.extract %x[%i, (%j mod 8) + 8]   %na = arith.negf %a
  %b = tensor.extract %x[%i, %j mod 8]
  linalg.yield (select %j < 8, %na, %b)
}
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    IndexType,
    IntegerAttr,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineDimExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilefuse.ir.structured import dim_of, resolved_size
from tilefuse.passes.cleanup import erase_dead_views

MAX_INLINED = 8
"""Elementwise producers inlined into one concat at most (the rest are gathered)."""


@dataclass(frozen=True)
class FoldConcatsPass(ModulePass):
    """Rewrite concatenations read only by generics into index-selecting generics."""

    name = "fold-concats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = ConcatToSelect()
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
        _erase_dead(pattern.read_through)
        erase_dead_views(op)


class ConcatToSelect(RewritePattern):
    """A function-level static `tensor.concat` whose readers are all generics."""

    def __init__(self) -> None:
        self.read_through: list[Operation] = []
        """The slices and generics the new generics read through (dead once no
        other op reads them)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: tensor.ConcatOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op.parent_op(), func.FuncOp) or not op.result.uses:
            return
        dim = op.dim.value.data
        if any(v.type.get_shape()[dim] < 0 for v in (*op.inputs, op.result)):  # pyright: ignore
            return  # a dynamic concat dim: the pieces' starts are run-time (the host's torch.cat)
        if not all(isinstance(u.operation, linalg.GenericOp) for u in op.result.uses):
            return  # a host reader (a return, a slice, another concat): torch.cat is as good
        t = op.result.type
        assert isinstance(t, TensorType)
        sizes, empty = _sized_like(t, op.inputs[0])
        rank = len(t.get_shape())
        block = Block(arg_types=[t.get_element_type()])
        builder = _SelectBuilder(op, block)
        builder.build()
        self.read_through.extend(builder.read_through)
        new = linalg.GenericOp([], [empty.tensor], Region(block),
                               [AffineMapAttr(AffineMap.identity(rank))],
                               ArrayAttr([linalg.IteratorTypeAttr.parallel()] * rank), [t])  # fmt: skip
        new.location = op.location  # pyright: ignore
        new.results[0].name_hint = op.result.name_hint
        rewriter.replace(op, [*sizes, empty, new], [new.results[0]])


def _sized_like(t: TensorType, piece: SSAValue) -> tuple[list[Operation], tensor.EmptyOp]:
    """An empty of the concat's type `t`, each dynamic dim (never the concat dim) the
    size `piece` was made with (`resolved_size`: a size value, or a `tensor.dim` of the
    tensor it resolves to, which outlives the pieces read through): the ops before it."""
    ops: list[Operation] = []
    sizes: list[SSAValue] = []
    for d, n in enumerate(t.get_shape()):
        if n < 0:
            at = resolved_size(piece, d)
            if isinstance(at, tuple):
                made, at = dim_of(*at)
                ops += made
            sizes.append(at)
    return ops, tensor.EmptyOp(sizes, t)


class _SelectBuilder:
    """Writes the payload of the generic that replaces `concat` into `block`."""

    def __init__(self, concat: tensor.ConcatOp, block: Block):
        self.concat, self.block = concat, block
        self.inlined = 0
        self.read_through: list[Operation] = []
        self.folded: set[Operation] = set()
        """The concats read through (the outer one and those among its pieces)."""
        self._consts: dict[int, SSAValue] = {}

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def const(self, n: int) -> SSAValue:
        if n not in self._consts:
            self._consts[n] = self.add(arith.ConstantOp(IntegerAttr(n, IndexType())))
        return self._consts[n]

    def build(self) -> None:
        rank = len(self.concat.result.type.get_shape())  # pyright: ignore
        index = [self.add(linalg.IndexOp(d)) for d in range(rank)]
        self.block.add_op(linalg.YieldOp(self.select(self.concat, index)))

    def select(self, concat: tensor.ConcatOp, index: Sequence[SSAValue]) -> SSAValue:
        """The element of `concat` at `index`: its pieces, each read at the index
        shifted (and clamped) into it, selected along the concat dim."""
        self.folded.add(concat)
        size = concat.result.type.get_shape()  # pyright: ignore
        dim = concat.dim.value.data
        starts, at = [], 0
        for piece in concat.inputs:
            starts.append(at)
            at += piece.type.get_shape()[dim]  # pyright: ignore
        lengths = {piece.type.get_shape()[dim] for piece in concat.inputs}  # pyright: ignore
        # Pieces of one length n: the index within the selected piece is `i mod n`, in
        # every piece's bounds, and contiguous in runs of n (vector loads); others clamp.
        local = self.add(arith.RemSIOp(index[dim], self.const(lengths.pop()))) \
            if len(lengths) == 1 and len(concat.inputs) > 1 else None  # fmt: skip
        values = []
        for piece, start in zip(concat.inputs, starts, strict=True):
            n = piece.type.get_shape()[dim]  # pyright: ignore
            at = index[dim] if local is None else local
            if start and local is None:  # (the index is never below the first piece)
                at = self.add(arith.MaxSIOp(self.add(arith.SubiOp(at, self.const(start))), self.const(0)))
            if start + n < size[dim] and local is None:  # (nor above the last)
                at = self.add(arith.MinSIOp(at, self.const(n - 1)))
            values.append(self.read(piece, [*index[:dim], at, *index[dim + 1 :]]))
        value = values[-1]
        for v, start in zip(reversed(values[:-1]), reversed(starts[1:]), strict=True):
            below = self.add(arith.CmpiOp(index[dim], self.const(start), "slt"))
            value = self.add(arith.SelectOp(below, v, value))
        return value

    def read(self, value: SSAValue, index: Sequence[SSAValue]) -> SSAValue:
        """The element of `value` at `index`, looking through slices,
        permutations and elementwise producers only this concat reads."""
        owner = value.owner
        if isinstance(owner, Operation):
            self.read_through.append(owner)
        if isinstance(owner, tensor.ConcatOp) and isinstance(owner.parent_op(), func.FuncOp):
            return self.select(owner, index)
        if isinstance(owner, tensor.ExtractSliceOp) and _static_start_full_rank(owner):
            offsets = owner.static_offsets.get_values()
            strides = owner.static_strides.get_values()
            moved = []
            for i, o, s in zip(index, offsets, strides, strict=True):
                scaled = i if s == 1 else self.add(arith.MuliOp(i, self.const(s)))
                moved.append(scaled if o == 0 else self.add(arith.AddiOp(scaled, self.const(o))))
            return self.read(owner.source, moved)
        if isinstance(owner, linalg.GenericOp) and isinstance(owner.parent_op(), func.FuncOp):
            if _permutation(owner) is not None:
                in_map = _permutation(owner)
                assert in_map is not None
                return self.read(owner.inputs[0], [index[e.position] for e in in_map.results])  # pyright: ignore
            if self.inlined < MAX_INLINED and _elementwise(owner) and _only_readers_are(owner, self.folded):
                self.inlined += 1
                return self.inline(owner, index)
        return self.add(tensor.ExtractOp(value, list(index), value.type.get_element_type()))  # pyright: ignore

    def inline(self, op: linalg.GenericOp, index: Sequence[SSAValue]) -> SSAValue:
        """`op`'s payload at `index`, its inputs read through their maps."""
        maps = [m.data for m in op.indexing_maps.data]
        mapping: dict[SSAValue, SSAValue] = {}
        for arg, value, amap in zip(op.body.block.args, op.inputs, maps, strict=False):
            if not isinstance(value.type, TensorType):
                mapping[arg] = value  # a scalar operand
                continue
            at = [index[e.position] if isinstance(e, AffineDimExpr) else self.const(e.value)  # pyright: ignore
                  for e in amap.results]  # fmt: skip
            mapping[arg] = self.read(value, at)
        for inner in op.body.block.ops:
            if isinstance(inner, linalg.YieldOp):
                return mapping.get(inner.operands[0], inner.operands[0])
            clone = inner.clone(value_mapper=mapping)
            self.block.add_op(clone)
        raise AssertionError("a generic's payload ends with linalg.yield")


def _static_start_full_rank(op: tensor.ExtractSliceOp) -> bool:
    """A slice with static offsets and strides that keeps every dim (its sizes, which
    a read at a shifted index never needs, may be dynamic)."""
    return (not op.offsets and not op.strides
            and len(op.result.type.get_shape()) == len(op.source.type.get_shape()))  # pyright: ignore  # fmt: skip


def _maps(op: linalg.GenericOp) -> list[AffineMap]:
    return [m.data for m in op.indexing_maps.data]


def _permutation(op: linalg.GenericOp) -> AffineMap | None:
    """The input map of a generic that only copies its one input through a
    permutation into an identity-mapped output; else None."""
    if len(op.inputs) != 1 or len(op.outputs) != 1 or not isinstance(op.inputs[0].type, TensorType):
        return None
    in_map, out_map = _maps(op)
    block = op.body.block
    last = block.last_op
    if (not isinstance(last, linalg.YieldOp) or last is not block.first_op
            or last.operands[0] is not block.args[0]
            or out_map != AffineMap.identity(out_map.num_dims)
            or len(in_map.results) != in_map.num_dims
            or not all(isinstance(e, AffineDimExpr) for e in in_map.results)
            or len({e.position for e in in_map.results}) != in_map.num_dims  # pyright: ignore
            or any(str(i.data) != "parallel" for i in op.iterator_types)):  # fmt: skip
        return None
    return in_map


def _elementwise(op: linalg.GenericOp) -> bool:
    """One result at every point of an identity-mapped output, all loops parallel,
    inputs read through dims and constants, a payload that reads neither the
    output, nor a loop index, nor a tensor."""
    maps = _maps(op)
    block = op.body.block
    return (len(op.outputs) == 1 and maps[-1] == AffineMap.identity(maps[-1].num_dims)
            and all(str(i.data) == "parallel" for i in op.iterator_types)
            and all(isinstance(e, AffineDimExpr | AffineConstantExpr) for m in maps for e in m.results)
            and not block.args[-1].uses
            and all(not isinstance(o, linalg.IndexOp | tensor.ExtractOp) and not o.regions
                    for o in block.ops))  # fmt: skip


def _only_readers_are(op: linalg.GenericOp, concats: set[Operation]) -> bool:
    """Every use of `op`'s result is one of `concats`, or a slice only they read."""
    for use in op.results[0].uses:
        user = use.operation
        if user in concats:
            continue
        if not isinstance(user, tensor.ExtractSliceOp) or any(u.operation not in concats
                                                             for u in user.result.uses):  # fmt: skip
            return False
    return True


def _erase_dead(ops: list[Operation]) -> None:
    """Erase the slices and pure generics read through that nothing reads now
    (until none is left, so a chain dies whole)."""
    kinds = tensor.ExtractSliceOp | tensor.ConcatOp | linalg.GenericOp
    alive = [o for o in dict.fromkeys(ops) if isinstance(o, kinds)]
    while dead := [o for o in alive if not any(r.uses for r in o.results)]:
        for o in dead:
            o.detach()
            o.erase()
        alive = [o for o in alive if o not in dead]
