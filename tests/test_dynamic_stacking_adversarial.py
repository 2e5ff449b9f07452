"""Adversarial tests of dynamic stacking (commits 008ef71..a4bd82d): kernels of one
tile program over tensors whose dynamic dims share a size origin run as one launch
(`horizontal_plan.kernel_infos`/`_same_family`, `horizontal_fusion`), a kernel with
variants joins as its whole family (one stacked kernel per level), the printer
finds a program's member as `pid // programs` from run-time sizes (persistent
levels: `share = min(tiles, P // members)`), the host launches `members * ...`
programs; a dynamic dim's last partial chunk is a branch (`kernel._at_most_once`);
a module printed with `tilefuse.dim_ranges` reads back without `--dim-range`.

Every run is compared with the numpy reference (`evaluate`); what the compiler
decided is read from `program.module` (groups, their grids, `VARIANT_OF`) and
`program.source`. It found two bugs, both mended: a stack of grids with static
program counts whose loops take run-time sizes launched one member's programs (the
others' results never written), and ranges written by hand as `[1, 64]` were refused."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.device import on_device
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.frontend.specialize import dynamic_form, specialize
from tilefuse.ir.diagnostics import ArgumentError, CompileError
from tilefuse.ir.dynamic import DimRange, declared_ranges
from tilefuse.ir.module import entry_function
from tilefuse.ir.tilefuse import SERVES, VARIANT_OF, GroupOp
from tilefuse.oracle.compare import relative_error, tolerance
from tilefuse.oracle.reference import evaluate
from tilefuse.pipeline import default_pipeline
from tilefuse.runtime import compile as compile_program
from tilefuse.tools import opt

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
BF16 = torch.bfloat16


# -- helpers -----------------------------------------------------------------------------


def _groups(program) -> list[GroupOp]:
    return [g for g in program.module.walk() if isinstance(g, GroupOp)]


def _launches(program) -> list[GroupOp]:
    """The groups a call launches one of (a variant stands in for its group)."""
    return [g for g in _groups(program) if VARIANT_OF not in g.attributes]


def _served(program) -> dict[str, tuple[int, ...]]:
    return {g.sym_name.data: tuple(g.attributes[SERVES].get_values())  # type: ignore[attr-defined]
            for g in _groups(program) if SERVES in g.attributes}  # fmt: skip


def _compare(module, got, inputs, what, dtype: str = "f32") -> None:
    want = evaluate(module, inputs)
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        g = g.float().cpu().numpy()
        assert g.shape == w.shape, (what, i, g.shape, w.shape)
        err = relative_error(g, w)
        assert err <= tolerance(dtype), (what, i, err)


def _check(module, program, sizes: dict[str, int], seed: int = 0) -> None:
    """`program` at `sizes` (f32 inputs as they come) against the reference."""
    inputs = random_inputs(module, seed=seed, sizes=sizes)
    got = program(*[on_device(torch.from_numpy(x)) for x in inputs])
    _compare(module, got, inputs, sizes)


def _generic(out: str, ins: list[tuple[str, str, str]], init: str, out_type: str, out_map: str,
             iters: str, body: str) -> str:  # fmt: skip
    """A linalg.generic: `ins` are (name, type, map); `body` yields `%r`."""
    maps = ", ".join(f"affine_map<{m}>" for _, _, m in ins) + f", affine_map<{out_map}>"
    args = ", ".join(f"%a{i}: f32" for i in range(len(ins))) + ", %acc: f32"
    return (f"  %{out} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iters}]}}\n"
            f"      ins({', '.join('%' + n for n, _, _ in ins)} : {', '.join(t for _, t, _ in ins)})"
            f" outs(%{init} : {out_type}) {{\n"
            f"    ^bb0({args}):\n{body}\n      linalg.yield %r : f32\n  }} -> {out_type}\n")  # fmt: skip


# -- 1. three members over a dynamic dim that is not the grid's first -----------------

MID = "tensor<8x?x64xf32>"
MAP3 = "(i, j, k) -> (i, j, k)"
PAR3 = '"parallel", "parallel", "parallel"'
THREE_ADDS = (
    f"func.func @f(%x: {MID}, %u: tensor<64xf32>, %v: tensor<64xf32>, %w: tensor<64xf32>)"
    f" -> ({MID}, {MID}, {MID}) {{\n"
    f"  %c1 = arith.constant 1 : index\n  %n = tensor.dim %x, %c1 : {MID}\n"
    f"  %e = tensor.empty(%n) : {MID}\n"
    + "".join(_generic(o, [("x", MID, MAP3), (b, "tensor<64xf32>", "(i, j, k) -> (k)")], "e", MID,
                       MAP3, PAR3, "      %r = arith.addf %a0, %a1 : f32")
              for o, b in (("a", "u"), ("b", "v"), ("c", "w")))
    + f"  return %a, %b, %c : {MID}, {MID}, {MID}\n}}"
)  # fmt: skip


def test_three_members_over_a_middle_dynamic_dim_with_strided_arguments():
    """8 x ? x 64: the grid is 8 x ceil(n / B) x 1, so `seg` divides by a product of
    a static and a run-time count; x comes as a permuted view and one member's
    vector as a strided one (the host must make the stacked columns agree)."""
    module = load_program(THREE_ADDS, dim_ranges={"x.1": DimRange(1, 2048)})
    program = compile_program(module)
    (launch,) = _launches(program)
    assert len(launch.grids) == 3 and len(program.kernels) == 1
    source = program.source
    assert "seg = pid // (8 * programs_1)" in source
    assert "[(3 * 8 * ((x_n1 + " in source
    rng = np.random.default_rng(0)
    for n in (1, 2, 15, 16, 17, 127, 129):
        base = torch.from_numpy(rng.standard_normal((n, 8, 64)).astype(np.float32))
        x = base.transpose(0, 1)  # (8, n, 64), strides (64, 512, 1)
        u = torch.from_numpy(rng.standard_normal(64).astype(np.float32))
        v = torch.from_numpy(rng.standard_normal((64, 3)).astype(np.float32))[:, 1]
        w = torch.from_numpy(rng.standard_normal(64).astype(np.float32))
        got = program(*[on_device(t) for t in (x, u, v, w)])
        _compare(module, got, [t.contiguous().numpy() for t in (x, u, v, w)], n)


# -- 2. stacks whose grid is static but whose kernels hold a dynamic dim ----------------

ROWS = "tensor<64x?xf32>"
ROW_DOTS = (
    f"func.func @f(%x: {ROWS}, %u: tensor<64xf32>, %v: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {{\n"
    "  %z = arith.constant 0.0 : f32\n  %e = tensor.empty() : tensor<64xf32>\n"
    "  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64xf32>) -> tensor<64xf32>\n"
    + "".join(_generic(o, [("x", ROWS, "(i, j) -> (i, j)"), (b, "tensor<64xf32>", "(i, j) -> (i)")],
                       "f", "tensor<64xf32>", "(i, j) -> (i)", '"parallel", "reduction"',
                       "      %m = arith.mulf %a0, %a1 : f32\n      %r = arith.addf %acc, %m : f32")
              for o, b in (("a", "u"), ("b", "v")))
    + "  return %a, %b : tensor<64xf32>, tensor<64xf32>\n}"
)  # fmt: skip


def test_stacked_row_dots_over_a_dynamic_reduced_dim_write_every_member():
    module = load_program(ROW_DOTS, dim_ranges={"x.1": DimRange(1, 4096)})
    program = compile_program(module)
    for n in (1, 31, 32, 100):
        _check(module, program, {"x.1": n}, seed=n)


def _softmax(out: str, bias: str) -> str:
    """softmax over the dynamic columns of x + bias[row]."""
    row, mat = "tensor<64xf32>", ROWS
    two = ["(i, j) -> (i, j)", "(i, j) -> (i)"]
    par = '"parallel", "parallel"'
    return (
        _generic(f"{out}_b", [("x", mat, two[0]), (bias, row, two[1])], "e", mat, two[0], par,
                 "      %r = arith.addf %a0, %a1 : f32")
        + f"  %{out}_m0 = linalg.fill ins(%ninf : f32) outs(%re : {row}) -> {row}\n"
        + _generic(f"{out}_m", [(f"{out}_b", mat, two[0])], f"{out}_m0", row, two[1],
                   '"parallel", "reduction"', "      %r = arith.maximumf %a0, %acc : f32")
        + _generic(f"{out}_x", [(f"{out}_b", mat, two[0]), (f"{out}_m", row, two[1])], "e", mat,
                   two[0], par, "      %d = arith.subf %a0, %a1 : f32\n      %r = math.exp %d : f32")
        + f"  %{out}_s0 = linalg.fill ins(%zero : f32) outs(%re : {row}) -> {row}\n"
        + _generic(f"{out}_s", [(f"{out}_x", mat, two[0])], f"{out}_s0", row, two[1],
                   '"parallel", "reduction"', "      %r = arith.addf %a0, %acc : f32")
        + _generic(out, [(f"{out}_x", mat, two[0]), (f"{out}_s", row, two[1])], "e", mat, two[0],
                   par, "      %r = arith.divf %a0, %a1 : f32")
    )  # fmt: skip


SOFTMAXES = (
    f"func.func @f(%x: {ROWS}, %r1: tensor<64xf32>, %r2: tensor<64xf32>, %r3: tensor<64xf32>)"
    f" -> ({ROWS}, {ROWS}, {ROWS}) {{\n"
    "  %c1 = arith.constant 1 : index\n  %zero = arith.constant 0.0 : f32\n"
    "  %ninf = arith.constant 0xFF800000 : f32\n"
    f"  %n = tensor.dim %x, %c1 : {ROWS}\n  %e = tensor.empty(%n) : {ROWS}\n"
    "  %re = tensor.empty() : tensor<64xf32>\n"
    + _softmax("sa", "r1") + _softmax("sb", "r2") + _softmax("sc", "r3")
    + f"  return %sa, %sb, %sc : {ROWS}, {ROWS}, {ROWS}\n}}"
)  # fmt: skip


def test_stacked_softmaxes_of_a_dynamic_row_are_planned_as_one_family():
    """The decision itself (numbers: the xfail below): three softmaxes of x's
    dynamic rows held whole stack into one kernel per variant level."""
    module = load_program(SOFTMAXES, dim_ranges={"x.1": DimRange(1, 2048)})
    program = compile_program(module)
    assert len(_launches(program)) == 1
    assert _served(program) == {"fused_kernel_0_v0": (1, 128), "fused_kernel_0_v1": (129, 1024),
                                "fused_kernel_0": (1025, 2048)}  # fmt: skip
    assert all(len(g.grids) == 3 for g in _groups(program)), [len(g.grids) for g in _groups(program)]  # fmt: skip


def test_stacked_softmaxes_of_a_dynamic_row_are_right_at_every_variant():
    module = load_program(SOFTMAXES, dim_ranges={"x.1": DimRange(1, 2048)})
    program = compile_program(module)
    for n in (1, 2, 127, 128, 129, 1023, 1024, 1025, 2048):
        _check(module, program, {"x.1": n}, seed=n)


# -- 3. a stacked family with a persistent level, strided and transposed weights ------

QKV = (Path(__file__).parent / "programs_dynamic" / "qkv_projections.mlir").read_text()


def _qkv_args(module, m: int, seed: int) -> list[torch.Tensor]:
    """x as a column-strided view, wk as a transposed (column-major) view."""
    x, wq, wk, wv = (torch.from_numpy(a).to(BF16) for a in random_inputs(module, seed=seed, sizes={"x.0": m}))  # fmt: skip
    wide = torch.zeros((m, 256), dtype=BF16)
    wide[:, ::2] = x
    return [wide[:, ::2], wq, wk.T.contiguous().T, wv]


def test_a_stacked_family_takes_strided_and_transposed_arguments_at_every_level():
    """Q, K, V of one x: one launch at each of three levels (the last persistent,
    TMA descriptors made per member); x passed with a column stride of 2 and wk
    column-major, at the ends of each level."""
    module = load_program(QKV, dim_ranges={"x.0": DimRange(1, 8192)})
    program = compile_program(module)
    (launch,) = _launches(program)
    assert len(launch.results) == 3 and len(program.kernels) == 3
    assert set(_served(program).values()) == {(1, 128), (129, 1024), (1025, 8192)}
    assert "share = min(" in program.source
    for m in (1, 128, 129, 1024, 1025):
        args = _qkv_args(module, m, seed=m)
        assert not args[0].is_contiguous() and not args[2].is_contiguous()
        got = program(*[on_device(a) for a in args])
        _compare(module, got, [a.float().numpy() for a in args], m, "bf16")


# -- 4. members returned and read by a later kernel --------------------------------------

QKV_GRAM = """func.func @f(%x: tensor<?x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>, %wv: tensor<64x64xf32>) -> (tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<?x64xf32>, tensor<64x64xf32>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<?x64xf32>, tensor<64x64xf32>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<?x64xf32>, tensor<64x64xf32>) outs(%f : tensor<?x64xf32>) -> tensor<?x64xf32>
  %se = tensor.empty() : tensor<64x64xf32>
  %sf = linalg.fill ins(%z : f32) outs(%se : tensor<64x64xf32>) -> tensor<64x64xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(a, b, i) -> (i, a)>, affine_map<(a, b, i) -> (i, b)>, affine_map<(a, b, i) -> (a, b)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<?x64xf32>, tensor<?x64xf32>) outs(%sf : tensor<64x64xf32>) {
    ^bb0(%p: f32, %r: f32, %o: f32):
      %d = arith.mulf %p, %r : f32
      %t = arith.addf %o, %d : f32
      linalg.yield %t : f32
  } -> tensor<64x64xf32>
  return %q, %s, %v, %k : tensor<?x64xf32>, tensor<64x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}"""


def test_stacked_outputs_returned_and_read_by_a_later_kernel():
    """q, k and v stack (one launch per level); q and k are returned (out of order)
    and also reduced over the dynamic rows by a later kernel (q^T k)."""
    module = load_program(QKV_GRAM, dim_ranges={"x.0": DimRange(1, 2048)})
    program = compile_program(module)
    launches = _launches(program)
    assert [len(g.grids) for g in launches] == [3, 1]
    assert '"""Run @f: 2 kernel launch(es)."""' in program.source
    for n in (1, 127, 128, 129, 1025):
        _check(module, program, {"x.0": n}, seed=n)


# -- 5. members reading a second dynamic tensor: only matching origins stack ----------

T64 = "tensor<?x64xf32>"
MAP2 = "(i, j) -> (i, j)"
SECOND_TENSOR = (
    f"func.func @f(%x: {T64}, %y: {T64}, %z: {T64}, %u: tensor<64xf32>, %v: tensor<64xf32>)"
    f" -> ({T64}, {T64}, {T64}) {{\n"
    f"  %c0 = arith.constant 0 : index\n  %n = tensor.dim %x, %c0 : {T64}\n"
    f"  %e = tensor.empty(%n) : {T64}\n"
    + "".join(_generic(o, [("x", T64, MAP2), (s, T64, MAP2), (b, "tensor<64xf32>", "(i, j) -> (j)")],
                       "e", T64, MAP2, '"parallel", "parallel"',
                       "      %m = arith.mulf %a0, %a1 : f32\n      %r = arith.addf %m, %a2 : f32")
              for o, s, b in (("a", "y", "u"), ("b", "y", "v"), ("c", "z", "u")))
    + f"  return %a, %b, %c : {T64}, {T64}, {T64}\n}}"
)  # fmt: skip


def test_a_second_dynamic_tensor_of_another_origin_shares_the_launch():
    """x*y+u and x*y+v stack (one tile program, the same tensors' sizes); x*z+u runs
    the same program with z's rows its own (equal to x's by the run-time check): the
    planner keys it apart, so it joins the launch as a branch of run-time counts, and
    as its grid is sized by x's rows too (one origin), the printer stacks all three.
    Sizes that disagree are the host's ValueError."""
    ranges = {n: DimRange(1, 2048) for n in ("x.0", "y.0", "z.0")}
    module = load_program(SECOND_TENSOR, dim_ranges=ranges)
    program = compile_program(module)
    assert [len(g.grids) for g in _launches(program)] == [3]
    for n in (1, 17, 129):
        _check(module, program, dict.fromkeys(ranges, n), seed=n)
    inputs = random_inputs(module, seed=0, sizes=dict.fromkeys(ranges, 5))
    inputs[1] = inputs[1][:4]
    with pytest.raises(ValueError, match=r"dynamic sizes that must agree differ: x.shape\[0\] = 5, y.shape\[0\] = 4"):  # fmt: skip
        program(*[on_device(torch.from_numpy(x)) for x in inputs])


