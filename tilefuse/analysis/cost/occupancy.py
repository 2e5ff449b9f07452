"""
Occupancy: how many blocks of a kernel fit on one SM at once, and why no more.

This follows CUDA's occupancy calculator: registers are allocated per warp in
multiples of `Target.reg_alloc_unit`, each resident block also takes
`Target.smem_reserved_per_block` bytes of shared memory, and the blocks per SM
are the least of the register, shared-memory, thread and block limits.

Registers are pooled over the whole SM here, where CUDA splits them over the
SM's four sub-partitions; the two agree whenever a block's warp count is a
multiple of four, which Triton's `num_warps` (4, 8, 16) always is.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilefuse.analysis.cost.target import Target

LIMITERS = ("blocks", "threads", "registers", "shared memory")
"""The resources that can limit occupancy, in the order ties are reported."""


@dataclass(frozen=True)
class Occupancy:
    """The resident blocks and warps of one kernel on one SM."""

    blocks_per_sm: int
    """Blocks resident on one SM at once (0 when a block cannot launch at all)."""
    warps_per_sm: int
    """Warps resident on one SM at once."""
    occupancy: float
    """Resident warps over the most warps an SM can hold, in [0, 1]."""
    limiter: str
    """
    The resource that bounds `blocks_per_sm`, one of `LIMITERS`. On a tie the
    fixed per-SM limits ("blocks", "threads") are named first, since no change
    to the kernel's registers or shared memory would lift them.
    """


def occupancy(
    target: Target, regs_per_thread: int, threads_per_block: int, smem_per_block: int
) -> Occupancy:
    """
    The occupancy of a kernel with the given per-thread registers, block size and
    per-block shared memory (bytes) on `target`.

    A block that cannot launch (too many threads, registers per thread or shared
    memory for one block) gets zero blocks, with the offending resource as limiter.
    """
    if regs_per_thread < 0 or threads_per_block <= 0 or smem_per_block < 0:
        raise ValueError(
            "occupancy needs regs_per_thread >= 0, threads_per_block > 0 and "
            f"smem_per_block >= 0, not {regs_per_thread}, {threads_per_block}, "
            f"{smem_per_block}."
        )
    warps_per_block = -(-threads_per_block // target.warp_size)
    limits = {
        "blocks": target.max_blocks_per_sm,
        "threads": _thread_limit(target, threads_per_block),
        "registers": _register_limit(target, regs_per_thread, warps_per_block),
        "shared memory": _smem_limit(target, smem_per_block),
    }
    limiter = min(LIMITERS, key=lambda name: limits[name])
    blocks = limits[limiter]
    warps = blocks * warps_per_block
    max_warps = target.max_threads_per_sm // target.warp_size
    return Occupancy(blocks, warps, warps / max_warps, limiter)


def _thread_limit(target: Target, threads_per_block: int) -> int:
    if threads_per_block > target.max_threads_per_block:
        return 0
    return target.max_threads_per_sm // threads_per_block


def _register_limit(target: Target, regs_per_thread: int, warps_per_block: int) -> int:
    if regs_per_thread > target.max_regs_per_thread:
        return 0
    unit = target.reg_alloc_unit
    regs_per_warp = -(-regs_per_thread * target.warp_size // unit) * unit
    regs_per_block = regs_per_warp * warps_per_block
    if regs_per_block == 0:
        return target.max_blocks_per_sm
    return target.regs_per_sm // regs_per_block


def _smem_limit(target: Target, smem_per_block: int) -> int:
    if smem_per_block > target.smem_per_block:
        return 0
    smem_taken = smem_per_block + target.smem_reserved_per_block
    if smem_taken == 0:
        return target.max_blocks_per_sm
    return target.smem_per_sm // smem_taken


def occupancy_factor(occupancy: float) -> float:
    """
    The fraction of peak compute a kernel at this occupancy is assumed to reach:
    `max(0.25, occupancy)`. The floor is the design's: even a kernel at low
    occupancy hides some latency through instruction-level parallelism.
    """
    if not 0.0 <= occupancy <= 1.0:
        raise ValueError(f"occupancy must lie in [0, 1], not {occupancy}.")
    return max(0.25, occupancy)
