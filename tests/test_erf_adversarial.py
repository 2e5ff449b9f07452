"""Adversarial tests of erf since f7aa4ad: `math.erf` of f32 and 16-bit values prints
`prelude._erf` (libdevice's erff without its branch on the GPU, `tl.erf` under the
interpreter), of f64 ones `tl.erf`, and `_gl_erf` in the warp-specialised attention's Gluon
kernel. Spellings of erf through the torch front-end and special values against eager in
f64, the printed calls, and `prelude._erff` (the GPU's polynomials) run by the interpreter
(a fused `tl.fma`, an exact `tl.exp2`) against erf in f64."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

pytest.importorskip("torch_mlir")

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import Fn, assert_matches, eager64, randn, rel_error
from tilefuse.backend.triton import prelude
from tilefuse.backend.triton.attention_ws import GLUON_PRELUDE, GLUON_TWINS, gluon_line
from tilefuse.torch import backend

SWITCH = 1.002959966659546
"""|x| from which `_erff` takes the exponential polynomial (an f32 value)."""
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "f64": torch.float64}
TOL = {torch.float32: (1e-5, 1e-6), torch.bfloat16: (1e-2, 1e-2), torch.float16: (1e-2, 1e-3),
       torch.float64: (1e-12, 1e-15)}  # fmt: skip
"""(rtol, atol) of an elementwise output against eager in f64 rounded to its dtype."""
CALL = {d: {"tl.erf("} if d == torch.float64 else {"_erf("} for d in DTYPES.values()}
"""The erf a program of each dtype calls."""
SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e30, -1e30]
"""Inputs whose erf and GELU must be exactly eager's (sign of zero included)."""


def erf_calls(source: str) -> set[str]:
    """The erf calls (`_erf(`, `tl.erf(`) of a module's kernels (not its helpers')."""
    found, helper = set(), False
    for line in source.splitlines():
        if line.startswith("def "):
            helper = line.startswith("def _")
        elif not helper and not line.lstrip().startswith("#"):
            found |= set(re.findall(r"(?<![\w.])_erf\(|\btl\.erf\(", line))
    return found


def compiled(fn, *args: torch.Tensor, name: str = "erf", **kw):
    return tt.compile(fn if isinstance(fn, nn.Module) else Fn(fn), *args, name=name, **kw)


def assert_close_to_f64(out: torch.Tensor, fn, x: torch.Tensor) -> None:
    """`out` within `TOL` of `fn` in f64 on `x` (rounded to `out`'s dtype)."""
    ref = fn(x.detach().cpu().double()).to(out.dtype)
    rtol, atol = TOL[out.dtype]
    torch.testing.assert_close(out.cpu(), ref, rtol=rtol, atol=atol, equal_nan=True)


# -- spellings through the torch front-end ----------------------------------------------

SPELLINGS = {
    "gelu": F.gelu,
    "gelu_by_hand": lambda x: x * 0.5 * (1 + torch.erf(x / math.sqrt(2))),
    "special_erf": torch.special.erf,
    "erf_of_a_constant": lambda x: x * torch.erf(torch.full((16,), 0.7, dtype=x.dtype, device=x.device)),
    "erf_of_a_0d_sum": lambda x: x + torch.erf(x.sum() / 8),
    "erf_then_sum": lambda x: torch.erf(x).sum(-1),
    "erf_then_mean_dim0": lambda x: torch.erf(2 * x).mean(0),
    "erf_of_neg_then_max": lambda x: torch.erf(-x).amax(-1),
}


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_erf_spellings_match_eager_in_f64(spelling, dtype):
    fn = SPELLINGS[spelling]
    x = (2 * randn(8, 16, seed=3)).to(dtype)
    c = compiled(fn, x, name=spelling)
    assert_close_to_f64(c(x), fn, x)
    assert erf_calls(c.source) == CALL[dtype]


@pytest.mark.parametrize(("src", "dst", "call"), [(torch.float32, torch.float64, "tl.erf("),
                                                  (torch.float64, torch.float32, "_erf("),
                                                  (torch.bfloat16, torch.float32, "_erf(")])  # fmt: skip
def test_the_erfs_element_type_picks_the_helper_not_the_programs(src, dst, call):
    x = randn(8, 16, seed=4).to(src)
    c = compiled(lambda x: torch.erf(x.to(dst)).to(src), x, name="erf_cast")
    assert erf_calls(c.source) == {call}
    ref = torch.erf(x.cpu().to(dst).double()).to(dst).to(src)
    rtol, atol = max(TOL[src], TOL[dst])
    torch.testing.assert_close(c(x).cpu(), ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("fn", [torch.erfc, torch.special.erfc], ids=["erfc", "special_erfc"])
def test_erfc_is_a_clean_export_error(fn):
    with pytest.raises(tt.ExportError) as info:
        compiled(fn, randn(8, 16), name="erfc")
    assert "cannot lower torch.aten.erfc" in str(info.value) and "Traceback" not in str(info.value)


@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_linear_with_erf_gelu_epilogue(dtype):
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(64, 128), nn.GELU()).to(DEVICE, dtype), randn(32, 64, seed=1).to(dtype)
    c = tt.compile(model, x)
    rtol = {torch.float32: 1e-5, torch.float64: 1e-12}.get(dtype, 2e-2)
    assert_matches("Linear+GELU", c(x), eager64(model, (x,)), rtol)
    assert erf_calls(c.source) == CALL[dtype]


