"""
The Triton printer's entry points, where its users import them from.

The printer itself: `module.py` (the whole module), `kernel.py` and `generic.py`
(kernels), `scalar.py` (payload expressions), `host.py` (the host function),
`prelude.py` (the helper library), `dot.py` (which contractions are `tl.dot`).
"""

from tilefuse.backend.triton.dtypes import torch_dtype
from tilefuse.backend.triton.host import HostConstant
from tilefuse.backend.triton.module import EmittedModule, emit_module, emit_triton
from tilefuse.backend.triton.signature import KernelSignature, Param, ParamKind

__all__ = ["EmittedModule", "HostConstant", "KernelSignature", "Param", "ParamKind", "emit_module",
           "emit_triton", "torch_dtype"]  # fmt: skip
