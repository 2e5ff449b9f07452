"""
Affine expressions of indexing maps beyond projected permutations.

A convolution reads its input at `oh * stride + kh * dilation`: a sum of loop
dims times constants. `window_terms` reads such an expression as coefficients
and a constant; `tilefuse.window` and `passes/fold_windows.py` turn an operand read
that way into a strided view the rest of the compiler reads with a projection.
"""

from __future__ import annotations

from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
)


def window_terms(expr: AffineExpr) -> tuple[dict[int, int], int]:
    """`expr` as (dim -> coefficient, constant), all non-negative integers, dims
    in the order they appear; ValueError for anything else (a product of dims,
    a negative term, mod, division)."""
    coeffs: dict[int, int] = {}
    const = 0

    def walk(e: AffineExpr, scale: int) -> None:
        nonlocal const
        if isinstance(e, AffineDimExpr):
            coeffs[e.position] = coeffs.get(e.position, 0) + scale
        elif isinstance(e, AffineConstantExpr):
            const += scale * e.value
        elif isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.Add:
            walk(e.lhs, scale)
            walk(e.rhs, scale)
        elif isinstance(e, AffineBinaryOpExpr) and e.kind == AffineBinaryOpKind.Mul:
            if isinstance(e.rhs, AffineConstantExpr):
                walk(e.lhs, scale * e.rhs.value)
            elif isinstance(e.lhs, AffineConstantExpr):
                walk(e.rhs, scale * e.lhs.value)
            else:
                raise ValueError(f"{e} multiplies two dims")
        else:
            raise ValueError(f"{e} is not a sum of dims times constants")

    walk(expr, 1)
    if const < 0 or any(c < 0 for c in coeffs.values()):
        raise ValueError(f"{expr} has a negative term")
    return {d: c for d, c in coeffs.items() if c}, const


def last_index(terms: tuple[dict[int, int], int], extents: dict[int, int] | list[int]) -> int:
    """The largest index `terms` reaches with each dim d in [0, extents[d])."""
    coeffs, const = terms
    return const + sum(c * (extents[d] - 1) for d, c in coeffs.items())
