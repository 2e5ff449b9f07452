"""Every sample through the emitted Triton kernels (interpreter on CPU) vs the evaluator."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.device import DEVICE, on_device
from tilefuse.backend.triton.emit import emit_triton
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.frontend.specialize import read_header
from tilefuse.ir.diagnostics import CompileError
from tilefuse.oracle.compare import relative_error, tolerance
from tilefuse.oracle.reference import evaluate
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime.compiled import compile

SAMPLES = Path(__file__).parent.parent / "samples"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.mlir"))
TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def kernels_text(source: str) -> str:
    """The generated kernels, without the module prelude."""
    return source[source.index("# fused_kernel_0"):]


def run_and_compare(source, dims=None, dtype=None, seed=0, target="h200", smem_budget=0):
    prog = compile(source, target, dims, dtype, smem_budget)
    module = load_program(source, dims, dtype)
    storage = dtype or read_header(Path(source).read_text()).dtype or "f32"
    inputs = random_inputs(module, seed)
    outputs = prog(*[on_device(np.asarray(x, np.float32)).to(TORCH[storage]) for x in inputs])
    refs = evaluate(module, inputs)
    for out, ref in zip(outputs, refs, strict=True):
        assert not torch.isnan(out).any()
        err = relative_error(out.float().cpu().numpy(), ref)
        assert err <= tolerance(storage), (source, err)
    return prog


@pytest.mark.parametrize("name", NAMES)
def test_sample_kernels_match_reference(name):
    run_and_compare(SAMPLES / f"{name}.mlir")


@pytest.mark.parametrize(
    ("name", "dims", "target"),
    [
        ("softmax", {"M": 5, "N": 3000}, "v100"),
        ("layernorm", {"M": 3, "N": 77}, "h200"),
        ("linear_bias_relu", {"M": 33, "K": 70, "N": 20}, "a100"),
        ("relu_add", {"M": 1, "N": 1}, "h200"),
    ],
)
def test_other_shapes_and_targets(name, dims, target):
    run_and_compare(SAMPLES / f"{name}.mlir", dims=dims, target=target, seed=4)


def test_bf16_contraction_is_right_under_the_interpreter():
    # Triton 3.9's interpreter gets bf16 tl.dot wrong; the runtime dots in fp32 there.
    run_and_compare(SAMPLES / "linear_bias_relu.mlir", dtype="bf16", seed=7)


def test_looped_reduction_kernel_matches(tmp_path):
    # A JSON target with a tiny shared memory forces a looped (multi-pass) softmax.
    target = tmp_path / "tiny.json"
    target.write_text('{"base": "h200", "name": "tiny", "smem_per_block": 4096}')
    prog = run_and_compare(SAMPLES / "softmax.mlir", target=str(target), seed=2)
    # Online softmax: one loop for the running max and rescaled sum, one to store.
    assert kernels_text(prog.source).count("for ") == 2


def emitted(name, **kw):
    module = load_program(SAMPLES / f"{name}.mlir", **kw)
    run_pipeline(module)
    return emit_triton(module)


# Kernels after the default pipeline: the flash-attention rewrite makes
# attention one kernel; horizontal fusion launches the four independent
# LayerNorms as one, and the transformer block's Q, K, V projections, which
# leaves it seven (LN1, QKV, attention, out-proj + residual, LN2,
# up-proj + GELU, down-proj + residual).
PIPELINE_KERNELS = {"attention": 1, "four_layernorms": 1, "transformer_block": 7}


@pytest.mark.parametrize("name", NAMES)
def test_one_jit_kernel_per_group(name):
    from tests.test_fusion import KERNELS

    src = emitted(name)
    assert kernels_text(src).count("@triton.jit") == PIPELINE_KERNELS.get(name, KERNELS[name])


def test_masks_only_where_tiles_are_partial():
    partial = emitted("relu_add")  # 37 x 300
    assert re.search(r"mask = \(offs0\[:, None\] < 37\) & \(offs1\[None, :\] < 300\)", partial)
    assert "mask=mask" in partial
    exact = emitted("relu_add", dims={"M": 64, "N": 512})
    assert "mask=" not in exact


def test_contractions_use_tl_dot_and_reductions_do_not():
    assert "tl.dot(" in emitted("linear_bias_relu")
    softmax = emitted("softmax")
    assert "tl.dot(" not in softmax
    assert "tl.max(" in softmax and "tl.sum(" in softmax


def test_untiled_module_is_an_error():
    module = load_program(SAMPLES / "softmax.mlir")
    run_pipeline(module, until="fusion-groups")
    with pytest.raises(CompileError, match="was not tiled"):
        emit_triton(module)


def tool(*args, check=True):
    cmd = [sys.executable, "-m", "tilefuse.tools.run", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def test_tilefuse_run_check_and_npz_round_trip(tmp_path):
    x = np.random.default_rng(0).standard_normal((70, 333)).astype(np.float32)
    np.savez(tmp_path / "in.npz", arg0=x)
    r = tool(SAMPLES / "softmax.mlir", "--inputs", tmp_path / "in.npz", "--check",
             "--save-outputs", tmp_path / "out.npz")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "1 kernel(s)" in r.stdout and "ok" in r.stdout
    y = np.load(tmp_path / "out.npz")["out0"]
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)


def test_tilefuse_run_errors_are_one_line(tmp_path):
    np.savez(tmp_path / "in.npz", wrong=np.zeros(3))
    r = tool(SAMPLES / "softmax.mlir", "--inputs", tmp_path / "in.npz")
    assert r.returncode == 1 and "lacks arg0" in r.stderr and "Traceback" not in r.stderr
    r = tool(tmp_path / "missing.mlir")
    assert r.returncode == 1 and "cannot open" in r.stderr


def test_grouped_program_order_is_chosen_by_the_simulation_and_correct(tmp_path):
    # A tiny L2 makes row-major order re-read B for every row of tiles; the
    # tile-scheduler simulation then picks Triton's grouped order.
    target = tmp_path / "small_l2.json"
    target.write_text('{"base": "h200", "name": "small-l2", "l2_bytes": 16384, "sm_count": 4}')
    prog = run_and_compare(SAMPLES / "linear_bias_relu.mlir", dims={"M": 200, "K": 64, "N": 160},
                           target=str(target), seed=3)  # fmt: skip
    assert "grouped order (8 rows)" in prog.source
    assert "first_m = group * 8" in prog.source


ROW_MIN = """
func.func @row_min(%x: tensor<5x300xf32>) -> tensor<5xf32> {
  %big = arith.constant 3.0e+38 : f32
  %e = tensor.empty() : tensor<5xf32>
  %init = linalg.fill ins(%big : f32) outs(%e : tensor<5xf32>) -> tensor<5xf32>
  %m = linalg.reduce ins(%x : tensor<5x300xf32>) outs(%init : tensor<5xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %v = arith.minimumf %in, %acc : f32
      linalg.yield %v : f32
    }
  func.return %m : tensor<5xf32>
}
"""


@pytest.mark.parametrize("case", ["layernorm", "rmsnorm", "softmax", "row_min"])
def test_lane_wise_looped_reductions_in_kernels(case):
    """Rows looped in chunks (a 2 KB budget): per-lane partials in the loop,
    combined after it, through the Triton kernels, against the evaluator."""
    if case == "row_min":
        prog = run_and_compare_text(ROW_MIN, smem_budget=2048)
    else:
        prog = run_and_compare(SAMPLES / f"{case}.mlir", {"M": 5, "N": 700}, "f32", seed=7,
                               smem_budget=2048)  # fmt: skip
    assert "for " in prog.source and "(loop)" in prog.source


TWO_K = """
func.func @two_k(%a: tensor<3x20x100xf32>, %w: tensor<3x100x24xf32>) -> tensor<20x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<20x24xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<20x24xf32>) -> tensor<20x24xf32>
  %o = linalg.generic {
      indexing_maps = [affine_map<(s, n, h, d) -> (h, s, d)>,
                       affine_map<(s, n, h, d) -> (h, d, n)>,
                       affine_map<(s, n, h, d) -> (s, n)>],
      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%a, %w : tensor<3x20x100xf32>, tensor<3x100x24xf32>) outs(%f : tensor<20x24xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<20x24xf32>
  func.return %o : tensor<20x24xf32>
}
"""


def test_two_k_dims_share_one_flat_loop():
    """K = heads x head dim: one loop over every (head, chunk) pair, split by div/mod."""
    prog = run_and_compare_text(TWO_K)
    body = prog.source[prog.source.index("def fused_kernel_0"):]
    assert body.count("for ") == 1 and " // " in body and " % " in body
    assert re.search(r"for \w+ in range\(0, 12, 1\)", body)  # 3 heads x 4 chunks of 32


def run_and_compare_text(text, smem_budget=0):
    prog = compile(text, smem_budget=smem_budget)
    module = load_program(text)
    inputs = random_inputs(module, 5)
    outs = prog(*[on_device(np.asarray(x, np.float32)) for x in inputs])
    for out, ref in zip(outs, evaluate(module, inputs), strict=True):
        assert relative_error(out.cpu().numpy(), ref) <= 1e-5
    return prog


CENTERED = """
func.func @centered(%x: tensor<37x300xf32>) -> (tensor<f32>, tensor<37x300xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%x : tensor<37x300xf32>) outs(%init : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    }
  %e = tensor.empty() : tensor<37x300xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<37x300xf32>, tensor<f32>) outs(%e : tensor<37x300xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %d = arith.subf %a, %t : f32
    linalg.yield %d : f32
  } -> tensor<37x300xf32>
  func.return %s, %c : tensor<f32>, tensor<37x300xf32>
}
"""


@pytest.mark.parametrize("budget", [0, 4096, 1024])
def test_whole_tensor_reduction_loops_every_axis(budget):
    """A sum over both axes (and x minus it): with a small budget no row fits,
    so both axes are looped in one flat loop (rows one at a time, columns in
    chunks), for the reduction and for the store of the centred tensor."""
    prog = run_and_compare_text(CENTERED, smem_budget=budget)
    if budget == 1024:
        assert "(loop)x" in prog.source and " // " in prog.source  # two looped axes, one loop


@pytest.mark.parametrize(("name", "n"), [("layernorm", 4100), ("rmsnorm", 6000), ("layernorm", 8192)])
def test_streamed_rows(name, n):
    """Rows of >= 2 chunks of 2048 stream through the program in chunks (one row
    per program), re-read passes hinted evict_last; partial last chunks masked."""
    prog = run_and_compare(SAMPLES / f"{name}.mlir", {"M": 3, "N": n}, "f32", seed=9)
    assert "1x2048(loop)" in prog.source
    assert 'eviction_policy="evict_last"' in prog.source and 'eviction_policy="evict_first"' in prog.source


COLUMN_MAX = """
func.func @column_max(%x: tensor<200000x3xf32>) -> tensor<3xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<3xf32>
  %init = linalg.fill ins(%ninf : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %m = linalg.reduce ins(%x : tensor<200000x3xf32>) outs(%init : tensor<3xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %v = arith.maximumf %in, %acc : f32
      linalg.yield %v : f32
    }
  func.return %m : tensor<3xf32>
}
"""


def test_split_reduction_spreads_few_rows_over_programs():
    """Column max of a tall matrix: 3 output rows would be 1 program; split into
    partial maxima over chunks (a host view of x) and a final max."""
    prog = compile(COLUMN_MAX)
    assert len(prog.kernels) == 2 and "x.reshape((" in prog.source
    x = torch.randn(200000, 3)
    (m,) = prog(on_device(x))
    torch.testing.assert_close(m.cpu(), x.max(0).values)


def test_arguments_are_checked_against_the_signature():
    """Kernels index arguments by the compiled shapes: anything else is refused
    with a message, never run."""
    import torch

    from tilefuse.ir.diagnostics import ArgumentError
    from tilefuse.runtime.compiled import compile as tf_compile

    prog = tf_compile("samples/relu_add.mlir", "h200", {"M": 8, "N": 16}, "f32")
    x = on_device(torch.randn(8, 16))
    assert prog(x, x)[0].shape == (8, 16)
    for args, message in [((x,), "takes 2 tensors, got 1"),
                          ((x, on_device(torch.randn(16, 8))), r"argument 1 .* shape \[8, 16\], not torch.float32 of shape \[16, 8\]"),
                          ((x, x.double()), "must be a torch.float32 tensor"),
                          ((x, 1.0), "must be a torch.Tensor, not float")]:  # fmt: skip
        with pytest.raises(ArgumentError, match=message):
            prog(*args)


@pytest.mark.skipif(DEVICE == "cpu", reason="without a GPU, kernels run on CPU tensors")
def test_cpu_tensors_are_refused_on_a_gpu():
    """With a GPU the kernels run there: CPU tensors, alone or mixed with CUDA
    ones, are refused with a message."""
    from tilefuse.ir.diagnostics import ArgumentError
    from tilefuse.runtime.compiled import compile as tf_compile

    prog = tf_compile("samples/relu_add.mlir", "h200", {"M": 8, "N": 16}, "f32")
    x = torch.randn(8, 16)
    for args, message in [((x, x), "runs its kernels on the GPU: pass CUDA tensors, not cpu ones"),
                          ((on_device(x), x), "on several devices")]:  # fmt: skip
        with pytest.raises(ArgumentError, match=message):
            prog(*args)


def test_a_0d_argument_broadcasts():
    """A `tensor<f32>` argument: a 0-d tensor, no strides."""
    import torch

    from tilefuse.runtime.compiled import compile as tf_compile

    src = """
