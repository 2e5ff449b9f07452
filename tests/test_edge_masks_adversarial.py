"""Adversarial tests of two tile-and-fuse changes: gathers loaded through a mask, and
static attention key loops split into their whole chunks and a last, partial one.

- A gather from a kernel argument (a tile program's `tensor.extract`) whose index
  tile-and-fuse clamps for the lanes past the tile's extent (`tilefuse.edge_clamp`)
  loads through a mask to its dim (`other=0`); an axis whose index `value_range` proves
  inside its dim, reading no partial loop, is neither clamped nor masked
  (`tilefuse.in_bounds_axes`). The lanes past the extent now hold 0 where they held
  the edge element, so the cases make such a 0 visible wherever it could leak:
  concatenations, pads, rolls, flips, RoPE, embeddings, index_select, gather, unfold,
  pixel shuffles and interpolation at odd sizes, each feeding a max of negative
  values, a min of positive ones, a product, a softmax, a LayerNorm, or a matmul
  through a reciprocal or a log (1/0 = inf, and inf times a padded 0 is NaN); integer
  and bool tables; gathers into a dynamic dim (`torch._dynamo.mark_dynamic`) at many
  sizes.
- A static key dim its block does not divide (ViT's 197 tokens) is looped over its
  whole chunks without masks, then its last chunk masked (a branch). The cases: SDPA
  and hand-written attention at lengths around the blocks (1 to 577 keys), keys !=
  queries, head dims 32 to 128, f32 and bf16; additive, boolean, key-padding, causal
  (`is_causal`, a tril buffer, explicit, offset), sliding-window, ALiBi and
  relative-position masks (Swin's gathered table, T5's embedding); GQA; a KV-cache
  concat and RoPE read in the kernel; rows whose only live keys lie in the partial
  chunk, or none there; ViT, DeiT and CLIP blocks; the online softmax of long rows
  (`samples/softmax.mlir`); the warp-specialised Gluon kernel (emulated,
  `tests/gluon_emulator.py`); and the split kernels compiled for sm_90.

Each torch case is compiled by `tilefuse.torch.compile`, run (Triton's interpreter
without a GPU) and compared with torch eager in float64 (`tests/eager.py`): f32 within
5e-5 of each output's largest magnitude, bf16 within 2e-2; each also makes the base
commit's number of kernels (attention one). No wrong numbers were found. Two split
kernels spilled on sm_90 where the base commit's one masked loop did not (f32 dots at 197
keys: the FMA dot's body twice; bf16 at head dim 128 under a causal tril buffer: one
whole chunk), so a static key loop is split only where its dots are 16-bit and it has two
whole chunks or more (`tile_and_fuse._splits_static_keys`); the sm_90 cases here check
both stay spill-free. Cases that fail today are
`xfail(strict=True)`, each reason saying what fails and whether the base commit (before
the two changes) fails too."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import pytest

pytest.importorskip("torch_mlir")

import torch
import torch.nn.functional as F
from torch import nn

import tilefuse.torch as tt
from tests.attention_programs import attention_mlir
from tests.device import DEVICE, on_device
from tests.eager import Fn, assert_matches, eager64
from tests.gluon_emulator import gluon_in_place_of_triton
from tilefuse.backend.triton.emit import emit_module
from tilefuse.frontend.program import load_program
from tilefuse.gpu.check import check_programs
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime.compiled import compile as compile_program
from tilefuse.runtime.compiled import load
from tilefuse.torch.export import export

RTOL = {torch.float32: 5e-5, torch.bfloat16: 2e-2}
F32, BF16 = torch.float32, torch.bfloat16
Inputs = Callable[[torch.Generator], tuple]


@dataclass(frozen=True)
class Case:
    """A module, its inputs drawn from a seeded generator, and the kernels it makes."""

    make: Callable[[], nn.Module]
    inputs: Inputs
    kernels: int


def fn(f: Callable) -> Callable[[], nn.Module]:
    return lambda: Fn(f)


def randn(*shapes: tuple[int, ...]) -> Inputs:
    return lambda g: tuple(torch.randn(*s, generator=g) for s in shapes)


def neg(g: torch.Generator, *shape: int) -> torch.Tensor:
    """Values in [-1.5, -0.5): a 0 loaded in their place wins a max."""
    return -torch.rand(*shape, generator=g) - 0.5


def pos(g: torch.Generator, *shape: int) -> torch.Tensor:
    """Values in [0.5, 1.5): a 0 loaded in their place wins a min."""
    return torch.rand(*shape, generator=g) + 0.5


def near_one(g: torch.Generator, *shape: int) -> torch.Tensor:
    """Values in [0.95, 1.05): long products stay finite; a 0 zeroes them."""
    return torch.rand(*shape, generator=g) * 0.1 + 0.95


def ints(lo: int, hi: int, *shape: int) -> Callable[[torch.Generator], torch.Tensor]:
    return lambda g: torch.randint(lo, hi, shape, generator=g)


def run_case(case: Case, dtype: torch.dtype, seed: int = 0):
    """The case's module and inputs in `dtype` on `DEVICE`, compiled; its outputs and
    float64 eager's compared; the kernels counted."""
    torch.manual_seed(seed)
    model = case.make().eval().to(DEVICE, dtype)
    xs = case.inputs(torch.Generator().manual_seed(seed))
    xs = tuple(x.to(DEVICE, dtype) if x.is_floating_point() else x.to(DEVICE) for x in xs)
    with torch.no_grad():
        compiled = tt.compile(model, *xs)
        outputs = compiled(*xs)
    assert_matches(type(model).__name__, outputs, eager64(model, xs), RTOL[dtype])
    return compiled


