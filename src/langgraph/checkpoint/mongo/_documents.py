"""How checkpoints and pending writes become documents, and documents become tuples.

A checkpoint document embeds the whole serialized checkpoint (one read returns it
whole) and keeps the metadata as readable BSON, plus the serializer's copy where that
does not read back as the metadata `get_tuple` returns (see `_metadata`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple, TypeVar, cast

import bson
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_metadata,
    writes_sort_key,
)

from langgraph.checkpoint.mongo._channel_values import (
    StoredValues,
    decode_channel_values,
    encode_channel_values,
)
from langgraph.checkpoint.mongo._chunks import split_checkpoint, split_write
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._keys import (
    MAX_ID_BYTES,
    CheckpointRef,
    checkpoint_key,
    key_fields,
    require_str,
    short_repr,
    upsert_filter,
    write_key,
)
from langgraph.checkpoint.mongo._metadata import (
    DELTA_COUNTERS,
    NOT_EXACT,
    exact_copy,
    from_readable,
    readable_metadata,
)
from langgraph.checkpoint.mongo._schema import (
    MAX_DOCUMENT_SIZE,
    ChannelValue,
    CheckpointDocument,
    CheckpointKey,
    ChunkDocument,
    Field,
    JoinedCheckpoint,
    StoredField,
    ThreadDocument,
    WriteDocument,
    is_pinned,
)
from langgraph.checkpoint.mongo._sizes import warn_if_large
from langgraph.checkpoint.mongo.errors import CheckpointTooLargeError

D = TypeVar("D", bound=Mapping[str, Any])


class Label(NamedTuple):
    """Names a part of the caller's input in an error message: the template with each of
    `quoted` cut by `short_repr`, built only when an error is raised."""

    template: str
    quoted: tuple[Any, ...] = ()

    def __str__(self) -> str:
        return self.template.format(*map(short_repr, self.quoted))


def _payload_size(stored: Any) -> int:
    """The length of a stored value's serialized bytes (bare, or a `StoredValue`'s data)."""
    if isinstance(stored, bytes):
        return len(stored)
    if stored is not None and isinstance(stored, Mapping) and Field.DATA in stored:
        return len(stored[Field.DATA])
    return 0


def _with_empty_payload(stored: Any) -> Any:
    """A stored value with empty bytes for its serialized ones: its BSON shrinks by exactly
    their length."""
    if isinstance(stored, bytes):
        return b""
    if isinstance(stored, Mapping) and Field.DATA in stored:
        return {**stored, Field.DATA: b""}
    return stored


# From this many payload bytes, `bson_size` counts them by length instead of encoding them.
_COUNT_PAYLOADS_FROM = 64 * 1024


def bson_size(doc: Mapping[str, Any]) -> int:
    """`len(bson.encode(doc))`, without copying large serialized values into a second
    encoding (the driver encodes them once)."""
    entries = doc.get(Field.CHANNEL_VALUES) or ()
    payload = _payload_size(doc.get(Field.CHECKPOINT)) + _payload_size(doc.get(Field.VALUE))
    for entry in entries:
        payload += len(entry.get(Field.DATA, b""))  # none once moved to chunks
    if payload < _COUNT_PAYLOADS_FROM:
        return len(bson.encode(doc))
    light = {**doc, Field.CHANNEL_VALUES: [_with_empty_payload(entry) for entry in entries]}
    for field in (Field.CHECKPOINT, Field.VALUE):
        if field in doc:
            light[field] = _with_empty_payload(doc[field])
    if Field.CHANNEL_VALUES not in doc:
        del light[Field.CHANNEL_VALUES]
    return len(bson.encode(light)) + payload


def _measured(
    doc: Mapping[str, Any],
    what: str | Label,
    ref: CheckpointRef,
    limit: int,
    option: str | None = None,
    compression: str | None = None,
) -> int:
    """The size of the upsert that stores `doc` (its filter repeats the key, so that counts
    too, but is encoded only above half of 16 MiB), refused over `limit` before anything is
    sent (`option`: the saver option the limit is; `compression` decides the advice)."""
    size = bson_size(doc)
    if size > MAX_DOCUMENT_SIZE // 2:
        size += len(bson.encode(upsert_filter(doc)))
    if size > limit:
        raise CheckpointTooLargeError(
            str(what),
            thread_id=ref.thread_id,
            checkpoint_ns=ref.checkpoint_ns,
            checkpoint_id=str(ref.checkpoint_id),
            size=size,
            limit=limit,
            option=option,
            compression=compression,
        )
    return size


# The option that bounds what a saver stores (`state_max_bytes`), and its default: room
# for a 40 MiB state with its overhead, and a bound on a put's memory.
STATE_MAX_BYTES = "state_max_bytes"
DEFAULT_STATE_MAX_BYTES = 64 * 1024 * 1024


def _encode_or_refuse(
    codec: Codec,
    value: Any,
    what: str | Label,
    parts: tuple[str, Any] | None = None,
    *,
    field: bool = False,
) -> Any:
    """Serialize `value` (`field`: as a `StoredField`), or raise `_refusal`'s error."""
    try:
        return codec.encode_field(value) if field else codec.encode(value)
    except (TypeError, ValueError) as exc:
        raise _refusal(codec, exc, what, parts) from exc


