"""
Where a dynamic program loses to the static build (issue 18), on the GPU.

    python tools/experiments/dynamic_gaps.py [--parts gemm attention gpt2 dynamo]
                                             [--gpt2 DIR] [--json OUT.json]

- `gemm`: linear + bias + ReLU bf16 (K 4096, N 11008), M dynamic: one program per
  planning size P (variants off: the plan at P serves every M <= P), each timed at the
  M up to P, beside the static build at each M. The matrix says which plans to keep
  as variants.
- `attention`: bf16 B4 H32 D128, S dynamic 1:4096, at S = 1024: the dynamic kernel
  as emitted and with one difference from the static kernel taken away at a time
  (edits of the emitted source, each valid at S = 1024: the masked last chunk's loop,
  the q/out masks, the run-time key bound, the run-time grid, the size arguments'
  specialisation).
- `gpt2`: the GPT-2 block of `dynamic_gpt2.py` (files of its `--export`): per-kernel
  device times (torch profiler) of the dynamic program and the static build at each
  bench T.
- `block`: the transformer-block sample (E 1024, H 16, Dh 64, F 4096, bf16), S dynamic
  1:4096, at S = 512 and 2048: per-kernel device times (torch profiler) of the dynamic
  program and the static build, and each one's host time per call (the Python call
  alone, back to back, no synchronisation between calls).
- `gpt2_attention`: the same block's causal attention kernel at T = 2048, as emitted
  and with one difference from the static kernel taken away at a time (edits of the
  emitted source, valid at T = 2048), device time per kernel.
- `host`: the host's time per call of the transformer-block sample at S = 512,
  dynamic and static: as emitted, with `triton.cdiv` as integer arithmetic (a no-op
  since `a88779d`: the host emits integer ceil-division), and with every launch a no-op.
- `host_calls`: the same two programs' host time per function (cProfile).
- `dynamo`: `torch.compile(model, backend="tilefuse", dynamic=True)` on the same
  block: compiles counted over 64 T, first-call time, timed at the bench T beside
  eager and default torch.compile (torch-mlir needed).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dynamic_lengths import SAMPLES, inputs, time_call

import tilefuse.passes.tile_and_fuse as tile_and_fuse
import tilefuse.runtime as tf
from tilefuse.frontend.program import load_program
from tilefuse.frontend.specialize import dynamic_form, specialize
from tilefuse.ir.dynamic import DimRange
from tilefuse.runtime.bench import measured_kernels


def best_of(fns: dict, args, rounds: int = 3) -> dict[str, float]:
    for fn in fns.values():
        fn(*args)
    times: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(rounds):  # alternating rounds, the order rotated
        for k in names[r % len(names):] + names[: r % len(names)]:
            times[k].append(time_call(fns[k], args))
    return {k: round(min(v), 4) for k, v in times.items()}


def tile_line(program) -> list[str]:
    return [ln[2:] for ln in program.source.splitlines() if ln.startswith("# tile")]


def gemm() -> dict:
    text = specialize((SAMPLES / "linear_bias_relu.mlir").read_text(), {"K": 4096, "N": 11008},
                      "bf16")  # fmt: skip
    dyn = dynamic_form(text, "M")
    module = load_program(dyn, dim_ranges={"x.0": DimRange(1, 16384)})
    big = inputs(module, {"x.0": 16384}, torch.bfloat16)
    ms = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 8192, 16384)  # (not K = 4096: specialize)
    saved = tile_and_fuse.VARIANT_SIZES
    tile_and_fuse.VARIANT_SIZES = ()
    try:
        plans = {p: tf.compile(dyn, dim_ranges={"x.0": DimRange(1, p)})
                 for p in (16, 32, 64, 128, 256, 512, 1024, 16384)}  # fmt: skip
    finally:
        tile_and_fuse.VARIANT_SIZES = saved
    variants = tf.compile(dyn, dim_ranges={"x.0": DimRange(1, 16384)})  # as compiled: its variants
    out = {"plans": {p: tile_line(prog) for p, prog in plans.items()},
           "variants": tile_line(variants), "rows": []}  # fmt: skip
    for m in ms:
        args = [big[0].narrow(0, 0, m).contiguous(), *big[1:]]
        static = tf.compile(specialize(text, {"M": m}, None))
        fns = {"static": static, **{f"P{p}": prog for p, prog in plans.items() if m <= p},
               "variants": variants}  # fmt: skip
        (want,) = static(*args)
        for k, fn in fns.items():
            (got,) = fn(*args)
            assert torch.allclose(got.float(), want.float(), atol=2e-2, rtol=2e-2), (m, k)
        row = {"M": m, "static_tile": tile_line(static), **best_of(fns, args)}
        out["rows"].append(row)
        print(json.dumps(row), flush=True)
    return out


def _load(source: str, name: str):
    path = Path("/tmp") / f"gap_{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"gap_{name}", path)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _edit(source: str, old: str, new: str) -> str:
    assert old in source, old
    return source.replace(old, new)


def _no_tail(src: str) -> str:
    start = src.index("    for k_2 in range(")
    end = src.index("    t_16 = ")
    return src[:start] + src[end:]


ATTENTION_EDITS = {
    "no_tail_loop": _no_tail,
    "no_q_out_masks": lambda s: _edit(_edit(s, ", mask=mask, other=0.0)", ")"), ", mask=mask_3)", ")"),
    "static_key_bound": lambda s: _edit(s, "range(0, ((k_n2 // 128) * 128), 128)", "range(0, 1024, 128)"),
    "static_grid": lambda s: _edit(s, "programs_2 = tl.cdiv(q_n2, 128)", "programs_2 = 8"),
    "sizes_specialised": lambda s: _edit(
        s, "@triton.jit(do_not_specialize=['q_n2', 'k_n2', 'v_n2', 'out_n2'])\ndef fused_kernel_0(",
        "@triton.jit\ndef fused_kernel_0("),
}


def attention() -> dict:
    text = specialize((SAMPLES / "attention.mlir").read_text(), {"B": 4, "H": 32, "D": 128}, "bf16")
    names = ["q.2", "k.2", "v.2"]
    dyn = dynamic_form(text, "S")
    program = tf.compile(dyn, dim_ranges={n: DimRange(1, 4096) for n in names})
    module = load_program(dyn, dim_ranges={n: DimRange(1, 4096) for n in names})
    args = inputs(module, dict.fromkeys(names, 1024), torch.bfloat16)
    static = tf.compile(specialize(text, {"S": 1024}, None))
    fns = {"static": static, "dynamic": program}
    edited = {}
    for name, edit in ATTENTION_EDITS.items():
        edited[name] = edit(program.source)
        fns[name] = _load(edited[name], name).attention
    edited["all"] = program.source
    for edit in ATTENTION_EDITS.values():
        edited["all"] = edit(edited["all"])
    fns["all_edits"] = _load(edited["all"], "all").attention
    ref = static(*args)
    ref = ref[0] if isinstance(ref, (tuple, list)) else ref
    for k, fn in fns.items():
        y = fn(*args)
        y = y[0] if isinstance(y, (tuple, list)) else y
        assert torch.allclose(y.float(), ref.float(), atol=2e-2, rtol=2e-2), k
    out = best_of(fns, args, rounds=5)
    out = {"S": 1024, "ms": out, "static_over": {k: round(out["static"] / v, 3) for k, v in out.items()}}
    print(json.dumps(out), flush=True)
    return out


def _us(seconds: dict[str, float]) -> dict[str, float]:
    return {k: round(t * 1e6, 1) for k, t in sorted(seconds.items(), key=lambda r: -r[1])}


def gpt2(folder: Path) -> dict:
    from dynamic_gpt2 import BATCH, BENCH, WIDTH, block, state_of

    model = block().cuda()
    state = state_of(model)
    ranges = {n: DimRange(*r) for n, r in json.loads((folder / "ranges.json").read_text()).items()}
    program = tf.compile(folder / "dynamic.mlir", dim_ranges=ranges)
    out = {"dynamic_tiles": tile_line(program), "bench": []}
    for t in BENCH:
        static = tf.compile(folder / f"static_{t}.mlir")
        x = torch.randn(BATCH, t, WIDTH, device="cuda", dtype=torch.bfloat16)
        row = {"T": t, "static_tiles": tile_line(static),
               "dynamic_us": _us(measured_kernels(program, [*state, x])),
               "static_us": _us(measured_kernels(static, [*state, x]))}  # fmt: skip
        out["bench"].append(row)
        print(json.dumps(row), flush=True)
    return out


def host_us(fn, args, calls: int = 200) -> float:
    """Mean µs the host spends in `fn(*args)` (calls issued back to back)."""
    fn(*args)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    issued = time.perf_counter() - start
    torch.cuda.synchronize()
    return round(issued / calls * 1e6, 1)


def sample_block() -> dict:
    fixed = {"E": 1024, "H": 16, "Dh": 64, "F": 4096}
    text = specialize((SAMPLES / "transformer_block.mlir").read_text(), fixed, "bf16")
    dyn = dynamic_form(text, "S")
    ranges = {"x.0": DimRange(1, 4096)}
    program = tf.compile(dyn, dim_ranges=ranges)
    module = load_program(dyn, dim_ranges=ranges)
    out = {"dynamic_tiles": tile_line(program), "bench": []}
    for s in (512, 2048):
        static = tf.compile(specialize(text, {"S": s}, None))
        args = inputs(module, {"x.0": s}, torch.bfloat16)
        times = best_of({"static": static, "dynamic": program}, args)
        host = {"static": host_us(static, args), "dynamic": host_us(program, args)}
        row = {"S": s, "static_tiles": tile_line(static), **times, "host_us": host,
               "dynamic_us": _us(measured_kernels(program, args)),
               "static_us": _us(measured_kernels(static, args))}  # fmt: skip
        out["bench"].append(row)
        print(json.dumps(row), flush=True)
    return out


def _edit_line(source: str, start: str, old: str, new: str) -> str:
    """`old` -> `new` in the one line beginning with `start`."""
    lines = source.split("\n")
    (i,) = [i for i, ln in enumerate(lines) if ln.startswith(start)]
    lines[i] = _edit(lines[i], old, new)
    return "\n".join(lines)


def _split_multiple_of(source: str) -> str:
    """The key loops' split point (a multiple of the key chunk: the smaller of two
    rounded-down bounds) hoisted and declared so with `tl.multiple_of`."""
    lines = source.split("\n")
    (i,) = [i for i, ln in enumerate(lines) if ln.startswith("    for k in range(0, tl.minimum(")]
    split = lines[i][len("    for k in range(0, "):-len(", 64):")]
    lines[i] = "    split = tl.multiple_of(" + split + ", 64)\n    for k in range(0, split, 64):"
    (j,) = [j for j, ln in enumerate(lines) if ln.startswith("    for k_1 in range(")]
    assert lines[j].startswith("    for k_1 in range(" + split + ", "), lines[j]
    lines[j] = "    for k_1 in range(split, " + lines[j][len("    for k_1 in range(" + split + ", "):]
    return "\n".join(lines)


def _diagonal_end(source: str, end: str,
                  was: str = "tl.minimum(expanded_1_n1, ((pid_0 * 128) + 128))") -> str:
    """The diagonal key loop's end as `end` (its masks on the key count kept)."""
    lines = source.split("\n")
    (j,) = [j for j, ln in enumerate(lines) if ln.startswith("    for k_1 in range(")]
    assert lines[j].endswith(", " + was + ", 64):"), lines[j]
    lines[j] = lines[j][: -len(was + ", 64):")] + end + ", 64):"
    return "\n".join(lines)


