"""Adversarial tests of the warp-specialised attention over run-time sizes (fd4deec,
4628697: `tile_plan.warp_specialized_attention` without "dynamic sizes", the Gluon
kernel of `backend/triton/attention_ws.py` over a dynamic grid launched in pairs of
64-row query tiles, TMA descriptors of run-time extents, `gl.num_programs` for the
causal order).

Besides `tests.gluon_emulator.gluon_in_place_of_triton` (which counts the Gluon
kernel's programs from its signature), every Gluon run here also goes through
`host_gpu`: the generated host function's own GPU branch (`if _ON_GPU:`), each Gluon
kernel emulated over the grid that branch launches it with, so a wrong launch count
or argument list shows too.

Three bugs this file found are fixed and kept as regression tests (the "bugs" section):
a query length declared a multiple of 64 made the 64-row tiles "in bounds", so the Gluon
consumer's Q load and output store were unmasked while the grid is launched in pairs: at
an odd tile count the last pair's second consumer read and wrote 64 rows past its batch
and head (the next head's output rows overwritten under the causal order), now
`DimTile.together`; a run-time head dim took the Gluon kernel planned at 128 (TMA cannot
read rows of 100 elements), now refused by the plan; and the Gluon kernel's signature
took pointers of inputs its Triton twin reads only the sizes of, so
`gluon_in_place_of_triton` could not build its arguments (KeyError), now the twin's."""

from __future__ import annotations

import math
import re
import types

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import triton.language as tl
from torch import nn

import tests.gluon_emulator as gluon_emulator
from tests.gluon_emulator import (
    GluonEmulator,
    causal_kernel_printed,  # noqa: F401 (an autouse fixture)
)
from tests.test_attention_ws_adversarial import (
    BF16,
    F16,
    SDPA,
    TOLERANCE,
    KeyTransposed,
    RepeatKV,
    SeqMajor,
    Softcap,
    Window,
    _dynamic,
    _KeyBias,
    both,
    build,
    causal,
    compiled,
    plans,
    qkv,
    randn,
    reference,
)
from tilefuse.frontend.program import load_program
from tilefuse.ir.dynamic import DimRange
from tilefuse.oracle.compare import relative_error
from tilefuse.runtime.compiled import load
from tilefuse.torch.export import export

# -- programs ---------------------------------------------------------------------------------


def marked(module: nn.Module, args: tuple, marks: dict, ranges: dict | None = None):
    """`module` exported with `marks` ({argument: [(dim, min, max)]}) dynamic; `ranges`
    replace the export's declared ranges (divisors)."""
    for i, dims in marks.items():
        for d, lo, hi in dims:
            torch._dynamo.mark_dynamic(args[i], d, min=lo, max=hi)
    e = export(module, args, "m")
    return load_program(str(e.mlir), dim_ranges={**e.dim_ranges, **(ranges or {})})


SEQ = {i: [(2, 1, 1024)] for i in range(3)}  # (Q, K, V's sequence dims, each its own)


class BottomRight(nn.Module):
    """Causal aligned at the end (a KV cache's prefill): keys j <= i + (Sk - Sq)."""

    def forward(self, q, k, v):
        i, j = torch.arange(q.size(-2))[:, None], torch.arange(k.size(-2))[None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=j <= i + (k.size(-2) - q.size(-2)))


class TwoD(nn.Module):
    """2-D attention (no batch, no heads), softmax in f32."""

    def forward(self, q, k, v):
        s = (q @ k.T) / math.sqrt(q.size(-1))
        return torch.softmax(s.float(), -1).to(q.dtype) @ v


class Projection(nn.Module):
    """Q, K, V column slices of one projection (K and V strided views of it)."""

    def forward(self, x, w):
        q, k, v = (x @ w).split(128, -1)
        return torch.softmax(((q @ k.T) / math.sqrt(128)).float(), -1).to(x.dtype) @ v


class Chain(nn.Module):
    """Two attentions, the first's output the second's queries."""

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(F.scaled_dot_product_attention(q, k, v, is_causal=True), k, v)