TWO_WEIGHTS = """func.func @f(%x: tensor<?x32xf32>, %w1: tensor<32x?xf32>, %w2: tensor<32x?xf32>) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x32xf32>
  %m1 = tensor.dim %w1, %c1 : tensor<32x?xf32>
  %m2 = tensor.dim %w2, %c1 : tensor<32x?xf32>
  %e1 = tensor.empty(%n, %m1) : tensor<?x?xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %e2 = tensor.empty(%n, %m2) : tensor<?x?xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<?x32xf32>, tensor<32x?xf32>) outs(%f1 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %b = linalg.matmul ins(%x, %w2 : tensor<?x32xf32>, tensor<32x?xf32>) outs(%f2 : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %a, %b : tensor<?x?xf32>, tensor<?x?xf32>
}"""


def test_one_program_over_weights_of_different_widths_does_not_stack():
    """x @ w1 and x @ w2: one tile program, one row count, but the column tiles
    count w1's and w2's own widths: stacked, `pid // programs` would split the
    launch by w1's count for both."""
    ranges = {"x.0": DimRange(1, 512), "w1.1": DimRange(1, 512), "w2.1": DimRange(1, 512)}  # fmt: skip
    module = load_program(TWO_WEIGHTS, dim_ranges=ranges)
    program = compile_program(module)
    assert all(len(g.grids) == 1 for g in _launches(program))
    for n, m1, m2 in ((3, 40, 300), (129, 300, 40), (1, 1, 512), (64, 200, 1)):
        _check(module, program, {"x.0": n, "w1.1": m1, "w2.1": m2}, seed=n + m1)


