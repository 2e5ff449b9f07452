"""
GEMM tile size vs a heavy epilogue: compile time and kernel time of a bench case
with the accumulator capped at MAX_ACC_REGS fp32 values per thread, and
optionally the warps of every GEMM tile forced (`CAP:WARPS`).

    python tools/experiments/epilogue_tiles.py mlp_bf16 128 64 128:16

One fresh process per cap (empty Triton and tilefuse caches): time to first
result, then each kernel's time from the torch profiler.
"""

import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time
sys.path.insert(0, "tools"); sys.path.insert(0, ".")
import torch
import tilefuse.analysis.tile_plan
cap, _, warps = sys.argv[2].partition(":")
tilefuse.analysis.tile_plan.MAX_ACC_REGS = int(cap)
if warps:
    tilefuse.analysis.tile_plan._contraction_warps = lambda bm, bn, calls: int(warps)
from bench import CASES, ROOT, make_inputs
from tilefuse.runtime.bench import measured_kernels
from tilefuse.frontend.program import load_program
from tilefuse.runtime.compiled import compile as tf_compile
from tilefuse.frontend.specialize import read_header
case = next(c for c in CASES if c.name == sys.argv[1])
path = ROOT / "samples" / f"{case.sample}.mlir"
dims = {**read_header(path.read_text()).dims, **case.dims}
inputs = make_inputs(load_program(path, case.dims, case.dtype), case, dims, "cuda", 0)
torch.cuda.synchronize()
start = time.perf_counter()
prog = tf_compile(path, "h200", case.dims, case.dtype)
out = prog(*inputs)
torch.cuda.synchronize()
first = time.perf_counter() - start
tiles = [l[2:].split(",")[0] for l in prog.source.splitlines() if l.startswith("# tile")]
times = measured_kernels(prog, inputs)
print(f"MAX_ACC_REGS[:warps]={sys.argv[2]}: first result {first:.2f} s; tiles {tiles}; kernels "
      + ", ".join(f"{k} {v * 1e6:.0f} us" for k, v in times.items()))
torch.save([o.cpu() for o in out], sys.argv[3])
"""


def compare_fresh_runs(child: str, name: str, settings: list[str], label: str) -> None:
    """Run `child` once per setting in a fresh process (empty Triton and tilefuse
    caches); then each setting's outputs against the first setting's."""
    import torch

    outs = []
    for setting in settings:
        env = dict(os.environ)
        for var in ("TRITON_CACHE_DIR", "TILEFUSE_CACHE"):
            env[var] = tempfile.mkdtemp()
        path = tempfile.mktemp(suffix=".pt")
        subprocess.run([sys.executable, "-c", child, name, setting, path], env=env, check=True)
        outs.append(torch.load(path))
    for setting, out in zip(settings[1:], outs[1:], strict=True):
        err = max(float((a.float() - b.float()).norm() / b.float().norm())
                  for a, b in zip(out, outs[0], strict=True))  # fmt: skip
        print(f"{label}={setting} vs {settings[0]}: relative difference {err:.1e}")


def main() -> None:
    compare_fresh_runs(CHILD, sys.argv[1], sys.argv[2:], "MAX_ACC_REGS[:warps]")


if __name__ == "__main__":
    main()