def _keep_shift(c):
    return lambda i, j: j <= i + c


def _ref(keep=None, nan_to_zero=False):
    def ref(q, k, v):
        want = reference(q, k, v, keep=keep(q.shape[-2], k.shape[-2]) if keep else None)
        return want.nan_to_num(0.0) if nan_to_zero else want

    return ref


def _ref_2d(q, k, v):
    return reference(q[None], k[None], v[None])[0]


def _qkv_2d(sq, sk):
    q, k, v = qkv(1, 1, 1, sq, sk)
    return q[0, 0], k[0, 0], v[0, 0]


def _seq_major(b, h, hkv, sq, sk):
    return tuple(x.transpose(1, 2).contiguous() for x in qkv(b, h, hkv, sq, sk))


def _ref_seq_major(q, k, v):
    return reference(*(x.transpose(1, 2) for x in (q, k, v)), keep=causal).transpose(1, 2)


def _projection_args(s, _=None):
    return randn(s, 128, seed=4) * 0.3, randn(128, 384, seed=5) * 0.3


def _ref_projection(x, w):
    p = (x.double() @ w.double()).to(BF16).double()
    return reference(p[None, None, :, :128], p[None, None, :, 128:256], p[None, None, :, 256:])[0, 0]


def _kv_broadcast(b, h, hkv, sq, sk):
    _, k, v = qkv(1, h, hkv, sq, sk)
    return randn(b, h, sq, 128, seed=11), k, v


def _ref_kv_broadcast(q, k, v):
    return reference(q, *(x.expand(q.shape[0], -1, -1, -1) for x in (k, v)), keep=causal)


def _ref_chain(q, k, v):
    return reference(reference(q, k, v, keep=causal).to(q.dtype), k, v)


def _f16(*shape):
    return qkv(*shape, dtype=F16)


_DIV64_KEYS = {"arg1.2": DimRange(64, 1024, 64), "arg2.2": DimRange(64, 1024, 64)}

