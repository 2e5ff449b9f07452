"""
Reading MLIR text: parse with xDSL, remember where every op came from, verify.

`parse_module` is the single entry point the tools and the Python API use.
Every op gets a `FileLineColLoc`, so later diagnostics (verifier failures,
refusals by passes, backend errors) can point at the source line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from xdsl.context import Context
from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    ArrayAttr,
    DenseResourceAttr,
    FileLineColLoc,
    IndexType,
    IntAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnknownLoc,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineConstantExpr, AffineMap
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Span
from xdsl.utils.mlir_lexer import MLIRTokenKind

from tilefuse.frontend.resources import read_resources, split_resources
from tilefuse.ir.constants import STORAGE
from tilefuse.ir.diagnostics import CompileError, op_location
from tilefuse.ir.dynamic import DimRange, set_ranges, stated_ranges
from tilefuse.ir.module import entry_function
from tilefuse.ir.resources import BlobStore, register


class LocatingParser(Parser):
    """An xDSL parser that records each op's source position as its location,
    and where each value is first used before its definition."""

    line_offset: int = 0

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.first_use: dict[str, Span] = {}

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        """An empty file is an empty module (refused later: no function); xDSL
        reports values never defined at the end of the file: point at a use."""
        if self._current_token.kind == MLIRTokenKind.EOF:
            return ModuleOp([])
        try:
            return super().parse_module(allow_implicit_module)
        except NotImplementedError as e:  # xDSL's affine parser, in an alias definition
            self.raise_error(f"unsupported affine expression: {e}", self._current_token.span)
        except ParseError as e:
            undefined = [n for n in self.forward_ssa_references if n in self.first_use]
            if not (e.msg.startswith("values used but not defined") and undefined):
                raise
            self.raise_error(f"use of undefined value %{undefined[0]}", self.first_use[undefined[0]])

    def resolve_operand(self, operand: UnresolvedOperand, type):
        if operand.operand_name not in self.ssa_values:
            self.first_use.setdefault(operand.operand_name, operand.span)
        return super().resolve_operand(operand, type)

    def parse_operation(self) -> Operation:
        start = self._current_token.span
        try:
            op = super().parse_operation()
        except VerifyException as e:  # a property checked while parsing
            self.raise_error(str(e), start)
        except NotImplementedError as e:  # xDSL's affine parser: a product of dims
            self.raise_error(f"unsupported affine expression: {e}", start)
        except (AssertionError, TypeError, ValueError, KeyError, IndexError) as e:
            # xDSL failing to build an op it parsed (a named op's hidden region for
            # operand types it does not expect: bf16 inputs of an f32 convolution
            # asserted): the user's program is fine, the op is not supported here
            self.raise_error(f"this op's form is not supported: {type(e).__name__}"
                             f"{': ' + str(e) if str(e) else ''}", start)  # fmt: skip
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
    ctx: Context, text: str, filename: str = "<input>", line_offset: int = 0,
    dim_ranges: Mapping[str, DimRange] | None = None,
) -> ModuleOp:
    """Parse and verify `text`; raise `CompileError` with a location on failure.

    Dynamic dims (`?`) are refused unless `dim_ranges` declares a range for each of
    the entry function's (`ir/dynamic.py`): such a module runs in the reference
    evaluator and compiles once for every size in range."""
    _forget_resources(ctx)
    text, section, section_line = split_resources(text)
    blobs = read_resources(section, filename, section_line + line_offset) if section else {}
    parser = LocatingParser(ctx, text, filename)
    parser.line_offset = line_offset
    try:
        module = parser.parse_module()
    except ParseError as e:
        raise CompileError(parse_error_message(e), parse_error_location(e, line_offset)) from e
    for f in module.ops:  # the module is a graph region: its ops come in any order
        for region in f.regions:
            for block in region.blocks:
                _check_defined_before_use(block, set())
    _resolve_resources(module, blobs)
    _drop_casts_into_concats(module)
    _rank_zero_reshapes_as_generics(module)
    if dim_ranges is None and any(isinstance(f, func.FuncOp) for f in module.ops):
        # (a module printed with its ranges declared, read back: they stand)
        dim_ranges = stated_ranges(entry_function(module))
    verify(module, dynamic=dim_ranges is not None)
    _check_has_body(module, filename)
    if dim_ranges is not None:
        set_ranges(entry_function(module), dim_ranges)
    return module


def _drop_casts_into_concats(module: ModuleOp) -> None:
    """A `tensor.cast` of a static tensor to a less static type read only by
    concats reads as its source (torch-mlir casts `torch.roll`'s static slices to
    `tensor<1x?x4xf32>` before concatenating them into a static result: a static
    program, refused as a dynamic one)."""
    for cast in [o for o in module.walk() if isinstance(o, tensor.CastOp)]:
        source = cast.source.type
        if (isinstance(source, TensorType) and all(d >= 0 for d in source.get_shape())
                and cast.dest.uses and all(isinstance(u.operation, tensor.ConcatOp) for u in cast.dest.uses)):  # fmt: skip
            cast.dest.replace_all_uses_with(cast.source)
            cast.detach()
            cast.erase()


def _rank_zero_reshapes_as_generics(module: ModuleOp) -> None:
    """A reshape between a 0-d tensor and one of unit dims (`tensor.expand_shape %m []
    : tensor<f32> into tensor<1xf32>`, torch-mlir's 1-D softmax: valid MLIR, which
    xDSL's verifier rejects) is the generic that reads the one element: the same
    value, in a form every stage reads (a broadcast, or a read at index 0)."""
    for op in [o for o in module.walk() if isinstance(o, tensor.ExpandShapeOp | tensor.CollapseShapeOp)]:
        src, res = op.src.type, op.result.type
        if not (isinstance(src, TensorType) and isinstance(res, TensorType)):
            continue
        small, large = (src, res) if isinstance(op, tensor.ExpandShapeOp) else (res, src)
        if small.get_shape() or any(d != 1 for d in large.get_shape()):
            continue
        rank = len(res.get_shape())
        if isinstance(op, tensor.ExpandShapeOp):  # every point of [1, ..] reads the element
            maps = [AffineMap(rank, 0, ()), AffineMap.identity(rank)]
        else:  # the 0-d result reads [0, ..]
            zeros = tuple(AffineConstantExpr(0) for _ in large.get_shape())
            maps = [AffineMap(0, 0, zeros), AffineMap(0, 0, ())]
        empty = tensor.EmptyOp([], res)
        body = Region(Block(arg_types=[src.get_element_type(), res.get_element_type()]))
        body.block.add_op(linalg.YieldOp(body.block.args[0]))
        generic = linalg.GenericOp([op.src], [empty.tensor], body, [AffineMapAttr(m) for m in maps],
                                   ArrayAttr([linalg.IteratorTypeAttr.parallel()] * rank), [res])  # fmt: skip
        generic.location = empty.location = op.location
        Rewriter.replace_op(op, [empty, generic])


def decode_source(data: bytes, filename: str, line_offset: int = 0) -> str:
    """The text of an MLIR file, which must be UTF-8; else an error at the first
    bad byte (its column counted in bytes)."""
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1 + line_offset
        col = e.start - data.rfind(b"\n", 0, e.start)
        raise CompileError(
            f"byte 0x{data[e.start]:02x} is not UTF-8: MLIR source must be UTF-8 text",
            f"{filename}:{line}:{col}") from e  # fmt: skip


def parse_error_location(e: ParseError, line_offset: int = 0) -> str:
    loc = e.span.get_location()
    return f"{loc.file}:{loc.line + line_offset}:{loc.col}"


def parse_error_message(e: ParseError) -> str:
    context = e.span.print_with_context(e.msg).splitlines()
    # print_with_context puts the location first; keep the source line and caret.
    return e.msg + "\n" + "\n".join(context[1:3])


def _check_defined_before_use(block: Block, visible: set[SSAValue]) -> None:
    """The parser resolves forward references; in a function body (an SSA
    region) a value must be defined above its uses."""
    visible = visible | set(block.args)
    for op in block.ops:
        for i, v in enumerate(op.operands):
            if v not in visible:
                name = f"%{v.name_hint}" if v.name_hint else f"operand {i}"
                owner = v.owner
                where = f" by '{owner.name}' at {op_location(owner)}" if isinstance(owner, Operation) else ""
                raise CompileError.at(op, f"uses {name} before it is defined{where}")
        for region in op.regions:
            for inner in region.blocks:
                _check_defined_before_use(inner, visible)
        visible.update(op.results)


def _check_has_body(module: ModuleOp, filename: str) -> None:
    """Something to compile: a function with a body (an empty file has none)."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if not funcs:
        raise CompileError(f"{filename} has no func.func: nothing to compile")
    if not any(f.body.blocks for f in funcs):
        raise CompileError.at(funcs[0], "is a declaration, and no function of the file "
                              "has a body: nothing to compile")  # fmt: skip


def verify(module: ModuleOp, dynamic: bool = False) -> None:
    """Verify op by op, so a failure names the innermost op that broke; and
    refuse dynamic shapes unless asked to keep them (`dynamic`)."""
    for op in module.walk():
        _check_dimension_lists(op)
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as e:
            raise CompileError(f"'{op.name}' op {e}", op_location(op)) from e
        _check_static(op, dynamic)
        if dynamic:
            _check_dynamic_sizes(op)
        if isinstance(op, tensor.CollapseShapeOp | tensor.ExpandShapeOp):
            _check_reshape(op)
        if isinstance(op, tensor.PadOp):
            _check_pad(op)
        if isinstance(op, linalg.YieldOp):
            _check_yield(op)


def _check_dynamic_sizes(op: Operation) -> None:
    """An op that makes a tensor of dynamic shape says each dynamic size (the verifier
    of xDSL's `tensor.empty` and `expand_shape` does not check it)."""
    if isinstance(op, tensor.EmptyOp):
        given, t = len(op.dynamic_sizes), op.tensor.type
    elif isinstance(op, tensor.ExpandShapeOp):
        given, t = len(op.dynamic_output_shape), op.result.type
    else:
        return
    wanted = sum(n < 0 for n in t.get_shape())  # type: ignore[attr-defined]
    if given != wanted:
        raise CompileError(f"'{op.name}' op makes a {t} with {given} of its {wanted} dynamic "
                           "size(s): each ? takes a size operand", op_location(op))  # fmt: skip


def _check_static(op, dynamic: bool) -> None:
    types = [v.type for v in (*op.operands, *op.results)]
    if isinstance(op, func.FuncOp):
        signature = [*op.function_type.inputs.data, *op.function_type.outputs.data]
        types += signature
        for t in signature:
            if isinstance(t, AnyFloat | IntegerType | IndexType):
                raise CompileError(
                    f"'func.func' op takes or returns a scalar ({t}): kernels read and "
                    f"write tensors; use a 0-d tensor (tensor<{t}>)", op_location(op))  # fmt: skip
            if not isinstance(t, TensorType):
                raise CompileError(
                    f"'func.func' op takes or returns {t}: memrefs and unranked tensors are "
                    "not supported; tilefuse compiles tensors with static shapes",
                    op_location(op))  # fmt: skip
            et = t.get_element_type()
            integer = isinstance(et, IntegerType) and et.width.data in (1, 8, 16, 32, 64)
            if not isinstance(et, AnyFloat) and not integer:
                raise CompileError(
                    f"'func.func' op takes or returns {t}: kernels read and write "
                    "tensors of f16, bf16, f32, f64, i1 (bool), i8, i16, i32 or i64", op_location(op))  # fmt: skip
    if isinstance(op, tensor.ExtractSliceOp):
        _check_slice(op)
    for t in types:
        if not dynamic and isinstance(t, TensorType) and any(d < 0 for d in t.get_shape()):
            raise CompileError(
                f"'{op.name}' op has a dynamic shape ({t}): tilefuse compiles static "
                "shapes, or dynamic dims with a declared range (--dim-range x.0=1:4096, "
                "dim_ranges=); or give the sizes in the types (or a `// tilefuse.dims:` "
                "header and --set-dim)", op_location(op))  # fmt: skip
        if isinstance(t, TensorType) and 0 in t.get_shape():
            raise CompileError(
                f"'{op.name}' op has a zero-size dimension ({t}): tilefuse compiles "
                "tensors with at least one element along every dimension", op_location(op))  # fmt: skip


def _check_slice(op: tensor.ExtractSliceOp) -> None:
    """A static slice must lie inside its source, step forward, and have the
    result type of its sizes (unit sizes may be dropped); the verifier checks none."""
    if op.offsets or op.sizes or op.strides:
        return  # dynamic: refused where it is placed (fusion-groups)
    source = op.source.type.get_shape()
    if any(d < 0 for d in source):
        return  # a dynamic source: its bounds checked at run time (the evaluator)
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


def _check_dimension_lists(op: Operation) -> None:
    """Dimension lists index the input's dims (xDSL's verifiers index without checking)."""
    if isinstance(op, linalg.ReduceOp):
        rank, dims = len(op.input.type.get_shape()), list(op.dimensions.get_values())
        if len(set(dims)) != len(dims) or any(not 0 <= d < rank for d in dims):
            raise CompileError.at(op, f"reduces dimensions {dims}, but its input has rank "
                                  f"{rank}: each must be distinct, in [0, {rank})")  # fmt: skip
    if isinstance(op, linalg.TransposeOp):
        rank, perm = len(op.inputs[0].type.get_shape()), list(op.permutation.get_values())
        if sorted(perm) != list(range(rank)):
            raise CompileError.at(op, f"has permutation {perm}, which is not a permutation "
                                  f"of the {rank} dimensions of its input")  # fmt: skip


def _check_reshape(op: tensor.CollapseShapeOp | tensor.ExpandShapeOp) -> None:
    """Each reassociation group of the larger shape multiplies to one dim of the
    smaller; the groups cover the larger shape (the verifier checks contiguity only)."""
    small, large = op.result.type.get_shape(), op.src.type.get_shape()
    if isinstance(op, tensor.ExpandShapeOp):
        small, large = large, small
        output_shape = list(op.static_output_shape.get_values())
        if output_shape != list(large):
            raise CompileError.at(op, f"has output_shape {output_shape}, but its result "
                                  f"type is {op.result.type}")  # fmt: skip
    groups = [[i.value.data for i in g] for g in op.reassociation]
    flat = [d for g in groups for d in g]
    if not small and not groups and math.prod(large) == 1:
        return  # a collapse of unit dims to rank 0 (no groups), as upstream allows
    if len(groups) != len(small) or flat != list(range(len(large))):
        raise CompileError.at(op, f"has reassociation {groups}: the {len(small)}-d shape "
                              f"needs one group per dimension, covering all {len(large)} "
                              "dimensions of the other in order")  # fmt: skip
    for g, n in zip(groups, small, strict=True):
        if n < 0 or any(large[d] < 0 for d in g):
            continue  # a dynamic size: checked at run time (the evaluator)
        if (product := math.prod(large[d] for d in g)) != n:
            raise CompileError.at(op, f"reshapes {op.src.type} into {op.result.type}: "
                                  f"dimensions {g} hold {product} elements, not {n}")  # fmt: skip


def _forget_resources(ctx: Context) -> None:
    """xDSL's own builtin dialect (in a context not made by `ir/context.py`) keeps
    the keys it has seen, shared by every context, and renames a key declared
    twice (`key_0`): each parse starts it empty."""
    builtin = ctx.get_optional_dialect("builtin")
    store = builtin.get_interface(OpAsmDialectInterface) if builtin is not None else None
    if store is not None and not isinstance(store, BlobStore):
        store._blob_storage.clear()


def _resolve_resources(module: ModuleOp, blobs: dict[str, str]) -> None:
    """Each `arith.constant dense_resource<key>` refers to its blob by handle
    (`ir/resources.py`): a 4-byte alignment header, then the elements
    little-endian (one byte per i1; one element: a splat)."""
    for op in module.walk():
        if not (isinstance(op, arith.ConstantOp) and isinstance(op.value, DenseResourceAttr)):
            continue
        key, t = op.value.resource_handle.data, op.value.type
        hex_text, name = blobs.get(key), str(t.get_element_type())
        if not hex_text or name not in STORAGE:
            why = "has no bytes in the file's dialect_resources" if not hex_text else f"holds {name}"
            raise CompileError.at(op, f"dense_resource<{key}> {why}: tilefuse cannot read it")
        try:
            if not hex_text.startswith("0x"):
                raise ValueError("a blob is a hex string starting with 0x")
            raw = bytes.fromhex(hex_text[2:])
        except ValueError as e:  # odd hex digits
            raise CompileError.at(op, f"dense_resource<{key}> is not a blob of {name}: {e}") from e
        if len(raw) < 4:
            raise CompileError.at(op, f"dense_resource<{key}> has no alignment header")
        size, count = np.dtype(STORAGE[name]).itemsize, math.prod(t.get_shape())
        if (len(raw) - 4) % size:
            raise CompileError.at(op, f"dense_resource<{key}> is not a blob of {name}: "
                                  f"{len(raw) - 4} bytes are not whole elements")  # fmt: skip
        if (len(raw) - 4) // size not in (1, count):
            raise CompileError.at(op, f"dense_resource<{key}> holds {(len(raw) - 4) // size} "
                                  f"elements, {t} has {count}")  # fmt: skip
        op.properties["value"] = DenseResourceAttr.from_params(register(key, raw), t)


def _check_pad(op: tensor.PadOp) -> None:
    """Static padding is non-negative and the result is the source grown by it
    (xDSL checks neither)."""
    low, high = op.static_low.get_values(), op.static_high.get_values()
    dynamic = -(2**63)
    if any(v < 0 and v != dynamic for v in (*low, *high)):
        raise CompileError.at(op, f"pads by a negative amount: low {list(low)}, high {list(high)}")
    src, res = op.source.type.get_shape(), op.result.type.get_shape()
    if op.low or op.high or len(low) != len(src):
        return  # dynamic padding: refused later, with a location
    want = [s + lo + hi for s, lo, hi in zip(src, low, high, strict=True)]
    if any(r != w and r >= 0 and s >= 0 for r, w, s in zip(res, want, src, strict=True)) or \
            any((r < 0) != (s < 0) for r, s in zip(res, src, strict=True)):  # fmt: skip
        raise CompileError.at(op, f"pads {op.source.type} by low {list(low)}, high {list(high)}: "
                                  f"the result is {want}, not {op.result.type}")  # fmt: skip


def _check_yield(op: linalg.YieldOp) -> None:
    """A payload yields one value of each output's element type."""
    parent = op.parent_op()
    if isinstance(parent, linalg.GenericOp):
        outputs = parent.outputs
    elif isinstance(parent, linalg.ReduceOp):
        outputs = [parent.init]
    else:
        return
    expected = [v.type.get_element_type() if isinstance(v.type, TensorType) else v.type
                for v in outputs]  # fmt: skip
    got = [v.type for v in op.operands]
    if got != expected:
        raise CompileError.at(op, f"yields ({', '.join(map(str, got))}), but the outputs "
                              f"of its '{parent.name}' hold ({', '.join(map(str, expected))})")  # fmt: skip
