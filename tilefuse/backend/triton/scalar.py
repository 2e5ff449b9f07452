"""
Payload scalar expressions: one arith/math op as an elementwise block expression.

`scalar_expr(op, ref)` prints `op` with its operands as `ref` names them. The op
tables say how: `BINARY` and `UNARY` are templates (some call a helper of
`prelude.py`, the ones whose name starts with `_`), `CMP`/`UNORDERED`/`CMPI` are
the comparison predicates, `REDUCE` names the block reduction of a combiner.
Each value is computed in its type's compute type (`dtypes.compute_type`: f64 for
f64, f32 for the other floats), so truncations, widenings to f64 and integer views
are spelled out.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    AnyFloat,
    BFloat16Type,
    Float16Type,
    Float64Type,
    IndexType,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import Operation, SSAValue

from tilefuse.backend.triton.dtypes import INT_WIDTHS, TL_DTYPE, compute_type
from tilefuse.ir.arith_extra import RemFOp
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.structured import cmpf_predicate, element_type
from tilefuse.ir.tilefuse import SOFTMAX_EXP

BINARY = {arith.AddfOp: "({} + {})", arith.SubfOp: "({} - {})", arith.MulfOp: "({} * {})",
          arith.DivfOp: "({} / {})",
          arith.MaximumfOp: "tl.maximum({}, {}, propagate_nan=tl.PropagateNan.ALL)",
          arith.MinimumfOp: "tl.minimum({}, {}, propagate_nan=tl.PropagateNan.ALL)",
          arith.MaxnumfOp: "tl.maximum({}, {})", arith.MinnumfOp: "tl.minimum({}, {})",
          arith.AddiOp: "({} + {})",
          arith.SubiOp: "({} - {})", arith.MuliOp: "({} * {})", arith.AndIOp: "({} & {})",
          arith.DivSIOp: "({} // {})", arith.RemSIOp: "({} % {})",
          arith.OrIOp: "({} | {})", mathd.PowFOp: "_powf({}, {})",
          mathd.CopySignOp: "_copysign({}, {})", mathd.Atan2Op: "_atan2({}, {})",
          RemFOp: "_fmod({}, {})",
          arith.XOrIOp: "({} ^ {})",
          arith.ShLIOp: "({} << {})", arith.ShRSIOp: "({} >> {})",
          arith.MaxSIOp: "tl.maximum({}, {})", arith.MinSIOp: "tl.minimum({}, {})"}  # fmt: skip
UNARY = {arith.NegfOp: "_neg({})", mathd.ExpOp: "tl.exp({})", mathd.Exp2Op: "tl.exp2({})",
         mathd.LogOp: "tl.log({})", mathd.Log2Op: "tl.log2({})",
         mathd.Log1pOp: "_log1p({})", mathd.ExpM1Op: "_expm1({})",
         mathd.Log10Op: "(tl.log({}) * 0.4342944819032518)", mathd.SqrtOp: "tl.sqrt({})",
         mathd.RsqrtOp: "tl.rsqrt({})", mathd.AbsFOp: "tl.abs({})", mathd.AbsIOp: "tl.abs({})",
         mathd.ErfOp: "_erf({})",
         mathd.TanhOp: "_tanh({})",
         mathd.FloorOp: "tl.floor({})", mathd.CeilOp: "tl.ceil({})",
         mathd.SinOp: "tl.sin({})", mathd.CosOp: "tl.cos({})", mathd.TanOp: "_tan({})",
         mathd.AtanOp: "_atan({})", mathd.AsinOp: "_asin({})", mathd.AcosOp: "_acos({})",
         mathd.AsinhOp: "_asinh({})", mathd.AcoshOp: "_acosh({})", mathd.AtanhOp: "_atanh({})",
         mathd.SinhOp: "_sinh({})", mathd.CoshOp: "_cosh({})", mathd.TruncOp: "_trunc({})",
         mathd.RoundEvenOp: "_roundeven({})", mathd.RoundOp: "_round({})",
         mathd.CbrtOp: "_cbrt({})",
         arith.ExtFOp: "{}", arith.TruncFOp: "{}",
         }  # fmt: skip
BY_ELEMENT_TYPE = {mathd.TanhOp: {BFloat16Type: "_tanh_bf16({})", Float64Type: "_tanh_f64({})"},
                   mathd.ErfOp: {Float64Type: "tl.erf({})"}}  # fmt: skip
"""Unary ops whose helper depends on the element type, where it is not `UNARY`'s (`_erf`
is libdevice's erff without its branch, f32 and 16-bit values)."""
LOG2E = 1.4426950408889634
"""log2(e): an online softmax's exponentials are printed `exp2(x * LOG2E)` (`SOFTMAX_EXP`)."""
# arith.cmpf: Python's comparisons are false on NaN (ordered), != true (une);
# an unordered u<op> is the negation of the ordered opposite comparison.
CMP = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<=", "une": "!="}
UNORDERED = {"ugt": "<=", "uge": "<", "ult": ">=", "ule": ">"}
CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}
# maximumf/minimumf are NaN if any element is (IEEE maximum, torch.max); tl.max
# and tl.min skip NaNs, as maxnumf/minnumf do.
REDUCE = {arith.AddfOp: "tl.sum", arith.MulfOp: "_prod", arith.MaximumfOp: "_max_nan", arith.MinimumfOp: "_min_nan",
          arith.MaxSIOp: "tl.max", arith.MinSIOp: "tl.min",
          arith.MaxnumfOp: "tl.max", arith.MinnumfOp: "tl.min", arith.AddiOp: "tl.sum",
          arith.AndIOp: "_and_reduce", arith.OrIOp: "_or_reduce", arith.XOrIOp: "_xor_reduce"}  # fmt: skip
