"""
Log channels, in the spirit of `TORCH_LOGS`: `TILEFUSE_LOG=fusion,views,kernels,fallback`
(or `all`) prints what the compiler decides to stderr, one line per event.

| channel | logger | what it says |
| --- | --- | --- |
| `fusion` | `tilefuse.fusion` | every fusion decision of `fusion-groups`, taken or refused, with its reason |
| `views` | `tilefuse.views` | every decision of `propagate-reshapes`: each reshape folded (the generics collapsed or expanded, along which loops) or kept, with the reason |
| `kernels` | `tilefuse.kernels` | the kernels a program became: how many, their names, where the source lies |
| `fallback` | `tilefuse.fallback` | each graph the `torch.compile` backend leaves to eager: the op, its location, the reason |

The channels are ordinary `logging` loggers, so a program can also switch them on
itself (`logging.getLogger("tilefuse.fallback").setLevel(logging.INFO)` with a handler
of its own), or call `configure("fusion")`. Every record is at level INFO.
"""

from __future__ import annotations

import logging
import os
import sys

ENV = "TILEFUSE_LOG"
CHANNELS = ("fusion", "views", "kernels", "fallback")


def channel(name: str) -> logging.Logger:
    """The logger of one channel (`tilefuse.<name>`)."""
    assert name in CHANNELS, name
    return logging.getLogger(f"tilefuse.{name}")


class _Stderr(logging.StreamHandler):
    """Writes to the `sys.stderr` of the moment (a test may have replaced it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


_HANDLER = _Stderr()
_HANDLER.setFormatter(logging.Formatter("[%(name)s] %(message)s"))


def parse(spec: str) -> set[str]:
    """The channels named by a `TILEFUSE_LOG` value; `ValueError` for an unknown one."""
    names = {s.strip() for s in spec.split(",") if s.strip()}
    if "all" in names:
        return set(CHANNELS)
    unknown = sorted(names - set(CHANNELS))
    if unknown:
        raise ValueError(f"{ENV}: unknown channel {', '.join(unknown)}; "
                         f"the channels are {', '.join(CHANNELS)} and all")  # fmt: skip
    return names


def configure(spec: str | None = None) -> set[str]:
    """Switch the channels of `spec` (default `$TILEFUSE_LOG`) on, printing to stderr,
    and the others back to their defaults; returns the channels on."""
    if spec is None:
        spec = os.environ.get(ENV, "")
    try:
        on = parse(spec)
    except ValueError as e:  # a typo in an environment variable is not fatal
        print(f"warning: {e}", file=sys.stderr)
        on = set()
    for name in CHANNELS:
        logger = channel(name)
        if name in on:
            logger.setLevel(logging.INFO)
            if _HANDLER not in logger.handlers:
                logger.addHandler(_HANDLER)
            logger.propagate = False  # printed once, here
        else:
            logger.setLevel(logging.NOTSET)
            logger.removeHandler(_HANDLER)
            logger.propagate = True
    return on


if os.environ.get(ENV):
    configure()