def params(cases: dict[str, Case], bf16: set[str], xfail: dict[str, str]):
    for name in cases:
        for key, dtype in (("f32", F32), ("bf16", BF16)):
            if key == "bf16" and name not in bf16:
                continue
            why = xfail.get(name)
            marks = (pytest.mark.xfail(strict=True, reason=why),) if why else ()
            yield pytest.param(name, dtype, id=f"{name}-{key}", marks=marks)


# -- gathers ---------------------------------------------------------------------------


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, -1)
    return torch.cat([-b, a], -1)


class ClassToken(nn.Module):
    """ViT's class token cat onto the patch tokens, then a LayerNorm over the width."""

    def __init__(self, d: int):
        super().__init__()
        self.cls_token = nn.Parameter(torch.randn(1, 1, d))
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return self.norm(torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], 1))


def _embedding_ids(vocab: int, shape: tuple[int, ...]) -> Callable[[torch.Generator], torch.Tensor]:
    """Ids with the first and last rows of the table repeated."""

    def make(g: torch.Generator) -> torch.Tensor:
        ids = torch.randint(0, vocab, shape, generator=g)
        ids.view(-1)[:3] = vocab - 1
        ids.view(-1)[-2:] = 0
        return ids

    return make


def _cat_cases() -> dict[str, Case]:
    cases = {}
    for n in (1, 13, 197):
        cases[f"cat_rows_amax_{n}"] = Case(
            fn(lambda a, b: torch.cat([a, b]).amax(-1)), lambda g, n=n: (neg(g, 3, n), neg(g, 5, n)), 1)
        cases[f"cat_cols_amax_{n}"] = Case(
            fn(lambda a, b: torch.cat([a, b], 1).amax(-1)), lambda g, n=n: (neg(g, 3, n), neg(g, 3, 2)), 1)
    for n in (13, 197):
        cases[f"cat_cols_prod_{n}"] = Case(
            fn(lambda a, b: torch.cat([a, b], 1).prod(-1)), lambda g, n=n: (near_one(g, 3, n), near_one(g, 3, 2)), 1)
    cases["cat_cols_amin_13"] = Case(
        fn(lambda a, b: torch.cat([a, b], 1).amin(-1)), lambda g: (pos(g, 3, 13), pos(g, 3, 2)), 1)
    cases["cat_rows_prod_over_rows_17"] = Case(
        fn(lambda a, b: torch.cat([a, b]).prod(0)), lambda g: (near_one(g, 17, 5), near_one(g, 2, 5)), 1)
    for n in (5, 100):
        cases[f"cat_three_softmax_{n}"] = Case(
            fn(lambda a, b, c: torch.cat([a, b, c], 1).softmax(1)), randn((2, n, 3), (2, 1, 3), (2, 4, 3)), 1)
    cases["cat_layernorm_769"] = Case(
        fn(lambda a, b: F.layer_norm(torch.cat([a, b], 2), (769,))), randn((2, 3, 766), (2, 3, 3)), 1)
    for t, d in ((5, 13), (196, 100), (4, 769)):
        cases[f"class_token_layernorm_{t + 1}x{d}"] = Case(lambda d=d: ClassToken(d), randn((2, t, d)), 1)
    return cases


