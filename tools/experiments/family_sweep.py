"""
Other members of the bench models' families (issue 16: "expect other models and sizes
from the same families to be measured the same way"), on the GPU, bf16: each through
`tilefuse.torch.compile`, `torch.compile` and eager in one process, exactly as
`tools/bench.py --group models` measures its cases (`bench_models.run_model`), then our
kernels' measured and predicted times for each case slower than torch.compile.

    python tools/experiments/family_sweep.py [NAME ...] [--json OUT.json] [--profile]

NAME may also be a case of `bench_models.CASES`; `--profile`: every case's kernels.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from dataclasses import asdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_models
from bench_models import ModelCase, _bert_inputs, _tokens
from model_profile import kernel_times

import tilefuse.torch as tt
from tilefuse.runtime.bench import predicted_kernels
from tilefuse.testing import zoo

CASES = [
    ModelCase("gpt2_768", lambda: zoo.GPT2Block(768, 12, 1024), _tokens(8, 1024, 768)),
    ModelCase("gpt2_1280_t512", lambda: zoo.GPT2Block(1280, 20, 512), _tokens(16, 512, 1280)),
    ModelCase("gpt2_sdpa", lambda: zoo.GPT2Block(1024, 16, 1024, sdpa=True),
              _tokens(8, 1024, 1024)),
    ModelCase("llama_2048_gqa", lambda: zoo.LlamaBlock(2048, 32, 8, 5632, 1024),
              _tokens(4, 1024, 2048)),
    ModelCase("llama_2048_gqa_sdpa", lambda: zoo.LlamaBlock(2048, 32, 8, 5632, 1024, "sdpa"),
              _tokens(4, 1024, 2048)),
    ModelCase("llama_4096_mha_sdpa", lambda: zoo.LlamaBlock(4096, 32, 32, 11008, 512, "sdpa"),
              _tokens(2, 512, 4096)),
    ModelCase("bert_large", lambda: zoo.BertLayer(1024, 16, 4096), _bert_inputs(8, 512, 1024)),
    ModelCase("bert_t128", lambda: zoo.BertLayer(768, 12, 3072), _bert_inputs(64, 128, 768)),
    ModelCase("vit_l16", lambda: zoo.ViT(224, 16, 1024, 16), _tokens(32, 3, 224, 224)),
    ModelCase("vit_s16", lambda: zoo.ViT(224, 16, 384, 6), _tokens(128, 3, 224, 224)),
    ModelCase("bottleneck_28", lambda: zoo.Bottleneck(512, 128), _tokens(32, 512, 28, 28)),
    ModelCase("bottleneck_14", lambda: zoo.Bottleneck(1024, 256), _tokens(32, 1024, 14, 14)),
    ModelCase("bottleneck_7", lambda: zoo.Bottleneck(2048, 512), _tokens(32, 2048, 7, 7)),
]  # fmt: skip


def count_kernels(fn) -> int:
    return sum(c for _, _, c in kernel_times(fn, calls=3))


def profile_ours(case: ModelCase) -> None:
    """Our kernels' measured (profiler) and predicted times, slowest first."""
    model, args = bench_models.on_gpu(case)
    with torch.no_grad():
        ours = tt.compile(copy.deepcopy(model), *args)
        predicted = {k: t * 1e6 for k, t in predicted_kernels(ours.program, ours.program.target).items()}
        rows = kernel_times(lambda: ours(*args))
    print(f"== {case.name}: {sum(r[1] for r in rows):.1f} us of kernels per call")
    for n, t, c in rows:
        p = f"  predicted {predicted[n]:7.1f}  x{t / predicted[n]:4.2f}" if n in predicted else ""
        print(f"  {t:8.1f} us  x{c}  {n[:60]}{p}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*")
    p.add_argument("--json")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--ours-only", action="store_true", help="no torch.compile")
    args = p.parse_args()
    every = CASES + [c for c in bench_models.CASES if c.name not in {x.name for x in CASES}]
    cases = [c for c in every if c.name in args.names] if args.names else CASES
    results, slow = [], []
    for case in cases:
        try:
            r = bench_models.run_model(case, True, not args.ours_only, count_kernels)
        except Exception as e:  # one model's failure must not hide the others
            print(f"{case.name}: FAILED {type(e).__name__}: {str(e)[:600]}", flush=True)
            continue
        results.append(r)
        print(f"  done {r.case}: ours {r.ours_ms:.3f} ms, torch.compile {r.compiled_ms} ms, "
              f"eager {r.eager_ms:.3f} ms, error {r.ours_error:.1e}", flush=True)  # fmt: skip
        if args.profile or (r.ratio is not None and r.ratio < 1.0):
            slow.append(case)
        if args.json:
            Path(args.json).write_text(json.dumps([asdict(x) | {"ratio": x.ratio} for x in results],
                                                  indent=1))  # fmt: skip
    for case in slow:
        try:
            profile_ours(case)
        except Exception as e:
            print(f"{case.name}: profile FAILED {type(e).__name__}: {str(e)[:300]}")
    print(bench_models.table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
