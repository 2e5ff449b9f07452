"""
`torch.compile(model, backend="tilefuse")`: dynamo's graphs through tilefuse.

Registered with torch by the `torch_dynamo_backends` entry point (pyproject.toml).
Each graph dynamo captures goes through aot_autograd with torch-mlir's
decompositions (core ATen and the few torch-mlir adds), so the forward graph is
ATen; `torch_mlir.fx.stateless_fx_import` lowers it to linalg on tensors and
`tilefuse.runtime.compile` makes it kernels. Parameters are graph inputs, so
weight updates need no recompile.

What is refused runs in eager, never silently wrong: a graph with symbolic shapes or
non-tensor inputs or outputs, an op torch-mlir cannot lower, a `CompileError` of
tilefuse (an op, a form, a graph it does not compile). Each refused graph logs one
line on the `fallback` channel (`TILEFUSE_LOG=fallback`) with the op, its location
and the reason. Backward graphs run in eager (aot_autograd's backward of the
compiled forward: eager's gradients).

Compiled programs and refusals are cached by the graph's code, its constants, the
inputs' shapes, dtypes and devices and the target, so a graph dynamo traces again
(another instance of the model, after `torch._dynamo.reset()`) is not recompiled;
`STATS` counts compiles.

    torch.compile(model, backend="tilefuse", options={"target": "a100"})
"""

from __future__ import annotations

import copy
import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils import _pytree as pytree
from torch_mlir import fx
from torch_mlir.extras.fx_decomp_util import get_decomposition_table

from tilefuse.ir.log import channel
from tilefuse.runtime import CompiledProgram, gpu_available
from tilefuse.torch.export import torch_deprecations_quiet
from tilefuse.torch.mlir import Refusal, Refused, compile_mlir, import_refusal

log = channel("fallback")


@dataclass
class Stats:
    compiles: int = 0
    """Graphs given to tilefuse's compiler (a cache hit is not one)."""
    compiled: int = 0
    """Of those, the ones that became kernels."""
    fallbacks: int = 0
    """Forward graphs left to eager (refusals; cache hits included)."""
    cache_hits: int = 0


STATS = Stats()
_CACHE: dict[str, CompiledProgram | Refusal] = {}
_NAMES = itertools.count()


