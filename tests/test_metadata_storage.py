"""Which copies of the metadata a checkpoint document keeps, and that each read gets the
metadata back exactly from whichever copy is there (see `_documents` and `_metadata`)."""

from __future__ import annotations

import datetime as dt
import enum
import math
import uuid
from decimal import Decimal
from fractions import Fraction
from typing import Any

import bson
import pytest
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from bson.son import SON
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._metadata import _equals_term, _present_term, from_readable
from support.helpers import call, config, ids, listed, new_thread, put


class Level(enum.IntEnum):
    HIGH = 1


async def stored_document(saver: Any, stored: Any) -> Any:
    checkpoint_id = stored["configurable"]["checkpoint_id"]
    return await maybe_await(
        saver.checkpoint_collection.find_one({"_id.checkpoint_id": checkpoint_id})
    )


def same_types(a: Any, b: Any) -> bool:
    """Equal, NaN included, with the same type at every level."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_types(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_types(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


# Metadata whose readable copy reads back as itself: no serialized copy.
EXACT: list[dict[str, Any]] = [
    {"run_id": "r", "writes": {"node": {"messages": [{"k": None}]}}},
    {"n": 2**40, "small": -3, "edge": -(2**63), "top": 2**63 - 1},
    {"f": 0.5, "z": -0.0, "inf": math.inf, "nan": math.nan, "b": True, "none": None},
    {"nested": [[1, "a"], {"x": [True, 2.5]}], "empty": {}, "list": []},
]
# Metadata whose readable copy differs from it: the serialized copy stays.
INEXACT: list[dict[str, Any]] = [
    {"n": 2**63},
    {"n": 2**64 - 1},
    {"b": b"bytes"},
    {"level": Level.HIGH},
    {"d": Decimal("1.5")},
    {"day": dt.datetime(2026, 1, 1)},
    {"id": uuid.UUID(int=1)},
    {"a.b": 1},
    {"nested": {"$op": 1}},
    {"nested": {1: "x"}},
    {"set": {1, 2}},
]


@pytest.mark.parametrize("metadata", EXACT + INEXACT, ids=repr)
async def test_the_serialized_copy_is_kept_only_where_the_readable_one_is_not_exact(
    saver: Any, metadata: dict[str, Any]
) -> None:
    stored = await put(saver, new_thread(), metadata=metadata)
    doc = await stored_document(saver, stored)
    assert ("serialized_metadata" in doc) == (metadata in INEXACT)
    got = await call(saver, "get_tuple", stored)
    for key, value in metadata.items():
        assert same_types(got.metadata[key], value), key


async def test_a_checkpoint_stored_again_drops_the_copies_it_no_longer_needs(saver: Any) -> None:
    thread = new_thread()
    first = await put(saver, thread, metadata={"k": b"bytes"})
    checkpoint_id = first["configurable"]["checkpoint_id"]
    assert "serialized_metadata" in await stored_document(saver, first)
    again = await put(saver, thread, metadata={"k": "text"}, id=checkpoint_id)
    doc = await stored_document(saver, again)
    assert "serialized_metadata" not in doc
    assert "metadata_terms" not in doc
    assert (await call(saver, "get_tuple", again)).metadata["k"] == "text"
    assert await listed(saver, config(thread), filter={"k": b"bytes"}) == []
    assert ids(await listed(saver, config(thread), filter={"k": "text"})) == [checkpoint_id]


async def test_delete_for_runs_reads_the_run_id_from_either_copy(saver: Any) -> None:
    thread = new_thread()
    plain = await put(saver, thread, metadata={"run_id": "r1"})
    exotic = await put(saver, thread, metadata={"run_id": "r1", "b": b"x"})
    other = await put(saver, thread, metadata={"run_id": "r2", "b": b"x"})
    assert "serialized_metadata" not in await stored_document(saver, plain)
    assert "serialized_metadata" in await stored_document(saver, exotic)
    await call(saver, "delete_for_runs", ["r1"])
    assert await call(saver, "get_tuple", plain) is None
    assert await call(saver, "get_tuple", exotic) is None
    assert await call(saver, "get_tuple", other) is not None


@pytest.mark.parametrize(
    "options",
    [CodecOptions(), CodecOptions(document_class=SON), CodecOptions(document_class=dict)],
    ids=["default", "SON", "dict"],
)
def test_a_readable_copy_reads_back_in_the_serializers_types(options: CodecOptions) -> None:
    metadata = {"n": 2**40, "m": 1, "d": {"x": [{"y": 2**50}, True, None]}}
    read = bson.decode(bson.encode({"metadata": metadata}), codec_options=options)["metadata"]
    assert same_types(from_readable(read), metadata)
    raw = RawBSONDocument(bson.encode(metadata))
    assert same_types(from_readable(raw), metadata)


# Values stored under "k" (one checkpoint each; `MISSING`: no "k" at all), chosen where
# BSON equality and Python's `==` part ways.
MISSING = object()
STORED_VALUES: list[Any] = [
    MISSING,
    None,
    [None],
    True,
    1,
    1.0,
    0,
    -0.0,
    [1],
    [1, 2],
    "abc",
    "00000000-0000-0000-0000-000000000001",
    uuid.UUID(int=1),
    1e20,
    2**64 - 1,
    2**63 - 1,
    {"a": 1},
    {"a": True},
    {"a": [1]},
    {"a": 1, "b": 2},
    {"b": 2, "a": 1},
    {"a": {"b": 1, "c": 2}},
    {"a": {"c": 2, "b": 1}},
    Decimal("0.5"),
]
FILTER_VALUES: list[Any] = [
    None,
    [None],
    True,
    False,
    1,
    1.0,
    Decimal(1),
    Fraction(1),
    complex(1, 0),
    0,
    -0.0,
    [1],
    (1,),
    [1, 2],
    2,
    "abc",
    "00000000-0000-0000-0000-000000000001",
    uuid.UUID(int=1),
    1e20,
    10**20,
    10**20 + 1,
    Decimal("1e20"),
    2**63 - 1,
    float(2**63),
    2**64 - 1,
    float(2**64),
    0.5,
    Decimal("0.5"),
    Fraction(1, 2),
    {"a": 1},
    {"a": 1.0},
    {"a": True},
    {"a": [1]},
    {"a": [True]},
    {"a": (1,)},
    {"a": 1, "b": 2},
    {"b": 2, "a": 1},
    {"a": {"b": 1, "c": 2}},
    {"a": {"c": 2, "b": 1}},
    {},
    "\ud800",
    {"\ud800": 1},
]
# Keys a server would read as paths or operators, and the empty key.
UNSAFE_KEYS = ["a.b", "$x", ""]


def version_1_terms(metadata: dict[str, Any]) -> list[bytes]:
    """The terms version 1 stored: two for every key that is not None."""
    return [
        term
        for key, value in metadata.items()
        if value is not None
        for term in (_present_term(key), _equals_term(key, value))
    ]


@pytest.mark.parametrize("version", [2, 1])
async def test_filters_select_what_python_equality_selects(saver: Any, version: int) -> None:
    thread = new_thread()
    memory = InMemorySaver()
    for position, value in enumerate(STORED_VALUES):
        metadata: dict[str, Any] = {"i": position}
        if value is not MISSING:
            metadata["k"] = value
        metadata[UNSAFE_KEYS[position % 3]] = value if value is not MISSING else 1
        stored = await put(saver, thread, metadata=metadata)
        await put(memory, thread, metadata=metadata, id=stored["configurable"]["checkpoint_id"])
        if version == 1:  # a document stored before version 2, with all its terms
            returned = (await call(saver, "get_tuple", stored)).metadata
            await maybe_await(
                saver.checkpoint_collection.update_one(
                    {"_id.checkpoint_id": stored["configurable"]["checkpoint_id"]},
                    {"$set": {"metadata_terms": version_1_terms(returned)}},
                )
            )
    filters = [{"k": value} for value in FILTER_VALUES]
    filters += [{key: value} for key in UNSAFE_KEYS for value in FILTER_VALUES]
    filters += [{"k": 1, "i": 4}, {"k": None, "a.b": None}, {"k": [1], "$x": 1}]
    selected = 0
    for flt in filters:
        want = ids(await listed(memory, config(thread), filter=flt))
        assert ids(await listed(saver, config(thread), filter=flt)) == want, flt
        selected += bool(want)
    assert selected > len(filters) // 2  # not vacuous


async def test_metadata_of_plain_values_stores_no_terms(saver: Any) -> None:
    plain = await put(saver, new_thread(), metadata={"run_id": "r", "step": 3, "k": None})
    assert "metadata_terms" not in await stored_document(saver, plain)
    exotic = await put(saver, new_thread(), metadata={"run_id": "r", "flag": True})
    assert len((await stored_document(saver, exotic))["metadata_terms"]) == 2


@pytest.mark.parametrize("channel", ["messages", "a.b"])
async def test_replayed_channels_are_named_by_the_readable_counters_or_stored_apart(
    saver: Any, channel: str
) -> None:
    thread = new_thread()
    seed = await put(saver, thread, values={channel: "snapshot"})
    replaying = await put(
        saver,
        thread,
        parent=seed["configurable"]["checkpoint_id"],
        metadata={"counters_since_delta_snapshot": {channel: 1}},
    )
    doc = await stored_document(saver, replaying)
    # A key the readable copy leaves out ("a.b") is not named there: stored apart.
    assert doc.get("replayed_channels") == (None if channel == "messages" else [channel])
    await call(saver, "prune", [thread], strategy="keep_latest")
    # The seed stays: the surviving checkpoint rebuilds the channel from it.
    assert await call(saver, "get_tuple", seed) is not None
    plain = await put(saver, thread, parent=replaying["configurable"]["checkpoint_id"])
    assert "replayed_channels" not in await stored_document(saver, plain)
    await call(saver, "prune", [thread], strategy="keep_latest")
    assert await call(saver, "get_tuple", seed) is None
