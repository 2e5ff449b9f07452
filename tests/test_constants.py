"""Tensor constants as data: read from their bytes (`ir/constants.py`), kept as
blobs (`ir/resources.py`), handed to the host function as tensors built once
(`CONSTANTS`), never printed into the generated module as lists."""

import re
import time

import numpy as np
import pytest
import torch
from xdsl.dialects import arith

from tests.device import DEVICE, on_device
from tilefuse.frontend.program import load_program
from tilefuse.frontend.resources import read_resources, split_resources
from tilefuse.ir.constants import constant_array, is_splat, stored_elements
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.resources import module_text
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime.compiled import compile, kernels_replaced
from tilefuse.testing.zoo import GPT2Block

WEIGHTS = np.arange(1, 13, dtype=np.float32).reshape(3, 4) / 8


def blob(a: np.ndarray) -> str:
    return "0x04000000" + np.ascontiguousarray(a).tobytes().hex()


TWO_CONSTANTS = f"""
#map = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @f(%x: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {{
  %w = arith.constant dense_resource<weights> : tensor<3x4xf32>
  %b = arith.constant dense<[0.5, -1.25, 2.0, 3.0]> : tensor<4xf32>
  %z = arith.constant dense<0.0> : tensor<3x4xf32>
  %e = tensor.empty() : tensor<3x4xf32>
  %y = linalg.generic {{indexing_maps = [#map, #map, #row, #map], iterator_types = ["parallel", "parallel"]}}
      ins(%x, %w, %b : tensor<3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) outs(%e : tensor<3x4xf32>) {{
  ^bb0(%a: f32, %c: f32, %d: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %m, %d : f32
    linalg.yield %s : f32
  }} -> tensor<3x4xf32>
  %y2 = linalg.add ins(%y, %z : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  return %y2, %w : tensor<3x4xf32>, tensor<3x4xf32>
}}
{{-#
  dialect_resources: {{
    builtin: {{
      weights: "{blob(WEIGHTS)}"
    }}
  }}
#-}}
"""


def constants(module) -> dict[str, arith.ConstantOp]:
    return {op.result.name_hint: op for op in module.walk() if isinstance(op, arith.ConstantOp)}


def test_the_reader_gives_each_constant_from_its_bytes():
    c = constants(load_program(TWO_CONSTANTS))
    assert constant_array(c["w"]).tolist() == WEIGHTS.tolist()
    assert stored_elements(c["w"]).dtype == np.float32 and not is_splat(c["w"])
    assert constant_array(c["b"]).tolist() == [0.5, -1.25, 2.0, 3.0]
    assert is_splat(c["z"]) and stored_elements(c["z"]).shape == (3, 4)


@pytest.mark.parametrize("t,literal,values,stored", [
    ("bf16", "[1.5, -2.0, 1.00390625]", [1.5, -2.0, 1.0], [0x3FC0, 0xC000, 0x3F80]),
    ("i64", f"[{2**62 + 1}, -3, 0]", [2**62 + 1, -3, 0], [2**62 + 1, -3, 0]),
    ("i1", "[true, false, true]", [-1, 0, -1], [True, False, True]),
    ("f16", "[0.1, 65504.0, -0.0]", [0.0999755859375, 65504.0, -0.0], None),
])  # fmt: skip
def test_dense_elements_in_their_storage_type(t, literal, values, stored):
    """bf16 as its bits (rounded to nearest even by the parser), i1 as bool."""
    text = f"""func.func @f() -> tensor<3x{t}> {{
  %c = arith.constant dense<{literal}> : tensor<3x{t}>
  return %c : tensor<3x{t}>
}}"""
    (c,) = constants(load_program(text)).values()
    assert constant_array(c).tolist() == values
    if stored is not None:
        assert stored_elements(c).tolist() == stored


