"""Checkpoint metadata as the server stores, indexes and filters it.

`list(filter=...)` is defined by Python equality on the deserialized metadata
(`InMemorySaver`: ``filter[k] == metadata.get(k)``). MongoDB's query language differs
from it: arrays match their elements, ``true`` is not ``1``, subdocuments compare in field
order, dotted keys are paths, ``{"$ne": ...}`` is an operator. So every checkpoint keeps a
readable copy of its metadata (`readable_metadata`), and each top-level entry whose
readable value a server cannot compare exactly as Python does is also stored as two
opaque *terms* (hashes of a canonical encoding for which ``encode(a) == encode(b)``
exactly when ``a == b`` in Python).

What is stored, per top-level key ``k`` of the metadata (as `get_tuple` returns it,
after a serializer round trip):

- value None: nothing (the readable copy holds None);
- a *plain* value under a *readable* key: nothing but the readable copy. Readable: a str
  that is no path or operator (no ``.``, no leading ``$``, no NUL) and not empty. Plain
  (`_stored_plain`), with exact types: a str; an int within 64 bits; a float but NaN; a
  dict of at most one such key whose value is plain or, inside it, None or a list of
  plain values. Not plain: bool (BSON ``true != 1``, Python ``True == 1``), a top-level
  list (a server matches its elements), a dict of two keys or more (field order),
  anything the readable copy changes (big ints, tuples, exotic values as their ``str``);
- anything else: the terms ``present(k)`` and ``equals(k, value)`` in `metadata_terms`
  (the field is left out when no key needs terms).

A filter ``{k: v}`` becomes (several keys: ``$and``; a NaN anywhere matches nothing):

- v None: ``metadata.k`` is null or missing and ``present(k)`` is not stored (a key that
  is not readable: only the latter);
- otherwise: ``equals(k, v)`` is stored, or, when `filter_plain` finds the BSON value p
  that equals v exactly as Python compares them with plain values (``True`` -> ``1``,
  ``10**20`` -> ``1e20``, a str subclass -> its str; none for a list, a tuple, a dict of
  two keys...), ``metadata.k`` ``$eq`` p and ``present(k)`` is not stored. That last
  condition keeps the readable branch off termed values (an array that would match by
  element, an exotic value whose ``str`` equals v).

Values are always data (``$eq``, binary terms), never operators. Documents of version 1
stored the terms for every key not None: the queries above match them too, by their terms.

The encoding is the same in every process (it never depends on hash order, so not on
``PYTHONHASHSEED``). Numbers (``bool``, ``int``, ``float``, ``Decimal``, ``Fraction``,
real ``complex``) encode their exact value; dicts and sets/frozensets their sorted
entries; aware datetimes and times the UTC instant, naive ones their fields. Other
values fall back to their type and ``repr`` (``UUID``, ``date``, ``timedelta``, enum
members...), which is right only for types whose ``repr`` is deterministic and tells
unequal values apart.

Terms, version `METADATA_TERMS_VERSION` (pinned by tests/test_metadata_format.py): each
is 17 bytes of BSON binary, a kind byte and the 16-byte BLAKE2b hash of UTF-8 text, where
`<key>` is the key as JSON (``json.dumps``):

- ``k`` + hash(``<key>``): the key is present (and not None);
- ``v`` + hash(``<key>=<canonical value>``): the key holds that value.

The canonical value starts with a tag that says what it encodes:

| tag | encodes | example |
|---|---|---|
| `N` | None | ``N`` |
| `i` | an integral number (int, bool, int enum, float, Decimal, Fraction) | ``i-7`` |
| `e` | an integer of over 4,300 digits: digits (no trailing zeros), ``e``, exponent | ``e1e5000`` |
| `f` | a fractional number equal to a float: the float's repr; NaN, infinities | ``f0.5`` |
| `d` | a Decimal equal to no float: digits, ``e``, exponent | ``d1e-1`` |
| `q` | a Fraction equal to no Decimal: numerator/denominator | ``q1/3`` |
| `c` | a complex with an imaginary part (a real one encodes as its real part) | ``c(i1,i2)`` |
| `"` | a str, as JSON (``json.dumps``, ASCII) | ``"h\\u00e9"`` |
| `b` | bytes or bytearray, in hex | ``b00ff`` |
| `[` | a list of canonical values | ``[i1,"a"]`` |
| `(` | a tuple of canonical values | ``(i1,"a")`` |
| `{` | a mapping: ``key:value`` pairs, sorted as text | ``{"a":N,"b":i1}`` |
| `s{` | a set or frozenset: values sorted as text | ``s{i1,i2}`` |
| `odatetime.datetime:` | a datetime's repr: naive as is, aware at its UTC instant (1) | |
| `odatetime.datetime@utc:` | an aware datetime out of range in UTC: timedelta since the min | |
| `odatetime.time:` | a time's repr: naive as is, aware in UTC | |
| `odatetime.time@utc:` | an aware time that leaves the day in UTC: ``seconds,microseconds`` | |
| `o` | anything else: ``o<module>.<qualname>:<repr>`` | ``ouuid.UUID:UUID('...')`` |

(1) A repeated or skipped wall time (PEP 495) keeps its time zone instead.

A change to the terms, or to which values get them, bumps `METADATA_TERMS_VERSION`, and
needs a migration that rewrites `metadata_terms` unless the new queries still match the
documents already stored (as version 2's match version 1's).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from bson.decimal128 import Decimal128

from langgraph.checkpoint.mongo._keys import require_str

# LangGraph's metadata entry that counts the writes of each `DeltaChannel` not
# snapshotted since: its keys are the channels a checkpoint rebuilds from its ancestors.
DELTA_COUNTERS = "counters_since_delta_snapshot"

# The version of the stored terms' format described above.
METADATA_TERMS_VERSION = 2

# A BSON int is at most 64 bits; larger Python ints are kept readable as decimals.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# `str(int)` works below this under any `sys.set_int_max_str_digits` (its minimum is 640).
_SMALL_INT = 10**640
# Integers with more digits than this are written in scientific form ("e..."), so the
# encoding never spells out a huge power of ten (`Decimal("1E+999999999")`).
_MAX_INT_DIGITS = 4300

_UTC = dt.timezone.utc
_DATETIME = "odatetime.datetime:"
_TIME = "odatetime.time:"


def _integer(negative: bool, digits: str, exponent: int) -> str:
    """The integer ``digits * 10**exponent`` (``digits`` without trailing zeros)."""
    sign = "-" if negative else ""
    if len(digits) + exponent <= _MAX_INT_DIGITS:
        return f"i{sign}{digits}{'0' * exponent}"
    return f"e{sign}{digits}e{exponent}"


def _decimal(value: Decimal) -> str:
    """A `Decimal` as the int or float it equals, else its exact digits."""
    if value.is_nan():
        return "fnan"
    if value.is_infinite():
        return "f-inf" if value.is_signed() else "finf"
    negative, digit_tuple, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    stripped = digits.rstrip("0")
    if not stripped:
        return "i0"
    exponent += len(digits) - len(stripped)
    if exponent >= 0:
        return _integer(bool(negative), stripped, exponent)
    as_float = float(value)
    if math.isfinite(as_float) and Decimal(as_float) == value:
        return f"f{as_float!r}"
    return f"d{'-' if negative else ''}{stripped}e{exponent}"


def _int(value: int) -> str:
    if -_SMALL_INT < value < _SMALL_INT:
        return f"i{value}"
    return _decimal(Decimal(value))


def _fraction(value: Fraction) -> str:
    numerator, denominator = value.numerator, value.denominator
    if denominator == 1:
        return _int(numerator)
    rest, twos, fives = denominator, 0, 0
    while rest % 2 == 0:
        rest, twos = rest // 2, twos + 1
    while rest % 5 == 0:
        rest, fives = rest // 5, fives + 1
    if rest != 1:  # not a terminating decimal, so neither a float nor a Decimal
        return f"q{numerator}/{denominator}"
    places = max(twos, fives)
    scaled = abs(numerator) * 10**places // denominator
    digits = Decimal(scaled).as_tuple().digits
    return _decimal(Decimal((int(numerator < 0), digits, -places)))


def _datetime(value: dt.datetime) -> str:
    """Aware datetimes compare as instants, naive ones by their fields (fold ignored)."""
    fields = (value.year, value.month, value.day, value.hour, value.minute, value.second)
    plain = dt.datetime(*fields, value.microsecond, value.tzinfo, fold=value.fold)
    offset = plain.utcoffset()
    if offset is None:
        return _DATETIME + repr(plain.replace(tzinfo=None, fold=0))
    if plain.replace(fold=1 - plain.fold).utcoffset() != offset:
        # A repeated or skipped wall time (PEP 495): equal only to the same wall time
        # in the same time zone, never to an instant of another one.
        return _DATETIME + repr(plain.replace(fold=0))
    naive = plain.replace(tzinfo=None, fold=0)
    try:
        return _DATETIME + repr((naive - offset).replace(tzinfo=_UTC))
    except OverflowError:  # the instant is outside the datetime range in UTC
        return f"odatetime.datetime@utc:{naive - dt.datetime.min - offset!r}"


def _time(value: dt.time) -> str:
    """Aware times compare as UTC seconds (offset microseconds ignored, as CPython does)."""
    plain = dt.time(value.hour, value.minute, value.second, value.microsecond, value.tzinfo)
    offset = plain.utcoffset()
    if offset is None:
        return _TIME + repr(plain.replace(tzinfo=None))
    seconds = value.hour * 3600 + value.minute * 60 + value.second
    seconds -= offset.days * 86400 + offset.seconds
    if 0 <= seconds < 86400:
        hours, rest = divmod(seconds, 3600)
        utc = dt.time(hours, *divmod(rest, 60), value.microsecond, _UTC)
        return _TIME + repr(utc)
    return f"odatetime.time@utc:{seconds},{value.microsecond}"


def _canonical(value: Any) -> str:
    """An encoding that is equal for equal values, under Python's `==`.

    Numbers compare by value (``True == 1 == 1.0 == Decimal(1)``), dicts ignore key
    order, sets ignore order and kind (``{1} == frozenset({1})``), lists and tuples keep
    order but differ from each other, as in Python.
    """
    if value is None:
        return "N"
    if isinstance(value, int):  # bool and int enums included
        return _int(int(value))
    if isinstance(value, float):
        if value.is_integer():
            return f"i{int(value)}"
        return f"f{value!r}"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (bytes, bytearray)):
        return f"b{bytes(value).hex()}"
    if isinstance(value, list):
        return "[" + ",".join(_canonical(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ",".join(_canonical(v) for v in value) + ")"
    if isinstance(value, Mapping):
        items = sorted(_canonical(k) + ":" + _canonical(v) for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, AbstractSet):
        return "s{" + ",".join(sorted(_canonical(v) for v in value)) + "}"
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, Fraction):
        return _fraction(value)
    if isinstance(value, complex):
        if value.imag == 0:
            return _canonical(value.real)
        return f"c({_canonical(value.real)},{_canonical(value.imag)})"
    if isinstance(value, dt.datetime) and type(value).__eq__ is dt.datetime.__eq__:
        return _datetime(value)
    if isinstance(value, dt.time) and type(value).__eq__ is dt.time.__eq__:
        return _time(value)
    cls = type(value)
    return f"o{cls.__module__}.{cls.__qualname__}:{value!r}"


def _contains_nan(value: Any) -> bool:
    """NaN equals nothing, itself included, so a filter containing it matches nothing."""
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, Decimal):
        return value.is_nan()
    if isinstance(value, complex):
        return math.isnan(value.real) or math.isnan(value.imag)
    if isinstance(value, (list, tuple, AbstractSet)):
        return any(_contains_nan(v) for v in value)
    if isinstance(value, Mapping):
        return any(_contains_nan(k) or _contains_nan(v) for k, v in value.items())
    return False


def _digest(kind: bytes, text: str) -> bytes:
    """A term: its kind and a 128-bit hash, stored as 17 bytes of BSON binary (a hex
    string would take twice that in every checkpoint)."""
    return kind + hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _present_term(key: str) -> bytes:
    return _digest(b"k", json.dumps(key))


def _equals_term(key: str, value: Any) -> bytes:
    return _digest(b"v", json.dumps(key) + "=" + _canonical(value))


def _filter_key(key: Any) -> bool:
    """A key whose value can be read at ``metadata.<key>`` (no path, no operator)."""
    return type(key) is str and key != "" and _safe_key(key)


def _stored_plain(value: Any, nested: bool = False) -> bool:
    """Whether the readable copy of `value` answers every filter on it exactly, under
    BSON equality on a server (see the module docstring for why each type is in or out).
    The rules are `_plain_copy`'s, at any depth."""
    return _plain_copy(value, int(nested), None) is not NO_PLAIN