GPT2_ATTENTION_EDITS = {  # (the diagonal loop's key-bound masks, Q's masks, the bounds)
    "no_key_bound_masks": lambda s: _edit(_edit(_edit(
        s, ", mask=mask_1, other=0.0)", ")"), ", mask=mask_2, other=0.0)", ")"),
        "t_24 = (t_23 < expanded_1_n1)", "t_24 = (t_23 >= 0)"),
    "no_q_out_masks": lambda s: _edit(_edit(
        s, "offs3[None, :] * expanded_s3, mask=mask, other=0.0)", "offs3[None, :] * expanded_s3)"),
        "_to_bf16(t_38), mask=mask_3)", "_to_bf16(t_38))"),
    "static_key_bounds": lambda s: s.replace("tl.minimum(expanded_1_n1, ", "tl.minimum(2048, "),
    "static_first_loop_bound": lambda s: _edit_line(
        s, "    for k in range(0, tl.minimum(", "tl.minimum(expanded_1_n1, ", "tl.minimum(2048, "),
    "static_diagonal_bounds": lambda s: _edit_line(
        s, "    for k_1 in range(", "tl.minimum(expanded_1_n1, ", "tl.minimum(2048, "),
    "split_multiple_of_64": _split_multiple_of,
    "diagonal_end_tile": lambda s: _diagonal_end(s, "((pid_0 * 128) + 128)"),
    "diagonal_end_padded": lambda s: _diagonal_end(
        s, "tl.minimum(((expanded_1_n1 + 63) // 64) * 64, ((pid_0 * 128) + 128))"),
    "diagonal_end_tile_static_start": lambda s: _diagonal_end(
        s.replace("tl.minimum(expanded_1_n1, ", "tl.minimum(2048, "), "((pid_0 * 128) + 128)",
        "tl.minimum(2048, ((pid_0 * 128) + 128))"),
    "sizes_specialised": lambda s: _edit(
        s, "@triton.jit(do_not_specialize=['arg12_n1', 'expanded_n1', 'expanded_1_n1', "
        "'expanded_1_1_n1', 'transposed_n1'])\ndef fused_kernel_2(", "@triton.jit\ndef fused_kernel_2("),
}


