"""
Sibling contractions (SwiGLU's gate and up projections) fused into one kernel, as the
fusion planner does, against kept apart (the up projection its own GEMM, its output
read by the gate's epilogue): per-kernel CUDA time of the MLP's kernels, both builds
in one process (issue 17: fused vs unfused decided by time).

    python3 tools/experiments/sibling_split.py llama_sdpa llama_2048_gqa_sdpa ...
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
import family_sweep
from model_profile import kernel_times

import tilefuse.analysis.fusion_plan as fusion_plan
import tilefuse.torch as tt
from tilefuse.analysis.dataflow import CONTRACTION
from tilefuse.runtime.bench import predicted_kernels


def _apart(original):
    def refusal(st, producer, consumer, gp, gc, merged):
        if sum(n.kind == CONTRACTION for n in merged) > 1:
            return "experiment: contractions kept apart"
        return original(st, producer, consumer, gp, gc, merged)

    return refusal


def main(names: list[str]) -> None:
    cases = {c.name: c for c in [*bench_models.CASES, *family_sweep.CASES]}
    original = fusion_plan._refusal
    for name in names:
        model, args = bench_models.on_gpu(cases[name])
        with torch.no_grad():
            for label, rule in (("fused", original), ("apart", _apart(original))):
                fusion_plan._refusal = rule
                try:
                    ours = tt.compile(copy.deepcopy(model), *args)
                finally:
                    fusion_plan._refusal = original
                predicted = {k: t * 1e6 for k, t in predicted_kernels(ours.program, ours.program.target).items()}
                rows = kernel_times(lambda c=ours, a=args: c(*a))
                print(f"== {name} {label}: {len(ours.kernels)} kernels, {sum(r[1] for r in rows):.1f} us per call")
                for n, t, c in rows[:6]:
                    p = f"  predicted {predicted[n]:7.1f}" if n in predicted else ""
                    print(f"  {t:8.1f} us  x{c}  {n[:40]}{p}")


if __name__ == "__main__":
    main(sys.argv[1:])
