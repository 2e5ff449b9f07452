"""
How far is the tile plan's register model from ptxas? Every kernel of a broad set of
programs is compiled for sm_90 (no GPU needed: `gpu.check`'s batch compile, cached on
disk per Triton version) and recorded next to the quantities the planner knows:

- the kind: a contraction's pointer loop, its persistent (Hopper, TMA) lowering
  (`plan.persistent > 0`), FlashAttention (the Triton loop, or the warp-specialised
  Gluon kernel), or a memory-bound kernel;
- tile blocks, warps, stages; accumulator values per thread; operand tile elements per
  thread per K step (A and B tiles, and siblings', over the program's threads); the
  elements the K step loads to make them (a fused producer's inputs); whether an operand
  is read through a window view (`fold-windows`: a convolution's im2col view);
  epilogue library calls; the dot's and the stored dtypes;
- the model's registers (`regs` of the plan), ptxas's registers and spilled words.

The programs: every sample at its default sizes and at the realistic sizes of
`tests/test_gpu_compile.REALISTIC` (and its `DYNAMIC` forms), every
`tests/programs/*.mlir`, the zoo models (f32), the `zoo.BENCH` models and
`family_sweep.CASES` (bf16).

    python tools/experiments/register_model.py [--json /tmp/register_model.json]
    PYTHONPATH=/tmp/t36 python tools/experiments/register_model.py   # Triton 3.6

Each run adds its Triton version's rows to the JSON (the other version's are kept),
then prints the worst mispredictions of the plan's model and of the proposed one
(`proposed_regs`), and the spills, for every version the JSON holds.
`--only SUBSTRING` keeps the cases whose id contains it; `--report` only prints.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tools" / "experiments"))

# No GPU: the runtime wants Triton's interpreter; kernels then compile in a child process.
os.environ.setdefault("TRITON_INTERPRET", "1")

MAX_REGS = 255
REGS_PER_SM = 65536


# --------------------------------------------------------------------------
# What the planner knew: recorded while tile-and-fuse plans each group
# --------------------------------------------------------------------------

FEATURES: dict[str, dict[str, Any]] = {}
"""Per group name of the program being compiled: the plan's quantities."""


def _install_hook() -> None:
    """Record every plan `tile_and_fuse.plan_group` makes (the last one per group is
    the one tile_group builds)."""
    from tilefuse.passes import tile_and_fuse as taf

    if getattr(taf.plan_group, "_recording", False):
        return
    original = taf.plan_group

    def plan_group(group, target, budget):
        graph, dims, plan = original(group, target, budget)
        try:
            FEATURES[group.sym_name.data] = _features(group, graph, dims, plan, target)
        except Exception as e:  # the study must not change what compiles
            FEATURES[group.sym_name.data] = {"feature_error": f"{type(e).__name__}: {e}"}
        return graph, dims, plan

    plan_group._recording = True  # type: ignore[attr-defined]
    taf.plan_group = plan_group


def _leaves(graph, value) -> list:
    """The group's block arguments `value` is made from (itself if one)."""
    p = graph.producer_of(value)
    if p is None:
        return [value]
    out, stack, seen = [], [p], set()
    while stack:
        n = stack.pop()
        if n is None or n.index in seen:
            continue
        seen.add(n.index)
        for j, v in enumerate(n.s.inputs):
            q = graph.producer_of(v)
            if q is not None:
                stack.append(q)
            elif n.s.input_maps[j].results:
                out.append(v)
    return out


def _is_window(group, value) -> bool:
    from tilefuse.ir.tilefuse import WindowOp

    args = list(group.entry.args) if hasattr(group, "entry") else []
    if value not in args:
        return False
    outer = group.inputs[args.index(value)]
    return isinstance(getattr(outer, "owner", None), WindowOp)


def _dtype(value) -> str:
    from tilefuse.ir.dtypes import dtype_name

    try:
        return dtype_name(value.type)
    except Exception:
        return "?"


