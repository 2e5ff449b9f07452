"""
Time to first result of a sample on the GPU: pipeline + Triton JIT + first run.

    TRITON_CACHE_DIR=$(mktemp -d) python tools/experiments/first_run.py transformer_block:S=4096:E=4096:H=32:Dh=128:F=16384:bf16 [--sequential]

`--sequential` skips the runtime's parallel compile (kernels then compile one
after another at their first launch, as Triton does by default). Use a fresh
TRITON_CACHE_DIR per run, or the second run only reads the cache.
"""

import sys
import time

import torch

sys.path.insert(0, ".")
from tilefuse.frontend.program import load_program
from tilefuse.ir.module import entry_function
from tilefuse.runtime.compiled import compile as tf_compile

DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def main():
    spec = sys.argv[1]
    sequential = "--sequential" in sys.argv
    name, *rest = spec.split(":")
    dtype = rest[-1]
    dims = {k: int(v) for k, v in (x.split("=") for x in rest[:-1])}
    path = f"samples/{name}.mlir"
    module = load_program(path, dims, dtype)
    args = [torch.randn(tuple(t.get_shape()), device="cuda").to(DT[dtype]) * 0.05
            for t in entry_function(module).function_type.inputs.data]  # fmt: skip
    torch.cuda.synchronize()
    start = time.perf_counter()
    prog = tf_compile(path, "h200", dims, dtype)
    pipeline = time.perf_counter() - start
    prog.warmed = sequential
    prog(*args)
    torch.cuda.synchronize()
    total = time.perf_counter() - start
    mode = "sequential JIT" if sequential else "parallel JIT"
    print(f"{spec}: {len(prog.kernels)} kernels, pipeline {pipeline:.2f} s, "
          f"first result {total:.2f} s ({mode})")


if __name__ == "__main__":
    main()
