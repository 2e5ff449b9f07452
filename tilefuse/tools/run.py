"""
`tilefuse-run FILE.mlir`: compile with the default pipeline and run the kernels.

```
tilefuse-run samples/softmax.mlir --check
tilefuse-run samples/softmax.mlir --set-dim N=8192 --set-dim M=4096 --set-dtype bf16 --bench
```

Inputs come from `--inputs IN.npz` (arrays `arg0`, `arg1`, ... in argument
order, each of its argument's dtype; bf16 and f16 arguments may arrive as float32
and are cast; any other dtype is an error) or are drawn at random
(`--seed N`, standard normal). `--check` compares every output with the
reference evaluator, as a whole and element by element (`_judge`), and exits 1
on a mismatch; `--save-outputs OUT.npz` writes
`out0`, ... (bf16 as float32); `--bench` (GPU only) times the program and each
kernel next to the cost model's prediction; `--autotune` (GPU only) times the
model's top tile candidates of each kernel and keeps the fastest (cached);
`--dump-dir DIR` (or `$TILEFUSE_DEBUG_DIR`) keeps the IR after every stage, the
report and the kernels (`tilefuse/dump.py`).
"""

from __future__ import annotations

import argparse
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tilefuse.analysis.cost.target import DEFAULT_TARGET, TargetError
from tilefuse.backend.triton.emit import torch_dtype
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.frontend.specialize import SpecializeError
from tilefuse.ir.diagnostics import (
    ArgumentError,
    CompileError,
    RuntimeCheckError,
    os_error_message,
)
from tilefuse.ir.dtypes import torch_float_name
from tilefuse.ir.module import entry_function
from tilefuse.ir.structured import element_type
from tilefuse.oracle.compare import (
    ELEMENT_FACTOR,
    relative_error,
    tolerance,
    worst_element,
)
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime.autotune import autotune
from tilefuse.runtime.bench import bench_program
from tilefuse.runtime.compiled import compile, gpu_available
from tilefuse.tools.opt import parse_dim_options, version_line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tilefuse-run", description=__doc__.split("\n\n")[0])
    p.add_argument("file", type=Path, help="an MLIR file")
    p.add_argument("--target", default="auto",
                   help="GPU to compile for (default auto: the GPU at hand's, else " + DEFAULT_TARGET + ")")
    p.add_argument("--inputs", metavar="IN.npz", help="arrays arg0, arg1, ...")
    p.add_argument("--save-outputs", metavar="OUT.npz", help="write out0, out1, ...")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    p.add_argument("--check", action="store_true", help="compare with the reference")
    p.add_argument("--bench", action="store_true", help="time the kernels (GPU)")
    p.add_argument("--autotune", action="store_true",
                   help="time the model's top tile candidates per kernel, keep the fastest (GPU; cached)")  # fmt: skip
    p.add_argument("--set-dim", action="append", default=[], metavar="NAME=SIZE")
    p.add_argument("--set-dtype", metavar="TYPE")
    p.add_argument("--dump-dir", metavar="DIR",
                   help="write the IR after every stage, the report and the kernels to a "
                        "folder under DIR (default $TILEFUSE_DEBUG_DIR)")  # fmt: skip
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.add_argument("--version", action="version", version=version_line("tilefuse-run"))
    return p


def load_inputs(args: argparse.Namespace, module) -> list[np.ndarray]:
    if args.inputs is None:
        return random_inputs(module, args.seed)
    f = entry_function(module)
    not_npz = f"--inputs {args.inputs} is not an .npz archive of arrays arg0, arg1, ... (numpy.savez)"
    try:
        data = np.load(args.inputs)
    except (ValueError, EOFError, zipfile.BadZipFile) as e:
        raise CompileError(not_npz) from e
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise CompileError(f"{not_npz}: it holds one array (numpy.save)")
    with data:
        n = len(f.function_type.inputs.data)
        missing = [f"arg{i}" for i in range(n) if f"arg{i}" not in data]
        if missing:
            held = ", ".join(data.files) or "no arrays"
            raise CompileError(f"{args.inputs} lacks {', '.join(missing)} (arrays arg0, arg1, "
                               f"... in argument order); it holds {held}")  # fmt: skip
        try:
            arrays = [np.asarray(data[f"arg{i}"]) for i in range(n)]
        except (ValueError, zipfile.BadZipFile) as e:
            raise CompileError(f"--inputs {args.inputs}: {e}") from e
    for i, (x, t) in enumerate(zip(arrays, f.function_type.inputs.data, strict=True)):
        hint = f.body.block.args[i].name_hint
        name = f"arg{i}{f' (%{hint})' if hint else ''} of @{f.sym_name.data}"
        _check_dtype(args.inputs, name, x, t)
    return arrays


ALSO_ACCEPTED = {"bfloat16": ("float32",), "float16": ("float16", "float32")}
"""numpy dtypes an `--inputs` array may have, by torch dtype, where it is not the same:
numpy has no bfloat16, and `--save-outputs` writes 16-bit floats as float32."""


def _check_dtype(inputs: str, argument: str, x: np.ndarray, t) -> None:
    """An array of another dtype than its argument's is refused, not converted
    (a float array for an integer argument would be truncated)."""
    wanted = torch_dtype(t).removeprefix("torch.")
    accepted = ALSO_ACCEPTED.get(wanted, (wanted,))
    if x.dtype.name not in accepted:
        raise CompileError(
            f"--inputs {inputs}: {argument} is {element_type(t)} (numpy "
            f"{' or '.join(accepted)}), but the array is {x.dtype.name}: save it with "
            f".astype(np.{accepted[0]})"
        )


