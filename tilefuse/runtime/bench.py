"""
Timing compiled programs on a GPU, next to the cost model's prediction.

`bench_program(prog, tensors, target)` times the whole program with
`triton.testing.do_bench` (median), and each kernel from a torch profiler
trace, and prints them beside the roofline prediction of each group
(`predicted_time` of the `#tilefuse.cost` the fusion pass recorded on it).
"""

from __future__ import annotations

import io
from typing import Any

from tilefuse.analysis.cost.roofline import format_seconds, predicted_time
from tilefuse.analysis.cost.target import get_target
from tilefuse.ir.tilefuse import GroupOp
from tilefuse.runtime.compiled import CompiledProgram


def predicted_kernels(prog: CompiledProgram, target_name: str) -> dict[str, float]:
    """Predicted seconds per kernel, from each group's recorded cost."""
    target = get_target(target_name)
    out = {}
    for g in prog.module.walk():
        if isinstance(g, GroupOp) and g.cost is not None:
            # Kernel time alone: the profiler's per-kernel time has no launch gap.
            out[g.sym_name.data] = predicted_time(g.cost, target)
    return out


def measured_kernels(prog: CompiledProgram, tensors: list[Any], repeats: int = 20) -> dict[str, float]:
    """Mean device seconds per kernel name over `repeats` runs (torch profiler)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    prog(*tensors)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(repeats):
            prog(*tensors)
        torch.cuda.synchronize()
    times: dict[str, float] = {}
    for e in p.key_averages():
        if e.key in prog.kernels:
            total = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
            times[e.key] = total * 1e-6 / repeats
    return times


def bench_program(prog: CompiledProgram, tensors: list[Any], target_name: str) -> str:
    """A table: whole-program median time, then per kernel measured vs predicted."""
    import triton.testing

    total = triton.testing.do_bench(lambda: prog(*tensors), return_mode="median") * 1e-3
    predicted = predicted_kernels(prog, target_name)
    measured = measured_kernels(prog, tensors)
    out = io.StringIO()
    print(f"  program: {format_seconds(total)} median (do_bench)", file=out)
    print(f"  {'kernel':<18} {'measured':>10} {'predicted':>10} {'ratio':>6}", file=out)
    for name in prog.kernels:
        m, p = measured.get(name, float("nan")), predicted.get(name, float("nan"))
        print(f"  {name:<18} {format_seconds(m):>10} {format_seconds(p):>10} {m / p:>6.2f}", file=out)
    print(kernel_timeline(prog.kernels, predicted, measured, total), file=out)
    return out.getvalue()


def kernel_timeline(
    kernels, predicted: dict[str, float], measured: dict[str, float], total: float, width: int = 72
) -> str:
    """Predicted kernels above measured ones on one time axis; the gap in the
    measured row is the program's time not spent in kernels (launches, host)."""
    busy = sum(measured.get(k, 0.0) for k in kernels)
    scale = max(total, sum(predicted.get(k, 0.0) for k in kernels)) / width
    rows = [f"  timeline (1 char = {format_seconds(scale)}; '#' kernel, '.' not in a kernel)"]
    for title, times in (("predicted", predicted), ("measured", measured)):
        cells = [("#" * max(1, round(times.get(k, 0.0) / scale))) for k in kernels]
        line = "|".join(cells)
        if title == "measured":
            line += "." * max(0, round((total - busy) / scale))
        rows.append(f"  {title:<9}|{line}|")
    return "\n".join(rows)
