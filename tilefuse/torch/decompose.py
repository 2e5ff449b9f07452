"""
ATen ops torch-mlir lowers outside linalg, written in ATen ops it lowers to linalg.

torch-mlir lowers `aten.cumsum` to `tm_tensor.scan`, `aten.topk` to
`tm_tensor.topk`/`sort` and `aten.index_copy` to `tm_tensor.scatter`, ops of its own
dialect: RoBERTa's position ids (`cumsum(input_ids != pad, dim=1) * mask + pad`),
Mixtral's router (`topk(softmax(gate(x)), 2)`) and Hugging Face's static KV cache
(`k_cache.index_copy(2, cache_position, k)`) were refused. `TABLE` holds their decompositions, for
torch.export's and aot_autograd's tables (and those of `x | 1` and `x ^ 1`, whose scalar
forms torch-mlir does not lower, of a pad by a negative amount, which it lowers
wrongly, and of the f32 tanh GELU, which it lowers with sqrt(2/pi) as 0.797724 =
sqrt(2/(22/7)), not 0.7978846: up to 5e-5 from eager).

**cumsum.** A prefix sum along a dim of `n` elements is a reduction with a mask:

    out[..., i] = sum_j where(j <= i, x[..., j], 0)

which torch-mlir writes as a `linalg.generic` over `[..., i, j]` with the compare in
its payload (an iota, no tensor of `n * n` elements in memory once fused): one
reduction kernel. It does `n` times the additions of a sequential scan, so only scans
of at most `MAX_SCAN` elements are written so (position ids, masks, short sequences);
a longer one stays `tm_tensor.scan` and is refused, located, as before. The result is
the same sum in another order: exact for integers and booleans (promoted to int64, as
torch does), and within the rounding of a sum for floats (each output rounded once
from a sum accumulated as `sum` accumulates it).

**topk.** `k` rounds of a max (or min) over the elements not yet taken, each taking
the first index holding it (ties to the lower index; torch promises no order among
equal values; a NaN counts as the largest, as torch's does): `2k` reductions over the dim,
no sort, for `k <= MAX_TOPK`; the results are written by selects along a new dim
of `k` (no concatenation). The values come out sorted, which `sorted=False` allows.

**scatter, scatter_add, index_add.** The same compare of the `n` positions with the
indices (at most `MAX_SCAN * 16` pairs a row): position `p` takes the first entry whose
index is `p` (`scatter`; torch leaves repeated indices undefined) or gains the sum of
them all (`scatter_add`, `index_add`: a mixture of experts' combine), a masked
reduction, no scatter. An index out of range matches no position (ATen raises).

**index_copy.** Position `p` along the dim takes the source entry `j` whose index is
`p` (the first such: torch leaves repeated indices undefined), else keeps `x`'s: a
compare of `n` positions with the `count <= MAX_SCAN` indices, a gather of the source
and a select, all elementwise or reductions over the indices; no scatter.
"""

from __future__ import annotations

import math
from typing import Any

import torch

aten = torch.ops.aten

MAX_SCAN = 4096
"""The longest scan written as a masked sum (n^2 additions a row)."""