def gpt2_attention(folder: Path) -> dict:
    import copy

    from dynamic_gpt2 import BATCH, WIDTH, block, state_of

    state = state_of(block().cuda())
    ranges = {n: DimRange(*r) for n, r in json.loads((folder / "ranges.json").read_text()).items()}
    program = tf.compile(folder / "dynamic.mlir", dim_ranges=ranges)
    static = tf.compile(folder / "static_2048.mlir")
    x = torch.randn(BATCH, 2048, WIDTH, device="cuda", dtype=torch.bfloat16)
    args = [*state, x]
    (want,) = static(*args)
    progs = {"static": static, "dynamic": program}
    for name, edit in GPT2_ATTENTION_EDITS.items():
        edited = copy.copy(program)
        edited.python, edited.warmed = _load(edit(program.source), f"g2_{name}"), False
        progs[name] = edited
    out: dict = {"T": 2048, "attention_us": {}}
    for name, prog in progs.items():
        (got,) = prog(*args)
        assert torch.allclose(got.float(), want.float(), atol=3e-2, rtol=3e-2), name
        kernels = measured_kernels(prog, args)
        out["attention_us"][name] = round(kernels["fused_kernel_2"] * 1e6, 1)
    print(json.dumps(out), flush=True)
    return out


class _NoLaunch:
    """A kernel whose launches do nothing (the host's other work timed alone)."""

    def __getitem__(self, grid):
        return lambda *args, **kwargs: None


