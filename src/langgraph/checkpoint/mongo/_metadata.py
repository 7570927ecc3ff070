"""Checkpoint metadata as the server stores and filters it.

`list(filter=...)` keeps a checkpoint when Python says so, on the metadata `get_tuple`
returns: ``all(value == metadata.get(key) for key, value in filter.items())``, exactly
`InMemorySaver`'s test. The server condition narrows and must never miss a match; when it
is exact no check follows, otherwise `MetadataFilter.matches` decides after the read.

Stored: ``metadata``, a readable copy (`readable_metadata`): plain values as they are,
tuples as arrays, Mappings as subdocuments without the keys a query would read as paths
or operators (a ``.``, a leading ``$``, a NUL), ints beyond 64 bits as Decimal128 (or
``{"repr": hex}`` beyond its 34 digits), other numbers as the int64 or float they equal
exactly, and any other value as ``{"repr": repr(value)}``, a subdocument no plain filter
value equals. Where that copy does not read back as the metadata itself (`exact_copy`
finds none), the serializer's copy is stored beside it, and reads decode that.

A filter entry ``{key: value}`` becomes a condition on ``metadata.<key>``. For a key a
query can read and a value of these types it is exact (stored arrays would match by
element, so arrays are excluded):

- None: null or missing (``$eq: null``);
- a str (valid UTF-8) or an int64 other than 0 and 1: ``$eq: value``;
- a bool, 0, 1, 0.0 or 1.0: ``$in: [value, its bool or int]`` (Python: ``True == 1``);
- a float, but NaN and integral floats of 2**63 or more (an int of more than 64 bits may
  equal those): ``$eq: value`` (the server compares numbers by value, as Python does);
- an `ObjectId`, `Timestamp`, `MinKey`, `MaxKey`, a `DatetimeMS` (stored as a BSON date, as
  nothing else is), a `Binary` of a subtype other than 0, a `DBRef` to an `ObjectId` or str
  id without extra fields: ``$eq: value``, the server's equality being Python's.

A `Decimal128` (the server compares it as a number, Python bit for bit), a `Binary` of subtype 0
(equal to bytes on the server only), a `Regex` (flags Python keeps and BSON does not) and another
`DBRef` get ``$eq: value`` (``$exists`` for that `DBRef`), which only narrows.

Anything else (lists, tuples, dicts, other types, NaN, huge ints, keys a query cannot
read) is never sent: the server only narrows (an array, a subdocument, or a present key;
nothing for a key it cannot read) and `matches` decides. Values are always data.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bson.binary import Binary
from bson.code import Code
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.errors import InvalidBSON
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

from langgraph.checkpoint.mongo._keys import require_str
from langgraph.checkpoint.mongo._schema import Field

# LangGraph's metadata entry that counts the writes of each `DeltaChannel` not
# snapshotted since: its keys are the channels a checkpoint rebuilds from its ancestors.
DELTA_COUNTERS = "counters_since_delta_snapshot"

# A BSON int is at most 64 bits.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# `exact_copy` gives deeper metadata to the serializer, which refuses what it cannot
# store (msgpack stops at about 255 levels, a server at 100).
_EXACT_DEPTH = 32

_NOT_ARRAY = {"$not": {"$type": "array"}}


class _NotExact:
    """What `exact_copy` returns for a value its readable copy would change."""


NOT_EXACT: Any = _NotExact()


def _readable_key(key: Any) -> bool:
    """A key a query can name as a field: no path, no operator, no NUL, valid UTF-8."""
    return (
        isinstance(key, str)
        and "." not in key
        and not key.startswith("$")
        and "\0" not in key
        and _utf8(key)
    )


def _utf8(text: str) -> bool:
    """A str BSON can hold (no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _in_int64(value: float) -> bool:
    return _INT64_MIN <= value <= _INT64_MAX


def _equal_number(value: Any) -> Any:
    """The int64 or float a number of another type equals exactly (`Decimal("1.5")`,
    `Fraction(1, 2)`, `complex(2, 0)`, numpy scalars), else None."""
    if isinstance(value, complex):
        value = value.real if value.imag == 0 else None
    for plain in (int, float):
        try:
            candidate = plain(value)
        except (TypeError, ValueError, OverflowError):
            continue
        if candidate == value and (plain is float or _in_int64(candidate)):
            return candidate
    return None


# BSON's own values, stored in ``metadata`` as themselves (`readable_bson`).
_BSON_VALUES = (ObjectId, Decimal128, Binary, Timestamp, Regex, DBRef, MinKey, MaxKey, DatetimeMS)


def readable_bson(value: Any) -> Any:
    """A BSON value as ``metadata`` stores it: itself, so filters and indexes compare it by
    value (a `DBRef`'s id and extra fields readable); as ``{"repr": ...}`` where a server cannot
    store it or a reader not decode it (a `Regex` with a NUL, a `DatetimeMS` past `datetime`)."""
    if isinstance(value, DBRef):
        extra = {
            key: readable_metadata(item)
            for key, item in value.as_doc().items()
            if key not in ("$ref", "$id", "$db") and _readable_key(key)
        }
        return DBRef(value.collection, readable_metadata(value.id), value.database, extra)
    if isinstance(value, Regex) and "\0" in str(value.pattern):
        return {"repr": repr(value)}
    if isinstance(value, DatetimeMS):
        try:
            value.as_datetime()
        except (OverflowError, ValueError, InvalidBSON):
            return {"repr": repr(value)}
    return value


def readable_metadata(value: Any) -> Any:
    """The readable copy stored as ``metadata`` (see the module docstring)."""
    if value is None or isinstance(value, (bool, str, bytes)):
        return value
    if isinstance(value, _BSON_VALUES):
        return readable_bson(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        if _in_int64(value):
            return int(value)
        try:
            return Decimal128(str(value))
        except (ArithmeticError, ValueError):  # over 34 digits, or over `str`'s limit
            return {"repr": hex(value)}
    if isinstance(value, (list, tuple)):
        return [readable_metadata(v) for v in value]
    if isinstance(value, Mapping):
        return {k: readable_metadata(v) for k, v in value.items() if _readable_key(k)}
    number = _equal_number(value) if isinstance(value, numbers.Number) else None
    return {"repr": repr(value)} if number is None else number


def exact_copy(value: Any, depth: int = 0) -> Any:
    """A copy of `value` that is its own readable copy and reads back as itself (exactly
    None, bool, str, float, int64, and lists and dicts of them with readable keys), else
    `NOT_EXACT`: then no serializer copy is needed. `put` calls it on every checkpoint, so
    it answers a container's scalars inline."""
    kind = type(value)
    if kind is dict:
        if depth >= _EXACT_DEPTH:
            return NOT_EXACT
        copy = {}
        for key, item in value.items():
            if type(key) is not str or not _readable_str_key(key):
                return NOT_EXACT
            item_kind = type(item)
            if item_kind is str:
                if not item.isascii() and not _utf8(item):
                    return NOT_EXACT
            elif item_kind is int:
                if not _INT64_MIN <= item <= _INT64_MAX:
                    return NOT_EXACT
            elif not (item is None or item_kind is bool or item_kind is float):
                item = exact_copy(item, depth + 1)
                if item is NOT_EXACT:
                    return NOT_EXACT
            copy[key] = item
        return copy
    if kind is list:
        if depth >= _EXACT_DEPTH:
            return NOT_EXACT
        items = []
        for item in value:
            copied = exact_copy(item, depth + 1)
            if copied is NOT_EXACT:
                return NOT_EXACT
            items.append(copied)
        return items
    if kind is str:
        return value if _utf8(value) else NOT_EXACT
    if kind is int:
        return value if _in_int64(value) else NOT_EXACT
    if value is None or kind is bool or kind is float:
        return value
    return NOT_EXACT


# `_readable_key` of a str, remembered: metadata's keys recur (LangGraph's `source`,
# `step`, `parents`, the config's) and `put` checks them on every checkpoint.
_readable_str_key = functools.lru_cache(maxsize=1024)(_readable_key)


def from_readable(value: Any) -> Any:
    """An exact readable copy as read back, in the types the serializer returns: plain
    dicts (whatever the client's `document_class`) and ints (BSON int64 reads as `Int64`)."""
    if isinstance(value, Mapping):
        return {k: from_readable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_readable(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return value


def _bson_condition(value: Any) -> tuple[dict[str, Any], bool] | None:
    """The condition on ``metadata.<key>`` for a BSON value, and whether it is exact,
    or None for another value (see the module docstring)."""
    if isinstance(value, (ObjectId, Timestamp, MinKey, MaxKey)):
        return {"$eq": value, **_NOT_ARRAY}, True
    if isinstance(value, Binary):
        return {"$eq": value, **_NOT_ARRAY}, value.subtype != 0
    if isinstance(value, DBRef):
        if not (isinstance(value.id, (ObjectId, str)) and len(value.as_doc()) <= 3):
            return {"$exists": True}, False
        return {"$eq": value, **_NOT_ARRAY}, True
    if isinstance(value, (Decimal128, Regex, DatetimeMS)):
        if readable_bson(value) is not value:  # stored as {"repr": ...}
            return {"$exists": True}, False
        return {"$eq": value, **_NOT_ARRAY}, isinstance(value, DatetimeMS)
    return None


def _exact_condition(value: Any) -> dict[str, Any] | None:
    """The condition on ``metadata.<key>`` that matches exactly the stored values equal
    to `value`, or None when there is none (see the module docstring)."""
    plain: Any
    if isinstance(value, Code):
        return None  # read back as a str, which a Code never equals
    if value is None or isinstance(value, bool):
        plain = value
    elif isinstance(value, str):
        if not _utf8(value):
            return None
        plain = str.__str__(value)
    elif isinstance(value, int):
        if not _in_int64(value):
            return None
        plain = int(value)
    elif isinstance(value, float):
        if math.isnan(value) or (value.is_integer() and abs(value) >= 2.0**63):
            return None
        plain = float(value)
    else:
        return None
    if plain is not None and not isinstance(plain, str) and plain in (0, 1):
        # Python's True == 1 == 1.0 and False == 0 == -0.0; the server's true != 1.
        return {
            "$in": [plain, int(plain) if isinstance(plain, bool) else bool(plain)],
            **_NOT_ARRAY,
        }
    return {"$eq": plain, **_NOT_ARRAY}


@dataclass(frozen=True, slots=True)
class MetadataFilter:
    """A `list(filter=...)`: `conditions` for the server's ``$match``; `exact` when they
    select exactly the matches, else `matches` decides on each metadata read."""

    entries: tuple[tuple[str, Any], ...]
    conditions: dict[str, Any]
    exact: bool

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        return all(value == metadata.get(key) for key, value in self.entries)


def metadata_filter(filter: Any) -> MetadataFilter:
    """The server conditions and the Python check of a `list(filter=...)`."""
    if filter is None:
        return MetadataFilter((), {}, True)
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a dict of metadata values, got {type(filter).__name__}")
    conditions: dict[str, Any] = {}
    exact = True
    for key, value in filter.items():
        require_str(key, "filter key")
        readable = key != "" and _readable_key(key)
        bson_condition = _bson_condition(value) if readable else None
        if bson_condition is not None:
            conditions[f"{Field.METADATA}.{key}"], value_exact = bson_condition
            exact = exact and value_exact
            continue
        condition = _exact_condition(value) if readable else None
        if condition is None:
            exact = False
            if not readable:
                continue
            if isinstance(value, (list, tuple)):
                condition = {"$type": "array"}
            elif isinstance(value, Mapping):
                condition = {"$type": "object"}
            else:
                condition = {"$exists": True}
        conditions[f"{Field.METADATA}.{key}"] = condition
    return MetadataFilter(tuple(filter.items()), conditions, exact)