def to_torch(arrays: Sequence[np.ndarray], module, device: str):
    import torch

    f = entry_function(module)
    out = []
    for x, t in zip(arrays, f.function_type.inputs.data, strict=True):
        dtype = getattr(torch, torch_dtype(t).split(".")[1])
        if not dtype.is_floating_point:  # bool masks, integers
            out.append(torch.from_numpy(np.array(x, order="C")).to(device=device, dtype=dtype))
            continue
        host = np.float64 if dtype == torch.float64 else np.float32  # bf16 has no numpy type
        out.append(torch.from_numpy(np.array(x, host, order="C")).to(device=device, dtype=dtype))
    return out


def check_outputs(args: argparse.Namespace, dims, module, inputs, outputs) -> int:
    """Compare with the reference evaluator; 1 on a mismatch.

    The reference rounds every op's result to its type, as the IR says; kernels
    keep fp32 inside a kernel. For an ill-conditioned 16-bit program (a softmax
    of large scores) the two differ by more than the tolerance while the kernels
    are closer to the exact result: a 16-bit mismatch is then judged against the
    program evaluated in f64 (when its header lets it be re-specialised)."""
    refs, exact = evaluate(module, inputs), None
    status = 0
    for i, (out, ref) in enumerate(zip(outputs, refs, strict=True)):
        if not out.dtype.is_floating_point:  # integers and booleans: exactly
            wrong = int((out.cpu().numpy().astype(np.int64) != np.asarray(ref).astype(np.int64)).sum())
            status |= wrong > 0
            print(f"  out{i}: {wrong} of {out.numel()} elements differ (exact) {'MISMATCH' if wrong else 'ok'}")
            continue
        dt = torch_float_name(str(out.dtype))
        got = out.double().cpu().numpy()
        ok, line = _judge(got, ref, dt, f"  out{i}:")
        if not ok and dt in ("f16", "bf16"):
            exact = exact if exact is not None else _evaluate_in_f64(args, dims, inputs)
            if exact is not None:
                ok, line64 = _judge(got, exact[i], dt, ";")
                line += (f"{line64} against the program evaluated in f64"
                         f"{' (the reference rounds op by op)' if ok else ''}")  # fmt: skip
        status |= not ok
        print(f"{line} {'ok' if ok else 'MISMATCH'}")
    return status


def _judge(got: np.ndarray, ref, dt: str, prefix: str) -> tuple[bool, str]:
    """Within tolerance as a whole (relative error) and element by element
    (`compare.worst_element`, ELEMENT_FACTOR tolerances)? -> (ok, text)."""
    tol = tolerance(dt)
    err = relative_error(got, ref)
    text = f"{prefix} relative error {err:.2e} (tolerance {tol:.0e})"
    worst, at = worst_element(got, ref)
    if worst > ELEMENT_FACTOR * tol:
        text += f", element {list(at)} off by {worst:.2e} of its size (bound {ELEMENT_FACTOR * tol:.0e})"
    return err <= tol and worst <= ELEMENT_FACTOR * tol, text


def _evaluate_in_f64(args: argparse.Namespace, dims, inputs) -> list | None:
    try:
        exact = load_program(args.file, dims, "f64")
    except (CompileError, SpecializeError):
        return None  # no dtype header to re-specialise
    return evaluate(exact, [np.asarray(x, np.float64) for x in inputs])


def run(args: argparse.Namespace) -> int:
    import torch

    dims = parse_dim_options(args.set_dim)
    module = load_program(args.file, dims, args.set_dtype)
    device = "cuda" if gpu_available() else "cpu"
    inputs = load_inputs(args, module)
    tensors = to_torch(inputs, module, device)
    if args.autotune and device == "cuda":

        prog, tuned = autotune(args.file, tensors, args.target, dims, args.set_dtype)
        print(tuned.format())
    else:
        if args.autotune:
            print("--autotune needs a GPU: using the model's tiles")
        prog = compile(args.file, args.target, dims, args.set_dtype, dump_dir=args.dump_dir)
    start = time.perf_counter()
    outputs = prog(*tensors)
    if device == "cuda":
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - start
    mode = "GPU" if device == "cuda" else "CPU (Triton interpreter)"
    print(f"{args.file}: {len(prog.kernels)} kernel(s) on {mode}; compile "
          f"{prog.compile_seconds:.2f} s, first run {elapsed * 1e3:.1f} ms")  # fmt: skip
    if not entry_function(module).function_type.outputs.data:
        outputs = ()  # the generated function returns None
        if args.check:
            print("  the function returns no results: nothing to check")
    status = check_outputs(args, dims, module, inputs, outputs) if args.check else 0
    if args.save_outputs:
        np.savez(args.save_outputs, **{f"out{i}": (o.float() if o.dtype.is_floating_point else o).cpu().numpy()
                                       for i, o in enumerate(outputs)})  # fmt: skip
        names = ", ".join(f"out{i}" for i in range(len(outputs))) or "no arrays"
        print(f"  wrote {names} to {args.save_outputs}")
    if args.bench:
        if device != "cuda":
            print("  --bench needs a GPU: skipped")
        else:

            print(bench_program(prog, tensors, prog.target))
    return status


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (CompileError, SpecializeError, TargetError, ArgumentError, RuntimeCheckError) as e:
        if args.debug:
            raise
        text = str(e)
        print(text if text.startswith(("error", "/")) or ": error:" in text else f"error: {text}",
              file=sys.stderr)  # fmt: skip
        return 1
    except OSError as e:
        print(os_error_message(e), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
