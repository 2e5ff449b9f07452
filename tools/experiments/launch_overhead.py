"""
CPU time of one call of a bench model's compiled program (tools/bench_models.py
CASES) against its GPU time: where the host cannot enqueue the kernels as fast as
the GPU runs them, the call is launch-bound.

    python tools/experiments/launch_overhead.py bert gpt2 bottleneck_14 [--profile] [--compile]

Any name of tools/bench_models.py or family_sweep.py; `--profile` adds cProfile's
top functions of the host calls, `--compile` torch.compile's host time per call.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
from family_sweep import CASES as FAMILY

import tilefuse.torch as tt


def host_time(fn, args: tuple, calls: int) -> float:
    """Seconds of host time a call, `calls` calls enqueued back to back."""
    with torch.no_grad():
        for _ in range(5):
            fn(*args)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        cpu = (time.perf_counter() - start) / calls
    torch.cuda.synchronize()
    return cpu


def main(names: list[str]) -> None:
    cases = {c.name: c for c in [*bench_models.CASES, *FAMILY]}
    for name in names:
        case = cases[name]
        torch.manual_seed(0)
        model = case.make().eval().to("cuda", torch.bfloat16)
        args = tuple((x.bfloat16() if x.is_floating_point() else x).cuda() for x in case.inputs())
        compiled = tt.compile(model, *args)
        calls = 50
        cpu = host_time(compiled, args, calls)
        torch.cuda.synchronize()
        gpu_start = torch.cuda.Event(enable_timing=True)
        gpu_end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        gpu_start.record()
        for _ in range(calls):
            compiled(*args)
        gpu_end.record()
        torch.cuda.synchronize()
        wall = gpu_start.elapsed_time(gpu_end) / calls
        print(f"{name}: {len(compiled.kernels)} kernels, host {cpu * 1e3:.3f} ms per call "
              f"({cpu * 1e6 / len(compiled.kernels):.1f} us per launch), back to back "
              f"{wall:.3f} ms per call", flush=True)  # fmt: skip
        if "--compile" in sys.argv:
            theirs = torch.compile(model)
            print(f"    torch.compile: host {host_time(theirs, args, calls) * 1e3:.3f} ms per call", flush=True)
        if "--profile" in sys.argv:
            import cProfile
            import pstats

            with cProfile.Profile() as prof:
                for _ in range(calls):
                    compiled(*args)
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if not a.startswith("--")] or ["bert", "gpt2"])
