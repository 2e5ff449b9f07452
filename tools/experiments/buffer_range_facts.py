"""
The bench bottleneck (tools/bench_models.py CASES, bf16, on the GPU) with its
BatchNorms' `sqrt(var + eps) != 0` checks proved by the buffers' range facts
(`torch/buffers.py`) against the program compiled without facts (the kernels
check, the host reads the flag: one device-to-host sync per call): CPU time of a
call (enqueue, plus the sync) and GPU time (`triton.testing.do_bench`).

    python tools/experiments/buffer_range_facts.py bottleneck
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_models

import tilefuse.torch as tt
from tilefuse.torch.export import state_tensor
from tilefuse.torch.mlir import compile_mlir


def _cpu_ms(fn, calls: int = 50) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    cpu = (time.perf_counter() - start) / calls
    torch.cuda.synchronize()
    return cpu * 1e3


def run(case: bench_models.ModelCase) -> None:
    torch.manual_seed(0)
    model = case.make().eval().to("cuda", torch.bfloat16)
    args = tuple((x.bfloat16() if x.is_floating_point() else x).cuda() for x in case.inputs())
    compiled = tt.compile(model, *args)
    ex = compiled.exported
    unguarded = compile_mlir(ex.mlir, compiled.name, graph=ex.graph, **compiled.options)
    state = [state_tensor(ex.module, n, p).detach() for n, p in ex.state]
    folded = compiled.program.source.count("checks.item()") == 0
    print(f"{case.name}: {len(compiled.guards)} guards, checks folded: {folded}; "
          f"without facts: {unguarded.source.count('_check(') - 1} checks")  # fmt: skip
    calls = {"facts (CompiledModule)": lambda: compiled(*args),
             "facts (program)": lambda: compiled.program(*state, *args),
             "no facts (program)": lambda: unguarded(*state, *args)}  # fmt: skip
    with torch.no_grad():
        for label, fn in calls.items():
            cpu, gpu = _cpu_ms(fn), triton.testing.do_bench(fn)
            print(f"  {label:24s} cpu {cpu:7.3f} ms/call  gpu {gpu:7.3f} ms")


def main(names: list[str]) -> None:
    cases = {c.name: c for c in bench_models.CASES}
    for name in names:
        run(cases[name])


if __name__ == "__main__":
    main(sys.argv[1:] or ["bottleneck"])
