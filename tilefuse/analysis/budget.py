"""
The on-chip fit model: does a tile of values fit one program?

Values live on chip in fp32 (`COMPUTE_BYTES`), blocks are powers of two (`pow2`).
A tile of `elements` elements whose distinct values take `working_set` bytes fits
when

- the working set is within the shared-memory budget,
- the registers per thread (the values spread over the program's threads, plus
  `REG_OVERHEAD` for addresses, masks and loop counters) are within the target's
  limit, and
- the occupancy they leave is at least `MIN_OCCUPANCY` (the `f(o)` floor of the
  roofline),

with the program's warps chosen from its size (`warps_for`). The tile planner asks
`fit` for every block assignment it tries; the fusion planner asks it of one row of
a candidate group (grid dims at 1, inner dims whole: `fusion_plan.row_fit`), the
tile the tile planner tries first, so that a group the fusion model prices as one
pass over HBM is one the tiler keeps whole.

```python
fit(h200, working_set=64 * 1024, elements=16384, budget=h200.smem_per_block)
# Fit(fits=True, warps=16, regs=56, occupancy=0.5)
fit(h200, working_set=160 * 1024, elements=4096, budget=h200.smem_per_block)
# Fit(fits=True, warps=16, regs=104, occupancy=0.25): 40 values of a 4096-wide row,
# which at the 8 warps its size asks would need 184 registers (occupancy 0.125)
fit(h200, working_set=220 * 1024, elements=4096, budget=h200.smem_per_block)
# Fit(fits=False, warps=16, regs=134, occupancy=0.0)
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilefuse.analysis.cost.occupancy import occupancy
from tilefuse.analysis.cost.target import Target

COMPUTE_BYTES = 4
"""Bytes of a value on chip: kernels compute in fp32."""
MIN_OCCUPANCY = 0.25
REG_OVERHEAD = 24
"""Registers per thread besides the tile's values: addresses, masks, loop counters."""
MIN_WARPS, MAX_WARPS = 2, 16

BYTES_PER_THREAD = 64
"""Bytes of each tensor a thread of a memory-bound tile moves: four 16-byte
vectors in flight (16 f32 or 32 bf16 elements). H200, bf16 elementwise and
row kernels: 8 KB tiles with 4 warps run 1-3% faster than with 8
(tools/experiments/warps_sweep.py, docs/PERF.md)."""


def pow2(n: int) -> int:
    """The smallest power of two >= n."""
    return 1 << max(0, (n - 1).bit_length())


