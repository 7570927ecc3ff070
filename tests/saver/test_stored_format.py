"""The stored shape of checkpoint and write documents: what each holds, and nothing twice.

Every byte of a document is paid for in every checkpoint of every thread; these tests pin
that ids are stored once (in `_id`, plus `thread_id`, the shard key) and that the
serialized checkpoint leaves out what is stored beside it.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any

import bson
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo import CheckpointTooLargeError
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._documents import (
    _write_size_bound,
    bson_size,
    checkpoint_document,
    write_documents,
)
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._keys import MAX_ID_BYTES, CheckpointRef, upsert_filter
from langgraph.checkpoint.mongo._schema import MAX_DOCUMENT_SIZE
from support.helpers import checkpoint, config, either, listed, new_thread

# Fields of the metadata, which their own tests pin.
METADATA_FIELDS = {"metadata", "serialized_metadata", "replayed_channels"}


async def _stored_documents(saver: Any, thread: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    query = {"thread_id": thread}
    [doc] = await maybe_await(saver.checkpoint_collection.find(query).to_list(None))
    writes = await maybe_await(saver.writes_collection.find(query).to_list(None))
    return doc, writes


async def test_ids_are_stored_once_in_each_document(saver: Any) -> None:
    thread = new_thread()
    cp = checkpoint({"a": 1})
    stored = await either(saver).put(config(thread, "ns"), cp, {}, cp["channel_versions"])
    await either(saver).put_writes(stored, [("a", 2)], "task", "path")
    doc, [write] = await _stored_documents(saver, thread)
    key = {"thread_id": thread, "checkpoint_ns": "ns", "checkpoint_id": cp["id"]}
    assert doc["_id"] == key
    assert list(doc["_id"]) == list(key)
    assert set(doc) - METADATA_FIELDS == {
        "_id",
        "thread_id",
        "parent_checkpoint_id",
        "checkpoint",
        "channel_values",
    }
    assert doc["thread_id"] == thread
    assert write == {
        "_id": {"checkpoint": key, "task_id": "task", "idx": 0},
        "thread_id": thread,
        "task_path": "path",
        "channel": "a",
        "value": write["value"],
    }
    # Only the order MongoDB promises: `_id` first, and an embedded document's fields as
    # written (its `_id` equals the key only in that order). An upsert's other fields come
    # from the update operators, which MongoDB 5.0+ applies in lexicographic order and
    # the stand-ins in the order sent.
    assert next(iter(doc)) == "_id"
    assert next(iter(write)) == "_id"
    assert list(write["_id"]) == ["checkpoint", "task_id", "idx"]
    assert list(write["_id"]["checkpoint"]) == list(key)


async def test_the_serialized_checkpoint_leaves_out_its_id_and_values(saver: Any) -> None:
    thread = new_thread()
    cp = checkpoint({"a": [1, 2], "b": "x"})
    stored = await either(saver).put(config(thread), cp, {}, cp["channel_versions"])
    doc, _ = await _stored_documents(saver, thread)
    blob = saver.storage.codec.decode(doc["checkpoint"])
    assert "id" not in blob
    assert "channel_values" not in blob
    assert blob == {k: v for k, v in cp.items() if k not in ("id", "channel_values")}
    got = await either(saver).get_tuple(stored)
    assert got is not None
    assert got.checkpoint == cp
    [found] = await listed(saver, config(thread))
    assert found.checkpoint == cp


async def test_msgpack_values_carry_no_type(saver: Any) -> None:
    """LangGraph's serializer writes "msgpack" for almost every value: it is implied, and
    a value stored as a field of its own is then its bare bytes. Any other type is named."""
    thread = new_thread()
    cp = checkpoint({"text": "hello", "raw": b"\x00\x01"})
    stored = await either(saver).put(config(thread), cp, {}, cp["channel_versions"])
    await either(saver).put_writes(stored, [("text", "hi"), ("raw", b"\x02")], "task")
    doc, writes = await _stored_documents(saver, thread)
    assert isinstance(doc["checkpoint"], bytes)
    entries = {entry["channel"]: entry for entry in doc["channel_values"]}
    assert "type" not in entries["text"]
    assert entries["raw"]["type"] == "bytes"
    values = {write["channel"]: write["value"] for write in writes}
    assert isinstance(values["text"], bytes)
    assert values["raw"] == {"type": "bytes", "data": b"\x02"}
    got = await either(saver).get_tuple(stored)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"text": "hello", "raw": b"\x00\x01"}
    assert got.pending_writes is not None
    assert sorted(got.pending_writes) == [("task", "raw", b"\x02"), ("task", "text", "hi")]


async def test_a_none_write_is_stored_as_null(saver: Any) -> None:
    """Every edge of a graph writes `None` (`branch:to:<node>`): it costs a null."""
    thread = new_thread()
    cp = checkpoint({"a": 1})
    stored = await either(saver).put(config(thread), cp, {}, cp["channel_versions"])
    await either(saver).put_writes(stored, [("branch:to:node", None)], "task")
    _, [write] = await _stored_documents(saver, thread)
    assert "value" in write
    assert write["value"] is None
    got = await either(saver).get_tuple(stored)
    assert got is not None
    assert got.pending_writes == [("task", "branch:to:node", None)]


async def test_channel_entries_leave_their_versions_to_the_checkpoint(saver: Any) -> None:
    """An entry is `{channel, data[, type][, compression]}`: its version is stored once, in
    the serialized checkpoint's `channel_versions`, and get_tuple returns it from there."""
    thread = new_thread()
    cp = checkpoint({"text": "hello"})
    stored = await either(saver).put(config(thread), cp, {}, cp["channel_versions"])
    doc, _ = await _stored_documents(saver, thread)
    assert [sorted(entry) for entry in doc["channel_values"]] == [["channel", "data"]]
    got = await either(saver).get_tuple(stored)
    assert got is not None
    assert got.checkpoint["channel_versions"] == cp["channel_versions"]