def test_generated_source_lists_no_data_and_the_kernels_read_the_constants():
    prog = compile(TWO_CONSTANTS)
    assert "torch.tensor(" not in prog.source and "0.5, -1.25" not in prog.source
    assert "CONSTANTS = (('w', (3, 4), torch.float32), ('b', (4,), torch.float32),)" in prog.source
    assert re.search(r"def f\(x, \*, constants, dot_dtype=None\):\n.*\n.*\n    w, b, = constants",
                     prog.source)  # fmt: skip
    # a splat is one number in the kernel's payload (scalar-operands), not host data
    assert "torch.full((), 0.0" not in prog.source
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    y, w = prog(on_device(x))
    ref_y, ref_w = evaluate(load_program(TWO_CONSTANTS), [x])
    np.testing.assert_allclose(y.cpu().numpy(), ref_y, rtol=1e-6)
    assert w.cpu().numpy().tolist() == ref_w.tolist() == WEIGHTS.tolist()


def test_constants_are_built_once_and_shared_by_every_call():
    prog = compile(TWO_CONSTANTS)
    assert not prog.constants  # built at the first call (not inside a fake-tensor trace)
    x = on_device(torch.ones(3, 4))
    prog(x)
    (built,) = prog.constants.values()
    assert built[0].device.type == DEVICE
    seen = []

    def spy(_, kernel):
        class Launch:
            def __getitem__(self, grid):
                def launch(*args, **kw):
                    seen.append(args)
                    return kernel[grid](*args, **kw)

                return launch

        return Launch()

    with kernels_replaced(prog.python, spy):
        prog(x)
        prog(x)
    firsts, seconds = seen[0], seen[-1]
    ws = [a for a in firsts if isinstance(a, torch.Tensor) and a is built[0]]
    assert ws and any(a is built[0] for a in seconds)
    assert list(prog.constants.values()) == [built]  # nothing rebuilt


def test_a_returned_constant_is_a_copy_the_caller_may_write():
    prog = compile(TWO_CONSTANTS)
    _, w = prog(on_device(torch.ones(3, 4)))
    w.fill_(7.0)
    y, w2 = prog(on_device(torch.ones(3, 4)))
    assert w2.cpu().numpy().tolist() == WEIGHTS.tolist()
    assert y.cpu()[0, 0].item() == pytest.approx(0.125 + 0.5)


def test_same_keys_in_two_files_keep_their_own_bytes():
    """torch-mlir names different models' weights alike: handles are per content."""
    other = TWO_CONSTANTS.replace(blob(WEIGHTS), blob(-WEIGHTS))
    a, b = load_program(TWO_CONSTANTS), load_program(other)
    assert constant_array(constants(a)["w"]).tolist() == WEIGHTS.tolist()
    assert constant_array(constants(b)["w"]).tolist() == (-WEIGHTS).tolist()
    again = load_program(TWO_CONSTANTS)  # the same file: the same handles
    assert str(constants(again)["w"].value) == str(constants(a)["w"].value)
    (_, w_a), (_, w_b) = compile(TWO_CONSTANTS)(on_device(torch.ones(3, 4))), compile(other)(
        on_device(torch.ones(3, 4)))  # fmt: skip
    assert w_a.cpu().numpy().tolist() == (-w_b.cpu()).numpy().tolist() == WEIGHTS.tolist()


def test_the_resources_section_is_read_apart_from_the_body():
    body, section, line = split_resources(TWO_CONSTANTS)
    assert body.rstrip().endswith("}") and line == TWO_CONSTANTS[: TWO_CONSTANTS.index("{-#")].count("\n") + 1
    assert read_resources(section) == {"weights": blob(WEIGHTS)}
    assert split_resources("func.func @f() { return }") == ("func.func @f() { return }", None, 0)
    two = read_resources('dialect_resources: {builtin: {a: "0x01", "b.c": "0x02",}}')
    assert two == {"a": "0x01", "b.c": "0x02"}


