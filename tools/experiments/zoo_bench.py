"""
Zoo models at real sizes on the GPU: the same `nn.Module` through
`tilefuse.torch.compile`, `torch.compile` and eager, in one process, alternating
rounds (median of each round's `do_bench` median), first-call time too.

```
python tools/experiments/zoo_bench.py gpt2 llama_eager bert
```

The start of issue 16's `models` group: numbers go to docs/PERF.md.
"""

from __future__ import annotations

import copy
import statistics
import sys
import time

import torch
import triton.testing

import tilefuse.torch as tt
from tilefuse.testing import zoo

CASES = {
    # name: (module factory, input factory), bf16 as issue 16 measures them
    "gpt2": (lambda: zoo.GPT2Block(1024, 16, 1024), lambda: (torch.randn(8, 1024, 1024),)),
    "llama_eager": (lambda: zoo.LlamaBlock(1024, 16, 4, 2816, 1024),
                    lambda: (torch.randn(8, 1024, 1024),)),
    "llama_sdpa": (lambda: zoo.LlamaBlock(1024, 16, 4, 2816, 1024, "sdpa"),
                   lambda: (torch.randn(8, 1024, 1024),)),
    "bert": (lambda: zoo.BertLayer(768, 12, 3072),
             lambda: (torch.randn(16, 512, 768), torch.ones(16, 512, dtype=torch.int64))),
    "bottleneck": (lambda: zoo.Bottleneck(256, 64), lambda: (torch.randn(32, 256, 56, 56),)),
}


def bench(fn) -> float:
    return triton.testing.do_bench(fn, warmup=10, rep=100, return_mode="median")


def first_call(fn) -> float:
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def run(name: str, rounds: int = 3) -> None:
    make, inputs = CASES[name]
    torch.manual_seed(0)
    model = make().eval().to("cuda", torch.bfloat16)
    args = tuple(x.to("cuda", torch.bfloat16) if x.is_floating_point() else x.cuda()
                 for x in inputs())  # fmt: skip
    with torch.no_grad():
        t0 = time.perf_counter()
        ours = tt.compile(model, *args)
        compile_s = time.perf_counter() - t0
        ours_first = first_call(lambda: ours(*args))
        theirs = torch.compile(copy.deepcopy(model))
        theirs_first = first_call(lambda: theirs(*args))
        ref = model.float()(*(a.float() if a.is_floating_point() else a for a in args))
        model.to(torch.bfloat16)
        out = ours(*args)
        err = float((out.float() - ref).abs().max() / ref.abs().max())
        times: dict[str, list[float]] = {"tilefuse": [], "compile": [], "eager": []}
        for _ in range(rounds):
            times["tilefuse"].append(bench(lambda: ours(*args)))
            times["compile"].append(bench(lambda: theirs(*args)))
            times["eager"].append(bench(lambda: model(*args)))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{name}: tilefuse {med['tilefuse']:.3f} ms ({len(ours.kernels)} kernels), "
          f"torch.compile {med['compile']:.3f} ms, eager {med['eager']:.3f} ms; "
          f"ratio vs compile {med['compile'] / med['tilefuse']:.2f}x; rel err vs f32 {err:.2e}; "
          f"ours: export+compile {compile_s:.1f} s, first call {ours_first:.1f} s; "
          f"torch.compile first call {theirs_first:.1f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    for case in sys.argv[1:] or list(CASES):
        try:
            run(case)
        except Exception as e:  # one case's failure must not hide the others
            print(f"{case}: FAILED {type(e).__name__}: {str(e)[:400]}", flush=True)
