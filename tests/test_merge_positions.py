"""`merge-positions`: a convolution's short (image, row, column) loops as one loop of
positions, through the kernels in the interpreter, against torch."""

import pytest
import torch
import torch.nn.functional as F

from tests.device import on_device
from tests.test_convolution import attrs, named_program, rand
from tilefuse.ir.tilefuse import GroupOp
from tilefuse.runtime.compiled import compile


def merged_groups(prog) -> list[GroupOp]:
    return [g for g in prog.module.walk() if isinstance(g, GroupOp) and g.merged]


def conv_relu_residual(x, w, out, stride=1, dilation=1) -> str:
    """conv_2d_nchw_fchw, then + a residual of the output's shape, then ReLU."""
    conv = named_program("conv_2d_nchw_fchw", x, w, out, attrs((stride,) * 2, (dilation,) * 2))
    t = f"tensor<{'x'.join(map(str, out))}xf32>"
    body = conv.split("func.return")[0].replace(f") -> {t} {{", f", %res: {t}) -> {t} {{", 1)
    return body + f"""  %e2 = tensor.empty() : {t}
  %s = linalg.add ins(%r, %res : {t}, {t}) outs(%e2 : {t}) -> {t}
  %zero = arith.constant 0.0 : f32
  %z = linalg.fill ins(%zero : f32) outs(%e2 : {t}) -> {t}
  %y = linalg.max ins(%s, %z : {t}, {t}) outs(%e2 : {t}) -> {t}
  func.return %y : {t}
}}
"""


@pytest.mark.parametrize(("n", "c", "f", "h", "w", "k", "stride", "dilation"), [
    (2, 8, 16, 7, 6, 3, 1, 1),     # 84 positions: the last tile of 64 masked
    (3, 4, 8, 11, 9, 3, 2, 1),     # strided
    (2, 4, 8, 12, 13, 3, 1, 2),    # dilated
    (3, 16, 32, 3, 3, 1, 1, 1),    # a 1x1: (row, column) one dim already, images merged in
])  # fmt: skip
def test_a_merged_convolution_matches_torch(n, c, f, h, w, k, stride, dilation):
    oh = (h - dilation * (k - 1) - 1) // stride + 1
    ow = (w - dilation * (k - 1) - 1) // stride + 1
    x, wt, res = rand(n, c, h, w), rand(f, c, k, k, seed=1), rand(n, f, oh, ow, seed=2)
    text = conv_relu_residual(x.shape, wt.shape, (n, f, oh, ow), stride, dilation)
    prog = compile(text)
    (g,) = merged_groups(prog)
    positions = (0, 2, 3) if k > 1 else (0, 2)  # (a 1x1's rows and columns are one dim)
    assert g.input_merge(0) is not None and g.result_merge(0) == (positions, (1,))
    assert g.input_merge(2) == (positions, (1,))  # the residual, read by division too
    assert f"// {oh * ow})" in prog.source  # (the image of a position)
    assert f"; positions merged: result 0 dims {', '.join(map(str, positions))}" in prog.source
    (out,) = prog(*(on_device(t) for t in (x, wt, res)))
    want = F.relu(F.conv2d(x, wt, stride=stride, dilation=dilation) + res)
    assert torch.allclose(out.float().cpu(), want, rtol=1e-4, atol=1e-4)


def test_wide_images_and_contiguous_rows_are_not_merged():
    """Rows of 64 columns tile well alone; an NCHW 1x1 convolution's input rows of 16
    or more columns are its vector loads: neither is merged."""
    wide = named_program("conv_2d_nchw_fchw", (1, 4, 3, 66), (8, 4, 3, 3), (1, 8, 1, 64), attrs((1, 1), (1, 1)))
    rows = named_program("conv_2d_nchw_fchw", (2, 4, 3, 16), (8, 4, 1, 1), (2, 8, 3, 16), attrs((1, 1), (1, 1)))
    assert not merged_groups(compile(wide)) and not merged_groups(compile(rows))


