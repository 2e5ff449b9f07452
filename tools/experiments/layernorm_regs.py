"""
Registers and spills of the LayerNorm kernel tilefuse generates for torch-mlir's
bf16 `nn.functional.layer_norm` (BERT's: eps 1e-12) over rows of N, compiled ahead
of time for sm_90 (no GPU needed: `tilefuse.gpu.check` runs the triton wheel's
ptxas), and the kernel's text.

    PYTHONPATH=. python3 tools/experiments/layernorm_regs.py [N ...]   # default 768 1024 4096

Run it from two checkouts to compare what the printer makes of the same IR.
"""

import sys

import torch
from torch import nn
from torch_mlir import fx

from tilefuse.backend.triton.module import emit_module
from tilefuse.frontend.program import load_program
from tilefuse.gpu.check import check_kernels, format_reports
from tilefuse.pipeline import run_pipeline

ROWS = 8192


class LayerNorm(nn.Module):
    def forward(self, w, b, x):
        return nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-12)


def main() -> None:
    for n in [int(a) for a in sys.argv[1:]] or [768, 1024, 4096]:
        x = torch.randn(ROWS, n, dtype=torch.bfloat16)
        w, b = torch.randn(n, dtype=torch.bfloat16), torch.randn(n, dtype=torch.bfloat16)
        text = str(fx.export_and_import(LayerNorm(), w, b, x, output_type="linalg-on-tensors"))
        module = load_program(text)
        run_pipeline(module)
        emitted = emit_module(module)
        print(emitted.text[emitted.text.index("@triton.jit\ndef fused_kernel"):])
        print(format_reports(check_kernels(module, emitted, "h200"), f"LayerNorm ({ROWS}, {n}) bf16"))


if __name__ == "__main__":
    main()
