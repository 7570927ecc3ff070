"""Every filter, pipeline and index the savers send, as plain data.

Reads are one aggregation each: `$match` the checkpoints, `$sort` newest first,
`$limit`, then `$lookup` their pending writes by the composite key, so `get_tuple`
and `list` cost one round trip (plus `getMore` batches for long lists).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel

from langgraph.checkpoint.mongo._commands import Target
from langgraph.checkpoint.mongo._keys import CheckpointRef
from langgraph.checkpoint.mongo._schema import CheckpointKey, F
from langgraph.checkpoint.mongo._ttl import TTL_INDEX_NAME

# Fields a read never needs: the readable metadata and the filter terms.
_READ_PROJECTION = {
    F.METADATA: 0,
    F.METADATA_TERMS: 0,
    F.STORED_CHANNELS: 0,
    F.REPLAYED_CHANNELS: 0,
}

NEWEST_FIRST = {F.CHECKPOINT_ID: DESCENDING, F.THREAD_ID: ASCENDING, F.CHECKPOINT_NS: ASCENDING}


@dataclass(frozen=True, slots=True)
class WritesJoin:
    """How the reads join each checkpoint's pending writes (`$lookup` by the composite key).

    `by_thread`: with the thread known, also match `thread_id` (MongoDB 5.0's concise
    correlated form), so on a `checkpoint_writes` collection sharded on `thread_id`
    (MongoDB 5.1+ joins sharded collections) each join reads one shard instead of all.
    Services without that form (Azure Cosmos DB for MongoDB) take the plain join:
    `targeted_joins=False`.
    """

    collection: str
    by_thread: bool = True

    def stage(self, thread_id: str | None) -> dict[str, Any]:
        lookup: dict[str, Any] = {
            "from": self.collection,
            "localField": F.ID,
            "foreignField": F.CHECKPOINT,
            "as": F.JOINED_WRITES,
        }
        if self.by_thread and thread_id is not None:
            lookup["pipeline"] = [{"$match": {F.THREAD_ID: thread_id}}]
        return {"$lookup": lookup}


def get_tuple_pipeline(ref: CheckpointRef, join: WritesJoin) -> list[dict[str, Any]]:
    """The checkpoint `ref` names, or the newest of its thread and namespace."""
    match: dict[str, Any] = {F.THREAD_ID: ref.thread_id, F.CHECKPOINT_NS: ref.checkpoint_ns}
    if ref.checkpoint_id is not None:
        match[F.CHECKPOINT_ID] = ref.checkpoint_id
    return [
        {"$match": match},
        {"$sort": {F.CHECKPOINT_ID: DESCENDING}},
        {"$limit": 1},
        {"$project": _READ_PROJECTION},
        join.stage(ref.thread_id),
    ]


def list_pipeline(
    *,
    thread_id: str | None,
    checkpoint_ns: str | None,
    checkpoint_id: str | None,
    before_id: str | None,
    metadata_match: dict[str, Any],
    limit: int | None,
    join: WritesJoin,
) -> list[dict[str, Any]]:
    """Checkpoints newest first across threads and namespaces, as `PostgresSaver` orders them."""
    match: dict[str, Any] = dict(metadata_match)
    if thread_id is not None:
        match[F.THREAD_ID] = thread_id
    if checkpoint_ns is not None:
        match[F.CHECKPOINT_NS] = checkpoint_ns
    id_condition: dict[str, Any] = {}
    if checkpoint_id is not None:
        id_condition["$eq"] = checkpoint_id
    if before_id is not None:
        id_condition["$lt"] = before_id
    if id_condition:
        match[F.CHECKPOINT_ID] = id_condition
    pipeline: list[dict[str, Any]] = [{"$match": match}, {"$sort": NEWEST_FIRST}]
    if limit is not None:
        pipeline.append({"$limit": limit})
    pipeline += [{"$project": _READ_PROJECTION}, join.stage(thread_id)]
    return pipeline


def apart(
    pipeline: list[dict[str, Any]], after: Any = None, skip: int = 0, page: int | None = None
) -> list[dict[str, Any]]:
    """A read pipeline up to its `$lookup` (the join and what filters it are last), for
    when a joined document would exceed 16 MiB. `after` (a document already read, or its
    config) and `skip` (how many were) resume it; `page` caps what it returns."""
    cut = next((i for i, stage in enumerate(pipeline) if "$lookup" in stage), len(pipeline))
    stages = [dict(stage) for stage in pipeline[:cut]]
    if after is not None:
        # The next documents in `NEWEST_FIRST` order.
        cid, thread, ns = after[F.CHECKPOINT_ID], after[F.THREAD_ID], after[F.CHECKPOINT_NS]
        later = [
            {F.CHECKPOINT_ID: {"$lt": cid}},
            {F.CHECKPOINT_ID: cid, F.THREAD_ID: {"$gt": thread}},
            {F.CHECKPOINT_ID: cid, F.THREAD_ID: thread, F.CHECKPOINT_NS: {"$gt": ns}},
        ]
        stages[0] = {"$match": {"$and": [stages[0]["$match"], {"$or": later}]}}
    for stage in stages:
        if "$limit" in stage:
            stage["$limit"] -= skip
    if page is not None:
        stages.append({"$limit": page})
    return stages


def channel_values_of(key: CheckpointKey) -> tuple[dict[str, Any], dict[str, Any]]:
    """`find` filter and projection: the stored channel entries of one checkpoint."""
    return {F.ID: key, F.THREAD_ID: key[F.THREAD_ID]}, {F.ID: 0, F.CHANNEL_VALUES: 1}


def writes_of(keys: list[CheckpointKey], channels: list[str] | None = None) -> dict[str, Any]:
    """The pending writes of these checkpoints (`_id`s; to these channels), in the
    threads' shards."""
    query: dict[str, Any] = {
        F.THREAD_ID: {"$in": sorted({k[F.THREAD_ID] for k in keys})},
        F.CHECKPOINT: {"$in": keys},
    }
    if channels is not None:
        query[F.CHANNEL] = {"$in": channels}
    return query


