"""
Compile a program's kernels for the real GPU (no GPU needed) and check them.

After the default pipeline, every fusion group is one `@triton.jit` kernel in
the module `emit_triton` prints. `check_kernels` compiles each one ahead of
time for the target's architecture (`cubin.compile_for_gpu`: Triton down to
PTX, then the bundled `ptxas`) with the arguments the host function would
launch it with, and reports what ptxas made of it next to what the cost model
predicted:

```
python -m tilefuse.tools.gpu_check samples/softmax.mlir --set-dim M=4096 \
    --set-dim N=8192 --set-dtype bf16
```

The signature is the one Triton's launcher would specialise for contiguous
tensors of the group's static shapes, read from the printer's `KernelSignature`:
a pointer per tensor (`*fp32`, `*bf16`, ...; divisible by 16, as freshly
allocated torch tensors are), one `i32` stride per dim (`i64` past 2**31),
strides equal to 1 turned into the constexpr 1, and strides that are multiples
of 16 marked divisible by 16. The constexprs (`DOT_DTYPE`, `DOT_PRECISION`) are
those the host passes, and `num_warps`/`num_stages` are the launch's.

The predicted registers per thread and working set are read from the tile plan
of the group's (first) grid (`#tilefuse.tile_plan`, `tile_summary`).

When `triton.language` was imported for the interpreter (`TRITON_INTERPRET=1`,
as in the tests), kernels cannot be compiled in this process; all the kernels
of one call are then compiled in a single child process.
"""

from __future__ import annotations

import math
import os
import pickle
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.dataflow import is_contraction
from tilefuse.analysis.dot import contraction_dtypes
from tilefuse.analysis.horizontal_plan import branches_smem
from tilefuse.backend.triton.emit import emit_module
from tilefuse.backend.triton.signature import POINTER, SIZE, STRIDE, KernelSignature
from tilefuse.gpu import aot as cubin
from tilefuse.gpu.aot import (
    CompiledKernel,
    CubinCompileError,
    compile_for_gpu,
    load_jit_function,
    run_in_child,
)
from tilefuse.ir.module import entry_function
from tilefuse.ir.structured import as_structured
from tilefuse.ir.tilefuse import GroupOp

__all__ = [
    "KernelReport",
    "KernelSpec",
    "TileSummary",
    "check_kernels",
    "check_programs",
    "compile_batch",
    "compile_kernels",
    "format_reports",
    "group_summary",
    "kernel_only_source",
    "kernel_specs",
    "tile_summary",
]

POINTER_TYPE = {"f32": "*fp32", "f16": "*fp16", "bf16": "*bf16", "f64": "*fp64", "i1": "*i1",
                "i8": "*i8", "i16": "*i16", "i32": "*i32", "i64": "*i64"}
I32_MAX = 2**31 - 1


# --------------------------------------------------------------------------
# What the cost model predicted
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class TileSummary:
    """The numbers of a grid's tile plan that ptxas can confirm."""

    regs_per_thread: int | None
    working_set_bytes: int | None


def tile_summary(plan: Any) -> TileSummary:
    """`#tilefuse.tile_plan<..., working_set = 16384, ..., regs = 44, ...>` -> (44, 16384);
    (None, None) for a grid without a plan (None)."""
    if plan is None:
        return TileSummary(None, None)
    return TileSummary(plan.regs.data, plan.working_set.data)


def group_summary(group: GroupOp) -> TileSummary:
    """The plan's numbers for a whole kernel: with several grids (horizontal
    fusion's branches), the most registers and the branches' shared memory
    (`horizontal_plan.branches_smem`)."""
    plans = [(g.plan, bool(contraction_dtypes(g))) for g in group.grids if g.plan is not None]
    if not plans:
        return TileSummary(None, None)
    return TileSummary(max(p.regs.data for p, _ in plans),
                       branches_smem((p.working_set.data, dot) for p, dot in plans))  # fmt: skip


