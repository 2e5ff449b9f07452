"""Causal masks in module buffers (`torch/buffers.py`, `analysis/causal.py`'s mask
facts): nanoGPT's tril `bias` and LLaMA's `finfo.min` `causal_mask` end the flash
kernel's key loop at the query tile's last kept key; a buffer that is not such a mask
gets no bound; a buffer edited after compiling is checked again and the program
compiled without its fact runs, so the results stay right."""

from __future__ import annotations

import copy
import math
import re

import numpy as np
import pytest
import torch

import tilefuse.torch as tt
from tests.attention_programs import attention_mlir, key_end
from tests.device import DEVICE, on_device
from tests.eager import rel_error
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.oracle.compare import relative_error
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime.compiled import compile
from tilefuse.testing.zoo import GPT2Block, LlamaBlock
from tilefuse.torch.buffers import Guard, holds, mask_exact, mask_fact, with_arg_attrs
from tilefuse.torch.export import state_tensor

T, D = 256, 32
TOL = 5e-5  # a whole block in f32 against f64 (a skipped key tile changes a row by far more)


def flash_loop(source: str) -> str:
    """Where the flash-attention kernel's online key loops end (`key_end`)."""
    (head,) = re.finditer(r"^# \w+: flash-attention:.*$", source, re.MULTILINE)
    kernel = source[head.end() :].split("\n@triton.jit", 2)[1]
    return key_end(kernel)


def bounded(source: str, c: int = 0) -> bool:
    """Whether the key loop stops at `min(T, q0 + BQ + c)`."""
    m = re.fullmatch(rf"tl\.minimum\({T}, \(\(pid_\d+ \* (\d+)\) \+ (-?\d+)\)\)", flash_loop(source))
    return m is not None and int(m[2]) - int(m[1]) == c


def gpt2():
    return GPT2Block(D, 2, T)


def llama():
    return LlamaBlock(D, 2, 1, 64, T)


def _f64(model, x):
    """The module in f64 (a copy: the buffers' current values)."""
    return copy.deepcopy(model).cpu().double()(x.cpu().double())