CASES = {  # name: (program, [shape of each run], inputs of a shape, reference of the inputs[, shapes
    # served by a variant without the Gluon kernel]); shapes: (batch, heads, kv heads, queries, keys),
    # the 2-D ones (queries, keys), the projection's (rows,)
    "queries dynamic, 384 keys, causal": (
        lambda: marked(SDPA(is_causal=True), qkv(1, 2, 2, 256, 384), {0: [(2, 1, 1024)]}),
        [(1, 2, 2, n, 384) for n in (1, 191, 320)], qkv, _ref(lambda sq, sk: causal)),
    "keys dynamic, 256 queries": (  # (100 keys: the variant of sizes <= 128, no Gluon kernel)
        lambda: marked(SDPA(), qkv(1, 2, 2, 256, 256), {1: [(2, 1, 1024)], 2: [(2, 1, 1024)]}),
        [(1, 2, 2, 256, n) for n in (100, 129, 257, 384)], qkv, _ref(), [(1, 2, 2, 256, 100)]),
    "queries and keys apart, causal": (
        lambda: marked(SDPA(is_causal=True), qkv(1, 2, 2, 256, 384), SEQ),
        [(1, 2, 2, 129, 257), (1, 2, 2, 300, 130), (1, 2, 2, 191, 513), (1, 2, 2, 64, 200)],
        qkv, _ref(lambda sq, sk: causal)),
    "queries and keys apart, f16": (
        lambda: marked(SDPA(), _f16(1, 2, 2, 256, 384), SEQ),
        [(1, 2, 2, 257, 1), (1, 2, 2, 320, 385)], _f16, _ref()),
    "batch and sequence, causal": (
        lambda: marked(SDPA(is_causal=True), qkv(2, 2, 2, 256, 256), {i: [(0, 1, 4), (2, 1, 1024)] for i in range(3)}),
        [(3, 2, 2, 129, 129), (2, 2, 2, 191, 191)], qkv, _ref(lambda sq, sk: causal)),
    "heads and sequence": (
        lambda: marked(SDPA(), qkv(1, 2, 2, 256, 256), {i: [(1, 1, 8), (2, 1, 1024)] for i in range(3)}),
        [(1, 3, 3, 129, 129), (1, 1, 1, 257, 257)], qkv, _ref()),
    "sdpa gqa 2, causal, queries and keys apart": (
        lambda: marked(SDPA(is_causal=True, gqa=True), qkv(1, 4, 2, 256, 384), SEQ),
        [(1, 4, 2, 191, 130)], qkv, _ref(lambda sq, sk: causal)),
    "hf repeat_kv gqa 2": (
        lambda: marked(RepeatKV(), qkv(1, 4, 2, 256, 256), {i: [(2, 1, 1024)] for i in range(3)}),
        [(1, 4, 2, 129, 129)], qkv, _ref(lambda sq, sk: causal)),
    "sliding window mask of aranges": (
        lambda: marked(Window(), qkv(1, 2, 2, 256, 256), {i: [(2, 1, 1024)] for i in range(3)}),
        [(1, 2, 2, 257, 257)], qkv, _ref(lambda sq, sk: lambda i, j: (j <= i) & (j > i - 100))),
    "bottom-right causal mask, queries and keys apart": (
        lambda: marked(BottomRight(), qkv(1, 2, 2, 256, 384), SEQ),
        [(1, 2, 2, 129, 257), (1, 2, 2, 300, 130)], qkv, _ref(lambda sq, sk: _keep_shift(sk - sq), True)),
    "mask j <= i - 130 (rows without keys)": (
        lambda: marked(SDPA(shift=-130), qkv(1, 2, 2, 256, 384), SEQ),
        [(1, 2, 2, 191, 257)], qkv, _ref(lambda sq, sk: _keep_shift(-130), True)),
    "[B, S, H, D] causal": (
        lambda: marked(SeqMajor(), _seq_major(1, 2, 2, 256, 256), {i: [(1, 1, 1024)] for i in range(3)}),
        [(1, 2, 2, 191, 200)], _seq_major, _ref_seq_major),
    "2-D, queries and keys apart": (
        lambda: marked(TwoD(), _qkv_2d(256, 384), {i: [(0, 1, 1024)] for i in range(3)}),
        [(129, 257), (1, 300), (191, 129)], _qkv_2d, _ref_2d),
    "K and V strided slices of one projection": (
        lambda: marked(Projection(), _projection_args(256), {0: [(0, 1, 1024)]}),
        [(129,), (191,)], _projection_args, _ref_projection),
    "K and V broadcast over a dynamic batch, causal": (
        lambda: marked(SDPA(is_causal=True), _kv_broadcast(2, 2, 2, 256, 256),
                       {0: [(0, 1, 4), (2, 1, 1024)], 1: [(2, 1, 1024)], 2: [(2, 1, 1024)]}),
        [(2, 2, 2, 129, 129)], _kv_broadcast, _ref_kv_broadcast),
    "two attentions chained": (
        lambda: marked(Chain(), qkv(1, 2, 2, 256, 256), {i: [(2, 1, 1024)] for i in range(3)}),
        [(1, 2, 2, 191, 191)], qkv, _ref_chain),
    "queries a multiple of 128 (divisor), causal": (
        lambda: marked(SDPA(is_causal=True), qkv(1, 2, 2, 256, 384), SEQ, {"arg0.2": DimRange(128, 1024, 128)}),
        [(1, 2, 2, 128, 192), (1, 2, 2, 384, 257)], qkv, _ref(lambda sq, sk: causal)),
    "keys a multiple of 64 (divisor), causal": (
        lambda: marked(SDPA(is_causal=True), qkv(1, 2, 2, 256, 384), SEQ, _DIV64_KEYS),
        [(1, 2, 2, 129, 192), (1, 2, 2, 191, 64)], qkv, _ref(lambda sq, sk: causal)),
    "queries 2..100, 512 keys, causal": (
        lambda: marked(SDPA(is_causal=True), qkv(1, 2, 2, 64, 512), {0: [(2, 2, 100)]}),
        [(1, 2, 2, 33, 512), (1, 2, 2, 100, 512)], qkv, _ref(lambda sq, sk: causal)),
    "sample, sequence 1..4096 (its own size names)": (
        lambda: _dynamic("S", {"B": 1, "H": 2, "S": 4096, "D": 128}, 2),
        [(1, 2, 2, n, n) for n in (130, 319)], qkv, _ref()),
}  # fmt: skip


