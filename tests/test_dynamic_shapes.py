"""Dynamic dims (issue 18): programs with `?` sizes load with a declared range per
dynamic dim; the reference evaluator runs them at any size in range, as the same
program written at that size; and one compile serves every size in range, its
kernels taking the sizes at launch (checked here through the kernels, against the
evaluator)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.device import on_device
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.frontend.specialize import (
    SpecializeError,
    dynamic_form,
    read_header,
    specialize,
)
from tilefuse.ir.diagnostics import ArgumentError, CompileError, RuntimeCheckError
from tilefuse.ir.dynamic import (
    PLANNING_SIZE_ATTR,
    DimRange,
    declared_ranges,
    parse_range,
)
from tilefuse.ir.module import entry_function
from tilefuse.ir.tilefuse import SERVES, VARIANT_OF, GroupOp
from tilefuse.oracle.compare import relative_error, tolerance
from tilefuse.oracle.reference import evaluate
from tilefuse.runtime import compile as compile_program

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
SAMPLES = Path(__file__).resolve().parent.parent / "samples"

SIZES = (1, 2, 3, 7, 13, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129)
"""1, 2, primes, 2^k - 1, 2^k, 2^k + 1 (the range ends are added per case)."""

CASES = [  # sample, its dynamic dim, the range declared
    ("softmax", "M", 4096),  # rows
    ("softmax", "N", 512),  # the reduced dim
    ("layernorm", "M", 4096),
    ("rmsnorm", "M", 1024),
    ("linear_bias_relu", "M", 1024),  # a GEMM's M
    ("mlp", "M", 256),
    ("attention", "S", 128),  # sequence length: queries and keys
    ("transformer_block", "S", 96),  # the block's tokens
    ("conv_bias_relu", "N", 8),  # images
]


def _dynamic(sample: str, dim: str, hi: int):
    text = (SAMPLES / f"{sample}.mlir").read_text()
    dyn = dynamic_form(text, dim)
    with pytest.raises(CompileError, match="without a range") as e:
        load_program(dyn, dim_ranges={})
    names = str(e.value).split("dynamic dims ")[1].split(" without")[0].split(", ")
    module = load_program(dyn, dim_ranges={n: DimRange(1, hi) for n in names})
    return text, module, names


@pytest.mark.parametrize(("sample", "dim", "hi"), CASES, ids=[f"{s}-{d}" for s, d, _ in CASES])
def test_a_dynamic_sample_evaluates_as_the_sample_at_each_size(sample, dim, hi):
    text, module, names = _dynamic(sample, dim, hi)
    others = set(read_header(text).dims.values()) - {read_header(text).dims[dim]}
    sizes = [n for n in (*SIZES, hi) if n <= hi and n not in others]  # specialize needs distinct sizes
    for n in sizes:
        static = load_program(specialize(text, {dim: n}))
        inputs = random_inputs(static, seed=n)
        assert [x.shape for x in random_inputs(module, seed=n, sizes=dict.fromkeys(names, n))] == \
            [x.shape for x in inputs]  # fmt: skip
        got, want = evaluate(module, inputs), evaluate(static, inputs)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_array_equal(g, w)


UPSTREAM = """
func.func @f(%x: tensor<?x6xf32>, %b: tensor<6xf32>) -> tensor<?x2x3xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x6xf32>
  %init = tensor.empty(%rows) : tensor<?x6xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<?x6xf32>, tensor<6xf32>) outs(%init : tensor<?x6xf32>) {
    ^bb0(%a: f32, %c: f32, %o: f32):
      %s = arith.addf %a, %c : f32
      linalg.yield %s : f32
  } -> tensor<?x6xf32>
  %e = tensor.expand_shape %y [[0], [1, 2]] output_shape [%rows, 2, 3]
      : tensor<?x6xf32> into tensor<?x2x3xf32>
  return %e : tensor<?x2x3xf32>
}
"""


def test_an_upstream_dynamic_program_runs_at_its_argument_sizes():
    module = load_program(UPSTREAM, dim_ranges={"x.0": DimRange(1, 100)})
    assert declared_ranges(entry_function(module)) == {"x.0": DimRange(1, 100)}
    rng = np.random.default_rng(0)
    b = rng.standard_normal(6).astype(np.float32)
    for rows in (1, 5, 100):
        x = rng.standard_normal((rows, 6)).astype(np.float32)
        (y,) = evaluate(module, [x, b])
        np.testing.assert_array_equal(y, (x + b).reshape(rows, 2, 3))


def test_sizes_outside_the_declared_range_are_refused():
    module = load_program(UPSTREAM, dim_ranges={"x.0": DimRange(2, 8)})
    b = np.zeros(6, np.float32)
    for rows in (1, 9):
        with pytest.raises(CompileError, match=rf"x.0 = {rows}, outside its declared range 2:8"):
            evaluate(module, [np.zeros((rows, 6), np.float32), b])
    with pytest.raises(CompileError, match=r"argument 1 has shape \(7,\), expected \(6,\)"):
        evaluate(module, [np.zeros((3, 6), np.float32), np.zeros(7, np.float32)])


def test_dynamic_dims_that_disagree_at_run_time_are_a_located_error():
    """relu_add's x and y share their rows: numpy would broadcast one row silently."""
    text = dynamic_form((SAMPLES / "relu_add.mlir").read_text(), "M")
    module = load_program(text, dim_ranges={"x.0": DimRange(1, 64), "y.0": DimRange(1, 64)})
    x, y = np.ones((5, 300), np.float32), np.ones((1, 300), np.float32)
    with pytest.raises(CompileError, match=r"<input>:\d+:\d+: error: .*sizes of its dynamic dims disagree"):
        evaluate(module, [x, y])


def test_a_window_past_its_operand_at_run_time_is_a_located_error():
    """The conv's kernel size dynamic: a 13 x 13 filter over 19 x 23 images
    reads rows past the image (at load time a static program is checked)."""
    text = (SAMPLES / "conv_bias_relu.mlir").read_text()
    module = load_program(dynamic_form(text, "K"),
                          dim_ranges={"w.0": DimRange(1, 32), "w.1": DimRange(1, 32)})  # fmt: skip
    inputs = random_inputs(module, sizes={"w.0": 13, "w.1": 13})
    with pytest.raises(CompileError, match=r"reads index \d+ of dim 1 of operand 0, of size 19 at run time"):
        evaluate(module, inputs)


def test_declaring_ranges_names_what_is_missing_or_unknown():
    with pytest.raises(CompileError, match=r"dynamic dims x.0 without a range: declare each "
                                           r"\(dim_ranges=\{'x.0': DimRange\(LO, HI\)\}\)"):
        load_program(UPSTREAM, dim_ranges={})
    with pytest.raises(CompileError, match=r"no dynamic dim y.0 in @f \(its dynamic dims: x.0\)"):
        load_program(UPSTREAM, dim_ranges={"x.0": DimRange(1, 4), "y.0": DimRange(1, 4)})
    with pytest.raises(CompileError, match=r"has a dynamic shape"):
        load_program(UPSTREAM)  # no ranges: refused as before
    with pytest.raises(ValueError, match=r"sizes=\{'x.0'"):
        random_inputs(load_program(UPSTREAM, dim_ranges={"x.0": DimRange(1, 4)}))


KERNELS = {  # launches of each compiled dynamic form (the static sample's, less bundling)
    "softmax-M": 1, "softmax-N": 1, "layernorm-M": 1, "rmsnorm-M": 1,
    "linear_bias_relu-M": 1, "mlp-M": 2, "attention-S": 1,
    "transformer_block-S": 7, "conv_bias_relu-N": 1,
}  # fmt: skip
VARIANTS = {  # kernels planned for the sizes up to 128 (tile-and-fuse's VARIANT_SIZES)
    "softmax-N": {"fused_kernel_0_v0": (1, 128), "fused_kernel_0": (129, 512)},  # a row whole
    "linear_bias_relu-M": {"fused_kernel_0_v0": (1, 128), "fused_kernel_0": (129, 1024)},
    "mlp-M": {"fused_kernel_0_v0": (1, 128), "fused_kernel_0": (129, 256)},  # the first GEMM
}  # fmt: skip


def _launches(program) -> list[GroupOp]:
    """The groups a call launches one of: a variant stands in for its group."""
    return [g for g in program.module.walk() if isinstance(g, GroupOp) and VARIANT_OF not in g.attributes]


def _served(program) -> dict[str, tuple[int, ...]]:
    return {g.sym_name.data: tuple(g.attributes[SERVES].get_values())  # type: ignore[attr-defined]
            for g in program.module.walk() if isinstance(g, GroupOp) and SERVES in g.attributes}


def _sizes(hi: int) -> list[int]:
    return sorted({n for n in (*SIZES, 1, hi) if n <= hi})


