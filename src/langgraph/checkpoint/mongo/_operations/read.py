"""The reads: a checkpoint with its writes (joined, or read apart when over 16 MiB), `get_tuple`,
`list`, and the ttl refresh a read detaches; the thread-level reads are in `threads`."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from pymongo.errors import OperationFailure

from langgraph.checkpoint.mongo import _chunks, _delta, _queries
from langgraph.checkpoint.mongo._channel_values import stored_values
from langgraph.checkpoint.mongo._commands import (
    Command,
    Detach,
    Listing,
    ListStep,
    Method,
    NextDocument,
    OpenCursor,
    Plan,
    SaverPlan,
    Target,
)
from langgraph.checkpoint.mongo._documents import checkpoint_tuple, written_by_us
from langgraph.checkpoint.mongo._keys import (
    CheckpointRef,
    KeyFields,
    before_id_from_config,
    key_fields,
    list_scope,
    ref_from_config,
    short_repr,
)
from langgraph.checkpoint.mongo._logging import logger
from langgraph.checkpoint.mongo._metadata import metadata_filter
from langgraph.checkpoint.mongo._operations.state import ReadCheckpoint, Storage
from langgraph.checkpoint.mongo._schema import (
    Field,
    Joined,
    JoinedCheckpoint,
    WriteDocument,
    is_pinned,
)
from langgraph.checkpoint.mongo._ttl import move_thread

# A joined read too large to return, by the code the server refuses it with:
# - 10334 (BSONObjectTooLarge): the joined document, or the reply, is over 16 MiB;
# - 4568: the classic engine's `$lookup` collected over its intermediate limit
# (`internalLookupStageIntermediateDocumentMaxSizeBytes`: 100 MiB, 16 MiB on some Atlas tiers);
# - 146 (ExceededMemoryLimit): the same limit where the slot-based engine runs the
#   `$lookup` (MongoDB 6.0+; it runs the plain join of `targeted_joins=False`).
_JOIN_TOO_LARGE = frozenset({146, 4568, 10334})


def join_too_large(error: BaseException) -> bool:
    """A read failed because a checkpoint with its writes exceeds 16 MiB (each alone fits):
    read them apart instead."""
    return isinstance(error, OperationFailure) and error.code in _JOIN_TOO_LARGE


def _read_apart(
    pipeline: list[dict[str, Any]],
    channels: list[str] | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    server_apart: bool = False,
) -> Plan[list[Any]]:
    """The checkpoints of a read pipeline, then their writes in one `find`: for checkpoints
    too large to return with their writes, and on servers whose `$lookup` would read every
    write (`server_apart`: see `WritesReads`; one thread's by `thread_checkpoint_id`)."""
    docs: list[Joined] = yield Command(
        Target.CHECKPOINTS, Method.AGGREGATE, (pipeline,), options or {}
    )
    if docs:
        # A single checkpoint's chunks come with its writes; a page's are read one
        # checkpoint at a time, as it is returned (see `_chunks.resolve`).
        chunks = len(docs) == 1
        for doc in docs:
            if not isinstance(doc[Field.ID], Mapping):  # another saver's: refused by name
                written_by_us(doc)
        owners = [key_fields(d[Field.ID]) for d in docs]
        by_id = server_apart and len({thread for thread, _, _ in owners}) == 1
        query = (
            _queries.writes_of_thread_checkpoints(owners[0][0], [cid for _, _, cid in owners])
            if by_id
            else _queries.writes_of([d[Field.ID] for d in docs], channels, chunks=chunks)
        )
        writes: list[WriteDocument] = yield Command(
            Target.WRITES, Method.FIND, (query,), _queries.WRITES_OPTIONS
        )
        joined: dict[KeyFields, list[WriteDocument]] = {}
        for write in writes:
            if by_id and not _queries.write_wanted(write, channels, chunks=chunks):
                continue
            joined.setdefault(key_fields(write[Field.ID][Field.CHECKPOINT]), []).append(write)
        for doc, owner in zip(docs, owners, strict=True):
            doc[Field.JOINED_WRITES] = joined.get(owner, [])
    return docs


def _read_joined(
    storage: Storage,
    pipeline: list[dict[str, Any]],
    options: Mapping[str, Any] | None = None,
    channels: list[str] | None = None,
) -> Plan[list[Any]]:
    """A read pipeline's documents (`Joined`) with their writes: one aggregation, or read
    apart where the server's `$lookup` would read every write (`WritesReads`) or when
    it refuses a joined document over 16 MiB."""
    if not storage.reads.joined:
        apart = _queries.without_join(pipeline)
        return (yield from _read_apart(apart, channels, options, server_apart=True))
    try:
        docs: list[Joined] = yield Command(
            Target.CHECKPOINTS, Method.AGGREGATE, (pipeline,), options or {}
        )
    except OperationFailure as exc:
        if not join_too_large(exc):
            raise
        docs = yield from _read_apart(_queries.without_join(pipeline), channels)
    return docs


def get_tuple(storage: Storage, config: RunnableConfig) -> SaverPlan[CheckpointTuple | None]:
    """`get_tuple`: `read_tuple`, then the stamp move `refresh_ttl_on_read` asks for."""
    found = yield from read_tuple(storage, config)
    yield from refresh_on_read(storage, config)
    return found


def read_tuple(storage: Storage, config: RunnableConfig) -> Plan[CheckpointTuple | None]:
    ref = ref_from_config(config)
    pipeline = _queries.get_tuple_pipeline(ref, storage.join, storage.count)
    docs: list[JoinedCheckpoint] = yield from _read_joined(storage, pipeline)
    if not docs:
        if ref.checkpoint_id is not None:
            _warn_not_stored(ref)
        elif storage.expiry is not None and not ref.checkpoint_ns:
            # A new thread, or one deleted since (by any process): no pin to keep.
            storage.expiry.moves.learn(ref.thread_id, None)
        return None
    stored = docs[0].pop(Field.STORED, None)
    if storage.expiry is not None:
        storage.expiry.moves.learn(ref.thread_id, is_pinned(docs[0].get(Field.TOUCHED_AT)))
    yield from _chunks.resolve(docs)
    found = checkpoint_tuple(storage.codec, docs[0])
    if storage.keep_last is not None:
        over: bool | None = None
        if storage.count is not None:
            # A `DeltaChannel` checkpoint's namespace holds ancestors it needs beyond
            # any count: the run's `delta_history` judges it from the lineage.
            replays = _delta.replayed_channels(docs[0])  # type: ignore[arg-type]
            count = stored[0][Field.COUNT] if stored else 0
            over = not replays and count >= storage.count.bound
        run_id = found.metadata.get("run_id")
        read = ReadCheckpoint(
            docs[0][Field.ID][Field.CHECKPOINT_ID],
            run_id if isinstance(run_id, str) else None,
            stored[0][Field.NEWEST] if stored else None,
        )
        storage.run_starts.read(ref.thread_id, ref.checkpoint_ns, read, over)
    # A graph's next `put` names this checkpoint as its parent: keep its stored values.
    versions = found.checkpoint.get("channel_versions", {})
    storage.recent.remember(
        docs[0][Field.ID], stored_values(docs[0][Field.CHANNEL_VALUES], versions)
    )
    return found


def _warn_not_stored(ref: CheckpointRef) -> None:
    """Say that a config names a checkpoint the thread does not hold (a UI's time travel
    past what `keep_last`, `prune` or `ttl` removed): LangGraph reads the `None` this
    returns as an empty state and starts the thread afresh from it, silently."""
    logger.warning(
        "thread %s: checkpoint %s (namespace %s) is not stored; likely trimmed by keep_last, "
        "removed by prune or a delete, or expired by ttl. LangGraph reads no state for it, "
        "and a run from this config starts the thread afresh",
        short_repr(ref.thread_id),
        short_repr(ref.checkpoint_id),
        short_repr(ref.checkpoint_ns),
    )


def refresh_on_read(
    storage: Storage, config: RunnableConfig | None
) -> Generator[Detach, Any, None]:
    """With `refresh_ttl_on_read`, the detached move of the stamp of `config`'s thread, once
    per bucket and process (`_ttl.move_thread`); a config the read refuses is refused here
    with the read's own error."""
    expiry = storage.expiry
    if expiry is None or not storage.refresh_ttl_on_read or config is None:
        return
    thread_id = list_scope(config)[0]
    stamp = expiry.stamp_of(thread_id)
    if expiry.moves.needs_move(thread_id, stamp):
        yield Detach("refresh_ttl_on_read", move_thread(expiry, thread_id, stamp))


MAX_LIMIT = 2**63 - 1

# Checkpoints per page once a `list` reads apart: each may be near 16 MiB.
LIST_APART_PAGE = 25


class _ListedDocuments:
    """The documents of a `list` pipeline in order: streamed from one aggregation, the rest
    in pages read apart once the server refuses a joined document (`join_too_large`), or
    all of them where its `$lookup` would read every write (`joined` false)."""

    def __init__(self, pipeline: list[dict[str, Any]], *, joined: bool) -> None:
        self.pipeline = pipeline
        # The request for the stream's next document, once its cursor is open.
        self.next_document: NextDocument | None = None
        self.streaming = self.joined = joined
        self.page: list[JoinedCheckpoint] = []
        self.exhausted = False
        self.last: JoinedCheckpoint | None = None

    def next(self, page_size: int) -> Generator[ListStep, Any, JoinedCheckpoint | None]:
        if self.streaming:
            try:
                if self.next_document is None:
                    command = Command(Target.CHECKPOINTS, Method.AGGREGATE, (self.pipeline,))
                    self.next_document = NextDocument((yield OpenCursor(command)))
                doc: JoinedCheckpoint | None = yield self.next_document
            except OperationFailure as error:
                if not join_too_large(error):
                    raise
                self.streaming = False
            else:
                if doc is not None:
                    self.last = doc
                return doc
        if not self.page:
            if self.exhausted:
                return None
            pipeline = _queries.without_join(self.pipeline, self.last, page_size)
            self.page = yield from _read_apart(pipeline, server_apart=not self.joined)
            # A short page is the last: no read more to learn that.
            self.exhausted = len(self.page) < page_size
            if not self.page:
                return None
        self.last = self.page.pop(0)
        return self.last


def list_checkpoints(
    storage: Storage,
    config: RunnableConfig | None,
    *,
    filter: dict[str, Any] | None,
    before: RunnableConfig | None,
    limit: int | None,
) -> Listing[CheckpointTuple]:
    """`list`: the matching checkpoints, newest first, each yielded as soon as it is read.

    Where the metadata filter's server condition is not exact (see `_metadata`), the
    server cannot apply `limit`: each checkpoint read is checked in Python, and the list
    stops after `limit` accepted ones.
    """
    yield from refresh_on_read(storage, config)
    # Every argument is checked before deciding that nothing can match.
    _check_limit(limit)
    metadata = metadata_filter(filter)
    before_id = before_id_from_config(before)
    thread_id, checkpoint_ns, checkpoint_id = (
        list_scope(config) if config is not None else (None, None, None)
    )
    if limit is not None and limit <= 0:
        return
    pipeline = _queries.list_pipeline(
        thread_id=thread_id,
        checkpoint_ns=checkpoint_ns,
        checkpoint_id=checkpoint_id,
        before_id=before_id,
        metadata_conditions=metadata.conditions,
        limit=limit if metadata.exact else None,
        join=storage.join,
    )
    documents = _ListedDocuments(pipeline, joined=storage.reads.joined)
    listed = 0
    while True:
        page_size = LIST_APART_PAGE
        if metadata.exact and limit is not None:
            page_size = min(page_size, limit - listed)
        doc = yield from documents.next(page_size)
        if doc is None:
            return
        yield from _chunks.resolve([doc])
        found = checkpoint_tuple(storage.codec, doc)
        if metadata.exact or metadata.matches(found.metadata):
            yield found
            listed += 1
            if listed == limit:
                return


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise TypeError(f"limit must be an int or None, got {type(limit).__name__}")
    if limit is not None and limit > MAX_LIMIT:
        raise ValueError(f"limit must be at most 2**63 - 1 (a BSON int64), got {limit}")
