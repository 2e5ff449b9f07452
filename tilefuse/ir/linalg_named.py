"""
Upstream linalg named ops that xDSL 0.75 does not define, in upstream's syntax.

MLIR prints attention and MLP programs with `linalg.batch_matmul`,
`linalg.matmul_transpose_b`, `linalg.matvec`, `linalg.div`, `linalg.tanh`, ... ; xDSL's linalg
dialect has `matmul`, `add`, `sub`, `mul`, `exp`, `log`, `sqrt`, `max`, `min`
and a few more. Each op here is a named op with a hidden region, exactly like
xDSL's own (`linalg.exp`, `linalg.matmul`), so `structured.as_structured` and
`linalg-generalize` treat it like any other. `LINALG` is xDSL's dialect with
these added; `universe.py` loads it in place of xDSL's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import (
    I64,
    AffineMapAttr,
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
    VectorType,
    i64,
)
from xdsl.dialects.linalg import Linalg
from xdsl.dialects.linalg import ops as linalg_ops
from xdsl.dialects.linalg.abstract_ops import ElementwiseOperation, NamedOperation
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import YieldOp
from xdsl.ir import Attribute, Block, BlockArgument, Dialect, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.lexer import Span


class _HiddenRegion(NamedOperation):
    """A named op built like xDSL's own: operands, result types, hidden region."""

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        outputs: Sequence[SSAValue] = (),
        res: Sequence[Attribute] | None = None,
        attributes: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            ins=inputs,
            outs=outputs,
            result_types=res if res is not None else tuple(o.type for o in outputs),
            attributes=attributes,
            hidden_region=self.get_hidden_region(inputs, outputs),
        )


class _Elementwise(_HiddenRegion, ElementwiseOperation):
    """An elementwise named op whose payload is `BODY(args)`."""

    BODY: ClassVar[Callable[..., SSAValue]]

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        arg_types = cls.body_arg_types((*inputs, *outputs))

        @Builder.implicit_region(arg_types)
        def hidden_region(args: tuple[BlockArgument, ...]) -> None:
            YieldOp(cls.BODY(*args[: len(inputs)]))

        return hidden_region


def _unary(op_class):
    return lambda x: op_class(x).result


def _elementwise(name: str, body: Callable[..., SSAValue], doc: str) -> type:
    cls = type(_class_name(name), (_Elementwise,), {"name": name, "BODY": staticmethod(body),
                                                   "__doc__": doc})  # fmt: skip
    return irdl_op_definition(cls)


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.removeprefix("linalg.").split("_")) + "Op"


def _reciprocal(x: SSAValue) -> SSAValue:
    one = arith.ConstantOp(FloatAttr(1.0, x.type))
    return arith.DivfOp(one.result, x).result


def _square(x: SSAValue) -> SSAValue:
    return arith.MulfOp(x, x).result


ELEMENTWISE = [
    _elementwise("linalg.div", lambda a, b: arith.DivfOp(a, b).result, "a / b elementwise."),
    _elementwise("linalg.powf", lambda a, b: math.PowFOp(a, b).result, "a ** b elementwise."),
    _elementwise("linalg.tanh", _unary(math.TanhOp), "tanh(x) elementwise."),
    _elementwise("linalg.erf", _unary(math.ErfOp), "erf(x) elementwise."),
    _elementwise("linalg.abs", _unary(math.AbsFOp), "|x| elementwise."),
    _elementwise("linalg.negf", _unary(arith.NegfOp), "-x elementwise."),
    _elementwise("linalg.rsqrt", _unary(math.RsqrtOp), "1 / sqrt(x) elementwise."),
    _elementwise("linalg.floor", _unary(math.FloorOp), "floor(x) elementwise."),
    _elementwise("linalg.ceil", _unary(math.CeilOp), "ceil(x) elementwise."),
    _elementwise("linalg.reciprocal", _reciprocal, "1 / x elementwise."),
    _elementwise("linalg.square", _square, "x * x elementwise."),
]


