"""The stored format: every field name, and the shape of every document, in one place.

Code that builds or reads a document types it with these `TypedDict`s and names its
fields with `Field`, so mypy refuses a misspelled field (`doc[Field.THREAD_ID]` and
`doc["thread_id"]` are both checked against the document's type). Keys that belong to
LangGraph (a config's `configurable`, a checkpoint's `channel_values`, metadata keys such
as `run_id`) are LangGraph's names, not fields of ours, and are not listed here.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Final, TypedDict

# MongoDB's maxBsonObjectSize, the same on every current server and on Atlas.
MAX_DOCUMENT_SIZE = 16 * 1024 * 1024

# `thread_touched_at` of a pinned thread's documents (see `_ttl`): a date no TTL index
# reaches and no move to a bucket's stamp touches.
PINNED = datetime(9999, 12, 31, tzinfo=timezone.utc)


def is_pinned(stamp: object) -> bool:
    """Whether a stored `thread_touched_at` is `PINNED` (drivers return naive UTC)."""
    return isinstance(stamp, datetime) and stamp.replace(tzinfo=None) >= PINNED.replace(tzinfo=None)


class Field:
    """Stored field names (`Field`)."""

    ID: Final = "_id"
    THREAD_ID: Final = "thread_id"
    CHECKPOINT_NS: Final = "checkpoint_ns"
    CHECKPOINT_ID: Final = "checkpoint_id"
    # Checkpoint documents.
    PARENT_CHECKPOINT_ID: Final = "parent_checkpoint_id"
    # The serialized checkpoint without its channel values; in a write's `_id`: its key.
    CHECKPOINT: Final = "checkpoint"
    # One `ChannelValue` per channel.
    CHANNEL_VALUES: Final = "channel_values"
    # `DeltaChannel`s not snapshotted here, rebuilt from ancestors' writes on read.
    REPLAYED_CHANNELS: Final = "replayed_channels"
    # The metadata as readable BSON, and the serializer's copy where that does not read
    # back as the metadata itself (see `_metadata`).
    METADATA: Final = "metadata"
    SERIALIZED_METADATA: Final = "serialized_metadata"
    # The whole-thread TTL stamp (see `_ttl`), on both kinds of document.
    TOUCHED_AT: Final = "thread_touched_at"
    # Write documents (and write keys).
    TASK_ID: Final = "task_id"
    TASK_PATH: Final = "task_path"
    IDX: Final = "idx"
    CHANNEL: Final = "channel"
    VALUE: Final = "value"
    # A stored value (see `_codec`); a channel value adds `CHANNEL`.
    TYPE: Final = "type"
    DATA: Final = "data"
    COMPRESSION: Final = "compression"
    # A stored value too large for its document: its bytes are in chunk documents (see
    # `_chunks`), which this `ChunkRef` names; it then has no `data`.
    CHUNKS: Final = "chunks"
    # Chunk documents: in `_id`, beside the owner's key, the value's id and the part's position.
    CHUNK: Final = "chunk"
    PART: Final = "part"
    # A `ChunkRef`'s fields.
    REF_ID: Final = "id"
    PARTS: Final = "parts"
    # Paths into `_id`: a checkpoint's namespace and id, a write's checkpoint key.
    ID_CHECKPOINT_NS: Final = "_id.checkpoint_ns"
    ID_CHECKPOINT_ID: Final = "_id.checkpoint_id"
    WRITE_CHECKPOINT: Final = "_id.checkpoint"
    # Not stored: the array the reads join a checkpoint's pending writes into.
    JOINED_WRITES: Final = "pending_writes"
    # Not stored: the field a count of documents comes back in.
    COUNT: Final = "count"
    # Not stored: the newest checkpoint id a namespace count met (`_queries.namespace_count`).
    NEWEST: Final = "newest"
    # Not stored: the namespace count `get_tuple` returns with `keep_last` (`NamespaceCount`).
    STORED: Final = "stored"


# Optional fields are declared in `total=False` bases (`NotRequired` needs Python 3.11).


class CheckpointKey(TypedDict):
    """`_id` of a checkpoint document, and the key its writes join on (field order
    matters to a server: built only by `_keys.checkpoint_key`)."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str


class WriteKey(TypedDict):
    """`_id` of a pending-write document (built only by `_keys.write_key`): its
    checkpoint's key first, so one index on `_id.checkpoint` serves the joins."""

    checkpoint: CheckpointKey
    task_id: str
    idx: int


class _TypedCompressed(TypedDict, total=False):
    # Absent for LangGraph's default serializer type, "msgpack" (see `_codec`).
    type: str
    compression: str


class ChunkRef(TypedDict):
    """Where a stored value's bytes are when they did not fit its document: `parts` chunk
    documents under the value's `id` (see `_chunks`)."""

    id: str
    parts: int


