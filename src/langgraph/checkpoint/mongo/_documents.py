"""How checkpoints and pending writes become documents, and documents become tuples.

A checkpoint document embeds the whole serialized checkpoint (one read returns it
whole) and keeps the metadata three ways: readable BSON, filter terms
(see `_metadata`), and the serializer's exact copy that `get_tuple` returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

import bson
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
    CHANNEL_VALUES,
    StoredValues,
    decode_channel_values,
    encode_channel_values,
)
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._keys import (
    CheckpointRef,
    checkpoint_key,
    require_str,
    shown,
    write_key,
)
from langgraph.checkpoint.mongo._metadata import TERMS_FIELD, metadata_terms, readable_metadata
from langgraph.checkpoint.mongo._ttl import TOUCHED_AT
from langgraph.checkpoint.mongo.errors import CheckpointTooLargeError

# Name of the array that the read pipelines join a checkpoint's writes into.
JOINED_WRITES = "pending_writes"
# Channels whose value the checkpoint stores (a `DeltaChannel` only at its snapshots).
STORED_CHANNELS = "stored_channels"
# `DeltaChannel`s not snapshotted here, rebuilt from ancestors' writes on read.
REPLAYED_CHANNELS = "replayed_channels"


# MongoDB's maxBsonObjectSize, the same on every current server and on Atlas.
MAX_DOCUMENT_SIZE = 16 * 1024 * 1024


def upsert_filter(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An upsert's filter: the `_id`, and the shard key `thread_id` for sharded clusters."""
    return {"_id": doc["_id"], "thread_id": doc["thread_id"]}


def _within_size_limit(doc: dict[str, Any], what: str, ref: CheckpointRef) -> dict[str, Any]:
    """Refuse a document the server would refuse, before anything is sent: the upsert
    that carries it repeats its key in the filter, so that counts too."""
    size = len(bson.encode(doc)) + len(bson.encode(upsert_filter(doc)))
    if size > MAX_DOCUMENT_SIZE:
        raise CheckpointTooLargeError(
            what,
            thread_id=ref.thread_id,
            checkpoint_ns=ref.checkpoint_ns,
            checkpoint_id=str(ref.checkpoint_id),
            size=size,
            limit=MAX_DOCUMENT_SIZE,
        )
    return doc


def _encoded(codec: Codec, value: Any, what: str, parts: tuple[str, Any] | None = None) -> Any:
    """Serialize `value`; a value the serializer refuses is named, down to the key that
    holds it when `parts` (`(name, mapping)`) has one, and nothing has been sent yet."""
    try:
        return codec.encode(value)
    except (TypeError, ValueError) as exc:
        name, mapping = parts or (what, None)
        for key, part in (mapping if isinstance(mapping, Mapping) else {}).items():
            try:
                codec.encode(part)
            except (TypeError, ValueError):
                what = f"{name}[{shown(key)}]"
                break
        error = TypeError if isinstance(exc, TypeError) else ValueError
        raise error(f"{what} cannot be serialized: {exc}; nothing was written") from exc


def _require_mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{what} must be a dict, got {type(value).__name__}: {shown(value)}")
    return value


def _replayed_channels(metadata: Mapping[str, Any]) -> list[str]:
    """The `DeltaChannel`s LangGraph counts as not snapshotted (its own metadata field)."""
    counters = metadata.get("counters_since_delta_snapshot")
    if not isinstance(counters, Mapping):
        return []
    return sorted(k for k in counters if isinstance(k, str))


def unchanged_channels(checkpoint: Any, new_versions: Any) -> tuple[str, list[str]]:
    """A checkpoint's id, and the channels it holds whose version did not change since its
    parent (not in `new_versions`): those are stored from the parent's bytes."""
    _require_mapping(checkpoint, "checkpoint")
    checkpoint_id = require_str(checkpoint.get("id"), "checkpoint['id']")
    values = _require_mapping(checkpoint.get("channel_values", {}), "checkpoint['channel_values']")
    changed = _require_mapping(new_versions, "new_versions")
    return checkpoint_id, [channel for channel in values if channel not in changed]


