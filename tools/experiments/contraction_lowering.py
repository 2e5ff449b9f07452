"""
Per-kernel CUDA time of a bench model's tilefuse kernels with the Hopper lowering
of contractions allowed (the default on sm_90), with it refused (the pointer
loop's tiles), and with the pointer loop held to each (BM, BN, warps) of a sweep
(every contraction of the model that can take it), side by side in one process:

    python tools/experiments/contraction_lowering.py bottleneck [--sweep]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
from model_profile import kernel_times

import tilefuse.analysis.tile_plan as tile_plan
import tilefuse.torch as tt
from tilefuse.runtime.bench import predicted_kernels

SWEEP = [(64, 64, 4), (64, 128, 4), (128, 64, 4), (128, 128, 4), (128, 128, 8),
         (64, 256, 4), (64, 256, 8), (256, 64, 8), (256, 128, 8)]  # fmt: skip


def held_to(bm: int, bn: int, warps: int):
    """A `hopper_lowering` that refuses and holds each contraction offered BM and BN
    to them (others plan as the default does)."""
    candidate, count = tile_plan._contraction_candidate, tile_plan._contraction_warps

    def only(target, budget, roles, ext, m, n, *args, **kwargs):
        offered = bm in tile_plan._mma_sizes(ext, roles.m) and bn in tile_plan._mma_sizes(ext, roles.n)
        if offered and (m, n) != (bm, bn):
            return None
        return candidate(target, budget, roles, ext, m, n, *args, **kwargs)

    def rule(*args, **kwargs):
        tile_plan._contraction_candidate = only
        tile_plan._contraction_warps = lambda m, n, c: warps if (m, n) == (bm, bn) else count(m, n, c)
        return False

    return rule


def main(names: list[str], sweep: bool) -> None:
    cases = {c.name: c for c in bench_models.CASES}
    default = tile_plan.hopper_lowering
    saved = (tile_plan._contraction_candidate, tile_plan._contraction_warps)
    for name in names:
        case = cases[name]
        torch.manual_seed(0)
        model = case.make().eval().to("cuda", torch.bfloat16)
        args = tuple(x.to("cuda", torch.bfloat16) for x in case.inputs())
        variants = [("hopper lowering allowed", default), ("pointer loop only", lambda *a, **k: False)]
        if sweep:
            variants += [(f"pointer loop, {m} x {n}, {w} warps", held_to(m, n, w)) for m, n, w in SWEEP]
        for label, rule in variants:
            tile_plan._contraction_candidate, tile_plan._contraction_warps = saved
            tile_plan.hopper_lowering = rule
            with torch.no_grad():
                try:
                    ours = tt.compile(model, *args)
                except Exception as e:  # a sweep point no contraction can take
                    print(f"== {name}, {label}: {type(e).__name__}: {str(e)[:120]}")
                    continue
                predicted = {k: t * 1e6 for k, t in predicted_kernels(ours.program, ours.program.target).items()}
                rows = kernel_times(lambda c=ours, a=args: c(*a))
            print(f"== {name}, {label}: {sum(r[1] for r in rows):.1f} us of kernels per call")
            for n, t, c in rows:
                p = f"  predicted {predicted[n]:8.1f} us" if n in predicted else ""
                print(f"  {t:8.1f} us  x{c}  {n[:60]}{p}")
        tile_plan.hopper_lowering = default
        tile_plan._contraction_candidate, tile_plan._contraction_warps = saved


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if a != "--sweep"], "--sweep" in sys.argv)