# --------------------------------------------------------------------------
# What to compile
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelSpec:
    """One kernel with the arguments its launch specialises it for (picklable)."""

    name: str
    signature: tuple[tuple[str, str], ...]  # (parameter, type), in order
    constexprs: tuple[tuple[str, object], ...]  # DOT_DTYPE is a tl dtype's name
    divisible_by_16: tuple[str, ...]
    num_warps: int
    num_stages: int
    predicted: TileSummary
    contraction: bool
    dot: str | None = None
    """The plan's `tl.dot` operand type (`"bf16"`), None without one."""
    branches: int = 1
    """Tile grids in the kernel (horizontal fusion's branches)."""


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Strides (in elements) of a row-major tensor, as torch gives them."""
    return tuple(
        math.prod(max(1, s) for s in shape[i + 1 :]) for i in range(len(shape))
    )


def _signature(
    kernel: KernelSignature,
) -> tuple[dict[str, str], dict[str, object], list[str]]:
    """Triton types, constexprs and divisible-by-16 parameters of `kernel`'s launch
    with contiguous tensors."""
    sig: dict[str, str] = {}
    consts: dict[str, object] = {}
    div: list[str] = []
    unspecialized = set(kernel.unspecialized)
    for p in kernel.params:
        if p.kind is POINTER:
            if p.dtype not in POINTER_TYPE:
                raise CubinCompileError(f"no Triton pointer type for element type {p.dtype}")
            sig[p.name] = POINTER_TYPE[p.dtype]
            div.append(p.name)
        elif p.kind is SIZE or (p.kind is STRIDE and any(n < 0 for n in p.shape[(p.dim or 0) + 1 :])):
            # a run-time size, or a stride over one: an i32 Triton specialises only
            # where the kernel lets it (a multiple of 16 at every size)
            sig[p.name] = "i32"
            if p.kind is STRIDE and p.name not in unspecialized:
                div.append(p.name)
        elif p.kind is STRIDE:
            assert p.dim is not None
            stride = contiguous_strides(p.shape)[p.dim]
            if stride == 1:  # the launcher specialises ints equal to 1
                consts[p.name] = 1
                continue
            sig[p.name] = "i32" if stride <= I32_MAX else "i64"
            if stride % 16 == 0:
                div.append(p.name)
        else:
            consts[p.name] = p.value
    return sig, consts, div


def _is_contraction_group(group: Any) -> bool:
    for op in group.walk():
        s = as_structured(op)
        if s is not None and s.reduction_dims and is_contraction(s):
            return True
    return False


def kernel_specs(module: Any, emitted: Any) -> list[KernelSpec]:
    """One spec per group of `module` (after the pipeline), from the signatures of
    `emitted` (`emit_module(module)`)."""
    specs = []
    for g in entry_function(module).body.block.ops:
        if not isinstance(g, GroupOp):
            continue
        for kernel in filter(None, (emitted.kernel(g.sym_name.data), emitted.kernel(g.sym_name.data).gpu)):
            specs.append(_spec(g, kernel))
    return specs


def _spec(g: GroupOp, kernel: KernelSignature) -> KernelSpec:
    """The spec of `g`'s kernel `kernel` (its Triton kernel or its Gluon twin)."""
    sig, consts, div = _signature(kernel)
    return KernelSpec(
        name=kernel.name,
        signature=tuple(sig.items()),
        constexprs=tuple(consts.items()),
        divisible_by_16=tuple(div),
        num_warps=kernel.num_warps,
        num_stages=kernel.num_stages,
        predicted=group_summary(g),
        contraction=_is_contraction_group(g),
        dot=next((p.dot_dtype for gr in g.grids if (p := gr.plan) is not None and p.dot_dtype),
                 None),
        branches=len(g.grids),
    )  # fmt: skip


# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------


def kernel_only_source(source_text: str) -> str:
    """`source_text` without `import torch` (the printer's own line) and the
    `CONSTANTS = (... torch.float32 ...)` table the host reads: the kernels never
    use them, and importing torch costs a child process a second or two."""
    lines = source_text.splitlines(keepends=True)
    return "".join("\n" if line == "import torch\n" or line.startswith("CONSTANTS = ") else line
                   for line in lines)  # fmt: skip


def _compile_one(source_text: str, spec: KernelSpec, arch: int) -> CompiledKernel:
    """Compile in this process (triton.language not interpreted)."""
    import triton.language as tl


    fn = load_jit_function(kernel_only_source(source_text), spec.name, interpret=False)
    consts = dict(spec.constexprs)
    if isinstance(consts.get("DOT_DTYPE"), str):
        consts["DOT_DTYPE"] = getattr(tl, consts["DOT_DTYPE"])
    kernel = compile_for_gpu(
        fn,
        dict(spec.signature),
        consts,
        arch=arch,
        num_warps=spec.num_warps,
        num_stages=spec.num_stages,
        divisible_by_16=spec.divisible_by_16,
    )
    # The PTX and cubin are not needed here; keep results small to pickle.
    return replace(kernel, ptx="", cubin=b"", triton_kernel=None)


Batch = Sequence[tuple[str, Sequence[KernelSpec]]]
"""Programs to compile: (kernel source text, the specs of its kernels)."""


