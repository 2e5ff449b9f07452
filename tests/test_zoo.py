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
from tilefuse.frontend.program import load_program
from tilefuse.pipeline import run_pipeline
from tilefuse.testing.zoo import ZOO
from tilefuse.torch import backend

KERNELS = {
    "all_any": 1, "argmax_head": 1, "batchnorm": 1, "bert_layer": 7, "bert_layer_odd": 7,
    "convnext": 5, "cross_entropy": 4, "efficientnet_mbconv": 7, "efficientnet_mbconv5": 7,
    "gpt2_block": 7, "gpt2_block_odd": 7, "gpt2_block_sdpa": 7, "groupnorm": 3, "layernorm": 1,
    "llama_eager": 8, "llama_mha_odd": 8, "llama_sdpa": 8, "log_softmax_gather": 2,
    "lstm_cell": 6, "mixer": 7, "mixer_odd": 7, "mobilenet_v2": 3, "one_hot_loss": 1,
    "pow_cube": 1, "resnet_basic": 2, "resnet_basic_down": 2, "resnet_bottleneck": 3,
    "rmsnorm": 1, "t5_layer": 7, "tiny_gpt": 9, "unet_resblock": 8, "unet_resblock_same": 8,
    "vit": 9, "vit_odd": 9,
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


BF16_KERNELS = {
    "bert_layer": 7, "gpt2_block": 7, "gpt2_block_sdpa": 7, "llama_eager": 8,
    "llama_sdpa": 8, "vit": 9,
}  # fmt: skip
"""Kernels the zoo's transformers become in bf16 (`model.to(torch.bfloat16)`, as
tools/bench_models.py runs them), each with its attention in one FlashAttention
kernel."""

BF16_RTOL = 1.6e-2
"""bf16 kernels against eager in f64: two bf16 steps (2^-6) of each output's largest
value; eager in bf16 is 3.4e-3 to 6.5e-3 off at these sizes. FlashAttention rounds
exp(s - running max) where the program rounds p (docs/ARCHITECTURE.md, "Roundings a
fused kernel moves"): no more error than the program's, not bit-identical."""


@pytest.mark.parametrize("name", sorted(BF16_KERNELS))
def test_bf16_transformers_get_one_attention_kernel(name):
    model, inputs = build(name)
    model = model.to(torch.bfloat16)
    inputs = tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in inputs)
    compiled = tt.compile(model, *inputs)
    assert_matches(name, compiled(*inputs), eager64(model, inputs), BF16_RTOL)
    assert len(compiled.kernels) == BF16_KERNELS[name], compiled.kernels
    module = load_program(compiled.mlir)
    run_pipeline(module)
    reasons = [op.reason.data for op in module.walk() if op.name == "tilefuse.group"]
    assert sum(r.startswith("flash-attention") for r in reasons) == 1, reasons


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
