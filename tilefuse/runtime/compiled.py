"""
Compile once, call many times: the Python API.

```python
import tilefuse.runtime as tf
prog = tf.compile(open("samples/softmax.mlir").read())  # for the GPU at hand
(y,) = prog(torch.randn(70, 333))      # on the GPU if there is one, else interpreted
print(prog.source)                     # the generated Triton module
```

`compile` runs the default pipeline (`pipeline.STAGES`), prints the
Triton module, and imports it from an on-disk cache keyed by the hash of its
source (`$TILEFUSE_CACHE`, default `~/.cache/tilefuse`). The program's tensor
constants (weights) are not in the source: they are built once, from their
bytes, when the program is loaded, on the device its kernels run on, and each
call hands the same tensors to the host function (`constants`). Without a GPU the
kernels run under Triton's interpreter: `TRITON_INTERPRET=1` is set before the
module is imported, so this must happen before Triton compiles anything else
in the process. Nothing falls back to the reference evaluator: what cannot be
compiled raises `CompileError` naming the op and its location.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import importlib.util
import os
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from xdsl.dialects.builtin import ModuleOp

from tilefuse.analysis.cost.target import DEFAULT_TARGET, target_for_device
from tilefuse.backend.triton.emit import (
    EmittedModule,
    HostConstant,
    emit_module,
    torch_dtype,
)
from tilefuse.dump import open_program_dump
from tilefuse.frontend.program import load_program
from tilefuse.ir.diagnostics import ArgumentError, CompileError, RuntimeCheckError
from tilefuse.ir.dynamic import DimRange, size_checker
from tilefuse.ir.log import channel
from tilefuse.ir.module import entry_function
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime.launcher import FastKernel, init_handles

AUTO_TARGET = "auto"
"""The target named by default: the GPU kernels run on (`resolve_target`)."""


def cache_dir() -> Path:
    path = Path(os.environ.get("TILEFUSE_CACHE", Path.home() / ".cache" / "tilefuse"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def gpu_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"


def _ensure_interpreter() -> None:
    """Without a GPU, kernels must run in Triton's interpreter."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return
    if "triton" in sys.modules:
        raise RuntimeError(
            "no GPU: tilefuse runs kernels in Triton's interpreter, which must be "
            "switched on before triton is imported: set TRITON_INTERPRET=1 or import "
            "tilefuse.runtime.compiled first"
        )
    os.environ["TRITON_INTERPRET"] = "1"


if not gpu_available():
    _ensure_interpreter()


def import_source(source: str) -> ModuleType:
    """Write `source` to the cache (by content hash) and import it."""
    if not gpu_available():
        _ensure_interpreter()
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = cache_dir() / f"tf_{digest}.py"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        tmp.replace(path)
    name = f"tilefuse_generated_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _current_device() -> int | None:
    import torch

    return torch.cuda.current_device() if gpu_available() else None


def _on_device(device: int | None) -> Any:
    import torch

    return torch.cuda.device(device) if device is not None else contextlib.nullcontext()


class _Warmup:
    """Stands in for a kernel during a warm-up run: `k[grid](...)` queues
    `k.warmup(...)` (compile, no launch) and the loading of the result with
    its launcher (`launcher.init_handles`) on a thread pool."""

    def __init__(self, kernel: Any, pool: Any, futures: list[Any]):
        self.kernel, self.pool, self.futures = kernel, pool, futures

    def __getitem__(self, grid: Any) -> Any:
        device = _current_device()

        def compile_and_load(*args: Any, **kwargs: Any) -> None:
            # On the caller's device: a thread starts on device 0.
            with _on_device(device):
                compiled = self.kernel.warmup(*args, grid=grid, **kwargs)
                if compiled is not None:
                    init_handles(compiled)

        def submit(*args: Any, **kwargs: Any) -> None:
            self.futures.append(self.pool.submit(compile_and_load, *args, **kwargs))

        return submit


def every_kernel(python: ModuleType) -> tuple[str, ...]:
    """A generated module's kernels: one per group (`KERNELS`), the twins some
    groups launch instead on a GPU (`GPU_KERNELS`: warp-specialised attention), and
    those the host's helpers launch (`HOST_KERNELS`: an argument's copy into another
    order)."""
    return (*python.KERNELS, *getattr(python, "GPU_KERNELS", ()), *getattr(python, "HOST_KERNELS", ()))


