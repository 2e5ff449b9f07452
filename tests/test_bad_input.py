"""Bad input to the tools: one clean line on stderr and exit status 1, never a traceback.

The located refusals of malformed programs are golden tests
(`tests/filecheck/errors/*.mlir`); these are the cases a checked-in file cannot
hold (bytes that are not UTF-8) or that need input arrays.
"""

import numpy as np
import pytest

from tilefuse.tools import opt, run

NO_RESULTS = "func.func @f(%a: tensor<4xf32>) {\n  func.return\n}\n"
IDENTITY = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %a : tensor<4xf32>\n}\n"


@pytest.mark.parametrize("tool", [run.main, opt.main], ids=["run", "opt"])
def test_bytes_that_are_not_utf8_are_located(tool, tmp_path, capsys):
    path = tmp_path / "latin1.mlir"
    path.write_bytes(b"// caf\xe9\n" + IDENTITY.encode())
    assert tool([str(path)]) == 1
    err = capsys.readouterr().err
    assert err == f"{path}:1:7: error: byte 0xe9 is not UTF-8: MLIR source must be UTF-8 text\n"


def test_a_function_without_results_runs_with_nothing_to_check(tmp_path, capsys):
    path = tmp_path / "no_results.mlir"
    path.write_text(NO_RESULTS)
    assert run.main([str(path), "--check", "--save-outputs", str(tmp_path / "out.npz")]) == 0
    assert "the function returns no results: nothing to check" in capsys.readouterr().out


def test_a_program_needing_a_located_property_check_while_parsing(tmp_path, capsys):
    path = tmp_path / "reassociation.mlir"
    path.write_text("func.func @f(%a: tensor<4x6xf32>) -> tensor<24xf32> {\n"
                    "  %c = tensor.collapse_shape %a [[1, 0]] : tensor<4x6xf32> into tensor<24xf32>\n"
                    "  func.return %c : tensor<24xf32>\n}\n")  # fmt: skip
    assert opt.main([str(path)]) == 1
    assert capsys.readouterr().err.startswith(f"{path}:2:3: error: All inner arrays must be contiguous")


def test_an_op_xdsl_cannot_build_is_located(tmp_path, capsys):
    """xDSL's own grouped NHWGC convolution asserts building its region for bf16
    operands into f32 (a bare AssertionError, a traceback): now a located error."""
    path = tmp_path / "conv.mlir"
    path.write_text(
        "func.func @f(%x: tensor<1x6x6x2x4xbf16>, %w: tensor<2x8x3x3x4xbf16>, %o: tensor<1x4x4x2x8xf32>)"
        " -> tensor<1x4x4x2x8xf32> {\n"
        "  %r = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> "
        ": tensor<2xi64>} ins(%x, %w : tensor<1x6x6x2x4xbf16>, tensor<2x8x3x3x4xbf16>) "
        "outs(%o : tensor<1x4x4x2x8xf32>) -> tensor<1x4x4x2x8xf32>\n"
        "  func.return %r : tensor<1x4x4x2x8xf32>\n}\n")  # fmt: skip
    assert opt.main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:3: error: this op's form is not supported: AssertionError"), err
    assert "Traceback" not in err


def _save_npy(path):
    np.save(path, np.zeros(4, np.float32))


def _save_text(path):
    path.write_text("arg0 = [1, 2, 3, 4]")


def _save_empty(path):
    path.write_bytes(b"")


def _save_object_array(path):
    np.savez(path, arg0=np.array([object()], dtype=object))


@pytest.mark.parametrize(("name", "save", "message"), [
    ("in.npy", _save_npy, "is not an .npz archive of arrays arg0, arg1, ... (numpy.savez): it holds one array"),
    ("in.npz", _save_text, "is not an .npz archive of arrays arg0, arg1, ... (numpy.savez)"),
    ("in.npz", _save_empty, "is not an .npz archive of arrays arg0, arg1, ... (numpy.savez)"),
    ("in.npz", _save_object_array, "Object arrays cannot be loaded when allow_pickle=False"),
])  # fmt: skip
def test_inputs_that_are_not_an_npz_of_arrays(name, save, message, tmp_path, capsys):
    program, inputs = tmp_path / "f.mlir", tmp_path / name
    program.write_text(IDENTITY)
    save(inputs)
    assert run.main([str(program), "--inputs", str(inputs)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: --inputs {inputs}") and message in err and len(err.splitlines()) == 1


def test_casts_to_dynamic_types_before_a_concat_load_as_static(tmp_path, capsys):
    """torch-mlir's `torch.roll`: static slices cast to `tensor<?x4xf32>` before a
    concat into a static result. A static program, run and checked (it was refused
    as a dynamic one, the message asking for dim ranges)."""
    path = tmp_path / "roll.mlir"
    path.write_text(
        "func.func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {\n"
        "  %a = tensor.extract_slice %x[2, 0] [6, 4] [1, 1] : tensor<8x4xf32> to tensor<6x4xf32>\n"
        "  %ca = tensor.cast %a : tensor<6x4xf32> to tensor<?x4xf32>\n"
        "  %b = tensor.extract_slice %x[0, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>\n"
        "  %cb = tensor.cast %b : tensor<2x4xf32> to tensor<?x4xf32>\n"
        "  %r = tensor.concat dim(0) %ca, %cb : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<8x4xf32>\n"
        "  func.return %r : tensor<8x4xf32>\n}\n")  # fmt: skip
    assert run.main([str(path), "--check"]) == 0, capsys.readouterr()


def test_reshapes_to_and_from_rank_zero_load(tmp_path, capsys):
    """`tensor.expand_shape %m [] : tensor<f32> into tensor<1xf32>` (torch-mlir's 1-D
    softmax) and its inverse are valid MLIR that xDSL's verifier rejects: read as the
    generics reading the one element, run and checked."""
    path = tmp_path / "rank0.mlir"
    path.write_text(
        "func.func @f(%x: tensor<f32>, %y: tensor<1x1xf32>) -> (tensor<1xf32>, tensor<f32>) {\n"
        "  %e = tensor.expand_shape %x [] output_shape [1] : tensor<f32> into tensor<1xf32>\n"
        "  %c = tensor.collapse_shape %y [] : tensor<1x1xf32> into tensor<f32>\n"
        "  func.return %e, %c : tensor<1xf32>, tensor<f32>\n}\n")  # fmt: skip
    assert run.main([str(path), "--check"]) == 0, capsys.readouterr()
