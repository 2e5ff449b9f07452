"""Attention programs as upstream MLIR text, with optional causal or additive mask."""

from __future__ import annotations

import re


def attention_mlir(b: int, h: int, sq: int, sk: int, d: int, *, causal: bool = False,
                   additive_mask: bool = False, softmax_over: str = "keys",
                   dtype: str = "f32") -> str:  # fmt: skip
    """softmax(Q K^T / sqrt(d) [+ mask]) V over batch and heads, as linalg.

    `softmax_over="queries"` normalises over the query dim instead: not attention,
    so the FlashAttention rewrite must not fire.
    """
    t = dtype
    q, k, v = f"tensor<{b}x{h}x{sq}x{d}x{t}>", f"tensor<{b}x{h}x{sk}x{d}x{t}>", f"tensor<{b}x{h}x{sk}x{d}x{t}>"
    s = f"tensor<{b}x{h}x{sq}x{sk}x{t}>"
    red_dim, row = (3, f"tensor<{b}x{h}x{sq}x{t}>") if softmax_over == "keys" else (2, f"tensor<{b}x{h}x{sk}x{t}>")
    row_map = "(d0, d1, d2, d3) -> (d0, d1, d2)" if red_dim == 3 else "(d0, d1, d2, d3) -> (d0, d1, d3)"
    id4 = "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>"
    neg_inf = {"f32": "0xFF800000", "f16": "0xFC00", "bf16": "0xFF80"}[t]
    mask_arg = f", %mask: tensor<{sq}x{sk}x{t}>" if additive_mask else ""
    if causal:
        scale_body = f"""  ^bb0(%sv: {t}, %out: {t}):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %ok = arith.cmpi ule, %j, %i : index
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.select %ok, %r, %neg_inf : {t}
    linalg.yield %m : {t}"""
        scale_ins, scale_maps = f"ins(%scores : {s})", f"[{id4}, {id4}]"
    elif additive_mask:
        scale_body = f"""  ^bb0(%sv: {t}, %mv: {t}, %out: {t}):
    %r = arith.mulf %sv, %scale : {t}
    %m = arith.addf %r, %mv : {t}
    linalg.yield %m : {t}"""
        scale_ins = f"ins(%scores, %mask : {s}, tensor<{sq}x{sk}x{t}>)"
        scale_maps = f"[{id4}, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, {id4}]"
    else:
        scale_body = f"""  ^bb0(%sv: {t}, %out: {t}):
    %r = arith.mulf %sv, %scale : {t}
    linalg.yield %r : {t}"""
        scale_ins, scale_maps = f"ins(%scores : {s})", f"[{id4}, {id4}]"
    pv_maps = ("[affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, "
               "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, "
               "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>]")  # fmt: skip
    return f"""
func.func @attention(%q: {q}, %k: {k}, %v: {v}{mask_arg}) -> tensor<{b}x{h}x{sq}x{d}x{t}> {{
  %zero = arith.constant 0.0 : {t}
  %neg_inf = arith.constant {neg_inf} : {t}
  %scale = arith.constant {d ** -0.5:.9e} : {t}
  %se = tensor.empty() : {s}
  %si = linalg.fill ins(%zero : {t}) outs(%se : {s}) -> {s}
  %scores = linalg.generic {{indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}} ins(%q, %k : {q}, {k}) outs(%si : {s}) {{
  ^bb0(%a: {t}, %c: {t}, %acc: {t}):
    %p = arith.mulf %a, %c : {t}
    %sum = arith.addf %acc, %p : {t}
    linalg.yield %sum : {t}
  }} -> {s}
  %scaled = linalg.generic {{indexing_maps = {scale_maps}, iterator_types = ["parallel", "parallel", "parallel", "parallel"]}} {scale_ins} outs(%se : {s}) {{
{scale_body}
  }} -> {s}
  %re = tensor.empty() : {row}
  %mi = linalg.fill ins(%neg_inf : {t}) outs(%re : {row}) -> {row}
  %mx = linalg.reduce ins(%scaled : {s}) outs(%mi : {row}) dimensions = [{red_dim}]
    (%in: {t}, %a: {t}) {{
      %r = arith.maximumf %in, %a : {t}
      linalg.yield %r : {t}
    }}
  %ex = linalg.generic {{indexing_maps = [{id4}, affine_map<{row_map}>, {id4}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}} ins(%scaled, %mx : {s}, {row}) outs(%se : {s}) {{
  ^bb0(%x: {t}, %m: {t}, %out: {t}):
    %dd = arith.subf %x, %m : {t}
    %e = math.exp %dd : {t}
    linalg.yield %e : {t}
  }} -> {s}
  %zi = linalg.fill ins(%zero : {t}) outs(%re : {row}) -> {row}
  %l = linalg.reduce ins(%ex : {s}) outs(%zi : {row}) dimensions = [{red_dim}]
    (%in: {t}, %a: {t}) {{
      %r = arith.addf %in, %a : {t}
      linalg.yield %r : {t}
    }}
  %pr = linalg.generic {{indexing_maps = [{id4}, affine_map<{row_map}>, {id4}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}} ins(%ex, %l : {s}, {row}) outs(%se : {s}) {{
  ^bb0(%x: {t}, %ll: {t}, %out: {t}):
    %r = arith.divf %x, %ll : {t}
    linalg.yield %r : {t}
  }} -> {s}
  %oe = tensor.empty() : tensor<{b}x{h}x{sq}x{d}x{t}>
  %oi = linalg.fill ins(%zero : {t}) outs(%oe : tensor<{b}x{h}x{sq}x{d}x{t}>) -> tensor<{b}x{h}x{sq}x{d}x{t}>
  %o = linalg.generic {{indexing_maps = {pv_maps}, iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}} ins(%pr, %v : {s}, {v}) outs(%oi : tensor<{b}x{h}x{sq}x{d}x{t}>) {{
  ^bb0(%a: {t}, %c: {t}, %acc: {t}):
    %p = arith.mulf %a, %c : {t}
    %sum = arith.addf %acc, %p : {t}
    linalg.yield %sum : {t}
  }} -> tensor<{b}x{h}x{sq}x{d}x{t}>
  func.return %o : tensor<{b}x{h}x{sq}x{d}x{t}>
}}
"""


def key_loops(source: str) -> list[tuple[str, str, int]]:
    """(start, end, step) of each key loop: one, or the causal split's two (the
    chunks below the diagonal, then from there the diagonal's)."""
    (first,) = re.findall(r"for \w+ in range\(0, (.*), (\d+)\):", source)
    loops = [("0", first[0], int(first[1]))]
    m = re.search(r"for \w+ in range\(" + re.escape(first[0]) + r", (.*), (\d+)\):", source)
    if m is not None:
        loops.append((first[0], m[1], int(m[2])))
    return loops


def key_end(source: str) -> str:
    """Where the keys the kernel reads end: the last key loop's end, or past it the
    end of the last, partial key chunk (a branch from the whole chunks' end,
    `(n // B) * B`, to `n`, when the key tile does not divide the key count)."""
    last = key_loops(source)[-1][1]
    tail = re.search(r"if " + re.escape(last) + r" < (.*):", source)
    if tail is not None:
        assert re.fullmatch(r"\(\(.* // (\d+)\) \* \1\)", last), last
    return tail[1] if tail is not None else last