# -- the host's GPU branch, its Gluon kernels emulated -----------------------------------------


def host_gpu(prog, emitted, args) -> tuple[torch.Tensor, list[tuple[str, int]]]:
    """The output of the host function's GPU branch (`_ON_GPU` true in the host function
    only: the Triton kernels it still launches run under the interpreter) with each Gluon
    kernel emulated over the programs the host launches, and those launches (name,
    programs)."""
    prog.check_arguments(args)
    args = tuple(a.contiguous() for a in args)
    python = prog.python
    fn = getattr(python, prog.function)
    scope = dict(vars(python))
    scope["_ON_GPU"] = True
    emu = GluonEmulator(emitted.text)
    launches: list[tuple[str, int]] = []

    class Launch:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            def run(*kernel_args, **options):
                assert set(options) <= {"num_warps", "num_stages"}, options
                launches.append((self.name, math.prod(grid)))
                emu.launch(self.name, math.prod(grid), list(kernel_args))

            return run

    for sig in emitted.kernels:
        if sig.gpu is not None:
            scope[sig.gpu.name] = Launch(sig.gpu.name)
    host = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    host.__kwdefaults__ = fn.__kwdefaults__
    extra = {"constants": prog.constants_on(args[0].device)} if prog.host_constants else {}
    with np.errstate(all="ignore"):
        out = host(*args, dot_dtype=tl.float32, **extra)
    return (out[0] if isinstance(out, tuple) else out), launches