# i1 reductions (Triton's int1 is 0/1; a true i1 read signed is -1, so maxsi is AND,
# minsi OR, and addi wraps to XOR): the block reduction and the combine with the init.
I1_REDUCE = {arith.AndIOp: ("_all", "({} & {})"), arith.MaxSIOp: ("_all", "({} & {})"),
             arith.OrIOp: ("_any", "({} | {})"), arith.MinSIOp: ("_any", "({} | {})"),
             arith.XOrIOp: ("_parity", "({} ^ {})"), arith.AddiOp: ("_parity", "({} ^ {})")}  # fmt: skip


def literal(value: float) -> str:
    if math.isinf(value):
        return 'float("-inf")' if value < 0 else 'float("inf")'
    if math.isnan(value):
        return 'float("nan")'
    return repr(float(value))


def is_literal(text: str) -> bool:
    """Is `text` a Python number as `literal` prints one?"""
    if text in ('float("nan")', 'float("inf")', 'float("-inf")', "True", "False"):
        return True
    if not text or text[0].isalpha() or text[0] == "_":  # a name (`inf` is one too)
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


WIDE = "tl.full((), "
"""How an integer literal past int32 is printed (a 0-d int64 block: `KernelPrinter.constant`)."""


def wide_value(text: str) -> str:
    """The number inside a `WIDE` literal (the text itself otherwise)."""
    return text[len(WIDE):].split(",")[0] if text.startswith(WIDE) else text


def block_constant(v: SSAValue, text: str) -> str:
    """A constant operand of a prelude helper or a cast as a 0-d block (a Python
    number has no `.to`, and the helpers take blocks); also a payload argument
    bound to a scalar constant (a fill's value), printed as its literal."""
    if (not isinstance(v.owner, arith.ConstantOp) and not is_literal(text)) or text.startswith(WIDE):
        return text  # (an int64 literal past int32 is a 0-d block already: `KernelPrinter.constant`)
    t = v.type
    if isinstance(t, Float64Type):
        dtype = "tl.float64"
    elif isinstance(t, AnyFloat):
        dtype = "tl.float32"
    elif isinstance(t, IntegerType) and t.width.data in INT_WIDTHS:
        dtype = f"tl.int{t.width.data}"  # its own width: unsigned views bitcast it
    else:
        dtype = "tl.int64" if isinstance(t, IndexType) or t.width.data > 32 else "tl.int32"
    return f"tl.full((), {text}, {dtype})"


