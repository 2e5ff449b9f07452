"""
Dynamic dims: the `?` sizes of a program's arguments, their names and declared ranges.

A dim of an argument is named `<argument>.<dim>` (`x.0`: the rows of `%x`;
`arg0.1` for torch-mlir's `%arg0`), and each is declared a range of sizes,
which the function carries as `tilefuse.dim_ranges = {"x.0" = [1, 65536]}`:

```python
ranges = {"x.0": DimRange(1, 65536)}
set_ranges(f, ranges)            # on the func.func
check_sizes(f, [(70, 333)])      # a call's argument shapes against types and ranges
```

Sizes inside the program follow from the arguments' (`tensor.dim`, the loops of
linalg ops); the reference evaluator takes them from its arrays
(`oracle/reference.py`), and the pipeline keeps them dynamic to the kernels, which
take them at launch (docs/ARCHITECTURE.md, "Dynamic dims"); prices and tiles are
made at `planning_size`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    TensorType,
)
from xdsl.ir import Operation

from tilefuse.ir.diagnostics import CompileError, op_location

RANGES_ATTR = "tilefuse.dim_ranges"
PLANNING_SIZE_ATTR = "tilefuse.planning_size"
"""On an op (a kernel variant's group): the planning size of the dynamic dims inside it."""


@dataclass(frozen=True)
class DimRange:
    """The sizes a dynamic dim may take, `lo` to `hi` inclusive, each a multiple of
    `divisor` (1: any size)."""

    lo: int
    hi: int
    divisor: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.lo <= self.hi:
            raise ValueError(f"a dim range needs 1 <= LO <= HI, got {self.lo}:{self.hi}")
        if self.divisor < 1 or self.lo % self.divisor or self.hi % self.divisor:
            raise ValueError(f"a dim range's LO and HI are multiples of its divisor, got {self}")

    def __str__(self) -> str:
        return f"{self.lo}:{self.hi}" + (f":{self.divisor}" if self.divisor > 1 else "")

    def holds(self, size: int) -> bool:
        return self.lo <= size <= self.hi and size % self.divisor == 0


def parse_range(text: str) -> tuple[str, DimRange]:
    """`"x.0=1:65536"` -> ("x.0", DimRange(1, 65536)); `"x.0=16:4096:16"`: sizes that
    are multiples of 16 too. ValueError when malformed."""
    name, eq, span = text.partition("=")
    parts = span.split(":")
    if not eq or not name or len(parts) not in (2, 3) or not all(p.isdigit() for p in parts):
        raise ValueError(f"a dim range is NAME=LO:HI or NAME=LO:HI:DIVISOR (x.0=1:4096, "
                         f"x.0=16:4096:16), got {text!r}")  # fmt: skip
    return name, DimRange(*map(int, parts))


def argument_name(f: func.FuncOp, i: int) -> str:
    hint = f.body.block.args[i].name_hint if f.body.blocks else None
    return hint or f"arg{i}"


def dynamic_dims(f: func.FuncOp) -> list[tuple[str, int, int]]:
    """(name, argument, dim) of each dynamic dim of `f`'s arguments, in order."""
    found = []
    for i, t in enumerate(f.function_type.inputs.data):
        if isinstance(t, TensorType):
            for d, size in enumerate(t.get_shape()):
                if size == DYNAMIC_INDEX:
                    found.append((f"{argument_name(f, i)}.{d}", i, d))
    return found


def set_ranges(f: func.FuncOp, ranges: Mapping[str, DimRange]) -> None:
    """Declare the ranges of `f`'s dynamic dims: one for each, no other names
    (a located error names what is missing or unknown)."""
    if not all(isinstance(r, DimRange) for r in ranges.values()):
        raise TypeError("dim_ranges maps names to DimRange(lo, hi)")
    names = [name for name, _, _ in dynamic_dims(f)]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise CompileError(f"two dynamic dims of @{f.sym_name.data} are named {twice} (an "
                           f"argument is named like another's position): rename one",
                           op_location(f))  # fmt: skip
    unknown = sorted(set(ranges) - set(names))
    if unknown:
        known = ", ".join(names) or "none"
        raise CompileError(f"no dynamic dim {', '.join(unknown)} in @{f.sym_name.data} "
                           f"(its dynamic dims: {known})", op_location(f))  # fmt: skip
    missing = [n for n in names if n not in ranges]
    if missing:
        raise CompileError(
            f"'func.func' op has dynamic dims {', '.join(missing)} without a range: declare "
            f"each (dim_ranges={{{missing[0]!r}: DimRange(LO, HI)}})", op_location(f))  # fmt: skip
    f.attributes[RANGES_ATTR] = DictionaryAttr({n: _range_attr(ranges[n]) for n in names})


def _range_attr(r: DimRange) -> ArrayAttr:
    """`[lo, hi]`, or `[lo, hi, divisor]` with a divisor."""
    return ArrayAttr([IntAttr(n) for n in (r.lo, r.hi, *((r.divisor,) if r.divisor > 1 else ()))])


def is_dynamic(module: ModuleOp) -> bool:
    """Does a function of `module` declare dynamic dims (`tilefuse.dim_ranges`)?"""
    return any(isinstance(op, func.FuncOp) and RANGES_ATTR in op.attributes
               for op in module.ops)  # fmt: skip


def is_dynamic_size(size: int) -> bool:
    return size == DYNAMIC_INDEX


def planning_size(op: Operation) -> int:
    """The size the cost model and the tile planner price a dynamic dim at, in
    the function holding `op`: the largest declared range end (an upper bound for
    one dim; a product of dynamic dims is priced at it too), or the size an
    enclosing op says (`PLANNING_SIZE_ATTR`: a kernel variant for smaller sizes). Only prices: no
    decision a kernel's correctness rests on reads it (a dynamic loop is never
    tiled whole, its masks stay on)."""
    f: Operation | None = op
    while f is not None and not isinstance(f, func.FuncOp):
        if isinstance(size := f.attributes.get(PLANNING_SIZE_ATTR), IntAttr):
            return size.data  # (a variant planned for the smaller sizes of the range)
        f = f.parent_op()
    return max((r.hi for r in _ranges_around(op).values()), default=1)


def smallest_size(op: Operation) -> int:
    """The smallest size a dynamic dim of the function holding `op` declares (1 if none)."""
    return min((r.lo for r in _ranges_around(op).values()), default=1)


def _ranges_around(op: Operation) -> dict[str, DimRange]:
    f: Operation | None = op
    while f is not None and not isinstance(f, func.FuncOp):
        f = f.parent_op()
    return declared_ranges(f) if isinstance(f, func.FuncOp) else {}


def planned(sizes: Sequence[int], op: Operation) -> tuple[int, ...]:
    """`sizes` with each dynamic one at its planning size."""
    if not any(is_dynamic_size(n) for n in sizes):
        return tuple(sizes)
    p = planning_size(op)
    return tuple(p if is_dynamic_size(n) else n for n in sizes)


def declared_ranges(f: func.FuncOp) -> dict[str, DimRange]:
    """`f`'s declared ranges (`stated_ranges`), empty without any."""
    return stated_ranges(f) or {}


def stated_ranges(f: func.FuncOp) -> dict[str, DimRange] | None:
    """The ranges `f` states in its `tilefuse.dim_ranges` attribute (a module printed
    after the ranges were declared, read back), None without one; a CompileError at
    `f` where an entry is not `[lo, hi]` or `[lo, hi, divisor]` of a valid range."""
    attr = f.attributes.get(RANGES_ATTR)
    if attr is None:
        return None
    if not isinstance(attr, DictionaryAttr):
        raise CompileError(f"{RANGES_ATTR} maps dim names to [lo, hi] ranges, not {attr}", op_location(f))
    out = {}
    for name, value in attr.data.items():
        # (`[1, 64]` written by hand parses as i64 integers; printed, as `#builtin.int`s)
        numbers = [v.data if isinstance(v, IntAttr) else v.value.data if isinstance(v, IntegerAttr) else None
                   for v in (value.data if isinstance(value, ArrayAttr) else ())]  # fmt: skip
        try:
            if not numbers or any(n is None for n in numbers):
                raise ValueError("it is not [lo, hi] or [lo, hi, divisor]")
            out[name] = DimRange(*numbers)  # pyright: ignore
        except (TypeError, ValueError) as e:
            raise CompileError(f"{RANGES_ATTR}: the range of {name} ({value}): {e}", op_location(f)) from None
    return out


def check_sizes(f: func.FuncOp, shapes: Sequence[tuple[int, ...]]) -> None:
    """Argument shapes against `f`'s types (a `?` takes any size) and the declared
    ranges of its dynamic dims; a CompileError says which argument breaks which."""
    size_checker(f)(shapes)


def size_checker(f: func.FuncOp) -> Callable[[Sequence[tuple[int, ...]]], None]:
    """`check_sizes` for `f`, its types and ranges read once (a program checks every
    call: reading them from the IR each time cost a GPT-2 block's call 0.3 ms)."""
    ranges = declared_ranges(f)
    expected = [tuple(t.get_shape()) if isinstance(t, TensorType) else ()
                for t in f.function_type.inputs.data]  # fmt: skip
    dynamic = [(i, d, f"{argument_name(f, i)}.{d}") for i, shape in enumerate(expected)
               for d, e in enumerate(shape) if e == DYNAMIC_INDEX]  # fmt: skip
    bounded = [(i, d, name, ranges[name]) for i, d, name in dynamic if name in ranges]

    def check(shapes: Sequence[tuple[int, ...]]) -> None:
        for i, (shape, want) in enumerate(zip(shapes, expected, strict=True)):
            if len(shape) != len(want) or any(
                e != DYNAMIC_INDEX and e != n for n, e in zip(shape, want, strict=True)
            ):
                shown = tuple("?" if e == DYNAMIC_INDEX else e for e in want)
                raise CompileError(f"argument {i} has shape {tuple(shape)}, expected {shown}")
        for i, d, name, r in bounded:
            n = shapes[i][d]
            if not r.holds(n):
                what = (f"not a multiple of {r.divisor} (its declared range {r})"
                        if r.lo <= n <= r.hi else f"outside its declared range {r}")  # fmt: skip
                raise CompileError(f"argument {i} has {name} = {n}, {what}")

    return check
