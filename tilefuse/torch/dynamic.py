"""
Dynamic dims from torch: the sizes `torch._dynamo.mark_dynamic` marks on the inputs.

```python
torch._dynamo.mark_dynamic(x, 1, min=1, max=2048)   # tokens
fast = tilefuse.torch.compile(model, x)             # one program for T = 1..2048
```

Each marked dim is a symbol; dims torch finds equal (the tokens of `x` and of its
padding mask) are one symbol. `torch.export` checks that the module computes one
program over the whole range (`Dim(min, max)`: an error if its code specialises a
size), and then the module is exported at a few static sizes of the symbols
(`instance_points`) and lowered by torch-mlir at each: its static lowering is plain
linalg, its dynamic one is shape arithmetic, asserts and gathers. `generalise`
(frontend/generalise.py) makes one dynamic program of them, each varying size a
polynomial of the symbols, checked on three instances more than the fit needs
(`instance_points`). A marked
dim without `max` ranges up to `DEFAULT_MAX`; without `min`, from 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sympy
import torch
from xdsl.dialects.builtin import ModuleOp

from tilefuse.frontend.generalise import Instance, generalise
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.dynamic import DimRange

DEFAULT_MAX = 65536
"""The largest size of a marked dim without `max` (what its tiles are planned for)."""

_VALUES = (37, 53, 41, 29, 47, 59, 43, 31, 61, 23, 67, 19)
"""Sizes the instances are traced at: primes, unlike the model's own sizes."""

LARGEST_CHECK = 256
"""The fit's last checks are at twice a prime near the range's end, at most this,
one symbol at a time (an instance costs its tracing's memory: the backend traces
with tensors of the instance's sizes, and batch and tokens both at 1018 ran a GPT-2
block's out of this machine's 23 GB)."""