# -- 6. four LayerNorms of one x's rows ---------------------------------------------------

LN_N = 96


def _layernorm(i: int) -> str:
    t, r = f"tensor<?x{LN_N}xf32>", "tensor<?xf32>"
    col, row = "(i, j) -> (j)", "(i, j) -> (i)"
    return (
        _generic(f"ls{i}", [("x", t, MAP2)], "rf", r, row, '"parallel", "reduction"',
                 "      %r = arith.addf %a0, %acc : f32")
        + _generic(f"lc{i}", [("x", t, MAP2), (f"ls{i}", r, row)], "e", t, MAP2, '"parallel", "parallel"',
                   "      %m = arith.mulf %a1, %invn : f32\n      %r = arith.subf %a0, %m : f32")
        + _generic(f"lq{i}", [(f"lc{i}", t, MAP2)], "rf", r, row, '"parallel", "reduction"',
                   "      %m = arith.mulf %a0, %a0 : f32\n      %r = arith.addf %acc, %m : f32")
        + _generic(f"l{i}", [(f"lc{i}", t, MAP2), (f"lq{i}", r, row), (f"g{i}", f"tensor<{LN_N}xf32>", col),
                             (f"b{i}", f"tensor<{LN_N}xf32>", col)], "e", t, MAP2, '"parallel", "parallel"',
                   "      %var = arith.mulf %a1, %invn : f32\n      %ve = arith.addf %var, %eps : f32\n"
                   "      %rs = math.rsqrt %ve : f32\n      %y = arith.mulf %a0, %rs : f32\n"
                   "      %y2 = arith.mulf %y, %a2 : f32\n      %r = arith.addf %y2, %a3 : f32")
    )  # fmt: skip


