"""
tilefuse's static launcher and direct launches against Triton's launcher, on
the GPU: same outputs (first and second call), which launcher each kernel got,
how many kernels launch directly, and the host time per call of a small program.

    python tools/experiments/launcher_check.py relu_add_f32 linear_bf16 transformer_bf16

One fresh process per launcher (`TILEFUSE_TRITON_LAUNCHER=1` selects Triton's),
empty caches; outputs compared bit for bit.
"""

import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time
sys.path.insert(0, "tools"); sys.path.insert(0, ".")
import torch
from bench import CASES, ROOT, make_inputs
from tilefuse.frontend.program import load_program
from tilefuse.runtime.compiled import compile as tf_compile
from tilefuse.frontend.specialize import read_header
outs = {}
for name in sys.argv[2:]:
    case = next(c for c in CASES if c.name == name)
    path = ROOT / "samples" / f"{case.sample}.mlir"
    dims = {**read_header(path.read_text()).dims, **case.dims}
    inputs = make_inputs(load_program(path, case.dims, case.dtype), case, dims, "cuda", 0)
    prog = tf_compile(path, "h200", case.dims, case.dtype)
    first = [o.cpu() for o in prog(*inputs)]
    outs[name] = [o.cpu() for o in prog(*inputs)]  # direct launches, if any
    assert all(a.equal(b) for a, b in zip(first, outs[name], strict=True)), name
    direct = sum(len(getattr(getattr(prog.python, k), "launches", {})) for k in prog.kernels)
    print(f"  {name}: {direct} of {len(prog.kernels)} kernels launched directly after the first call")
    kinds = set()
    try:
        for k in prog.kernels:
            for cache in getattr(prog.python, k).device_caches.values():
                for compiled in cache[0].values():
                    kinds.add(type(compiled._run).__name__)
    except (AttributeError, TypeError) as e:
        kinds.add(f"unknown ({e})")
    print(f"  {name}: launchers {sorted(kinds)}")
small = next(c for c in CASES if c.name == "relu_add_f32")
path = ROOT / "samples" / f"{small.sample}.mlir"
prog = tf_compile(path, "h200", {"M": 64, "N": 64}, "f32")
x = [torch.randn(64, 64, device="cuda") for _ in range(2)]
for _ in range(100):
    prog(*x)
torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(2000):
    prog(*x)
torch.cuda.synchronize()
print(f"  64x64 relu_add: {(time.perf_counter() - t) / 2000 * 1e6:.1f} us per call (host-bound)")
torch.save(outs, sys.argv[1])
"""


def main() -> None:
    results = {}
    for triton_launcher in ("0", "1"):
        env = dict(os.environ, TILEFUSE_TRITON_LAUNCHER=triton_launcher)
        for var in ("TRITON_CACHE_DIR", "TILEFUSE_CACHE"):
            env[var] = tempfile.mkdtemp()
        out = tempfile.mktemp(suffix=".pt")
        print("Triton's launcher:" if triton_launcher == "1" else "tilefuse's static launcher:")
        subprocess.run([sys.executable, "-c", CHILD, out, *sys.argv[1:]], env=env, check=True)
        import torch

        results[triton_launcher] = torch.load(out)
    for name, ours in results["0"].items():
        same = all(a.equal(b) for a, b in zip(ours, results["1"][name], strict=True))
        print(f"{name}: outputs {'identical' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
