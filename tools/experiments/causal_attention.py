"""
Causal attention on the GPU: tilefuse's kernel with its key loop ending at the
diagonal (`analysis/causal.py`) against the same kernel running every key tile and
torch's SDPA (flash/cuDNN). Issue 16's size by default: B8 H16 T1024 D64 bf16.

    python tools/experiments/causal_attention.py [B H T D]

Prints median us (do_bench) of each and the largest error against f64.
"""

import math
import re
import sys

import torch
import torch.nn.functional as F
import triton.testing
from torch import nn

sys.path.insert(0, ".")
from tilefuse.runtime.compiled import compile as tf_compile
from tilefuse.runtime.compiled import import_source
from tilefuse.torch.export import export


class Causal(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def main(b=8, h=16, t=1024, d=64):
    q, k, v = (torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    text = str(export(Causal(), tuple(x.cpu() for x in (q, k, v)), "causal").mlir)
    prog = tf_compile(text)
    loops = re.findall(r"for \w+ in range\(0, (.*), \d+\):", prog.source)
    print("key loop ends:", loops)
    full = import_source(re.sub(r"range\(0, tl\.minimum\((\d+), .*?\), (\d+)\):",
                                r"range(0, \1, \2):", prog.source)).causal  # fmt: skip
    want = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
    for name, fn in (("tilefuse skipping", lambda: prog(q, k, v)), ("tilefuse all keys", lambda: full(q, k, v)),
                     ("torch SDPA", lambda: Causal()(q, k, v))):  # fmt: skip
        out = fn()
        (out,) = out if isinstance(out, tuple | list) else (out,)
        err = ((out.double() - want).abs().max() / want.abs().max()).item()
        us = triton.testing.do_bench(fn, return_mode="median") * 1e3
        flops = 4 * b * h * t * t * d / 2
        print(f"{name:18s}: {us:8.1f} us ({flops / us / 1e6:.0f} TFLOP/s causal), rel err {err:.2e}")
    assert math.isfinite(err)


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
