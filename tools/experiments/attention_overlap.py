"""
FlashAttention's key loop with the next score product issued before this tile's
softmax (FA-3's intra-warpgroup overlap, written in plain Triton): does Triton 3.6
keep the next `tl.dot` in flight while the softmax runs, and does it pay? Issue 17
(head dim 64: the models' attention), issue 16 (BERT, ViT, GPT-2 are all head dim 64).

Two kernels, bf16 Q/K/V/O [B, H, S, D], non-causal, pointer loads, fp32 accumulation,
the softmax as tilefuse prints it for an unscaled SDPA-style program (scale multiply,
NaN-propagating max, `exp2(x * log2 e)`):

- `loop`: per key tile, S = Q K^T, softmax, O += P V (the printer's FA-2 loop);
- `overlap`: S_0 before the loop; per key tile j, S_{j+1} = Q K_{j+1}^T is issued
  first (the loop carries it), then the softmax of S_j and O += P_j V_j; the last
  tile after the loop. The same arithmetic in the same order: equal outputs.

    python3 tools/experiments/attention_overlap.py aot     # sm_90 SASS, no GPU: where the waits are
    python3 tools/experiments/attention_overlap.py         # on a GPU: us, TF/s, vs SDPA

`aot` prints, per kernel, registers, spills and the order of MMAs (HGMMA), waits
(WARPGROUP.DEPBAR) and exponentials (MUFU.EX2) in the SASS.

What it showed (Triton 3.9 on this machine's CPU, sm_90; 2026-12-07): Triton's TTGIR
waits for the early product at once (`warp_group_dot_wait {pendings = 0}` right after
it), in this kernel as in the printer's. Whatever overlap there is, ptxas makes, by
moving the independent exponentials above the wait: it does here at head dim 64
(`HGMMA EX2 HGMMA EX2 ... WAIT`), not at 128 (254 registers), and not in tilefuse's
own BERT kernel printed the same way (its mask and P rounding go through shared
memory: barriers the exponentials cannot cross). The early product also costs
registers: 107 -> 155 at 128 x 64 (one program an SM instead of two). So the printer
does not emit this schedule; Gluon's explicit waits (backend/triton/attention_ws.py)
are where it is dependable.
"""

from __future__ import annotations

import json
import re
import sys

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _max_nan_combine(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _softmax_step(s, m, total, acc, scale):
    s = s * scale
    m_new = tl.maximum(m, tl.reduce(s, 1, _max_nan_combine), propagate_nan=tl.PropagateNan.ALL)
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.exp2((m - m_use) * 1.4426950408889634)
    p = tl.exp2((s - m_use[:, None]) * 1.4426950408889634)
    total = total * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    return p, m_new, total, acc


@triton.jit
def attention(q_ptr, k_ptr, v_ptr, o_ptr, scale, S: tl.constexpr, D: tl.constexpr, BM: tl.constexpr,
              BN: tl.constexpr, OVERLAP: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * S * D
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_d = tl.arange(0, D)
    offs_n = tl.arange(0, BN)
    q = tl.load(q_ptr + base + offs_m[:, None] * D + offs_d[None, :])
    m = tl.full((BM,), float("-inf"), tl.float32)
    total = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, D), tl.float32)
    if OVERLAP:
        k = tl.load(k_ptr + base + offs_n[:, None] * D + offs_d[None, :])
        s = tl.dot(q, tl.permute(k, (1, 0)))
        for j in range(0, S - BN, BN):
            k = tl.load(k_ptr + base + (j + BN + offs_n)[:, None] * D + offs_d[None, :])
            s_next = tl.dot(q, tl.permute(k, (1, 0)))
            p, m, total, acc = _softmax_step(s, m, total, acc, scale)
            v = tl.load(v_ptr + base + (j + offs_n)[:, None] * D + offs_d[None, :])
            acc = tl.dot(p.to(tl.bfloat16), v, acc)
            s = s_next
        p, m, total, acc = _softmax_step(s, m, total, acc, scale)
        v = tl.load(v_ptr + base + (S - BN + offs_n)[:, None] * D + offs_d[None, :])
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
    else:
        for j in range(0, S, BN):
            k = tl.load(k_ptr + base + (j + offs_n)[:, None] * D + offs_d[None, :])
            s = tl.dot(q, tl.permute(k, (1, 0)))
            p, m, total, acc = _softmax_step(s, m, total, acc, scale)
            v = tl.load(v_ptr + base + (j + offs_n)[:, None] * D + offs_d[None, :])
            acc = tl.dot(p.to(tl.bfloat16), v, acc)
    o = acc / total[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * D + offs_d[None, :], o.to(tl.bfloat16))


