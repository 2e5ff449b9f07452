"""Tests for the tile-schedule simulation, with hand-counted cache hits."""

import time

from hypothesis import given
from hypothesis import strategies as st

from tilefuse.analysis.cost.schedule import (
    OperandStats,
    TileAccess,
    matmul_programs,
    program_order,
    simulate,
)


def test_row_order():
    row = program_order(2, 3, "row")
    assert row == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]


def test_grouped_order_with_short_last_group():
    # Groups of rows {0, 1}, {2, 3} and the short {4}, each walked column by column.
    assert program_order(5, 3, "grouped", group_m=2) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
        (2, 0), (3, 0), (2, 1), (3, 1), (2, 2), (3, 2),
        (4, 0), (4, 1), (4, 2),
    ]  # fmt: skip


@given(
    st.integers(1, 12),
    st.integers(1, 12),
    st.sampled_from(["row", "grouped"]),
    st.integers(1, 9),
)
def test_program_order_is_a_permutation(grid_m, grid_n, order, group_m):
    tiles = program_order(grid_m, grid_n, order, group_m)
    assert sorted(tiles) == [(i, j) for i in range(grid_m) for j in range(grid_n)]


def test_matmul_programs_steps():
    programs = matmul_programs(4, 4, 4, 2, 2, 2, 1, "row")
    assert len(programs) == 4
    # Program (0, 1): step k reads A(0, k) and B(k, 1), 2 x 2 x 1 bytes each.
    assert programs[1] == [
        (TileAccess("A", (0, 0), 4), TileAccess("B", (0, 1), 4)),
        (TileAccess("A", (0, 1), 4), TileAccess("B", (1, 1), 4)),
    ]


@given(st.integers(1, 40), st.integers(1, 40), st.sampled_from(["row", "grouped"]),
       st.integers(0, 50))
def test_the_first_programs_are_the_whole_list_cut(m, n, order, count):
    whole = matmul_programs(m, n, 6, 4, 4, 2, 2, order, 3)
    assert matmul_programs(m, n, 6, 4, 4, 2, 2, order, 3, count) == whole[:count]


def test_a_few_programs_of_a_huge_grid_cost_only_themselves():
    # A dynamic dim's range end (M = 2^32 rows): 2^24 x 64 programs, the first 512 simulated.
    start = time.perf_counter()
    programs = matmul_programs(2**32, 8192, 4096, 256, 128, 64, 2, "grouped", 8, 512)
    assert len(programs) == 512 and time.perf_counter() - start < 1.0
    assert {p[0][0].key[0] for p in programs} == set(range(8))  # (a group of 8 rows)


def test_edge_tiles_count_true_size():
    # M=3, N=5, K=3 in 2 x 2 tiles of 2-byte elements: A tile (1, 1) is 1 x 1
    # (2 bytes) and B tile (0, 2) is 2 x 1 (4 bytes).
    programs = matmul_programs(3, 5, 3, 2, 2, 2, 2, "row")
    assert programs[5][1][0] == TileAccess("A", (1, 1), 2)
    assert programs[2][0][1] == TileAccess("B", (0, 2), 4)
    # With room for everything, each tile is read from HBM once:
    # A is 3 x 3 x 2 = 18 bytes, B is 3 x 5 x 2 = 30 bytes.
    stats = simulate(programs, cache_bytes=1 << 20, concurrency=4)
    assert stats.operand("A").hbm_bytes == 18
    assert stats.operand("B").hbm_bytes == 30


