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
    """`(keep_existing, document)` upserts (`_queries.upsert`) in one command: a bulk write
    (ordered with `ordered` or `last`), or for one document an `update_one`, cheaper for the
    driver. `first` and `last`: updates of the collection sent before and after them."""
    if len(docs) == 1 and not first and not last:
        [(keep, doc)] = docs
        return Command(
            target, Method.UPDATE_ONE, _queries.upsert(doc, keep_existing=keep), _queries.UPSERT
        )
    upserts = (
        UpdateOne(*_queries.upsert(doc, keep_existing=keep), upsert=True) for keep, doc in docs
    )
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

    `first`: updates the write must not land without (the thread's stamp move), sent before
    the upsert in one ordered `bulk_write`; `last`: updates sent after it (the pin check).
    PyMongo sends one wire command per kind of request: an `UpdateMany` shares the upsert's.
    """
    return upsert_command(Target.CHECKPOINTS, [(False, document)], first, last, ordered=True)


def put(
    storage: Storage,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> SaverPlan[RunnableConfig]:
    """Store a checkpoint: validate it once (`new_checkpoint`), read the parent's entries
    of unchanged channels unless cached, build the document and its cache entry in one pass
    (`build_checkpoint`), send it (`store_checkpoint`), cache its entries.

    Commands that must land before the document (chunks) are yielded before
    `store_checkpoint`; updates that ride in its command (the stamp move) go in its `first`
    (`_ttl.stamped_write`). With `keep_last`, it then detaches the trim (`trim_after_put`).
    """
    new = new_checkpoint(ref_from_config(config), checkpoint, metadata, config, new_versions)
    # A config that already names the checkpoint is stored as `InMemorySaver` stores it: as
    # its own parent, which walks take for the root (`_delta.parent_id`); its "parent"
    # values are then its own earlier copy, if any.
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
            # A regular write keeps its first value, a special one is replaced (a retry still
            # moves the stamp forward). Chunks come first, in the same ordered bulk write.
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
