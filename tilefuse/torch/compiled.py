"""
`tilefuse.torch.compile(model, *example_inputs)`: an `nn.Module` (or a function)
compiled once into Triton kernels, called like the module.

```python
import tilefuse.torch
fast = tilefuse.torch.compile(model, x)    # export, compile, cache
y = fast(x)                                # the module's outputs, in its structure
opt.step(); y = fast(x)                    # reads the current weights: no recompile
```

The weights are arguments of the compiled program: each call reads the module's
current parameters and buffers by name, so an optimizer step, `load_state_dict`
or a new `nn.Parameter` is seen without recompiling. The kernels compute without
autograd: the outputs do not require grad (use the `torch.compile` backend to train).

A buffer holding a causal mask (`torch/buffers.py`: every element above a diagonal
`-inf`, `finfo.min` or 0) is told to the compiler, whose flash-attention kernels then
skip the masked key tiles; so is the range of a float buffer a runtime check reads
(every element finite, within bounds: BatchNorm's `running_var >= 0` proves its
`sqrt(var + eps) != 0`, so the kernels check nothing and the host waits for no flag).
The facts are guarded: a call whose buffer is another tensor or was written since
it was checked (`data_ptr`, `_version`) checks it again, and if one no longer holds
runs a program compiled without facts (compiled then, once), whose kernels check
again. Writes that bypass the version counter (through `.data`) are not seen, as
autograd's own checks do not see them.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from tilefuse.ir.diagnostics import ArgumentError
from tilefuse.runtime import CompiledProgram
from tilefuse.torch.buffers import Guard, range_arguments
from tilefuse.torch.complex_pairs import pair_inputs
from tilefuse.torch.export import TENSOR, Exported, StateReader, export, state_tensor
from tilefuse.torch.mlir import compile_mlir


class CompiledModule:
    """A module compiled by tilefuse: call it as the module (positional arguments)."""

    def __init__(self, exported: Exported, program: CompiledProgram, name: str,
                 signature: inspect.Signature | None, guards: list[Guard] | None = None,
                 options: dict[str, Any] | None = None):  # fmt: skip
        self.exported, self.program, self.name = exported, program, name
        self.guards, self.options = guards or [], options or {}
        self.read_state = StateReader(exported.module, exported.state)
        self.complex_state = any(t.is_complex() for t in self.read_state())
        """A complex buffer: the program takes its pair (`complex_pairs.pair_inputs`)."""
        n = len(exported.leaves)
        flat = all(c is TENSOR for c in exported.leaves) and exported.in_spec == pytree.tree_flatten(tuple(range(n)))[1]
        self._all_tensors = n if flat else -1
        """The number of arguments when the module was compiled for a flat tuple of tensors."""
        self.unguarded: CompiledProgram | None = None
        """The program compiled without the buffers' facts, once one fails."""
        if signature is not None:
            self.__signature__ = signature

    def _program(self, state: list[torch.Tensor]) -> CompiledProgram:
        """The program for this call's buffers: without their facts if one fails."""
        if all(g.check(state[g.index]) for g in self.guards):
            return self.program
        if self.unguarded is None:
            ex = self.exported
            self.unguarded = compile_mlir(ex.mlir, self.name, graph=ex.graph,
                                          dim_ranges=ex.dim_ranges, **self.options)  # fmt: skip
        return self.unguarded

    @property
    def module(self) -> nn.Module:
        return self.exported.module

    @property
    def source(self) -> str:
        """The generated Triton module."""
        return self.program.source

    @property
    def kernels(self) -> tuple[str, ...]:
        return self.program.kernels

    @property
    def mlir(self) -> str:
        """The linalg-on-tensors MLIR tilefuse compiled."""
        return str(self.exported.mlir)

    def _tensors(self, args: tuple[Any, ...]) -> list[torch.Tensor]:
        ex = self.exported
        if self._all_tensors == len(args) and all(isinstance(x, torch.Tensor) for x in args):
            return [x.detach() for x in args]  # (the common call: as many tensors as compiled)
        flat, spec = pytree.tree_flatten(args)
        if spec != ex.in_spec:
            raise ArgumentError(f"{self.name} was compiled for arguments shaped like "
                                f"{ex.in_spec}, got {spec}")  # fmt: skip
        tensors = []
        for i, (x, c) in enumerate(zip(flat, ex.leaves, strict=True)):
            if c is TENSOR:
                if not isinstance(x, torch.Tensor):
                    raise ArgumentError(f"input {i} of {self.name} must be a torch.Tensor, "
                                        f"not {type(x).__name__}")  # fmt: skip
                tensors.append(x.detach())
            elif isinstance(x, torch.Tensor) or type(x) is not type(c) or x != c:
                raise ArgumentError(
                    f"input {i} of {self.name} was {c!r} when compiled and is a constant of "
                    f"its kernels; got {x!r}: compile again for another value")  # fmt: skip
        return tensors

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise ArgumentError(f"{self.name} takes its inputs by position, as compiled "
                                f"(got keywords {', '.join(kwargs)})")  # fmt: skip
        tensors = self._tensors(args)
        if any(t.is_complex() for t in tensors):  # (passed as its pair, as compiled)
            tensors = pair_inputs(tensors)
        ex = self.exported
        # (no detach: the kernels read the tensors' data and the call runs under no_grad)
        state = self.read_state()
        if self.complex_state:
            state = pair_inputs(state)
        program = self._program(state)
        args = [*state, *tensors]
        if ex.unsigned:  # (as their signed views, the dtypes checked)
            args = ex.unsigned.arguments(args, self.name)
        with torch.no_grad():
            outs = program(*args)
        if ex.unsigned:
            outs = ex.unsigned.results(outs)
        # (a returned parameter, undetached above, is handed back as data)
        outs = [o.detach() if isinstance(o, torch.Tensor) and o.requires_grad else o for o in outs]
        return pytree.tree_unflatten(outs, ex.out_spec)

    def __repr__(self) -> str:
        return f"<tilefuse.torch.CompiledModule {self.name}: {len(self.kernels)} kernels>"


