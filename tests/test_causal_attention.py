"""Causal key-block skipping (`analysis/causal.py`): the online key loop of a query
tile stops after its last kept key exactly when the mask provably sets every later
score to -inf; the kernels match the reference evaluator and torch in f64."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import tilefuse.torch as tt
from tests.attention_programs import attention_mlir, key_end, key_loops
from tests.device import DEVICE, on_device
from tests.eager import rel_error
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.oracle.compare import relative_error
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime.compiled import compile
from tilefuse.tools.run import to_torch

CAUSAL_LINES = """    %ok = arith.cmpi ule, %j, %i : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
"""

# name: (payload computing %m from %sv, %i, %j; the bound c the loop gets or None;
#        keep(i, j) as numpy computes the program's mask: True where the score is kept)
MASKS = {
    "causal": ("""    %ok = arith.cmpi ule, %j, %i : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
""", 0, lambda i, j: j <= i),
    "shifted_up": ("""    %c3 = arith.constant 3 : index
    %i3 = arith.addi %i, %c3 : index
    %ok = arith.cmpi sle, %j, %i3 : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
""", 3, lambda i, j: j <= i + 3),
    "shifted_down": ("""    %c5 = arith.constant 5 : index
    %j5 = arith.addi %j, %c5 : index
    %ok = arith.cmpi sle, %j5, %i : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
""", -5, lambda i, j: j + 5 <= i),
    "strict_scaled_after": ("""    %ok = arith.cmpi slt, %j, %i : index
    %m0 = arith.select %ok, %sv, %neg_inf : {t}
    %m = arith.mulf %scale, %m0 : {t}
""", -1, lambda i, j: j < i),
    "additive_neg_inf_not": ("""    %true = arith.constant true
    %c7 = arith.constant 7 : index
    %no = arith.cmpi ugt, %j, %i : index
    %yes = arith.xori %no, %true : i1
    %other = arith.cmpi ne, %j, %c7 : index
    %both = arith.andi %yes, %other : i1
    %z = arith.constant 0.0 : {t}
    %add = arith.select %both, %z, %neg_inf : {t}
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.addf %r, %add : {t}
""", 0, lambda i, j: (j <= i) & (j != 7)),
    "or_diagonal": ("""    %c40 = arith.constant 40 : index
    %below = arith.cmpi sle, %j, %i : index
    %i40 = arith.addi %i, %c40 : index
    %diag = arith.cmpi eq, %j, %i40 : index
    %ok = arith.ori %below, %diag : i1
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
""", 40, lambda i, j: (j <= i) | (j == i + 40)),
    "key_prefix": ("""    %c37 = arith.constant 37 : index
    %ok = arith.cmpi slt, %j, %c37 : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
""", "static 37", lambda i, j: j < 37),
    # Masks that keep keys past any j <= i + c: the loop runs over every key.
    "anti_causal": ("""    %ok = arith.cmpi uge, %j, %i : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
""", None, lambda i, j: j >= i),
    "twice_the_row": ("""    %c2 = arith.constant 2 : index
    %i2 = arith.muli %i, %c2 : index
    %ok = arith.cmpi sle, %j, %i2 : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
""", None, lambda i, j: j <= 2 * i),
    "select_swapped": ("""    %ok = arith.cmpi ule, %j, %i : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %neg_inf, %r : {t}
""", None, lambda i, j: j > i),
    "or_prefix": ("""    %c3 = arith.constant 3 : index
    %below = arith.cmpi sle, %j, %i : index
    %head = arith.cmpi sge, %j, %c3 : index
    %ok = arith.ori %below, %head : i1
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
""", None, lambda i, j: (j <= i) | (j >= 3)),
}

# Masks whose masked scores are not -inf: no key may be skipped (and numpy cannot
# write them as a boolean keep: the reference evaluator is the oracle).
NOT_NEG_INF = {
    "additive_finite": """    %ok = arith.cmpi ule, %j, %i : index
    %big = arith.constant -1.0e+09 : {t}
    %z = arith.constant 0.0 : {t}
    %add = arith.select %ok, %z, %big : {t}
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.addf %r, %add : {t}
""",
    "negated_scale": """    %ok = arith.cmpi ule, %j, %i : index
    %m0 = arith.select %ok, %sv, %neg_inf : {t}
    %neg = arith.constant -0.25 : {t}
    %m = arith.mulf %m0, %neg : {t}
