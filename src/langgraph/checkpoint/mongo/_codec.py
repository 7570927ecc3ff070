"""How a value becomes stored bytes: the serializer, then optional compression.

The stored form is a `StoredValue`: `{"type": <serializer type>, "data": <bytes>}`, plus
`"compression": "zstd"` (or `"zlib"`) when the bytes are compressed, so data written with any
setting stays readable with any other. To save bytes on almost every value, `type` is left out
when it is "msgpack", a value stored as a field of its own (`StoredField`) is then its bare
bytes, and one that serializes to `("null", b"")` (LangGraph's `None`) is BSON null.

A saver's codec (`codec`) serializes with its serializer made to store BSON values too
(`_bson_values`): a value holding them is stored with type ``msgpack-bson``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import zstandard
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo._bson_values import BsonSerializer, with_bson_values
from langgraph.checkpoint.mongo._schema import ChannelValue, Field, StoredField, StoredValue

Compression = Literal["zlib", "zstd"]
COMPRESSIONS: tuple[Compression, ...] = ("zlib", "zstd")

# Each library's default level: zstd 3, zlib 6.
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

# The serializer type a stored value does not name (`JsonPlusSerializer`'s usual one).
IMPLIED_TYPE = "msgpack"
# What `JsonPlusSerializer` makes of `None`, stored as null.
_NULL: StoredValue = {Field.DATA: b"", Field.TYPE: "null"}


# The serializers whose round trip returns plain values unchanged.
_PLAIN_ROUND_TRIPS = frozenset({JsonPlusSerializer, BsonSerializer})


def codec(serde: SerializerProtocol, compression: Compression | None = None) -> Codec:
    """A saver's codec: `serde`, storing BSON values too (`with_bson_values`)."""
    return Codec(with_bson_values(serde), compression)


class Codec(NamedTuple):
    """A saver's serializer and compression."""

    serde: SerializerProtocol
    compression: Compression | None = None

    @property
    def round_trips_plain(self) -> bool:
        """Whether the serializer gives plain values (str, int, float, None, dicts and
        lists of them) back unchanged, as LangGraph's `JsonPlusSerializer` (and ours) do."""
        return type(self.serde) in _PLAIN_ROUND_TRIPS

    def encode(self, value: Any) -> StoredValue:
        type_, data = self.serde.dumps_typed(value)
        stored: StoredValue = {Field.DATA: data}
        self._describe(stored, type_)
        return stored

    def encode_entry(self, channel: str, value: Any) -> ChannelValue:
        """`encode`, as the entry of `channel` in a checkpoint's `channel_values`."""
        type_, data = self.serde.dumps_typed(value)
        entry: ChannelValue = {Field.CHANNEL: channel, Field.DATA: data}
        self._describe(entry, type_)
        return entry

    def _describe(self, stored: StoredValue, type_: str) -> None:
        """Name the serializer's type in `stored` unless it is implied, and compress its
        bytes if that is set and they shrink."""
        if type_ != IMPLIED_TYPE:
            stored[Field.TYPE] = type_
        data = stored[Field.DATA]
        if self.compression is not None and len(data) >= MIN_COMPRESSED_SIZE:
            compressed = _COMPRESS[self.compression](data)
            # Encrypted or already-compressed bytes do not shrink: keep them as they are.
            if len(compressed) < len(data):
                stored[Field.DATA] = compressed
                stored[Field.COMPRESSION] = self.compression

    def encode_field(self, value: Any) -> StoredField:
        """`encode`, as bare bytes when there is nothing to say beside them. (Decided on
        the serializer's answer, not by comparing the `StoredValue`: every write and
        checkpoint takes this path.)"""
        type_, data = self.serde.dumps_typed(value)
        if type_ == IMPLIED_TYPE and (self.compression is None or len(data) < MIN_COMPRESSED_SIZE):
            return data
        if type_ == _NULL[Field.TYPE] and data == _NULL[Field.DATA]:
            return None
        stored: StoredValue = {Field.DATA: data}
        self._describe(stored, type_)
        return stored[Field.DATA] if len(stored) == 1 else stored

    def decode(self, stored: StoredField) -> Any:
        if stored is None:
            stored = _NULL
        if isinstance(stored, bytes):
            return self.serde.loads_typed((IMPLIED_TYPE, stored))
        if Field.CHUNKS in stored:
            raise ValueError(
                f"stored value refers to chunks {stored[Field.CHUNKS]!r} that were not read"
            )
        data = bytes(stored[Field.DATA])
        compression = stored.get(Field.COMPRESSION)
        if compression is not None:
            if compression not in _DECOMPRESS:
                raise ValueError(
                    f"stored value uses compression {compression!r}, which this version of "
                    "langgraph-checkpoint-mongo cannot read"
                )
            data = _DECOMPRESS[compression](data)
        return self.serde.loads_typed((stored.get(Field.TYPE, IMPLIED_TYPE), data))