def _meta(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return ("tensor", tuple(v.shape), str(v.dtype), str(v.device))
    return (type(v).__name__, repr(v))


def graph_key(gm: torch.fx.GraphModule, inputs: list[Any], target: str) -> str:
    """The graph's code, its tensor constants, the inputs' metadata, the target."""
    h = hashlib.sha256(gm.code.encode())
    h.update(repr([_meta(x) for x in inputs]).encode())
    h.update(target.encode())
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = getattr(gm, str(node.target), None)
            h.update(repr((node.target, _meta(value))).encode())
            if isinstance(value, torch.Tensor):
                h.update(value.detach().cpu().contiguous().view(-1).view(torch.uint8)
                         .numpy().tobytes())  # fmt: skip
    return h.hexdigest()


def _is_static(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and all(isinstance(d, int) for d in v.shape)


def unsupported(gm: torch.fx.GraphModule, inputs: list[Any],
                stand_ins: bool = False) -> Refusal | None:  # fmt: skip
    """Why a graph cannot be compiled before trying: what tilefuse does not take
    (`stand_ins`: the inputs are CPU stand-ins of CUDA tensors, see `tilefuse`)."""
    for i, x in enumerate(inputs):
        if not _is_static(x):
            kind = "a symbolic shape" if isinstance(x, torch.Tensor) else type(x).__name__
            return Refusal(f"input {i} is {kind}: tilefuse compiles static shapes of tensors")
        if gpu_available() and x.device.type != "cuda" and not stand_ins:
            return Refusal(f"input {i} is on {x.device}: tilefuse's kernels run on the GPU")
    (output,) = [n for n in gm.graph.nodes if n.op == "output"]
    for i, arg in enumerate(pytree.tree_leaves(output.args[0])):
        value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg
        if not _is_static(value):
            return Refusal(f"output {i} is {type(value).__name__}, not a tensor of a "
                           "static shape")  # fmt: skip
    if not any(n.op == "call_function" for n in gm.graph.nodes):
        return Refusal("the graph computes nothing")
    return None


def _compile(gm: torch.fx.GraphModule, name: str, target: str) -> CompiledProgram | Refusal:
    STATS.compiles += 1
    try:
        with torch_deprecations_quiet():
            mlir = fx.stateless_fx_import(gm, output_type="linalg-on-tensors", model_name=name)
    except Exception as e:  # torch-mlir's errors: any exception of its import
        return import_refusal(e, gm.graph)
    try:
        program = compile_mlir(mlir, name, target, graph=gm.graph)
    except Refused as e:
        return e.refusal
    STATS.compiled += 1
    return program


def _launcher(program: CompiledProgram) -> Callable[..., Any]:
    def run(*args: Any) -> list[torch.Tensor]:
        with torch.no_grad():
            return list(program(*args))

    run.program = program  # type: ignore[attr-defined]
    return run


class _TraceAgain(Exception):
    """A graph traced on CPU stand-ins that tilefuse refuses: it runs in eager,
    traced again on the real inputs."""


def forward_compiler(target: str, stand_ins: bool = False) -> Callable[..., Any]:
    """aot_autograd's forward (and inference) compiler for `target`
    (`stand_ins`: traced on CPU stand-ins; a refusal raises `_TraceAgain`)."""

    def compile_forward(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
        key = graph_key(gm, inputs, target)
        cached = _CACHE.get(key)
        if cached is not None:
            STATS.cache_hits += 1
        else:
            name = f"graph_{next(_NAMES)}"
            cached = unsupported(gm, inputs, stand_ins) or _compile(gm, name, target)
            _CACHE[key] = cached
            if isinstance(cached, Refusal):
                log.info("%s runs in eager: %s", name, cached.format())
        if isinstance(cached, Refusal):
            STATS.fallbacks += 1
            if stand_ins:
                raise _TraceAgain
            return make_boxed_func(gm)
        return make_boxed_func(_launcher(cached))

    return compile_forward


def _eager_forward(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
    return make_boxed_func(gm)


def _device_on_cpu(v: Any) -> Any:
    return torch.device("cpu") if isinstance(v, torch.device) and v.type == "cuda" else v


def cpu_stand_ins(gm: torch.fx.GraphModule,
                  inputs: list[Any]) -> tuple[torch.fx.GraphModule, list[Any]] | None:  # fmt: skip
    """`gm` with its devices on the CPU and CPU tensors of the inputs' shapes,
    strides and dtypes, when the inputs are CUDA tensors and no gradient is
    asked for (else None): traced on
    CUDA tensors, aot_autograd spells ops with CUDA kernels torch-mlir cannot
    lower (`_thnn_fused_lstm_cell`, a 0-d f64 literal for masked_fill's -inf,
    `empty.memory_format` on a device); on the CPU they are plain ATen."""
    if not any(isinstance(x, torch.Tensor) and x.device.type == "cuda" for x in inputs):
        return None
    if torch.is_grad_enabled() and any(getattr(x, "requires_grad", False) for x in inputs):
        return None  # a backward graph would run in eager on the CPU-traced graph
    gm = copy.deepcopy(gm)
    for node in gm.graph.nodes:
        node.args = pytree.tree_map(_device_on_cpu, node.args)
        node.kwargs = pytree.tree_map(_device_on_cpu, node.kwargs)
    gm.recompile()
    cpu = [torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cpu")
           if isinstance(x, torch.Tensor) else x for x in inputs]  # fmt: skip
    return gm, cpu


def compile_backward(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
    """Backward graphs run in eager (tilefuse compiles forward graphs)."""
    log.info("a backward graph runs in eager: tilefuse compiles forward graphs only")
    return make_boxed_func(gm)


def tilefuse(gm: torch.fx.GraphModule, example_inputs: list[Any],
             options: dict[str, Any] | None = None, **_: Any) -> Callable[..., Any]:  # fmt: skip
    """The backend: `options` may name the `target` (default `h200`)."""
    options = dict(options or {})
    target = options.pop("target", "h200")
    if options:
        raise ValueError(f"the tilefuse backend takes the option target, not "
                         f"{', '.join(options)}")  # fmt: skip
    def aot(fw: Callable[..., Any], graph: torch.fx.GraphModule, inputs: list[Any]) -> Any:
        backend = aot_autograd(fw_compiler=fw, inference_compiler=fw,
                               bw_compiler=compile_backward,
                               decompositions=get_decomposition_table())  # fmt: skip
        # Attention as ATen's math (on CUDA, aot_autograd would otherwise trace
        # `_scaled_dot_product_efficient_attention`, which torch-mlir cannot lower).
        with torch_deprecations_quiet(), sdpa_kernel([SDPBackend.MATH]):
            return backend(graph, inputs)

    if (stand_ins := cpu_stand_ins(gm, example_inputs)) is None:
        return aot(forward_compiler(target), gm, example_inputs)
    try:  # the kernels run on the CUDA tensors; only the trace is on the CPU
        return aot(forward_compiler(target, stand_ins=True), *stand_ins)
    except _TraceAgain:
        pass
    except Exception as e:  # a graph that does not trace on the CPU (a CUDA-only op)
        log.info("a graph runs in eager: it does not trace on CPU stand-ins (%s)",
                 str(e).splitlines()[0] if str(e) else type(e).__name__)  # fmt: skip
        STATS.fallbacks += 1
    return aot(_eager_forward, gm, example_inputs)
