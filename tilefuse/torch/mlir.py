"""
From a torch-mlir module to a compiled program, and a refusal's location in Python.

torch-mlir prints the linalg-on-tensors module; tilefuse compiles it from a file
under the cache (`$TILEFUSE_CACHE/torch/<name>-<hash>.mlir`), so a `CompileError`'s
`file:line:col` points at text the user can open. The same module printed with
debug info carries, on the same line of each op, the Python source torch-mlir took it
from (`loc("model.py":13:0)`): a refusal names that line too, and the FX nodes of it.
torch-mlir's own lowering reports why it fails only as MLIR diagnostics:
`TorchMlirDiagnostics` catches them, and `import_refusal` names their op and line.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch_mlir import ir
from torch_mlir.dialects import torch as torch_dialect
from torch_mlir.extras.fx_importer import FxImporter

from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.dynamic import DimRange
from tilefuse.runtime import CompiledProgram, cache_dir
from tilefuse.runtime import compile as compile_program
from tilefuse.torch.buffers import with_arg_attrs

_LOCATED = re.compile(r"^(?P<loc>\S+:\d+:\d+): error: (?P<reason>.*)$")
_TRAILING_LOC = re.compile(r"\bloc\((?P<body>.*)\)\s*$")
_ALIAS_DEF = re.compile(r"^(?P<name>#loc\d*) = loc\((?P<body>.*)\)\s*$", re.MULTILINE)
_FILE_LINE = re.compile(r'"(?P<file>[^"]+)":(?P<line>\d+):\d+')
_INTERNAL = (str(Path(torch.__file__).parent), str(Path(__file__).parent))
"""Frames of torch and of this package: a refusal points past them, at the user's code."""
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


@dataclass(frozen=True)
class Refusal:
    """Why a graph is not compiled: the op, where it came from, the reason."""

    reason: str
    location: str | None = None
    """The `file:line:col` in the MLIR file, if known."""
    source: str | None = None
    """The Python `file:line` the op was traced from, if known."""
    ops: tuple[str, ...] = ()
    """The torch ops of the graph at that Python line."""

    def format(self) -> str:
        where = " ".join(filter(None, [", ".join(self.ops) or None,
                                       self.source and f"at {self.source}"]))  # fmt: skip
        loc = f"{self.location}: " if self.location else ""
        return f"{loc}{self.reason}" + (f" (from {where})" if where else "")


class Refused(CompileError):
    """A `CompileError` of tilefuse on a graph from torch, with its `Refusal`."""

    def __init__(self, why: Refusal):
        super().__init__(why.format().removeprefix(f"{why.location}: "), why.location)
        self.refusal = why


def _op_end(lines: list[str], i: int) -> str:
    """The line that ends the op starting on `lines[i]`: an op with regions prints
    its location after the region's closing brace."""
    depth = 0
    for j in range(i, len(lines)):
        depth += lines[j].count("{") - lines[j].count("}")
        if depth <= 0:
            return lines[j]
    return lines[i]


def python_location(text: str, debug_text: str, line: int) -> str | None:
    """The Python `file:line` of the op on `line` (1-based) of `text`, read from the
    same module printed with debug info (`debug_text`): its lines, less the location
    aliases, are `text`'s lines with a `loc(...)` each. The innermost frame outside
    torch and this package names the user's line; None if the lines disagree."""
    plain = text.splitlines()
    lines = [s for s in debug_text.splitlines() if not _ALIAS_DEF.match(s)]
    if not 0 < line <= min(len(plain), len(lines)):
        return None
    if not lines[line - 1].strip().startswith(plain[line - 1].strip()):
        return None
    match = _TRAILING_LOC.search(_op_end(lines, line - 1))
    if match is None:
        return None
    aliases = {m["name"]: m["body"] for m in _ALIAS_DEF.finditer(debug_text)}
    body = match["body"]
    for _ in range(16):  # aliases refer to aliases (callsite, fused)
        expanded = re.sub(r"#loc\d*", lambda m: aliases.get(m[0], m[0]), body)
        if expanded == body:
            break
        body = expanded
    return _user_line(body)


def graph_ops_at(graph: Any, source: str | None, reason: str = "") -> tuple[str, ...]:
    """The torch ops of the FX nodes of `graph` traced from the Python `file:line`;
    those whose name the reason mentions (`sort` in `tm_tensor.sort`), if any."""
    if graph is None or source is None:
        return ()
    file, _, line = source.rpartition(":")
    ops: list[Any] = []
    for node in graph.nodes:
        trace = node.meta.get("stack_trace") or ""
        frames = {(m["file"], m["line"]) for m in _FRAME.finditer(trace)}
        ours = isinstance(node.target, torch._ops.OpOverload) and (file, line) in frames
        if ours and node.target not in ops:
            ops.append(node.target)
    named = [op for op in ops if re.search(rf"\b{re.escape(op._opname)}\b", reason)]
    return tuple(str(op) for op in named or ops)


