"""{min, max, divisor} facts of dynamic sizes (`analysis/dim_facts.py`)."""

from __future__ import annotations

from xdsl.dialects import func, tensor

from tilefuse.analysis.dim_facts import DimFacts, dim_facts
from tilefuse.frontend.program import load_program
from tilefuse.ir.dynamic import DimRange
from tilefuse.ir.module import entry_function

PROGRAM = """func.func @f(%x: tensor<8x?x64xf32>) -> (tensor<?x64xf32>, tensor<?x4x16xf32>, tensor<?xf32>, tensor<?xf32>) {
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<8x?x64xf32> into tensor<?x64xf32>
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %n = tensor.dim %c, %c0 : tensor<?x64xf32>
  %e = tensor.expand_shape %c [[0], [1, 2]] output_shape [%n, 4, 16] : tensor<?x64xf32> into tensor<?x4x16xf32>
  %half = arith.divui %n, %c2 : index
  %a = tensor.empty(%half) : tensor<?xf32>
  %plus = arith.addi %n, %c3 : index
  %b = tensor.empty(%plus) : tensor<?xf32>
  return %c, %e, %a, %b : tensor<?x64xf32>, tensor<?x4x16xf32>, tensor<?xf32>, tensor<?xf32>
}"""


def _results(ranges):
    f = entry_function(load_program(PROGRAM, dim_ranges=ranges))
    ret = f.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    return ret.operands


def test_facts_follow_collapses_expands_empties_and_index_arithmetic():
    c, e, a, b = _results({"x.1": DimRange(2, 256, 2)})
    assert dim_facts(c, 0) == DimFacts(16, 2048, 16)  # 8 x T: T even
    assert dim_facts(c, 1) == DimFacts.exact(64)
    assert dim_facts(e, 0) == DimFacts(16, 2048, 16)  # the size it was made with
    assert dim_facts(a, 0) == DimFacts(8, 1024, 8)  # n / 2
    assert dim_facts(b, 0) == DimFacts(19, 2051, 1)  # n + 3: no divisor


def test_without_a_declared_divisor_only_static_factors_divide():
    c, _, a, _ = _results({"x.1": DimRange(1, 100)})
    assert dim_facts(c, 0) == DimFacts(8, 800, 8)
    assert dim_facts(a, 0) == DimFacts(4, 400, 4)


def test_a_size_from_what_the_facts_do_not_follow_is_unknown():
    text = PROGRAM.replace("%half = arith.divui %n, %c2 : index", "%half = arith.remui %n, %c2 : index")
    f = entry_function(load_program(text, dim_ranges={"x.1": DimRange(1, 100)}))
    empty = next(op for op in f.walk() if isinstance(op, tensor.EmptyOp))
    assert dim_facts(empty.tensor, 0) is None


def test_facts_of_a_size_less_a_constant():
    """`x[:, 1:]` of T tokens has T - 1 (torch's dynamic export writes `-1 + T`), the
    merged rows of two such 2 * T - 2: a kernel holding them whole is planned at
    their largest size, not at the largest declared range end."""
    text = """func.func @f(%x: tensor<2x?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %c1 = arith.constant 1 : index
  %m1 = arith.constant -1 : index
  %t = tensor.dim %x, %c1 : tensor<2x?xf32>
  %a = arith.subi %t, %c1 : index
  %s = tensor.extract_slice %x[0, 1] [2, %a] [1, 1] : tensor<2x?xf32> to tensor<2x?xf32>
  %c = tensor.collapse_shape %s [[0, 1]] : tensor<2x?xf32> into tensor<?xf32>
  %b = arith.addi %m1, %t : index
  %e = tensor.empty(%b) : tensor<?xf32>
  return %c, %e : tensor<?xf32>, tensor<?xf32>
}"""
    f = entry_function(load_program(text, dim_ranges={"x.1": DimRange(3, 32)}))
    ret = f.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    c, e = ret.operands
    assert dim_facts(c, 0) == DimFacts(4, 62, 2)
    assert dim_facts(e, 0) == DimFacts(2, 31, 1)
