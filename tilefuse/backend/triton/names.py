"""Python identifiers for SSA values, from their name hints."""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.ir import SSAValue

from tilefuse.backend.triton.library import reserved_names


def identifier(hint: str) -> str:
    """`hint` as a Python identifier (`v` for an empty one)."""
    base = "".join(c if c.isalnum() else "_" for c in hint) or "v"
    return "v" + base if base[0].isdigit() else base


class Names:
    """Fresh identifiers, never a keyword, a builtin or a name the generated module
    defines (`library.reserved_names`), nor one in `reserved`."""

    def __init__(self, reserved: Iterable[str] = ()):
        self.of: dict[SSAValue, str] = {}
        self.used: set[str] = set(reserved) | reserved_names()

    def fresh(self, hint: str) -> str:
        base = identifier(hint)
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def __call__(self, value: SSAValue, hint: str | None = None) -> str:
        """The name of `value`: its name hint (else `hint`, else `v`) made fresh."""
        if value not in self.of:
            self.of[value] = self.fresh(value.name_hint or hint or "v")
        return self.of[value]