def _arg_types(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue],
               shape_only: int | None = None) -> list:
    """The payload's argument types of a contraction, convolution or pooling:
    floats or integers (the argument `shape_only`, a pooling's window, is only
    read for its shape)."""
    arg_types = cls.body_arg_types((*inputs, *outputs))
    if not all(isinstance(t, AnyFloat | IntegerType) for i, t in enumerate(arg_types) if i != shape_only):
        raise VerifyException(f"'{cls.name}' of types {list(arg_types)}")
    return arg_types


def _combine(kind: str, acc: SSAValue, x: SSAValue) -> SSAValue:
    """acc + x (also "conv"), max or min, in the accumulator's kind of number
    (signed for integers, as upstream's named ops)."""
    integer = isinstance(acc.type, IntegerType)
    ops = {"sum": (arith.AddfOp, arith.AddiOp), "conv": (arith.AddfOp, arith.AddiOp),
           "max": (arith.MaximumfOp, arith.MaxSIOp), "min": (arith.MinimumfOp, arith.MinSIOp)}  # fmt: skip
    return ops[kind][integer](acc, x).result


def _times(a: SSAValue, b: SSAValue) -> SSAValue:
    return (arith.MuliOp if isinstance(a.type, IntegerType) else arith.MulfOp)(a, b).result


class _Contraction(_HiddenRegion):
    """A multiply-accumulate named op over `MAPS` (dims named by the lambda's args)."""

    PRINT_ATTRS_IN_FRONT: ClassVar[bool] = True
    MAPS: ClassVar[tuple[Callable[..., tuple], ...]]
    ITERATORS: ClassVar[str]

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        arg_types = _arg_types(cls, inputs, outputs)
        acc_type = arg_types[-1]

        @Builder.implicit_region(arg_types)
        def hidden_region(args: tuple[BlockArgument, ...]) -> None:
            # Operands of another type are cast to the accumulator's (upstream's
            # cast_signed): bf16 x bf16 into f32 multiplies exactly widened values,
            # i8 x i8 into i32 sign-extended ones.
            a, b = (_cast_signed(x, acc_type) for x in args[:2])
            YieldOp(_combine("sum", args[2], _times(a, b)))

        return hidden_region

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        return tuple(AffineMap.from_callable(m) for m in self.MAPS)

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        maps = self.attributes.get("indexing_maps")
        if isinstance(maps, ArrayAttr):
            return maps  # upstream's explicit maps (transposed or broadcast operands)
        return ArrayAttr([AffineMapAttr(m) for m in self.get_default_indexing_maps()])

    @classmethod
    def parse(cls, parser: Parser):
        """Upstream's form, `indexing_maps = [...]` before `ins`, or the default maps."""
        maps = None
        if parser.parse_optional_characters("indexing_maps") is not None:
            parser.parse_punctuation("=")
            maps = parser.parse_attribute()
        op = super().parse(parser)
        if maps is not None:
            if not isinstance(maps, ArrayAttr) or len(maps) != len(cls.MAPS) or not all(
                isinstance(m, AffineMapAttr) for m in maps
            ):
                parser.raise_error(f"'{cls.name}' needs {len(cls.MAPS)} affine maps")
            op.attributes["indexing_maps"] = maps
        return op

    def print(self, printer: Printer) -> None:
        maps = self.attributes.get("indexing_maps")
        if maps is not None:
            printer.print_string(" indexing_maps = ")
            printer.print_attribute(maps)
        super().print(printer)

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        kinds = {"p": IteratorTypeAttr.parallel(), "r": IteratorTypeAttr.reduction()}
        return ArrayAttr([kinds[c] for c in self.ITERATORS])


def _cast(v: SSAValue, t: Attribute) -> SSAValue:
    if v.type == t:
        return v
    if isinstance(v.type, AnyFloat) and isinstance(t, AnyFloat) and v.type.bitwidth < t.bitwidth:
        return arith.ExtFOp(v, t).result
    return arith.TruncFOp(v, t).result


