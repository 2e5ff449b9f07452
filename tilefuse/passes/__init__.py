"""
The pass registry: every pass `tilefuse-opt -p` knows, by name.

Passes of our own live one per file in this package; a few general-purpose
xDSL passes (canonicalize, cse, dce) are registered alongside. `UNIVERSE` offers
ours, the `tilefuse` dialect and the `triton` target to `xdsl-opt` (the
`xdsl.universe` entry point in pyproject.toml); it imports nothing until asked.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable

from xdsl.ir import Dialect
from xdsl.passes import ModulePass
from xdsl.universe import Universe
from xdsl.utils.target import Target

PASSES = {
    "inline-calls": "tilefuse.passes.inline_calls:InlineCallsPass",
    "fold-host-scalars": "tilefuse.passes.fold_host_scalars:FoldHostScalarsPass",
    "fold-reshape-of-creation":
        "tilefuse.passes.fold_reshape_of_creation:FoldReshapeOfCreationPass",
    "decompose-softmax": "tilefuse.passes.decompose_softmax:DecomposeSoftmaxPass",
    "fold-unit-dims": "tilefuse.passes.fold_unit_dims:FoldUnitDimsPass",
    "linalg-generalize": "tilefuse.passes.linalg_generalize:LinalgGeneralizePass",
    "scalar-operands": "tilefuse.passes.scalar_operands:ScalarOperandsPass",
    "fold-transposes": "tilefuse.passes.fold_transposes:FoldTransposesPass",
    "fold-windows": "tilefuse.passes.fold_windows:FoldWindowsPass",
    "split-reduction": "tilefuse.passes.split_reduction:SplitReductionPass",
    "flash-attention": "tilefuse.passes.flash_attention:FlashAttentionPass",
    "fusion-groups": "tilefuse.passes.fusion_groups:FusionGroupsPass",
    "tile-and-fuse": "tilefuse.passes.tile_and_fuse:TileAndFusePass",
    "horizontal-fusion": "tilefuse.passes.horizontal_fusion:HorizontalFusionPass",
    "canonicalize": "xdsl.transforms.canonicalize:CanonicalizePass",
    "cse": "xdsl.transforms.common_subexpression_elimination:CommonSubexpressionElimination",
    "dce": "xdsl.transforms.dead_code_elimination:DeadCodeElimination",
}
"""Pass name -> "module:class" (imported when first asked for)."""


def _load(path: str) -> type[ModulePass]:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory returning the pass class (imported lazily)."""
    return {name: functools.partial(_load, path) for name, path in PASSES.items()}


def _tilefuse_dialect() -> Dialect:
    from tilefuse.ir.tilefuse import Tilefuse

    return Tilefuse


def _triton_target() -> type[Target]:
    from tilefuse.tools.opt import TritonTarget

    return TritonTarget


OWN_PASSES = {n: f for n, f in get_all_passes().items() if PASSES[n].startswith("tilefuse.")}

UNIVERSE = Universe(
    all_dialects={"tilefuse": _tilefuse_dialect},
    all_passes=OWN_PASSES,
    all_targets={"triton": _triton_target},
)
"""What `xdsl-opt` gains from tilefuse (xDSL has the other dialects and passes)."""
