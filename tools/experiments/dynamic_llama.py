"""
A LLaMA block (bf16, d1024, 16/4 heads, SwiGLU 2816, SDPA causal, rotary tables of
2048 positions sliced by the length) with a dynamic sequence length through
`tilefuse.torch.compile`, against the static build at a few lengths and eager, on
the GPU, in one process (issue 18; the buffers' `cos[:t]` slices compile since the
eighteenth session).

    python tools/experiments/dynamic_llama.py [--json OUT.json]

The dynamic program is marked for T in 1:2047 (torch guards `t != 2048`, the tables'
length); each bench length is timed dynamic / static / eager in alternating rounds
(`triton.testing.do_bench` medians, min over rounds), outputs checked against eager.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import triton.testing

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import tilefuse.torch as tt
from tilefuse.testing.zoo import LlamaBlock

BATCH, WIDTH, T_MAX = 8, 1024, 2048
BENCH = (128, 1024)
ROUNDS = 3


def main(json_out: str | None, attention: str) -> None:
    torch.manual_seed(0)
    model = LlamaBlock(WIDTH, 16, 4, 2816, T_MAX, attention).to(torch.bfloat16).cuda().eval()
    x = torch.randn(BATCH, 64, WIDTH, dtype=torch.bfloat16, device="cuda")
    torch._dynamo.mark_dynamic(x, 1, min=1, max=T_MAX - 1)
    start = time.perf_counter()
    dynamic = tt.compile(model, x)
    result = {"device": torch.cuda.get_device_name(), "dynamic_compile_s": round(time.perf_counter() - start, 1),
              "dynamic_kernels": len(dynamic.kernels), "cases": {}}  # fmt: skip
    for t in BENCH:
        xs = torch.randn(BATCH, t, WIDTH, dtype=torch.bfloat16, device="cuda")
        static = tt.compile(model, xs)
        with torch.no_grad():
            ref = model(xs).float()
            errors = {k: float((f(xs).float() - ref).abs().max() / ref.abs().max())
                      for k, f in (("dynamic", dynamic), ("static", static))}  # fmt: skip
            fns = {"dynamic": lambda xs=xs: dynamic(xs), "static": lambda xs=xs, s=static: s(xs),
                   "eager": lambda xs=xs: model(xs)}
            times: dict[str, list[float]] = {k: [] for k in fns}
            for r in range(ROUNDS):
                for k in list(fns)[r % 3:] + list(fns)[: r % 3]:
                    times[k].append(triton.testing.do_bench(fns[k], warmup=10, rep=100, return_mode="median"))
        ms = {k: round(min(v), 4) for k, v in times.items()}
        result["cases"][t] = {"ms": ms, "static_over_dynamic": round(ms["static"] / ms["dynamic"], 3),
                              "static_kernels": len(static.kernels), "errors": errors}  # fmt: skip
        print(json.dumps({t: result["cases"][t]}), flush=True)
    print(json.dumps(result))
    if json_out:
        Path(json_out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--attention", default="sdpa", choices=["sdpa", "eager"])
    args = ap.parse_args()
    main(args.json, args.attention)
