"""
Stream-K for the persistent TMA GEMM tilefuse prints (issue 16's BERT GEMMs, issue 17's
"persistent GEMMs at cuBLAS's rate"), plain Triton, bf16 `x[M,K] @ w[N,K]^T` + bias and
an epilogue (`gemm_short_k.py`'s: `bias`, `res`, `gelu`).

Why: BERT's FC2 (8192 x 768 x 3072) has 384 tiles of 128 x 128 (2.9 waves on 132 SMs)
or 192 of 128 x 256 (1.45 waves): the larger tile runs the tensor cores better but
leaves half the SMs idle in its second wave. cuBLAS's 56.5 us is 192 such tiles spread
evenly over the SMs. Stream-K (Osama et al., PPoPP 2023) gives each program an equal
share of the (tile, K step) iterations; a tile split between programs is summed by the
last of them to arrive:

- tiles before the last one-to-two waves run data-parallel (one program a tile, the
  persistent loop as tilefuse prints it);
- the rest are split: program p takes iterations [p U / P, (p + 1) U / P); for a tile it
  covers partly, it stores its f32 partial sum in its slot of a workspace and counts
  itself in the tile's counter (an atomic, after a barrier);
- the program that brings the counter to the tile's number of parts adds the parts in
  program order (its own too, from the workspace), so the sum is the same whichever
  arrives last,
  runs the epilogue and resets the counter. No program waits for another.

    python3 tools/experiments/stream_k.py                        # BERT's four GEMMs
    python3 tools/experiments/stream_k.py 8192x768x3072:res      # one shape

CUDA-event medians (`triton.testing.do_bench`), microseconds. Under TRITON_INTERPRET=1
`--check` runs small shapes and compares with torch.
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
import triton.testing
from gemm_short_k import _epilogue  # (bias, then + residual or erf GELU: KINDS 0, 1, 2)


@triton.jit
def _owner(u, units, P: tl.constexpr):
    """The program whose share holds iteration u: max p with p * units // P <= u."""
    return ((u + 1) * P - 1) // units