def _features(group, graph, dims, plan, target) -> dict[str, Any]:
    from tilefuse.analysis import tile_plan as tp
    from tilefuse.analysis.cost.opcost import payload_library_calls
    from tilefuse.analysis.dataflow import CONTRACTION, REDUCE
    from tilefuse.analysis.patterns import find_online_softmax

    threads = plan.num_warps * target.warp_size
    blocks = {t.dim: t.block for t in plan.dims}
    f: dict[str, Any] = {
        "blocks": [t.block for t in plan.dims],
        "modes": [t.mode for t in plan.dims],
        "extents": [t.extent for t in plan.dims],
        "warps": plan.num_warps,
        "stages": plan.num_stages,
        "model_regs": plan.regs_per_thread,
        "persistent": plan.persistent,
        "consumers": plan.consumers,
        "library_calls": sum(payload_library_calls(n.s) for n in graph.nodes),
        "ops": len(graph.nodes),
        "reductions": sum(n.kind == REDUCE for n in graph.nodes),
        "store_dtype": _dtype(graph.nodes[-1].op.results[0]) if graph.nodes[-1].op.results else "?",
    }
    contractions = [n for n in graph.nodes if n.kind == CONTRACTION]
    softmax = next((sm for sm in find_online_softmax(graph)
                    if any(r.kind == CONTRACTION for r in sm.linear)), None)  # fmt: skip
    if softmax is not None:
        a = softmax.max_node
        (j_loop,) = a.s.reduction_dims
        j = dims.of[(a.index, j_loop)]
        scores = [n for n in contractions if n not in softmax.linear]
        outs = [r for r in softmax.linear if r.kind == CONTRACTION]
        head_dims = {dims.of[(n.index, d)] for n in scores for d in n.s.reduction_dims}
        rows = [dims.of[(a.index, d)] for d in a.s.operand_dims(1)]
        out_dims = {dims.of[(o.index, d)] for o in outs for d in o.s.operand_dims(len(o.s.inputs))
                    if dims.of[(o.index, d)] not in rows}  # fmt: skip
        row = max(tp._query_rows(scores, dims, j, rows), key=lambda d: blocks[d])
        br, bc = blocks[row], blocks[j]
        head = math.prod(blocks[d] for d in head_dims)
        width = math.prod(blocks[d] for d in out_dims)
        f.update(kind="attention-ws" if plan.consumers else "attention", bm=br, bn=bc, bk=head,
                 head=head, width=width,
                 acc_per_thread=math.ceil(br * width / threads),
                 scores_per_thread=math.ceil(br * bc / threads),
                 operand_per_thread=math.ceil((br * head + bc * (head + width)) / threads),
                 dot_dtype=_dtype(scores[0].s.inputs[0]) if scores else "?",
                 window=False)  # fmt: skip
        return f
    if contractions:
        f.update(_epilogue_loads(graph, dims, blocks, contractions, threads))
        roles = tp._roles(graph, dims)
        bm = blocks[roles.m] if roles.m is not None else 1
        bn = blocks[roles.n] if roles.n is not None else 1
        bk = blocks[roles.k]
        tiles = [roles.a.tile(blocks), roles.b.tile(blocks)]
        tiles += [t.tile(blocks) for t, _ in roles.extra]
        held = sum(t.tile({**blocks, **{d: tp.pow2(dims.dims[d].extent) for d in roles.held_dims}})
                   .elements for t in roles.held)  # fmt: skip
        node = tp.sibling_contractions(graph, dims)[0]
        windows = [any(_is_window(group, v) for v in _leaves(graph, node.s.inputs[i]))
                   for i in range(2)]  # fmt: skip
        f.update(
            kind="contraction-persistent" if plan.persistent else "contraction-loop",
            bm=bm, bn=bn, bk=bk,
            accumulators=roles.accumulators,
            acc_per_thread=math.ceil(bm * bn / threads) * roles.accumulators,
            operand_elems=sum(t.elements for t in tiles),
            operand_per_thread=math.ceil(sum(t.elements for t in tiles) / threads),
            load_per_thread=math.ceil(sum(e for t in tiles for e, _ in t.loads) / threads),
            held_per_thread=math.ceil(held / threads),
            direct=[t.direct for t in tiles[:2]],
            window=any(windows), window_a=windows[0], window_b=windows[1],
            epilogue_calls=tp._epilogue_library_calls(graph),
            dot_dtype=(roles.dot_bytes == 2 and _dtype(node.s.inputs[0])) or f"{roles.dot_bytes * 8}b",
            operand_bytes=roles.operand_bytes, acc_bytes=roles.acc_bytes,
            contractions=len(contractions), other_k=len(roles.other_k),
            mma="fma" if roles.dot_bytes > 2 else "wgmma" if bm >= 64 else "mma",
            batch_dims=sum(1 for t in plan.dims if t.mode == "grid"
                           and t.dim not in (roles.m, roles.n)),
        )  # fmt: skip
        return f
    values = tp._values(graph, dims)
    elems = math.prod(blocks.values())
    f.update(kind="memory-bound", tile_elems=elems, values=len(values),
             elems_per_thread=math.ceil(elems / threads),
             values_per_thread=math.ceil(sum(math.prod(blocks[d] for d in v) for v in values) / threads),
             storage_bytes=tp._storage_bytes(graph), window=any(
                 _is_window(group, v) for n in graph.nodes for v in n.s.inputs))  # fmt: skip
    return f


