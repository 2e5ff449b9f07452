"""
One compiled program for many sizes (issue 18): a sample's dynamic form compiled
once, run at 64 distinct sizes of its dynamic dim, the Triton compiles counted; at
the bench sizes each call timed side by side with the sample compiled statically at
that size (and torch eager), on data larger than L2.

    python tools/experiments/dynamic_lengths.py [--quick] [--json OUT.json]

Per case it prints the compile time of the dynamic program (parse to kernels
loaded, then its first call: Triton's JIT), the Triton compiles its 64 sizes made
(one per kernel expected: sizes are unspecialised arguments), and per bench size
the dynamic and the static program's time (median of 60 CUDA-event timings each, L2
flushed before each, the two taking turns call by call: `time_interleaved`) and their
ratio.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

import torch

import tilefuse.runtime as tf
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.frontend.specialize import dynamic_form, specialize
from tilefuse.ir.dynamic import DimRange
from tilefuse.ir.module import entry_function
from tilefuse.oracle.compare import relative_error, tolerance
from tilefuse.runtime.compiled import every_kernel

SAMPLES = Path(__file__).resolve().parents[2] / "samples"

CASES = [  # sample, fixed dims, storage dtype, dynamic dim, its argument dims, range end, bench sizes
    ("softmax", {"N": 4096}, None, "M", ["x.0"], 32768, [8192, 16384]),
    ("layernorm", {"N": 4096}, None, "M", ["x.0"], 32768, [8192, 16384]),
    ("rmsnorm", {"N": 4096}, None, "M", ["x.0"], 32768, [8192, 16384]),
    # a GEMM's M: the variants for M <= 64 and <= 1024 against static builds
    ("linear_bias_relu", {"K": 4096, "N": 11008}, "bf16", "M", ["x.0"], 16384,
     [16, 256, 8192]),
    ("attention", {"B": 4, "H": 32, "D": 128}, "bf16", "S", ["q.2", "k.2", "v.2"], 4096,
     [1024, 4096]),
    # the same with S declared a multiple of 128 (`128:4096:128`): no masks on S
    ("attention", {"B": 4, "H": 32, "D": 128}, "bf16", "S", ["q.2", "k.2", "v.2"], 4096,
     [1024, 4096], 128),
    # the sample transformer block's tokens (LayerNorms, per-head attention, MLP)
    ("transformer_block", {"E": 1024, "H": 16, "Dh": 64, "F": 4096}, "bf16", "S", ["x.0"], 4096,
     [512, 2048]),
]


def compiles(program) -> int:
    """Triton compiles the program's kernels hold (every device), Gluon twins and the
    host's helper kernels too (`runtime.compiled.every_kernel`)."""
    total = 0
    for name in every_kernel(program.python):
        k = getattr(program.python, name)
        k = getattr(k, "kernel", k)  # a FastKernel's Triton kernel
        for caches in getattr(k, "device_caches", {}).values():
            total += len(caches[0])
    return total


def _timed(fn, args, flush: torch.Tensor) -> float:
    """ms of one `fn(*args)` (CUDA events), L2 flushed before it."""
    flush.zero_()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn(*args)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end)


def _flush_buffer() -> torch.Tensor:
    return torch.empty(256 << 20, dtype=torch.int8, device="cuda")


def time_call(fn, args, rounds: int = 20) -> float:
    """Median ms of `fn(*args)`, L2 flushed before each timed call."""
    flush = _flush_buffer()
    return statistics.median(_timed(fn, args, flush) for _ in range(rounds))


def time_interleaved(fns: dict, args, calls: int = 60) -> dict[str, list[float]]:
    """Each of `fns` timed `calls` times (ms, CUDA events, L2 flushed before each call),
    the builds taking turns call by call, the order reversed every call: a clock that
    drops under a long load (a power limit) slows every build alike, where
    back-to-back batches would charge it to whichever ran later."""
    flush = _flush_buffer()
    times: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(calls):
        for name in list(fns)[:: 1 if i % 2 else -1]:
            times[name].append(_timed(fns[name], args, flush))
    return times