def block_at_512() -> tuple[list[torch.Tensor], list[tuple[str, object]]]:
    """The transformer-block sample's arguments at S = 512, and its dynamic (S 1:4096)
    and static programs."""
    fixed = {"E": 1024, "H": 16, "Dh": 64, "F": 4096}
    text = specialize((SAMPLES / "transformer_block.mlir").read_text(), fixed, "bf16")
    dyn = dynamic_form(text, "S")
    ranges = {"x.0": DimRange(1, 4096)}
    args = inputs(load_program(dyn, dim_ranges=ranges), {"x.0": 512}, torch.bfloat16)
    return args, [("dynamic", tf.compile(dyn, dim_ranges=ranges)),
                  ("static", tf.compile(specialize(text, {"S": 512}, None)))]


def host_profile() -> dict:
    """Host µs per call of the transformer-block sample at S = 512, dynamic and static:
    as emitted, with `triton.cdiv` (a Triton constexpr function: its call wraps and
    unwraps the arguments) as integer arithmetic, and with every launch a no-op (what
    the host spends besides the launches)."""
    import copy

    args, programs = block_at_512()
    out: dict = {}
    for name, prog in programs:
        int_cdiv = copy.copy(prog)
        source = prog.source.replace("triton.cdiv(", "_int_cdiv(")
        source += "\n\ndef _int_cdiv(a, b):\n    return -(-a // b)\n"
        int_cdiv.python, int_cdiv.warmed = _load(source, f"host_{name}"), False
        no_launch = copy.copy(prog)
        no_launch.python, no_launch.warmed = _load(prog.source, f"host_nl_{name}"), True
        for k in no_launch.python.KERNELS:
            setattr(no_launch.python, k, _NoLaunch())
        row = {}
        for variant, p in [("as_emitted", prog), ("int_cdiv", int_cdiv), ("no_launch", no_launch)]:
            row[variant] = min(host_us(p, args) for _ in range(3))
        out[name] = row
        print(name, json.dumps(row), flush=True)
    return out