def _epilogue_loads(graph, dims, blocks, contractions, threads) -> dict[str, int]:
    """Elements per thread of the tiles the ops outside the contractions' operand
    cones load (an epilogue's bias, residual), and those ops' count."""
    from tilefuse.ir.dtypes import dtype_bytes

    cone, stack = set(), [graph.producer_of(v) for c in contractions for v in c.s.inputs]
    while stack:
        p = stack.pop()
        if p is None or p.index in cone:
            continue
        cone.add(p.index)
        stack += [graph.producer_of(v) for v in p.s.inputs]
    elems = words = ops = 0
    seen = set()
    for n in graph.nodes:
        if n in contractions or n.index in cone:
            continue
        ops += 1
        for j, v in enumerate(n.s.inputs):
            if graph.producer_of(v) is None and n.s.input_maps[j].results and v not in seen:
                seen.add(v)
                e = math.prod(blocks[dims.of[(n.index, d)]] for d in n.s.operand_dims(j))
                elems += e
                words += math.ceil(e * dtype_bytes(v.type) / 4)
    return {"epilogue_ops": ops, "epilogue_loads_per_thread": math.ceil(elems / threads),
            "epilogue_words_per_thread": math.ceil(words / threads)}


# --------------------------------------------------------------------------
# The programs
# --------------------------------------------------------------------------


def _cases() -> list[tuple[str, Any]]:
    """(case id, a function compiling it to (module, emitted))."""
    import tests.test_gpu_compile as t

    def build(kind: str, name: str):
        return lambda: t.compiled(t.Case(kind, name))

    out: list[tuple[str, Any]] = []
    for n in t.NAMES:
        out.append((n, build("sample", n)))
    for c in t.REALISTIC + t.DYNAMIC:
        out.append((c.id, lambda c=c: t.compiled(c)))
    for p in sorted(t.PROGRAMS.glob("*.mlir")):
        out.append((f"program:{p.stem}", build("program", p.stem)))
    if t.HAVE_TORCH_MLIR:
        from tilefuse.testing.zoo import BENCH, ZOO

        for n in sorted(ZOO):
            out.append((f"zoo:{n}", build("zoo", n)))
        for n in BENCH:
            out.append((f"bench:{n}", build("bench", n)))
        import family_sweep

        for case in family_sweep.CASES:
            out.append((f"family:{case.name}", lambda case=case: _family(case)))
    return out


