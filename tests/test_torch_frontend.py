"""The torch front-end: `tilefuse.torch.compile`, the `torch.compile` backend, the
log channels. Models and inputs live on `DEVICE` (the GPU where there is one: tilefuse
refuses CPU tensors there); kernels run in the interpreter here: small models only."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

pytest.importorskip("torch_mlir")

import torch
from torch import nn

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import build, eager64, rel_error
from tilefuse.ir import log
from tilefuse.ir.diagnostics import ArgumentError, CompileError
from tilefuse.runtime import compile as compile_program
from tilefuse.torch import backend

ROOT = Path(__file__).resolve().parent.parent
HERE = str(Path(__file__).resolve())


@pytest.fixture
def channels():
    """Switch log channels on for one test, off after."""
    yield log.configure
    log.configure("")


def line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(lines) if text in s)


class Sorted(nn.Module):
    """torch.sort: torch-mlir prints `tm_tensor.sort`, which tilefuse refuses."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.tanh(self.fc(x))
        return torch.sort(y, dim=-1).values * 2


class Histogram(nn.Module):
    """torch.histc: torch-mlir cannot lower `torch.aten.histc` to linalg."""

    def forward(self, x):
        y = torch.tanh(x)
        return torch.histc(y, bins=4) + 1


class Tied(nn.Module):
    """Two layers sharing one weight, and a buffer."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8, bias=False)
        self.b = nn.Linear(8, 8, bias=False)
        self.b.weight = self.a.weight
        self.register_buffer("scale", torch.full((8,), 0.5))

    def forward(self, x):
        return self.b(torch.tanh(self.a(x))) * self.scale


# -- tilefuse.torch.compile ---------------------------------------------------------------


def test_import_tilefuse_does_not_import_torch_mlir():
    code = "import sys, tilefuse, tilefuse.runtime; print('torch_mlir' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=os.environ | {"PYTHONPATH": str(ROOT)}, check=True)  # fmt: skip
    assert out.stdout.strip() == "False"


# convnext compiles too, but takes a minute in the interpreter
@pytest.mark.parametrize("name", ["layernorm", "lstm_cell", "mixer", "mixer_odd"])
def test_zoo_model_matches_float64_eager(name):
    model, inputs = build(name)
    compiled = tt.compile(model, *inputs)
    out = compiled(*inputs)
    ref = eager64(model, inputs)
    assert type(out) is type(ref)
    outs, refs = (out, ref) if isinstance(ref, tuple) else ((out,), (ref,))
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs, strict=True):
        assert o.shape == r.shape and o.dtype == torch.float32
        assert rel_error(o, r) < 1e-5


def test_weight_updates_are_seen_without_recompiling():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.LayerNorm(16)).to(DEVICE)
    x = torch.randn(5, 12, device=DEVICE)
    compiled = tt.compile(model, x)
    program = compiled.program
    before = compiled(x)
    with torch.no_grad():  # an optimizer step: in place
        model[0].weight.mul_(-2.0)
    assert rel_error(compiled(x), eager64(model, (x,))) < 1e-5
    other = nn.Sequential(nn.Linear(12, 16), nn.LayerNorm(16))
    model.load_state_dict(other.state_dict())  # copies into the same tensors
    assert rel_error(compiled(x), eager64(model, (x,))) < 1e-5
    model[1].weight = nn.Parameter(torch.randn(16, device=DEVICE))  # a new tensor under the name
    assert rel_error(compiled(x), eager64(model, (x,))) < 1e-5
    assert compiled.program is program
    assert rel_error(compiled(x), before) > 1e-2  # the weights did change the output


def test_tied_weights_are_one_argument():
    torch.manual_seed(1)
    model = Tied().to(DEVICE)
    x = torch.randn(3, 8, device=DEVICE)
    compiled = tt.compile(model, x)
    assert [n for n, _ in compiled.exported.state] == ["a.weight", "scale"]
    assert "@Tied(%arg0: tensor<8x8xf32>, %arg1: tensor<8xf32>, %arg2: tensor<3x8xf32>)" in compiled.mlir
    assert rel_error(compiled(x), eager64(model, (x,))) < 1e-5
    with torch.no_grad():
        model.a.weight.add_(0.5)  # both uses see it
        model.scale.fill_(3.0)
    assert rel_error(compiled(x), eager64(model, (x,))) < 1e-5


def test_a_function_with_a_python_scalar_and_structured_outputs():
    def f(x, y, alpha):
        return {"sum": x * alpha + y, "pair": (torch.exp(x), y - 1)}

    x, y = torch.randn(4, 6, device=DEVICE), torch.randn(4, 6, device=DEVICE)
    compiled = tt.compile(f, x, y, 2.5)
    out = compiled(x, y, 2.5)
    assert set(out) == {"sum", "pair"} and isinstance(out["pair"], tuple)
    torch.testing.assert_close(out["sum"], x * 2.5 + y)
    torch.testing.assert_close(out["pair"][0], torch.exp(x))
    torch.testing.assert_close(out["pair"][1], y - 1)
    assert list(inspect.signature(compiled).parameters) == ["x", "y", "alpha"]
    with pytest.raises(ArgumentError, match=r"input 2 of f was 2.5 when compiled"):
        compiled(x, y, 3.0)
    with pytest.raises(ArgumentError, match=r"must be a torch\.Tensor"):
        compiled(x, 1.0, 2.5)
    with pytest.raises(ArgumentError, match="by position"):
        compiled(x, y, alpha=2.5)
    with pytest.raises(ArgumentError, match="shape"):
        compiled(torch.randn(5, 6, device=DEVICE), torch.randn(5, 6, device=DEVICE), 2.5)


def test_a_refused_op_is_a_located_compile_error():
    model = Sorted()
    with pytest.raises(CompileError) as info:
        tt.compile(model, torch.randn(4, 8))
    e = info.value
    assert isinstance(e, tt.Refused)
    assert "tm_tensor.sort" in e.message and "aten.sort.default" in e.message
    assert f"{HERE}:{line_of(Sorted.forward, 'torch.sort')}" in e.message
    path, line, _ = e.location.rsplit(":", 2)
    assert "tm_tensor.sort" in Path(path).read_text().splitlines()[int(line) - 1]


def test_export_failures_are_export_errors():
    def mutates(x):
        x.add_(1)
        return x * 2

    with pytest.raises(tt.ExportError, match="mutates its inputs or buffers"):
        tt.compile(mutates, torch.randn(3))
    with pytest.raises(tt.ExportError, match="BatchNorm1d"):  # its running statistics
        tt.compile(nn.BatchNorm1d(4).train(), torch.randn(3, 4))

    def data_dependent(x):
        return x[x > 0].sum()

    with pytest.raises(tt.ExportError, match="data_dependent: torch-mlir cannot lower it"):
        tt.compile(data_dependent, torch.randn(6))
    with pytest.raises(TypeError, match=r"nn\.Module or a function"):
        tt.compile(3, torch.randn(6))


# -- torch.compile(backend="tilefuse") ----------------------------------------------------


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test's models traced afresh: dynamo makes the shapes of a code object it
    saw at another shape symbolic (nn.Sequential.forward), and those graphs fall back."""
    torch._dynamo.reset()
    yield


