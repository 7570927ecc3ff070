"""`get_delta_channel_history`, and what its read tells the `keep_last` trim; a page of a
namespace's checkpoints for `threads history`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import bson
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, DeltaChannelHistory

from langgraph.checkpoint.mongo import _chunks, _delta, _queries
from langgraph.checkpoint.mongo._commands import Command, Method, Plan, Target
from langgraph.checkpoint.mongo._documents import checkpoint_tuple
from langgraph.checkpoint.mongo._keys import (
    CheckpointRef,
    namespace_label,
    ref_from_config,
    require_str,
    str_list,
)
from langgraph.checkpoint.mongo._operations.read import _read_joined
from langgraph.checkpoint.mongo._operations.state import RunStart, Storage, _boundary, slack
from langgraph.checkpoint.mongo._schema import (
    Field,
    HistoryDocument,
    JoinedCheckpoint,
    LineageDocument,
)
from langgraph.checkpoint.mongo.errors import ThreadChangedError


def _find_lineage(
    query: dict[str, Any], projection: Mapping[str, Any] = _queries.LINEAGE_PROJECTION
) -> Command:
    return Command(Target.CHECKPOINTS, Method.FIND, (query, projection), _queries.LINEAGE_OPTIONS)


# A delta history read that keeps meeting a concurrent delete gives up after this many.
DELTA_READ_ATTEMPTS = 3


def delta_history(
    storage: Storage, config: RunnableConfig, channels: Sequence[str]
) -> Plan[dict[str, DeltaChannelHistory]]:
    """`get_delta_channel_history` in two round trips (see `_delta`). A delete between
    the lineage and the chain reads leaves a chain checkpoint missing: the read starts again."""
    wanted = str_list(channels, "channels")
    if not wanted:
        return {}
    ref = ref_from_config(config)
    for _ in range(DELTA_READ_ATTEMPTS):
        lineage_docs: list[LineageDocument] = yield _find_lineage(_queries.lineage_of(ref))
        lineage = {doc[Field.ID][Field.CHECKPOINT_ID]: doc for doc in lineage_docs}
        target_id = (
            ref.checkpoint_id if ref.checkpoint_id is not None else next(iter(lineage), None)
        )
        found = _delta.walk(lineage, target_id, wanted)
        if found.missing is not None:
            assert target_id is not None  # a walk from no checkpoint misses nothing
            _delta.refuse_undeclared_gap(lineage, target_id, found, namespace_label(*ref[:2]))
            continue  # an ancestor deleted while the read ran: a short chain is wrong
        docs: list[HistoryDocument] = []
        if found.chain:
            seeds = found.seed_at.values()
            pipeline = _queries.history_pipeline(ref, found.chain, seeds, wanted, storage.join)
            docs = yield from _read_joined(storage, pipeline, _queries.HISTORY_OPTIONS, wanted)
            yield from _chunks.resolve(docs)
        if {doc[Field.ID][Field.CHECKPOINT_ID] for doc in docs} == set(found.chain):
            if storage.keep_last is not None and target_id in lineage:
                _judge_lineage(storage, ref, target_id, lineage_docs)
            return _delta.assemble(storage.codec, found, docs, wanted)
    raise ThreadChangedError(
        f"get_delta_channel_history: {namespace_label(ref.thread_id, ref.checkpoint_ns)} lost "
        f"checkpoints of the chain it was reading, {DELTA_READ_ATTEMPTS} times in a row (a "
        "concurrent delete or prune); try again"
    )


def _judge_lineage(
    storage: Storage, ref: CheckpointRef, target_id: str, lineage: list[LineageDocument]
) -> None:
    """With `keep_last`, for the run that reads the `DeltaChannel` history of the
    checkpoint it starts from: whether its namespace needs a trim, from the whole
    lineage just read (more than `slack` to delete, as the trim would see it)."""
    keep_last = storage.keep_last
    assert keep_last is not None

    def over(start: RunStart) -> bool | None:
        ids = start.ids
        if target_id not in ids:  # a read of history, not of a run's start
            return None
        boundary = _boundary(start.read)
        doomed = _delta.prunable(lineage, keep_last, boundary=boundary, protect=ids)
        return len(doomed) > slack(keep_last)

    storage.run_starts.judged(ref.thread_id, ref.checkpoint_ns, over)


def history_page(
    storage: Storage, thread_id: str, checkpoint_ns: str, before: str | None, limit: int
) -> Plan[list[tuple[CheckpointTuple, int]]]:
    """Up to `limit` checkpoints of a namespace older than `before`, newest first, each with its
    stored size (with its pending writes and chunks, as BSON), for `threads history`: one
    aggregation on `thread_ns_checkpoint` (two where reads go apart: `WritesReads`)."""
    pipeline = _queries.list_pipeline(
        thread_id=require_str(thread_id, "thread_id"),
        checkpoint_ns=require_str(checkpoint_ns, "checkpoint_ns"),
        checkpoint_id=None,
        before_id=before,
        metadata_conditions={},
        limit=limit,
        join=storage.join,
    )
    docs: list[JoinedCheckpoint] = yield from _read_joined(
        storage, pipeline, _queries.page_options(limit)
    )
    yield from _chunks.resolve(docs)
    return [(checkpoint_tuple(storage.codec, doc), len(bson.encode(doc))) for doc in docs]
