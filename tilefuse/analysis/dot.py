"""
Contractions on tensor cores: the one rule for whether a contraction is a `tl.dot`,
and in which dtype.

- A contraction multiplies in its factors' storage type when both factors are
  stored in the same type (`operand_dtype`), else in the type its payload
  multiplies in (`arith.mulf`'s). A product of two bf16 (or two f16) values is
  exact in f32, so `extf(a) * extf(b)` accumulated in f32 is what a 16-bit
  tensor-core `tl.dot` accumulating in f32 computes, up to summation order (which
  any `tl.dot` changes): torch-mlir's bf16 `nn.Linear` (`extf` producers, folded
  into the contraction by `fold-operand-extf`) is a bf16 dot. A factor that is
  not a 16-bit value widened (a genuine f32 operand) keeps the dot in f32, IEEE;
  `tile-and-fuse{allow_tf32=true}` makes those TF32 (`dot = "tf32"`, torch's
  `allow_tf32`), never by default.
- Before tiling, a contraction is priced as tensor-core work when it multiplies
  16-bit floats (`tensor_core_dtype`): the cost model's `tc_flops`, in that dtype.
- A tiled contraction is a `tl.dot` when its tile has no batch dim of more than one
  and its M, N and K blocks are each at least `MIN_DOT` (`dot_dims`); the tile
  planner gives contractions blocks of at least `MIN_DOT` so that they are.
- A tile grid's `dot` (`#tilefuse.tile_plan<..., dot = "bf16">`) is the operand
  dtype of its first contraction that is a `tl.dot` (`grid_dot`): the `DOT_DTYPE`
  its kernel launches with.

```python
dot_dims(s)   # ([0], [1], [2]) for a 64x64x32 tile of `C[i, j] += A[i, k] * B[k, j]`
grid_dot(grid)  # "bf16"; None for a grid without tl.dot
```
"""

from __future__ import annotations

import math

from xdsl.dialects import arith
from xdsl.ir import Operation

from tilefuse.analysis.dataflow import is_contraction, product_operand
from tilefuse.ir.dtypes import dtype_name
from tilefuse.ir.structured import StructuredOp, as_structured
from tilefuse.ir.tilefuse import TF32, TilePlanAttr

MIN_DOT = 16
"""The smallest M, N and K block of a `tl.dot`."""


def factor_dtypes(s: StructuredOp) -> tuple[str, str] | None:
    """The storage types of the two tensors a contraction multiplies (what its
    tiles are loaded as), or None when `s` multiplies no two inputs."""
    mul = next((op for op in s.payload.ops if isinstance(op, arith.MulfOp)), None)
    if mul is None:
        return None
    args = list(s.payload.args[: len(s.inputs)])
    factors = [product_operand(v) for v in mul.operands]
    if any(f not in args for f in factors):
        return None
    a, b = (dtype_name(s.inputs[args.index(f)].type) for f in factors)
    return a, b


def operand_dtype(s: StructuredOp) -> str:
    """The element type a contraction's `tl.dot` multiplies in: both factors'
    storage type when they agree (a 16-bit product is exact in f32), else the
    payload's `arith.mulf` type (the wider one: a bf16 factor widened to meet an
    f32 one is multiplied in f32)."""
    factors = factor_dtypes(s)
    if factors is None:
        return dtype_name(s.inputs[0].type)
    mul = next(op for op in s.payload.ops if isinstance(op, arith.MulfOp))
    product = dtype_name(mul.result.type)
    # Two 16-bit factors multiplied in f32: a 16-bit dot accumulating in f32.
    # Anything else widened (f32 factors multiplied in f64) is a dot in the
    # product's type: Triton accumulates f64 only from f64 operands.
    narrow = factors[0] in TENSOR_CORE_DTYPES and product == "f32"
    if factors[0] == factors[1] and (factors[0] == product or narrow):
        return factors[0]
    return product


TENSOR_CORE_DTYPES = ("f16", "bf16")
"""Operand types priced at the tensor-core rate (an f32 `tl.dot` runs as TF32 but
is priced on CUDA cores, as the cost model always did)."""


def tensor_core_dtype(s: StructuredOp) -> str | None:
    """The dtype a contraction runs on tensor cores in (16-bit float operands), or None."""
    dtype = operand_dtype(s) if s.inputs else None
    return dtype if dtype in TENSOR_CORE_DTYPES else None


def dot_dims(s: StructuredOp) -> tuple[list[int], list[int], list[int]] | None:
    """The (M, N, K) loops of a tiled contraction that is a `tl.dot`, or None.

    Loops of trip count 1 are not part of the tile's blocks; a loop in the output
    and in both operands is a batch dim (no 2-D `tl.dot`); each of M, N, K must
    span at least MIN_DOT."""
    space = s.loop_ranges

    def kept(dims) -> list[int]:
        return [d for d in dims if space[d] != 1]

    a, b = (kept(s.operand_dims(i)) for i in range(2))
    out, k = kept(s.operand_dims(2)), kept(s.reduction_dims)
    if any(d in a and d in b for d in out):
        return None
    m = [d for d in out if d in a and d not in b]
    n = [d for d in out if d in b and d not in a]
    if min(math.prod(space[d] for d in g) for g in (m, n, k)) < MIN_DOT:
        return None
    return m, n, k


def _contractions(root: Operation) -> list[StructuredOp]:
    found = (as_structured(op) for op in root.walk())
    return [s for s in found if s is not None and is_contraction(s)]


def grid_dot(root: Operation) -> str | None:
    """The operand dtype of the first contraction under `root` (a tile grid) that
    is a `tl.dot`, or None."""
    return next((operand_dtype(s) for s in _contractions(root) if dot_dims(s) is not None),
                None)  # fmt: skip


def allowing_tf32(plan: TilePlanAttr) -> TilePlanAttr:
    """`plan` with an f32 dot made TF32 (`dot = "tf32"`: f32 tiles, TF32 tensor
    cores; torch's `allow_tf32`); any other plan as it is."""
    if plan.dot_dtype != "f32":
        return plan
    return TilePlanAttr(plan.dims, plan.warps.data, plan.stages.data, plan.working_set.data,
                        plan.smem_budget.data, plan.regs.data, plan.occupancy.data,
                        plan.swizzle, plan.group_m, TF32, plan.note.data,
                        plan.persistent.data, plan.consumers.data)  # fmt: skip


def contraction_dtypes(root: Operation) -> tuple[str, ...]:
    """The operand dtypes of the contractions under `root`, sorted, each once (a
    launch passes one `DOT_DTYPE`, so horizontal fusion bundles only kernels that
    agree; `tl.dot` or not, to keep the choice of dtype out of it)."""
    return tuple(sorted({operand_dtype(s) for s in _contractions(root)}))
