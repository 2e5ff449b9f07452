"""
A warp-specialised persistent GEMM in Gluon on Hopper, with the epilogues of a
transformer's Linears (issue 17 item 1, "warp specialisation where it pays"; issue 16's
BERT gap): does running one output tile's epilogue while the other warpgroup's MMAs run
(the ping-pong schedule of cuBLAS and CUTLASS on sm_90) recover the time an erf-GELU
epilogue costs the Triton loop (`gemm_short_k.py`: 108 us for BERT's FC1 against
cuBLAS's 63 us GEMM alone)?

The kernel, written from the schedule's description, not from any implementation:

- a persistent grid of one program an SM; a program's output tiles (128 x BN) are
  `pid, pid + P, pid + 2P, ...`;
- a **producer** warp loads every K step of those tiles, in that order, by TMA into the
  ring of `STAGES` shared-memory slots of the consumer taking the tile (an mbarrier per
  slot the copy completes, another the consumer arrives on once the MMA reading the
  slot is done);
- two **consumer** warpgroups take the program's tiles in turns (consumer c: its tiles
  c, c + 2, ...): asynchronous `warpgroup_mma`s over the ring, one in flight, then the
  epilogue (bias, then nothing / a residual / erf GELU, bf16 pointer stores) while the
  other consumer's tile, whose operands the producer loads next, runs its MMAs.

bf16 `x[M,K] @ w[N,K]^T` + bias; the same epilogues and shapes as `gemm_short_k.py`.
CUDA-event medians (`triton.testing.do_bench`), us:

    python3 tools/experiments/gemm_gluon.py                    # GPU: BERT's GEMMs
    python3 tools/experiments/gemm_gluon.py 8192x3072x768:gelu "--only=ws 64x128x64 s3"
    python3 tools/experiments/gemm_gluon.py aot                # no GPU: compile for sm_90
    compute-sanitizer python3 tools/experiments/gemm_gluon.py 8192x768x768:res --once
"""

from __future__ import annotations

import re
import sys

import torch
import triton
import triton.testing
from gemm_short_k import KINDS, operands
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

# Triton 3.6 names the TMA copy async_copy_global_to_shared; 3.9 async_load.
tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared


@gluon.jit
def _loader(a_desc, b_desc, a_smem, b_smem, ready, empty, pid, grid_n, tiles, steps, BM: gl.constexpr,
            BN: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr, PROGRAMS: gl.constexpr):  # fmt: skip
    """The producer warp: every K step of the program's tiles, in order, into the ring of
    the consumer that takes the tile (tile j: ring j % 2, slots `ring * STAGES + s`)."""
    j = 0
    for t in range(pid, tiles, PROGRAMS):
        pm = t // grid_n
        pn = t % grid_n
        ring = j % 2
        for k in range(steps):
            it = (j // 2) * steps + k  # this ring's count of loads
            s = ring * STAGES + it % STAGES
            mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
            tma_load(a_desc, [pm * BM, k * BK], ready.index(s), a_smem.index(s))
            tma_load(b_desc, [pn * BN, k * BK], ready.index(s), b_smem.index(s))
        j += 1  # noqa: SIM113 (a Gluon loop: no enumerate)


@gluon.jit
def _consumer(a_smem, b_smem, ready, empty, bias, res, out, M, N, pid, grid_n, tiles, steps, WG: gl.constexpr,
              BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr, PROGRAMS: gl.constexpr,
              KIND: gl.constexpr):  # fmt: skip
    """Consumer `WG` of two: the program's tiles WG, WG + 2, ... from its own ring (a
    ring shared by both would let one consumer wait on a slot's barrier a phase early:
    mbarrier waits go by the phase's parity): MMAs, then the epilogue.
    (The program's id and counts come from the parent.)"""
    layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 16])
    it = 0  # this ring's count of loads consumed
    for t in range(pid + WG * PROGRAMS, tiles, 2 * PROGRAMS):
        pm = t // grid_n
        pn = t % grid_n
        acc = gl.zeros([BM, BN], gl.float32, layout)
        for k in range(steps):
            s = WG * STAGES + it % STAGES
            mbarrier.wait(ready.index(s), (it // STAGES) & 1)
            acc = warpgroup_mma(a_smem.index(s), b_smem.index(s).permute((1, 0)), acc, is_async=True)
            acc = warpgroup_mma_wait(1, deps=(acc,))
            if k > 0:  # the previous step's MMA is done: its slot is free
                mbarrier.arrive(empty.index(WG * STAGES + (it - 1) % STAGES), count=1)
            it += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index(WG * STAGES + (it - 1) % STAGES), count=1)
        rows = pm * BM + gl.arange(0, BM, layout=gl.SliceLayout(1, layout))
        cols = pn * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        y = acc + gl.load(bias + cols, mask=cols < N, other=0.0).to(gl.float32)[None, :]
        y = y.to(gl.bfloat16).to(gl.float32)
        if KIND == 1:
            y = y + gl.load(res + rows[:, None] * N + cols[None, :], mask=mask, other=0.0).to(gl.float32)
        if KIND == 2:
            y = y * (0.5 * (1.0 + gl.erf(y * 0.7071067811865476)))
        gl.store(out + rows[:, None] * N + cols[None, :], y.to(gl.bfloat16), mask=mask)


@gluon.jit
def gemm_ws(a_desc, b_desc, bias, res, out, M, N, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
            STAGES: gl.constexpr, PROGRAMS: gl.constexpr, KIND: gl.constexpr, REGS: gl.constexpr):  # fmt: skip
    """Launched with 4 warps (consumer 0, the default partition) + 4 (consumer 1) + 1;
    two rings of STAGES slots, one a consumer."""
    a_smem = gl.allocate_shared_memory(a_desc.dtype, [2 * STAGES, BM, BK], a_desc.layout)
    b_smem = gl.allocate_shared_memory(b_desc.dtype, [2 * STAGES, BN, BK], b_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [2 * STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [2 * STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2 * STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    fence_async_shared()  # (the inits seen by the async proxy: the TMA copies complete on them)
    pid = gl.program_id(0)
    grid_n = gl.cdiv(N, BN)
    tiles = gl.cdiv(M, BM) * grid_n
    steps = gl.cdiv(K, BK)
    gl.warp_specialize([
        (_consumer, (a_smem, b_smem, ready, empty, bias, res, out, M, N, pid, grid_n, tiles, steps, 0, BM, BN, BK,
                     STAGES, PROGRAMS, KIND)),
        (_consumer, (a_smem, b_smem, ready, empty, bias, res, out, M, N, pid, grid_n, tiles, steps, 1, BM, BN, BK,
                     STAGES, PROGRAMS, KIND)),
        (_loader, (a_desc, b_desc, a_smem, b_smem, ready, empty, pid, grid_n, tiles, steps, BM, BN, BK, STAGES,
                   PROGRAMS)),
    ], [4, 1], [REGS, 24])  # fmt: skip


VARIANTS = [  # name, BM, BN, BK, STAGES a consumer, consumer registers
    ("ws 64x128x64 s3", 64, 128, 64, 3, 232),
    ("ws 128x128x64 s2", 128, 128, 64, 2, 232),
    ("ws 128x128x64 s3", 128, 128, 64, 3, 232),
    ("ws 64x256x64 s2", 64, 256, 64, 2, 232),
]
SHAPES = ["8192x3072x768:gelu", "8192x768x768:res", "8192x2304x768:bias", "8192x768x3072:res",
          "12608x3072x768:gelu", "8192x4096x4096:bias"]  # fmt: skip


def _layout(block):
    return gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16)


def launch(x, w, b, r, out, kind, bm, bn, bk, stages, regs, programs):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    m, k = x.shape
    n = w.shape[0]
    ad = TensorDescriptor.from_tensor(x, [bm, bk], _layout([bm, bk]))
    bd = TensorDescriptor.from_tensor(w, [bn, bk], _layout([bn, bk]))
    gemm_ws[(programs,)](ad, bd, b, r, out, m, n, k, BM=bm, BN=bn, BK=bk, STAGES=stages, PROGRAMS=programs,
                         KIND=KINDS[kind], REGS=regs, num_warps=4)  # fmt: skip


def run(spec: str, sms: int) -> None:
    (m, n, _k, kind), (x, w, b, r), ref, flops = operands(spec)
    only = [a[len("--only="):] for a in sys.argv if a.startswith("--only=")]
    for name, bm, bn, bk, stages, regs in VARIANTS:
        if only and name not in only:
            continue
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
        programs = min(sms, triton.cdiv(tiles, 2))

        def fn(out=out, c=(bm, bn, bk, stages, regs), programs=programs):
            launch(x, w, b, r, out, kind, *c, programs)

        try:
            fn()
            err = (out.float() - ref).abs().max().item()
            assert err < 0.05 * ref.abs().max().item(), err
            if "--once" in sys.argv:  # one launch checked (under compute-sanitizer)
                print(f"    {name}: ran once, err {err:.2e}", flush=True)
                continue
            us = triton.testing.do_bench(fn, return_mode="median") * 1e3
            print(f"    {name} ({tiles} tiles): {us:.1f} us, {flops / us / 1e6:.0f} TF/s, err {err:.2e}", flush=True)
        except Exception as e:  # say what failed, go on
            print(f"    {name}: FAIL {type(e).__name__}: {str(e)[:300]}", flush=True)


def aot() -> None:
    """Compile every variant and epilogue for sm_90 without a GPU: registers, shared memory."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent.parent))
    from tilefuse.gpu.aot import _resource_usage

    for name, bm, bn, bk, stages, regs in VARIANTS:
        for kind, code in KINDS.items():
            sig = {"a_desc": f"tensordesc<bf16[{bm}, {bk}],{_layout([bm, bk])!r}>",
                   "b_desc": f"tensordesc<bf16[{bn}, {bk}],{_layout([bn, bk])!r}>",
                   "bias": "*bf16", "res": "*bf16", "out": "*bf16", "M": "i32", "N": "i32", "K": "i32"}  # fmt: skip
            consts = dict(BM=bm, BN=bn, BK=bk, STAGES=stages, PROGRAMS=132, KIND=code, REGS=regs)
            for c in gemm_ws.arg_names:
                sig.setdefault(c, "constexpr")
            try:
                src = GluonASTSource(gemm_ws, sig, constexprs=consts)
                k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
                used, local, _ = _resource_usage(k.name, k.asm["cubin"], k.asm["ptx"], 90)
                nreg = sorted(set(re.findall(r"setmaxnreg[.a-z]*\.u32\s+(\d+)", k.asm["ptx"])))
                print(f"{name:20s} {kind:5s} regs {used} local {local} B smem {k.metadata.shared} B setmaxnreg {nreg}")
            except Exception as e:
                print(f"{name:20s} {kind:5s} FAILED {type(e).__name__}: {str(e)[:2000]}")


def main(args: list[str]) -> None:
    print(torch.cuda.get_device_name(), "triton", triton.__version__, flush=True)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for spec in [a for a in args if not a.startswith("--")] or SHAPES:
        run(spec, sms)


if __name__ == "__main__":
    if sys.argv[1:2] == ["aot"]:
        aot()
    else:
        main(sys.argv[1:])