def _refusal(
    codec: Codec,
    exc: TypeError | ValueError,
    what: str | Label,
    parts: tuple[str, Any] | None = None,
) -> TypeError | ValueError:
    """The error for a value the serializer refused (`exc`): named by `what`, or down to
    the key of `parts` (`(name, mapping)`) that holds it."""
    name, mapping = parts or (what, None)
    label = name
    for key, part in (mapping if isinstance(mapping, Mapping) else {}).items():
        try:
            codec.encode(part)
        except (TypeError, ValueError):
            label = f"{name}[{short_repr(key)}]"
            break
    error = TypeError if isinstance(exc, TypeError) else ValueError
    return error(f"{label} cannot be serialized: {exc}; nothing was written")


def _require_mapping(value: Any, what: str) -> Mapping[str, Any]:
    if type(value) is dict:  # what LangGraph passes; the ABC check is slower
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a dict, got {type(value).__name__}: {short_repr(value)}")
    return value


def _replayed_channels(metadata: Mapping[str, Any]) -> list[str]:
    """The `DeltaChannel`s LangGraph counts as not snapshotted (its own metadata field)."""
    counters = metadata.get(DELTA_COUNTERS)
    if not isinstance(counters, Mapping):
        return []
    return sorted(k for k in counters if isinstance(k, str))


class NewCheckpoint(NamedTuple):
    """A checkpoint handed to `put`, validated once, before any I/O: `ref` and `key` (its
    `_id`, also its value-cache key) where it is stored; `parent_id` the config's id;
    `versions` copied (the caller's dict may change while the plan waits); `metadata`
    merged with the config's; `unchanged` the channels not in `new_versions`, stored from
    the parent's bytes (see `_channel_values`).
    """

    ref: CheckpointRef
    key: CheckpointKey
    parent_id: str | None
    checkpoint: Mapping[str, Any]
    values: Mapping[str, Any]
    versions: dict[str, Any]
    metadata: CheckpointMetadata
    unchanged: frozenset[str]

    def parent_key(self) -> CheckpointKey | None:
        """The `_id` of the checkpoint it follows, if any."""
        if self.parent_id is None:
            return None
        return checkpoint_key(self.ref.thread_id, self.ref.checkpoint_ns, self.parent_id)