@pytest.mark.parametrize("compression", [None, "zstd"])
@pytest.mark.parametrize("size", [5_000, 100_000])  # encoded, and counted around
def test_the_size_check_counts_what_bson_encodes(compression: str | None, size: int) -> None:
    """The size check counts large payloads by length instead of encoding them: it must
    give `len(bson.encode(doc))` exactly, for every shape a stored value takes."""
    codec = Codec(JsonPlusSerializer(), compression)  # type: ignore[arg-type]
    values = {"big": "x" * size, "raw": os.urandom(size), "none": None, "small": 1}
    cp = checkpoint(values)
    ref = CheckpointRef("thread", "ns", None)
    doc = checkpoint_document(codec, ref, cp, {"k": b"exotic"}, {}, None)
    assert bson_size(doc) == len(bson.encode(doc))
    writes = write_documents(
        codec, CheckpointRef("thread", "ns", cp["id"]), list(values.items()), "task", ""
    )
    for _, write in writes:
        assert bson_size(write) == len(bson.encode(write))


class _LongTyped:
    """A serializer that names every value's type with a long name."""

    def __init__(self, letter: str) -> None:
        self.letter = letter

    def dumps_typed(self, value: Any) -> tuple[str, bytes]:
        return self.letter * 5_000, repr(value).encode()

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        raise NotImplementedError


