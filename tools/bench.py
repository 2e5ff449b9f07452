"""
Benchmark: tilefuse vs torch eager vs torch.compile, sample by sample, in one process.

    python tools/bench.py                    # GPU: realistic sizes (data >> L2)
    python tools/bench.py --only softmax     # a subset (comma-separated case names)
    python tools/bench.py --quick            # CPU: tiny sizes, Triton interpreter (CI)
    python tools/bench.py --group models     # whole nn.Modules (tools/bench_models.py)

For each case: fresh random inputs (standard normal, never zeros); tilefuse's
outputs checked against eager PyTorch on fp32-upcast inputs before anything is
timed; then medians from `triton.testing.do_bench` (ours and torch.compile in
three alternating rounds, the median of each side's kept). Columns: time, effective
bandwidth (the minimum bytes: every input read once, every output written
once, over the time), TFLOP/s (the cost model's FLOP count), speed ratio to
torch.compile, % of the copy bandwidth measured in the same run (or of the
measured bf16 matmul rate for matmul-bound cases), % of a copy moving the
case's own bytes (`% cpN`, memory-bound cases: the ceiling at that size, fixed
costs included), kernels per call (torch
profiler), and compile time to first result (tilefuse pipeline + Triton JIT vs
torch.compile's first call), each in a fresh process with empty caches
(`cold_first_call`; `--warm-compile-only` skips these processes and reports
the times measured in this one, where earlier cases warmed both compilers).
A table goes to stdout, everything to
`--json`, and each tilefuse kernel's measured vs predicted roofline point to
`--png`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import torch  # noqa: E402

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from torch_models import MODELS  # noqa: E402

from tilefuse.frontend.program import load_program  # noqa: E402
from tilefuse.frontend.specialize import read_header  # noqa: E402
from tilefuse.oracle.compare import relative_error, tolerance  # noqa: E402
from tilefuse.runtime.compiled import compile as tf_compile  # noqa: E402

TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class Case:
    """One benchmark: a sample at given sizes and storage type."""

    name: str
    sample: str
    dims: dict[str, int]
    dtype: str
    matmul_bound: bool = False
    fan_in: dict[int, str] = field(default_factory=dict)
    """Weights (argument index -> fan-in dim, see `_fan_in`) scaled by 1/sqrt(fan-in), as a
    model initialises them; unscaled N(0, 1) weights make deep bf16 graphs
    ill-conditioned (softmax of scores in the thousands)."""


CASES = [
    Case("relu_add_f32", "relu_add", {"M": 8192, "N": 8192}, "f32"),
    Case("relu_add_bf16", "relu_add", {"M": 8192, "N": 8192}, "bf16"),
    Case("chain_f32", "elementwise_chain", {"M": 8192, "N": 8192}, "f32"),
    Case("chain_bf16", "elementwise_chain", {"M": 8192, "N": 8192}, "bf16"),
    Case("bias_gelu_bf16", "bias_gelu", {"M": 8192, "N": 8192}, "bf16"),
    Case("softmax_f32", "softmax", {"M": 4096, "N": 8192}, "f32"),
    Case("softmax_bf16", "softmax", {"M": 4096, "N": 8192}, "bf16"),
    Case("softmax_long_bf16", "softmax", {"M": 256, "N": 131072}, "bf16"),
    Case("layernorm_f32", "layernorm", {"M": 16384, "N": 4096}, "f32"),
    Case("layernorm_bf16", "layernorm", {"M": 16384, "N": 4096}, "bf16"),
    Case("rmsnorm_f32", "rmsnorm", {"M": 16384, "N": 4096}, "f32"),
    Case("rmsnorm_bf16", "rmsnorm", {"M": 16384, "N": 4096}, "bf16"),
    Case("four_layernorms_bf16", "four_layernorms", {"M": 16384, "N": 1024}, "bf16"),
    Case("linear_bf16", "linear_bias_relu", {"M": 8192, "K": 4096, "N": 4096}, "bf16", True,
         {1: "K"}),
    Case("linear_skinny_bf16", "linear_bias_relu", {"M": 256, "K": 4096, "N": 4096}, "bf16", True,
         {1: "K"}),  # 256 tokens through a 4096 x 4096 Linear (issue 17)
    Case("linear_odd_bf16", "linear_bias_relu", {"M": 3000, "K": 4096, "N": 11008}, "bf16", True,
         {1: "K"}),  # LLaMA-7B's up projection at 3000 tokens: no size a power of two
    Case("conv_bias_relu_bf16", "conv_bias_relu",
         {"N": 32, "H": 58, "W": 62, "C": 64, "F": 128, "OH": 56, "OW": 60}, "bf16", True,
         {1: "KKC"}),
    Case("mlp_bf16", "mlp", {"M": 8192, "D": 4096, "F": 16384}, "bf16", True,
         {1: "D", 3: "F"}),
    Case("attention_bf16", "attention", {"B": 4, "H": 32, "S": 4096, "D": 128}, "bf16", True),
    Case("attention_d64_bf16", "attention", {"B": 8, "H": 16, "S": 2048, "D": 64}, "bf16", True),
    Case("transformer_bf16", "transformer_block",
         {"S": 4096, "E": 4096, "H": 32, "Dh": 128, "F": 16384}, "bf16", True,
         {3: "E", 4: "E", 5: "E", 6: "HDh", 9: "E", 11: "F"}),
]  # fmt: skip

ROUNDS = 3
"""Alternating timing rounds of ours and torch.compile per case (GPU)."""

QUICK = [
    Case("relu_add_f32", "relu_add", {"M": 64, "N": 96}, "f32"),
    Case("softmax_bf16", "softmax", {"M": 16, "N": 200}, "bf16"),
    Case("layernorm_f32", "layernorm", {"M": 16, "N": 128}, "f32"),
    Case("linear_f32", "linear_bias_relu", {"M": 32, "K": 48, "N": 32}, "f32", True),
]


@dataclass
class Result:
    """One row of the table (times in milliseconds)."""

    case: str
    ours_ms: float
    eager_ms: float
    compiled_ms: float | None
    min_bytes: int
    flops: int
    kernels_ours: int
    kernels_compiled: int | None
    compile_ours_s: float | None
    compile_torch_s: float | None
    max_rel_error: float
    per_kernel: list[dict] = field(default_factory=list)
    sdpa_ms: float | None = None
    """torch's scaled_dot_product_attention (cuDNN/flash), for attention cases."""
    tuned_ms: float | None = None
    """With `--autotune`: the program built from each kernel's fastest candidate."""
    tune_s: float | None = None
    compile_ours_warm_s: float | None = None
    """Compile time measured in this process (after earlier cases)."""
    compile_torch_warm_s: float | None = None
    copy_ms: float | None = None
    """A device copy moving the case's minimum bytes (half read, half written),
    timed the same way: the ceiling at this size, fixed costs included."""

    @property
    def gbps(self) -> float:
        return self.min_bytes / (self.ours_ms * 1e-3) / 1e9


