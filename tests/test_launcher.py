"""The static launcher's argument handling (launches themselves need a GPU:
tests/test_gpu_compile.py and the samples on the device)."""

import types

import pytest

from tilefuse.runtime.launcher import (
    StaticLauncher,
    Unsupported,
    argument_picker,
    kernel_parameters,
)


def _src(names, signature, constants=()):
    fn = types.SimpleNamespace(arg_names=list(names))
    return types.SimpleNamespace(fn=fn, signature=signature, constants=dict.fromkeys(constants, 1))


def test_constexprs_and_specialised_constants_are_not_parameters():
    # Triton 3.6 keys by name; a stride equal to 1 became a constant.
    src = _src(["x", "x_s0", "x_s1", "n", "y", "BLOCK"],
               {"x": "*bf16", "x_s0": "i32", "x_s1": "constexpr", "n": "i64", "y": "*fp32",
                "BLOCK": "constexpr"},
               constants=["x_s1"])  # fmt: skip
    assert kernel_parameters(src) == ([0, 1, 3, 4], "OilO")


def test_index_keys_and_tuple_constants():
    # Older Triton keys the signature by position and constants by 1-tuples.
    src = _src(["a", "b", "c"], {0: "*fp16", 1: "i32", 2: "fp32"}, constants=[(1,)])
    assert kernel_parameters(src) == ([0, 2], "Of")


def test_an_unknown_argument_type_is_refused():
    with pytest.raises(Unsupported, match="nvTmaDesc"):
        kernel_parameters(_src(["d"], {"d": "nvTmaDesc"}))


@pytest.mark.parametrize("metadata", [
    {"profile_scratch_size": 8}, {"launch_pdl": True},
    {"launch_cooperative_grid": True}, {"num_ctas": 2},
])  # fmt: skip
def test_kernels_needing_more_than_a_plain_launch_are_refused(metadata):
    meta = types.SimpleNamespace(num_warps=4, shared=0, **metadata)
    with pytest.raises(Unsupported):
        StaticLauncher(_src(["x"], {"x": "*fp32"}), meta)


def test_without_torch_s_launcher_triton_s_is_used():
    """The CPU build of torch has no `_StaticCudaLauncher`: constructing ours
    raises ImportError, which `static_launchers` answers with Triton's."""
    try:
        from torch._C import _StaticCudaLauncher  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError):
            StaticLauncher(_src([], {}), types.SimpleNamespace(num_warps=4, shared=0))
    else:
        pytest.skip("this torch has the static launcher")


class _Compiled:
    """A compiled kernel as Triton returns it from a launch."""

    def __init__(self, kept, scratch=0, global_scratch=0):
        run = object.__new__(StaticLauncher)
        run.kept, run.scratch, run.pick = kept, (None,) * scratch, argument_picker(kept)
        run.global_scratch, run.buffers = global_scratch, {}
        run.num_warps, run.shared, run.arg_types = 4, 0, "O" * len(kept)
        run.calls = []
        run.launch_kernel = lambda *a: run.calls.append(a)
        self._run, self.function = run, 1234


class _Jit:
    """A JITFunction: `k[grid](...)` launches through Triton (counted)."""

    def __init__(self, compiled):
        self.compiled, self.slow = compiled, 0

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.slow += 1
            return self.compiled

        return launch


def _fast(kept=(0, 2)):
    from tilefuse.runtime.launcher import FastKernel

    jit = _Jit(_Compiled(list(kept), scratch=1))
    fast = FastKernel(jit)
    fast._device, fast._stream = (lambda: 0), (lambda device: 7)
    return jit, fast


def test_a_repeated_launch_goes_straight_to_the_compiled_kernel():
    import torch

    jit, fast = _fast()
    x, y = torch.zeros(64), torch.zeros(64)
    fast[(4,)](x, 1, y, DOT=3, num_warps=4)
    assert jit.slow == 1
    fast[(4,)](y, 1, x, DOT=3, num_warps=4)
    assert jit.slow == 1
    # Only the kept arguments, tensors as their addresses, then a null scratch pointer;
    # grid padded to 3-D.
    assert jit.compiled._run.calls == [
        (1234, 4, 1, 1, 4, 0, "OO", (y.data_ptr(), x.data_ptr(), None), 7)]


