"""The optional autotuner: candidates, picks, the cache, and numerics of every candidate."""

from pathlib import Path

import numpy as np
import pytest

from tests.device import on_device
from tilefuse.analysis.cost.target import get_target
from tilefuse.analysis.dataflow import build_graph, shared_dims
from tilefuse.analysis.tile_plan import plan_tiles, tile_candidates
from tilefuse.frontend.program import load_program, random_inputs
from tilefuse.oracle.compare import relative_error, tolerance
from tilefuse.oracle.reference import evaluate
from tilefuse.pipeline import run_pipeline
from tilefuse.runtime import autotune as at

SAMPLES = Path(__file__).parent.parent / "samples"


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEFUSE_CACHE", str(tmp_path))


def front(name, dims=None, dtype=None):
    module = load_program(SAMPLES / f"{name}.mlir", dims, dtype)
    return run_pipeline(module, until="fusion-groups")


@pytest.mark.parametrize(
    ("name", "dims"),
    [("layernorm", {"M": 16384, "N": 4096}), ("linear_bias_relu", {"M": 8192, "K": 4096, "N": 4096})],
)
def test_candidates_start_with_the_model_plan_and_fit(name, dims):
    h200 = get_target("h200")
    (group,) = at._groups(front(name, dims, "bf16"))
    graph = build_graph(group.entry)
    sd = shared_dims(graph, graph.nodes)
    cands = tile_candidates(graph, sd, h200, limit=4)
    assert cands[0] == plan_tiles(graph, sd, h200)
    assert 2 <= len(cands) <= 4 and len(set(cands)) == len(cands)
    for c in cands:
        assert c.working_set <= h200.smem_per_block
        assert c.regs_per_thread <= h200.max_regs_per_thread


def inputs_for(name, dims=None, dtype=None):
    module = load_program(SAMPLES / f"{name}.mlir", dims, dtype)
    arrays = random_inputs(module, 3)
    return module, arrays, [on_device(np.asarray(a, np.float32)) for a in arrays]


@pytest.mark.parametrize("name", ["softmax", "linear_bias_relu", "four_layernorms"])
def test_every_candidate_computes_the_same(name):
    module, arrays, tensors = inputs_for(name)
    f = front(name)
    counts = at._candidate_counts(f, "h200", at.DEFAULT_LIMIT)
    refs = evaluate(module, arrays)
    for i in range(max(counts.values())):
        picks = {n: i for n, c in counts.items() if c > i}
        prog = at._build(f, picks, "h200", horizontal=True)
        for out, ref in zip(prog(*tensors), refs, strict=True):
            assert relative_error(out.cpu().numpy(), ref) <= tolerance("f32"), (name, i)


def test_picks_the_fastest_and_caches():
    _, _, tensors = inputs_for("softmax")
    calls = []

    def timer(fn):
        # pretend the last candidate tried is always the fastest
        fn()
        calls.append(fn)
        return 1.0 / len(calls)

    prog, result = at.autotune(SAMPLES / "softmax.mlir", tensors, timer=timer)
    assert not result.cached and len(calls) >= 2
    (name,) = result.picks
    assert result.picks[name] == len(result.times[name]) - 1
    assert "candidate" in result.format()
    # the second call reads the cache: nothing timed, same program
    again, cached = at.autotune(SAMPLES / "softmax.mlir", tensors, timer=timer)
    assert cached.cached and cached.picks == result.picks and len(calls) == len(result.times[name])
    assert again.source == prog.source
    assert "tile_candidate" in str(again.module)


def test_out_of_range_candidate_is_an_error():
    from xdsl.dialects.builtin import IntegerAttr, i64

    from tilefuse.ir.diagnostics import CompileError

    f = front("relu_add")
    (g,) = at._groups(f)
    g.tile_candidate = IntegerAttr(99, i64)
    with pytest.raises(CompileError, match="has tile_candidate 99, but only"):
        at._build(f, {}, "h200", horizontal=False)


def test_parallel_compile_warms_every_kernel_and_restores_them():
    """`compile_in_parallel` runs the host function with stand-ins that queue each
    kernel's `warmup` (compile, no launch) with the launch's grid and arguments."""
    import types

    from tilefuse.runtime.compiled import compile_in_parallel

    class FakeKernel:
        def __init__(self):
            self.warmed, self.launched = [], 0

        def warmup(self, *args, grid, **kwargs):
            self.warmed.append((grid, args, kwargs))

        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                self.launched += 1

            return launch

    module = types.SimpleNamespace(KERNELS=["k0", "k1"], k0=FakeKernel(), k1=FakeKernel())
    originals = (module.k0, module.k1)

    def host(x):
        module.k0[(4,)](x, num_warps=4)
        module.k1[(2,)](x, x, num_warps=8)

    compile_in_parallel(module, host, ("t",))
    assert (module.k0, module.k1) == originals
    assert module.k0.warmed == [((4,), ("t",), {"num_warps": 4})]
    assert module.k1.warmed == [((2,), ("t", "t"), {"num_warps": 8})]
    assert module.k0.launched == module.k1.launched == 0


def test_parallel_compile_of_a_program_without_kernels():
    """A program that only returns its arguments (or reshapes them) has no kernels."""
    import types

    from tilefuse.runtime.compiled import compile_in_parallel

    calls = []
    compile_in_parallel(types.SimpleNamespace(KERNELS=[]), lambda x: calls.append(x), ("t",))
    assert calls == []