def test_a_long_batch_of_small_images_is_merged_with_their_pixels():
    """64 images (past `MERGE_BELOW`) at 2 x 2 patches: the images are the input's
    outermost dim, no side alone (each row another image, the filter read again at
    every pixel: ViT-B/16's patch embedding over 64 images ran 320 us so on an H100),
    so the three loops merge; a long loop that is not the outermost (the wide rows
    above) still stays a side of its own."""
    x, wt = rand(64, 3, 4, 4), rand(8, 3, 2, 2, seed=1)
    patches = named_program("conv_2d_nchw_fchw", x.shape, wt.shape, (64, 8, 2, 2), attrs((2, 2), (1, 1)))
    prog = compile(patches)
    (g,) = merged_groups(prog)
    assert g.result_merge(0) == ((0, 2, 3), (1,))
    (out,) = prog(on_device(x), on_device(wt))
    assert torch.allclose(out.float().cpu(), F.conv2d(x, wt, stride=2), rtol=1e-4, atol=1e-4)


def _t(*shape) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def one_then_three(n, c, f, h, w) -> str:
    """A 1x1 convolution of an NCHW input, padded by 1, then a 3x3 one (the
    bottleneck's first two), f32."""
    x, w1, w3 = _t(n, c, h, w), _t(f, c, 1, 1), _t(f, f, 3, 3)
    y, yp = _t(n, f, h, w), _t(n, f, h + 2, w + 2)
    a = attrs((1, 1), (1, 1))
    return f"""
func.func @f(%x: {x}, %w1: {w1}, %w3: {w3}) -> {y} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {y}
  %o = linalg.fill ins(%zero : f32) outs(%e : {y}) -> {y}
  %y1 = linalg.conv_2d_nchw_fchw {a} ins(%x, %w1 : {x}, {w1}) outs(%o : {y}) -> {y}
  %p = tensor.pad %y1 low[0, 0, 1, 1] high[0, 0, 1, 1] {{
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  }} : {y} to {yp}
  %y3 = linalg.conv_2d_nchw_fchw {a} ins(%p, %w3 : {yp}, {w3}) outs(%o : {y}) -> {y}
  func.return %y3 : {y}
}}
"""


def test_an_nchw_input_merged_by_the_first_convolution_is_copied_channels_last():
    """Positions divided out of a merged index are loaded element by element: the
    NCHW input of the merged 1x1 convolution is copied with its channels innermost
    first (`layout_plan._host_tile`), so a tile's rows are vectors of channels; the
    padded tensor between the two is channels-last as before."""
    x, w1, w3 = rand(2, 32, 5, 6), rand(16, 32, 1, 1, seed=1), rand(16, 16, 3, 3, seed=2)
    prog = compile(one_then_three(2, 32, 16, 5, 6))
    assert len(merged_groups(prog)) == 2
    assert "    x = _in_order(x, (0, 2, 3, 1))\n" in prog.source
    assert "torch.empty_permuted((2, 16, 7, 8), (0, 2, 3, 1)" in prog.source
    (out,) = prog(*(on_device(t) for t in (x, w1, w3)))
    want = F.conv2d(F.conv2d(x, w1), w3, padding=1)
    assert torch.allclose(out.float().cpu(), want, rtol=1e-4, atol=1e-4)


def test_the_group_verifier_checks_its_merges():
    """A merge takes every dim of its tensor once, and the block argument has the
    merged shape: said in a sentence."""
    from tilefuse.frontend.parse import verify
    from tilefuse.ir.diagnostics import CompileError
    from tilefuse.ir.tilefuse import merges_attr
    from tilefuse.pipeline import run_pipeline
    from tilefuse.runtime.compiled import load_program

    x, wt = (2, 4, 5, 6), (8, 4, 3, 3)
    module = load_program(named_program("conv_2d_nchw_fchw", x, wt, (2, 8, 3, 4), attrs((1, 1), (1, 1))))
    run_pipeline(module, until="merge-positions")
    (g,) = [g for g in module.walk() if isinstance(g, GroupOp)]
    assert g.input_merge(0) == ((0, 2, 4), (1,), (3,), (5,))
    g.input_merges = merges_attr([((0, 2), (1,), (3,), (5,)), None])  # (dim 4 left out)
    with pytest.raises(CompileError, match=r"A merge must take each dim of a static rank-6 tensor once"):
        verify(module)
    g.input_merges = merges_attr([((0, 4, 2), (1,), (3,), (5,)), None])  # (same shape: 2 x 5 x 3 x 4 merged)
    verify(module)
    g.input_merges = merges_attr([((0,), (1,), (2, 4), (3,), (5,)), None])
    with pytest.raises(CompileError, match=r"block arguments .* must match its inputs"):
        verify(module)
    g.input_merges = merges_attr([None])
    with pytest.raises(CompileError, match="The group has 2 inputs but 1 input merges"):
        verify(module)


