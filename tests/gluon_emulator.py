"""A CPU emulator of the warp-specialised attention's printed Gluon kernel
(`backend/triton/attention_ws.py`), for tests without a GPU: Gluon does not run under
Triton's interpreter, so the printed Gluon functions run here, in place of their Triton
twin and on the same arguments: each partition of `gl.warp_specialize` a thread; mbarriers
with phases, arrival counts and transaction bytes; TMA copies that land as late as the
protocol allows (only when every partition waits, the awaited one first); a
`warpgroup_mma` computed at its `warpgroup_mma_wait`, its shared-memory operands checked
unchanged since it was issued; after each program every ring slot loaded as often as it was
released. Layouts are ignored. `tests/test_attention_ws_adversarial.py` plants bugs in a
printed kernel and checks the emulator sees each one.

`emulate` runs any `@gluon.jit` kernel's source the same way over a grid of programs (host
`TensorDescriptor`s replaced by `host_descriptor`s; `tools/experiments/gemm_gluon_emulated.py`
runs the warp-specialised GEMM with it)."""

from __future__ import annotations

import ast
import contextlib
import functools
import math
import threading
import types

import pytest
import torch

from tilefuse.analysis import tile_plan
from tilefuse.backend.triton.module import EmittedModule
from tilefuse.backend.triton.signature import CONSTEXPR, POINTER
from tilefuse.runtime.compiled import CompiledProgram


@pytest.fixture(autouse=True, scope="module")
def causal_kernel_printed():
    """Causal attention's warp-specialised kernel is held back from plans
    (`tile_plan.WS_CAUSAL`) but still printed and emulated, ready for when a GPU run clears
    it: a test module importing this fixture plans with it allowed
    (`test_causal_attention.py::test_causal_attention_keeps_the_triton_loop_on_sm90` checks
    what plans do meanwhile)."""
    held = tile_plan.WS_CAUSAL
    tile_plan.WS_CAUSAL = True
    yield
    tile_plan.WS_CAUSAL = held


# -- the CPU emulator of the printed Gluon kernel ------------------------------------------


class Deadlock(AssertionError):
    """Every partition waits on an mbarrier no partition will complete."""


class Race(AssertionError):
    """Shared memory an MMA in flight reads was written before its wait."""


class _Layout:
    """Any Gluon layout (the emulator ignores layouts)."""

    def __init__(self, *args, **kwargs):
        pass

    @classmethod
    def get_default_for(cls, *args, **kwargs):
        return cls()


class _BarrierLayout(_Layout):
    pass


class _Pointer:
    """A kernel's pointer argument: its tensor and element offsets (an int or a tensor)."""

    def __init__(self, tensor: torch.Tensor, offset=0):
        self.tensor, self.offset = tensor, offset

    def __add__(self, offset):
        return _Pointer(self.tensor, self.offset + offset)

    __radd__ = __add__

    def flat(self) -> torch.Tensor:
        t = self.tensor
        n = t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
        return torch.as_strided(t, (n,), (1,), t.storage_offset())


class _Shared:
    """A shared-memory descriptor: a view of one CPU tensor."""

    def __init__(self, t: torch.Tensor):
        self.t = t

    def index(self, i):
        return _Shared(self.t[i])

    def reshape(self, shape):
        return _Shared(self.t.view(*shape))

    def permute(self, order):
        return _Shared(self.t.permute(*order))

    def store(self, x):
        if x.dtype != self.t.dtype or tuple(x.shape) != tuple(self.t.shape):
            raise TypeError(f"a store of {x.dtype} {tuple(x.shape)} into {self.t.dtype} "
                            f"{tuple(self.t.shape)} shared memory")  # fmt: skip
        self.t.copy_(x)

    def load(self, layout=None):
        return self.t.clone()