def metadata_terms(metadata: Mapping[str, Any]) -> list[bytes]:
    """Terms stored beside the metadata: a "present" and an "equals" term per key whose
    value is not None and not answered by the readable copy (`_stored_plain`)."""
    terms: list[bytes] = []
    for key, value in metadata.items():
        if value is not None and not (_filter_key(key) and _stored_plain(value)):
            terms.append(_present_term(key))
            terms.append(_equals_term(key, value))
    return terms


class _NoPlain:
    """The marker of a filter value that no stored plain value equals."""


NO_PLAIN: Any = _NoPlain()


def _plain_number(value: Decimal | Fraction) -> Any:
    """The int64 or float a Decimal or Fraction equals exactly, else `NO_PLAIN`."""
    if isinstance(value, Decimal) and value.is_infinite():
        return float(value)
    integral = (
        value.denominator == 1
        if isinstance(value, Fraction)
        else value == value.to_integral_value()
    )
    if integral and _INT64_MIN <= value <= _INT64_MAX:
        return int(value)
    try:
        as_float = float(value)
    except OverflowError:
        return NO_PLAIN
    return as_float if math.isfinite(as_float) and as_float == value else NO_PLAIN


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def filter_plain(value: Any, nested: bool = False) -> Any:
    """The BSON value a server compares with stored plain values exactly as Python's `==`
    compares them with `value`, or `NO_PLAIN` when no stored plain value equals `value`
    (a top-level list is never plain: a server would match its elements)."""
    if value is None:
        return None if nested else NO_PLAIN
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return int(value)
        return _plain_number(Fraction(value))
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        # A lone surrogate is no BSON string, and no stored string holds one.
        return str.__str__(value) if _utf8(value) else NO_PLAIN
    if isinstance(value, (Decimal, Fraction)):
        return _plain_number(value)
    if isinstance(value, complex):
        return filter_plain(value.real, nested) if value.imag == 0 else NO_PLAIN
    if isinstance(value, Mapping):
        if len(value) > 1:
            return NO_PLAIN
        plain: dict[str, Any] = {}
        for k, v in value.items():
            inner = filter_plain(v, True)
            if not (isinstance(k, str) and _safe_key(k) and _utf8(k)) or inner is NO_PLAIN:
                return NO_PLAIN
            plain[str.__str__(k)] = inner
        return plain
    if isinstance(value, list) and nested:
        items = [filter_plain(v, True) for v in value]
        return NO_PLAIN if any(v is NO_PLAIN for v in items) else items
    return NO_PLAIN


