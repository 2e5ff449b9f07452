"""IREE as a second oracle from outside: every test program, sample and a fixed set
of random programs that upstream MLIR accepts is compiled by IREE (llvm-cpu) and run
on the same random inputs as the numpy reference and our kernels (interpreter); the
three must agree within the program's tolerance (integers exactly).

Newer upstream MLIR dropped the named elementwise ops (`linalg.exp`, ...) and
`matmul_transpose_b`, and changed `linalg.map`'s region: a program it cannot parse
is given to IREE after our `linalg-generalize` (so IREE also checks that stage).
A program that does not parse even then is skipped with the reason, and
`test_iree_compares_most_programs` counts them, so a broken IREE cannot skip
everything. Where IREE is wrong, the program is an explicit xfail naming why.
"""

import random
from pathlib import Path

import ml_dtypes  # numpy's bfloat16, a dependency of iree-base-runtime
import numpy as np
import pytest
from iree import compiler as iree_compiler
from iree import runtime as iree_runtime
from iree.compiler import ir as iree_ir
from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import ModuleOp

from tests import test_reference as reference_tests
from tests.device import DEVICE
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.frontend.specialize import specialize
from tilefuse.ir.module import entry_function
from tilefuse.ir.resources import module_text
from tilefuse.ir.structured import element_type
from tilefuse.oracle.compare import relative_error, tolerance
from tilefuse.oracle.reference import evaluate
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime.compiled import compile
from tilefuse.testing.random_programs import generate, render
from tilefuse.tools.run import to_torch

ROOT = Path(__file__).parent.parent
FILES = sorted((ROOT / "tests" / "programs").glob("*.mlir")) + sorted(
    (ROOT / "samples").glob("*.mlir")
)
RANDOM_SEEDS = range(24)
LOW_PRECISION_SEEDS = range(100, 108)  # f16 and bf16, alternately
MIN_COMPARED = 100
"""Programs IREE must accept and compare, of the 108: today 102 (`returned_empty` is
skipped, its result has undefined contents; the 6 in XFAIL are IREE's mistakes)."""

IREE_FLAGS = [
    "--iree-llvmcpu-target-cpu=host",
    "--iree-input-demote-f64-to-f32=false",  # f64 stays f64 (IREE demotes it by default)
]

XFAIL = {
    "math_edges": "IREE expands math.powf through exp(b * log(a)) (llvm/llvm-project#132202) "
    "and misses libm's special cases (C99 F.9.4.4): pow(1, NaN), pow(-1, inf), pow(-0.0, -1), "
    "pow(-2, inf) come out inf, 0, inf, 0, not 1, 1, -inf, inf (and pow(-2, 3) is NaN)",
    "f64_compute": "IREE's llvm-cpu backend has no f64 math.tanh: it links to an undefined "
    "symbol tanh (unless f64 is demoted to f32, IREE's default)",
    "math_functions": "IREE's llvm-cpu backend has no libm: math.log10 links to an "
    "undefined symbol log10f",
    "truncf_rounds": "IREE's iree-convert-bf16-arith-to-f32 folds extf(truncf(x)) to x: "
    "arith.truncf to bf16 does not round (x - bf16(x) becomes 0)",
    "fpowi_signs": "IREE gets math.fpowi with an exponent read from a tensor wrong on "
    "every element: (-2)**-3, (-0.0)**-1, 0**-2, (-1.5)**5 come out 1, inf, inf, 0, "
    "not -0.125, -inf, inf, -7.59375",
    "truncf_of_constant": "IREE's iree-convert-bf16-arith-to-f32 folds extf(truncf(c)) "
    "to c: 1.00390625 is not rounded to the bf16 1.0",
}


def _random_text(seed: int) -> str:
    if seed in LOW_PRECISION_SEEDS:
        dtype = ("f16", "bf16")[seed % 2]
        return render(generate(random.Random(seed), max_ops=6, max_dim=40, dtype=dtype))
    return render(generate(random.Random(seed), max_ops=6, max_dim=64))


def _cases() -> list:
    cases = [(p.stem, specialize(p.read_text())) for p in FILES]
    cases += [(f"random_{s}", _random_text(s)) for s in (*RANDOM_SEEDS, *LOW_PRECISION_SEEDS)]
    return [
        pytest.param(text, id=name, marks=[pytest.mark.xfail(reason=XFAIL[name], strict=True)]
                     if name in XFAIL else [])
        for name, text in cases
    ]  # fmt: skip


CASES = _cases()


def upstream_text(text: str) -> tuple[str | None, str]:
    """The program as upstream MLIR (IREE's build) parses it: the source, else
    the source after `linalg-generalize`; (None, why) when neither parses."""
    if _parse_error(text) is None:
        return text, "source"
    module = load_program(text)
    run_pipeline(module, until="linalg-generalize")
    generalized = module_text(module)  # (with the blobs of dense_resource constants)
    if (error := _parse_error(generalized)) is None:
        return generalized, "generalized"
    return None, f"upstream MLIR does not parse it, even generalized: {error}"