@contextlib.contextmanager
def kernels_replaced(python: ModuleType, stand_in: Any) -> Iterator[None]:
    """Within the block, each kernel `k` of a generated module is `stand_in(name, k)`
    (the host function looks its kernels up at call time); restored after."""
    kernels = {name: getattr(python, name) for name in every_kernel(python)}
    try:
        for name, kernel in kernels.items():
            setattr(python, name, stand_in(name, kernel))
        yield
    finally:
        for name, kernel in kernels.items():
            setattr(python, name, kernel)


def compile_in_parallel(python: ModuleType, fn: Any, args: tuple[Any, ...],
                        kwargs: dict[str, Any] | None = None) -> None:  # fmt: skip
    """JIT-compile every kernel of a generated module at once, before its first run.

    Triton compiles a kernel at its first launch, one after another. Running
    the host function once with each kernel replaced by `_Warmup` allocates the
    outputs as the real run does (so each kernel is specialised for the same
    strides and alignments) and compiles all kernels on threads: Triton's MLIR
    pass pipelines and ptxas run without the GIL. Each kernel is then loaded
    with `launcher.StaticLauncher`, so no C launcher is built for it.
    """
    from concurrent.futures import ThreadPoolExecutor

    if not every_kernel(python):
        return
    if gpu_available():
        from triton.runtime.driver import driver

        # The driver is made at first use (building Triton's cuda_utils with
        # gcc): once, here, rather than by every thread racing to it.
        driver.active.get_current_device()
    futures: list[Any] = []
    workers = min(len(every_kernel(python)), os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        with kernels_replaced(python, lambda _, k: _Warmup(k, pool, futures)):
            fn(*args, **(kwargs or {}))
        for f in futures:
            f.result()


def fast_launches(python: ModuleType) -> None:
    """Wrap each kernel of a generated module in a `launcher.FastKernel` (once)."""
    for name in every_kernel(python):
        kernel = getattr(python, name)
        if not isinstance(kernel, FastKernel):
            setattr(python, name, FastKernel(kernel))


def expected_arguments(module: ModuleOp) -> list[tuple[tuple[int, ...], str]]:
    """(shape, torch dtype name) of each argument of the entry function."""
    return [(tuple(t.get_shape()), torch_dtype(t).removeprefix("torch."))
            for t in entry_function(module).function_type.inputs.data]  # fmt: skip


def constant_tensors(constants: tuple[HostConstant, ...], device: Any) -> tuple[Any, ...]:
    """The tensors of a module's `constants`, built from their elements on `device`."""
    import numpy as np
    import torch

    tensors = []
    for c in constants:
        if c.dtype == "bfloat16":  # (numpy has no bf16: its bits)
            t = torch.from_numpy(c.elements.view(np.int16).copy()).view(torch.bfloat16)
        else:
            t = torch.from_numpy(np.array(c.elements))  # a writable copy of the bytes
        tensors.append(t.to(device))
    return tuple(tensors)


def _default_device(on_gpu: bool) -> Any:
    import torch

    return torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")


@dataclass
class CompiledProgram:
    """A compiled program: call it with torch tensors, get torch tensors back."""

    module: ModuleOp
    source: str
    python: ModuleType
    function: str
    compile_seconds: float
    kernels: tuple[str, ...] = field(default=())
    warmed: bool = False
    expected: list[tuple[tuple[int, ...], Any]] = field(default_factory=list)

    checked: Any = None
    """(shape, dtype, device) of each argument of the last call that passed the check."""
    size_check: Any = None
    """`ir.dynamic.size_checker` of the entry function (a dynamic one), made at the first call."""
    target: str = DEFAULT_TARGET
    """The target it was compiled for (a name `get_target` takes)."""
    on_gpu: bool = field(default_factory=gpu_available)
    """Where the kernels run, decided once (Triton fixes the interpreter at import)."""
    host_constants: tuple[HostConstant, ...] = ()
    """The tensor constants the host function takes, as data (`emit_module`)."""
    constants: dict[Any, tuple[Any, ...]] = field(default_factory=dict)
    """Their tensors by device, each built once, at the first call on that device
    (not at load: the torch backend loads programs inside aot_autograd's fake-tensor
    tracing, where a tensor built would be a fake one)."""

    def __post_init__(self) -> None:
        listed = [(c.name, c.shape, f"torch.{c.dtype}") for c in self.host_constants]
        if listed != [(n, s, str(d)) for n, s, d in self.python.CONSTANTS]:
            raise RuntimeError("the generated module's CONSTANTS are not the program's constants")

    def constants_on(self, device: Any) -> tuple[Any, ...]:
        """The program's constants on `device`, each built once."""
        if device not in self.constants:
            self.constants[device] = constant_tensors(self.host_constants, device)
        return self.constants[device]

    def host_function(self, args: tuple[Any, ...]) -> Any:
        """The generated host function, its `constants` (if any) on the device of `args`."""
        fn = getattr(self.python, self.function)
        if not self.host_constants:
            return fn
        device = args[0].device if args else _default_device(self.on_gpu)
        return functools.partial(fn, constants=self.constants_on(device))

    def check_arguments(self, args: tuple[Any, ...]) -> None:
        """Raise `ArgumentError` unless `args` are tensors of the entry function's
        shapes and types, on one device (kernels index them by the static shapes)."""

        try:  # the common case, cheaply: the same kinds of tensors as last time
            key = tuple((a.shape, a.dtype, a.device) for a in args)
        except AttributeError:
            key = None
        if key is not None and key == self.checked:
            return
        self._check_arguments(args)
        self.checked = key

    def _check_arguments(self, args: tuple[Any, ...]) -> None:
        import torch

        if not self.expected:
            self.expected = [(shape, getattr(torch, dtype))
                             for shape, dtype in expected_arguments(self.module)]  # fmt: skip
        if len(args) != len(self.expected):
            raise ArgumentError(f"@{self.function} takes {len(self.expected)} tensors, "
                                f"got {len(args)}")  # fmt: skip
        devices = set()
        for i, (a, (shape, dtype)) in enumerate(zip(args, self.expected, strict=True)):
            if not isinstance(a, torch.Tensor):
                raise ArgumentError(f"argument {i} of @{self.function} must be a torch.Tensor, "
                                    f"not {type(a).__name__}")  # fmt: skip
            fits = len(a.shape) == len(shape) and all(
                e < 0 or e == n for n, e in zip(a.shape, shape, strict=True))  # (-1: dynamic)
            if not fits or a.dtype != dtype:
                want = ["?" if e < 0 else e for e in shape]
                raise ArgumentError(
                    f"argument {i} of @{self.function} must be a {dtype} tensor of shape "
                    f"{want}, not {a.dtype} of shape {list(a.shape)}")  # fmt: skip
            devices.add(a.device)
        if any(e < 0 for shape, _ in self.expected for e in shape):
            self._check_dynamic_sizes(args)
        if len(devices) > 1:
            raise ArgumentError(f"the arguments of @{self.function} are on several devices: "
                                f"{sorted(map(str, devices))}")  # fmt: skip
        if devices and self.on_gpu and next(iter(devices)).type != "cuda":
            raise ArgumentError(f"@{self.function} runs its kernels on the GPU: pass CUDA "
                                f"tensors, not {next(iter(devices))} ones")  # fmt: skip

    def _check_dynamic_sizes(self, args: tuple[Any, ...]) -> None:
        """The declared ranges of the dynamic dims (read from the IR once)."""
        if self.size_check is None:
            self.size_check = size_checker(entry_function(self.module))
        try:
            self.size_check([tuple(a.shape) for a in args])
        except CompileError as e:
            raise ArgumentError(f"@{self.function}: {e.message}") from None

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        self.check_arguments(args)
        # (the check passed: every argument is a tensor; a list, not a generator: ~2 us a call)
        args = tuple([a if a.is_contiguous() else a.contiguous() for a in args])
        fn = self.host_function(args)
        # (a program with runtime checks raises RuntimeCheckError when one fails)
        checked = {"check_error": RuntimeCheckError} if getattr(self.python, "CHECKS", None) else {}
        if self.on_gpu:
            if not self.warmed:
                compile_in_parallel(self.python, fn, args, checked)  # (a host check may fail here)
                fast_launches(self.python)
                self.warmed = True
            out = fn(*args, **checked)
        else:
            import numpy as np
            import triton.language as tl

            # The interpreter's bf16 tl.dot is wrong (triton 3.9): dot in fp32.
            # Lanes outside the tensors compute on padding and are never
            # stored; numpy's overflow warnings about them are noise.
            with np.errstate(all="ignore"):
                out = fn(*args, dot_dtype=tl.float32, **checked)
        return out if isinstance(out, tuple) else (out,)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Python's cycle collector off while compiling: the pipeline allocates
    many small objects (IR, the L2 simulation's reads) and few cycles, and
    collections triggered by the allocations took half of its time."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _tile_options(smem_budget: int, allow_tf32: bool) -> dict[str, dict[str, int | bool]]:
    options: dict[str, int | bool] = {"smem_budget": smem_budget} if smem_budget else {}
    if allow_tf32:
        options["allow_tf32"] = True
    return {"tile-and-fuse": options} if options else {}


def compile(
    source: str | Path | ModuleOp,
    target: str = AUTO_TARGET,
    dims: Mapping[str, int] | None = None,
    dtype: str | None = None,
    smem_budget: int = 0,
    dump_dir: str | Path | None = None,
    allow_tf32: bool = False,
    dim_ranges: Mapping[str, DimRange] | None = None,
) -> CompiledProgram:
    """Compile MLIR text, a `.mlir` path or a parsed module to Triton kernels
    for `target` (a built-in name, a JSON file, or `auto`: the GPU at hand's,
    `resolve_target`; `smem_budget`: bytes of shared memory tiles may use, `tile-and-fuse`'s option;
    0 keeps the target's; `dump_dir`: where to write the IR after each stage, the
    report and the kernels, default `$TILEFUSE_DEBUG_DIR`, see `tilefuse/dump.py`;
    `allow_tf32`: f32 contractions on TF32 tensor cores, as torch's flag; off, they
    are IEEE f32. Contractions of bf16 or f16 values widened to f32 are 16-bit
    `tl.dot`s either way: their products are exact; `dim_ranges`: the range of each
    dynamic (`?`) dim, `{"x.0": DimRange(1, 4096)}`: one program for every size in
    range, `ir/dynamic.py`)."""
    start = time.perf_counter()
    target = resolve_target(target)
    with _gc_paused():
        if isinstance(source, ModuleOp):
            module, name = source.clone(), "<module>"
        else:
            module = load_program(source, dims, dtype, dim_ranges)
            name = str(source) if str(source).endswith(".mlir") else "<input>"
        dump = open_program_dump(dump_dir, name, module, target)
        run_pipeline(module, target, options=_tile_options(smem_budget, allow_tf32),
                     after_each=dump.stage if dump else None)  # fmt: skip
        emitted = emit_module(module, name)
        if dump is not None:
            dump.write("kernels.py", emitted.text)
            dump.write_constants(emitted.constants)
            dump.write_report()
    program = load(module, emitted, start, name)
    program.target = target
    return program


def resolve_target(target: str) -> str:
    """`target`, or for `auto` the built-in target of the GPU the kernels run on
    (`target_for_device`; `DEFAULT_TARGET` in the interpreter)."""
    if target != AUTO_TARGET:
        return target
    if not gpu_available():
        return DEFAULT_TARGET
    import torch

    return target_for_device(torch.cuda.get_device_name())


def load(module: ModuleOp, emitted: EmittedModule, start: float | None = None,
         name: str | None = None) -> CompiledProgram:  # fmt: skip
    """The program of an emitted module: its source imported, its constants built
    (`start`: when compiling began, for `compile_seconds`)."""
    python = import_source(emitted.text)
    seconds = time.perf_counter() - start if start is not None else 0.0
    kernels = tuple(python.KERNELS)
    name = name or f"@{entry_function(module).sym_name.data}"
    channel("kernels").info("%s: %d kernel%s (%s), source %s", name, len(kernels),
                            "" if len(kernels) == 1 else "s", ", ".join(kernels) or "none",
                            python.__file__)  # fmt: skip
    return CompiledProgram(module, emitted.text, python, python.ENTRY, seconds,
                           kernels, host_constants=emitted.constants)  # fmt: skip
