"""Ahead-of-time compilation of Triton kernels to sm_90 cubin, without a GPU."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("triton")

from tilefuse.gpu.aot import (
    H100_MAX_SHARED_BYTES,
    CompiledKernel,
    ToolchainMissingError,
    compile_for_gpu,
    kernel_cache_dir,
    load_jit_function,
)

ADD_SOURCE = """
import triton
import triton.language as tl


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, _add(x, y), mask=mask)
"""

ADD_SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}
# Triton's launcher marks an int divisible by 16 when it is (here n = 2**20);
# without that the mask blocks 128-bit accesses.
ADD_DIVISIBLE = ("x_ptr", "y_ptr", "out_ptr", "n")

REDUCE_SOURCE = """
import triton
import triton.language as tl


@triton.jit
def rowmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + tl.program_id(0), tl.max(x, axis=0) + tl.sum(x, axis=0))
"""

REDUCE_SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}

MATMUL_SOURCE = """
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, lda, ldb, ldc,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ka = k + rk
        a = tl.load(a_ptr + rm[:, None] * lda + ka[None, :],
                    mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.0)
        b = tl.load(b_ptr + ka[:, None] * ldb + rn[None, :],
                    mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    c = acc.to(tl.float16)
    tl.store(c_ptr + rm[:, None] * ldc + rn[None, :], c,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
"""

MATMUL_SIGNATURE = {
    "a_ptr": "*fp16",
    "b_ptr": "*fp16",
    "c_ptr": "*fp16",
    **{name: "i32" for name in ("M", "N", "K", "lda", "ldb", "ldc")},
}
MATMUL_TILE = {"BM": 64, "BN": 64, "BK": 32}
# What a launch on contiguous torch tensors with M, N, K multiples of 16 sees
# (triton's launcher marks such ints divisible by 16); K's divisibility is
# what lets the pipeliner use cp.async for the A and B tiles.
MATMUL_DIVISIBLE = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "lda", "ldb", "ldc")


def _compile(*args, **kwargs) -> CompiledKernel:
    try:
        return compile_for_gpu(*args, **kwargs)
    except ToolchainMissingError as e:  # pragma: no cover - toolchain-specific
        pytest.skip(f"cannot compile for sm_90 here: {e}")


@pytest.fixture(scope="module", autouse=True)
def _fresh_triton_cache(tmp_path_factory):
    """Compile for real (not from ~/.triton/cache), with the interpreter off."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITON_CACHE_DIR", str(tmp_path_factory.mktemp("triton-cache")))
        mp.delenv("TRITON_INTERPRET", raising=False)
        yield


@pytest.fixture(scope="module")
def add_kernel() -> CompiledKernel:
    fn = load_jit_function(ADD_SOURCE, "add_kernel")
    return _compile(
        fn,
        ADD_SIGNATURE,
        {"BLOCK": 1024},
        arch=90,
        num_warps=4,
        divisible_by_16=ADD_DIVISIBLE,
    )


@pytest.fixture(scope="module")
def matmul_kernel() -> CompiledKernel:
    fn = load_jit_function(MATMUL_SOURCE, "matmul_kernel")
    return _compile(
        fn,
        MATMUL_SIGNATURE,
        MATMUL_TILE,
        arch=90,
        num_warps=4,
        num_stages=3,
        divisible_by_16=MATMUL_DIVISIBLE,
    )


def test_elementwise_add(add_kernel: CompiledKernel) -> None:
    k = add_kernel
    assert k.name == "add_kernel"
    assert k.registers > 0
    assert k.spills == 0
    assert 0 <= k.shared_bytes <= H100_MAX_SHARED_BYTES
    assert (k.num_warps, k.num_stages) == (4, 3)
    assert k.cubin_bytes == len(k.cubin) > 0
    assert "mma" not in k.ptx_has
    # 1024 fp32 over 128 threads, 16-byte aligned pointers: 128-bit accesses.
    assert {"ld.global.v4", "st.global.v4"} <= k.ptx_has
    assert ".target sm_90" in k.ptx


def test_divisibility_reaches_triton(add_kernel: CompiledKernel) -> None:
    """By default only pointers are aligned: n unknown, so scalar accesses."""
    fn = load_jit_function(ADD_SOURCE, "add_kernel")
    k = _compile(fn, ADD_SIGNATURE, {"BLOCK": 1024})
    assert "ld.global.v4" not in k.ptx_has
    assert k.spills == 0
    assert k.cubin != add_kernel.cubin


def test_matmul_tile(matmul_kernel: CompiledKernel) -> None:
    k = matmul_kernel
    assert k.registers > 0
    assert 0 < k.shared_bytes <= H100_MAX_SHARED_BYTES
    assert k.ptx_has & {"wgmma", "mma.sync"}
    assert "mma" in k.ptx_has
    assert k.num_stages == 3
    # 3 stages of a 64x32 and a 32x64 fp16 tile, loaded with cp.async.
    assert "cp.async" in k.ptx_has
    assert k.shared_bytes >= 3 * (64 * 32 + 32 * 64) * 2


@pytest.fixture(scope="module")
def spilling_kernel() -> CompiledKernel:
    """The matmul with unknown strides needs > 100 registers: cap it at 64."""
    fn = load_jit_function(MATMUL_SOURCE, "matmul_kernel")
    return _compile(fn, MATMUL_SIGNATURE, MATMUL_TILE, options={"maxnreg": 64})


def test_spills_are_reported(spilling_kernel: CompiledKernel) -> None:
    assert spilling_kernel.registers <= 64
    assert spilling_kernel.spills > 0
    assert spilling_kernel.local_bytes == 4 * spilling_kernel.spills


def test_unknown_option_is_rejected() -> None:
    fn = load_jit_function(ADD_SOURCE, "add_kernel")
    with pytest.raises(ValueError, match="no options"):
        compile_for_gpu(fn, ADD_SIGNATURE, {"BLOCK": 64}, options={"bogus": 1})


def test_interpreter_env_still_compiles(
    monkeypatch: pytest.MonkeyPatch, add_kernel: CompiledKernel
) -> None:
    """Under TRITON_INTERPRET=1 triton.jit gives an InterpretedFunction."""
    from triton.runtime.jit import JITFunction

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    fn = load_jit_function(ADD_SOURCE, "add_kernel")
    assert not isinstance(fn, JITFunction)
    k = _compile(fn, ADD_SIGNATURE, {"BLOCK": 1024}, divisible_by_16=ADD_DIVISIBLE)
    assert k.registers == add_kernel.registers
    assert k.ptx_has == add_kernel.ptx_has
    # The interpreted kernel still runs on the CPU.
    torch = pytest.importorskip("torch")
    x = torch.arange(100, dtype=torch.float32)
    y = torch.full((100,), 0.5)
    out = torch.empty(100)
    fn[(1,)](x, y, out, 100, BLOCK=128)
    assert torch.equal(out, x + y)


def test_load_jit_function_caches_by_content() -> None:
    from triton.runtime.jit import JITFunction

    fn = load_jit_function(ADD_SOURCE, "add_kernel", interpret=False)
    assert isinstance(fn, JITFunction)
    assert load_jit_function(ADD_SOURCE, "add_kernel", interpret=False) is fn
    digest = hashlib.sha256(ADD_SOURCE.encode()).hexdigest()
    assert (kernel_cache_dir() / f"{digest}.py").read_text() == ADD_SOURCE
    with pytest.raises(AttributeError, match="no 'missing'"):
        load_jit_function(ADD_SOURCE, "missing", interpret=False)


def test_signature_errors() -> None:
    fn = load_jit_function(ADD_SOURCE, "add_kernel", interpret=False)
    with pytest.raises(ValueError, match="no type for parameter 'n'"):
        compile_for_gpu(
            fn, {k: v for k, v in ADD_SIGNATURE.items() if k != "n"}, {"BLOCK": 64}
        )
    with pytest.raises(ValueError, match="no value for constexpr 'BLOCK'"):
        compile_for_gpu(fn, ADD_SIGNATURE, {})
    with pytest.raises(ValueError, match="no parameter"):
        compile_for_gpu(fn, {**ADD_SIGNATURE, "z": "i32"}, {"BLOCK": 64})


def test_matches_driver_on_gpu(
    add_kernel: CompiledKernel,
    matmul_kernel: CompiledKernel,
    spilling_kernel: CompiledKernel,
) -> None:
    """On a real GPU, the numbers agree with what the CUDA driver reports."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("not an sm_90 GPU")
    for k in (add_kernel, matmul_kernel, spilling_kernel):
        tk = k.triton_kernel
        if tk is None:
            pytest.skip(
                "compiled in a child process (triton imported for the interpreter)"
            )
        tk._init_handles()
        assert (k.registers, k.spills) == (tk.n_regs, tk.n_spills), k.name


def test_triton_imported_for_the_interpreter(tmp_path: Path) -> None:
    """TRITON_INTERPRET=1 before triton is imported: tl.sum etc. are then
    InterpretedFunctions for good, so compile_for_gpu compiles in a child."""
    script = textwrap.dedent(
        f"""
        import json
        import triton.language as tl
        from triton.runtime.jit import JITFunction
        from tilefuse.gpu.aot import compile_for_gpu, load_jit_function

        assert not isinstance(tl.standard.sum, JITFunction)
        fn = load_jit_function({REDUCE_SOURCE!r}, "rowmax_kernel")
        k = compile_for_gpu(fn, {REDUCE_SIGNATURE!r}, {{"BLOCK": 256}})
        print(json.dumps([type(fn).__name__, k.name, k.registers, k.spills]))
        """
    )
    repo = str(Path(__file__).resolve().parents[1])
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "TRITON_CACHE_DIR": str(tmp_path),
        "PYTHONPATH": os.pathsep.join([repo, *filter(None, sys.path)]),
        "PYTHONWARNINGS": "error",
    }
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    kind, name, registers, spills = json.loads(proc.stdout.splitlines()[-1])
    assert (kind, name) == ("InterpretedFunction", "rowmax_kernel")
    assert registers > 0
    assert spills == 0