def _cast_signed(v: SSAValue, t: Attribute) -> SSAValue:
    """Upstream's `cast_signed`: `v` converted to `t`, integers read as signed."""
    if v.type == t:
        return v
    if isinstance(v.type, IndexType) or isinstance(t, IndexType):
        if not isinstance(v.type, IntegerType | IndexType) or not isinstance(t, IntegerType | IndexType):
            raise VerifyException(f"converts between {v.type} and {t}: cast through an integer")
        return arith.IndexCastOp(v, t).result
    if v.type == IntegerType(1) or t == IntegerType(1):
        raise VerifyException(f"converts between i1 and {t if v.type == IntegerType(1) else v.type}, "
                              "which tilefuse does not read signed or unsigned for you")  # fmt: skip
    src_int, dst_int = isinstance(v.type, IntegerType), isinstance(t, IntegerType)
    if src_int and dst_int:
        wider = t.width.data > v.type.width.data
        return (arith.ExtSIOp(v, t) if wider else arith.TruncIOp(v, t)).result
    if src_int:
        return arith.SIToFPOp(v, t).result
    if dst_int:
        return arith.FPToSIOp(v, t).result
    return _cast(v, t)


class FillOp(linalg_ops.FillOp):
    """`linalg.fill` with upstream's numeric cast: the value is converted to the
    output's element type (`cast_signed`); xDSL's yields it unconverted. (xDSL's
    definition, inherited: only the hidden region differs.)"""

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        # (xDSL's body_arg_types asserts on index)
        arg_types = [v.type.get_element_type() if isinstance(v.type, TensorType) else v.type
                     for v in (*inputs, *outputs)]  # fmt: skip

        @Builder.implicit_region(arg_types)
        def hidden_region(args: tuple[BlockArgument, ...]) -> None:
            YieldOp(_cast_signed(args[0], arg_types[-1]))

        return hidden_region


def _contraction(name: str, maps: tuple, iterators: str, doc: str) -> type:
    cls = type(_class_name(name), (_Contraction,),
               {"name": name, "MAPS": maps, "ITERATORS": iterators, "__doc__": doc,
                "__annotations__": {"MAPS": ClassVar[tuple], "ITERATORS": ClassVar[str]}})  # fmt: skip
    return irdl_op_definition(cls)


CONTRACTIONS = [
    _contraction("linalg.matmul",
                 (lambda m, n, k: (m, k), lambda m, n, k: (k, n), lambda m, n, k: (m, n)), "ppr",
                 "C += A @ B (xDSL's own, with mixed precision and upstream's indexing_maps)."),
    _contraction("linalg.batch_matmul",
                 (lambda b, m, n, k: (b, m, k), lambda b, m, n, k: (b, k, n),
                  lambda b, m, n, k: (b, m, n)), "pppr",
                 "C[b] += A[b] @ B[b]."),
    _contraction("linalg.matmul_transpose_b",
                 (lambda m, n, k: (m, k), lambda m, n, k: (n, k), lambda m, n, k: (m, n)), "ppr",
                 "C += A @ B^T (B is N x K)."),
    _contraction("linalg.matmul_transpose_a",
                 (lambda m, n, k: (k, m), lambda m, n, k: (k, n), lambda m, n, k: (m, n)), "ppr",
                 "C += A^T @ B (A is K x M)."),
    _contraction("linalg.batch_matmul_transpose_b",
                 (lambda b, m, n, k: (b, m, k), lambda b, m, n, k: (b, n, k),
                  lambda b, m, n, k: (b, m, n)), "pppr",
                 "C[b] += A[b] @ B[b]^T."),
    _contraction("linalg.matvec",
                 (lambda m, k: (m, k), lambda m, k: (k,), lambda m, k: (m,)), "pr",
                 "y += A @ x."),
    _contraction("linalg.vecmat",
                 (lambda n, k: (k,), lambda n, k: (k, n), lambda n, k: (n,)), "pr",
                 "y += x @ A."),
    _contraction("linalg.batch_matvec",
                 (lambda b, m, k: (b, m, k), lambda b, m, k: (b, k), lambda b, m, k: (b, m)), "ppr",
                 "y[b] += A[b] @ x[b]."),
    _contraction("linalg.dot",
                 (lambda k: (k,), lambda k: (k,), lambda k: ()), "r",
                 "c += a . b (vectors; c is a 0-d tensor)."),
]  # fmt: skip