def checkpoint_document(
    codec: Codec,
    ref: CheckpointRef,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    config: Mapping[str, Any],
    touched_at: datetime | None = None,
    new_versions: ChannelVersions | None = None,
    parent: StoredValues | None = None,
) -> dict[str, Any]:
    """The document `put` stores; `ref.checkpoint_id` is the parent, if any.

    Channels not in `new_versions` keep the `parent`'s stored entries (see
    `_channel_values`); `new_versions=None` serializes every channel.
    """
    _require_mapping(checkpoint, "checkpoint")
    _require_mapping(metadata, "metadata")
    checkpoint_id = require_str(checkpoint.get("id"), "checkpoint['id']")
    channel_values = _require_mapping(
        checkpoint.get("channel_values", {}), "checkpoint['channel_values']"
    )
    full_metadata = get_checkpoint_metadata(cast(Any, config), metadata)
    serialized_metadata = _encoded(codec, full_metadata, "metadata", ("metadata", full_metadata))
    # Terms and the readable copy describe what `get_tuple` will return, which is the
    # metadata after a serializer round trip (tuples come back as lists, for example).
    returned_metadata = codec.decode(serialized_metadata)
    values = encode_channel_values(
        channel_values,
        _require_mapping(checkpoint.get("channel_versions", {}), "checkpoint['channel_versions']"),
        new_versions,
        parent,
        lambda value, channel: _encoded(
            codec, value, f"checkpoint['channel_values'][{shown(channel)}]"
        ),
    )
    doc = {
        "_id": checkpoint_key(ref.thread_id, ref.checkpoint_ns, checkpoint_id),
        "thread_id": ref.thread_id,
        "checkpoint_ns": ref.checkpoint_ns,
        "checkpoint_id": checkpoint_id,
        "parent_checkpoint_id": ref.checkpoint_id,
        # The checkpoint without its values, which follow one entry per channel.
        "checkpoint": _encoded(codec, {**checkpoint, "channel_values": {}}, "checkpoint"),
        CHANNEL_VALUES: list(values.values()),
        STORED_CHANNELS: sorted(channel_values),
        REPLAYED_CHANNELS: _replayed_channels(full_metadata),
        "metadata": readable_metadata(returned_metadata),
        "serialized_metadata": serialized_metadata,
        TERMS_FIELD: metadata_terms(returned_metadata),
    }
    if touched_at is not None:
        doc[TOUCHED_AT] = touched_at
    stored_as = CheckpointRef(ref.thread_id, ref.checkpoint_ns, checkpoint_id)
    return _within_size_limit(doc, "Checkpoint", stored_as)


def write_documents(
    codec: Codec,
    ref: CheckpointRef,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
    touched_at: datetime | None = None,
) -> list[tuple[bool, dict[str, Any]]]:
    """`(replace_on_conflict, document)` for each write, all serialized before any I/O.

    Special channels (errors, interrupts, resumes) have fixed negative indexes and a
    retry replaces them; a regular write keeps its first stored value, as in
    `InMemorySaver`.
    """
    if ref.checkpoint_id is None:
        raise ValueError(
            "put_writes needs config['configurable']['checkpoint_id']: writes belong to a "
            "stored checkpoint"
        )
    require_str(task_id, "task_id")
    require_str(task_path, "task_path")
    if isinstance(writes, (str, bytes)) or not isinstance(writes, Sequence):
        raise TypeError(
            f"writes must be a sequence of (channel, value) pairs, got {type(writes).__name__}"
        )
    join_key = checkpoint_key(ref.thread_id, ref.checkpoint_ns, ref.checkpoint_id)
    documents = []
    for position, pair in enumerate(writes):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise TypeError(
                f"writes[{position}] must be a (channel, value) pair, got {shown(pair)}"
            )
        channel, value = pair
        require_str(channel, f"writes[{position}] channel")
        idx = WRITES_IDX_MAP.get(channel, position)
        document = {
            "_id": write_key(ref.thread_id, ref.checkpoint_ns, ref.checkpoint_id, task_id, idx),
            "thread_id": ref.thread_id,
            "checkpoint": join_key,
            "task_id": task_id,
            "task_path": task_path,
            "idx": idx,
            "channel": channel,
            "value": _encoded(codec, value, f"writes[{position}] value (channel {shown(channel)})"),
        }
        if touched_at is not None:
            document[TOUCHED_AT] = touched_at
        what = f"Write {position} (channel {shown(channel)}, task {shown(task_id)})"
        documents.append((idx < 0, _within_size_limit(document, what, ref)))
    return documents


