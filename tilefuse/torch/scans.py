"""
`cumsum` as a masked sum, which torch-mlir lowers to linalg.

torch-mlir lowers `aten.cumsum` to `tm_tensor.scan`, an op of its own dialect and not
linalg: RoBERTa's position ids (`cumsum(input_ids != pad, dim=1) * mask + pad`) were
refused. A prefix sum along a dim of `n` elements is a reduction with a mask:

    out[..., i] = sum_j where(j <= i, x[..., j], 0)

which torch-mlir writes as a `linalg.generic` over `[..., i, j]` with the compare in
its payload (an iota, no tensor of `n * n` elements in memory once fused): one
reduction kernel. It does `n` times the additions of a sequential scan, so only scans
of at most `MAX_SCAN` elements are written so (position ids, masks, short sequences);
a longer one stays `tm_tensor.scan` and is refused, located, as before. The result is
the same sum in another order: exact for integers and booleans (promoted to int64, as
torch does), and within the rounding of a sum for floats (each output rounded once
from a sum accumulated as `sum` accumulates it).
"""

from __future__ import annotations

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


SCANS = {aten.cumsum.default: cumsum}
"""The decompositions of this module, for torch.export's and aot_autograd's tables."""
