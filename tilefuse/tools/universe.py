"""
What `xdsl-opt` gains from tilefuse: our passes, the `tilefuse` dialect and the
`triton` target, offered through the `xdsl.universe` entry point (pyproject.toml).

Each is a `"module:name"` path imported when first asked for, so `xdsl-opt` pays
nothing for tilefuse until it uses one of them. xDSL's own dialects and passes stay
xDSL's (canonicalize, cse and dce are not offered twice).
"""

from __future__ import annotations

import functools

from xdsl.universe import Universe

from tilefuse.passes import PASSES, get_all_passes, load_object

OWN_PASSES = {n: f for n, f in get_all_passes().items() if PASSES[n].startswith("tilefuse.")}

UNIVERSE = Universe(
    all_dialects={"tilefuse": functools.partial(load_object, "tilefuse.ir.tilefuse:Tilefuse")},
    all_passes=OWN_PASSES,
    all_targets={"triton": functools.partial(load_object, "tilefuse.tools.opt:TritonTarget")},
)
"""The entry point's object."""