def indexes(join: WritesJoin) -> list[tuple[Target, IndexModel]]:
    """Every index `setup()` creates (the TTL index aside), with the queries it serves."""
    found = [
        # get_tuple (latest and by id), list of a thread, delete_thread, prune, lineage.
        (
            Target.CHECKPOINTS,
            IndexModel(
                [
                    (F.THREAD_ID, ASCENDING),
                    (F.CHECKPOINT_NS, ASCENDING),
                    (F.CHECKPOINT_ID, DESCENDING),
                ],
                name="thread_ns_checkpoint",
            ),
        ),
        # delete_for_runs.
        (
            Target.CHECKPOINTS,
            IndexModel([(f"{F.METADATA}.run_id", ASCENDING)], name="metadata_run_id", sparse=True),
        ),
        # The targeted $lookup of a checkpoint's writes, reading them apart, and by its
        # prefix delete_thread, copy_thread, prune and the TTL stamp of a thread.
        (
            Target.WRITES,
            IndexModel(
                [(F.THREAD_ID, ASCENDING), (F.CHECKPOINT, ASCENDING)], name="thread_checkpoint"
            ),
        ),
    ]
    if not join.by_thread:
        # The plain $lookup matches `checkpoint` alone.
        found.append((Target.WRITES, IndexModel([(F.CHECKPOINT, ASCENDING)], name="checkpoint")))
    return found


INDEX_NAMES = frozenset(
    index.document["name"]
    for by_thread in (True, False)
    for _, index in indexes(WritesJoin("", by_thread))
)


def ttl_index(seconds: int) -> IndexModel:
    """Whole-thread expiry: every document of a thread carries the same stamp."""
    return IndexModel(
        [(F.TOUCHED_AT, ASCENDING)], name=TTL_INDEX_NAME, expireAfterSeconds=seconds, sparse=True
    )
