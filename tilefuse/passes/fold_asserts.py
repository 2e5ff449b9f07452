"""
`fold-asserts`: a runtime check the program proves costs nothing; one it disproves
is a compile error.

torch-mlir guards gathers with `cf.assert`s ("index must be smaller than dim size")
and reciprocals with `x != 0` ("unimplemented: tensor with zero element"). A check
whose condition `analysis/value_range.py` proves true for every element (an index
from `linalg.index` or an `arange` below the dim size, a comparison of constants)
is erased with the condition arithmetic only it read; one proved false for every
element fails every run, so it is a located error carrying the check's message.
The others stay: the kernels check them as they run (`RuntimeCheckError`).

A function argument's `tilefuse.range` attribute (`torch/buffers.py`: a module
buffer checked on the host, every element finite and in `[lo, hi]`, guarded at
each call) is a fact a proof may use: BatchNorm's `sqrt(running_var + eps) != 0`
holds for a variance range with `lo > -eps`, so its check goes and the host reads
no check flag after the kernels. A disproof uses no such fact: the buffer may be
written before the first call, so the check stays instead of refusing.

```mlir
%i = linalg.index 0 : index                 // 0..7 in a loop of 8
%ok = arith.cmpi slt, %i, %c8 : index
cf.assert %ok, "index must be smaller than dim size"
// becomes nothing
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilefuse.analysis.value_range import FALSE, NO_FACTS, TRUE, value_range
from tilefuse.ir.diagnostics import CompileError


def _erase_unused(op: Operation, rewriter: PatternRewriter) -> None:
    """`op` and the arith ops feeding only it, once nothing reads them."""
    if op.dialect_name() != "arith" or any(r.uses for r in op.results):
        return
    operands = [v.owner for v in op.operands if isinstance(v.owner, Operation)]
    rewriter.erase(op)
    for owner in operands:
        _erase_unused(owner, rewriter)


def refuse_disproved(module: ModuleOp) -> None:
    """A located error for the first `cf.assert` whose condition never holds."""
    for op in module.walk():
        if isinstance(op, cf.AssertOp) and value_range(op.arg, facts=NO_FACTS) == FALSE:
            raise CompileError.at(op, f"fails on every element, so on every run: "
                                  f"\"{op.msg.data}\" (its condition is always false)")  # fmt: skip


class FoldProvenAssert(RewritePattern):
    """Erase a `cf.assert` whose condition always holds."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.AssertOp, rewriter: PatternRewriter) -> None:
        if value_range(op.arg) != TRUE:
            return
        cond = op.arg.owner
        rewriter.erase(op)
        if isinstance(cond, Operation):
            _erase_unused(cond, rewriter)


@dataclass(frozen=True)
class FoldAssertsPass(ModulePass):
    """Erase the runtime checks that always hold; refuse those that never do."""

    name = "fold-asserts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        refuse_disproved(op)
        PatternRewriteWalker(FoldProvenAssert()).rewrite_module(op)
