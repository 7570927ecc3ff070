"""`get_delta_channel_history`, and what its read tells the `keep_last` trim."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import DeltaChannelHistory

from langgraph.checkpoint.mongo import _chunks, _delta, _queries
from langgraph.checkpoint.mongo._commands import Command, Method, Plan, Target
from langgraph.checkpoint.mongo._keys import (
    CheckpointRef,
    namespace_label,
    ref_from_config,
    str_list,
)
from langgraph.checkpoint.mongo._operations.read import _read_joined
from langgraph.checkpoint.mongo._operations.state import RunStart, Storage, _boundary, slack
from langgraph.checkpoint.mongo._schema import Field, HistoryDocument, LineageDocument
from langgraph.checkpoint.mongo.errors import ThreadChangedError


def _find_lineage(query: dict[str, Any]) -> Command:
    return Command(
        Target.CHECKPOINTS,
        Method.FIND,
        (query, _queries.LINEAGE_PROJECTION),
        _queries.LINEAGE_OPTIONS,
    )


# A delta history read that keeps meeting a concurrent delete gives up after this many.
DELTA_READ_ATTEMPTS = 3


def delta_history(
    storage: Storage,
    config: RunnableConfig,
    channels: Sequence[str],
) -> Plan[dict[str, DeltaChannelHistory]]:
    """`get_delta_channel_history` in two round trips (see `_delta`).

    The chain is read after the lineage; a delete in between (`delete_thread`, `prune`,
    `delete_for_runs`) leaves a chain checkpoint missing, and the whole read starts again
    from the thread as it is now.
    """
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
        "checkpoints "
        f"of the chain it was reading, {DELTA_READ_ATTEMPTS} times in a row (a concurrent "
        "delete or prune); try again"
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