class _Windowed(_HiddenRegion):
    """A convolution or pooling named op: `MAPS` take the loop dims, then the
    strides and dilations (upstream's `{strides = dense<..>, dilations = ..}`
    attributes, 1 where absent). The payload accumulates into the output with
    `KIND`: "conv" (out + in * filter), "max", "min" or "sum" (of the input;
    a pooling's second operand only gives the window its shape)."""

    PRINT_ATTRS_IN_FRONT: ClassVar[bool] = True
    MAPS: ClassVar[tuple[Callable[..., tuple], ...]]
    ITERATORS: ClassVar[str]
    KIND: ClassVar[str]
    SPATIAL: ClassVar[int]

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        arg_types = _arg_types(cls, inputs, outputs, None if cls.KIND == "conv" else 1)
        acc_type = arg_types[-1]

        @Builder.implicit_region(arg_types)
        def hidden_region(args: tuple[BlockArgument, ...]) -> None:
            x, acc = _cast_signed(args[0], acc_type), args[-1]
            if cls.KIND == "conv":
                x = _times(x, _cast_signed(args[1], acc_type))
            YieldOp(_combine(cls.KIND, acc, x))

        return hidden_region

    STRIDED: ClassVar[bool] = True
    """Upstream's `conv_1d` and `conv_2d` take no strides or dilations."""

    def _attr(self, name: str) -> list[int]:
        """Upstream's `dense<..> : tensor<SPATIALxi64>` (1s where absent)."""
        attr = self.attributes.get(name)
        if attr is None:
            return [1] * self.SPATIAL
        if not self.STRIDED:
            raise VerifyException(f"takes no {name}")
        t = getattr(attr, "type", None)  # tensor<Nxi64>, or vector<Nxi64> as torch-mlir prints it
        if not (isinstance(t, TensorType | VectorType) and t.get_element_type() == i64
                and tuple(t.get_shape()) == (self.SPATIAL,)):  # fmt: skip
            raise VerifyException(f"needs {name} of type tensor<{self.SPATIAL}xi64> or "
                                  f"vector<{self.SPATIAL}xi64>, got {attr}")  # fmt: skip
        return [int(v) for v in attr.get_values()]

    def verify_(self) -> None:
        for name in ("strides", "dilations"):
            if any(v < 1 for v in self._attr(name)):
                raise VerifyException(f"{name} must be positive")
        if len(self.inputs) != len(self.MAPS) - 1 or len(self.outputs) != 1:
            raise VerifyException(f"takes {len(self.MAPS) - 1} inputs and one output")
        maps = self.get_default_indexing_maps()
        for i, (v, m) in enumerate(zip((*self.inputs, *self.outputs), maps, strict=True)):
            rank = len(v.type.get_shape()) if isinstance(v.type, TensorType) else 0
            if rank != len(m.results):
                raise VerifyException(f"operand #{i} must have rank {len(m.results)}, "
                                      f"got {v.type}")  # fmt: skip

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        strides, dilations = self._attr("strides"), self._attr("dilations")
        num = len(self.ITERATORS)
        dims = [AffineDimExpr(d) for d in range(num)]
        return tuple(AffineMap(num, 0, tuple(m(*dims, strides, dilations))) for m in self.MAPS)

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        return ArrayAttr([AffineMapAttr(m) for m in self.get_default_indexing_maps()])

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        kinds = {"p": IteratorTypeAttr.parallel(), "r": IteratorTypeAttr.reduction()}
        return ArrayAttr([kinds[c] for c in self.ITERATORS])