#m = affine_map<(d0) -> (d0)>
#s = affine_map<(d0) -> ()>
func.func @scale(%x: tensor<40xf32>, %s: tensor<f32>) -> tensor<40xf32> {
  %e = tensor.empty() : tensor<40xf32>
  %r = linalg.generic {indexing_maps = [#m, #s, #m], iterator_types = ["parallel"]}
      ins(%x, %s : tensor<40xf32>, tensor<f32>) outs(%e : tensor<40xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<40xf32>
  func.return %r : tensor<40xf32>
}"""
    x, s = torch.randn(40), torch.tensor(3.0)
    (y,) = tf_compile(src)(on_device(x), on_device(s))
    assert torch.allclose(y.cpu(), 3 * x)


def test_a_reduction_reading_its_accumulator_twice_is_refused():
    """r = (acc + x) + acc is not a sum (it doubles the running value): a located
    refusal, not a kernel that sums."""
    text = """
func.func @f(%a: tensor<2x6xf32>) -> tensor<2xf32> {
  %z = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<2xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<2x6xf32>) outs(%i : tensor<2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    %r = arith.addf %s, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  return %0 : tensor<2xf32>
}"""
    with pytest.raises(CompileError, match="which it reads nowhere else") as e:
        compile(text)
    assert "<input>:6:3:" in str(e.value), str(e.value)  # at the generic


def test_a_payload_gathers_from_a_captured_tensor():
    """`tensor.extract` of a tensor from outside the payload at linalg.index
    values: a load from the kernel argument (the first three rows of the table)."""
    text = """func.func @f(%table: tensor<10x4xf32>, %x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %e = tensor.empty() : tensor<3x4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %v = tensor.extract %table[%i, %j] : tensor<10x4xf32>
    %r = arith.addf %v, %in : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}"""
    table, x = torch.randn(10, 4), torch.randn(3, 4)
    (y,) = compile(text)(on_device(table), on_device(x))
    assert torch.allclose(y.cpu(), table[:3] + x)


@pytest.mark.parametrize(("body", "where", "message"), [
    ("""func.func @f(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %e = tensor.empty() : tensor<3x4xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) {
  ^bb0(%in: f32, %o: f32):
    %t = tensor.from_elements %in : tensor<1xf32>
    %r = arith.addf %in, %in : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}""", "<input>:5:5:", "'tensor.from_elements' op is not supported in a payload"),
])  # fmt: skip
def test_unsupported_payload_ops_are_located(body, where, message):
    with pytest.raises(CompileError) as e:
        compile(body)
    assert where in str(e.value) and message in str(e.value), str(e.value)


def test_block_constants_wrap_literals_never_names():
    """A helper's constant operand becomes a 0-d block; a Python name (`inf`,
    `nan` are names too, though float() parses them) stays a name."""
    from tilefuse.backend.triton.scalar import is_literal

    assert all(is_literal(t) for t in ("1.5", "-2", "1e-30", 'float("nan")', 'float("-inf")', "True"))
    assert not any(is_literal(t) for t in ("inf", "nan", "v_1", "t", "_x", ""))
