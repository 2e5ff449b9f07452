"""
The helper library as the printer uses it: which helpers exist, which names a
generated module defines, and the source of the helpers a module calls.

The helpers are the `@triton.jit` functions of `prelude.py`, read from the module
itself (`inspect`), so there is no second list of their names. `prelude` imports
triton, which fixes at import whether Triton's own library is interpreted
(`TRITON_INTERPRET`): it is imported when a module is first printed, not when the
printer is imported.
"""

from __future__ import annotations

import builtins
import functools
import importlib
import inspect
import keyword
from collections.abc import Iterable, Sequence
from types import ModuleType

HOST_NAMES = frozenset({"torch", "KERNELS", "CONSTANTS", "ENTRY", "CHECKS", "device",
                        "constants", "dot_dtype", "DOT_DTYPE", "DOT_PRECISION", "check_error",
                        "checks", "failed"})  # fmt: skip
"""Names the host function and the kernels' launch use besides the prelude's."""

PYTHON_RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(
    dir(builtins)
)


@functools.cache
def _prelude() -> ModuleType:
    # Imported when first printed, not with the printer: importing triton fixes
    # whether it runs interpreted (the runtime decides that first).
    return importlib.import_module("tilefuse.backend.triton.prelude")


@functools.cache
def _host_prelude() -> ModuleType:
    return importlib.import_module("tilefuse.backend.triton.host_prelude")


@functools.cache
def helpers() -> dict[str, object]:
    """The prelude's `@triton.jit` functions by name, in the module's order."""
    return {name: value for name, value in vars(_prelude()).items()
            if hasattr(value, "fn") and inspect.isfunction(value.fn)}  # fmt: skip


@functools.cache
def reserved_names() -> frozenset[str]:
    """Every name a generated module defines or reads besides its SSA values: Python's
    keywords and builtins, the prelude's imports and definitions, the host's names."""
    defined = {name for m in (_prelude(), _host_prelude()) for name in vars(m)
               if not name.startswith("__")}  # fmt: skip
    return PYTHON_RESERVED | HOST_NAMES | frozenset(defined)


def _calls(name: str) -> set[str]:
    """The prelude names helper `name` reads (its code's global names)."""
    code = helpers()[name].fn.__code__  # type: ignore[attr-defined]
    return {n for n in code.co_names if n in vars(_prelude())}


def closure(used: Iterable[str]) -> list[str]:
    """`used` helpers and the helpers they call, in the prelude's order."""
    todo, seen = [n for n in used if n in helpers()], set()
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += [n for n in _calls(name) if n in helpers()]
    return [n for n in helpers() if n in seen]


def uses_libdevice(names: Iterable[str]) -> bool:
    return any("libdevice" in _calls(n) for n in names)


@functools.cache
def helper_source(name: str) -> str:
    """The helper's source with the comment block above it."""
    return _with_comment(helpers()[name].fn)  # type: ignore[attr-defined]


TMA_HOST_HELPERS = ("_tma_scratch", "_tma", "_tma_same", "_tma_allocator")
"""The `host_prelude` functions a module whose kernels make TMA descriptors calls."""

IN_ORDER_HELPERS = ("_in_order", "_transpose_split", "_transposed", "_transpose_kernel")
"""The `host_prelude` functions a module copying arguments into other orders calls."""

IN_ORDER_KERNELS = ("_transpose_kernel",)
"""Of those, the kernels (the runtime launches them as it does the groups' kernels)."""


def host_source(names: Sequence[str]) -> str:
    """The source of the `host_prelude` functions `names`, each with its comment
    (`TMA_HOST_HELPERS` for a module whose kernels make TMA descriptors)."""
    module = _host_prelude()
    return "".join("\n\n" + _with_comment(vars(module)[n], module) for n in names)


def _with_comment(fn: object, module: ModuleType | None = None) -> str:
    """`fn`'s source (a function of `module`, default the prelude) with the comment
    block above it."""
    fn = getattr(fn, "fn", fn)  # (a `@triton.jit` function: its Python function)
    lines, start = inspect.getsourcelines(fn)  # type: ignore[arg-type]
    module_lines = inspect.getsource(module or _prelude()).splitlines(keepends=True)
    top = start - 1
    while top > 0 and module_lines[top - 1].startswith("#"):
        top -= 1
    return "".join(module_lines[top : start - 1]) + "".join(lines)


def on_gpu_source() -> str:
    """The prelude's `_ON_GPU = ...` line, which every generated module defines."""
    for line in inspect.getsource(_prelude()).splitlines():
        if line.startswith("_ON_GPU ="):
            return line + "\n"
    raise AssertionError("prelude.py defines no _ON_GPU")


def library_source(used: Iterable[str]) -> str:
    """The helpers `used` needs (transitively), each preceded by its comment."""
    return "".join("\n\n" + helper_source(n) for n in closure(used))
