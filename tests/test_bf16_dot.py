"""16-bit matmuls written as f32 ones: torch-mlir's bf16 `nn.Linear` (extf of both
operands, the weight transposed, an f32 matmul) is one kernel with a bf16 `tl.dot`
on bf16 loads; genuinely-f32 operands stay IEEE f32 unless `allow_tf32` is asked for.
The interpreter runs every dot in fp32 (`runtime/compiled.py`), so numerics here check
the load and cast path; the dtype the GPU multiplies in is checked in the source."""

from __future__ import annotations

import copy
import importlib
import re
from pathlib import Path

import pytest
import torch
from torch import nn

from tilefuse.analysis.dot import operand_dtype
from tilefuse.frontend.parse import parse_module
from tilefuse.frontend.program import load_program
from tilefuse.gpu.check import check_kernels
from tilefuse.ir.context import make_context
from tilefuse.ir.structured import as_structured
from tilefuse.ir.tilefuse import TileGridOp
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime import compile as compile_program
from tilefuse.testing.zoo import ZOO

PROGRAMS = Path(__file__).parent / "programs"


def plan_dots(program) -> list[str | None]:
    return [op.plan.dot_dtype for op in program.module.walk()
            if isinstance(op, TileGridOp) and op.plan is not None]  # fmt: skip


def launch_dots(source: str) -> list[tuple[str, str]]:
    """(DOT_DTYPE, DOT_PRECISION) of each launch with a tl.dot."""
    return re.findall(r'DOT_DTYPE=(tl\.\w+)[^,]*, DOT_PRECISION="(\w+)"', source)


def rel_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.double() - ref).abs().max() / ref.abs().max())


@pytest.mark.parametrize("name, kernels, dtype", [
    ("bf16_linear_torch_mlir", 1, "bf16"), ("bf16_mlp_torch_mlir", 2, "bf16"),
    ("f16_linear_torch_mlir", 1, "f16"), ("bf16_broadcast_batch_matmul", 1, "bf16"),
])  # fmt: skip
def test_widened_16_bit_matmul_is_a_16_bit_dot_on_16_bit_loads(name, kernels, dtype):
    """The extf producers and the weight's transpose (or broadcast) fuse into the
    GEMM: no f32 copy is written, the kernel loads the 16-bit tensors as they are
    (no cast before tl.dot's own), and the dot runs in the 16-bit type."""
    program = compile_program(PROGRAMS / f"{name}.mlir")
    assert len(program.kernels) == kernels
    assert [d for d in plan_dots(program) if d] == [dtype] * kernels
    tl_type = {"bf16": "tl.bfloat16", "f16": "tl.float16"}[dtype]
    assert launch_dots(program.source) == [(tl_type, "tf32")] * kernels
    assert "torch.float32" not in program.source  # no f32 intermediate on the host
    # Every tl.dot operand is a tile loaded without a cast.
    for a, b in re.findall(r"tl\.dot\((\w+)\.to\(DOT_DTYPE\), (?:tl\.permute\()?(\w+)", program.source):
        for v in (a, b):
            assert re.search(rf"\b{v} = tl\.load\([^\n]*\)$", program.source, re.M), v


def test_bf16_factor_times_f32_factor_stays_f32():
    """Not a product of two 16-bit values: an IEEE f32 dot; the f32 weight is never
    rounded to bf16 (the bf16 activation is still loaded as bf16)."""
    program = compile_program(PROGRAMS / "bf16_times_f32_matmul.mlir")
    assert plan_dots(program) == ["f32"]
    assert launch_dots(program.source) == [("tl.float32", "ieee")]
    x = torch.randn(32, 48).to(torch.bfloat16)
    w = torch.randn(48, 40) * (1 + 2**-12)  # bits bf16 would lose
    (y,) = program(x, w)
    ref = x.double() @ w.double()
    assert rel_error(y, ref) < 1e-6


def test_allow_tf32_is_an_opt_in_for_f32_dots_only():
    f32 = PROGRAMS / "bf16_times_f32_matmul.mlir"
    assert launch_dots(compile_program(f32, allow_tf32=True).source) == [("tl.float32", "tf32")]
    assert plan_dots(compile_program(f32, allow_tf32=True)) == ["tf32"]
    bf16 = compile_program(PROGRAMS / "bf16_linear_torch_mlir.mlir", allow_tf32=True)
    assert plan_dots(bf16) == ["bf16"]


def _contraction(text: str):
    module = parse_module(make_context(), text)
    return next(s for op in module.walk() if (s := as_structured(op)) is not None and s.reduction_dims)


MATMUL = """
func.func @f(%x: tensor<4x8x{A}>, %w: tensor<8x4x{B}>, %acc: tensor<4x4xf32>) -> tensor<4x4xf32> {{
  %y = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
      affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%x, %w : tensor<4x8x{A}>, tensor<8x4x{B}>) outs(%acc : tensor<4x4xf32>) {{
  ^bb0(%a: {A}, %b: {B}, %c: f32):
    {EA}
    {EB}
    %m = arith.mulf {FA}, {FB} : f32
    %r = arith.addf %c, %m : f32
    linalg.yield %r : f32
  }} -> tensor<4x4xf32>
  func.return %y : tensor<4x4xf32>
}}
"""


def _matmul(a: str, b: str) -> str:
    def ext(v, t):
        return f"%{v}f = arith.extf %{v} : {t} to f32" if t != "f32" else ""

    def factor(v, t):
        return f"%{v}f" if t != "f32" else f"%{v}"

    return MATMUL.format(A=a, B=b, EA=ext("a", a), EB=ext("b", b), FA=factor("a", a),
                         FB=factor("b", b))  # fmt: skip


