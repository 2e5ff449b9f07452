"""
`torch.compile(model, backend="tilefuse")`: dynamo's graphs through tilefuse.

Registered with torch by the `torch_dynamo_backends` entry point (pyproject.toml).
Each graph dynamo captures goes through aot_autograd with torch-mlir's
decompositions (core ATen and the few torch-mlir adds), so the forward graph is
ATen; a copy of it without devices, CUDA-only fused ops, complex values or arithmetic on
unsigned tensors (`for_import`: the graph traced on CUDA tensors compiles as the CPU one does),
`torch_mlir.fx.stateless_fx_import` lowers to linalg on tensors and
`tilefuse.runtime.compile` makes it kernels. Parameters are graph inputs, so
weight updates need no recompile.

What is refused runs in eager, never silently wrong: a graph with symbolic shapes or
non-tensor inputs or outputs, an op torch-mlir cannot lower, a `CompileError` of
tilefuse (an op, a form, a graph it does not compile); torch-mlir's diagnostics are
caught, not printed, to name its op. Each refused graph logs one
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

import hashlib
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.aot_autograd import make_boxed_func
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils import _pytree as pytree
from torch_mlir import fx
from torch_mlir.extras.fx_decomp_util import get_decomposition_table
from xdsl.dialects.builtin import ModuleOp

from tilefuse.frontend.parse import parse_module
from tilefuse.ir.context import make_context
from tilefuse.ir.diagnostics import ArgumentError, CompileError
from tilefuse.ir.log import channel
from tilefuse.ir.resources import module_text
from tilefuse.runtime import CompiledProgram, gpu_available
from tilefuse.torch import complex_pairs
from tilefuse.torch.attention import rewrite_graph
from tilefuse.torch.complex_pairs import pair_inputs, unpair_outputs
from tilefuse.torch.decompose import TABLE as DECOMPOSED
from tilefuse.torch.dynamic import (
    concrete,
    generalised_program,
    graph_symbols,
    shape_guards,
)
from tilefuse.torch.export import torch_deprecations_quiet
from tilefuse.torch.mlir import (
    Refusal,
    Refused,
    TorchMlirDiagnostics,
    compile_mlir,
    import_refusal,
)
from tilefuse.torch.unsigned import UnsignedIO, widen_unsigned

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
_CACHE: dict[str, Any] = {}
"""Graph key -> its `CompiledProgram`, `Dynamic` program or `Refusal`."""
_NAMES = itertools.count()


def _meta(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return ("tensor", tuple(v.shape), str(v.dtype), str(v.device))
    return (type(v).__name__, repr(v))


def graph_key(gm: torch.fx.GraphModule, inputs: list[Any], target: str) -> str:
    """The graph's code, its tensor constants, the inputs' metadata, the ranges of
    their symbolic sizes, the target (a graph traced again for another range, as
    behind a guard `x.shape[0] < 16`, is another program: served the first range's,
    every call ran in eager)."""
    h = hashlib.sha256(gm.code.encode())
    h.update(repr([_meta(x) for x in inputs]).encode())
    h.update(repr(_symbol_ranges(inputs)).encode())
    h.update(target.encode())
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = getattr(gm, str(node.target), None)
            h.update(repr((node.target, _meta(value))).encode())
            if isinstance(value, torch.Tensor):
                h.update(value.detach().cpu().contiguous().view(-1).view(torch.uint8)
                         .numpy().tobytes())  # fmt: skip
    return h.hexdigest()


def _symbol_ranges(inputs: list[Any]) -> list[tuple[str, str]]:
    """(symbol, its range in the shape environment) of each symbolic size of `inputs`."""
    out = []
    for x in inputs:
        sizes = x.shape if isinstance(x, torch.Tensor) else (x,) if isinstance(x, torch.SymInt) else ()
        for n in sizes:
            if isinstance(n, torch.SymInt):
                node = n.node
                out.append((str(node.expr), str(node.shape_env.bound_sympy(node.expr))))
    return out


def _is_static(v: Any) -> bool:
    return isinstance(v, torch.Tensor) and all(isinstance(d, int) for d in v.shape)


def _is_symbolic(v: Any) -> bool:
    return isinstance(v, torch.SymInt) or (isinstance(v, torch.Tensor) and not _is_static(v))


def _host_scalar(x: Any) -> bool:
    """A 0-d CPU tensor: how dynamo passes a Python float it does not specialise
    (`self.eps` of a norm, torch >= 2.11's `specialize_float = False`); moved to
    the GPU at each call (`_scalars_moved`)."""
    return isinstance(x, torch.Tensor) and x.dim() == 0 and x.device.type == "cpu"


def _scalars_moved(run: Callable[..., Any], inputs: list[Any]) -> Callable[..., Any]:
    """`run` with the inputs `_host_scalar` names moved to the GPU the others are on."""
    moved = [i for i, x in enumerate(inputs) if _host_scalar(x)] if gpu_available() else []
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor) and x.device.type == "cuda"), "cuda")
    if not moved:
        return run

    def run_moved(*args: Any) -> Any:
        args = list(args)
        for i in moved:
            args[i] = args[i].to(device, non_blocking=True)
        return run(*args)

    run_moved.program = run.program  # type: ignore[attr-defined]
    return run_moved


def unsupported(gm: torch.fx.GraphModule, inputs: list[Any]) -> Refusal | None:
    """Why a graph cannot be compiled before trying: what tilefuse does not take."""
    for i, x in enumerate(inputs):
        if isinstance(x, torch.SymInt):
            continue  # a size, read from the tensors that have it (`_compile_dynamic`)
        if not isinstance(x, torch.Tensor):
            return Refusal(f"input {i} is {type(x).__name__}: the torch front end compiles "
                           "functions of tensors")  # fmt: skip
        if gpu_available() and x.device.type != "cuda" and not _host_scalar(x):
            return Refusal(f"input {i} is on {x.device}: tilefuse's kernels run on the GPU")
    (output,) = [n for n in gm.graph.nodes if n.op == "output"]
    for i, arg in enumerate(pytree.tree_leaves(output.args[0])):
        value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg
        if not isinstance(value, torch.Tensor):
            return Refusal(f"output {i} is {type(value).__name__}, not a tensor")
    if not any(n.op == "call_function" for n in gm.graph.nodes):
        return Refusal("the graph computes nothing")
    return None


def for_import(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of `gm` as torch-mlir imports it: without devices or CUDA-only fused ops
    (`aten_graph`), complex values as pairs (`complex_pairs`), ops on unsigned
    tensors widened (`unsigned`)."""
    graph = complex_pairs.for_import(gm)
    if widen_unsigned(graph.graph):
        graph.recompile()
    return graph


def _compile(gm: torch.fx.GraphModule, name: str, target: str) -> CompiledProgram | Refusal:
    STATS.compiles += 1
    diagnostics = TorchMlirDiagnostics()
    graph = gm
    try:
        graph = for_import(gm)
        with torch_deprecations_quiet(), diagnostics:
            mlir = fx.stateless_fx_import(graph, output_type="linalg-on-tensors",
                                          model_name=name, fx_importer=diagnostics.importer())  # fmt: skip
    except CompileError as e:  # (tilefuse's own, before the import: a complex or unsigned op)
        return Refusal(str(e).splitlines()[0].removeprefix("error: "))
    except Exception as e:  # torch-mlir's errors: any exception of its import
        return import_refusal(e, graph.graph, diagnostics.errors)
    try:
        program = compile_mlir(mlir, name, target, graph=graph.graph)
    except Refused as e:
        return e.refusal
    STATS.compiled += 1
    return program


@dataclass(frozen=True)
class Dynamic:
    """A program compiled for a graph's symbolic sizes: it takes the graph's tensor
    inputs (`tensors`, their indices); a call outside its ranges runs in eager."""

    program: CompiledProgram
    tensors: tuple[int, ...]


def _instance(graph: torch.fx.GraphModule, args: list[Any], name: str,
              diagnostics: TorchMlirDiagnostics) -> ModuleOp:  # fmt: skip
    """`graph` traced at the static `args` (its `SymInt` inputs as constants, their
    placeholders dropped) and lowered by torch-mlir: one instance to generalise."""
    traced = make_fx(graph, tracing_mode="fake")(*args)
    for node, arg in zip([n for n in traced.graph.nodes if n.op == "placeholder"], args,
                         strict=True):  # fmt: skip
        if not isinstance(arg, torch.Tensor):
            traced.graph.erase_node(node)
    traced.recompile()
    with torch_deprecations_quiet():
        mlir = fx.stateless_fx_import(traced, output_type="linalg-on-tensors", model_name=name,
                                      fx_importer=diagnostics.importer())  # fmt: skip
    return parse_module(make_context(), str(mlir), name)


def _compile_dynamic(gm: torch.fx.GraphModule, inputs: list[Any], name: str,
                     target: str) -> Dynamic | Refusal:  # fmt: skip
    """A graph of dynamo's symbolic sizes: traced at static instances of its
    symbols, generalised (torch/dynamic.py), compiled once for their ranges."""
    STATS.compiles += 1
    diagnostics = TorchMlirDiagnostics()
    graph = gm
    try:
        found, tensors = graph_symbols(inputs)
        graph = for_import(gm)
        with diagnostics:
            module, ranges = generalised_program(
                found, lambda point: _instance(graph, concrete(inputs, point), name, diagnostics),
                guards=shape_guards(inputs))
    except CompileError as e:
        return Refusal(str(e).splitlines()[0].removeprefix("error: "))
    except Exception as e:  # torch-mlir's errors: any exception of its import
        return import_refusal(e, graph.graph, diagnostics.errors)
    try:
        program = compile_mlir(module_text(module), name, target, graph=graph.graph,
                               dim_ranges=ranges)  # fmt: skip
    except Refused as e:
        return e.refusal
    STATS.compiled += 1
    return Dynamic(program, tuple(tensors))


def _launcher(program: CompiledProgram | Dynamic, gm: torch.fx.GraphModule,
              paired: bool = False, outputs: list[int] | None = None) -> Callable[..., Any]:  # fmt: skip
    """The call of `program` for `gm`'s inputs (`paired`: some are complex, passed as
    their pairs, `complex_pairs.pair_inputs`; `outputs`: the complex ones it returns
    as pairs, `complex_pairs.paired_outputs`)."""
    if paired or outputs:
        inner = _launcher(program, gm)

        def run_pairs(*args: Any) -> list[torch.Tensor]:
            return unpair_outputs(inner(*pair_inputs(list(args))), outputs or [])

        run_pairs.program = inner.program  # type: ignore[attr-defined]
        return run_pairs
    if isinstance(program, Dynamic):
        dynamic = program

        def run_dynamic(*args: Any) -> list[torch.Tensor]:
            with torch.no_grad():
                try:
                    return list(dynamic.program(*[args[i] for i in dynamic.tensors]))
                except ArgumentError as e:  # (sizes past the compiled ranges)
                    log.info("a call runs in eager: %s", e)
                    return list(gm(*args))

        run_dynamic.program = dynamic.program  # type: ignore[attr-defined]
        return run_dynamic

    def run(*args: Any) -> list[torch.Tensor]:
        with torch.no_grad():
            return list(program(*args))

    run.program = program  # type: ignore[attr-defined]
    return run


def _signed_views(run: Callable[..., Any], unsigned: UnsignedIO) -> Callable[..., Any]:
    """`run` taking and returning unsigned tensors, the program their signed views
    (`unsigned.UnsignedIO`; dynamo's guards keep the dtypes as compiled)."""

    def run_signed(*args: Any) -> list[torch.Tensor]:
        return unsigned.results(run(*unsigned.arguments(args, "", check=False)))

    run_signed.program = run.program  # type: ignore[attr-defined]
    return run_signed


def _output_values(gm: torch.fx.GraphModule) -> list[Any]:
    """The fake values of `gm`'s outputs (None where one has none)."""
    out = gm.graph.output_node().args[0]
    return [o.meta.get("val") if isinstance(o, torch.fx.Node) else o
            for o in (out if isinstance(out, list | tuple) else [out])]  # fmt: skip


def forward_compiler(target: str) -> Callable[..., Any]:
    """aot_autograd's forward (and inference) compiler for `target`."""

    def compile_forward(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
        key = graph_key(gm, inputs, target)
        cached = _CACHE.get(key)
        if cached is not None:
            STATS.cache_hits += 1
        else:
            name = f"graph_{next(_NAMES)}"
            cached = unsupported(gm, inputs) or (
                _compile_dynamic(gm, inputs, name, target) if any(map(_is_symbolic, inputs))
                else _compile(gm, name, target))  # fmt: skip
            _CACHE[key] = cached
            if isinstance(cached, Refusal):
                log.info("%s runs in eager: %s", name, cached.format())
        if isinstance(cached, Refusal):
            STATS.fallbacks += 1
            return make_boxed_func(gm)
        paired = any(isinstance(x, torch.Tensor) and x.is_complex() for x in inputs)
        outputs = [i for i, v in enumerate(_output_values(gm)) if isinstance(v, torch.Tensor) and v.is_complex()]
        run = _launcher(cached, gm, paired, outputs)
        if unsigned := UnsignedIO.of(gm.graph):
            run = _signed_views(run, unsigned)
        return make_boxed_func(_scalars_moved(run, inputs))

    return compile_forward


def compile_backward(gm: torch.fx.GraphModule, inputs: list[Any]) -> Callable[..., Any]:
    """Backward graphs run in eager (tilefuse compiles forward graphs)."""
    log.info("a backward graph runs in eager: tilefuse compiles forward graphs only")
    return make_boxed_func(gm)


def tilefuse(gm: torch.fx.GraphModule, example_inputs: list[Any],
             options: dict[str, Any] | None = None, **_: Any) -> Callable[..., Any]:  # fmt: skip
    """The backend: `options` may name the `target` (default `auto`: the GPU at hand's)."""
    options = dict(options or {})
    target = options.pop("target", "auto")
    if options:
        raise ValueError(f"the tilefuse backend takes the option target, not "
                         f"{', '.join(options)}")  # fmt: skip
    fw = forward_compiler(target)
    backend = aot_autograd(fw_compiler=fw, inference_compiler=fw, bw_compiler=compile_backward,
                           decompositions={**get_decomposition_table(), **DECOMPOSED})  # fmt: skip
    # bf16/f16 attention in the fused kernels' precision (tilefuse.torch.attention);
    # the rest as ATen's math (on CUDA, aot_autograd would otherwise trace
    # `_scaled_dot_product_efficient_attention`, which torch-mlir cannot lower).
    rewrite_graph(gm)
    with torch_deprecations_quiet(), sdpa_kernel([SDPBackend.MATH]):
        return backend(gm, example_inputs)
