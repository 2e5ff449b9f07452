"""
Export an `nn.Module` (or a function) to linalg-on-tensors MLIR with its
parameters and buffers as leading function arguments, never baked into the code.

`Functional` wraps the module: its `forward(*state, *tensors)` calls the module
through `torch.func.functional_call` with `state` as its parameters and buffers.
The state is `named_parameters()` then `named_buffers()`, each tensor once: a
tied weight (TinyGPT's `lm_head.weight` is `wte.weight`) is one argument, and
`functional_call` ties it back to every name it has. The example inputs are
flattened as `torch.utils._pytree` does; their tensors become arguments, anything
else (an int, a float, a flag, None) is a constant of the exported program, as
`torch.export` specialises Python scalars, and each call is checked against it.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.export
from torch import nn
from torch.export.graph_signature import OutputKind
from torch.utils import _pytree as pytree
from torch_mlir import fx
from torch_mlir.extras.fx_decomp_util import get_decomposition_table
from xdsl.dialects.builtin import ModuleOp

from tilefuse.frontend.parse import parse_module
from tilefuse.ir.context import make_context
from tilefuse.ir.diagnostics import CompileError
from tilefuse.ir.dynamic import DimRange
from tilefuse.ir.resources import module_text
from tilefuse.torch.attention import decompositions
from tilefuse.torch.complex_pairs import paired_outputs, real_pairs
from tilefuse.torch.decompose import TABLE as DECOMPOSED
from tilefuse.torch.dynamic import (
    generalised_program,
    marked_dims,
    resized,
    symbols,
    unified,
)
from tilefuse.torch.mlir import TorchMlirDiagnostics, import_refusal
from tilefuse.torch.unsigned import UnsignedIO, widen_unsigned


class ExportError(CompileError):
    """torch.export or torch-mlir could not turn the module into MLIR."""


TENSOR = object()
"""Stands for a tensor leaf among the constant leaves of the inputs."""


def state_names(module: nn.Module) -> list[tuple[str, bool]]:
    """(name, is a parameter) of each parameter and buffer, each tensor once."""
    seen: set[int] = set()
    names = []
    for kind, items in ((True, module.named_parameters()), (False, module.named_buffers())):
        for name, t in items:
            if id(t) not in seen:
                seen.add(id(t))
                names.append((name, kind))
    return names


def state_tensor(module: nn.Module, name: str, is_parameter: bool) -> torch.Tensor:
    """The module's current tensor under `name` (after an optimizer step, a
    `load_state_dict` or an assignment of a new `nn.Parameter`)."""
    *path, leaf = name.split(".")
    owner = module
    for part in path:  # (nn.Module's own dicts: get_parameter's checks cost ~5 us a tensor)
        owner = owner._modules.get(part) if isinstance(owner, nn.Module) else None
    table = getattr(owner, "_parameters" if is_parameter else "_buffers", None)
    tensor = table.get(leaf) if isinstance(table, dict) else None
    if tensor is None:  # moved or removed: nn.Module's lookup says why
        return module.get_parameter(name) if is_parameter else module.get_buffer(name)
    return tensor


class StateReader:
    """Reads a module's current state tensors (as `state_tensor`) with each name
    split once: the per-call walk is dict lookups only."""

    def __init__(self, module: nn.Module, state: list[tuple[str, bool]]):
        self.module = module
        self.paths = []
        for name, is_parameter in state:
            *path, leaf = name.split(".")
            self.paths.append((name, tuple(path), leaf, "_parameters" if is_parameter else "_buffers",
                               is_parameter))  # fmt: skip

    def __call__(self) -> list[torch.Tensor]:
        out = []
        for name, path, leaf, table_name, is_parameter in self.paths:
            owner = self.module
            for part in path:
                owner = owner._modules.get(part) if isinstance(owner, nn.Module) else None
            table = getattr(owner, table_name, None)
            tensor = table.get(leaf) if isinstance(table, dict) else None
            out.append(tensor if tensor is not None else state_tensor(self.module, name, is_parameter))
        return out


class _Function(nn.Module):
    """A plain function as a module without state."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any) -> Any:
        return self.fn(*args)