def expected_programs(shape) -> int:
    """Programs of the Gluon kernel: a pair of 64-row query tiles each, per batch and
    head (the 2-D programs and the projection's: none)."""
    if len(shape) == 5:
        b, h, _, sq, _ = shape
        return b * h * -(-sq // 128)
    return -(-shape[0] // 128)


def _error(got, want) -> float:
    return relative_error(got.double().numpy(), want.double().numpy())


@pytest.mark.parametrize("name", sorted(CASES))
def test_run_time_sizes_match_and_launch_pairs(name):
    """Each program takes the Gluon kernel; at each size the Triton kernel (interpreter)
    and the host's GPU branch with the Gluon kernel (emulated) match float64, and the
    host launches each Gluon kernel once (but at the shapes a variant without one
    serves), with a program for each pair of 64-row query tiles a batch and head."""
    program, shapes, inputs, ref, *rest = CASES[name]
    no_gluon = rest[0] if rest else []
    prog, emitted = compiled(program())
    assert any(sig.gpu is not None for sig in emitted.kernels), emitted.text
    gluon_kernels = [sig.gpu.name for sig in emitted.kernels if sig.gpu is not None]
    for shape in shapes:
        args = inputs(*shape)
        want = ref(*args)
        tol = TOLERANCE[args[0].dtype]
        (triton_out,) = prog(*args)
        gluon_out, launches = host_gpu(prog, emitted, args)
        assert _error(triton_out, want) < tol, (shape, _error(triton_out, want))
        assert _error(gluon_out, want) < tol, (shape, _error(gluon_out, want), launches)
        if shape in no_gluon:
            assert launches == [], (shape, launches)
            continue
        assert [n for n, _ in launches] == gluon_kernels, (shape, launches)
        assert all(p == expected_programs(shape) for _, p in launches), (shape, launches)


@pytest.mark.parametrize("name", ["queries and keys apart, causal", "batch and sequence, causal"])
def test_the_two_emulations_agree(name):
    """`gluon_in_place_of_triton` (programs counted from the signature) and the host's
    GPU branch (programs as launched) give the same bits."""
    program, shapes, inputs, *_ = CASES[name]
    prog, emitted = compiled(program())
    args = inputs(*shapes[-1])
    _, in_place = both(prog, emitted, args)
    gluon_out, _ = host_gpu(prog, emitted, args)
    assert torch.equal(in_place, gluon_out), _error(in_place, gluon_out)


# -- refused: still right, and saying why -------------------------------------------------------


def _softcap_ref(q, k, v):
    with torch.no_grad():
        return Softcap().double()(q.double(), k.double(), v.double())


def _key_bias_args(b, h, hkv, sq, sk):
    return (*qkv(b, h, hkv, sq, sk), randn(sk, seed=7))


def _key_bias_ref(q, k, v, bias):
    with torch.no_grad():
        return _KeyBias().double()(q.double(), k.double(), v.double(), bias.double())


def _kt_args(b, h, hkv, sq, sk):
    q, k, v = qkv(b, h, hkv, sq, sk)
    return q, k.transpose(-1, -2).contiguous(), v


REFUSED = {  # name: (program, shape, inputs, reference, the plan note's or module comment's reason)
    "head dim 64": (lambda: marked(SDPA(), qkv(1, 2, 2, 256, 256, d=64), SEQ), (1, 2, 2, 191, 257),
                    lambda *s: qkv(*s, d=64), _ref(), "plan: head dim 64, output width 64"),
    "a per-key bias": (lambda: marked(_KeyBias(), _key_bias_args(1, 2, 2, 256, 256), {**SEQ, 3: [(0, 1, 1024)]}),
                       (1, 2, 2, 191, 257), _key_bias_args, _key_bias_ref, "plan: a tensor read along the key dim"),
    "192 static queries, keys dynamic": (
        lambda: marked(SDPA(), qkv(1, 2, 2, 192, 256), {1: [(2, 1, 1024)], 2: [(2, 1, 1024)]}), (1, 2, 2, 192, 300),
        qkv, _ref(), "plan: query rows not a multiple of 128"),
    "softcap (tanh)": (lambda: marked(Softcap(), qkv(1, 2, 2, 256, 256), SEQ), (1, 2, 2, 191, 257), qkv,
                       _softcap_ref, "module: the helper _tanh has no Gluon twin"),
    "K stored transposed": (
        lambda: marked(KeyTransposed(), _kt_args(1, 2, 2, 256, 384), {0: [(2, 1, 1024)], 1: [(3, 1, 1024)], 2: [(2, 1, 1024)]}),
        (1, 2, 2, 129, 257), _kt_args, lambda q, kt, v: reference(q, kt.transpose(-1, -2), v),
        "module: K is not stored [rows, head dim]"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_run_time_programs_say_why_and_match(name):
    """No Gluon kernel; the plan's note (`plan:`) or the module's comment (`module:`)
    says why, and the Triton kernels (the host's GPU branch too) match float64."""
    program, shape, inputs, ref, why = REFUSED[name]
    module, emitted = build(program())
    where, why = why.split(": ", 1)
    assert "_ws(" not in emitted.text and all(sig.gpu is None for sig in emitted.kernels)
    if where == "plan":
        notes = [p.note.data for _, p in plans(module)]
        assert any(n.startswith("not warp-specialised: ") and why in n for n in notes), notes
    else:
        assert re.search(rf"# \w+ on a GPU too: not warp-specialised: {re.escape(why)}\n", emitted.text), emitted.text
    prog = load(module, emitted)
    args = inputs(*shape)
    want = ref(*args)
    (out,) = prog(*args)
    gpu_out, launches = host_gpu(prog, emitted, args)
    assert launches == []
    assert _error(out, want) < TOLERANCE[BF16] and _error(gpu_out, want) < TOLERANCE[BF16]


# -- bugs found here, fixed ---------------------------------------------------------------


def _queries_by_64():
    """The sample, its sequence dynamic in 64..4096 in steps of 64 (`DimRange(64, 4096, 64)`)."""
    return _dynamic("S", {"B": 1, "H": 2, "S": 4096, "D": 128}, 2, divisor=64)


def _queries_by_64_causal():
    return marked(SDPA(is_causal=True), qkv(1, 2, 2, 256, 384), SEQ, {"arg0.2": DimRange(64, 1024, 64)})




@pytest.mark.parametrize("shape", [(1, 2, 2, 192, 192), (1, 2, 2, 320, 320)])
def test_queries_a_multiple_of_64_at_an_odd_tile_count(shape):
    prog, emitted = compiled(_queries_by_64())
    args = qkv(*shape)
    _, gluon_out = both(prog, emitted, args)
    assert _error(gluon_out, reference(*args)) < TOLERANCE[BF16]


def test_queries_a_multiple_of_64_the_pair_partner_is_masked():
    """The printed text: the consumer's Q load and output store are masked by the
    query length (the pair's second tile may lie past it)."""
    _, emitted = build(_queries_by_64())
    (sig,) = [s for s in emitted.kernels if s.gpu is not None]
    start = emitted.text.index(f"def {sig.gpu.name}_consumer(")
    consumer = emitted.text[start:emitted.text.index("\n\n\n", start)]
    (q_load,) = re.findall(r"= gl\.load\(q_ptr.*", consumer)
    (store,) = re.findall(r"gl\.store\(out_ptr.*", consumer)
    assert "mask=" in q_load and "mask=" in store, (q_load, store)


@pytest.fixture
def out_of_bounds_dropped(monkeypatch):
    """The emulator's pointer loads and stores with offsets past the end of the tensor's
    storage dropped (loads give 0), as if memory were there: what is left of such an
    access is what it does inside the tensor."""

    def inside(ptr, mask):
        offsets = torch.as_tensor(ptr.offset).long()
        ok = offsets < ptr.flat().numel()
        mask = ok if mask is None else torch.as_tensor(mask) & ok
        return gluon_emulator._Pointer(ptr.tensor, torch.where(ok, offsets, 0)), mask

    load, store = gluon_emulator._gl_load, gluon_emulator._gl_store

    def load_inside(ptr, mask=None, other=None):
        return load(*inside(ptr, mask), other)

    def store_inside(ptr, value, mask=None):
        ptr, mask = inside(ptr, mask)
        return store(ptr, value, mask)

    monkeypatch.setattr(gluon_emulator, "_gl_load", load_inside)
    monkeypatch.setattr(gluon_emulator, "_gl_store", store_inside)


def test_queries_a_multiple_of_64_causal_the_next_head_keeps_its_rows(out_of_bounds_dropped):
    prog, emitted = compiled(_queries_by_64_causal())
    args = qkv(1, 2, 2, 192, 192)
    want = reference(*args, keep=causal)
    triton_out, gluon_out = both(prog, emitted, args)
    assert _error(triton_out, want) < TOLERANCE[BF16]
    assert _error(gluon_out[:, 1, :64], want[:, 1, :64]) < TOLERANCE[BF16]


def test_a_run_time_head_dim_keeps_the_triton_kernel_or_matches():
    args = qkv(1, 2, 2, 256, 256)
    prog, emitted = compiled(marked(SDPA(scale=0.1), args, {i: [(3, 16, 256)] for i in range(3)}))
    for d in (64, 100):
        args = qkv(1, 2, 2, 256, 256, d=d)
        want = reference(*args, scale=0.1)
        triton_out, gluon_out = both(prog, emitted, args)
        assert _error(triton_out, want) < TOLERANCE[BF16]
        assert _error(gluon_out, want) < TOLERANCE[BF16], d




@pytest.mark.parametrize("name", ["two attentions chained", "K and V strided slices of one projection"])
def test_gluon_in_place_of_triton_runs_every_run_time_program(name):
    program, shapes, inputs, ref, *_ = CASES[name]
    prog, emitted = compiled(program())
    args = inputs(*shapes[0])
    _, gluon_out = both(prog, emitted, args)
    assert _error(gluon_out, ref(*args)) < TOLERANCE[BF16]

