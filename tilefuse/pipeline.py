"""
The default pipeline, named in one place.

```
inline-calls -> linalg-generalize -> split-reduction{target} -> flash-attention
    -> fusion-groups{target} -> tile-and-fuse{target} -> horizontal-fusion{target}
    -> (emit triton)
```

`tilefuse-opt FILE -p "$(python -m tilefuse.pipeline)"` runs it; stop after any
stage by cutting the list.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from tilefuse.frontend.parse import verify
from tilefuse.ir.context import make_context
from tilefuse.passes.flash_attention import FlashAttentionPass
from tilefuse.passes.fusion_groups import FusionGroupsPass
from tilefuse.passes.horizontal_fusion import HorizontalFusionPass
from tilefuse.passes.inline_calls import InlineCallsPass
from tilefuse.passes.linalg_generalize import LinalgGeneralizePass
from tilefuse.passes.split_reduction import SplitReductionPass
from tilefuse.passes.tile_and_fuse import TileAndFusePass


def default_pipeline(target: str = "h200") -> str:
    """The pipeline as a `-p` string."""
    return (
        f"inline-calls,linalg-generalize,split-reduction{{target={target}}},flash-attention,"
        f"fusion-groups{{target={target}}},"
        f"tile-and-fuse{{target={target}}},horizontal-fusion{{target={target}}}"
    )


DEFAULT_PIPELINE = default_pipeline()


def run_pipeline(module: ModuleOp, target: str = "h200", smem_budget: int = 0) -> ModuleOp:
    """Apply the default pipeline in place, verifying after every pass.

    `smem_budget` (bytes; 0: the target's) caps the shared memory tiles may use,
    as `tile-and-fuse{smem_budget=...}` does: small budgets exercise looped rows."""
    ctx = make_context()
    for p in (InlineCallsPass(), LinalgGeneralizePass(), SplitReductionPass(target=target),
              FlashAttentionPass(),
              FusionGroupsPass(target=target),
              TileAndFusePass(target=target, smem_budget=smem_budget),
              HorizontalFusionPass(target=target)):  # fmt: skip
        p.apply(ctx, module)
        verify(module)
    return module


if __name__ == "__main__":
    print(DEFAULT_PIPELINE)