def test_the_launch_key_holds_what_the_drivers_pointer_check_guarded():
    """Tensors reach torch's launcher as addresses, which it does not check are device
    addresses: the key tells a GPU tensor from another, so a CPU tensor where a CUDA one
    launched before goes through Triton's launch, which refuses it."""
    import torch

    _, fast = _fast()
    x = torch.zeros(64)
    key, flat = fast._signature((x, 3, 2.5))
    assert key == ((torch.float32, True, False), 3, (float, 2.5))
    assert flat == [x.data_ptr(), 3, 2.5]


def test_anything_triton_would_specialise_differently_goes_through_triton():
    import torch

    jit, fast = _fast()
    x, y = torch.zeros(64), torch.zeros(64)
    fast[(4,)](x, 1, y)
    fast[(4,)](x[1:], 1, y)  # 4-byte aligned: not divisible by 16
    fast[(4,)](x, 16, y)  # an integer not 1, divisible by 16
    fast[(4,)](x, 17, y)  # not divisible by 16
    fast[(4,)](x, 2**31, y)  # 64 bits
    fast[(4,)](x.double(), 1, y)  # another dtype
    fast[(4,)](x, 1, y, num_warps=8)  # other keywords
    assert jit.slow == 7 and jit.compiled._run.calls == []


def test_sizes_and_grids_that_change_go_straight_to_the_compiled_kernel():
    """A dynamic program's sizes, strides and grid change every call; Triton's
    specialisation of an integer (1, divisible by 16, 32 or 64 bits) does not."""
    import torch

    jit, fast = _fast()
    x, y = torch.zeros(64), torch.zeros(64)
    fast[(4,)](x, 17, y)
    fast[(9,)](x, 33, y)
    fast[(5,)](x, 16 * 7, y)
    assert jit.slow == 2
    assert [c[1:4] for c in jit.compiled._run.calls] == [(9, 1, 1)]


def test_a_launch_hook_sends_every_launch_through_triton():
    import torch
    from triton import knobs

    jit, fast = _fast()
    x = torch.zeros(64)
    fast[(4,)](x, 1, x)
    hook = knobs.runtime.launch_enter_hook
    knobs.runtime.launch_enter_hook = lambda metadata: None
    try:
        fast[(4,)](x, 1, x)
    finally:
        knobs.runtime.launch_enter_hook = hook
    assert jit.slow == 2


def test_a_launch_on_another_device_goes_through_triton():
    import torch

    jit, fast = _fast()
    x = torch.zeros(64)
    fast[(4,)](x, 1, x)
    fast._device = lambda: 1
    fast[(4,)](x, 1, x)
    assert jit.slow == 2


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a GPU")
def test_direct_launches_match_the_first_call_on_the_gpu():
    import torch

    from tilefuse.runtime.compiled import compile as tf_compile

    prog = tf_compile("samples/layernorm.mlir", "h200", {"M": 300, "N": 1000}, "f32")
    args = [torch.randn(300, 1000, device="cuda"), torch.randn(1000, device="cuda"),
            torch.randn(1000, device="cuda")]  # fmt: skip
    first = prog(*args)
    assert sum(len(getattr(prog.python, k).launches) for k in prog.kernels) == len(prog.kernels)
    again = prog(*args)
    assert all(a.equal(b) for a, b in zip(first, again, strict=True))


@pytest.mark.parametrize("signature, constants", [
    ({"x": "*fp32", "t": ("*fp32", "constexpr")}, [(1, 1)]),  # a tuple argument
    ({"x": "*fp32", "h": "fp16"}, []),  # 16-bit float scalars travel as 16 bits
])  # fmt: skip
def test_arguments_the_launcher_cannot_pass_are_refused(signature, constants):
    with pytest.raises(Unsupported):
        kernel_parameters(_src(list(signature), signature, constants))


