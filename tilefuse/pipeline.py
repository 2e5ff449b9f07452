"""
The default pipeline: the one ordered list of stages, and the one way to run it.

```
inline-calls -> drop-unused-results -> fold-host-scalars -> fold-asserts -> fold-reshape-of-creation
    -> decompose-softmax -> linalg-generalize -> fold-unit-dims -> scalar-operands -> fold-transposes
    -> fold-concats -> propagate-reshapes -> narrow-variance -> hoist-operand-scale -> fold-operand-extf
    -> split-accumulator-init -> fold-windows
    -> split-reduction{target}
    -> flash-attention -> resolve-dims -> fusion-groups{target} -> merge-positions
    -> tile-and-fuse{target} -> horizontal-fusion{target}
    -> choose-layouts
    -> (emit triton)
```

`STAGES` is that list. Everything that compiles (`tilefuse-run`, `tilefuse.runtime`,
`tilefuse-opt --emit triton` and `--report`, autotuning, the benchmarks, the tests)
runs it through `run_pipeline`, whole or cut with `start`/`until`;
`python -m tilefuse.pipeline` prints it as a `-p` string
(`tilefuse-opt FILE -p "$(python -m tilefuse.pipeline)"`).

Some stages leave a mark a later stage needs (calls inlined, ops generalised, ops
grouped, groups tiled); `unmet_stage` names the first such stage a module has not been
through, so a printer handed a cut pipeline's output can say what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tilefuse.frontend.parse import verify
from tilefuse.ir import forms
from tilefuse.ir.context import make_context
from tilefuse.ir.dynamic import is_dynamic
from tilefuse.passes.choose_layouts import ChooseLayoutsPass
from tilefuse.passes.decompose_softmax import DecomposeSoftmaxPass
from tilefuse.passes.drop_unused_results import DropUnusedResultsPass
from tilefuse.passes.flash_attention import FlashAttentionPass
from tilefuse.passes.fold_asserts import FoldAssertsPass
from tilefuse.passes.fold_concats import FoldConcatsPass
from tilefuse.passes.fold_host_scalars import FoldHostScalarsPass
from tilefuse.passes.fold_operand_extf import FoldOperandExtfPass
from tilefuse.passes.fold_reshape_of_creation import FoldReshapeOfCreationPass
from tilefuse.passes.fold_transposes import FoldTransposesPass
from tilefuse.passes.fold_unit_dims import FoldUnitDimsPass
from tilefuse.passes.fold_windows import FoldWindowsPass
from tilefuse.passes.fusion_groups import FusionGroupsPass
from tilefuse.passes.hoist_operand_scale import HoistOperandScalePass
from tilefuse.passes.horizontal_fusion import HorizontalFusionPass
from tilefuse.passes.inline_calls import InlineCallsPass
from tilefuse.passes.linalg_generalize import LinalgGeneralizePass
from tilefuse.passes.merge_positions import MergePositionsPass
from tilefuse.passes.narrow_variance import NarrowVariancePass
from tilefuse.passes.propagate_reshapes import PropagateReshapesPass
from tilefuse.passes.resolve_dims import ResolveDimsPass
from tilefuse.passes.scalar_operands import ScalarOperandsPass
from tilefuse.passes.split_accumulator_init import SplitAccumulatorInitPass
from tilefuse.passes.split_reduction import SplitReductionPass
from tilefuse.passes.tile_and_fuse import TileAndFusePass


def _no_calls(module: ModuleOp) -> bool:
    return forms.first_call(module) is None


def _generalized(module: ModuleOp) -> bool:
    return forms.first_named_op(module) is None


def _grouped(module: ModuleOp) -> bool:
    return forms.first_ungrouped_generic(module) is None


def _tiled(module: ModuleOp) -> bool:
    return forms.first_untiled_group(module) is None


@dataclass(frozen=True)
class Stage:
    """One stage of the default pipeline: its pass, and what it leaves behind."""

    name: str
    """The pass's name on the command line."""
    make: Callable[..., ModulePass]
    """The pass class; called with `target=` when `targeted`, and the stage's options."""
    targeted: bool = False
    """The pass takes the GPU target as its `target` option."""
    done: Callable[[ModuleOp], bool] | None = None
    """True once a module has been through the stage (None: nothing later needs it)."""

    def create(self, target: str, options: Mapping[str, Any] | None = None) -> ModulePass:
        kwargs = dict(options or {})
        if self.targeted:
            kwargs.setdefault("target", target)
        return self.make(**kwargs)

    def spec(self, target: str) -> str:
        return f"{self.name}{{target={target}}}" if self.targeted else self.name


