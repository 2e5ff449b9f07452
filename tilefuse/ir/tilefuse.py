"""
The `tilefuse` dialect: what the pipeline adds on top of upstream MLIR.

Upstream ops (`func`, `linalg`, `tensor`, `arith`, `math`, `scf`) carry the
computation. This dialect only marks structure that upstream has no word for:
a fusion group, the unit that becomes one GPU kernel, with the decision that
formed it attached as attributes.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Dialect, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsolatedFromAbove, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

from tilefuse.ir.affine import last_index, window_terms


@irdl_op_definition
class GroupOp(IRDLOperation):
    """
    A fusion group: a region computed by one kernel.

    The region is isolated from above; its entry block takes one argument per
    input, and its `tilefuse.yield` returns the group's results. The name and the
    fusion decision that formed the group travel as properties.

    ```mlir
    %z = tilefuse.group "fused_kernel_0" ins(%x, %y : tensor<4xf32>, tensor<4xf32>)
        reason "fused pointwise: add + relu" {
    ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
      %s = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>)
             outs(%a : tensor<4xf32>) -> tensor<4xf32>
      tilefuse.yield %s : tensor<4xf32>
    } -> (tensor<4xf32>)
    ```
    """

    name = "tilefuse.group"

    sym_name = prop_def(StringAttr)
    reason = opt_prop_def(StringAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())

    assembly_format = (
        "$sym_name `ins` `(` $inputs `:` type($inputs) `)` "
        "(`reason` $reason^)? attr-dict-with-keyword $body `->` `(` type($outputs) `)`"
    )

    def __init__(
        self,
        sym_name: str,
        inputs: Sequence[SSAValue],
        output_types: Sequence[Attribute],
        body: Region,
        reason: str | None = None,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[output_types],
            regions=[body],
            properties={
                "sym_name": StringAttr(sym_name),
                "reason": StringAttr(reason) if reason is not None else None,
            },
        )

    @property
    def entry(self) -> Block:
        """The group's only block."""
        return self.body.block

    def verify_(self) -> None:
        arg_types = tuple(arg.type for arg in self.entry.args)
        input_types = tuple(v.type for v in self.inputs)
        if arg_types != input_types:
            raise VerifyException(
                f"The group's block arguments {list(map(str, arg_types))} must "
                f"match its inputs {list(map(str, input_types))}."
            )
        terminator = self.entry.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("A tilefuse.group must end with tilefuse.yield.")
        yielded = tuple(v.type for v in terminator.values)
        if yielded != tuple(self.result_types):
            raise VerifyException(
                f"The group yields {list(map(str, yielded))} but declares results "
                f"{list(map(str, self.result_types))}."
            )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """
    Ends a `tilefuse.group`, returning its results.

    ```mlir
    tilefuse.yield %a, %b : tensor<4xf32>, tensor<4xf32>
    ```
    """

    name = "tilefuse.yield"

    values = var_operand_def()

    traits = traits_def(IsTerminator())

    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        if not isinstance(self.parent_op(), GroupOp):
            raise VerifyException("tilefuse.yield must be inside a tilefuse.group.")


