"""
The pass registry: every pass `tilefuse-opt -p` knows, by name.

Passes of our own live one per file in this package; a few general-purpose
xDSL passes (canonicalize, cse, dce) are registered alongside.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Pass name -> factory returning the pass class (imported lazily)."""

    def canonicalize():
        from xdsl.transforms.canonicalize import CanonicalizePass

        return CanonicalizePass

    def cse():
        from xdsl.transforms.common_subexpression_elimination import (
            CommonSubexpressionElimination,
        )

        return CommonSubexpressionElimination

    def dce():
        from xdsl.transforms.dead_code_elimination import DeadCodeElimination

        return DeadCodeElimination

    def linalg_generalize():
        from tilefuse.passes.linalg_generalize import LinalgGeneralizePass

        return LinalgGeneralizePass

    def fusion_groups():
        from tilefuse.passes.fusion_groups import FusionGroupsPass

        return FusionGroupsPass

    def tile_and_fuse():
        from tilefuse.passes.tile_and_fuse import TileAndFusePass

        return TileAndFusePass

    def horizontal_fusion():
        from tilefuse.passes.horizontal_fusion import HorizontalFusionPass

        return HorizontalFusionPass

    def split_reduction():
        from tilefuse.passes.split_reduction import SplitReductionPass

        return SplitReductionPass

    def flash_attention():
        from tilefuse.passes.flash_attention import FlashAttentionPass

        return FlashAttentionPass

    return {
        "flash-attention": flash_attention,
        "tile-and-fuse": tile_and_fuse,
        "horizontal-fusion": horizontal_fusion,
        "split-reduction": split_reduction,
        "fusion-groups": fusion_groups,
        "canonicalize": canonicalize,
        "cse": cse,
        "dce": dce,
        "linalg-generalize": linalg_generalize,
    }