STAGES: tuple[Stage, ...] = (
    Stage("inline-calls", InlineCallsPass, done=_no_calls),
    Stage("drop-unused-results", DropUnusedResultsPass),
    Stage("fold-host-scalars", FoldHostScalarsPass),
    Stage("fold-asserts", FoldAssertsPass),
    Stage("fold-reshape-of-creation", FoldReshapeOfCreationPass),
    Stage("decompose-softmax", DecomposeSoftmaxPass),
    Stage("linalg-generalize", LinalgGeneralizePass, done=_generalized),
    Stage("fold-unit-dims", FoldUnitDimsPass),
    Stage("scalar-operands", ScalarOperandsPass),
    Stage("fold-transposes", FoldTransposesPass),
    Stage("fold-concats", FoldConcatsPass),
    Stage("propagate-reshapes", PropagateReshapesPass),
    Stage("narrow-variance", NarrowVariancePass),
    Stage("hoist-operand-scale", HoistOperandScalePass),
    Stage("fold-operand-extf", FoldOperandExtfPass),
    Stage("split-accumulator-init", SplitAccumulatorInitPass),
    Stage("fold-windows", FoldWindowsPass),
    Stage("split-reduction", SplitReductionPass, targeted=True),
    Stage("flash-attention", FlashAttentionPass),
    Stage("resolve-dims", ResolveDimsPass),
    Stage("fusion-groups", FusionGroupsPass, targeted=True, done=_grouped),
    Stage("merge-positions", MergePositionsPass),
    Stage("tile-and-fuse", TileAndFusePass, targeted=True, done=_tiled),
    Stage("horizontal-fusion", HorizontalFusionPass, targeted=True),
    Stage("choose-layouts", ChooseLayoutsPass),
)
"""The default pipeline, in order."""

STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)


def _index(name: str) -> int:
    if name not in STAGE_NAMES:
        raise ValueError(f"no stage named '{name}'; the stages are {', '.join(STAGE_NAMES)}")
    return STAGE_NAMES.index(name)


def select_stages(start: str | None = None, until: str | None = None) -> tuple[Stage, ...]:
    """The stages from `start` through `until` (both included; None: the ends)."""
    first = 0 if start is None else _index(start)
    last = len(STAGES) - 1 if until is None else _index(until)
    return STAGES[first : last + 1]


def default_pipeline(target: str = "h200", start: str | None = None,
                     until: str | None = None) -> str:  # fmt: skip
    """The pipeline (or a cut of it) as a `-p` string."""
    return ",".join(s.spec(target) for s in select_stages(start, until))


DEFAULT_PIPELINE = default_pipeline()


def run_pipeline(
    module: ModuleOp,
    target: str = "h200",
    *,
    start: str | None = None,
    until: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    after_each: Callable[[str, ModuleOp], None] | None = None,
) -> ModuleOp:
    """Apply the stages `start`..`until` to `module` in place, verifying after each.

    `options` maps a stage name to its pass options
    (`{"tile-and-fuse": {"smem_budget": 4096}}`); `after_each(name, module)` is called
    after every stage (dumps, timing)."""
    options = options or {}
    unknown = sorted(set(options) - set(STAGE_NAMES))
    if unknown:
        raise ValueError(f"no stage named '{unknown[0]}'; the stages are {', '.join(STAGE_NAMES)}")
    dynamic = is_dynamic(module)  # `?` sizes stay in the types (ir/dynamic.py)
    ctx = make_context()
    for stage in select_stages(start, until):
        stage.create(target, options.get(stage.name)).apply(ctx, module)
        verify(module, dynamic=dynamic)
        if after_each is not None:
            after_each(stage.name, module)
    return module


def unmet_stage(module: ModuleOp, stages: Sequence[Stage] = STAGES) -> str | None:
    """The first of `stages` whose mark `module` lacks, or None."""
    for stage in stages:
        if stage.done is not None and not stage.done(module):
            return stage.name
    return None


if __name__ == "__main__":
    print(DEFAULT_PIPELINE)
