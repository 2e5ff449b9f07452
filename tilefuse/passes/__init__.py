"""
The pass registry: every pass `tilefuse-opt -p` knows, by name.

Passes of our own live one per file in this package; a few general-purpose
xDSL passes (canonicalize, cse, dce) are registered alongside. Passes are imported
when first asked for (`tools/universe.py` offers ours to `xdsl-opt`).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from xdsl.passes import ModulePass

PASSES = {
    "inline-calls": "tilefuse.passes.inline_calls:InlineCallsPass",
    "drop-unused-results": "tilefuse.passes.drop_unused_results:DropUnusedResultsPass",
    "fold-host-scalars": "tilefuse.passes.fold_host_scalars:FoldHostScalarsPass",
    "fold-asserts": "tilefuse.passes.fold_asserts:FoldAssertsPass",
    "fold-reshape-of-creation":
        "tilefuse.passes.fold_reshape_of_creation:FoldReshapeOfCreationPass",
    "decompose-softmax": "tilefuse.passes.decompose_softmax:DecomposeSoftmaxPass",
    "fold-unit-dims": "tilefuse.passes.fold_unit_dims:FoldUnitDimsPass",
    "linalg-generalize": "tilefuse.passes.linalg_generalize:LinalgGeneralizePass",
    "scalar-operands": "tilefuse.passes.scalar_operands:ScalarOperandsPass",
    "fold-transposes": "tilefuse.passes.fold_transposes:FoldTransposesPass",
    "propagate-reshapes": "tilefuse.passes.propagate_reshapes:PropagateReshapesPass",
    "fold-concats": "tilefuse.passes.fold_concats:FoldConcatsPass",
    "narrow-variance": "tilefuse.passes.narrow_variance:NarrowVariancePass",
    "hoist-operand-scale": "tilefuse.passes.hoist_operand_scale:HoistOperandScalePass",
    "fold-operand-extf": "tilefuse.passes.fold_operand_extf:FoldOperandExtfPass",
    "split-accumulator-init": "tilefuse.passes.split_accumulator_init:SplitAccumulatorInitPass",
    "fold-windows": "tilefuse.passes.fold_windows:FoldWindowsPass",
    "split-reduction": "tilefuse.passes.split_reduction:SplitReductionPass",
    "flash-attention": "tilefuse.passes.flash_attention:FlashAttentionPass",
    "resolve-dims": "tilefuse.passes.resolve_dims:ResolveDimsPass",
    "fusion-groups": "tilefuse.passes.fusion_groups:FusionGroupsPass",
    "merge-positions": "tilefuse.passes.merge_positions:MergePositionsPass",
    "tile-and-fuse": "tilefuse.passes.tile_and_fuse:TileAndFusePass",
    "fold-softmax-scale": "tilefuse.passes.fold_softmax_scale:FoldSoftmaxScalePass",
    "horizontal-fusion": "tilefuse.passes.horizontal_fusion:HorizontalFusionPass",
    "choose-layouts": "tilefuse.passes.choose_layouts:ChooseLayoutsPass",
    "canonicalize": "xdsl.transforms.canonicalize:CanonicalizePass",
    "cse": "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination",
    "dce": "xdsl.transforms.dead_code_elimination:DeadCodeElimination",
}
"""Pass name -> "module:class" (imported when first asked for)."""


def load_object(path: str) -> Any:
    """The object a `"module:name"` path names, importing its module."""
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory returning the pass class (imported lazily)."""
    return {name: functools.partial(load_object, path) for name, path in PASSES.items()}
