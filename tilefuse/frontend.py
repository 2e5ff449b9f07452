"""
Reading MLIR text: parse with xDSL, remember where every op came from, verify.

`parse_module` is the single entry point the tools and the Python API use.
Every op gets a `FileLineColLoc`, so later diagnostics (verifier failures,
refusals by passes, backend errors) can point at the source line.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import (
    AnyFloat,
    FileLineColLoc,
    IntAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.mlir_lexer import MLIRTokenKind

from tilefuse.diagnostics import CompileError, op_location


class LocatingParser(Parser):
    """An xDSL parser that records each op's source position as its location."""

    line_offset: int = 0

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            loc = start.get_location()
            op.location = FileLineColLoc(
                StringAttr(loc.file), IntAttr(loc.line + self.line_offset), IntAttr(loc.col)
            )
        return op

    def _parse_tensor_literal_element(self):
        """Hexadecimal elements of a float `dense<...>` are bit patterns, as in
        upstream MLIR (`dense<0xFF800000> : tensor<4xf32>` is -inf); xDSL reads
        them as integers."""
        element = super()._parse_tensor_literal_element()
        if element.span.text.lstrip("-")[:2] in ("0x", "0X") and isinstance(element.value, int):
            element = _HexFloatElement(element.is_negative, element.value, element.span)
        return element

    def parse_comma_separated_list(self, delimiter, parse, context_msg=""):
        """xDSL reads the results of `linalg.generic` (and named ops) as a bare
        type list; upstream MLIR prints several as `-> (t1, t2)`. A bare list of
        attributes that opens with a parenthesis is read as that tuple."""
        if (delimiter is self.Delimiter.NONE and self._current_token.kind == MLIRTokenKind.L_PAREN
                and getattr(parse, "__func__", None) is Parser.parse_attribute):  # fmt: skip
            delimiter = self.Delimiter.PAREN
        return super().parse_comma_separated_list(delimiter, parse, context_msg)


class _HexFloatElement(Parser._TensorLiteralElement):
    """A hexadecimal tensor literal element: for a float type, its bits."""

    def to_type(self, parser, type):
        if isinstance(type, AnyFloat):
            if self.is_negative:
                parser.raise_error("A hexadecimal float literal is a bit pattern: it takes "
                                   "no sign", at_position=self.span)  # fmt: skip
            if self.value.bit_length() > type.bitwidth:
                parser.raise_error("Hexadecimal float constant out of range for type",
                                   at_position=self.span)  # fmt: skip
            raw = self.value.to_bytes(type.compile_time_size, "little")
            return next(iter(type.iter_unpack(raw)))
        return super().to_type(parser, type)


def parse_module(
    ctx: Context, text: str, filename: str = "<input>", line_offset: int = 0
) -> ModuleOp:
    """Parse and verify `text`; raise `CompileError` with a location on failure."""
    parser = LocatingParser(ctx, text, filename)
    parser.line_offset = line_offset
    try:
        module = parser.parse_module()
    except ParseError as e:
        raise CompileError(parse_error_message(e), parse_error_location(e, line_offset)) from e
    verify(module)
    return module


def parse_error_location(e: ParseError, line_offset: int = 0) -> str:
    loc = e.span.get_location()
    return f"{loc.file}:{loc.line + line_offset}:{loc.col}"


def parse_error_message(e: ParseError) -> str:
    context = e.span.print_with_context(e.msg).splitlines()
    # print_with_context puts the location first; keep the source line and caret.
    return e.msg + "\n" + "\n".join(context[1:3])


def verify(module: ModuleOp) -> None:
    """Verify op by op, so a failure names the innermost op that broke; and
    refuse dynamic shapes, which nothing after parsing handles."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as e:
            raise CompileError(f"'{op.name}' op {e}", op_location(op)) from e
        _check_static(op)


def _check_static(op) -> None:
    types = [v.type for v in (*op.operands, *op.results)]
    if isinstance(op, func.FuncOp):
        signature = [*op.function_type.inputs.data, *op.function_type.outputs.data]
        types += signature
        for t in signature:
            if not isinstance(t, TensorType):
                raise CompileError(
                    f"'func.func' op takes or returns a scalar ({t}): kernels read and "
                    f"write tensors; use a 0-d tensor (tensor<{t}>)", op_location(op))  # fmt: skip
            et = t.get_element_type()
            if not isinstance(et, AnyFloat):
                raise CompileError(
                    f"'func.func' op takes or returns {t}: kernels read and write "
                    "floating-point tensors (f16, bf16, f32, f64); integer and boolean "
                    "values can only live inside the program", op_location(op))  # fmt: skip
    if isinstance(op, tensor.ExtractSliceOp):
        _check_slice(op)
    for t in types:
        if isinstance(t, TensorType) and any(d < 0 for d in t.get_shape()):
            raise CompileError(
                f"'{op.name}' op has a dynamic shape ({t}): tilefuse compiles static "
                "shapes; give the sizes in the types (or a `// tilefuse.dims:` header "
                "and --set-dim)", op_location(op))  # fmt: skip


def _check_slice(op: tensor.ExtractSliceOp) -> None:
    """A static slice must lie inside its source, step forward, and have the
    result type of its sizes (unit sizes may be dropped); the verifier checks none."""
    if op.offsets or op.sizes or op.strides:
        return  # dynamic: refused where it is placed (fusion-groups)
    source = op.source.type.get_shape()
    offsets, sizes = op.static_offsets.get_values(), op.static_sizes.get_values()
    strides = op.static_strides.get_values()
    for d, (o, n, st, extent) in enumerate(zip(offsets, sizes, strides, source, strict=True)):
        if st < 1 or o < 0 or n < 0 or (n > 0 and o + (n - 1) * st >= extent):
            raise CompileError(
                f"'tensor.extract_slice' op reads [{o}, {o + (n - 1) * st}] step {st} of "
                f"dimension {d} (size {extent}): a slice must step forward and stay inside "
                "its source", op_location(op))  # fmt: skip
    if not _drops_unit_dims(list(sizes), list(op.result.type.get_shape())):
        raise CompileError(
            f"'tensor.extract_slice' op has sizes {list(sizes)} but result type "
            f"{op.result.type}", op_location(op))  # fmt: skip


def _drops_unit_dims(sizes: list[int], result: list[int]) -> bool:
    """Is `result` `sizes` with some of its 1s left out?"""
    j = 0
    for n in sizes:
        if j < len(result) and result[j] == n:
            j += 1
        elif n != 1:
            return False
    return j == len(result)
