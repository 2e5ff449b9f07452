"""Ahead-of-time compilation of Triton kernels to cubin, with no GPU present.

Triton's compiler does not need a GPU: given an explicit target
(``GPUTarget("cuda", 90, 32)``) it lowers a ``@triton.jit`` function through
TTIR -> TTGIR -> LLVM IR -> PTX and runs the ``ptxas`` that ships inside the
triton wheel (``triton/backends/nvidia/bin``) to get a cubin.  This module
wraps that so CI can check register use, spills and shared memory of the
kernels tilefuse generates without a GPU.

Version notes (the code feature-detects instead of comparing versions):

* ``ASTSource(fn, signature, constexprs=None, attrs=None)`` is the constructor
  in triton 3.6 and in 3.9 alike (3.2 and later; triton <= 3.1 took
  ``constants=`` and an ``AttrsDescriptor``, which is not supported here).
  ``signature`` maps every parameter name, in order, to a type string
  (``"*fp32"``, ``"i32"``, ...) or ``"constexpr"``; ``constexprs`` maps
  parameter names to values (``ASTSource`` turns them into ``(index,)``
  paths); ``attrs`` maps ``(index,)`` paths to ``[["tt.divisibility", 16]]``.
* Triton 3.9 warns (``UserWarning``) when ``enable_fp_fusion`` is left unset
  and ``TRITON_DEFAULT_FP_FUSION`` is not in the environment, so the option
  is always passed explicitly.
* For sm_90 and newer, triton 3.9 assembles with its bundled
  ``ptxas-blackwell`` (CUDA 13.x) and older targets with ``ptxas`` (12.x).
* Triton runs ``ptxas -v`` but throws the log away, and only fills in
  ``n_regs``/``n_spills`` when the cubin is loaded on a GPU; the register and
  local-memory numbers here come from ``cuobjdump --dump-resource-usage``
  on the cubin (also bundled), with ``ptxas -v`` as a fallback.

``TRITON_INTERPRET=1``: ``triton.jit`` then returns an ``InterpretedFunction``
(no ``cache_key``; ``triton.compile`` fails with ``AttributeError``).
:func:`compile_for_gpu` accepts such a function anyway:

* If ``triton.language`` itself was imported without the interpreter (the
  variable was set later, e.g. by a test's ``monkeypatch``), it re-imports the
  function's source file under another module name with the interpreter off
  (so helper ``@triton.jit`` functions it calls are ``JITFunction`` too) and
  compiles that in this process.
* If ``triton`` was imported with ``TRITON_INTERPRET=1``, triton's own library
  functions (``tl.sum``, ``tl.max``, ``tl.cdiv``, ... in
  ``triton/language/standard.py``) are ``InterpretedFunction`` objects for the
  rest of the process, and no kernel that calls them can be compiled here
  (the code generator fails on them; with the knob switched off, triton's
  gluon package even asserts on import).  Then the compilation runs in a
  child Python process without ``TRITON_INTERPRET`` (about a second more for
  importing triton there); the result has ``triton_kernel=None``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import os
import pickle
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "H100_MAX_SHARED_BYTES",
    "PTX_FEATURES",
    "CompiledKernel",
    "CubinCompileError",
    "ToolchainMissingError",
    "compile_for_gpu",
    "kernel_cache_dir",
    "load_jit_function",
]

#: Largest dynamic shared memory one block may opt into on H100/H200 (227 KiB).
H100_MAX_SHARED_BYTES = 232448

#: Labels reported in :attr:`CompiledKernel.ptx_has` and the PTX they look for.
PTX_FEATURES: dict[str, re.Pattern[str]] = {
    # Hopper warpgroup MMA (sm_90a).
    "wgmma": re.compile(r"\bwgmma\.mma_async"),
    # Ampere-style warp MMA.
    "mma.sync": re.compile(r"\bmma\.sync\b"),
    # Any tensor-core MMA: either of the two above.
    "mma": re.compile(r"\b(?:wgmma\.mma_async|mma\.sync)\b"),
    # Asynchronous global->shared copies; also matches the TMA bulk forms.
    "cp.async": re.compile(r"\bcp\.async\b"),
    "cp.async.bulk": re.compile(r"\bcp\.async\.bulk\b"),
    "ldmatrix": re.compile(r"\bldmatrix\b"),
    # 128-bit vector accesses to global memory, whatever the cache qualifiers.
    "ld.global.v4": re.compile(r"\bld\.global(?:\.[\w:]+)*?\.v4\b"),
    "ld.global.nc.v4": re.compile(r"\bld\.global\.nc(?:\.[\w:]+)*?\.v4\b"),
    "st.global.v4": re.compile(r"\bst\.global(?:\.[\w:]+)*?\.v4\b"),
    # The SFU's one-instruction tanh (bf16 tanh ops, emit_triton's _tanh_bf16).
    "tanh.approx": re.compile(r"\btanh\.approx\.f32\b"),
    # The SFU's exp2 flushing subnormal results (an online softmax's exponentials,
    # `SOFTMAX_EXP`), and the form with the subnormal range fix-up (`tl.exp`).
    "ex2.approx.ftz": re.compile(r"\bex2\.approx\.ftz\.f32\b"),
    "ex2.approx": re.compile(r"\bex2\.approx\.f32\b"),
    # libdevice's erff inlined (its branch's label): `prelude._erf` has none.
    "libdevice erff": re.compile(r"__nv_erff\b"),
}


class CubinCompileError(RuntimeError):
    """A kernel could not be compiled to a cubin (bad input or toolchain)."""


class ToolchainMissingError(CubinCompileError):
    """A piece of the CUDA toolchain (ptxas, cuobjdump) could not be run."""


@dataclass(frozen=True)
class CompiledKernel:
    """What ptxas made of one kernel for one target."""

    name: str
    registers: int  # per thread
    spills: int  # local memory per thread / 4, as triton's ``n_spills``
    shared_bytes: int  # shared memory triton launches with (metadata.shared)
    num_warps: int
    num_stages: int
    cubin_bytes: int
    ptx_has: frozenset[str]
    arch: int = 90
    # Shared memory ptxas put in the cubin itself.  On sm_90 kernels that use
    # shared memory this is the 1 KiB ``.nv.shared.reserved`` block, which
    # CUDA keeps outside the 227 KiB opt-in limit; it is not in shared_bytes.
    static_shared_bytes: int = 0
    local_bytes: int = 0  # per-thread stack + local memory (ptxas)
    compile_seconds: float = field(default=0.0, compare=False)
    ptx: str = field(default="", repr=False, compare=False)
    cubin: bytes = field(default=b"", repr=False, compare=False)
    # triton's own CompiledKernel (e.g. to load it on a GPU); None if absent.
    triton_kernel: Any = field(default=None, repr=False, compare=False)


# --------------------------------------------------------------------------
# Loading kernel source text
# --------------------------------------------------------------------------

_LOCK = threading.RLock()
_LOADED: dict[tuple[str, str, bool], ModuleType] = {}


def kernel_cache_dir() -> Path:
    """Folder where :func:`load_jit_function` writes kernel source files."""
    path = Path(tempfile.gettempdir()) / "tilefuse-kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _interpret_enabled() -> bool:
    try:
        from triton import knobs
    except ImportError:  # triton without knobs reads the variable directly
        return os.environ.get("TRITON_INTERPRET", "0") in ("1", "true", "True")
    return bool(knobs.runtime.interpret)


@contextlib.contextmanager
def _interpret_mode(enabled: bool) -> Iterator[None]:
    """Temporarily force ``triton.jit``'s interpreter switch on or off."""
    try:
        from triton import knobs
    except ImportError:
        knobs = None
    if knobs is not None and hasattr(knobs.runtime, "scope"):
        with knobs.runtime.scope():  # restores knobs and the environment
            knobs.runtime.interpret = enabled
            yield
        return
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1" if enabled else "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = old


