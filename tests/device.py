"""Where tests put a compiled program's arguments: on the GPU when tilefuse runs
its kernels there (it refuses CPU tensors then), else on the CPU, where Triton's
interpreter runs them. Outputs come back with `.cpu()` before `.numpy()`."""

import numpy as np
import torch

from tilefuse.runtime.compiled import gpu_available

DEVICE = "cuda" if gpu_available() else "cpu"


def on_device(x: np.ndarray | torch.Tensor) -> torch.Tensor:
    """`x` as a tensor on `DEVICE`: same values and dtype (a transposed view stays one)."""
    return (torch.from_numpy(x) if isinstance(x, np.ndarray) else x).to(DEVICE)


def run_on_device(prog, *args: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Call a compiled program with `args` on `DEVICE`; its outputs on the CPU."""
    return tuple(out.cpu() for out in prog(*(on_device(a) for a in args)))