def _pad_roll_flip_cases() -> dict[str, Case]:
    cases = {
        "pad_constant_amax_13": Case(fn(lambda x: F.pad(x, (2, 3), value=-100.0).amax(-1)),
                                     lambda g: (neg(g, 4, 13),), 1),
        "pad_replicate_amin_13": Case(fn(lambda x: F.pad(x, (3, 2), mode="replicate").amin(-1)),
                                      lambda g: (pos(g, 2, 3, 13),), 1),
        "pad_circular_prod_13": Case(fn(lambda x: F.pad(x, (2, 3), mode="circular").prod(-1)),
                                     lambda g: (near_one(g, 2, 3, 13),), 1),
        "pad_reflect_2d_amax_13": Case(fn(lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect").amax((-1, -2))),
                                       lambda g: (neg(g, 1, 2, 13, 5),), 2),
        "roll_2d_cumsum_13": Case(fn(lambda x: torch.roll(x, (-3, 1), (0, 1)).cumsum(1)), randn((13, 7)), 1),
        "roll_by_the_length_3": Case(fn(lambda x: torch.roll(x, (-3, 1), (0, 1)).cumsum(1)), randn((3, 7)), 1),
        "unfold_amax_17": Case(fn(lambda x: x.unfold(1, 5, 2).amax(-1)), lambda g: (neg(g, 3, 17),), 1),
        "pixel_shuffle_amax": Case(fn(lambda x: F.pixel_shuffle(x, 3).amax(1)), lambda g: (neg(g, 1, 18, 5, 7),), 1),
        "pixel_unshuffle_amax": Case(fn(lambda x: F.pixel_unshuffle(x, 3).amax(1)),
                                     lambda g: (neg(g, 1, 2, 15, 9),), 1),
        "nearest_13x11_amax": Case(fn(lambda x: F.interpolate(x, size=(13, 11)).amax(-1)),
                                   lambda g: (neg(g, 1, 3, 5, 7),), 1),
        # (one kernel: the source indices' pointwise cone, from index ranges, is recomputed
        # where the gathers read it, `fusion_plan._pointwise_cone`; it was a kernel of its own)
        "bilinear_13x11_amin": Case(fn(lambda x: F.interpolate(x, size=(13, 11), mode="bilinear").amin(-1)),
                                    lambda g: (pos(g, 1, 3, 5, 7),), 1),
        "bilinear_align_corners_softmax": Case(
            fn(lambda x: F.interpolate(x, scale_factor=3, mode="bilinear", align_corners=True).softmax(-1)),
            randn((1, 3, 5, 7)), 1),
    }
    for n in (13, 100):
        cases[f"pad_reflect_softmax_{n}"] = Case(fn(lambda x: F.pad(x, (2, 1), mode="reflect").softmax(-1)),
                                                 randn((2, 3, n)), 1)
        cases[f"roll_amax_{n}"] = Case(fn(lambda x: torch.roll(x, 2, -1).amax(-1)), lambda g, n=n: (neg(g, 5, n),), 1)
        cases[f"flip_amax_amin_{n}"] = Case(fn(lambda x: x.flip(-1).amax(-1) + x.flip(0).amin(0).sum()),
                                            lambda g, n=n: (neg(g, 5, n),), 1)
    for t, hd in ((1, 6), (13, 34), (5, 80)):
        cases[f"rope_amax_{t}x{hd}"] = Case(
            fn(lambda q, c, s: (q * c + rotate_half(q) * s).amax(-1)),
            lambda g, t=t, hd=hd: (neg(g, 1, 3, t, hd), *randn((t, hd), (t, hd))(g)), 1)
    return cases


def _lookup_cases() -> dict[str, Case]:
    cases = {}
    for vocab, width in ((13, 7), (1000, 100), (5, 769)):
        cases[f"embedding_layernorm_{vocab}x{width}"] = Case(
            lambda v=vocab, w=width: nn.Sequential(nn.Embedding(v, w), nn.LayerNorm(w)),
            lambda g, v=vocab: (_embedding_ids(v, (2, 9))(g),), 1)
    for vocab, width in ((13, 7), (97, 17)):
        cases[f"f_embedding_amax_{vocab}x{width}"] = Case(
            fn(lambda i, w: F.embedding(i, w).amax(-1)),
            lambda g, v=vocab, w=width: (_embedding_ids(v, (2, 9))(g), neg(g, v, w)), 1)
    cases.update({
        "index_select_prod_97x17": Case(fn(lambda w, i: w.index_select(0, i).prod(-1)),
                                        lambda g: (near_one(g, 97, 17), _embedding_ids(97, (9,))(g)), 1),
        "gather_dim1_amax": Case(fn(lambda x, i: torch.gather(x, 1, i).amax(1)),
                                 lambda g: (neg(g, 5, 17), ints(0, 17, 5, 13)(g)), 1),
        "gather_dim0_amin": Case(fn(lambda x, i: torch.gather(x, 0, i).amin(0)),
                                 lambda g: (pos(g, 17, 5), ints(0, 17, 13, 5)(g)), 1),
        "take_along_dim_softmax": Case(fn(lambda x, i: torch.take_along_dim(x, i, 1).softmax(1)),
                                       lambda g: (torch.randn(3, 19, generator=g), ints(0, 19, 3, 11)(g)), 1),
        "cumsum_gather_amax": Case(fn(lambda x, i: torch.cumsum(x, -1).gather(-1, i).amax(-1)),
                                   lambda g: (neg(g, 4, 23), ints(0, 23, 4, 9)(g)), 2),
        "topk_gather_amax": Case(fn(lambda x, y: y.gather(-1, x.topk(5, -1).indices).amax(-1)),
                                 lambda g: (torch.randn(4, 23, generator=g), neg(g, 4, 23)), 4),
        "int_table_amax": Case(fn(lambda t, i: t[i].amax(-1)),
                               lambda g: (ints(-50, -1, 13, 7)(g), ints(0, 13, 9)(g)), 1),
        "int_cat_amin": Case(fn(lambda a, b: torch.cat([a, b], -1).amin(-1)),
                             lambda g: (ints(1, 50, 5, 13)(g), ints(1, 50, 5, 4)(g)), 1),
        "int_cat_prod": Case(fn(lambda a, b: torch.cat([a, b], -1).prod(-1)),
                             lambda g: (ints(1, 3, 5, 13)(g), ints(1, 3, 5, 4)(g)), 1),
        "int_floordiv_by_cat": Case(fn(lambda a, b, c: c // torch.cat([a, b], -1)),
                                    lambda g: (ints(1, 5, 5, 13)(g), ints(1, 5, 5, 4)(g), ints(0, 100, 5, 17)(g)), 1),
        "bool_cat_where_amax": Case(fn(lambda a, b, x: torch.where(torch.cat([a, b], -1), x, -9.0).amax(-1)),
                                    lambda g: (torch.ones(5, 13, dtype=torch.bool), torch.ones(5, 4, dtype=torch.bool),
                                               neg(g, 5, 17)), 1),
        "bool_cat_all": Case(fn(lambda a, b: torch.cat([a, b], -1).all(-1)),
                             lambda g: (torch.ones(5, 13, dtype=torch.bool), torch.ones(5, 4, dtype=torch.bool)), 1),
    })
    return cases


def _gathers_into_products() -> dict[str, Case]:
    """A reciprocal or log of a gather as a matmul operand (its padding past the
    contraction's extent must be 0 and stay finite), a reduction behind a runtime
    check (the reciprocal's nonzero test must not see a masked lane's 0)."""
    cases = {}
    for n in (13, 100):
        cases[f"reciprocal_cat_matmul_{n}"] = Case(
            fn(lambda a, b, w: (1.0 / torch.cat([a, b], -1)) @ w),
            lambda g, n=n: (pos(g, 5, n), pos(g, 5, 4), torch.randn(n + 4, 6, generator=g)), 2)
    cases.update({
        "log_cat_matmul_17": Case(fn(lambda a, b, w: torch.log(torch.cat([a, b], -1)) @ w),
                                  lambda g: (pos(g, 5, 17), pos(g, 5, 4), torch.randn(21, 6, generator=g)), 2),
        "rsqrt_pad_matmul_13": Case(fn(lambda a, w: torch.rsqrt(F.pad(a, (1, 2), value=1.0)) @ w),
                                    lambda g: (pos(g, 5, 13), torch.randn(16, 6, generator=g)), 2),
        "reciprocal_flip_bmm_17": Case(fn(lambda a, w: (1.0 / a.flip(-1)) @ w),
                                       lambda g: (pos(g, 3, 5, 17), torch.randn(3, 17, 7, generator=g)), 2),
        "reciprocal_cat_rows_matmul_13": Case(fn(lambda a, b, w: w @ (1.0 / torch.cat([a, b], 0))),
                                              lambda g: (pos(g, 13, 5), pos(g, 2, 5), torch.randn(6, 15, generator=g)),
                                              2),
        "reciprocal_cat_sum_5001": Case(fn(lambda a, b: (1.0 / torch.cat([a, b], -1)).sum(-1)),
                                        lambda g: (pos(g, 3, 5001), pos(g, 3, 4)), 1),
        "reciprocal_embedding_sum_5001": Case(fn(lambda w, i: (1.0 / F.embedding(i, w)).sum(-1)),
                                              lambda g: (pos(g, 7, 5001), _embedding_ids(7, (5,))(g)), 1),
    })
    return cases


GATHERS = {**_cat_cases(), **_pad_roll_flip_cases(), **_lookup_cases(), **_gathers_into_products()}
GATHERS_BF16 = {"cat_rows_amax_197", "cat_cols_amax_13", "cat_three_softmax_100", "class_token_layernorm_197x100",
                "pad_reflect_softmax_13", "flip_amax_amin_100", "rope_amax_5x80", "embedding_layernorm_5x769",
                "f_embedding_amax_97x17"}  # fmt: skip
GATHERS_BF16_KERNELS = {"pad_reflect_softmax_13": 2}
"""Cases whose bf16 program makes another number of kernels than the f32 one (the base
commit's too)."""
GATHERS_XFAIL = {
    "roll_by_the_length_3": "refused: torch.roll by the whole dim slices a zero-size piece "
                            "(tensor<0x7xf32>); the base commit refuses it too",
    "int_cat_prod": "refused: an integer product (muli) is no combiner tile-and-fuse can mask; "
                    "the base commit refuses it too",
}  # fmt: skip
"""Case -> what fails, for the gather cases that fail today."""


@pytest.mark.parametrize(("name", "dtype"), list(params(GATHERS, GATHERS_BF16, GATHERS_XFAIL)))
def test_gather_spelling_matches_eager(name, dtype):
    case = GATHERS[name]
    compiled = run_case(case, dtype)
    kernels = GATHERS_BF16_KERNELS.get(name, case.kernels) if dtype == BF16 else case.kernels
    assert len(compiled.program.kernels) == kernels


@pytest.mark.parametrize("name", ["cat_rows_amax_13", "class_token_layernorm_197x100", "rope_amax_13x34"])
def test_edge_gathers_load_through_masks(name):
    """The cases reach the new code: a gather over an edge tile loads through a mask to
    its dim, and no index is clamped to the dim's last element."""
    source = run_case(GATHERS[name], F32).program.source
    kernels = source[source.index("# fused_kernel_0") :]
    assert "other=0)" in kernels and "tl.minimum(tl.maximum(" not in kernels, kernels


# -- gathers into a dynamic dim --------------------------------------------------------


DYNAMIC = {  # name: (module, inputs at size n, (input, dim) marked dynamic)
    "class_token_layernorm": (lambda: ClassToken(100), lambda n: (torch.randn(2, n, 100),), [(0, 1)]),
    "cat_amax": (fn(lambda a, b: torch.cat([a, b], 1).amax(1)),
                 lambda n: (-torch.rand(2, n, 5) - 0.5, -torch.rand(2, 3, 5) - 0.5), [(0, 1)]),
    "embedding_layernorm": (lambda: nn.Sequential(nn.Embedding(97, 17), nn.LayerNorm(17)),
                            lambda n: (torch.randint(0, 97, (2, n)),), [(0, 1)]),
    "flip_cumsum": (fn(lambda x: x.flip(1).cumsum(1)), lambda n: (torch.randn(2, n, 5),), [(0, 1)]),
    "pad_amax": (fn(lambda x: F.pad(x, (0, 0, 2, 3), value=-50.0).amax(1)),
                 lambda n: (-torch.rand(2, n, 7) - 0.5,), [(0, 1)]),
    "rope_amax": (fn(lambda q, c, s: (q * c + rotate_half(q) * s).amax(-1)),
                  lambda n: (-torch.rand(1, 3, n, 10) - 0.5, torch.randn(n, 10), torch.randn(n, 10)),
                  [(0, 2), (1, 0), (2, 0)]),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(DYNAMIC))
def test_dynamic_gather_matches_eager_at_every_size(name):
    """One compile over a dynamic dim (2 to 300) serves every size: the gathers' masks
    follow the run-time size."""
    make, inputs, marked = DYNAMIC[name]
    torch.manual_seed(0)
    model = make().to(DEVICE).eval()
    xs = tuple(x.to(DEVICE) for x in inputs(9))
    for i, d in marked:
        torch._dynamo.mark_dynamic(xs[i], d, min=2, max=300)
    compiled = tt.compile(model, *xs)
    for n in (2, 3, 7, 17, 64, 65, 197, 300):
        torch.manual_seed(n)
        xs = tuple(x.to(DEVICE) for x in inputs(n))
        with torch.no_grad():
            assert_matches(f"{name} at {n}", compiled(*xs), eager64(model, xs), RTOL[F32])


# -- attention -------------------------------------------------------------------------


def sdpa(**kwargs) -> Callable[[], nn.Module]:
    return fn(lambda q, k, v, *mask: F.scaled_dot_product_attention(q, k, v, *mask, **kwargs))


def hand(q, k, v, bias=None):
    s = q @ k.transpose(-1, -2) * q.shape[-1] ** -0.5
    return (s if bias is None else s + bias).softmax(-1) @ v


def hand_bool(q, k, v, keep):
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return s.masked_fill(~keep, float("-inf")).softmax(-1) @ v


def hand_causal(q, k, v):
    tq, tk = q.shape[-2], k.shape[-2]
    keep = torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(tk - tq)
    return hand_bool(q, k, v, keep)


def qkv(tq: int, tk: int, d: int = 64, heads: int = 2, kv_heads: int | None = None, b: int = 1) -> Inputs:
    kv = heads if kv_heads is None else kv_heads
    return randn((b, heads, tq, d), (b, kv, tk, d), (b, kv, tk, d))


def with_mask(inputs: Inputs, mask: Callable[[torch.Generator], torch.Tensor]) -> Inputs:
    return lambda g: (*inputs(g), mask(g))


def key_padding(b: int, tk: int, lengths: list[int], additive: bool = False):
    def make(g: torch.Generator) -> torch.Tensor:
        keep = (torch.arange(tk)[None, :] < torch.tensor(lengths)[:, None])[:, None, None, :]
        return torch.zeros(keep.shape).masked_fill(~keep, float("-inf")) if additive else keep

    return make


def keys_kept(t: int, rows: slice, keys: slice, keep: bool, additive: bool = False):
    """A t x t mask keeping every key but `keys` of `rows` (or only those, `keep`)."""

    def make(g: torch.Generator) -> torch.Tensor:
        mask = torch.full((1, 1, t, t), not keep)
        mask[..., rows, keys] = keep
        return torch.zeros(mask.shape).masked_fill(~mask, float("-inf")) if additive else mask

    return make


def one_large_key(t: int, key: int) -> Inputs:
    """Scores dominated by one key (30x the others'): its chunk sets the running max."""

    def make(g: torch.Generator) -> tuple:
        q, k, v = qkv(t, t)(g)
        k[..., key, :] *= 30
        return q, k, v

    return make


class NanoGPT(nn.Module):
    """nanoGPT's causal attention: a tril buffer sliced to the length, masked_fill."""

    def __init__(self, block: int = 256):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

    def forward(self, q, k, v):
        t = q.shape[2]
        a = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        a = a.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        return F.softmax(a, dim=-1) @ v


class Window(nn.Module):
    """Mistral's sliding window built in the forward, keys aligned to the last query."""

    def __init__(self, window: int, use_sdpa: bool = False):
        super().__init__()
        self.window, self.use_sdpa = window, use_sdpa

    def forward(self, q, k, v):
        tq, tk = q.shape[2], k.shape[2]
        i = torch.arange(tq, device=q.device)[:, None] + (tk - tq)
        j = torch.arange(tk, device=q.device)[None, :]
        keep = (j <= i) & (j > i - self.window)
        if self.use_sdpa:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return hand_bool(q, k, v, keep)


class Alibi(nn.Module):
    """ALiBi's per-head linear key bias built in the forward."""

    def forward(self, q, k, v):
        h, tk = q.shape[1], k.shape[2]
        slopes = 2.0 ** (-8.0 * torch.arange(1, h + 1, device=q.device) / h)
        bias = slopes[:, None, None] * torch.arange(tk, device=q.device)[None, None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))


class SwinBias(nn.Module):
    """Swin's relative position bias: a (2w-1)^2 x heads table gathered through an index
    buffer, w^2 tokens a window."""

    def __init__(self, w: int, heads: int):
        super().__init__()
        self.table = nn.Parameter(torch.randn((2 * w - 1) ** 2, heads))
        c = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
        r = (c[:, :, None] - c[:, None, :]).permute(1, 2, 0) + (w - 1)
        self.register_buffer("index", r[..., 0] * (2 * w - 1) + r[..., 1])

    def forward(self, q, k, v):
        n = q.shape[2]
        bias = self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.unsqueeze(0))


