"""`put` and `put_writes`: the one command each write sends (stamped by `_ttl`), and the
parent's values a `put` reuses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata
from pymongo import UpdateMany, UpdateOne

from langgraph.checkpoint.mongo import _chunks, _queries, _ttl
from langgraph.checkpoint.mongo._channel_values import StoredValues, stored_values
from langgraph.checkpoint.mongo._commands import Command, Method, Plan, SaverPlan, Target
from langgraph.checkpoint.mongo._documents import (
    NewCheckpoint,
    build_checkpoint,
    new_checkpoint,
    write_documents,
)
from langgraph.checkpoint.mongo._keys import ref_from_config, require_str
from langgraph.checkpoint.mongo._operations.retention import trim_after_put
from langgraph.checkpoint.mongo._operations.state import Storage
from langgraph.checkpoint.mongo._schema import CheckpointDocument, ChunkDocument, Field
from langgraph.checkpoint.mongo._ttl import stamped_write


def upsert_command(
    target: Target,
    docs: Sequence[tuple[bool, Mapping[str, Any]]],
    first: Sequence[UpdateMany] = (),
    last: Sequence[UpdateOne] = (),
    *,
    ordered: bool = False,
) -> Command:
    """`(keep_existing, document)` upserts (`_queries.upsert`) in one command: a bulk
    write (unordered unless `ordered` or `last`: then in order, stopping at the first
    failure), or for a single document an `update_one`, which the driver dispatches for
    less client CPU. `first` and `last`: updates of the same collection sent before and
    after them in that command."""
    if len(docs) == 1 and not first and not last:
        [(keep, doc)] = docs
        return Command(
            target, Method.UPDATE_ONE, _queries.upsert(doc, keep_existing=keep), _queries.UPSERT
        )
    upserts = (_queries.upsert_request(doc, keep_existing=keep) for keep, doc in docs)
    options = _queries.ORDERED if ordered or last else _queries.UNORDERED
    return Command(target, Method.BULK_WRITE, ([*first, *upserts, *last],), options)


def _parent_values(storage: Storage, new: NewCheckpoint) -> Plan[StoredValues | None]:
    """The stored channel entries of the parent checkpoint, when a channel did not
    change since it: from this process's cache, else read (one round trip)."""
    key = new.parent_key() if new.unchanged else None
    if key is None:
        return None
    values = storage.recent.recall(key)
    if values is None:
        docs = yield Command(Target.CHECKPOINTS, Method.FIND, _queries.channel_values_of(key))
        if not docs:
            return None
        yield from _chunks.resolve_entries(key, docs[0][Field.CHANNEL_VALUES])
        versions = storage.codec.decode(docs[0][Field.CHECKPOINT]).get("channel_versions", {})
        values = stored_values(docs[0][Field.CHANNEL_VALUES], versions)
        storage.recent.remember(key, values)
    return values


def store_checkpoint(
    document: CheckpointDocument,
    first: Sequence[UpdateMany] = (),
    last: Sequence[UpdateOne] = (),
) -> Command:
    """The one command that stores a checkpoint document: an upsert (`update_one`).

    `first`: updates of the checkpoints collection the write must not land without (the thread's
    expiry stamp moved), sent before the upsert in the same command, an ordered `bulk_write` that
    stops at the first failure; `last`: updates sent after it (the check of a pin). PyMongo sends
    one wire command per kind of request: an `UpdateMany` shares the upsert's, a `DeleteMany`
    would cost a round trip of its own.
    """
    return upsert_command(Target.CHECKPOINTS, [(False, document)], first, last, ordered=True)


def put(
    storage: Storage,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> SaverPlan[RunnableConfig]:
    """Store a checkpoint: validate what was handed over once (`new_checkpoint`), read
    the parent's entries of unchanged channels if this process has not cached them,
    build the document and its cache entry in one pass (`build_checkpoint`), send it
    (`store_checkpoint`), cache its entries, move the thread's expiry stamp.

    The seam for what a checkpoint write grows: commands that must land before the document (the
    pieces of a value too large for one document) are yielded between `build_checkpoint` and
    `store_checkpoint` (`_chunks`); updates that must ride with the document in its one command
    (moving the thread's stamp) go in `store_checkpoint(..., first=...)` (`_ttl.stamped_write`).
    With `keep_last`, the write acknowledged, it detaches the trim the run's first reads called for
    (`trim_after_put`).
    """
    new = new_checkpoint(ref_from_config(config), checkpoint, metadata, config, new_versions)
    # A config that already names the checkpoint (peers' suites and users' tests put them
    # so) is stored as `InMemorySaver` stores it: as its own parent, which every walk over
    # parent ids takes for the root of its chain (`_delta.parent_id`). Its "parent" values
    # are then its own earlier copy, if any, as `InMemorySaver`'s per-version blobs are.
    parent = yield from _parent_values(storage, new)
    expiry = storage.expiry
    write = expiry.start_write(new.ref.thread_id) if expiry else None
    try:
        stamp = write.stamp if write else None
        built = build_checkpoint(
            storage.codec,
            new,
            parent,
            stamp,
            max_bytes=storage.max_bytes,
            warn_bytes=storage.warn_bytes,
        )
        if built.chunks:
            # Before the document that refers to them (see `_chunks`).
            yield upsert_command(
                Target.WRITES, [(False, chunk) for chunk in built.chunks], ordered=True
            )
        send = partial(store_checkpoint, built.document)
        # The parent whose pin a pinned checkpoint checks (`_ttl`); not itself.
        itself = new.parent_id == new.ref.checkpoint_id
        follows = new.parent_key() if write is not None and not itself else None
        yield from stamped_write(expiry, write, Target.CHECKPOINTS, send, 1, follows)
    finally:
        if write is not None:
            write.end()
    storage.recent.remember(new.key, built.values)
    stored = new.ref.config()
    yield from trim_after_put(storage, config, metadata, stored)
    return stored


def put_writes(
    storage: Storage,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> Plan[None]:
    ref = ref_from_config(config)
    expiry = storage.expiry
    write = expiry.start_write(ref.thread_id) if expiry else None
    try:
        stamp = write.stamp if write else None
        chunks: list[ChunkDocument] = []
        documents = write_documents(
            storage.codec,
            ref,
            writes,
            task_id,
            task_path,
            stamp,
            max_bytes=storage.max_bytes,
            chunks=chunks,
        )
        if documents:
            # A regular write keeps its first stored value, a special one is replaced; a
            # retried write still keeps the thread alive (its stamp moves forward). Chunks
            # come first, in the same ordered bulk write (see `_chunks`).
            upserts: list[tuple[bool, Mapping[str, Any]]] = [(False, c) for c in chunks]
            upserts += [(not replace, doc) for replace, doc in documents]
            send = partial(upsert_command, Target.WRITES, upserts, ordered=bool(chunks))
            yield from stamped_write(expiry, write, Target.WRITES, send, len(upserts))
    finally:
        if write is not None:
            write.end()


def pin_thread(storage: Storage, thread_id: str, pinned: bool) -> Plan[None]:
    """`pin_thread` (`pinned`) and `unpin_thread`: see `_ttl.pin`."""
    yield from _ttl.pin(storage.expiry, require_str(thread_id, "thread_id"), pinned)