@irdl_op_definition
class TileGridOp(IRDLOperation):
    """
    A grid of programs, one per output tile: the tiled body of a group.

    The entry block takes one `index` per grid dim (the program id) and one
    tensor per output (the destination). Programs are independent; each writes
    its tiles with `tilefuse.store`. The results are the destinations after
    every program ran. `num_warps` and `num_stages` are launch parameters.

    ```mlir
    %r = tilefuse.tile_grid [18] outs(%e : tensor<70x333xf32>) warps 4 stages 1 {
    ^bb0(%pid: index, %out: tensor<70x333xf32>):
      ...
      tilefuse.store %y into %out[%off, %c0] : tensor<4x512xf32> into tensor<70x333xf32>
    } -> (tensor<70x333xf32>)
    ```
    """

    name = "tilefuse.tile_grid"

    grid = prop_def(DenseArrayBase.constr(i64))
    num_warps = prop_def(IntegerAttr[I64])
    num_stages = prop_def(IntegerAttr[I64])
    outs = var_operand_def(TensorType)
    results_ = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    assembly_format = (
        "$grid `outs` `(` $outs `:` type($outs) `)` `warps` $num_warps `stages` "
        "$num_stages attr-dict-with-keyword $body `->` `(` type($results_) `)`"
    )

    def __init__(
        self,
        grid: Sequence[int],
        outs: Sequence[SSAValue],
        body: Region,
        num_warps: int = 4,
        num_stages: int = 1,
    ):
        super().__init__(
            operands=[outs],
            result_types=[[v.type for v in outs]],
            regions=[body],
            properties={
                "grid": DenseArrayBase.from_list(i64, grid),
                "num_warps": IntegerAttr(num_warps, i64),
                "num_stages": IntegerAttr(num_stages, i64),
            },
        )

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(self.grid.get_values())

    @property
    def program_ids(self) -> tuple[BlockArgument, ...]:
        return tuple(self.body.block.args[: len(self.grid_shape)])

    @property
    def destinations(self) -> tuple[BlockArgument, ...]:
        return tuple(self.body.block.args[len(self.grid_shape) :])

    def verify_(self) -> None:
        args = self.body.block.args
        n = len(self.grid_shape)
        if len(args) != n + len(self.outs):
            raise VerifyException(
                f"A tile grid of rank {n} with {len(self.outs)} outputs needs "
                f"{n + len(self.outs)} block arguments, not {len(args)}."
            )
        if any(not isinstance(a.type, IndexType) for a in args[:n]):
            raise VerifyException("Program ids of a tile grid must be of type index.")
        if any(a.type != v.type for a, v in zip(args[n:], self.outs, strict=True)):
            raise VerifyException("Destination block arguments must match the outs types.")
        if any(g < 1 for g in self.grid_shape):
            raise VerifyException("Every grid dimension needs at least one program.")


def _check_tile(op: IRDLOperation, tile: Attribute, full: Attribute, offsets: int) -> None:
    assert isinstance(tile, TensorType) and isinstance(full, TensorType)
    if tile.get_element_type() != full.get_element_type():
        raise VerifyException(f"{op.name} must keep the element type.")
    if len(tile.get_shape()) != len(full.get_shape()) or offsets != len(full.get_shape()):
        raise VerifyException(
            f"{op.name} needs a tile and one offset per dimension of the tensor."
        )


@irdl_op_definition
class LoadOp(IRDLOperation):
    """
    Read a static-shaped tile of a tensor at the given offsets.

    Elements of the tile that fall outside the tensor read as zero, so edge tiles
    need no special case; ops that must not see those zeros (reductions over a
    partial dim) mask them explicitly.

    ```mlir
    %t = tilefuse.load %x[%row, %c0] : tensor<70x333xf32> -> tensor<4x512xf32>
    ```
    """

    name = "tilefuse.load"

    source = operand_def(TensorType)
    offsets = var_operand_def(IndexType)
    result = result_def(TensorType)

    assembly_format = "$source `[` $offsets `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, offsets: Sequence[SSAValue], tile: Attribute):
        super().__init__(operands=[source, offsets], result_types=[tile])

    def verify_(self) -> None:
        _check_tile(self, self.result.type, self.source.type, len(self.offsets))


@irdl_op_definition
class StoreOp(IRDLOperation):
    """
    Write a tile into a tile grid's destination at the given offsets.

    Only the elements that fall inside the destination are written.

    ```mlir
    tilefuse.store %y into %out[%row, %c0] : tensor<4x512xf32> into tensor<70x333xf32>
    ```
    """

    name = "tilefuse.store"

    value = operand_def(TensorType)
    dest = operand_def(TensorType)
    offsets = var_operand_def(IndexType)

    assembly_format = (
        "$value `into` $dest `[` $offsets `]` attr-dict `:` type($value) `into` type($dest)"
    )

    def __init__(self, value: SSAValue, dest: SSAValue, offsets: Sequence[SSAValue]):
        super().__init__(operands=[value, dest, offsets])

    def verify_(self) -> None:
        _check_tile(self, self.value.type, self.dest.type, len(self.offsets))
        grid = self.parent_op()
        while grid is not None and not isinstance(grid, TileGridOp):
            grid = grid.parent_op()
        if grid is None or self.dest not in grid.destinations:
            raise VerifyException(
                "tilefuse.store must write to a destination of its enclosing tile grid."
            )