@pytest.mark.parametrize(("sample", "dim", "hi"), CASES, ids=[f"{s}-{d}" for s, d, _ in CASES])
def test_a_dynamic_sample_compiles_once_and_its_kernels_run_at_each_size(sample, dim, hi):
    """One compiled program, every size: the kernels take the dynamic sizes at
    launch (masks on, grids from the sizes), and agree with the evaluator at 1, 2,
    primes, 2^k - 1, 2^k, 2^k + 1 and the range end."""
    text, module, names = _dynamic(sample, dim, hi)
    storage = read_header(text).dtype or "f32"
    program = compile_program(module)
    assert len(_launches(program)) == KERNELS[f"{sample}-{dim}"]
    assert _served(program) == VARIANTS.get(f"{sample}-{dim}", {})
    variants = [k for k in _served(program) if k not in {g.sym_name.data for g in _launches(program)}]
    assert len(program.kernels) == KERNELS[f"{sample}-{dim}"] + len(variants)
    assert "tile_grid [-1" in str(program.module) or "sizes(" in str(program.module)
    for n in _sizes(hi):
        inputs = random_inputs(module, seed=n, sizes=dict.fromkeys(names, n))
        got = program(*[on_device(np.asarray(x, np.float32)).to(TORCH[storage]) for x in inputs])
        for g, w in zip(got, evaluate(module, inputs), strict=True):
            assert tuple(g.shape) == w.shape, (n, g.shape, w.shape)
            err = relative_error(g.float().cpu().numpy(), w)
            assert err <= tolerance(storage), (sample, n, err)


def test_strides_over_a_dynamic_dim_are_specialised_only_when_aligned_at_every_size():
    """q's head and batch strides are S * 128 and 32 * S * 128: multiples of 16 at
    every S, which Triton's specialisation needs for vector loads (left to it: it
    never tells two sizes apart); with D = 24 (S * 24) they are not, and stay
    unspecialised."""
    text = specialize((SAMPLES / "attention.mlir").read_text(), {"H": 32, "D": 128})
    ranges = {n: DimRange(1, 512) for n in ("q.2", "k.2", "v.2")}
    aligned = compile_program(load_program(dynamic_form(text, "S"), dim_ranges=ranges)).source
    jit = next(s for s in aligned.splitlines() if "do_not_specialize" in s)
    assert "q_n2" in jit and "q_s0" not in jit and "q_s1" not in jit
    small = (SAMPLES / "attention.mlir").read_text()  # D = 24
    odd = compile_program(load_program(dynamic_form(small, "S"), dim_ranges=ranges)).source
    jit = next(s for s in odd.splitlines() if "do_not_specialize" in s)
    assert "q_s0" in jit and "q_s1" in jit and "q_s2" not in jit


def test_a_dynamic_kernel_takes_its_sizes_as_unspecialised_arguments():
    """The rows of a softmax: a size parameter Triton must not specialise (1 or a
    multiple of 16 would each be a compile of their own), masks against it, a grid
    from it; the host allocates the result from the argument's size."""
    _, module, _ = _dynamic("softmax", "M", 4096)
    source = compile_program(module).source
    # (y's rows are x's: one size on the host, a parameter of its own in the kernel,
    # so its store's mask is not the load's held across the loops: see
    # KernelPrinter._size_names)
    assert "@triton.jit(do_not_specialize=['x_n0', 'y_n0'])" in source
    assert "def fused_kernel_0(x_ptr, x_s0, x_s1, x_n0, y_ptr, y_s0, y_s1, y_n0):" in source
    assert "programs_0 = tl.cdiv(x_n0, 8)" not in source  # the outermost id: no modulo
    assert "offs0 = (pid * 8) + tl.arange(0, 8)" in source
    assert "(offs0[:, None] < x_n0)" in source
    assert "x_n0 = x.shape[0]" in source and "y = torch.empty((x_n0, 333)" in source
    assert "fused_kernel_0[(((x_n0 + 7) // 8),)]" in source


def test_a_dynamic_reduced_dim_held_whole_is_checked_against_its_block_at_launch():
    """softmax over a dynamic row length: the row is held whole in a block of the
    range end (512); the host refuses a size past it rather than read part of a row."""
    _, module, _ = _dynamic("softmax", "N", 512)
    program = compile_program(module)
    assert "x_n1 = x.shape[1]" in program.source and "if x_n1 > 512:" in program.source
    fn = program.python.softmax
    with pytest.raises(ValueError, match=r"holds a dynamic dim of size 600 whole in blocks of 512"):
        fn(on_device(torch.zeros((70, 600))))


def test_dynamic_sizes_a_kernel_reads_as_one_are_checked_to_agree_at_launch():
    """relu_add's x and y share their rows: the kernel masks each by its own size, so
    unequal rows would read zeros silently; the host refuses them."""
    text = dynamic_form((SAMPLES / "relu_add.mlir").read_text(), "M")
    module = load_program(text, dim_ranges={"x.0": DimRange(1, 64), "y.0": DimRange(1, 64)})
    program = compile_program(module)
    x = on_device(torch.ones((5, 300)))
    (z,) = program(x, x)
    assert torch.equal(z.cpu(), torch.full((5, 300), 2.0))
    with pytest.raises(ValueError, match=r"must agree differ: x.shape\[0\] = 5, y.shape\[0\] = 1"):
        program(x, on_device(torch.ones((1, 300))))


def test_the_host_reads_each_dynamic_size_of_its_arguments_once():
    """The transformer block's tokens: `x.shape[0]` read once, at the top; every size
    made from it (results, kernels' sizes, grids, the variant's size) is that name."""
    _, module, _ = _dynamic("transformer_block", "S", 1024)  # (variants at 128)
    source = compile_program(module).source
    host = source[source.index("def transformer_block("):]
    assert host.count(".shape[") == 1 and "    x_n0 = x.shape[0]\n" in host
    assert "    size = x_n0\n" in host


EXPAND_BY_OTHER = """func.func @f(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %nx = tensor.dim %x, %c0 : tensor<?xf32>
  %y2 = tensor.expand_shape %y [[0, 1]] output_shape [%nx, 4] : tensor<?xf32> into tensor<?x4xf32>
  %e = tensor.empty(%nx) : tensor<?xf32>
  %f = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%p: f32, %o: f32):
    linalg.yield %p : f32
  } -> tensor<?xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]} ins(%y2 : tensor<?x4xf32>) outs(%f : tensor<?xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %p, %o : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %z : tensor<?xf32>
}"""


def test_an_argument_expanded_by_another_arguments_size_is_checked_not_trusted():
    """y expanded to [x's rows, 4] (`output_shape` states what y must have): y's rows
    are not x's by construction, so the host still checks them at launch (a size
    taken on the expand's word read past y)."""
    module = load_program(EXPAND_BY_OTHER, dim_ranges={"x.0": DimRange(1, 64), "y.0": DimRange(4, 256)})
    program = compile_program(module)
    for nx, ny in [(5, 40), (64, 4)]:
        with pytest.raises(ValueError, match="must agree differ"):
            program(on_device(torch.zeros(nx)), on_device(torch.arange(ny, dtype=torch.float32)))
    inputs = random_inputs(module, seed=3, sizes={"x.0": 6, "y.0": 24})
    (got,) = program(*[on_device(torch.from_numpy(x)) for x in inputs])
    (want,) = evaluate(module, inputs)
    assert relative_error(got.cpu().numpy(), want) <= tolerance("f32")


STATIC_AXIS_DIM = """func.func @f(%x: tensor<?xf32>) -> (tensor<4x?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%m) : tensor<4x?xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?xf32>) outs(%e : tensor<4x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<4x?xf32>
  %n = tensor.dim %r, %c0 : tensor<4x?xf32>
  %e2 = tensor.empty(%n) : tensor<?xf32>
  %one = arith.constant 1.0 : f32
  %f2 = linalg.fill ins(%one : f32) outs(%e2 : tensor<?xf32>) -> tensor<?xf32>
  return %r, %f2 : tensor<4x?xf32>, tensor<?xf32>
}"""


def test_a_static_axis_read_by_tensor_dim_is_its_static_size():
    """`tensor.dim` of the static axis of a `4x?` result sizes another: 4, not the
    dynamic size its init was made with."""
    module = load_program(STATIC_AXIS_DIM, dim_ranges={"x.0": DimRange(1, 64)})
    program = compile_program(module)
    for n in (1, 3, 7, 33):
        inputs = random_inputs(module, seed=n, sizes={"x.0": n})
        got = program(*[on_device(torch.from_numpy(x)) for x in inputs])
        for g, w in zip(got, evaluate(module, inputs), strict=True):
            assert g.shape == w.shape, n
            assert relative_error(g.cpu().numpy(), w) <= tolerance("f32"), n


def test_an_argument_named_size_is_not_the_variants_size():
    """The host's local picking a variant is a fresh name: an argument `%size` stays."""
    text = """func.func @f(%size: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %size, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %z = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
      affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%size, %y : tensor<?x4xf32>, tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.subf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %z : tensor<?x4xf32>
}"""
    module = load_program(text, dim_ranges={"size.0": DimRange(1, 300), "y.0": DimRange(1, 300)})
    (z,) = compile_program(module)(on_device(torch.full((5, 4), 3.0)), on_device(torch.ones(5, 4)))
    assert torch.equal(z.cpu(), torch.full((5, 4), 2.0))