def _windowed(name: str, maps: tuple, iterators: str, kind: str, spatial: int, doc: str,
              strided: bool = True) -> type:
    cls = type(_class_name(name), (_Windowed,),
               {"name": name, "MAPS": maps, "ITERATORS": iterators, "KIND": kind,
                "SPATIAL": spatial, "__doc__": doc, "STRIDED": strided,
                "__annotations__": {"MAPS": ClassVar[tuple], "ITERATORS": ClassVar[str],
                                    "KIND": ClassVar[str], "SPATIAL": ClassVar[int],
                                    "STRIDED": ClassVar[bool]}})  # fmt: skip
    return irdl_op_definition(cls)


def _at(o, k, s, d, i):
    """Input index of output position o and window position k on spatial dim i."""
    return o * s[i] + k * d[i]


def _pooling(layout: str, kind: str) -> type:
    if layout == "nhwc":
        maps = (lambda n, oh, ow, c, kh, kw, s, d: (n, _at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1), c),
                lambda n, oh, ow, c, kh, kw, s, d: (kh, kw),
                lambda n, oh, ow, c, kh, kw, s, d: (n, oh, ow, c))  # fmt: skip
    else:
        maps = (lambda n, c, oh, ow, kh, kw, s, d: (n, c, _at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1)),
                lambda n, c, oh, ow, kh, kw, s, d: (kh, kw),
                lambda n, c, oh, ow, kh, kw, s, d: (n, c, oh, ow))  # fmt: skip
    return _windowed(f"linalg.pooling_{layout}_{kind}", maps, "pppprr", kind, 2,
                     f"{kind} pooling, {layout.upper()}.")


