"""
What compiling for the GPU at hand changes (the runtime's `auto` target): each bench
or family model (tools/bench_models.py, family_sweep.py) compiled for `h200` and for
the target `auto` resolves to here; where the generated sources differ, both timed in
alternating rounds (CUDA-event medians) with their kernels' profiler times:

    python3 tools/experiments/target_ab.py gpt2 bert llama_sdpa ...
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
import family_sweep
from model_profile import kernel_times

import tilefuse.torch as tt
from tilefuse.runtime.compiled import resolve_target


def main(names: list[str]) -> None:
    here = resolve_target("auto")
    cases = {c.name: c for c in [*bench_models.CASES, *family_sweep.CASES]}
    print(f"the GPU at hand: {torch.cuda.get_device_name()} -> target {here}")
    for name in names:
        model, args = bench_models.on_gpu(cases[name])
        with torch.no_grad():
            progs = {t: tt.compile(model, *args, target=t) for t in ("h200", here)}
            if progs["h200"].program.source == progs[here].program.source:
                print(f"{name}: the same kernels for h200 and {here}")
                continue
            times: dict[str, list[float]] = {t: [] for t in progs}
            for _ in range(5):
                for t, p in progs.items():
                    times[t].append(triton.testing.do_bench(lambda p=p, a=args: p(*a), warmup=10, rep=100,
                                                            return_mode="median"))  # fmt: skip
            for t, p in progs.items():
                rows = kernel_times(lambda p=p, a=args: p(*a))
                print(f"{name} for {t}: {statistics.median(times[t]):.3f} ms a call, "
                      f"{sum(r[1] for r in rows):.1f} us of kernels, {len(p.kernels)} kernels")  # fmt: skip
                for n, us, c in rows:
                    print(f"    {us:8.1f} us  x{c}  {n[:70]}")


if __name__ == "__main__":
    main(sys.argv[1:])
