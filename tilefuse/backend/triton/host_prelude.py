"""
Host functions of generated modules: plain Python the host function calls, copied
into the modules that need them (`library.host_source`), as `prelude.py`'s
`@triton.jit` helpers are into the kernels'. Written once here, so they can be
linted, imported and tested.
"""

import triton
import triton.language as tl

from tilefuse.backend.triton.prelude import _ON_GPU


# Host side of TMA (kernels making descriptors): the device memory Triton asks its
# allocator for at such a launch.
def _tma_scratch(size, alignment, stream):
    import torch

    return torch.empty(size, dtype=torch.int8, device="cuda" if _ON_GPU else "cpu")


def _tma(t):
    """`t` as a TMA descriptor reads it: 16-byte aligned, its last dim contiguous,
    its other strides nonzero multiples of 16 bytes (else a row-major copy: an
    expanded operand's 0 stride is not known to be valid for TMA on the GPU)."""
    import torch

    size = t.element_size()
    strides = t.stride()[:-1]
    if t.data_ptr() % 16 or t.stride(-1) != 1 or any(s == 0 or s * size % 16 for s in strides):
        return t.clone(memory_format=torch.contiguous_format)
    return t


def _tma_same(*ts):
    """Tensors one stacked kernel reads through TMA descriptors with the first one's
    strides: as they are when each is TMA-ready and their strides are equal, else
    row-major copies of all."""
    import torch

    if all(_tma(t) is t for t in ts) and len({t.stride() for t in ts}) == 1:
        return ts
    return tuple(t.clone(memory_format=torch.contiguous_format) for t in ts)


# A function argument a kernel loads faster in another dim order (`choose-layouts`'
# `input_layouts`): copied into it (outermost first) unless it is stored so already.
# On a GPU a row-major argument of at least 8 MB whose new order moves a block of
# trailing dims in front of the dims before it (NCHW -> NHWC: order (0, 2, 3, 1)) is
# a batched 2-D transpose, copied by `_transpose_kernel`: torch's copy of a permuted
# view runs at ~0.6 TB/s on an H100, the kernel at ~1.8, and its launch costs the
# host ~14 us more (tools/experiments/input_copy.py); any other copy is torch's.
def _in_order(t, order):
    p = t.permute(order)
    if p.is_contiguous():
        return t
    inverse = sorted(range(len(order)), key=order.__getitem__)
    split = _transpose_split(t, order) if t.numel() * t.element_size() >= 8 << 20 else None
    if _ON_GPU and split is not None:
        return _transposed(t, *split).reshape(p.shape).permute(inverse)
    return p.contiguous().permute(inverse)


def _transpose_split(t, order):
    """(a, b) when `t` is row-major and `order` is `t`'s dims before a, then those
    from b, then those from a to b (a batched transpose of [.., R, C] to [.., C, R]
    with R the dims a..b-1 and C the dims b..); else None."""
    n = len(order)
    if not t.is_contiguous() or t.numel() >= 2**31:
        return None
    a = next((i for i in range(n) if order[i] != i), n)
    if a == n:
        return None
    b = order[a]
    expected = (*range(a), *range(b, n), *range(a, b))
    return (a, b) if tuple(order) == expected else None


def _transposed(t, a, b):
    """Row-major `t` as [B, R, C] (dims before a, a..b-1, from b), copied into a
    row-major [B, C, R]."""
    import math

    import torch

    shape = t.shape
    batch, rows, cols = math.prod(shape[:a]), math.prod(shape[a:b]), math.prod(shape[b:])
    grid = (-(-rows // 64), -(-cols // 64), batch)  # (triton.cdiv: ~2 us a call)
    if max(grid[1:]) > 65535:  # (CUDA's limit on grid dims y and z)
        return t.reshape(batch, rows, cols).transpose(1, 2).contiguous()
    out = torch.empty((batch, cols, rows), dtype=t.dtype, device=t.device)
    _transpose_kernel[grid](t, out, rows, cols, BR=64, BC=64)
    return out


@triton.jit
def _transpose_kernel(src, dst, rows, cols, BR: tl.constexpr, BC: tl.constexpr):
    # One [BR, BC] tile of batch program_id(2): loaded along the columns, stored
    # along the rows (Triton exchanges the layouts through shared memory).
    r = tl.program_id(0) * BR + tl.arange(0, BR)
    c = tl.program_id(1) * BC + tl.arange(0, BC)
    batch = tl.program_id(2).to(tl.int64) * rows * cols
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    x = tl.load(src + batch + r[:, None] * cols + c[None, :], mask=mask)
    tl.store(dst + batch + c[None, :] * rows + r[:, None], x, mask=mask)


# The allocator is per context (thread): give Triton ours where none is set.
def _tma_allocator():
    allocation = triton.runtime._allocation
    if isinstance(allocation._allocator.get(), allocation.NullAllocator):
        triton.set_allocator(_tma_scratch)
