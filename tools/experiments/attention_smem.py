"""
Shared memory of the FlashAttention kernel, ptxas (sm_90, this machine's Triton, no GPU)
against the tile plan's count, over head dims and forced query/key tiles:

    python tools/experiments/attention_smem.py

The `attention` sample in bf16 (B 2, H 4, S 1024); `flash_tile` is replaced to force
B_r x B_c (the plan's key tile is then clamped to [64, 128] by the head dim).
"""

from __future__ import annotations

import tilefuse.analysis.tile_plan as tile_plan
from tilefuse.frontend.program import load_program
from tilefuse.gpu.check import check_programs
from tilefuse.pipeline import run_pipeline


def main() -> None:
    cases = []
    for d in (64, 128):
        for br, bc in ((128, 128), (128, 64), (64, 128), (64, 64)):
            original = tile_plan.flash_tile
            tile_plan.flash_tile = lambda target, head, eb, br=br, bc=bc: (br, bc, "forced")
            try:
                module = load_program("samples/attention.mlir", {"B": 2, "H": 4, "S": 1024, "D": d},
                                      "bf16")  # fmt: skip
                run_pipeline(module, "h200")
            finally:
                tile_plan.flash_tile = original
            cases.append(((d, br, bc), module))
    for (key, _), reports in zip(cases, check_programs([(m, None) for _, m in cases], "h200"),
                                 strict=True):  # fmt: skip
        (r,) = reports
        print(f"d {key[0]:3} B_r x B_c {key[1]:3} x {key[2]:3}: ptxas {r.shared_bytes:7} B, "
              f"plan {r.predicted_working_set:7} B, registers {r.registers}")


if __name__ == "__main__":
    main()
