"""
The warp-specialised attention kernel through the compiler, on the GPU: numbers against
torch's SDPA and timings against SDPA and against the Triton kernel the same program
gets without it (issue 17).

MLIR files exported from `F.scaled_dot_product_attention` (bf16, [B, H, S, D] Q, K, V;
K and V with H / G heads for GQA) are compiled for `--target` twice: as planned (the
Gluon kernel where `tile_plan.warp_specialized_attention` admits it) and with that
lowering refused (the FlashAttention Triton kernel). Each is checked against SDPA on
random inputs and timed with SDPA in the same process, alternating, median of CUDA-event
timings.

    python tools/experiments/attention_ws_check.py FILE.mlir [...] [--target h100]

Export here (no torch-mlir on the device): `python tools/experiments/attention_ws_check.py
--export DIR` writes the issue's shapes.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from contextlib import contextmanager
from pathlib import Path

SHAPES = {  # name: (B, H, H_kv, S, D, causal)
    "d128": (4, 32, 32, 4096, 128, False),
    "gqa": (4, 32, 8, 4096, 128, False),
    "d128_s1024": (8, 16, 16, 1024, 128, False),
    "d128_causal": (4, 32, 32, 4096, 128, True),
}


def export(out: Path) -> None:
    import torch
    import torch.nn.functional as F

    from tilefuse.torch.export import export as export_module

    class SDPA(torch.nn.Module):
        def __init__(self, causal: bool):
            super().__init__()
            self.causal = causal

        def forward(self, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal, enable_gqa=q.shape[1] != k.shape[1])

    out.mkdir(parents=True, exist_ok=True)
    for name, (b, h, hkv, s, d, causal) in SHAPES.items():
        args = (torch.randn(b, h, s, d, dtype=torch.bfloat16),
                *(torch.randn(b, hkv, s, d, dtype=torch.bfloat16) for _ in range(2)))  # fmt: skip
        text = str(export_module(SDPA(causal), args, "sdpa").mlir)
        (out / f"sdpa_{name}.mlir").write_text(f"// {json.dumps([b, h, hkv, s, d, causal])}\n{text}")


@contextmanager
def without_warp_specialization():
    from tilefuse.analysis import tile_plan

    original = tile_plan.warp_specialized_attention
    tile_plan.warp_specialized_attention = lambda *a, **k: "refused for the comparison"
    try:
        yield
    finally:
        tile_plan.warp_specialized_attention = original


def check(path: Path, target: str) -> dict:
    import torch
    import torch.nn.functional as F
    from attention_hopper import bench  # (this directory: the scripts run from it)

    import tilefuse.runtime as tf

    text = path.read_text()
    b, h, hkv, s, d, causal = json.loads(re.match(r"// (.*)\n", text)[1])
    torch.manual_seed(0)
    q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    ke, ve = (x.repeat_interleave(h // hkv, dim=1) for x in (k, v))
    want = F.scaled_dot_product_attention(q.float(), ke.float(), ve.float(), is_causal=causal)
    sdpa = lambda: F.scaled_dot_product_attention(q, ke, ve, is_causal=causal)  # noqa: E731
    ws = tf.compile(text, target=target)
    with without_warp_specialization():
        plain = tf.compile(text, target=target)
    row = {"case": path.stem, "shape": [b, h, hkv, s, d, causal],
           "gluon": "_ws[" in ws.source, "device": torch.cuda.get_device_name()}  # fmt: skip
    flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
    outs = {}
    for name, fn in (("sdpa", sdpa), ("warp_specialized", lambda: ws(q, k, v)[0]),
                     ("triton", lambda: plain(q, k, v)[0])):  # fmt: skip
        outs[name] = out = fn()
        row[f"{name}_err"] = (out.float() - want).abs().max().item()
    row["warp_specialized_vs_triton"] = (outs["warp_specialized"].float() - outs["triton"].float()).abs().max().item()
    for _ in range(2):  # alternating rounds
        for name, fn in (("sdpa", sdpa), ("warp_specialized", lambda: ws(q, k, v)), ("triton", lambda: plain(q, k, v))):
            us = bench(fn, 25)
            row[f"{name}_us"] = min(row.get(f"{name}_us", math.inf), us)
    for name in ("warp_specialized", "triton"):
        row[f"{name}_tflops"] = round(flops / row[f"{name}_us"] / 1e6)
        row[f"{name}_vs_sdpa"] = round(row["sdpa_us"] / row[f"{name}_us"], 3)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--target", default="h100")
    ap.add_argument("--export", type=Path)
    args = ap.parse_args()
    if args.export:
        export(args.export)
        return
    for f in args.files:
        try:
            row = check(f, args.target)
        except Exception as e:
            row = {"case": f.stem, "error": f"{type(e).__name__}: {e}"[:2000]}
        print(json.dumps(row))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
