"""
Facts of module buffers: causal masks, for the compiler to skip masked key tiles;
value ranges, for it to prove runtime checks (BatchNorm's `sqrt(var + eps) != 0`).

A buffer is an argument of the compiled program (its values are read at each call),
so a mask in a buffer (nanoGPT's `tril` `bias`, LLaMA's `finfo.min` `causal_mask`)
is not a constant the compiler can read. `mask_fact` checks one on the host along its
last two dims `(i, j)`: every element with `j - i > c` is `-inf`
(`tilefuse.neg_inf_above`), at most `-2^120` with the rest finite and `|x| <= 2^100`
(`tilefuse.huge_above`), or 0 / false (`tilefuse.zero_above`), for the smallest such
`c` that masks something; `analysis/causal.py` reads the attribute on the function
argument. Only square buffers keeping some element get a fact (`Guard.of`). A mask
that keeps every key at and below that diagonal (nonzero there, or exactly +0.0 for the
additive kinds: `mask_exact`) also gets `tilefuse.mask_exact`, and the kernel's key
tiles below the diagonal read no mask.

`range_fact` checks a float buffer (f16, bf16, f32, f64, not empty) on the host:
every element finite, with its min and max widened outward to powers of two (so
that a close set of values, a reloaded checkpoint, keeps the fact; never past the
dtype's largest finite value) as `tilefuse.range = [lo : f64, hi : f64]`, printed
exactly; `analysis/value_range.py` reads it. Only buffers a `cf.assert`'s proof
would read get one (`range_arguments`): a model without checks pays nothing.

`Guard` holds a buffer's facts (a mask, a range, or both) and re-checks them when
the buffer is another tensor or was written (`data_ptr`, `_version`, shape, ...:
one tuple compare a call otherwise; the reductions run only then):
`CompiledModule` then runs a program compiled without facts, whose kernels check
what the facts proved.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch

from tilefuse.analysis.causal import (
    HUGE,
    HUGE_ABOVE,
    MASK_ATTRS,
    MASK_EXACT,
    NEG_INF_ABOVE,
    NORMAL,
    ZERO_ABOVE,
)
from tilefuse.analysis.value_range import RANGE, fact_arguments
from tilefuse.frontend.parse import parse_module
from tilefuse.ir.context import make_context
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.module import entry_function

RANGED = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
"""The dtypes a buffer has a range fact in (those `value_range` bounds)."""


def _offsets(n: int, m: int) -> torch.Tensor:
    """`j - i` of each element of an (n, m) matrix."""
    return torch.arange(m)[None, :] - torch.arange(n)[:, None]


def _masked(x: torch.Tensor, kind: str) -> torch.Tensor:
    if kind == NEG_INF_ABOVE:
        return x == -torch.inf
    if kind == HUGE_ABOVE:
        return x <= HUGE
    return x == 0


def _host(t: torch.Tensor) -> torch.Tensor | None:
    # (a float other than `RANGED`'s has no mask fact: float8 rounds -inf to its largest
    # finite value and lacks signbit on the CPU; no f8 program runs here anyway)
    if t.dim() < 2 or t.is_complex() or 0 in t.shape or t.is_meta or \
            (t.is_floating_point() and t.dtype not in RANGED):  # fmt: skip
        return None
    x = t.detach().to("cpu")
    return x.reshape(-1, *x.shape[-2:])


def holds(t: torch.Tensor, kind: str, c: int) -> bool:
    """Whether `t` has the mask fact `kind` with bound `c`."""
    x = _host(t)
    if x is None or (kind != ZERO_ABOVE and not x.is_floating_point()):
        return False
    above = _offsets(*x.shape[-2:]) > c
    if not bool(_masked(x, kind)[:, above].all()):
        return False
    if kind == HUGE_ABOVE:
        kept = x[:, ~above]
        return bool((kept.isfinite() & (kept.abs() <= NORMAL)).all())
    return True


def mask_exact(t: torch.Tensor, kind: str, c: int) -> bool:
    """Whether every element of `t` with `j - i <= c` keeps its key (`MASK_EXACT`):
    nonzero (true) for `ZERO_ABOVE` (a tril of ones), exactly +0.0 for the additive
    kinds (a causal mask and nothing else: no padding in it)."""
    x = _host(t)
    if x is None:
        return False
    kept = x[:, ~(_offsets(*x.shape[-2:]) > c)]
    if kind == ZERO_ABOVE:
        return bool((kept != 0).all())
    return x.is_floating_point() and bool(((kept == 0) & ~kept.signbit()).all())  # +0.0 only


def mask_fact(t: torch.Tensor) -> tuple[str, int] | None:
    """(attribute, c) of the first of `MASK_ATTRS` `t` has with a bound that masks
    an element (`c < m - 1`), the smallest such `c`; None if none."""
    x = _host(t)
    if x is None:
        return None
    n, m = x.shape[-2:]
    off = _offsets(n, m)
    for kind in MASK_ATTRS:
        if kind != ZERO_ABOVE and not x.is_floating_point():
            continue
        live = (~_masked(x, kind)).any(0)
        c = int(off[live].max()) if bool(live.any()) else -n
        if c < m - 1 and holds(t, kind, c):
            return kind, c
    return None


def _outward(x: float, up: bool, top: float) -> float:
    """A power of two (or 0, or `+-top`) at or above `x` (`up`), or at or below it:
    away from zero on that side, towards zero on the other."""
    if x == 0:
        return 0.0
    m, e = math.frexp(abs(x))  # |x| = m * 2^e, 0.5 <= m < 1
    below = math.ldexp(1.0, e - 1)  # the power of two at or below |x|
    if (x > 0) != up or m == 0.5:
        p = below
    else:
        p = top if e > 1023 else min(math.ldexp(1.0, e), top)
    return p if x > 0 else -p


def _min_max(t: torch.Tensor) -> tuple[float, float] | None:
    """`t`'s least and greatest elements (NaN if it holds one); None for an empty
    tensor or a dtype not in `RANGED` (integers, bool, complex, float8)."""
    if t.dtype not in RANGED or t.numel() == 0 or t.is_meta:
        return None
    lo, hi = (float(v) for v in torch.aminmax(t.detach().reshape(-1)))  # NaN propagates
    return lo, hi


def range_fact(t: torch.Tensor) -> tuple[float, float] | None:
    """`(lo, hi)`: every element of `t` is finite and in `[lo, hi]`, its min and max
    rounded outward to powers of two; None where `_min_max` is, or if `t` holds NaN
    or inf."""
    bounds = _min_max(t)
    if bounds is None or not all(math.isfinite(x) for x in bounds):
        return None
    top = torch.finfo(t.dtype).max
    return _outward(bounds[0], False, top), _outward(bounds[1], True, top)


def range_holds(t: torch.Tensor, lo: float, hi: float) -> bool:
    """Whether every element of `t` is finite and in `[lo, hi]`."""
    bounds = _min_max(t)
    # (False for NaN; +-inf lies outside any finite range)
    return bounds is not None and lo <= bounds[0] and bounds[1] <= hi


def range_attr(lo: float, hi: float) -> str:
    """`tilefuse.range = [lo : f64, hi : f64]`, each printed to round-trip exactly."""
    return f"{RANGE} = [{lo:.17e} : f64, {hi:.17e} : f64]"


def range_arguments(text: str, name: str) -> set[int]:
    """The arguments of `@name` in `text` a proof of one of its `cf.assert`s would
    read a range fact of (none without checks, or if it does not parse: compiling
    it says why)."""
    if "cf.assert" not in text:
        return set()
    try:
        return fact_arguments(entry_function(parse_module(make_context(), text), name))
    except CompileError:
        return set()


def with_arg_attrs(text: str, name: str, attrs: dict[int, str]) -> str:
    """`text` (torch-mlir's module) with `attrs[k]` on argument `k` of `@name`."""
    if not attrs:
        return text
    head = re.search(rf"func\.func @{re.escape(name)}\((?P<args>[^\n]*)\)", text)
    if head is None:
        return text
    args = head.group("args")
    for k, attr in attrs.items():
        args = re.sub(rf"(%arg{k}\s*:\s*tensor<[^>]*>)(?=[,)]|$)", rf"\1 {{{attr}}}", args, count=1)
    return text[: head.start("args")] + args + text[head.end("args") :]


def _key(t: torch.Tensor) -> tuple[object, ...] | None:
    try:
        version = t._version
    except RuntimeError:  # an inference tensor has no version counter: check each call
        return None
    return (t.data_ptr(), version, tuple(t.shape), t.dtype, tuple(t.stride()), t.device)


@dataclass
class Guard:
    """A buffer's facts (a mask `(kind, c)`, a range `(lo, hi)`, or both), and the
    key of the tensor they were last checked on."""

    index: int
    seen: tuple[object, ...] | None
    mask: tuple[str, int] | None = None
    range: tuple[float, float] | None = None
    ok: bool = True
    exact: bool = False
    """The mask keeps every key at and below its diagonal (`mask_exact`)."""

    @staticmethod
    def of(index: int, t: torch.Tensor, ranged: bool = False) -> Guard | None:
        """The guard of a buffer: a mask fact if it looks like an attention mask
        (square in its last two dims, keeping some element: an all-zero buffer, a KV
        cache before it is filled, would be checked again at every write for
        nothing); a range fact if `ranged` and it has one; None without either."""
        mask = mask_fact(t) if t.dim() >= 2 and t.shape[-1] == t.shape[-2] else None
        if mask is not None and mask[1] <= -t.shape[-1]:
            mask = None
        bounds = range_fact(t) if ranged else None
        if mask is None and bounds is None:
            return None
        return Guard(index, _key(t), mask, bounds, exact=mask is not None and mask_exact(t, *mask))

    @property
    def attr(self) -> str:
        """The argument attributes of its facts (`name = value, ...`)."""
        attrs = [] if self.mask is None else [f"{self.mask[0]} = {self.mask[1]} : i64"]
        attrs += [MASK_EXACT] if self.exact else []
        return ", ".join(attrs + ([] if self.range is None else [range_attr(*self.range)]))

    def holds(self, t: torch.Tensor) -> bool:
        """Whether all its facts hold of `t` (checked now)."""
        return (self.mask is None or holds(t, *self.mask)) and \
            (not self.exact or mask_exact(t, *self.mask)) and \
            (self.range is None or range_holds(t, *self.range))  # fmt: skip

    def check(self, t: torch.Tensor) -> bool:
        """Whether its facts hold of `t` (re-checked when `t` changed)."""
        key = _key(t)
        if key is None or key != self.seen:
            self.ok, self.seen = self.holds(t), key
        return self.ok
