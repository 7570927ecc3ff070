"""How a value becomes stored bytes: the serializer, then optional compression.

The stored form is `{"type": <serializer type>, "data": <bytes>}`, plus
`"compression": "zlib"` when the bytes are compressed, so data written with any
setting stays readable with any other.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.checkpoint.serde.base import SerializerProtocol

Compression = Literal["zlib"]
COMPRESSIONS: tuple[Compression, ...] = ("zlib",)

# Below this size compression saves too little to pay for itself.
MIN_COMPRESSED_SIZE = 1024


def check_compression(compression: Any) -> Compression | None:
    if compression is not None and compression not in COMPRESSIONS:
        raise ValueError(f"compression must be None or one of {COMPRESSIONS}, got {compression!r}")
    return compression  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Codec:
    serde: SerializerProtocol
    compression: Compression | None = None

    def encode(self, value: Any) -> dict[str, Any]:
        type_, data = self.serde.dumps_typed(value)
        if self.compression == "zlib" and len(data) >= MIN_COMPRESSED_SIZE:
            compressed = zlib.compress(data, 6)
            # Encrypted or already-compressed bytes do not shrink: keep them as they are.
            if len(compressed) < len(data):
                return {"type": type_, "data": compressed, "compression": "zlib"}
        return {"type": type_, "data": data}

    def decode(self, stored: Mapping[str, Any]) -> Any:
        data = bytes(stored["data"])
        compression = stored.get("compression")
        if compression == "zlib":
            data = zlib.decompress(data)
        elif compression is not None:
            raise ValueError(
                f"stored value uses compression {compression!r}, which this version of "
                "langgraph-checkpoint-mongo cannot read"
            )
        return self.serde.loads_typed((stored["type"], data))
