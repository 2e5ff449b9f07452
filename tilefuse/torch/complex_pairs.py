"""
Complex tensors as pairs of reals, in the ATen graph before torch-mlir imports it.

Meta's LLaMA reference (and torchtitan, Mistral's reference code) writes rotary
embeddings with complex numbers: `view_as_complex(q.reshape(..., -1, 2)) * freqs_cis`,
`freqs_cis = torch.polar(ones, angles)`, then `view_as_real(...).flatten(3)`.
torch-mlir lowers none of it to linalg (`complex.create is not registered`), and a
kernel has no complex loads. The math is real arithmetic on (re, im) pairs, stored
the way `view_as_real` stores them: a complex tensor of shape `S` is a real tensor of
shape `S + [2]`, its last dim (re, im).

`real_pairs(graph)` rewrites every node with a complex value, or reading one, into
the ATen ops of that arithmetic (traced on the nodes' fake values and inlined with
their stack traces, `aten_graph.traced`/`inline`):

- `view_as_complex(x)` is `x`; `view_as_real(c)` is the pair; `polar(r, a)` and
  `complex(re, im)` put `(r cos a, r sin a)` and `(re, im)` on a new last dim (an
  elementwise select along it, not a `stack`: a concatenation would be a host copy
  between kernels);
- views (`view`, `reshape`, `unsqueeze`, `squeeze`, `slice`, `select`, `permute`,
  `expand`, `clone`, ...) apply to the pair with its dims counted from the front and
  the pair dim kept last;
- `mul`, `add`, `sub` of complex (or of a complex and a real), `neg`, `conj`,
  `real`, `imag`, `abs`: the textbook formulas.

Each rule computes what torch's complex op computes, up to the rounding of `a*c - b*d`
(as torch's own CPU kernel rounds it: no fused multiply-add is asked for). A complex
input of the program (a buffer `freqs_cis`) becomes its pair, `view_as_real` of the
tensor, which the caller passes (`pair_inputs`: a view, no copy); a lifted constant is
replaced by its pair. An op with a complex operand or result and no rule (a complex
matmul, `exp`, `sum` of a complex) is a located `CompileError`: never handed to
torch-mlir, which lowers some complex ops wrongly (`1 - c`) and aborts on others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx import Graph, GraphModule, Node
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from tilefuse.ir.diagnostics import CompileError
from tilefuse.torch import aten_graph
from tilefuse.torch.aten_graph import inline, traced, user_line

aten = torch.ops.aten


def _is_complex(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_complex()


def _dim(d: int, rank: int) -> int:
    """A dim of a complex tensor of `rank` dims, counted from the front (the pair's
    dim of the same meaning: its own last dim is the pair)."""
    return d + rank if d < 0 else d


def _parts(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x[..., 0], x[..., 1]


def _pair(re: torch.Tensor, im: torch.Tensor) -> torch.Tensor:
    """(re, im) on a new last dim, as an elementwise select along it (a `stack` is a
    concatenation, which the host would make between kernels)."""
    re, im = torch.broadcast_tensors(re, im)
    real_part = torch.arange(2, device=re.device) == 0
    return torch.where(real_part, re.unsqueeze(-1), im.unsqueeze(-1))


def _as_pair(x: Any, paired: bool) -> Any:
    """A real operand of a complex op as the pair (x, 0) (a number stays a number)."""
    if paired or not isinstance(x, torch.Tensor):
        return x
    return _pair(x, torch.zeros_like(x))


@dataclass(frozen=True)
class Complex:
    """A complex number operand (`c * 1j`): its parts, Python floats."""

    re: float
    im: float


def _mul(a: Any, b: Any, pa: bool, pb: bool) -> torch.Tensor:
    if isinstance(a, Complex):
        a, b, pa, pb = b, a, pb, pa
    if isinstance(b, Complex):  # (a is a pair, or a real tensor: its imaginary part 0)
        ar, ai = _parts(a) if pa else (a, torch.zeros_like(a))
        return _pair(ar * b.re - ai * b.im, ar * b.im + ai * b.re)
    if not pb:  # complex times a real: each part scaled
        return a * (b.unsqueeze(-1) if isinstance(b, torch.Tensor) else b)
    if not pa:
        return _mul(b, a, pb, pa)
    (ar, ai), (br, bi) = _parts(a), _parts(b)
    return _pair(ar * br - ai * bi, ar * bi + ai * br)


def _add(a: Any, b: Any, pa: bool, pb: bool, alpha: Any = 1) -> torch.Tensor:
    """`a + alpha * b` (torch's `add`), either operand complex (a pair, or a `Complex`)."""
    if alpha != 1:
        b = _mul(b, alpha, pb, False) if isinstance(b, torch.Tensor) else _scaled(b, alpha)
    if (not pa and not isinstance(a, torch.Tensor)) or isinstance(a, Complex):
        a, b, pa, pb = b, a, pb, pa  # (the tensor first)
    a = _as_pair(a, pa)
    if isinstance(b, Complex):
        return a + _pair(torch.full_like(a[..., 0], b.re), torch.full_like(a[..., 0], b.im))
    b = _as_pair(b, pb)
    if not isinstance(b, torch.Tensor):  # a complex plus a real number: the real part
        b = _pair(torch.full_like(a[..., 0], b), torch.zeros_like(a[..., 0]))
    return a + b


def _sub(a: Any, b: Any, pa: bool, pb: bool, alpha: Any = 1) -> torch.Tensor:
    return _add(a, b, pa, pb, -alpha)


def _scaled(x: Any, alpha: Any) -> Any:
    """A number (or `Complex`) times a real `alpha`."""
    return Complex(x.re * alpha, x.im * alpha) if isinstance(x, Complex) else x * alpha


# A rule: the node -> a function of its arguments (complex ones as pairs; `paired`
# says which), computing the node's value (as a pair where it is complex).
Rule = Callable[[Node], Callable[..., torch.Tensor] | None]


def _rank_of(node: Node, i: int = 0) -> int:
    """The rank of the complex tensor `node`'s argument `i` is."""
    return node.args[i].meta["val"].dim()  # pyright: ignore


def _out_shape(node: Node) -> list[int]:
    return list(node.meta["val"].shape)


def _dims_rule(op: Callable[..., torch.Tensor], dims_at: tuple[int, ...] = (1,),
               dim_list: bool = False) -> Rule:
    """A view or copy whose dim arguments (positions `dims_at`, or a list of dims
    at position 1 with `dim_list`) count a complex tensor's dims: those counted from
    the front, the pair's last dim added where a list names every dim."""
    def rule(node: Node) -> Callable[..., torch.Tensor]:
        rank = _rank_of(node)

        def fn(x: torch.Tensor, *args: Any, paired: tuple[bool, ...] = ()) -> torch.Tensor:
            args = list(args)
            if dim_list:
                args[0] = [*(_dim(d, rank) for d in args[0]), rank]
            else:
                for k in dims_at:
                    if k - 1 < len(args) and isinstance(args[k - 1], int):
                        args[k - 1] = _dim(args[k - 1], rank)
            return op(x, *args)
        return fn
    return rule


def _shape_rule(node: Node) -> Callable[..., torch.Tensor]:
    shape = _out_shape(node)
    return lambda x, *_, paired=(): x.reshape([*shape, 2])


def _expand_rule(node: Node) -> Callable[..., torch.Tensor]:
    shape = _out_shape(node)
    return lambda x, *_, paired=(): x.expand([*shape, 2])


def _unsqueeze_rule(node: Node) -> Callable[..., torch.Tensor]:
    rank = _rank_of(node) + 1  # (the result's: unsqueeze's dim counts it)
    return lambda x, d, paired=(): x.unsqueeze(_dim(d, rank))


def _binary(fn: Callable[..., torch.Tensor]) -> Rule:
    return lambda node: (lambda a, b, *rest, paired=(False, False), **kw:
                         fn(_number(a), _number(b), paired[0], paired[1], *rest, **kw))


def _number(x: Any) -> Any:
    """A Python complex number as a `Complex` (a real one stays a number)."""
    return Complex(x.real, x.imag) if isinstance(x, complex) else x


def _abs(x: torch.Tensor) -> torch.Tensor:
    """|re + i im| without overflow (torch's `hypot`): the larger part times the
    length of the pair scaled by it."""
    re, im = x[..., 0].abs(), x[..., 1].abs()
    big = torch.maximum(re, im)
    scale = torch.where(big == 0, torch.ones_like(big), big)
    return big * torch.sqrt((re / scale) ** 2 + (im / scale) ** 2)


RULES: dict[Any, Rule] = {
    aten.view_as_complex.default: lambda node: lambda x, paired=(): x,
    aten.view_as_real.default: lambda node: lambda x, paired=(): x,
    aten.polar.default: lambda node: lambda r, a, paired=(): _pair(r * torch.cos(a), r * torch.sin(a)),
    aten.complex.default: lambda node: lambda re, im, paired=(): _pair(re, im),
    aten.view.default: _shape_rule,
    aten._unsafe_view.default: _shape_rule,
    aten.reshape.default: _shape_rule,
    aten.expand.default: _expand_rule,
    aten.unsqueeze.default: _unsqueeze_rule,
    aten.squeeze.dim: _dims_rule(torch.squeeze),
    aten.squeeze.dims: _dims_rule(lambda x, dims: x.squeeze(tuple(dims[:-1])), dim_list=True),
    aten.slice.Tensor: _dims_rule(lambda x, dim=0, start=None, end=None, step=1:
                                  aten.slice.Tensor(x, dim, start, end, step)),
    aten.select.int: _dims_rule(lambda x, dim, index: x.select(dim, index)),
    aten.permute.default: _dims_rule(lambda x, dims: x.permute(dims), dim_list=True),
    aten.transpose.int: _dims_rule(lambda x, a, b: x.transpose(a, b), dims_at=(1, 2)),
    aten.clone.default: lambda node: lambda x, paired=(), **_: x.clone(),
    aten.alias.default: lambda node: lambda x, paired=(): x,
    aten.mul.Tensor: _binary(_mul),
    aten.mul.Scalar: _binary(_mul),
    aten.add.Tensor: _binary(_add),
    aten.sub.Tensor: _binary(_sub),
    aten.neg.default: lambda node: lambda x, paired=(): -x,
    aten.conj.default: lambda node: lambda x, paired=(): _pair(x[..., 0], -x[..., 1]),
    aten._conj.default: lambda node: lambda x, paired=(): _pair(x[..., 0], -x[..., 1]),
    aten.real.default: lambda node: lambda x, paired=(): x[..., 0],
    aten.imag.default: lambda node: lambda x, paired=(): x[..., 1],
    aten.abs.default: lambda node: lambda x, paired=(): _abs(x),
    aten.rsub.Scalar: _binary(lambda a, b, pa, pb, alpha=1: _add(b, a, pb, pa, -alpha)),
    aten.rsub.Tensor: _binary(lambda a, b, pa, pb, alpha=1: _add(b, a, pb, pa, -alpha)),
}
"""ATen op -> the rule writing it on pairs (the module docstring)."""


_DROPPED = {aten._assert_tensor_metadata.default}
"""Ops of complex values that compute nothing (export's dtype asserts): erased."""


def _pair_dtype(value: torch.Tensor) -> torch.dtype:
    return {torch.complex32: torch.float16, torch.complex64: torch.float32,
            torch.complex128: torch.float64}[value.dtype]  # fmt: skip


def for_import(gm: GraphModule) -> GraphModule:
    """`aten_graph.for_import`'s copy of `gm`, its complex values as pairs."""
    copy = aten_graph.for_import(gm)
    if real_pairs(copy.graph):
        copy.recompile()
    return copy


def _uncovered(graph: Graph) -> Node | None:
    """The first node that reads or makes a complex value with no rule (a complex
    output outside a list of outputs too); None when every one is covered (a complex
    output in a list is returned as its pair, `paired_outputs`)."""
    for node in graph.nodes:
        reads = any(_is_complex(a.meta.get("val")) for a in node.all_input_nodes)
        if node.op == "output" and reads and not isinstance(node.args[0], list | tuple):
            return node
        if node.op == "call_function" and (reads or _is_complex(node.meta.get("val"))) and \
                node.target not in RULES and node.target not in _DROPPED:  # fmt: skip
            return node
    return None


def _refusal(node: Node) -> CompileError:
    """A located refusal of a complex op with no rule: torch-mlir lowers some complex
    ops wrongly (`1 - c`: the imaginary part 1 - im) or aborts the process (`sum`)."""
    return CompileError(f"complex {node.target}{user_line(node)} is not supported: tilefuse computes complex "
                        "values as real pairs for view_as_complex/view_as_real, polar, complex, "
                        "views, mul, add, sub, neg, conj, real, imag and abs")  # fmt: skip


def real_pairs(graph: Graph) -> bool:
    """Rewrite `graph`'s complex values as pairs (the module docstring), a complex
    placeholder too (its value is then `view_as_real` of the tensor: `pair_inputs`)
    and a complex output (returned as its pair: `paired_outputs`); whether it
    changed. A complex op no rule covers is a located `CompileError` (never handed to
    torch-mlir, which lowers some wrongly)."""
    if not any(_is_complex(n.meta.get("val")) for n in graph.nodes):
        return False
    if (node := _uncovered(graph)) is not None:
        raise _refusal(node)
    pairs: dict[Node, Node] = {}
    rewritten: list[Node] = []
    for node in list(graph.nodes):
        out = node.meta.get("val")
        if node.op == "placeholder" and _is_complex(out):
            node.meta["val"] = torch.view_as_real(out)
            if "tensor_meta" in node.meta:
                node.meta["tensor_meta"] = _extract_tensor_metadata(node.meta["val"])
            pairs[node] = node
        elif node.op == "call_function" and (_is_complex(out) or any(a in pairs for a in node.all_input_nodes)):
            _rewrite(graph, node, pairs)
            rewritten.append(node)
    output = graph.output_node()
    returned = output.args[0]
    if any(isinstance(r, Node) and r in pairs for r in returned):  # pyright: ignore
        output.meta[PAIRED] = [i for i, r in enumerate(returned) if isinstance(r, Node) and r in pairs]  # pyright: ignore
        output.args = ([pairs.get(r, r) if isinstance(r, Node) else r for r in returned],)  # pyright: ignore
    for node in reversed(rewritten):  # (each read only by rewritten nodes, erased first)
        graph.erase_node(node)
    return True


def _rewrite(graph: Graph, node: Node, pairs: dict[Node, Node]) -> None:
    """`node`'s rule inlined before it on the pairs of its complex arguments: its
    value's pair in `pairs` where complex, else its uses moved to the result."""
    if node.target in _DROPPED:
        return
    args = tuple(pairs.get(a, a) if isinstance(a, Node) else a for a in node.args)
    paired = tuple(isinstance(a, Node) and a in pairs for a in node.args)
    kwargs = {k: v for k, v in node.kwargs.items() if k != "memory_format"}
    found = traced(args, {**kwargs, "paired": paired}, RULES[node.target](node))  # pyright: ignore
    if found is None:
        raise ValueError(f"complex {node.target} of arguments without fake values")
    (result,) = inline(graph, node, *found)
    assert isinstance(result, Node)
    out = node.meta.get("val")
    if _is_complex(out):
        assert result.meta["val"].dtype == _pair_dtype(out), (node, result.meta["val"].dtype)
        pairs[node] = result
    else:
        node.replace_all_uses_with(result)


PAIRED = "tilefuse_paired_outputs"
"""The output node's meta: the positions of the outputs that are pairs of complex ones."""


def paired_outputs(graph: Graph) -> list[int]:
    """The outputs of a graph `real_pairs` rewrote that are complex values' pairs."""
    return list(graph.output_node().meta.get(PAIRED, []))


def unpair_outputs(outputs: list[Any], paired: list[int]) -> list[Any]:
    """The complex outputs back from their pairs (`view_as_complex`: a view)."""
    outputs = list(outputs)
    for i in paired:
        outputs[i] = torch.view_as_complex(outputs[i])
    return outputs


def pair_inputs(tensors: list[Any]) -> list[Any]:
    """The program's arguments for `tensors`: a complex tensor as `view_as_real` of it
    (a view: what `real_pairs` made of its placeholder)."""
    return [torch.view_as_real(t) if isinstance(t, torch.Tensor) and t.is_complex() else t
            for t in tensors]  # fmt: skip
