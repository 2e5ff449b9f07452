"""
The `models` group of tools/bench.py: whole `nn.Module`s (tilefuse.testing.zoo's
classes at the sizes issue 16 measures) through `tilefuse.torch.compile`,
`torch.compile` and eager, in one process.

    python tools/bench.py --group models                  # GPU, bf16, real sizes
    python tools/bench.py --group models --only gpt2,bert
    python tools/bench.py --group models --quick          # CPU: tiny sizes, interpreter

Per model: the module in bf16 (f32 with --quick) with random weights as the
module initialises them and random inputs; tilefuse's and torch.compile's outputs
compared with eager in f32 on the same (bf16-rounded) weights before anything is
timed; export + compile time and the first call of each; then `ROUNDS`
alternating rounds of `triton.testing.do_bench` medians (ours, torch.compile,
eager), the median of each side's rounds kept; kernels per call (ours: the
program's kernels; torch.compile: CUDA kernels seen by the profiler).
"""

from __future__ import annotations

import copy
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

import tilefuse.torch as tt
from tilefuse.testing import zoo

ROUNDS = 3
TOLERANCE = {torch.bfloat16: 5e-2, torch.float32: 1e-4}
"""Largest error relative to the output's largest magnitude (bf16: storage rounding
of every intermediate, as eager in bf16 has too)."""


def _tokens(*shape: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(*shape),)


def _bert_inputs(b: int, t: int, d: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    def make() -> tuple[torch.Tensor, ...]:
        lengths = torch.randint(t // 2, t + 1, (b,))
        mask = (torch.arange(t)[None, :] < lengths[:, None]).to(torch.int64)
        return torch.randn(b, t, d), mask

    return make


def _qkv(b: int, h: int, hkv: int, t: int, d: int) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(b, h, t, d), torch.randn(b, hkv, t, d), torch.randn(b, hkv, t, d))


class SDPA(torch.nn.Module):
    """`F.scaled_dot_product_attention` alone (issue 17's attention shapes): torch.compile
    runs its flash/cuDNN kernel; GQA's K/V heads shared through `enable_gqa`."""

    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v):
        gqa = q.shape[1] != k.shape[1]
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=self.causal, enable_gqa=gqa)


@dataclass(frozen=True)
class ModelCase:
    name: str
    make: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]


CASES = [
    ModelCase("gpt2", lambda: zoo.GPT2Block(1024, 16, 1024), _tokens(8, 1024, 1024)),
    ModelCase("llama_eager", lambda: zoo.LlamaBlock(1024, 16, 4, 2816, 1024),
              _tokens(8, 1024, 1024)),
    ModelCase("llama_sdpa", lambda: zoo.LlamaBlock(1024, 16, 4, 2816, 1024, "sdpa"),
              _tokens(8, 1024, 1024)),
    ModelCase("bert", lambda: zoo.BertLayer(768, 12, 3072), _bert_inputs(16, 512, 768)),
    ModelCase("vit", lambda: zoo.ViT(224, 16, 768, 12), _tokens(64, 3, 224, 224)),
    ModelCase("bottleneck", lambda: zoo.Bottleneck(256, 64), _tokens(32, 256, 56, 56)),
    ModelCase("sdpa_d128", lambda: SDPA(False), _qkv(4, 32, 32, 4096, 128)),
    ModelCase("sdpa_d128_causal", lambda: SDPA(True), _qkv(4, 32, 32, 4096, 128)),
    ModelCase("sdpa_d64", lambda: SDPA(False), _qkv(8, 16, 16, 2048, 64)),
    ModelCase("sdpa_d64_causal", lambda: SDPA(True), _qkv(8, 16, 16, 2048, 64)),
    ModelCase("sdpa_gqa", lambda: SDPA(False), _qkv(4, 32, 8, 4096, 128)),
]  # fmt: skip

QUICK = [
    ModelCase("gpt2", lambda: zoo.GPT2Block(64, 4, 16), _tokens(2, 16, 64)),
    ModelCase("bert", lambda: zoo.BertLayer(64, 4, 256), _bert_inputs(2, 16, 64)),
]


def on_gpu(case: ModelCase) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """`case`'s module in bf16 on the GPU (weights seeded) and its inputs there."""
    torch.manual_seed(0)
    model = case.make().eval().to("cuda", torch.bfloat16)
    args = tuple(x.to("cuda", torch.bfloat16) if x.is_floating_point() else x.cuda()
                 for x in case.inputs())  # fmt: skip
    return model, args


@dataclass
class ModelResult:
    case: str
    ours_ms: float
    compiled_ms: float | None
    eager_ms: float
    kernels_ours: int
    kernels_compiled: int | None
    ours_error: float
    compiled_error: float | None
    export_compile_s: float
    ours_first_call_s: float
    torch_first_call_s: float | None

    @property
    def ratio(self) -> float | None:
        return None if self.compiled_ms is None else self.compiled_ms / self.ours_ms


