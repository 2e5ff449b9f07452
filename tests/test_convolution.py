"""Convolutions and pooling: upstream's named ops and windowed generics, through
the kernels and the reference evaluator, against torch's conv/pool functions."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.device import on_device
from tilefuse.frontend.program import load_program
from tilefuse.ir.diagnostics import CompileError
from tilefuse.oracle.compare import relative_error
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime.compiled import compile


def _t(shape, dtype="f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


def named_program(op, x, w, out, attrs="", init="0.0", dtype="f32", acc="f32") -> str:
    """`op` over x and w into a filled output (`init`), as upstream prints it."""
    return f"""
func.func @f(%x: {_t(x, dtype)}, %w: {_t(w, dtype)}) -> {_t(out, acc)} {{
  %init = arith.constant {init} : {acc}
  %e = tensor.empty() : {_t(out, acc)}
  %o = linalg.fill ins(%init : {acc}) outs(%e : {_t(out, acc)}) -> {_t(out, acc)}
  %r = linalg.{op} {attrs} ins(%x, %w : {_t(x, dtype)}, {_t(w, dtype)}) outs(%o : {_t(out, acc)}) -> {_t(out, acc)}
  func.return %r : {_t(out, acc)}
}}
"""


def attrs(strides, dilations) -> str:
    n = len(strides)
    return (f"{{dilations = dense<{list(dilations)}> : tensor<{n}xi64>, "
            f"strides = dense<{list(strides)}> : tensor<{n}xi64>}}")  # fmt: skip


def run(text: str, *args: torch.Tensor) -> torch.Tensor:
    """The program through the kernels, checked against the reference evaluator."""
    (out,) = compile(text)(*(on_device(a) for a in args))
    (ref,) = evaluate(load_program(text), [a.float().numpy() for a in args])
    assert relative_error(out.float().cpu().numpy(), ref) < 1e-5
    return out.float().cpu()


def rand(*shape, seed=0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def out_size(size, k, stride, dilation):
    return (size - dilation * (k - 1) - 1) // stride + 1


@pytest.mark.parametrize("stride,dilation", [(1, 1), (2, 1), (1, 2), (2, 3)])
def test_conv_2d_nchw_fchw_matches_torch(stride, dilation):
    x, w = rand(2, 3, 17, 19), rand(5, 3, 3, 2, seed=1)
    oh, ow = out_size(17, 3, stride, dilation), out_size(19, 2, stride, dilation)
    text = named_program("conv_2d_nchw_fchw", x.shape, w.shape, (2, 5, oh, ow),
                         attrs((stride, stride), (dilation, dilation)))  # fmt: skip
    want = F.conv2d(x, w, stride=stride, dilation=dilation)
    assert torch.allclose(run(text, x, w), want, rtol=1e-4, atol=1e-4)


def test_conv_2d_nhwc_hwcf_and_fhwc_match_torch():
    x, w = rand(2, 9, 8, 4), rand(3, 2, 4, 6, seed=1)  # HWCF
    want = F.conv2d(x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1), stride=(2, 1)).permute(0, 2, 3, 1)
    out = (2, 4, 7, 6)
    got = run(named_program("conv_2d_nhwc_hwcf", x.shape, w.shape, out, attrs((2, 1), (1, 1))), x, w)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4)
    f = w.permute(3, 0, 1, 2).contiguous()  # FHWC
    got = run(named_program("conv_2d_nhwc_fhwc", x.shape, f.shape, out, attrs((2, 1), (1, 1))), x, f)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4)


def test_conv_1d_3d_and_depthwise_match_torch():
    x, w = rand(2, 20, 3), rand(4, 3, 5, seed=1)  # NWC, WCF
    want = F.conv1d(x.permute(0, 2, 1), w.permute(2, 1, 0), stride=2).permute(0, 2, 1)
    got = run(named_program("conv_1d_nwc_wcf", x.shape, w.shape, (2, 9, 5), attrs((2,), (1,))), x, w)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4)

    x, w = rand(1, 6, 7, 5, 2), rand(2, 3, 2, 2, 3, seed=2)  # NDHWC, DHWCF
    want = F.conv3d(x.permute(0, 4, 1, 2, 3), w.permute(4, 3, 0, 1, 2)).permute(0, 2, 3, 4, 1)
    got = run(named_program("conv_3d_ndhwc_dhwcf", x.shape, w.shape, (1, 5, 5, 4, 3)), x, w)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4)

    x, w = rand(2, 10, 9, 4), rand(3, 3, 4, seed=3)  # NHWC, HWC: one filter per channel
    want = F.conv2d(x.permute(0, 3, 1, 2), w.permute(2, 0, 1)[:, None], groups=4).permute(0, 2, 3, 1)
    got = run(named_program("depthwise_conv_2d_nhwc_hwc", x.shape, w.shape, (2, 8, 7, 4)), x, w)
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-4)

    x, w = rand(12), rand(4, seed=4)
    want = F.conv1d(x[None, None], w[None, None])[0, 0]
    assert torch.allclose(run(named_program("conv_1d", x.shape, w.shape, (9,)), x, w), want, atol=1e-5)


@pytest.mark.parametrize("kind", ["max", "min", "sum"])
def test_pooling_matches_torch(kind):
    x = rand(2, 3, 9, 8)
    init = {"max": "0xFF800000", "min": "0x7F800000", "sum": "0.0"}[kind]
    text = named_program(f"pooling_nchw_{kind}", x.shape, (3, 2), (2, 3, 4, 4), attrs((2, 2), (1, 1)),
                         init=init)  # fmt: skip
    window = torch.empty(3, 2)  # only its shape matters
    got = run(text, x, window.zero_())
    pools = {"max": lambda t: F.max_pool2d(t, (3, 2), 2), "min": lambda t: -F.max_pool2d(-t, (3, 2), 2),
             "sum": lambda t: F.avg_pool2d(t, (3, 2), 2) * 6}  # fmt: skip
    assert torch.allclose(got, pools[kind](x), rtol=1e-5, atol=1e-5)
    nhwc = text.replace("nchw", "nhwc").replace("2x3x9x8", "2x9x8x3").replace("2x3x4x4", "2x4x4x3")
    got = run(nhwc, x.permute(0, 2, 3, 1).contiguous(), window)
    assert torch.allclose(got, pools[kind](x).permute(0, 2, 3, 1), rtol=1e-5, atol=1e-5)


def test_pooling_window_given_as_tensor_empty():
    """Upstream's form: the window operand is a `tensor.empty` nobody reads."""
    text = """
func.func @f(%x: tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<1x2x3x3xf32>
  %o = linalg.fill ins(%ninf : f32) outs(%e : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %k = tensor.empty() : tensor<2x2xf32>
  %r = linalg.pooling_nchw_max {strides = dense<2> : tensor<2xi64>} ins(%x, %k : tensor<1x2x6x6xf32>, tensor<2x2xf32>) outs(%o : tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  func.return %r : tensor<1x2x3x3xf32>
}
"""
    x = rand(1, 2, 6, 6)
    assert torch.equal(run(text, x), F.max_pool2d(x, 2))