def test_erf_of_integers_is_an_f32_erf():
    c = compiled(torch.erf, xi := torch.arange(-5, 11, device=DEVICE).reshape(2, 8), name="erf_int")
    assert erf_calls(c.source) == {"_erf("}
    torch.testing.assert_close(c(xi).cpu(), torch.erf(xi.cpu().double()).float())


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


def test_tanh_gelu_matches_eager_to_f32_precision():
    """torch-mlir lowers aten.gelu(approximate='tanh') with sqrt(2/pi) as 0.797724 =
    sqrt(2/(22/7)), up to 5e-5 off eager: the front-end decomposes an f32 one first
    (`tilefuse.torch.decompose.gelu`; a bf16 one keeps the SFU's tanh)."""
    x = torch.linspace(-6, 6, 4097).reshape(17, 241).to(DEVICE)
    c = compiled(gelu_tanh, x, name="gelu_tanh_dense")
    assert "0.7978845" in c.source
    assert_close_to_f64(c(x), gelu_tanh, x)


def test_erf_gelu_through_torch_compile():
    torch._dynamo.reset()
    torch.manual_seed(2)
    model, x = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)).to(DEVICE), randn(4, 16, seed=6)
    fallbacks = backend.STATS.fallbacks
    with torch.no_grad():
        out = torch.compile(model, backend=backend.tilefuse)(x)
    torch._dynamo.reset()
    assert backend.STATS.fallbacks == fallbacks
    assert rel_error(out, eager64(model, (x,))) < 1e-5


def erf_capped_attention(q, k, v):
    s = (q @ k.transpose(-1, -2)) * (1 / math.sqrt(q.shape[-1]))
    return torch.softmax(5.0 * torch.erf(s / 5.0), dim=-1) @ v


def test_erf_in_warp_specialised_attention_calls_the_gluon_twin():
    q, k, v = (randn(1, 2, 256, 128, seed=s).to(torch.bfloat16) for s in range(3))
    c = compiled(erf_capped_attention, q, k, v, name="erf_attention", target="h100")  # (Hopper: Gluon)
    assert_matches("attention", c(q, k, v), eager64(Fn(erf_capped_attention), (q, k, v)), 2e-2)
    kernel_lines = [line for line in c.source.splitlines() if re.search(r"= _(gl_)?erf\(", line)]
    assert len(kernel_lines) == 2 and any("_gl_erf(" in line for line in kernel_lines)
    assert "def _gl_erf(x):" in c.source and "def _erff(x):" in c.source


# -- special values --------------------------------------------------------------------------


def special_inputs(dtype: torch.dtype) -> torch.Tensor:
    """`SPECIALS`, tiny values, and the switch with its neighbours (both signs) in `dtype`."""
    s, tiny = torch.tensor(SWITCH, dtype=dtype), (1e-30 if dtype != torch.float16 else 1e-7)
    near = torch.stack([torch.nextafter(s, torch.tensor(0.0, dtype=dtype)), s, torch.nextafter(s, 2 * s)])
    return torch.cat([torch.tensor([*SPECIALS, tiny, -tiny, 0.5, 4.0, -4.0, 10.0, -10.0], dtype=dtype), near, -near])


def assert_bits_match(out: torch.Tensor, ref: torch.Tensor) -> None:
    """Equal, NaN where NaN, and zeros of the same sign."""
    nan = ref.isnan()
    assert torch.equal(out.isnan(), nan)
    assert torch.equal(out[~nan], ref[~nan])
    assert torch.equal(torch.signbit(out[~nan]), torch.signbit(ref[~nan]))


@pytest.mark.parametrize("fn", [torch.erf, F.gelu], ids=["erf", "gelu"])
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_special_values(fn, dtype):
    x = special_inputs(dtype).to(DEVICE)
    out = compiled(fn, x, name=f"special_{fn.__name__}")(x).cpu()
    ref = fn(x.cpu().double()).to(dtype)
    n = len(SPECIALS)
    assert_bits_match(out[:n], ref[:n])
    assert_close_to_f64(out[n:], fn, x[n:])
    if fn is torch.erf:
        assert out[2:4].tolist() == [1.0, -1.0] and out[5:7].tolist() == [1.0, -1.0]
        assert not torch.signbit(out[0]) and torch.signbit(out[1])