def new_checkpoint(
    ref: CheckpointRef,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    config: Mapping[str, Any],
    new_versions: ChannelVersions,
) -> NewCheckpoint:
    """Validate what `put` was handed (`ref` from its config; `ref.checkpoint_id` is the
    parent, if any)."""
    values: Mapping[str, Any]
    versions: Mapping[str, Any]
    if (
        type(checkpoint) is dict
        and type(metadata) is dict
        and type(new_versions) is dict
        and type(values := checkpoint.get("channel_values", {})) is dict
        and type(versions := checkpoint.get("channel_versions", {})) is dict
    ):
        # What LangGraph hands over: the mapping checks below, in one test.
        checkpoint_id = require_str(checkpoint.get("id"), "checkpoint['id']")
        unchanged = frozenset(values.keys() - new_versions.keys())
    else:
        _require_mapping(checkpoint, "checkpoint")
        _require_mapping(metadata, "metadata")
        checkpoint_id = require_str(checkpoint.get("id"), "checkpoint['id']")
        values = _require_mapping(
            checkpoint.get("channel_values", {}), "checkpoint['channel_values']"
        )
        versions = _require_mapping(
            checkpoint.get("channel_versions", {}), "checkpoint['channel_versions']"
        )
        changed = _require_mapping(new_versions, "new_versions")
        unchanged = frozenset([channel for channel in values if channel not in changed])
    return NewCheckpoint(
        CheckpointRef(ref.thread_id, ref.checkpoint_ns, checkpoint_id),
        checkpoint_key(ref.thread_id, ref.checkpoint_ns, checkpoint_id),
        ref.checkpoint_id,
        checkpoint,
        values,
        dict(versions),
        get_checkpoint_metadata(cast(Any, config), metadata),
        unchanged,
    )


# Checkpoint fields stored outside its blob (in `_id`, and one entry per channel).
_NOT_IN_BLOB = ("id", "channel_values")


def _checkpoint_blob(checkpoint: Mapping[str, Any]) -> dict[str, Any]:
    blob = dict(checkpoint)  # a copy and deletions: the fields keep their order
    for key in _NOT_IN_BLOB:
        blob.pop(key, None)
    return blob


class BuiltCheckpoint(NamedTuple):
    """A checkpoint's document, its stored channel entries (the value cache's entry: the
    document's entry objects, with their bytes), and its chunk documents (see `_chunks`)."""

    document: CheckpointDocument
    values: StoredValues
    chunks: list[ChunkDocument]


def build_checkpoint(
    codec: Codec,
    new: NewCheckpoint,
    parent: StoredValues | None = None,
    touched_at: datetime | None = None,
    *,
    max_bytes: int = DEFAULT_STATE_MAX_BYTES,
    warn_bytes: int = 0,
) -> BuiltCheckpoint:
    """What `put` stores, and its channel entries, in one pass.

    Channels in `new.unchanged` keep the `parent`'s stored entries (see `_channel_values`);
    every other value is serialized. Over 16 MiB the largest values move to chunks; over
    `max_bytes` in all, or over 16 MiB without them, it raises `CheckpointTooLargeError`
    before anything is sent; from `warn_bytes` it is logged (`warn_if_large`).
    """
    doc, entries = _build_document(codec, new, parent, touched_at)
    size = _measured(doc, "Checkpoint", new.ref, max_bytes, STATE_MAX_BYTES, codec.compression)
    warn_if_large(new.ref, size, entries.values(), warn_bytes, max_bytes)
    stored, chunks = _split_if_too_large(doc, new.ref, size, touched_at)
    return BuiltCheckpoint(stored, StoredValues(entries, new.versions), chunks)


def _split_if_too_large(
    doc: CheckpointDocument, stored_as: CheckpointRef, size: int, touched_at: datetime | None
) -> tuple[CheckpointDocument, list[ChunkDocument]]:
    """`doc` (measured at `size`) as stored: with its largest values in chunks when it
    does not fit one document; what cannot move must fit."""
    if size <= MAX_DOCUMENT_SIZE:
        return doc, []
    doc, chunks = split_checkpoint(doc, size, MAX_DOCUMENT_SIZE, touched_at)
    _measured(doc, "Checkpoint without its chunked values", stored_as, MAX_DOCUMENT_SIZE)
    return doc, chunks