WINDOWED = [
    _windowed("linalg.conv_1d",
              (lambda ow, kw, s, d: (_at(ow, kw, s, d, 0),), lambda ow, kw, s, d: (kw,),
               lambda ow, kw, s, d: (ow,)), "pr", "conv", 1, "1-D convolution.", strided=False),
    _windowed("linalg.conv_2d",
              (lambda oh, ow, kh, kw, s, d: (_at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1)),
               lambda oh, ow, kh, kw, s, d: (kh, kw), lambda oh, ow, kh, kw, s, d: (oh, ow)),
              "pprr", "conv", 2, "2-D convolution, no batch or channels.", strided=False),
    _windowed("linalg.conv_1d_nwc_wcf",
              (lambda n, ow, f, kw, c, s, d: (n, _at(ow, kw, s, d, 0), c),
               lambda n, ow, f, kw, c, s, d: (kw, c, f),
               lambda n, ow, f, kw, c, s, d: (n, ow, f)), "ppprr", "conv", 1,
              "1-D convolution, NWC input, WCF filter."),
    _windowed("linalg.conv_2d_nhwc_hwcf",
              (lambda n, oh, ow, f, kh, kw, c, s, d: (n, _at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1), c),
               lambda n, oh, ow, f, kh, kw, c, s, d: (kh, kw, c, f),
               lambda n, oh, ow, f, kh, kw, c, s, d: (n, oh, ow, f)), "pppprrr", "conv", 2,
              "2-D convolution, NHWC input, HWCF filter."),
    _windowed("linalg.conv_2d_nhwc_fhwc",
              (lambda n, oh, ow, f, kh, kw, c, s, d: (n, _at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1), c),
               lambda n, oh, ow, f, kh, kw, c, s, d: (f, kh, kw, c),
               lambda n, oh, ow, f, kh, kw, c, s, d: (n, oh, ow, f)), "pppprrr", "conv", 2,
              "2-D convolution, NHWC input, FHWC filter."),
    _windowed("linalg.conv_2d_nchw_fchw",
              (lambda n, f, oh, ow, c, kh, kw, s, d: (n, c, _at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1)),
               lambda n, f, oh, ow, c, kh, kw, s, d: (f, c, kh, kw),
               lambda n, f, oh, ow, c, kh, kw, s, d: (n, f, oh, ow)), "pppprrr", "conv", 2,
              "2-D convolution, NCHW input, FCHW filter."),
    _windowed("linalg.conv_1d_ncw_fcw",
              (lambda n, f, ow, c, kw, s, d: (n, c, _at(ow, kw, s, d, 0)),
               lambda n, f, ow, c, kw, s, d: (f, c, kw),
               lambda n, f, ow, c, kw, s, d: (n, f, ow)), "ppprr", "conv", 1,
              "1-D convolution, NCW input, FCW filter (torch's Conv1d)."),
    _windowed("linalg.conv_2d_ngchw_gfchw",
              (lambda n, g, f, oh, ow, c, kh, kw, s, d:
                   (n, g, c, _at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1)),
               lambda n, g, f, oh, ow, c, kh, kw, s, d: (g, f, c, kh, kw),
               lambda n, g, f, oh, ow, c, kh, kw, s, d: (n, g, f, oh, ow)), "ppppprrr", "conv", 2,
              "Grouped 2-D convolution, NGCHW input, GFCHW filter (torch's Conv2d with groups)."),
    _windowed("linalg.conv_2d_ngchw_fgchw",
              (lambda n, g, f, oh, ow, c, kh, kw, s, d:
                   (n, g, c, _at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1)),
               lambda n, g, f, oh, ow, c, kh, kw, s, d: (f, g, c, kh, kw),
               lambda n, g, f, oh, ow, c, kh, kw, s, d: (n, g, f, oh, ow)), "ppppprrr", "conv", 2,
              "Grouped 2-D convolution, NGCHW input, FGCHW filter."),
    _windowed("linalg.conv_3d_ncdhw_fcdhw",
              (lambda n, f, od, oh, ow, c, kd, kh, kw, s, d:
                   (n, c, _at(od, kd, s, d, 0), _at(oh, kh, s, d, 1), _at(ow, kw, s, d, 2)),
               lambda n, f, od, oh, ow, c, kd, kh, kw, s, d: (f, c, kd, kh, kw),
               lambda n, f, od, oh, ow, c, kd, kh, kw, s, d: (n, f, od, oh, ow)),
              "ppppprrrr", "conv", 3, "3-D convolution, NCDHW input, FCDHW filter (torch's Conv3d)."),
    _windowed("linalg.conv_3d_ndhwc_dhwcf",
              (lambda n, od, oh, ow, f, kd, kh, kw, c, s, d:
                   (n, _at(od, kd, s, d, 0), _at(oh, kh, s, d, 1), _at(ow, kw, s, d, 2), c),
               lambda n, od, oh, ow, f, kd, kh, kw, c, s, d: (kd, kh, kw, c, f),
               lambda n, od, oh, ow, f, kd, kh, kw, c, s, d: (n, od, oh, ow, f)),
              "ppppprrrr", "conv", 3, "3-D convolution, NDHWC input, DHWCF filter."),
    _windowed("linalg.depthwise_conv_1d_nwc_wc",
              (lambda n, ow, c, kw, s, d: (n, _at(ow, kw, s, d, 0), c),
               lambda n, ow, c, kw, s, d: (kw, c), lambda n, ow, c, kw, s, d: (n, ow, c)),
              "pppr", "conv", 1, "Depthwise 1-D convolution, NWC input, WC filter."),
    _windowed("linalg.depthwise_conv_2d_nhwc_hwc",
              (lambda n, oh, ow, c, kh, kw, s, d: (n, _at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1), c),
               lambda n, oh, ow, c, kh, kw, s, d: (kh, kw, c),
               lambda n, oh, ow, c, kh, kw, s, d: (n, oh, ow, c)), "pppprr", "conv", 2,
              "Depthwise 2-D convolution, NHWC input, HWC filter."),
    _windowed("linalg.depthwise_conv_2d_nchw_chw",
              (lambda n, c, oh, ow, kh, kw, s, d: (n, c, _at(oh, kh, s, d, 0), _at(ow, kw, s, d, 1)),
               lambda n, c, oh, ow, kh, kw, s, d: (c, kh, kw),
               lambda n, c, oh, ow, kh, kw, s, d: (n, c, oh, ow)), "pppprr", "conv", 2,
              "Depthwise 2-D convolution, NCHW input, CHW filter."),
    *(_pooling(layout, kind) for layout in ("nhwc", "nchw") for kind in ("max", "min", "sum")),
]  # fmt: skip


