"""
aot_autograd's ATen graph as torch-mlir's import takes it, whatever device it was traced on.

aot_autograd traces a graph on the inputs' device, and on CUDA tensors two things
differ from the CPU graph of the same model, both of which torch-mlir cannot lower:

- factory ops name the device (`aten.scalar_tensor(-inf, device=cuda:0)` of
  masked_fill and cross-entropy, `aten.empty_strided(..., device=cuda:0)` of SDPA's
  causal mask, `aten.arange(..., device=cuda:0)`): torch-mlir imports a CUDA device
  as an `aten.to.device` it does not lower (`torch.constant.int`,
  `torch.vtensor.literal` and `aten.empty.memory_format` left illegal). A linalg
  module has no devices (tilefuse runs its kernels where the inputs are), so
  `for_import` names the CPU there: the graph computes the same values;
- CompositeImplicit kernels that branch on `is_cuda` call CUDA-only fused ops:
  `aten.lstm_cell` and `aten.gru_cell` become `aten._thnn_fused_lstm_cell` and
  `aten._thnn_fused_gru_cell`. `for_import` decomposes them into the ops of ATen's
  CUDA kernels (`aten/src/ATen/native/cuda/RNN.cu`), with their accumulation type and
  the same workspace, which a training graph returns for the fused backward.

The rewrite is of a copy: the graph aot_autograd gave runs unchanged in eager when
tilefuse refuses it. The new nodes keep the fused op's stack trace, so a refusal or a
torch-mlir location still names the user's line.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable
from typing import Any

import torch
from torch._guards import detect_fake_mode
from torch.fx import GraphModule, Node
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.node import map_aggregate
from torch.utils import _pytree as pytree
from torch_mlir.extras.fx_decomp_util import get_decomposition_table

aten = torch.ops.aten
CPU = torch.device("cpu")


def _compute_type(dtype: torch.dtype) -> torch.dtype:
    """What ATen's CUDA RNN cells compute in (`acc_type`): f32 for 16-bit floats."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _gates(input_gates: torch.Tensor, hidden_gates: torch.Tensor, input_bias: Any,
           hidden_bias: Any, n: int) -> list[torch.Tensor]:  # fmt: skip
    """The `n` pre-activation gates `ig + hg + b1 + b2` in the order the kernel adds."""
    t = _compute_type(input_gates.dtype)
    total = input_gates.to(t) + hidden_gates.to(t)
    if input_bias is not None:
        total = total + input_bias.to(t) + hidden_bias.to(t)
    return list(total.chunk(n, 1))


def fused_lstm_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, cx: torch.Tensor,
                    input_bias: Any = None, hidden_bias: Any = None) -> tuple[torch.Tensor, ...]:  # fmt: skip
    """`aten._thnn_fused_lstm_cell`: `(hy, cy, workspace)`, the workspace the
    activated gates `[i, f, g, o]` the fused backward reads."""
    i, f, g, o = _gates(input_gates, hidden_gates, input_bias, hidden_bias, 4)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    cy = f * cx.to(i.dtype) + i * g
    hy = o * cy.tanh()
    dtype = input_gates.dtype
    workspace = torch.cat([i, f, g, o], 1).to(dtype)
    return hy.to(dtype), cy.to(dtype), workspace


def fused_gru_cell(input_gates: torch.Tensor, hidden_gates: torch.Tensor, hx: torch.Tensor,
                   input_bias: Any = None, hidden_bias: Any = None) -> tuple[torch.Tensor, ...]:  # fmt: skip
    """`aten._thnn_fused_gru_cell`: `(hy, workspace)`, the workspace
    `[r, z, n, hx, hn + b_hn]` the fused backward reads."""
    t = _compute_type(input_gates.dtype)
    ir, ii, in_ = input_gates.to(t).chunk(3, 1)
    hr, hi, hn = hidden_gates.to(t).chunk(3, 1)
    if input_bias is not None:
        b1r, b1i, b1n = input_bias.to(t).chunk(3, 0)
        b2r, b2i, b2n = hidden_bias.to(t).chunk(3, 0)
        r = (ir + hr + b1r + b2r).sigmoid()
        z = (ii + hi + b1i + b2i).sigmoid()
        hn = hn + b2n
        n = (in_ + b1n + r * hn).tanh()
    else:
        r, z = (ir + hr).sigmoid(), (ii + hi).sigmoid()
        n = (in_ + r * hn).tanh()
    h = hx.to(t)
    hy = n + z * (h - n)
    dtype = input_gates.dtype
    return hy.to(dtype), torch.cat([r, z, n, h, hn], 1).to(dtype)


DECOMPOSITIONS: dict[Any, Callable[..., tuple[torch.Tensor, ...]]] = {
    aten._thnn_fused_lstm_cell.default: fused_lstm_cell,
    aten._thnn_fused_gru_cell.default: fused_gru_cell,
}
"""CUDA-only fused ops and their decompositions into ops torch-mlir lowers."""


