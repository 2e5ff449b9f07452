"""
GEMMs with GELU's erf in the epilogue (issue 17, MLP >= 1.0x; BERT and ViT's FC1):
the pointer loop they took until now against the Hopper lowering (persistent, TMA
operands), on the GPU, one process.

    python tools/experiments/erf_gemm_lowering.py [CASE ...] [--json OUT.json]

Each case is compiled twice in this process, `tile_plan.HOPPER_LIBRARY_CALLS` 0 (an
erf epilogue keeps the pointer loop) and 1 (the default now), and both programs,
torch.compile (models) and eager are timed in alternating rounds (`do_bench`
medians, min over rounds); then each program's kernels by the torch profiler, and
the outputs against the f32 module (models) or each other (the sample).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import torch
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
from bench import CASES as SAMPLE_CASES
from bench import make_inputs
from family_sweep import CASES as FAMILY
from model_profile import kernel_times

import tilefuse.analysis.tile_plan as tile_plan
import tilefuse.torch as tt
from tilefuse.frontend.program import load_program
from tilefuse.frontend.specialize import read_header
from tilefuse.runtime.compiled import compile as tf_compile

ROOT = Path(__file__).resolve().parent.parent.parent
ROUNDS = 5
MODELS = {c.name: c for c in [*bench_models.CASES, *FAMILY]}


def timed(fns: dict, rounds: int = ROUNDS) -> dict[str, float]:
    times: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(rounds):
        for k in names[r % len(names) :] + names[: r % len(names)]:
            times[k].append(
                triton.testing.do_bench(
                    fns[k], warmup=10, rep=100, return_mode="median"
                )
            )
    return {k: round(min(v), 4) for k, v in times.items()}


def with_library_calls(n: int, build):
    saved = tile_plan.HOPPER_LIBRARY_CALLS
    tile_plan.HOPPER_LIBRARY_CALLS = n
    try:
        return build()
    finally:
        tile_plan.HOPPER_LIBRARY_CALLS = saved


def tile_lines(source: str) -> list[str]:
    return [
        ln[2:160]
        for ln in source.splitlines()
        if ln.startswith("# tile") and "library" in ln
    ]


def rel(a, b) -> float:
    a, b = torch.as_tensor(a).float(), torch.as_tensor(b).float()
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def sample_case(name: str) -> dict:
    case = next(c for c in SAMPLE_CASES if c.name == name)
    path = ROOT / "samples" / f"{case.sample}.mlir"
    dims = {**read_header(path.read_text()).dims, **case.dims}
    args = make_inputs(load_program(path, case.dims, case.dtype), case, dims, "cuda", 0)
    progs = {f"calls{n}": with_library_calls(n, lambda: tf_compile(path, "h200", case.dims, case.dtype))
             for n in (0, 1)}  # fmt: skip
    fns = {k: (lambda p=p: p(*args)) for k, p in progs.items()}
    outs = {k: f() for k, f in fns.items()}
    row = {"case": name, "ms": timed(fns), "tiles": {k: tile_lines(p.source) for k, p in progs.items()},
           "calls1_vs_calls0": rel(outs["calls1"][0], outs["calls0"][0])}  # fmt: skip
    row["kernels_us"] = {
        k: [(n, round(t, 1)) for n, t, _ in kernel_times(f)] for k, f in fns.items()
    }
    return row


def model_case(name: str) -> dict:
    case = MODELS[name]
    model, args = bench_models.on_gpu(case)
    with torch.no_grad():
        ref = copy.deepcopy(model).float()(
            *(a.float() if a.is_floating_point() else a for a in args)
        )
        progs = {
            f"calls{n}": with_library_calls(n, lambda: tt.compile(model, *args))
            for n in (0, 1)
        }
        theirs = torch.compile(copy.deepcopy(model))
        fns = {**{k: (lambda p=p: p(*args)) for k, p in progs.items()},
               "compile": lambda: theirs(*args), "eager": lambda: model(*args)}  # fmt: skip
        errors = {k: rel(fns[k](), ref) for k in fns}
        row = {"case": name, "ms": timed(fns), "rel_error_vs_f32": errors,
               "tiles": {k: tile_lines(p.source) for k, p in progs.items()}}  # fmt: skip
        row["kernels_us"] = {
            k: [(n, round(t, 1)) for n, t, _ in kernel_times(fns[k])] for k in progs
        }
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "cases", nargs="*", default=["mlp_bf16", "bert", "vit", "bert_large", "vit_l16"]
    )
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for name in a.cases:
        row = (
            sample_case(name)
            if name in {c.name for c in SAMPLE_CASES}
            else model_case(name)
        )
        print(json.dumps(row), flush=True)
        rows.append(row)
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
