"""
Where the run-time-size warp-specialised attention loses to its static build (issue 18).

    python tools/experiments/dynamic_attention_ablation.py [--size 4096] [--json OUT.json]
    python tools/experiments/dynamic_attention_ablation.py --texts-only --target h100

The attention sample (bf16, B4 H32 D128) is compiled twice, for S fixed at `--size` and
for S dynamic over 1..4096; then the dynamic program's printed module is edited, one
run-time quantity at a time made the static build's constant (the program ids' count,
the descriptors' extents, the key loop's bounds, the tail loop, size specialisation, the
Q load's and the store's masks), and every variant is timed side by side with the two
builds (median of CUDA-event timings, L2 flushed, the builds taking turns call by call),
its output checked equal to the static build's. `--texts-only` builds and edits the
texts without a GPU (every edit must find its text) and prints their sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
FIXED = {"B": 4, "H": 32, "D": 128}


def edits(size: int) -> dict[str, list[tuple[str, str]]]:
    """Each variant: (printed text, replacement) pairs applied to the dynamic module."""
    tail = [("tiles_1 = (k_n2 - ((k_n2 // 128) * 128) + 128 - 1) // 128", "tiles_1 = 0"),
            ("for k_1 in range(((k_n2 // 128) * 128), k_n2, 128):", "for k_1 in range(0, 0, 128):")]
    return {
        "program ids": [("programs_2 = gl.cdiv(q_n2, 128) * 2", f"programs_2 = {2 * (size // 128)}")],
        "descriptor extents": [("shape=[4, 32, k_n2, 128]", f"shape=[4, 32, {size}, 128]"),
                               ("shape=[4, 32, v_n2, 128]", f"shape=[4, 32, {size}, 128]")],
        "tail loop gone": tail,
        "key loop bounds": [*tail, ("((k_n2 // 128) * 128)", str(size))],
        "sizes specialised": [("@gluon.jit(do_not_specialize=['q_n2', 'k_n2', 'v_n2', 'out_n2'])",
                               "@gluon.jit")],
        "Q and O unmasked": [(", mask=mask, other=0.0)\n    q_tile.store", ")\n    q_tile.store"),
                             ("_gl_to_bf16(t_6), mask=mask_1)", "_gl_to_bf16(t_6))")],
    }  # fmt: skip


def edited(text: str, pairs: list[tuple[str, str]]) -> str:
    for old, new in pairs:
        if old not in text:
            raise SystemExit(f"edit not found in the printed module: {old!r}")
        text = text.replace(old, new)
    return text


def texts(target: str, size: int) -> tuple[str, str, dict[str, str]]:
    import tilefuse.runtime as tf
    from tilefuse.frontend.specialize import dynamic_form, specialize
    from tilefuse.ir.dynamic import DimRange

    text = specialize((SAMPLES / "attention.mlir").read_text(), FIXED, "bf16")
    static = tf.compile(specialize(text, {"S": size}, None), target=target).source
    ranges = {n: DimRange(1, 4096) for n in ("q.2", "k.2", "v.2")}
    dynamic = tf.compile(dynamic_form(text, "S"), target=target, dim_ranges=ranges).source
    each = edits(size)
    variants = {name: edited(dynamic, pairs) for name, pairs in each.items()}
    every = [p for pairs in each.values() for p in pairs]
    variants["all of them"] = edited(dynamic, list(dict.fromkeys(every)))  # (the tail's once)
    return static, dynamic, variants


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--calls", type=int, default=40, help="timed calls a build")
    ap.add_argument("--json", metavar="OUT.json")
    ap.add_argument("--texts-only", action="store_true")
    ap.add_argument("--target", default="auto")
    args = ap.parse_args()
    static, dynamic, variants = texts(args.target, args.size)
    if args.texts_only:
        for name, text in {"static": static, "dynamic": dynamic, **variants}.items():
            print(f"{name}: {len(text)} characters")
        return

    import torch

    from tilefuse.runtime.compiled import import_source
    from tools.experiments.dynamic_lengths import time_interleaved

    torch.manual_seed(0)
    q, k, v = (torch.randn(4, 32, args.size, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    builds = {"static": static, "static, imported again": static, "dynamic": dynamic, **variants}
    fns = {name: import_source(text).attention for name, text in builds.items()}
    want = fns["static"](q, k, v)
    for name, fn in fns.items():  # (and warm: every Triton compile before the timings)
        got = fn(q, k, v)
        assert torch.equal(got, want), f"{name}: not the static build's output"
    times = time_interleaved(fns, (q, k, v), calls=args.calls)
    flops = 4 * 4 * 32 * args.size * args.size * 128
    static_ms = statistics.median(times["static"])
    rows = []
    for name, ts in times.items():
        ms = statistics.median(ts)
        quartiles = [round(x, 4) for x in statistics.quantiles(ts, n=4)]
        rows.append({"build": name, "ms": round(ms, 4), "tflops": round(flops / ms / 1e9, 1),
                     "static_over_it": round(static_ms / ms, 3), "quartiles_ms": quartiles})  # fmt: skip
        print(f"{name:>22}: {ms:.4f} ms (quartiles {quartiles[0]:.4f} .. {quartiles[2]:.4f})  "
              f"{flops / ms / 1e9:6.1f} TF/s  static/it {rows[-1]['static_over_it']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"device": torch.cuda.get_device_name(),
                                               "size": args.size, "rows": rows}, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("TILEFUSE_QUIET", "1")
    main()