# Deeper plain metadata takes the full path, which refuses what the serializer refuses
# (msgpack stops at about 255 levels, a server at 100).
_PLAIN_DEPTH = 32


def _plain_copy(value: Any, depth: int, limit: int | None = _PLAIN_DEPTH) -> Any:
    """A copy of a plain value, else `NO_PLAIN`: a str (valid UTF-8: no other can be
    stored), an int within 64 bits, a float but NaN, a dict of at most one readable key,
    and, nested (`depth` > 0), None or a list; no deeper than `limit`."""
    if limit is not None and depth > limit:
        return NO_PLAIN
    kind = type(value)
    if kind is str:
        return value if _utf8(value) else NO_PLAIN
    if kind is int:
        return value if _INT64_MIN <= value <= _INT64_MAX else NO_PLAIN
    if kind is float:
        return NO_PLAIN if value != value else value  # NaN
    if kind is dict:
        if len(value) > 1:
            return NO_PLAIN
        copy = {}
        for k, v in value.items():
            inner = _plain_copy(v, depth + 1, limit)
            if inner is NO_PLAIN or type(k) is not str or not (_safe_key(k) and _utf8(k)):
                return NO_PLAIN
            copy[k] = inner
        return copy
    if not depth:
        return NO_PLAIN
    if value is None:
        return None
    if kind is list:
        items = [_plain_copy(v, depth + 1, limit) for v in value]
        return NO_PLAIN if any(v is NO_PLAIN for v in items) else items
    return NO_PLAIN


