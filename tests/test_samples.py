"""Every sample parses, round-trips, and evaluates like its hand-written numpy model."""

import time
from pathlib import Path

import numpy as np
import pytest
from xdsl.printer import Printer

from tests.numpy_graphs import GRAPHS
from tilefuse.frontend.parse import parse_module
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.frontend.specialize import read_header
from tilefuse.ir.context import make_context
from tilefuse.oracle.compare import relative_error, tolerance
from tilefuse.oracle.reference import evaluate

SAMPLES = Path(__file__).parent.parent / "samples"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.mlir"))


def printed(module) -> str:
    import io

    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def check_against_numpy(name: str, dims=None, dtype=None, seed=0):
    path = SAMPLES / f"{name}.mlir"
    header = read_header(path.read_text())
    module = load_program(path, dims, dtype)
    inputs = random_inputs(module, seed)
    outputs = evaluate(module, inputs)
    expected = GRAPHS[name](*[x.astype(np.float64) for x in inputs],
                            dims={**header.dims, **(dims or {})})
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected, strict=True):
        assert out.shape == ref.shape
        err = relative_error(out, ref)
        assert err < tolerance(dtype or header.dtype or "f32"), (name, err)


def test_all_seed_graphs_present():
    expected = {"relu_add", "elementwise_chain", "bias_gelu", "softmax", "layernorm",
                "rmsnorm", "linear_bias_relu", "mlp", "attention", "transformer_block",
                "four_layernorms"}
    assert expected <= set(NAMES)
    assert set(NAMES) == set(GRAPHS)
    dtypes = {read_header((SAMPLES / f"{n}.mlir").read_text()).dtype for n in NAMES}
    assert {"f32", "f16", "bf16"} <= dtypes


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(name):
    module = load_program(SAMPLES / f"{name}.mlir")
    first = printed(module)
    second = printed(parse_module(make_context(), first, "printed"))
    assert first == second


@pytest.mark.parametrize("name", NAMES)
def test_reference_matches_numpy(name):
    start = time.perf_counter()
    check_against_numpy(name)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    ("name", "dims"),
    [
        ("softmax", {"M": 5, "N": 1000}),
        ("layernorm", {"N": 130}),
        ("attention", {"S": 33, "D": 8}),
        ("linear_bias_relu", {"K": 17}),
        ("transformer_block", {"S": 9}),
    ],
)
def test_respecialised_sizes_match_numpy(name, dims):
    check_against_numpy(name, dims=dims, seed=1)


@pytest.mark.parametrize(("name", "dtype"), [("softmax", "bf16"), ("relu_add", "f16"),
                                             ("layernorm", "f32")])
def test_respecialised_dtype_matches_numpy(name, dtype):
    check_against_numpy(name, dtype=dtype, seed=2)


def test_evaluator_detects_a_wrong_program():
    # The oracle must be able to fail: swap softmax's max for a min.
    text = (SAMPLES / "softmax.mlir").read_text()
    broken = text.replace("arith.maximumf", "arith.minimumf").replace("arith.divf", "arith.mulf")
    module = parse_module(make_context(), broken, "broken")
    inputs = random_inputs(module)
    out = evaluate(module, inputs)[0]
    ref = GRAPHS["softmax"](inputs[0].astype(np.float64), dims={})[0]
    assert relative_error(out, ref) > 1e-2
