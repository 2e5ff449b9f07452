"""Adversarial tests of `merge-positions`' long outermost loop: a side of a
contraction (a convolution's image, row and column loops) merges into one loop of
positions also when ONE of its loops is `MERGE_BELOW` (58) or longer, if that loop
is the factor's outermost dim (a batch of 58+ images at a few pixels), and stays as
it is when the long loop is any other (wide rows, a batch that is not the factor's
outermost dim, two long loops).

Each case is compiled (MLIR text through `tilefuse.runtime.compile`, or an
`nn.Module` through `tilefuse.torch.compile`), checked for which groups were merged
(`GroupOp.merged`, and the tile comment's "; positions merged:"), run (Triton's
interpreter without a GPU) and compared with torch eager in f32 on the CPU
(rtol = atol = 1e-4). Batches are 58..200, channels and images tiny."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.device import DEVICE, on_device
from tests.eager import Fn
from tests.test_convolution import attrs, named_program, rand
from tilefuse.ir.tilefuse import GroupOp
from tilefuse.passes.merge_positions import MERGE_BELOW
from tilefuse.runtime.compiled import compile

TOL = {"rtol": 1e-4, "atol": 1e-4}
REPORTED = "; positions merged:"


def merged_groups(module) -> list[GroupOp]:
    return [g for g in module.walk() if isinstance(g, GroupOp) and g.merged]


def _t(*shape: int) -> str:
    return f"tensor<{'x'.join(map(str, shape))}xf32>"


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    got = got.float().cpu()
    assert got.shape == want.shape
    diff = (got - want).abs().max().item()
    assert torch.allclose(got, want, **TOL), f"max abs difference {diff}"


def test_the_batches_here_are_long():
    assert MERGE_BELOW == 58  # (the batches below are >= 58: the new rule, not the old one)


# -- named convolutions in MLIR -------------------------------------------------------

# name: (op, input, filter, output, strides, dilations, torch's result from (x, w))
NAMED = {
    "2x2 patches, 64 images": (
        "conv_2d_nchw_fchw", (64, 3, 4, 4), (8, 3, 2, 2), (64, 8, 2, 2), (2, 2), (1, 1),
        lambda x, w: F.conv2d(x, w, stride=2)),
    "4x4 patches, 70 images": (
        "conv_2d_nchw_fchw", (70, 3, 8, 8), (8, 3, 4, 4), (70, 8, 2, 2), (4, 4), (1, 1),
        lambda x, w: F.conv2d(x, w, stride=4)),
    "58 images (the least long batch)": (
        "conv_2d_nchw_fchw", (58, 2, 3, 3), (4, 2, 2, 2), (58, 4, 2, 2), (1, 1), (1, 1),
        lambda x, w: F.conv2d(x, w)),
    "strided 3x3, 61 images: 549 positions": (
        "conv_2d_nchw_fchw", (61, 2, 7, 7), (4, 2, 3, 3), (61, 4, 3, 3), (2, 2), (1, 1),
        lambda x, w: F.conv2d(x, w, stride=2)),
    "dilated 3x3, 64 images": (
        "conv_2d_nchw_fchw", (64, 2, 9, 10), (4, 2, 3, 3), (64, 4, 3, 3), (2, 2), (2, 2),
        lambda x, w: F.conv2d(x, w, stride=2, dilation=2)),
    "NHWC x HWCF, 64 images": (
        "conv_2d_nhwc_hwcf", (64, 5, 5, 4), (3, 3, 4, 8), (64, 3, 3, 8), (1, 1), (1, 1),
        lambda x, w: F.conv2d(x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1)).permute(0, 2, 3, 1)),
    "NHWC x HWCF strided, 61 images": (
        "conv_2d_nhwc_hwcf", (61, 7, 6, 3), (3, 2, 3, 8), (61, 3, 3, 8), (2, 2), (1, 1),
        lambda x, w: F.conv2d(x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1), stride=2).permute(0, 2, 3, 1)),
    "NHWC x FHWC, 64 images": (
        "conv_2d_nhwc_fhwc", (64, 5, 5, 4), (8, 3, 3, 4), (64, 3, 3, 8), (1, 1), (1, 1),
        lambda x, w: F.conv2d(x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2)).permute(0, 2, 3, 1)),
    "depthwise NHWC, 64 images": (
        "depthwise_conv_2d_nhwc_hwc", (64, 5, 4, 8), (3, 3, 8), (64, 3, 2, 8), (1, 1), (1, 1),
        lambda x, w: F.conv2d(x.permute(0, 3, 1, 2), w.permute(2, 0, 1)[:, None], groups=8).permute(0, 2, 3, 1)),
    "1-D NWC, 64 sequences": (
        "conv_1d_nwc_wcf", (64, 7, 3), (3, 3, 5), (64, 5, 5), (1,), (1,),
        lambda x, w: F.conv1d(x.permute(0, 2, 1), w.permute(2, 1, 0)).permute(0, 2, 1)),
    "3-D NDHWC, 60 volumes": (
        "conv_3d_ndhwc_dhwcf", (60, 3, 4, 3, 2), (2, 2, 2, 2, 4), (60, 2, 3, 2, 4), (1, 1, 1), (1, 1, 1),
        lambda x, w: F.conv3d(x.permute(0, 4, 1, 2, 3), w.permute(4, 3, 0, 1, 2)).permute(0, 2, 3, 4, 1)),
}  # fmt: skip

# the positions merged in the result: NCHW (n, h, w) = dims 0, 2, 3; channels last 0, 1, 2
RESULT_MERGE = {"conv_2d_nchw_fchw": ((0, 2, 3), (1,)), "conv_1d_nwc_wcf": ((0, 1), (2,)),
                "conv_3d_ndhwc_dhwcf": ((0, 1, 2, 3), (4,))}  # fmt: skip
CHANNELS_LAST = ((0, 1, 2), (3,))


@pytest.mark.parametrize("name", list(NAMED))
def test_a_long_batch_of_small_images_is_merged(name):
    op, xs, ws, out, strides, dilations, reference = NAMED[name]
    x, w = rand(*xs), rand(*ws, seed=1)
    prog = compile(named_program(op, xs, ws, out, attrs(strides, dilations)))
    (g,) = merged_groups(prog.module)
    positions = RESULT_MERGE.get(op, CHANNELS_LAST)
    assert g.result_merge(0) == positions
    assert g.input_merge(0) is not None and g.input_merge(0)[0][0] == 0  # (the images outermost)
    assert f"{REPORTED} result 0 dims {', '.join(map(str, positions[0]))}" in prog.source
    (got,) = prog(on_device(x), on_device(w))
    _close(got, reference(x, w))


@pytest.mark.parametrize(("n", "h", "w"), [(60, 3, 3), (97, 1, 5), (130, 2, 3)])
def test_a_1x1_convolution_over_a_long_batch_is_merged(n, h, w):
    """A 1x1's rows and columns are one dim already: (image, pixel) merged."""
    x, wt = rand(n, 4, h, w), rand(8, 4, 1, 1, seed=1)
    prog = compile(named_program("conv_2d_nchw_fchw", x.shape, wt.shape, (n, 8, h, w), attrs((1, 1), (1, 1))))
    (g,) = merged_groups(prog.module)
    assert g.result_merge(0) == ((0, 2), (1,))
    assert f"{REPORTED} result 0 dims 0, 2" in prog.source
    (got,) = prog(on_device(x), on_device(wt))
    _close(got, F.conv2d(x, wt))


