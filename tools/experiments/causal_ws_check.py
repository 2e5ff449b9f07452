"""
Does causal attention's warp-specialised Gluon kernel run on this GPU? (Issue 17; held
back from plans by `tile_plan.WS_CAUSAL` since its first launch hung on an H100 in the
thirty-first session, docs/PERF.md.)

Each program (torch-mlir exports of SDPA, bf16 B2 H16 S2048 D128, in `programs/`: one
causal attention; two causal attentions summed, the one that hung; two non-causal ones,
which ran) is compiled with the kernel allowed, each kernel launch synchronised and named,
its registers and spills printed, then compared with SDPA in f32 and timed against it.
Every program runs in a child process with a time limit, so a hung kernel is reported as
such and the next program still runs; a hung child prints its Python stack.

    python tools/experiments/causal_ws_check.py [name ...] [--limit SECONDS]
"""

from __future__ import annotations

import faulthandler
import subprocess
import sys
import time
from pathlib import Path

PROGRAMS = Path(__file__).resolve().parent / "programs"
CASES = {  # name: each attention's mask (the first one's Q, K, V; the second's Q, V, K)
    "causal_sdpa": ("causal",),
    "two_causal_sdpa": ("causal", "causal"),
    "two_sdpa_outputs": ("full", "full"),
}


def child(name: str) -> None:
    import torch
    import torch.nn.functional as F

    import tilefuse.runtime as tf
    from tilefuse.analysis import tile_plan
    from tilefuse.runtime.compiled import (
        compile_in_parallel,
        every_kernel,
        kernels_replaced,
    )

    faulthandler.dump_traceback_later(20, repeat=True, file=sys.stdout)
    start = time.time()

    def say(*a):
        print(f"[{time.time() - start:6.1f}s]", *a, flush=True)

    tile_plan.WS_CAUSAL = True
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 16, 2048, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    prog = tf.compile(PROGRAMS / f"{name}.mlir")
    args = (q, k, v)
    fn = prog.host_function(args)
    compile_in_parallel(prog.python, fn, args)
    say("kernels", every_kernel(prog.python), "gluon", list(getattr(prog.python, "GPU_KERNELS", ())))

    class Synchronised:
        def __init__(self, name, kernel):
            self.name, self.kernel = name, kernel

        def __getitem__(self, grid):
            def launch(*a, **kw):
                compiled = self.kernel[grid](*a, **kw)
                say("launched", self.name, grid, "registers", getattr(compiled, "n_regs", None),
                    "spills", getattr(compiled, "n_spills", None))  # fmt: skip
                torch.cuda.synchronize()
                say("finished", self.name)
                return compiled

            return launch

    with kernels_replaced(prog.python, Synchronised):
        outs = fn(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    masks = CASES[name]
    each = [F.scaled_dot_product_attention(*(x.float() for x in a), is_causal=m == "causal")
            for a, m in zip(((q, k, v), (q, v, k)), masks, strict=False)]  # fmt: skip
    want = [each[0].bfloat16().float() + each[1].bfloat16().float()] if name == "two_causal_sdpa" else each
    say("largest error / largest value", [round(((o.float() - w).abs().max() / w.abs().max()).item(), 5)
                                          for o, w in zip(outs, want, strict=True)])  # fmt: skip
    ours = lambda: prog(*args)  # noqa: E731
    sdpa = lambda: [F.scaled_dot_product_attention(*a, is_causal=m == "causal")  # noqa: E731
                    for a, m in zip(((q, k, v), (q, v, k)), masks, strict=False)]  # fmt: skip
    for label, f in (("tilefuse", ours), ("SDPA", sdpa)):
        f()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(20):
            f()
        e.record()
        torch.cuda.synchronize()
        say(label, "ms", round(s.elapsed_time(e) / 20, 4))
    faulthandler.cancel_dump_traceback_later()


def main(argv: list[str]) -> int:
    limit = 90
    if "--limit" in argv:
        i = argv.index("--limit")
        limit = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    for name in argv or list(CASES):
        print(f"== {name}", flush=True)
        try:
            subprocess.run([sys.executable, __file__, "--child", name], timeout=limit, check=False)
        except subprocess.TimeoutExpired:
            print(f"{name}: no result within {limit} s (a hung kernel, if the last line is a launch)", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
    else:
        sys.exit(main(sys.argv[1:]))
