"""The functions of a golden IR file (`tests/filecheck/passes/*.mlir`), by name, and
their reference results before and after a pass: tests that run a pass's own inputs
through the evaluator."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tilefuse.frontend.parse import parse_module
from tilefuse.ir.context import make_context
from tilefuse.oracle.reference import evaluate

PASSES = Path(__file__).parent / "filecheck" / "passes"


def golden_functions(name: str) -> dict[str, str]:
    """Each `// -----` chunk of `PASSES/name` (RUN lines dropped), by its function's name."""
    out = {}
    for chunk in (PASSES / name).read_text().split("// -----"):
        text = "\n".join(line for line in chunk.splitlines() if not line.startswith("// RUN"))
        match = re.search(r"^func\.func @(\w+)\(", text, re.MULTILINE)
        assert match is not None, chunk[:200]
        out[match[1]] = text
    return out


def results_around(text: str, module_pass) -> tuple[list, list]:
    """The reference evaluator's results of a golden function (`text`) on seeded normal
    arguments, before and after `module_pass` runs on it."""
    module = parse_module(make_context(), text)
    f = next(iter(module.ops))
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(t.get_shape()).astype(np.float32) for t in f.function_type.inputs]
    before = evaluate(module, args)
    module_pass.apply(make_context(), module)
    return before, evaluate(module, args)
