"""Complex tensors as pairs of reals (`tilefuse/torch/complex_pairs.py`): each rule
against torch's own complex arithmetic (the rewritten ATen graph run in eager against
the graph as exported), and Meta's LLaMA rotary (`view_as_complex`, `torch.polar`,
`freqs_cis` as a buffer, a plain attribute or computed in the forward) through
`tilefuse.torch.compile` and the `torch.compile` backend against float64 eager."""

from __future__ import annotations

import pytest

pytest.importorskip("torch_mlir")

import torch
import torch.nn.functional as F
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import Fn, assert_matches, eager64, randn
from tilefuse.ir.diagnostics import CompileError
from tilefuse.torch import backend
from tilefuse.torch.complex_pairs import RULES, pair_inputs, real_pairs
from tilefuse.torch.export import ExportError

aten = torch.ops.aten




def _c(x: torch.Tensor) -> torch.Tensor:
    return torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))


SPELLINGS = {
    # each: a function of real tensors whose intermediates are complex
    "mul": lambda a, b: torch.view_as_real(_c(a) * _c(b)),
    "mul_real": lambda a, b: torch.view_as_real(_c(a) * b[..., :4]),
    "mul_scalar": lambda a, b: torch.view_as_real(_c(a) * 2.5),
    "add_sub": lambda a, b: torch.view_as_real(_c(a) + _c(b) - _c(b) * _c(a)),
    "add_real": lambda a, b: torch.view_as_real(_c(a) + b[..., :4]),
    "neg_conj": lambda a, b: torch.view_as_real(-_c(a).conj() * _c(b)),
    "real_imag_abs": lambda a, b: _c(a).real * _c(b).imag + _c(a).abs(),
    "polar": lambda a, b: torch.view_as_real(torch.polar(a.abs(), b) * _c(torch.cat([a, b], -1))),
    "complex": lambda a, b: torch.view_as_real(torch.complex(a, b) * 2),
    "views": lambda a, b: torch.view_as_real(
        _c(a).unsqueeze(1).transpose(0, 1).permute(1, 0, 2)[:, :, 1:3].squeeze(1).expand(3, 2)
        * _c(b)[:, 1:3].unsqueeze(0)[0].select(0, 1)).flatten(-2),
}


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_rule_matches_torch_complex_arithmetic(name):
    a, b = randn(3, 8, seed=1, device="cpu"), randn(3, 8, seed=2, device="cpu")
    program = torch.export.export(Fn(SPELLINGS[name]), (a, b), strict=False)
    graph = program.graph_module
    complex_ops = [n for n in graph.graph.nodes if isinstance(v := n.meta.get("val"), torch.Tensor)
                   and v.is_complex()]  # fmt: skip
    assert complex_ops and real_pairs(graph.graph)
    graph.recompile()
    values = [n.meta.get("val") for n in graph.graph.nodes]
    assert not any(isinstance(v, torch.Tensor) and v.is_complex() for v in values)
    want = SPELLINGS[name](a, b)
    got = graph(a, b)
    got = got[0] if isinstance(got, tuple | list) else got
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("fn", [lambda a: torch.view_as_real(torch.exp(_c(a))),
                                lambda a: torch.view_as_real(_c(a).sum(0))], ids=["exp", "sum"])
def test_an_op_without_a_rule_is_a_located_refusal(fn):
    """Never handed to torch-mlir: it lowers some complex ops wrongly, aborts on others."""
    a = randn(3, 8, device="cpu")
    program = torch.export.export(Fn(fn), (a,), strict=False)
    assert aten.exp.default not in RULES
    with pytest.raises(CompileError, match=r"complex aten\.(exp|sum)\.\w+ \(File \"[^\"]+\", line \d+"):
        real_pairs(program.graph)
    with pytest.raises(CompileError, match="is not supported: tilefuse computes complex values as real pairs"):
        tt.compile(Fn(fn), a)


@pytest.mark.parametrize("name", ["rsub", "rsub_product", "rsub_scalar", "complex_scalar", "alpha", "abs_huge"])
def test_spellings_the_sweep_found(name):
    """`1 - c` (torch-mlir's own lowering had the imaginary part `1 - im`), `c * 1j`,
    `add(..., alpha=2)`, `|c|` near f32's largest (`hypot`, not `sqrt(re^2 + im^2)`)."""
    fns = {"rsub": lambda a: torch.view_as_real(1 - _c(a)),
           "rsub_product": lambda a: torch.view_as_real(1 - _c(a) * _c(a.flip(-1))),
           "rsub_scalar": lambda a: torch.view_as_real(2.5 - _c(a) * 1.0),
           "complex_scalar": lambda a: torch.view_as_real(_c(a) * 1j + (1 + 2j)),
           "alpha": lambda a: torch.view_as_real(torch.add(_c(a), _c(a), alpha=2) - torch.sub(_c(a), a[..., :4], alpha=3)),
           "abs_huge": lambda a: _c(a * 1e20).abs()}  # fmt: skip
    a = randn(3, 8, device="cpu")
    got = tt.compile(Fn(fns[name]), a)(a)
    torch.testing.assert_close(got, fns[name](a), rtol=2e-6, atol=1e-5)