def kernel_key(source_text: str, spec: KernelSpec, arch: int) -> str:
    """What decides a kernel's cubin: the module text before the first kernel
    (imports and helpers), the kernel's own text with its name left out, and its
    launch (signature, constexprs, warps, stages, target). Two programs with one
    kernel in common (a zoo's copies, one GEMM shape) compile it once."""
    import hashlib

    start = source_text.find(f"def {spec.name}(")
    helpers = source_text.find(f"def {spec.name}_")  # (a Gluon kernel's partitions come first)
    start = min(start, helpers) if helpers >= 0 else start
    end = source_text.find("\n@triton.jit", start)
    end = source_text.find("\ndef ", start + 1) if end < 0 else end
    body = source_text[start:end if end > 0 else None].replace(spec.name, "KERNEL")
    prelude = source_text[: source_text.find("@triton.jit\ndef fused_kernel")]
    launch = (spec.signature, spec.constexprs, spec.divisible_by_16, spec.num_warps,
              spec.num_stages, arch)  # fmt: skip
    return hashlib.sha256(f"{prelude}\0{body}\0{launch!r}".encode()).hexdigest()


def _result_cache() -> Path:
    import triton

    path = cubin.kernel_cache_dir() / f"aot-{triton.__version__}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _compile_cached(source_text: str, spec: KernelSpec, arch: int) -> CompiledKernel | str:
    """`_compile_one` through an on-disk cache of results (per triton version);
    an error message in place of a kernel that does not compile."""
    path = _result_cache() / f"{kernel_key(source_text, spec, arch)}.pkl"
    if path.exists():
        kernel = pickle.loads(path.read_bytes())
        return replace(kernel, name=spec.name)
    try:
        kernel = _compile_one(source_text, spec, arch)
    except Exception as e:
        return f"{spec.name}: {type(e).__name__}: {e}"
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(pickle.dumps(kernel))
    os.replace(tmp, path)
    return kernel


COMPILE_THREADS = 4
"""Kernels compiled at once: Triton's MLIR passes and ptxas run without the GIL."""