""",
    "unsigned_of_a_difference": """    %d = arith.subi %j, %i : index
    %c0 = arith.constant 0 : index
    %ok = arith.cmpi ule, %d, %c0 : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
""",
}


def masked_attention(b, h, sq, sk, d, payload, dtype="f32"):
    text = attention_mlir(b, h, sq, sk, d, causal=True, dtype=dtype)
    old = CAUSAL_LINES.format(t=dtype)
    assert old in text
    return text.replace(old, payload.format(t=dtype))


def key_loop(source: str) -> tuple[str, int, str]:
    """Where the keys end (`key_end`), the key tile and the query tile."""
    tile = re.search(r"# tile .*", source)[0]  # type: ignore[index]
    return key_end(source), key_loops(source)[-1][2], tile


def expected_end(sk: int, c, source: str) -> str | None:
    """`end` when the loop stops at `min(sk, q0 + BQ + c)`; None: runs to `sk`."""
    if c is None:
        return None
    if isinstance(c, str):
        return c.split()[1]
    m = re.search(r"tl\.minimum\(" + str(sk) + r", \(\(pid_\d+ \* (\d+)\) \+ (-?\d+)\)\)", source)
    assert m is not None, source
    assert int(m[2]) - int(m[1]) == c, m[0]
    return m[0]


def numpy_attention(q, k, v, keep):
    s = np.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(q.shape[-1])
    i, j = np.indices(s.shape[-2:])
    s = np.where(keep(i, j), s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("bhij,bhjd->bhid", e / e.sum(-1, keepdims=True), v)


@pytest.mark.parametrize("name", sorted(MASKS))
def test_key_loop_stops_where_the_mask_provably_ends(name):
    payload, c, keep = MASKS[name]
    sq = sk = 130
    text = masked_attention(1, 2, sq, sk, 32, payload)
    prog = compile(text)
    assert len(prog.kernels) == 1, prog.source
    end, _, _ = key_loop(prog.source)
    want = expected_end(sk, c, prog.source)
    assert end == (want if want is not None else str(sk)), (end, prog.source)
    module = load_program(text)
    inputs = random_inputs(module, seed=3)
    (out,) = prog(*map(on_device, inputs))
    (ref,) = evaluate(module, inputs)
    got = out.cpu().numpy()
    assert relative_error(got, ref) < 1e-5
    expected = numpy_attention(*[x.astype(np.float64) for x in inputs[:3]], keep)
    assert relative_error(got, expected) < 1e-5
    # rows that keep no key are NaN, in the program as in the kernel (no safe softmax)
    assert np.isnan(got).any() == (not keep(np.arange(sq)[:, None], np.arange(sk)[None, :]).any(1).all())


SPLIT = {"causal", "shifted_up", "shifted_down", "strict_scaled_after", "additive_neg_inf_not"}
"""Masks whose comparison of `j - i` with a constant is decided below the diagonal
(`causal.below_diagonal`); `or_diagonal`'s `j <= i` is not (its keys reach 40 past
the diagonal), nor `key_prefix`'s `j < 37` (no row enters it)."""


def _loop_bodies(source: str) -> list[str]:
    """The text of each key loop's body (lines indented past its `for`)."""
    lines, bodies = source.splitlines(), []
    for n, line in enumerate(lines):
        if re.match(r"\s+for \w+ in range\(", line):
            indent = len(line) - len(line.lstrip())
            body = []
            for inner in lines[n + 1 :]:
                if inner.strip() and len(inner) - len(inner.lstrip()) <= indent:
                    break
                body.append(inner)
            bodies.append("\n".join(body))
    return bodies


