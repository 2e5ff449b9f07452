"""
The `tilefuse` dialect: what the pipeline adds on top of upstream MLIR.

Upstream ops (`func`, `linalg`, `tensor`, `arith`, `math`, `scf`) carry the
computation. This dialect adds what upstream has no word for: a fusion group (the
unit that becomes one GPU kernel, `tilefuse.group`), its tiled body (a grid of tile
programs, `tilefuse.tile_grid`, reading and writing tiles with `tilefuse.load` and
`tilefuse.store`), strided views (`tilefuse.window`), and the two records stages hand
on: what a group costs (`#tilefuse.cost`, written by `fusion-groups`) and how a grid is
tiled (`#tilefuse.tile_plan`, written by `tile-and-fuse`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    ArrayAttr,
    DenseArrayBase,
    FloatData,
    IndexType,
    IntAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    BlockArgument,
    Dialect,
    ParametrizedAttribute,
    Region,
    SSAValue,
)
from xdsl.ir.affine import AffineMap
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
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
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, IsTerminator, NoTerminator
from xdsl.utils.exceptions import VerifyException

from tilefuse.ir.affine import last_index, window_terms
from tilefuse.ir.dtypes import FLOATS

_T = TypeVar("_T")


def _parse_plan_tail(parser: AttrParser) -> tuple[int, int, str]:
    """A tile plan's optional `, persistent = N`, `, consumers = N` and `, note = "..."`."""
    counts, note = {"persistent": 0, "consumers": 0}, ""
    while parser.parse_optional_punctuation(",") is not None:
        key = next((k for k in counts if parser.parse_optional_keyword(k) is not None), None)
        if key is None:
            note = _parse_field(parser, "note", parser.parse_str_literal, first=True)
            break
        parser.parse_punctuation("=")
        counts[key] = parser.parse_integer()
    return counts["persistent"], counts["consumers"], note


def _parse_field(parser: AttrParser, name: str, value: Callable[[], _T], first: bool = False) -> _T:
    """`, name = <value>` (no comma before the first field)."""
    if not first:
        parser.parse_punctuation(",")
    parser.parse_keyword(name)
    parser.parse_punctuation("=")
    return value()


def _parse_ints(parser: AttrParser) -> ArrayAttr[IntAttr]:
    values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
    return ArrayAttr(IntAttr(v) for v in values)


def _ints(values: ArrayAttr[IntAttr]) -> tuple[int, ...]:
    return tuple(v.data for v in values.data)


COST_COUNTS = ("flops", "fused_bytes", "unfused_bytes", "tc_flops", "sfu_ops")
"""The counts of a `#tilefuse.cost`, in order."""


@irdl_attr_definition
class CostAttr(ParametrizedAttribute):
    """
    What a fusion group costs, as the fusion planner priced it: FLOPs (`tc_flops` of
    them on tensor cores, in `dtype`), transcendentals on the special function units,
    and the HBM bytes it moves as one kernel (`fused_bytes`) and op by op
    (`unfused_bytes`). `fusion-groups` writes it on each group; `horizontal-fusion`
    and the benchmark price it with `cost.roofline.predicted_time`.

    ```mlir
    #tilefuse.cost<flops = 2000, fused_bytes = 12000, unfused_bytes = 20000,
                   tc_flops = 0, sfu_ops = 0, dtype = "f32">
    ```
    """

    name = "tilefuse.cost"

    flops: IntAttr
    fused_bytes: IntAttr
    unfused_bytes: IntAttr
    tc_flops: IntAttr
    sfu_ops: IntAttr
    dtype: StringAttr

    def __init__(self, flops: int, fused_bytes: int, unfused_bytes: int, tc_flops: int = 0,
                 sfu_ops: int = 0, dtype: str = "f32"):  # fmt: skip
        counts = (flops, fused_bytes, unfused_bytes, tc_flops, sfu_ops)
        super().__init__(*(IntAttr(c) for c in counts), StringAttr(dtype))

    def counts(self) -> dict[str, int]:
        """The five counts by name."""
        return {k: getattr(self, k).data for k in COST_COUNTS}

    def __add__(self, other: CostAttr) -> CostAttr:
        """Two kernels' costs as one launch's; the tensor-core dtype of the first
        one with tensor-core work."""
        a, b = self.counts(), other.counts()
        dtype = self.dtype.data if a["tc_flops"] or not b["tc_flops"] else other.dtype.data
        return CostAttr(*(a[k] + b[k] for k in COST_COUNTS), dtype=dtype)

    def print_parameters(self, printer: Printer) -> None:
        fields = [f"{k} = {v}" for k, v in self.counts().items()]
        printer.print_string(f"<{', '.join(fields)}, dtype = ")
        printer.print_string_literal(self.dtype.data)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            counts = [IntAttr(_parse_field(parser, k, parser.parse_integer, first=k == "flops"))
                      for k in COST_COUNTS]  # fmt: skip
            dtype = StringAttr(_parse_field(parser, "dtype", parser.parse_str_literal))
        return [*counts, dtype]

    def verify(self) -> None:
        negative = [k for k, v in self.counts().items() if v < 0]
        if negative:
            raise VerifyException(f"A cost counts FLOPs and bytes: {', '.join(negative)} "
                                  "must not be negative.")  # fmt: skip
        if self.tc_flops.data > self.flops.data:
            raise VerifyException(f"A cost's tensor-core FLOPs ({self.tc_flops.data}) are part "
                                  f"of its FLOPs ({self.flops.data}) and cannot exceed them.")  # fmt: skip
        if self.dtype.data not in FLOATS:
            raise VerifyException(f"A cost's dtype must be one of {', '.join(FLOATS)}, "
                                  f"not {self.dtype.data!r}.")  # fmt: skip


