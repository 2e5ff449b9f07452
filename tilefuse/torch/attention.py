"""`F.scaled_dot_product_attention` on bf16 and f16 tensors, as torch's fused GPU
kernels compute it.

SDPA leaves the precision of its intermediates to the kernel that runs it. On a GPU,
torch runs bf16 and f16 attention in its flash, memory-efficient or cuDNN kernels:
scores accumulate in f32 from the inputs' exact products, the softmax runs in f32,
and the probabilities are rounded to the input dtype before they multiply V (in f32
accumulation). ATen's math decomposition, which is what torch.export and
aot_autograd trace on the CPU, computes the same attention with everything upcast to
f32 and the scale split over Q and K (each times sqrt(scale)). That spelling asks for
f32 products (P in f32; Q times an inexact sqrt(scale)), so its two matmuls would run
as IEEE-f32 dots, several times slower than the bf16 tensor-core dots of the fused
kernels, for a precision the user's model does not have on a GPU.

`reduced_precision_sdpa` writes SDPA in the fused kernels' precision, in ATen ops
torch-mlir lowers, and calls ATen's own SDPA for every other case (f32 inputs,
dropout). The scale is applied to the f32 scores, a boolean mask keeps ATen's
safe softmax (rows with no key left give zeros), an additive mask is added in f32,
and GQA's shared K/V heads are repeated as `enable_gqa` asks. docs/ARCHITECTURE.md
("Roundings a fused kernel moves") states the rule.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

aten = torch.ops.aten

REDUCED = (torch.bfloat16, torch.float16)
"""Input dtypes whose SDPA computes P in the input dtype (torch's fused kernels)."""


def rewrites(query: torch.Tensor, dropout_p: float) -> bool:
    """Whether `reduced_precision_sdpa` writes this call itself (else ATen's SDPA)."""
    return query.dtype in REDUCED and dropout_p == 0.0


def flash_precision_sdpa(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                         attn_mask: torch.Tensor | None = None, is_causal: bool = False,
                         scale: float | None = None,
                         enable_gqa: bool = False) -> torch.Tensor:  # fmt: skip
    """Attention of bf16 or f16 `query`, `key`, `value` ([..., L, E], [..., S, E],
    [..., S, Ev]) in the fused kernels' precision (the module's docstring)."""
    dtype = query.dtype
    if enable_gqa and key.size(-3) != query.size(-3):
        repeats = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(repeats, dim=-3)
        value = value.repeat_interleave(repeats, dim=-3)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = torch.matmul(query.float(), key.float().transpose(-2, -1)) * scale
    safe = False
    if is_causal:
        keep = torch.ones(query.size(-2), key.size(-2), dtype=torch.bool,
                          device=query.device).tril()  # fmt: skip
        scores = scores.masked_fill(keep.logical_not(), float("-inf"))
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        scores = scores.masked_fill(attn_mask.logical_not(), float("-inf"))
        safe = True
    elif attn_mask is not None:
        scores = scores + attn_mask.float()
    probs = aten._safe_softmax(scores, -1) if safe else torch.softmax(scores, dim=-1)
    return torch.matmul(probs.to(dtype), value)


def reduced_precision_sdpa(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                           attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                           is_causal: bool = False, scale: float | None = None,
                           enable_gqa: bool = False) -> torch.Tensor:  # fmt: skip
    """`F.scaled_dot_product_attention` with bf16/f16 attention in the fused kernels'
    precision (`flash_precision_sdpa`), ATen's SDPA otherwise."""
    if rewrites(query, dropout_p):
        return flash_precision_sdpa(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    return F.scaled_dot_product_attention(query, key, value, additive_mask(attn_mask, query.dtype),
                                          dropout_p, is_causal, scale=scale,
                                          enable_gqa=enable_gqa)  # fmt: skip


def sdpa_decomposition(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                       attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
                       is_causal: bool = False, *, scale: float | None = None,
                       enable_gqa: bool = False) -> Any:  # fmt: skip
    """`aten.scaled_dot_product_attention` in a decomposition table (torch.export's
    `run_decompositions`): `flash_precision_sdpa`, or ATen's own decomposition."""
    if rewrites(query, dropout_p):
        return flash_precision_sdpa(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    # (ATen's math backend, what SDPA's own decomposition picks on CPU tensors; not
    # `aten.scaled_dot_product_attention`, which the table makes this function). A
    # boolean mask goes in as the additive one it means (0 kept, -inf masked): as
    # traced, torch-mlir's import added the booleans as 0.0/1.0 (a wrong program).
    return aten._scaled_dot_product_attention_math.default(
        query, key, value, additive_mask(attn_mask, query.dtype), dropout_p, is_causal, None,
        scale=scale, enable_gqa=enable_gqa)[0]


def additive_mask(attn_mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """A boolean SDPA mask as the float mask it means: 0 where kept, -inf where not."""
    if attn_mask is None or attn_mask.dtype != torch.bool:
        return attn_mask
    zero = torch.zeros((), dtype=dtype, device=attn_mask.device)
    return torch.where(attn_mask, zero, float("-inf"))


def decompositions(table: dict[Any, Any]) -> dict[Any, Any]:
    """`table` with SDPA written by `sdpa_decomposition`."""
    return {**table, aten.scaled_dot_product_attention.default: sdpa_decomposition}


def rewrite_graph(gm: torch.fx.GraphModule) -> bool:
    """Point the SDPA calls of a Dynamo graph at `reduced_precision_sdpa` (which
    aot_autograd then traces); whether any was."""
    changed = False
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (F.scaled_dot_product_attention,
                                                          torch._C._nn.scaled_dot_product_attention):  # fmt: skip
            node.target = reduced_precision_sdpa
            changed = True
    if changed:
        gm.recompile()
    return changed
