"""The torch.compile backend on the ATen graphs aot_autograd traces on CUDA tensors,
made here without a GPU: traced on fake CUDA tensors (FakeTensorMode), or read from
graphs dumped on the H200 (`tests/cuda_graphs/`, `gm.print_readable` of the graphs
`tools/experiments/dump_cuda_graphs.py` captured, torch 2.11). Their factory ops name
`cuda:0` and `aten.lstm_cell` is `aten._thnn_fused_lstm_cell` there, which torch-mlir
cannot lower as spelled; `tilefuse.torch.aten_graph.for_import` makes them the CPU
graph's ops. Each compiled program runs (the interpreter here) against the same
function in eager on the CPU."""

from __future__ import annotations

import inspect
import math
import operator
import re
from pathlib import Path

import pytest

pytest.importorskip("torch_mlir")

import torch
import torch.nn.functional as F
from torch._functorch.aot_autograd import aot_function, make_boxed_func
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch_mlir.extras.fx_decomp_util import get_decomposition_table

from tests.device import DEVICE, on_device
from tests.eager import rel_error
from tilefuse.runtime import CompiledProgram
from tilefuse.torch import aten_graph, backend

GRAPHS = Path(__file__).parent / "cuda_graphs"
aten = torch.ops.aten


def fake_cuda(*inputs: torch.Tensor) -> list[torch.Tensor]:
    """Fake CUDA tensors of the inputs' shapes, strides and dtypes (under a fake mode)."""
    return [torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cuda")
            for x in inputs]  # fmt: skip


def cuda_graph(fn, *inputs: torch.Tensor) -> torch.fx.GraphModule:
    """The forward graph aot_autograd gives the backend for `fn` on CUDA tensors."""
    graphs = []

    def capture(gm, _):
        graphs.append(gm)
        return make_boxed_func(gm)

    with FakeTensorMode(), torch.no_grad(), sdpa_kernel([SDPBackend.MATH]):
        aot_function(fn, fw_compiler=capture, decompositions=get_decomposition_table())(
            *fake_cuda(*inputs))  # fmt: skip
    return graphs[0]


def cuda_devices(gm: torch.fx.GraphModule) -> list[str]:
    """The nodes that name a CUDA device."""
    return [n.name for n in gm.graph.nodes if "cuda" in repr((n.args, n.kwargs))]


def compiled(gm: torch.fx.GraphModule, name: str) -> CompiledProgram:
    program = backend._compile(gm, name, "h200")
    assert isinstance(program, CompiledProgram), program.format()
    return program


def assert_close(outputs, expected, rtol: float = 2e-5) -> None:
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected, strict=True):
        out = out.cpu()
        assert out.shape == ref.shape and out.dtype == ref.dtype
        if ref.is_floating_point():
            assert torch.equal(out.isnan(), ref.isnan())
            assert rel_error(out.nan_to_num(0.0), ref.nan_to_num(0.0)) <= rtol
        else:
            assert torch.equal(out, ref)


LSTM = (torch.randn(3, 5), torch.randn(3, 4), torch.randn(3, 4), torch.randn(16, 5),
        torch.randn(16, 4), torch.randn(16), torch.randn(16))  # fmt: skip
FORMS = {
    "masked_fill": (lambda x, m: x.masked_fill(m, float("-inf")).softmax(-1),
                    (torch.randn(4, 8), torch.arange(8) > torch.arange(4)[:, None] + 2)),
    "cross_entropy": (lambda x, t: F.cross_entropy(x, t),
                      (torch.randn(4, 8), torch.randint(0, 8, (4,)))),
    "causal_sdpa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    (torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16))),
    "lstm_cell": (lambda x, h, c, w1, w2, b1, b2: torch.lstm_cell(x, (h, c), w1, w2, b1, b2),
                  LSTM),
}  # fmt: skip
"""Functions whose CUDA graph differs from their CPU graph: `scalar_tensor(-inf,
device=cuda)`, SDPA's causal mask from `empty_strided` and `arange` on cuda,
`_thnn_fused_lstm_cell`."""


