"""
FlashAttention forward in Gluon on Hopper: what the FA-3 schedule buys over the FA-2 loop
Triton writes, measured against torch's SDPA (cuDNN/flash) in one process. Issue 17, item 2.

The sixth session found the Triton-level features (TMA descriptors, `warp_specialize=True`)
do not lift the FA-2 loop past ~0.8x SDPA on Hopper; what is left is FlashAttention-3's
schedule, which Triton 3.6 reaches only through Gluon (explicit layouts, shared memory,
mbarriers, asynchronous warpgroup MMA). This kernel is written from the FA-3 paper's
algorithm, not from any one implementation:

- Q, K, V and O through host TMA descriptors over `[B*H*S, D]` rows; K and V in rings of
  `KSTAGES` / `VSTAGES` shared-memory buffers, each with an mbarrier the TMA completes.
- One program = one query tile of `BM` rows, 8 warps = two warpgroups of 64 rows each
  (`warps_per_cta = [8, 1]`), both MMAs asynchronous (`warpgroup_mma(..., is_async=True)`).
- `OVERLAP` (FA-3's intra-warpgroup pipelining): iteration j issues S_j = Q K_j^T and
  O += P_{j-1} V_{j-1}, waits for S_j only (`warpgroup_mma_wait(1)`), computes the softmax of
  S_j while the P V product runs, then waits for it and rescales O. Without `OVERLAP` the
  loop is FA-2's: S_j, wait, softmax, O += P_j V_j, wait.
- A buffer is refilled once both warpgroups have waited for the MMAs that read it
  (`gl.thread_barrier`, then the next TMA into it).
- Causal: the key loop ends at the diagonal; only blocks the diagonal crosses are masked
  (a branch per block); query tiles run longest first.
- GQA: K/V rows of head `h // G` read directly (no copies).

    python tools/experiments/attention_gluon.py            # on the GPU: correctness + timings
    python tools/experiments/attention_gluon.py aot        # no GPU: compile for sm_90, print
                                                           # registers, spills, shared memory

Prints, per shape and variant, median us, TF/s, the ratio to SDPA and the largest error
against SDPA's output (bf16), and JSON lines (for docs/PERF.md).
"""

import json
import math
import re
import sys

import torch
import torch.nn.functional as F
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

# Triton 3.6 names the TMA copies async_copy_*; 3.9 renamed them async_load / async_store.
tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier  # renamed in 3.9


@gluon.jit
def _refill(desc, bars, smem, block, n_blocks, kv_row0, BN: gl.constexpr, STAGES: gl.constexpr):
    """Start the TMA load of key block `block` into its ring slot (nothing past the end)."""
    slot = block % STAGES
    pred = block < n_blocks
    bar = bars.index(slot)
    mbarrier.expect(bar, desc.block_type.nbytes, pred=pred)
    tma_load(desc, [kv_row0 + block * BN, 0], bar, smem.index(slot), pred=pred)


@gluon.jit
def _softmax_step(s, m_i, l_i, q_rows, q_rows0, j, qk_scale, BN: gl.constexpr, CAUSAL: gl.constexpr,
                  s_layout: gl.constexpr, S=None):  # fmt: skip
    """The online-softmax update of one score block: new max, probabilities, row sums and
    the factor the running output is rescaled by (base-2 exponentials, scale folded)."""
    if CAUSAL:  # noqa: SIM102 (a constexpr branch around a run-time one)
        if (j + 1) * BN > q_rows0 + 1:  # a block the diagonal crosses: masked
            cols = j * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, s_layout))
            s = gl.where(cols[None, :] <= q_rows[:, None], s, float("-inf"))
    if S is not None:  # noqa: SIM102
        if (j + 1) * BN > S:  # the last key block past the keys (TMA fills zeros): masked
            cols = j * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, s_layout))
            s = gl.where(cols[None, :] < S, s, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, axis=1) * qk_scale)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    alpha = gl.exp2(m_i - m_new)
    l_i = l_i * alpha + gl.sum(p, axis=1)
    return p, m_new, l_i, alpha