class _Barrier:
    """An mbarrier: its phase completes when `count` arrivals came and no bytes are due."""

    def __init__(self, emu: GluonEmulator):
        self.emu, self.count, self.pending, self.tx, self.phase = emu, 0, 0, 0, 0
        self.waiters: list[list] = []

    def init(self, count):
        self.count = self.pending = count

    def complete(self):
        if self.pending or self.tx:
            return
        self.phase += 1
        self.pending = self.count
        for w in [w for w in self.waiters if self.phase % 2 != w[0]]:
            w[1] = True
            self.waiters.remove(w)
            self.emu.running += 1  # (handed over: it runs again)
        self.emu.cond.notify_all()

    def arrive(self, count=1):
        with self.emu.cond:
            self.pending -= count
            if self.pending < 0:
                raise AssertionError("an mbarrier arrived on more often than its count")
            self.complete()
        self.emu.settle()

    def expect(self, nbytes):
        with self.emu.cond:
            self.tx += nbytes
            self.pending -= 1
            self.complete()

    def wait(self, parity):
        emu = self.emu
        with emu.cond:
            if self.phase % 2 != parity:
                return
            w = [parity, False]
            self.waiters.append(w)
            emu.running -= 1
            emu.cond.notify_all()
            while not w[1]:
                if emu.running == 0 and emu.settling == 0 and emu.copies:
                    emu.land_copy()
                elif (emu.running == 0 and emu.settling == 0) or emu.failed:
                    self.waiters.remove(w)
                    emu.running += 1
                    raise Deadlock(f"an mbarrier wait (parity {parity}) never completes")
                else:
                    emu.cond.wait(0.05)


class _Barriers:
    def __init__(self, n: int, emu: GluonEmulator):
        self.bars = [_Barrier(emu) for _ in range(n)]

    def index(self, i):
        return self.bars[i]


class _Descriptor:
    """A TMA descriptor: a view of the tensor by the shape and strides the kernel gives."""

    def __init__(self, ptr: _Pointer, shape, strides, block_shape, layout=None):
        t = ptr.tensor
        if t.data_ptr() % 16 or strides[-1] != 1 or any(s * t.element_size() % 16 for s in strides[:-1]):
            raise AssertionError(f"not a tensor TMA can read: strides {strides}")
        self.view = torch.as_strided(t, tuple(shape), tuple(strides), t.storage_offset())
        self.block = list(block_shape)
        self.dtype, self.layout = t.dtype, layout if layout is not None else _Layout()
        self.block_type = types.SimpleNamespace(shape=self.block, nbytes=math.prod(self.block) * t.element_size())

    def box(self, coords) -> torch.Tensor:
        """The block at `coords`, zero outside the tensor (the descriptor's padding)."""
        box = torch.zeros(self.block, dtype=self.view.dtype)
        src, dst = [], []
        for c, b, n in zip(map(int, coords), self.block, self.view.shape, strict=True):
            lo, hi = max(c, 0), min(c + b, n)
            if hi <= lo:
                return box
            src.append(slice(lo, hi))
            dst.append(slice(lo - c, hi - c))
        box[tuple(dst)] = self.view[tuple(src)]
        return box


class _MMA:
    """A `warpgroup_mma` in flight: computed at its wait, its operands unchanged since."""

    def __init__(self, fn, reads: list[torch.Tensor]):
        self.fn, self.reads = fn, reads
        self.snapshot = [r.clone() for r in reads]
        self.value = None

    def resolve(self):
        if any(not torch.equal(r, s) for r, s in zip(self.reads, self.snapshot, strict=True)):
            raise Race("shared memory an MMA in flight reads changed before its wait")
        self.value = self.fn()


def _span(t: torch.Tensor) -> tuple[int, int]:
    end = sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True)) + 1
    return t.data_ptr(), t.data_ptr() + end * t.element_size()


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < b1 and b0 < a1


def _gl_binary(tensor_fn, int_fn):
    def f(a, b, propagate_nan=None):
        if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
            return tensor_fn(torch.as_tensor(a), torch.as_tensor(b))
        return int_fn(a, b)

    return f


def _check_offsets(offsets: torch.Tensor, mask=None) -> None:
    """No access below the pointer (a flat index would wrap to the storage's end)."""
    live = offsets if mask is None else offsets[torch.broadcast_to(torch.as_tensor(mask), offsets.shape)]
    if live.numel() and int(live.min()) < 0:
        raise IndexError(f"a pointer access {int(live.min())} elements before its tensor")


def _gl_load(ptr: _Pointer, mask=None, other=None):
    offsets = torch.as_tensor(ptr.offset).long()
    if mask is not None:
        offsets = torch.broadcast_to(offsets, torch.broadcast_shapes(offsets.shape, torch.as_tensor(mask).shape))
    _check_offsets(offsets, mask)
    if mask is None:
        return ptr.flat()[offsets]
    got = ptr.flat()[torch.where(mask, offsets, 0)]
    return torch.where(mask, got, 0 if other is None else other).to(got.dtype)