def _compile_batch(batch: Batch, arch: int) -> list[list[CompiledKernel | str]]:
    """Compiled kernels, or error messages, per program of `batch`: each distinct
    kernel (`kernel_key`) once, on threads."""
    from concurrent.futures import ThreadPoolExecutor

    unique: dict[str, tuple[str, KernelSpec]] = {}
    keys = [[kernel_key(src, spec, arch) for spec in specs] for src, specs in batch]
    for (src, specs), row in zip(batch, keys, strict=True):
        for spec, key in zip(specs, row, strict=True):
            unique.setdefault(key, (src, spec))
    workers = max(1, min(COMPILE_THREADS, os.cpu_count() or 1, len(unique)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = dict(zip(unique, pool.map(lambda job: _compile_cached(*job, arch),
                                         unique.values()), strict=True))  # fmt: skip
    return [[_named(done[key], spec.name) for key, spec in zip(row, specs, strict=True)]
            for (_, specs), row in zip(batch, keys, strict=True)]  # fmt: skip


def _named(result: CompiledKernel | str, name: str) -> CompiledKernel | str:
    if isinstance(result, str):
        return f"{name}: {result.split(': ', 1)[1]}" if ": " in result else result
    return replace(result, name=name)


def _language_is_interpreted() -> bool:
    return cubin._language_is_interpreted()


def compile_batch(batch: Batch, arch: int = 90) -> list[list[CompiledKernel | str]]:
    """Compile the kernels of several programs: in this process, or, when
    `triton.language` is interpreted here, all in ONE child process.

    Returns per program, per spec, the `CompiledKernel` or an error message.
    """
    batch = [(source, list(specs)) for source, specs in batch]
    if not any(specs for _, specs in batch):
        return [[] for _ in batch]
    if _language_is_interpreted():
        return _compile_in_child(batch, arch)
    return _compile_batch(batch, arch)


def compile_kernels(
    source_text: str, specs: Sequence[KernelSpec], arch: int = 90
) -> list[CompiledKernel]:
    """Compile `specs` (kernels of `source_text`); raise if any fails."""
    (results,) = compile_batch([(source_text, specs)], arch)
    return _raise_errors(results)


def _raise_errors(results: list[CompiledKernel | str]) -> list[CompiledKernel]:
    errors = [r for r in results if isinstance(r, str)]
    if errors:
        raise CubinCompileError("\n".join(errors))
    return [r for r in results if isinstance(r, CompiledKernel)]


_CHILD_MAIN = "from tilefuse.gpu.check import _child_main; _child_main()"


def _compile_in_child(batch: Batch, arch: int) -> list[list[CompiledKernel | str]]:
    return run_in_child(_CHILD_MAIN, (batch, arch), "tilefuse-gpu-check-")


def _child_main() -> None:
    """Entry point of the child process started by `_compile_in_child`."""
    in_path, out_path = sys.argv[1], sys.argv[2]
    batch, arch = pickle.loads(Path(in_path).read_bytes())
    Path(out_path).write_bytes(pickle.dumps(_compile_batch(batch, arch)))


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class KernelReport:
    """ptxas's view of one kernel next to the cost model's."""

    name: str
    registers: int  # per thread (ptxas)
    spills: int  # local memory per thread / 4 (ptxas)
    shared_bytes: int  # dynamic shared memory the kernel launches with
    smem_limit: int  # target.smem_per_block
    predicted_regs: int | None  # the tile plan's ~regs/thread
    predicted_working_set: int | None  # the tile plan's working set, bytes
    num_warps: int
    num_stages: int
    fits: bool  # shared_bytes <= smem_limit
    contraction: bool = False  # the group has a tl.dot
    max_registers: int = 255  # target.max_regs_per_thread
    ptx_has: frozenset[str] = frozenset()  # cubin.PTX_FEATURES found in the PTX
    dot: str | None = None  # the plan's tl.dot operand type
    branches: int = 1  # tile grids in the kernel


def target_arch(target: Any) -> int:
    """`(9, 0)` -> 90."""
    major, minor = target.compute_capability
    return 10 * major + minor


def check_kernels(
    module_after_pipeline: Any, emitted: Any, target: Any
) -> list[KernelReport]:
    """Compile every kernel of the module for `target` and report on each.

    `emitted` is `emit_module(module_after_pipeline)` (printed when None);
    `target` is a `Target` or a target name. Raises `CubinCompileError` if a
    kernel does not compile.
    """
    (result,) = check_programs([(module_after_pipeline, emitted)], target)
    if isinstance(result, CubinCompileError):
        raise result
    return result


def check_programs(
    programs: Sequence[tuple[Any, Any]], target: Any
) -> list[list[KernelReport] | CubinCompileError]:
    """`check_kernels` for several (module, emitted module or None) pairs at once.

    Under the interpreter all kernels compile in one child process. A program
    whose kernel fails to compile gets the error (not raised) in its place.
    """
    if isinstance(target, str):
        target = get_target(target)
    batch = []
    for module, emitted in programs:
        emitted = emit_module(module) if emitted is None else emitted
        batch.append((emitted.text, kernel_specs(module, emitted)))
    compiled = compile_batch(batch, target_arch(target))
    out: list[list[KernelReport] | CubinCompileError] = []
    for (_, specs), results in zip(batch, compiled, strict=True):
        try:
            kernels = _raise_errors(results)
        except CubinCompileError as e:
            out.append(e)
            continue
        out.append([_report(s, k, target) for s, k in zip(specs, kernels, strict=True)])
    return out


def _report(spec: KernelSpec, kernel: CompiledKernel, target: Any) -> KernelReport:
    return KernelReport(
        name=spec.name,
        registers=kernel.registers,
        spills=kernel.spills,
        shared_bytes=kernel.shared_bytes,
        smem_limit=target.smem_per_block,
        predicted_regs=spec.predicted.regs_per_thread,
        predicted_working_set=spec.predicted.working_set_bytes,
        num_warps=kernel.num_warps,
        num_stages=kernel.num_stages,
        fits=kernel.shared_bytes <= target.smem_per_block,
        contraction=spec.contraction,
        max_registers=target.max_regs_per_thread,
        ptx_has=kernel.ptx_has,
        dot=spec.dot,
        branches=spec.branches,
    )


def _kb(n: int | None) -> str:
    return "?" if n is None else f"{n / 1024:.1f}"


def format_reports(reports: Iterable[KernelReport], title: str | None = None) -> str:
    """A table: registers (ptxas vs model), spills, shared memory vs limit, ..."""
    header = ("kernel", "regs", "model", "spills", "shared KB", "limit KB",
              "model WS KB", "warps", "stages", "")  # fmt: skip
    rows = [header]
    for r in reports:
        flags = [f for f, bad in (("SMEM>LIMIT", not r.fits),
                                  ("REGS>MAX", r.registers > r.max_registers),
                                  ("SPILLS", r.spills > 0)) if bad]  # fmt: skip
        rows.append((
            r.name + (" (dot)" if r.contraction else ""),
            str(r.registers),
            "?" if r.predicted_regs is None else str(r.predicted_regs),
            str(r.spills),
            _kb(r.shared_bytes),
            _kb(r.smem_limit),
            _kb(r.predicted_working_set),
            str(r.num_warps),
            str(r.num_stages),
            " ".join(flags),
        ))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [f"== {title} ==" if title else None]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:-1], widths[1:-1], strict=True)
        ]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(line for line in lines if line is not None)