@pytest.mark.parametrize("name", sorted(MASKS))
def test_chunks_below_the_diagonal_run_without_the_mask(name):
    payload, _, keep = MASKS[name]
    text = masked_attention(1, 2, 130, 130, 32, payload)
    prog = compile(text)
    loops = key_loops(prog.source)
    assert len(loops) == (2 if name in SPLIT else 1), prog.source
    if name in SPLIT:
        (_, whole, bk), (start, _, _) = loops
        assert start == whole and f"// {bk}) * {bk})" in whole, whole
        below, diagonal = _loop_bodies(prog.source)
        # the comparison is gone below the diagonal, and with it the select where
        # it was the whole mask (`additive_neg_inf_not` keeps `j != 7`'s)
        assert len(below.splitlines()) < len(diagonal.splitlines()), prog.source
        if name != "additive_neg_inf_not":
            assert below.count("tl.where(") < diagonal.count("tl.where("), prog.source
    module = load_program(text)
    inputs = random_inputs(module, seed=5)
    (out,) = prog(*map(on_device, inputs))
    expected = numpy_attention(*[x.astype(np.float64) for x in inputs[:3]], keep)
    assert relative_error(out.cpu().numpy(), expected) < 1e-5


@pytest.mark.parametrize("name", sorted(NOT_NEG_INF))
def test_masks_that_do_not_give_neg_inf_skip_nothing(name):
    text = masked_attention(1, 2, 130, 130, 32, NOT_NEG_INF[name])
    prog = compile(text)
    end, _, _ = key_loop(prog.source)
    assert end == "130", prog.source
    module = load_program(text)
    inputs = random_inputs(module, seed=4)
    (out,) = prog(*map(on_device, inputs))
    (ref,) = evaluate(module, inputs)
    assert relative_error(out.cpu().numpy(), ref) < 1e-5


WRAPPED = """    %i8 = arith.index_cast %i : index to i8
    %j8 = arith.index_cast %j : index to i8
    %ok = arith.cmpi sle, %j8, %i8 : i8
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
"""


def test_a_mask_of_indices_cast_to_i8_wraps_and_skips_nothing():
    """`j <= i` in i8: past 127 the indices wrap (key 128 is -128, kept by every row),
    so no key bound and no split; the kernel wraps too (an index_cast to a narrower
    integer keeps the low bits: it was printed as no cast at all)."""
    text = masked_attention(1, 2, 130, 130, 32, WRAPPED)
    prog = compile(text)
    assert len(key_loops(prog.source)) == 1 and key_end(prog.source) == "130", prog.source
    module = load_program(text)
    inputs = random_inputs(module, seed=6)
    (out,) = prog(*map(on_device, inputs))
    (ref,) = evaluate(module, inputs)
    assert relative_error(out.cpu().numpy(), ref) < 1e-5


@pytest.mark.parametrize(("name", "sq", "sk"), [("causal", 300, 300), ("shifted_down", 200, 260),
                                                ("shifted_up", 260, 200)])  # fmt: skip
def test_bf16_key_loop_of_several_trips_with_query_and_key_tiles_apart(name, sq, sk):
    payload, c, _ = MASKS[name]
    text = masked_attention(1, 2, sq, sk, 16, payload, dtype="bf16")
    prog = compile(text)
    end, bk, tile = key_loop(prog.source)
    assert end == expected_end(sk, c, prog.source)
    bq = int(re.search(r"pid_\d+ \* (\d+)", end)[1])  # type: ignore[index]
    assert bq != bk and sk > 2 * bk, tile
    module = load_program(text)
    inputs = random_inputs(module, seed=5)
    (out,) = prog(*to_torch(inputs, module, DEVICE))
    (ref,) = evaluate(module, inputs)
    assert relative_error(out.cpu().float().numpy(), ref) < 2e-2


class Causal(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Shifted(nn.Module):
    """SDPA with a boolean mask built from `arange`: keep j <= i + c (c < 0: the
    first rows keep no key, and ATen's safe softmax gives them zeros)."""

    def __init__(self, c: int):
        super().__init__()
        self.c = c

    def forward(self, q, k, v):
        keep = torch.arange(k.size(-2))[None, :] <= torch.arange(q.size(-2))[:, None] + self.c
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


def sdpa_reference(q, k, v, c=0):
    """Attention in f64, keys j <= i + c (top-left aligned), rows with no key zero;
    P rounded to a 16-bit input's dtype (the fused kernels' precision)."""
    s = q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.size(-1))
    i, j = torch.arange(q.size(-2))[:, None], torch.arange(k.size(-2))[None, :]
    p = torch.softmax(s.masked_fill(j > i + c, -math.inf), -1).nan_to_num(0.0)
    return p.to(q.dtype).double() @ v.double()