def test_a_call_outside_the_declared_range_is_refused():
    program = compile_program(load_program(UPSTREAM, dim_ranges={"x.0": DimRange(2, 8)}))
    b = on_device(torch.zeros(6))
    (y,) = program(on_device(torch.ones((3, 6))), b)
    assert tuple(y.shape) == (3, 2, 3)
    with pytest.raises(ArgumentError, match=r"x.0 = 9, outside its declared range 2:8"):
        program(on_device(torch.ones((9, 6))), b)
    with pytest.raises(ArgumentError, match=r"shape \['\?', 6\], not torch.float32 of shape \[3, 7\]"):
        program(on_device(torch.ones((3, 7))), b)


def test_dim_ranges_parse_from_the_command_line_form():
    assert parse_range("x.0=1:65536") == ("x.0", DimRange(1, 65536))
    for bad in ("x.0=1", "x.0", "=1:2", "x.0=a:b"):
        with pytest.raises(ValueError, match="NAME=LO:HI"):
            parse_range(bad)
    with pytest.raises(ValueError, match="1 <= LO <= HI"):
        parse_range("x.0=9:2")
    assert parse_range("x.0=16:4096:16") == ("x.0", DimRange(16, 4096, 16))
    assert str(DimRange(16, 4096, 16)) == "16:4096:16" and str(DimRange(1, 8)) == "1:8"
    with pytest.raises(ValueError, match="multiples of its divisor"):
        parse_range("x.0=1:4096:16")
    with pytest.raises(ValueError, match="NAME=LO:HI or NAME=LO:HI:DIVISOR"):
        parse_range("x.0=16:32:8:2")


def test_a_declared_divisor_is_kept_and_checked_at_every_call():
    """`16:64:16`: the sizes 16, 32, 48, 64 only; the attribute carries the divisor
    and a call with another size is refused (compiled program and evaluator)."""
    module = load_program(UPSTREAM, dim_ranges={"x.0": DimRange(16, 64, 16)})
    assert declared_ranges(entry_function(module)) == {"x.0": DimRange(16, 64, 16)}
    assert "x.0 = [#builtin.int<16>, #builtin.int<64>, #builtin.int<16>]" in str(module)
    program = compile_program(module)
    b = on_device(torch.zeros(6))
    (y,) = program(on_device(torch.ones((32, 6))), b)
    assert tuple(y.shape) == (32, 2, 3)
    with pytest.raises(ArgumentError, match=r"x.0 = 40, not a multiple of 16 \(its declared range 16:64:16\)"):
        program(on_device(torch.ones((40, 6))), b)
    with pytest.raises(CompileError, match=r"x.0 = 8, outside its declared range 16:64:16"):
        evaluate(module, [np.zeros((8, 6), np.float32), np.zeros(6, np.float32)])


def test_the_dynamic_form_of_a_sample_is_refused_where_a_constant_needs_the_size():
    text = (SAMPLES / "layernorm.mlir").read_text()
    with pytest.raises(SpecializeError, match="'1/N' depends on N"):
        dynamic_form(text, "N")
    with pytest.raises(SpecializeError, match="Unknown dimension 'Q'"):
        dynamic_form(text, "Q")


def _run(body: str, sig: str, ranges: dict[str, tuple[int, int]], *inputs):
    text = f"func.func @f({sig}) {{\n  %c0 = arith.constant 0 : index\n  %c1 = arith.constant 1 : index\n{body}\n}}"
    module = load_program(text, dim_ranges={k: DimRange(*v) for k, v in ranges.items()})
    return evaluate(module, list(inputs))


X = np.arange(20, dtype=np.float32).reshape(5, 4)


def test_upstream_view_and_copy_ops_run_at_dynamic_sizes():
    """collapse, expand, pad, a static slice of a dynamic source, a slice of two
    dynamic sizes, a keep-dim reduction: loaded (the load-time checks leave dynamic
    sizes to run time) and evaluated as numpy does."""
    (y,) = _run("""  %y = tensor.collapse_shape %x [[0, 1]] : tensor<?x4xf32> into tensor<?xf32>
  return %y : tensor<?xf32>""", "%x: tensor<?x4xf32>) -> (tensor<?xf32>", {"x.0": (1, 9)}, X)
    np.testing.assert_array_equal(y, X.reshape(-1))
    (y,) = _run("""  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %m = tensor.dim %x, %c1 : tensor<?x4xf32>
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 0] high[0, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<?x4xf32> to tensor<?x6xf32>
  %s = tensor.extract_slice %p[1, 0] [2, 4] [1, 1] : tensor<?x6xf32> to tensor<2x4xf32>
  return %s : tensor<2x4xf32>""", "%x: tensor<?x4xf32>) -> (tensor<2x4xf32>", {"x.0": (1, 9)}, X)
    np.testing.assert_array_equal(y, X[:2])
    y2 = np.ones((3, 2), np.float32)
    (y,) = _run("""  %n = tensor.dim %x, %c0 : tensor<?x?xf32>
  %m = tensor.dim %x, %c1 : tensor<?x?xf32>
  %s = tensor.extract_slice %x[0, 0] [%n, %m] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  return %s : tensor<?x?xf32>""", "%x: tensor<?x?xf32>) -> (tensor<?x?xf32>", {"x.0": (1, 9), "x.1": (1, 9)}, y2)
    np.testing.assert_array_equal(y, y2)
    (y,) = _run("""  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x1xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<?x1xf32>) -> tensor<?x1xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>],
      iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x4xf32>) outs(%i : tensor<?x1xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
  } -> tensor<?x1xf32>
  return %y : tensor<?x1xf32>""", "%x: tensor<?x4xf32>) -> (tensor<?x1xf32>", {"x.0": (1, 9)}, X)
    np.testing.assert_array_equal(y, X.sum(1, keepdims=True))


@pytest.mark.parametrize(("body", "sig", "message"), [
    ("""  %c = tensor.cast %x : tensor<?x4xf32> to tensor<1x4xf32>
  return %c : tensor<1x4xf32>""", "%x: tensor<?x4xf32>) -> (tensor<1x4xf32>",
     r"makes a \(5, 4\) tensor at run time, where its type is tensor<1x4xf32>"),
    ("""  %c5 = arith.constant 7 : index
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %m = arith.subi %n, %c5 : index
  %s = tensor.extract_slice %x[0, 0] [%m, 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
  return %s : tensor<?x4xf32>""", "%x: tensor<?x4xf32>) -> (tensor<?x4xf32>",
     r"reads \[0, -3\] step 1 of dim 0 \(size 5\) at run time: outside it, or empty"),
    ("""  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %s = tensor.extract_slice %x[%c1, 0] [%n, 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
  return %s : tensor<?x4xf32>""", "%x: tensor<?x4xf32>) -> (tensor<?x4xf32>",
     r"reads \[1, 5\] step 1 of dim 0 \(size 5\)"),
    ("""  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e = tensor.expand_shape %x [[0], [1, 2]] output_shape [%c1, 2, 2] : tensor<?x4xf32> into tensor<?x2x2xf32>
  return %e : tensor<?x2x2xf32>""", "%x: tensor<?x4xf32>) -> (tensor<?x2x2xf32>",
     r"expands \(5, 4\) into \(1, 2, 2\): the sizes differ at run time"),
    ("""  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %m = arith.subi %n, %n : index
  %e = tensor.empty(%m) : tensor<?x4xf32>
  return %e : tensor<?x4xf32>""", "%x: tensor<?x4xf32>) -> (tensor<?x4xf32>",
     r"makes a tensor of sizes \[0, 4\] at run time"),
    ("""  %y = tensor.concat dim(0) %x, %x2 : (tensor<?x4xf32>, tensor<?x?xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>""", "%x: tensor<?x4xf32>, %x2: tensor<?x?xf32>) -> (tensor<?x4xf32>",
     r"concatenates \[\(5, 4\), \(5, 3\)\] along dim 0: the other dims differ at run time"),
], ids=["cast", "negative-size", "past-the-end", "expand-groups", "zero-size", "concat"])  # fmt: skip
def test_a_dynamic_size_that_breaks_an_op_at_run_time_is_a_located_error(body, sig, message):
    inputs = [X] + ([np.ones((5, 3), np.float32)] if "%x2" in sig else [])
    ranges = {"x.0": (1, 9)} | ({"x2.0": (1, 9), "x2.1": (1, 9)} if "%x2" in sig else {})
    with pytest.raises(CompileError, match=rf"<input>:\d+:\d+: error: .*{message}"):
        _run(body, sig, ranges, *inputs)


