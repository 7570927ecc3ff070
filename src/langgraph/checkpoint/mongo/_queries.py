"""Every filter, pipeline and index the savers send, as plain data.

Reads are one aggregation each: `$match` the checkpoints, `$sort` newest first,
`$limit`, then `$lookup` their pending writes by the composite key, so `get_tuple`
and `list` cost one round trip (plus `getMore` batches for long lists).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel

from langgraph.checkpoint.mongo._channel_values import CHANNEL_VALUES
from langgraph.checkpoint.mongo._commands import Target
from langgraph.checkpoint.mongo._documents import JOINED_WRITES, REPLAYED_CHANNELS, STORED_CHANNELS
from langgraph.checkpoint.mongo._keys import CheckpointRef
from langgraph.checkpoint.mongo._metadata import TERMS_FIELD
from langgraph.checkpoint.mongo._ttl import TOUCHED_AT, TTL_INDEX_NAME

# Fields a read never needs: the readable metadata and the filter terms.
_READ_PROJECTION = {
    "metadata": 0,
    TERMS_FIELD: 0,
    STORED_CHANNELS: 0,
    REPLAYED_CHANNELS: 0,
}

NEWEST_FIRST = {"checkpoint_id": DESCENDING, "thread_id": ASCENDING, "checkpoint_ns": ASCENDING}


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
            "localField": "_id",
            "foreignField": "checkpoint",
            "as": JOINED_WRITES,
        }
        if self.by_thread and thread_id is not None:
            lookup["pipeline"] = [{"$match": {"thread_id": thread_id}}]
        return {"$lookup": lookup}


def get_tuple_pipeline(ref: CheckpointRef, join: WritesJoin) -> list[dict[str, Any]]:
    """The checkpoint `ref` names, or the newest of its thread and namespace."""
    match: dict[str, Any] = {"thread_id": ref.thread_id, "checkpoint_ns": ref.checkpoint_ns}
    if ref.checkpoint_id is not None:
        match["checkpoint_id"] = ref.checkpoint_id
    return [
        {"$match": match},
        {"$sort": {"checkpoint_id": DESCENDING}},
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
        match["thread_id"] = thread_id
    if checkpoint_ns is not None:
        match["checkpoint_ns"] = checkpoint_ns
    id_condition: dict[str, Any] = {}
    if checkpoint_id is not None:
        id_condition["$eq"] = checkpoint_id
    if before_id is not None:
        id_condition["$lt"] = before_id
    if id_condition:
        match["checkpoint_id"] = id_condition
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
        cid, thread, ns = after["checkpoint_id"], after["thread_id"], after["checkpoint_ns"]
        later = [
            {"checkpoint_id": {"$lt": cid}},
            {"checkpoint_id": cid, "thread_id": {"$gt": thread}},
            {"checkpoint_id": cid, "thread_id": thread, "checkpoint_ns": {"$gt": ns}},
        ]
        stages[0] = {"$match": {"$and": [stages[0]["$match"], {"$or": later}]}}
    for stage in stages:
        if "$limit" in stage:
            stage["$limit"] -= skip
    if page is not None:
        stages.append({"$limit": page})
    return stages


def channel_values_of(key: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`find` filter and projection: the stored channel entries of one checkpoint."""
    return {"_id": key, "thread_id": key["thread_id"]}, {"_id": 0, CHANNEL_VALUES: 1}


def writes_of(keys: list[dict[str, str]], channels: list[str] | None = None) -> dict[str, Any]:
    """The pending writes of these checkpoints (`_id`s; to these channels), in the
    threads' shards."""
    query: dict[str, Any] = {
        "thread_id": {"$in": sorted({k["thread_id"] for k in keys})},
        "checkpoint": {"$in": keys},
    }
    if channels is not None:
        query["channel"] = {"$in": channels}
    return query


def indexes(join: WritesJoin) -> list[tuple[Target, IndexModel]]:
    """Every index `setup()` creates (the TTL index aside), with the queries it serves."""
    found = [
        # get_tuple (latest and by id), list of a thread, delete_thread, prune, lineage.
        (
            Target.CHECKPOINTS,
            IndexModel(
                [
                    ("thread_id", ASCENDING),
                    ("checkpoint_ns", ASCENDING),
                    ("checkpoint_id", DESCENDING),
                ],
                name="thread_ns_checkpoint",
            ),
        ),
        # delete_for_runs.
        (
            Target.CHECKPOINTS,
            IndexModel([("metadata.run_id", ASCENDING)], name="metadata_run_id", sparse=True),
        ),
        # The targeted $lookup of a checkpoint's writes, reading them apart, and by its
        # prefix delete_thread, copy_thread, prune and the TTL stamp of a thread.
        (
            Target.WRITES,
            IndexModel(
                [("thread_id", ASCENDING), ("checkpoint", ASCENDING)], name="thread_checkpoint"
            ),
        ),
    ]
    if not join.by_thread:
        # The plain $lookup matches `checkpoint` alone.
        found.append((Target.WRITES, IndexModel([("checkpoint", ASCENDING)], name="checkpoint")))
    return found


INDEX_NAMES = frozenset(
    index.document["name"]
    for by_thread in (True, False)
    for _, index in indexes(WritesJoin("", by_thread))
)


def ttl_index(seconds: int) -> IndexModel:
    """Whole-thread expiry: every document of a thread carries the same stamp."""
    return IndexModel(
        [(TOUCHED_AT, ASCENDING)], name=TTL_INDEX_NAME, expireAfterSeconds=seconds, sparse=True
    )