def test_conv_bias_relu_is_one_kernel_and_bf16_accumulates_in_f32():
    x, w, b = rand(2, 12, 12, 16), rand(3, 3, 16, 32, seed=1) * 0.2, rand(32, seed=2)
    text = """
func.func @f(%x: tensor<2x12x12x16xT>, %w: tensor<3x3x16x32xT>, %b: tensor<32xf32>) -> tensor<2x10x10x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x10x10x32xf32>
  %o = linalg.fill ins(%zero : f32) outs(%e : tensor<2x10x10x32xf32>) -> tensor<2x10x10x32xf32>
  %c = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<2x12x12x16xT>, tensor<3x3x16x32xT>) outs(%o : tensor<2x10x10x32xf32>) -> tensor<2x10x10x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(n, h, w, f) -> (n, h, w, f)>, affine_map<(n, h, w, f) -> (f)>, affine_map<(n, h, w, f) -> (n, h, w, f)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %b : tensor<2x10x10x32xf32>, tensor<32xf32>) outs(%e : tensor<2x10x10x32xf32>) {
  ^bb0(%v: f32, %bias: f32, %_: f32):
    %s = arith.addf %v, %bias : f32
    %y = arith.maximumf %s, %zero : f32
    linalg.yield %y : f32
  } -> tensor<2x10x10x32xf32>
  func.return %r : tensor<2x10x10x32xf32>
}
"""
    for dtype, tdtype, tol in (("f32", torch.float32, 1e-4), ("bf16", torch.bfloat16, 1e-5)):
        prog = compile(text.replace("xT>", f"x{dtype}>"))
        assert len(prog.kernels) == 1
        xs, ws = x.to(tdtype), w.to(tdtype)
        (got,) = prog(on_device(xs), on_device(ws), on_device(b))
        want = F.relu(F.conv2d(xs.float().permute(0, 3, 1, 2), ws.float().permute(3, 2, 0, 1))
                      .permute(0, 2, 3, 1) + b)  # fmt: skip
        assert torch.allclose(got.cpu(), want, rtol=tol, atol=tol)


WINDOWED_GENERIC = """
#x = affine_map<(i, j, a, b) -> (j * 2 + a + 1, i + b)>
#w = affine_map<(i, j, a, b) -> (a, b)>
#o = affine_map<(i, j, a, b) -> (i, j)>
func.func @f(%x: tensor<13x9xf32>, %w: tensor<3x4xf32>, %o: tensor<6x5xf32>) -> tensor<6x5xf32> {
  %r = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : tensor<13x9xf32>, tensor<3x4xf32>) outs(%o : tensor<6x5xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<6x5xf32>
  func.return %r : tensor<6x5xf32>
}
"""