def _gl_store(ptr: _Pointer, value, mask=None):
    offsets, value = torch.broadcast_tensors(torch.as_tensor(ptr.offset).long(), torch.as_tensor(value))
    if mask is not None:
        keep = torch.broadcast_to(mask, offsets.shape)
        offsets, value = offsets[keep], value[keep]
    _check_offsets(offsets)
    flat = ptr.flat()
    flat[offsets] = value.to(flat.dtype)


def _gl_module(emu: GluonEmulator) -> types.SimpleNamespace:
    """`gl`: Gluon's tensor vocabulary on torch CPU tensors."""
    gl = types.SimpleNamespace(constexpr=object, static_range=range, exp=torch.exp, exp2=torch.exp2,
                               log=torch.log, sqrt=torch.sqrt, abs=torch.abs, int1=torch.bool,
                               uint64=torch.int64, erf=torch.erf)  # fmt: skip
    for name in ("float32", "float64", "bfloat16", "float16", "int8", "int16", "int32", "int64"):
        setattr(gl, name, getattr(torch, name))
    for name in ("NVMMADistributedLayout", "DotOperandLayout", "SliceLayout", "BlockedLayout",
                 "NVMMASharedLayout"):  # fmt: skip
        setattr(gl, name, _Layout)
    gl.program_id = lambda axis: emu.pid
    gl.num_programs = lambda axis: emu.programs
    gl.arange = lambda lo, hi, layout=None: torch.arange(lo, hi, dtype=torch.int32)
    gl.full = lambda shape, value, dtype, layout=None: torch.full(tuple(shape), value, dtype=dtype)
    gl.zeros = lambda shape, dtype, layout=None: torch.zeros(tuple(shape), dtype=dtype)
    gl.where = torch.where
    gl.maximum, gl.minimum = _gl_binary(torch.maximum, max), _gl_binary(torch.minimum, min)
    gl.sum = lambda x, axis: torch.sum(x, dim=axis)
    gl.reduce = lambda x, axis, combine: functools.reduce(combine, x.unbind(axis))
    gl.set_auto_layout = gl.convert_layout = lambda x, layout: x
    gl.permute = lambda x, order: x.permute(*order)
    gl.cdiv = lambda a, b: -(-a // b)
    gl.load, gl.store = _gl_load, _gl_store
    gl.allocate_shared_memory = emu.allocate
    gl.warp_specialize = emu.warp_specialize
    return gl


def _jit(fn=None, **options):
    """`gluon.jit`, with or without options (`do_not_specialize`): the function itself."""
    return fn if fn is not None else (lambda f: f)


class GluonEmulator:
    """Runs the `@gluon.jit` functions of a generated module (`source`) on the CPU."""

    def __init__(self, source: str, chained: bool = False):
        self.chained = chained
        """Let an MMA accumulate into an MMA still in flight of its warpgroup, and a wait
        pass such a result through (`acc = warpgroup_mma(.., acc, is_async=True)` then
        `acc = warpgroup_mma_wait(1, deps=(acc,))`: the hardware chains MMAs on one
        accumulator in issue order). A chained result is usable only as an accumulator."""
        self.cond = threading.Condition()
        self.local = threading.local()
        self.pid = self.programs = self.running = self.settling = 0
        self.failed = False
        self.mmas: list[_MMA] = []  # in flight, every partition's
        self.copies: list[tuple] = []  # TMA copies in flight
        self.barriers: list[_Barriers] = []  # the program's, in allocation order
        tree = ast.parse(source)
        functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)
                     and any(ast.unparse(d).startswith("gluon.jit") for d in n.decorator_list)]  # fmt: skip
        code = "\n\n".join(ast.get_source_segment(source, f) or "" for f in functions)
        # (the unsigned compare of indices: int64 with the sign bit flipped orders alike)
        code = code.replace(".to(gl.uint64, bitcast=True)", ".__xor__(-9223372036854775808)")
        assert "bitcast=True" not in code, "a bitcast the emulator does not model"
        self.ns = self._namespace()
        exec(compile(code, "<gluon>", "exec"), self.ns)

    def _namespace(self) -> dict:
        mbarrier = types.SimpleNamespace(
            MBarrierLayout=_BarrierLayout, init=lambda bar, count: bar.init(count), invalidate=lambda bar: None,
            wait=lambda bar, phase: bar.wait(phase), expect=lambda bar, nbytes: bar.expect(nbytes),
            arrive=lambda bar, count=1: bar.arrive(count))  # fmt: skip
        tl = types.SimpleNamespace(PropagateNan=types.SimpleNamespace(ALL="all", NONE="none"), constexpr=object)
        return {"gl": _gl_module(self), "tl": tl, "gluon": types.SimpleNamespace(jit=_jit),
                "mbarrier": mbarrier, "tma": types.SimpleNamespace(
                    make_tensor_descriptor=_Descriptor, async_load=self.tma_load,
                    async_copy_global_to_shared=self.tma_load),
                "_tma_load": self.tma_load, "tma_load": self.tma_load,
                "warpgroup_mma": self.mma, "warpgroup_mma_wait": self.mma_wait,
                "fence_async_shared": lambda: None}  # fmt: skip

    def launch(self, name: str, programs: int, args: list, constexprs: dict | None = None) -> None:
        fn = self.ns[name]
        args = [_Pointer(a) if isinstance(a, torch.Tensor) else a for a in args]
        self.programs = programs
        for pid in range(programs):
            self.pid, self.barriers, self.copies, self.failed = pid, [], [], False
            fn(*args, **(constexprs or {}))
            self.check_quiescent()

    # -- shared memory, partitions, barriers ------------------------------------------

    def allocate(self, dtype, shape, layout):
        if isinstance(layout, _BarrierLayout):
            self.barriers.append(_Barriers(shape[0], self))
            return self.barriers[-1]
        return _Shared(torch.zeros(tuple(shape), dtype=dtype))

    def warp_specialize(self, partitions, warps, regs=None):
        errors = []

        def run(fn, args):
            try:
                fn(*args)
            except BaseException as e:  # (re-raised below, in the launching thread)
                errors.append(e)
                self.failed = True
            finally:
                with self.cond:
                    self.running -= 1
                    self.cond.notify_all()

        self.running = len(partitions)
        threads = [threading.Thread(target=run, args=p, daemon=True) for p in partitions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
            assert not t.is_alive(), "a partition never finished"
        if errors:
            raise errors[0]

    def settle(self):
        """Let every other partition run until it waits (early releases show at once)."""
        with self.cond:
            self.running -= 1
            self.settling += 1
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.running == 0 or self.failed, timeout=30)
            self.settling -= 1
            self.running += 1

    def check_quiescent(self):
        """After a program: no copy in flight, each ring slot loaded as often as released
        (the barriers come in (ready, empty) pairs: `_entry`)."""
        assert not self.copies, "a TMA copy no partition waited for"
        for ready, empty in zip(self.barriers[0::2], self.barriers[1::2], strict=True):
            for r, e in zip(ready.bars, empty.bars, strict=True):
                assert not r.tx and r.pending == r.count and e.pending == e.count, "a barrier left mid-phase"
                assert r.phase == e.phase, f"a ring slot loaded {r.phase} times, released {e.phase} times"

    # -- TMA and wgmma --------------------------------------------------------------

    def tma_load(self, desc: _Descriptor, coords, bar: _Barrier, dest: _Shared):
        with self.cond:
            self.check_unread(dest.t)
            self.copies.append((desc, list(coords), bar, dest))

    def land_copy(self):
        """A copy in flight lands: the newest one a partition waits for, else the newest."""
        copy = ([c for c in self.copies if c[2].waiters] or self.copies)[-1]
        self.copies.remove(copy)
        desc, coords, bar, dest = copy
        box = desc.box(coords)
        self.check_unread(dest.t)
        dest.t.copy_(box)
        bar.tx -= box.numel() * box.element_size()
        assert bar.tx >= 0, "a TMA copy brought more bytes than its mbarrier expects"
        bar.complete()

    def check_unread(self, t: torch.Tensor):
        if any(_overlap(t, r) for m in self.mmas for r in m.reads):
            raise Race("a TMA copy writes shared memory an MMA in flight reads")

    def mma(self, a, b: _Shared, acc, use_acc=True, is_async=False):
        lhs = a.t if isinstance(a, _Shared) else a
        assert lhs.dtype == b.t.dtype, f"warpgroup_mma of {lhs.dtype} by {b.t.dtype}"
        if not hasattr(self.local, "mmas"):
            self.local.mmas = []
        reads = [b.t] + ([a.t] if isinstance(a, _Shared) else [])
        if isinstance(acc, _MMA):
            assert self.chained, "an MMA accumulates into an unfinished MMA's result"
            assert acc in self.local.mmas or acc.value is not None, "an MMA accumulates into another warpgroup's MMA"
            m = _MMA(lambda: (acc.value if use_acc else 0) + lhs.float() @ b.t.float(), reads)
        else:
            base = acc if use_acc else torch.zeros_like(acc)
            m = _MMA(lambda: base + lhs.float() @ b.t.float(), reads)
        self.local.mmas.append(m)
        self.mmas.append(m)
        return m

    def mma_wait(self, n=0, deps=()):
        while len(self.local.mmas) > n:  # (in issue order)
            m = self.local.mmas.pop(0)
            m.resolve()
            self.mmas.remove(m)
        out = []
        for d in deps:
            if isinstance(d, _MMA) and d.value is None and self.chained:
                assert d in self.local.mmas, "a wait on another warpgroup's MMA"
            elif isinstance(d, _MMA):
                assert d.value is not None, "a wait returned an MMA result still in flight"
                d = d.value
            out.append(d)
        return out[0] if len(out) == 1 else tuple(out)