@pytest.mark.parametrize("compression", [None, "zstd"])
@pytest.mark.parametrize(
    "serde",
    [JsonPlusSerializer(), _LongTyped("t"), _LongTyped("\u00fc")],
    ids=["jsonplus", "typed", "non-ascii-type"],
)
def test_a_write_measured_by_its_bound_is_never_larger_than_the_bound(
    compression: str | None, serde: Any
) -> None:
    """`put_writes` does not encode a write far below the limits to measure it: it takes
    a bound from its value's length. The bound is never below the document's BSON size,
    with the longest identifiers `require_str` accepts (64 KiB of 4-byte characters each),
    a TTL stamp, a long type name and compression; a serializer's answer the bound cannot
    count (a type name that is not ASCII) has no bound, so the document is measured."""
    longest = "\U0001f600" * (MAX_ID_BYTES // 4)
    codec = Codec(serde, compression)  # type: ignore[arg-type]
    ref = CheckpointRef(longest, longest, longest)
    values = [None, 1, "x" * 5_000, os.urandom(5_000), b""]
    writes = [(longest, value) for value in values]
    stamp = datetime.now(timezone.utc)
    documents = write_documents(codec, ref, writes, longest, longest, stamp)
    assert len(documents) == len(values)
    for _, doc in documents:
        bound = _write_size_bound(doc["value"])
        if isinstance(serde, _LongTyped) and serde.letter != "t" and doc["value"] is not None:
            assert bound is None
        else:
            assert bound is not None
            assert len(bson.encode(doc)) <= bound


@pytest.mark.parametrize(
    "stored",
    [bytearray(b"abc"), "text", {"data": b"abc", "type": b"bytes"}, {"data": "abc"}],
    ids=["bytearray", "str", "bytes-type", "str-data"],
)
def test_a_write_of_another_shape_than_bytes_and_str_has_no_bound(stored: Any) -> None:
    """What a custom serializer may give that the bound cannot count is measured instead
    (BSON refuses what it cannot encode there, before anything is sent)."""
    assert _write_size_bound(stored) is None


class _Typed:
    """A serializer that names every value's type (no `msgpack` to leave out)."""

    def dumps_typed(self, value: Any) -> tuple[str, bytes]:
        return "json", repr(value).encode()

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        raise NotImplementedError


@pytest.mark.parametrize("compression", [None, "zlib", "zstd"])
@pytest.mark.parametrize("serde", [JsonPlusSerializer(), _Typed()], ids=["jsonplus", "typed"])
@pytest.mark.parametrize(
    "value",
    [None, 1, "small", "x" * 5_000, os.urandom(5_000), b""],
    ids=["none", "int", "str", "compressible", "incompressible", "empty"],
)
def test_a_stored_field_is_the_stored_value_with_nothing_to_say_left_out(
    compression: str | None, serde: Any, value: Any
) -> None:
    """`encode_field` (a checkpoint's blob, a write's value) stores what `encode` stores,
    as null for the serializer's null and as bare bytes when the `StoredValue` holds only
    them (an uncompressed value of the implied type): whatever the type, size and
    compression."""
    codec = Codec(serde, compression)  # type: ignore[arg-type]
    stored = codec.encode(value)
    if stored == {"data": b"", "type": "null"}:
        expected: Any = None
    elif stored.keys() == {"data"}:
        expected = stored["data"]
    else:
        expected = stored
    assert codec.encode_field(value) == expected


def _raw_checkpoint(raw_bytes: int) -> Any:
    """`checkpoint_document` for a checkpoint holding `raw_bytes` bytes."""
    codec = Codec(JsonPlusSerializer())
    cp = checkpoint({"raw": b"\0" * raw_bytes})
    return lambda: checkpoint_document(codec, CheckpointRef("thread", "ns", None), cp, {}, {})


def test_the_size_limit_counts_the_upsert_filter_at_the_byte() -> None:
    """A document whose upsert (document and filter, which repeats its key) is exactly
    16 MiB is accepted, one byte more is refused, though the document alone is under."""
    small = _raw_checkpoint(100_000)()
    upsert = len(bson.encode(small)) + len(bson.encode(upsert_filter(small)))
    fitting = 100_000 + MAX_DOCUMENT_SIZE - upsert  # a byte of payload is a byte of BSON
    doc = _raw_checkpoint(fitting)()
    assert len(bson.encode(doc)) + len(bson.encode(upsert_filter(doc))) == MAX_DOCUMENT_SIZE
    with pytest.raises(CheckpointTooLargeError):
        _raw_checkpoint(fitting + 1)()