def test_windowed_generic_with_offsets_and_a_transposed_input():
    """A window with a constant offset whose dims swap places (r[i, j] reads
    x[2j + a + 1, i + b]), on a transposed (non-contiguous) argument."""
    x = rand(9, 13).T  # a view: strides (1, 13)
    w, o = rand(3, 4, seed=1), rand(6, 5, seed=2)
    want = o.clone()
    for i in range(6):
        for j in range(5):
            want[i, j] += (x[2 * j + 1 : 2 * j + 4, i : i + 4] * w).sum()
    (got,) = compile(WINDOWED_GENERIC)(on_device(x), on_device(w), on_device(o))
    assert torch.allclose(got.cpu(), want, rtol=1e-5, atol=1e-5)
    (ref,) = evaluate(load_program(WINDOWED_GENERIC), [x.numpy(), w.numpy(), o.numpy()])
    np.testing.assert_allclose(ref, want.numpy(), rtol=1e-5, atol=1e-5)


def test_windows_that_read_past_the_end_or_subtract_are_refused_with_a_location():
    past = WINDOWED_GENERIC.replace("tensor<13x9xf32>", "tensor<11x9xf32>")
    with pytest.raises(CompileError, match=r"<input>:6:3: .*dimension #0 to be greater than or equal to 12, but found 11"):
        compile(past)
    minus = WINDOWED_GENERIC.replace("j * 2 + a + 1", "j * 2 - a + 3")
    with pytest.raises(CompileError, match=r"<input>:6:3: .*unsupported indexing map"):
        compile(minus)


def test_diagonal_and_constant_index_reads_are_windows_too():
    """x[i, i] (a dim twice) and x[i, 2] (a constant index other than a size-1 dim's 0) read
    through views; writing a diagonal is refused with a location (it crashed)."""
    text = """
func.func @f(%x: tensor<5x5xf32>, %o: tensor<5xf32>) -> tensor<5xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i, i)>, affine_map<(i) -> (i, 2)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x, %x : tensor<5x5xf32>, tensor<5x5xf32>) outs(%o : tensor<5xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  func.return %r : tensor<5xf32>
}
"""
    x = rand(5, 5)
    (got,) = compile(text)(on_device(x), on_device(torch.zeros(5)))
    assert torch.equal(got.cpu(), torch.diagonal(x) - x[:, 2])
    (ref,) = evaluate(load_program(text), [x.numpy(), np.zeros(5, np.float32)])
    np.testing.assert_array_equal(ref, (torch.diagonal(x) - x[:, 2]).numpy())
    write = """
func.func @f(%x: tensor<5x5xf32>, %y: tensor<5xf32>) -> tensor<5x5xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i, i)>], iterator_types = ["parallel"]} ins(%y : tensor<5xf32>) outs(%x : tensor<5x5xf32>) {
  ^bb0(%a: f32, %c: f32):
    linalg.yield %a : f32
  } -> tensor<5x5xf32>
  func.return %r : tensor<5x5xf32>
}
"""
    with pytest.raises(CompileError, match=r"<input>:3:3: .*unsupported indexing map \(d0\) -> \(d0, d0\)"):
        compile(write)


PADDED = """
func.func @f(%x: tensor<2x7x6x3xf32>, %w: tensor<3x3x3x4xf32>) -> (tensor<2x7x6x4xf32>, tensor<2x4x3x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x7x6x3xf32> to tensor<2x9x8x3xf32>
  %e = tensor.empty() : tensor<2x7x6x4xf32>
  %o = linalg.fill ins(%zero : f32) outs(%e : tensor<2x7x6x4xf32>) -> tensor<2x7x6x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf ins(%p, %w : tensor<2x9x8x3xf32>, tensor<3x3x3x4xf32>) outs(%o : tensor<2x7x6x4xf32>) -> tensor<2x7x6x4xf32>
  %q = tensor.pad %c low[0, 1, 0, 0] high[0, 0, 0, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    %ninf = arith.constant 0xFF800000 : f32
    tensor.yield %ninf : f32
  } : tensor<2x7x6x4xf32> to tensor<2x8x6x4xf32>
  %ninf2 = arith.constant 0xFF800000 : f32
  %e2 = tensor.empty() : tensor<2x4x3x4xf32>
  %o2 = linalg.fill ins(%ninf2 : f32) outs(%e2 : tensor<2x4x3x4xf32>) -> tensor<2x4x3x4xf32>
  %k = tensor.empty() : tensor<2x2xf32>
  %m = linalg.pooling_nhwc_max {strides = dense<2> : tensor<2xi64>} ins(%q, %k : tensor<2x8x6x4xf32>, tensor<2x2xf32>) outs(%o2 : tensor<2x4x3x4xf32>) -> tensor<2x4x3x4xf32>
  func.return %c, %m : tensor<2x7x6x4xf32>, tensor<2x4x3x4xf32>
}
"""


