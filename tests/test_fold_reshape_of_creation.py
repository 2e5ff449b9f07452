"""fold-reshape-of-creation on an `arange` (an iota: a generic of no inputs reading
its loop indices): viewed, it is computed again in the viewed shape, each old index
from the new ones. The values must not move (the reference evaluator before and
after), for expansions and collapses of several dims."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import tensor

from tilefuse.frontend.program import load_program
from tilefuse.ir.context import make_context
from tilefuse.oracle.reference import evaluate
from tilefuse.passes.fold_reshape_of_creation import FoldReshapeOfCreationPass

IOTA = """
func.func @f() -> tensor<{out}xi64> {{
  %e = tensor.empty() : tensor<{src}xi64>
  %a = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({dims})>], iterator_types = [{iters}]}} outs(%e : tensor<{src}xi64>) {{
  ^bb0(%o: i64):
{payload}
    linalg.yield %v : i64
  }} -> tensor<{src}xi64>
  %x = tensor.{view} %a {groups}{shape} : tensor<{src}xi64> into tensor<{out}xi64>
  func.return %x : tensor<{out}xi64>
}}
"""


def iota(src: list[int], out: list[int], groups: str, view: str) -> str:
    """An iota of `src` whose value is a different weighted sum of each index
    (so no two points agree), viewed as `out`."""
    rank = len(src)
    dims = ", ".join(f"d{i}" for i in range(rank))
    lines = [f"    %i{i} = linalg.index {i} : index" for i in range(rank)]
    lines.append("    %s0 = arith.constant 0 : index")
    for i in range(rank):
        lines.append(f"    %w{i} = arith.constant {7 ** (rank - 1 - i) * 3} : index")
        lines.append(f"    %p{i} = arith.muli %i{i}, %w{i} : index")
        lines.append(f"    %s{i + 1} = arith.addi %s{i}, %p{i} : index")
    lines.append(f"    %v = arith.index_cast %s{rank} : index to i64")
    shape = f" output_shape [{', '.join(map(str, out))}]" if view == "expand_shape" else ""
    return IOTA.format(out="x".join(map(str, out)), src="x".join(map(str, src)), dims=dims,
                       iters=", ".join(['"parallel"'] * rank), payload="\n".join(lines),
                       view=view, groups=groups, shape=shape)  # fmt: skip


@pytest.mark.parametrize("src, out, groups, view", [
    ([24], [2, 3, 4], "[[0, 1, 2]]", "expand_shape"),
    ([6, 4], [2, 3, 4], "[[0, 1], [2]]", "expand_shape"),
    ([8], [1, 1, 8], "[[0, 1, 2]]", "expand_shape"),
    ([2, 3, 4], [24], "[[0, 1, 2]]", "collapse_shape"),
    ([2, 3, 4], [6, 4], "[[0, 1], [2]]", "collapse_shape"),
    ([1, 5, 1], [5], "[[0, 1, 2]]", "collapse_shape"),
])  # fmt: skip
def test_a_viewed_iota_keeps_its_values(src, out, groups, view):
    module = load_program(iota(src, out, groups, view))
    before = evaluate(module, [])
    FoldReshapeOfCreationPass(iotas=True).apply(make_context(), module)
    assert not any(isinstance(o, tensor.ExpandShapeOp | tensor.CollapseShapeOp) for o in module.walk())
    after = evaluate(module, [])
    np.testing.assert_array_equal(after[0], before[0])
    assert len(np.unique(before[0])) == before[0].size  # (the check can fail)