def test_dim_names_that_collide_and_ranges_that_are_not_dim_ranges_are_refused():
    text = "func.func @f(%arg1: tensor<?xf32>, %1: tensor<?xf32>) -> tensor<?xf32> {\n  return %arg1 : tensor<?xf32>\n}"
    with pytest.raises(CompileError, match=r"two dynamic dims of @f are named arg1\.0"):
        load_program(text, dim_ranges={"arg1.0": DimRange(1, 4)})
    with pytest.raises(TypeError, match=r"DimRange\(lo, hi\)"):
        load_program(UPSTREAM, dim_ranges={"x.0": (1, 8)})  # type: ignore[dict-item]


def test_tilefuse_opt_compiles_a_dynamic_program_with_its_declared_range(tmp_path):
    from tilefuse.pipeline import DEFAULT_PIPELINE
    from tilefuse.tools.opt import main

    path = tmp_path / "f.mlir"
    path.write_text(UPSTREAM)
    out = tmp_path / "f.py"
    assert main([str(path), "--dim-range", "x.0=1:100", "-p", DEFAULT_PIPELINE,
                 "--emit", "triton", "-o", str(out)]) == 0  # fmt: skip
    assert "y = torch.empty((x_n0, 6)" in out.read_text()
    assert main([str(path), "--dim-range", "x.0=1"]) == 1


GEMM = """func.func @lin(%x: tensor<?x64xf32>, %w: tensor<64x512xf32>) -> tensor<?x512xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %x, %c0 : tensor<?x64xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m) : tensor<?x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x512xf32>) -> tensor<?x512xf32>
  %y = linalg.matmul ins(%x, %w : tensor<?x64xf32>, tensor<64x512xf32>) outs(%f : tensor<?x512xf32>) -> tensor<?x512xf32>
  return %y : tensor<?x512xf32>
}"""


def test_a_dynamic_gemm_in_grouped_program_order_covers_every_tile(monkeypatch):
    """Grouped order over a run-time count of M tiles (the last group of rows
    partial): the L2 simulation made to prefer it, every output tile written once."""
    from tilefuse.analysis import tile_plan

    monkeypatch.setattr(tile_plan, "_order_misses", lambda *a: {"row": 2, "grouped": 1})
    program = compile_program(load_program(GEMM, dim_ranges={"x.0": DimRange(1, 4096)}))
    assert "first_m = group * 8" in program.source and "tl.cdiv(x_n0" in program.source
    gen = torch.Generator().manual_seed(0)
    w = torch.randn((64, 512), generator=gen)
    for m in (1, 5, 130, 1100):
        x = torch.randn((m, 64), generator=gen)
        (y,) = program(on_device(x), on_device(w))
        torch.testing.assert_close(y.cpu(), x @ w, rtol=1e-4, atol=1e-4)


def test_the_report_of_a_dynamic_program_says_where_it_is_priced():
    from tilefuse.report import analyze_program, format_report

    _, module, _ = _dynamic("softmax", "M", 4096)
    text = format_report(analyze_program(module, "h200"))
    assert "dynamic dims x.0 in 1:4096: priced and tiled at 4096 (a kernel whose sizes reach further, at its own largest)" in text
    assert "grid ?," in text



# Found by an adversarial review of the dynamic path: each once a miscompile, a
# crash or invalid IR.

KEEPDIM = """func.func @f(%x: tensor<?x4xf32>) -> tensor<?x1xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<?x1xf32>
  %i = linalg.fill ins(%z : f32) outs(%e : tensor<?x1xf32>) -> tensor<?x1xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>],
      iterator_types = ["parallel", "reduction"]} ins(%x : tensor<?x4xf32>) outs(%i : tensor<?x1xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %a, %o : f32
      linalg.yield %s : f32
  } -> tensor<?x1xf32>
  return %y : tensor<?x1xf32>
}"""

CONCAT = """func.func @f(%x: tensor<2x?xf32>, %y: tensor<2x3xf32>, %z: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %r = tensor.concat dim(1) %x, %y : (tensor<2x?xf32>, tensor<2x3xf32>) -> tensor<2x?xf32>
  %c1 = arith.constant 1 : index
  %n = tensor.dim %z, %c1 : tensor<2x?xf32>
  %e = tensor.empty(%n) : tensor<2x?xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%r, %z : tensor<2x?xf32>, tensor<2x?xf32>) outs(%e : tensor<2x?xf32>) {
    ^bb0(%a: f32, %b: f32, %o2: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<2x?xf32>
  return %o : tensor<2x?xf32>
}"""

MIXED = """func.func @f(%x: tensor<?x4xf32>, %y: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<8x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%x, %y : tensor<?x4xf32>, tensor<8x4xf32>) outs(%e : tensor<8x4xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %s = arith.addf %a, %b : f32
      linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}"""

GATHER = """func.func @f(%t: tensor<?x8xf32>, %ids: tensor<4xi64>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<4xi64>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%id: i64, %o: f32):
      %ii = arith.index_cast %id : i64 to index
      %j = linalg.index 1 : index
      %v = tensor.extract %t[%ii, %j] : tensor<?x8xf32>
      linalg.yield %v : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}"""

PAD = """func.func @f(%x: tensor<?x4xf32>) -> tensor<?x6xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[1, 0] high[0, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<?x4xf32> to tensor<?x6xf32>
  return %p : tensor<?x6xf32>
}"""

SPLIT_INVERSE = """func.func @f(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = tensor.dim %x, %c0 : tensor<?x?xf32>
  %b = tensor.dim %x, %c1 : tensor<?x?xf32>
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<?x?xf32> into tensor<?xf32>
  %e = tensor.expand_shape %c [[0, 1]] output_shape [%b, %a] : tensor<?xf32> into tensor<?x?xf32>
  %o = tensor.empty(%b, %a) : tensor<?x?xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%e : tensor<?x?xf32>) outs(%o : tensor<?x?xf32>) {
    ^bb0(%v: f32, %w: f32):
      %s = arith.addf %v, %v : f32
      linalg.yield %s : f32
  } -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}"""


def test_a_keep_dim_sum_over_dynamic_rows_keeps_its_sizes_through_the_unit_dim_fold():
    """fold-unit-dims' expand back to [?, 1] says its dynamic size (tensor.dim of the
    sum), as does a reshaped fill: verify refuses a stage that drops one."""
    program = compile_program(load_program(KEEPDIM, dim_ranges={"x.0": DimRange(1, 64)}))
    for n in (1, 17, 64):
        x = torch.randn((n, 4))
        (y,) = program(on_device(x))
        torch.testing.assert_close(y.cpu(), x.sum(1, keepdim=True))


def test_a_concat_with_a_dynamic_piece_stays_a_host_concat():
    program = compile_program(load_program(CONCAT, dim_ranges={"x.1": DimRange(1, 64),
                                                                "z.1": DimRange(4, 67)}))  # fmt: skip
    for n in (1, 7, 17):
        x, y, z = torch.randn((2, n)), torch.randn((2, 3)), torch.randn((2, n + 3))
        (r,) = program(*map(on_device, (x, y, z)))
        torch.testing.assert_close(r.cpu(), torch.cat([x, y], 1) + z)


def test_a_dynamic_size_read_along_a_static_loop_is_checked_against_it():
    """x [?, 4] + y [8, 4] into [8, 4]: the kernel's rows are 8; x must have 8."""
    program = compile_program(load_program(MIXED, dim_ranges={"x.0": DimRange(1, 64)}))
    (r,) = program(on_device(torch.ones((8, 4))), on_device(torch.ones((8, 4))))
    assert torch.equal(r.cpu(), torch.full((8, 4), 2.0))
    for n in (3, 20):
        with pytest.raises(ValueError, match=rf"x.shape\[0\] = {n} must be 8 here"):
            program(on_device(torch.ones((n, 4))), on_device(torch.ones((8, 4))))


def test_a_reshape_to_two_dynamic_sizes_takes_them_from_the_program():
    """The host reshapes to the expand's `output_shape` (here the transposed sizes:
    no -1 could say which), a collapse to the product of its source's sizes."""
    program = compile_program(load_program(SPLIT_INVERSE, dim_ranges={"x.0": DimRange(1, 16),
                                                                      "x.1": DimRange(1, 16)}))
    assert "e = c.reshape((b, a,))" in program.source
    for a, b in [(1, 16), (3, 5), (16, 7)]:
        x = on_device(torch.randn(a, b))
        (y,) = program(x)
        torch.testing.assert_close(y.cpu(), (x.cpu() * 2).reshape(b, a))


def test_gather_from_a_table_of_dynamic_rows_masks_to_the_run_time_size():
    """A gather's index into a dynamic dim is masked to the kernel's size parameter
    of that dim (fold-concats' RoPE reads a dynamic-length Q this way)."""
    module = load_program(GATHER, dim_ranges={"t.0": DimRange(1, 64)})
    program = compile_program(module)
    assert "< t_n0)" in program.source
    for n in (1, 2, 5, 17, 64):
        table = torch.randn(n, 8, generator=torch.Generator().manual_seed(n))
        ids = torch.randint(0, n, (4,), generator=torch.Generator().manual_seed(n + 1))
        (got,) = program(on_device(table), on_device(ids))
        assert torch.equal(got.cpu(), table[ids])