def test_erf_and_gelu_agree_with_f32_eager_on_a_dense_range():
    x = torch.linspace(-6, 6, 4097).reshape(17, 241).to(DEVICE)
    c = compiled(lambda x: (torch.erf(x), F.gelu(x)), x, name="dense")
    erf, gelu = c(x)
    assert_close_to_f64(erf, torch.erf, x)
    assert_close_to_f64(gelu, F.gelu, x)
    torch.testing.assert_close(erf.cpu(), torch.erf(x.cpu()), rtol=2e-7, atol=1.2e-7)


# -- prelude._erff: the GPU's polynomials, run by the interpreter -------------------------


@triton.jit
def _erff_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, prelude._erff(tl.load(x_ptr + offs, mask=mask, other=0.0)), mask=mask)


def erff(x: torch.Tensor) -> torch.Tensor:
    """`prelude._erff` of an f32 tensor (its GPU branch, wherever the kernel runs)."""
    x = x.to(DEVICE, torch.float32).contiguous()
    y = torch.empty_like(x)
    block = 1 << 14
    with np.errstate(all="ignore"):  # (x * x of huge x: the unused polynomial overflows)
        _erff_kernel[(triton.cdiv(x.numel(), block),)](x, y, x.numel(), BLOCK=block)
    return y.cpu()


def ulps(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """|y - erf(x)| in ulps of f32 at erf(x) (erf in f64; subnormal ulps below 2^-126)."""
    ref = torch.special.erf(x.double())
    exponent = torch.frexp(ref)[1]
    return (y.double() - ref).abs() / torch.ldexp(torch.ones_like(ref), (exponent - 24).clamp_min(-149))


def f32_range(lo: float, hi: float, step: int) -> torch.Tensor:
    """Every `step`-th f32 in [lo, hi) (both positive), by their bits."""
    a, b = (int(np.float32(v).view(np.int32)) for v in (lo, hi))
    return torch.from_numpy(np.arange(a, b, step, dtype=np.int32).view(np.float32))


@pytest.mark.parametrize(("lo", "hi", "step"), [(0.5, 2.0, 3), (2.0, 4.5, 5), (4.5, 11.0, 5), (1e-38, 0.5, 397),
                                                (0.99, 1.02, 1)])  # fmt: skip
def test_erff_is_within_2_ulp_of_erf_odd_and_monotone(lo, hi, step):
    err = ulps(x := f32_range(lo, hi, step), y := erff(x))
    assert err.max() <= 2.0, f"{err.max():.3g} ulp at x = {x[int(err.argmax())].item()!r}"
    assert torch.equal(erff(-x), -y)
    if step == 1:
        # monotone across the switch (not everywhere: libdevice's erff, whose small
        # polynomial this is, steps 1 ulp down at x = 0.9915444)
        k = x.tolist().index(SWITCH)
        assert y[k - 1] <= y[k] <= y[k + 1] and y[k] - y[k - 1] <= 2 ** -23


def test_erff_special_values():
    y = erff(x := torch.tensor([*SPECIALS, 3.4e38, -3.4e38, 1e-30, -1e-30, 1e-40, -1e-40, 1.4e-45]))
    assert_bits_match(y[:7], torch.erf(x[:7].double()).float())
    assert y[7:9].tolist() == [1.0, -1.0]
    assert ulps(x[9:11], y[9:11]).max() <= 2.0
    # subnormal x: ~1.128 x (libdevice's ftz erff gives 0 there: documented)
    torch.testing.assert_close(y[11:].double(), torch.erf(x[11:].double()), rtol=1e-4, atol=2e-45)


# -- the Gluon twin, and tanh's helpers (their table moved in f7aa4ad) -------------------


def test_the_gluon_twin():
    assert GLUON_TWINS["_erf"] == "_gl_erf"
    assert gluon_line("    t_4 = _erf(t_3)") == "    t_4 = _gl_erf(t_3)"
    assert gluon_line("    t_4 = tl.erf(t_3)") == "    t_4 = gl.erf(t_3)"
    for twin in GLUON_TWINS.values():
        assert f"def {twin}(" in GLUON_PRELUDE, twin


@pytest.mark.parametrize(("dtype", "helper"), [(torch.float32, "_tanh("), (torch.bfloat16, "_tanh_bf16("),
                                               (torch.float16, "_tanh("), (torch.float64, "_tanh_f64(")])  # fmt: skip
def test_tanh_and_tanh_gelu_keep_their_helpers_and_call_no_erf(dtype, helper):
    c = compiled(lambda x: (torch.tanh(x), gelu_tanh(x)), x := randn(8, 16, seed=5).to(dtype), name="tanh")
    assert re.search(rf"= {re.escape(helper)}", c.source), helper
    assert erf_calls(c.source) == set() and "def _erf(" not in c.source  # (tanh GELU: no erf)
    assert_close_to_f64(c(x)[0], torch.tanh, x)
