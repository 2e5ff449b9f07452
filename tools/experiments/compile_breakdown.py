"""
Where the time to first result goes on a GPU, cold caches, one process per measurement.

    python tools/experiments/compile_breakdown.py linear_bf16 transformer_bf16 ...

For each bench case (names from tools/bench.py), two fresh processes with empty
Triton/Inductor/tilefuse caches: tilefuse (pipeline, then the first call, with
the time spent in each Triton stage, in launcher builds and in loading modules
summed over threads) and torch.compile's first call.
"""

import os
import subprocess
import sys
import tempfile

CHILD = r"""
import collections, sys, threading, time
sys.path.insert(0, "tools"); sys.path.insert(0, ".")
import torch, triton
spent = collections.defaultdict(float)
calls = collections.Counter()
lock = threading.Lock()

def timed(name, fn):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            with lock:
                spent[name] += time.perf_counter() - t
                calls[name] += 1
    return wrapper

from triton.backends.nvidia.compiler import CUDABackend
add_stages = CUDABackend.add_stages
def add_timed_stages(self, stages, options, *rest):
    add_stages(self, stages, options, *rest)
    for k in list(stages):
        stages[k] = timed("triton " + k, stages[k])
CUDABackend.add_stages = add_timed_stages
import triton.backends.nvidia.driver as drv
import triton.runtime.build as build
for mod in (drv, build):
    if hasattr(mod, "compile_module_from_src"):
        mod.compile_module_from_src = timed("C module build (gcc)", mod.compile_module_from_src)
from triton.compiler.compiler import CompiledKernel
CompiledKernel._init_handles = timed("load module + launcher", CompiledKernel._init_handles)
import tilefuse.runtime.launcher
tilefuse.runtime.launcher.StaticLauncher.__init__ = timed("static launcher", tilefuse.runtime.launcher.StaticLauncher.__init__)

from bench import CASES, MODELS, ROOT, make_inputs
from tilefuse.frontend.program import load_program
from tilefuse.frontend.specialize import read_header
case = next(c for c in CASES if c.name == sys.argv[1])
path = ROOT / "samples" / f"{case.sample}.mlir"
dims = {**read_header(path.read_text()).dims, **case.dims}
module = load_program(path, case.dims, case.dtype)
inputs = make_inputs(module, case, dims, "cuda", 0)
torch.cuda.synchronize()
if sys.argv[2] == "torch":
    model = MODELS[case.sample]
    compiled = torch.compile(lambda *a: model(*a, dims=dims))
    t = time.perf_counter()
    compiled(*inputs)
    torch.cuda.synchronize()
    print(f"{case.name:<22} torch.compile first call {time.perf_counter() - t:6.2f} s")
else:
    from tilefuse.runtime.compiled import compile as tf_compile
    t = time.perf_counter()
    prog = tf_compile(path, "h200", case.dims, case.dtype)
    pipeline = time.perf_counter() - t
    prog(*inputs)
    torch.cuda.synchronize()
    total = time.perf_counter() - t
    parts = ", ".join(f"{k} {calls[k]}x {v:.2f}" for k, v in sorted(spent.items()))
    print(f"{case.name:<22} tilefuse first result     {total:6.2f} s: pipeline {pipeline:.2f}, "
          f"{len(prog.kernels)} kernels; summed over threads: {parts}")
"""


def main() -> None:
    for name in sys.argv[1:]:
        for mode in ("ours", "torch"):
            env = dict(os.environ)
            for var in (
                "TRITON_CACHE_DIR",
                "TORCHINDUCTOR_CACHE_DIR",
                "TILEFUSE_CACHE",
            ):
                env[var] = tempfile.mkdtemp()
            subprocess.run(
                [sys.executable, "-c", CHILD, name, mode], env=env, check=False
            )


if __name__ == "__main__":
    main()
