"""
The `{-# dialect_resources #-}` section of an MLIR file, read apart from its body.

torch-mlir prints a model's weights there as hex strings: megabytes of text that
xDSL's parser and the header regexes of `specialize.py` would scan character
by character. The section is split off the text first (it ends the file) and
read here: one regex step per token, each blob a slice of the text, decoded
with `bytes.fromhex` only when a constant uses it (`parse.py`).

```mlir
{-#
  dialect_resources: {
    builtin: {
      torch_tensor_2_torch.float32: "0x040000000000803F00000040"
    }
  }
#-}
```
"""

from __future__ import annotations

import re

from tilefuse.ir.diagnostics import CompileError

_TOKEN = re.compile(r"\s*(?:([A-Za-z_][\w$.\-]*)|([{}:,\"]))")
_START = re.compile(r"^\{-#", re.MULTILINE)


def split_resources(text: str) -> tuple[str, str | None, int]:
    """(the body, the section between `{-#` and `#-}` or None, the section's line)."""
    start = _START.search(text)
    end = text.rfind("#-}")
    if start is None or end < start.start() or text[end + 3 :].strip():
        return text, None, 0  # none, or not at the end: xDSL's parser reports it
    i = start.start()
    return text[:i], text[i + 3 : end], text.count("\n", 0, i) + 1


class _Tokens:
    def __init__(self, section: str, where: str, line: int):
        self.section, self.where, self.line, self.pos = section, where, line, 0

    def next(self, expected: str) -> tuple[str, str]:
        """The next token as (kind, text): kind `id`, `str` or the punctuation."""
        m = _TOKEN.match(self.section, self.pos)
        if m is None:
            self.fail(f"expected {expected}")
        self.pos = m.end()
        ident, punct = m.groups()
        if ident:
            return "id", ident
        if punct != '"':
            return punct, punct
        close = self.section.find('"', self.pos)
        text = self.section[self.pos : close]
        if close < 0 or "\\" in text:  # (hex blobs and resource keys need no escapes)
            self.fail("expected a string without escapes")
        self.pos = close + 1
        return "str", text

    def expect(self, kind: str, expected: str) -> str:
        got, text = self.next(expected)
        if got != kind:
            self.fail(f"expected {expected}")
        return text

    def fail(self, message: str) -> None:
        line = self.line + self.section.count("\n", 0, self.pos)
        raise CompileError(f"in the {{-# dialect_resources #-}} section: {message}",
                           f"{self.where}:{line}")  # fmt: skip

    def at_end(self) -> bool:
        return not self.section[self.pos :].strip()


def read_resources(section: str, where: str = "<input>", line: int = 1) -> dict[str, str]:
    """The builtin dialect's blobs of a `{-# ... #-}` section: key -> hex text."""
    tokens, blobs = _Tokens(section, where, line), {}
    while True:
        entry = tokens.expect("id", "`dialect_resources`")
        if entry != "dialect_resources":
            tokens.fail(f"tilefuse reads `dialect_resources` only, not `{entry}`")
        tokens.expect(":", "`:`")
        tokens.expect("{", "`{`")
        for dialect in _entries(tokens, "a dialect name"):
            if dialect != "builtin":
                tokens.fail(f"tilefuse reads the builtin dialect's resources only, not {dialect}'s")
            tokens.expect("{", "`{`")
            for key in _entries(tokens, "a resource key"):
                blobs[key] = tokens.expect("str", "a blob string")
        if tokens.at_end():
            return blobs
        tokens.expect(",", "`,` or `#-}`")


def _entries(tokens: _Tokens, what: str):
    """Each `name:` of a brace-delimited, comma-separated list, its `{` already read
    (the caller reads the value); through the closing `}`."""
    kind, text = tokens.next(what)
    while kind != "}":
        if kind not in ("id", "str"):
            tokens.fail(f"expected {what}")
        tokens.expect(":", "`:`")
        yield text
        kind, _ = tokens.next("`,` or `}`")
        if kind == ",":
            kind, text = tokens.next(what)
        elif kind != "}":
            tokens.fail("expected `,` or `}`")