@pytest.mark.parametrize("name", sorted(FORMS))
def test_a_cuda_spelled_graph_compiles_and_matches_eager(name):
    fn, inputs = FORMS[name]
    gm = cuda_graph(fn, *inputs)
    fused = [n for n in gm.graph.nodes if n.target in aten_graph.DECOMPOSITIONS]
    assert cuda_devices(gm) or fused, gm.code  # the CUDA spelling, which the CPU graph lacks
    program = compiled(gm, f"cuda_{name}")
    with torch.no_grad():
        expected = fn(*inputs)
    expected = list(expected) if isinstance(expected, tuple) else [expected]
    assert_close(program(*[on_device(x) for x in inputs]), expected)


def test_for_import_erases_devices_on_a_copy():
    fn, inputs = FORMS["causal_sdpa"]
    gm = cuda_graph(fn, *inputs)
    before = gm.code
    graph = aten_graph.for_import(gm)
    assert cuda_devices(gm) and not cuda_devices(graph)
    assert gm.code == before  # eager's fallback runs the graph aot_autograd gave
    sources = {n.meta.get("stack_trace") for n in graph.graph.nodes if n.op == "call_function"}
    assert sources == {n.meta.get("stack_trace") for n in gm.graph.nodes if n.op == "call_function"}


def test_the_fused_lstm_cell_is_decomposed_keeping_its_location():
    fn, inputs = FORMS["lstm_cell"]
    gm = cuda_graph(fn, *inputs)
    (fused,) = [n for n in gm.graph.nodes if n.target == aten._thnn_fused_lstm_cell.default]
    fused.meta["stack_trace"] = 'File "model.py", line 7, in forward'
    graph = aten_graph.for_import(gm)
    targets = {n.target for n in graph.graph.nodes}
    assert aten._thnn_fused_lstm_cell.default not in targets and aten.sigmoid.default in targets
    traces = {n.meta.get("stack_trace") for n in graph.graph.nodes if n.target == aten.tanh.default}
    assert traces == {'File "model.py", line 7, in forward'}


def test_fused_cells_are_the_cpu_cells():
    x, h, c, w1, w2, b1, b2 = LSTM
    hy, cy, workspace = aten_graph.fused_lstm_cell(x @ w1.T, h @ w2.T, c, b1, b2)
    assert_close([hy, cy], list(torch.lstm_cell(x, (h, c), w1, w2, b1, b2)), rtol=1e-6)
    gates = (x @ w1.T + h @ w2.T + b1 + b2).chunk(4, 1)
    i, f, g, o = gates[0].sigmoid(), gates[1].sigmoid(), gates[2].tanh(), gates[3].sigmoid()
    assert_close([workspace], [torch.cat([i, f, g, o], 1)], rtol=1e-6)  # what the backward reads
    w1, w2, b1, b2 = torch.randn(12, 5), torch.randn(12, 4), torch.randn(12), torch.randn(12)
    hy, workspace = aten_graph.fused_gru_cell(x @ w1.T, h @ w2.T, h, b1, b2)
    assert_close([hy], [torch.gru_cell(x, h, w1, w2, b1, b2)], rtol=1e-6)
    assert workspace.shape == (3, 20)
    hy, _ = aten_graph.fused_gru_cell(x @ w1.T, h @ w2.T, h)
    assert_close([hy], [torch.gru_cell(x, h, w1, w2)], rtol=1e-6)
    half = aten_graph.fused_lstm_cell(*(t.bfloat16() for t in (x @ w1.T[:, :4].repeat(1, 4),
                                                                h @ w2.T[:, :4].repeat(1, 4), c)))  # fmt: skip
    assert [t.dtype for t in half] == [torch.bfloat16] * 3


def test_a_fused_gru_cell_graph_compiles():
    """`_thnn_fused_gru_cell` has no fake kernel off a GPU: the graph is built by hand."""
    x, h, w1, w2 = torch.randn(3, 5), torch.randn(3, 4), torch.randn(12, 5), torch.randn(12, 4)
    inputs = (x @ w1.T, h @ w2.T, h)
    with FakeTensorMode():
        fakes = fake_cuda(*inputs)
    graph = torch.fx.Graph()
    args = []
    for name, fake in zip(["igates", "hgates", "hx"], fakes, strict=True):
        args.append(graph.placeholder(name))
        args[-1].meta["val"] = fake
    cell = graph.call_function(aten._thnn_fused_gru_cell.default, tuple(args))
    graph.output((graph.call_function(operator.getitem, (cell, 0)),))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    program = compiled(gm, "cuda_gru")
    assert_close(program(*[on_device(t) for t in inputs]),
                 [torch.gru_cell(x, h, w1, w2)], rtol=1e-5)  # fmt: skip