@pytest.mark.parametrize("section,message", [
    ('external_resources: {}', r"tilefuse reads `dialect_resources` only, not `external_resources`"),
    ('dialect_resources: {foo: {a: "0x00"}}', r"tilefuse reads the builtin dialect's resources only, not foo's"),
    ('dialect_resources: {builtin: {a "0x00"}}', r"expected `:`"),
    ('dialect_resources: {builtin: {a: 0x00}}', r"expected a blob string"),
])  # fmt: skip
def test_a_malformed_resources_section_is_a_located_error(section, message):
    text = TWO_CONSTANTS[: TWO_CONSTANTS.index("{-#")] + "{-#\n  " + section + "\n#-}\n"
    line = text.count("\n", 0, text.index(section)) + 1
    with pytest.raises(CompileError, match=rf"<input>:{line}: .*section: {message}"):
        load_program(text)


def test_a_blob_of_partial_elements_is_refused_at_its_constant():
    text = TWO_CONSTANTS.replace(blob(WEIGHTS), blob(WEIGHTS) + "00")
    with pytest.raises(CompileError, match=r"<input>:5:3: .*dense_resource<weights> is not a blob of "
                                           r"f32: 49 bytes are not whole elements"):  # fmt: skip
        load_program(text)


def test_printed_ir_parses_back_to_the_same_bytes():
    module = load_program(TWO_CONSTANTS)
    text = module_text(module)
    assert "torch" not in text and 'weights_' in text
    again = load_program(text)
    assert constant_array(constants(again)["w"]).tolist() == WEIGHTS.tolist()
    assert str(constants(again)["w"].value) == str(constants(module)["w"].value)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch.export's own
def test_a_model_with_33_mb_of_weights_compiles_in_seconds_to_a_small_module():
    """torch-mlir's fx importer bakes parameters as dense_resource constants
    (a 60 MB file); the kernels are not run (the interpreter would take minutes)."""
    fx = pytest.importorskip("torch_mlir.fx")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                                torch.nn.Linear(4096, 1024)).eval()  # fmt: skip
    x = torch.randn(64, 1024)
    text = str(fx.export_and_import(model, x, output_type="linalg-on-tensors"))
    weights = sum(p.numel() * 4 for p in model.parameters())
    assert weights >= 28e6 and len(text) > 2 * weights
    start = time.perf_counter()
    prog = compile(text)
    seconds = time.perf_counter() - start
    assert seconds < 10, f"compiling took {seconds:.1f} s"
    assert len(prog.source) < 1e6, f"the module is {len(prog.source)} characters"
    built = [t.cpu() for t in prog.constants_on(torch.device(DEVICE))]
    for p in model.parameters():  # the bytes, unchanged (a weight as it is or transposed)
        assert any(torch.equal(t, p) or (t.dim() == 2 and torch.equal(t.t(), p)) for t in built)
    (ref,) = evaluate(load_program(text), [x.numpy()])  # the oracle reads them too
    with torch.no_grad():
        np.testing.assert_allclose(ref, model.double()(x.double()).numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # torch.export's own
def test_a_gpt2_small_block_with_its_weights_compiles_in_seconds_to_a_small_module():
    """Issue 15: a GPT-2-small-size block (768 wide, 12 heads) exported with its
    28 MB of weights as constants (a 57 MB file): under 10 s, a module under 1 MB
    (measured 2.0 s and 39 KB), every kernel fused as without constants."""
    fx = pytest.importorskip("torch_mlir.fx")
    torch.manual_seed(0)
    model = GPT2Block(768, 12, 128).eval()
    text = str(fx.export_and_import(model, torch.randn(1, 128, 768),
                                    output_type="linalg-on-tensors"))  # fmt: skip
    assert len(text) > 2 * sum(p.numel() * 4 for p in model.parameters()) > 56e6
    start = time.perf_counter()
    prog = compile(text)
    seconds = time.perf_counter() - start
    assert seconds < 10, f"compiling took {seconds:.1f} s"
    assert len(prog.source) < 1e6, f"the module is {len(prog.source)} characters"
    assert len(prog.kernels) == 7  # as gpt2_block in tests/test_zoo.py