def _error(out: Any, ref: Any) -> float:
    out, ref = torch.as_tensor(out).float(), torch.as_tensor(ref).float()
    return float((out - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def _first_call(fn: Callable[[], Any], gpu: bool) -> float:
    start = time.perf_counter()
    fn()
    if gpu:
        torch.cuda.synchronize()
    return time.perf_counter() - start


def _timer(gpu: bool) -> Callable[[Callable[[], Any]], float]:
    if gpu:
        import triton.testing

        return lambda fn: triton.testing.do_bench(fn, warmup=10, rep=100, return_mode="median")

    def cpu(fn: Callable[[], Any]) -> float:
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3

    return cpu


def run_model(case: ModelCase, gpu: bool, use_compile: bool, count_kernels: Callable) -> ModelResult:
    device, dtype = ("cuda", torch.bfloat16) if gpu else ("cpu", torch.float32)
    torch.manual_seed(0)
    model = case.make().eval().to(device, dtype)
    args = tuple(x.to(device, dtype) if x.is_floating_point() else x.to(device)
                 for x in case.inputs())  # fmt: skip
    with torch.no_grad():
        ref = copy.deepcopy(model).float()(*(a.float() if a.is_floating_point() else a
                                             for a in args))  # fmt: skip
        start = time.perf_counter()
        ours = tt.compile(model, *args)
        export_compile_s = time.perf_counter() - start
        ours_first = _first_call(lambda: ours(*args), gpu)
        ours_error = _error(ours(*args), ref)
        theirs, theirs_first, theirs_error = None, None, None
        if use_compile:
            theirs = torch.compile(copy.deepcopy(model))
            theirs_first = _first_call(lambda: theirs(*args), gpu)
            theirs_error = _error(theirs(*args), ref)
        timer = _timer(gpu)
        times: dict[str, list[float]] = {"ours": [], "compiled": [], "eager": []}
        for _ in range(ROUNDS if gpu else 1):
            times["ours"].append(timer(lambda: ours(*args)))
            if theirs is not None:
                times["compiled"].append(timer(lambda: theirs(*args)))
            times["eager"].append(timer(lambda: model(*args)))
        kernels_compiled = count_kernels(lambda: theirs(*args)) if theirs is not None else None
    med = {k: statistics.median(v) if v else None for k, v in times.items()}
    return ModelResult(case.name, med["ours"], med["compiled"], med["eager"], len(ours.kernels),
                       kernels_compiled, ours_error, theirs_error, export_compile_s, ours_first,
                       theirs_first)  # fmt: skip


def _f(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def table(results: list[ModelResult]) -> str:
    head = ("| model | tilefuse ms | torch.compile ms | eager ms | vs compile | kernels ours / "
            "compile | rel err ours / compile | export+compile s | first call ours / compile s |")  # fmt: skip
    rows = [head, "|" + " --- |" * 9]
    for r in results:
        rows.append(
            f"| {r.case} | {r.ours_ms:.3f} | {_f(r.compiled_ms, '.3f')} | {r.eager_ms:.3f} | "
            f"{_f(r.ratio, '.2f')}x | {r.kernels_ours} / {_f(r.kernels_compiled, 'd')} | "
            f"{r.ours_error:.1e} / {_f(r.compiled_error, '.1e')} | {r.export_compile_s:.1f} | "
            f"{r.ours_first_call_s:.2f} / {_f(r.torch_first_call_s, '.1f')} |")  # fmt: skip
    return "\n".join(rows)


def main(quick: bool, only: set[str] | None, use_compile: bool, count_kernels: Callable,
         write_json: Callable[[list[dict]], None] | None = None) -> int:  # fmt: skip
    """Run the group; 1 when an output is off (or a model failed), else 0."""
    gpu = torch.cuda.is_available() and not quick
    cases = [c for c in (QUICK if not gpu else CASES) if only is None or c.name in only]
    results, bad = [], []
    for case in cases:
        try:
            r = run_model(case, gpu, use_compile and gpu, count_kernels)
        except Exception as e:  # one model's failure must not hide the others
            print(f"{case.name}: FAILED {type(e).__name__}: {str(e)[:400]}", file=sys.stderr)
            bad.append(case.name)
            continue
        results.append(r)
        print(f"  done {r.case}: ours {r.ours_ms:.3f} ms, torch.compile "
              f"{_f(r.compiled_ms, '.3f')} ms", file=sys.stderr, flush=True)  # fmt: skip
        if r.ours_error > TOLERANCE[torch.bfloat16 if gpu else torch.float32]:
            bad.append(r.case)
        if write_json:
            write_json([asdict(x) | {"ratio": x.ratio} for x in results])
    print(table(results))
    if bad:
        print(f"MISMATCH or FAILED in {', '.join(bad)}", file=sys.stderr)
    return 1 if bad else 0
