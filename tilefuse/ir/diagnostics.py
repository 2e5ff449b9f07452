"""
User-facing errors: one sentence, with the `file:line:col` of the offending op.

Everything a user can get wrong (malformed IR, unknown ops, type mismatches, an
op the compiler cannot handle) surfaces as a `CompileError`; the tools print it
and exit with status 1, never with a Python traceback.
"""

from __future__ import annotations

from xdsl.dialects import cf
from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


def op_location(op: Operation) -> str | None:
    """The `file:line:col` an op was parsed from, if known."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return None


class CompileError(DiagnosticException):
    """An error in the user's program, or a construct tilefuse cannot compile."""

    def __init__(self, message: str, location: str | None = None):
        super().__init__(message)
        self.message = message
        self.location = location

    @staticmethod
    def at(op: Operation, message: str) -> CompileError:
        """An error located at `op`, naming it."""
        return CompileError(f"'{op.name}' op {message}", op_location(op))

    def __str__(self) -> str:
        prefix = f"{self.location}: " if self.location else ""
        return f"{prefix}error: {self.message}"


def warn(op: Operation, message: str) -> None:
    """Report a refusal that leaves the IR correct: `file:line:col: warning: ...`."""
    import sys

    loc = op_location(op)
    prefix = f"{loc}: " if loc else ""
    print(f"{prefix}warning: '{op.name}' op {message}", file=sys.stderr)


def os_error_message(e: OSError) -> str:
    """One line for a file the tools cannot read or write (missing, a directory, ...)."""
    if e.filename is None:
        return f"error: {e.strerror or e}"
    return f"error: cannot open '{e.filename}': {e.strerror}"


class ArgumentError(TypeError):
    """A compiled program called with arguments that do not match its signature."""


class RuntimeCheckError(RuntimeError):
    """A runtime check of the program (a `cf.assert`, as torch-mlir writes for an
    index out of range) failed while it ran: `file:line:col: error: <message>`."""

    def __init__(self, message: str, location: str | None = None):
        prefix = f"{location}: " if location else ""
        super().__init__(f"{prefix}error: runtime check failed: {message}")
        self.message = message
        self.location = location


def check_failure(op: cf.AssertOp) -> RuntimeCheckError:
    """The error a failing `cf.assert` raises, with its message and location."""
    return RuntimeCheckError(op.msg.data, op_location(op))
