"""The floor plan: layers import downward only, and never from inside a function.

Each package of `tilefuse` may import the layers listed for it and nothing else, so
the oracle cannot share code with what it checks, no pass reaches into a later
stage, and the printer never runs passes (docs/ARCHITECTURE.md draws it).
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tilefuse"

ALLOWED: dict[str, set[str]] = {
    "ir": set(),
    "testing": set(),
    "oracle": {"ir"},
    "frontend": {"ir", "oracle"},
    "analysis": {"ir"},
    "passes": {"ir", "analysis"},
    "backend": {"ir", "analysis"},
    "pipeline": {"ir", "frontend", "passes"},
    "report": {"ir", "analysis", "frontend", "pipeline"},
    "dump": {"ir", "report"},
    "gpu": {"ir", "analysis", "frontend", "backend"},
    "runtime": {"ir", "analysis", "frontend", "backend", "oracle", "pipeline", "report",
                "dump"},
    "torch": {"ir", "analysis", "frontend", "backend", "oracle", "pipeline", "report",
              "dump", "runtime"},
    "tools": {"ir", "analysis", "frontend", "backend", "oracle", "pipeline", "report",
              "dump", "passes", "gpu", "runtime"},
}
"""Layer -> the layers below it that it may import (a layer always imports itself)."""

PASS_SHARED = {"tilefuse.passes", "tilefuse.passes.order", "tilefuse.passes.cleanup",
               "tilefuse.passes.sibling_loops", "tilefuse.passes.permutations"}
"""What one pass may import from `tilefuse.passes`: the registry, the op order, the
shared clean-up patterns, the sibling-loop merge (tile-and-fuse's, kept apart) and
the permutation folding (fold-transposes', also run by propagate-reshapes)."""


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path) -> list[tuple[str, bool, int]]:
    """(imported tilefuse module, imported inside a function, line) for one file."""
    tree = ast.parse(path.read_text())
    local = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
             for n in ast.walk(f)}  # fmt: skip
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "tilefuse":
                names = [f"tilefuse.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith("tilefuse."):
                out.append((name, id(node) in local, node.lineno))
    return out


def _files():
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        yield path, module.removesuffix(".__init__")


def test_every_package_has_a_layer():
    layers = {_layer(m) for _, m in _files()} - {""}
    assert layers <= set(ALLOWED), f"no layer rule for {sorted(layers - set(ALLOWED))}"


def test_layers_import_downward_only():
    bad = []
    for path, module in _files():
        layer = _layer(module)
        for name, _, line in _imports(path):
            target = _layer(name)
            if target != layer and target not in ALLOWED.get(layer, set()):
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {layer} imports {name}")
    assert not bad, "\n".join(bad)


def test_passes_do_not_import_each_other():
    bad = []
    for path, module in _files():
        if _layer(module) != "passes":
            continue
        for name, _, line in _imports(path):
            if _layer(name) == "passes" and name not in PASS_SHARED and name != module:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {name}")
    assert not bad, "\n".join(bad)


def test_no_function_local_imports_of_tilefuse():
    # A local import hides an upward edge from the import graph, or a cycle.
    bad = [f"{path.relative_to(PACKAGE.parent)}:{line}: {name}"
           for path, _ in _files() for name, local, line in _imports(path) if local]  # fmt: skip
    assert not bad, "\n".join(bad)