def host_descriptor(tensor: torch.Tensor, block_shape, layout=None) -> _Descriptor:
    """What the emulated TMA copies read in place of a host `TensorDescriptor.from_tensor`
    (the tensor's shape and strides, boxes past its edges zero-filled)."""
    return _Descriptor(_Pointer(tensor), list(tensor.shape), list(tensor.stride()), block_shape, layout)


def emulate(source: str, name: str, programs: int, args: list, constexprs: dict | None = None,
            chained: bool = True) -> GluonEmulator:  # fmt: skip
    """Runs the `@gluon.jit` kernel `name` of a module's `source` on the CPU over `programs`
    programs, one after the other: tensors are pointers (written in place), descriptors
    `host_descriptor`s; `Deadlock`, `Race` or an `AssertionError` for a broken protocol.
    Returns the emulator (its namespace holds the kernel's functions)."""
    emu = GluonEmulator(source, chained=chained)
    emu.launch(name, programs, args, constexprs)
    return emu


@contextlib.contextmanager
def gluon_in_place_of_triton(prog: CompiledProgram, emitted: EmittedModule, source: str | None = None):
    """Within the block, each group with a Gluon twin runs it (emulated) where the host
    launches its Triton kernel: the same arguments, K and V through the host's `_tma`,
    half the programs. (The host's `_ON_GPU` stays False: the prelude's other helpers keep
    their interpreter branches.)"""
    python = prog.python
    emu = GluonEmulator(source or emitted.text)
    saved = {}

    def stand_in(sig):
        gpu = sig.gpu

        class Launch:
            def __getitem__(self, grid):
                def run(*args, **constexprs):
                    given = dict(zip([p.name for p in sig.params if p.kind is not CONSTEXPR], args, strict=True))
                    at = {p.tensor: given[p.name] for p in sig.params if p.kind is POINTER and p.name in given}
                    gpu_args = [python._tma(given[p.name]) if p.descriptor else given[p.name] if p.name in given
                                else at[p.tensor].shape[p.dim] for p in gpu.params]  # fmt: skip
                    # (a size the Triton kernel does not read is its tensor's: `host_sizes`)
                    size = dict(zip([p.name for p in gpu.params], gpu_args, strict=True))
                    programs = gpu.programs * math.prod(-(-size[n] // b) for n, b in gpu.grid_sizes)
                    if not gpu.grid_sizes:
                        assert math.prod(grid) == sig.programs == programs * 2
                    emu.launch(gpu.name, programs, gpu_args)

                return run

        return Launch()

    for sig in emitted.kernels:
        if sig.gpu is not None:
            saved[sig.name] = getattr(python, sig.name)
            setattr(python, sig.name, stand_in(sig))
    try:
        yield
    finally:
        for name, kernel in saved.items():
            setattr(python, name, kernel)


