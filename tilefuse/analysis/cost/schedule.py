"""
Tile-schedule simulation: how launch order changes a tiled kernel's HBM traffic.

A tiled kernel is a grid of programs, each a sequence of steps (say, the
iterations of a matmul's K loop), each step reading some operand tiles. The
simulation runs the programs in launch order in waves of `concurrency` (the
programs resident at once: SMs times blocks per SM). Within a wave, the
programs advance in lockstep: step 0 of every program in program order, then
step 1, and so on. Every tile read goes through one LRU cache of `cache_bytes`
(the L2); a miss reads the tile from HBM.

The model is deliberately simple and deterministic: real programs drift out of
lockstep and a new one starts as soon as any finishes, and a real L2 is set
associative and split in partitions. It is meant to rank orders (row-major
against grouped) and tile shapes, not to predict exact hit rates.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TileAccess:
    """One read of one operand tile."""

    operand: str
    """The operand the tile belongs to, e.g. "A"."""
    key: tuple[int, ...]
    """The tile's coordinates within its operand."""
    nbytes: int
    """The tile's size in bytes."""


Step = Sequence[TileAccess]
"""The tile reads of one step of one program."""
Program = Sequence[Step]
"""One program's steps, in order."""


@dataclass(frozen=True)
class OperandStats:
    """Cache behaviour of the reads of one operand."""

    operand: str
    """The operand's name."""
    accesses: int
    """Tile reads."""
    hits: int
    """Reads served by the cache."""
    misses: int
    """Reads that went to HBM."""
    hbm_bytes: int
    """Bytes read from HBM: the sizes of the missed tiles."""


@dataclass(frozen=True)
class ScheduleStats:
    """Cache behaviour of a whole simulated grid, per operand and in total."""

    operands: tuple[OperandStats, ...]
    """Per-operand statistics, in the order the operands were first read."""

    @property
    def accesses(self) -> int:
        """Tile reads of all operands."""
        return sum(s.accesses for s in self.operands)

    @property
    def hits(self) -> int:
        """Reads of all operands served by the cache."""
        return sum(s.hits for s in self.operands)

    @property
    def misses(self) -> int:
        """Reads of all operands that went to HBM."""
        return sum(s.misses for s in self.operands)

    @property
    def hbm_bytes(self) -> int:
        """Bytes read from HBM for all operands."""
        return sum(s.hbm_bytes for s in self.operands)

    def operand(self, name: str) -> OperandStats:
        """The statistics of operand `name`."""
        for stats in self.operands:
            if stats.operand == name:
                return stats
        raise KeyError(name)


def simulate(
    programs: Sequence[Program], cache_bytes: int, concurrency: int
) -> ScheduleStats:
    """Run `programs` in launch order through an LRU cache of `cache_bytes`.

    The cache is fully associative, of variable-size lines; a line larger than
    the cache is never kept. One flat loop: the pipeline simulates a few
    hundred thousand reads per matmul shape, so calls per read are avoided."""
    if cache_bytes < 0 or concurrency < 1:
        raise ValueError(
            f"simulate needs cache_bytes >= 0 and concurrency >= 1, not "
            f"{cache_bytes} and {concurrency}."
        )
    lines: OrderedDict[Hashable, int] = OrderedDict()
    used = 0
    # operand -> [accesses, hits, misses, hbm_bytes]
    counts: dict[str, list[int]] = {}
    for start in range(0, len(programs), concurrency):
        for step in _lockstep(programs[start : start + concurrency]):
            for access in step:
                row = counts.get(access.operand)
                if row is None:
                    row = counts[access.operand] = [0, 0, 0, 0]
                row[0] += 1
                key = (access.operand, access.key)
                if key in lines:
                    lines.move_to_end(key)
                    row[1] += 1
                    continue
                row[2] += 1
                row[3] += access.nbytes
                if access.nbytes <= cache_bytes:
                    lines[key] = access.nbytes
                    used += access.nbytes
                    while used > cache_bytes:
                        used -= lines.popitem(last=False)[1]
    return ScheduleStats(
        tuple(OperandStats(name, *row) for name, row in counts.items())
    )