def _parse_error(text: str) -> str | None:
    with iree_ir.Context():
        try:
            iree_ir.Module.parse(text)
        except iree_ir.MLIRError as e:
            return str(e).splitlines()[1].strip() if "\n" in str(e) else str(e)
    return None


def _defined_results(module: ModuleOp) -> list[bool]:
    """Which results have defined contents (not a `tensor.empty` returned as is)."""
    ret = entry_function(module).body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    return [not isinstance(v.owner, tensor.EmptyOp) for v in ret.operands]


def _host_dtype(t) -> np.dtype:
    names = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i1": np.bool_,
             "bf16": ml_dtypes.bfloat16, "i8": np.int8, "i16": np.int16, "i32": np.int32,
             "i64": np.int64, "index": np.int64}  # fmt: skip
    return np.dtype(names[str(element_type(t))])


def run_iree(text: str, module: ModuleOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Compile `text` with IREE for the CPU and run its entry function on `inputs`."""
    vmfb = iree_compiler.compile_str(text, target_backends=["llvm-cpu"], extra_args=IREE_FLAGS)
    f = entry_function(module)
    ctx = iree_runtime.SystemContext(config=iree_runtime.Config("local-sync"))
    ctx.add_vm_module(iree_runtime.VmModule.copy_buffer(ctx.instance, vmfb))
    types = f.function_type.inputs.data
    args = [np.asarray(x).astype(_host_dtype(t)) for x, t in zip(inputs, types, strict=True)]
    results = ctx.modules.module[f.sym_name.data](*args)
    results = results if isinstance(results, tuple | list) else [results]
    return [np.asarray(r.to_host()) for r in results]


def _tolerance(module: ModuleOp) -> float:
    """The tolerance of the program's least precise floating-point type."""
    f = entry_function(module)
    types = {str(element_type(t)) for t in (*f.function_type.inputs, *f.function_type.outputs)}
    return max([tolerance(t) for t in types if t in ("f16", "bf16", "f32", "f64")] + [1e-12])


def assert_agree(out: np.ndarray, ref: np.ndarray, tol: float, what: str) -> None:
    if ref.dtype.kind in "biu":
        np.testing.assert_array_equal(out.astype(ref.dtype), ref, err_msg=what)
        return
    err = relative_error(out.astype(np.float64), ref)
    assert err <= tol, f"{what}: relative error {err:.2e} over {tol:.0e}"


@pytest.mark.parametrize("text", CASES)
def test_iree_agrees_with_the_reference_and_the_kernels(text):
    upstream, form = upstream_text(text)
    if upstream is None:
        pytest.skip(form)
    module = load_program(text)
    defined = _defined_results(module)
    if not any(defined):
        pytest.skip("every result is a tensor.empty: undefined contents")
    inputs = random_inputs(module, seed=0)
    ref = evaluate(module, inputs)
    iree = run_iree(upstream, module, inputs)
    kernels = [o.cpu().double().numpy() if o.dtype.is_floating_point else o.cpu().numpy()
               for o in compile(text)(*to_torch(inputs, module, DEVICE))]  # fmt: skip
    tol = _tolerance(module)
    assert len(iree) == len(ref) == len(kernels)
    for i, (a, r, k) in enumerate(zip(iree, ref, kernels, strict=True)):
        if defined[i]:
            assert_agree(a, r, tol, f"result {i}: IREE ({form}) against the reference")
            assert_agree(k, a.astype(np.float64) if r.dtype.kind == "f" else a, tol,
                         f"result {i}: our kernels against IREE")  # fmt: skip


def test_iree_compares_most_programs():
    """A broken IREE install (or an upstream change) cannot skip everything."""
    skipped = {}
    for case in CASES:
        (text,) = case.values
        upstream, why = upstream_text(text)
        if upstream is None or not any(_defined_results(load_program(text))):
            skipped[case.id] = why if upstream is None else "undefined results"
    compared = len(CASES) - len(skipped) - len(XFAIL)
    assert compared >= MIN_COMPARED, f"only {compared} programs compared; skipped: {skipped}"


@pytest.mark.parametrize("name", ["KEEPDIM", "IRREGULAR", "INDEX", "TILED_ROW_SUM", "INSERT"])
def test_iree_agrees_with_the_reference_on_its_own_tests(name):
    """The reference's own test programs, upstream MLIR as written: an output written
    at a constant column (our compiler refuses it), a reduction with no recognised
    combiner, `linalg.index`, `scf.for` over slices, `tensor.insert_slice`."""
    text = getattr(reference_tests, name)
    module = load_program(text)
    inputs = random_inputs(module, seed=0)
    outs = run_iree(text, module, inputs)
    for i, (out, ref) in enumerate(zip(outs, evaluate(module, inputs), strict=True)):
        assert_agree(out, ref, 1e-5, f"result {i}: IREE against the reference")