def _cmpf_expr(predicate: str, args: list[str]) -> str:
    """`arith.cmpf`: ordered predicates are false and unordered ones true where an
    operand is NaN. Built from comparisons of both operands only, so a 0-d operand
    broadcasts (the interpreter cannot combine 0-d and n-d booleans)."""
    a, b = args
    if predicate in CMP:
        return f"({a} {CMP[predicate]} {b})"
    if predicate in UNORDERED:  # not the opposite ordered comparison: true on NaN
        return f"(({a} {UNORDERED[predicate]} {b}) == 0)"
    one = f"(({a} < {b}) | ({a} > {b}))"
    ordered = f"(({a} <= {b}) | ({a} > {b}))"
    return {"one": one, "ueq": f"({one} == 0)", "ord": ordered, "uno": f"({ordered} == 0)",
            "true": f"({ordered} | ({a} != {b}))", "false": f"(({a} < {b}) & ({a} > {b}))"}[predicate]  # fmt: skip


def as_stored(v: SSAValue, text: str) -> str:
    """A 16-bit float operand of a comparison or a conversion to an integer as its type
    holds it. 16-bit values are carried in f32, unrounded between ops (`compute_type`),
    and a value stored by one kernel is rounded where another recomputes it: compared
    as carried, a topk's recomputed bf16 sigmoid equalled no stored maximum (index n
    out of range). Rounded, both sides are what eager compares (rounding is monotone:
    the rounded max is the max of the rounded values), in every kernel alike."""
    if isinstance(v.owner, arith.ConstantOp):
        return text  # (a constant of the type: exact)
    et = element_type(v.type)
    if isinstance(et, BFloat16Type):
        return f"_round_bf16({text})"
    if isinstance(et, Float16Type):
        return f"({text}).to(tl.float16).to(tl.float32)"
    return text


def _typed_expr(op: Operation, args: list[str]) -> str | None:
    """Ops whose text depends on their element types (None for the others)."""
    if isinstance(op, arith.TruncFOp):
        # A value is computed in its type's compute type (f64 for f64, else f32); an
        # explicit truncation rounds to the narrow type and goes on in its compute
        # type (an f64 -> f32 truncation is f32 from here: kept in f64, it made
        # everything it met f64, a BatchNorm epilogue's whole tile).
        narrow = TL_DTYPE[type(element_type(op.result.type))]
        carried = compute_type(op.result.type)
        x = block_constant(op.operands[0], args[0])
        rounded = f"_round_bf16({x})" if narrow == "tl.bfloat16" else f"({x}).to({narrow})"
        return rounded if narrow == carried else f"({rounded}).to({carried})"
    if isinstance(op, arith.ExtFOp):
        # exact: a widening that changes the compute type (f32 or a 16-bit type to
        # f64) converts; any other is the value itself (16-bit values are f32)
        wide = compute_type(op.result.type)
        if compute_type(op.operands[0].type) == wide:
            return args[0]
        return f"({block_constant(op.operands[0], args[0])}).to({wide})"
    et = type(element_type(op.results[0].type)) if op.results else None
    if isinstance(op, arith.DivUIOp | arith.RemUIOp | arith.CeilDivUIOp):
        a, b = (_unsigned(v, block_constant(v, x)) for v, x in zip(op.operands, args, strict=True))
        w = int_width(op.results[0])
        expr = {arith.DivUIOp: "({0} // {1})", arith.RemUIOp: "({0} % {1})",
                arith.CeilDivUIOp: "(({0} // {1}) + (({0} % {1}) != 0))"}[type(op)].format(a, b)  # fmt: skip
        return expr if w == 1 else f"({expr}).to(tl.int{w}, bitcast=True)"
    if isinstance(op, arith.FloorDivSIOp | arith.CeilDivSIOp):
        name = "_floordiv" if isinstance(op, arith.FloorDivSIOp) else "_ceildiv"
        return f"{name}({', '.join(block_constant(v, x) for v, x in zip(op.operands, args, strict=True))})"
    if isinstance(op, arith.MaxSIOp | arith.MinSIOp) and int_width(op.results[0]) == 1:
        # a true i1 is -1 read signed: max is AND, min is OR
        return ("({} & {})" if isinstance(op, arith.MaxSIOp) else "({} | {})").format(*args)
    if isinstance(op, mathd.CopySignOp) and et is Float64Type:
        return "_copysign_f64({}, {})".format(*args)
    if isinstance(op, mathd.ExpOp) and SOFTMAX_EXP in op.attributes and compute_type(op.result.type) == "tl.float32":
        # (`tl.exp2` is `ex2.approx.ftz.f32`; `tl.exp` multiplies by the same f32 log2(e)
        # and takes `ex2.approx.f32`, whose subnormal results cost a test and two products)
        return f"tl.exp2(({args[0]}) * {LOG2E})"
    if type(op) in BY_ELEMENT_TYPE:
        return BY_ELEMENT_TYPE[type(op)].get(et, UNARY[type(op)]).format(args[0])
    return None