@pytest.mark.parametrize("a, b, dtype", [
    ("bf16", "bf16", "bf16"), ("f16", "f16", "f16"), ("bf16", "f32", "f32"),
    ("f32", "bf16", "f32"), ("bf16", "f16", "f32"),
])  # fmt: skip
def test_the_dot_dtype_is_both_factors_or_the_product_type(a, b, dtype):
    """`analysis.dot.operand_dtype`: the factors' storage type when they agree,
    else the type the payload multiplies in (never the first operand's alone)."""
    assert operand_dtype(_contraction(_matmul(a, b))) == dtype


@pytest.fixture(scope="module")
def torch_frontend():
    pytest.importorskip("torch_mlir")
    return importlib.import_module("tilefuse.torch")


def _bf16(model: nn.Module, *shape: int):
    torch.manual_seed(0)
    ref = copy.deepcopy(model).double()
    x = torch.randn(*shape).to(torch.bfloat16)
    return model.to(torch.bfloat16), ref, x


@pytest.mark.parametrize("build, shape, kernels", [
    (lambda: nn.Linear(64, 48), (16, 64), 1),
    (lambda: nn.Linear(64, 48, bias=False), (2, 8, 64), 1),
    (lambda: nn.Sequential(nn.Linear(64, 96), nn.GELU(), nn.Linear(96, 32)), (24, 64), 2),
], ids=["linear", "linear_3d_no_bias", "mlp"])  # fmt: skip
def test_torch_bf16_modules_against_eager(torch_frontend, build, shape, kernels):
    model, ref, x = _bf16(build(), *shape)
    compiled = torch_frontend.compile(model, x)
    assert len(compiled.kernels) == kernels
    assert all(d == "tl.bfloat16" for d, _ in launch_dots(compiled.source))
    with torch.no_grad():
        expected = ref(x.double())
    assert rel_error(compiled(x), expected) < 2e-2


def test_torch_mixer_block_bf16(torch_frontend):
    """tilefuse.testing.zoo's MixerBlock in bf16: all four Linears bf16 dots, the
    token-mixing transposes read through the GEMMs' maps."""
    model, inputs = ZOO["mixer"].build()
    ref = copy.deepcopy(model).double()
    x = inputs[0].to(torch.bfloat16)
    compiled = torch_frontend.compile(model.to(torch.bfloat16), x)
    assert [d for d, _ in launch_dots(compiled.source)] == ["tl.bfloat16"] * 4
    with torch.no_grad():
        expected = ref(x.double())
    assert rel_error(compiled(x), expected) < 2e-2


def test_torch_f32_linear_is_ieee_unless_allow_tf32(torch_frontend):
    torch.manual_seed(0)
    model, x = nn.Linear(32, 16), torch.randn(8, 32)
    assert launch_dots(torch_frontend.compile(model, x).source) == [("tl.float32", "ieee")]
    tf32 = torch_frontend.compile(model, x, allow_tf32=True)
    assert launch_dots(tf32.source) == [("tl.float32", "tf32")]
    with torch.no_grad():
        assert rel_error(tf32(x), model(x).double()) < 1e-5  # interpreter: fp32 dots


def _resized(text: str, sizes: dict[str, str]) -> str:
    """`text` with each dim size in `sizes` replaced inside tensor types."""
    def tensor(m: re.Match) -> str:
        dims = m.group(1).split("x")
        return "tensor<" + "x".join(sizes.get(d, d) for d in dims) + ">"

    return re.sub(r"tensor<([0-9x]+x?\w+)>", tensor, text)


def test_bf16_linear_at_model_size_compiles_for_sm90_on_tensor_cores():
    """torch-mlir's bf16 Linear at 4096 x 1024 -> 768, AOT for sm_90: one kernel on
    tensor cores (wgmma or mma.sync), its shared memory within the H200's and within
    the plan's working set, operand tiles counted in bf16 (163840 bytes for the
    128x128x64, 4-stage plan with Triton 3.9; f32 tiles would be twice that)."""
    pytest.importorskip("triton")
    text = (PROGRAMS / "bf16_linear_torch_mlir.mlir").read_text()
    text = _resized(text, {"16": "4096", "64": "1024", "32": "768"})
    module = load_program(text)
    run_pipeline(module, "h200")
    (report,) = check_kernels(module, None, "h200")
    assert report.contraction and report.fits and "mma" in report.ptx_has, report
    assert report.predicted_working_set is not None
    assert report.shared_bytes <= report.predicted_working_set, report


def test_f32_dot_beside_a_bf16_dot_keeps_f32():
    """FlashAttention on bf16 Q, K, V with the softmax in f32: one kernel, Q K^T a
    bf16 dot (the kernel's DOT_DTYPE), P V an IEEE f32 dot of its own (the f32
    probabilities are not rounded to the kernel's bf16)."""
    program = compile_program(PROGRAMS / "attention_bf16_qkv_f32_probs.mlir")
    assert len(program.kernels) == 1 and plan_dots(program) == ["bf16"]
    dots = re.findall(r"tl\.dot\((.*)\)$", program.source, re.M)
    assert len(dots) == 2
    assert "DOT_DTYPE" in dots[0] and 'tl.float32), v16.to(tl.float32)' in dots[1], dots
    assert 'input_precision="ieee"' in dots[1]