def padded_conv_residual_relu(n: int, c: int, f: int, h: int, w: int) -> str:
    """A 3x3 convolution of an NCHW input padded by 1, + a residual, then ReLU."""
    x, wt, xp, y = _t(n, c, h, w), _t(f, c, 3, 3), _t(n, c, h + 2, w + 2), _t(n, f, h, w)
    return f"""
func.func @f(%x: {x}, %w: {wt}, %res: {y}) -> {y} {{
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {{
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  }} : {x} to {xp}
  %e = tensor.empty() : {y}
  %o = linalg.fill ins(%zero : f32) outs(%e : {y}) -> {y}
  %r = linalg.conv_2d_nchw_fchw {attrs((1, 1), (1, 1))} ins(%p, %w : {xp}, {wt}) outs(%o : {y}) -> {y}
  %s = linalg.add ins(%r, %res : {y}, {y}) outs(%e : {y}) -> {y}
  %relu = linalg.max ins(%s, %o : {y}, {y}) outs(%e : {y}) -> {y}
  func.return %relu : {y}
}}
"""


@pytest.mark.parametrize(("n", "h", "w"), [(64, 4, 4), (75, 3, 5)])
def test_a_padded_3x3_convolution_with_a_residual_and_relu(n, h, w):
    """The residual is read through the merge too (by division), as the result."""
    x, wt, res = rand(n, 4, h, w), rand(6, 4, 3, 3, seed=1), rand(n, 6, h, w, seed=2)
    prog = compile(padded_conv_residual_relu(n, 4, 6, h, w))
    (g,) = merged_groups(prog.module)
    assert g.result_merge(0) == ((0, 2, 3), (1,))
    assert ((0, 2, 3), (1,)) in [g.input_merge(i) for i in range(len(g.inputs))]  # (the residual)
    assert f"{REPORTED} result 0 dims 0, 2, 3" in prog.source
    (got,) = prog(*(on_device(t) for t in (x, wt, res)))
    _close(got, F.relu(F.conv2d(x, wt, padding=1) + res))