def stored_form(doc: CheckpointDocument) -> tuple[CheckpointDocument, list[ChunkDocument]]:
    """A whole checkpoint document (from `checkpoint_document` with a `max_bytes` over
    16 MiB) as `put` stores it: with chunks when it does not fit one document."""
    _, ns, checkpoint_id = key_fields(doc[Field.ID])
    stored_as = CheckpointRef(doc[Field.THREAD_ID], ns, checkpoint_id)
    size = _measured(doc, "Checkpoint", stored_as, MAX_STORED_SIZE)
    return _split_if_too_large(doc, stored_as, size, doc.get(Field.TOUCHED_AT))


# No bound: for documents already measured against one.
MAX_STORED_SIZE = 2**63


def _build_document(
    codec: Codec, new: NewCheckpoint, parent: StoredValues | None, touched_at: datetime | None
) -> tuple[CheckpointDocument, dict[str, ChannelValue]]:
    """The whole checkpoint document, not measured, and its entries by channel."""
    full_metadata = new.metadata
    # Metadata of plain types reads back from its readable copy exactly as a serializer
    # round trip returns it, so it is not serialized at all.
    readable = exact_copy(full_metadata) if codec.round_trips_plain else NOT_EXACT
    serialized_metadata = None
    if readable is NOT_EXACT:
        serialized_metadata = _encode_or_refuse(
            codec, full_metadata, "metadata", ("metadata", full_metadata)
        )
        # The readable copy describes what `get_tuple` will return, which is the metadata
        # after a serializer round trip (tuples come back as lists, for example).
        returned_metadata = codec.decode(serialized_metadata)
        readable = exact_copy(returned_metadata)
        if readable is NOT_EXACT:
            readable = readable_metadata(returned_metadata)
        else:
            serialized_metadata = None

    def encode(channel: str, value: Any) -> ChannelValue:
        try:
            return codec.encode_entry(channel, value)
        except (TypeError, ValueError) as exc:
            label = Label("checkpoint['channel_values'][{}]", (channel,))
            raise _refusal(codec, exc, label) from exc

    entries = encode_channel_values(new.values, new.versions, new.unchanged, parent, encode)
    doc: CheckpointDocument = {
        Field.ID: new.key,
        Field.THREAD_ID: new.ref.thread_id,
        Field.PARENT_CHECKPOINT_ID: new.parent_id,
        Field.CHECKPOINT: _encode_or_refuse(
            codec, _checkpoint_blob(new.checkpoint), "checkpoint", field=True
        ),
        Field.CHANNEL_VALUES: list(entries.values()),
        Field.METADATA: readable,
    }
    replayed = _replayed_channels(full_metadata) if DELTA_COUNTERS in full_metadata else None
    if replayed:
        counters = readable.get(DELTA_COUNTERS) if isinstance(readable, Mapping) else None
        if not (isinstance(counters, Mapping) and sorted(counters) == replayed):
            # Only where the readable counters do not name them (see `_delta.replayed`).
            doc[Field.REPLAYED_CHANNELS] = replayed
    if serialized_metadata is not None:
        doc[Field.SERIALIZED_METADATA] = serialized_metadata
    if touched_at is not None:
        doc[Field.TOUCHED_AT] = touched_at
    return doc, entries


def checkpoint_document(
    codec: Codec,
    ref: CheckpointRef,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    config: Mapping[str, Any],
    touched_at: datetime | None = None,
    *,
    max_bytes: int | None = None,
) -> CheckpointDocument:
    """The document of a checkpoint with every value serialized and in it (copying threads in:
    `stored_form` splits it as `put` does), refused over `max_bytes` (a saver's `state_max_bytes`;
    None: what one document holds); `ref.checkpoint_id` is the parent, if any."""
    new = new_checkpoint(ref, checkpoint, metadata, config, {})
    # No parent entries to keep: every value is serialized.
    doc, _ = _build_document(codec, new, None, touched_at)
    _measured(doc, "Checkpoint", new.ref, *_limit(max_bytes), codec.compression)
    return doc


