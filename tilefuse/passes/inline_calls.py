"""
`inline-calls`: calls to functions of the same module are replaced by their bodies.

Programs exported from frameworks sometimes factor a block (a LayerNorm, an MLP)
into a private function called from the entry function. Kernels are planned
over one function's dataflow, so the first stage of the pipeline inlines every
`func.call` whose callee has a body in the module (repeatedly, for calls inside
callees), then drops the helpers (functions that were called, and private ones), never
the entry function. A call to a
declaration, or recursion, is a located error.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.module import entry_function

MAX_DEPTH = 32
"""Rounds of inlining before calls that keep appearing count as recursion."""


def inline_calls(module: ModuleOp) -> None:
    """Inline every call to a function defined in `module`, in place."""
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    entry = entry_function(module) if functions else None
    called = {op.callee.root_reference.data for op in module.walk() if isinstance(op, func.CallOp)}
    for _ in range(MAX_DEPTH):
        calls = [op for op in module.walk() if isinstance(op, func.CallOp)]
        if not calls:
            break
        for call in calls:
            _inline(call, functions)
    else:
        call = next(op for op in module.walk() if isinstance(op, func.CallOp))
        raise CompileError.at(call, f"is still a call after {MAX_DEPTH} rounds of inlining: "
                              "recursion cannot be compiled to kernels")  # fmt: skip
    for name, f in functions.items():
        private = f.sym_visibility is not None and f.sym_visibility.data == "private"
        if f is not entry and (private or name in called):  # helpers, now inlined
            f.detach()
            f.erase()


def _inline(call: func.CallOp, functions: dict[str, func.FuncOp]) -> None:
    name = call.callee.root_reference.data
    callee = functions.get(name)
    if callee is None or not callee.body.blocks:
        raise CompileError.at(call, f"calls @{name}, which has no body in this module")
    if len(callee.body.blocks) != 1:
        raise CompileError.at(call, f"calls @{name}, whose body has several blocks")
    body = callee.body.clone().block
    ret = body.last_op
    if not isinstance(ret, func.ReturnOp):
        raise CompileError.at(call, f"calls @{name}, whose body does not end in func.return")
    # A returned argument of the callee is the call's own argument.
    results = [call.arguments[v.index] if v in body.args else v for v in ret.operands]
    ret.detach()
    ret.erase()
    Rewriter.inline_block(body, InsertPoint.before(call), call.arguments)
    for old, new in zip(call.results, results, strict=True):
        old.replace_all_uses_with(new)
    call.detach()
    call.erase()


@dataclass(frozen=True)
class InlineCallsPass(ModulePass):
    """Inline calls to functions of the module; drop private functions left unused."""

    name = "inline-calls"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        inline_calls(op)
