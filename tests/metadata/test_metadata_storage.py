"""Which copies of the metadata a checkpoint document keeps, that each read gets the
metadata back exactly from whichever copy is there, and that `list(filter=...)` selects
what Python equality selects: by an exact server condition where one exists, else by a
check after the read (see `_documents` and `_metadata`)."""

from __future__ import annotations

import datetime as dt
import enum
import math
import os
import uuid
from decimal import Decimal
from fractions import Fraction
from typing import Any

import bson
import pytest
from bson.codec_options import CodecOptions
from bson.decimal128 import Decimal128
from bson.raw_bson import RawBSONDocument
from bson.son import SON
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo._commands import Command, NextDocument, OpenCursor
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._metadata import from_readable
from support.backends import MONGODB_URI, Backend, CommandLog
from support.helpers import config, either, ids, listed, methods, new_thread, put


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
    got = await either(saver).get_tuple(stored)
    assert got is not None
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
    assert (await either(saver).get_stored(again)).metadata["k"] == "text"
    assert await listed(saver, config(thread), filter={"k": b"bytes"}) == []
    assert ids(await listed(saver, config(thread), filter={"k": "text"})) == [checkpoint_id]


async def test_delete_for_runs_reads_the_run_id_from_either_copy(saver: Any) -> None:
    thread = new_thread()
    plain = await put(saver, thread, metadata={"run_id": "r1"})
    exotic = await put(saver, thread, metadata={"run_id": "r1", "b": b"x"})
    other = await put(saver, thread, metadata={"run_id": "r2", "b": b"x"})
    assert "serialized_metadata" not in await stored_document(saver, plain)
    assert "serialized_metadata" in await stored_document(saver, exotic)
    await either(saver).delete_for_runs(["r1"])
    assert await either(saver).get_tuple(plain) is None
    assert await either(saver).get_tuple(exotic) is None
    assert await either(saver).get_tuple(other) is not None


@pytest.mark.parametrize(
    "options",
    [CodecOptions(), CodecOptions(document_class=SON), CodecOptions(document_class=dict)],
    ids=["default", "SON", "dict"],
)
def test_a_readable_copy_reads_back_in_the_serializers_types(
    options: CodecOptions[Any],
) -> None:
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
    Decimal(1),
    2**63,
    float(2**63),
    ("a",),
    "a",
    ["a"],
    b"a",
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
    "a",
    ["a"],
    ("a",),
    b"a",
    2**63,
    float(2**63),
    math.nan,
    "\ud800",
    {"\ud800": 1},
]
# Keys a server would read as paths or operators, and the empty key.
UNSAFE_KEYS = ["a.b", "$x", ""]


async def test_filters_select_what_python_equality_selects(saver: Any) -> None:
    thread = new_thread()
    memory = InMemorySaver()
    for position, value in enumerate(STORED_VALUES):
        metadata: dict[str, Any] = {"i": position}
        if value is not MISSING:
            metadata["k"] = value
        metadata[UNSAFE_KEYS[position % 3]] = value if value is not MISSING else 1
        stored = await put(saver, thread, metadata=metadata)
        await put(memory, thread, metadata=metadata, id=stored["configurable"]["checkpoint_id"])
    filters = [{"k": value} for value in FILTER_VALUES]
    filters += [{key: value} for key in UNSAFE_KEYS for value in FILTER_VALUES]
    filters += [{"k": 1, "i": 4}, {"k": None, "a.b": None}, {"k": [1], "$x": 1}]
    selected = 0
    for flt in filters:
        want = ids(await listed(memory, config(thread), filter=flt))
        assert ids(await listed(saver, config(thread), filter=flt)) == want, flt
        for limit in (1, 2):
            got = ids(await listed(saver, config(thread), filter=flt, limit=limit))
            assert got == want[:limit], (flt, limit)
        selected += bool(want)
    assert selected > len(filters) // 2  # not vacuous


async def test_the_readable_copy_shows_each_value_and_no_terms_are_stored(saver: Any) -> None:
    metadata = {
        "source": "loop",
        "flag": True,
        "tags": ["a", 1],
        "t": ("a",),
        "big": 2**64 - 1,
        "d": Decimal("1.5"),
        "one": Decimal(1),
        "id": uuid.UUID(int=1),
        "a.b": 1,
    }
    stored = await put(saver, new_thread(), metadata=metadata)
    doc = await stored_document(saver, stored)
    readable = from_readable(doc["metadata"])
    assert "a.b" not in readable  # a key a query would read as a path
    expected = {
        "source": "loop",
        "flag": True,
        "tags": ["a", 1],
        "t": ["a"],
        "big": Decimal128(str(2**64 - 1)),
        "d": 1.5,  # numbers of other types: the int64 or float they equal
        "one": 1,
        "id": {"repr": repr(uuid.UUID(int=1))},  # equal to no plain filter value
    }
    assert {k: readable[k] for k in expected} == expected
    assert "serialized_metadata" in doc  # the readable copy is not exact
    assert set(doc) <= {
        "_id",
        "thread_id",
        "parent_checkpoint_id",
        "checkpoint",
        "channel_values",
        "metadata",
        "serialized_metadata",
    }
    got = await either(saver).get_tuple(stored)
    assert got is not None
    assert got.metadata["id"] == uuid.UUID(int=1)
    assert got.metadata["a.b"] == 1


