"""
Optional autotuning: time the cost model's top tile candidates, keep the fastest.

The default pipeline compiles the model's plan and never needs this. With
`autotune(source, args)` (or `tilefuse-run FILE --autotune`):

1. the front of the pipeline runs once (`run_pipeline(until="merge-positions")`),
   and for every group `tile_plan.tile_candidates` lists the model's plan and at most
   `limit - 1` neighbours (warps, stages, rows per program);
2. for i = 0, 1, ...: every group with an i-th candidate is tiled with it
   (the `tile_candidate` attribute `tile-and-fuse` reads), the program is
   compiled and run once while each kernel's launch is recorded, and each
   kernel is then timed alone on those arguments (`timer`: the median of
   `triton.testing.do_bench` by default);
3. each group keeps its fastest candidate; the picks go to a JSON cache
   (`$TILEFUSE_CACHE/autotune.json`) keyed by the program after fusion, the
   target, the device, Triton's version and `limit`, so a second call only
   compiles. The program is then built with the picks by the rest of the
   pipeline (`run_pipeline(start="tile-and-fuse")`).

So the cost is bounded: at most `limit` compilations of each kernel and
`limit` timings, once per program and machine.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64

from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.dataflow import build_graph, shared_dims
from tilefuse.analysis.tile_plan import tile_candidates
from tilefuse.backend.triton.emit import emit_module
from tilefuse.frontend.program import load_program
from tilefuse.ir.tilefuse import GroupOp
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime.compiled import (
    CompiledProgram,
    cache_dir,
    gpu_available,
    kernels_replaced,
    load,
    resolve_target,
)

DEFAULT_LIMIT = 4


@dataclass(frozen=True)
class TuneResult:
    """What the autotuner chose, per group (kernel name before horizontal fusion)."""

    picks: dict[str, int]
    times: dict[str, list[float | None]]
    """Seconds per candidate (None: not timed); empty when read from the cache."""
    cached: bool

    def format(self) -> str:
        lines = [f"autotune ({'cached' if self.cached else 'timed'}):"]
        for name, pick in self.picks.items():
            ts = self.times.get(name, [])
            cells = "  ".join(
                "-" if t is None else f"{t * 1e6:.1f}us" + ("*" if i == pick else "")
                for i, t in enumerate(ts)
            )
            lines.append(f"  {name:<16} candidate {pick}" + (f"   [{cells}]" if ts else ""))
        return "\n".join(lines)


def default_timer(fn: Callable[[], Any]) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, return_mode="median") * 1e-3


def autotune(
    source: str | Path | ModuleOp,
    args: Sequence[Any],
    target: str = "auto",
    dims: Mapping[str, int] | None = None,
    dtype: str | None = None,
    limit: int = DEFAULT_LIMIT,
    timer: Callable[[Callable[[], Any]], float] | None = None,
) -> tuple[CompiledProgram, TuneResult]:
    """Compile `source` with each group's fastest tile candidate on `args`."""
    start = time.perf_counter()
    target = resolve_target(target)
    module = source.clone() if isinstance(source, ModuleOp) else load_program(source, dims, dtype)
    run_pipeline(module, target, until="merge-positions")  # (tile candidates from here)
    counts = _candidate_counts(module, target, limit)
    key = _cache_key(module, target, limit)
    cache = _read_cache()
    if key in cache:
        result = TuneResult(cache[key], {}, True)
    else:
        times = _time_candidates(module, counts, target, args, timer or default_timer)
        picks = {
            name: min((i for i, t in enumerate(ts) if t is not None), key=lambda i: ts[i])
            for name, ts in times.items()
        }
        cache[key] = picks
        _write_cache(cache)
        result = TuneResult(picks, times, False)
    prog = _build(module, result.picks, target, horizontal=True)
    prog.target = target
    prog.compile_seconds = time.perf_counter() - start
    return prog, result


def _groups(module: ModuleOp) -> list[GroupOp]:
    return [g for g in module.walk() if isinstance(g, GroupOp)]


def _candidate_counts(module: ModuleOp, target: str, limit: int) -> dict[str, int]:
    t = get_target(target)
    counts = {}
    for g in _groups(module):
        graph = build_graph(g.entry)
        counts[g.sym_name.data] = len(
            tile_candidates(graph, shared_dims(graph, graph.nodes), t, limit=limit)
        )
    return counts


def _build(front: ModuleOp, picks: Mapping[str, int], target: str, horizontal: bool) -> CompiledProgram:
    module = front.clone()
    for g in _groups(module):
        if picks.get(g.sym_name.data, 0):
            g.tile_candidate = IntegerAttr(picks[g.sym_name.data], i64)
    run_pipeline(module, target, start="tile-and-fuse",
                 until=None if horizontal else "tile-and-fuse")  # fmt: skip
    return load(module, emit_module(module, "<autotune>"))


def _time_candidates(front, counts, target, args, timer) -> dict[str, list[float | None]]:
    times: dict[str, list[float | None]] = {n: [None] * c for n, c in counts.items()}
    for i in range(max(counts.values(), default=0)):
        picks = {n: i for n, c in counts.items() if c > i}
        # Groups stay separate kernels here, each timed on its own.
        prog = _build(front, picks, target, horizontal=False)
        for name, launch in record_launches(prog, args).items():
            if name in picks:
                times[name][i] = timer(launch)
    return times


class _Recorder:
    """Stands in for a kernel: launches it and keeps the launch to replay."""

    def __init__(self, name: str, kernel: Any, launches: dict[str, Callable[[], Any]]):
        self.name, self.kernel, self.launches = name, kernel, launches

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        def launch(*a: Any, **kw: Any) -> Any:
            self.launches[self.name] = lambda: self.kernel[grid](*a, **kw)
            return self.kernel[grid](*a, **kw)

        return launch


def record_launches(prog: CompiledProgram, args: Sequence[Any]) -> dict[str, Callable[[], Any]]:
    """Run `prog` once and return, per kernel, a function replaying its launch."""
    prog(*args)  # compiles (in parallel on a GPU) before anything is recorded
    launches: dict[str, Callable[[], Any]] = {}
    with kernels_replaced(prog.python, lambda name, k: _Recorder(name, k, launches)):
        prog(*args)
    return launches


def _cache_key(front: ModuleOp, target: str, limit: int) -> str:
    import triton

    device = "cpu"
    if gpu_available():
        import torch

        device = torch.cuda.get_device_name()
    text = f"{front}\n{target}\n{device}\n{triton.__version__}\n{limit}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _cache_path() -> Path:
    return cache_dir() / "autotune.json"


def _read_cache() -> dict[str, dict[str, int]]:
    try:
        return json.loads(_cache_path().read_text())
    except (OSError, ValueError):
        return {}


def _write_cache(cache: dict[str, dict[str, int]]) -> None:
    path = _cache_path()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
    tmp.replace(path)