# a long loop that is not the input's outermost dim: each stays a side of its own
NOT_MERGED = {
    "wide rows, 2 images": ((2, 3, 3, 62), (4, 3, 3, 3), (2, 4, 1, 60)),
    "wide rows, 64 images (two long loops)": ((64, 2, 3, 60), (4, 2, 3, 3), (64, 4, 1, 58)),
    "tall images, 4 of them": ((4, 2, 60, 3), (4, 2, 3, 3), (4, 4, 58, 1)),
    "tall and narrow, 3 images": ((3, 2, 61, 4), (4, 2, 3, 3), (3, 4, 59, 2)),
}  # fmt: skip


@pytest.mark.parametrize("name", list(NOT_MERGED))
def test_a_long_loop_that_is_not_the_outermost_is_not_merged(name):
    xs, ws, out = NOT_MERGED[name]
    x, w = rand(*xs), rand(*ws, seed=1)
    prog = compile(named_program("conv_2d_nchw_fchw", xs, ws, out, attrs((1, 1), (1, 1))))
    assert not merged_groups(prog.module)
    assert REPORTED not in prog.source
    (got,) = prog(on_device(x), on_device(w))
    _close(got, F.conv2d(x, w))


def test_channels_last_wide_rows_and_contiguous_pixels_are_not_merged():
    """NHWC with 60 columns (long, not the outermost), and a 1x1 over 97 images
    whose 16 pixels are its input's innermost (contiguous) dim: neither merged."""
    x, w = rand(64, 3, 62, 4), rand(3, 3, 4, 8, seed=1)
    wide = compile(named_program("conv_2d_nhwc_hwcf", x.shape, w.shape, (64, 1, 60, 8), attrs((1, 1), (1, 1))))
    assert not merged_groups(wide.module)
    (got,) = wide(on_device(x), on_device(w))
    _close(got, F.conv2d(x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1)).permute(0, 2, 3, 1))
    x, w = rand(97, 4, 4, 4), rand(8, 4, 1, 1, seed=1)
    pixels = compile(named_program("conv_2d_nchw_fchw", x.shape, w.shape, (97, 8, 4, 4), attrs((1, 1), (1, 1))))
    assert not merged_groups(pixels.module)
    (got,) = pixels(on_device(x), on_device(w))
    _close(got, F.conv2d(x, w))