def test_constant_pad_of_a_dynamic_tensor_by_static_amounts():
    """A pad of a tensor of dynamic rows by static amounts, the dynamic dim padded too:
    the host fills a tensor of the grown size and assigns the source into it."""
    module = load_program(PAD, dim_ranges={"x.0": DimRange(1, 64)})
    program = compile_program(module)
    for n in (1, 2, 17, 64):
        x = torch.randn(n, 4, generator=torch.Generator().manual_seed(n))
        (got,) = program(on_device(x))
        assert torch.equal(got.cpu(), torch.nn.functional.pad(x, (0, 2, 1, 0)))


def test_dynamic_padding_amounts_are_a_located_refusal():
    text = PAD.replace("low[1, 0] high[0, 2]", "low[%n, 0] high[0, 2]").replace(
        "  %z = arith.constant 0.0 : f32\n",
        "  %z = arith.constant 0.0 : f32\n  %c0 = arith.constant 0 : index\n"
        "  %n = tensor.dim %x, %c0 : tensor<?x4xf32>\n")
    module = load_program(text, dim_ranges={"x.0": DimRange(1, 64)})
    with pytest.raises(CompileError, match=r"<input>:\d+:\d+: error: 'tensor.pad' op pads with "
                                           r"dynamic sizes"):  # fmt: skip
        compile_program(module)


def test_a_tensor_made_without_its_dynamic_sizes_is_a_located_error():
    """The check every stage's verify runs on a dynamic module (xDSL's verifier does not)."""
    text = "func.func @f(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {\n  %e = tensor.empty() : tensor<?x4xf32>\n  return %e : tensor<?x4xf32>\n}"
    with pytest.raises(CompileError, match=r"<input>:2:3: error: 'tensor.empty' op makes a "
                                           r"tensor<\?x4xf32> with 0 of its 1 dynamic size"):
        load_program(text, dim_ranges={"x.0": DimRange(1, 4)})


def test_the_report_shows_each_variant_and_the_sizes_it_serves():
    from tilefuse.report import analyze_program, format_report

    _, module, _ = _dynamic("mlp", "M", 256)
    report = analyze_program(module, "h200")
    tiles = dict(report.tiles)
    assert tiles["fused_kernel_0_v0"].endswith("; serves sizes 1..128 (a variant of fused_kernel_0)")
    assert tiles["fused_kernel_0"].endswith("; serves sizes 129..256")
    assert tiles["fused_kernel_0_v0"].split(";")[0] != tiles["fused_kernel_0"].split(";")[0]
    text = format_report(report)
    assert "1 kernel variant(s) tiled for smaller sizes" in text
    assert "serves sizes 1..128" in text


def test_a_variant_is_launched_for_the_sizes_it_serves():
    """The host picks the kernel from the launch's largest dynamic size (the
    numerics of both sides of 128: test_a_dynamic_sample_compiles_once...)."""
    _, module, _ = _dynamic("mlp", "M", 256)
    program = compile_program(module)
    lines = program.source.splitlines()
    at = next(i for i, s in enumerate(lines) if "if size <= 128:" in s)
    assert "fused_kernel_0_v0[" in lines[at + 1] and lines[at + 2].strip() == "else:"
    assert "fused_kernel_0[" in lines[at + 3]


CAUSAL = """    %r0 = arith.mulf %sv, %scale : f32
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %keep = arith.cmpi ule, %j, %i : index
    %r = arith.select %keep, %r0, %neg_inf : f32
    linalg.yield %r : f32"""


def test_a_dynamic_causal_attention_stops_its_key_loop_at_the_run_time_size():
    """The flash kernel's key loop runs to the keys there are (`k_n2`, not the
    planning size: a 4x longer loop at a quarter of the range, masked), and under a
    causal mask to the tile's diagonal; through the kernels at each size."""
    text = (SAMPLES / "attention.mlir").read_text()
    text = text.replace("    %r = arith.mulf %sv, %scale : f32\n    linalg.yield %r : f32", CAUSAL)
    ranges = {n: DimRange(1, 200) for n in ("q.2", "k.2", "v.2")}
    module = load_program(dynamic_form(text, "S"), dim_ranges=ranges)
    program = compile_program(module)
    assert len(_launches(program)) == 1
    source = program.source
    assert "for k in range(0, 200" not in source and "k_n2" in source
    lines = source[source.index("def fused_kernel_0("):].splitlines()
    loops = [i for i, s in enumerate(lines) if s.strip().startswith("for k")]
    assert len(loops) == 2 and all("200" not in lines[i] for i in loops), loops
    # below the diagonal and inside the keys there are: neither mask in the first loop
    first = lines[loops[0] + 1 : loops[1]]
    assert not any("k_n2" in s or ', float("-inf"))' in s for s in first), first  # (no select)
    assert any("< k_n2)" in s for s in lines[loops[1] + 1 :])
    for n in (1, 2, 17, 64, 65, 130, 200):
        inputs = random_inputs(module, seed=n, sizes=dict.fromkeys(ranges, n))
        (got,) = program(*[on_device(np.asarray(x, np.float32)) for x in inputs])
        (want,) = evaluate(module, inputs)
        assert relative_error(got.cpu().numpy(), want) <= tolerance("f32"), n


def _derived(name: str, op: str, c: str, t: str) -> str:
    """`%name = q <op> c` elementwise, its init sized from q's dynamic dim."""
    m = "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>"
    return f"""  %{name}_e = tensor.empty(%tf_dyn_S) : {t}
  %{name} = linalg.generic {{indexing_maps = [{m}, {m}], iterator_types = ["parallel", "parallel",
      "parallel", "parallel"]}} ins(%q : {t}) outs(%{name}_e : {t}) {{
  ^bb0(%a: f32, %b: f32):
    %c_{name} = arith.constant {c} : f32
    %r_{name} = arith.{op} %a, %c_{name} : f32
    linalg.yield %r_{name} : f32
  }} -> {t}
"""


def test_a_dynamic_causal_self_attention_splits_its_keys_at_the_diagonal_alone():
    """Keys and queries of one sequence (K and V computed from Q, sized from Q's
    dim): the whole chunks below the diagonal are inside the keys there are, so
    the split is the diagonal's alone, no `min` with the key count (a run-time
    count there cost a third of GPT-2's attention on the H200: docs/PERF.md);
    the numbers through the kernels at each size."""
    text = (SAMPLES / "attention.mlir").read_text()
    text = text.replace("    %r = arith.mulf %sv, %scale : f32\n    linalg.yield %r : f32", CAUSAL)
    t = "tensor<2x3x?x24xf32>"
    dyn = dynamic_form(text, "S").replace(f"(%q: {t}, %k: {t}, %v: {t})", f"(%q: {t})")
    dyn = dyn.replace("// tilefuse.args: q, k, v", "// tilefuse.args: q")
    size = f"  %tf_dyn_S = tensor.dim %q, %tf_dyn_c2 : {t}\n"
    dyn = dyn.replace(size, size + _derived("k", "mulf", "0.5", t) + _derived("v", "addf", "1.0", t))
    module = load_program(dyn, dim_ranges={"q.2": DimRange(1, 200)})
    program = compile_program(module)
    source = program.source
    main = [s.strip() for s in source.splitlines() if s.strip().startswith("for k")]
    assert len(main) == 2, main
    split = "((tl.maximum(((pid_2 * 32) + 1), 0) // 32) * 32)"
    assert main[0] == f"for k in range(0, {split}, 32):", main
    assert re.match(rf"for k_\d+ in range\({re.escape(split)}, tl.minimum\(q_n2, ", main[1]), main  # (one size)
    for n in (1, 2, 17, 31, 32, 33, 64, 65, 130, 200):
        inputs = random_inputs(module, seed=n, sizes={"q.2": n})
        (got,) = program(*[on_device(np.asarray(x, np.float32)) for x in inputs])
        (want,) = evaluate(module, inputs)
        assert relative_error(got.cpu().numpy(), want) <= tolerance("f32"), n


def test_a_sliced_and_expanded_self_attention_splits_at_the_diagonal_alone():
    """GPT-2's form: Q, K and V slices of one [T, 48] input, each expanded to
    [1, T, 2, 8] (T alone in its group but for a 1: the source's rows) and transposed:
    one sequence, so the split takes no min with the key count; numbers at each size."""
    text = (Path(__file__).parent / "programs_dynamic" / "causal_self_attention_sliced_qkv.mlir").read_text()
    module = load_program(text, dim_ranges={"x.0": DimRange(1, 64)})
    program = compile_program(module)
    loops = [s.strip() for s in program.source.splitlines() if s.strip().startswith("for k")]
    assert loops[0] == "for k in range(0, ((tl.maximum(((pid_2 * 32) + 1), 0) // 32) * 32), 32):", loops
    for n in (1, 2, 31, 32, 33, 64):
        inputs = random_inputs(module, seed=n, sizes={"x.0": n})
        (got,) = program(*[on_device(torch.from_numpy(x)) for x in inputs])
        (want,) = evaluate(module, inputs)
        assert relative_error(got.cpu().numpy(), want) <= tolerance("f32"), n


