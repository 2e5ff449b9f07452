"""Tests for the occupancy calculator, against hand-computed register and smem limits."""

import pytest

from tilefuse.analysis.cost.occupancy import Occupancy, occupancy, occupancy_factor
from tilefuse.analysis.cost.target import get_target


@pytest.mark.parametrize("name", ["a100", "h100", "h200"])
def test_seed_003_worked_example(name):
    target = get_target(name)
    # 32 regs x 32 threads = 1024 regs a warp, x 8 warps = 8192 a block:
    # 65536 / 8192 = 8 blocks, which is also 2048 / 256 threads, so the
    # thread limit is named.
    assert occupancy(target, 32, 256, 0) == Occupancy(8, 64, 1.0, "threads")
    # 48 x 32 = 1536 regs a warp, x 8 = 12288 a block: 65536 // 12288 = 5
    # blocks, 40 of 64 warps.
    assert occupancy(target, 48, 256, 0) == Occupancy(5, 40, 0.625, "registers")


def test_registers_round_up_to_allocation_unit():
    # 33 x 32 = 1056 regs a warp, rounded up to 1280; x 8 warps = 10240:
    # 65536 // 10240 = 6 blocks (7 without the rounding).
    result = occupancy(get_target("h100"), 33, 256, 0)
    assert (result.blocks_per_sm, result.limiter) == (6, "registers")


def test_shared_memory_limit_counts_reserved_kilobyte():
    h100 = get_target("h100")
    # (113 KB + 1 KB reserved) x 2 = 228 KB: exactly two blocks fit.
    assert occupancy(h100, 32, 128, 113 * 1024) == Occupancy(
        2, 8, 0.125, "shared memory"
    )
    # (114 KB + 1 KB) x 2 = 230 KB > 228 KB: one block.
    assert occupancy(h100, 32, 128, 114 * 1024).blocks_per_sm == 1
    # V100 reserves nothing: 96 KB / 48 KB = 2 blocks.
    result = occupancy(get_target("v100"), 32, 128, 48 * 1024)
    assert (result.blocks_per_sm, result.limiter) == (2, "shared memory")


def test_block_limit():
    # 32 threads, 16 regs: 2048 / 32 = 64 by threads, 65536 / 512 = 128 by
    # registers, but at most 32 blocks an SM: 32 warps of 64.
    assert occupancy(get_target("h200"), 16, 32, 0) == Occupancy(32, 32, 0.5, "blocks")


@pytest.mark.parametrize(
    ("regs", "threads", "smem", "limiter"),
    [
        (256, 128, 0, "registers"),  # over 255 registers a thread
        (255, 1024, 0, "registers"),  # 8192 regs a warp x 32 warps > 65536
        (32, 1025, 0, "threads"),  # over 1024 threads a block
        (32, 128, 232448 + 1, "shared memory"),  # over the 227 KB opt-in
    ],
)
def test_blocks_that_cannot_launch(regs, threads, smem, limiter):
    result = occupancy(get_target("h100"), regs, threads, smem)
    assert result == Occupancy(0, 0, 0.0, limiter)


def test_largest_launchable_block():
    # 64 regs x 1024 threads = 65536: exactly one block, 32 of 64 warps.
    assert occupancy(get_target("h100"), 64, 1024, 232448) == Occupancy(
        1, 32, 0.5, "registers"
    )


def test_bad_arguments():
    with pytest.raises(ValueError, match="threads_per_block > 0"):
        occupancy(get_target("h100"), 32, 0, 0)
    with pytest.raises(ValueError):
        occupancy(get_target("h100"), -1, 128, 0)


@pytest.mark.parametrize(
    ("occ", "factor"), [(0.0, 0.25), (0.1, 0.25), (0.25, 0.25), (0.5, 0.5), (1.0, 1.0)]
)
def test_occupancy_factor(occ, factor):
    assert occupancy_factor(occ) == factor


def test_occupancy_factor_range():
    with pytest.raises(ValueError):
        occupancy_factor(1.5)