def _on_cpu(value: Any) -> Any:
    return CPU if isinstance(value, torch.device) and value.type != "cpu" else value


def erase_devices(graph: torch.fx.Graph) -> None:
    """Name the CPU wherever a node names another device (a factory op's `device=`)."""
    for node in graph.nodes:
        node.args = map_aggregate(node.args, _on_cpu)
        node.kwargs = map_aggregate(node.kwargs, _on_cpu)


_SOURCE_KEYS = ("stack_trace", "nn_module_stack", "source_fn_stack")
"""Where a node came from in the user's code: a decomposition's nodes keep its op's."""


def user_line(node: Node) -> str:
    """` (File "...", line N, in f)`: the innermost frame of the user's code a node was
    traced from, for a refusal's message ("" where the node has no stack trace)."""
    trace = node.meta.get("stack_trace") or ""
    where = next((ln.strip() for ln in reversed(trace.splitlines()) if ln.strip().startswith("File ")), "")
    return f" ({where})" if where else ""


def _val(arg: Any) -> Any:
    return arg.meta.get("val") if isinstance(arg, Node) else arg


def traced(args: tuple[Any, ...], kwargs: dict[str, Any],
           fn: Callable[..., Any]) -> tuple[GraphModule, list[Node]] | None:  # fmt: skip
    """The ATen graph of `fn(*args, **kwargs)` on the fake values of the nodes among
    `args` and `kwargs` (anywhere in them: a list of tensors too; in their fake mode,
    with torch-mlir's decompositions), its placeholders those nodes in order, and the
    nodes; None where a node's value is not a fake tensor or a tensor is not a node's."""
    leaves, spec = pytree.tree_flatten((args, kwargs))
    nodes = [a for a in leaves if isinstance(a, Node)]
    values = [_val(a) for a in leaves]
    if any(isinstance(v, torch.Tensor) != isinstance(a, Node) for a, v in zip(leaves, values, strict=True)):
        return None  # (a node without a fake tensor: a symbolic size; a constant tensor)
    tensors = [i for i, a in enumerate(leaves) if isinstance(a, Node)]

    def call(*ts: torch.Tensor) -> Any:
        inputs = list(values)
        for i, t in zip(tensors, ts, strict=True):
            inputs[i] = t
        call_args, call_kwargs = pytree.tree_unflatten(inputs, spec)
        return fn(*call_args, **call_kwargs)

    fakes = [values[i] for i in tensors]
    fake_mode = detect_fake_mode(fakes)
    with fake_mode if fake_mode is not None else torch.no_grad():
        return make_fx(call, decomposition_table=get_decomposition_table())(*fakes), nodes


def inline(graph: torch.fx.Graph, before: Node, sub: GraphModule, inputs: list[Node]) -> list[Any]:
    """`sub`'s nodes copied into `graph` before `before`, its placeholders `inputs`,
    each with `before`'s stack trace: its results (a node, or a constant)."""
    placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
    env: dict[Node, Any] = dict(zip(placeholders, inputs, strict=True))
    results: list[Any] = []
    with graph.inserting_before(before):
        for n in sub.graph.nodes:
            if n.op == "output":
                out = n.args[0]
                results = [env.get(r, r) if isinstance(r, Node) else r
                           for r in (out if isinstance(out, list | tuple) else [out])]  # fmt: skip
            elif n.op != "placeholder":
                env[n] = graph.node_copy(n, lambda a: env[a])
                env[n].meta.update({k: before.meta[k] for k in _SOURCE_KEYS if k in before.meta})
    return results


def decompose(graph: torch.fx.Graph, node: Node, fn: Callable[..., Any]) -> bool:
    """Replace `node`, whose users are `getitem`s of its results, by the ATen graph of
    `fn` on its arguments (`traced`), the new nodes with its stack trace; False, the
    graph unchanged, where it cannot."""
    if any(user.target is not operator.getitem for user in node.users):
        return False
    found = traced(tuple(node.args), dict(node.kwargs), fn)
    if found is None or any(n.op == "get_attr" for n in found[0].graph.nodes):
        return False  # (a constant of the decomposition would need a home in `graph`)
    results = inline(graph, node, *found)
    for user in list(node.users):
        user.replace_all_uses_with(results[user.args[1]])
        graph.erase_node(user)
    graph.erase_node(node)
    return True


def for_import(gm: GraphModule) -> GraphModule:
    """A copy of `gm` without devices and CUDA-only fused ops (the module docstring)."""
    graph = copy.deepcopy(gm.graph)  # each node's meta copied, its values shared
    erase_devices(graph)
    for node in list(graph.nodes):
        fn = DECOMPOSITIONS.get(node.target) if node.op == "call_function" else None
        if fn is not None:
            decompose(graph, node, fn)
    graph.lint()
    return GraphModule(gm, graph)