def cumsum(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> Any:
    """`torch.cumsum(x, dim, dtype=dtype)` as a masked sum (the module docstring)."""
    if dtype is None:
        dtype = x.dtype if x.is_floating_point() or x.is_complex() else torch.int64
    if x.dim() == 0:
        return x.to(dtype).clone()
    dim = dim % x.dim()
    n = x.size(dim)
    if not isinstance(n, int) or n > MAX_SCAN or x.is_complex():
        return NotImplemented
    rows = x.to(dtype).movedim(dim, -1).unsqueeze(-2)  # [..., 1, n(j)]
    index = torch.arange(n, device=x.device)
    keep = index.unsqueeze(-1) >= index  # [n(i), n(j)]: j <= i
    zero = torch.zeros((), dtype=dtype, device=x.device)
    return torch.where(keep, rows, zero).sum(-1, dtype=dtype).movedim(-1, dim)


MAX_TOPK = 16
"""The largest `k` a topk is written for as `k` rounds of reductions."""


def topk(x: torch.Tensor, k: int, dim: int = -1, largest: bool = True,
         sorted: bool = True) -> Any:
    """`torch.topk(x, k, dim, largest, sorted)` as `k` rounds of reductions (the module
    docstring): (values, int64 indices)."""
    if x.dim() == 0 or not isinstance(k, int) or k > MAX_TOPK or x.is_complex() or x.dtype == torch.bool:
        return NotImplemented
    dim = dim % x.dim()
    n = x.size(dim)
    if not isinstance(n, int) or k > n:
        return NotImplemented
    rows = x.movedim(dim, -1)  # [..., n]
    device = x.device
    index, slot = torch.arange(n, device=device), torch.arange(k, device=device)
    nan = torch.isnan(rows) if x.is_floating_point() else torch.zeros(rows.shape, dtype=torch.bool, device=device)
    if x.is_floating_point():
        worst = float("-inf") if largest else float("inf")
    else:
        worst = torch.iinfo(x.dtype).min if largest else torch.iinfo(x.dtype).max
    missing = torch.full((), float("nan") if x.is_floating_point() else 0, dtype=x.dtype, device=device)
    untaken = torch.ones(rows.shape, dtype=torch.bool, device=device)
    values = torch.zeros((*rows.shape[:-1], k), dtype=x.dtype, device=device)
    indices = torch.zeros((*rows.shape[:-1], k), dtype=torch.int64, device=device)
    for r in range(k):
        ordinary = untaken & ~nan
        kept = torch.where(ordinary, rows, worst)
        best = kept.amax(-1, keepdim=True) if largest else kept.amin(-1, keepdim=True)
        equal = (rows == best) & ordinary
        if largest:  # a NaN is the largest: taken first
            nans = (nan & untaken).any(-1, keepdim=True)
            hit, value = torch.where(nans, nan & untaken, equal), torch.where(nans, missing, best)
        else:  # and the smallest's last
            some = ordinary.any(-1, keepdim=True)
            hit, value = torch.where(some, equal, nan & untaken), torch.where(some, best, missing)
        first = torch.where(hit, index, n).amin(-1, keepdim=True)  # [..., 1]
        untaken = untaken & (index != first)
        values = torch.where(slot == r, value, values)
        indices = torch.where(slot == r, first, indices)
    return values.movedim(-1, dim), indices.movedim(-1, dim)


def index_copy(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> Any:
    """`x.index_copy(dim, index, source)` as a select between `x` and a gather of
    `source` (the module docstring)."""
    if x.dim() == 0 or index.dim() > 1:
        return NotImplemented
    dim = dim % x.dim()
    if index.dim() == 0:  # (one position: its source row may come without the dim)
        index = index.reshape(1)
        source = source.unsqueeze(dim) if source.dim() < x.dim() else source
    # (torch requires one source row an index: said, so that a dynamic count and the
    # source's rows are one size to torch.export, not two it traces apart)
    torch._check(index.size(0) == source.size(dim))
    n, count = x.size(dim), index.size(0)
    if not isinstance(n, int) or not isinstance(count, int) or count > MAX_SCAN:
        return NotImplemented
    device = x.device
    match = torch.arange(n, device=device)[:, None] == index[None, :]  # [n, count]
    hit = match.any(-1)
    which = torch.where(match, torch.arange(count, device=device), count).amin(-1)
    which = torch.where(hit, which, 0)  # (a position no index names reads entry 0, unused)
    shape = [1] * x.dim()
    shape[dim] = n
    gathered = torch.gather(source, dim, which.view(shape).expand(*x.shape[:dim], n, *x.shape[dim + 1:]))
    return torch.where(hit.view(shape), gathered, x)


def _last(x: torch.Tensor, dim: int) -> torch.Tensor:
    return x.movedim(dim, -1)


def _scatter_match(index: torch.Tensor, n: int) -> torch.Tensor:
    """`[..., n, m]`: whether entry `j` of each row of `index` (`[..., m]`) names `p`."""
    return index.unsqueeze(-2) == torch.arange(n, device=index.device).unsqueeze(-1)


def _scattered(x: torch.Tensor, dim: int, index: torch.Tensor) -> tuple[int, int] | None:
    """(dim, n) for a scatter into `x` along `dim` by `index` of one row per row of
    `x` (torch allows a smaller index; not written here), or None where not written:
    a dynamic or long dim, complex values, a 0-d `x`."""
    if x.dim() == 0 or index.dim() != x.dim() or x.is_complex():
        return None
    dim = dim % x.dim()
    n, m = x.size(dim), index.size(dim)
    sizes = [(a, b) for k, (a, b) in enumerate(zip(x.shape, index.shape, strict=True)) if k != dim]
    if not isinstance(n, int) or not isinstance(m, int) or n * m > MAX_SCAN * 16 or any(a != b for a, b in sizes):
        return None
    return dim, n


def scatter_add(x: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> Any:
    """`x.scatter_add(dim, index, src)`: position `p` along the dim gains the sum of
    the entries of `src` whose index is `p`, a masked sum over the index's entries
    (in another order than ATen's: exact for integers, a float sum's rounding)."""
    found = _scattered(x, dim, index)
    if found is None:
        return NotImplemented
    dim, n = found
    src = src[tuple(slice(0, k) for k in index.shape)]
    match = _scatter_match(_last(index, dim), n)  # [..., n, m]
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    gained = torch.where(match, _last(src, dim).to(x.dtype).unsqueeze(-2), zero).sum(-1, dtype=x.dtype)
    return (_last(x, dim) + gained).movedim(-1, dim)


def scatter(x: torch.Tensor, dim: int, index: torch.Tensor, src: Any) -> Any:
    """`x.scatter(dim, index, src)` (a tensor or a number): position `p` takes the
    first entry whose index is `p` (torch leaves repeated indices undefined), else keeps
    `x`'s."""
    found = _scattered(x, dim, index)
    if found is None:
        return NotImplemented
    dim, n = found
    match = _scatter_match(_last(index, dim), n)  # [..., n, m]
    hit = match.any(-1)
    if isinstance(src, torch.Tensor):
        src = src[tuple(slice(0, k) for k in index.shape)]
        m = index.size(dim)
        first = torch.where(match, torch.arange(m, device=x.device), m).amin(-1).clamp(max=m - 1)
        value = torch.gather(_last(src, dim).to(x.dtype), -1, first)
    else:
        value = torch.scalar_tensor(src, dtype=x.dtype, device=x.device)
    return torch.where(hit, value, _last(x, dim)).movedim(-1, dim)


def index_add(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor,
              alpha: Any = 1) -> Any:  # fmt: skip
    """`x.index_add(dim, index, source, alpha=alpha)`: position `p` along the dim gains
    `alpha` times the sum of the source rows whose index is `p`, a masked sum over the
    indices (MoE's combine of the experts' outputs back to their tokens)."""
    if x.dim() == 0 or index.dim() > 1 or x.is_complex():
        return NotImplemented
    dim = dim % x.dim()
    index = index.reshape(-1)
    n, count = x.size(dim), index.size(0)
    if not isinstance(n, int) or not isinstance(count, int) or n * count > MAX_SCAN * 16:
        return NotImplemented
    match = torch.arange(n, device=x.device)[:, None] == index[None, :]  # [n, count]
    zero = torch.zeros((), dtype=x.dtype, device=x.device)
    gained = torch.where(match, _last(source, dim).to(x.dtype).unsqueeze(-2), zero).sum(-1, dtype=x.dtype)
    return (_last(x, dim) + gained * alpha if alpha != 1 else _last(x, dim) + gained).movedim(-1, dim)


def constant_pad_nd(x: torch.Tensor, pad: list[int], value: float = 0.0) -> Any:
    """A pad with a negative amount as the slice it crops and a pad by the positive
    amounts (torch-mlir writes it as a `tensor.pad` by the negative amount, which its
    folder drops where the amounts of a dim sum to 0: RWKV's token shift
    `F.pad(x, (0, 0, 1, -1))` came out unshifted)."""
    if all(p >= 0 for p in pad):
        return NotImplemented
    cropped = x
    for i in range(len(pad) // 2):
        dim = x.dim() - 1 - i
        before, after = -min(pad[2 * i], 0), -min(pad[2 * i + 1], 0)
        if before or after:
            cropped = cropped.narrow(dim, before, cropped.size(dim) - before - after)
    grown = [max(p, 0) for p in pad]
    return aten.constant_pad_nd(cropped, grown, value) if any(grown) else cropped.clone()


def gelu(x: torch.Tensor, approximate: str = "none") -> Any:
    """`F.gelu(x, approximate="tanh")` of f32 or f64 x as ATen computes it:
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). The erf GELU, and the tanh GELU
    of 16-bit x, stay torch-mlir's: there its constant's error (2e-4 of the tanh's
    argument) is under a twentieth of the output's ulp, and its bf16 tanh is the SFU's
    one instruction (an f32 tanh doubled GPT-2's FC1 epilogue: 2400 -> 4840 SASS
    instructions, with spills)."""
    if approximate != "tanh" or x.dtype not in (torch.float32, torch.float64):
        return NotImplemented
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))
    return 0.5 * x * (1.0 + torch.tanh(inner))


def bitwise_scalar(op: Any) -> Any:
    """`op.Scalar` as `op.Tensor` of the scalar as a 0-d tensor (`x | 1`: torch-mlir
    lowers the tensor form only)."""

    def with_tensor(x: torch.Tensor, other: Any) -> Any:
        dtype = torch.result_type(x, other)  # (`bool ^ 3` is int64)
        return op.Tensor(x, torch.scalar_tensor(other, dtype=dtype, device=x.device))

    return with_tensor


TABLE = {aten.cumsum.default: cumsum, aten.topk.default: topk,
         aten.index_copy.default: index_copy, aten.constant_pad_nd.default: constant_pad_nd,
         aten.scatter_add.default: scatter_add, aten.scatter.src: scatter, aten.scatter.value: scatter,
         aten.index_add.default: index_add, aten.gelu.default: gelu,
         aten.bitwise_or.Scalar: bitwise_scalar(aten.bitwise_or),
         aten.bitwise_xor.Scalar: bitwise_scalar(aten.bitwise_xor)}  # fmt: skip
"""The decompositions of this module, for torch.export's and aot_autograd's tables."""