@irdl_op_definition
class SoftmaxOp(IRDLOperation):
    """
    `linalg.softmax dimension(d) ins(%x : T) outs(%o : T) -> T`: softmax of `x`
    along `d`. Not structured; `linalg-generalize` decomposes it as upstream does
    (max, sub + exp, sum, div; see `passes/decompose_softmax.py`).
    """

    name = "linalg.softmax"

    input = operand_def(TensorType)
    output = operand_def(TensorType)
    dimension = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    def __init__(self, input: SSAValue, output: SSAValue, dimension: int):
        super().__init__(operands=[input, output], result_types=[output.type],
                         properties={"dimension": IntegerAttr(dimension, i64)})  # fmt: skip

    def verify_(self) -> None:
        rank = len(self.input.type.get_shape())
        if self.input.type != self.output.type or self.result.type != self.output.type:
            raise VerifyException("linalg.softmax needs equal input, output and result types.")
        if not 0 <= self.dimension.value.data < rank:
            raise VerifyException(f"linalg.softmax dimension must be in [0, {rank}).")

    def print(self, printer: Printer) -> None:
        printer.print_string(f" dimension({self.dimension.value.data}) ins(")
        printer.print_ssa_value(self.input)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)
        printer.print_string(") outs(")
        printer.print_ssa_value(self.output)
        printer.print_string(" : ")
        printer.print_attribute(self.output.type)
        printer.print_string(") -> ")
        printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> SoftmaxOp:
        parser.parse_characters("dimension")
        parser.parse_punctuation("(")
        dimension = parser.parse_integer()
        parser.parse_punctuation(")")
        operands = []
        for keyword in ("ins", "outs"):
            parser.parse_characters(keyword)
            parser.parse_punctuation("(")
            unresolved = parser.parse_unresolved_operand()
            parser.parse_punctuation(":")
            operands.append(parser.resolve_operand(unresolved, parser.parse_type()))
            parser.parse_punctuation(")")
        parser.parse_punctuation("->")
        parser.parse_type()
        return cls(operands[0], operands[1], dimension)


# ---------------------------------------------------------------------------
# Upstream's short form of a one-op payload: `linalg.reduce { arith.addf } ...`,
# `linalg.map { arith.mulf } ...` (what mlir-opt prints whenever it can).
# ---------------------------------------------------------------------------


def _parse_short_payload(parser: Parser) -> tuple[str, dict[str, Attribute], Span] | None:
    """`{ dialect.op {attrs}? }`, or None when the op has no short payload."""
    if parser.parse_optional_punctuation("{") is None:
        return None
    start = parser._current_token.span
    name = parser.parse_identifier()
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation("}")
    return name, attrs, start


def _short_payload(parser: Parser, short, arg_types: list[Attribute], result: Attribute,
                   operands: list[int]) -> Region:  # fmt: skip
    """A block with `arg_types` arguments applying the named op to those at
    positions `operands` and yielding its result."""
    name, attrs, span = short
    op_type = parser.ctx.get_optional_op(name)
    if op_type is None:
        parser.raise_error(f"unknown operation '{name}' in a short-form payload", span)
    block = Block(arg_types=arg_types)
    props = op_type.get_irdl_definition().properties if hasattr(op_type, "get_irdl_definition") else {}
    op = op_type.create(operands=[block.args[i] for i in operands], result_types=[result],
                        properties={k: v for k, v in attrs.items() if k in props},
                        attributes={k: v for k, v in attrs.items() if k not in props})  # fmt: skip
    block.add_ops([op, YieldOp(op.results[0])])
    return Region(block)