def _twice_a_prime(lo: int, hi: int, taken: Sequence[int],
                   ok: Callable[[int], bool] = lambda v: True) -> int | None:  # fmt: skip
    """The largest `2p` (p prime) in `lo:hi`, not in `taken`: even where the primes
    traced at are odd (`T % 2`, `T % 4`: 37, 53 and 41 are all 1 mod 4), and still
    unlike a model's own sizes (a size equal to a width, 64, changed the program
    torch-mlir wrote). Only sizes `ok` allows (dynamo's guards: where they ask for a
    multiple of 4, the largest even size they allow)."""
    evens = [v for v in range(hi - hi % 2, max(lo, 4) - 1, -2) if v not in taken and ok(v)]
    return next((v for v in evens if sympy.isprime(v // 2)), evens[0] if evens else None)


def _holds(guards: Sequence[sympy.Basic], point: dict[str, int]) -> bool:
    """Whether every guard that `point` decides holds there (a guard on symbols it
    does not give, or one sympy cannot decide, is not asked)."""
    for g in guards:
        names = {str(x) for x in g.free_symbols}
        if not names or not names <= point.keys():
            continue
        value = g.subs({x: point[str(x)] for x in g.free_symbols})
        if value is sympy.false:
            return False
    return True


def _pool(s: SizeSymbol, k: int, guards: Sequence[sympy.Basic]) -> list[int]:
    """Sizes to trace symbol `s` (the `k`-th) at, in order: primes, then their
    multiples (dynamo's guards may ask for a multiple of 4: 4p), then the range's
    first sizes (or for one of a few: 8 to 11 for a ViT's image), each in range and
    allowed by the guards on `s` alone."""
    primes = [*_VALUES[3 * k:], *_VALUES[:3 * k]]
    pool = [m * p for m in range(1, 17) for p in primes]
    pool += [*range(max(s.lo, 2), min(s.hi, s.lo + 512) + 1), s.lo]
    return list(dict.fromkeys(v for v in pool if s.lo <= v <= s.hi and _holds(guards, {s.name: v})))


@dataclass(frozen=True)
class SizeSymbol:
    """One dynamic size: its range and the (input, dim) pairs that have it."""

    name: str
    lo: int
    hi: int
    dims: tuple[tuple[int, int], ...]


def marked_dims(tensors: Sequence[torch.Tensor]) -> dict[tuple[int, int], tuple[int, int]]:
    """(input, dim) -> (lo, hi) of each dim `mark_dynamic` marked on `tensors`."""
    marked = {}
    for i, x in enumerate(tensors):
        ranges = {r.dim: r for r in getattr(x, "_dynamo_dynamic_range", ())}
        for d in sorted(getattr(x, "_dynamo_dynamic_indices", ())):
            r = ranges.get(d)
            lo = r.min if r is not None and r.min is not None else 1
            hi = r.max if r is not None and r.max is not None else DEFAULT_MAX
            if not 1 <= lo <= x.shape[d] <= hi:
                raise CompileError(f"input {i} dim {d} is marked dynamic in {lo}:{hi} but "
                                   f"has size {x.shape[d]}")  # fmt: skip
            marked[(i, d)] = (lo, hi)
    return marked


def _dynamic_shapes(n_state: int, tensors: Sequence[torch.Tensor],
                    dims: Callable[[int, int], Any]) -> tuple[Any, ...]:  # fmt: skip
    specs: list[Any] = [None] * n_state
    for i, x in enumerate(tensors):
        spec = {d: dim for d in range(x.dim()) if (dim := dims(i, d)) is not None}
        specs.append(spec or None)
    return tuple(specs)


def _export(wrapper: torch.nn.Module, args: tuple[Any, ...], shapes: tuple[Any, ...]) -> Any:
    # (the wrapper's `forward(*flat)`: one varargs argument, its shapes one tuple)
    return torch.export.export(wrapper, args, dynamic_shapes=(shapes,), strict=False)


def symbols(wrapper: torch.nn.Module, args: tuple[Any, ...], n_state: int,
            marked: dict[tuple[int, int], tuple[int, int]]) -> list[SizeSymbol]:  # fmt: skip
    """The symbols of the marked dims, each checked by `torch.export` over its range
    (torch's errors propagate). Dims torch unifies are one symbol, with the
    intersection of their ranges."""
    tensors = args[n_state:]
    classes: list[list[tuple[int, int]]] = [[k] for k in marked]
    if len(marked) > 1:  # which marked dims are one size: ask torch
        program = _export(wrapper, args, _dynamic_shapes(
            n_state, tensors, lambda i, d: torch.export.Dim.DYNAMIC if (i, d) in marked else None))
        placeholders = [n for n in program.graph.nodes if n.op == "placeholder"]
        user = placeholders[len(placeholders) - len(tensors):]
        by_expr: dict[str, list[tuple[int, int]]] = {}
        for i, d in marked:
            size = user[i].meta["val"].shape[d]
            if isinstance(size, int):
                raise CompileError(f"input {i} dim {d} is marked dynamic, but the module "
                                   f"needs it to be {size}")  # fmt: skip
            by_expr.setdefault(str(size.node.expr), []).append((i, d))
        classes = list(by_expr.values())
    found = []
    for k, dims in enumerate(classes):
        lo = max(marked[d][0] for d in dims)
        hi = min(marked[d][1] for d in dims)
        if lo > hi:
            raise CompileError(f"dims {dims} are one size with empty range {lo}:{hi}")
        found.append(SizeSymbol(f"s{k}", lo, hi, tuple(dims)))
    _check_ranges(wrapper, args, n_state, found)
    return found


def _check_ranges(wrapper: torch.nn.Module, args: tuple[Any, ...], n_state: int,
                  found: Sequence[SizeSymbol]) -> None:  # fmt: skip
    """`torch.export` over the symbols' ranges: torch's own error if the module's code
    specialises a size in range."""
    named = {d: torch.export.Dim(s.name, min=s.lo, max=s.hi) for s in found for d in s.dims}
    _export(wrapper, args, _dynamic_shapes(n_state, args[n_state:], lambda i, d: named.get((i, d))))


def unified(wrapper: torch.nn.Module, args: tuple[Any, ...], n_state: int,
            found: Sequence[SizeSymbol]) -> list[SizeSymbol] | None:  # fmt: skip
    """`found` with the symbols of equal size in `args` made one (their ranges
    intersected), checked by `torch.export` as in `symbols`; None if none are equal.
    For a module torch traces as one op whose meta function does not relate its
    operands' sizes (SDPA's keys and values of a KV cache, marked apart: independent
    symbols) but that needs them equal: its static exports at independent sizes
    fail, at equal sizes they agree. The host checks the merged dims agree per call."""
    tensors = args[n_state:]
    by_size: dict[int, list[SizeSymbol]] = {}
    for sym in found:
        i, d = sym.dims[0]
        by_size.setdefault(int(tensors[i].shape[d]), []).append(sym)
    if all(len(group) == 1 for group in by_size.values()):
        return None
    merged = [SizeSymbol(f"s{k}", max(s.lo for s in group), min(s.hi for s in group),
                         tuple(d for s in group for d in s.dims))
              for k, group in enumerate(by_size.values())]  # fmt: skip
    if any(s.lo > s.hi for s in merged):
        return None
    _check_ranges(wrapper, args, n_state, merged)
    return merged


def instance_points(found: Sequence[SizeSymbol],
                    guards: Sequence[sympy.Basic] = ()) -> list[dict[str, int]]:  # fmt: skip
    """The sizes to trace at: the corners of two sizes per symbol, then a third
    size of each (the fit's check), then checks at twice a prime: all symbols at
    once, then each near its range's end (`_twice_a_prime`, `LARGEST_CHECK`). Three
    distinct sizes in each range, each point allowed by `guards` (dynamo's on the
    graph's sizes: `shape_guards`; a point a guard refuses is a graph dynamo would
    never run, and torch-mlir may not lower it: a view into 4 heads of a width of 29)."""
    triples = []
    for k, s in enumerate(found):
        values = _pool(s, k, guards)[:3]
        if len(values) < 3:
            raise CompileError(f"{s.name} ranges over {s.lo}:{s.hi}, fewer than three sizes: "
                               "compile each size (static)")  # fmt: skip
        triples.append(values)
    points = []
    for corner in range(2 ** len(found)):
        points.append({s.name: triples[k][(corner >> k) & 1] for k, s in enumerate(found)})
    points.append({s.name: triples[k][2] for k, s in enumerate(found)})
    # Checks beyond the fit's, at even sizes (a value derived from a size, constant at
    # the primes but not over the range, must not fit): all at twice the first prime,
    # then each symbol in turn at twice a prime near its range's end (at most
    # `LARGEST_CHECK`), the others at their first size.
    def ok(s: SizeSymbol) -> Callable[[int], bool]:
        return lambda v: _holds(guards, {s.name: v})

    near = {s.name: _twice_a_prime(s.lo, min(2 * triples[k][0], s.hi), triples[k], ok(s))
            for k, s in enumerate(found)}  # fmt: skip
    checks = [near] + [{**{t.name: triples[m][0] for m, t in enumerate(found)},
                        s.name: _twice_a_prime(s.lo, min(s.hi, LARGEST_CHECK), triples[k], ok(s))}
                       for k, s in enumerate(found)]  # fmt: skip
    for point in checks:
        if all(v is not None for v in point.values()) and point not in points and _holds(guards, point):  # pyright: ignore
            points.append(point)  # pyright: ignore
    if not all(_holds(guards, p) for p in points):
        raise CompileError("no sizes of the dynamic dims satisfy dynamo's guards at every "
                           "corner the fit needs: compile each size (static)")  # fmt: skip
    return points


def generalised_program(found: Sequence[SizeSymbol], instance: Callable[[dict[str, int]], ModuleOp],
                        first_argument: int = 0,
                        guards: Sequence[sympy.Basic] = ()) -> tuple[ModuleOp, dict[str, DimRange]]:  # fmt: skip
    """One dynamic program from the instances `instance` makes at `instance_points`
    (allowed by `guards`), and the ranges of its dynamic dims: arguments
    `first_argument + i` for the symbols' `(i, dim)` (the export's tensors come after
    the module's state)."""
    instances = [Instance(point, instance(point)) for point in instance_points(found, guards)]
    sources = {s.name: (first_argument + s.dims[0][0], s.dims[0][1]) for s in found}
    divisors = symbol_divisors(found, guards)
    ranges = {}
    for s in found:
        d = divisors.get(s.name, 1)
        for i, dim in s.dims:  # (a multiple of d: the range's ends too)
            ranges[f"arg{first_argument + i}.{dim}"] = DimRange(-(-s.lo // d) * d, s.hi // d * d, d)
    return generalise(instances, sources, divisors), ranges


def symbol_divisors(found: Sequence[SizeSymbol], guards: Sequence[sympy.Basic]) -> dict[str, int]:
    """What each symbol is a multiple of, by dynamo's guards (`Eq(Mod(s, 4), 0)`: a
    view into 4 heads of a dynamic width): the least common multiple of those."""
    names = {s.name for s in found}
    divisors: dict[str, int] = {}
    for g in guards:
        if not isinstance(g, sympy.Eq) or g.rhs != 0 or type(g.lhs).__name__ not in ("Mod", "PythonMod"):
            continue
        x, d = g.lhs.args
        if isinstance(x, sympy.Symbol) and str(x) in names and isinstance(d, sympy.Integer) and d > 0:
            divisors[str(x)] = math.lcm(divisors.get(str(x), 1), int(d))
    return divisors


def resized(tensors: Sequence[torch.Tensor], found: Sequence[SizeSymbol],
            point: dict[str, int]) -> list[torch.Tensor]:  # fmt: skip
    """Zero stand-ins of `tensors` with each symbol's dims at its size in `point`
    (export never reads the values)."""
    shapes = [list(x.shape) for x in tensors]
    for s in found:
        for i, d in s.dims:
            shapes[i][d] = point[s.name]
    return [torch.zeros(shape, dtype=x.dtype) for x, shape in zip(tensors, shapes, strict=True)]


def _symbol_of(size: Any) -> str | None:
    """The symbol a dynamo size is (`s27`), or None (an int, an expression)."""
    if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
        return str(size.node.expr)
    return None


def graph_symbols(inputs: Sequence[Any]) -> tuple[list[SizeSymbol], list[int]]:
    """The symbols of dynamo's symbolic sizes among a graph's `inputs` (fake tensors
    and `SymInt`s), each with its range from the shape environment (an unbounded one
    up to `DEFAULT_MAX`) and the dims carrying it, counted over the tensor inputs;
    and the indices of those tensor inputs (the compiled program's arguments: the
    `SymInt`s are sizes it reads from the tensors)."""
    tensors = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    dims: dict[str, list[tuple[int, int]]] = {}
    ranges: dict[str, tuple[int, int]] = {}
    for k, i in enumerate(tensors):
        for d, size in enumerate(inputs[i].shape):
            name = _symbol_of(size)
            if name is None:
                continue
            dims.setdefault(name, []).append((k, d))
            bounds = size.node.shape_env.var_to_range[size.node.expr]
            lo, hi = (int(b) if isinstance(b, sympy.Integer) else None  # (torch's int_oo is not)
                      for b in (bounds.lower, bounds.upper))  # fmt: skip
            ranges[name] = (max(1, lo or 1), min(hi or DEFAULT_MAX, DEFAULT_MAX))
    for i, x in enumerate(inputs):
        free = x.node.expr.free_symbols if isinstance(x, torch.SymInt) else set()
        free |= {s for n in (x.shape if isinstance(x, torch.Tensor) else ())
                 if isinstance(n, torch.SymInt) for s in n.node.expr.free_symbols}  # fmt: skip
        for s in free:
            if str(s) not in dims:
                raise CompileError(f"input {i} has a size of {s}, which no input tensor has "
                                   "as a dim")  # fmt: skip
    found = [SizeSymbol(n, *ranges[n], tuple(ds)) for n, ds in dims.items()]
    return found, tensors


def shape_guards(inputs: Sequence[Any]) -> list[sympy.Basic]:
    """The guards dynamo's shape environment holds on a graph's sizes (`Mod(s, 4) == 0`
    of a view into 4 heads), its replacements applied (a size it pinned, a number)."""
    for x in inputs:
        sizes = [x] if isinstance(x, torch.SymInt) else list(x.shape) if isinstance(x, torch.Tensor) else []
        for n in sizes:
            if isinstance(n, torch.SymInt):
                env = n.node.shape_env
                return [env.replace(g.expr) for g in env.guards]
    return []


def concrete(inputs: Sequence[Any], point: dict[str, int]) -> list[Any]:
    """`inputs` at the sizes of `point`: zeros for tensors, ints for `SymInt`s."""

    def value(n: Any) -> int:
        if not isinstance(n, torch.SymInt):
            return int(n)
        expr = n.node.expr
        return int(expr.subs({s: point[str(s)] for s in expr.free_symbols}))

    out: list[Any] = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            out.append(torch.zeros([value(n) for n in x.shape], dtype=x.dtype))
        else:
            out.append(value(x) if isinstance(x, torch.SymInt) else x)
    return out