LN_T = f"tensor<?x{LN_N}xf32>"
FOUR_LAYERNORMS = (
    "func.func @f(%x: " + LN_T + ", "
    + ", ".join(f"%g{i}: tensor<{LN_N}xf32>, %b{i}: tensor<{LN_N}xf32>" for i in range(4))
    + f") -> ({', '.join([LN_T] * 4)}) {{\n"
    "  %c0 = arith.constant 0 : index\n  %zero = arith.constant 0.0 : f32\n"
    "  %eps = arith.constant 1.0e-05 : f32\n"
    f"  %invn = arith.constant {1.0 / LN_N:.10e} : f32\n"
    f"  %n = tensor.dim %x, %c0 : {LN_T}\n  %e = tensor.empty(%n) : {LN_T}\n"
    "  %re = tensor.empty(%n) : tensor<?xf32>\n"
    "  %rf = linalg.fill ins(%zero : f32) outs(%re : tensor<?xf32>) -> tensor<?xf32>\n"
    + "".join(_layernorm(i) for i in range(4))
    + f"  return {', '.join(f'%l{i}' for i in range(4))} : {', '.join([LN_T] * 4)}\n}}"
)  # fmt: skip


def test_four_layernorms_of_dynamic_rows_stack_with_a_strided_gamma():
    module = load_program(FOUR_LAYERNORMS, dim_ranges={"x.0": DimRange(1, 2048)})
    program = compile_program(module)
    (launch,) = _launches(program)
    assert len(launch.grids) == 4
    assert "[(4 * ((x_n0 + " in program.source
    for n in (1, 2, 127, 129, 1025):
        inputs = random_inputs(module, seed=n, sizes={"x.0": n})
        args = [torch.from_numpy(a) for a in inputs]
        pair = np.stack([inputs[5], inputs[5]], axis=1)
        args[5] = torch.from_numpy(pair)[:, 0]  # (g2, at stride 2)
        assert not args[5].is_contiguous()
        got = program(*[on_device(a) for a in args])
        _compare(module, got, inputs, n)