SHAPES = [  # B, H, S, D, BM, BN, warps, stages
    (16, 12, 512, 64, 128, 64, 8, 3),     # BERT-base at B16 T512
    (16, 12, 512, 64, 128, 32, 8, 3),
    (16, 12, 512, 64, 64, 64, 4, 3),
    (8, 16, 2048, 64, 128, 64, 8, 3),     # issue 17's head-dim-64 case
    (8, 16, 2048, 64, 128, 32, 8, 3),
    (8, 16, 2048, 64, 64, 64, 4, 3),
    (4, 32, 4096, 128, 128, 128, 8, 3),   # issue 17's head-dim-128 case
]


def aot() -> None:
    import os
    import subprocess

    from tilefuse.gpu.aot import compile_for_gpu

    for b, h, s, d, bm, bn, warps, stages in SHAPES:
        for overlap in (False, True):
            sig = {"q_ptr": "*bf16", "k_ptr": "*bf16", "v_ptr": "*bf16", "o_ptr": "*bf16", "scale": "fp32"}
            consts = {"S": s, "D": d, "BM": bm, "BN": bn, "OVERLAP": overlap}
            k = compile_for_gpu(attention, sig, consts, num_warps=warps, num_stages=stages)
            path = "/tmp/attention_overlap.cubin"
            with open(path, "wb") as f:
                f.write(k.cubin)
            nvd = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/nvdisasm")
            sass = subprocess.run([nvd, "-c", path], capture_output=True, text=True).stdout
            ops = [m.group(1) for line in sass.splitlines()
                   if (m := re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line))]
            # the order of MMAs, waits and exponentials (runs collapsed)
            seq: list[str] = []
            for op in ops:
                tag = ("HGMMA" if op.startswith("HGMMA") else "WAIT" if op.startswith("WARPGROUP.DEPBAR")
                       else "EX2" if op == "MUFU.EX2" else "BRA" if op == "BRA" else None)  # fmt: skip
                if tag and (not seq or seq[-1] != tag):
                    seq.append(tag)
            print(json.dumps({"shape": [b, h, s, d], "tile": [bm, bn, warps, stages], "overlap": overlap,
                              "regs": k.registers, "spills": k.spills, "sass": len(ops),
                              "order": " ".join(seq)}))  # fmt: skip


def _launcher(q, k, v, scale, shape, overlap: bool):
    import torch

    b, h, s, d, bm, bn, warps, stages = shape
    o = torch.empty_like(q)

    def launch():
        attention[(s // bm, b * h)](q, k, v, o, scale, S=s, D=d, BM=bm, BN=bn, OVERLAP=overlap,
                                    num_warps=warps, num_stages=stages)  # fmt: skip
        return o

    return launch


def gpu() -> None:
    import torch
    import torch.nn.functional as F

    for b, h, s, d, bm, bn, warps, stages in SHAPES:
        torch.manual_seed(0)
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        scale = d ** -0.5
        ref = F.scaled_dot_product_attention(q, k, v)
        flops = 4 * b * h * s * s * d
        row = {"shape": [b, h, s, d], "tile": [bm, bn, warps, stages]}
        outs = {}
        fns = {"sdpa": lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v)}
        for overlap in (False, True):
            fns["overlap" if overlap else "loop"] = _launcher(q, k, v, scale, (b, h, s, d, bm, bn, warps, stages),
                                                              overlap)  # fmt: skip
        for name, fn in fns.items():
            outs[name] = fn()
        times: dict[str, list[float]] = {n: [] for n in fns}
        for _ in range(3):  # alternating rounds
            for name, fn in fns.items():
                times[name].append(triton.testing.do_bench(fn, warmup=10, rep=50))
        for name in fns:
            ms = min(times[name])
            row[name] = {"us": round(ms * 1e3, 1), "tflops": round(flops / ms / 1e9), "vs_sdpa":
                         round(min(times["sdpa"]) / ms, 3),
                         "err": round((outs[name].float() - ref.float()).abs().max().item(), 4)}  # fmt: skip
        row["overlap_equals_loop"] = bool(torch.equal(outs["loop"], outs["overlap"]))
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    aot() if sys.argv[1:] == ["aot"] else gpu()
