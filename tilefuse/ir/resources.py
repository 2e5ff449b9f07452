"""
The bytes of `dense_resource` constants, kept as bytes under content-addressed handles.

torch-mlir prints a module's weights as `dense_resource<key>` constants with their
bytes in the file's `{-# dialect_resources: {builtin: {key: "0x..."}} #-}` section
(a 4-byte little-endian alignment, then the elements little-endian). The IR keeps
the `DenseResourceAttr` (a handle and a type); the bytes live here, once per
content, for every module of the process:

```python
handle = register("torch_tensor_768_torch.float32", raw)  # "torch_tensor_..._9f3a1c2b7d4e0a61"
blob_data(handle)                                         # the elements' bytes, no header
```

A handle is the file's key plus a digest of the bytes, so modules parsed in one
process never mix up their blobs (torch-mlir gives different models' weights
the same keys) and the same file always gets the same handles. As in MLIR,
where resources belong to the context, the bytes outlive the module: they are
kept for the process.

`BlobStore` is the builtin dialect's `OpAsmDialectInterface` in tilefuse's contexts
(`ir/context.py`): xDSL's printer asks it for the `{-# dialect_resources #-}` section
of what it prints, so printed IR parses back to the same constants.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.dialect_interfaces.op_asm import OpAsmDialectInterface
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.ir import Dialect
from xdsl.printer import Printer


@dataclass(frozen=True)
class Blob:
    """One resource: its alignment and its elements' bytes."""

    alignment: int
    data: bytes

    def hex(self) -> str:
        """The blob as MLIR prints it: `0x`, the alignment, the data."""
        return "0x" + self.alignment.to_bytes(4, "little").hex() + self.data.hex()


_BLOBS: dict[str, Blob] = {}


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def register(key: str, raw: bytes) -> str:
    """Keep `raw` (a blob: the 4-byte alignment, then the data) and return its
    handle: `key` with the digest of the data appended (unless it ends so already,
    as in IR tilefuse printed)."""
    blob = Blob(int.from_bytes(raw[:4], "little"), raw[4:])
    digest = _digest(blob.data)
    handle = key if key.endswith(f"_{digest}") else f"{key}_{digest}"
    _BLOBS.setdefault(handle, blob)
    return handle


def blob_data(handle: str) -> bytes | None:
    """The elements' bytes of the resource `handle` (None: not registered)."""
    blob = _BLOBS.get(handle)
    return blob.data if blob is not None else None


class BlobStore(OpAsmDialectInterface):
    """The builtin dialect's resources, read from the process's blobs: handles are
    never renamed (they are unique), and the printer gets each blob's hex text."""

    def declare_resource(self, key: str) -> str:
        return key

    def parse_resource(self, key: str, val: str):
        raise ValueError("tilefuse reads {-# dialect_resources #-} itself (frontend/resources.py)")

    def lookup(self, key: str) -> str | None:
        blob = _BLOBS.get(key)
        return blob.hex() if blob is not None else None

    def build_resources(self, keys: Iterable[str]) -> dict[str, str]:
        return {key: _BLOBS[key].hex() for key in keys if key in _BLOBS}


BUILTIN = Dialect("builtin", list(Builtin.operations), list(Builtin.attributes), [BlobStore()])
"""xDSL's builtin dialect, its resources in `BlobStore`."""


def module_text(module: ModuleOp) -> str:
    """`module` as MLIR text with the blobs its `dense_resource` constants use (which
    `str(module)` leaves out), as upstream MLIR parses it."""
    out = io.StringIO()
    printer = Printer(stream=out)
    printer.print_op(module)
    printer.print_metadata([BUILTIN])
    return out.getvalue()
