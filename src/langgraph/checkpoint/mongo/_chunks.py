"""Values too large for one document: stored in chunk documents, read back whole.

MongoDB refuses a document over 16 MiB. A checkpoint (or a pending write) whose document would
exceed it keeps its largest values' bytes in chunk documents instead, `CHUNK_SIZE` bytes each (after
compression, when the saver compresses), largest values first until the document fits; such a value
keeps its `type` and `compression` in the document, no `data`, and a `ChunkRef` (`{"id", "parts"}`)
in `chunks`. A state that fits one document is stored exactly as before this module existed.

Chunks live in the writes collection, under an `_id` that starts with the key of the checkpoint
that owns them, as a pending write's does (`{checkpoint, chunk, part}`). So, with no new collection,
option, index or `setup()` step (which users who change only an import never call), a chunk carries
`thread_id`, the shard key, so its commands are targeted; it expires with the thread's writes
(`_ttl.move_thread`); every delete of a checkpoint's writes deletes its chunks in the same command,
and `copy_thread` copies them with the writes. The reads' targeted join leaves chunks out
(`_id.chunk` unset): they follow in one `find` (`resolve`); the plain join takes them in.

Chunks are owned, not shared: a later checkpoint whose large channel did not change stores its bytes
again under its own key. Sharing by channel and version, as `PostgresSaver`'s blobs do, would make
every delete count references, and a `prune` racing a `put` could leave a reference to nothing.
State that grows turn by turn is better kept in a `DeltaChannel`.

Chunks are written before the document that refers to them, so no reader meets a reference to a
missing chunk. A crash in between leaves unreferenced chunks, which readers never see; they go with
their checkpoint's writes, with the thread, or through `remove_unreferenced_chunks` (which `prune`
runs) once older than `ORPHAN_GRACE`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, cast

from bson import ObjectId

from langgraph.checkpoint.mongo import _queries
from langgraph.checkpoint.mongo._commands import Command, Method, Plan, Target
from langgraph.checkpoint.mongo._keys import KeyFields, key_fields
from langgraph.checkpoint.mongo._schema import (
    CheckpointKey,
    ChunkDocument,
    ChunkKey,
    ChunkRef,
    Field,
    StoredValue,
)
from langgraph.checkpoint.mongo.errors import ThreadChangedError

# Half of a 16 MiB reply batch, less room for the chunk's key: a `find` returns two
# chunks per round trip, and each is far below the document limit.
CHUNK_SIZE = 8 * 1024 * 1024 - 4 * 1024

# How old an unreferenced chunk must be before `remove_unreferenced_chunks` deletes it, and
# a pending write no checkpoint owns before `prune` does (see `_operations.retention`): a
# younger one may belong to a `put` whose document is still on its way.
ORPHAN_GRACE = timedelta(hours=1)

# What a value's entry grows by when its bytes move to chunks (the `ChunkRef`), counted
# generously: a document split down to `limit - _REF_SIZE` fits once the refs are in.
_REF_SIZE = 128


def chunk_key(owner: CheckpointKey, value_id: str, part: int) -> ChunkKey:
    """A chunk's `_id` (field order matters to a server: built only here)."""
    return {Field.CHECKPOINT: owner, Field.CHUNK: value_id, Field.PART: part}


def _to_chunks(
    value: StoredValue, owner: CheckpointKey, stamp: datetime | None
) -> tuple[StoredValue, list[ChunkDocument]]:
    """`value` with its bytes replaced by a reference, and the chunks that hold them."""
    data = value[Field.DATA]
    value_id = str(ObjectId())  # unique, and dated: see `remove_unreferenced_chunks`
    chunks: list[ChunkDocument] = []
    for part, start in enumerate(range(0, len(data), CHUNK_SIZE)):
        chunk: ChunkDocument = {
            Field.ID: chunk_key(owner, value_id, part),
            Field.THREAD_ID: owner[Field.THREAD_ID],
            Field.DATA: data[start : start + CHUNK_SIZE],
        }
        if stamp is not None:
            chunk[Field.TOUCHED_AT] = stamp
        chunks.append(chunk)
    ref: ChunkRef = {Field.REF_ID: value_id, Field.PARTS: len(chunks)}
    # Without `data`: a reader that does not know chunks (0.1.0) fails on the value
    # instead of reading empty bytes (which a `bytes` value would silently become).
    moved: dict[str, Any] = {key: part for key, part in value.items() if key != Field.DATA}
    moved[Field.CHUNKS] = ref
    return cast(StoredValue, moved), chunks


def split_checkpoint(
    doc: Any, size: int, limit: int, stamp: datetime | None
) -> tuple[Any, list[ChunkDocument]]:
    """A checkpoint document of `size` bytes over `limit`, with its largest channel values
    moved to chunks until it is at most `limit` (estimated; the caller measures again).
    Values are moved only while it is too large."""
    owner: CheckpointKey = doc[Field.ID]
    entries = list(doc[Field.CHANNEL_VALUES])
    chunks: list[ChunkDocument] = []
    by_size = sorted(range(len(entries)), key=lambda i: len(entries[i][Field.DATA]), reverse=True)
    for index in by_size:
        if size <= limit - _REF_SIZE:
            break
        moved = len(entries[index][Field.DATA])
        entries[index], parts = _to_chunks(entries[index], owner, stamp)
        chunks += parts
        size -= moved - _REF_SIZE
    return {**doc, Field.CHANNEL_VALUES: entries}, chunks