class Functional(nn.Module):
    """`forward(*state, *tensors)`: the module on the given state and inputs. The
    module is held, not registered: the wrapper has no state of its own for
    torch.export to lift (a buffer registered with `persistent=False`, Hugging
    Face's rotary tables, was lifted as a constant torch-mlir found no state for:
    "Could not find state mapping for buffer"); every tensor comes in `state`."""

    def __init__(self, module: nn.Module, names: list[str], in_spec: Any,
                 leaves: list[Any]):  # fmt: skip
        super().__init__()
        object.__setattr__(self, "module", module)  # (not a submodule: see above)
        self.names, self.in_spec, self.leaves = names, in_spec, leaves

    def forward(self, *flat: Any) -> Any:
        n = len(self.names)
        state = dict(zip(self.names, flat[:n], strict=True))
        tensors = iter(flat[n:])
        leaves = [next(tensors) if c is TENSOR else c for c in self.leaves]
        args = pytree.tree_unflatten(leaves, self.in_spec)
        return torch.func.functional_call(self.module, state, tuple(args))


@dataclass
class Exported:
    """A module exported to MLIR, and what calling it needs."""

    module: nn.Module
    state: list[tuple[str, bool]]
    in_spec: Any
    leaves: list[Any]
    """The example's input leaves: `TENSOR` for a tensor, else the constant."""
    out_spec: Any
    mlir: Any
    """The torch-mlir module (linalg on tensors)."""
    graph: Any
    """The exported FX graph (its nodes name the torch ops)."""
    dim_ranges: dict[str, DimRange] | None = None
    """The dynamic dims' ranges; then `mlir` is the text of the dynamic program."""
    unsigned: UnsignedIO = field(default_factory=UnsignedIO)
    """The unsigned tensors among the program's arguments (state, then inputs) and results."""


def as_module(fn: nn.Module | Callable[..., Any]) -> nn.Module:
    if isinstance(fn, nn.Module):
        return fn
    if not callable(fn):
        raise TypeError(f"tilefuse.torch.compile takes an nn.Module or a function, "
                        f"not {type(fn).__name__}")  # fmt: skip
    return _Function(fn)