@pytest.mark.parametrize("metadata", [
    {"instrumentation_mode": "gsan"},
    {"target": types.SimpleNamespace(backend="hip")},
])  # fmt: skip
def test_instrumented_or_non_cuda_kernels_are_refused(metadata):
    meta = types.SimpleNamespace(num_warps=4, shared=0, **metadata)
    with pytest.raises(Unsupported):
        StaticLauncher(_src(["x"], {"x": "*fp32"}), meta)


def test_the_static_launcher_only_inside_static_launchers_on_this_thread(monkeypatch):
    """`_LauncherChoice` (installed as Triton's `launcher_cls`) builds ours only
    while the calling thread is inside `static_launchers()`."""
    import threading

    import torch

    from tilefuse.runtime import launcher

    monkeypatch.setattr(torch._C, "_StaticCudaLauncher",
                        types.SimpleNamespace(_launch_kernel=print), raising=False)  # fmt: skip
    choice = launcher._LauncherChoice(lambda src, metadata: "triton's")
    src, meta = _src(["x"], {"x": "*fp32"}), types.SimpleNamespace(num_warps=4, shared=0)
    assert choice(src, meta) == "triton's"
    launcher._LOCAL.active = True
    try:
        assert isinstance(choice(src, meta), StaticLauncher)
        other = []
        thread = threading.Thread(target=lambda: other.append(choice(src, meta)))
        thread.start()
        thread.join()
        assert other == ["triton's"]
        refused = types.SimpleNamespace(num_warps=4, shared=0, launch_pdl=True)
        assert choice(src, refused) == "triton's"
    finally:
        launcher._LOCAL.active = False


def test_unhashable_arguments_and_grid_functions_go_through_triton():
    jit, fast = _fast()
    fast[(4,)]([1, 2], 1, [3])
    fast[(4,)]([1, 2], 1, [3])
    assert jit.slow == 2 and jit.compiled._run.calls == []
    grid = lambda meta: (4,)  # noqa: E731
    assert fast[grid] is not None and fast.launches == {}


def test_a_kernel_with_global_scratch_gets_a_buffer_per_program(monkeypatch):
    """A kernel making TMA descriptors takes global scratch: a buffer of
    `programs x global_scratch_size` bytes, as Triton's launcher asks its allocator
    for, in the first scratch slot; made once per stream and size."""
    from tilefuse.runtime import launcher

    asked = []
    monkeypatch.setattr(launcher, "scratch_buffer", lambda n: asked.append(n) or f"buffer{n}")
    run = _Compiled([0], scratch=2, global_scratch=128)._run
    for stream in (7, 7, 9):
        run(6, 2, 1, stream, 1234, None, None, None, None, "x")
    assert asked == [6 * 2 * 128, 6 * 2 * 128]  # stream 7 once, stream 9 once
    assert run.calls[0][7] == ("x", "buffer1536", None)


def test_past_the_remembered_launches_new_sizes_still_go_straight_to_the_kernel():
    import torch

    from tilefuse.runtime.launcher import MAX_LAUNCHES

    jit, fast = _fast()
    x, y = torch.zeros(64), torch.zeros(64)
    for n in range(1, 3 * MAX_LAUNCHES):
        fast[(n,)](x, 16 * n + 3, y)  # (never 1, never divisible by 16)
    assert jit.slow == 1 and len(fast.launches) == MAX_LAUNCHES and len(fast.alike) == 1
    assert len(jit.compiled._run.calls) == 3 * MAX_LAUNCHES - 2


@pytest.mark.parametrize("kept", [[], [1], [0, 2, 3]])
def test_the_argument_picker_keeps_the_kept_arguments_in_order(kept):
    args = ("a", "b", "c", "d")
    assert argument_picker(kept)(args) == tuple(args[i] for i in kept)