# -- contractions as generics: which tensor's outermost dim is the long loop ------------


def contraction(a: str, b: str, out: str, ext: dict[str, int], res: str | None) -> str:
    """sum_k a * b into `out` (loops: out's letters, then k), then (`res`: a tensor
    indexed by those letters) + res and ReLU."""
    loops = ", ".join([*out, "k"])
    outs = ", ".join(out)

    def amap(dims: str, over: str) -> str:
        return f"affine_map<({over}) -> ({', '.join(dims)})>"

    ta, tb, to = (_t(*(ext[d] for d in s)) for s in (a, b, out))
    par = ", ".join(['"parallel"'] * len(out))
    text = f"""
func.func @f(%a: {ta}, %b: {tb}{f", %r: {_t(*(ext[d] for d in res))}" if res else ""}) -> {to} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {to}
  %o = linalg.fill ins(%zero : f32) outs(%e : {to}) -> {to}
  %mm = linalg.generic {{indexing_maps = [{amap(a, loops)}, {amap(b, loops)}, {amap(out, loops)}],
                        iterator_types = [{par}, "reduction"]}}
      ins(%a, %b : {ta}, {tb}) outs(%o : {to}) {{
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }} -> {to}
"""
    if not res:
        return text + f"  func.return %mm : {to}\n}}\n"
    tr = _t(*(ext[d] for d in res))
    return text + f"""  %y = linalg.generic {{indexing_maps = [{amap(out, outs)}, {amap(res, outs)}, {amap(out, outs)}],
                       iterator_types = [{par}]}}
      ins(%mm, %r : {to}, {tr}) outs(%e : {to}) {{
  ^bb0(%x: f32, %z: f32, %unused: f32):
    %s = arith.addf %x, %z : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  }} -> {to}
  func.return %y : {to}
}}
"""


# name: (a, b, out, extents, residual, merge of the result or None (not merged))
CONTRACTIONS = {
    "batched rows, 64 x 5": ("btk", "kn", "btn", dict(b=64, t=5, k=8, n=6), "btn", ((0, 1), (2,))),
    "200 x 3, a bias per (image, row)": ("btk", "kn", "btn", dict(b=200, t=3, k=4, n=4), "bt", ((0, 1), (2,))),
    "a bias per (row, image), transposed": ("btk", "kn", "btn", dict(b=64, t=5, k=8, n=6), "tb", ((0, 1), (2,))),
    "stored [t, n, b]: the images innermost": ("btk", "kn", "tnb", dict(b=64, t=5, k=8, n=6), "btn", ((0, 2), (1,))),
    "stored [n, b, t]": ("btk", "kn", "nbt", dict(b=64, t=5, k=8, n=6), "tbn", ((0,), (1, 2))),
    "three loops merged": ("bstk", "kn", "bstn", dict(b=64, s=3, t=2, k=4, n=4), "bstn", ((0, 1, 2), (3,))),
    "the second factor's side": ("mk", "bkt", "mbt", dict(b=64, t=5, k=8, m=3), "mbt", ((0,), (1, 2))),
    "both factors with a side": ("btk", "mkn", "btmn", dict(b=60, t=5, k=4, m=70, n=4), None, ((0, 1), (2,), (3,))),
    # not merged
    "images not the factor's outermost": ("tbk", "kn", "btn", dict(b=64, t=5, k=8, n=6), "btn", None),
    "images the factor's innermost": ("tkb", "kn", "btn", dict(b=64, t=5, k=4, n=4), None, None),
    "two long loops": ("btk", "kn", "btn", dict(b=64, t=60, k=4, n=4), None, None),
    "rows of 16 contiguous": ("bkt", "kn", "btn", dict(b=64, t=16, k=4, n=4), None, None),
    "a bias per image only": ("btk", "kn", "btn", dict(b=64, t=5, k=8, n=6), "b", None),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CONTRACTIONS))