def _import_file(path: Path, module_name: str, interpret: bool) -> ModuleType:
    """Import ``path`` as ``module_name`` with the interpreter on or off."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    key = (module_name, digest, interpret)
    with _LOCK:
        module = _LOADED.get(key)
        if module is not None:
            return module
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import kernel source {path}")
        module = importlib.util.module_from_spec(spec)
        previous = sys.modules.get(module_name)
        sys.modules[module_name] = module
        try:
            with _interpret_mode(interpret):
                spec.loader.exec_module(module)
        except BaseException:
            if previous is None:
                sys.modules.pop(module_name, None)
            else:
                sys.modules[module_name] = previous
            raise
        _LOADED[key] = module
        return module


def load_jit_function(
    source: str,
    name: str,
    module_name: str | None = None,
    *,
    interpret: bool | None = None,
) -> Any:
    """Exec Python source text defining ``@triton.jit`` kernels; return ``name``.

    ``triton.jit`` reads a function's source through :mod:`inspect`, so the
    text is written to ``<tmp>/tilefuse-kernels/<sha256>.py`` and imported from
    there (as ``module_name``, default ``tilefuse_kernel_<sha256[:16]>``, with
    ``_interp`` appended for the interpreter).
    Loading the same text again returns the same object.  ``interpret``
    (default: what ``TRITON_INTERPRET`` says) chooses between a
    ``JITFunction`` and triton's ``InterpretedFunction``.
    """
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    path = kernel_cache_dir() / f"{digest}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != source:
        # Write then rename, so a concurrent reader never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".py.tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        os.replace(tmp, path)
    if interpret is None:
        interpret = _interpret_enabled()
    if module_name is None:
        module_name = f"tilefuse_kernel_{digest[:16]}" + (
            "_interp" if interpret else ""
        )
    module = _import_file(path, module_name, interpret)
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"kernel source defines no {name!r}") from None


def _as_jit_function(fn: Any) -> Any:
    """Return a compilable ``JITFunction`` for ``fn`` (see module docstring)."""
    from triton.runtime.jit import JITFunction

    if isinstance(fn, JITFunction):
        return fn
    raw = getattr(fn, "fn", None)
    if raw is None or not hasattr(fn, "rewriter"):
        raise TypeError(
            f"expected a @triton.jit function, got {type(fn).__name__}; "
            "decorate it with triton.jit"
        )
    # An InterpretedFunction (TRITON_INTERPRET=1): import its file again with
    # the interpreter off, so it and the helpers it calls are JITFunctions.
    try:
        path = Path(inspect.getsourcefile(raw) or "")
    except TypeError:
        path = Path()
    if not path.is_file():
        raise CubinCompileError(
            f"{fn.__name__} was made by the Triton interpreter "
            "(TRITON_INTERPRET=1) and its source file cannot be found to "
            "re-import it for compilation; define it in a file or load it "
            "with load_jit_function"
        )
    module = _import_file(path, f"{raw.__module__}__tilefuse_gpu", interpret=False)
    jit = getattr(module, raw.__name__, None)
    if not isinstance(jit, JITFunction):
        raise CubinCompileError(
            f"re-importing {path} with TRITON_INTERPRET off gave no "
            f"@triton.jit function {raw.__name__!r}"
        )
    return jit


# --------------------------------------------------------------------------
# Compiling
# --------------------------------------------------------------------------


def _normalize_args(
    fn: Any, signature: Mapping[str, str], constexprs: Mapping[str, object]
) -> tuple[dict[str, str], dict[str, object]]:
    """Signature in parameter order, constexprs filled in and checked."""
    arg_names = list(fn.arg_names)
    unknown = sorted((set(signature) | set(constexprs)) - set(arg_names))
    if unknown:
        raise ValueError(f"{fn.__name__} has no parameter(s) {unknown}")
    params = {p.name: p for p in getattr(fn, "params", ())}
    sig: dict[str, str] = {}
    consts: dict[str, object] = {}
    for arg in arg_names:
        param = params.get(arg)
        if (
            arg in constexprs
            or signature.get(arg) == "constexpr"
            or getattr(param, "is_constexpr", False)
        ):
            if arg in constexprs:
                consts[arg] = constexprs[arg]
            elif param is not None and param.default is not inspect.Parameter.empty:
                consts[arg] = param.default
            else:
                raise ValueError(f"{fn.__name__}: no value for constexpr {arg!r}")
            sig[arg] = "constexpr"
        elif arg in signature:
            sig[arg] = signature[arg]
        else:
            raise ValueError(f"{fn.__name__}: no type for parameter {arg!r}")
    return sig, consts


def _make_source(
    fn: Any,
    signature: dict[str, str],
    constexprs: dict[str, object],
    divisible_by_16: Iterable[str],
) -> Any:
    from triton.compiler import ASTSource

    if getattr(fn, "is_gluon", lambda: False)():  # (a Gluon kernel: Gluon's own front end)
        from triton.experimental.gluon._runtime import GluonASTSource as ASTSource
    params = inspect.signature(ASTSource.__init__).parameters
    index = {arg: i for i, arg in enumerate(fn.arg_names)}
    attrs = {(index[arg],): [["tt.divisibility", 16]] for arg in divisible_by_16}
    if "constexprs" in params:  # triton >= 3.2, 3.6 and 3.9 included
        return ASTSource(fn, signature, constexprs=constexprs, attrs=attrs)
    raise CubinCompileError(
        "this triton's ASTSource takes no 'constexprs=' argument "
        f"(parameters: {list(params)}); triton >= 3.2 is needed"
    )


def _backend_options(target: Any, wanted: dict[str, Any]) -> dict[str, Any]:
    """Drop options this triton's backend does not know (with a check)."""
    from triton.compiler.compiler import make_backend

    # Passing enable_fp_fusion keeps triton 3.9 from warning about its default.
    probe = {k: v for k, v in wanted.items() if k == "enable_fp_fusion"}
    known = getattr(
        make_backend(target).parse_options(probe), "__dataclass_fields__", None
    )
    if known is None:
        return wanted
    missing = {"num_warps", "num_stages"} - set(known)
    if missing:
        raise CubinCompileError(f"triton backend lacks options {sorted(missing)}")
    return {k: v for k, v in wanted.items() if k in known}


