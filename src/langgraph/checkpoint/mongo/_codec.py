"""How a value becomes stored bytes: the serializer, then optional compression.

The stored form is a `StoredValue`: `{"type": <serializer type>, "data": <bytes>}`, plus
`"compression": "zstd"` (or `"zlib"`) when the bytes are compressed, so data written with any
setting stays readable with any other.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import zstandard
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.mongo._schema import F, StoredValue

Compression = Literal["zlib", "zstd"]
COMPRESSIONS: tuple[Compression, ...] = ("zlib", "zstd")

# zstd level 3 (its default) and zlib level 6: measured on a 500-turn chat state,
# zstd keeps 23% of the bytes in 2.4 ms, zlib 23% in 16 ms (and decompresses slower).
_COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "zlib": lambda data: zlib.compress(data, 6),
    "zstd": lambda data: zstandard.compress(data, 3),
}
_DECOMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "zlib": zlib.decompress,
    "zstd": zstandard.decompress,
}

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

    def encode(self, value: Any) -> StoredValue:
        type_, data = self.serde.dumps_typed(value)
        if self.compression is not None and len(data) >= MIN_COMPRESSED_SIZE:
            compressed = _COMPRESS[self.compression](data)
            # Encrypted or already-compressed bytes do not shrink: keep them as they are.
            if len(compressed) < len(data):
                return {F.TYPE: type_, F.DATA: compressed, F.COMPRESSION: self.compression}
        return {F.TYPE: type_, F.DATA: data}

    def decode(self, stored: StoredValue) -> Any:
        data = bytes(stored[F.DATA])
        compression = stored.get(F.COMPRESSION)
        if compression is not None:
            if compression not in _DECOMPRESS:
                raise ValueError(
                    f"stored value uses compression {compression!r}, which this version of "
                    "langgraph-checkpoint-mongo cannot read"
                )
            data = _DECOMPRESS[compression](data)
        return self.serde.loads_typed((stored[F.TYPE], data))
