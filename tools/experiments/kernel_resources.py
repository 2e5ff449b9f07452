"""
Registers, spills and shared memory of each compiled kernel of a bench model on the
GPU (the device's Triton, as it loaded them), next to the plan's numbers:

    python tools/experiments/kernel_resources.py llama_sdpa bert
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
from family_sweep import CASES

import tilefuse.torch as tt
from tilefuse.ir.tilefuse import GroupOp


def main(names: list[str]) -> None:
    cases = {c.name: c for c in CASES + bench_models.CASES}
    for name in names:
        case = cases[name]
        model, args = bench_models.on_gpu(case)
        with torch.no_grad():
            ours = tt.compile(model, *args)
            ours(*args)
        plans = {g.sym_name.data: g.grids[0].plan for g in ours.program.module.walk()
                 if isinstance(g, GroupOp) and g.grids and g.grids[0].plan is not None}  # fmt: skip
        print(f"== {name}")
        for kname in ours.program.kernels:
            k = getattr(ours.program.python, kname)
            k = getattr(k, "kernel", k)
            for cache in getattr(k, "device_caches", {}).values():
                compiled_kernels = next(c for c in cache if isinstance(c, dict)).values()
                for compiled in compiled_kernels:
                    compiled._init_handles()
                    plan = plans.get(kname)
                    print(f"  {kname:18} regs {compiled.n_regs:4} spills {compiled.n_spills:4} "
                          f"shared {compiled.metadata.shared / 1024:6.1f} KB"
                          + (f"  plan {plan.working_set.data / 1024:6.1f} KB, ~{plan.regs.data} regs"
                             if plan is not None else ""))  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