def pending_writes(codec: Codec, docs: Iterable[Mapping[str, Any]]) -> list[PendingWrite]:
    ordered = sorted(docs, key=lambda d: writes_sort_key(d["task_path"], d["task_id"], d["idx"]))
    return [(d["task_id"], d["channel"], codec.decode(d["value"])) for d in ordered]


def _ours(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """Refuse, by name, a document this package did not write.

    `langgraph-checkpoint-mongodb` uses the same default collection names, with
    `checkpoint` as raw bytes beside a top-level `type`.
    """
    if isinstance(doc.get("checkpoint"), Mapping) and "serialized_metadata" in doc:
        return doc
    raise ValueError(
        f"checkpoint document {shown(doc.get('_id'))} was not written by "
        "langgraph-checkpoint-mongo"
        + (" (it looks like langgraph-checkpoint-mongodb's format)" if "type" in doc else "")
        + ": give this saver its own collections (checkpoint_collection_name=..., "
        "writes_collection_name=...) or database; see 'Moving from "
        "langgraph-checkpoint-mongodb' in the README"
    )


def checkpoint_tuple(codec: Codec, doc: Mapping[str, Any]) -> CheckpointTuple:
    """A checkpoint document (with its joined writes) as the tuple LangGraph reads."""
    doc = _ours(doc)
    thread_id, checkpoint_ns = doc["thread_id"], doc["checkpoint_ns"]
    parent_id = doc.get("parent_checkpoint_id")
    checkpoint: Checkpoint = codec.decode(doc["checkpoint"])
    checkpoint["channel_values"] = decode_channel_values(codec, doc[CHANNEL_VALUES])
    return CheckpointTuple(
        config=CheckpointRef(thread_id, checkpoint_ns, doc["checkpoint_id"]).config(),
        checkpoint=checkpoint,
        metadata=codec.decode(doc["serialized_metadata"]),
        parent_config=(
            CheckpointRef(thread_id, checkpoint_ns, parent_id).config() if parent_id else None
        ),
        pending_writes=pending_writes(codec, doc.get(JOINED_WRITES, ())),
    )


def moved_checkpoint(doc: Mapping[str, Any], thread_id: str) -> dict[str, Any]:
    """A copy of a checkpoint document that belongs to another thread, ids kept."""
    return {
        **doc,
        "_id": checkpoint_key(thread_id, doc["checkpoint_ns"], doc["checkpoint_id"]),
        "thread_id": thread_id,
    }


def moved_write(doc: Mapping[str, Any], thread_id: str) -> dict[str, Any]:
    """A copy of a pending-write document that belongs to another thread."""
    key = doc["_id"]
    ns, checkpoint_id = key["checkpoint_ns"], key["checkpoint_id"]
    return {
        **doc,
        "_id": write_key(thread_id, ns, checkpoint_id, key["task_id"], key["idx"]),
        "thread_id": thread_id,
        "checkpoint": checkpoint_key(thread_id, ns, checkpoint_id),
    }