def test_a_contraction_merges_only_its_factors_long_outermost_dim(name):
    a, b, out, ext, res, merge = CONTRACTIONS[name]
    args = [rand(*(ext[d] for d in a)), rand(*(ext[d] for d in b), seed=1)]
    want = torch.einsum(f"{a},{b}->{out}", *args)
    if res:
        args.append(rand(*(ext[d] for d in res), seed=2))
        missing = "".join(d for d in out if d not in res)
        spread = torch.einsum(f"{res},{missing}->{out}", args[2], torch.ones([ext[d] for d in missing]))
        want = torch.relu(want + spread)
    prog = compile(contraction(a, b, out, ext, res))
    groups = merged_groups(prog.module)
    if merge is None:
        assert not groups and REPORTED not in prog.source
    else:
        (g,) = groups
        assert g.result_merge(0) == merge and REPORTED in prog.source
    (got,) = prog(*(on_device(t) for t in args))
    _close(got, want)


# -- torch modules --------------------------------------------------------------------


class PatchEmbed(nn.Module):
    """ViT's patch embedding: a convolution of kernel == stride with a bias, then
    `flatten(2).transpose(1, 2)` (and timm's optional norm)."""

    def __init__(self, patch: int, d: int, norm: bool = False):
        super().__init__()
        self.proj = nn.Conv2d(3, d, patch, stride=patch)
        self.norm = nn.LayerNorm(d) if norm else nn.Identity()

    def forward(self, x):
        return self.norm(self.proj(x).flatten(2).transpose(1, 2))


class DeitTokens(nn.Module):
    """The patches, a class token concatenated in front, + position embeddings."""

    def __init__(self, patch: int, d: int, n: int):
        super().__init__()
        self.proj = nn.Conv2d(3, d, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.randn(1, 1, d))
        self.pos_embed = nn.Parameter(torch.randn(1, n + 1, d))

    def forward(self, x):
        y = self.proj(x).flatten(2).transpose(1, 2)
        return torch.cat([self.cls_token.expand(x.shape[0], -1, -1), y], dim=1) + self.pos_embed


class Residual(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return F.relu(self.conv(x) + x)


class ConvNeXt(nn.Module):
    """A depthwise 7x7-like (here 3x3) convolution, channels-last LayerNorm, Linear."""

    def __init__(self, c: int):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c)
        self.ln, self.fc = nn.LayerNorm(c), nn.Linear(c, 2 * c)

    def forward(self, x):
        return self.fc(self.ln(self.dw(x).permute(0, 2, 3, 1))).permute(0, 3, 1, 2)


def _conv(x, w):
    return F.conv2d(x, w, padding=1)


def _w(f: int, c: int, k: int = 3) -> torch.Tensor:
    return torch.randn(f, c, k, k)