@pytest.mark.parametrize("make", [gpt2, llama], ids=["gpt2_block", "llama_eager"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_zoo_causal_buffers_end_the_key_loop(make, dtype):
    torch.manual_seed(0)
    model = make().eval().to(DEVICE, dtype)
    x = torch.randn(1, T, D).to(DEVICE, dtype)
    compiled = tt.compile(model, x)
    assert compiled.guards, "the mask buffer has a fact"
    assert bounded(compiled.source), flash_loop(compiled.source)
    tol = TOL if dtype == torch.float32 else 2e-2
    assert rel_error(compiled(x), _f64(model, x)) <= tol
    assert compiled.unguarded is None


def test_bf16_llama_mask_is_neg_inf_and_f32_one_huge():
    m = llama()
    assert mask_fact(m.causal_mask) == ("tilefuse.huge_above", 0)
    assert mask_fact(m.to(torch.bfloat16).causal_mask) == ("tilefuse.neg_inf_above", 0)
    assert mask_fact(gpt2().attn.bias) == ("tilefuse.zero_above", 0)


def test_mask_exact():
    """Every key at and below the diagonal kept: nonzero for a tril, exactly 0.0 for
    an additive mask; one masked there (padding) or a tril of other values is not."""
    tril = torch.tril(torch.ones(6, 6))
    assert mask_exact(tril, "tilefuse.zero_above", 0)
    assert mask_exact(tril.bool(), "tilefuse.zero_above", 0)
    assert mask_exact(torch.tril(torch.full((6, 6), -3.0)), "tilefuse.zero_above", 0)
    assert not mask_exact(tril, "tilefuse.zero_above", 1)  # (row 0 masks key 1)
    padded = tril.clone()
    padded[4, 1] = 0
    assert not mask_exact(padded, "tilefuse.zero_above", 0)
    m = llama()
    assert mask_exact(m.causal_mask, *mask_fact(m.causal_mask))
    additive = m.causal_mask.clone()
    additive[..., 7, 2] = -1.0  # a bias below the diagonal: not only a mask
    assert not mask_exact(additive, "tilefuse.huge_above", 0)
    assert Guard.of(0, tril).attr == "tilefuse.zero_above = 0 : i64, tilefuse.mask_exact"
    assert Guard.of(0, padded).attr == "tilefuse.zero_above = 0 : i64"


@pytest.mark.parametrize("make", [gpt2, llama], ids=["gpt2_block", "llama_eager"])
def test_below_the_diagonal_the_kernel_reads_no_mask(make):
    """An exact mask (`tilefuse.mask_exact`) decides its elements in the key tiles below
    the diagonal: that loop loads K and V only; the diagonal's loop loads the mask."""
    torch.manual_seed(0)
    model = make().eval().to(DEVICE)
    x = torch.randn(1, T, D).to(DEVICE)
    compiled = tt.compile(model, x)
    (head,) = re.finditer(r"^# \w+: flash-attention:.*$", compiled.source, re.MULTILINE)
    kernel = compiled.source[head.end() :].split("\n@triton.jit", 2)[1]
    loops = re.split(r"\n    for ", kernel)[1:]
    assert len(loops) == 2, kernel
    loads = [len(re.findall(r"tl\.load\(", loop.split("\n    t")[0])) for loop in loops]
    assert loads == [2, 3], kernel  # K, V; then K, V and the mask
    assert rel_error(compiled(x), _f64(model, x)) <= TOL


@pytest.mark.parametrize("bias", [
    torch.randint(0, 2, (T, T), generator=torch.Generator().manual_seed(0)).float(),
    torch.ones(T, T),
    torch.tril(torch.ones(T, T), diagonal=T),
])  # fmt: skip
def test_buffers_that_are_not_causal_give_no_bound(bias):
    torch.manual_seed(0)
    model = gpt2().eval().to(DEVICE)
    model.attn.bias = bias.view(1, 1, T, T).to(DEVICE)
    x = torch.randn(1, T, D, device=DEVICE)
    compiled = tt.compile(model, x)
    assert not compiled.guards
    assert flash_loop(compiled.source) == str(T)
    assert rel_error(compiled(x), _f64(model, x)) <= TOL


def test_shifted_tril_bounds_at_its_diagonal():
    torch.manual_seed(0)
    model = gpt2().eval().to(DEVICE)
    model.attn.bias = torch.tril(torch.ones(T, T), diagonal=40).view(1, 1, T, T).to(DEVICE)
    x = torch.randn(1, T, D, device=DEVICE)
    compiled = tt.compile(model, x)
    assert bounded(compiled.source, 40), flash_loop(compiled.source)
    assert rel_error(compiled(x), _f64(model, x)) <= TOL


def test_finite_mask_whose_first_row_keeps_no_key_gives_no_bound():
    """`finfo.min` on and above the diagonal: row 0 is a softmax over masked scores
    (not zero), which skipping would change: c = -1 < 0 gives no bound."""
    torch.manual_seed(0)
    model = llama().eval().to(DEVICE)
    model.causal_mask = torch.full((T, T), torch.finfo(torch.float32).min).triu(0)[None, None].to(DEVICE)
    assert mask_fact(model.causal_mask) == ("tilefuse.huge_above", -1)
    x = torch.randn(1, T, D, device=DEVICE)
    compiled = tt.compile(model, x)
    assert flash_loop(compiled.source) == str(T)
    assert rel_error(compiled(x), _f64(model, x)) <= TOL


@pytest.mark.parametrize("edit", ["in_place", "assigned", "all_ones"])
def test_a_buffer_edited_after_compiling_is_checked_again(edit):
    torch.manual_seed(0)
    model = gpt2().eval().to(DEVICE)
    x = torch.randn(1, T, D, device=DEVICE)
    compiled = tt.compile(model, x)
    assert bounded(compiled.source)
    assert rel_error(compiled(x), _f64(model, x)) <= TOL
    if edit == "in_place":  # row 0 now sees key 200, in a tile its loop skips
        model.attn.bias[..., 0, 200] = 1
    elif edit == "assigned":
        model.attn.bias = torch.tril(torch.ones(T, T), diagonal=100).view(1, 1, T, T).to(DEVICE)
    else:
        with torch.no_grad():
            model.attn.bias.fill_(1)
    got = compiled(x)
    assert compiled.unguarded is not None
    assert rel_error(got, _f64(model, x)) <= TOL
    # a causal buffer again (a fresh tensor): the program with the bound runs
    model.attn.bias = torch.tril(torch.ones(T, T)).view(1, 1, T, T).to(DEVICE)
    state = [b.detach() for b in _state(compiled)]
    assert compiled._program(state) is compiled.program
    assert rel_error(compiled(x), _f64(model, x)) <= TOL


def _state(compiled):
    return [state_tensor(compiled.module, n, p) for n, p in compiled.exported.state]


def test_an_edit_that_keeps_the_mask_exact_keeps_the_program():
    model = gpt2().eval().to(DEVICE)
    x = torch.randn(1, T, D, device=DEVICE)
    compiled = tt.compile(model, x)
    model.attn.bias[..., 5, 0] = 2  # still nonzero at and below the diagonal, 0 above
    assert rel_error(compiled(x), _f64(model, x)) <= TOL
    assert compiled.unguarded is None


def test_an_edit_masking_a_key_below_the_diagonal_is_checked_again():
    """The kernel's loop below the diagonal reads no mask (`tilefuse.mask_exact`): a
    buffer that masks a key there (one more 0, still 0 above the diagonal) is no
    longer exact, and the program compiled without the facts runs."""
    model = gpt2().eval().to(DEVICE)
    x = torch.randn(1, T, D, device=DEVICE)
    compiled = tt.compile(model, x)
    model.attn.bias[..., 100, 3] = 0
    assert rel_error(compiled(x), _f64(model, x)) <= TOL
    assert compiled.unguarded is not None


def test_holds_and_mask_fact():
    tril = torch.tril(torch.ones(4, 6), diagonal=1)
    assert mask_fact(tril) == ("tilefuse.zero_above", 1)
    assert holds(tril, "tilefuse.zero_above", 2) and not holds(tril, "tilefuse.zero_above", 0)
    assert mask_fact(tril.bool()) == ("tilefuse.zero_above", 1)
    neg = torch.zeros(4, 4).masked_fill(torch.ones(4, 4).triu(1).bool(), -math.inf)
    assert mask_fact(neg) == ("tilefuse.neg_inf_above", 0)
    assert mask_fact(torch.full((4, 4), -math.inf)) == ("tilefuse.neg_inf_above", -4)
    big = torch.full((4, 4), -1e9).triu(1)  # finite and not huge: exp is not 0
    assert mask_fact(big) is None
    bad = torch.full((4, 4), torch.finfo(torch.float32).min).triu(1)
    bad[2, 0] = 1e35  # a kept entry too large for `|x| <= 2^100`
    assert mask_fact(bad) is None
    assert mask_fact(torch.ones(4)) is None and mask_fact(torch.ones(4, 4)) is None
    # the front-end's guards: square buffers keeping some element
    assert Guard.of(0, torch.tril(torch.ones(4, 4))) is not None
    assert Guard.of(0, torch.zeros(4, 4)) is None  # an empty cache, not a mask
    assert Guard.of(0, tril) is None  # not square


def test_with_arg_attrs_marks_the_argument_only():
    text = "func.func @f(%arg1: tensor<2xf32>, %arg12: tensor<3x3xf32>) -> tensor<2xf32> {\n%arg1"
    out = with_arg_attrs(text, "f", {1: "tilefuse.zero_above = 0 : i64"})
    assert out.startswith("func.func @f(%arg1: tensor<2xf32> {tilefuse.zero_above = 0 : i64}, "
                          "%arg12: tensor<3x3xf32>)")  # fmt: skip


# -- the analysis on MLIR: a mask argument with a fact -----------------------------

ADD_LINES = """    %r = arith.mulf %sv, %scale : {t}
    %m = arith.addf %r, %mv : {t}
"""
COMPARED = """    %r = arith.mulf %sv, %scale : {t}
    %z = arith.cmpf oeq, %mv, %zero : {t}
    %m = arith.select %z, %neg_inf, %r : {t}
"""
SCALED_AFTER = """    %a = arith.addf %sv, %mv : {t}
    %m = arith.mulf %a, %scale : {t}
"""


def mask_program(sq, sk, attr, body=ADD_LINES):
    text = attention_mlir(1, 2, sq, sk, 16, additive_mask=True)
    assert ADD_LINES.format(t="f32") in text
    text = text.replace(ADD_LINES.format(t="f32"), body.format(t="f32"))
    arg = f"%mask: tensor<{sq}x{sk}xf32>"
    return text.replace(arg, f"{arg} {{{attr}}}") if attr else text


def run_with_mask(text, mask):
    module = load_program(text)
    inputs = random_inputs(module, seed=2)
    inputs[3] = mask.astype(np.float32)
    prog = compile(text)
    (out,) = prog(*map(on_device, inputs))
    (ref,) = evaluate(module, inputs)
    return prog, out.cpu().numpy(), ref


def tri(sq, sk, c, above, below=0.0):
    i, j = np.indices((sq, sk))
    return np.where(j - i > c, above, below)


FMIN = float(np.finfo(np.float32).min)


@pytest.mark.parametrize(("attr", "mask", "c"), [
    ("tilefuse.huge_above = 0 : i64", tri(200, 200, 0, FMIN), 0),
    ("tilefuse.neg_inf_above = 3 : i64", tri(200, 200, 3, -np.inf), 3),
    ("tilefuse.neg_inf_above = -5 : i64", tri(200, 200, -5, -np.inf), -5),
    ("tilefuse.huge_above = 7 : i64", tri(200, 200, 7, FMIN), 7),
])  # fmt: skip
def test_mask_argument_facts_end_the_key_loop(attr, mask, c):
    prog, got, ref = run_with_mask(mask_program(200, 200, attr), mask)
    loop = key_end(prog.source)
    m = re.fullmatch(r"tl\.minimum\(200, \(\(pid_\d+ \* (\d+)\) \+ (-?\d+)\)\)", loop)
    assert m is not None and int(m[2]) - int(m[1]) == c, loop
    assert np.isnan(got).any() == np.isnan(ref).any()
    ok = ~np.isnan(ref)
    assert relative_error(got[ok], ref[ok]) < 1e-5


@pytest.mark.parametrize(("attr", "body"), [
    (None, ADD_LINES),                                           # no fact
    ("tilefuse.huge_above = -1 : i64", ADD_LINES),               # a row keeps no key
    ("tilefuse.zero_above = 0 : i64", ADD_LINES),                # zero added: not a mask
    ("tilefuse.huge_above = 0 : i64", SCALED_AFTER),             # huge mask scaled after
])  # fmt: skip
def test_mask_argument_without_a_usable_fact_skips_nothing(attr, body):
    prog = compile(mask_program(200, 200, attr, body))
    loop = key_end(prog.source)
    assert loop == "200", loop


def test_zero_fact_compared_with_zero_ends_the_key_loop():
    text = mask_program(200, 200, "tilefuse.zero_above = 0 : i64", COMPARED)
    prog, got, ref = run_with_mask(text, tri(200, 200, 0, 0.0, below=1.0))
    loop = key_end(prog.source)
    assert loop.startswith("tl.minimum(200"), loop
    assert relative_error(got, ref) < 1e-5