def test_the_entry_point_names_the_backend():
    points = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    value = points["torch_dynamo_backends"]["tilefuse"]
    dist = Path("tilefuse-0.1.0.dist-info")
    code = ("import torch._dynamo, tilefuse.torch.backend as b\n"
            "print(torch._dynamo.lookup_backend('tilefuse') is b.tilefuse)")  # fmt: skip
    # torch finds it through importlib.metadata, as pip's install of pyproject.toml provides it
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"tf-entry-{os.getpid()}"
    (work / dist).mkdir(parents=True, exist_ok=True)
    (work / dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tilefuse\nVersion: 0.1.0\n")
    (work / dist / "entry_points.txt").write_text(f"[torch_dynamo_backends]\ntilefuse = {value}\n")
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(work), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "True", out.stderr[-2000:]


def test_backend_matches_eager_and_never_recompiles():
    model, (x,) = build("layernorm")
    torch._dynamo.reset()  # (not a graph another test compiled: a compile here)
    backend._CACHE.clear()
    compiled = torch.compile(model, backend=backend.tilefuse)
    start = backend.STATS.compiles, backend.STATS.compiled
    with torch.no_grad():
        out = compiled(x)
        again = compiled(x)
    assert (backend.STATS.compiles, backend.STATS.compiled) == (start[0] + 1, start[1] + 1)
    assert rel_error(out, eager64(model, (x,))) < 1e-5
    torch.testing.assert_close(again, out)
    torch._dynamo.reset()  # dynamo traces again: the same graph, from the cache
    hits = backend.STATS.cache_hits
    with torch.no_grad():
        torch.compile(model, backend=backend.tilefuse)(x)
    assert backend.STATS.compiles == start[0] + 1 and backend.STATS.cache_hits == hits + 1


def test_backend_sees_weight_updates():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(6, 10), nn.GELU(), nn.Linear(10, 4)).to(DEVICE)
    x = torch.randn(3, 6, device=DEVICE)
    compiled = torch.compile(model, backend=backend.tilefuse)
    with torch.no_grad():
        compiled(x)
        n = backend.STATS.compiles
        model[0].weight.mul_(3.0)
        out = compiled(x)
        assert backend.STATS.compiles == n
        torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)


