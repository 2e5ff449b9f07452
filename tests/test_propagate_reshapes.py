"""`propagate-reshapes`: the cluster it plans (decided before any rewrite), and
the meaning it keeps on the golden file's functions (reference evaluator before
and after the pass)."""


import numpy as np
import pytest
from xdsl.dialects import tensor
from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.linalg import ops as linalg
from xdsl.pattern_rewriter import PatternRewriteWalker

from tests.golden import golden_functions, results_around
from tilefuse.frontend.parse import parse_module
from tilefuse.ir import log
from tilefuse.ir.context import make_context
from tilefuse.passes.propagate_reshapes import (
    ComposeReshapes,
    PropagateReshapesPass,
    plan,
    plan_cluster,
    plan_expansion,
)


def _chunks() -> dict[str, str]:
    return golden_functions("propagate_reshapes.mlir")


def _module(name: str) -> ModuleOp:
    return parse_module(make_context(), _chunks()[name])


def _first(module: ModuleOp, kind):
    return next(o for o in module.walk() if isinstance(o, kind))


def test_a_keepdim_cluster_is_the_division_alone():
    module = _module("keepdim")
    expand = _first(module, tensor.ExpandShapeOp)
    reader = next(iter(expand.result.uses)).operation
    members = plan_cluster(reader, {(0, 1)})
    assert members == {reader: {(0, 1)}}


def test_a_linear_cluster_reaches_back_to_the_bias_add_and_on_to_the_residual():
    module = _module("linear")
    expand = _first(module, tensor.ExpandShapeOp)
    gelu = next(iter(expand.result.uses)).operation
    members = plan_cluster(gelu, {(0, 1)})
    assert members is not None and len(members) == 2  # the tanh and the residual add
    assert all(runs == {(0, 1)} for runs in members.values())


def test_a_run_the_producer_reads_apart_plans_no_cluster():
    module = _module("split_run")
    transpose = _first(module, linalg.GenericOp)
    assert plan_cluster(transpose, {(0, 1)}) is None


def test_a_refused_plan_says_which_generic_and_why():
    module = _module("split_run")
    transpose = _first(module, linalg.GenericOp)
    members, why = plan(transpose, {(0, 1)})
    assert members is None and "reads a run split or out of order" in why, why


def test_the_views_log_gives_every_decision_with_its_reason(capsys):
    log.configure("views")
    try:
        for name in ("linear", "split_run"):
            PropagateReshapesPass().apply(make_context(), _module(name))
    finally:
        log.configure("")
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith("[tilefuse.views] @linear: folded ") and "collapsed 2 generic(s)" in line
               for line in lines), lines  # fmt: skip
    assert any(line.startswith("[tilefuse.views] @split_run: kept ") and "split or out of order" in line
               for line in lines), lines  # fmt: skip


def test_an_expansion_cluster_takes_the_generics_a_split_loop_reaches():
    module = _module("grouped_heads")
    PatternRewriteWalker(ComposeReshapes()).rewrite_module(module)  # K's two views as one
    k = next(o for o in module.walk() if isinstance(o, tensor.CollapseShapeOp)
             and isinstance(o.src.owner, linalg.GenericOp) and o.result.uses)  # fmt: skip
    matmul = next(iter(k.result.uses)).operation
    members, why = plan_expansion(matmul, {0: [1, 2, 2]})
    assert why == "" and members is not None
    # the matmul and the scores' reader; not the fill (filled again) nor the broadcast (read whole)
    assert sorted(len(m.iterator_types) for m in members) == [3, 4], members
    assert all(splits == {0: [1, 2, 2]} for splits in members.values())


def test_a_refused_expansion_says_which_generic_and_why():
    """A reader of the split loop's index joins (its index linearised); expanding the
    matmul alone is refused, saying which generic would have to join."""
    module = _module("grouped_heads_index")
    collapse = _first(module, tensor.CollapseShapeOp)
    matmul = next(iter(collapse.result.uses)).operation
    members, why = plan_expansion(matmul, {0: [2, 2]})
    assert members is not None and len(members) == 2, why
    members, why = plan_expansion(matmul, {0: [2, 2]}, alone=True)
    assert members is None and "expands" in why, why


@pytest.mark.parametrize("name", sorted(_chunks()))
def test_the_pass_keeps_the_meaning(name):
    before, after = results_around(_chunks()[name], PropagateReshapesPass())
    for b, a in zip(before, after, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_every_layer_of_a_deep_program_is_expanded():
    """One round expands every cluster (a round per cluster ran out of the 64-round
    cap: an 80-layer model kept its last layers' broadcasts materialised)."""
    text = _chunks()["grouped_heads"]
    layers = "\n".join(text.replace("@grouped_heads(", f"@layer{n}(") for n in range(70))
    module = parse_module(make_context(), layers)
    PropagateReshapesPass().apply(make_context(), module)
    left = [o for o in module.walk() if isinstance(o, tensor.CollapseShapeOp)
            and isinstance(o.src.owner, linalg.GenericOp) and o.result.uses
            and any(isinstance(u.operation, linalg.GenericOp) for u in o.result.uses)]  # fmt: skip
    assert not left, f"{len(left)} broadcasts still collapsed for a generic"
