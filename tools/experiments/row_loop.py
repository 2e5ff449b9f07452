"""
Whole rows in registers vs rows looped in chunks (Inductor's looped reduction:
one pass per reduction, re-reads served by L2), for row-reduction samples.

    python tools/experiments/row_loop.py layernorm:M=16384:N=4096:f32

For each case, in one process: the default plan, then `tile-and-fuse` with a
smaller shared-memory budget (which makes the planner loop the row in chunks),
with and without Inductor's L2 hints on the row loads (`evict_last` on the
passes that are read again, `evict_first` on the last) and at the planner's,
8 or 16 warps, beside torch.compile.
"""

import re
import sys

import torch
import triton.testing

sys.path.insert(0, ".")
sys.path.insert(0, "tools")
sys.path.insert(0, "tools/experiments")
from torch_models import MODELS
from warps_sweep import alldims_of, parse_spec

from tilefuse.backend.triton.emit import emit_triton
from tilefuse.frontend.program import load_program
from tilefuse.ir.module import entry_function
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime.compiled import import_source


def source(path, dims, dtype, budget):
    module = load_program(path, dims, dtype)
    options = {"tile-and-fuse": {"smem_budget": budget}}
    run_pipeline(module, until="tile-and-fuse", options=options)
    return emit_triton(module), entry_function(module).sym_name.data


def with_hints(src):
    """evict_last on every load of the row (the first input) but the last,
    evict_first on that."""
    row = re.search(r"^def \w+\((\w+)_ptr", src, re.MULTILINE)[1]
    loads = [m.start() for m in re.finditer(rf"tl\.load\({row}_ptr", src)]
    for k, start in reversed(list(enumerate(loads))):
        end = src.index(")", src.index(f"{row}_s1", start))
        hint = "evict_first" if k == len(loads) - 1 else "evict_last"
        src = src[:end] + f', eviction_policy="{hint}"' + src[end:]
    return src


def main():
    for spec in sys.argv[1:]:
        name, dims, dtype, path, args = parse_spec(spec)
        alldims = alldims_of(name, dims)
        model = MODELS[name]
        torch._dynamo.reset()
        compiled = torch.compile(lambda *a, model=model, alldims=alldims: model(*a, dims=alldims))
        ref = compiled(*args)
        ref = ref if isinstance(ref, tuple) else (ref,)
        nbytes = sum(a.numel() * a.element_size() for a in (*args, *ref))
        tc = triton.testing.do_bench(lambda c=compiled, a=args: c(*a), return_mode="median")
        print(f"{spec}: torch.compile {tc:.4f} ms ({nbytes / tc / 1e6:.0f} GB/s)")
        for budget in (0, 65536, 32768, 16384):
            src, fn = source(path, dims, dtype, budget)
            tile = next(line for line in src.splitlines() if line.startswith("# tile"))
            variants = [(False, None)] if not budget else [
                (h, w) for h in (False, True) for w in (None, 8, 16)]
            for hinted, warps in variants:
                text = with_hints(src) if hinted else src
                if warps:
                    text = re.sub(r"num_warps=\d+", f"num_warps={warps}", text)
                f = getattr(import_source(text), fn)
                out = f(*args)
                out = out if isinstance(out, tuple) else (out,)
                err = max((o.float() - r.float()).norm() / r.float().norm() for o, r in zip(out, ref, strict=True))
                ms = triton.testing.do_bench(lambda f=f, a=args: f(*a), return_mode="median")
                label = (f"budget {budget or 'default'}{' +hints' if hinted else ''}"
                         f"{f' {warps}w' if warps else ''}")
                print(f"    {label:<20} {ms:.4f} ms ({nbytes / ms / 1e6:.0f} GB/s, {tc / ms:.2f}x compile, "
                      f"err {err:.1e}) {tile[2:60]}")


if __name__ == "__main__":
    main()
