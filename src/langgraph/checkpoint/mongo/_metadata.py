"""Checkpoint metadata as the server stores, indexes and filters it.

`list(filter=...)` is defined by Python equality on the deserialized metadata
(`InMemorySaver`: ``filter[k] == metadata.get(k)``). MongoDB's query language differs
from it (arrays match their elements, ``{"$ne": ...}`` is an operator, dotted keys are
paths, subdocuments compare in field order). So the saver does not query the readable
metadata at all: each top-level entry is also stored as an opaque *term*, a hash of a
canonical encoding for which ``encode(a) == encode(b)`` exactly when ``a == b`` in
Python, and a filter becomes plain string membership on that array.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

from bson.decimal128 import Decimal128

from langgraph.checkpoint.mongo._keys import require_str

TERMS_FIELD = "metadata_terms"

# A BSON int is at most 64 bits; larger Python ints are kept readable as decimals.
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _canonical(value: Any) -> str:
    """An encoding that is equal for equal values, under Python's `==`.

    Numbers compare by value (``True == 1 == 1.0``), dicts ignore key order, lists and
    tuples keep order but differ from each other, as in Python.
    """
    if value is None:
        return "N"
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return f"i{value}"
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
    cls = type(value)
    return f"o{cls.__module__}.{cls.__qualname__}:{value!r}"


def _contains_nan(value: Any) -> bool:
    """NaN equals nothing, itself included, so a filter containing it matches nothing."""
    if isinstance(value, float):
        return math.isnan(value)
    if isinstance(value, (list, tuple)):
        return any(_contains_nan(v) for v in value)
    if isinstance(value, Mapping):
        return any(_contains_nan(k) or _contains_nan(v) for k, v in value.items())
    return False


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _present_term(key: str) -> str:
    return "k" + _digest(json.dumps(key))


def _equals_term(key: str, value: Any) -> str:
    return "v" + _digest(json.dumps(key) + "=" + _canonical(value))


def metadata_terms(metadata: Mapping[str, Any]) -> list[str]:
    """Terms stored beside the metadata: one "present" and one "equals" term per non-None key."""
    terms: list[str] = []
    for key, value in metadata.items():
        if value is not None:
            terms.append(_present_term(key))
            terms.append(_equals_term(key, value))
    return terms


_MATCH_NOTHING: dict[str, Any] = {TERMS_FIELD: {"$in": []}}


def metadata_filter(filter: Any) -> dict[str, Any]:
    """The query for `list(filter=...)`: every value is data, never an operator."""
    if filter is None:
        return {}
    if not isinstance(filter, Mapping):
        raise TypeError(f"filter must be a dict of metadata values, got {type(filter).__name__}")
    required: list[str] = []
    absent: list[str] = []
    matches_nothing = False
    for key, value in filter.items():
        require_str(key, "filter key")
        if value is None:
            # `metadata.get(key) == None`: the key is missing or holds None.
            absent.append(_present_term(key))
        elif _contains_nan(value):
            matches_nothing = True
        else:
            required.append(_equals_term(key, value))
    if matches_nothing:
        return dict(_MATCH_NOTHING)
    condition: dict[str, Any] = {}
    if required:
        condition["$all"] = required
    if absent:
        condition["$nin"] = absent
    return {TERMS_FIELD: condition} if condition else {}


def _safe_key(key: Any) -> bool:
    return isinstance(key, str) and "." not in key and not key.startswith("$") and "\0" not in key


def readable_metadata(value: Any) -> Any:
    """A plain-BSON copy of the metadata, for people and for the `run_id` index.

    It is lossy by design (tuples become arrays, keys a server would read as paths or
    operators are left out, ints beyond 64 bits become decimals, exotic values become
    their `str`); the exact metadata is read back from its serialized copy.
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
