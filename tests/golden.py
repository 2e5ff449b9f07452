"""The functions of a golden IR file (`tests/filecheck/passes/*.mlir`), by name: tests
that run a pass's own inputs through the reference evaluator before and after it."""

from __future__ import annotations

import re
from pathlib import Path

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