def test_a_dynamic_attention_loops_over_its_whole_key_chunks_unmasked():
    """The key loop over a dynamic S: the whole chunks first, with no mask on K and
    V or the scores (the keys there are), then the last chunk masked, as a branch
    (it runs once or not at all: no loop for Triton to pipeline); the numbers
    through both at each size: test_a_dynamic_sample_compiles_once..."""
    _, module, _ = _dynamic("attention", "S", 128)
    source = compile_program(module).source
    lines = source[source.index("def fused_kernel_0("):].splitlines()
    loops = [i for i, s in enumerate(lines) if s.strip().startswith(("for k", "if ((k_n2"))]
    assert len(loops) == 2, loops
    assert "range(0, ((k_n2 // " in lines[loops[0]]
    assert lines[loops[1]].strip() == "if ((k_n2 // 32) * 32) < k_n2:", lines[loops[1]]
    first = lines[loops[0] + 1 : loops[1]]
    assert not any("k_n2" in s for s in first), first  # (D = 24 in tiles of 32: its mask stays)
    assert any("< k_n2)" in s for s in lines[loops[1] + 1 :])


def test_a_dynamic_gemm_keeps_the_persistent_tma_lowering():
    """A dynamic M: the Hopper lowering's persistent loop over the run-time tile
    count (the host launches at most the planned programs, one per tile when there
    are fewer), TMA descriptors of the run-time shape; through the kernels at sizes
    below and above one wave of tiles."""
    # (N = 1024: 128 x 256 tiles, four a row of 128; 256 at M = 8192, more than the SMs)
    text = specialize((SAMPLES / "linear_bias_relu.mlir").read_text(), {"K": 128, "N": 1024}, "bf16")
    module = load_program(dynamic_form(text, "M"), dim_ranges={"x.0": DimRange(1, 8192)})
    program = compile_program(module)
    source = program.source
    main = source[source.index("def fused_kernel_0("):]
    assert "x_desc = tl.make_tensor_descriptor(x_ptr, shape=[x_n0, 128]" in main
    assert "programs_0 = tl.cdiv(x_n0, 128)" in main
    assert "for tile_id in tl.range(pid, (programs_0 * 4), 132, flatten=True):" in main
    assert "fused_kernel_0[(min(4 * ((x_n0 + 127) // 128), 132),)](" in source
    for m in (129, 300, 33 * 128 + 5):  # (4 x 2 and 4 x 3 tiles; 4 x 34: more tiles than programs)
        inputs = random_inputs(module, seed=m, sizes={"x.0": m})
        (got,) = program(*[on_device(torch.from_numpy(x)).to(torch.bfloat16) for x in inputs])
        (want,) = evaluate(module, inputs)
        assert relative_error(got.float().cpu().numpy(), want) <= tolerance("bf16"), m


def test_a_kernel_is_planned_at_its_own_largest_size():
    """GPT-2's rows are batch x tokens: a kernel over `8 x T` rows with T in 1..256
    is planned at 2048 rows (its tiles and variants), not at 256."""
    text = """func.func @f(%x: tensor<8x?x64xf32>, %w: tensor<64x32xf32>) -> tensor<?x32xf32> {
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<8x?x64xf32> into tensor<?x64xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %c, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %y = linalg.matmul ins(%c, %w : tensor<?x64xf32>, tensor<64x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}"""
    module = load_program(text, dim_ranges={"x.1": DimRange(1, 256)})
    program = compile_program(module)
    groups = [g for g in program.module.walk() if isinstance(g, GroupOp)]
    main = next(g for g in groups if VARIANT_OF not in g.attributes)
    assert main.attributes["tilefuse.planning_size"].data == 2048  # type: ignore[attr-defined]
    assert _served(program)[main.sym_name.data][1] == 2048
    for t in (1, 17, 256):
        inputs = random_inputs(module, seed=t, sizes={"x.1": t})
        (got,) = program(*[on_device(torch.from_numpy(x)) for x in inputs])
        (want,) = evaluate(module, inputs)
        assert relative_error(got.cpu().numpy(), want) <= tolerance("f32"), t


def test_a_declared_divisor_takes_the_masks_off_a_dynamic_dim():
    """S in 64:256:64 with key and query tiles of 32: every tile lies inside, so the
    kernel masks nothing against the run-time sizes and its key loop has no masked
    last chunk (without the divisor it does); through the kernels at each size."""
    text = (SAMPLES / "attention.mlir").read_text()
    names = ("q.2", "k.2", "v.2")
    plain = compile_program(load_program(dynamic_form(text, "S"),
                                         dim_ranges=dict.fromkeys(names, DimRange(1, 256)))).source  # fmt: skip
    module = load_program(dynamic_form(text, "S"), dim_ranges=dict.fromkeys(names, DimRange(64, 256, 64)))
    program = compile_program(module)
    kernel = program.source[program.source.index("def fused_kernel_0("):]
    assert "(tile 1x1x32x32(loop)x32x32" in program.source or "tile 1x1x32x32(loop)x32x32" in program.source
    assert "< q_n2" in plain and "< k_n2" in plain
    for size in ("q_n2", "k_n2", "v_n2", "out_n2"):
        assert f"< {size})" not in kernel, size
    assert kernel.count("for k") == 1  # (one key loop: no masked last chunk)
    for s in (64, 128, 192, 256):
        inputs = random_inputs(module, seed=s, sizes=dict.fromkeys(names, s))
        (got,) = program(*[on_device(torch.from_numpy(x)) for x in inputs])
        (want,) = evaluate(module, inputs)
        assert relative_error(got.cpu().numpy(), want) <= tolerance("f32"), s


SUM_TWO_DIMS = """func.func @sum2(%x: tensor<2x?x65536xf32>) -> tensor<2xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2xf32>) -> tensor<2xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i)>],
      iterator_types = ["parallel", "reduction", "reduction"]} ins(%x : tensor<2x?x65536xf32>) outs(%f : tensor<2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<2xf32>
  return %y : tensor<2xf32>
}"""


def test_a_loop_over_several_dims_one_of_them_dynamic():
    """A sum over a dynamic dim and a long static one: one flat loop over both,
    its trip count the run-time chunks of the dynamic dim times the static ones."""
    module = load_program(SUM_TWO_DIMS, dim_ranges={"x.1": DimRange(1, 4096)})
    program = compile_program(module)
    main = program.source[program.source.index("def fused_kernel_0("):]
    assert "for k in range(0, ((x_n1 // 1) * 2), 1):" in main
    for n in (1, 3, 17):
        inputs = random_inputs(module, seed=n, sizes={"x.1": n})
        (got,) = program(*[on_device(torch.from_numpy(x)) for x in inputs])
        (want,) = evaluate(module, inputs)
        assert relative_error(got.cpu().numpy(), want) <= tolerance("f32"), n


BROADCAST_ROWS = """func.func @bcast(%x: tensor<?x8xf32>, %w: tensor<4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%w : tensor<4xf32>) outs(%e : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}"""


def test_a_kernel_sized_by_an_input_it_does_not_read_takes_that_size_alone():
    """Rows of a broadcast as many as x has: no input is read along them, the
    output's empty was sized from x; the kernel takes neither x (no pointer, no
    strides) nor x's size, which its body never names (`KernelSignature.host_sizes`):
    y's rows, x's at run time, are its own parameter (`_size_names`)."""
    module = load_program(BROADCAST_ROWS, dim_ranges={"x.0": DimRange(1, 64)})
    program = compile_program(module)
    assert "def fused_kernel_0(w_ptr, w_s0, y_ptr, y_s0, y_s1, y_n0):" in program.source
    assert "](w, *w.stride(), y, *y.stride(), x_n0, num_warps" in program.source
    for n in (1, 5, 64):
        inputs = random_inputs(module, seed=n, sizes={"x.0": n})
        (got,) = program(*[on_device(torch.from_numpy(x)) for x in inputs])
        (want,) = evaluate(module, inputs)
        assert got.shape == (n, 4) and relative_error(got.cpu().numpy(), want) <= tolerance("f32"), n


QKV = (Path(__file__).parent / "programs_dynamic" / "qkv_projections.mlir").read_text()


