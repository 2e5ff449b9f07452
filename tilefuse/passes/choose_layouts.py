"""
`choose-layouts`: the tensors kernels hand each other get the dim order their
readers load fastest.

Runs last, on tiled groups. `analysis/layout_plan.py` decides: a tensor only
convolutions read (through windows) is stored with the dim they reduce over (the
channels) innermost. The decision is the group's `layouts` property, one dim order
per result (outermost first; empty: row-major), and a `tilefuse.layout` attribute
on a `tensor.pad` between the group and the windows; the host allocates the tensor
in that order (`torch.empty_permuted`) and every kernel reads and writes it through
its strides, so no kernel changes. A small function argument a kernel would load per element
(a 3x3 filter, `[F, C, KH, KW]`, read in `[F, C]` tiles) gets an order in the
group's `input_layouts`; the host copies it into that order before the launch.

```mlir
%1 = tilefuse.group "fused_kernel_0" ins(...) {...} -> (tensor<32x64x56x56xbf16>)
%2 = tilefuse.window %1 affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d3, d4 + d5)> ...
// becomes
%1 = tilefuse.group "fused_kernel_0" ins(...) attributes {layouts = [array<i64: 0, 2, 3, 1>], ...}
```
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, tensor
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, ModuleOp, i64
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from tilefuse.analysis.layout_plan import plan_input_layouts, plan_layouts
from tilefuse.ir.tilefuse import LAYOUT_ATTR, GroupOp


def _mark_pads(v: SSAValue, order: tuple[int, ...]) -> None:
    for use in v.uses:
        if isinstance(use.operation, tensor.PadOp):
            use.operation.attributes[LAYOUT_ATTR] = DenseArrayBase.from_list(i64, order)


@dataclass(frozen=True)
class ChooseLayoutsPass(ModulePass):
    """Store convolution inputs that kernels hand each other channels-innermost."""

    name = "choose-layouts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in [o for o in op.walk() if isinstance(o, func.FuncOp)]:
            groups = {g.sym_name.data: g for g in f.body.block.ops if isinstance(g, GroupOp)}
            for layout in plan_layouts(f):
                g = groups[layout.group]
                g.layouts = _with_order([g.layout(i) for i in range(len(g.results))],
                                        layout.result, layout.order)  # fmt: skip
                _mark_pads(g.results[layout.result], layout.order)
            for layout in plan_input_layouts(f):
                g = groups[layout.group]
                g.input_layouts = _with_order([g.input_layout(i) for i in range(len(g.inputs))],
                                              layout.input, layout.order)  # fmt: skip


def _with_order(orders: list[tuple[int, ...] | None], i: int, order: tuple[int, ...]) -> ArrayAttr:
    """A group's per-value orders with entry `i` set to `order` (empty: none)."""
    orders[i] = order
    return ArrayAttr(DenseArrayBase.from_list(i64, list(o or ())) for o in orders)