def _tool_path(name: str) -> str | None:
    try:
        from triton import knobs

        return getattr(knobs.nvidia, name.replace("-", "_")).path
    except Exception:
        pass
    import triton

    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name
    if bundled.is_file():
        return str(bundled)
    return shutil.which(name)


def _ptxas_path(arch: int) -> str | None:
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        return get_ptxas(arch).path
    except Exception:
        return _tool_path("ptxas")


_CUOBJDUMP_RE = re.compile(
    r"Function\s+(?P<name>\S+?):\s*REG:(?P<reg>\d+)\s+STACK:(?P<stack>\d+)"
    r"\s+SHARED:(?P<shared>\d+)\s+LOCAL:(?P<local>\d+)"
)


def _resource_usage(
    name: str, cubin: bytes, ptx: str, arch: int
) -> tuple[int, int, int]:
    """(registers, local bytes per thread, static shared bytes) of ``name``."""
    with tempfile.TemporaryDirectory(prefix="tilefuse-cubin-") as tmp:
        cuobjdump = _tool_path("cuobjdump")
        if cuobjdump:
            path = Path(tmp) / "kernel.cubin"
            path.write_bytes(cubin)
            out = subprocess.run(
                [cuobjdump, "--dump-resource-usage", str(path)],
                capture_output=True,
                text=True,
                check=False,
            )
            rows = {m["name"]: m for m in _CUOBJDUMP_RE.finditer(out.stdout)}
            row = rows.get(name) or (
                next(iter(rows.values())) if len(rows) == 1 else None
            )
            if row is not None:
                local = int(row["stack"]) + int(row["local"])
                return int(row["reg"]), local, int(row["shared"])
        # Fallback: assemble the PTX again with ptxas -v and read its log.
        ptxas = _ptxas_path(arch)
        if not ptxas:
            raise ToolchainMissingError("neither cuobjdump nor ptxas found")
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        suffix = "a" if arch >= 90 else ""
        out = subprocess.run(
            [ptxas, "-v", f"--gpu-name=sm_{arch}{suffix}", str(src), "-o", os.devnull],
            capture_output=True,
            text=True,
            check=False,
        )
    log = out.stdout + out.stderr
    regs = re.search(r"Used (\d+) registers", log)
    stack = re.search(r"(\d+) bytes stack frame", log)
    smem = re.search(r"(\d+) bytes smem", log)
    if regs is None:
        raise CubinCompileError(f"cannot read resource usage of {name}:\n{log}")
    return (
        int(regs[1]),
        int(stack[1]) if stack else 0,
        int(smem[1]) if smem else 0,
    )


