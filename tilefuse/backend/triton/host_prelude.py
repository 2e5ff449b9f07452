"""
Host functions of generated modules: plain Python the host function calls, copied
into the modules that need them (`library.host_source`), as `prelude.py`'s
`@triton.jit` helpers are into the kernels'. Written once here, so they can be
linted, imported and tested.
"""

import triton

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
def _in_order(t, order):
    p = t.permute(order)
    if p.is_contiguous():
        return t
    inverse = sorted(range(len(order)), key=order.__getitem__)
    return p.contiguous().permute(inverse)


# The allocator is per context (thread): give Triton ours where none is set.
def _tma_allocator():
    allocation = triton.runtime._allocation
    if isinstance(allocation._allocator.get(), allocation.NullAllocator):
        triton.set_allocator(_tma_scratch)