def scalar_expr(op: Operation, ref, bind: Callable[[str], str] = lambda text: text) -> str:
    """A scalar or elementwise block expression for an arith/math op (`bind` names
    an intermediate block: the squares of an unrolled `math.fpowi`)."""
    args = [ref(v) for v in op.operands]
    if isinstance(op, mathd.FPowIOp):
        return fpowi_expr(op, args, bind)
    template = BINARY.get(type(op)) or UNARY.get(type(op)) or ""
    if template.startswith("_") or isinstance(op, CONVERSIONS):
        args = [block_constant(v, a) for v, a in zip(op.operands, args, strict=True)]
    if isinstance(op, arith.CmpfOp):
        return _cmpf_expr(cmpf_predicate(op), [as_stored(v, a) for v, a in zip(op.operands, args, strict=True)])
    if (typed := _typed_expr(op, args)) is not None:
        return typed
    if isinstance(op, arith.CmpiOp):
        return _cmpi_expr(op, args)
    if isinstance(op, arith.SelectOp):
        return f"tl.where({args[0]}, {args[1]}, {args[2]})"
    if type(op) in BINARY:
        return BINARY[type(op)].format(*args)
    if type(op) in UNARY:
        return UNARY[type(op)].format(*args)
    if isinstance(op, mathd.FmaOp):
        return f"({args[0]} * {args[1]} + {args[2]})"
    return _conversion(op, args)


FPOWI_UNROLL = 64
"""`math.fpowi` by a constant up to this magnitude is unrolled multiplication."""


def fpowi_expr(op: mathd.FPowIOp, args: list[str], bind: Callable[[str], str]) -> str:
    """`math.fpowi`: compiler-rt's `__powisf2`, exact for a negative base (a powf
    is NaN there). A constant exponent is unrolled: square the base per bit of
    |n|, multiply the result by it where the bit is set, the reciprocal for a
    negative n (x**3 = x * (x * x), x**-2 = 1 / (x * x)); any other goes to
    the `_fpowi` helper's loop over the bits."""
    x, n = args
    power = op.rhs.owner
    if not (isinstance(power, arith.ConstantOp) and isinstance(power.value, IntegerAttr)
            and abs(power.value.value.data) <= FPOWI_UNROLL):  # fmt: skip
        return f"_fpowi({block_constant(op.lhs, x)}, {block_constant(op.rhs, n)})"
    k = power.value.value.data
    m, result, square = abs(k), None, x
    while m:
        if m & 1:
            result = square if result is None else bind(f"({result} * {square})")
        m >>= 1
        if m:
            square = bind(f"({square} * {square})")
    if result is None:  # x**0 = 1, NaN and infinities included
        return f"tl.where({x} == {x}, 1.0, 1.0)"
    return f"(1.0 / {result})" if k < 0 else result