def inputs(module, sizes, dtype) -> list[torch.Tensor]:
    xs = random_inputs(module, seed=1, sizes=sizes) if sizes else random_inputs(module, seed=1)
    return [torch.from_numpy(x.astype("float32")).to("cuda", dtype) for x in xs]


def run_case(sample, fixed, storage, dim, names, hi, bench, quick, divisor: int = 1) -> dict:
    text = specialize((SAMPLES / f"{sample}.mlir").read_text(), fixed, storage)
    dyn = dynamic_form(text, dim)
    ranges = {n: DimRange(divisor, hi, divisor) for n in names}
    start = time.perf_counter()
    program = tf.compile(dyn, dim_ranges=ranges)
    compile_s = time.perf_counter() - start
    module = load_program(dyn, dim_ranges=ranges)
    first = entry_function(module).function_type.inputs.data[0]
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[
        str(first.get_element_type())]  # type: ignore[attr-defined]
    rng = random.Random(0)
    lengths = {n for n in (1, 2, 3, 15, 16, 17, 127, 128, 129) if n % divisor == 0} | {hi, *bench}
    while len(lengths) < min(64, hi // divisor):  # (64 distinct, where the range has as many)
        lengths.add(rng.randint(1, hi // divisor) * divisor)
    lengths = sorted(lengths)
    big = inputs(module, dict.fromkeys(names, hi), dtype)
    f = entry_function(module)
    axes = {i: int(n.split(".")[1]) for n in names for i, a in enumerate(f.body.block.args)
            if a.name_hint == n.split(".")[0]}  # fmt: skip

    def at(n: int) -> list[torch.Tensor]:  # the range end's inputs cut to n (one draw)
        return [x.narrow(axes[i], 0, n).contiguous() if i in axes else x for i, x in enumerate(big)]

    start = time.perf_counter()
    program(*at(lengths[0]))
    torch.cuda.synchronize()
    first_call_s = time.perf_counter() - start
    for n in lengths:
        program(*at(n))
    torch.cuda.synchronize()
    out = {"sample": sample, "dim": dim, "range": str(ranges[names[0]]), "lengths": len(lengths),
           "compile_s": round(compile_s, 2), "first_call_s": round(first_call_s, 2),
           "triton_compiles": compiles(program), "kernels": len(program.kernels), "bench": []}  # fmt: skip
    for n in bench if not quick else bench[:1]:
        static = tf.compile(specialize(text, {dim: n}, None))
        args = at(n)
        for got, want in zip(program(*args), static(*args), strict=True):  # (and warm)
            err = relative_error(got.float().cpu().numpy(), want.float().cpu().numpy())
            assert err <= 4 * tolerance(str(first.get_element_type())), (sample, n, err)  # type: ignore[attr-defined]
        times = time_interleaved({"dynamic": program, "static": static}, args)
        d, s = (statistics.median(times[k]) for k in ("dynamic", "static"))
        q = {k: statistics.quantiles(v, n=4) for k, v in times.items()}  # (quartiles)
        out["bench"].append({"size": n, "dynamic_ms": round(d, 4), "static_ms": round(s, 4),
                             "static_over_dynamic": round(s / d, 3),
                             "quartiles_ms": {k: [round(x, 4) for x in v] for k, v in q.items()}})  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--quick", action="store_true", help="one bench size per case")
    ap.add_argument("--json", metavar="OUT.json")
    ap.add_argument("--cases", nargs="*", help="samples to run (default: all)")
    args = ap.parse_args()
    results = []
    for case in [c for c in CASES if not args.cases or c[0] in args.cases]:
        r = run_case(*case[:7], args.quick, *case[7:])
        results.append(r)
        print(json.dumps(r), flush=True)
        if args.json:  # after each case: a cut run keeps what it measured
            Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
