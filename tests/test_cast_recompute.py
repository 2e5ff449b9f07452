"""Casts leaving a group are recomputed by their readers (`fusion_plan._sink_casts`):
torch-mlir's bf16 LayerNorm widens the residual sum bf16 -> f32 -> f64 for
`var_mean`; those `extf`s must not be fused into the matmul epilogue that computes
the sum (an f64 epilogue in a GEMM kernel, the sum stored in bf16, f32 and f64).
Checked on the fusion groups of the bf16 BERT layer and GPT-2 block: no group
yields a value and a cast of a value it computes, no dot kernel has f64 values,
and the kernels still match eager."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch_mlir")

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import Float64Type, TensorType

import tilefuse.torch as tt
from tests.device import DEVICE, on_device
from tests.eager import eager64, flat, rel_error
from tilefuse.analysis.dataflow import CONTRACTION, build_graph, is_cast
from tilefuse.backend.triton.module import emit_module
from tilefuse.frontend.parse import parse_module
from tilefuse.frontend.program import random_inputs
from tilefuse.ir.context import make_context
from tilefuse.ir.dtypes import dtype_bytes
from tilefuse.ir.tilefuse import GroupOp
from tilefuse.oracle.compare import relative_error, tolerance
from tilefuse.oracle.reference import evaluate
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime.compiled import load
from tilefuse.testing import zoo

PROGRAMS = Path(__file__).parent / "programs"

MODELS = {
    "bert_layer": lambda: (zoo.BertLayer(64, 4, 256),
                           (torch.randn(2, 16, 64), torch.ones(2, 16, dtype=torch.int64))),
    "gpt2_block": lambda: (zoo.GPT2Block(64, 4, 16), (torch.randn(2, 16, 64),)),
}  # fmt: skip


def _bf16(name: str):
    torch.manual_seed(0)
    model, inputs = MODELS[name]()
    model = model.eval().to(DEVICE, torch.bfloat16)
    inputs = tuple((x.bfloat16() if x.is_floating_point() else x).to(DEVICE) for x in inputs)
    return model, inputs, tt.compile(model, *inputs)


def _groups(mlir: str) -> list[GroupOp]:
    module = parse_module(make_context(), mlir)
    run_pipeline(module, until="fusion-groups")
    return [op for op in module.walk() if isinstance(op, GroupOp)]


def _dual_outputs(group: GroupOp) -> list[str]:
    """Casts the group yields of a value it also yields, or widened from a value it
    computes (its readers could widen it), unless the function returns the cast."""
    block = group.body.block
    graph = build_graph(block)
    yielded = list(block.last_op.operands)
    found = []
    for value, result in zip(yielded, group.outputs, strict=True):
        node = graph.producer_of(value)
        if node is None or not is_cast(node):
            continue
        if any(isinstance(u.operation, func.ReturnOp) for u in result.uses):
            continue
        source = node.s.inputs[0]
        widened = dtype_bytes(value.type) > dtype_bytes(source.type)
        if source in yielded or (widened and graph.producer_of(source) is not None):
            found.append(f"{group.sym_name.data} yields {value.type} cast from {source.type}")
    return found


def _has_f64(group: GroupOp) -> bool:
    return any(isinstance(r.type, TensorType) and isinstance(r.type.element_type, Float64Type)
               for op in group.body.walk() for r in op.results)  # fmt: skip


@pytest.mark.parametrize("name", sorted(MODELS))
def test_no_group_stores_a_value_in_two_dtypes(name):
    _, _, compiled = _bf16(name)
    groups = _groups(compiled.mlir)
    assert [d for g in groups for d in _dual_outputs(g)] == []
    dots = [g for g in groups if any(n.kind == CONTRACTION for n in build_graph(g.body.block).nodes)]
    assert dots and not [g.sym_name.data for g in dots if _has_f64(g)]
    # the LayerNorms' statistics are f32 too (torch-mlir's f64 variance: narrow-variance)
    assert not [g.sym_name.data for g in groups if _has_f64(g)]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_dot_kernels_have_no_f64_and_match_eager(name):
    model, inputs, compiled = _bf16(name)
    kernels = re.split(r"\n(?=@triton\.jit)", compiled.source)
    with_dot = [k for k in kernels if "tl.dot(" in k]
    assert with_dot and not [k for k in with_dot if "tl.float64" in k]
    for out, ref in zip(flat(compiled(*inputs)), flat(eager64(model, inputs)), strict=True):
        assert rel_error(out, ref) < 2e-2


def test_a_cast_alone_in_its_group_moves_to_its_reader():
    """One op per group (`max_group_ops=1`): the extf's own group empties into the
    row sum's, which reads the f32 sum; the kernels compute what the IR says."""
    text = (PROGRAMS / "matmul_residual_f64_row_sum.mlir").read_text()
    module = parse_module(make_context(), text)
    arrays = random_inputs(module, 3)
    refs = evaluate(module, arrays)
    run_pipeline(module, options={"fusion-groups": {"max_group_ops": 1}})
    groups = [op for op in module.walk() if isinstance(op, GroupOp)]
    assert [g.reason.data for g in groups] == [
        "epilogue: matmul (2 ops)", "pointwise: add (1 ops)",
        "reduction: ext + reduce_add (3 ops)", "pointwise: trunc (1 ops)"]  # fmt: skip
    assert [str(t) for g in groups for t in g.result_types if t.get_shape() == (32, 64)] == [
        "tensor<32x64xf32>"] * 2  # fmt: skip
    program = load(module, emit_module(module, "cast_alone"))
    outs = program(*[on_device(np.asarray(a)) for a in arrays])
    for out, ref in zip(outs, refs, strict=True):
        assert relative_error(out.cpu().numpy(), ref) <= tolerance("f32")
