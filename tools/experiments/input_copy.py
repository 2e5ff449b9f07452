"""
An argument's copy into another dim order (`host_prelude._in_order`): the batched
transpose kernel against torch's copy of the permuted view, in one process, for
bench or family models that copy one (the CNN family's late stages): whole-call time
(CUDA-event medians, alternating rounds) and the host's time per call (calls
enqueued back to back without synchronising):

    python3 tools/experiments/input_copy.py bottleneck_14 bottleneck_7
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
import family_sweep

import tilefuse.torch as tt


def host_us(fn, calls: int = 200) -> float:
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def main(names: list[str]) -> None:
    cases = {c.name: c for c in [*bench_models.CASES, *family_sweep.CASES]}
    for name in names:
        model, args = bench_models.on_gpu(cases[name])
        with torch.no_grad():
            ours = tt.compile(model, *args)
            python = ours.program.python
            kernel_split = python._transpose_split
            ways = {"transpose kernel": kernel_split, "torch copy": lambda t, order: None}
            times: dict[str, list[float]] = {w: [] for w in ways}
            hosts: dict[str, list[float]] = {w: [] for w in ways}
            for _ in range(5):
                for way, split in ways.items():
                    python._transpose_split = split
                    times[way].append(triton.testing.do_bench(lambda a=args, o=ours: o(*a), warmup=10, rep=100,
                                                              return_mode="median"))  # fmt: skip
                    hosts[way].append(host_us(lambda a=args, o=ours: o(*a)))
            python._transpose_split = kernel_split
        for way in ways:
            print(f"{name}, {way}: {statistics.median(times[way]):.3f} ms a call, "
                  f"host {statistics.median(hosts[way]):.1f} us a call")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