def test_independent_dynamic_gemms_of_one_program_share_a_launch_at_every_variant():
    """Q, K and V projections of one input with a dynamic token count: each variant
    level is one stacked kernel (a member per projection, `pid // share` with the
    share from the run-time tile count; the persistent level's share the least of
    its tiles and its third of the programs), one launch a call whichever variant
    serves; through the kernels at sizes each level serves, on either side of
    one wave of tiles."""
    module = load_program(QKV, dim_ranges={"x.0": DimRange(1, 8192)})
    program = compile_program(module)
    (launch,) = _launches(program)
    assert len(launch.results) == 3
    assert _served(program) == {"fused_kernel_0_v0": (1, 128), "fused_kernel_0_v1": (129, 1024),
                                "fused_kernel_0": (1025, 8192)}  # fmt: skip
    assert len(program.kernels) == 3  # (one per level, each stacking the three projections)
    source = program.source
    assert "seg = pid // (programs_0 * 32)" in source  # (the first level: run-time programs)
    # (the persistent level, planned at 4096 tokens, the middle of 1025..8192: 128 x 128
    # tiles, four a row of 128)
    assert "share = min((programs_0 * 4), 44)" in source
    assert "fused_kernel_0[(3 * min(4 * ((x_n0 + 127) // 128), 44),)](" in source
    assert '"""Run @qkv: 1 kernel launch(es)."""' in source
    for m in (1, 77, 129, 700, 1025, 33 * 128 + 5):
        inputs = random_inputs(module, seed=m, sizes={"x.0": m})
        got = program(*[on_device(torch.from_numpy(x)).to(torch.bfloat16) for x in inputs])
        for g, w in zip(got, evaluate(module, inputs), strict=True):
            assert relative_error(g.float().cpu().numpy(), w) <= tolerance("bf16"), m


TWO_INPUTS = """func.func @f(%x: tensor<?x128xbf16>, %y: tensor<?x128xbf16>, %wq: tensor<128x512xbf16>, %wk: tensor<128x512xbf16>, %wv: tensor<128x512xbf16>) -> (tensor<?x512xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : bf16
  %n = tensor.dim %x, %c0 : tensor<?x128xbf16>
  %ex = tensor.empty(%n) : tensor<?x512xbf16>
  %fx = linalg.fill ins(%z : bf16) outs(%ex : tensor<?x512xbf16>) -> tensor<?x512xbf16>
  %m = tensor.dim %y, %c0 : tensor<?x128xbf16>
  %ey = tensor.empty(%m) : tensor<?x512xbf16>
  %fy = linalg.fill ins(%z : bf16) outs(%ey : tensor<?x512xbf16>) -> tensor<?x512xbf16>
  %q = linalg.matmul ins(%x, %wq : tensor<?x128xbf16>, tensor<128x512xbf16>) outs(%fx : tensor<?x512xbf16>) -> tensor<?x512xbf16>
  %k = linalg.matmul ins(%y, %wk : tensor<?x128xbf16>, tensor<128x512xbf16>) outs(%fy : tensor<?x512xbf16>) -> tensor<?x512xbf16>
  %v = linalg.matmul ins(%y, %wv : tensor<?x128xbf16>, tensor<128x512xbf16>) outs(%fy : tensor<?x512xbf16>) -> tensor<?x512xbf16>
  return %q, %k, %v : tensor<?x512xbf16>, tensor<?x512xbf16>, tensor<?x512xbf16>
}"""


def test_kernels_of_one_program_on_sizes_of_their_own_keep_their_launches():
    """The same program over x's rows and over y's: their program counts may differ
    at a call, so only the two over y's rows stack (and all run right with x and y
    of different sizes)."""
    module = load_program(TWO_INPUTS, dim_ranges={"x.0": DimRange(1, 512), "y.0": DimRange(1, 512)})
    program = compile_program(module)
    assert [len(g.results) for g in _launches(program)] == [1, 2]
    inputs = random_inputs(module, seed=3, sizes={"x.0": 40, "y.0": 300})
    got = program(*[on_device(torch.from_numpy(x)).to(torch.bfloat16) for x in inputs])
    for g, w in zip(got, evaluate(module, inputs), strict=True):
        assert tuple(g.shape) == w.shape
        assert relative_error(g.float().cpu().numpy(), w) <= tolerance("bf16")


def test_a_module_printed_with_its_ranges_reads_back_without_declaring_them_again():
    """`tilefuse-opt` prints the declared ranges on the function
    (`tilefuse.dim_ranges`): a cut of the pipeline reads back as it was; a range
    that is not one is a located error."""
    module = load_program(UPSTREAM, dim_ranges={"x.0": DimRange(2, 64, 2)})
    again = load_program(str(module))
    assert declared_ranges(entry_function(again)) == {"x.0": DimRange(2, 64, 2)}
    broken = str(module).replace("#builtin.int<64>", "#builtin.int<0>")
    with pytest.raises(CompileError, match=r"tilefuse.dim_ranges: the range of x.0 .*1 <= LO <= HI"):
        load_program(broken)


TWO_DYNAMIC_BRANCHES = """func.func @two(%x: tensor<?x32xf32>, %y: tensor<?x32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x32xf32>
  %m = tensor.dim %y, %c0 : tensor<?x32xf32>
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %f = tensor.empty(%m) : tensor<?x32xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x32xf32>) outs(%e : tensor<?x32xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.tanh %p : f32
    linalg.yield %t : f32
  } -> tensor<?x32xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]} ins(%y : tensor<?x32xf32>) outs(%f : tensor<?x32xf32>) {
  ^bb0(%p: f32, %o: f32):
    %t = math.exp %p : f32
    linalg.yield %t : f32
  } -> tensor<?x32xf32>
  return %a, %b : tensor<?x32xf32>, tensor<?x32xf32>
}"""


@pytest.mark.parametrize("second", ["exp", "tanh"])
def test_branches_of_run_time_program_counts(second):
    """Two kernels over rows of two independent dynamic sizes: one launch of the sum
    of their run-time program counts, each branch's bound the count before it. The
    same program twice (tanh, tanh) is two branches too, not a stack: a stack counts
    every member's programs by the first's (it ran y's first x-many rows only)."""
    text = TWO_DYNAMIC_BRANCHES.replace("math.exp", f"math.{second}")
    module = load_program(text, dim_ranges={"x.0": DimRange(1, 4096), "y.0": DimRange(1, 4096)})
    program = compile_program(module)
    assert len(program.kernels) == 1 and "if pid < " in program.source
    for n, k in [(1, 1), (1, 300), (257, 3), (64, 64), (1000, 17)]:
        x = torch.randn(n, 32, generator=torch.Generator().manual_seed(n))
        y = torch.randn(k, 32, generator=torch.Generator().manual_seed(k + 1))
        a, b = program(on_device(x), on_device(y))
        torch.testing.assert_close(a.cpu(), torch.tanh(x), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(b.cpu(), getattr(torch, second)(y), rtol=1e-5, atol=1e-6)


SHIFTED = """func.func @f(%x: tensor<?x8xf32>, %buf: tensor<40x8xf32>) -> (tensor<?x8xf32>, tensor<1x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x8xf32>
  %m = arith.subi %n, %c1 : index
  %next = tensor.extract_slice %x[1, 0] [%m, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
  %prev = tensor.extract_slice %x[0, 0] [%m, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
  %e = tensor.empty(%m) : tensor<?x8xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
      affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%next, %prev : tensor<?x8xf32>, tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  %row = tensor.extract_slice %buf[%m, 0] [1, 8] [1, 1] : tensor<40x8xf32> to tensor<1x8xf32>
  %e2 = tensor.empty() : tensor<1x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%row : tensor<1x8xf32>) outs(%e2 : tensor<1x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<1x8xf32>
  return %d, %r : tensor<?x8xf32>, tensor<1x8xf32>
}"""


def test_slices_at_offsets_and_sizes_from_the_run_time_size_are_host_views():
    """`x[1:] - x[:-1]` of a dynamic dim (offset 1, size n - 1) and a row of a static
    buffer at the dynamic offset n - 1: host views; the kernels match the evaluator
    at each size; the buffer's row stays inside it over the whole range, and a
    range that would take it past the end is refused where the slice is."""
    module = load_program(SHIFTED, dim_ranges={"x.0": DimRange(2, 40)})
    program = compile_program(module)
    assert len(_launches(program)) == 1  # (the two kernels side by side: horizontal fusion)
    for n in (2, 3, 17, 40):
        inputs = random_inputs(module, seed=n, sizes={"x.0": n})
        got = program(*[on_device(torch.from_numpy(x)) for x in inputs])
        want = evaluate(module, inputs)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g.cpu().numpy(), w)
    with pytest.raises(CompileError, match=r"<input>:16:\d+: error: 'tensor.extract_slice' op slices dim 0 "
                       r"\(size 40\) from a dynamic offset to sizes 1 to 1, not inside it"):  # fmt: skip
        compile_program(load_program(SHIFTED, dim_ranges={"x.0": DimRange(2, 41)}))


