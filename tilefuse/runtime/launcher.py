"""
Launch compiled Triton kernels without building a C launcher for each signature.

At a kernel's first launch, Triton 3.6 generates C source for a launcher
specialised to the kernel's argument types and compiles it with gcc: 0.3-0.4 s
per new signature on the H200 host, most of the compile time of a program whose
kernels are small (`tools/experiments/compile_breakdown.py`). torch ships a
prebuilt launcher, `torch._C._StaticCudaLauncher` (what torch.compile launches
its Triton kernels with), which takes the argument types as a string at call
time. `StaticLauncher` has the interface of Triton's `CudaLauncher` and
launches through it; within `static_launchers()` (on one thread) Triton builds
it instead of its own. (Triton 3.9's launcher is generic already: there the
gain is only the direct launches of `FastKernel`.)

Anything it does not handle (a non-CUDA target, profiling scratch, clusters,
cooperative or PDL launches, host-made tensor descriptors, instrumentation, tuple or
16-bit float scalar arguments, a torch without the launcher) gets Triton's
launcher, so a kernel always launches one way or the other;
`TILEFUSE_TRITON_LAUNCHER=1` turns ours off.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

# Triton argument type -> the launcher's code for it.
_TYPE_CODES = {
    "i1": "i", "i8": "b", "i16": "h", "i32": "i", "i64": "l",
    "u1": "I", "u8": "B", "u16": "H", "u32": "I", "u64": "K",
    "fp32": "f", "f32": "f", "fp64": "d",
}  # fmt: skip
# (No fp16/bf16 scalars: Triton passes them as 16 bits, torch's launcher as 32.)


class Unsupported(Exception):
    """A kernel this launcher does not handle (Triton's launcher is used)."""


class StaticLauncher:
    """Triton's launcher interface over torch's prebuilt kernel launcher."""

    def __init__(self, src: Any, metadata: Any):
        if getattr(getattr(metadata, "target", None), "backend", "cuda") != "cuda":
            raise Unsupported("a target other than CUDA")
        if getattr(metadata, "instrumentation_mode", ""):
            raise Unsupported("instrumented kernels (extra parameters)")
        for flag in ("launch_cooperative_grid", "launch_pdl"):
            if getattr(metadata, flag, False):
                raise Unsupported(flag)
        if getattr(metadata, "num_ctas", 1) != 1 or getattr(
            metadata, "tensordesc_meta", None
        ):
            raise Unsupported("clusters or tensor descriptors")
        scratch = 0
        self.global_scratch = getattr(metadata, "global_scratch_size", 0)
        self.buffers: dict[tuple[int, int], Any] = {}
        for name in ("global_scratch_size", "profile_scratch_size"):
            if hasattr(metadata, name):
                if getattr(metadata, name) > 0 and name != "global_scratch_size":
                    raise Unsupported(name)
                scratch += 1  # the kernel takes a pointer for it (null if unused)
        self.kept, codes = kernel_parameters(src)
        # (the kept arguments picked in C: a generator over them was ~2 us a launch)
        self.pick = argument_picker(self.kept)
        self.arg_types = codes + "O" * scratch
        self.scratch = (None,) * scratch
        self.num_warps = metadata.num_warps
        self.shared = metadata.shared
        from torch._C import _StaticCudaLauncher  # ImportError: use Triton's

        self.launch_kernel = _StaticCudaLauncher._launch_kernel

    def __call__(self, grid_x: int, grid_y: int, grid_z: int, stream: int, function: int,
                 kernel_metadata: Any, launch_metadata: Any, enter_hook: Any, exit_hook: Any,
                 *args: Any) -> None:  # fmt: skip
        if enter_hook is not None:
            enter_hook(launch_metadata)
        scratch = self.scratch
        if self.global_scratch:
            # Per program (TMA descriptors made in the kernel), as Triton's launcher
            # asks its allocator for it; one buffer per stream and size, reused:
            # launches on one stream run one after another.
            key = (stream, grid_x * grid_y * grid_z * self.global_scratch)
            buffer = self.buffers.get(key)
            if buffer is None:
                buffer = self.buffers[key] = scratch_buffer(key[1])
            scratch = (buffer, *scratch[1:])
        params = (*self.pick(args), *scratch)
        self.launch_kernel(function, grid_x, grid_y, grid_z, self.num_warps, self.shared,
                           self.arg_types, params, stream)  # fmt: skip
        if exit_hook is not None:
            exit_hook(launch_metadata)


def argument_picker(kept: list[int]) -> Any:
    """`args -> tuple(args[i] for i in kept)`, as a C-level getter."""
    import operator

    if not kept:
        return lambda args: ()
    if len(kept) == 1:
        i = kept[0]
        return lambda args: (args[i],)
    return operator.itemgetter(*kept)


def scratch_buffer(nbytes: int) -> Any:
    """Device memory for a launch's global scratch, from torch's caching allocator
    (on the current device and stream)."""
    import torch

    return torch.empty(nbytes, dtype=torch.int8, device="cuda")


def kernel_parameters(src: Any) -> tuple[list[int], str]:
    """The positions of a kernel's arguments that are parameters of the compiled
    kernel (constexprs and arguments Triton specialised to constants are not),
    and their type codes."""
    names = src.fn.arg_names

    def index(key: Any) -> int:
        if isinstance(key, str):
            return names.index(key)
        return key[0] if isinstance(key, tuple) else key

    constant_keys = list(getattr(src, "constants", {}))
    if any(isinstance(k, tuple) and len(k) != 1 for k in constant_keys) or not all(
        isinstance(ty, str) for ty in src.signature.values()
    ):
        raise Unsupported("tuple arguments")
    constants = {index(k) for k in constant_keys}
    signature = {index(k): ty for k, ty in src.signature.items()}
    kept = [
        i
        for i in sorted(signature)
        if signature[i] != "constexpr" and i not in constants
    ]
    codes = ""
    for i in kept:
        ty = signature[i]
        if ty.startswith("*"):
            codes += "O"
        elif ty in _TYPE_CODES:
            codes += _TYPE_CODES[ty]
        else:
            raise Unsupported(f"argument type {ty}")
    return kept, codes


_LOCAL = threading.local()


class _LauncherChoice:
    """Installed once as the Triton driver's `launcher_cls`: a `StaticLauncher`
    for kernels initialised inside `static_launchers()` on the same thread,
    Triton's launcher for every other kernel, ours included where unsupported."""

    def __init__(self, triton_launcher: Any):
        self.triton_launcher = triton_launcher

    def __call__(self, src: Any, metadata: Any) -> Any:
        if getattr(_LOCAL, "active", False):
            try:
                return StaticLauncher(src, metadata)
            except (ImportError, Unsupported):
                pass
        return self.triton_launcher(src, metadata)


_INSTALL = threading.Lock()


@contextlib.contextmanager
def static_launchers() -> Iterator[None]:
    """Within the block, on this thread, kernels whose handles Triton
    initialises get a `StaticLauncher` where it supports them."""
    if os.environ.get("TILEFUSE_TRITON_LAUNCHER") == "1" or os.environ.get("TRITON_INTERPRET") == "1":
        yield  # ours turned off, or the interpreter (no launchers)
        return
    from triton.runtime.driver import driver

    active = driver.active
    with _INSTALL:
        if not isinstance(active.launcher_cls, _LauncherChoice):
            active.launcher_cls = _LauncherChoice(active.launcher_cls)
    outer = getattr(_LOCAL, "active", False)
    _LOCAL.active = True
    try:
        yield
    finally:
        _LOCAL.active = outer


def init_handles(kernel: Any) -> None:
    """Load a compiled kernel and make its launcher now (on the calling thread)."""
    init = getattr(kernel, "_init_handles", None)
    if init is not None:
        with static_launchers():
            init()


def _hooked(runtime_knobs: Any) -> bool:
    """Is a Triton launch hook set (None, or an empty `HookChain`, is not)?"""
    for h in (runtime_knobs.launch_enter_hook, runtime_knobs.launch_exit_hook):
        if h is not None and getattr(h, "calls", True):  # (a loop, not a generator: every launch)
            return True
    return False


MAX_LAUNCHES = 64
"""Launch arguments remembered per kernel (a static program's host function makes
one per kernel; a dynamic program's one per size: past these, a launch with new
sizes finds its kernel by `FastKernel._classes`, a few microseconds more)."""


class FastKernel:
    """A generated module's kernel after its first launch: launches whose
    arguments Triton would specialise the same way as an earlier launch (same
    current device and keywords, any grid; tensors of the same dtype and 16-byte
    alignment; integers of the same type, both 1 or not, both divisible by 16 or
    not; equal other scalars; the same debug and instrumentation knobs) go straight
    to that launch's compiled kernel through its `StaticLauncher`, skipping
    Triton's argument binding. Anything else, and
    every launch while a Triton launch hook is set, goes through Triton's
    `kernel[grid](...)` (under `static_launchers()`), which compiles whatever
    new specialisation it needs."""

    def __init__(self, kernel: Any):
        import torch
        from triton import knobs

        self.kernel = kernel
        self.launches: dict[Any, Any] = {}
        """Compiled kernels by launch arguments (at most `MAX_LAUNCHES`)."""
        self.alike: dict[Any, Any] = {}
        """The same by what Triton specialises the arguments on (`_classes`): a few."""
        self._tensor = torch.Tensor
        self._knobs = knobs.runtime
        self._compilation = getattr(knobs, "compilation", None)
        self._device: Any = None  # Triton's driver functions, at the first launch
        self._stream: Any = None

    def _driver(self) -> tuple[Any, Any]:
        if self._stream is None:
            from triton.runtime.driver import driver

            self._device, self._stream = driver.active.get_current_device, driver.active.get_current_stream
        return self._device, self._stream

    def __getattr__(self, name: str) -> Any:
        if name == "kernel":  # not set yet (copying): no recursion
            raise AttributeError(name)
        return getattr(self.kernel, name)

    def _options(self) -> tuple[Any, ...]:
        """Process-wide settings Triton compiles into a kernel."""
        return (getattr(self._knobs, "debug", None),
                getattr(self._compilation, "instrumentation_mode", None))  # fmt: skip

    def _signature(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[Any]]:
        """A launch's arguments as Triton could specialise on them (a tensor's dtype,
        16-byte alignment and whether it is on a GPU; the values of integers and other
        scalars), and the arguments with each tensor as its address.

        Torch's launcher takes an address as it is, but asks a tensor for its `data_ptr`
        and the CUDA driver whether that is a device address (`cuPointerGetAttribute`),
        every pointer of every launch. The key keeps what that check guards: a tensor
        not on a GPU has another key, so its launch goes through Triton's, which refuses it."""
        tensor = self._tensor
        key: list[Any] = []
        flat: list[Any] = []
        # (one plain loop: less Python than two comprehensions or a generator, which
        # cost ~10 us a launch of 30 arguments; most arguments are integers)
        for a in args:
            if type(a) is int:
                key.append(a)
                flat.append(a)
            elif isinstance(a, tensor):
                address = a.data_ptr()
                key.append((a.dtype, address % 16 == 0, a.is_cuda))
                flat.append(address)
            else:
                key.append((type(a), a))
                flat.append(a)
        return tuple(key), flat

    @staticmethod
    def _classes(signature: tuple[Any, ...]) -> tuple[Any, ...]:
        """`_signature` with each integer as what Triton specialises it on: its type (32
        or 64 bits), whether it is 1, whether 16 divides it (a dynamic program's sizes
        and strides change every call; this does not)."""
        return tuple([(a == 1, a % 16 == 0, -(2**31) <= a < 2**31, a >= 2**63)
                      if type(a) is int else a for a in signature])  # fmt: skip

    def __getitem__(self, grid: tuple[int, ...]) -> Any:
        if not isinstance(grid, tuple):  # a grid function: Triton's path only
            return self.kernel[grid]

        def launch(*args: Any, **kwargs: Any) -> Any:
            current_device, current_stream = self._driver()
            # A compiled kernel is loaded on one device: the current one is in the key.
            device = current_device()
            signature, flat = self._signature(args)
            key = (device, tuple(kwargs.items()), signature, self._options())
            try:
                compiled = self.launches.get(key)
                if compiled is None:  # new values: as Triton would specialise them?
                    like = (*key[:2], self._classes(key[2]), key[3])
                    compiled = self.alike.get(like)
                    if compiled is not None and len(self.launches) < MAX_LAUNCHES:
                        self.launches[key] = compiled
            except TypeError:  # an unhashable argument
                compiled, key = None, None
            if compiled is None or _hooked(self._knobs):
                with static_launchers():
                    compiled = self.kernel[grid](*args, **kwargs)
                run = getattr(compiled, "_run", None)
                if (key is not None and isinstance(run, StaticLauncher)
                        and max(run.kept, default=-1) < len(args)):  # fmt: skip
                    self.alike[(*key[:2], self._classes(key[2]), key[3])] = compiled
                    if len(self.launches) < MAX_LAUNCHES:
                        self.launches[key] = compiled
                return compiled
            gx, gy, gz = (*grid, 1, 1)[:3]
            compiled._run(gx, gy, gz, current_stream(device), compiled.function, None, None,
                          None, None, *flat)  # fmt: skip
            return compiled

        return launch