def timer(fn, gpu: bool) -> float:
    """Median milliseconds of `fn()`."""
    if gpu:
        import triton.testing

        return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[1]


def same_size_copy_ms(nbytes: int) -> float:
    """Median milliseconds of a device copy reading nbytes / 2 and writing as much."""
    src = torch.randn(nbytes // 8, device="cuda")
    dst = torch.empty_like(src)
    return timer(lambda: dst.copy_(src), True)


def count_kernels(fn) -> int:
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    names = [e.name for e in p.events() if e.device_type.name == "CUDA"]
    return sum(1 for n in names if "memcpy" not in n.lower() and "memset" not in n.lower())


def _fan_in(name: str, dims: dict[str, int]) -> int:
    """A weight's fan-in: a dim, or heads x head dim ("HDh"), or a convolution
    filter's K x K x C ("KKC")."""
    if name == "HDh":
        return dims["H"] * dims["Dh"]
    if name == "KKC":
        return dims["K"] ** 2 * dims["C"]
    return dims[name]


def make_inputs(module, case: Case, dims: dict[str, int], device: str, seed: int) -> list[torch.Tensor]:
    from tilefuse.ir.module import entry_function

    gen = torch.Generator(device=device).manual_seed(seed)
    f = entry_function(module)
    out = []
    for i, t in enumerate(f.function_type.inputs.data):
        x = torch.randn(tuple(t.get_shape()), generator=gen, device=device, dtype=torch.float32)
        if i in case.fan_in:
            fan = _fan_in(case.fan_in[i], dims)
            x *= fan**-0.5
        out.append(x.to(TORCH_DTYPE[case.dtype]))
    return out


def measure_ceilings(gpu: bool) -> dict[str, float]:
    """Copy bandwidth (bytes read + written per second) and bf16 matmul FLOP/s."""
    if not gpu:
        return {"copy_Bps": float("nan"), "matmul_flops": float("nan")}
    x = torch.randn(256 * 1024 * 1024, device="cuda")  # 1 GiB
    y = torch.empty_like(x)
    ms = timer(lambda: y.copy_(x), True)
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    mm = timer(lambda: a @ b, True)
    return {"copy_Bps": 2 * 256 * 1024 * 1024 * 4 / (ms * 1e-3), "matmul_flops": 2 * n**3 / (mm * 1e-3)}


def tuned_run(case: Case, path: Path, inputs: list, ours: tuple) -> tuple[float, float]:
    """(ms of the autotuned program, seconds the tuning took); checked against ours."""
    from tilefuse.runtime.autotune import autotune

    start = time.perf_counter()
    tuned, picked = autotune(path, inputs, "auto", case.dims, case.dtype,
                             timer=lambda fn: timer(fn, True) * 1e-3)  # fmt: skip
    tune_s = time.perf_counter() - start
    for o, t in zip(ours, tuned(*inputs), strict=True):
        e = relative_error(t.float().cpu().numpy(), o.float().cpu().numpy())
        if not e <= tolerance(case.dtype) * 4:
            print(f"{case.name}: MISMATCH: autotuned vs default {e:.2e}", file=sys.stderr)
    print(f"{case.name}: {picked.format()}", file=sys.stderr)
    return timer(lambda: tuned(*inputs), True), tune_s


COLD_CHILD = """
import sys, time
sys.path.insert(0, sys.argv[3])
import torch
import bench
case = next(c for c in bench.CASES if c.name == sys.argv[1])
path = bench.ROOT / "samples" / f"{case.sample}.mlir"
dims = {**bench.read_header(path.read_text()).dims, **case.dims}
inputs = bench.make_inputs(bench.load_program(path, case.dims, case.dtype), case, dims, "cuda", 0)
if sys.argv[2] == "torch":
    import torch._dynamo, torch._inductor.compile_fx  # imports are not compile time
    model = bench.MODELS[case.sample]
    fn = torch.compile(lambda *a: model(*a, dims=dims))
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn(*inputs)
else:
    import triton, triton.language  # imports are not compile time
    torch.cuda.synchronize()
    start = time.perf_counter()
    bench.tf_compile(path, "auto", case.dims, case.dtype)(*inputs)
torch.cuda.synchronize()
print(time.perf_counter() - start)
"""


def cold_first_call(case: Case, compiler: str) -> float | None:
    """Seconds from nothing compiled to the first result, in a fresh process
    with empty Triton, Inductor and tilefuse caches; modules already imported
    (`compiler`: "tilefuse" or "torch"). None if the process failed."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tf_cold_") as tmp:
        env = dict(os.environ)
        for var in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TILEFUSE_CACHE"):
            env[var] = os.path.join(tmp, var)
        done = subprocess.run([sys.executable, "-c", COLD_CHILD, case.name, compiler,
                               str(ROOT / "tools")], env=env, capture_output=True, text=True)  # fmt: skip
    try:
        return float(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"{case.name}: cold {compiler} run failed:\n{done.stderr[-2000:]}", file=sys.stderr)
        return None


def run_case(case: Case, gpu: bool, use_compile: bool, seed: int, tune: bool = False) -> Result:
    from tilefuse.ir.tilefuse import GroupOp
    from tilefuse.runtime.bench import measured_kernels, predicted_kernels

    device = "cuda" if gpu else "cpu"
    path = ROOT / "samples" / f"{case.sample}.mlir"
    dims = {**read_header(path.read_text()).dims, **case.dims}
    module = load_program(path, case.dims, case.dtype)
    inputs = make_inputs(module, case, dims, device, seed)

    start = time.perf_counter()
    prog = tf_compile(path, "auto", case.dims, case.dtype)
    ours = prog(*inputs)
    if gpu:
        torch.cuda.synchronize()
    compile_ours = time.perf_counter() - start

    model = MODELS[case.sample]
    ref = model(*[x.float() for x in inputs], dims=dims)
    err = max(relative_error(o.float().cpu().numpy(), r.float().cpu().numpy())
              for o, r in zip(ours, ref, strict=True))  # fmt: skip
    if not err <= tolerance(case.dtype) * 4:
        print(f"{case.name}: MISMATCH: tilefuse vs eager relative error {err:.2e}", file=sys.stderr)
    del ref

    eager_ms = timer(lambda: model(*inputs, dims=dims), gpu)
    compiled = compile_torch = kernels_compiled = None
    if use_compile:
        torch._dynamo.reset()
        compiled = torch.compile(lambda *a: model(*a, dims=dims))
        start = time.perf_counter()
        compiled(*inputs)
        torch.cuda.synchronize()
        compile_torch = time.perf_counter() - start
        kernels_compiled = count_kernels(lambda: compiled(*inputs))
    # Ours and torch.compile timed in alternating rounds, the median of each
    # side's medians kept: a clock or allocator state that favours whichever
    # is timed first or last is shared by both.
    ours_t, compiled_t = [], []
    for _ in range(ROUNDS if gpu else 1):
        ours_t.append(timer(lambda: prog(*inputs), gpu))
        if compiled is not None:
            compiled_t.append(timer(lambda: compiled(*inputs), gpu))
    ours_ms = statistics.median(ours_t)
    compiled_ms = statistics.median(compiled_t) if compiled_t else None
    kernels_ours = count_kernels(lambda: prog(*inputs)) if gpu else len(prog.kernels)
    sdpa_ms = None
    if gpu and case.sample == "attention":
        import torch.nn.functional as F

        sdpa_ms = timer(lambda: F.scaled_dot_product_attention(*inputs), gpu)

    min_bytes = sum(x.numel() * x.element_size() for x in inputs) + sum(
        o.numel() * o.element_size() for o in ours
    )
    copy_ms = same_size_copy_ms(min_bytes) if gpu and not case.matmul_bound else None
    flops = sum(g.cost.flops.data for g in prog.module.walk() if isinstance(g, GroupOp) and g.cost)
    per_kernel = []
    if gpu:
        measured, predicted = measured_kernels(prog, inputs), predicted_kernels(prog, prog.target)
        for g in prog.module.walk():
            if isinstance(g, GroupOp):
                name = g.sym_name.data
                per_kernel.append({"kernel": name, "flops": g.cost.flops.data,
                                   "bytes": g.cost.fused_bytes.data,
                                   "measured_s": measured.get(name), "predicted_s": predicted.get(name)})  # fmt: skip
    tuned_ms, tune_s = tuned_run(case, path, inputs, ours) if tune and gpu else (None, None)
    return Result(case.name, ours_ms, eager_ms, compiled_ms, min_bytes, flops, kernels_ours,
                  kernels_compiled, compile_ours, compile_torch, err, per_kernel, sdpa_ms,
                  tuned_ms, tune_s, copy_ms=copy_ms)  # fmt: skip


def _secs(x: float | None, width: int, digits: int) -> str:
    return f"{x:{width}.{digits}f}" if x is not None else f"{'n/a':>{width}}"


def table(results: list[Result], ceilings: dict[str, float], cases: dict[str, Case]) -> str:
    head = (f"{'case':<22} {'ours ms':>9} {'eager':>8} {'compile':>8} {'vs comp':>8} "
            f"{'GB/s':>7} {'TF/s':>7} {'% ceil':>7} {'% cpN':>6} {'kern':>5} {'kcomp':>5} "
            f"{'tf s':>6} {'tc s':>6} {'err':>8}")  # fmt: skip
    lines = [head, "-" * len(head)]
    for r in results:
        c = cases[r.case]
        ratio = r.compiled_ms / r.ours_ms if r.compiled_ms else float("nan")
        tflops = r.flops / (r.ours_ms * 1e-3) / 1e12
        if c.matmul_bound:
            ceil = 100 * r.flops / (r.ours_ms * 1e-3) / ceilings["matmul_flops"]
        else:
            ceil = 100 * r.min_bytes / (r.ours_ms * 1e-3) / ceilings["copy_Bps"]
        comp = f"{r.compiled_ms:8.3f}" if r.compiled_ms else f"{'n/a':>8}"
        cpn = f"{100 * r.copy_ms / r.ours_ms:5.1f}%" if r.copy_ms else f"{'':>6}"
        kcomp = f"{r.kernels_compiled:5d}" if r.kernels_compiled is not None else f"{'n/a':>5}"
        tcs = f"{r.compile_torch_s:6.1f}" if r.compile_torch_s is not None else f"{'n/a':>6}"
        lines.append(f"{r.case:<22} {r.ours_ms:9.3f} {r.eager_ms:8.3f} {comp} {ratio:7.2f}x "
                     f"{r.gbps:7.0f} {tflops:7.1f} {ceil:6.1f}% {cpn} {r.kernels_ours:5d} {kcomp} "
                     f"{_secs(r.compile_ours_s, 6, 1)} {tcs} {r.max_rel_error:8.1e}")  # fmt: skip
    warm = [r for r in results if r.compile_ours_warm_s is not None]
    if warm:
        lines += ["", f"{'compile s':<22} {'cold ours':>9} {'torch':>7} {'in-process ours':>16} {'torch':>7}"]
        for r in warm:
            cells = [f"{x:7.2f}" if x is not None else f"{'n/a':>7}" for x in
                     (r.compile_torch_s, r.compile_ours_warm_s, r.compile_torch_warm_s)]  # fmt: skip
            lines.append(f"{r.case:<22} {_secs(r.compile_ours_s, 9, 2)} {cells[0]} {cells[1]:>16} {cells[2]}")
    tuned = [r for r in results if r.tuned_ms]
    if tuned:
        lines += ["", f"{'autotuned (optional)':<22} {'ms':>9} {'vs default':>10} {'vs comp':>8} {'tune s':>7}"]
        for r in tuned:
            ratio = r.compiled_ms / r.tuned_ms if r.compiled_ms else float("nan")
            lines.append(f"{r.case:<22} {r.tuned_ms:9.3f} {r.ours_ms / r.tuned_ms:9.2f}x "
                         f"{ratio:7.2f}x {r.tune_s:7.1f}")  # fmt: skip
    return "\n".join(lines)


def roofline_png(results: list[Result], ceilings: dict[str, float], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tilefuse.analysis.cost.target import get_target
    from tilefuse.runtime.compiled import resolve_target

    t = get_target(resolve_target("auto"))
    fig, ax = plt.subplots(figsize=(8, 5))
    xs = [2.0**e for e in range(-4, 14)]
    bw = ceilings["copy_Bps"]
    ax.plot(xs, [min(ceilings["matmul_flops"], x * bw) for x in xs], "k-", label="measured roof (copy BW, bf16 GEMM)")
    ax.plot(xs, [min(t.peak_flops("bf16", True), x * t.hbm_bandwidth) for x in xs], "k:", label=f"model roof ({t.name})")
    for r in results:
        for k in r.per_kernel:
            if not k["measured_s"] or not k["bytes"]:
                continue
            i = k["flops"] / k["bytes"]
            ax.scatter(i, k["flops"] / k["measured_s"], marker="o", color="C0")
            ax.scatter(i, k["flops"] / k["predicted_s"], marker="x", color="C3")
            ax.annotate(r.case, (i, k["flops"] / k["measured_s"]), fontsize=6)
    ax.scatter([], [], marker="o", color="C0", label="measured kernel")
    ax.scatter([], [], marker="x", color="C3", label="predicted kernel")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title("tilefuse kernels on the H200: measured vs predicted")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def measure_case(case: Case, gpu: bool, args: argparse.Namespace) -> Result:
    """One case in this process, then (GPU, unless --warm-compile-only) each
    compiler's first call in a fresh process; a line on stderr when done."""
    r = run_case(case, gpu, use_compile=gpu and not args.no_compile, seed=args.seed,
                 tune=args.autotune)  # fmt: skip
    if gpu and not args.warm_compile_only:
        r.compile_ours_warm_s, r.compile_torch_warm_s = r.compile_ours_s, r.compile_torch_s
        r.compile_ours_s = cold_first_call(case, "tilefuse")
        if r.compile_torch_s is not None:
            r.compile_torch_s = cold_first_call(case, "torch")
    print(f"  done {case.name}: ours {_num(r.ours_ms, '.3f')} ms, torch.compile "
          f"{_num(r.compiled_ms, '.3f')} ms; first call ours {_num(r.compile_ours_s, '.2f')} s, "
          f"torch {_num(r.compile_torch_s, '.2f')} s", file=sys.stderr, flush=True)  # fmt: skip
    return r


def write_json(path: str, header: str, ceilings: dict, results: list) -> None:
    Path(path).write_text(json.dumps(
        {"header": header, "ceilings": ceilings, "results": [asdict(r) for r in results]},
        indent=2, default=lambda o: None if isinstance(o, float) and math.isnan(o) else o))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (CPU, interpreter)")
    p.add_argument("--only", help="comma-separated case names")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--json", help="write results here")
    p.add_argument("--png", help="write the roofline plot here")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--warm-compile-only", action="store_true",
                   help="compile times from this process only (no fresh processes)")  # fmt: skip
    p.add_argument("--autotune", action="store_true",
                   help="also time each case autotuned (tilefuse.runtime.autotune; GPU)")  # fmt: skip
    p.add_argument("--group", choices=("samples", "models", "dynamic"), default="samples",
                   help="samples (MLIR programs), models (nn.Modules, tools/bench_models.py) or "
                        "dynamic (the samples' dynamic forms, tools/experiments/dynamic_lengths.py)")  # fmt: skip
    args = p.parse_args(argv)
    gpu = torch.cuda.is_available()
    if args.group == "models":
        return _models(args, gpu)
    if args.group == "dynamic":
        return _dynamic(args, gpu)
    cases = QUICK if args.quick or not gpu else CASES
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c.name in wanted or c.sample in wanted]
    ceilings = measure_ceilings(gpu)
    header = (f"device: {torch.cuda.get_device_name() if gpu else 'CPU (Triton interpreter)'}; "
              f"torch {torch.__version__}; triton {__import__('triton').__version__}; "
              f"copy {ceilings['copy_Bps'] / 1e12:.2f} TB/s; bf16 GEMM {ceilings['matmul_flops'] / 1e12:.0f} TF/s")  # fmt: skip
    results = []
    for case in cases:
        results.append(measure_case(case, gpu, args))
        if args.json:  # after each case: a run cut short keeps what it measured
            write_json(args.json, header, ceilings, results)
    by_name = {c.name: c for c in cases}
    print(header)
    print(table(results, ceilings, by_name))
    for r in results:
        if r.sdpa_ms:
            print(f"{r.case}: scaled_dot_product_attention {r.sdpa_ms:.3f} ms; tilefuse is "
                  f"{r.sdpa_ms / r.ours_ms:.2f}x SDPA, {r.eager_ms / r.ours_ms:.2f}x unfused eager")  # fmt: skip
    if args.png and gpu:
        roofline_png(results, ceilings, args.png)
    bad = [r.case for r in results if not r.max_rel_error <= tolerance(by_name[r.case].dtype) * 4]
    if bad:
        print(f"MISMATCH in {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0


def _models(args: argparse.Namespace, gpu: bool) -> int:
    import bench_models

    header = (f"device: {torch.cuda.get_device_name() if gpu else 'CPU (Triton interpreter)'}; "
              f"torch {torch.__version__}; triton {__import__('triton').__version__}")  # fmt: skip
    print(header)

    def write(rows: list[dict]) -> None:
        if args.json:
            Path(args.json).write_text(json.dumps({"header": header, "results": rows}, indent=2))

    only = set(args.only.split(",")) if args.only else None
    return bench_models.main(args.quick, only, not args.no_compile, count_kernels, write)


def _dynamic(args: argparse.Namespace, gpu: bool) -> int:
    """Each sample's dynamic form: one compile, 64 sizes (Triton compiles counted), the
    first call's time, and at the bench sizes its time beside the static build's."""
    if not gpu:
        print("--group dynamic times kernels on a GPU (none here)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent / "experiments"))
    import dynamic_lengths

    only = set(args.only.split(",")) if args.only else None
    results = []
    for case in dynamic_lengths.CASES:
        if only is None or case[0] in only:
            results.append(dynamic_lengths.run_case(*case[:7], args.quick, *case[7:]))
            print(json.dumps(results[-1]), flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