@irdl_op_definition
class WindowOp(IRDLOperation):
    """
    A strided view of a tensor: element `[i0, ..., im]` of the result is element
    `map(i0, ..., im)` of the source, where each result of `map` is a sum of
    the view's indices times non-negative constants plus a non-negative
    constant, inside the source. A convolution's input read through
    `(n, oh, ow, kh, kw, c) -> (n, oh * 2 + kh, ow * 2 + kw, c)` is one: the
    contraction then reads the view with a plain projection (`passes/fold_windows.py`),
    and the host makes the view with `torch.as_strided` (no copy).

    ```mlir
    %p = tilefuse.window %x affine_map<(d0, d1, d2, d3) -> (d0 + d2, d1 + d3)>
        : tensor<10x10xf32> -> tensor<8x8x3x3xf32>
    ```
    """

    name = "tilefuse.window"

    source = operand_def(TensorType)
    map = prop_def(AffineMapAttr)
    result = result_def(TensorType)

    assembly_format = "$source $map attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, amap: AffineMap, result_type: Attribute):
        super().__init__(operands=[source], properties={"map": AffineMapAttr(amap)},
                         result_types=[result_type])  # fmt: skip

    def terms(self) -> list[tuple[dict[int, int], int]]:
        """Per source dim: (view dim -> coefficient, constant)."""
        return [window_terms(r) for r in self.map.data.results]

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        assert isinstance(src, TensorType) and isinstance(res, TensorType)
        amap = self.map.data
        if amap.num_dims != len(res.get_shape()) or len(amap.results) != len(src.get_shape()):
            raise VerifyException(f"tilefuse.window's map {amap} must map the result's "
                                  f"{len(res.get_shape())} dims to the source's {len(src.get_shape())}")  # fmt: skip
        if src.get_element_type() != res.get_element_type():
            raise VerifyException("tilefuse.window keeps the element type")
        try:
            terms = self.terms()
        except ValueError as e:
            raise VerifyException(f"tilefuse.window's map: {e}") from e
        for d, t in enumerate(terms):
            last = last_index(t, list(res.get_shape()))
            if last >= src.get_shape()[d]:
                raise VerifyException(f"tilefuse.window reads index {last} of source dim {d} "
                                      f"(size {src.get_shape()[d]})")  # fmt: skip


def grid_inputs(grid: TileGridOp) -> list[SSAValue]:
    """Values defined outside `grid` that its body reads, in first-use order."""
    seen: dict[SSAValue, None] = {}
    for op in grid.body.walk():
        for v in op.operands:
            owner = v.owner
            inside = owner.parent_op() if isinstance(owner, Block) else owner
            while inside is not None and inside is not grid:
                inside = inside.parent_op()
            if inside is None:
                seen.setdefault(v)
    return list(seen)


def same_tile_program(a: TileGridOp, b: TileGridOp) -> list[tuple[SSAValue, SSAValue]] | None:
    """Pairs (a's input, b's input) if `b` runs `a`'s program on other tensors.

    The grids must be structurally equal once `a`'s outside values (tensors
    read, in first-use order) are mapped one-to-one to `b`'s, and both read only
    block arguments of their groups (no outside constants to compare).
    """
    ins_a, ins_b = grid_inputs(a), grid_inputs(b)
    if len(ins_a) != len(ins_b) or len(set(ins_b)) != len(ins_b) or len(a.outs) != len(b.outs):
        return None
    if not all(isinstance(v, BlockArgument) and v.type == w.type and isinstance(w, BlockArgument)
               for v, w in zip(ins_a, ins_b, strict=True)):  # fmt: skip
        return None
    context: dict = dict(zip(ins_a, ins_b, strict=True))
    context.update(zip(a.outs, b.outs, strict=True))
    if a.parent is not None and b.parent is not None:
        context[a.parent] = b.parent
    if not a.is_structurally_equivalent(b, context):
        return None
    # xDSL's check does not compare result types (a tile's shape, say)
    for x, y in zip(a.walk(), b.walk(), strict=True):
        if [r.type for r in x.results] != [r.type for r in y.results]:
            return None
    return list(zip(ins_a, ins_b, strict=True))


Tilefuse = Dialect(
    "tilefuse", [GroupOp, YieldOp, TileGridOp, LoadOp, StoreOp, WindowOp], []
)
