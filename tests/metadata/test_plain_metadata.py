"""`put`'s fast path for plain metadata (`_metadata.exact_copy`): it must store exactly
the document the full path (serializer round trip, readable copy, serializer's copy)
stores, and it must be taken for the metadata LangGraph itself writes."""

from __future__ import annotations

import enum
from collections import OrderedDict
from typing import Any

import bson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo._codec import Codec, codec
from langgraph.checkpoint.mongo._documents import checkpoint_document
from langgraph.checkpoint.mongo._keys import CheckpointRef
from langgraph.checkpoint.mongo._metadata import NOT_EXACT, exact_copy
from support.helpers import as_metadata, checkpoint
from support.properties import METADATA, TEXT

CODEC = codec(JsonPlusSerializer())  # a saver's: LangGraph's serializer storing BSON values
REF = CheckpointRef("thread", "", None)
CONFIG: Any = {"configurable": {"thread_id": "thread", "checkpoint_ns": ""}}

# Values the fast path takes, nested as it allows.
PLAIN_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    TEXT,
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
)
PLAIN_NESTED = st.recursive(
    PLAIN_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(TEXT, children, max_size=3)
    ),
    max_leaves=8,
)
PLAIN_METADATA = st.dictionaries(TEXT, PLAIN_NESTED, max_size=4)


class Consulted(JsonPlusSerializer):
    """LangGraph's serializer under another type: `put` round-trips metadata through it."""


FULL_PATH = Codec(Consulted())


def test_a_savers_serializer_takes_the_fast_path() -> None:
    """The saver's own serializer (LangGraph's, wrapped to store BSON values) round-trips
    plain values unchanged: its `put` never serializes plain metadata."""
    assert CODEC.round_trips_plain


def both_documents(metadata: Any) -> tuple[Any, Any]:
    """The document `put` stores for `metadata`, with and without the fast path."""
    cp = checkpoint({"a": 1})
    fast = checkpoint_document(CODEC, REF, cp, metadata, CONFIG)
    assert not FULL_PATH.round_trips_plain
    full = checkpoint_document(FULL_PATH, REF, cp, metadata, CONFIG)
    return fast, full


@settings(max_examples=300, deadline=None)
@given(metadata=st.one_of(PLAIN_METADATA, METADATA))
def test_the_fast_path_stores_what_the_full_path_stores(metadata: dict[str, Any]) -> None:
    try:
        fast, full = both_documents(metadata)
    except (TypeError, ValueError):
        # Refused metadata: the full path refuses it too (asserted below).
        assert exact_copy(metadata) is NOT_EXACT
        return
    # The same bytes: key order included, and NaN compared as stored.
    assert bson.encode(fast) == bson.encode(full)


@pytest.mark.parametrize(
    "metadata",
    [
        {"source": "loop", "step": 3, "parents": {}},
        {"source": "input", "step": -1, "parents": {"": "1ef-parent"}, "run_id": "r-1"},
        {"source": "update", "step": 2, "parents": {}, "user": "ü", "score": 0.5},
        {"nested": {"k": [1, None, "x", [2.5]]}, "none": None},
        # Filters on these are answered in Python or by an exact server condition: they
        # need nothing stored beside the readable copy.
        {"flag": True, "tags": ["a"], "d": {"a": 1, "b": 2}, "nan": float("nan")},
    ],
)
def test_langgraph_metadata_takes_the_fast_path(metadata: dict[str, Any]) -> None:
    assert exact_copy(metadata) == metadata


@pytest.mark.parametrize(
    "metadata",
    [
        {"big": 2**63},
        {"a.b": 1},
        {"$op": 1},
        {"t": ("a",)},  # a tuple reads back as a list
        {"s": "\ud800"},  # a lone surrogate: no BSON string
        {"k\ud800": 1},
        {"nested": {"k": {"x": b"bytes"}}},
    ],
)
def test_metadata_that_needs_more_takes_the_full_path(metadata: dict[str, Any]) -> None:
    assert exact_copy(metadata) is NOT_EXACT


def test_the_readable_copy_is_not_the_callers_objects() -> None:
    """The driver may encode the document after the caller changed its metadata."""
    parents: dict[str, Any] = {"": "p"}
    nested: list[Any] = [1]
    metadata = {"parents": parents, "w": {"k": nested}}
    copy = exact_copy(metadata)
    parents[""] = "changed"
    nested.append(2)
    assert copy == {"parents": {"": "p"}, "w": {"k": [1]}}


class Text(str):
    pass


class Level(enum.IntEnum):
    HIGH = 1


def nested(depth: int) -> dict[str, Any]:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return {"deep": value}


@pytest.mark.parametrize(
    "metadata",
    [
        {"d": {"k": Text("x")}},  # a str subclass reads back as a str
        {"d": Text("x")},
        {"d": {"k": Level.HIGH}},  # an int enum reads back as an int
        {"d": OrderedDict(a=1)},
        {"d": {"k": ("a",)}},
        nested(40),  # deep: the full path, which refuses what the serializer refuses
    ],
)
def test_exact_types_only(metadata: dict[str, Any]) -> None:
    assert exact_copy(metadata) is NOT_EXACT


def test_metadata_too_deep_for_the_serializer_is_refused_as_before() -> None:
    with pytest.raises(TypeError, match=r"metadata.*cannot be serialized"):
        checkpoint_document(CODEC, REF, checkpoint({"a": 1}), as_metadata(nested(300)), CONFIG)


class Shouting(JsonPlusSerializer):
    """A serializer whose round trip changes plain strings."""

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        value = super().loads_typed(data)
        return {k: v.upper() if isinstance(v, str) else v for k, v in value.items()}


def test_another_serializer_is_consulted() -> None:
    """The fast path assumes LangGraph's serializer; with another one the metadata takes
    the full path, whose readable copy is what that serializer gives back."""
    codec = Codec(Shouting())
    assert not codec.round_trips_plain
    doc = checkpoint_document(codec, REF, checkpoint({"a": 1}), {"source": "loop"}, CONFIG)
    assert doc["metadata"] == {"source": "LOOP"}