# name: (module, inputs, groups merged)
TORCH_CASES = {
    "ViT 2x2 patches, 64 images": (lambda: PatchEmbed(2, 8), lambda: [torch.randn(64, 3, 4, 4)], 1),
    "ViT 4x4 patches, 70 images": (lambda: PatchEmbed(4, 8), lambda: [torch.randn(70, 3, 8, 8)], 1),
    "ViT 4x4 patches then LayerNorm": (lambda: PatchEmbed(4, 8, norm=True), lambda: [torch.randn(64, 3, 8, 8)], 1),
    "DeiT tokens: cls cat + pos": (lambda: DeitTokens(2, 8, 4), lambda: [torch.randn(64, 3, 4, 4)], 1),
    "3x3 padded + residual + ReLU": (lambda: Residual(4), lambda: [torch.randn(64, 4, 5, 5)], 1),
    "strided 3x3, 976 positions": (lambda: nn.Conv2d(3, 8, 3, stride=2, padding=1),
                                   lambda: [torch.randn(61, 3, 7, 7)], 1),
    "7x7 stride 2 pad 3 stem": (lambda: nn.Conv2d(3, 4, 7, stride=2, padding=3), lambda: [torch.randn(64, 3, 3, 3)], 1),
    "1x1, 60 images": (lambda: nn.Conv2d(4, 8, 1), lambda: [torch.randn(60, 4, 3, 3)], 1),
    "1x1, 130 images": (lambda: nn.Conv2d(4, 8, 1), lambda: [torch.randn(130, 4, 2, 3)], 1),
    "1x1 stride 2 shortcut, 64 images": (lambda: nn.Conv2d(4, 8, 1, stride=2), lambda: [torch.randn(64, 4, 5, 5)], 1),
    "depthwise 3x3, 64 images": (lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8), lambda: [torch.randn(64, 8, 4, 4)], 1),
    "grouped 3x3, 64 images": (lambda: nn.Conv2d(4, 8, 3, padding=1, groups=2), lambda: [torch.randn(64, 4, 4, 3)], 1),
    "one row of output": (lambda: nn.Conv2d(3, 4, 3, padding=(0, 1)), lambda: [torch.randn(64, 3, 3, 5)], 1),
    "conv1d, 64 sequences": (lambda: nn.Conv1d(4, 8, 3, padding=1), lambda: [torch.randn(64, 4, 6)], 1),
    "conv3d, 60 volumes": (lambda: nn.Conv3d(2, 4, 3, padding=1), lambda: [torch.randn(60, 2, 3, 3, 2)], 1),
    "transposed 2x2 stride 2": (lambda: nn.ConvTranspose2d(4, 4, 2, stride=2), lambda: [torch.randn(64, 4, 3, 3)], 1),
    "ConvNeXt block": (lambda: ConvNeXt(4), lambda: [torch.randn(64, 4, 3, 3)], 1),
    "1x1 then 3x3 (two merged)": (lambda: nn.Sequential(nn.Conv2d(8, 4, 1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1)),
                                  lambda: [torch.randn(64, 8, 3, 4)], 2),
    "conv BN ReLU maxpool": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                                   nn.MaxPool2d(2)), lambda: [torch.randn(64, 3, 4, 4)], 1),
    "then a global pool": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.AdaptiveAvgPool2d(1), nn.Flatten()),
                           lambda: [torch.randn(64, 3, 4, 4)], 1),
    "NHWC in and out (permutes)": (lambda: Fn(lambda x, w: _conv(x.permute(0, 3, 1, 2), w).permute(0, 2, 3, 1)),
                                   lambda: [torch.randn(64, 5, 5, 4), _w(8, 4)], 1),
    "stored [f, n, h, w]": (lambda: Fn(lambda x, w: _conv(x, w).transpose(0, 1)),
                            lambda: [torch.randn(64, 3, 3, 4), _w(4, 3)], 1),
    "stored [h, w, n, f]": (lambda: Fn(lambda x, w: _conv(x, w).permute(2, 3, 0, 1)),
                            lambda: [torch.randn(64, 3, 3, 4), _w(4, 3)], 1),
    "then pixel shuffle": (lambda: Fn(lambda x, w: F.pixel_shuffle(_conv(x, w), 2)),
                           lambda: [torch.randn(64, 3, 3, 4), _w(4, 3)], 1),
    "one image expanded to 64": (lambda: Fn(lambda x, w: _conv(x.expand(64, -1, -1, -1), w)),
                                 lambda: [torch.randn(1, 3, 3, 4), _w(4, 3)], 1),
    "every other of 128 images": (lambda: Fn(lambda x, w: _conv(x[::2], w)),
                                  lambda: [torch.randn(128, 3, 3, 4), _w(4, 3)], 1),
    "then a spatial softmax": (lambda: Fn(lambda x, w: _conv(x, w).flatten(2).softmax(-1)),
                               lambda: [torch.randn(64, 3, 3, 4), _w(4, 3)], 1),
    "minus the batch mean (BN training)": (lambda: Fn(lambda x, w: (lambda y: y - y.mean(dim=(0, 2, 3), keepdim=True))
                                                      (_conv(x, w))), lambda: [torch.randn(64, 3, 4, 4), _w(4, 3)], 1),
    "reflection padded": (lambda: Fn(lambda x, w: F.conv2d(F.pad(x, (1, 1, 1, 1), mode="reflect"), w)),
                          lambda: [torch.randn(64, 3, 4, 4), _w(4, 3)], 1),
    # not merged
    "wide rows, 2 images": (lambda: nn.Conv2d(3, 4, 3, padding=1), lambda: [torch.randn(2, 3, 3, 60)], 0),
    # a tensor indexed by (f, h, w) but not the images: "some of the loops but not all"
    "+ a position embedding (no batch dim)": (lambda: Fn(lambda x, w, p: _conv(x, w) + p),
                                              lambda: [torch.randn(64, 3, 3, 4), _w(4, 3), torch.randn(1, 4, 3, 4)], 0),
    "times a per-image mean": (lambda: Fn(lambda x, w: _conv(x, w) * x.mean(dim=(1, 2, 3), keepdim=True)),
                               lambda: [torch.randn(64, 3, 4, 4), _w(4, 3)], 0),
}  # fmt: skip