class _Chunked(TypedDict, total=False):
    chunks: ChunkRef


class StoredValue(_TypedCompressed, _Chunked):
    """A serialized value: the serializer's type and bytes, maybe compressed; with `chunks` (as
    stored, never once read), the bytes are in chunk documents and `data` is absent."""

    data: bytes


# A value stored as a field of its own (a checkpoint, a write's value): plain bytes when they are
# uncompressed msgpack, null for the serializer's empty "null", else a `StoredValue` (see `_codec`).
StoredField = StoredValue | bytes | None


class ChannelValue(StoredValue):
    """One entry of a checkpoint's `channel_values` array."""

    channel: str


class _Stamped(TypedDict, total=False):
    thread_touched_at: datetime


class ChunkKey(TypedDict):
    """`_id` of a chunk document (built only by `_chunks.chunk_key`): the key of the
    checkpoint that owns it first, like a write's, so the reads that join a checkpoint's
    writes and the deletes of its writes find its chunks too."""

    checkpoint: CheckpointKey
    chunk: str
    part: int


class ChunkDocument(_Stamped):
    """A part of a stored value too large for its document, in the writes collection."""

    _id: ChunkKey
    # The shard key, as on every document of a thread.
    thread_id: str
    data: bytes


class WriteDocument(_Stamped):
    """A pending write, as `put_writes` stores it."""

    _id: WriteKey
    thread_id: str
    task_path: str
    channel: str
    value: StoredField


class _SerializedMetadata(TypedDict, total=False):
    serialized_metadata: StoredValue


class _CheckpointRead(_Stamped, _SerializedMetadata):
    """The fields of a checkpoint document that a read returns."""

    _id: CheckpointKey
    # A copy of `_id.thread_id`: the shard key, which every command of a thread names.
    thread_id: str
    parent_checkpoint_id: str | None
    checkpoint: StoredField
    channel_values: list[ChannelValue]
    metadata: Any


class _ReplayedChannels(TypedDict, total=False):
    replayed_channels: list[str]


class CheckpointDocument(_CheckpointRead, _ReplayedChannels):
    """A checkpoint, as `put` stores it."""


class Joined(TypedDict):
    """What every read that joins writes returns: a checkpoint's key, and its writes."""

    _id: CheckpointKey
    pending_writes: list[WriteDocument]


class _Stored(TypedDict, total=False):
    # `get_tuple`'s, with `keep_last` (see `_queries.NamespaceCount`): one
    # `{count: n, newest: id}`, or none for an empty namespace.
    stored: list[NamespaceCounted]


class JoinedCheckpoint(_CheckpointRead, Joined, _Stored):
    """A checkpoint as `get_tuple` and `list` read it: with its pending writes."""


class MetadataDocument(_SerializedMetadata):
    """A checkpoint's key and exact run id: what `delete_for_runs` reads to find runs."""

    _id: CheckpointKey
    # `run_id` alone (a projection of `metadata.run_id`).
    metadata: Any


class ChannelName(TypedDict):
    channel: str


class _Counters(TypedDict, total=False):
    # `counters_since_delta_snapshot` alone: where `replayed_channels` is left out, its
    # keys name the replayed channels.
    metadata: Any


class LineageDocument(_ReplayedChannels, _Counters):
    """The few fields of a checkpoint that the delta-history walk reads for every
    checkpoint of a namespace."""

    _id: CheckpointKey
    parent_checkpoint_id: str | None
    # Each stored channel's name alone (a projection of `channel_values.channel`).
    channel_values: list[ChannelName]


class _SeedValues(TypedDict, total=False):
    channel_values: list[ChannelValue]


class HistoryDocument(_SeedValues, Joined):
    """A checkpoint of a delta-history chain: its writes, and channel values only where
    it is a channel's seed."""


class _ThreadSerializedMetadata(TypedDict, total=False):
    # Absent, or null, where the checkpoint keeps no serializer copy.
    serialized_metadata: StoredValue | None


class ThreadDocument(_ThreadSerializedMetadata, _Stamped):
    """A thread as `list_threads` reads it: its id, and its latest root checkpoint's id,
    serialized checkpoint, metadata and expiry stamp."""

    _id: str
    checkpoint_id: str
    checkpoint: StoredField
    metadata: Any


class NamespaceKey(TypedDict):
    thread_id: str
    checkpoint_ns: str


class WrittenTo(TypedDict):
    """A checkpoint that pending writes or chunks refer to (`_queries.checkpoints_written_to`)."""

    _id: CheckpointKey


class NamespaceCounted(TypedDict):
    """A namespace counted up to a bound, and its newest checkpoint id."""

    count: int
    newest: str


class CountDocument(TypedDict):
    """How many checkpoints a thread has in one namespace."""

    _id: NamespaceKey
    count: int