def test_hand_counted_small_cache():
    # 2 x 2 programs in row order, K in 2 steps, 4-byte tiles, a 3-tile LRU
    # cache, 2 programs a wave. Cache contents after each access, oldest first:
    # wave 1, step 0: A00 m [A00]  B00 m [A00 B00]  A00 h [B00 A00]
    #                 B01 m [B00 A00 B01]
    # wave 1, step 1: A01 m [A00 B01 A01]  B10 m [B01 A01 B10]
    #                 A01 h [B01 B10 A01]  B11 m [B10 A01 B11]
    # wave 2, step 0: A10 m [A01 B11 A10]  B00 m [B11 A10 B00]
    #                 A10 h [B11 B00 A10]  B01 m [B00 A10 B01]
    # wave 2, step 1: A11 m [A10 B01 A11]  B10 m [B01 A11 B10]
    #                 A11 h [B01 B10 A11]  B11 m [B10 A11 B11]
    # A: 8 reads, 4 hits, 4 misses; B: 8 reads, 0 hits, 8 misses.
    programs = matmul_programs(4, 4, 4, 2, 2, 2, 1, "row")
    stats = simulate(programs, cache_bytes=12, concurrency=2)
    assert stats.operands == (
        OperandStats("A", accesses=8, hits=4, misses=4, hbm_bytes=16),
        OperandStats("B", accesses=8, hits=0, misses=8, hbm_bytes=32),
    )
    totals = (stats.accesses, stats.hits, stats.misses, stats.hbm_bytes)
    assert totals == (16, 4, 12, 48)


def test_hand_counted_large_cache():
    # Same grid with room for all 8 tiles: wave 1 misses A00 A01 B00 B01 B10
    # B11 and hits A00, A01 in program (0, 1); wave 2 misses A10 A11 only.
    programs = matmul_programs(4, 4, 4, 2, 2, 2, 1, "row")
    stats = simulate(programs, cache_bytes=1000, concurrency=2)
    assert stats.operand("A") == OperandStats("A", 8, 4, 4, 16)
    assert stats.operand("B") == OperandStats("B", 8, 4, 4, 16)


def test_tile_larger_than_cache_is_never_kept():
    step = [TileAccess("X", (0,), 100)]
    stats = simulate([[step, step]], cache_bytes=50, concurrency=1)
    assert stats.operand("X") == OperandStats("X", 2, 0, 2, 200)


def test_ragged_programs():
    # Program 0 has one step, program 1 two; both read tile T (1 byte).
    t = TileAccess("T", (0,), 1)
    stats = simulate([[[t]], [[t], [t]]], cache_bytes=1, concurrency=2)
    assert stats.operand("T") == OperandStats("T", 3, 2, 1, 1)


def test_misses_equal_distinct_tiles_when_everything_fits():
    programs = matmul_programs(1000, 700, 300, 128, 64, 64, 2, "grouped", 4)
    distinct = {(a.operand, a.key) for p in programs for s in p for a in s}
    stats = simulate(programs, cache_bytes=1 << 30, concurrency=7)
    assert stats.misses == len(distinct)
    # Every element of A (1000 x 300) and B (300 x 700) read once, 2 bytes each.
    assert stats.hbm_bytes == (1000 * 300 + 300 * 700) * 2


def test_deterministic():
    programs = matmul_programs(1024, 1024, 1024, 128, 128, 64, 2, "grouped")
    first = simulate(programs, cache_bytes=2 << 20, concurrency=16)
    second = simulate(programs, cache_bytes=2 << 20, concurrency=16)
    assert first == second


def test_grouped_order_misses_less_than_row_order():
    # 4096^3 f32 in 128^3 tiles on an H100-like L2 (50 MB) with 132 programs
    # resident: B is 64 MiB, so row order, whose every wave reads all of B,
    # misses on every B read, while a grouped wave reads about half of B.
    # (In bf16, B is 32 MiB and stays in the cache in row order too.)
    row, grouped = (
        simulate(
            matmul_programs(4096, 4096, 4096, 128, 128, 128, 4, order, 8),
            cache_bytes=50 * 1000 * 1000,
            concurrency=132,
        )
        for order in ("row", "grouped")
    )
    assert grouped.misses < row.misses
    assert grouped.hbm_bytes < row.hbm_bytes


def test_fast_enough():
    programs = matmul_programs(4096, 4096, 4096, 128, 128, 128, 2, "grouped")
    start = time.perf_counter()
    simulate(programs, cache_bytes=50 * 1000 * 1000, concurrency=132)
    # About 0.05 s here for 32 x 32 programs x 32 steps; the bound is loose.
    assert time.perf_counter() - start < 2.0
