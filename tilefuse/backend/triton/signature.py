"""
What a printed kernel takes, as data: the parameters the printer declared and the
launch configuration the host passes.

```python
KernelSignature(name="fused_kernel_0", params=(
    Param("x_ptr", POINTER, "f32", shape=(70, 333), strided=True),
    Param("x_s0", STRIDE, "index", shape=(70, 333), dim=0), ...,
    Param("DOT_DTYPE", CONSTEXPR, "tl.dtype", value="bfloat16"),
    Param("DOT_PRECISION", CONSTEXPR, "str", value="tf32")),
    num_warps=4, num_stages=3, programs=35)
```

Tools that compile or launch a kernel themselves (`gpu/check.py`) read this
rather than the generated source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum


class ParamKind(Enum):
    POINTER = "pointer"
    STRIDE = "stride"
    SIZE = "size"
    CONSTEXPR = "constexpr"


POINTER, STRIDE, SIZE, CONSTEXPR = (ParamKind.POINTER, ParamKind.STRIDE, ParamKind.SIZE,
                                    ParamKind.CONSTEXPR)  # fmt: skip

CHECKS_PARAM = "checks_ptr"
"""The int32 flag a kernel with runtime checks (`cf.assert`) records failures in:
one per program call, zeroed before its kernels run, read once after."""


@dataclass(frozen=True)
class Param:
    """One kernel parameter.

    A pointer's `dtype` is the element type of its tensor (`"bf16"`, `"i1"`), of
    shape `shape`; it is `strided` when its strides follow it (all but the
    later members' tensors of a stacked bundle, which reuse the first's). A
    stride's `dtype` is `"index"` and it steps dim `dim` of a tensor of shape
    `shape` (in elements; the host passes `tensor.stride()`). A size is the run-time
    extent of dynamic dim `dim` of tensor `tensor` (the host passes
    `tensor.shape[dim]`; Triton does not specialise it). A constexpr's `value` is
    what the host launches the kernel with: a `tl` dtype's name (`"bfloat16"`)
    or a string (`"tf32"`).
    """

    name: str
    kind: ParamKind
    dtype: str
    shape: tuple[int, ...] = ()
    dim: int | None = None
    value: object = None
    tensor: int | None = None
    """For a pointer, stride or size: which of the kernel's tensors (its group's
    inputs, then its results) it is of (a size may come without its pointer: an
    input the kernel reads only the sizes of)."""
    strided: bool = False
    descriptor: bool = False
    """A pointer the kernel reads through a TMA descriptor: the host passes its
    tensor 16-byte aligned with the last dim contiguous (a copy if not)."""


@dataclass(frozen=True)
class KernelSignature:
    """A kernel's name, parameters in order, and launch configuration."""

    name: str
    params: tuple[Param, ...]
    num_warps: int
    num_stages: int
    programs: int
    """Programs launched (a persistent kernel's: fewer than its tiles); with
    `grid_sizes`, the static factor of that count."""
    grid_sizes: tuple[tuple[str, int], ...] = ()
    """Per dynamic grid dim, (size parameter, block): the launch has `programs` times
    the product of their ceil(size / block) programs."""
    whole_sizes: tuple[tuple[str, int], ...] = ()
    """Per dynamic dim held whole in every tile, (size parameter, block): the kernel
    is right for sizes up to the block (the host checks at launch)."""
    persistent: int = 0
    """With `grid_sizes`: a persistent kernel's programs (each loops over the tiles
    `pid, pid + persistent, ...`); the launch has at most that many."""
    gpu: KernelSignature | None = None
    """Launched instead on a GPU: the warp-specialised Gluon kernel of the same tile
    program (`attention_ws.py`; Gluon does not run under the interpreter)."""
    members: int = 1
    """Of a kernel with run-time sizes (`grid_sizes` or not): the grids of a stacked
    bundle, launched side by side, each with the programs counted above (a persistent
    one `persistent / members` at most)."""
    branches: tuple[tuple[int, tuple[tuple[str, int], ...]], ...] = ()
    """Of a bundle of different tile programs, some with run-time counts: per branch,
    its static factor and its `grid_sizes`; the launch has the sum of their programs."""
    host_sizes: tuple[Param, ...] = ()
    """Run-time sizes of the kernel's tensors its body never reads (a dynamic
    program's token count beside the rows it tiles): not parameters, so not passed
    at each launch; the host still reads them for the grid and the choice of variant."""

    @property
    def unspecialized(self) -> tuple[str, ...]:
        """Parameters Triton must not specialise on their value (1, divisible by 16):
        run-time sizes, and strides of tensors with a dynamic dim after theirs,
        unless the static dims after theirs multiply to a multiple of 16: such a
        stride of a contiguous tensor is a multiple of 16 at every size, so
        Triton's specialisation (which its vector loads and async copies need: an
        attention's K and V rows) never tells two sizes apart."""
        names = []
        for p in self.params:
            inner = p.shape[p.dim + 1 :] if p.dim is not None else ()
            dynamic = any(n < 0 for n in inner)
            aligned = math.prod(n for n in inner if n >= 0) % 16 == 0
            if p.kind is SIZE or (p.kind is STRIDE and dynamic and not aligned):
                names.append(p.name)
        return tuple(names)

    @property
    def has_checks(self) -> bool:
        return any(p.name == CHECKS_PARAM for p in self.params)

    @property
    def has_descriptors(self) -> bool:
        """Does the kernel (or its GPU twin) read a tensor through a TMA descriptor (made
        in the kernel: Triton asks the allocator for scratch at launch)?"""
        return any(p.descriptor for p in self.params) or (self.gpu is not None and self.gpu.has_descriptors)

    @property
    def has_dot_constexprs(self) -> bool:
        return any(p.name == "DOT_DTYPE" for p in self.params)