def _language_is_interpreted() -> bool:
    """True when ``triton.language`` was imported with ``TRITON_INTERPRET=1``."""
    import triton.language.standard as standard
    from triton.runtime.jit import JITFunction

    probe = getattr(standard, "sum", None) or getattr(standard, "cdiv", None)
    return probe is not None and not isinstance(probe, JITFunction)


_CHILD_ERRORS: dict[str, type[Exception]] = {
    "ValueError": ValueError,
    "TypeError": TypeError,
    "AttributeError": AttributeError,
    "ToolchainMissingError": ToolchainMissingError,
}


def _compile_in_subprocess(
    fn: Any,
    signature: Mapping[str, str],
    constexprs: Mapping[str, object],
    kwargs: dict[str, Any],
) -> CompiledKernel:
    """Run :func:`compile_for_gpu` in a fresh Python without the interpreter."""

    raw = getattr(fn, "fn", None)
    try:
        path = inspect.getsourcefile(raw) if raw is not None else None
    except TypeError:
        path = None
    if not path or not Path(path).is_file():
        raise CubinCompileError(
            f"cannot find the source file of {fn!r} to compile it in a "
            "process without TRITON_INTERPRET"
        )
    request = {
        "path": str(Path(path).resolve()),
        "module": raw.__module__,
        "name": raw.__name__,
        "signature": dict(signature),
        "constexprs": dict(constexprs),
        "kwargs": kwargs,
    }
    try:
        result = run_in_child(_CHILD_MAIN, request, "tilefuse-compile-")
    except (pickle.PicklingError, TypeError, AttributeError) as e:
        raise CubinCompileError(f"cannot pass the compile request to a child process: {e}") from e
    if result[0] == "ok":
        return result[1]
    _, kind, message = result
    raise _CHILD_ERRORS.get(kind, CubinCompileError)(message)