def test_a_host_slice_outside_its_dynamic_source_is_a_located_error_at_the_call():
    """x[1:n] of an x of n rows reads one row past the end: Python's slice would
    clamp it; the host checks it at each call and raises, located."""
    text = SHIFTED.replace("[%m, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>\n  %prev",
                           "[%n, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>\n  %prev")
    text = text.replace("%prev = tensor.extract_slice %x[0, 0] [%m, 8]", "%prev = tensor.extract_slice %x[0, 0] [%n, 8]")
    text = text.replace("%e = tensor.empty(%m)", "%e = tensor.empty(%n)")
    program = compile_program(load_program(text, dim_ranges={"x.0": DimRange(2, 40)}))
    x, buf = on_device(torch.ones(5, 8)), on_device(torch.ones(40, 8))
    with pytest.raises(RuntimeCheckError, match=r"<input>:6:\d+: error: runtime check failed: slices a dim "
                       r"outside its source at this call's sizes \(dim 0: offset 1, size 5, step 1 of 5\)"):  # fmt: skip
        program(x, buf)


STATIC_SLICE_OF_DYNAMIC = """func.func @f(%x: tensor<?x8xf32>) -> tensor<2x8xf32> {
  %s = tensor.extract_slice %x[3, 0] [2, 8] [1, 1] : tensor<?x8xf32> to tensor<2x8xf32>
  %e = tensor.empty() : tensor<2x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
      iterator_types = ["parallel", "parallel"]} ins(%s : tensor<2x8xf32>) outs(%e : tensor<2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}"""


def test_a_static_slice_of_a_dynamic_dim_is_checked_unless_the_range_holds_it():
    """Rows 3:5 of x: at 4 rows the view would have one row and the kernel read past
    x; the host checks at each call. Declared at 5 rows or more, no check is printed."""
    program = compile_program(load_program(STATIC_SLICE_OF_DYNAMIC, dim_ranges={"x.0": DimRange(1, 40)}))
    x = on_device(torch.randn(9, 8))
    np.testing.assert_array_equal(program(x)[0].cpu().numpy(), (x[3:5] ** 2).cpu().numpy())
    with pytest.raises(RuntimeCheckError, match=r"<input>:2:\d+: error: runtime check failed: slices a dim "
                       r"outside its source at this call's sizes \(dim 0: offset 3, size 2, step 1 of 4\)"):  # fmt: skip
        program(on_device(torch.randn(4, 8)))
    held = compile_program(load_program(STATIC_SLICE_OF_DYNAMIC, dim_ranges={"x.0": DimRange(5, 40)}))
    assert "slices a dim" not in held.source


DEAD_HOST_SIZES = """func.func @f(%x: tensor<8x?xf32>) -> tensor<8x?xf32> {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = tensor.dim %x, %c1 : tensor<8x?xf32>
  %n8 = arith.muli %n, %c8 : index
  %m = arith.divui %n8, %c8 : index
  %c = tensor.collapse_shape %x [[0, 1]] : tensor<8x?xf32> into tensor<?xf32>
  %e = tensor.empty(%n8) : tensor<?xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%c : tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%p: f32, %o: f32):
    %s = arith.addf %p, %p : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %r = tensor.expand_shape %d [[0, 1]] output_shape [8, %m] : tensor<?xf32> into tensor<8x?xf32>
  return %r : tensor<8x?xf32>
}
"""


def test_the_host_computes_no_size_nothing_reads():
    """GPT-2's `8 * T // 8`, the expand's `output_shape`: the host reshapes to -1, so
    neither the quotient nor what only it read is computed at each call."""
    program = compile_program(load_program(DEAD_HOST_SIZES, dim_ranges={"x.1": DimRange(1, 64)}))
    host = program.source[program.source.index("def f("):]
    assert not re.search(r"^    \w+ = .*( \* | // )", host, re.M), host
    for n in (1, 5, 64):
        x = on_device(torch.randn(8, n))
        (y,) = program(x)
        torch.testing.assert_close(y.cpu(), x.cpu() * 2)


def _unread_parameters(source: str) -> dict[str, list[str]]:
    """Per kernel of `source`, the parameters its body never names."""
    unread = {}
    for m in re.finditer(r"\ndef (fused_kernel_\w+)\((.*?)\):\n(.*?)(?=\n\S)", source, re.S):
        params = [p.split(":")[0].strip() for p in m.group(2).split(",")]
        unread[m.group(1)] = [p for p in params if not re.search(rf"\b{p}\b", m.group(3))]
    return unread


def test_a_kernel_takes_no_size_it_does_not_read():
    """The transformer block's kernels see the tokens' count through their tensors'
    rows; the count itself (`x_n0`) is read by the host for the variant, not passed
    to kernels that never name it (every launch of a dynamic program paid for it)."""
    _, module, _ = _dynamic("transformer_block", "S", 1024)
    source = compile_program(module).source
    unread = _unread_parameters(source)
    assert unread and all(not re.search(r"_n\d+$", p) for ps in unread.values() for p in ps), unread
    program = compile_program(load_program(DEAD_HOST_SIZES, dim_ranges={"x.1": DimRange(1, 200)}))
    assert _unread_parameters(program.source) == {"fused_kernel_0_v0": [], "fused_kernel_0": []}
    assert "size = max(c_n0, x_n1)" in program.source  # (the variant still picks on both)
    for n in (100, 200):  # (past the first variant's 128 elements)
        x = on_device(torch.randn(8, n))
        torch.testing.assert_close(program(x)[0].cpu(), x.cpu() * 2)


def test_each_range_of_sizes_is_planned_at_its_middle_unless_it_holds_a_row_whole():
    """The transformer block's tokens 1..4096: its GEMMs' ranges 1..128, 129..1024 and
    1025..4096 planned at 128 (the first range at its top), 512 and 2048 (planned at
    4096, the FC2's 128 x 256 tiles were 64 at 2048 tokens on 132 SMs: 0.87x the static
    build); the static plan at 2048 is the last range's. A softmax over a dynamic row
    holds it whole: planned at the top."""
    text = specialize((SAMPLES / "transformer_block.mlir").read_text(),
                      {"E": 1024, "H": 16, "Dh": 64, "F": 4096}, "bf16")  # fmt: skip
    program = compile_program(load_program(dynamic_form(text, "S"), dim_ranges={"x.0": DimRange(1, 4096)}),
                              target="h100")  # fmt: skip
    groups = {g.sym_name.data: g for g in program.module.walk() if isinstance(g, GroupOp)}
    planned = {n: g.attributes[PLANNING_SIZE_ATTR].data for n, g in groups.items()}  # type: ignore[attr-defined]
    served = _served(program)
    gemm = "fused_kernel_8"  # (FC2: 4096 -> 1024, + the residual)
    assert [served[f"{gemm}_v0"], served[f"{gemm}_v1"], served[gemm]] == [(1, 128), (129, 1024), (1025, 4096)]
    assert [planned[f"{gemm}_v0"], planned[f"{gemm}_v1"], planned[gemm]] == [128, 512, 2048]
    static = compile_program(specialize(text, {"S": 2048}, None), target="h100")
    tiles = [line for line in static.source.splitlines() if line.startswith("# tile")]
    dynamic = program.source[program.source.index(f"# {gemm}: "):]
    assert dynamic.splitlines()[1].split(", grid")[0] == tiles[-1].split(", grid")[0]
    rows = compile_program(load_program(dynamic_form((SAMPLES / "softmax.mlir").read_text(), "N"),
                                        dim_ranges={"x.1": DimRange(1, 512)}))  # fmt: skip
    assert {g.sym_name.data: g.attributes[PLANNING_SIZE_ATTR].data  # type: ignore[attr-defined]
            for g in rows.module.walk() if isinstance(g, GroupOp)} == {"fused_kernel_0_v0": 128, "fused_kernel_0": 512}


@pytest.mark.parametrize("op", ["divsi", "floordivsi", "ceildivsi"])
def test_a_size_the_host_cannot_compute_is_a_located_error(op):
    """Index arithmetic on sizes is add, sub, mul and divui (exact on Python's ints and
    Triton's alike); a signed division's rounding of negatives differs between the two."""
    text = DEAD_HOST_SIZES.replace("arith.divui", f"arith.{op}")
    with pytest.raises(CompileError, match=rf"<input>:6:3: error: 'arith.{op}' op computes a size the host "
                                           r"cannot: sizes are computed with addi, subi, muli, divui"):  # fmt: skip
        compile_program(load_program(text, dim_ranges={"x.1": DimRange(1, 64)}))


def test_ranges_with_one_plan_merge_and_keep_the_point_that_plan_was_made_at():
    """A small GEMM (K 64, N 32) whose plans at 128 and at 512 agree: one kernel for
    1..1024, planned at 128 (the first range's top), not at the merged range's middle
    (32: 32-row tiles neither range was planned with)."""
    text = specialize((SAMPLES / "linear_bias_relu.mlir").read_text(), {"K": 64, "N": 32}, "bf16")
    program = compile_program(load_program(dynamic_form(text, "M"), dim_ranges={"x.0": DimRange(1, 1024)}),
                              target="h100")  # fmt: skip
    (group,) = [g for g in program.module.walk() if isinstance(g, GroupOp)]
    assert group.attributes[PLANNING_SIZE_ATTR].data == 128  # type: ignore[attr-defined]
    assert "# tile 16x16x64, grid ?x2" in program.source
