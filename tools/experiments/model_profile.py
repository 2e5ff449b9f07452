"""
Per-kernel CUDA time of a bench model (tools/bench_models.py CASES), tilefuse vs
torch.compile, from torch.profiler over 20 calls; tilefuse's kernels also with the
cost model's predicted time and measured / predicted:

    python tools/experiments/model_profile.py gpt2 bert
"""

from __future__ import annotations

import copy
import os
import sys
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_models

import tilefuse.torch as tt
from tilefuse.runtime.bench import predicted_kernels


def kernel_times(fn, calls: int = 20) -> list[tuple[str, float, int]]:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for e in p.events():
        if e.device_type.name == "CUDA":
            total[e.name] += e.device_time_total / calls
            count[e.name] += 1
    rows = [(n, t, count[n] // calls) for n, t in total.items()]
    return sorted(rows, key=lambda r: -r[1])


def main(names: list[str]) -> None:
    cases = {c.name: c for c in bench_models.CASES}
    for name in names:
        case = cases[name]
        model, args = bench_models.on_gpu(case)
        with torch.no_grad():
            ours = tt.compile(model, *args)
            theirs = torch.compile(copy.deepcopy(model))
            predicted = {k: t * 1e6 for k, t in predicted_kernels(ours.program, ours.program.target).items()}
            for label, compiled in (("tilefuse", ours), ("torch.compile", theirs)):
                rows = kernel_times(lambda c=compiled, a=args: c(*a))
                print(f"== {name} {label}: {sum(r[1] for r in rows):.1f} us of kernels per call")
                for n, t, c in rows:
                    p = f"  predicted {predicted[n]:8.1f} us  ratio {t / predicted[n]:5.2f}" if n in predicted else ""
                    print(f"  {t:8.1f} us  x{c}  {n[:110]}{p}")
        out = os.environ.get("OUT")
        if out:  # the generated module, to read next to the times
            Path(out, f"{name}.py").write_text(ours.source)


if __name__ == "__main__":
    main(sys.argv[1:])