def _signature(fn: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(fn.forward if isinstance(fn, nn.Module) else fn)
    except (TypeError, ValueError):
        return None


def compile(module_or_fn: nn.Module | Callable[..., Any], *example_inputs: Any,
            target: str = "auto", dump_dir: str | Path | None = None,
            name: str | None = None, allow_tf32: bool = False) -> CompiledModule:  # fmt: skip
    """Export `module_or_fn` on `example_inputs` with torch-mlir (weights as
    arguments) and compile it for `target` (default: the GPU at hand's, `auto`; `allow_tf32`: f32 matmuls on TF32
    tensor cores, as torch's flag; bf16 and f16 ones are 16-bit dots anyway).
    Raises `ExportError` when torch cannot export it and `CompileError` (located,
    naming the op) when tilefuse refuses it."""
    if name is None:
        name = getattr(module_or_fn, "__name__", None) or type(module_or_fn).__name__
    name = re.sub(r"\W", "_", name).strip("_") or "module"
    exported = export(module_or_fn, example_inputs, name)
    ranged = range_arguments(str(exported.mlir), name)  # buffers a check's proof reads
    guards = [g for k, (n, p) in enumerate(exported.state) if not p and
              (g := Guard.of(k, state_tensor(exported.module, n, p), k in ranged)) is not None]  # fmt: skip
    options = {"target": target, "dump_dir": dump_dir, "allow_tf32": allow_tf32}
    program = compile_mlir(exported.mlir, name, graph=exported.graph,
                           arg_attrs={g.index: g.attr for g in guards},
                           dim_ranges=exported.dim_ranges, **options)  # fmt: skip
    return CompiledModule(exported, program, name, _signature(module_or_fn), guards, options)
