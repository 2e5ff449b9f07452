"""
The fusion report: per kernel and for the whole program, fused vs unfused.

`analyze_program(module, target)` prices every op run alone (unfused, one kernel
each) and every fusion group (one kernel) on the roofline of `target`, and
prints a table, the totals, a text timeline in the style of an Nsight Systems
trace (kernels and launch gaps on one time axis, unfused above fused), and the
decision log. `roofline_png` draws the same points on a roofline plot.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import IntAttr, ModuleOp

from tilefuse.analysis.cost.opcost import GroupCost, op_cost
from tilefuse.analysis.cost.roofline import (
    RooflinePoint,
    format_bytes,
    format_seconds,
    roofline_mixed,
)
from tilefuse.analysis.cost.target import Target, get_target
from tilefuse.analysis.dataflow import FILL, Graph, Node, build_graph
from tilefuse.analysis.fusion_plan import FusionPlan, plan_fusion
from tilefuse.analysis.horizontal_plan import (
    HorizontalPlan,
    kernel_infos,
    plan_horizontal,
)
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.dynamic import PLANNING_SIZE_ATTR, declared_ranges, planning_size
from tilefuse.ir.module import entry_function
from tilefuse.ir.tilefuse import SERVES, VARIANT_OF, GroupOp, describe_tiles
from tilefuse.pipeline import run_pipeline

TIMELINE_WIDTH = 72


@dataclass(frozen=True)
class KernelLine:
    """One kernel of the report: its name, ops and roofline point."""

    name: str
    ops: str
    point: RooflinePoint


@dataclass(frozen=True)
class ProgramReport:
    """Everything the report prints, as data (tests read this)."""

    function: str
    target: Target
    plan: FusionPlan
    unfused: tuple[KernelLine, ...]
    fused: tuple[KernelLine, ...]
    tiles: tuple[tuple[str, str], ...] = ()
    """(kernel, tile plan) from running the pipeline: sizes, budgets, occupancy."""
    horizontal: HorizontalPlan | None = None
    """Which fused kernels share a launch (horizontal-fusion), with its decisions."""
    dynamic: str = ""
    """The declared ranges of dynamic dims and the size they are priced at ("" if none)."""

    @property
    def unfused_time(self) -> float:
        return sum(k.point.time for k in self.unfused)

    def shares_launch(self, name: str) -> bool:
        """True for a bundle member after the first: it pays no launch of its own."""
        return self.horizontal is not None and any(
            name in b[1:] for b in self.horizontal.bundles
        )

    @property
    def fused_time(self) -> float:
        return sum(k.point.time - (k.point.launch_time if self.shares_launch(k.name) else 0.0)
                   for k in self.fused)  # fmt: skip

    @property
    def launches(self) -> int:
        return sum(1 for k in self.fused if not self.shares_launch(k.name))


def _point(cost, target: Target) -> RooflinePoint:
    """Roofline of a kernel: tensor-core work (in its dtype, `dot.tensor_core_dtype`),
    CUDA-core and SFU work, and its bytes."""
    flops, nbytes, tc, sfu, dtype = cost
    return roofline_mixed(flops, nbytes, target, dtype, tc_flops=tc, sfu_ops=sfu)


def analyze_program(
    module: ModuleOp, target: str, after_each: Callable[[str, ModuleOp], None] | None = None
) -> ProgramReport:
    """Price `module`'s entry function unfused and fused on `target` (a name or a
    JSON file): the pipeline runs to `resolve-dims` (the input of `fusion-groups`) for
    the prices and on to `tile-and-fuse` for the tiles, on copies (`after_each` sees
    every stage)."""
    if any(isinstance(op, GroupOp) for op in module.walk()):
        raise CompileError(
            "--report prices the program before fusion-groups, but this one has "
            "tilefuse.group ops already: leave fusion-groups and later stages out of -p"
        )
    gpu = get_target(target)
    front = run_pipeline(module.clone(), target, until="resolve-dims", after_each=after_each)
    f = entry_function(front)
    graph = build_graph(f)
    plan = plan_fusion(graph, gpu)
    unfused = tuple(
        KernelLine(f"{n.label}#{n.index}", n.label, _op_point(n, gpu))
        for n in graph.nodes
        if n.kind != FILL
    )
    fused = tuple(_group_line(graph, g.name, g.all_nodes, g.cost, gpu) for g in plan.groups)
    tiled = run_pipeline(front.clone(), target, start="fusion-groups", until="tile-and-fuse",
                         after_each=after_each)  # fmt: skip
    tiles = tuple(
        (g.sym_name.data, (describe_tiles(g) or "untiled") + _serves(g))
        for g in tiled.walk()
        if isinstance(g, GroupOp)
    )
    groups = [op for op in entry_function(tiled).body.block.ops if isinstance(op, GroupOp)]
    horizontal = plan_horizontal(kernel_infos(groups, gpu), gpu)
    ranges = declared_ranges(f)
    variants = sum(VARIANT_OF in g.attributes for g in groups)
    dynamic = (f"dynamic dims {', '.join(f'{n} in {r}' for n, r in ranges.items())}: priced "
               f"and tiled at {planning_size(f)} (a kernel whose sizes reach further, at its own "
               "largest)" + (
                   f"; {variants} kernel variant(s) tiled for smaller sizes, each launched for "
                   "the largest dynamic sizes it serves" if variants else
                   " (one plan serves the range)") + "; grids '?' are counted at launch"
               ) if ranges else ""  # fmt: skip
    return ProgramReport(f.sym_name.data, gpu, plan, unfused, fused, tiles, horizontal, dynamic)


def _serves(g: GroupOp) -> str:
    """A kernel with variants: the largest dynamic sizes it is launched for."""
    served = g.attributes.get(SERVES)
    if served is None:  # (one plan: at the kernel's own largest size where not the function's)
        own = g.attributes.get(PLANNING_SIZE_ATTR)
        return f"; tiled at its largest size, {own.data}" if isinstance(own, IntAttr) else ""
    lo, hi = served.get_values()  # type: ignore[attr-defined]
    of = g.attributes.get(VARIANT_OF)
    return f"; serves sizes {lo}..{hi}" + (f" (a variant of {of.data})" if of else "")  # type: ignore[attr-defined]


def _op_point(node: Node, target: Target) -> RooflinePoint:
    c = op_cost(node)
    return _point((c.flops, c.bytes, c.tc_flops, c.sfu_ops, c.tc_dtype or "f32"), target)


def _group_line(
    graph: Graph, name: str, indices: tuple[int, ...], cost: GroupCost, target: Target
) -> KernelLine:
    nodes = [graph.nodes[i] for i in indices]
    ops = " + ".join(n.label for n in nodes if n.kind != FILL)
    point = _point((cost.flops, cost.fused_bytes, cost.tc_flops, cost.sfu_ops, cost.dtype), target)
    return KernelLine(name, ops, point)


def format_report(report: ProgramReport) -> str:
    """The report as text."""
    out = io.StringIO()
    t = report.target
    print(f"== fusion report: @{report.function} on {t.name} "
          f"({t.hbm_bandwidth / 1e12:.2f} TB/s, launch {format_seconds(t.launch_overhead)}) ==",
          file=out)  # fmt: skip
    if report.dynamic:
        print(report.dynamic, file=out)
    for title, lines in (("unfused (one kernel per op)", report.unfused),
                         ("fused", report.fused)):  # fmt: skip
        print(f"\n{title}:", file=out)
        _table(lines, out)
    uf, fu = report.unfused, report.fused
    ub, fb = sum(k.point.bytes for k in uf), sum(k.point.bytes for k in fu)
    launches = f" in {report.launches} launches" if report.launches != len(fu) else ""
    ratio = f" ({report.unfused_time / report.fused_time:.2f}x)" if report.fused_time else ""
    print(f"\ntotal: {len(uf)} -> {len(fu)} kernels{launches}, HBM {format_bytes(ub)} -> "
          f"{format_bytes(fb)} ({ub / max(fb, 1):.2f}x less), predicted "
          f"{format_seconds(report.unfused_time)} -> {format_seconds(report.fused_time)}{ratio}",
          file=out)  # fmt: skip
    if report.tiles:
        print("\ntiles:", file=out)
        for name, tile in report.tiles:
            print(f"  {name:<18} {tile}", file=out)
    print("\n" + timeline(report), file=out)
    print("\ndecisions:", file=out)
    print(report.plan.log(), file=out)
    if report.horizontal is not None and report.horizontal.decisions:
        print(report.horizontal.log(), file=out)
    return out.getvalue()


def _table(lines: tuple[KernelLine, ...], out: io.StringIO) -> None:
    header = f"  {'kernel':<18} {'FLOPs':>10} {'bytes':>10} {'FLOP/B':>7} {'bound':>7} {'time':>10}  ops"
    print(header, file=out)
    for k in lines:
        p = k.point
        intensity = f"{p.intensity:.2f}" if p.bytes else "inf"
        print(f"  {k.name:<18} {p.flops:>10.3g} {format_bytes(p.bytes):>10} "
              f"{intensity:>7} {p.bound:>7} {format_seconds(p.time):>10}  {k.ops}", file=out)  # fmt: skip


def timeline(report: ProgramReport, width: int = TIMELINE_WIDTH) -> str:
    """Kernels and launch gaps on one time axis, unfused above fused."""
    total = max(report.unfused_time, report.fused_time)
    scale = total / width
    rows = [f"timeline (predicted; 1 char = {format_seconds(scale)}; '.' launch, '#' kernel)"]
    for title, lines in (("unfused", report.unfused), ("fused", report.fused)):
        cells = []
        for k in lines:
            launch = 0.0 if title == "fused" and report.shares_launch(k.name) else k.point.launch_time
            gap = max(1, round(launch / scale)) if launch else 0
            busy = max(1, round((k.point.time - k.point.launch_time) / scale))
            cells.append("." * gap + "#" * busy)
        rows.append(f"  {title:<8}|{'|'.join(cells)}|")
    return "\n".join(rows)


def roof_line(target: Target) -> tuple[list[float], list[float]]:
    """The f32 SIMT roof from 1/16 to 2048 FLOP/byte, its ridge point a vertex (a line
    through powers of two alone cuts the corner)."""
    peak = target.peak_flops("f32", tensor_cores=False)
    xs = sorted({*(2.0**e for e in range(-4, 12)), peak / target.hbm_bandwidth})
    return xs, [min(peak, x * target.hbm_bandwidth) for x in xs]


def roofline_png(report: ProgramReport, path: str) -> None:
    """Draw each kernel (unfused and fused, labelled) on the target's roofline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = report.target
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(*roof_line(t), "k-", label="f32 SIMT roof")
    for lines, marker, label in ((report.unfused, "o", "unfused op"),
                                 (report.fused, "*", "fused kernel")):  # fmt: skip
        drawn = [k for k in lines if k.point.bytes]
        pts = [(k.point.intensity, k.point.flops / k.point.time) for k in drawn]
        if pts:
            ax.scatter(*zip(*pts, strict=True), marker=marker, s=60, label=label)
        for k, xy in zip(drawn, pts, strict=True):
            ax.annotate(k.name, xy, xytext=(4, 4), textcoords="offset points", fontsize=7)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("predicted FLOP/s")
    ax.set_title(f"@{report.function} on {t.name}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
