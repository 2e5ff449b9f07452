"""Snapshot what the compiler emits, and compare two snapshots.

A restructuring must not change the kernels: this records, for every sample and every
program under `tests/programs`, the Triton module `tilefuse-opt FILE --emit triton`
prints and (with `--numerics`) the outputs `tilefuse-run FILE --seed 0` computes, so
that two revisions can be compared file by file.

```sh
git worktree add /tmp/before <rev>
PYTHONPATH=/tmp/before python tools/emitted_snapshot.py snapshot /tmp/snap-before --numerics
python tools/emitted_snapshot.py snapshot /tmp/snap-after --numerics
python tools/emitted_snapshot.py compare /tmp/snap-before /tmp/snap-after
```

The tools are run as `python -m tilefuse.tools.opt|run`, so whichever `tilefuse` is
first on `PYTHONPATH` is the one snapshotted. `compare` prints a unified diff of each
module that changed (kernels only: the helper library is left out with `--kernels-only`)
and whether every output is bit-for-bit the same.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def programs() -> Iterator[Path]:
    yield from sorted((ROOT / "samples").glob("*.mlir"))
    yield from sorted((ROOT / "tests" / "programs").glob("*.mlir"))


def _tool(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    # Run outside the checkout: `python -m` puts the working directory first on the
    # path, which would shadow the PYTHONPATH tree being snapshotted.
    env = dict(os.environ, TRITON_INTERPRET="1")
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                          text=True, env=env, cwd=tempfile.gettempdir(), check=False)  # fmt: skip


def snapshot(out: Path, numerics: bool) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for path in programs():
        name = f"{path.parent.name}.{path.stem}"
        emitted = _tool("tilefuse.tools.opt", str(path), "--emit", "triton")
        text = emitted.stdout if emitted.returncode == 0 else f"ERROR\n{emitted.stderr}"
        (out / f"{name}.py").write_text(text)
        if numerics and emitted.returncode == 0:
            npz = out / f"{name}.npz"
            ran = _tool("tilefuse.tools.run", str(path), "--seed", "0", "--save-outputs", str(npz))
            if ran.returncode != 0:
                (out / f"{name}.run-error").write_text(ran.stderr)
        print(name, "ok" if emitted.returncode == 0 else "error", flush=True)


def _kernels(text: str) -> str:
    """The module from its first `@triton.jit` kernel that is not a library helper."""
    match = re.search(r"^@triton\.jit\ndef (?!_)\w+", text, re.MULTILINE)
    return text[match.start():] if match else text


def compare(before: Path, after: Path, kernels_only: bool) -> int:
    changed = 0
    for old in sorted(before.glob("*.py")):
        new = after / old.name
        a, b = old.read_text(), new.read_text() if new.exists() else "MISSING\n"
        if kernels_only:
            a, b = _kernels(a), _kernels(b)
        if a != b:
            changed += 1
            sys.stdout.writelines(difflib.unified_diff(
                a.splitlines(True), b.splitlines(True), str(old), str(new)))  # fmt: skip
    mismatched = 0
    for old in sorted(before.glob("*.npz")):
        new = after / old.name
        if not new.exists():
            print(f"{old.stem}: no outputs after")
            mismatched += 1
            continue
        with np.load(old) as x, np.load(new) as y:
            same = x.files == y.files and all(
                np.array_equal(x[k], y[k], equal_nan=x[k].dtype.kind in "fc") for k in x.files)
        if not same:
            print(f"{old.stem}: outputs differ")
            mismatched += 1
    print(f"{changed} modules changed, {mismatched} output files differ")
    return 1 if mismatched else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    snap = sub.add_parser("snapshot")
    snap.add_argument("out", type=Path)
    snap.add_argument("--numerics", action="store_true")
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    cmp.add_argument("--kernels-only", action="store_true")
    args = parser.parse_args()
    if args.cmd == "snapshot":
        snapshot(args.out, args.numerics)
        return 0
    return compare(args.before, args.after, args.kernels_only)


if __name__ == "__main__":
    sys.exit(main())
