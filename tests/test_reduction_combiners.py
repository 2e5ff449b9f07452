"""Reductions by product (`arith.mulf`) and signed integer max/min (`maxsi`,
`minsi`): whole rows and rows looped in chunks whose last one is partial (the
padding must be the combiner's identity: 1, the type's smallest or largest
value), against torch."""

import numpy as np
import pytest
import torch

from tests.device import on_device
from tilefuse.frontend.program import load_program
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime.compiled import compile

REDUCE = """
func.func @f(%x: tensor<5x{n}x{t}>) -> tensor<5x{t}> {{
  %init = arith.constant {init} : {t}
  %e = tensor.empty() : tensor<5x{t}>
  %o = linalg.fill ins(%init : {t}) outs(%e : tensor<5x{t}>) -> tensor<5x{t}>
  %r = linalg.reduce ins(%x : tensor<5x{n}x{t}>) outs(%o : tensor<5x{t}>) dimensions = [1]
    (%in: {t}, %acc: {t}) {{
      %p = arith.{op} %in, %acc : {t}
      linalg.yield %p : {t}
    }}
  func.return %r : tensor<5x{t}>
}}
"""

# 3000 columns: one 4096-wide tile at the default budget; 512-wide chunks, the
# last one 440 wide, at a 4 KB budget.
BUDGETS = [0, 4096]