def plain_metadata(metadata: Any) -> dict[str, Any] | None:
    """The readable copy of metadata that needs no filter terms and no serializer copy
    (every key readable, every value None or `_stored_plain`), or None.

    Such metadata reads back from its readable copy exactly as a round trip through
    LangGraph's serializer would return it, so `put` stores it without serializing it at
    all (the usual case: LangGraph's own `source`, `step`, `parents`, `run_id`); with
    another serializer it takes the full path (`Codec.round_trips_plain`). A copy, not the
    caller's objects: the driver may encode the document after the caller has moved on.
    """
    if type(metadata) is not dict:
        return None
    copy: dict[str, Any] = {}
    for key, value in metadata.items():
        if not (_filter_key(key) and _utf8(key)):
            return None
        plain = None if value is None else _plain_copy(value, 0)
        if plain is NO_PLAIN:
            return None
        copy[key] = plain
    return copy


@dataclass(frozen=True, slots=True)
class KeyFilter:
    """What `list(filter=...)` asks of one metadata key (`_queries.metadata_filter` turns
    it into the query): `equals` is None when it asks for None (missing or None);
    `readable` says the key can be read at ``metadata.<key>``, and `plain` is the value
    to compare there (`filter_plain`)."""

    key: str
    present: bytes
    equals: bytes | None
    readable: bool
    plain: Any


