"""Module-level IR helpers: which function of a module is the program."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from tilefuse.ir.diagnostics import CompileError


def entry_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function to run: `name`, or the module's last public function that no
    other function calls."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if name is not None:
        funcs = [f for f in funcs if f.sym_name.data == name]
        if not funcs:
            raise CompileError(f"the module has no function named @{name}")
    if not funcs:
        raise CompileError("the module has no func.func to run")
    # The last public function no other function calls (helpers are called).
    called = {op.callee.root_reference.data for f in funcs for op in f.walk()
              if isinstance(op, func.CallOp)}  # fmt: skip
    public = [f for f in funcs if f.sym_visibility is None or f.sym_visibility.data != "private"]
    roots = [f for f in public or funcs if f.sym_name.data not in called]
    return (roots or public or funcs)[-1]