def _family(case) -> tuple[Any, Any]:
    """A family_sweep model in bf16, as `tests/test_gpu_compile._exported` exports BENCH's."""
    import torch

    from tests.test_gpu_compile import TARGET
    from tilefuse.backend.triton.emit import emit_module
    from tilefuse.frontend.program import load_program
    from tilefuse.pipeline import run_pipeline
    from tilefuse.torch.export import export

    model = case.make().eval().to(torch.bfloat16)
    inputs = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in case.inputs())
    module = load_program(str(export(model, inputs, case.name).mlir))
    run_pipeline(module, TARGET.name)
    return module, emit_module(module)


def _horizontal_members(group) -> list[str]:
    reason = group.reason.data if getattr(group, "reason", None) else ""
    if reason.startswith("horizontal fusion of "):
        head = reason[len("horizontal fusion of "):].split(" (")[0]
        return [s.strip() for s in head.split("+")]
    return [group.sym_name.data]


def _kernels(module, emitted, features) -> list[tuple[Any, dict[str, Any]]]:
    """(spec, features) per kernel, as `gpu.check.kernel_specs` lists them."""
    from tilefuse.gpu.check import _spec
    from tilefuse.ir.module import entry_function
    from tilefuse.ir.tilefuse import GroupOp

    out = []
    for g in entry_function(module).body.block.ops:
        if not isinstance(g, GroupOp):
            continue
        k = emitted.kernel(g.sym_name.data)
        if k is None:
            continue
        members = [features[m] for m in _horizontal_members(g) if m in features]
        # several grids: the one with the most model registers stands for the kernel
        f = dict(max(members, key=lambda m: m.get("model_regs", 0))) if members else {}
        f["branches"] = len(g.grids)
        for twin, kernel in enumerate((k, k.gpu)):
            if kernel is None:
                continue
            ff = dict(f)
            if twin:
                ff["kind"] = "attention-ws"
            out.append((_spec(g, kernel), ff))
    return out


# --------------------------------------------------------------------------
# The proposed model
# --------------------------------------------------------------------------