# -- graphs dumped on the H200 ------------------------------------------------------------

_ANNOTATION = re.compile(r"(?P<dtype>\w+)\[(?P<shape>[^\]]*)\]\[(?P<stride>[^\]]*)\](?P<device>\S+)")
_DTYPES = {"f32": torch.float32, "i64": torch.int64, "b8": torch.bool}


def dumped(name: str, device: str | None = None) -> type[torch.nn.Module]:
    """The module `print_readable` printed; `device` replaces the devices it names."""
    text = (GRAPHS / f"{name}.txt").read_text().replace("class <lambda>(", "class Graph(")
    place = (lambda *_, **__: torch.device(device)) if device else torch.device
    scope = {"torch": torch, "device": place, "inf": math.inf}
    exec(compile(text, str(GRAPHS / f"{name}.txt"), "exec", dont_inherit=True), scope)
    return scope["Graph"]


def example_inputs(module: type[torch.nn.Module]) -> list[torch.Tensor]:
    """Inputs of each argument's annotated dtype, shape and strides (on the CPU)."""
    inputs = []
    for p in list(inspect.signature(module.forward).parameters.values())[1:]:
        m = _ANNOTATION.fullmatch(p.annotation)
        shape = [int(s) for s in m["shape"].split(",") if s.strip()]
        stride = [int(s) for s in m["stride"].split(",") if s.strip()]
        dtype = _DTYPES[m["dtype"]]
        x = torch.randn(shape) if dtype.is_floating_point else torch.randint(0, 4, shape)
        inputs.append(torch.empty_strided(shape, stride, dtype=dtype).copy_(x))
    return inputs


def lstm_steps(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """The zoo's unrolled LSTM cell (`aten._thnn_fused_lstm_cell` has no CPU kernel)."""
    for step in x:
        h, c = torch.lstm_cell(step, (h, c), w_ih, w_hh, b_ih, b_hh)
    return h, c


@pytest.mark.parametrize("name", ["cross_entropy", "lstm_cell",
                                  "gpt2_block_sdpa"])
def test_a_graph_aot_autograd_traced_on_the_h200_compiles(name):
    cuda = dumped(name)
    inputs = example_inputs(cuda)
    with FakeTensorMode():
        gm = make_fx(cuda())(*fake_cuda(*inputs))
    assert cuda_devices(gm) or any(n.target in aten_graph.DECOMPOSITIONS for n in gm.graph.nodes)
    program = compiled(gm, f"h200_{name}")
    with torch.no_grad():
        reference = lstm_steps if name == "lstm_cell" else dumped(name, device="cpu")()
        expected = reference(*inputs)
    assert_close(program(*[on_device(x) for x in inputs]), list(expected), rtol=5e-5)


class FusedCell(torch.nn.Module):
    """Calls the CUDA-only fused cell as aot_autograd writes it on CUDA tensors: it has
    a fake kernel, so dynamo and aot_autograd trace it on the CPU too, and only
    tilefuse's kernels (no CPU kernel of the op) can run it."""

    def __init__(self):
        super().__init__()
        self.cell = torch.nn.LSTMCell(5, 4)

    def forward(self, x, h, c):
        p = self.cell
        hy, cy, _ = aten._thnn_fused_lstm_cell(x @ p.weight_ih.T, h @ p.weight_hh.T, c,
                                               p.bias_ih, p.bias_hh)  # fmt: skip
        return hy, cy


def test_a_fused_cell_through_dynamo_runs_as_kernels():
    torch._dynamo.reset()
    model = FusedCell().to(DEVICE)
    x, h, c = (torch.randn(3, n, device=DEVICE) for n in (5, 4, 4))
    stats = backend.STATS
    before = (stats.compiled + stats.cache_hits, stats.fallbacks)
    with torch.no_grad():
        out = torch.compile(model, backend=backend.tilefuse, dynamic=False)(x, h, c)
        expected = model.cell(x, (h, c))
    assert (stats.compiled + stats.cache_hits, stats.fallbacks) == (before[0] + 1, before[1])
    assert_close(list(out), [t.cpu() for t in expected], rtol=1e-5)
