"""`dense_resource<key>` constants, their bytes in the file's
`{-# dialect_resources #-}` (torch-mlir's fx importer prints weights so)."""

import struct

import pytest
import torch

from tests.device import on_device
from tilefuse.frontend.program import load_program
from tilefuse.ir.diagnostics import CompileError
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime.compiled import compile


def program(t: str, shape: str, blob: str, key: str = "w") -> str:
    return f"""
func.func @f(%x: tensor<{shape}x{t}>) -> tensor<{shape}x{t}> {{
  %w = arith.constant dense_resource<{key}> : tensor<{shape}x{t}>
  %e = tensor.empty() : tensor<{shape}x{t}>
  %y = linalg.add ins(%x, %w : tensor<{shape}x{t}>, tensor<{shape}x{t}>) outs(%e : tensor<{shape}x{t}>) -> tensor<{shape}x{t}>
  return %y : tensor<{shape}x{t}>
}}
{{-#
  dialect_resources: {{
    builtin: {{
      w: "0x04000000{blob}"
    }}
  }}
#-}}
"""


@pytest.mark.parametrize("t,fmt,values", [
    ("f32", "<6f", [1.5, -2.0, 3.25, 4.0, 5.0, -6.5]),
    ("f16", "<6e", [1.5, -2.0, 3.25, 4.0, 5.0, -6.5]),
    ("i32", "<6i", [1, -2, 3, 2**31 - 1, -(2**31), 0]),
    ("i64", "<6q", [1, -2, 3, 2**62 + 1, -(2**63), 0]),
])  # fmt: skip
def test_resource_bytes_are_the_constant(t, fmt, values):
    text = program(t, "2x3", struct.pack(fmt, *values).hex())
    dtype = {"f32": torch.float32, "f16": torch.float16, "i32": torch.int32, "i64": torch.int64}[t]
    want = torch.tensor(values, dtype=dtype).reshape(2, 3)
    (got,) = compile(text)(on_device(torch.zeros(2, 3, dtype=dtype)))
    assert torch.equal(got.cpu(), want)
    (ref,) = evaluate(load_program(text), [torch.zeros(2, 3, dtype=dtype).numpy()])
    assert ref.tolist() == want.tolist()
    # parsed twice in one process (tilefuse-run does): the same bytes
    (again,) = compile(text)(on_device(torch.zeros(2, 3, dtype=dtype)))
    assert torch.equal(again.cpu(), want)


def test_bf16_resource_and_a_one_element_splat():
    bf16 = torch.tensor([1.5, -2.0, 3.25, 4.0, 5.0, -6.5], dtype=torch.bfloat16)
    text = program("bf16", "2x3", bf16.view(torch.int16).numpy().tobytes().hex())
    (got,) = compile(text)(on_device(torch.zeros(2, 3, dtype=torch.bfloat16)))
    assert torch.equal(got.cpu(), bf16.reshape(2, 3))
    splat = program("f32", "2x3", struct.pack("<f", 0.25).hex())
    (got,) = compile(splat)(on_device(torch.zeros(2, 3)))
    assert torch.equal(got.cpu(), torch.full((2, 3), 0.25))


def test_missing_or_short_resources_are_refused_with_a_location():
    missing = program("f32", "2x3", "").replace('      w: "0x04000000"\n', "")
    with pytest.raises(CompileError, match=r"<input>:3:3: .*dense_resource<w> has no bytes"):
        compile(missing)
    short = program("f32", "2x3", struct.pack("<4f", 1, 2, 3, 4).hex())
    with pytest.raises(CompileError, match=r"<input>:3:3: .*holds 4 elements, tensor<2x3xf32> has 6"):
        compile(short)


def test_a_scalar_extracted_from_a_0d_tensor_is_read_by_the_kernels():
    """torch-mlir's `tensor.extract %s[]`, used in payloads (it was refused)."""
    from pathlib import Path

    text = (Path(__file__).parent / "programs" / "scalar_extracted_from_a_0d_tensor.mlir").read_text()
    x, s = torch.randn(4, 5, generator=torch.Generator().manual_seed(0)), torch.tensor(3.0)
    y, t = compile(text)(on_device(x), on_device(s))
    assert torch.allclose(y.cpu(), x * 3 + 2) and torch.allclose(t.cpu(), (x * 3).sum(1), atol=1e-5)
    used_outside = text.replace("%c = arith.constant dense", "%w = arith.mulf %v, %v : f32\n  %c = arith.constant dense")
    with pytest.raises(CompileError, match=r"<input>:6:3: .*tensor.extract.* cannot be placed among fusion groups"):
        compile(used_outside)
