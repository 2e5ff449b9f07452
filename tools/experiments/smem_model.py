"""
Shared memory of a pipelined `tl.dot` loop: ptxas (through `gpu/aot.py`, no GPU)
against `budget.contraction_smem`, on GEMM variants: operands bf16 as loaded, f32
converted to a bf16 dot, computed in the loop (a per-K scale, as a fused RMSNorm's),
masked along K, stages 1-4, K of one trip, f32 epilogues.

```
python tools/experiments/smem_model.py            # the local triton (3.9)
PYTHONPATH=/tmp/t36 python tools/experiments/smem_model.py   # another one (3.6)
```

Both gave the same bytes for every row, and the model matches them but for the
one-trip loop with a bf16 store (32 KB: Triton converts the epilogue in bf16; the
model counts the f32 accumulator, 64 KB). docs/ARCHITECTURE.md has the rule.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from tilefuse.analysis.budget import WGMMA, OperandTile, contraction_smem
from tilefuse.gpu.aot import compile_for_gpu, load_jit_function

SOURCE = '''
import triton
import triton.language as tl


@triton.jit
def gemm(a_ptr, b_ptr, c_ptr, s_ptr, N: tl.constexpr, K: tl.constexpr, KK: tl.constexpr,
         BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PRO: tl.constexpr):
    pid = tl.program_id(0)
    om = (pid // (N // BN)) * BM + tl.arange(0, BM)
    on = (pid % (N // BN)) * BN + tl.arange(0, BN)
    acc = tl.full((BM, BN), 0.0, tl.float32)
    for k in range(0, K, BK):
        ok = k + tl.arange(0, BK)
        a = tl.load(a_ptr + om[:, None] * K + ok[None, :], mask=ok[None, :] < KK, other=0.0)
        if PRO:
            a = a.to(tl.float32) * tl.load(s_ptr + ok)[None, :]
        b = tl.load(b_ptr + on[:, None] * K + ok[None, :])
        acc = tl.dot(a.to(tl.bfloat16), tl.permute(b, (1, 0)).to(tl.bfloat16), acc)
    tl.store(c_ptr + om[:, None] * N + on[None, :], acc.to(c_ptr.dtype.element_ty))
'''

BYTES = {"*bf16": 2, "*fp32": 4}
# (BM, BN, BK, stages, warps, A type, B type, C type, K, producer in the loop, masked K)
CASES = [
    (128, 128, 64, 4, 8, "*bf16", "*bf16", "*bf16", 1024, 0, False),
    (256, 128, 64, 4, 8, "*bf16", "*bf16", "*bf16", 1024, 0, False),
    (256, 128, 64, 2, 8, "*bf16", "*bf16", "*bf16", 1024, 0, False),
    (128, 128, 64, 4, 8, "*bf16", "*bf16", "*bf16", 64, 0, False),
    (128, 128, 64, 1, 8, "*bf16", "*bf16", "*fp32", 1024, 0, False),
    (256, 128, 64, 1, 8, "*bf16", "*bf16", "*fp32", 1024, 0, False),
    (128, 128, 64, 4, 8, "*fp32", "*bf16", "*bf16", 1024, 0, False),
    (128, 128, 64, 3, 8, "*fp32", "*bf16", "*bf16", 1024, 0, False),
    (128, 128, 64, 4, 8, "*bf16", "*fp32", "*bf16", 1024, 0, False),
    (128, 128, 64, 4, 8, "*fp32", "*fp32", "*bf16", 1024, 0, False),
    (128, 128, 64, 4, 8, "*bf16", "*bf16", "*bf16", 1024, 1, False),
    (128, 128, 64, 4, 8, "*bf16", "*bf16", "*bf16", 256, 0, True),
    (256, 64, 64, 4, 8, "*bf16", "*bf16", "*bf16", 256, 0, True),
]


def model(bm, bn, bk, stages, warps, at, bt, k, pro, masked) -> int:
    a_direct = at == "*bf16" and not pro
    loads = ((bm * bk, BYTES[at]),) + (((bk, 4),) if pro else ())  # the scale vector too
    a = OperandTile(bm * bk, loads, a_direct)
    b = OperandTile(bk * bn, ((bk * bn, BYTES[bt]),), bt == "*bf16")
    epilogue = min(bm, 16 * warps) * bn * 4
    return contraction_smem(a, b, 2, stages, k > bk, epilogue, WGMMA, masked)


def main() -> None:
    path = Path(tempfile.mkdtemp()) / "smem_gemm.py"
    path.write_text(SOURCE)
    fn = load_jit_function(SOURCE, "gemm", interpret=False)
    print("BM BN BK stages warps A B C K producer masked: ptxas KB, model KB")
    for bm, bn, bk, st, w, at, bt, ct, k, pro, masked in CASES:
        sig = {"a_ptr": at, "b_ptr": bt, "c_ptr": ct, "s_ptr": "*fp32"}
        consts = {"N": 4096, "K": k, "KK": 197 if masked else k, "BM": bm, "BN": bn,
                  "BK": bk, "PRO": pro}  # fmt: skip
        got = compile_for_gpu(fn, sig, consts, num_warps=w, num_stages=st).shared_bytes
        want = model(bm, bn, bk, st, w, at, bt, k, pro, masked)
        print(bm, bn, bk, st, w, at, bt, ct, k, pro, masked, ":", got // 1024, want // 1024,
              "" if got <= want else "UNDER")


if __name__ == "__main__":
    main()