# -- 7. kernels of different K: different plans, no shared launch ------------------------

DIFFERENT_K = """func.func @f(%x: tensor<?x128xf32>, %wa: tensor<128x32xf32>, %wb: tensor<8x32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x128xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %xs = tensor.extract_slice %x[0, 0] [%n, 8] [1, 1] : tensor<?x128xf32> to tensor<?x8xf32>
  %a = linalg.matmul ins(%x, %wa : tensor<?x128xf32>, tensor<128x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  %b = linalg.matmul ins(%xs, %wb : tensor<?x8xf32>, tensor<8x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %a, %b : tensor<?x32xf32>, tensor<?x32xf32>
}"""


def test_families_of_different_programs_over_one_row_count_keep_their_launches():
    module = load_program(DIFFERENT_K, dim_ranges={"x.0": DimRange(1, 2048)})
    program = compile_program(module)
    launches = _launches(program)
    assert len(launches) == 2 and all(len(g.grids) == 1 for g in launches)
    for n in (1, 1024, 1025):
        _check(module, program, {"x.0": n}, seed=n)


# -- 8. the last partial key chunk as a branch ----------------------------------------------


def _attention(cross: bool, hi: int):
    text = specialize((SAMPLES / "attention.mlir").read_text(), {"B": 1, "H": 2, "D": 16})  # fmt: skip
    dyn = dynamic_form(text, "S")
    if cross:  # keys of their own length
        dyn = dyn.replace("tensor.empty(%tf_dyn_S, %tf_dyn_S)", "tensor.empty(%tf_dyn_S, %tf_dyn_L)")  # fmt: skip
        read = "  %tf_dyn_S = tensor.dim %q, %tf_dyn_c2 : tensor<1x2x?x16xf32>"
        assert read in dyn
        dyn = dyn.replace(read, read + "\n  %tf_dyn_L = tensor.dim %k, %tf_dyn_c2 : tensor<1x2x?x16xf32>")  # fmt: skip
    return load_program(dyn, dim_ranges={n: DimRange(1, hi) for n in ("q.2", "k.2", "v.2")})  # fmt: skip


