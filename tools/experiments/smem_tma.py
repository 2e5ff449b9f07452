"""
Shared memory of a persistent TMA GEMM (the Hopper lowering: descriptors for the
operand tiles, one program per SM looping over output tiles): ptxas (through
`gpu/aot.py`, no GPU) against the operand buffers alone. The epilogue's layout
conversion does not reuse the pipeline's buffers there (the next tile's loads are
in flight), so the two add; `tile_plan._contraction_smem` counts at most a
BM x BN tile of the stored type for it.

    python tools/experiments/smem_tma.py

Triton 3.9, sm_90 (KB: shared, operands, extra): 128x256/4 stages/8 warps bf16 out
224 / 192 / 32; 3 stages 176 / 144 / 32; 16 warps 256 / 192 / 64; f32 out (3
stages) 272 / 144 / 128; 128x128/4/8 160 / 128 / 32; 128x128/4/4 136 / 128 / 8;
256x128/3/8 208 / 144 / 64; 128x128/4/8 f32 out 192 / 128 / 64; 64x128/4/4 104 / 96 / 8.
"""

from __future__ import annotations

from tilefuse.gpu.aot import compile_for_gpu, load_jit_function

SOURCE = """
import triton
import triton.language as tl


@triton.jit
def gemm(x, w, out, x_s0, w_s0, o_s0, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, P: tl.constexpr):
    pid = tl.program_id(0)
    a_desc = tl.make_tensor_descriptor(x, shape=[M, K], strides=[x_s0, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(w, shape=[N, K], strides=[w_s0, 1], block_shape=[BN, BK])
    gn = N // BN
    for t in tl.range(pid, (M // BM) * gn, P, flatten=True):
        pm = t // gn
        pn = t % gn
        acc = tl.full((BM, BN), 0.0, tl.float32)
        for k in range(0, K, BK):
            a = a_desc.load([pm * BM, k])
            b = b_desc.load([pn * BN, k])
            acc = tl.dot(a, tl.permute(b, (1, 0)), acc)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        tl.store(out + rm[:, None] * o_s0 + rn[None, :], acc.to(out.dtype.element_ty))
"""

# (BM, BN, stages, warps, output type)
CASES = [(128, 256, 4, 8, "*bf16"), (128, 256, 3, 8, "*bf16"), (128, 256, 4, 16, "*bf16"),
         (128, 256, 3, 8, "*fp32"), (128, 128, 4, 8, "*bf16"), (128, 128, 4, 4, "*bf16"),
         (256, 128, 3, 8, "*bf16"), (128, 128, 4, 8, "*fp32"), (64, 128, 4, 4, "*bf16")]  # fmt: skip


def main() -> None:
    fn = load_jit_function(SOURCE, "gemm", interpret=False)
    print("BM BN stages warps C: ptxas shared, operand buffers, extra (bytes)")
    for bm, bn, stages, warps, out in CASES:
        sig = {"x": "*bf16", "w": "*bf16", "out": out, "x_s0": "i32", "w_s0": "i32", "o_s0": "i32"}
        consts = {"M": 8192, "N": 4096, "K": 4096, "BM": bm, "BN": bn, "BK": 64, "P": 132}
        got = compile_for_gpu(fn, sig, consts, num_warps=warps, num_stages=stages).shared_bytes
        operands = (bm + bn) * 64 * 2 * stages
        print(bm, bn, stages, warps, out, ":", got, operands, got - operands, flush=True)


if __name__ == "__main__":
    main()