def _compile_and_compare(module: nn.Module, inputs: list[torch.Tensor]):
    import tilefuse.torch as tt

    module = module.eval()
    with torch.no_grad():
        want = copy.deepcopy(module).cpu()(*inputs)  # (f32 eager on the CPU: no TF32)
        on = module.to(DEVICE)
        prog = tt.compile(on, *(x.to(DEVICE) for x in inputs))
        got = prog(*(x.to(DEVICE) for x in inputs))
    _close(got, want)
    return prog


@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_torch_module_over_a_long_batch_matches_eager(name):
    pytest.importorskip("torch_mlir")
    make, inputs, merged = TORCH_CASES[name]
    torch.manual_seed(0)
    prog = _compile_and_compare(make(), inputs())
    assert len(merged_groups(prog.program.module)) == merged
    assert sum(REPORTED in line for line in prog.program.source.splitlines()) == merged


def test_inputs_in_another_memory_layout_at_call_time():
    """Compiled for contiguous NCHW, called with a channels-last tensor and with a
    permuted view: the merged kernel reads through the strides it is given."""
    pytest.importorskip("torch_mlir")
    import tilefuse.torch as tt

    torch.manual_seed(0)
    module = nn.Conv2d(3, 4, 3, padding=1).eval()
    want_of = copy.deepcopy(module)
    with torch.no_grad():
        prog = tt.compile(module.to(DEVICE), torch.randn(64, 3, 4, 4, device=DEVICE))
        assert len(merged_groups(prog.program.module)) == 1
        for x in (torch.randn(64, 3, 4, 4).to(memory_format=torch.channels_last),
                  torch.randn(4, 4, 64, 3).permute(2, 3, 0, 1)):  # fmt: skip
            _close(prog(x.to(DEVICE)), want_of(x))


@pytest.mark.parametrize("bias", [False, True])  # (with a bias: split-accumulator-init
# once split a dynamic output, testing `-1` for xdsl's dynamic size, -2**63)
def test_a_dynamic_batch_is_never_merged(bias):
    """A batch marked dynamic is not a static extent: no merge, whatever its size."""
    pytest.importorskip("torch_mlir")
    import tilefuse.torch as tt

    torch.manual_seed(0)
    module = nn.Conv2d(3, 4, 3, padding=1, bias=bias).eval()
    reference = copy.deepcopy(module)
    x = torch.randn(64, 3, 3, 4).to(DEVICE)
    torch._dynamo.mark_dynamic(x, 0, min=2, max=256)
    with torch.no_grad():
        prog = tt.compile(module.to(DEVICE), x)
        assert not merged_groups(prog.program.module)
        for n in (64, 70):
            x = torch.randn(n, 3, 3, 4)
            _close(prog(x.to(DEVICE)), reference(x))