def host_calls() -> dict:
    """Where the host's time goes, per function (cProfile, 300 calls after warm-up):
    the transformer-block sample at S = 512, dynamic and static."""
    import cProfile
    import io
    import pstats

    args, programs = block_at_512()
    out: dict = {}
    for name, prog in programs:
        for _ in range(20):
            prog(*args)
        torch.cuda.synchronize()
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(300):
            prog(*args)
        profile.disable()
        torch.cuda.synchronize()
        text_out = io.StringIO()
        pstats.Stats(profile, stream=text_out).sort_stats("tottime").print_stats(14)
        out[name] = text_out.getvalue()
        print(name, text_out.getvalue(), flush=True)
    return out


def dynamo() -> dict:
    from dynamic_gpt2 import BATCH, BENCH, T_MAX, WIDTH, block

    from tilefuse.torch import backend

    model = block().cuda()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend.tilefuse, dynamic=True)
    rng = random.Random(0)
    lengths = {2, 3, 15, 16, 17, 127, 128, 129, 1023, 1024, 1025, T_MAX, *BENCH}
    while len(lengths) < 64:
        lengths.add(rng.randint(2, T_MAX))
    x0 = torch.randn(BATCH, 17, WIDTH, device="cuda", dtype=torch.bfloat16)
    start = time.perf_counter()
    with torch.no_grad():
        compiled(x0)
    torch.cuda.synchronize()
    out = {"first_call_s": round(time.perf_counter() - start, 2)}
    worst = 0.0
    with torch.no_grad():
        for t in sorted(lengths):
            x = torch.randn(BATCH, t, WIDTH, device="cuda", dtype=torch.bfloat16)
            y, ref = compiled(x), model(x)
            worst = max(worst, float((y.float() - ref.float()).abs().max() / ref.float().abs().max()))
    s = backend.STATS
    out.update(lengths=len(lengths), tilefuse_compiles=s.compiles, compiled=s.compiled,
               fallbacks=s.fallbacks, max_rel_error_vs_eager=round(worst, 5), bench=[])  # fmt: skip
    print(json.dumps(out), flush=True)
    for t in BENCH:  # (torch.compile's default mode: dynamic_gpt2.py)
        x = torch.randn(BATCH, t, WIDTH, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            row = {"T": t, **best_of({"tilefuse_dynamic": compiled, "eager": model}, (x,))}
        out["bench"].append(row)
        print(json.dumps(row), flush=True)
    out["tilefuse_compiles_after"] = backend.STATS.compiles
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--parts", nargs="*", default=["gemm", "attention", "gpt2", "dynamo"])
    ap.add_argument("--gpt2", metavar="DIR", help="dynamic_gpt2.py --export's folder")
    ap.add_argument("--json", metavar="OUT.json")
    args = ap.parse_args()
    results = {}
    parts = {"gemm": gemm, "attention": attention, "gpt2": lambda: gpt2(Path(args.gpt2)),
             "dynamo": dynamo, "block": sample_block,
             "gpt2_attention": lambda: gpt2_attention(Path(args.gpt2)), "host": host_profile,
             "host_calls": host_calls}  # fmt: skip
    for part in args.parts:
        try:
            results[part] = parts[part]()
        except Exception as e:  # a part that fails leaves the others' numbers
            results[part] = {"error": f"{type(e).__name__}: {e}"}
            print(part, "failed:", results[part]["error"], flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