def refusal(error: CompileError, text: str, debug_text: str, graph: Any = None) -> Refusal:
    """A tilefuse `CompileError` on the module printed as `text` as a `Refusal`."""
    first = str(error).splitlines()[0] if str(error) else "error: (no message)"
    match = _LOCATED.match(first)
    if match is None:
        return Refusal(first.removeprefix("error: "))
    location = match["loc"]
    source = python_location(text, debug_text, int(location.split(":")[-2]))
    return Refusal(match["reason"], location, source, graph_ops_at(graph, source, match["reason"]))


@dataclass(frozen=True)
class Diagnostic:
    """An error torch-mlir's passes emitted: its message and its location."""

    message: str
    location: str


class TorchMlirDiagnostics:
    """The MLIR context of one torch-mlir import and lowering, whose errors are
    caught here (`errors`) instead of printed on stderr (torch-mlir's lowering emits
    them to the context's handler, and its exception says only that a pass failed).

        with TorchMlirDiagnostics() as diagnostics:
            fx.stateless_fx_import(gm, ..., fx_importer=diagnostics.importer())
    """

    def __init__(self) -> None:
        self.context = ir.Context()
        torch_dialect.register_dialect(self.context)
        self.errors: list[Diagnostic] = []
        self._handler: Any = None

    def importer(self) -> FxImporter:
        return FxImporter(context=self.context)

    def _record(self, diagnostic: Any) -> bool:
        if diagnostic.severity == ir.DiagnosticSeverity.ERROR:
            self.errors.append(Diagnostic(diagnostic.message, str(diagnostic.location)))
        return True  # handled: nothing on stderr

    def __enter__(self) -> TorchMlirDiagnostics:
        self._handler = self.context.attach_diagnostic_handler(self._record)
        return self

    def __exit__(self, *_: object) -> None:
        self._handler.detach()


def _user_line(text: str) -> str | None:
    """The innermost Python `file:line` of a location outside torch and this package."""
    frames = [(m["file"], m["line"]) for m in _FILE_LINE.finditer(text)]
    users = [f for f in frames if not f[0].startswith(_INTERNAL)]
    if not frames:
        return None
    file, number = (users or frames)[0]
    return f"{file}:{number}"


_OPERATOR = re.compile(r'"torch\.operator"\([^)]*\) <\{name = "(?P<name>[\w.]+)"')
"""An op torch-mlir imported without knowing it: `torch.operator` with its name."""
_QUOTED_OP = re.compile(r"'(?P<name>(?:torch|tm_tensor)\.[\w.]+)'")


def _lowering_reason(message: str) -> tuple[str | None, str]:
    """The torch op a torch-mlir error names and the error without its op dump."""
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    reason = first.split(": %", 1)[0].split(": see current operation", 1)[0]
    named = _OPERATOR.search(message) or _QUOTED_OP.search(message)
    op = named["name"] if named else None
    if op and "torch.operator" in reason:
        reason = reason.replace("'torch.operator'", f"'{op}'")
    return op, reason


def import_refusal(error: BaseException, graph: Any = None,
                   diagnostics: list[Diagnostic] | None = None) -> Refusal:  # fmt: skip
    """An exception of torch-mlir's import or lowering as a `Refusal`: its first
    error diagnostic (caught by `TorchMlirDiagnostics`, else read from the
    exception's text), the op it names and the Python line of its location."""
    text = str(error)
    if diagnostics:
        message, location = diagnostics[0].message, diagnostics[0].location
    else:
        lines = [s.strip() for s in text.splitlines() if s.strip()]
        errors = [s for s in lines if "error:" in s]
        first = lines[0].removesuffix(" with the following diagnostics:") if lines else ""
        message = errors[0].split("error:", 1)[-1] if errors else first or type(error).__name__
        location = text
    op, reason = _lowering_reason(message)
    source = _user_line(location)
    ops = graph_ops_at(graph, source, f"{op} {reason}") or ((op,) if op else ())
    what = f"torch-mlir cannot lower {op}" if op else "torch-mlir cannot lower it"
    return Refusal(f"{what}: {reason}", None, source, ops)


def mlir_file(text: str, name: str) -> Path:
    """Write `text` under the cache as `<name>-<hash>.mlir` (once) and return the path."""
    folder = cache_dir() / "torch"
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}-{digest}.mlir"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def compile_mlir(module: Any, name: str, target: str, dump_dir: str | Path | None = None,
                 graph: Any = None, allow_tf32: bool = False,
                 arg_attrs: dict[int, str] | None = None,
                 dim_ranges: dict[str, DimRange] | None = None) -> CompiledProgram:  # fmt: skip
    """Compile a torch-mlir module (or a program's text: a dynamic one, with
    `dim_ranges`); a refusal raises `CompileError` located in the MLIR file and
    naming the Python line and torch ops it came from (a torch-mlir module's).
    `arg_attrs`: an attribute (`name = value`) for some arguments of `name`."""
    text = with_arg_attrs(str(module), name, arg_attrs or {})
    path = mlir_file(text, name)
    try:
        return compile_program(path, target=target, dump_dir=dump_dir, allow_tf32=allow_tf32,
                               dim_ranges=dim_ranges)  # fmt: skip
    except CompileError as e:
        if isinstance(module, str):
            raise Refused(refusal(e, text, "", graph)) from e
        debug_text = module.operation.get_asm(enable_debug_info=True)
        raise Refused(refusal(e, text, debug_text, graph)) from e
