"""The model zoo (tilefuse.testing.zoo) as users bring it: each `nn.Module`
exported by torch-mlir as it is, with no hand edits, compiled, run through the
kernels (the interpreter here, the H200 in `tools/device_zoo.py`) and compared with
torch eager in float64, both ways in:

- `tilefuse.torch.compile` (torch-mlir's `export_and_import`, weights as
  arguments); the number of kernels each model becomes is asserted, so fusion
  cannot silently regress;
- `torch.compile(model, backend="tilefuse")` (dynamo, aot_autograd, torch-mlir's
  `stateless_fx_import`): every forward graph compiled, none left to eager.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch_mlir")

import torch

import tilefuse.torch as tt
from tests.device import DEVICE
from tests.eager import assert_matches, build, eager64
from tilefuse.testing.zoo import ZOO
from tilefuse.torch import backend

KERNELS = {
    "all_any": 1, "argmax_head": 1, "batchnorm": 1, "bert_layer": 8, "bert_layer_odd": 8,
    "convnext": 6, "cross_entropy": 4, "efficientnet_mbconv": 8, "efficientnet_mbconv5": 8,
    "gpt2_block": 8, "gpt2_block_odd": 8, "gpt2_block_sdpa": 10, "groupnorm": 3, "layernorm": 1,
    "llama_eager": 9, "llama_mha_odd": 9, "llama_sdpa": 11, "log_softmax_gather": 2,
    "lstm_cell": 6, "mixer": 7, "mixer_odd": 7, "mobilenet_v2": 3, "one_hot_loss": 1,
    "pow_cube": 1, "resnet_basic": 2, "resnet_basic_down": 2, "resnet_bottleneck": 3,
    "rmsnorm": 1, "t5_layer": 8, "tiny_gpt": 10, "unet_resblock": 8, "unet_resblock_same": 8,
    "vit": 14, "vit_odd": 14,
}  # fmt: skip
"""Kernels each zoo model becomes through `tilefuse.torch.compile`."""

GPU_FALLBACKS: dict[str, str] = {}
"""Zoo models whose graph, traced by aot_autograd on CUDA tensors, the backend runs in
eager (one fallback, outputs still checked), with why. None: the seven whose CUDA
graphs torch-mlir could not lower as spelled (factory ops on `cuda:0`,
`_thnn_fused_lstm_cell`) compile since `tilefuse.torch.aten_graph.for_import`
(tests/test_backend_cuda_graphs.py)."""

RTOL = 5e-5
"""Kernels in f32 against eager in f64, relative to each output's largest value
(GPT-2's tanh GELU is the least precise, about 1.2e-5)."""


def test_the_kernel_table_covers_the_zoo():
    assert sorted(KERNELS) == sorted(ZOO)


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_model_through_tilefuse_compile(name):
    model, inputs = build(name)
    compiled = tt.compile(model, *inputs)
    assert_matches(name, compiled(*inputs), eager64(model, inputs), RTOL)
    assert len(compiled.kernels) == KERNELS[name], compiled.kernels


@pytest.mark.parametrize("name", sorted(ZOO))
def test_zoo_model_through_the_torch_compile_backend(name):
    torch._dynamo.reset()
    model, inputs = build(name)
    stats = backend.STATS  # a graph compiled by an earlier test is a cache hit
    before = (stats.compiled + stats.cache_hits, stats.fallbacks)
    with torch.no_grad():
        outputs = torch.compile(model, backend=backend.tilefuse, dynamic=False)(*inputs)
    compiled = stats.compiled + stats.cache_hits - before[0]
    fallbacks = stats.fallbacks - before[1]
    assert_matches(name, outputs, eager64(model, inputs), RTOL)
    if DEVICE == "cuda" and name in GPU_FALLBACKS:
        assert (compiled, fallbacks) == (0, 1), (compiled, fallbacks)
        return
    assert fallbacks == 0 and compiled >= 1, (compiled, fallbacks)