def _parse_operands(parser: Parser, keyword: str, optional: bool = False) -> list[SSAValue]:
    """`keyword(%a, %b : T, U)` (none when `optional` and the keyword is absent)."""
    if optional and parser.parse_optional_characters(keyword) is None:
        return []
    if not optional:
        parser.parse_characters(keyword)
    parser.parse_punctuation("(")
    names = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_unresolved_operand)
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
    parser.parse_punctuation(")")
    if len(names) != len(types):
        parser.raise_error(f"{keyword}: {len(names)} operands but {len(types)} types")
    return [parser.resolve_operand(n, t) for n, t in zip(names, types, strict=True)]


def _element(t: Attribute) -> Attribute:
    return t.get_element_type() if isinstance(t, TensorType) else t


class ReduceOp(linalg_ops.ReduceOp):
    """xDSL's `linalg.reduce`, also read in upstream's short form:
    `linalg.reduce { arith.addf } ins(%x : T) outs(%init : U) dimensions = [1]`."""

    @classmethod
    def parse(cls, parser: Parser) -> linalg_ops.ReduceOp:
        short = _parse_short_payload(parser)
        if short is None:
            return super().parse(parser)
        ins, outs = _parse_operands(parser, "ins"), _parse_operands(parser, "outs")
        if len(ins) != 1 or len(outs) != 1:
            parser.raise_error("tilefuse reads linalg.reduce with one input and one init")
        (x,), (init,) = ins, outs
        parser.parse_keyword("dimensions")
        parser.parse_punctuation("=")
        dims = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        parser.parse_optional_attr_dict()
        et = _element(init.type)
        # upstream applies the op as `op(init, in)`
        region = _short_payload(parser, short, [_element(x.type), et], et, [1, 0])
        return cls(x, init, DenseArrayBase.from_list(i64, dims), region)


@irdl_op_definition
class MapOp(IRDLOperation):
    """
    Upstream's `linalg.map`: `linalg.map { arith.addf } ins(%a, %b : T, T)
    outs(%init : T)` or with a region whose arguments are the inputs' elements.
    An elementwise `linalg.generic` over the init's shape: it is read as one
    (identity maps, parallel loops, the init's element appended to the block).
    """

    name = "linalg.map"

    @classmethod
    def parse(cls, parser: Parser) -> linalg_ops.GenericOp:
        short = _parse_short_payload(parser)
        inputs = _parse_operands(parser, "ins", optional=True)
        outs = _parse_operands(parser, "outs")
        if len(outs) != 1:
            parser.raise_error("linalg.map has one init")
        (init,) = outs
        parser.parse_optional_attr_dict()
        et = _element(init.type)
        if short is not None:
            region = _short_payload(parser, short, [*(_element(v.type) for v in inputs), et], et,
                                    list(range(len(inputs))))  # fmt: skip
        else:
            args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
            region = parser.parse_region(args)
            region.block.insert_arg(et, len(region.block.args))
        rank = len(init.type.get_shape())
        identity = AffineMapAttr(AffineMap.identity(rank))
        return linalg_ops.GenericOp(inputs, [init], region, [identity] * (len(inputs) + 1),
                                    [IteratorTypeAttr.parallel()] * rank, [init.type])  # fmt: skip


# ours replace xDSL's matmul, reduce, fill, convolutions and pooling (xDSL's
# pooling payload is max(input, window), its convolutions assert on bf16 -> f32,
# its fill yields the value unconverted)
OURS = {"linalg.matmul", "linalg.reduce", "linalg.fill", *(op.name for op in WINDOWED)}
XDSL_OPS = [op for op in Linalg.operations if op.name not in OURS]
LINALG = Dialect(
    "linalg",
    [*XDSL_OPS, ReduceOp, MapOp, FillOp, *ELEMENTWISE, *CONTRACTIONS, *WINDOWED, SoftmaxOp],
    [*Linalg.attributes],
)