def _limit(max_bytes: int | None) -> tuple[int, str | None]:
    """A whole-document API's limit, and the option it is: `max_bytes` is the saver's
    `state_max_bytes`; None is what one document holds."""
    return (MAX_DOCUMENT_SIZE, None) if max_bytes is None else (max_bytes, STATE_MAX_BYTES)


def write_documents(
    codec: Codec,
    ref: CheckpointRef,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    touched_at: datetime | None = None,
    *,
    max_bytes: int | None = None,
    chunks: list[ChunkDocument] | None = None,
) -> list[tuple[bool, WriteDocument]]:
    """`(replace_on_conflict, document)` for each write, all serialized before any I/O,
    refused over `max_bytes` (a saver's `state_max_bytes`; None: what one document holds).

    Special channels (errors, interrupts, resumes) have fixed negative indexes and a retry
    replaces them; a regular write keeps its first stored value, as in `InMemorySaver`.
    With `chunks` (`put_writes`), a value too large for its document moves to chunk documents
    appended to it, and a document far below the limits is sized by `_write_size_bound`.
    """
    limit, option = _limit(max_bytes)
    if ref.checkpoint_id is None:
        raise ValueError(
            "put_writes needs config['configurable']['checkpoint_id']: writes belong to a "
            "stored checkpoint"
        )
    require_str(task_id, "task_id")
    require_str(task_path, "task_path")
    if type(writes) not in _PLAIN_SEQUENCES and (
        isinstance(writes, (str, bytes)) or not isinstance(writes, Sequence)
    ):
        raise TypeError(
            f"writes must be a sequence of (channel, value) pairs, got {type(writes).__name__}"
        )
    join_key = checkpoint_key(ref.thread_id, ref.checkpoint_ns, ref.checkpoint_id)
    documents: list[tuple[bool, WriteDocument]] = []
    for position, pair in enumerate(writes):
        if (type(pair) is not tuple or len(pair) != 2) and (
            isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2
        ):
            raise TypeError(
                f"writes[{position}] must be a (channel, value) pair, got {short_repr(pair)}"
            )
        channel, value = pair
        require_str(channel, f"writes[{position}] channel")
        idx = WRITES_IDX_MAP.get(channel, position)
        try:
            stored = codec.encode_field(value)
        except (TypeError, ValueError) as exc:
            label = Label("writes[{}] value (channel {})", (position, channel))
            raise _refusal(codec, exc, label) from exc
        document: WriteDocument = {
            Field.ID: write_key(join_key, task_id, idx),
            Field.THREAD_ID: ref.thread_id,
            Field.TASK_PATH: task_path,
            Field.CHANNEL: channel,
            Field.VALUE: stored,
        }
        if touched_at is not None:
            document[Field.TOUCHED_AT] = touched_at
        size = _write_size_bound(stored) if chunks is not None else None
        if size is None or size > min(limit, MAX_DOCUMENT_SIZE // 2):
            what = Label("Write {} (channel {}, task {})", (position, channel, task_id))
            size = _measured(document, what, ref, limit, option, codec.compression)
        if chunks is not None and size > MAX_DOCUMENT_SIZE:
            document, parts = split_write(document, touched_at)
            chunks += parts
        documents.append((idx < 0, document))
    return documents


def stored_write_form(doc: WriteDocument) -> tuple[WriteDocument, list[ChunkDocument]]:
    """A whole write document (from `write_documents` with a `max_bytes` over 16 MiB) as
    `put_writes` would store it."""
    if bson_size(doc) + len(bson.encode(upsert_filter(doc))) <= MAX_DOCUMENT_SIZE:
        return doc, []
    return split_write(doc, doc.get(Field.TOUCHED_AT))


# What LangGraph hands `put_writes`, answered without the slower ABC checks.
_PLAIN_SEQUENCES = frozenset({list, tuple, deque})


# What a write document holds besides its value, at most: seven identifiers of at most
# `MAX_ID_BYTES` (`require_str`), the index, the stamp, field names and BSON's framing.
_WRITE_OVERHEAD_BOUND = 7 * (MAX_ID_BYTES + 64) + 1024


def _write_size_bound(stored: StoredField) -> int | None:
    """At least the BSON size of a write document whose value is stored as `stored`, without
    encoding it; None when the serializer gave other types than `bytes` and ASCII `str`:
    that document is measured, so BSON refuses what it cannot encode before anything is sent."""
    if stored is None:
        return _WRITE_OVERHEAD_BOUND
    if type(stored) is bytes:
        return len(stored) + _WRITE_OVERHEAD_BOUND
    if type(stored) is not dict or type(data := stored.get(Field.DATA)) is not bytes:
        return None
    strings = 0
    for key, value in stored.items():
        if key != Field.DATA:
            if type(value) is not str or not value.isascii():
                return None
            strings += len(value)
    return len(data) + strings + 64 + _WRITE_OVERHEAD_BOUND


def pending_writes(codec: Codec, docs: Iterable[WriteDocument]) -> list[PendingWrite]:
    """A checkpoint's writes in LangGraph's order (`task_id` and `idx` are in `_id`)."""
    ordered = sorted(
        docs,
        key=lambda d: writes_sort_key(
            d[Field.TASK_PATH], d[Field.ID][Field.TASK_ID], d[Field.ID][Field.IDX]
        ),
    )
    return [
        (d[Field.ID][Field.TASK_ID], d[Field.CHANNEL], codec.decode(d[Field.VALUE]))
        for d in ordered
    ]


def written_by_us(doc: D) -> D:
    """Refuse, by name, a document this package did not write.

    `langgraph-checkpoint-mongodb` uses the same default collection names, with
    `checkpoint` as raw bytes beside a top-level `type`, and no `channel_values`.
    """
    if Field.TYPE not in doc and Field.CHANNEL_VALUES in doc:
        return doc
    raise ValueError(
        f"checkpoint document {short_repr(doc.get(Field.ID))} was not written by "
        "langgraph-checkpoint-mongo"
        + (" (it looks like langgraph-checkpoint-mongodb's format)" if "type" in doc else "")
        + ": give this saver its own collections (checkpoint_collection_name=..., "
        "writes_collection_name=...) or database; see "
        "https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/migrating/#moving-from-langgraph-checkpoint-mongodb"
    )


def stored_metadata(codec: Codec, doc: Mapping[str, Any]) -> Any:
    """The metadata `get_tuple` returns, from whichever copy a document keeps exactly."""
    if Field.SERIALIZED_METADATA in doc:
        return codec.decode(doc[Field.SERIALIZED_METADATA])
    return from_readable(doc[Field.METADATA])


class _ThreadFields(NamedTuple):
    thread_id: str
    config: RunnableConfig
    metadata: CheckpointMetadata
    ts: str


class ThreadInfo(_ThreadFields):
    """A thread, as `list_threads` finds it: by its latest root checkpoint (the newest of
    namespace `""`, the graph's own; subgraphs write in other namespaces).

    A tuple of the four fields 0.2.0 had (`thread_id, config, metadata, ts =
    info` keeps working); `pinned` is an attribute beside them.

    Attributes:
        thread_id: the thread's id.
        config: that checkpoint's config (`thread_id`, `checkpoint_ns` `""`,
            `checkpoint_id`), as `get_tuple` takes it.
        metadata: that checkpoint's metadata, as `get_tuple` returns it.
        ts: that checkpoint's `ts`: when LangGraph created it, as it stores it (an ISO 8601
            string in UTC, for example `"2026-11-27T13:28:44.123456+00:00"`).
        pinned: whether the thread is kept from `ttl` expiry (`pin_thread`): its latest
            checkpoint is.
    """

    pinned: bool = False

    def __new__(
        cls,
        thread_id: str,
        config: RunnableConfig,
        metadata: CheckpointMetadata,
        ts: str,
        pinned: bool = False,
    ) -> ThreadInfo:
        info = super().__new__(cls, thread_id, config, metadata, ts)
        info.pinned = pinned
        return info

    def __repr__(self) -> str:
        return f"{super().__repr__()[:-1]}, pinned={self.pinned!r})"


def thread_info(codec: Codec, doc: ThreadDocument) -> ThreadInfo:
    """A thread as `list_threads` reads it (`_queries.threads_pipeline`)."""
    thread_id, checkpoint_id = doc[Field.ID], doc[Field.CHECKPOINT_ID]
    if doc.get(Field.SERIALIZED_METADATA) is not None:
        metadata = codec.decode(doc[Field.SERIALIZED_METADATA])
    else:
        metadata = from_readable(doc[Field.METADATA])
    checkpoint = codec.decode(doc[Field.CHECKPOINT])
    return ThreadInfo(
        thread_id=thread_id,
        config=CheckpointRef(thread_id, "", checkpoint_id).config(),
        metadata=metadata,
        ts=checkpoint.get("ts", ""),
        pinned=is_pinned(doc.get(Field.TOUCHED_AT)),
    )


def checkpoint_tuple(codec: Codec, doc: JoinedCheckpoint) -> CheckpointTuple:
    """A checkpoint document (with its joined writes) as the tuple LangGraph reads."""
    doc = written_by_us(doc)
    thread_id, checkpoint_ns, checkpoint_id = key_fields(doc[Field.ID])
    parent_id = doc.get(Field.PARENT_CHECKPOINT_ID)
    checkpoint = cast(
        Checkpoint,
        {
            **codec.decode(doc[Field.CHECKPOINT]),
            "id": checkpoint_id,
            "channel_values": decode_channel_values(codec, doc[Field.CHANNEL_VALUES]),
        },
    )
    return CheckpointTuple(
        config=CheckpointRef(thread_id, checkpoint_ns, checkpoint_id).config(),
        checkpoint=checkpoint,
        metadata=stored_metadata(codec, doc),
        parent_config=(
            CheckpointRef(thread_id, checkpoint_ns, parent_id).config() if parent_id else None
        ),
        pending_writes=pending_writes(codec, doc.get(Field.JOINED_WRITES, ())),
    )


def moved_checkpoint(
    doc: CheckpointDocument, thread_id: str, touched_at: datetime | None
) -> CheckpointDocument:
    """A copy of a checkpoint document that belongs to another thread, ids kept."""
    return _moved(doc, _in_thread(doc[Field.ID], thread_id), thread_id, touched_at)


def moved_write(doc: WriteDocument, thread_id: str, touched_at: datetime | None) -> WriteDocument:
    """A copy of a pending-write (or chunk) document that belongs to another thread: its
    key names the moved checkpoint, the rest of the key kept in its order."""
    checkpoint = _in_thread(doc[Field.ID][Field.CHECKPOINT], thread_id)
    return _moved(doc, {**doc[Field.ID], Field.CHECKPOINT: checkpoint}, thread_id, touched_at)


def _in_thread(key: CheckpointKey, thread_id: str) -> CheckpointKey:
    return checkpoint_key(thread_id, key[Field.CHECKPOINT_NS], key[Field.CHECKPOINT_ID])


def _moved(doc: D, key: Any, thread_id: str, touched_at: datetime | None) -> D:
    moved: Any = {**doc, Field.ID: key, Field.THREAD_ID: thread_id}
    if touched_at is not None:
        moved[Field.TOUCHED_AT] = touched_at
    return cast(D, moved)
