"""
Attention tiles and the causal diagonal split, through the compiler (issue 17).

`F.scaled_dot_product_attention` (bf16, issue 17's shapes) exported once through the
torch front-end, then compiled by `tilefuse.runtime.compile` with the flash-attention
tile plan overridden: query tile B_r, key tile B_c, warps, stages; for the causal
shapes also with the key loop unsplit (`TileProgramBuilder._below_diagonal` off: the mask on
every chunk, as before the split). Each kernel is timed against SDPA (cuDNN/flash) in
the same process, alternating, median of CUDA-event timings.

    python tools/experiments/attention_tiles.py [quick]

Prints one JSON line per (shape, variant): median ms, TF/s, ratio to SDPA, and the
largest error against SDPA's output.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from contextlib import contextmanager

import torch
import torch.nn.functional as F

from tilefuse.analysis import tile_plan
from tilefuse.analysis.tile_plan import GRID, LOOP
from tilefuse.passes.tile_and_fuse import TileProgramBuilder
from tilefuse.runtime.compiled import compile as compile_mlir
from tilefuse.torch.export import export


class SDPA(torch.nn.Module):
    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        gqa = q.shape[1] != k.shape[1]
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, enable_gqa=gqa)


SHAPES = {
    "d128": (4, 32, 32, 4096, 128),
    "d64": (8, 16, 16, 2048, 64),
    "gqa": (4, 32, 8, 4096, 128),
}
CONFIGS = [None, (128, 128, 8, 3), (128, 64, 8, 3), (128, 64, 4, 2), (128, 64, 4, 3),
           (64, 64, 4, 3), (64, 64, 4, 2)]  # fmt: skip
"""(B_r, B_c, warps, stages); None: the plan's own."""


@contextmanager
def attention_plan(config):
    original = tile_plan._plan_attention

    def patched(graph, dims, target, budget, sm):
        plan = original(graph, dims, target, budget, sm)
        if config is None:
            return plan
        br, bc, warps, stages = config
        tiles = []
        for t in plan.dims:
            if t.mode == GRID and t.block > 1:
                t = dataclasses.replace(t, block=br)
            elif t.mode == LOOP:  # the key dim (the head dims are WHOLE)
                t = dataclasses.replace(t, block=bc)
            tiles.append(t)
        return dataclasses.replace(plan, dims=tuple(tiles), num_warps=warps, num_stages=stages)

    tile_plan._plan_attention = patched
    try:
        yield
    finally:
        tile_plan._plan_attention = original


@contextmanager
def unsplit(off: bool):
    original = TileProgramBuilder._below_diagonal
    if off:
        TileProgramBuilder._below_diagonal = lambda self, sm, outer, ub: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        TileProgramBuilder._below_diagonal = original  # type: ignore[method-assign]


def timed(fn, args, reps: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(*args)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main(quick: bool) -> None:
    torch.manual_seed(0)
    reps = 5 if quick else 25
    for name, (b, h, hk, s, d) in SHAPES.items():
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hk, s, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hk, s, d, device="cuda", dtype=torch.bfloat16)
        for causal in (False, True) if name != "gqa" else (False,):
            model = SDPA(causal)
            text = str(export(model, (q, k, v), "SDPA").mlir)
            want = model(q, k, v)
            flops = 4 * b * h * s * s * d / (2 if causal else 1)
            variants = [(c, False) for c in CONFIGS] + ([(None, True)] if causal else [])
            for config, off in variants:
                try:
                    with attention_plan(config), unsplit(off):
                        prog = compile_mlir(text)
                    (got,) = prog(q, k, v)
                except Exception as e:  # a config Triton refuses: report and go on
                    print(json.dumps({"shape": name, "causal": causal, "config": config,
                                      "unsplit": off, "error": str(e)[:200]}), flush=True)  # fmt: skip
                    continue
                err = (got.float() - want.float()).abs().max().item()
                ours, ref = [], []
                for _ in range(reps):
                    ours.append(timed(prog, (q, k, v), 1))
                    ref.append(timed(model, (q, k, v), 1))
                t, r = median(ours), median(ref)
                print(json.dumps({"shape": name, "causal": causal, "config": config or "plan",
                                  "unsplit": off, "ms": round(t, 4), "sdpa_ms": round(r, 4),
                                  "tflops": round(flops / t / 1e9, 1), "vs_sdpa": round(r / t, 3),
                                  "max_err": err}), flush=True)  # fmt: skip


if __name__ == "__main__":
    main(len(sys.argv) > 1 and sys.argv[1] == "quick")
