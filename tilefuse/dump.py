"""
The dump directory, in the spirit of `TORCH_COMPILE_DEBUG`: `TILEFUSE_DEBUG_DIR=DIR`
(or `--dump-dir DIR` of `tilefuse-opt` and `tilefuse-run`, or `compile(dump_dir=...)`).

Each compiled program gets a folder named by the program and a hash of its IR and
target, holding its input, the IR after each stage under MLIR's dump header, the
fusion report, the Triton module and, when its host function takes tensor constants,
their elements by name (`constants.npz`, bf16 as its bits). The input holds the blobs
of its `dense_resource` constants; the later stages name them only.

```
DIR/softmax-3f2a9c1e/
  00-input.mlir  01-inline-calls.mlir  ...  07-horizontal-fusion.mlir
  report.txt  kernels.py  [constants.npz]
```
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.resources import module_text
from tilefuse.report import analyze_program, format_report

DEBUG_DIR_ENV = "TILEFUSE_DEBUG_DIR"
OUTPUTS = ("report.txt", "kernels.py", "constants.npz")


def dump_ir(pass_name: str, module: ModuleOp, stream: IO[str]) -> None:
    """Print `module` under MLIR's dump header for `pass_name`."""
    print(f"// -----// IR Dump After {pass_name} //----- //", file=stream)
    Printer(stream=stream).print_op(module)
    print("\n", file=stream)


def debug_root(explicit: str | Path | None = None) -> Path | None:
    """The dump directory asked for: `explicit`, else `$TILEFUSE_DEBUG_DIR`, else None."""
    root = explicit or os.environ.get(DEBUG_DIR_ENV)
    return Path(root) if root else None


@dataclass
class ProgramDump:
    """The folder of one compiled program; `stage` is a pipeline's `after_each`."""

    path: Path
    source: ModuleOp
    """The program before the first stage (the report prices it)."""
    target: str
    stages: int = 0

    def stage(self, name: str, module: ModuleOp) -> None:
        self.stages += 1
        with open(self.path / f"{self.stages:02d}-{name}.mlir", "w") as f:
            dump_ir(name, module, f)

    def write(self, filename: str, text: str) -> None:
        (self.path / filename).write_text(text)

    def write_constants(self, constants: tuple[Any, ...]) -> None:
        """`constants.npz`: the elements of each `HostConstant`, by name."""
        if constants:
            np.savez(self.path / "constants.npz", **{c.name: c.elements for c in constants})

    def write_report(self) -> None:
        """The fusion report of the program, or the error that stopped it."""
        try:
            text = format_report(analyze_program(self.source.clone(), self.target))
        except CompileError as e:
            text = f"{e}\n"
        self.write("report.txt", text)


def open_program_dump(
    root: str | Path | None, source_name: str, module: ModuleOp, target: str
) -> ProgramDump | None:
    """A fresh folder under the dump directory for `module` (compiled from
    `source_name` for `target`), holding `00-input.mlir`; None when no dump is asked."""
    base = debug_root(root)
    if base is None:
        return None
    text = str(module)
    digest = hashlib.sha256(f"{target}\n{text}".encode()).hexdigest()[:8]
    stem = Path(source_name).stem if source_name.endswith(".mlir") else source_name
    path = base / f"{stem.strip('<>') or 'input'}-{digest}"
    path.mkdir(parents=True, exist_ok=True)
    for old in [*path.glob("[0-9][0-9]-*.mlir"), *(path / f for f in OUTPUTS)]:
        old.unlink(missing_ok=True)  # the folder shows the latest compilation only
    (path / "00-input.mlir").write_text(module_text(module) + "\n")  # (with its blobs)
    print(f"tilefuse: dumping {source_name} to {path}", file=sys.stderr)
    return ProgramDump(path, module.clone(), target)
