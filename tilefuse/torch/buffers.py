"""
Causal-mask facts of module buffers, for the compiler to skip masked key tiles.

A buffer is an argument of the compiled program (its values are read at each call),
so a mask in a buffer (nanoGPT's `tril` `bias`, LLaMA's `finfo.min` `causal_mask`)
is not a constant the compiler can read. `mask_fact` checks one on the host along its
last two dims `(i, j)`: every element with `j - i > c` is `-inf`
(`tilefuse.neg_inf_above`), at most `-2^120` with the rest finite and `|x| <= 2^100`
(`tilefuse.huge_above`), or 0 / false (`tilefuse.zero_above`), for the smallest such
`c` that masks something; `analysis/causal.py` reads the attribute on the function
argument. Only square buffers keeping some element get a fact (`Guard.of`).
`Guard` re-checks the fact when the buffer is another tensor or was written
(`data_ptr`, `_version`): `CompiledModule` then runs a program compiled without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from tilefuse.analysis.causal import (
    HUGE,
    HUGE_ABOVE,
    MASK_ATTRS,
    NEG_INF_ABOVE,
    NORMAL,
    ZERO_ABOVE,
)


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
    if t.dim() < 2 or t.is_complex() or 0 in t.shape or t.is_meta:
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


def with_arg_attrs(text: str, name: str, attrs: dict[int, str]) -> str:
    """`text` (torch-mlir's module) with `attrs[k]` on argument `k` of `@name`."""
    if not attrs:
        return text
    head = re.search(rf"func\.func @{re.escape(name)}\((?P<args>[^\n]*)\)", text)
    if head is None:
        return text
    args = head.group("args")
    for k, attr in attrs.items():
        args = re.sub(rf"(%arg{k}: tensor<[^>]*>)(?=[,)]|$)", rf"\1 {{{attr}}}", args, count=1)
    return text[: head.start("args")] + args + text[head.end("args") :]


def _key(t: torch.Tensor) -> tuple[object, ...] | None:
    try:
        version = t._version
    except RuntimeError:  # an inference tensor has no version counter: check each call
        return None
    return (t.data_ptr(), version, tuple(t.shape), t.dtype, tuple(t.stride()), t.device)


@dataclass
class Guard:
    """A buffer's mask fact, and the tensor it was last checked on."""

    index: int
    kind: str
    c: int
    seen: tuple[object, ...] | None
    ok: bool = True

    @staticmethod
    def of(index: int, t: torch.Tensor) -> Guard | None:
        """The guard of a buffer that looks like an attention mask: square in its
        last two dims, keeping some element (an all-zero buffer, a KV cache before
        it is filled, would be checked again at every write for nothing)."""
        if t.dim() < 2 or t.shape[-1] != t.shape[-2] or (fact := mask_fact(t)) is None:
            return None
        return None if fact[1] <= -t.shape[-1] else Guard(index, *fact, _key(t))

    @property
    def attr(self) -> str:
        return f"{self.kind} = {self.c} : i64"

    def check(self, t: torch.Tensor) -> bool:
        """Whether the fact holds of `t` (re-checked when `t` changed)."""
        key = _key(t)
        if key is None or key != self.seen:
            self.ok, self.seen = holds(t, self.kind, self.c), key
        return self.ok