CONVERSIONS = (arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp, arith.ExtUIOp,
               arith.ExtSIOp, arith.TruncIOp, arith.IndexCastOp)


def int_width(v: SSAValue) -> int:
    t = element_type(v.type)
    return t.width.data if isinstance(t, IntegerType) else 64  # index: i64


def _signed(v: SSAValue, x: str) -> str:
    """`x` read as a signed integer: Triton's int1 is 0/1, a signed i1 is 0/-1."""
    return f"(-({block_constant(v, x)}).to(tl.int32))" if int_width(v) == 1 else x


def _unsigned(v: SSAValue, x: str) -> str:
    """`x` read as an unsigned integer of its type's width (index: 64 bits; i1
    is already 0/1). A value may sit in a wider register than its type (an i8
    from fptosi, an index from linalg.index): it is cut to its width first."""
    et = element_type(v.type)
    if not isinstance(et, IntegerType | IndexType):
        return x
    w = int_width(v)
    return x if w == 1 else f"({block_constant(v, x)}).to(tl.int{w}).to(tl.uint{w}, bitcast=True)"


def _cmpi_expr(op: arith.CmpiOp, args: list[str]) -> str:
    """`arith.cmpi`: predicates 2-5 compare signed values, 6-9 unsigned ones."""
    predicate = op.predicate.value.data
    if predicate in (0, 1):
        a, b = args
    else:
        view = _signed if predicate < 6 else _unsigned
        a, b = (view(v, x) for v, x in zip(op.operands, args, strict=True))
    return f"({a} {CMPI[predicate]} {b})"


def _conversion(op: Operation, args: list[str]) -> str:
    """Integer <-> float conversions in a payload (a constant operand as a 0-d
    block: a Python number has no `.to`)."""
    x = block_constant(op.operands[0], args[0]) if op.operands else ""
    if isinstance(op, arith.SIToFPOp | arith.UIToFPOp):
        wide = isinstance(element_type(op.result.type), Float64Type)
        view = _signed if isinstance(op, arith.SIToFPOp) else _unsigned
        return f"({view(op.operands[0], x)}).to({'tl.float64' if wide else 'tl.float32'})"
    if isinstance(op, arith.FPToSIOp | arith.FPToUIOp):
        x = as_stored(op.operands[0], x)
    if isinstance(op, arith.FPToSIOp):  # truncation toward zero, as C casts
        width = getattr(op.result.type, "width", None)
        bits = width.data if width is not None else 32
        return f"({x}).to(tl.int{64 if bits > 32 else 32})"
    out = int_width(op.results[0]) if op.results else 0
    if isinstance(op, arith.FPToUIOp):  # in range: the low bits of a wide integer
        return f"({x}).to(tl.int64).to(tl.int{out})"
    if isinstance(op, arith.ExtUIOp | arith.ExtSIOp):
        view = _unsigned if isinstance(op, arith.ExtUIOp) else _signed
        return f"({view(op.operands[0], x)}).to(tl.int{out})"
    if isinstance(op, arith.TruncIOp):  # the low bits
        return f"((({x}) & 1) != 0)" if out == 1 else f"({x}).to(tl.int{out})"
    if isinstance(op, arith.IndexCastOp):  # index is 64 bits: wider ones sign-extend,
        src = int_width(op.operands[0])    # narrower ones keep the low bits
        if out == src:
            return x
        if out == 1:
            return f"((({x}) & 1) != 0)"
        return f"({_signed(op.operands[0], x) if out > src else x}).to(tl.int{out})"
    raise CompileError.at(op, "is not supported by the Triton backend")