TRANSPOSED = """
func.func @f(%x: tensor<4x10x32xf32>, %w: tensor<32x16xf32>, %r: tensor<4x10x16xf32>) -> tensor<10x16x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<10x16x4xf32>
  %o = linalg.fill ins(%zero : f32) outs(%e : tensor<10x16x4xf32>) -> tensor<10x16x4xf32>
  %mm = linalg.generic {indexing_maps = [affine_map<(b, t, n, k) -> (b, t, k)>, affine_map<(b, t, n, k) -> (k, n)>,
                                         affine_map<(b, t, n, k) -> (t, n, b)>],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x10x32xf32>, tensor<32x16xf32>) outs(%o : tensor<10x16x4xf32>) {
  ^bb0(%a: f32, %c: f32, %acc: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<10x16x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(t, n, b) -> (t, n, b)>, affine_map<(t, n, b) -> (b, t, n)>,
                                        affine_map<(t, n, b) -> (t, n, b)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%mm, %r : tensor<10x16x4xf32>, tensor<4x10x16xf32>) outs(%e : tensor<10x16x4xf32>) {
  ^bb0(%a: f32, %c: f32, %out: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<10x16x4xf32>
  func.return %y : tensor<10x16x4xf32>
}
"""


def test_tensors_merged_in_another_dim_order_than_the_loops():
    """A batched matmul over 4 x 10 rows written transposed, [t, n, b], plus a
    residual stored [b, t, n]: each tensor merges its own dims for the loops (t, b),
    in the output's order (t outermost), whatever their order in the tensor."""
    x, w, r = rand(4, 10, 32), rand(32, 16, seed=1), rand(4, 10, 16, seed=2)
    prog = compile(TRANSPOSED)
    (g,) = merged_groups(prog)
    assert g.result_merge(0) == ((0, 2), (1,))
    assert g.input_merge(2) == ((1, 0), (2,))  # (t is the residual's dim 1)
    assert g.input_merge(0) == ((1, 0), (2,))
    (out,) = prog(*(on_device(t) for t in (x, w, r)))
    want = torch.einsum("btk,kn->tnb", x, w) + r.permute(1, 2, 0)
    assert torch.allclose(out.float().cpu(), want, rtol=1e-4, atol=1e-4)


TORCH_CASES = {
    # name: (module, input shape, groups merged)
    "depthwise 3x3": (lambda: torch.nn.Conv2d(8, 8, 3, padding=1, groups=8), (2, 8, 6, 5), 1),
    "conv3d": (lambda: torch.nn.Conv3d(2, 4, 3, padding=1), (2, 2, 4, 5, 3), 1),
    "then a global pool": (lambda: _Then(torch.nn.Conv2d(4, 8, 3, padding=1),
                                         lambda y, x: F.adaptive_avg_pool2d(y, 1).flatten(1)), (2, 4, 6, 6), 1),
    # a per-image scale in the epilogue (indexed by the images only): not merged
    "times a per-image mean": (lambda: _Then(torch.nn.Conv2d(4, 8, 3, padding=1),
                                             lambda y, x: y * x.mean(dim=(1, 2, 3), keepdim=True)), (2, 4, 6, 6), 0),
}  # fmt: skip


class _Then(torch.nn.Module):
    def __init__(self, conv, then):
        super().__init__()
        self.conv, self.then = conv, then

    def forward(self, x):
        return self.then(self.conv(x), x)


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_torch_convolutions_merge_and_match_eager(name):
    """torch-mlir's spellings (grouped and 3-D windows, a pool reading the merged
    result in another group) through `tilefuse.torch.compile`, against eager."""
    pytest.importorskip("torch_mlir")
    import tilefuse.torch as tt

    make, shape, merged = TORCH_CASES[name]
    torch.manual_seed(0)
    module, x = make().eval(), torch.randn(*shape)
    with torch.no_grad():
        prog = tt.compile(module, x)
        got, want = prog(x), module(x)
    assert sum("; positions merged:" in line for line in prog.program.source.splitlines()) == merged
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)