def qkv(lq, lk, d, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 2, n, d, generator=g).to(dtype) for n in (lq, lk, lk)]


@pytest.mark.parametrize(("dtype", "lq", "lk", "d", "skips"), [
    (torch.float32, 100, 100, 64, True), (torch.float32, 200, 130, 16, True),
    (torch.float32, 100, 150, 16, True), (torch.bfloat16, 200, 200, 16, True),
    (torch.bfloat16, 300, 260, 64, True),
    (torch.bfloat16, 150, 100, 16, False),  # a 128-row query tile's last row sees every key
])  # fmt: skip
def test_causal_sdpa_skips_masked_key_tiles(dtype, lq, lk, d, skips):
    q, k, v = qkv(lq, lk, d, dtype)
    compiled = tt.compile(Causal(), q, k, v)
    assert compiled.source.count(": flash-attention:") == 1, compiled.source
    end, _, _ = key_loop(compiled.source)
    assert end == (expected_end(lk, 0, compiled.source) if skips else str(lk)), compiled.source
    got = compiled(*map(on_device, (q, k, v))).double()
    tol = 1e-5 if dtype == torch.float32 else 2 * 2.0**-8
    assert rel_error(got, sdpa_reference(q, k, v)) <= tol


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rows_with_no_key_are_zero_when_their_loop_runs_no_trip(dtype):
    c = -70  # rows 0..69 keep no key; the first query tile (128 rows) runs one trip
    q, k, v = qkv(200, 200, 16, dtype, seed=1)
    compiled = tt.compile(Shifted(c), q, k, v)
    assert len(compiled.kernels) == 1, compiled.source
    end, _, _ = key_loop(compiled.source)
    assert end == expected_end(200, c, compiled.source)
    got = compiled(*map(on_device, (q, k, v))).double()
    assert got[..., :70, :].abs().max() == 0
    assert rel_error(got, sdpa_reference(q, k, v, c)) <= 2 * 2.0**-8


def _attention_plan(causal: bool):
    from tests.test_attention_ws import planned

    _, plan = planned(load_program(attention_mlir(1, 2, 512, 512, 128, causal=causal, dtype="bf16")))
    return plan


def test_causal_attention_keeps_the_triton_loop_on_sm90():
    """A causal bound holds the warp-specialised kernel back (`tile_plan.WS_CAUSAL`: it
    hung on an H100, docs/PERF.md), and the plan says so; the same attention without the
    mask takes it."""
    assert _attention_plan(causal=False).consumers.data == 2
    plan = _attention_plan(causal=True)
    assert plan.consumers.data == 0
    assert "a causal key bound: held back" in plan.note.data, plan.note.data


PROGRAMS = Path(__file__).resolve().parent.parent / "tools" / "experiments" / "programs"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="runs the GPU's kernels")
@pytest.mark.parametrize(("name", "masks"), [
    ("causal_sdpa", ("causal",)), ("two_causal_sdpa", ("causal", "causal")),
    ("two_sdpa_outputs", ("full", "full")),
])  # fmt: skip
def test_attentions_of_the_kernel_that_hung_run_on_the_gpu(name, masks):
    """The programs of `tools/experiments/causal_ws_check.py` (bf16 B2 H16 S2048 D128; two
    causal SDPAs summed hung on an H100 in the warp-specialised kernel) as planned now,
    against SDPA in f32."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 16, 2048, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    outs = compile(PROGRAMS / f"{name}.mlir")(q, k, v)
    each = [F.scaled_dot_product_attention(*(x.float() for x in a), is_causal=m == "causal")
            for a, m in zip(((q, k, v), (q, v, k)), masks, strict=False)]  # fmt: skip
    want = [each[0].bfloat16().float() + each[1].bfloat16().float()] if name == "two_causal_sdpa" else each
    for got, w in zip(outs, want, strict=True):
        assert rel_error(got.double(), w.double()) <= 2 * 2.0**-8