@gluon.jit
def _attention_fwd(q_desc, k_desc, v_desc, o_desc, qk_scale, S, H: gl.constexpr, G: gl.constexpr,  # noqa: C901
                   BM: gl.constexpr, BN: gl.constexpr, D: gl.constexpr, KSTAGES: gl.constexpr,
                   VSTAGES: gl.constexpr, OVERLAP: gl.constexpr, CAUSAL: gl.constexpr,
                   num_warps: gl.constexpr):  # fmt: skip
    dtype: gl.constexpr = q_desc.dtype
    n_m = gl.cdiv(S, BM)
    pid_m = gl.program_id(0)
    if CAUSAL:
        pid_m = n_m - 1 - pid_m  # longest key loops first
    bh = gl.program_id(1)
    kv_bh = (bh // H) * (H // G) + (bh % H) // G
    q_row0 = bh * S + pid_m * BM
    kv_row0 = kv_bh * S
    if CAUSAL:  # noqa: SIM108 (a constexpr branch)
        n_blocks = gl.cdiv((pid_m + 1) * BM, BN)
    else:
        n_blocks = gl.cdiv(S, BN)

    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, BN, 16])  # fmt: skip
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, D, 16])  # fmt: skip
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    row_o: gl.constexpr = gl.SliceLayout(1, o_layout)

    q_smem = gl.allocate_shared_memory(dtype, [BM, D], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [KSTAGES, BN, D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [VSTAGES, BN, D], v_desc.layout)
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_bars = gl.allocate_shared_memory(gl.int64, [KSTAGES, 1], mbarrier.MBarrierLayout())
    v_bars = gl.allocate_shared_memory(gl.int64, [VSTAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(KSTAGES):
        mbarrier.init(k_bars.index(i), count=1)
    for i in gl.static_range(VSTAGES):
        mbarrier.init(v_bars.index(i), count=1)

    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    tma_load(q_desc, [q_row0, 0], q_bar, q_smem)
    for i in gl.static_range(KSTAGES):
        _refill(k_desc, k_bars, k_smem, i, n_blocks, kv_row0, BN, KSTAGES)
    for i in gl.static_range(VSTAGES):
        _refill(v_desc, v_bars, v_smem, i, n_blocks, kv_row0, BN, VSTAGES)

    q_rows = pid_m * BM + gl.arange(0, BM, layout=row_s)
    m_i = gl.full([BM], float("-inf"), gl.float32, layout=row_s)
    l_i = gl.full([BM], 0.0, gl.float32, layout=row_s)
    acc = gl.zeros([BM, D], gl.float32, layout=o_layout)
    s_zero = gl.zeros([BM, BN], gl.float32, layout=s_layout)
    mbarrier.wait(q_bar, 0)

    if OVERLAP:
        # Prologue: S_0 and its probabilities; the loop then overlaps each softmax with the
        # previous block's P V product.
        mbarrier.wait(k_bars.index(0), 0)
        s = warpgroup_mma(q_smem, k_smem.index(0).permute((1, 0)), s_zero, use_acc=False, is_async=True)
        s = warpgroup_mma_wait(0, deps=(s, ))
        p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, q_rows, pid_m * BM, 0, qk_scale, BN, CAUSAL, s_layout)
        p_op = gl.convert_layout(p.to(dtype), p_layout)
        for j in range(1, n_blocks):
            mbarrier.wait(k_bars.index(j % KSTAGES), (j // KSTAGES) & 1)
            s = warpgroup_mma(q_smem, k_smem.index(j % KSTAGES).permute((1, 0)), s_zero, use_acc=False,
                              is_async=True)  # fmt: skip
            prev = j - 1
            mbarrier.wait(v_bars.index(prev % VSTAGES), (prev // VSTAGES) & 1)
            acc = warpgroup_mma(p_op, v_smem.index(prev % VSTAGES), acc, is_async=True)
            s = warpgroup_mma_wait(1, deps=(s, ))
            p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, q_rows, pid_m * BM, j, qk_scale, BN, CAUSAL, s_layout)
            acc = warpgroup_mma_wait(0, deps=(acc, ))
            acc = acc * gl.convert_layout(alpha, row_o)[:, None]
            p_op = gl.convert_layout(p.to(dtype), p_layout)
            # K_{j-1} and V_{j-1} are read by both warpgroups' finished MMAs: refill.
            cta_barrier()
            _refill(k_desc, k_bars, k_smem, prev + KSTAGES, n_blocks, kv_row0, BN, KSTAGES)
            _refill(v_desc, v_bars, v_smem, prev + VSTAGES, n_blocks, kv_row0, BN, VSTAGES)
        last = n_blocks - 1
        mbarrier.wait(v_bars.index(last % VSTAGES), (last // VSTAGES) & 1)
        acc = warpgroup_mma(p_op, v_smem.index(last % VSTAGES), acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=(acc, ))
    else:
        for j in range(0, n_blocks):
            mbarrier.wait(k_bars.index(j % KSTAGES), (j // KSTAGES) & 1)
            s = warpgroup_mma(q_smem, k_smem.index(j % KSTAGES).permute((1, 0)), s_zero, use_acc=False,
                              is_async=True)  # fmt: skip
            s = warpgroup_mma_wait(0, deps=(s, ))
            p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, q_rows, pid_m * BM, j, qk_scale, BN, CAUSAL, s_layout)
            acc = acc * gl.convert_layout(alpha, row_o)[:, None]
            p_op = gl.convert_layout(p.to(dtype), p_layout)
            mbarrier.wait(v_bars.index(j % VSTAGES), (j // VSTAGES) & 1)
            acc = warpgroup_mma(p_op, v_smem.index(j % VSTAGES), acc, is_async=True)
            acc = warpgroup_mma_wait(0, deps=(acc, ))
            cta_barrier()
            _refill(k_desc, k_bars, k_smem, j + KSTAGES, n_blocks, kv_row0, BN, KSTAGES)
            _refill(v_desc, v_bars, v_smem, j + VSTAGES, n_blocks, kv_row0, BN, VSTAGES)

    mbarrier.invalidate(q_bar)
    for i in gl.static_range(KSTAGES):
        mbarrier.invalidate(k_bars.index(i))
    for i in gl.static_range(VSTAGES):
        mbarrier.invalidate(v_bars.index(i))
    out = acc / gl.convert_layout(l_i, row_o)[:, None]
    q_smem.store(out.to(dtype))  # Q's buffer holds the output tile on its way out
    cta_barrier()  # both warpgroups' rows written before the one TMA store of the tile
    fence_async_shared()
    tma_store(o_desc, [q_row0, 0], q_smem)
    tma.store_wait(pendings=0)


@gluon.jit
def _ws_loader(k_desc, v_desc, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, kv_bh, n_blocks,
               BN: gl.constexpr, KSTAGES: gl.constexpr, VSTAGES: gl.constexpr):  # fmt: skip
    """The producer warp: K and V blocks into their rings as slots come free (both consumer
    warpgroups arrive on a slot's `empty` barrier once their MMAs reading it are done)."""
    for j in range(n_blocks):
        ks = j % KSTAGES
        mbarrier.wait(k_empty.index(ks), ((j // KSTAGES) & 1) ^ 1)
        mbarrier.expect(k_ready.index(ks), k_desc.block_type.nbytes)
        tma_load(k_desc, [kv_bh, j * BN, 0], k_ready.index(ks), k_smem.index(ks))
        vs = j % VSTAGES
        mbarrier.wait(v_empty.index(vs), ((j // VSTAGES) & 1) ^ 1)
        mbarrier.expect(v_ready.index(vs), v_desc.block_type.nbytes)
        tma_load(v_desc, [kv_bh, j * BN, 0], v_ready.index(vs), v_smem.index(vs))


@gluon.jit
def _ws_consumer(q_smem, k_smem, v_smem, o_smem, q_ready, k_ready, k_empty, v_ready, v_empty, turn, qk_scale,
                 q_rows0, n_blocks, S, WG: gl.constexpr, PINGPONG: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
                 D: gl.constexpr, KSTAGES: gl.constexpr, VSTAGES: gl.constexpr, CAUSAL: gl.constexpr,
                 CONSUMERS: gl.constexpr):  # fmt: skip
    """One consumer warpgroup: BM / CONSUMERS query rows (`WG` picks which), FA-3's
    overlapped loop; with `PINGPONG` the two warpgroups take turns issuing their MMAs."""
    dtype: gl.constexpr = q_smem.dtype
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    row_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    HALF: gl.constexpr = BM // CONSUMERS
    q = q_smem.index(WG).reshape([HALF, D])  # (the 3-D TMA box [1, rows, D] as a 2-D operand)
    q_rows = gl.arange(0, HALF, layout=row_s) + q_rows0
    m_i = gl.full([HALF], float("-inf"), gl.float32, layout=row_s)
    l_i = gl.full([HALF], 0.0, gl.float32, layout=row_s)
    acc = gl.zeros([HALF, D], gl.float32, layout=o_layout)
    s_zero = gl.zeros([HALF, BN], gl.float32, layout=s_layout)
    mbarrier.wait(q_ready, 0)

    if PINGPONG:
        mbarrier.wait(turn.index(WG), WG ^ 1)
    mbarrier.wait(k_ready.index(0), 0)
    s = warpgroup_mma(q, k_smem.index(0).reshape([BN, D]).permute((1, 0)), s_zero, use_acc=False, is_async=True)
    if PINGPONG:
        mbarrier.arrive(turn.index(1 - WG), count=1)
    s = warpgroup_mma_wait(0, deps=(s, ))
    mbarrier.arrive(k_empty.index(0), count=1)
    p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, q_rows, q_rows0, 0, qk_scale, BN, CAUSAL, s_layout, S)
    p_op = gl.convert_layout(p.to(dtype), p_layout)
    for j in range(1, n_blocks):
        ks = j % KSTAGES
        prev = j - 1
        vs = prev % VSTAGES
        if PINGPONG:
            mbarrier.wait(turn.index(WG), (j & 1) ^ WG ^ 1)
        mbarrier.wait(k_ready.index(ks), (j // KSTAGES) & 1)
        s = warpgroup_mma(q, k_smem.index(ks).reshape([BN, D]).permute((1, 0)), s_zero, use_acc=False,
                          is_async=True)  # fmt: skip
        mbarrier.wait(v_ready.index(vs), (prev // VSTAGES) & 1)
        acc = warpgroup_mma(p_op, v_smem.index(vs).reshape([BN, D]), acc, is_async=True)
        if PINGPONG:
            mbarrier.arrive(turn.index(1 - WG), count=1)
        s = warpgroup_mma_wait(1, deps=(s, ))
        mbarrier.arrive(k_empty.index(ks), count=1)
        p, m_i, l_i, alpha = _softmax_step(s, m_i, l_i, q_rows, q_rows0, j, qk_scale, BN, CAUSAL, s_layout, S)
        acc = warpgroup_mma_wait(0, deps=(acc, ))
        mbarrier.arrive(v_empty.index(vs), count=1)
        acc = acc * gl.convert_layout(alpha, row_o)[:, None]
        p_op = gl.convert_layout(p.to(dtype), p_layout)
    last = n_blocks - 1
    mbarrier.wait(v_ready.index(last % VSTAGES), (last // VSTAGES) & 1)
    acc = warpgroup_mma(p_op, v_smem.index(last % VSTAGES).reshape([BN, D]), acc, is_async=True)
    acc = warpgroup_mma_wait(0, deps=(acc, ))
    mbarrier.arrive(v_empty.index(last % VSTAGES), count=1)
    out = acc / gl.convert_layout(l_i, row_o)[:, None]
    o_smem.index(WG).reshape([HALF, D]).store(out.to(dtype))


@gluon.jit
def _attention_ws(q_desc, k_desc, v_desc, o_desc, qk_scale, S, H: gl.constexpr, G: gl.constexpr,
                  BM: gl.constexpr, BN: gl.constexpr, D: gl.constexpr, KSTAGES: gl.constexpr,
                  VSTAGES: gl.constexpr, PINGPONG: gl.constexpr, CAUSAL: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                  CONSUMERS: gl.constexpr, num_warps: gl.constexpr):  # fmt: skip
    """FA-3's warp-specialised schedule: a producer warp (TMA), one or two consumer
    warpgroups of BM / CONSUMERS query rows each (the default partition is consumer 0),
    launched with 4 warps."""
    dtype: gl.constexpr = q_desc.dtype
    HALF: gl.constexpr = BM // CONSUMERS
    n_m = gl.cdiv(S, BM)
    pid_m = gl.program_id(0)
    if CAUSAL:
        pid_m = n_m - 1 - pid_m
    bh = gl.program_id(1)
    kv_bh = (bh // H) * (H // G) + (bh % H) // G
    q0 = pid_m * BM
    if CAUSAL:
        n_blocks = gl.cdiv(gl.minimum((pid_m + 1) * BM, S), BN)
    else:
        n_blocks = gl.cdiv(S, BN)

    # 3-D boxes [1, rows, D] of [B*H, S, D]: a tile past S reads zeros and stores nothing
    q_smem = gl.allocate_shared_memory(dtype, [CONSUMERS, 1, HALF, D], q_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [KSTAGES, 1, BN, D], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [VSTAGES, 1, BN, D], v_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [KSTAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [KSTAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [VSTAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [VSTAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_ready, count=1)
    for i in gl.static_range(KSTAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=CONSUMERS)
    for i in gl.static_range(VSTAGES):
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(v_empty.index(i), count=CONSUMERS)
    mbarrier.init(turn.index(0), count=1)
    mbarrier.init(turn.index(1), count=1)
    mbarrier.expect(q_ready, CONSUMERS * q_desc.block_type.nbytes)
    for c in gl.static_range(CONSUMERS):
        tma_load(q_desc, [bh, q0 + c * HALF, 0], q_ready, q_smem.index(c))

    if CONSUMERS == 3:
        gl.warp_specialize([
            (_ws_consumer, (q_smem, k_smem, v_smem, q_smem, q_ready, k_ready, k_empty, v_ready, v_empty, turn, qk_scale,
                            q0, n_blocks, S, 0, False, BM, BN, D, KSTAGES, VSTAGES, CAUSAL, CONSUMERS)),
            (_ws_consumer, (q_smem, k_smem, v_smem, q_smem, q_ready, k_ready, k_empty, v_ready, v_empty, turn, qk_scale,
                            q0 + HALF, n_blocks, S, 1, False, BM, BN, D, KSTAGES, VSTAGES, CAUSAL, CONSUMERS)),
            (_ws_consumer, (q_smem, k_smem, v_smem, q_smem, q_ready, k_ready, k_empty, v_ready, v_empty, turn, qk_scale,
                            q0 + 2 * HALF, n_blocks, S, 2, False, BM, BN, D, KSTAGES, VSTAGES, CAUSAL, CONSUMERS)),
            (_ws_loader, (k_desc, v_desc, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, kv_bh, n_blocks, BN,
                          KSTAGES, VSTAGES)),
        ], [4, 4, 1], [CONSUMER_REGS, CONSUMER_REGS, 24])  # fmt: skip
    elif CONSUMERS == 2:
        gl.warp_specialize([
            (_ws_consumer, (q_smem, k_smem, v_smem, q_smem, q_ready, k_ready, k_empty, v_ready, v_empty, turn, qk_scale,
                            q0, n_blocks, S, 0, PINGPONG, BM, BN, D, KSTAGES, VSTAGES, CAUSAL, CONSUMERS)),
            (_ws_consumer, (q_smem, k_smem, v_smem, q_smem, q_ready, k_ready, k_empty, v_ready, v_empty, turn, qk_scale,
                            q0 + HALF, n_blocks, S, 1, PINGPONG, BM, BN, D, KSTAGES, VSTAGES, CAUSAL, CONSUMERS)),
            (_ws_loader, (k_desc, v_desc, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, kv_bh, n_blocks, BN,
                          KSTAGES, VSTAGES)),
        ], [4, 1], [CONSUMER_REGS, 24])  # fmt: skip
    else:
        gl.warp_specialize([
            (_ws_consumer, (q_smem, k_smem, v_smem, q_smem, q_ready, k_ready, k_empty, v_ready, v_empty, turn, qk_scale,
                            q0, n_blocks, S, 0, False, BM, BN, D, KSTAGES, VSTAGES, CAUSAL, CONSUMERS)),
            (_ws_loader, (k_desc, v_desc, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, kv_bh, n_blocks, BN,
                          KSTAGES, VSTAGES)),
        ], [1], [24])  # fmt: skip
    fence_async_shared()
    for c in gl.static_range(CONSUMERS):
        tma_store(o_desc, [bh, q0 + c * HALF, 0], q_smem.index(c))
    tma.store_wait(pendings=0)


VARIANTS = [  # name, BM, BN, KSTAGES, VSTAGES, OVERLAP, warps
    ("fa3 k3v2", 128, 128, 3, 2, True, 8),
    # one warpgroup a program: several programs an SM, no lockstep between warpgroups
    ("bm64 fa2 k2v2", 64, 128, 2, 2, False, 4),
    ("bm64 fa3 bn64 k3v2", 64, 64, 3, 2, True, 4),
]
# Measured on an H100 (2026-12-05) and dropped: bm64 with BN 128 and 2-3 stages overlapped
# (0.51-0.72x SDPA), bm64 BN 64 with 4 stages (one program an SM: 0.50-0.68x), BN 64 with 8
# warps (0.68-0.74x).

WS_VARIANTS = [  # name, BM, BN, KSTAGES, VSTAGES, PINGPONG, consumer registers, consumers
    ("ws k2v2", 128, 128, 2, 2, False, 240, 2),
    ("ws pingpong k2v2", 128, 128, 2, 2, True, 240, 2),
    # three consumer warpgroups, 192 query rows (FA-3's head-dim-64 tile)
    ("ws3 k2v2", 192, 128, 2, 2, False, 160, 3),
    ("ws3 k3v3", 192, 128, 3, 3, False, 160, 3),
    ("ws3 bn64 k4v4", 192, 64, 4, 4, False, 160, 3),
]
# Measured on an H100 and dropped: 3 or 4 K/V stages with two consumers (no change at D128,
# none at D64), BN 64 with two consumers (0.84-0.87x); one consumer of 64 rows a program,
# two programs an SM (maxnreg 128): 0.83x at D128, 0.71x at D64.

SHAPES = [  # b, h, hkv, s, d, causal
    (4, 32, 32, 4096, 128, False),
    (8, 16, 16, 2048, 64, False),
    (4, 32, 32, 4096, 128, True),
    (8, 16, 16, 2048, 64, True),
    (4, 32, 8, 4096, 128, False),
]


def _layout(block, dtype=gl.bfloat16):
    return gl.NVMMASharedLayout.get_default_for(block, dtype)


def _smem_bytes(bm, bn, d, ks, vs):
    if bm > 128:
        return 2 * (bm * d + (ks + vs) * bn * d)
    return 2 * (bm * d + (ks + vs) * bn * d)


def run(q, k, v, causal, bm, bn, ks, vs, overlap, warps):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    b, h, s, d = q.shape
    o = torch.empty_like(q)
    rows = lambda t: t.view(-1, d)  # noqa: E731
    qd = TensorDescriptor.from_tensor(rows(q), [bm, d], _layout([bm, d]))
    kd = TensorDescriptor.from_tensor(rows(k), [bn, d], _layout([bn, d]))
    vd = TensorDescriptor.from_tensor(rows(v), [bn, d], _layout([bn, d]))
    od = TensorDescriptor.from_tensor(rows(o), [bm, d], _layout([bm, d]))
    grid = (triton.cdiv(s, bm), b * h)
    _attention_fwd[grid](qd, kd, vd, od, 1.4426950408889634 / math.sqrt(d), s, H=h, G=h // k.shape[1], BM=bm, BN=bn,
                         D=d, KSTAGES=ks, VSTAGES=vs, OVERLAP=overlap, CAUSAL=causal, num_warps=warps)  # fmt: skip
    return o


def _maxnreg(regs, consumers):
    """One consumer: `regs` caps the launch's registers a thread (two programs an SM)."""
    return {"maxnreg": regs} if consumers == 1 else {}


def run_ws(q, k, v, causal, bm, bn, ks, vs, pingpong, regs, consumers):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    b, h, s, d = q.shape
    o = torch.empty_like(q)
    heads = lambda t: t.view(-1, s, d)  # noqa: E731
    qb, kb = [1, bm // consumers, d], [1, bn, d]
    qd = TensorDescriptor.from_tensor(heads(q), qb, _layout(qb))
    kd = TensorDescriptor.from_tensor(heads(k), kb, _layout(kb))
    vd = TensorDescriptor.from_tensor(heads(v), kb, _layout(kb))
    od = TensorDescriptor.from_tensor(heads(o), qb, _layout(qb))
    grid = (triton.cdiv(s, bm), b * h)
    _attention_ws[grid](qd, kd, vd, od, 1.4426950408889634 / math.sqrt(d), s, H=h, G=h // k.shape[1], BM=bm, BN=bn,
                        D=d, KSTAGES=ks, VSTAGES=vs, PINGPONG=pingpong, CAUSAL=causal, CONSUMER_REGS=regs,
                        CONSUMERS=consumers, num_warps=4, **_maxnreg(regs, consumers))  # fmt: skip
    return o


def _variants(d):
    """(label, kernel, signature blocks, constexprs, num_warps, runner config) that fit."""
    out = []
    for name, bm, bn, ks, vs, overlap, warps in VARIANTS:
        if _smem_bytes(bm, bn, d, ks, vs) <= 220 * 1024:
            consts = dict(BM=bm, BN=bn, D=d, KSTAGES=ks, VSTAGES=vs, OVERLAP=overlap)
            out.append((f"gluon {name}", _attention_fwd, (bm, bn), consts, warps, run, (bm, bn, ks, vs, overlap, warps)))
    for name, bm, bn, ks, vs, pingpong, regs, consumers in WS_VARIANTS:
        if _smem_bytes(bm, bn, d, ks, vs) <= 220 * 1024:
            consts = dict(BM=bm, BN=bn, D=d, KSTAGES=ks, VSTAGES=vs, PINGPONG=pingpong, CONSUMER_REGS=regs,
                          CONSUMERS=consumers)  # fmt: skip
            out.append((f"gluon {name}", _attention_ws, ([1, bm // consumers], [1, bn]), consts, 4, run_ws,
                        (bm, bn, ks, vs, pingpong, regs, consumers)))  # fmt: skip
    return out


def aot():
    """Compile every variant for sm_90 without a GPU; print registers, spills, shared memory."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from tilefuse.gpu.aot import _resource_usage

    target = GPUTarget("cuda", 90, 32)
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    for d in (128, 64):
        for causal in (False, True):
            for label, kernel, (qb, kb), consts, warps, _, _ in _variants(d):
                if only not in label:
                    continue
                def desc(rows, d=d):
                    blk = (rows if isinstance(rows, list) else [rows]) + [d]
                    return f"tensordesc<bf16[{', '.join(map(str, blk))}],{_layout(blk)!r}>"

                sig = {"q_desc": desc(qb), "k_desc": desc(kb), "v_desc": desc(kb),
                       "o_desc": desc(qb), "qk_scale": "fp32", "S": "i32"}  # fmt: skip
                consts = dict(consts, H=32, G=1, CAUSAL=causal, num_warps=warps)
                for c in kernel.arg_names:
                    if c not in sig:
                        sig[c] = "constexpr"
                try:
                    src = GluonASTSource(kernel, sig, constexprs=consts)
                    opts = {"num_warps": warps, **_maxnreg(consts.get("CONSUMER_REGS"), consts.get("CONSUMERS"))}
                    k = triton.compile(src, target=target, options=opts)
                    regs, local, _ = _resource_usage(k.name, k.asm["cubin"], k.asm["ptx"], 90)
                    nreg = sorted(set(re.findall(r"setmaxnreg[.a-z]*\.u32 (\d+)", k.asm["ptx"])))
                    print(f"D{d} {'causal ' if causal else ''}{label:24s} regs {regs} local {local} B "
                          f"smem {k.metadata.shared} B setmaxnreg {nreg}")  # fmt: skip
                except Exception as e:
                    print(f"D{d} {'causal ' if causal else ''}{label:24s} FAILED {type(e).__name__}: {str(e)[:3000]}")


def main(head_dims: set[int] | None = None):
    """Every shape of `SHAPES` (those of `head_dims` only, where given)."""
    import attention_hopper  # the FA-2 loop as tilefuse prints it, same process

    torch.manual_seed(0)
    triton.set_allocator(attention_hopper._alloc)
    print(torch.cuda.get_device_name(), "triton", triton.__version__, "torch", torch.__version__)
    printed = dict((v[0], v[1:]) for v in attention_hopper.VARIANTS)["as printed"]
    for b, h, hkv, s, d, causal in SHAPES:
        if head_dims and d not in head_dims:
            continue
        q = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, hkv, s, d, device="cuda", dtype=torch.bfloat16)
        ke, ve = (x.repeat_interleave(h // hkv, dim=1) for x in (k, v))
        want = F.scaled_dot_product_attention(q, ke, ve, is_causal=causal)
        flops = 4 * b * h * s * s * d * (0.5 if causal else 1.0)
        sdpa = lambda q=q, ke=ke, ve=ve, c=causal: F.scaled_dot_product_attention(q, ke, ve, is_causal=c)  # noqa: E731
        sdpa_us = attention_hopper.bench(sdpa)
        gqa = f" gqa {hkv}" if hkv != h else ""
        print(f"\nB{b} H{h} S{s} D{d}{' causal' if causal else ''}{gqa}: SDPA {sdpa_us:.0f} us "
              f"{flops / sdpa_us / 1e6:.0f} TF/s")  # fmt: skip
        runs = [("triton fa2 as printed", lambda q=q, k=k, v=v, c=causal: attention_hopper.run(q, k, v, c, *printed))]
        for label, _, _, _, _, runner, cfg in _variants(d):
            runs.append((label, lambda q=q, k=k, v=v, c=causal, runner=runner, cfg=cfg: runner(q, k, v, c, *cfg)))
        for name, fn in runs:
            try:
                out = fn()
                err = (out.float() - want.float()).abs().max().item()
                us = attention_hopper.bench(fn)
                sdpa_us = min(sdpa_us, attention_hopper.bench(sdpa, 10))
                row = {"shape": [b, h, hkv, s, d, causal], "variant": name, "us": round(us, 1),
                       "tflops": round(flops / us / 1e6), "vs_sdpa": round(sdpa_us / us, 3), "err": err}  # fmt: skip
                print(f"  {name:24s} {us:8.0f} us {flops / us / 1e6:5.0f} TF/s {sdpa_us / us:5.2f}x SDPA err {err:.1e}")
            except Exception as e:
                row = {"shape": [b, h, hkv, s, d, causal], "variant": name, "error": f"{type(e).__name__}: {e}"[:300]}
                print(f"  {name:24s} FAILED {row['error']}")
            print("JSON", json.dumps(row))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "aot":
        aot()
    else:  # (optional arguments: head dims to run, `64 128`)
        main({int(a) for a in sys.argv[1:]})