@contextlib.contextmanager
def torch_deprecations_quiet() -> Iterator[None]:
    """torch's own deprecation warnings inside its export (torch 2.13 deep-copies
    `LeafSpec`s, deprecated in 2.13): not the user's to act on, and errors under
    `pytest -W error`."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r".*isinstance\(treespec, LeafSpec\)",
                                FutureWarning)  # fmt: skip
        yield


@contextlib.contextmanager
def fake_tensor_errors_quiet() -> Iterator[None]:
    """torch logs a fake-tensor kernel's error before raising it: where tilefuse
    catches it and tries again (`unified`), the log line is noise."""
    logger = logging.getLogger("torch._subclasses.fake_tensor")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _first_line(e: BaseException) -> str:
    lines = [s.strip() for s in str(e).splitlines() if s.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


def _on_cpu(x: torch.Tensor) -> torch.Tensor:
    if x.device.type == "cpu":
        return x
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="cpu").zero_()


def export(fn: nn.Module | Callable[..., Any], example_inputs: tuple[Any, ...],
           name: str) -> Exported:  # fmt: skip
    """torch.export with torch-mlir's decompositions (after which mutations show as
    outputs), then torch-mlir's import and lowering to linalg on tensors;
    `ExportError` if either fails or the program is not a pure function."""
    module = as_module(fn)
    flat, in_spec = pytree.tree_flatten(example_inputs)
    leaves = [TENSOR if isinstance(x, torch.Tensor) else x for x in flat]
    state = state_names(module)
    wrapper = Functional(module, [n for n, _ in state], in_spec, leaves)
    # Traced on CPU stand-ins (zeros of each tensor's shape, dtype and strides):
    # on CUDA tensors torch's dispatch picks CUDA kernels at export
    # (`_scaled_dot_product_efficient_attention`, `_thnn_fused_lstm_cell`) and
    # torch-mlir cannot lower those; the CPU spelling is the same math in ATen
    # ops. The values are never read: weights and inputs are arguments.
    args = [_on_cpu(state_tensor(module, n, p).detach()) for n, p in state]
    tensors = [_on_cpu(x) for x in flat if isinstance(x, torch.Tensor)]
    marked = marked_dims([x for x in flat if isinstance(x, torch.Tensor)])
    try:
        if marked:
            return _export_dynamic(module, state, in_spec, leaves, wrapper, args, tensors, marked, name)
        program, mlir = _export_static(wrapper, (*args, *tensors), name)
    except ExportError as e:
        # A tensor the module captures (a closure's, a global, a plain attribute: torch
        # lifts it as a constant) stays on its device and meets the CPU stand-ins.
        if "two different devices" not in str(e):
            raise
        raise ExportError(f"{name} reads a tensor on the GPU that is neither an argument nor a "
                          "parameter or buffer (a closure's, a global, a plain attribute): "
                          "register it as a buffer or pass it as an argument") from e
    return Exported(module, state, in_spec, leaves, program.call_spec.out_spec, mlir,
                    program.graph, unsigned=UnsignedIO.of(program.graph))  # fmt: skip


def _export_static(wrapper: nn.Module, args: tuple[Any, ...], name: str) -> tuple[Any, Any]:
    """torch.export, decompositions and torch-mlir's import of `wrapper` on `args`:
    the exported program and the linalg module."""
    try:
        with torch_deprecations_quiet():
            program = torch.export.export(wrapper, args, strict=False)
            program = program.run_decompositions(decompositions({**get_decomposition_table(), **DECOMPOSED}))
    except Exception as e:
        raise ExportError(f"torch.export cannot trace {name}: {_first_line(e)}") from e
    if widen_unsigned(program.graph):  # (a located CompileError where it cannot)
        program.graph_module.recompile()
    if real_pairs(program.graph):  # (a complex constant: its pair, as its placeholder's)
        program.graph_module.recompile()
        for c, t in list(program.constants.items()):
            if isinstance(t, torch.Tensor) and t.is_complex():
                program.constants[c] = torch.view_as_real(t)
    if paired_outputs(program.graph):
        raise ExportError(f"{name} returns a complex tensor: tilefuse returns real tensors "
                          "(return torch.view_as_real(...))")  # fmt: skip
    bad = [s for s in program.graph_signature.output_specs if s.kind != OutputKind.USER_OUTPUT]
    if bad:
        raise ExportError(f"{name} mutates its inputs or buffers ({bad[0].kind.name.lower()} "
                          f"of {bad[0].target or bad[0].arg}): tilefuse compiles pure "
                          "functions (call model.eval() for norms' running statistics)")  # fmt: skip
    outputs = [s.arg for s in program.graph_signature.output_specs]
    if not all(type(a).__name__ == "TensorArgument" for a in outputs):
        raise ExportError(f"{name} returns something other than tensors: tilefuse "
                          "compiles functions of tensors to tensors")  # fmt: skip
    diagnostics = TorchMlirDiagnostics()
    try:
        with torch_deprecations_quiet(), diagnostics:
            mlir = fx.export_and_import(program, output_type="linalg-on-tensors",
                                        func_name=name, decomposition_table={},
                                        fx_importer=diagnostics.importer())  # fmt: skip
    except Exception as e:
        why = import_refusal(e, program.graph, diagnostics.errors).format()
        raise ExportError(f"{name}: {why}") from e
    return program, mlir


def _export_dynamic(module: nn.Module, state: list[tuple[str, bool]], in_spec: Any,
                    leaves: list[Any], wrapper: nn.Module, args: list[torch.Tensor],
                    tensors: list[torch.Tensor], marked: dict[tuple[int, int], tuple[int, int]],
                    name: str) -> Exported:  # fmt: skip
    """The module with the marked dims dynamic (torch/dynamic.py): checked over
    their ranges by torch.export, exported at static instances, generalised."""
    try:
        with torch_deprecations_quiet():
            found = symbols(wrapper, (*args, *tensors), len(args), marked)
    except CompileError:
        raise
    except Exception as e:
        why = next((s.strip() for s in str(e).splitlines() if s.strip().startswith("- ")), "")
        raise ExportError(f"torch.export cannot trace {name} over the marked dynamic dims: "
                          f"{_first_line(e)} {why}".strip()) from e
    programs = []

    def instance(point: dict[str, int]) -> ModuleOp:
        program, mlir = _export_static(wrapper, (*args, *resized(tensors, found, point)), name)
        programs.append(program)
        return parse_module(make_context(), str(mlir), name)

    try:
        with fake_tensor_errors_quiet():
            generalised, ranges = generalised_program(found, instance, len(args))
    except CompileError as first:  # (sizes torch's trace left apart that the module needs equal?)
        try:
            with torch_deprecations_quiet():
                merged = unified(wrapper, (*args, *tensors), len(args), found)
        except Exception:  # (torch refuses them as one: the first error says more)
            merged = None
        if merged is None:
            raise
        programs.clear()
        found = merged  # (what `instance` resizes by)
        try:
            generalised, ranges = generalised_program(found, instance, len(args))
        except CompileError:
            raise first from None
    return Exported(module, state, in_spec, leaves, programs[0].call_spec.out_spec,
                    module_text(generalised), programs[0].graph, ranges,
                    UnsignedIO.of(programs[0].graph))  # fmt: skip
