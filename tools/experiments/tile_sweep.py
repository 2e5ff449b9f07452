"""
Sweep tile choices the planner makes, to calibrate its constants on the H200.

- attention: FlashAttention's (B_r, B_c), num_warps and num_stages;
- row reductions: TARGET_TILE_ELEMS (rows per program) for LayerNorm/RMSNorm f32.
Prints median ms (do_bench) for each variant, in one process.
"""

import re
import sys

import torch
import triton.testing

sys.path.insert(0, ".")
import tilefuse.analysis.tile_plan as tiling
from tilefuse.runtime.compiled import compile as tf_compile
from tilefuse.runtime.compiled import import_source


def run(sample, dims, dtype, args):
    prog = tf_compile(f"samples/{sample}.mlir", dims=dims, dtype=dtype)
    return prog, triton.testing.do_bench(lambda: prog(*args), return_mode="median")


def attention(dims):
    q, k, v = (torch.randn(dims["B"], dims["H"], dims["S"], dims["D"], device="cuda",
                           dtype=torch.bfloat16) for _ in range(3))  # fmt: skip
    sdpa = triton.testing.do_bench(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v),
                                   return_mode="median")  # fmt: skip
    print(f"attention {dims}: SDPA {sdpa:.3f} ms")
    original = tiling.flash_tile
    for br, bc in ((128, 128), (128, 64), (64, 64), (128, 32)):
        tiling.flash_tile = lambda t, d, b, br=br, bc=bc: (br, bc, "sweep")
        prog, _ = run("attention", dims, "bf16", [q, k, v])
        for warps in (4, 8):
            for stages in (1, 2, 3, 4):
                src = re.sub(r"num_warps=\d+", f"num_warps={warps}", prog.source)
                src = re.sub(r"num_stages=\d+", f"num_stages={stages}", src)
                f = import_source(src).attention
                try:
                    ms = triton.testing.do_bench(lambda f=f: f(q, k, v), return_mode="median")
                    print(f"  B_r={br:3d} B_c={bc:3d} warps={warps} stages={stages}: {ms:.3f} ms ({sdpa / ms:.2f}x SDPA)")
                except Exception as e:  # out of shared memory etc.
                    print(f"  B_r={br:3d} B_c={bc:3d} warps={warps} stages={stages}: failed {type(e).__name__}")
    tiling.flash_tile = original


def rows(sample, dims):
    args = [torch.randn(dims["M"], dims["N"], device="cuda")]
    args += [torch.randn(dims["N"], device="cuda") for _ in range(2 if sample == "layernorm" else 1)]
    for elems in (4096, 8192, 16384, 32768):
        tiling.TARGET_TILE_ELEMS = elems
        prog, ms = run(sample, dims, "f32", args)
        tile = re.search(r"# tile (\S+)", prog.source).group(1)
        nbytes = 2 * args[0].numel() * 4
        print(f"{sample} f32 {dims}: TARGET_TILE_ELEMS={elems:6d} tile {tile:>8}: {ms:.4f} ms ({nbytes / ms / 1e6:.0f} GB/s)")
    tiling.TARGET_TILE_ELEMS = 4096


if __name__ == "__main__":
    rows("layernorm", {"M": 16384, "N": 4096})
    rows("rmsnorm", {"M": 16384, "N": 4096})
    attention({"B": 4, "H": 32, "S": 4096, "D": 128})
    attention({"B": 8, "H": 16, "S": 2048, "D": 64})
