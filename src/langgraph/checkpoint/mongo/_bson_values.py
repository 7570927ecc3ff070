"""BSON's own values (`ObjectId`, `Decimal128`, `Binary`, ...) in states and writes.

LangGraph's `JsonPlusSerializer` refuses them (or, for `Binary`, drops the subtype), so the saver's
codec serializes with `BsonSerializer` (for a subclass, a class deriving from `StoresBson` and it):
every value LangGraph packs is stored exactly as LangGraph does (type ``msgpack``), and only a value
it refuses, or a `Binary`, as type ``msgpack-bson``, msgpack in which each BSON value is an
extension of its own:

- where msgpack itself holds it (reached through dicts, lists and tuples only): extension
  `BSON_CODES[type]`, whose data is the `ObjectId`'s 12 bytes, or else the msgpack of its
  constructor's arguments (`_ARGS`);
- inside an object LangGraph packs itself (a dataclass, a pydantic model, a set, ...):
  LangGraph's own constructor extension ``(module, name, args)``, since LangGraph rebuilds
  what such an object holds with its own hook; the classes are allow-listed, so strict mode
  (``LANGGRAPH_STRICT_MSGPACK``) rebuilds them too.

Older readers refuse type ``msgpack-bson`` by name. `Int64`, `SON` and `Code` (int, dict and
str subclasses) are stored as the int, dict (in order) and str they are (a `Code`'s scope is lost).
"""

from __future__ import annotations

import copy
import functools
import struct
from collections.abc import Callable
from typing import Any

import ormsgpack
from bson.binary import Binary
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.raw_bson import RawBSONDocument
from bson.regex import Regex
from bson.timestamp import Timestamp
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo import _langgraph_serde as lg_serde

# The serializer type of a value that holds BSON values.
BSON_MSGPACK = "msgpack-bson"

_DBREF_KEYS = frozenset({"$ref", "$id", "$db"})


def _decimal128(value: Decimal128) -> tuple[Any, ...]:
    low, high = struct.unpack("<QQ", value.bid)
    return ((high, low),)


def _dbref(value: DBRef) -> tuple[Any, ...]:
    extra = {k: v for k, v in value.as_doc().items() if k not in _DBREF_KEYS}
    return (value.collection, value.id, value.database, extra)


# Each type's constructor arguments, exact: `type(*args)` rebuilds an equal value.
_ARGS: dict[type, Callable[[Any], tuple[Any, ...]]] = {
    ObjectId: lambda value: (value.binary,),
    Decimal128: _decimal128,
    Binary: lambda value: (bytes(value), value.subtype),
    Timestamp: lambda value: (value.time, value.inc),
    Regex: lambda value: (value.pattern, int(value.flags)),
    DBRef: _dbref,
    MinKey: lambda value: (),
    MaxKey: lambda value: (),
    DatetimeMS: lambda value: (int(value),),
    RawBSONDocument: lambda value: (value.raw,),
}
# Stored extension codes: a promise, never renumbered (LangGraph's own are 0 to 7).
BSON_CODES: dict[type, int] = {kind: 64 + number for number, kind in enumerate(_ARGS)}
_TYPES_BY_CODE = {code: kind for kind, code in BSON_CODES.items()}
_OBJECT_ID = BSON_CODES[ObjectId]
# The classes LangGraph's serializer rebuilds inside objects: allow-listed.
ALLOWED = frozenset((kind.__module__, kind.__name__) for kind in _ARGS)


def _inside_objects(value: Any) -> ormsgpack.Ext | None:
    """A BSON value inside an object LangGraph packs, as LangGraph's own extension."""
    kind = type(value)
    args = _ARGS.get(kind)
    if args is None:
        return None
    parts = (kind.__module__, kind.__name__, args(value))
    return ormsgpack.Ext(lg_serde.POSITIONAL, _ENCODER.encode(parts))


_ENCODER = lg_serde.encoder(_inside_objects)


def _default(value: Any) -> Any:
    """`ormsgpack`'s `default` for a value msgpack holds itself (see the module docstring)."""
    kind = type(value)
    if kind is ObjectId:
        return ormsgpack.Ext(_OBJECT_ID, value.binary)
    args = _ARGS.get(kind)
    if args is None:
        return _ENCODER.default(value)
    return ormsgpack.Ext(BSON_CODES[kind], _pack(args(value)))


def _pack(value: Any) -> bytes:
    return ormsgpack.packb(value, default=_default, option=_ENCODER.option)


def _hook(langgraph_hook: lg_serde.ExtHook) -> lg_serde.ExtHook:
    """An extension hook that rebuilds BSON values and hands others to LangGraph's."""

    def hook(code: int, data: bytes) -> Any:
        if code == _OBJECT_ID:
            return ObjectId(data)
        kind = _TYPES_BY_CODE.get(code)
        if kind is None:
            return langgraph_hook(code, data)
        return kind(*lg_serde.unpack(data, hook))

    return hook


class StoresBson(JsonPlusSerializer):
    """What a `JsonPlusSerializer` (or a subclass) gains to store BSON values (see the
    module docstring): `with_bson_values` makes a serializer of a class deriving from this
    one and the serializer's own, so a subclass's overrides still apply."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if type(obj) is not Binary:  # LangGraph stores a Binary as bytes: subtype lost
            try:
                return super().dumps_typed(obj)
            except TypeError:
                pass  # refused: BSON values, else `_pack` refuses it too
        return BSON_MSGPACK, _pack(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        type_, payload = data
        if type_ != BSON_MSGPACK:
            return super().loads_typed(data)
        return lg_serde.unpack(payload, _hook(lg_serde.ext_hook(self)))


class BsonSerializer(StoresBson):
    """LangGraph's `JsonPlusSerializer` storing BSON values: what a saver given none, or
    a `JsonPlusSerializer`, serializes with."""


@functools.cache
def _storing_bson(kind: type[JsonPlusSerializer]) -> type[StoresBson]:
    """`kind` with `StoresBson` before it (one class per serializer class)."""
    if kind is JsonPlusSerializer:
        return BsonSerializer
    return type(f"{kind.__name__}StoringBson", (StoresBson, kind), {"__module__": __name__})


def with_bson_values(serde: SerializerProtocol) -> SerializerProtocol:
    """`serde` storing BSON values too: a `JsonPlusSerializer`, or one of its subclasses (with its
    options and allow-list, plus `ALLOWED`), also inside an `EncryptedSerializer`. Any other
    serializer is returned as it is: it gets BSON values to serialize itself."""
    if isinstance(serde, StoresBson):
        return serde
    if isinstance(serde, JsonPlusSerializer):
        allowed = serde.with_msgpack_allowlist(ALLOWED)
        if lg_serde.permissive(allowed):  # every type is rebuilt, with a warning
            lg_serde.quiet_unregistered(ALLOWED)
        stores_bson = copy.copy(allowed)
        stores_bson.__class__ = _storing_bson(type(allowed))
        return stores_bson
    if type(serde) is EncryptedSerializer:
        inner = with_bson_values(serde.serde)
        return serde if inner is serde.serde else EncryptedSerializer(serde.cipher, inner)
    return serde
