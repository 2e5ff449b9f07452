"""
Registers and spills of `short_rows.py`'s kernels, compiled ahead of time for
sm_90 (no GPU needed: `tilefuse.gpu.aot` runs the ptxas of the triton wheel).

    PYTHONPATH=. python3 tools/experiments/short_rows_regs.py [N ...]   # default 768 1024 4096
"""

import sys

import triton

sys.path.insert(0, "tools/experiments")
from short_rows import ln_row, ln_rows, variants

from tilefuse.gpu.aot import compile_for_gpu

POINTERS = {"x_ptr": "*bf16", "w_ptr": "*bf16", "b_ptr": "*bf16", "y_ptr": "*bf16"}


def main() -> None:
    for n in [int(a) for a in sys.argv[1:]] or [768, 1024, 4096]:
        block_n = triton.next_power_of_2(n)
        for label, precision, rows, warps in variants([2, 4, 8], [4, 8, 16]):
            constexprs = {"N": n, "BLOCK_N": block_n, "PRECISION": precision, "ON_GPU": True}
            if rows == 0:
                fn, signature = ln_row, {**POINTERS, "stride": "i32", "eps": "fp32"}
            else:
                fn, signature = ln_rows, {**POINTERS, "M": "i32", "stride": "i32", "eps": "fp32"}
                constexprs["BLOCK_R"] = rows
            k = compile_for_gpu(fn, signature, constexprs, num_warps=warps, num_stages=1,
                                divisible_by_16=[*POINTERS, "stride"])  # fmt: skip
            print(f"{n:5d} {label:<16} regs {k.registers:3d}  spill words {k.spills}", flush=True)


if __name__ == "__main__":
    main()