def _list_pipelines(commands: list[Command]) -> list[list[dict[str, Any]]]:
    return [c.args[0] for c in commands if c.method == "aggregate"]


async def test_a_filter_of_plain_values_is_one_equality_per_key_an_index_serves(
    saver: Any, sent_commands: list[Command]
) -> None:
    """`{"source": "loop", "user_id": "u1"}` is sent as an equality on each
    `metadata.<key>` (arrays excluded: they would match by element), with the server's
    `$limit`: an index a user creates on `metadata.user_id` serves it."""
    thread = new_thread()
    for user in ("u1", "u2", "u1"):
        await put(saver, thread, metadata={"source": "loop", "user_id": user})
    sent_commands.clear()
    found = await listed(saver, None, filter={"source": "loop", "user_id": "u1"}, limit=5)
    assert len(found) == 2
    [pipeline] = _list_pipelines(sent_commands)
    assert pipeline[0] == {
        "$match": {
            "metadata.source": {"$eq": "loop", "$not": {"$type": "array"}},
            "metadata.user_id": {"$eq": "u1", "$not": {"$type": "array"}},
        }
    }
    assert {"$limit": 5} in pipeline
    sent_commands.clear()
    await listed(saver, None, filter={"flag": True}, limit=1)
    [pipeline] = _list_pipelines(sent_commands)
    assert pipeline[0]["$match"] == {
        "metadata.flag": {"$in": [True, 1], "$not": {"$type": "array"}},
    }


@pytest.mark.mongodb_lookup
async def test_a_post_checked_filter_honours_limit_and_before_while_streaming(
    backend: Backend, sent_commands: list[Command]
) -> None:
    """A list filter is checked in Python after the read: the server cannot apply `limit`
    (its `$limit` would count rejected checkpoints), so the list stops after `limit`
    accepted ones, from one streamed aggregation (more batches only as read)."""
    log = CommandLog()
    async with backend.saver(log) as saver:
        thread = new_thread()
        memory = InMemorySaver()
        stored = []
        for i in range(260):
            metadata = {"tags": ["a"] if i % 3 == 0 else ["a", "b"], "i": i}
            cfg = await put(saver, thread, metadata=metadata)
            await put(memory, thread, metadata=metadata, id=cfg["configurable"]["checkpoint_id"])
            stored.append(cfg)
        flt = {"tags": ["a"]}
        for limit, before in [(None, None), (3, None), (2, stored[200]), (60, stored[250])]:
            want = ids(await listed(memory, config(thread), filter=flt, limit=limit, before=before))
            log.reset()
            sent_commands.clear()
            got = ids(await listed(saver, config(thread), filter=flt, limit=limit, before=before))
            assert got == want, (limit, before)
            assert methods(sent_commands) == ["aggregate"]
            # On the wire (empty on the mock): the aggregation's further batches only.
            assert set(log.names[1:]) <= {"getMore", "killCursors"}
        assert len(want) == 60  # not vacuous: the limit cut the list


@pytest.mark.integration
@pytest.mark.mongodb_planner
async def test_a_users_index_on_a_metadata_key_serves_their_filter(
    sent_commands: list[Command],
) -> None:
    """docs/stored-format.md's recipe: an index on `metadata.user_id` (with `list`'s sort)
    serves `list(None, filter={"user_id": ...})` across threads."""
    from langgraph.checkpoint.mongo._schema import Field
    from support.real_server import Plan

    async with Backend("async", MONGODB_URI).saver() as saver:
        await maybe_await(
            saver.checkpoint_collection.create_index(
                [
                    ("metadata.user_id", 1),
                    (Field.ID_CHECKPOINT_ID, -1),
                    (Field.THREAD_ID, 1),
                    (Field.ID_CHECKPOINT_NS, 1),
                ],
                name="metadata_user_id",
            )
        )
        for i in range(30):
            await put(saver, new_thread(), metadata={"user_id": f"u{i % 3}"})
        sent_commands.clear()
        assert len(await listed(saver, None, filter={"user_id": "u1"})) == 10
        [pipeline] = _list_pipelines(sent_commands)
        explain = {"aggregate": saver.checkpoint_collection_name, "pipeline": pipeline}
        explained = await maybe_await(
            saver.db.command({"explain": {**explain, "cursor": {}}, "verbosity": "executionStats"})
        )
        assert "metadata_user_id" in Plan.read(explained).indexes


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
    await either(saver).prune([thread], strategy="keep_latest")
    # The seed stays: the surviving checkpoint rebuilds the channel from it.
    assert await either(saver).get_tuple(seed) is not None
    plain = await put(saver, thread, parent=replaying["configurable"]["checkpoint_id"])
    assert "replayed_channels" not in await stored_document(saver, plain)
    await either(saver).prune([thread], strategy="keep_latest")
    assert await either(saver).get_tuple(seed) is None