def split_write(doc: Any, stamp: datetime | None) -> tuple[Any, list[ChunkDocument]]:
    """A pending-write document too large for one document, its value moved to chunks
    (owned by the write's checkpoint)."""
    value = doc[Field.VALUE]
    stored: StoredValue = {Field.DATA: value} if isinstance(value, bytes) else value
    owner: CheckpointKey = doc[Field.ID][Field.CHECKPOINT]
    moved, chunks = _to_chunks(stored, owner, stamp)
    return {**doc, Field.VALUE: moved}, chunks


# Reading: references back to bytes.

_Wanted = list[tuple[CheckpointKey, StoredValue]]


def _chunked_values(docs: Iterable[Mapping[str, Any]]) -> tuple[_Wanted, list[ChunkDocument]]:
    """The chunked values of these read documents (their channel entries and joined
    writes) with their owners, and the chunk documents the join returned, which are taken
    out of the documents' pending writes."""
    wanted: _Wanted = []
    joined: list[ChunkDocument] = []
    for doc in docs:
        for entry in doc.get(Field.CHANNEL_VALUES) or ():
            if Field.CHUNKS in entry:
                wanted.append((doc[Field.ID], entry))
        writes = doc.get(Field.JOINED_WRITES)
        if not writes:
            continue
        kept = []
        for write in writes:
            if Field.CHUNK in write[Field.ID]:
                joined.append(write)
                continue
            kept.append(write)
            value = write[Field.VALUE]
            if isinstance(value, dict) and Field.CHUNKS in value:
                wanted.append((write[Field.ID][Field.CHECKPOINT], value))  # type: ignore[arg-type]
        if len(kept) < len(writes):
            doc[Field.JOINED_WRITES] = kept  # type: ignore[index]
    return wanted, joined


def resolve(docs: Sequence[Mapping[str, Any]]) -> Plan[None]:
    """Put the bytes back into every chunked value of these documents (checkpoints as
    read, with or without their joined writes), in place: from the chunks the join
    returned, the others read in one `find` (no command when nothing is chunked)."""
    wanted, joined = _chunked_values(docs)
    if wanted:
        yield from _fill(wanted, joined)


def resolve_documents(
    checkpoints: Sequence[Mapping[str, Any]], writes: list[Any]
) -> Plan[list[Any]]:
    """`resolve` for checkpoint documents and the documents read from the writes
    collection for them (writes and chunks): the writes, chunks taken out."""
    carrier = {Field.ID: None, Field.JOINED_WRITES: writes}
    yield from resolve([*checkpoints, carrier])
    return carrier[Field.JOINED_WRITES]  # type: ignore[return-value]


def resolve_entries(owner: CheckpointKey, entries: Iterable[Mapping[str, Any]]) -> Plan[None]:
    """`resolve` for the channel entries of one checkpoint read without its `_id`."""
    wanted: _Wanted = [(owner, entry) for entry in entries if Field.CHUNKS in entry]  # type: ignore[misc]
    if wanted:
        yield from _fill(wanted, [])


def _by_key(chunks: Iterable[ChunkDocument]) -> dict[tuple[KeyFields, str, int], bytes]:
    return {
        (
            key_fields(c[Field.ID][Field.CHECKPOINT]),
            c[Field.ID][Field.CHUNK],
            c[Field.ID][Field.PART],
        ): c[Field.DATA]
        for c in chunks
    }


def _fill(wanted: _Wanted, joined: list[ChunkDocument]) -> Plan[None]:
    available = _by_key(joined)
    missing = [
        chunk_key(owner, value[Field.CHUNKS][Field.REF_ID], part)
        for owner, value in wanted
        for part in range(value[Field.CHUNKS][Field.PARTS])
        if (key_fields(owner), value[Field.CHUNKS][Field.REF_ID], part) not in available
    ]
    if missing:
        found: list[ChunkDocument] = yield Command(
            Target.WRITES, Method.FIND, (_queries.chunks_of(missing),)
        )
        available.update(_by_key(found))
    for owner, value in wanted:
        ref = value[Field.CHUNKS]
        parts = [
            available.get((key_fields(owner), ref[Field.REF_ID], p))
            for p in range(ref[Field.PARTS])
        ]
        if any(part is None for part in parts):
            thread_id, checkpoint_ns, checkpoint_id = key_fields(owner)
            raise ThreadChangedError(
                f"checkpoint {checkpoint_id!r} of thread {thread_id!r} (namespace "
                f"{checkpoint_ns!r}) lost chunks of a large value while it was read (a "
                "concurrent delete or prune); try again"
            )
        value[Field.DATA] = b"".join(parts)  # type: ignore[arg-type]
        del value[Field.CHUNKS]