def test_a_refused_graph_runs_in_eager_with_one_line_saying_why(channels, capsys):
    channels("fallback")
    torch.manual_seed(3)
    model, x = Sorted().to(DEVICE), torch.randn(4, 8, device=DEVICE)
    fallbacks = backend.STATS.fallbacks
    with torch.no_grad():
        out = torch.compile(model, backend=backend.tilefuse)(x)
        torch.testing.assert_close(out, model(x), rtol=0, atol=0)
    assert backend.STATS.fallbacks == fallbacks + 1
    lines = [s for s in capsys.readouterr().err.splitlines() if s.startswith("[tilefuse.fallback]")]
    assert len(lines) == 1, lines
    assert "runs in eager" in lines[0] and "tm_tensor.sort is not registered" in lines[0]
    assert "aten.sort.default" in lines[0]
    assert f"{HERE}:{line_of(Sorted.forward, 'torch.sort')}" in lines[0]


def test_an_op_torch_mlir_cannot_lower_is_named_with_its_line_and_reason(channels, capfd):
    """torch-mlir's lowering emits its errors as MLIR diagnostics (printed on fd 2 by
    default, its exception saying only that a pass failed): the fallback line carries
    the op, the Python line and the reason, and nothing else reaches stderr."""
    channels("fallback")
    x = torch.randn(4, 8, device=DEVICE)
    with torch.no_grad():
        out = torch.compile(Histogram(), backend=backend.tilefuse)(x)
    torch.testing.assert_close(out, Histogram()(x), rtol=0, atol=0)
    err = capfd.readouterr().err
    lines = [s for s in err.splitlines() if s.startswith("[tilefuse.fallback]")]
    assert len(lines) == 1, err
    line = lines[0]
    assert "runs in eager: torch-mlir cannot lower torch.aten.histc: failed to legalize" in line
    assert f"aten.histc.default at {HERE}:{line_of(Histogram.forward, 'torch.histc')}" in line
    assert "printed why on stderr" not in line and "error:" not in err


def test_training_step_gives_eager_gradients():
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(8, 12), nn.LayerNorm(12), nn.Tanh(), nn.Linear(12, 3))
    model = model.to(DEVICE)
    x = torch.randn(5, 8, device=DEVICE, requires_grad=True)
    compiled = torch.compile(model, backend=backend.tilefuse)
    compiled_before = backend.STATS.compiled
    loss = compiled(x).square().mean()
    loss.backward()
    assert backend.STATS.compiled == compiled_before + 1  # the forward became kernels
    grads = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad()
    x.grad = None
    ref = model(x).square().mean()
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=1e-5, atol=1e-6)
    for g, r in zip(grads, [p.grad for p in model.parameters()] + [x.grad], strict=True):
        assert rel_error(g, r) < 1e-5


def test_backend_refuses_unknown_options():
    with pytest.raises(Exception, match="takes the option target"), torch.no_grad():
        torch.compile(nn.Tanh(), backend=backend.tilefuse, options={"mode": 1})(torch.randn(3))


# -- TILEFUSE_LOG ---------------------------------------------------------------------------


def test_channels_are_silent_unless_asked(channels, capsys):
    channels("")
    compile_program(ROOT / "samples" / "relu_add.mlir")
    assert "[tilefuse." not in capsys.readouterr().err
    channels("fusion,kernels")
    compile_program(ROOT / "samples" / "relu_add.mlir")
    err = capsys.readouterr().err
    assert "[tilefuse.fusion] @relu_add: [FUSION] single op: add -> fused_kernel_0" in err
    assert "relu_add.mlir: 1 kernel (fused_kernel_0), source " in err
    assert "[tilefuse.fallback]" not in err


def test_log_spec():
    assert log.parse("all") == set(log.CHANNELS)
    assert log.parse(" fusion, kernels ") == {"fusion", "kernels"}
    with pytest.raises(ValueError, match="unknown channel fusoin"):
        log.parse("fusoin")


def test_tilefuse_log_environment_variable():
    code = ("import tilefuse.runtime as tf\n"
            f"tf.compile({str(ROOT / 'samples' / 'softmax.mlir')!r})")  # fmt: skip
    env = os.environ | {"PYTHONPATH": str(ROOT), "TILEFUSE_LOG": "all"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "[tilefuse.fusion] @softmax: [FUSION] fused reduction" in out.stderr
    assert "[tilefuse.kernels]" in out.stderr
    env["TILEFUSE_LOG"] = "kernel"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and "TILEFUSE_LOG: unknown channel kernel" in out.stderr