async def test_a_post_checked_filter_keeps_its_limit_when_the_rest_is_read_apart(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A join too large to return stops the stream; the rest of the list is read apart in
    pages, still checked in Python and still stopping after `limit` accepted checkpoints.
    (The wire server's limit is lowered to 64 KiB so that small documents stand in for
    16 MiB ones.)"""
    if backend.wire is None:
        pytest.skip("needs the wire server, whose limit the test sets")
    from langgraph.checkpoint.mongo._operations import read
    from langgraph.checkpoint.mongo.testing._wire import cursors

    monkeypatch.setattr(cursors, "MAX_INTERNAL_OBJECT_SIZE", 64 * 1024)
    monkeypatch.setattr(read, "LIST_APART_PAGE", 2)
    log = CommandLog()
    async with backend.saver(log) as saver:
        thread = new_thread()
        memory = InMemorySaver()
        for i in range(12):
            metadata = {"tags": ["a"] if i % 2 else ["a", "b"]}
            values = {"blob": os.urandom(40 * 1024)} if i == 9 else None
            cfg = await put(saver, thread, metadata=metadata, values=values)
            same = cfg["configurable"]["checkpoint_id"]
            await put(memory, thread, metadata=metadata, values=values, id=same)
            if i == 9:
                writes = [("a", os.urandom(20 * 1024)), ("b", os.urandom(20 * 1024))]
                await either(saver).put_writes(cfg, writes, "t")
                await either(memory).put_writes(cfg, writes, "t")
        for limit in (None, 1, 3, 5):
            flt = {"tags": ["a"]}
            want = await listed(memory, config(thread), filter=flt, limit=limit)
            log.reset()
            got = await listed(saver, config(thread), filter=flt, limit=limit)
            if limit != 1:  # the big checkpoint is the second match: read apart
                assert log.names.count("aggregate") > 1, log.names
            assert ids(got) == ids(want), limit
            assert [t.pending_writes for t in got] == [t.pending_writes for t in want]
        assert len(want) == 5  # not vacuous: the limit cut the list


def test_the_core_checks_each_document_and_stops_after_the_limit() -> None:
    """`list` is one core generator (`list_checkpoints`) that the savers only answer: with a
    filter checked in Python it sends no `$limit`, reads one document at a time and stops
    asking once `limit` checkpoints were accepted."""
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from langgraph.checkpoint.mongo import _operations as ops
    from langgraph.checkpoint.mongo._channel_values import RecentValues
    from langgraph.checkpoint.mongo._codec import Codec
    from langgraph.checkpoint.mongo._documents import checkpoint_document
    from langgraph.checkpoint.mongo._keys import CheckpointRef
    from langgraph.checkpoint.mongo._queries import WritesJoin
    from langgraph.checkpoint.mongo._runners import run_listing
    from support.helpers import checkpoint

    codec = Codec(JsonPlusSerializer())
    cfg: RunnableConfig = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    docs: list[dict[str, Any]] = [
        {
            **checkpoint_document(
                codec, CheckpointRef("t", "", None), checkpoint(), {"tags": tags}, cfg
            ),
            "pending_writes": [],
        }
        for tags in (["a", "b"], ["a"], ["b"], ["a"], ["a"], ["a"])
    ]
    requests: list[Any] = []

    def answer(request: Any) -> Any:
        requests.append(request)
        if isinstance(request, OpenCursor):
            assert not any("$limit" in stage for stage in request.command.args[0])
            return iter(docs)
        assert isinstance(request, NextDocument)
        return next(request.cursor, None)

    storage = ops.Storage(codec, WritesJoin("writes"), None, RecentValues())
    listing = ops.list_checkpoints(storage, None, filter={"tags": ["a"]}, before=None, limit=2)
    found = list(run_listing(listing, answer))
    assert [t.metadata.get("tags") for t in found] == [["a"], ["a"]]
    assert [t.checkpoint["id"] for t in found] == [
        docs[1]["_id"]["checkpoint_id"],
        docs[3]["_id"]["checkpoint_id"],
    ]
    assert len(requests) == 1 + 4  # the cursor, then the first four documents only
