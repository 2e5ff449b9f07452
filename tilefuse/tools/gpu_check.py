"""
Compile a program's kernels for the target GPU (no GPU needed) and report what
ptxas made of them next to the cost model's prediction (`gpu/check.py`):

```
python -m tilefuse.tools.gpu_check samples/softmax.mlir --set-dim M=4096 \
    --set-dim N=8192 --set-dtype bf16
```

Exit status 1 when a kernel exceeds shared memory or registers, or on an error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tilefuse.analysis.cost.target import DEFAULT_TARGET, TargetError, get_target
from tilefuse.frontend.program import load_program
from tilefuse.frontend.specialize import SpecializeError
from tilefuse.gpu.aot import CubinCompileError
from tilefuse.gpu.check import check_kernels, format_reports, target_arch
from tilefuse.ir.diagnostics import CompileError
from tilefuse.pipeline import run_pipeline
from tilefuse.tools.opt import parse_dim_options


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tilefuse.tools.gpu_check",
        description="Compile a program's kernels for the target GPU (no GPU "
        "needed) and report registers, spills and shared memory.",
    )
    p.add_argument("file", help="an MLIR file")
    p.add_argument("--set-dim", action="append", default=[], metavar="NAME=SIZE")
    p.add_argument("--set-dtype", metavar="TYPE")
    p.add_argument("--target", default=DEFAULT_TARGET, help="GPU to compile for")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table; exit status 1 if a kernel exceeds shared memory or registers."""
    args = build_parser().parse_args(argv)
    try:
        target = get_target(args.target)
        module = load_program(
            Path(args.file), parse_dim_options(args.set_dim), args.set_dtype
        )
        run_pipeline(module, args.target)
        reports = check_kernels(module, None, target)
    except (CompileError, SpecializeError, TargetError, CubinCompileError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except FileNotFoundError as e:
        print(f"error: cannot open '{e.filename}': {e.strerror}", file=sys.stderr)
        return 1
    print(
        format_reports(
            reports, f"{args.file} on {target.name} (sm_{target_arch(target)})"
        )
    )
    bad = [r for r in reports if not r.fits or r.registers > r.max_registers]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
