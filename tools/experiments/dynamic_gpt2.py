"""
A GPT-2 block from the torch front end with a dynamic sequence length (issue 18):
one compiled program for T = 1..2048, timed against the static build at a few T,
torch.compile and eager, on the GPU.

    python tools/experiments/dynamic_gpt2.py --export DIR   # here: torch-mlir needed
    python tools/experiments/dynamic_gpt2.py --run DIR [--json OUT.json]   # on the GPU

`--export` builds the block (width 1024, 16 heads, SDPA causal attention, bf16,
batch 8; weights from seed 0), marks x's tokens dynamic in 1:2048
(`torch._dynamo.mark_dynamic`) and writes the dynamic program tilefuse compiles
(`tilefuse.torch.compile`'s MLIR, weights as arguments) and the static exports at
the bench lengths. `--run` rebuilds the same weights, compiles each file with
`tilefuse.runtime.compile`, runs the dynamic program at 64 distinct lengths (Triton
compiles counted), checks it against eager, and times each bench length: dynamic,
static, `torch.compile` (default mode; `dynamic=False`: it recompiles per length)
and eager, the median of 60 CUDA-event timings each, the builds taking turns call by call.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import torch

WIDTH, HEADS, BATCH, T_MAX = 1024, 16, 8, 2048
BENCH = (128, 1024, 2048)


def block() -> torch.nn.Module:
    from tilefuse.testing.zoo import GPT2Block

    torch.manual_seed(0)
    return GPT2Block(WIDTH, HEADS, T_MAX, sdpa=True).to(torch.bfloat16).eval()


def export(out: Path) -> None:
    import tilefuse.torch as tt
    from tilefuse.ir.dynamic import DimRange

    out.mkdir(parents=True, exist_ok=True)
    model = block()
    x = torch.randn(BATCH, 64, WIDTH, dtype=torch.bfloat16)
    torch._dynamo.mark_dynamic(x, 1, min=1, max=T_MAX)
    exported = tt.export.export(model, (x,), "gpt2_block")
    (out / "dynamic.mlir").write_text(str(exported.mlir))
    ranges = {n: [r.lo, r.hi] for n, r in (exported.dim_ranges or {}).items()}
    (out / "ranges.json").write_text(json.dumps(ranges))
    for t in BENCH:
        static = tt.export.export(model, (torch.zeros(BATCH, t, WIDTH, dtype=torch.bfloat16),),
                                  "gpt2_block")  # fmt: skip
        (out / f"static_{t}.mlir").write_text(str(static.mlir))
    assert all(isinstance(DimRange(*r), DimRange) for r in ranges.values())


def state_of(model: torch.nn.Module) -> list[torch.Tensor]:
    """The program's leading arguments: parameters then buffers, each tensor once, as
    `tilefuse.torch.export.state_names` orders them (not imported: no torch-mlir there)."""
    seen: set[int] = set()
    state = []
    for _, t in [*model.named_parameters(), *model.named_buffers()]:
        if id(t) not in seen:
            seen.add(id(t))
            state.append(t.detach())
    return state


def run(folder: Path, json_out: str | None, with_compile: bool = True) -> None:
    from dynamic_lengths import compiles  # (this folder: run as a script)

    import tilefuse.runtime as tf
    from tilefuse.ir.dynamic import DimRange

    model = block().cuda()
    state = state_of(model)
    ranges = {n: DimRange(*r) for n, r in json.loads((folder / "ranges.json").read_text()).items()}
    start = time.perf_counter()
    program = tf.compile(folder / "dynamic.mlir", dim_ranges=ranges)
    result = {"compile_s": round(time.perf_counter() - start, 2), "kernels": len(program.kernels)}
    gen = torch.Generator(device="cuda").manual_seed(0)

    def tokens(t: int) -> torch.Tensor:
        return torch.randn(BATCH, t, WIDTH, device="cuda", generator=gen, dtype=torch.bfloat16)

    rng = random.Random(0)
    lengths = {1, 2, 3, 15, 16, 17, 127, 128, 129, 1023, 1024, 1025, T_MAX, *BENCH}
    while len(lengths) < 64:
        lengths.add(rng.randint(1, T_MAX))
    start = time.perf_counter()
    program(*state, tokens(1))
    torch.cuda.synchronize()
    result["first_call_s"] = round(time.perf_counter() - start, 2)
    worst = 0.0
    with torch.no_grad():
        for t in sorted(lengths):
            x = tokens(t)
            (y,) = program(*state, x)
            ref = model(x)
            worst = max(worst, float((y.float() - ref.float()).abs().max() / ref.float().abs().max()))
    torch.cuda.synchronize()
    result.update(lengths=len(lengths), triton_compiles=compiles(program),
                  max_rel_error_vs_eager=round(worst, 5), bench=[])  # fmt: skip
    # A call per length, each a size the last call did not have (serving): one pass
    # through all 64, ours and eager, after the first pass compiled everything.
    xs = [tokens(t) for t in sorted(lengths)]
    with torch.no_grad():
        for label, fn in (("dynamic", lambda x: program(*state, x)), ("eager", model)):
            torch.cuda.synchronize()
            start = time.perf_counter()
            for x in xs:
                fn(x)
            torch.cuda.synchronize()
            result[f"all_lengths_ms_{label}"] = round((time.perf_counter() - start) * 1e3, 2)
    del xs
    print(json.dumps(result), flush=True)
    for t in BENCH:
        result["bench"].append(bench_at(t, folder, model, state, program, tokens(t), with_compile))
        print(json.dumps(result["bench"][-1]), flush=True)
        if json_out:
            Path(json_out).write_text(json.dumps(result, indent=1))
    if json_out:
        Path(json_out).write_text(json.dumps(result, indent=1))


def bench_at(t: int, folder: Path, model, state, program, x, with_compile: bool) -> dict:
    """One bench length: dynamic, static, eager (and torch.compile), the median of each
    one's calls, the builds taking turns call by call (`time_interleaved`)."""
    from dynamic_lengths import time_interleaved

    import tilefuse.runtime as tf

    static = tf.compile(folder / f"static_{t}.mlir")
    with torch.no_grad():
        fns = {"dynamic": lambda x: program(*state, x),
               "static": lambda x, s=static: s(*state, x), "eager": model}  # fmt: skip
        if with_compile:
            fns["torch_compile"] = torch.compile(model)
        for fn in fns.values():
            fn(x)
        times = time_interleaved(fns, (x,))
    medians = {k: round(statistics.median(v), 4) for k, v in times.items()}
    medians["static_over_dynamic"] = round(medians["static"] / medians["dynamic"], 3)
    if with_compile:
        medians["compile_over_dynamic"] = round(medians["torch_compile"] / medians["dynamic"], 3)
    return {"T": t, **medians}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--export", metavar="DIR")
    ap.add_argument("--run", metavar="DIR")
    ap.add_argument("--json", metavar="OUT.json")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = ap.parse_args()
    if args.export:
        export(Path(args.export))
    if args.run:
        run(Path(args.run), args.json, not args.no_compile)


if __name__ == "__main__":
    main()