def warps_for(elements: int, storage_bytes: int = COMPUTE_BYTES, per_thread: int = 0) -> int:
    """Warps of a program of `elements` elements of `storage_bytes` each, a thread
    moving `per_thread` bytes of each tensor (default BYTES_PER_THREAD)."""
    per_warp = (per_thread or BYTES_PER_THREAD) * 32
    return max(MIN_WARPS, min(MAX_WARPS, pow2(max(1, elements * storage_bytes // per_warp))))


def regs_per_thread(target: Target, working_set: int, warps: int) -> int:
    """Registers per thread holding `working_set` bytes of fp32 values over `warps` warps."""
    return math.ceil(working_set / COMPUTE_BYTES / (warps * target.warp_size)) + REG_OVERHEAD


@dataclass(frozen=True)
class Fit:
    """The answer of `fit`, with the numbers behind it."""

    fits: bool
    warps: int
    regs: int
    occupancy: float


def fit(
    target: Target,
    working_set: int,
    elements: int,
    budget: int,
    storage_bytes: int = COMPUTE_BYTES,
    per_thread: int = 0,
    more_warps: bool = True,
) -> Fit:
    """Does a tile of `elements` elements and `working_set` bytes of values fit
    `budget` bytes of shared memory and the register file at MIN_OCCUPANCY? Warps
    for tensors of `storage_bytes` elements, `per_thread` bytes of each per thread
    (`warps_for`), doubled (up to MAX_WARPS) while the values need more registers
    per thread than that leaves: a 1024-wide LayerNorm row whose dozen f32
    intermediates would take 216 registers at 2 warps takes 48 at 16. Not
    `more_warps`: at the warps the size asks only."""
    warps = warps_for(elements, storage_bytes, per_thread)
    while True:
        regs = regs_per_thread(target, working_set, warps)
        threads = warps * target.warp_size
        occ = occupancy(target, min(regs, target.max_regs_per_thread), threads, 0).occupancy
        fits = (working_set <= budget and regs <= target.max_regs_per_thread
                and occ >= MIN_OCCUPANCY)  # fmt: skip
        if fits or not more_warps or warps >= MAX_WARPS or working_set > budget:
            return Fit(fits, warps, regs, occ)
        warps *= 2


# ---------------------------------------------------------------------------
# Shared memory of a pipelined contraction, as Triton allocates it
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OperandTile:
    """One `tl.dot` operand's tile and how it reaches the dot.

    `elements`: the tile's elements (BM x BK or BK x BN); `loads`: (elements, bytes)
    of each tile the kernel loads inside the K loop to make it (the operand
    itself when it is a tensor read as is; a fused producer's inputs otherwise);
    `direct`: the operand is loaded in the dot's dtype and fed to `tl.dot`
    unchanged, so Triton's pipeliner copies it straight into the shared-memory
    layout the MMA reads."""

    elements: int
    loads: tuple[tuple[int, int], ...]
    direct: bool


WGMMA, MMA, FMA = "wgmma", "mma", "fma"
"""How Triton runs a `tl.dot` on sm_90: Hopper's warpgroup MMA (16-bit operands,
BM >= 64), Ampere's warp MMA (16-bit operands, smaller BM), or an f32 dot
(FMA for IEEE, TF32 tensor cores when allowed)."""


def contraction_smem(a: OperandTile, b: OperandTile, dot_bytes: int, stages: int,
                     pipelined: bool, epilogue_bytes: int, mma: str = WGMMA,
                     k_partial: bool = False,
                     extra: tuple[tuple[OperandTile, bool], ...] = ()) -> int:  # fmt: skip
    """Shared memory Triton (3.6 and 3.9, sm_90) allocates for a K loop feeding
    `tl.dot(a, b)` with `stages` pipeline stages: the largest of

    - the operand buffers. Not `pipelined` (one trip of the loop: K whole):
      one tile of each operand in the dot's dtype. Pipelined, with wgmma: a
      `direct` operand takes `stages` buffers of its tile; any other (converted
      from another dtype, or computed by a fused producer) is loaded through
      registers: `stages - 1` buffers of each tile it loads, plus, for B (which
      wgmma reads from shared memory), one tile in the dot's dtype. With warp
      MMA every operand takes `stages - 1` buffers of what it loads. When the
      last K tile is partial (`k_partial`, a masked load along K), wgmma's A is
      not pipelined: one tile in the dot's dtype, made in registers. An f32 dot
      is counted as TF32's path (direct: `stages` buffers; else `stages - 1`
      of its loads and a tile of each operand), which IEEE's FMA path stays
      under;
    - the epilogue's layout conversion of the accumulator (`epilogue_bytes`),
      which reuses the pipeline's buffers.

    `extra`: the operand tiles of sibling contractions run in the same K loop (tile,
    is a B operand), each counted as `a` or `b` is.

    Measured against ptxas on 3.9 and 3.6 (tools/experiments/smem_model.py):
    exact for bf16 operands direct, converted or computed. Horizontal fusion
    adds the branches (`horizontal_plan.branches_smem`)."""
    tiles = ((a, False), (b, True), *extra)
    if not pipelined:
        return max(sum(t.elements for t, _ in tiles) * dot_bytes, epilogue_bytes)
    operands = 0
    for tile, second in tiles:
        loaded = sum((stages - 1) * e * n for e, n in tile.loads)
        if mma == MMA:
            operands += loaded
        elif k_partial and not second and mma == WGMMA:
            operands += tile.elements * dot_bytes
        elif tile.direct:
            operands += stages * tile.elements * dot_bytes
        else:
            extra = second or mma == FMA
            operands += loaded + (tile.elements * dot_bytes if extra else 0)
    return max(operands, epilogue_bytes)
