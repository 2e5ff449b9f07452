"""
Sweep the memory-bound tile constants (tiling.TARGET_TILE_ELEMS, elements per
program, and tiling.BYTES_PER_THREAD, which sets num_warps) on samples.

    python tools/experiments/elementwise_tiles.py relu_add:M=8192:N=8192:bf16

For each case, in one process: a copy of the same bytes, torch.compile, and
every (tile, bytes per thread) variant, timed in three alternating rounds
(median of the medians), outputs checked against the default plan's.
"""

import itertools
import re
import statistics
import sys

import torch
import triton.testing

sys.path.insert(0, ".")
import tilefuse.analysis.tile_plan as tiling
from tilefuse.runtime.compiled import compile as tf_compile

sys.path.insert(0, "tools")
from torch_models import MODELS
from warps_sweep import alldims_of, parse_spec

TILES = (1024, 2048, 4096, 8192)
BYTES = (16, 32, 64)


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")


def variant(path, dims, dtype, tile, nbytes):
    tiling.TARGET_TILE_ELEMS, tiling.BYTES_PER_THREAD = tile, nbytes
    try:
        return tf_compile(path, dims=dims, dtype=dtype)
    finally:
        tiling.TARGET_TILE_ELEMS, tiling.BYTES_PER_THREAD = 4096, 64


def main():
    for spec in sys.argv[1:]:
        name, dims, dtype, path, args = parse_spec(spec)
        default = variant(path, dims, dtype, 4096, 64)
        want = default(*args)
        want = want if isinstance(want, tuple) else (want,)
        nbytes = sum(a.numel() * a.element_size() for a in (*args, *want))
        model, alldims = MODELS[name], alldims_of(name, dims)
        compiled = torch.compile(lambda *a, m=model, d=alldims: m(*a, dims=d))
        compiled(*args)
        src = torch.randn(nbytes // 8, device="cuda")
        dst = torch.empty_like(src)
        runs = {"copy of the same bytes": lambda d=dst, s=src: d.copy_(s),
                "torch.compile": lambda c=compiled, a=args: c(*a)}  # fmt: skip
        for tile, per_thread in itertools.product(TILES, BYTES):
            prog = variant(path, dims, dtype, tile, per_thread)
            got = prog(*args)
            for g, w in zip(got if isinstance(got, tuple) else (got,), want, strict=True):
                assert torch.equal(g, w), f"{spec}: tile {tile} differs from the default plan"
            shape = re.search(r"# tile (\S+),", prog.source)
            warps = re.findall(r"num_warps=(\d+)", prog.source)
            label = f"tile {shape[1] if shape else '-'} {'/'.join(warps)} warps"
            runs[f"{label} ({tile}, {per_thread} B)"] = lambda p=prog, a=args: p(*a)
        times = {k: [] for k in runs}
        for _ in range(3):
            for k, fn in runs.items():
                times[k].append(bench(fn))
        copy = statistics.median(times["copy of the same bytes"])
        tc = statistics.median(times["torch.compile"])
        print(f"{spec}: {nbytes / 1e6:.0f} MB")
        for k, ts in times.items():
            ms = statistics.median(ts)
            print(f"    {k:<40} {ms:.4f} ms  {copy / ms:6.1%} of copy  {tc / ms:.3f}x compile  "
                  f"(rounds {', '.join(f'{t:.4f}' for t in ts)})")  # fmt: skip


if __name__ == "__main__":
    main()