_CHILD_MAIN = "from tilefuse.gpu.aot import _child_main; _child_main()"


def run_in_child(child_main: str, request: object, prefix: str) -> object:
    """
    Run `child_main` (Python source) in a fresh interpreter without
    TRITON_INTERPRET, passing `request` and returning its result (both pickled
    through files named on its command line).
    """
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([package_root, *(p for p in sys.path if p)])
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        in_path, out_path = Path(tmp) / "request.pkl", Path(tmp) / "result.pkl"
        in_path.write_bytes(pickle.dumps(request))
        proc = subprocess.run(
            [sys.executable, "-c", child_main, str(in_path), str(out_path)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if not out_path.exists():
            raise CubinCompileError(
                f"compiler child process failed (exit {proc.returncode}):\n"
                f"{proc.stderr[-4000:]}"
            )
        return pickle.loads(out_path.read_bytes())


def _child_main() -> None:
    """Entry point of the child process started by :func:`_compile_in_subprocess`."""
    import dataclasses
    import pickle

    in_path, out_path = sys.argv[1], sys.argv[2]
    request = pickle.loads(Path(in_path).read_bytes())
    try:
        module: Any = None
        try:  # an importable module: import it normally (relative imports)
            module = importlib.import_module(request["module"])
            file = getattr(module, "__file__", None)
            if file is None or Path(file).resolve() != Path(request["path"]):
                module = None
        except ImportError:
            module = None
        if module is None:
            name = f"{request['module']}__tilefuse_gpu"  # never __main__
            module = _import_file(Path(request["path"]), name, interpret=False)
        fn = getattr(module, request["name"])
        kernel = compile_for_gpu(
            fn, request["signature"], request["constexprs"], **request["kwargs"]
        )
        result: tuple[Any, ...] = (
            "ok",
            dataclasses.replace(kernel, triton_kernel=None),
        )
    except Exception as e:
        result = ("error", type(e).__name__, str(e))
    Path(out_path).write_bytes(pickle.dumps(result))


def compile_for_gpu(
    fn: Any,
    signature: Mapping[str, str],
    constexprs: Mapping[str, object],
    *,
    arch: int = 90,
    num_warps: int = 4,
    num_stages: int = 3,
    divisible_by_16: Iterable[str] | None = None,
    enable_fp_fusion: bool = True,
    options: Mapping[str, Any] | None = None,
) -> CompiledKernel:
    """Compile a ``@triton.jit`` function ahead of time for sm_{arch} without a GPU.

    ``signature`` gives each runtime parameter's type (``"*fp16"``, ``"i32"``,
    ...); constexpr parameters may be left out of it (they are marked
    ``"constexpr"``) and take their value from ``constexprs`` or their default.
    Giving an ordinary int parameter a value in ``constexprs`` specializes it,
    as triton's launcher does for ints equal to 1 (unit strides).
    ``divisible_by_16`` names the parameters triton may assume are multiples
    of 16 (bytes for pointers); by default every pointer, which is what a
    launch with freshly allocated torch tensors gets.  ``options`` passes
    further backend options (``maxnreg``, ``num_ctas``, ...) to triton.
    """
    import time

    import triton
    from triton.backends.compiler import GPUTarget

    if _language_is_interpreted():
        return _compile_in_subprocess(
            fn,
            signature,
            constexprs,
            {
                "arch": arch,
                "num_warps": num_warps,
                "num_stages": num_stages,
                "divisible_by_16": None
                if divisible_by_16 is None
                else list(divisible_by_16),
                "enable_fp_fusion": enable_fp_fusion,
                "options": None if options is None else dict(options),
            },
        )
    interpreted = _interpret_enabled()
    jit = _as_jit_function(fn)
    sig, consts = _normalize_args(jit, signature, constexprs)
    if divisible_by_16 is None:
        divisible_by_16 = [a for a, t in sig.items() if t.startswith("*")]
    else:
        divisible_by_16 = list(divisible_by_16)
        bad = [a for a in divisible_by_16 if sig.get(a, "constexpr") == "constexpr"]
        if bad:
            raise ValueError(f"divisible_by_16 names no runtime parameter: {bad}")
    target = GPUTarget("cuda", arch, 32)
    wanted = {
        **(options or {}),
        "num_warps": num_warps,
        "num_stages": num_stages,
        "enable_fp_fusion": enable_fp_fusion,
    }
    backend_options = _backend_options(target, wanted)
    unknown = sorted(set(options or ()) - set(backend_options))
    if unknown:
        raise ValueError(f"this triton's CUDA backend has no options {unknown}")
    src = _make_source(jit, sig, consts, divisible_by_16)
    start = time.perf_counter()
    ctx = _interpret_mode(False) if interpreted else contextlib.nullcontext()
    try:
        with ctx:
            kernel = triton.compile(src, target=target, options=backend_options)
    except FileNotFoundError as e:  # a toolchain binary is missing
        raise ToolchainMissingError(f"CUDA toolchain piece missing: {e}") from e
    except Exception as e:
        if type(e).__name__ == "PTXASError":  # e.g. too few registers (maxnreg)
            raise CubinCompileError(f"{jit.__name__}: {e}") from e
        raise
    seconds = time.perf_counter() - start
    asm = kernel.asm
    if "cubin" not in asm:
        raise CubinCompileError(f"triton produced no cubin (stages: {sorted(asm)})")
    cubin = asm["cubin"]
    ptx = asm.get("ptx", "")
    meta = kernel.metadata
    name = getattr(meta, "name", jit.__name__)
    registers, local_bytes, static_shared = _resource_usage(name, cubin, ptx, arch)
    return CompiledKernel(
        name=name,
        registers=registers,
        spills=local_bytes // 4,
        shared_bytes=int(meta.shared),
        num_warps=int(meta.num_warps),
        num_stages=int(meta.num_stages),
        cubin_bytes=len(cubin),
        ptx_has=frozenset(k for k, pat in PTX_FEATURES.items() if pat.search(ptx)),
        arch=arch,
        static_shared_bytes=static_shared,
        local_bytes=local_bytes,
        compile_seconds=seconds,
        ptx=ptx,
        cubin=cubin,
        triton_kernel=kernel,
    )