@pytest.mark.parametrize("budget", BUDGETS)
def test_product_of_a_row(budget):
    text = REDUCE.format(n=3000, t="f32", init="1.0", op="mulf")
    x = torch.rand(5, 3000, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x = (x * 0.02 + 0.99).float()  # products stay near 1
    (got,) = compile(text, smem_budget=budget)(on_device(x))
    want = torch.prod(x.double(), dim=1)
    assert torch.allclose(got.cpu().double(), want, rtol=2e-5, atol=0)
    (ref,) = evaluate(load_program(text), [x.numpy()])
    assert torch.allclose(torch.from_numpy(ref).double(), want, rtol=2e-5, atol=0)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("width", [8, 32, 64])
@pytest.mark.parametrize("op", ["maxsi", "minsi"])
def test_signed_integer_max_and_min_of_rows(op, width, budget):
    """Rows all below zero for max, all above for min: a zero (or any other
    non-identity) padding would win."""
    t = f"i{width}"
    lo, hi = -(2 ** (width - 1)), 2 ** (width - 1) - 1
    init = lo if op == "maxsi" else hi
    text = REDUCE.format(n=3000, t=t, init=init, op=op)
    dtype = {8: torch.int8, 32: torch.int32, 64: torch.int64}[width]
    gen = torch.Generator().manual_seed(width)
    x = torch.randint(lo + 1, 0, (5, 3000), generator=gen, dtype=torch.int64)
    if op == "minsi":
        x = -x
    x = x.to(dtype)
    (got,) = compile(text, smem_budget=budget)(on_device(x))
    want = x.max(dim=1).values if op == "maxsi" else x.min(dim=1).values
    assert torch.equal(got.cpu(), want)
    (ref,) = evaluate(load_program(text), [x.numpy()])
    assert torch.equal(torch.from_numpy(ref), want)


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("width", [32, 64])
def test_integer_sum_of_large_values_is_exact(width, budget):
    """Sums past 2**24: the accumulator's fill was an f32 block, which rounded
    them (a miscompile of `addi` reductions before this test)."""
    t = f"i{width}"
    text = REDUCE.format(n=3000, t=t, init=0, op="addi")
    big = 2**20 if width == 32 else 2**40  # sums of about 2**25 and 2**45
    gen = torch.Generator().manual_seed(width)
    x = torch.randint(-big, big, (5, 3000), generator=gen, dtype=torch.int64)
    x = x.to(torch.int32 if width == 32 else torch.int64)
    (got,) = compile(text, smem_budget=budget)(on_device(x))
    assert torch.equal(got.cpu(), x.sum(dim=1, dtype=x.dtype))
    (ref,) = evaluate(load_program(text), [x.numpy()])
    assert torch.equal(torch.from_numpy(ref).to(x.dtype), got.cpu())


I1_REDUCE = """
func.func @f(%x: tensor<2x4xf32>) -> tensor<2xi1> {
  %t = arith.constant true
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2xi1>
  %ft = linalg.fill ins(%t : i1) outs(%e : tensor<2xi1>) -> tensor<2xi1>
  %all = linalg.generic {indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a)>], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<2x4xf32>) outs(%ft : tensor<2xi1>) {
  ^bb0(%in: f32, %acc: i1):
    %c = arith.cmpf ogt, %in, %z : f32
    %s = arith.OP %c, %acc : i1
    linalg.yield %s : i1
  } -> tensor<2xi1>
  return %all : tensor<2xi1>
}
"""


@pytest.mark.parametrize("op,want", [("maxsi", [True, False]), ("minsi", [True, True]),
                                     ("addi", [True, False]), ("andi", [True, False]),
                                     ("ori", [True, True]), ("xori", [True, False])])  # fmt: skip
def test_i1_reductions_read_true_as_minus_one(op, want):
    """A true i1 is -1 read signed: maxsi is AND, minsi is OR, addi is parity.
    The kernels computed OR for all three (a miscompile); they were refused, and
    are AND, OR and parity now, as andi, ori and xori are."""
    text = I1_REDUCE.replace("OP", op)
    x = np.array([[1, 1, 1, 1], [1, -1, -1, -1]], np.float32)
    (ref,) = evaluate(load_program(text), [x])
    assert ref.astype(bool).tolist() == want
    (got,) = compile(text)(on_device(x))
    assert got.cpu().tolist() == want


BITWISE = """
func.func @f(%x: tensor<7x{n}x{t}>) -> tensor<7x{t}> {{
  %init = arith.constant {init} : {t}
  %e = tensor.empty() : tensor<7x{t}>
  %o = linalg.fill ins(%init : {t}) outs(%e : tensor<7x{t}>) -> tensor<7x{t}>
  %r = linalg.generic {{indexing_maps = [affine_map<(a, b) -> (a, b)>, affine_map<(a, b) -> (a)>],
                       iterator_types = ["parallel", "reduction"]}}
      ins(%x : tensor<7x{n}x{t}>) outs(%o : tensor<7x{t}>) {{
  ^bb0(%in: {t}, %acc: {t}):
    %s = arith.{op} %in, %acc : {t}
    linalg.yield %s : {t}
  }} -> tensor<7x{t}>
  func.return %r : tensor<7x{t}>
}}
"""
TORCH_BITWISE = {"andi": torch.bitwise_and, "ori": torch.bitwise_or, "xori": torch.bitwise_xor}


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("n", [9, 3000])
@pytest.mark.parametrize("op", sorted(TORCH_BITWISE))
def test_all_any_parity_of_odd_rows(op, n, budget):
    """torch's `.all()`/`.any()` (andi/ori of i1 from true/false): rows all
    true, all false, with one false or true in the last (partial) tile, so a
    padding other than the identity would flip them."""
    init = 1 if op == "andi" else 0
    text = BITWISE.format(n=n, t="i1", init=init, op=op)
    gen = np.random.default_rng(n)
    x = gen.random((7, n)) < 0.5
    x[0], x[1], x[2], x[3] = True, False, True, False
    x[2, n - 1], x[3, n - 1] = False, True
    (got,) = compile(text, smem_budget=budget)(on_device(x))
    t = torch.from_numpy(x)
    want = {"andi": t.all(1), "ori": t.any(1), "xori": t.sum(1) % 2 == 1}[op]
    assert got.cpu().tolist() == want.tolist()
    (ref,) = evaluate(load_program(text), [x])
    assert ref.astype(bool).tolist() == want.tolist()


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("op", sorted(TORCH_BITWISE))
def test_bitwise_reductions_of_integers(op, budget):
    """andi (identity all ones), ori and xori (zero) of i32 rows of 3000."""
    init = -1 if op == "andi" else 0
    text = BITWISE.format(n=3000, t="i32", init=init, op=op)
    gen = torch.Generator().manual_seed(3)
    x = torch.randint(-(2**31), 2**31 - 1, (7, 3000), generator=gen, dtype=torch.int64).to(torch.int32)
    x[0] = -1
    x[0, 2999] = 0x7FFFFFFE  # the last (partial) chunk clears two bits
    (got,) = compile(text, smem_budget=budget)(on_device(x))
    want = x[:, 0].clone()
    for j in range(1, 3000):
        want = TORCH_BITWISE[op](want, x[:, j])
    assert torch.equal(got.cpu(), want)
    (ref,) = evaluate(load_program(text), [x.numpy()])
    assert torch.equal(torch.from_numpy(ref), want)


def test_i1_max_and_min_elementwise_are_and_and_or():
    text = """
#m = affine_map<(i) -> (i)>
func.func @f(%a: tensor<4xi1>, %b: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  %e = tensor.empty() : tensor<4xi1>
  %r:2 = linalg.generic {indexing_maps = [#m, #m, #m, #m], iterator_types = ["parallel"]} ins(%a, %b : tensor<4xi1>, tensor<4xi1>) outs(%e, %e : tensor<4xi1>, tensor<4xi1>) {
  ^bb0(%x: i1, %y: i1, %o: i1, %p: i1):
    %mx = arith.maxsi %x, %y : i1
    %mn = arith.minsi %x, %y : i1
    linalg.yield %mx, %mn : i1, i1
  } -> (tensor<4xi1>, tensor<4xi1>)
  return %r#0, %r#1 : tensor<4xi1>, tensor<4xi1>
}
"""
    a = torch.tensor([True, True, False, False])
    b = torch.tensor([True, False, True, False])
    mx, mn = compile(text)(on_device(a), on_device(b))
    assert mx.cpu().tolist() == (a & b).tolist() and mn.cpu().tolist() == (a | b).tolist()


def test_i64_constants_and_arguments_keep_every_bit():
    """Past 2**53 an i64 read through a float64 rounds: tensor constants
    printed on the host, and the reference's arguments, did."""
    text = """
func.func @f(%x: tensor<3xi64>) -> (tensor<3xi64>, tensor<i64>) {
  %c = arith.constant dense<[9007199254740993, 9223372036854775807, -3]> : tensor<3xi64>
  %lo = arith.constant -9223372036854775808 : i64
  %e = tensor.empty() : tensor<i64>
  %o = linalg.fill ins(%lo : i64) outs(%e : tensor<i64>) -> tensor<i64>
  %m = linalg.reduce ins(%x : tensor<3xi64>) outs(%o : tensor<i64>) dimensions = [0]
    (%in: i64, %acc: i64) {
      %p = arith.maxsi %in, %acc : i64
      linalg.yield %p : i64
    }
  return %c, %m : tensor<3xi64>, tensor<i64>
}
"""
    x = torch.tensor([2**62 + 1, -(2**62), 2**62 - 1], dtype=torch.int64)
    c, m = compile(text)(on_device(x))
    assert c.cpu().tolist() == [9007199254740993, 9223372036854775807, -3]
    assert m.item() == 2**62 + 1
    ref_c, ref_m = evaluate(load_program(text), [x.numpy()])
    assert ref_c.tolist() == c.cpu().tolist() and int(ref_m) == 2**62 + 1


def test_reference_integer_sums_wrap_at_their_width():
    text = REDUCE.format(n=3, t="i8", init=0, op="addi").replace("5x", "2x")
    x = np.array([[100, 100, 100], [-100, -100, -100]], np.int8)
    (ref,) = evaluate(load_program(text), [x])
    assert ref.tolist() == [44, -44]
    (got,) = compile(text)(on_device(x))
    assert got.cpu().tolist() == [44, -44]


def test_fill_converts_its_value_to_the_output_type():
    """Upstream's `linalg.fill` casts (signed): 2.7 into i32 is 2, 300 into f32
    is 300.0, -5 : i64 into i8 is -5 (it was an error without a location)."""
    text = """
func.func @f() -> (tensor<4xi32>, tensor<3xf32>, tensor<2xi8>) {
  %a = arith.constant 2.7 : f32
  %b = arith.constant 300 : i32
  %c = arith.constant -5 : i64
  %e = tensor.empty() : tensor<4xi32>
  %f = linalg.fill ins(%a : f32) outs(%e : tensor<4xi32>) -> tensor<4xi32>
  %e2 = tensor.empty() : tensor<3xf32>
  %g = linalg.fill ins(%b : i32) outs(%e2 : tensor<3xf32>) -> tensor<3xf32>
  %e3 = tensor.empty() : tensor<2xi8>
  %h = linalg.fill ins(%c : i64) outs(%e3 : tensor<2xi8>) -> tensor<2xi8>
  func.return %f, %g, %h : tensor<4xi32>, tensor<3xf32>, tensor<2xi8>
}
"""
    f, g, h = compile(text)()
    assert f.cpu().tolist() == [2] * 4 and g.cpu().tolist() == [300.0] * 3 and h.cpu().tolist() == [-5] * 2
    ref = evaluate(load_program(text), [])
    assert [r.tolist() for r in ref] == [[2] * 4, [300.0] * 3, [-5] * 2]


INT_DIVISION = """
#m = affine_map<(i) -> (i)>
func.func @f(%a: tensor<12xi32>, %b: tensor<12xi32>) -> (tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>) {
  %e = tensor.empty() : tensor<12xi32>
  %r:8 = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m, #m, #m, #m, #m, #m], iterator_types = ["parallel"]} ins(%a, %b : tensor<12xi32>, tensor<12xi32>) outs(%e, %e, %e, %e, %e, %e, %e, %e : tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>) {
  ^bb0(%x: i32, %y: i32, %o0: i32, %o1: i32, %o2: i32, %o3: i32, %o4: i32, %o5: i32, %o6: i32, %o7: i32):
    %q = arith.divsi %x, %y : i32
    %r = arith.remsi %x, %y : i32
    %fq = arith.floordivsi %x, %y : i32
    %cq = arith.ceildivsi %x, %y : i32
    %uq = arith.divui %x, %y : i32
    %ur = arith.remui %x, %y : i32
    %uc = arith.ceildivui %x, %y : i32
    %i = linalg.index 0 : index
    %c3 = arith.constant 3 : index
    %ir = arith.remui %i, %c3 : index
    %ii = arith.index_cast %ir : index to i32
    linalg.yield %q, %r, %fq, %cq, %uq, %ur, %uc, %ii : i32, i32, i32, i32, i32, i32, i32, i32
  } -> (tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>)
  return %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6, %r#7 : tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>
}
"""


def test_integer_division_signed_unsigned_floor_and_ceiling():
    """divsi/remsi truncate (C), floordivsi/ceildivsi round down/up, the
    unsigned ones read the bits as unsigned (-7 is 2**32 - 7), remui on an
    index: against Python's integers, written here."""
    import math

    a = [7, -7, 7, -7, 0, 1, -1, 2**31 - 1, -(2**31) + 1, 100, -100, 5]
    b = [2, 2, -2, -2, 3, 3, 3, 7, 7, -9, -9, 5]

    def trunc(x, y):
        return int(x / y) if abs(x) < 2**52 else (abs(x) // abs(y)) * (1 if (x < 0) == (y < 0) else -1)

    def unsigned(x):
        return x % 2**32

    def signed(x):
        return x - 2**32 if x >= 2**31 else x

    pairs = list(zip(a, b, strict=True))
    want = [[trunc(x, y) for x, y in pairs], [x - trunc(x, y) * y for x, y in pairs],
            [x // y for x, y in pairs], [-((-x) // y) for x, y in pairs],
            [signed(unsigned(x) // unsigned(y)) for x, y in pairs],
            [signed(unsigned(x) % unsigned(y)) for x, y in pairs],
            [signed(math.ceil(unsigned(x) / unsigned(y))) for x, y in pairs],
            [i % 3 for i in range(12)]]  # fmt: skip
    ta, tb = torch.tensor(a, dtype=torch.int32), torch.tensor(b, dtype=torch.int32)
    outs = compile(INT_DIVISION)(on_device(ta), on_device(tb))
    assert [o.cpu().tolist() for o in outs] == want
    ref = evaluate(load_program(INT_DIVISION), [ta.numpy(), tb.numpy()])
    assert [r.tolist() for r in ref] == want


UNSIGNED_IN_WIDE_REGISTERS = """
#m = affine_map<(i) -> (i)>
func.func @f(%a: tensor<6xf32>, %b: tensor<6xi64>) -> (tensor<6xi8>, tensor<6xi64>, tensor<6xi64>, tensor<6xi64>) {
  %c3 = arith.constant 3 : i8
  %c2 = arith.constant 2 : index
  %e8 = tensor.empty() : tensor<6xi8>
  %e = tensor.empty() : tensor<6xi64>
  %r:4 = linalg.generic {indexing_maps = [#m, #m, #m, #m, #m, #m], iterator_types = ["parallel"]} ins(%a, %b : tensor<6xf32>, tensor<6xi64>) outs(%e8, %e, %e, %e : tensor<6xi8>, tensor<6xi64>, tensor<6xi64>, tensor<6xi64>) {
  ^bb0(%x: f32, %y: i64, %o0: i8, %o1: i64, %o2: i64, %o3: i64):
    %i = arith.fptosi %x : f32 to i8
    %q = arith.divui %i, %c3 : i8
    %n = arith.index_cast %y : i64 to index
    %d = arith.divui %n, %c2 : index
    %m = arith.remui %n, %c2 : index
    %c = arith.ceildivsi %y, %y : i64
    %d64 = arith.index_cast %d : index to i64
    %m64 = arith.index_cast %m : index to i64
    linalg.yield %q, %d64, %m64, %c : i8, i64, i64, i64
  } -> (tensor<6xi8>, tensor<6xi64>, tensor<6xi64>, tensor<6xi64>)
  return %r#0, %r#1, %r#2, %r#3 : tensor<6xi8>, tensor<6xi64>, tensor<6xi64>, tensor<6xi64>
}
"""


def test_unsigned_division_of_narrow_values_in_wide_registers_and_of_index():
    """An i8 from fptosi sits in an int32 register, an index is 64 bits: the
    unsigned ops cut the value to its width first (a bitcast of the wider
    register was a Triton error), and a negative index is 2**64 - n unsigned
    (the kernels and the reference each divided signed before)."""
    a = torch.tensor([-7.0, 7.0, -128.0, 127.0, -1.0, 0.0])
    b = torch.tensor([-7, 7, 5, -1, -(2**63), 3], dtype=torch.int64)
    u8 = [int(x) % 256 for x in a.tolist()]
    u64 = [int(y) % 2**64 for y in b.tolist()]
    signed = lambda v, w: v - 2**w if v >= 2 ** (w - 1) else v  # noqa: E731
    want = [[signed(v // 3, 8) for v in u8], [signed(v // 2, 64) for v in u64],
            [v % 2 for v in u64], [1, 1, 1, 1, 1, 1]]  # fmt: skip
    outs = compile(UNSIGNED_IN_WIDE_REGISTERS)(on_device(a), on_device(b))
    assert [o.cpu().tolist() for o in outs] == want
    ref = evaluate(load_program(UNSIGNED_IN_WIDE_REGISTERS), [a.numpy(), b.numpy()])
    assert [r.tolist() for r in ref] == want


def test_reference_ceildivsi_of_the_smallest_i64():
    """-(-2**63) overflows: the reference computed ceil from -a (+2**62)."""
    text = INT_DIVISION.replace("i32", "i64")
    a = torch.tensor([-(2**63)] * 12, dtype=torch.int64)
    b = torch.tensor([2, 3] * 6, dtype=torch.int64)
    ref = evaluate(load_program(text), [a.numpy(), b.numpy()])
    assert ref[3].tolist() == [-(2**62), -3074457345618258602] * 6
    outs = compile(text)(on_device(a), on_device(b))
    assert outs[3].cpu().tolist() == ref[3].tolist()