@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_a_dynamic_attention_at_sizes_that_take_and_skip_the_partial_chunk(cross):
    module = _attention(cross, 256)
    program = compile_program(module)
    lines = [s.strip() for s in program.source.splitlines()]
    assert "if ((k_n2 // 32) * 32) < k_n2:" in lines
    assert not any(s.startswith("for ") and "range(((k_n2 // 32) * 32), k_n2" in s for s in lines)  # fmt: skip
    pairs = [(1, 33), (33, 1), (32, 64), (100, 31), (64, 32), (5, 256), (256, 200)] if cross else \
        [(n, n) for n in (1, 2, 31, 32, 33, 64, 65, 127, 128, 255, 256)]  # fmt: skip
    for sq, sk in pairs:
        _check(module, program, {"q.2": sq, "k.2": sk, "v.2": sk}, seed=sq * 1000 + sk)


# -- 9. a module printed by tilefuse-opt reads back with its ranges -----------------------


def _opt(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = opt.main(argv)
    assert rc == 0, err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize("cut", ["tile-and-fuse", "horizontal-fusion"])
def test_a_cut_of_the_pipeline_reads_back_its_ranges_and_stacks(cut, tmp_path):
    """Printed after tile-and-fuse (variants, not yet stacked) or after stacking: read
    back without --dim-range, the ranges stand, the rest of the pipeline stacks the
    family into one launch and the numbers are the original program's."""
    source = tmp_path / "qkv.mlir"
    source.write_text(QKV)
    text = _opt([str(source), "--dim-range", "x.0=1:2048", "-p", default_pipeline("h200", until=cut)])  # fmt: skip
    assert "tilefuse.dim_ranges = {x.0 = [#builtin.int<1>, #builtin.int<2048>]}" in text
    printed = tmp_path / "cut.mlir"
    printed.write_text(text)
    triton = _opt([str(printed), "-t", "triton"])
    assert '"""Run @qkv: 1 kernel launch(es)."""' in triton
    again = load_program(text)
    assert declared_ranges(entry_function(again)) == {"x.0": DimRange(1, 2048)}
    program = compile_program(again)
    assert len(_launches(program)) == 1 and len(program.kernels) == 3
    original = load_program(QKV, dim_ranges={"x.0": DimRange(1, 2048)})
    for m in (1, 129):
        args = [torch.from_numpy(a).to(BF16) for a in random_inputs(original, seed=m, sizes={"x.0": m})]  # fmt: skip
        got = program(*[on_device(a) for a in args])
        _compare(original, got, [a.float().numpy() for a in args], m, "bf16")


RANGED = """func.func @f(%x: tensor<?x32xf32>, %u: tensor<32xf32>) -> tensor<?x32xf32> attributes {tilefuse.dim_ranges = RANGES} {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x32xf32>
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%x, %u : tensor<?x32xf32>, tensor<32xf32>) outs(%e : tensor<?x32xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<?x32xf32>
  return %a : tensor<?x32xf32>
}"""


def _i(n: int) -> str:
    return f"#builtin.int<{n}>"


MALFORMED = {  # the attribute's value -> what the error says
    "lo-zero": (f"{{x.0 = [{_i(0)}, {_i(64)}]}}", r"the range of x.0 .*1 <= LO <= HI"),
    "negative": (f"{{x.0 = [{_i(-4)}, {_i(64)}]}}", r"the range of x.0 .*1 <= LO <= HI"),
    "lo-above-hi": (f"{{x.0 = [{_i(65)}, {_i(64)}]}}", r"the range of x.0 .*1 <= LO <= HI"),
    "one-number": (f"{{x.0 = [{_i(1)}]}}", r"the range of x.0"),
    "four-numbers": (f"{{x.0 = [{_i(1)}, {_i(64)}, {_i(1)}, {_i(1)}]}}", r"the range of x.0"),
    "divisor-zero": (f"{{x.0 = [{_i(1)}, {_i(64)}, {_i(0)}]}}", r"multiples of its divisor"),
    "not-multiples": (f"{{x.0 = [{_i(2)}, {_i(63)}, {_i(2)}]}}", r"multiples of its divisor"),
    "string": ('{x.0 = "1:64"}', r"the range of x.0 .*not \[lo, hi\]"),
    "dense-array": ("{x.0 = array<i64: 1, 64>}", r"the range of x.0 .*not \[lo, hi\]"),
    "floats": ("{x.0 = [1.0, 64.0]}", r"the range of x.0 .*not \[lo, hi\]"),
    "nested": (f"{{x.0 = [[{_i(1)}], {_i(64)}]}}", r"the range of x.0 .*not \[lo, hi\]"),
    "empty": ("{x.0 = []}", r"the range of x.0 .*not \[lo, hi\]"),
    "unit": ("{x.0}", r"the range of x.0 .*not \[lo, hi\]"),
    "not-a-dict": ("[1, 64]", r"maps dim names to \[lo, hi\] ranges"),
    "unknown-dim": (f"{{y.0 = [{_i(1)}, {_i(64)}]}}", r"no dynamic dim y.0 in @f"),
    "extra-dim": (f"{{x.0 = [{_i(1)}, {_i(64)}], y.0 = [{_i(1)}, {_i(64)}]}}", r"no dynamic dim y.0"),
    "missing": ("{}", r"dynamic dims x.0 without a range"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_stated_ranges_are_located_errors(case, tmp_path):
    ranges, message = MALFORMED[case]
    text = RANGED.replace("RANGES", ranges)
    with pytest.raises(CompileError, match=r"^<input>:1:1: error: .*" + message):
        load_program(text)
    path = tmp_path / "r.mlir"
    path.write_text(text)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert opt.main([str(path), "-t", "triton"]) == 1
    assert "Traceback" not in err.getvalue() and len(err.getvalue().splitlines()) == 1, err.getvalue()  # fmt: skip
    assert err.getvalue().startswith(f"{path}:1:1: error: ")


def test_well_formed_stated_ranges_compile_and_check_sizes():
    text = RANGED.replace("RANGES", f"{{x.0 = [{_i(2)}, {_i(64)}, {_i(2)}]}}")
    module = load_program(text)
    assert declared_ranges(entry_function(module)) == {"x.0": DimRange(2, 64, 2)}
    program = compile_program(module)
    for n in (2, 64):
        _check(module, program, {"x.0": n}, seed=n)
    with pytest.raises(CompileError, match=r"x.0 = 3, not a multiple of 2"):
        evaluate(module, [np.zeros((3, 32), np.float32), np.zeros(32, np.float32)])
    for n in (3, 66):  # (the compiled program checks its sizes too)
        with pytest.raises(ArgumentError, match=rf"x.0 = {n}, (not a multiple of 2|outside its declared range)"):  # fmt: skip
            program(on_device(torch.ones(n, 32)), on_device(torch.ones(32)))


def test_hand_written_integer_ranges_read_back():
    module = load_program(RANGED.replace("RANGES", "{x.0 = [1, 64]}"))
    assert declared_ranges(entry_function(module)) == {"x.0": DimRange(1, 64)}


# -- 10. the stacked dynamic kernels compile for sm_90 ------------------------------------


def test_stacked_dynamic_kernels_compile_for_sm90():
    """The interpreter forgives what Triton's compiler does not (pointer selects of
    stacked members, run-time `seg` arithmetic, the partial-chunk branch)."""
    pytest.importorskip("triton")
    from tilefuse.gpu.check import check_programs
    from tilefuse.pipeline import run_pipeline

    modules = [
        load_program(THREE_ADDS, dim_ranges={"x.1": DimRange(1, 2048)}),
        load_program(FOUR_LAYERNORMS, dim_ranges={"x.0": DimRange(1, 2048)}),
        load_program(QKV_GRAM, dim_ranges={"x.0": DimRange(1, 2048)}),
        load_program(SOFTMAXES, dim_ranges={"x.1": DimRange(1, 2048)}),
        _attention(True, 256),
    ]
    for m in modules:
        run_pipeline(m, "h200")
    results = check_programs([(m, None) for m in modules], "h200")
    for i, r in enumerate(results):
        assert not isinstance(r, Exception), (i, r)
        assert r and all(k.fits and k.spills == 0 for k in r), (i, r)
