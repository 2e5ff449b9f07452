"""
The old home of `fold_unit_dims`, kept only for the oracle's import
(`tilefuse/oracle/reference.py`) until the oracle no longer needs it; the pass
is `passes/fold_unit_dims.py`. Delete this file with that import.
"""

from tilefuse.passes.fold_unit_dims import fold_unit_dims

__all__ = ["fold_unit_dims"]
