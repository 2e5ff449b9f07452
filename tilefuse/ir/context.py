"""The dialects tilefuse reads and writes, registered in one place."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.cf import Cf
from xdsl.dialects.func import Func
from xdsl.dialects.math import Math
from xdsl.dialects.scf import Scf
from xdsl.dialects.tensor import Tensor

from tilefuse.ir.arith_extra import ARITH
from tilefuse.ir.linalg_named import LINALG
from tilefuse.ir.resources import BUILTIN
from tilefuse.ir.tilefuse import Tilefuse

DIALECTS = (BUILTIN, Func, ARITH, Math, LINALG, Tensor, Scf, Cf, Tilefuse)


def register_dialects(ctx: Context) -> None:
    """Make every dialect tilefuse understands known to `ctx`."""
    for dialect in DIALECTS:
        if ctx.get_optional_dialect(dialect.name) is None:
            ctx.load_dialect(dialect)


def make_context() -> Context:
    """A fresh context with tilefuse's dialects loaded."""
    ctx = Context()
    register_dialects(ctx)
    return ctx
