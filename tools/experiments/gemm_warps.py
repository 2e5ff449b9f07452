"""
num_warps of a bench case's kernels against their compile and run time: the
generated program as is, then with every launch's num_warps replaced.

    python tools/experiments/gemm_warps.py mlp_bf16 0 16

One fresh process per setting (empty Triton and tilefuse caches; 0 keeps the
model's choice): the first call's time (Triton compiles the kernels one after
another on it), then each kernel's time from the torch profiler, and the
outputs' relative difference from the first setting's.
"""

import sys

CHILD = r"""
import re, sys, time
sys.path.insert(0, "tools"); sys.path.insert(0, ".")
import torch
from torch.profiler import ProfilerActivity, profile
from bench import CASES, ROOT, make_inputs
from tilefuse.frontend.program import load_program
from tilefuse.runtime.compiled import compile as tf_compile, import_source
from tilefuse.frontend.specialize import read_header
case = next(c for c in CASES if c.name == sys.argv[1])
warps = int(sys.argv[2])
path = ROOT / "samples" / f"{case.sample}.mlir"
dims = {**read_header(path.read_text()).dims, **case.dims}
inputs = make_inputs(load_program(path, case.dims, case.dtype), case, dims, "cuda", 0)
prog = tf_compile(path, "h200", case.dims, case.dtype)
source = re.sub(r"num_warps=\d+", f"num_warps={warps}", prog.source) if warps else prog.source
fn = getattr(import_source(source), prog.function)
torch.cuda.synchronize()
start = time.perf_counter()
out = fn(*inputs)
torch.cuda.synchronize()
first = time.perf_counter() - start
for _ in range(3):
    fn(*inputs)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as p:
    for _ in range(20):
        fn(*inputs)
    torch.cuda.synchronize()
times = {e.key: e.device_time_total / 20 for e in p.key_averages() if e.key in prog.kernels}
print(f"warps={warps or 'model'}: first call {first:.2f} s; kernels "
      + ", ".join(f"{k} {v:.0f} us" for k, v in times.items()), flush=True)
torch.save([o.cpu() for o in out], sys.argv[3])
"""


def main() -> None:
    from epilogue_tiles import compare_fresh_runs  # same folder

    compare_fresh_runs(CHILD, sys.argv[1], sys.argv[2:], "warps")


if __name__ == "__main__":
    main()