class T5Bias(nn.Module):
    """T5's relative-position bias: an embedding of the clamped distance."""

    def __init__(self, heads: int, buckets: int = 32):
        super().__init__()
        self.emb, self.buckets = nn.Embedding(buckets, heads), buckets

    def forward(self, q, k, v):
        tq, tk = q.shape[2], k.shape[2]
        rel = torch.arange(tk, device=q.device)[None, :] - torch.arange(tq, device=q.device)[:, None]
        bias = self.emb(rel.abs().clamp(max=self.buckets - 1)).permute(2, 0, 1).unsqueeze(0)
        return (q @ k.transpose(-1, -2) + bias).softmax(-1) @ v


def kv_cache(q, k_past, v_past, k_new, v_new):
    return F.scaled_dot_product_attention(q, torch.cat([k_past, k_new], 2), torch.cat([v_past, v_new], 2))


def rope_attention(q, k, v, cos, sin):
    return F.scaled_dot_product_attention(q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin, v)


def gqa_repeat_interleave(q, k, v):
    return F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1))


def gqa_expand(q, k, v):
    b, h, t, d = k.shape
    k, v = (x[:, :, None].expand(b, h, 2, t, d).reshape(b, 2 * h, t, d) for x in (k, v))
    return F.scaled_dot_product_attention(q, k, v)