def test_a_complex_argument_is_passed_as_its_pair():
    def rotate(x, freqs_cis):
        return torch.view_as_real(_c(x) * freqs_cis).flatten(-2)

    x, freqs = randn(4, 8, device="cpu"), torch.polar(torch.ones(4, 4), randn(4, 4, seed=3, device="cpu"))
    compiled = tt.compile(Fn(rotate), x, freqs)
    torch.testing.assert_close(compiled(x, freqs), rotate(x, freqs), rtol=1e-6, atol=1e-6)


def test_pair_inputs_passes_complex_tensors_as_views():
    c = torch.polar(torch.ones(4, 3), randn(4, 3, device="cpu"))
    x = randn(2, device="cpu")
    paired = pair_inputs([c, x, 3])
    assert paired[0].shape == (4, 3, 2) and paired[0].data_ptr() == c.data_ptr()
    assert paired[1] is x and paired[2] == 3


# -- Meta's LLaMA rotary ------------------------------------------------------------


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: dim // 2].float() / dim))
    angles = torch.outer(torch.arange(end).float(), freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    shape = [d if i in (1, xq_.ndim - 1) else 1 for i, d in enumerate(xq_.shape)]
    freqs_cis = freqs_cis.view(*shape)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class MetaAttention(nn.Module):
    """Meta's reference attention: `freqs_cis` a complex buffer, a plain attribute
    (torch.export lifts it as a constant) or computed in the forward."""

    def __init__(self, d: int = 64, heads: int = 4, t: int = 32, freqs: str = "buffer"):
        super().__init__()
        self.heads, self.hd, self.freqs = heads, d // heads, freqs
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        if freqs == "buffer":
            self.register_buffer("freqs_cis", precompute_freqs_cis(self.hd, t))
        elif freqs == "attribute":
            self.freqs_cis = precompute_freqs_cis(self.hd, t)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (w(x).view(b, t, self.heads, self.hd) for w in (self.wq, self.wk, self.wv))
        freqs_cis = precompute_freqs_cis(self.hd, t).to(x.device) if self.freqs == "forward" \
            else self.freqs_cis.to(x.device)[:t]  # fmt: skip
        q, k = apply_rotary_emb(q, k, freqs_cis)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True)  # fmt: skip
        return self.wo(y.transpose(1, 2).reshape(b, t, d))


def _reference64(model: MetaAttention, x: torch.Tensor) -> torch.Tensor:
    """float64 eager (a complex buffer or attribute to complex128 with it)."""
    if model.freqs == "attribute":
        saved = model.freqs_cis
        model.freqs_cis = saved.to(torch.complex128)
        try:
            return eager64(model, (x,))
        finally:
            model.freqs_cis = saved
    return eager64(model, (x,))


@pytest.mark.parametrize(("freqs", "kernels"), [("buffer", 4), ("attribute", 4), ("forward", 5)])
def test_meta_rotary_through_tilefuse_compile(freqs, kernels):
    torch.manual_seed(0)
    model = MetaAttention(freqs=freqs).to(DEVICE).eval()
    x = randn(2, 16, 64, device="cpu").to(DEVICE)
    compiled = tt.compile(model, x)
    assert len(compiled.kernels) == kernels
    with torch.no_grad():
        assert_matches("meta rotary", compiled(x), _reference64(model, x), 5e-5)


@pytest.mark.parametrize("grad", [False, True], ids=["inference", "training_forward"])
def test_meta_rotary_through_the_backend(grad):
    """In a training forward aot_autograd saves a complex slice of `freqs_cis` for the
    backward: the program returns its pair, the launcher hands back the complex view."""
    torch.manual_seed(0)
    torch._dynamo.reset()
    backend._CACHE.clear()
    model = MetaAttention(freqs="buffer").to(DEVICE)
    x = randn(2, 16, 64, device="cpu").to(DEVICE)
    start = backend.STATS.fallbacks, backend.STATS.compiled
    with torch.set_grad_enabled(grad):
        out = torch.compile(model, backend=backend.tilefuse)(x)
    assert (backend.STATS.fallbacks - start[0], backend.STATS.compiled - start[1]) == (0, 1)
    assert_matches("meta rotary", out.detach(), _reference64(model, x), 5e-5)
    if grad:
        out.sum().backward()
        assert model.wq.weight.grad is not None and torch.isfinite(model.wq.weight.grad).all()


def test_a_module_returning_a_complex_tensor_is_refused():
    x = randn(3, 8, device="cpu")
    with pytest.raises(ExportError, match="returns a complex tensor"):
        tt.compile(Fn(lambda a: _c(a) * 2), x)


def test_the_backend_names_a_complex_op_it_refuses():
    """A complex op with no rule, refused before torch-mlir's import (`real_pairs`), runs
    in eager with the refusal's own words (it was reported as 'torch-mlir cannot lower
    it')."""
    torch._dynamo.reset()
    backend._CACHE.clear()
    fn = Fn(lambda x: torch.view_as_real(torch.exp(torch.view_as_complex(x))))
    x = randn(4, 8, 2)
    before = backend.STATS.fallbacks
    out = torch.compile(fn, backend=backend.tilefuse, dynamic=False)(x)
    assert backend.STATS.fallbacks == before + 1
    assert torch.allclose(out, fn(x))
    reasons = [r.reason for r in backend._CACHE.values() if isinstance(r, backend.Refusal)]
    assert any(r.startswith("complex aten.exp.default") for r in reasons), reasons
