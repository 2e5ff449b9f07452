"""On a GPU: a training step of the zoo's unrolled LSTM cell, and of a GRU cell, through
the torch.compile backend, against eager.

On CUDA tensors aot_autograd writes `aten.lstm_cell`/`gru_cell` as the fused
`_thnn_fused_lstm_cell`/`_thnn_fused_gru_cell`, whose forward graph returns the
workspace the fused CUDA backward reads; `tilefuse.torch.aten_graph` computes that
workspace in tilefuse's kernels. This checks the gradients eager's fused backward
computes from it (no GPU in CI: run by hand).

    python tools/experiments/cuda_cells_training.py
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from tilefuse.testing.zoo import ZOO
from tilefuse.torch import backend


class GRUSteps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.GRUCell(16, 32)

    def forward(self, x, h):
        for step in x:
            h = self.cell(step, h)
        return h


def check(name: str, model: nn.Module, inputs: list[torch.Tensor]) -> None:
    ref = copy.deepcopy(model)
    xs = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    before = backend.STATS.compiled + backend.STATS.cache_hits
    out = torch.compile(model, backend=backend.tilefuse, dynamic=False)(*xs)
    loss = sum(o.square().sum() for o in ([out] if isinstance(out, torch.Tensor) else out))
    loss.backward()
    compiled = backend.STATS.compiled + backend.STATS.cache_hits - before
    rs = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    rout = ref(*rs)
    rloss = sum(o.square().sum() for o in ([rout] if isinstance(rout, torch.Tensor) else rout))
    rloss.backward()
    grads = [p.grad for p in model.parameters()] + [x.grad for x in xs]
    rgrads = [p.grad for p in ref.parameters()] + [x.grad for x in rs]
    err = max(float((g - r).abs().max() / r.abs().max().clamp_min(1e-30))
              for g, r in zip(grads, rgrads, strict=True))  # fmt: skip
    print(f"{name}: {compiled} forward graph(s) compiled, loss {float(loss):.6g} vs "
          f"{float(rloss):.6g}, largest relative gradient error {err:.3g}")  # fmt: skip
    assert compiled >= 1 and err < 1e-4, (compiled, err)


def main() -> None:
    assert torch.cuda.is_available(), "a GPU is needed: on the CPU the cells are not fused"
    model, inputs = ZOO["lstm_cell"].build()
    check("lstm_cell", model.cuda(), [x.cuda() for x in inputs])
    torch.manual_seed(0)
    x, h = torch.randn(3, 4, 16), torch.randn(4, 32)
    check("gru_cell", GRUSteps().cuda(), [x.cuda(), h.cuda()])


if __name__ == "__main__":
    main()
