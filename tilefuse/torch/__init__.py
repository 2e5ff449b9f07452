"""
The torch front-end: `nn.Module`s in, fused Triton kernels out.

- `tilefuse.torch.compile(model, *example_inputs)` exports the module with
  torch-mlir (its parameters and buffers as arguments), compiles it and returns a
  callable that reads the module's current weights at each call (`compiled.py`).
- `torch.compile(model, backend="tilefuse")` (registered through the
  `torch_dynamo_backends` entry point) compiles each forward graph dynamo and
  aot_autograd hand it, and leaves to eager what tilefuse refuses, saying why on the
  `fallback` log channel (`TILEFUSE_LOG=fallback`; `backend.py`).

`export.py` holds the functional wrapper and the export, `mlir.py` the compile of
torch-mlir's module and the location of a refusal in the user's Python.
Importing this package imports torch and torch-mlir; `import tilefuse` does not.
"""

from tilefuse.torch.compiled import CompiledModule, compile
from tilefuse.torch.export import ExportError
from tilefuse.torch.mlir import Refusal, Refused

__all__ = ["CompiledModule", "ExportError", "Refusal", "Refused", "compile"]