GRID, WHOLE, LOOP = "grid", "whole", "loop"
"""How a tile plan covers a dim: split across programs, whole in every tile, or
looped inside the tile in chunks of its block."""


TF32 = "tf32"
"""A tile plan's `dot` for f32 operands multiplied on TF32 tensor cores."""
DOT_DTYPES = (*FLOATS, TF32)
"""What a tile plan's `dot` may say."""


@irdl_attr_definition
class TilePlanAttr(ParametrizedAttribute):
    """
    How a tile grid is tiled, and the budget arithmetic behind it (`tile_plan.py`).

    Per shared loop dim of the group: its `extents`, its block in `blocks` (a power
    of two) and its mode in `modes` (`grid`: split across programs; `whole`: the
    whole, padded extent in every tile; `loop`: looped inside the tile in chunks of
    the block). Then the launch (`warps`, `stages`), the working set against the
    shared-memory budget (bytes), the registers per thread the model expects, the
    occupancy it gives, the program order (`row`, or `grouped<m, n, group_m>`: the
    grid dims at positions `m` and `n` walked `group_m` tile rows at a time), and
    `dot`: the operand dtype of the grid's contractions when they are `tl.dot`s
    (`"tf32"`: f32 operands on TF32 tensor cores, only when asked for), `none` when
    the grid has none (`analysis/dot.py`). `note` says why, when the
    planner had a choice to explain. `describe()` is the plan as one line of prose,
    the `# tile ...` comment of the printed kernel.

    ```mlir
    #tilefuse.tile_plan<extents = [70, 333], blocks = [8, 512], modes = [grid, whole],
        warps = 8, stages = 1, working_set = 49216, smem_budget = 232448, regs = 73,
        occupancy = 0.375, order = row, dot = none>
    ```
    """

    name = "tilefuse.tile_plan"

    extents: ArrayAttr[IntAttr]
    blocks: ArrayAttr[IntAttr]
    modes: ArrayAttr[StringAttr]
    warps: IntAttr
    stages: IntAttr
    working_set: IntAttr
    smem_budget: IntAttr
    regs: IntAttr
    occupancy: FloatData
    order: ArrayAttr[IntAttr]
    """Empty for row order; (m, n, group_m) for grouped order."""
    dot: StringAttr | NoneAttr
    persistent: IntAttr
    """0: one program per tile; else the programs launched, each looping over the
    tiles `pid, pid + persistent, ...` (the Hopper lowering)."""
    consumers: IntAttr
    """0: a Triton kernel; else the warp-specialised Hopper attention (Gluon): each
    program runs this many consecutive tiles, one consumer warpgroup each, sharing the
    key and value tiles a producer warp loads (`tile_plan.warp_specialized_attention`)."""
    note: StringAttr

    def __init__(
        self,
        dims: Sequence[tuple[int, int, str]],
        warps: int,
        stages: int,
        working_set: int,
        smem_budget: int,
        regs: int,
        occupancy: float,
        swizzle: tuple[int, int] | None = None,
        group_m: int = 1,
        dot: str | None = None,
        note: str = "",
        persistent: int = 0,
        consumers: int = 0,
    ):
        """`dims`: (extent, block, mode) per dim; `swizzle`: the positions of M and N
        among the grid dims, walked `group_m` rows at a time (None: row order);
        `persistent`: programs launched when they loop over the tiles (0: one per tile);
        `consumers`: tiles a warp-specialised attention program runs (0: none)."""
        order = () if swizzle is None else (*swizzle, group_m)
        super().__init__(
            ArrayAttr(IntAttr(e) for e, _, _ in dims), ArrayAttr(IntAttr(b) for _, b, _ in dims),
            ArrayAttr(StringAttr(m) for _, _, m in dims), IntAttr(warps), IntAttr(stages),
            IntAttr(int(working_set)), IntAttr(smem_budget), IntAttr(regs), FloatData(float(occupancy)),
            ArrayAttr(IntAttr(i) for i in order), NoneAttr() if dot is None else StringAttr(dot),
            IntAttr(persistent), IntAttr(consumers), StringAttr(note),
        )  # fmt: skip

    def with_persistent(self, programs: int) -> TilePlanAttr:
        """This plan launching `programs` persistent programs (a bundle's, `horizontal-fusion`)."""
        return TilePlanAttr(self.dims, self.warps.data, self.stages.data, self.working_set.data,
                            self.smem_budget.data, self.regs.data, self.occupancy.data,
                            self.swizzle, self.group_m, self.dot_dtype, self.note.data, programs,
                            self.consumers.data)  # fmt: skip

    @property
    def dims(self) -> tuple[tuple[int, int, str], ...]:
        """(extent, block, mode) per dim."""
        modes = (m.data for m in self.modes.data)
        return tuple(zip(_ints(self.extents), _ints(self.blocks), modes, strict=True))

    @property
    def grid(self) -> tuple[int, ...]:
        """Programs per grid dim; -1 for a dynamic dim (its extent -1: a run-time size)."""
        return tuple(-1 if e < 0 else -(-e // b) for e, b, m in self.dims if m == GRID)

    @property
    def swizzle(self) -> tuple[int, int] | None:
        """Positions (among the grid dims) of M and N in grouped order; None: row order."""
        order = _ints(self.order)
        return (order[0], order[1]) if order else None

    @property
    def group_m(self) -> int:
        """Tile rows per group in grouped order (1: row-major)."""
        order = _ints(self.order)
        return order[2] if order else 1

    @property
    def dot_dtype(self) -> str | None:
        """The `tl.dot` operand dtype, None when the grid has no `tl.dot`."""
        return self.dot.data if isinstance(self.dot, StringAttr) else None

    def describe(self) -> str:
        """The plan in one line: `tile 8x512, grid 9, working set 48.1 KB of 227 KB, ...`."""
        tile = "x".join(f"{b}{'(loop)' if m == LOOP else ''}" for _, b, m in self.dims)
        note = self.note.data
        if self.persistent.data:
            note = f"persistent: {self.persistent.data} programs loop over the tiles" + (
                f"; {note}" if note else "")
        if self.consumers.data:
            note = (f"warp-specialised (Gluon): {self.consumers.data} tiles a program, a "
                    "consumer warpgroup each, K/V tiles from a producer warp" + (f"; {note}" if note else ""))
        return (
            f"tile {tile}, grid {'x'.join('?' if g < 0 else str(g) for g in self.grid) or '1'}, working set "
            f"{self.working_set.data / 1024:.1f} KB of {self.smem_budget.data / 1024:.0f} KB, "
            f"~{self.regs.data} regs/thread, {self.warps.data} warps, "
            f"{self.stages.data} stages, occupancy {self.occupancy.data:.2f}"
            + (f"; {note}" if note else "")
        )

    def print_parameters(self, printer: Printer) -> None:
        def ints(values: ArrayAttr[IntAttr]) -> str:
            return f"[{', '.join(map(str, _ints(values)))}]"

        modes = ", ".join(m.data for m in self.modes.data)
        order = "row" if not self.order.data else f"grouped<{ints(self.order)[1:-1]}>"
        printer.print_string(
            f"<extents = {ints(self.extents)}, blocks = {ints(self.blocks)}, modes = [{modes}], "
            f"warps = {self.warps.data}, stages = {self.stages.data}, "
            f"working_set = {self.working_set.data}, smem_budget = {self.smem_budget.data}, "
            f"regs = {self.regs.data}, occupancy = {self.occupancy.data!r}, order = {order}, "
            "dot = "
        )  # fmt: skip
        if isinstance(self.dot, StringAttr):
            printer.print_string_literal(self.dot.data)
        else:
            printer.print_string("none")
        if self.persistent.data:
            printer.print_string(f", persistent = {self.persistent.data}")
        if self.consumers.data:
            printer.print_string(f", consumers = {self.consumers.data}")
        if self.note.data:
            printer.print_string(", note = ")
            printer.print_string_literal(self.note.data)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        def field(name: str, value: Callable[[], _T]) -> _T:
            return _parse_field(parser, name, value, first=name == "extents")

        def integer() -> IntAttr:
            return IntAttr(parser.parse_integer())

        def modes() -> ArrayAttr[StringAttr]:
            words = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: parser.parse_keyword_in((GRID, WHOLE, LOOP)))
            return ArrayAttr(StringAttr(w) for w in words)

        def order() -> ArrayAttr[IntAttr]:
            if parser.parse_optional_keyword("row") is not None:
                return ArrayAttr(())
            parser.parse_keyword("grouped")
            values = parser.parse_comma_separated_list(parser.Delimiter.ANGLE,
                                                       parser.parse_integer)  # fmt: skip
            return ArrayAttr(IntAttr(v) for v in values)

        def dot() -> StringAttr | NoneAttr:
            if parser.parse_optional_keyword("none") is not None:
                return NoneAttr()
            return StringAttr(parser.parse_str_literal())

        with parser.in_angle_brackets():
            params: list[Attribute] = [
                field("extents", lambda: _parse_ints(parser)),
                field("blocks", lambda: _parse_ints(parser)), field("modes", modes),
                *(field(k, integer) for k in ("warps", "stages", "working_set", "smem_budget",
                                              "regs")),
                field("occupancy", lambda: FloatData(float(parser.parse_number()))),
                field("order", order), field("dot", dot),
            ]  # fmt: skip
            persistent, consumers, note = _parse_plan_tail(parser)
        return [*params, IntAttr(persistent), IntAttr(consumers), StringAttr(note)]

    def verify(self) -> None:
        n = (len(self.extents.data), len(self.blocks.data), len(self.modes.data))
        if len(set(n)) != 1:
            raise VerifyException(f"A tile plan needs one extent, block and mode per dim, "
                                  f"not {n[0]}, {n[1]} and {n[2]}.")  # fmt: skip
        if any(m not in (GRID, WHOLE, LOOP) for _, _, m in self.dims):
            raise VerifyException("A tile plan's modes are grid, whole or loop.")
        if any(b < 1 or b & (b - 1) for b in _ints(self.blocks)):
            raise VerifyException(f"Tile blocks must be powers of two (Triton's block shapes "
                                  f"are), not {list(_ints(self.blocks))}.")  # fmt: skip
        self._verify_launch()
        self._verify_order()
        if self.dot_dtype is not None and self.dot_dtype not in DOT_DTYPES:
            raise VerifyException(f"A tile plan's dot dtype must be one of {', '.join(DOT_DTYPES)}, "
                                  f"not {self.dot_dtype!r}.")  # fmt: skip

    def _verify_launch(self) -> None:
        w = self.warps.data
        if w < 1 or w & (w - 1) or self.stages.data < 1:
            raise VerifyException(f"A tile plan launches a power-of-two number of warps and at "
                                  f"least one stage, not {w} warps and {self.stages.data} "
                                  "stages.")  # fmt: skip
        if min(self.working_set.data, self.smem_budget.data, self.regs.data,
               self.persistent.data) < 0:
            raise VerifyException("A tile plan's working set, budget, registers and "
                                  "persistent programs must not be negative.")  # fmt: skip
        if not 0.0 <= self.occupancy.data <= 1.0:
            raise VerifyException(f"A tile plan's occupancy is a fraction in [0, 1], not "
                                  f"{self.occupancy.data}.")  # fmt: skip

    def _verify_order(self) -> None:
        order = _ints(self.order)
        if not order:
            return
        rank = len(self.grid)
        if len(order) != 3 or order[0] == order[1] or not all(0 <= i < rank for i in order[:2]):
            raise VerifyException(f"A grouped order names two distinct grid dims (of {rank}) "
                                  f"and the rows per group, not {list(order)}.")  # fmt: skip
        if order[2] < 1:
            raise VerifyException("A grouped order walks at least one tile row per group.")


EDGE_CLAMP = "tilefuse.edge_clamp"
"""On the `arith.minsi` that clamps a tile program's gather index to its dim
(`tile_and_fuse.clamp_gathers`): the clamp only keeps lanes past the tile's extent
(whose values nothing stores) in bounds; in a well-defined program every other lane's
index is already inside. The printer loads such an index masked to the dim instead
(the same value at every lane that counts, and a contiguous index stays a vector
load, which a clamped one does not)."""

SOFTMAX_EXP = "tilefuse.softmax_exp"
"""On a `math.exp` of an online-softmax loop (`tile_and_fuse`): `exp(x - m)` with `m` the
running maximum of the row so far, or the correction `exp(m_old - m)`, whose values only
feed the row's sum and the products with it. The printer may flush results below 2**-126
to zero (`ex2.approx.ftz`: one instruction where `tl.exp`'s range fix-up adds three):
the row's sum holds the maximum's own term, exp(0) = 1, so a flushed term moves a
normalised result by less than 2**-126 of it, far under the exponential's own error
(about 2**-22 of that term)."""

IN_BOUNDS_AXES = "tilefuse.in_bounds_axes"
"""On a `tilefuse.load` or `tilefuse.store`: `array<i64: ...>`, the axes of its tile
proven inside the tensor (on a tile program's `tensor.extract`: the axes whose index
is inside its dim at every lane, so the printer neither clamps nor masks them and
contiguous indices stay vector loads) (a loop over the whole chunks of a dynamic dim, or a dynamic
dim known to be a multiple of its block): the printer masks none of them."""

SAME_SIZES = "tilefuse.same_sizes"
"""On a group: lists of `array<i64: input, axis>` whose dynamic sizes its kernel
reads as one (a loop of its tile program): the host checks they agree before the
launch (`tile-and-fuse` sets it)."""

STATIC_SIZES = "tilefuse.static_sizes"
"""On a group: `array<i64: input, axis, size>` for each dynamic axis its kernel reads
along a loop of static size: the host checks the argument has that size."""

VARIANTS = "tilefuse.variants"
"""On a group with dynamic sizes planned for several parts of their range
(`tile-and-fuse`): the names of its variants, the groups before it with the same
inputs and body tiled for smaller sizes, in order of the sizes they serve. The
host launches the first whose `SERVES` holds the launch's largest dynamic size."""

def variants_of(group: GroupOp, by_name: Mapping[str, GroupOp]) -> list[GroupOp]:
    """The groups `group`'s `VARIANTS` names, in order (none without the attribute)."""
    names = group.attributes.get(VARIANTS)
    return [by_name[n.data] for n in names.data] if isinstance(names, ArrayAttr) else []  # pyright: ignore


VARIANT_OF = "tilefuse.variant_of"
"""On a variant: the name of the group it stands in for (its results are unused:
the host's launch of it writes the group's)."""

SERVES = "tilefuse.serves"
"""On a group with variants and on each variant: `array<i64: lo, hi>`, the largest
dynamic sizes of a launch it serves."""

LAYOUT_ATTR = "tilefuse.layout"
"""On a host-made tensor (a `tensor.pad`): the order of its dims in memory,
outermost first (`choose-layouts`; a group's results carry theirs in `layouts`)."""


Merge = tuple[tuple[int, ...], ...]
"""Per dim of a merged tensor, the dims of the tensor it merges (outermost first):
`((0, 2, 3), (1,))` views `tensor<32x256x14x14>` as `tensor<6272x256>`, element
`[(n * 14 + h) * 14 + w, c]` being `[n, c, h, w]`. Any dims, not only adjacent ones:
an index map, not a memory view (`GroupOp.input_merges`)."""


def merged_shape(shape: Sequence[int], merge: Merge) -> tuple[int, ...]:
    """The shape of a tensor of `shape` merged by `merge`."""
    return tuple(math.prod(shape[d] for d in dims) for dims in merge)


def merged_type(t: TensorType, merge: Merge) -> TensorType:
    """The type of a tensor of type `t` merged by `merge`."""
    return TensorType(t.element_type, merged_shape(t.get_shape(), merge))


def _merge(merges: ArrayAttr | None, i: int) -> Merge | None:
    """Entry `i` of a group's `input_merges` or `result_merges` (None: empty or absent)."""
    if merges is None or not (entry := merges.data[i].data):
        return None
    return tuple(tuple(d.get_values()) for d in entry)  # type: ignore[misc]


def merges_attr(merges: Sequence[Merge | None]) -> ArrayAttr:
    """`input_merges` / `result_merges` from one merge (or None) per value."""
    return ArrayAttr([ArrayAttr([DenseArrayBase.from_list(i64, list(dims)) for dims in m or ()])
                      for m in merges])  # fmt: skip


def _order(layouts: ArrayAttr[DenseArrayBase] | None, i: int) -> tuple[int, ...] | None:
    """Entry `i` of a group's `layouts` or `input_layouts` (None: empty or absent)."""
    if layouts is None or not (order := layouts.data[i].get_values()):
        return None
    return tuple(order)  # type: ignore[arg-type]


@irdl_op_definition
class GroupOp(IRDLOperation):
    """
    A fusion group: a region computed by one kernel.

    The region is isolated from above; its entry block takes one argument per
    input, and its `tilefuse.yield` returns the group's results. The name, the
    fusion decision that formed the group and what it costs (`#tilefuse.cost`) travel
    as properties; so do `untiled` (why `tile-and-fuse` left the group as it was),
    `tile_candidate` (the autotuner's pick among the tile planner's candidates) and
    `layouts` (per result, the order of its dims in memory, outermost first; empty:
    row-major; written by `choose-layouts`) and `input_layouts` (the same per input:
    the order the host copies a function argument into before the launch, where
    the kernel loads it faster so; empty: as given). `input_merges` and
    `result_merges` (written by `merge-positions`) give, per input and result, the
    `Merge` the body sees it through: the block argument (the yielded value) has the
    merged shape, the host passes the tensor as it is, and the kernel indexes it by
    dividing the merged index (empty: the same tensor).

    ```mlir
    %z = tilefuse.group "fused_kernel_0" ins(%x, %y : tensor<4xf32>, tensor<4xf32>)
        reason "fused pointwise: add + relu" attributes {cost = #tilefuse.cost<flops = 4,
        fused_bytes = 48, unfused_bytes = 80, tc_flops = 0, sfu_ops = 0, dtype = "f32">} {
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
    cost = opt_prop_def(CostAttr)
    untiled = opt_prop_def(StringAttr)
    tile_candidate = opt_prop_def(IntegerAttr[I64])
    layouts = opt_prop_def(ArrayAttr[DenseArrayBase])
    input_layouts = opt_prop_def(ArrayAttr[DenseArrayBase])
    input_merges = opt_prop_def(ArrayAttr)
    result_merges = opt_prop_def(ArrayAttr)
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())

    irdl_options = (ParsePropInAttrDict(),)

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

    def _verify_layouts(self, layouts: ArrayAttr[DenseArrayBase], values: Sequence[SSAValue],
                        what: str) -> None:  # fmt: skip
        if len(layouts.data) != len(values):
            raise VerifyException(f"The group has {len(values)} {what}s but "
                                  f"{len(layouts.data)} {what} layouts.")  # fmt: skip
        for r, order in zip(values, layouts.data, strict=True):
            rank = len(r.type.get_shape())  # type: ignore[attr-defined]
            dims = order.get_values()
            if dims and sorted(dims) != list(range(rank)):
                raise VerifyException(f"A layout must order the dims of a rank-{rank} "
                                      f"{what}, not {list(dims)}.")  # fmt: skip

    @property
    def entry(self) -> Block:
        """The group's only block."""
        return self.body.block

    def layout(self, i: int) -> tuple[int, ...] | None:
        """The dim order result `i` is stored in (outermost first), None for row-major."""
        return _order(self.layouts, i)

    def input_layout(self, i: int) -> tuple[int, ...] | None:
        """The dim order the host copies input `i` into first, None for as given."""
        return _order(self.input_layouts, i)

    def input_merge(self, i: int) -> Merge | None:
        """How the body sees input `i` (`Merge`), None for as it is."""
        return _merge(self.input_merges, i)

    def result_merge(self, i: int) -> Merge | None:
        """How the body yields result `i` (`Merge`), None for as it is."""
        return _merge(self.result_merges, i)

    @property
    def merged(self) -> bool:
        """Whether the body sees some input or result merged."""
        return any(self.input_merge(i) for i in range(len(self.inputs))) or any(
            self.result_merge(i) for i in range(len(self.results)))

    @property
    def grids(self) -> tuple[TileGridOp, ...]:
        """The group's tile grids (none before `tile-and-fuse`, several after
        `horizontal-fusion` bundled groups)."""
        return tuple(o for o in self.entry.ops if isinstance(o, TileGridOp))

    def destination(self, i: int) -> BlockArgument | None:
        """The tile-grid destination result `i` is stored through (its kernels'
        stores), None where a grid does not yield it."""
        last = self.entry.last_op
        yielded = last.operands[i] if last is not None else None
        if yielded is None or not isinstance(grid := yielded.owner, TileGridOp):
            return None
        return grid.destinations[list(grid.results).index(yielded)]

    def _seen_type(self, t: Attribute, merge: Merge | None) -> Attribute:
        """The type the body sees a value of type `t` merged by `merge` as."""
        if merge is None:
            return t
        shape = t.get_shape()  # type: ignore[attr-defined]
        if sorted(d for dims in merge for d in dims) != list(range(len(shape))) or any(d < 0 for d in shape):
            raise VerifyException(f"A merge must take each dim of a static rank-{len(shape)} "
                                  f"tensor once, not {[list(d) for d in merge]}.")  # fmt: skip
        return merged_type(t, merge)  # type: ignore[arg-type]

    def verify_(self) -> None:
        for merges, values, what in ((self.input_merges, self.inputs, "input"),
                                     (self.result_merges, self.results, "result")):  # fmt: skip
            if merges is not None and len(merges.data) != len(values):
                raise VerifyException(f"The group has {len(values)} {what}s but "
                                      f"{len(merges.data)} {what} merges.")  # fmt: skip
        arg_types = tuple(arg.type for arg in self.entry.args)
        input_types = tuple(self._seen_type(v.type, self.input_merge(i)) for i, v in enumerate(self.inputs))
        if arg_types != input_types:
            raise VerifyException(
                f"The group's block arguments {list(map(str, arg_types))} must "
                f"match its inputs {list(map(str, input_types))}."
            )
        terminator = self.entry.last_op
        if not isinstance(terminator, YieldOp):
            raise VerifyException("A tilefuse.group must end with tilefuse.yield.")
        if self.layouts is not None:
            self._verify_layouts(self.layouts, self.results, "result")
        if self.input_layouts is not None:
            self._verify_layouts(self.input_layouts, self.inputs, "input")
        yielded = tuple(v.type for v in terminator.values)
        if yielded != tuple(self._seen_type(t, self.result_merge(i)) for i, t in enumerate(self.result_types)):
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
    every program ran. `num_warps` and `num_stages` are launch parameters; `plan`
    (`#tilefuse.tile_plan`) is how `tile-and-fuse` tiled it: the tile, the program
    order, whether its contractions are `tl.dot`s, and the budget arithmetic.

    ```mlir
    %r = tilefuse.tile_grid [18] outs(%e : tensor<70x333xf32>) warps 4 stages 1
        attributes {plan = #tilefuse.tile_plan<extents = [70, 333], blocks = [4, 512], ...>} {
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
    plan = opt_prop_def(TilePlanAttr)
    sizes = var_operand_def(IndexType)
    """The run-time extent of each dynamic dim of the plan (extent -1), in order: a
    grid dim's programs (-1 in `grid`) are it over the dim's block, rounded up."""
    outs = var_operand_def(TensorType)
    results_ = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    irdl_options = (ParsePropInAttrDict(), AttrSizedOperandSegments(as_property=True))

    assembly_format = (
        "$grid (`sizes` `(` $sizes^ `)`)? `outs` `(` $outs `:` type($outs) `)` `warps` "
        "$num_warps `stages` $num_stages attr-dict-with-keyword $body `->` `(` type($results_) `)`"
    )

    def __init__(
        self,
        grid: Sequence[int],
        outs: Sequence[SSAValue],
        body: Region,
        num_warps: int = 4,
        num_stages: int = 1,
        plan: TilePlanAttr | None = None,
        sizes: Sequence[SSAValue] = (),
    ):
        super().__init__(
            operands=[sizes, outs],
            result_types=[[v.type for v in outs]],
            regions=[body],
            properties={
                "grid": DenseArrayBase.from_list(i64, grid),
                "num_warps": IntegerAttr(num_warps, i64),
                "num_stages": IntegerAttr(num_stages, i64),
                "plan": plan,
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
        if any(g < 1 and g != -1 for g in self.grid_shape):
            raise VerifyException("Every grid dimension needs at least one program.")
        dynamic = sum(e < 0 for e, _, _ in self.plan.dims) if self.plan is not None else 0
        if dynamic != len(self.sizes) or (self.plan is None and -1 in self.grid_shape):
            raise VerifyException("A tile grid takes one size per dynamic dim of its tile plan.")
        if self.plan is not None and self.plan.grid != self.grid_shape:
            raise VerifyException(
                f"The tile plan's grid {list(self.plan.grid)} must be the tile grid's "
                f"{list(self.grid_shape)}."
            )


def describe_tiles(group: GroupOp) -> str | None:
    """The tile plans of `group`'s grids as prose (`TilePlanAttr.describe`), the
    `# tile ...` comment of its kernel: `"2 grids: tile ... | tile ..."` (distinct
    plans) for a bundle of several; None when it has no planned grid."""
    plans = [g.plan for g in group.grids if g.plan is not None]
    if not plans:
        return None
    if len(group.grids) == 1:
        return plans[0].describe() + _describe_merges(group)
    return f"{len(group.grids)} grids: " + " | ".join(dict.fromkeys(p.describe() for p in plans))


def _describe_merges(group: GroupOp) -> str:
    """`"; positions merged: result 0 dims 0, 2, 3"` for a group `merge-positions`
    rewrote (its first merged result's, else input's, dims of more than one)."""
    results = [(f"result {i}", group.result_merge(i)) for i in range(len(group.results))]
    inputs = [(f"input {i}", group.input_merge(i)) for i in range(len(group.inputs))]
    for what, merge in (*results, *inputs):
        for dims in merge or ():
            if len(dims) > 1:
                return f"; positions merged: {what} dims {', '.join(map(str, dims))}"
    return ""


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
        if any(n < 0 for n in (*src.get_shape(), *res.get_shape())):
            return  # dynamic sizes: the evaluator checks the window at run time
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
    block arguments of their groups (no outside constants to compare) or the
    sizes of their dims (`tensor.dim` of a block argument by one constant axis:
    a dynamic grid's program counts and masks; not paired: whether they agree at
    run time is the caller's question, `dim_facts.size_origin`).
    """
    ins_a, ins_b = grid_inputs(a), grid_inputs(b)
    if len(ins_a) != len(ins_b) or len(set(ins_b)) != len(ins_b) or len(a.outs) != len(b.outs):
        return None
    if len(a.sizes) != len(b.sizes):
        return None
    context: dict = {}
    for v, w in zip([*ins_a, *a.sizes], [*ins_b, *b.sizes], strict=True):
        if not (_same_dim_read(v, w) or (isinstance(v, BlockArgument) and isinstance(w, BlockArgument)
                and v.type == w.type)):  # fmt: skip
            return None
        if context.setdefault(v, w) is not w:
            return None
    context.update(zip(a.outs, b.outs, strict=True))
    if a.parent is not None and b.parent is not None:
        context[a.parent] = b.parent
    if not a.is_structurally_equivalent(b, context):
        return None
    # xDSL's check does not compare result types (a tile's shape, say)
    for x, y in zip(a.walk(), b.walk(), strict=True):
        if [r.type for r in x.results] != [r.type for r in y.results]:
            return None
    return [(v, w) for v, w in zip(ins_a, ins_b, strict=True) if isinstance(v, BlockArgument)]


def _same_dim_read(v: SSAValue, w: SSAValue) -> bool:
    """`v` and `w` read one constant axis of block arguments of one type."""
    dv, dw = v.owner, w.owner
    if not (isinstance(dv, tensor.DimOp) and isinstance(dw, tensor.DimOp)):
        return False
    iv, iw = dv.index.owner, dw.index.owner
    return (isinstance(dv.source, BlockArgument) and isinstance(dw.source, BlockArgument)
            and dv.source.type == dw.source.type and isinstance(iv, arith.ConstantOp)
            and isinstance(iw, arith.ConstantOp) and iv.value == iw.value)  # fmt: skip


Tilefuse = Dialect(
    "tilefuse", [GroupOp, YieldOp, TileGridOp, LoadOp, StoreOp, WindowOp],
    [CostAttr, TilePlanAttr],
)