@triton.jit
def gemm_sk(x, w, bias, res, out, part, count, M, N, K, DP_TILES, BM: tl.constexpr, BN: tl.constexpr,
            BK: tl.constexpr, P: tl.constexpr, KIND: tl.constexpr, DOT: tl.constexpr,
            FLAT: tl.constexpr = True, SK_FLAT: tl.constexpr = True):  # fmt: skip
    a_desc = tl.make_tensor_descriptor(x, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(w, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    pid = tl.program_id(0)
    grid_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * grid_n
    iters = tl.cdiv(K, BK)
    rm0 = tl.arange(0, BM)
    rn0 = tl.arange(0, BN)
    # 1. data-parallel tiles: the persistent loop as printed
    for t in tl.range(pid, DP_TILES, P, flatten=FLAT):
        pm = t // grid_n
        pn = t % grid_n
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(0, iters):
            acc = tl.dot(a_desc.load([pm * BM, k * BK]).to(DOT), b_desc.load([pn * BN, k * BK]).to(DOT).T, acc)
        y = _epilogue(acc, bias, res, pm, pn, M, N, BM, BN, KIND)
        tl.store(out + (pm * BM + rm0)[:, None] * N + (pn * BN + rn0)[None, :], y)
    # 2. stream-K: an equal share of the remaining tiles' K steps
    units = (tiles - DP_TILES) * iters
    u0 = pid * units // P
    u1 = (pid + 1) * units // P
    t_first = u0 // iters
    t_end = tl.where(u1 > u0, (u1 - 1) // iters + 1, t_first)
    for t in tl.range(t_first, t_end, flatten=SK_FLAT):
        k0 = tl.maximum(u0 - t * iters, 0)
        k1 = tl.minimum(u1 - t * iters, iters)
        tile = DP_TILES + t
        pm = tile // grid_n
        pn = tile % grid_n
        acc = tl.zeros((BM, BN), tl.float32)
        for k in range(k0, k1):
            acc = tl.dot(a_desc.load([pm * BM, k * BK]).to(DOT), b_desc.load([pn * BN, k * BK]).to(DOT).T, acc)
        rows = pm * BM + rm0
        cols = pn * BN + rn0
        if (k0 == 0) & (k1 == iters):
            y = _epilogue(acc, bias, res, pm, pn, M, N, BM, BN, KIND)
            tl.store(out + rows[:, None] * N + cols[None, :], y)
        else:
            which = (t != t_first).to(tl.int32)  # a program's first part in slot 0, its last in 1
            slot = part + ((pid * 2 + which) * BM + rm0)[:, None] * BN + rn0[None, :]
            tl.store(slot, acc, cache_modifier=".cg")
            tl.debug_barrier()
            first = t * iters
            p_first = _owner(first, units, P)
            p_last = _owner(first + iters - 1, units, P)
            arrived = tl.atomic_add(count + tile, 1, sem="acq_rel")
            if arrived == p_last - p_first:
                total = tl.zeros((BM, BN), tl.float32)
                for q in range(p_first, p_last + 1):
                    wq = ((q * units // P) < first).to(tl.int32)
                    other = part + ((q * 2 + wq) * BM + rm0)[:, None] * BN + rn0[None, :]
                    total += tl.load(other, cache_modifier=".cg")  # (its own part too: stored above)
                y = _epilogue(total, bias, res, pm, pn, M, N, BM, BN, KIND)
                tl.store(out + rows[:, None] * N + cols[None, :], y)
                tl.atomic_xchg(count + tile, 0)


KINDS = {"bias": 0, "res": 1, "gelu": 2}
SHAPES = ["8192x768x3072:res", "8192x2304x768:bias", "8192x768x768:res", "8192x3072x768:gelu"]
CONFIGS = [(128, 128, 64, 4, 8), (128, 256, 64, 3, 8), (256, 128, 64, 3, 8)]


def dp_tiles(tiles: int, programs: int) -> int:
    """Tiles run data-parallel: all when they fill whole waves, else all but the last
    one-to-two waves' worth (stream-K spreads those)."""
    if tiles % programs == 0:
        return tiles
    return max(0, (tiles // programs - 1) * programs)


def launch(args, m, n, k, config, programs, dp, workspace, flat=True, kernel="sk"):
    bm, bn, bk, stages, warps = config
    x, w, b, r, out = args
    part, count = workspace
    gemm_sk[(programs,)](x, w, b, r, out, part, count, m, n, k, dp, BM=bm, BN=bn, BK=bk, P=programs,
                         KIND=KINDS[KIND_OF[0]], DOT=tl.bfloat16 if x.is_cuda else tl.float32, FLAT=flat,
                         SK_FLAT=kernel == "sk",
                         num_stages=stages, num_warps=warps)  # fmt: skip


KIND_OF = ["res"]


def run(spec: str, sms: int, device: str, time_it: bool) -> None:
    shape, kind = spec.split(":")
    KIND_OF[0] = kind
    m, n, k = (int(d) for d in shape.split("x"))
    torch.manual_seed(0)
    x = torch.randn(m, k, device=device, dtype=torch.bfloat16)
    w = torch.randn(n, k, device=device, dtype=torch.bfloat16) / k**0.5
    b = torch.randn(n, device=device, dtype=torch.bfloat16)
    r = torch.randn(m, n, device=device, dtype=torch.bfloat16)
    ref = (x.float() @ w.float().T + b.float()).bfloat16().float()
    ref = ref + r.float() if kind == "res" else F.gelu(ref) if kind == "gelu" else ref
    if time_it:
        mm = triton.testing.do_bench(lambda: F.linear(x, w, b), return_mode="median") * 1e3
        print(f"{spec}: cublas-mm {mm:.1f} us ({2 * m * n * k / mm / 1e6:.0f} TF/s)", flush=True)
    for config in CONFIGS:
        bm, bn = config[:2]
        if m % bm or n % bn:
            continue
        tiles = (m // bm) * (n // bn)
        part = torch.empty(sms * 2 * bm * bn, device=device, dtype=torch.float32)
        count = torch.zeros(tiles, device=device, dtype=torch.int32)
        row = []
        whole = max(p for p in range(1, sms + 1) if tiles % p == 0)
        split = dp_tiles(tiles, sms)
        variants = (("dp", tiles, min(sms, tiles), True, "sk"), (f"dp-{whole}", tiles, whole, True, "sk"),
                    (f"sk-whole-{whole}", 0, whole, True, "sk"), ("sk", split, sms, True, "sk"),
                    ("sk-nonflat", split, sms, True, "sk-nonflat"), ("sk-all", 0, sms, True, "sk"))  # fmt: skip
        for label, dp, programs, flat, kernel in variants:
            out = torch.empty(m, n, device=device, dtype=torch.bfloat16)

            def fn(out=out, dp=dp, programs=programs, config=config, ws=(part, count), flat=flat, kernel=kernel):
                launch((x, w, b, r, out), m, n, k, config, programs, dp, ws, flat, kernel)

            fn()
            err = (out.float() - ref).abs().max().item()
            assert err < 0.05 * ref.abs().max().item(), (label, err)
            first = out.clone()
            fn()
            assert torch.equal(first, out), f"{label}: a second launch differs"
            assert int(count.abs().sum()) == 0, "tile counters not reset"
            us = triton.testing.do_bench(fn, return_mode="median") * 1e3 if time_it else float("nan")
            row.append(f"{label} {us:.1f} (dp tiles {dp})")
        print(f"    {bm}x{bn}x{config[2]}/{config[3]}s/{config[4]}w ({tiles} tiles): " + ", ".join(row), flush=True)


def main(args: list[str]) -> None:
    gpu = torch.cuda.is_available()
    device = "cuda" if gpu else "cpu"
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device=device, dtype=torch.int8))
    if "--check" in args:  # small shapes, few programs (the interpreter)
        global CONFIGS
        CONFIGS = [(32, 32, 16, 1, 4)]
        for spec in ("96x64x80:res", "64x96x48:gelu", "128x32x160:bias", "192x64x80:res"):
            for programs in (3, 5, 7):
                run(spec, programs, device, False)
        return
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for spec in [a for a in args if not a.startswith("--")] or SHAPES:
        run(spec, sms, device, True)


if __name__ == "__main__":
    main(sys.argv[1:])