def _lengths_and_heads() -> dict[str, Case]:
    cases = {f"sdpa_{t}": Case(sdpa(), qkv(t, t), 1 if t > 1 else 3)
             for t in (1, 2, 5, 63, 64, 65, 127, 129, 197, 200, 577)}  # fmt: skip
    cases.update({f"sdpa_197_d{d}": Case(sdpa(), qkv(197, 197, d), 1) for d in (32, 80, 128)})
    for tq, tk in ((1, 197), (7, 65), (197, 5), (50, 129), (3, 577), (64, 2)):
        cases[f"sdpa_cross_{tq}_{tk}"] = Case(sdpa(), qkv(tq, tk, 32), 1)
    cases["sdpa_cross_64_1"] = Case(sdpa(), qkv(64, 1, 32), 3)
    cases["sdpa_cross_5_197_d80"] = Case(sdpa(), qkv(5, 197, 80), 1)
    for t in (65, 197):
        cases[f"hand_{t}"] = Case(fn(hand), qkv(t, t), 1)
    return cases


def _masks() -> dict[str, Case]:
    cases = {}
    for t in (65, 197):
        cases[f"sdpa_key_padding_bool_{t}"] = Case(sdpa(), with_mask(qkv(t, t, b=2), key_padding(2, t, [t, t // 3])), 1)
        cases[f"sdpa_causal_{t}"] = Case(sdpa(is_causal=True), qkv(t, t), 1)
        cases[f"nanogpt_tril_{t}"] = Case(NanoGPT, qkv(t, t), 1)
    cases.update({
        "sdpa_key_padding_float_197": Case(sdpa(), with_mask(qkv(197, 197, b=2), key_padding(2, 197, [197, 65], True)), 1),
        "hand_key_padding_200": Case(fn(hand), with_mask(qkv(200, 200, b=2), key_padding(2, 200, [200, 66], True)), 1),
        "hand_bool_random_129": Case(fn(hand_bool), with_mask(qkv(129, 129), lambda g: (
            torch.rand(1, 1, 129, 129, generator=g) > 0.4) | torch.eye(129, dtype=torch.bool)), 1),
        "sdpa_additive_197": Case(sdpa(), with_mask(qkv(197, 197), lambda g: torch.randn(1, 2, 197, 197, generator=g)), 1),
        "hand_causal_129": Case(fn(hand_causal), qkv(129, 129), 1),
        "hand_causal_200": Case(fn(hand_causal), qkv(200, 200), 1),
        "sdpa_causal_cross_5_197": Case(sdpa(is_causal=True), qkv(5, 197), 1),
        "sdpa_causal_cross_197_65": Case(sdpa(is_causal=True), qkv(197, 65), 1),
        "hand_causal_cross_65_129": Case(fn(hand_causal), qkv(65, 129), 1),
        "sdpa_causal_offset_5_197": Case(sdpa(), with_mask(qkv(5, 197), lambda g: torch.ones(
            5, 197, dtype=torch.bool).tril(192)), 1),
        "sdpa_key_padding_cross_197_65": Case(sdpa(), with_mask(qkv(197, 65), key_padding(1, 65, [62])), 1),
        "causal_mask_input_197": Case(fn(hand), with_mask(qkv(197, 197), lambda g: torch.full(
            (197, 197), float("-inf")).triu(1)), 1),
        "window_50_197": Case(lambda: Window(50), qkv(197, 197), 1),
        "window_50_sdpa_129": Case(lambda: Window(50, True), qkv(129, 129), 1),
        "window_50_cross_70_197": Case(lambda: Window(50), qkv(70, 197), 1),
        "alibi_197": Case(Alibi, qkv(197, 197), 3),
    })
    return cases


def _edge_rows() -> dict[str, Case]:
    """Rows whose live keys all lie in the partial chunk (192..196 of 197), rows whose
    partial chunk is all masked, a row with no key (SDPA's boolean mask defines zeros),
    and a dominant key in the partial chunk or in the first."""
    return {
        "sdpa_only_partial_chunk_live_197": Case(
            sdpa(), with_mask(qkv(197, 197), keys_kept(197, slice(None), slice(192, None), True)), 1),
        "hand_only_partial_chunk_live_197": Case(
            fn(hand), with_mask(qkv(197, 197), keys_kept(197, slice(None), slice(192, None), True, True)), 1),
        "sdpa_partial_chunk_masked_197": Case(
            sdpa(), with_mask(qkv(197, 197), keys_kept(197, slice(None), slice(192, None), False)), 1),
        "sdpa_row_without_keys_197": Case(
            sdpa(), with_mask(qkv(197, 197), keys_kept(197, slice(5, 6), slice(None), False)), 1),
        "sdpa_large_key_in_partial_chunk_197": Case(sdpa(), one_large_key(197, 196), 1),
        "sdpa_large_first_key_197": Case(sdpa(), one_large_key(197, 0), 1),
    }


def _gathered_keys() -> dict[str, Case]:
    """K read through a gather inside the attention kernel (a KV-cache concat, RoPE,
    repeated heads) and biases gathered from tables."""
    cases = {}
    for past, new in ((60, 5), (192, 5), (128, 69)):
        cases[f"kv_cache_cat_{past}_{new}"] = Case(
            fn(kv_cache), randn((1, 2, new, 64), (1, 2, past, 64), (1, 2, past, 64), (1, 2, new, 64), (1, 2, new, 64)), 1)
    cases["kv_cache_cat_decode_192_5"] = Case(
        fn(kv_cache), randn((1, 2, 1, 64), (1, 2, 192, 64), (1, 2, 192, 64), (1, 2, 5, 64), (1, 2, 5, 64)), 1)
    for t, hd in ((49, 32), (197, 80)):
        cases[f"rope_attention_{t}_d{hd}"] = Case(fn(rope_attention), lambda g, t=t, hd=hd: (
            *qkv(t, t, hd)(g), *randn((t, hd), (t, hd))(g)), 2)
    for w in (7, 9):
        cases[f"swin_bias_{w * w}"] = Case(lambda w=w: SwinBias(w, 2), qkv(w * w, w * w, 32, b=3), 1)
    cases["t5_bias_197"] = Case(lambda: T5Bias(2), qkv(197, 197, 32), 1)
    cases["t5_bias_cross_5_129"] = Case(lambda: T5Bias(2), qkv(5, 129, 32), 1)
    cases["sdpa_enable_gqa_5_197"] = Case(sdpa(enable_gqa=True), qkv(5, 197, heads=4, kv_heads=2), 1)
    cases["sdpa_enable_gqa_197_65"] = Case(sdpa(enable_gqa=True), qkv(197, 65, heads=4, kv_heads=2), 1)
    cases["gqa_repeat_interleave_197"] = Case(fn(gqa_repeat_interleave), qkv(197, 197, heads=4, kv_heads=2), 1)
    cases["gqa_expand_65"] = Case(fn(gqa_expand), qkv(65, 65, heads=4, kv_heads=2), 1)
    return cases


ATTENTION = {**_lengths_and_heads(), **_masks(), **_edge_rows(), **_gathered_keys()}
ATTENTION_BF16 = {"sdpa_5", "sdpa_65", "sdpa_197", "sdpa_577", "sdpa_197_d128", "sdpa_cross_5_197_d80",
                  "sdpa_causal_cross_197_65", "sdpa_key_padding_bool_197", "nanogpt_tril_197",
                  "kv_cache_cat_192_5", "swin_bias_49", "sdpa_only_partial_chunk_live_197"}  # fmt: skip


@pytest.mark.parametrize(("name", "dtype"), list(params(ATTENTION, ATTENTION_BF16, {})))
def test_attention_matches_eager(name, dtype):
    """Attention over key counts its block does not divide: the numbers, and one
    attention kernel (a single key, `*_1`, is no attention: three kernels)."""
    case = ATTENTION[name]
    compiled = run_case(case, dtype)
    assert len(compiled.program.kernels) == case.kernels


class ViTBlock(nn.Module):
    """timm's ViT block with its class (and DeiT's distillation) tokens cat onto the patch
    tokens and a position embedding; attention through SDPA or written out; CLIP's
    quick GELU."""

    def __init__(self, n: int, d: int, heads: int, tokens: int = 1, quick_gelu: bool = False,
                 use_sdpa: bool = True):  # fmt: skip
        super().__init__()
        self.tokens = nn.Parameter(torch.randn(1, tokens, d) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n + tokens, d) * 0.02)
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.heads, self.quick_gelu, self.use_sdpa = heads, quick_gelu, use_sdpa

    def attention(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v) if self.use_sdpa else hand(q, k, v)
        return self.proj(a.transpose(1, 2).reshape(b, t, d))

    def forward(self, x):
        x = torch.cat([self.tokens.expand(x.shape[0], -1, -1), x], 1) + self.pos_embed
        x = x + self.attention(x)
        h = self.fc1(self.norm2(x))
        h = h * torch.sigmoid(1.702 * h) if self.quick_gelu else F.gelu(h)
        return x + self.fc2(h)


BLOCKS = {
    "clip_50_tokens": Case(lambda: ViTBlock(49, 64, 2, quick_gelu=True), randn((2, 49, 64)), 8),
    "vit_197_tokens_eager_attention": Case(lambda: ViTBlock(196, 64, 2, use_sdpa=False), randn((2, 196, 64)), 8),
    "deit_198_tokens": Case(lambda: ViTBlock(196, 64, 2, tokens=2), randn((2, 196, 64)), 8),
}


@pytest.mark.parametrize(("name", "dtype"), list(params(BLOCKS, {"clip_50_tokens"}, {})))
def test_vision_block_matches_eager(name, dtype):
    case = BLOCKS[name]
    compiled = run_case(case, dtype)
    assert len(compiled.program.kernels) == case.kernels


# -- online softmax of long rows, MLIR ---------------------------------------------------


@pytest.mark.parametrize("n", [16385, 70000])
def test_long_row_online_softmax_with_the_partial_chunk_alone(n):
    """`samples/softmax.mlir` over rows longer than a chunk: the online loop takes the
    whole chunks unmasked, then the last chunk masked; rows live only in that chunk,
    masked only there, or with the max there."""
    prog = compile_program("samples/softmax.mlir", dims={"M": 4, "N": n})
    x = torch.randn(4, n, generator=torch.Generator().manual_seed(n)) * 3 - 200
    x[0, : n - 3] = float("-inf")
    x[1, n - 3 :] = float("-inf")
    x[2, -1] = 80.0
    x[3, : n // 2] = float("-inf")
    (out,) = prog(on_device(x))
    torch.testing.assert_close(out.cpu().double(), torch.softmax(x.double(), -1), rtol=1e-5, atol=1e-7)


# -- the warp-specialised Gluon kernel, emulated ---------------------------------------


@pytest.mark.parametrize(("queries", "keys"), [(384, 257), (256, 577)])
def test_gluon_attention_over_a_partial_last_key_tile(queries, keys):
    """FlashAttention-3's schedule (bf16, head dim 128) now walks the whole key tiles and
    the last, partial one as two loops: one key in the last tile, or 65 after four."""
    text = attention_mlir(1, 1, queries, keys, 128, dtype="bf16")
    module = load_program(text)
    run_pipeline(module, "h100")
    emitted = emit_module(module)
    assert any(sig.gpu is not None for sig in emitted.kernels), emitted.text
    g = torch.Generator().manual_seed(keys)
    q, k, v = (torch.randn(1, 1, t, 128, generator=g).to(BF16) for t in (queries, keys, keys))
    want = torch.softmax(q.double() @ k.double().transpose(-1, -2) / math.sqrt(128), -1) @ v.double()
    prog = load(module, emitted)
    with gluon_in_place_of_triton(prog, emitted):
        (out,) = prog(q, k, v)
    assert float((out.double() - want).abs().max() / want.abs().max()) < RTOL[BF16]


# -- sm_90 -----------------------------------------------------------------------------


SM90 = {  # name: (module, inputs); B = 2, H = 12
    "bf16_197_d64": (sdpa(), qkv(197, 197, 64, 12, b=2)),
    "bf16_197_d128": (sdpa(), qkv(197, 197, 128, 12, b=2)),
    "bf16_cross_65_129_d64": (sdpa(), qkv(65, 129, 64, 12, b=2)),
    "bf16_key_padding_197_d64": (sdpa(), with_mask(qkv(197, 197, 64, 12, b=2), key_padding(2, 197, [197, 70]))),
    "bf16_nanogpt_197_d128": (NanoGPT, qkv(197, 197, 128, 12, b=2)),
    "f32_197_d64": (sdpa(), qkv(197, 197, 64, 12, b=2)),
}


@pytest.fixture(scope="module")
def sm90_reports():
    """ptxas's reports of the SM90 cases' kernels, compiled in one batch."""
    programs = []
    for name, (make, inputs) in SM90.items():
        dtype = F32 if name.startswith("f32") else BF16
        xs = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs(torch.Generator().manual_seed(0)))
        module = load_program(str(export(make().to(dtype), xs, name).mlir))
        run_pipeline(module, "h200")
        programs.append((module, None))
    return dict(zip(SM90, check_programs(programs, "h200"), strict=True))


@pytest.mark.parametrize("name", list(SM90))
def test_partial_key_attention_fits_sm90(name, sm90_reports):
    """The split attention kernel compiles for sm_90: one kernel, within the registers,
    no spill, shared memory within the plan's working set."""
    result = sm90_reports[name]
    if isinstance(result, Exception):
        raise result
    (report,) = result
    assert report.fits and report.registers <= report.max_registers, report
    assert report.spills == 0, f"{report.name} spills {report.spills} words/thread"
    assert report.predicted_working_set is not None and report.shared_bytes <= report.predicted_working_set