def cap(warps: int) -> int:
    """Registers a thread may have at `warps` warps (one program per SM at most)."""
    return min(MAX_REGS, REGS_PER_SM // (warps * 32) // 8 * 8)


# Fitted (least squares, the accumulator's coefficient held at 1, spill-free kernels
# under 16 warps) on ptxas for sm_90, the 16-bit-dot kernels this script compiles.
# Spilled words count as registers the kernel wanted. Per Triton version: 3.6 is
# what the GPU machines run; 3.9 needs more for persistent kernels and windows.
GEMM_CONSTANTS = {
    # base, per acc value x library call, per acc value x (epilogue ops - 4) / 8,
    # per operand element (mma path, BM < 64), window (wgmma path: constant),
    # window (mma path: per operand element), persistent: per acc value
    "3.6": dict(base=40, calls=0.75, eops=0.6, mma_op=0.3, window_wgmma=56, window_mma=0.0,
                persistent=0.0),
    "3.9": dict(base=52, calls=0.55, eops=0.65, mma_op=0.9, window_wgmma=0, window_mma=1.2,
                persistent=0.4),
}  # fmt: skip
WINDOW_WGMMA_ACC_39 = 1.0
"""Triton 3.9, a window operand on the wgmma path: this much more per accumulator value."""
ATTN_BASE = 56
"""FlashAttention besides the score tile and the accumulator (ptxas: 64-111 registers
for 16-32 wide tiles at 4 warps, where the plan says 44-56)."""


def _version(triton: str) -> str:
    return "3.9" if tuple(int(x) for x in triton.split(".")[:2]) >= (3, 7) else "3.6"


def proposed_regs(r: dict[str, Any], triton: str = "3.6.0") -> int | None:
    """The proposed register model, from the plan's quantities: for a 16-bit tl.dot

        regs = base + acc x (1 + calls_c x calls + eops_c x max(0, epilogue ops - 4) / 8
                             + persistent_c [persistent])
               + mma_op x operand elements/thread            (BM < 64: mma v2, operands in registers)
               + window_wgmma [window, BM >= 64] + window_mma x operand elements/thread [window, BM < 64]

    FlashAttention: ATTN_BASE + score values/thread + accumulator values/thread; f32
    dots, memory-bound kernels and the warp-specialised attention: the plan's model."""
    kind = r.get("kind")
    if kind in ("contraction-loop", "contraction-persistent") and r.get("mma") in ("mma", "wgmma"):
        c = GEMM_CONSTANTS[_version(triton)]
        acc, ops = r["acc_per_thread"], r["operand_per_thread"]
        eops = max(0, (r.get("epilogue_ops") or 0) - 4) / 8
        per_acc = 1 + c["calls"] * r.get("epilogue_calls", 0) + c["eops"] * eops
        if kind == "contraction-persistent":
            per_acc += c["persistent"]
        regs = c["base"] + acc * per_acc
        if r["mma"] == "mma":
            regs += c["mma_op"] * ops + (c["window_mma"] * ops if r.get("window") else 0)
        elif r.get("window"):
            regs += c["window_wgmma"] + (WINDOW_WGMMA_ACC_39 * acc if _version(triton) == "3.9" else 0)
        return math.ceil(regs)
    if kind == "attention":
        return ATTN_BASE + r["scores_per_thread"] + r["acc_per_thread"]
    return r.get("model_regs")


# --------------------------------------------------------------------------
# Running and reporting
# --------------------------------------------------------------------------


def run(only: str | None) -> list[dict[str, Any]]:
    import triton

    from tests.test_gpu_compile import TARGET
    from tilefuse.gpu.check import compile_batch, target_arch

    _install_hook()
    version = triton.__version__
    batch, meta = [], []
    t0 = time.time()
    for case_id, build in _cases():
        if only and only not in case_id:
            continue
        FEATURES.clear()
        try:
            module, emitted = build()
        except Exception as e:
            print(f"{case_id}: pipeline failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        kernels = _kernels(module, emitted, dict(FEATURES))
        batch.append((emitted.text, [s for s, _ in kernels]))
        meta.append((case_id, kernels))
    print(f"built {len(batch)} programs, {sum(len(s) for _, s in batch)} kernels in "
          f"{time.time() - t0:.0f} s; compiling with Triton {version}", flush=True)  # fmt: skip
    t0 = time.time()
    results = compile_batch(batch, target_arch(TARGET))
    print(f"compiled in {time.time() - t0:.0f} s", flush=True)
    rows = []
    for (case_id, kernels), res in zip(meta, results, strict=True):
        for (spec, f), k in zip(kernels, res, strict=True):
            row = {"case": case_id, "kernel": spec.name, "triton": version,
                   "num_warps": spec.num_warps, "num_stages": spec.num_stages,
                   "predicted": spec.predicted.regs_per_thread, **f}  # fmt: skip
            if isinstance(k, str):
                row["error"] = k[:300]
            else:
                row.update(regs=k.registers, spills=k.spills, shared=k.shared_bytes)
            rows.append(row)
    return rows


def _fmt_row(r: dict[str, Any], new: bool) -> str:
    tile = "x".join(str(r[k]) for k in ("bm", "bn", "bk") if k in r) or str(r.get("tile_elems", ""))
    extra = []
    if r.get("window"):
        extra.append("window")
    if r.get("epilogue_calls"):
        extra.append(f"calls={r['epilogue_calls']}")
    pred = r.get("proposed") if new else r.get("predicted")
    return (f"  {r['case'][:34]:34} {r['kernel'][:22]:22} {r.get('kind', '?')[:14]:14} "
            f"{tile:>12} w{r['num_warps']:<2} s{r['num_stages']} acc={r.get('acc_per_thread', '-')!s:>3} "
            f"op={r.get('operand_per_thread', r.get('values_per_thread', '-'))!s:>3} "
            f"ptxas={r['regs']:3} spill={r['spills']:4} model={pred!s:>4} {' '.join(extra)}")  # fmt: skip


def report(rows: list[dict[str, Any]]) -> None:
    ok = [r for r in rows if "regs" in r and r.get("kind")]
    for r in ok:
        r["proposed"] = proposed_regs(r, r["triton"])
    for version in sorted({r["triton"] for r in ok}):
        mine = [r for r in ok if r["triton"] == version]
        print(f"\n===== Triton {version}: {len(mine)} kernels "
              f"({sum('error' in r for r in rows if r['triton'] == version)} compile errors) =====")  # fmt: skip
        for kind in sorted({r["kind"] for r in mine}):
            ks = [r for r in mine if r["kind"] == kind]
            for label, key in (("plan", "predicted"), ("proposed", "proposed")):
                pairs = [(r["regs"], r[key]) for r in ks if r.get(key)]
                if not pairs:
                    continue
                ratio = [p / m for p, m in pairs]
                under = sum(x > 1.3 for x in ratio)
                mae = sum(abs(p - m) for p, m in pairs) / len(pairs)
                print(f"  {kind:24} {label:9} n={len(pairs):4} mean|err|={mae:6.1f} "
                      f"under>1.3x={under:3} worst ptxas/model={max(ratio):.2f}")  # fmt: skip
        spills = [r for r in mine if r["spills"] > 0]
        print(f"  spilling kernels: {len(spills)}")
        flagged_old = [r for r in mine if r["predicted"] and r["predicted"] >= cap(r["num_warps"])]
        flagged_new = [r for r in mine if r["proposed"] and r["proposed"] > cap(r["num_warps"])]
        hit = lambda fl: sum(1 for r in fl if r["spills"] > 0)  # noqa: E731
        print(f"  plan flags {len(flagged_old)} over the cap ({hit(flagged_old)} spill); "
              f"proposed flags {len(flagged_new)} ({hit(flagged_new)} spill); "
              f"spills missed by proposed: "
              f"{sum(1 for r in spills if not (r['proposed'] and r['proposed'] > cap(r['num_warps'])))}")
        for r in sorted(spills, key=lambda r: -r["spills"]):
            print(_fmt_row(r, new=True))
        print("  worst under-predictions of the plan (ptxas / plan):")
        worst = sorted((r for r in mine if r["predicted"]), key=lambda r: -r["regs"] / r["predicted"])
        seen = set()
        for r in worst:
            key = (r["kind"], r.get("bm"), r.get("bn"), r.get("bk"), r["num_warps"], r["regs"])
            if key in seen:
                continue
            seen.add(key)
            print(_fmt_row(r, new=False) + f"  x{r['regs'] / r['predicted']:.2f} -> proposed "
                  f"{r['proposed']} x{r['regs'] / r['proposed']:.2f}")  # fmt: skip
            if len(seen) >= 25:
                break


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", default="/tmp/register_model.json")
    p.add_argument("--only")
    p.add_argument("--report", action="store_true", help="print the JSON's rows only")
    args = p.parse_args()
    path = Path(args.json)
    old = json.loads(path.read_text()) if path.exists() else []
    if not args.report:
        import triton

        rows = run(args.only)
        keep = [r for r in old if r["triton"] != triton.__version__
                or (args.only and args.only not in r["case"])]  # fmt: skip
        old = keep + rows
        path.write_text(json.dumps(old, indent=0))
        print(f"wrote {len(old)} rows to {path}")
    report(old)
    return 0


if __name__ == "__main__":
    sys.exit(main())