def _chunk_refs(
    checkpoints: Iterable[Mapping[str, Any]], writes: Iterable[Mapping[str, Any]]
) -> Iterator[tuple[CheckpointKey, ChunkRef]]:
    """The owner and `ChunkRef` of each chunked value these documents (as stored) refer to."""
    for checkpoint in checkpoints:
        for entry in checkpoint.get(Field.CHANNEL_VALUES) or ():
            if Field.CHUNKS in entry:
                yield checkpoint[Field.ID], entry[Field.CHUNKS]
    for write in writes:
        value = write[Field.VALUE]
        if isinstance(value, Mapping) and Field.CHUNKS in value:
            yield write[Field.ID][Field.CHECKPOINT], value[Field.CHUNKS]


def referenced_chunks(
    checkpoints: Iterable[Mapping[str, Any]], writes: Iterable[Mapping[str, Any]]
) -> Iterator[Command]:
    """For each checkpoint that owns chunks these documents (as stored) refer to, the
    `find` of those chunks: a copy reads and writes one checkpoint's at a time."""
    wanted: dict[KeyFields, list[ChunkKey]] = {}
    for owner, ref in _chunk_refs(checkpoints, writes):
        keys = wanted.setdefault(key_fields(owner), [])
        keys += [chunk_key(owner, ref[Field.REF_ID], part) for part in range(ref[Field.PARTS])]
    for keys in wanted.values():
        yield Command(Target.WRITES, Method.FIND, (_queries.chunks_of(keys),))


def fresh_value_ids(
    checkpoints: Iterable[Mapping[str, Any]], writes: Iterable[Mapping[str, Any]]
) -> dict[str, str]:
    """A new value id for each chunked value these documents (as stored) refer to, so a
    copy's chunks are dated by the copy: under the source's old ids, a `prune` of the
    target before the copy's documents land would take them for orphans."""
    return {ref[Field.REF_ID]: str(ObjectId()) for _, ref in _chunk_refs(checkpoints, writes)}


def with_value_ids(doc: Any, ids: Mapping[str, str]) -> Any:
    """`doc` (a checkpoint, pending-write or chunk document, as stored) referring to its chunked
    values by the ids `ids` maps them to (`fresh_value_ids`); a copy when any changes."""
    if not ids:
        return doc
    key = doc[Field.ID]
    if Field.CHUNK in key:
        return {
            **doc,
            Field.ID: chunk_key(key[Field.CHECKPOINT], ids[key[Field.CHUNK]], key[Field.PART]),
        }
    if Field.CHANNEL_VALUES in doc:
        return {
            **doc,
            Field.CHANNEL_VALUES: [_renamed(entry, ids) for entry in doc[Field.CHANNEL_VALUES]],
        }
    value = doc.get(Field.VALUE)
    if isinstance(value, Mapping) and Field.CHUNKS in value:
        return {**doc, Field.VALUE: _renamed(value, ids)}
    return doc


def _renamed(value: Mapping[str, Any], ids: Mapping[str, str]) -> Mapping[str, Any]:
    if Field.CHUNKS not in value:
        return value
    ref = value[Field.CHUNKS]
    return {**value, Field.CHUNKS: {**ref, Field.REF_ID: ids[ref[Field.REF_ID]]}}


# Chunks that no document refers to.


def remove_unreferenced_chunks(thread_ids: Sequence[str], now: datetime | None = None) -> Plan[int]:
    """Delete the chunks of these threads that no checkpoint or pending write refers to
    and that are older than `ORPHAN_GRACE` (a crash's leftovers, or those of a checkpoint
    stored again); how many. Three reads of ids and at most one delete."""
    if not thread_ids:
        return 0
    threads = list(thread_ids)
    chunks: list[ChunkDocument] = yield Command(
        Target.WRITES, Method.FIND, _queries.chunk_keys_of_threads(threads)
    )
    if not chunks:
        return 0
    referenced: set[str] = set()
    checkpoints = yield Command(
        Target.CHECKPOINTS, Method.FIND, _queries.checkpoint_chunk_refs_of_threads(threads)
    )
    for doc in checkpoints:
        for entry in doc.get(Field.CHANNEL_VALUES) or ():
            if Field.CHUNKS in entry:
                referenced.add(entry[Field.CHUNKS][Field.REF_ID])
    writes = yield Command(
        Target.WRITES, Method.FIND, _queries.write_chunk_refs_of_threads(threads)
    )
    for doc in writes:
        referenced.add(doc[Field.VALUE][Field.CHUNKS][Field.REF_ID])
    cutoff = (now or datetime.now(timezone.utc)) - ORPHAN_GRACE
    doomed = [
        chunk[Field.ID]
        for chunk in chunks
        if chunk[Field.ID][Field.CHUNK] not in referenced
        and ObjectId.is_valid(chunk[Field.ID][Field.CHUNK])
        and ObjectId(chunk[Field.ID][Field.CHUNK]).generation_time < cutoff
    ]
    if doomed:
        yield Command(Target.WRITES, Method.DELETE_MANY, (_queries.chunks_of(doomed),))
    return len(doomed)