def test_padded_convolution_then_padded_pooling():
    """`tensor.pad` (static, a constant: zeros before a 'same' convolution,
    -inf before a max pooling of the convolution's result) runs on the host
    between kernels, checked against torch's F.pad."""
    x, w = rand(2, 7, 6, 3), rand(3, 3, 3, 4, seed=1)
    conv, pooled = compile(PADDED)(on_device(x), on_device(w))
    want = F.conv2d(x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1), padding=1)
    assert torch.allclose(conv.cpu(), want.permute(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    want_pool = F.max_pool2d(F.pad(want, (0, 0, 1, 0), value=float("-inf")), 2)
    assert torch.allclose(pooled.cpu(), want_pool.permute(0, 2, 3, 1), rtol=1e-4, atol=1e-4)
    ref = evaluate(load_program(PADDED), [x.numpy(), w.numpy()])
    for got, r in zip((conv, pooled), ref, strict=True):
        assert relative_error(got.cpu().numpy(), r) < 1e-5


def test_a_pad_with_a_computed_value_is_refused_with_a_location():
    text = PADDED.replace("    tensor.yield %zero : f32", "    %v = arith.addf %zero, %zero : f32\n    tensor.yield %v : f32")
    with pytest.raises(CompileError, match=r"<input>:4:3: .*tensor.pad.*pads with dynamic sizes or a computed value"):
        compile(text)


def _conv(op, x, w, out, attrs="") -> str:
    return named_program(op, x, w, out, attrs)


PAD_RETURNED = """
func.func @f(%x: tensor<4x4xf32>) -> tensor<{res}xf32> {{
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[{low}] high[0, 0] {{
  ^bb0(%i: index, %j: index):
    {body}
  }} : tensor<4x4xf32> to tensor<{res}xf32>
  func.return %p : tensor<{res}xf32>
}}
"""

MALFORMED = {
    "channels disagree": (_conv("conv_2d_nhwc_hwcf", (1, 6, 6, 4), (3, 3, 3, 2), (1, 4, 4, 2)),
                          r"<input>:6:3: .*gives loop d6 two sizes \(4 and 3\)"),
    "input rank": (_conv("conv_2d_nchw_fchw", (3, 6, 6), (2, 3, 3, 3), (1, 2, 4, 4)),
                   r"<input>:6:3: .*operand #0 must have rank 4"),
    "window rank": (_conv("pooling_nchw_max", (1, 3, 6, 6), (3,), (1, 3, 4, 4)),
                    r"<input>:6:3: .*operand #1 must have rank 2"),
    "float strides": (_conv("conv_2d_nchw_fchw", (1, 3, 6, 6), (2, 3, 3, 3), (1, 2, 2, 2),
                            "{strides = dense<2.0> : tensor<2xf32>}"),
                      r"<input>:6:3: .*needs strides of type tensor<2xi64> or vector<2xi64>"),
    "one stride for two dims": (_conv("conv_2d_nchw_fchw", (1, 3, 6, 6), (2, 3, 3, 3), (1, 2, 2, 2),
                                      "{strides = dense<2> : tensor<1xi64>}"),
                                r"<input>:6:3: .*needs strides of type tensor<2xi64>"),
    "conv_2d takes no strides": (_conv("conv_2d", (6, 6), (3, 3), (2, 2), attrs((2, 2), (1, 1))),
                                 r"<input>:6:3: .*takes no strides"),
    "product of dims": (WINDOWED_GENERIC.replace("j * 2 + a + 1", "j * a"),
                        r"<input>:2:39: .*unsupported affine expression"),
    "computed pad value, returned": (
        PAD_RETURNED.format(res="5x4", low="1, 0",
                            body="%v = arith.addf %z, %z : f32\n    tensor.yield %v : f32"),
        r"<input>:4:3: .*pads with dynamic sizes or a computed value"),
    "pad result type": (PAD_RETURNED.format(res="6x6", low="1, 1", body="tensor.yield %z : f32"),
                        r"<input>:4:3: .*the result is \[5, 5\], not tensor<6x6xf32>"),
    "negative pad": (PAD_RETURNED.format(res="3x5", low="-1, 1", body="tensor.yield %z : f32"),
                     r"<input>:4:3: .*pads by a negative amount"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_windows_and_pads_are_refused_with_a_location(case):
    """Each was a traceback, a silent slice or a wrong result before (an
    adversarial round on the convolution support)."""
    text, message = MALFORMED[case]
    with pytest.raises(CompileError, match=message):
        compile(text)


WINDOW_OF = """
func.func @f(%s: tensor<f32>, %w: tensor<3xf32>) -> tensor<4xf32> {
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<6xf32>
  %g = linalg.generic {indexing_maps = [SRC_MAP, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(SRC) outs(%e : tensor<6xf32>) {
  ^bb0(ARGS %o: f32):
    BODY
  } -> tensor<6xf32>
  %z = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4xf32>
  %acc = linalg.fill ins(%z : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, k) -> (i + k)>, affine_map<(i, k) -> (k)>, affine_map<(i, k) -> (i)>], iterator_types = ["parallel", "reduction"]} ins(%g, %w : tensor<6xf32>, tensor<3xf32>) outs(%acc : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %m, %c : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  func.return %r : tensor<4xf32>
}
"""


@pytest.mark.parametrize("case,src,args,body,want", [
    ("exp of a constant", "%one : f32", "%a: f32,", "%y = math.exp %a : f32\n    linalg.yield %y : f32",
     [3 * 2.718281828] * 4),
    ("broadcast of a 0-d argument", "%s : tensor<f32>", "%a: f32,",
     "%y = math.exp %a : f32\n    linalg.yield %y : f32", [3 * 2.718281828] * 4),
    ("iota", "", "", "%i = linalg.index 0 : index\n    %n = arith.index_cast %i : index to i32\n"
     "    %y = arith.sitofp %n : i32 to f32\n    linalg.yield %y : f32", [3.0, 6.0, 9.0, 12.0]),
])  # fmt: skip
def test_windows_of_values_computed_without_tensors(case, src, args, body, want):
    """A 3-wide window sum (weights of 1) over a generic with no tensor inputs: its payload
    (exp of a constant, of a 0-d argument; an iota) must survive (a fill's
    shortcut once dropped the exp; the others were refused)."""
    src_map = "affine_map<(i) -> ()>" if src else ""
    text = (WINDOW_OF.replace("SRC_MAP, ", src_map + ", " if src else "").replace("ins(SRC) ", f"ins({src}) " if src else "")
            .replace("ARGS", args).replace("BODY", body))  # fmt: skip
    (got,) = compile(text)(on_device(torch.tensor(1.0)), on_device(torch.ones(3)))
    assert torch.allclose(got.cpu(), torch.tensor(want), rtol=1e-5)
    (ref,) = evaluate(load_program(text), [np.float32(1.0), np.ones(3, np.float32)])
    assert np.allclose(ref, want, rtol=1e-5)


def test_integer_pads_and_converting_fills_keep_their_values():
    """An i64 pad value past 2**53 (F.pad takes a float), a reshaped fill that
    converts its value (the reshape fold rebuilt xDSL's non-converting fill), an
    i1 fill into f32 refused (upstream's signedness for i1 is not ours to guess)."""
    text = """
func.func @f(%x: tensor<2xi64>) -> (tensor<4xi64>, tensor<2x2xf32>) {
  %p0 = arith.constant 9007199254740993 : i64
  %p = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %p0 : i64
  } : tensor<2xi64> to tensor<4xi64>
  %c = arith.constant 7 : i32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%c : i32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = tensor.expand_shape %f [[0, 1]] output_shape [2, 2] : tensor<4xf32> into tensor<2x2xf32>
  func.return %p, %r : tensor<4xi64>, tensor<2x2xf32>
}
"""
    x = torch.tensor([2**62 + 1, -3], dtype=torch.int64)
    p, r = compile(text)(on_device(x))
    assert p.cpu().tolist() == [9007199254740993, 2**62 + 1, -3, 9007199254740993]
    assert r.cpu().tolist() == [[7.0, 7.0], [7.0, 7.0]]
    ref_p, ref_r = evaluate(load_program(text), [x.numpy()])
    assert ref_p.tolist() == p.cpu().tolist() and ref_r.tolist() == r.cpu().tolist()
    i1 = text.replace("%c = arith.constant 7 : i32", "%c = arith.constant true").replace("ins(%c : i32)", "ins(%c : i1)")
    with pytest.raises(CompileError, match=r"<input>:10:3: .*converts between i1 and f32"):
        compile(i1)


def test_integer_matmul_convolution_and_pooling_are_exact():
    """i8 operands into an i32 accumulator (upstream's cast_signed: sign
    extension), and integer pooling (maxsi/minsi/addi): exactly torch's."""
    gen = torch.Generator().manual_seed(7)
    x = torch.randint(-100, 100, (2, 3, 9, 8), generator=gen, dtype=torch.int8)
    w = torch.randint(-100, 100, (4, 3, 3, 2), generator=gen, dtype=torch.int8)
    text = named_program("conv_2d_nchw_fchw", x.shape, w.shape, (2, 4, 4, 7), attrs((2, 1), (1, 1)),
                         init="0", dtype="i8", acc="i32")  # fmt: skip
    (got,) = compile(text)(on_device(x), on_device(w))
    want = F.conv2d(x.double(), w.double(), stride=(2, 1))
    assert torch.equal(got.cpu().double(), want)
    a, b = x.reshape(18, 24)[:, :20], w.reshape(12, 6)[:6]
    mm = named_program("matmul", (18, 20), (20, 6), (18, 6), init="0", dtype="i8", acc="i32")
    (got,) = compile(mm)(on_device(a.contiguous()), on_device(torch.cat([b, b, b, b])[:20].contiguous()))
    assert torch.equal(got.cpu().double(), a.double() @ torch.cat([b, b, b, b])[:20].double())
    xi = torch.randint(-100, 100, (2, 3, 8, 8), generator=gen, dtype=torch.int32)
    pools = {"max": ("-128", F.max_pool2d(xi.double(), 2)), "min": ("127", -F.max_pool2d(-xi.double(), 2)),
             "sum": ("0", F.avg_pool2d(xi.double(), 2) * 4)}  # fmt: skip
    for kind, (init, want) in pools.items():
        text = named_program(f"pooling_nchw_{kind}", xi.shape, (2, 2), (2, 3, 4, 4), attrs((2, 2), (1, 1)),
                             init=init, dtype="i32", acc="i32")  # fmt: skip
        (got,) = compile(text)(on_device(xi), on_device(torch.zeros(2, 2, dtype=torch.int32)))
        assert torch.equal(got.cpu().double(), want), kind


def test_strides_and_dilations_as_torch_mlir_prints_them():
    """`dense<..> : vector<2xi64>`, torch-mlir's form (it was refused)."""
    x, w = rand(1, 3, 14, 13), rand(8, 3, 3, 3, seed=1)
    vec = "{dilations = dense<[1, 2]> : vector<2xi64>, strides = dense<2> : vector<2xi64>}"
    text = named_program("conv_2d_nchw_fchw", x.shape, w.shape, (1, 8, 6, 5), vec)
    want = F.conv2d(x, w, stride=2, dilation=(1, 2))
    assert torch.allclose(run(text, x, w), want, rtol=1e-4, atol=1e-4)


def conv_chain(returns_middle: bool = False) -> str:
    """A 1x1 convolution + ReLU, zero-padded, then a 3x3 one, NCHW (a bottleneck's
    first half), optionally returning the 1x1's result too."""
    mid, pad, out = "tensor<2x16x6x5xf32>", "tensor<2x16x8x7xf32>", "tensor<2x8x6x5xf32>"
    results = f"{out}, {mid}" if returns_middle else out
    returned = f"%r, %m : {out}, {mid}" if returns_middle else f"%r : {out}"
    return f"""
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @f(%x: tensor<2x12x6x5xf32>, %w1: tensor<16x12x1x1xf32>, %w2: tensor<8x16x3x3xf32>) -> ({results}) {{
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : {mid}
  %o1 = linalg.fill ins(%z : f32) outs(%e1 : {mid}) -> {mid}
  %c1 = linalg.conv_2d_nchw_fchw {attrs((1, 1), (1, 1))} ins(%x, %w1 : tensor<2x12x6x5xf32>, tensor<16x12x1x1xf32>) outs(%o1 : {mid}) -> {mid}
  %m = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}} ins(%c1 : {mid}) outs(%e1 : {mid}) {{
  ^bb0(%a: f32, %b: f32):
    %y = arith.maximumf %a, %z : f32
    linalg.yield %y : f32
  }} -> {mid}
  %p = tensor.pad %m low[0, 0, 1, 1] high[0, 0, 1, 1] {{
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %z : f32
  }} : {mid} to {pad}
  %e2 = tensor.empty() : {out}
  %o2 = linalg.fill ins(%z : f32) outs(%e2 : {out}) -> {out}
  %r = linalg.conv_2d_nchw_fchw {attrs((1, 1), (1, 1))} ins(%p, %w2 : {pad}, tensor<8x16x3x3xf32>) outs(%o2 : {out}) -> {out}
  func.return {returned}
}}
"""


def test_a_convolution_input_between_kernels_is_stored_channels_last():
    """`choose-layouts`: the 1x1 convolution's result, which only the 3x3 one reads
    (through its pad and window), is allocated with the channels innermost; the
    1x1's kernel writes it into the padded tensor's interior (no copy), the 3x3's
    reads it through its strides. Returned, it stays NCHW and is copied into the pad."""
    x, w1, w2 = rand(2, 12, 6, 5), rand(16, 12, 1, 1, seed=1), rand(8, 16, 3, 3, seed=2)
    prog = compile(conv_chain())
    assert prog.source.count("torch.empty_permuted(") == 1  # the pad, the 1x1 writes into it
    assert "(2, 16, 8, 7), (0, 2, 3, 1)" in prog.source
    assert "    m = p[0:2, 0:16, 1:7, 1:6]\n" in prog.source
    (out,) = prog(*(on_device(a) for a in (x, w1, w2)))
    want = F.conv2d(F.pad(F.relu(F.conv2d(x, w1)), (1, 1, 1, 1)), w2)
    assert torch.allclose(out.cpu(), want, rtol=1e-4, atol=1e-4)
    (ref,) = evaluate(load_program(conv_chain()), [x.numpy(), w1.numpy(), w2.numpy()])
    assert relative_error(out.cpu().numpy(), ref) < 1e-5
    returned = compile(conv_chain(returns_middle=True))
    assert "empty_permuted" not in returned.source
    assert "p[0:2, 0:16, 1:7, 1:6] = m" in returned.source
    out2, mid = returned(*(on_device(a) for a in (x, w1, w2)))
    assert mid.is_contiguous() and torch.allclose(out2.cpu(), want, rtol=1e-4, atol=1e-4)


def one_by_one(batch: int, cin: int, cout: int, h: int, w: int, stride: int = 1) -> str:
    """A 1x1 convolution (as torch-mlir prints it: named, f32 accumulator), a
    per-channel scale, a residual add and a ReLU: a bottleneck's last third."""
    oh, ow = out_size(h, 1, stride, 1), out_size(w, 1, stride, 1)
    x, wt, s, out = _t((batch, cin, h, w)), _t((cout, cin, 1, 1)), _t((cout,)), _t((batch, cout, oh, ow))
    return f"""
func.func @f(%x: {x}, %w: {wt}, %s: {s}, %res: {out}) -> {out} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : {out}
  %o = linalg.fill ins(%z : f32) outs(%e : {out}) -> {out}
  %c = linalg.conv_2d_nchw_fchw {attrs((stride, stride), (1, 1))} ins(%x, %w : {x}, {wt}) outs(%o : {out}) -> {out}
  %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d1)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}} ins(%c, %s, %res : {out}, {s}, {out}) outs(%e : {out}) {{
  ^bb0(%a: f32, %k: f32, %b: f32, %u: f32):
    %m = arith.mulf %a, %k : f32
    %y = arith.addf %m, %b : f32
    %relu = arith.maximumf %y, %z : f32
    linalg.yield %relu : f32
  }} -> {out}
  func.return %r : {out}
}}
"""


@pytest.mark.parametrize("shape", [(2, 12, 16, 7, 5), (1, 8, 24, 1, 9), (3, 16, 8, 6, 6)])
def test_a_1x1_convolution_runs_over_flattened_positions(shape):
    """fold-unit-dims drops the one-tap window loops, propagate-reshapes merges the
    output rows and columns (the innermost dims of input and output): the kernel
    reads the input as [B, C, H*W] and tiles positions, not one row; the epilogue
    (scale, residual, ReLU) runs in the merged space, one kernel."""
    b, cin, cout, h, w = shape
    x, wt, s, res = rand(b, cin, h, w), rand(cout, cin, 1, 1, seed=1), rand(cout, seed=2), rand(b, cout, h, w, seed=3)
    text = one_by_one(b, cin, cout, h, w)
    prog = compile(text)
    assert len(prog.kernels) == 1
    assert f"x.reshape(({b}, {cin}, {h * w}))" in prog.source
    out = run(text, x, wt, s, res)
    want = F.relu(F.conv2d(x, wt) * s[None, :, None, None] + res)
    assert torch.allclose(out, want, rtol=1e-4, atol=1e-4)


def test_a_strided_1x1_convolution_keeps_its_rows_and_columns():
    """Stride 2: the input is read at 2 oh, 2 ow, a window, not a projection: no merge."""
    x, wt, s, res = rand(2, 8, 9, 7), rand(6, 8, 1, 1, seed=1), rand(6, seed=2), rand(2, 6, 5, 4, seed=3)
    text = one_by_one(2, 8, 6, 9, 7, stride=2)
    prog = compile(text)
    assert "reshape((2, 8, 63))" not in prog.source and len(prog.kernels) == 1
    out = run(text, x, wt, s, res)
    want = F.relu(F.conv2d(x, wt, stride=2) * s[None, :, None, None] + res)
    assert torch.allclose(out, want, rtol=1e-4, atol=1e-4)


def test_a_convolution_tiles_the_columns_its_input_reads_contiguously():
    """An NCHW convolution's MMA M side is the output columns (the input's innermost
    dim), not the batch, though the batch is longer: per-pixel tiles of 32 images read
    every element from its own sector (the ResNet bottleneck at 28 x 28: 139 -> 45 us)."""
    prog = compile(one_by_one(32, 64, 128, 56, 56, stride=2))  # 28 x 28 outputs, 32 images
    assert re.search(r"# tile 1x128x1x32x\d+\(loop\), grid 32x1x28x1,", prog.source)
    x, wt, s, res = rand(18, 4, 33, 33), rand(8, 4, 1, 1, seed=1), rand(8, seed=2), rand(18, 8, 17, 17, seed=3)
    out = run(one_by_one(18, 4, 8, 33, 33, stride=2), x, wt, s, res)
    want = F.relu(F.conv2d(x, wt, stride=2) * s[None, :, None, None] + res)
    assert torch.allclose(out, want, rtol=1e-4, atol=1e-4)


def test_a_3x3_filter_is_copied_channels_innermost_before_the_launch():
    """The kernel reads the filter in [F, C] tiles, one tap at a time: C at stride
    9 would be loaded per element, so the host copies it with C innermost first
    (`choose-layouts`' input_layouts); a filter passed so already is not copied.
    Same numbers either way."""
    x, w = rand(2, 16, 9, 8), rand(8, 16, 3, 3, seed=1)
    text = named_program("conv_2d_nchw_fchw", x.shape, w.shape, (2, 8, 7, 6), attrs((1, 1), (1, 1)))
    prog = compile(text)
    assert "    w = _in_order(w, (0, 2, 3, 1))\n" in prog.source
    want = F.conv2d(x, w)
    assert torch.allclose(run(text, x, w), want, rtol=1e-4, atol=1e-4)
    already = w.contiguous(memory_format=torch.channels_last)
    (out,) = prog(on_device(x), on_device(already))
    assert torch.allclose(out.cpu(), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("shape", "order", "split"), [
    ((2, 16, 9, 8), (0, 2, 3, 1), (1, 2)),     # NCHW -> NHWC
    ((3, 70, 65), (0, 2, 1), (1, 2)),          # a batched transpose, edge tiles both ways
    ((130, 7), (1, 0), (0, 1)),                # a matrix
    ((2, 3, 4, 5, 6), (0, 1, 4, 2, 3), (2, 4)),  # two leading dims kept, two moved back
])  # fmt: skip
def test_an_argument_is_copied_into_its_order_by_a_batched_transpose(shape, order, split):
    """The host's copy of an argument into another order (`host_prelude._in_order`):
    on a GPU a row-major argument whose order moves trailing dims to the front is
    one `_transpose_kernel` launch; run here in the interpreter, against torch."""
    from tilefuse.backend.triton import host_prelude as hp

    t = torch.arange(np.prod(shape), dtype=torch.float32).reshape(shape)
    assert hp._transpose_split(t, order) == split
    out = hp._transposed(t, *split).reshape(t.permute(order).shape)
    assert torch.equal(out, t.permute(order))


@pytest.mark.parametrize(("shape", "order"), [
    ((2, 3, 4, 5), (0, 2, 1, 3)),  # H and C swapped, W kept: not a moved tail
    ((2, 3, 4), (1, 0, 2)),        # the same in 3 dims
    ((2, 3, 4, 5), (0, 3, 2, 1)),  # reversed after the batch
])  # fmt: skip
def test_other_orders_are_copied_by_torch(shape, order):
    from tilefuse.backend.triton import host_prelude as hp

    t = torch.zeros(shape)
    assert hp._transpose_split(t, order) is None
    moved_tail = (*range(1, len(shape)), 0)  # (every dim but the first in front of it)
    assert hp._transpose_split(t, moved_tail) == (0, 1)
    assert hp._transpose_split(t.transpose(0, 1), moved_tail) is None  # (not row-major)


class _PatchTokens(nn.Module):
    """A patch embedding read as tokens (ViT's `flatten(2).transpose(1, 2)`, a class
    token before them or not), then a LayerNorm over the channels: or, `over="positions"`,
    a LayerNorm over each channel's positions (reads along the innermost dim)."""

    def __init__(self, cls: bool, over: str = "channels"):
        super().__init__()
        self.patch, self.cls, self.over = nn.Conv2d(3, 768, 4, stride=4), cls, over
        self.token = nn.Parameter(torch.randn(1, 1, 768))

    def forward(self, x):
        y = self.patch(x).flatten(2)
        if self.over == "positions":
            return F.layer_norm(y, (y.shape[-1],))
        y = y.transpose(1, 2)
        if self.cls:
            y = torch.cat((self.token.expand(y.shape[0], -1, -1), y), dim=1)
        return F.layer_norm(y, (768,))


@pytest.mark.parametrize("cls", [False, True])
def test_a_convolution_read_across_its_channels_is_stored_channels_last(cls):
    """`choose-layouts`: a convolution's result that a LayerNorm reads along the
    channels (a tile, or with a class token a gather, of all 768 channels and a position
    or two) is stored channels-last, so the LayerNorm's reads are contiguous (ViT's first
    LayerNorm read the NCHW result 196 elements apart); the numbers as eager's."""
    pytest.importorskip("torch_mlir")
    import tilefuse.torch as tt

    torch.manual_seed(0)
    model, x = _PatchTokens(cls).eval(), torch.randn(2, 3, 24, 20)
    with torch.no_grad():
        prog = tt.compile(model, x, target="h100")
        got, want = prog(x), model(x)
    assert "torch.empty_permuted((2, 768, 6, 5), (0, 2, 3, 1)" in prog.program.source
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_convolution_read_along_its_rows_stays_row_major():
    """Read along its innermost dim (a LayerNorm over each channel's positions), the
    result keeps its order."""
    pytest.importorskip("torch_mlir")
    import tilefuse.torch as tt

    torch.manual_seed(0)
    model, x = _PatchTokens(False, "positions").eval(), torch.randn(2, 3, 24, 20)
    with torch.no_grad():
        prog = tt.compile(model, x, target="h100")
        got, want = prog(x), model(x)
    assert "empty_permuted" not in prog.program.source
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)
