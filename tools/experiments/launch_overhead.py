"""
CPU time of one call of a bench model's compiled program (tools/bench_models.py
CASES) against its GPU time: where the host cannot enqueue the kernels as fast as
the GPU runs them, the call is launch-bound.

    python tools/experiments/launch_overhead.py bert gpt2
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_models

import tilefuse.torch as tt


def main(names: list[str]) -> None:
    cases = {c.name: c for c in bench_models.CASES}
    for name in names:
        case = cases[name]
        torch.manual_seed(0)
        model = case.make().eval().to("cuda", torch.bfloat16)
        args = tuple((x.bfloat16() if x.is_floating_point() else x).cuda() for x in case.inputs())
        compiled = tt.compile(model, *args)
        for _ in range(5):
            compiled(*args)
        torch.cuda.synchronize()
        calls = 50
        start = time.perf_counter()
        for _ in range(calls):
            compiled(*args)
        cpu = (time.perf_counter() - start) / calls
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
        if "--profile" in sys.argv:
            import cProfile
            import pstats

            with cProfile.Profile() as prof:
                for _ in range(calls):
                    compiled(*args)
            pstats.Stats(prof).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if not a.startswith("--")] or ["bert", "gpt2"])