def key_filters(filter: Any) -> list[KeyFilter] | None:
    """What a `list(filter=...)` asks of each key; `None` when nothing can match."""
    if filter is None:
        return []
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a dict of metadata values, got {type(filter).__name__}")
    keys: list[KeyFilter] = []
    matches_nothing = False
    for key, value in filter.items():
        require_str(key, "filter key")
        readable = _filter_key(key)
        if value is None:
            keys.append(KeyFilter(key, _present_term(key), None, readable, NO_PLAIN))
        elif _contains_nan(value):
            matches_nothing = True
        else:
            plain = filter_plain(value) if readable else NO_PLAIN
            keys.append(
                KeyFilter(key, _present_term(key), _equals_term(key, value), readable, plain)
            )
    return None if matches_nothing else keys


def _safe_key(key: Any) -> bool:
    return isinstance(key, str) and "." not in key and not key.startswith("$") and "\0" not in key


def readable_metadata(value: Any) -> Any:
    """A plain-BSON copy of the metadata, for people, filters and the `run_id` index.

    It is lossy by design (tuples become arrays, keys a server would read as paths or
    operators are left out, ints beyond 64 bits become decimals, exotic values become
    their `str`); where it is not exact (`readable_is_exact`), the serializer's copy is
    stored beside it.
    """
    if value is None or isinstance(value, (bool, float, str, bytes)):
        return value
    if isinstance(value, int):
        return value if _INT64_MIN <= value <= _INT64_MAX else Decimal128(str(value))
    if isinstance(value, (list, tuple)):
        return [readable_metadata(v) for v in value]
    if isinstance(value, Mapping):
        return {k: readable_metadata(v) for k, v in value.items() if _safe_key(k)}
    return str(value)


def readable_is_exact(value: Any) -> bool:
    """Whether `readable_metadata(value)` reads back as `value` itself: plain types only
    (exact types: an int enum, a str subclass or a tuple would come back as another
    type), ints that fit BSON's 64 bits, dicts whose keys it keeps."""
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is float:
        return True
    if kind is int:
        return _INT64_MIN <= int(value) <= _INT64_MAX
    if kind is list:
        return all(readable_is_exact(v) for v in value)
    if kind is dict:
        return all(
            type(k) is str and _safe_key(k) and readable_is_exact(v) for k, v in value.items()
        )
    return False


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