def _lockstep(wave: Sequence[Program]) -> Iterator[Step]:
    """A wave's steps with its programs in lockstep: all step 0s, then step 1s, ..."""
    for s in range(max((len(p) for p in wave), default=0)):
        for program in wave:
            if s < len(program):
                yield program[s]


def program_order(
    grid_m: int, grid_n: int, order: str = "grouped", group_m: int = 8,
    count: int | None = None,
) -> list[tuple[int, int]]:
    """
    The (row, column) tile of each program of a `grid_m` x `grid_n` grid, in
    launch order (the first `count` of them, if given).

    "row" walks the grid row by row. "grouped" is the ordering of Triton's
    matmul tutorial: programs walk a group of `group_m` tile rows column by
    column, then move on to the next group; the last group may be shorter.
    """
    if grid_m < 1 or grid_n < 1 or group_m < 1:
        raise ValueError(
            f"program_order needs positive grid and group sizes, not "
            f"{grid_m}, {grid_n}, {group_m}."
        )
    total = grid_m * grid_n
    pids = range(total if count is None else min(count, total))
    if order == "row":
        return [(pid // grid_n, pid % grid_n) for pid in pids]
    if order == "grouped":
        return [_grouped_tile(pid, grid_m, grid_n, group_m) for pid in pids]
    raise ValueError(f"unknown program order '{order}'; use 'row' or 'grouped'.")


def _grouped_tile(pid: int, grid_m: int, grid_n: int, group_m: int) -> tuple[int, int]:
    """Triton's grouped pid-to-tile mapping (matmul tutorial, "L2 cache optimizations")."""
    programs_per_group = group_m * grid_n
    first_m = pid // programs_per_group * group_m
    group_size = min(grid_m - first_m, group_m)
    within = pid % programs_per_group
    return (first_m + within % group_size, within // group_size)


def matmul_programs(
    M: int,
    N: int,
    K: int,
    BM: int,
    BN: int,
    BK: int,
    elem_bytes: int,
    order: str = "grouped",
    group_m: int = 8,
    count: int | None = None,
) -> list[list[tuple[TileAccess, TileAccess]]]:
    """
    The programs of a tiled `M x K` by `K x N` matmul, in launch order (the
    first `count` of them, if given).

    Program (i, j) computes output tile (i, j); its step k reads A tile (i, k)
    and B tile (k, j). Edge tiles count at their true, smaller size. Output
    tiles are not modelled: each is written once whatever the order.
    """
    grid_m, grid_n, grid_k = _cdiv(M, BM), _cdiv(N, BN), _cdiv(K, BK)
    # Only the tiles the listed programs read: a dynamic dim's range end can make
    # a grid of millions of programs, of which a few waves are simulated.
    a_rows: dict[int, list[TileAccess]] = {}
    b_columns: dict[int, list[TileAccess]] = {}
    programs = []
    for i, j in program_order(grid_m, grid_n, order, group_m, count):
        if i not in a_rows:
            a_rows[i] = [TileAccess("A", (i, k), _extent(M, BM, i) * _extent(K, BK, k) * elem_bytes)
                         for k in range(grid_k)]  # fmt: skip
        if j not in b_columns:
            b_columns[j] = [TileAccess("B", (k, j), _extent(K, BK, k) * _extent(N, BN, j) * elem_bytes)
                            for k in range(grid_k)]  # fmt: skip
        programs.append(list(zip(a_rows[i], b_columns[j], strict=True)))
    return programs


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _extent(size: int, block: int, index: int) -> int:
    """The length of tile `index` of a dimension of `size` cut in `block`s."""
    return min(block, size - index * block)
