"""Every filter, projection, pipeline, update, option and index the savers send, as
plain data: `_operations` only decides which to send when.

Reads are one aggregation each: `$match` the checkpoints, `$sort` newest first, `$limit`, then
`$lookup` their pending writes by the composite key, so `get_tuple` and `list` cost one round trip
(plus `getMore` batches for long lists). Every command of a thread's operations names `thread_id`,
the shard key, so a sharded cluster sends it to the shards that hold the thread.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import bson
from pymongo import ASCENDING, DESCENDING, IndexModel

from langgraph.checkpoint.mongo._commands import Target
from langgraph.checkpoint.mongo._keys import CheckpointRef, key_fields, upsert_filter
from langgraph.checkpoint.mongo._metadata import DELTA_COUNTERS
from langgraph.checkpoint.mongo._schema import PINNED, CheckpointKey, ChunkKey, Field, Joined

# Writes.

# Checkpoint fields stored only where they are needed (see `_documents`).
_OPTIONAL_CHECKPOINT_FIELDS = (Field.SERIALIZED_METADATA, Field.REPLAYED_CHANNELS)


def upsert(
    doc: Mapping[str, Any], *, keep_existing: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Filter and update that store `doc` by its `_id` (insert, or overwrite unless
    `keep_existing`), so a retried write leaves exactly one document. The TTL stamp only
    moves forward (`$max`): a retry or a lagging clock never expires part of a live thread.
    """
    fields = dict(doc)  # a copy and two deletions: half the time of a filtering dictcomp
    del fields[Field.ID]
    fields.pop(Field.TOUCHED_AT, None)
    update: dict[str, Any] = {"$setOnInsert" if keep_existing else "$set": fields}
    if not keep_existing and Field.METADATA in doc:
        # A checkpoint stored again (a copy overwritten, a document of an older version)
        # loses the optional fields its new version has not: they described the old one.
        absent = {name: "" for name in _OPTIONAL_CHECKPOINT_FIELDS if name not in doc}
        if absent:
            update["$unset"] = absent
    if Field.TOUCHED_AT in doc:
        update["$max"] = {Field.TOUCHED_AT: doc[Field.TOUCHED_AT]}
    return upsert_filter(doc), update


# Options of `update_one(*upsert(doc), **UPSERT)` (an `UpdateOne` takes `upsert=True`).
UPSERT = {"upsert": True}


# Options of a bulk write: one failed request does not stop the others; or, ordered, the
# requests run in order and the first failure stops the rest.
UNORDERED = {"ordered": False}
ORDERED = {"ordered": True}


# Threads, and checkpoints by key.


def of_thread(thread_id: str) -> dict[str, Any]:
    return {Field.THREAD_ID: thread_id}


def of_threads(thread_ids: Sequence[str]) -> dict[str, Any]:
    return {Field.THREAD_ID: {"$in": list(thread_ids)}}


def _threads_of(keys: Iterable[CheckpointKey]) -> dict[str, Any]:
    """The keys' threads: the shard key, so a command targets the shards holding them."""
    return {Field.THREAD_ID: {"$in": sorted({k[Field.THREAD_ID] for k in keys})}}


def checkpoints_of(keys: list[CheckpointKey]) -> dict[str, Any]:
    """These checkpoints (`_id`s), in the threads' shards."""
    return {**_threads_of(keys), Field.ID: {"$in": keys}}


def keys_of_thread(thread_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """`find` filter and projection: the keys of a thread's checkpoints."""
    return of_thread(thread_id), {Field.ID: 1}


def channel_values_of(key: CheckpointKey) -> tuple[dict[str, Any], dict[str, Any]]:
    """`find` filter and projection: one checkpoint's channel entries and serialized checkpoint."""
    projection = {Field.ID: 0, Field.CHANNEL_VALUES: 1, Field.CHECKPOINT: 1}
    return {Field.ID: key, Field.THREAD_ID: key[Field.THREAD_ID]}, projection


def writes_of(
    keys: list[CheckpointKey], channels: list[str] | None = None, *, chunks: bool = True
) -> dict[str, Any]:
    """The pending writes of these checkpoints (`_id`s; to these channels), in the
    threads' shards; with their chunk documents (see `_chunks`) unless `chunks` is false
    (a write to a channel is never a chunk)."""
    query: dict[str, Any] = {**_threads_of(keys), Field.WRITE_CHECKPOINT: {"$in": keys}}
    if channels is not None:
        query[Field.CHANNEL] = {"$in": channels}
    elif not chunks:
        query[CHUNK_ID] = {"$exists": False}
    return query


WRITE_CHECKPOINT_ID = f"{Field.WRITE_CHECKPOINT}.{Field.CHECKPOINT_ID}"


def writes_of_thread_checkpoints(thread_id: str, checkpoint_ids: list[str]) -> dict[str, Any]:
    """The pending writes (and chunks) of a thread's checkpoints of these ids, in any
    namespace, for SecantusDB, whose planner needs a filter of exactly an index's fields
    (`thread_checkpoint_id`); the caller filters by key, channel and kind."""
    return {Field.THREAD_ID: thread_id, WRITE_CHECKPOINT_ID: {"$in": checkpoint_ids}}


def write_wanted(write: Mapping[str, Any], channels: list[str] | None, *, chunks: bool) -> bool:
    """Whether `writes_of(..., channels, chunks=chunks)` matches this document of the
    checkpoints it names (what `writes_of_thread_checkpoints` leaves to its caller)."""
    if channels is not None:
        return write.get(Field.CHANNEL) in channels
    return chunks or Field.CHUNK not in write[Field.ID]


# Chunk documents (see `_chunks`): in the writes collection, `_id.chunk` set.

CHUNK_ID = f"{Field.ID}.{Field.CHUNK}"


def writes_of_thread(thread_id: str) -> dict[str, Any]:
    """Every pending write of a thread, its chunk documents aside."""
    return {**of_thread(thread_id), CHUNK_ID: {"$exists": False}}


def chunks_of(keys: list[ChunkKey]) -> dict[str, Any]:
    """These chunks (`_id`s), in their threads' shards."""
    threads = sorted({key[Field.CHECKPOINT][Field.THREAD_ID] for key in keys})
    return {Field.THREAD_ID: {"$in": threads}, Field.ID: {"$in": keys}}


def chunk_keys_of_threads(thread_ids: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`find` filter and projection: the keys of every chunk of these threads."""
    return {**of_threads(thread_ids), CHUNK_ID: {"$exists": True}}, {Field.ID: 1}


def checkpoint_chunk_refs_of_threads(
    thread_ids: Sequence[str],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`find` filter and projection: the chunk references of these threads' checkpoints."""
    path = f"{Field.CHANNEL_VALUES}.{Field.CHUNKS}"
    return {**of_threads(thread_ids), path: {"$exists": True}}, {Field.ID: 0, path: 1}


def write_chunk_refs_of_threads(thread_ids: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`find` filter and projection: the chunk references of these threads' writes."""
    path = f"{Field.VALUE}.{Field.CHUNKS}"
    return {**of_threads(thread_ids), path: {"$exists": True}}, {Field.ID: 0, path: 1}


def checkpoints_written_to(thread_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The keys of the checkpoints these threads' pending writes and chunks refer to, each
    once (`WrittenTo`), by the writes' `thread_checkpoint` index (see `_operations.retention`)."""
    return [
        {"$match": of_threads(thread_ids)},
        {"$group": {Field.ID: f"${Field.WRITE_CHECKPOINT}"}},
    ]


# Each answer is one checkpoint key: one batch holds a lineage's worth, as `LINEAGE_OPTIONS`.
WRITTEN_TO_OPTIONS = {"batchSize": 100_000}


# Reads.

# Fields a read never needs: the delta walk's channel names.
_READ_PROJECTION = {Field.REPLAYED_CHANNELS: 0}

NEWEST_FIRST = {
    Field.ID_CHECKPOINT_ID: DESCENDING,
    Field.THREAD_ID: ASCENDING,
    Field.ID_CHECKPOINT_NS: ASCENDING,
}


@dataclass(frozen=True, slots=True)
class WritesJoin:
    """How the reads join each checkpoint's pending writes (`$lookup` by the composite key).

    `by_thread`: with the thread known, also match `thread_id` (MongoDB 5.0's concise
    correlated form), so a sharded `checkpoint_writes` is read on one shard, and leave chunk
    documents out. Services without that form (Azure Cosmos DB) take the plain join, which
    returns chunks with the writes: `targeted_joins=False`.
    """

    collection: str
    by_thread: bool = True

    def stage(self, thread_id: str | None) -> dict[str, Any]:
        lookup: dict[str, Any] = {
            "from": self.collection,
            "localField": Field.ID,
            "foreignField": Field.WRITE_CHECKPOINT,
            "as": Field.JOINED_WRITES,
        }
        if self.by_thread and thread_id is not None:
            # Chunks stay out (see `_chunks`): they are read next, instead of making a
            # join over 16 MiB the server would refuse.
            match = {Field.THREAD_ID: thread_id, CHUNK_ID: {"$exists": False}}
            lookup["pipeline"] = [{"$match": match}]
        return {"$lookup": lookup}


# `db.command(*BUILD_INFO)`: what the server says it is, which `setup()` reads once.
BUILD_INFO = ("buildInfo",)


def joins_by_index(build_info: Mapping[str, Any]) -> bool:
    """Whether the server (by its `buildInfo`) answers the reads' `$lookup` of pending
    writes through an index, as MongoDB does with `thread_checkpoint`: then a read joins
    them (one round trip); otherwise it reads them apart (two). SecantusDB (it reports
    `secantusVersion`) never uses an index for a `$lookup` of a subdocument key, so its
    join would scan the whole writes collection, while its `find` uses the index.
    """
    return "secantusVersion" not in build_info


@dataclass(frozen=True, slots=True)
class NamespaceCount:
    """With `keep_last`: `get_tuple` also returns how many checkpoints the namespace holds, up
    to `bound` (`Field.STORED`), so the run knows whether it needs a trim (see
    `_operations.retention.trim_after_put`). A self-`$lookup` in MongoDB 5.0's concise form
    (`targeted_joins`): no extra round trip, and only the `thread_ns_checkpoint` index is read."""

    collection: str
    bound: int

    def stage(self, ref: CheckpointRef) -> dict[str, Any]:
        return {
            "$lookup": {
                "from": self.collection,
                "localField": Field.THREAD_ID,
                "foreignField": Field.THREAD_ID,
                "pipeline": namespace_count(ref, self.bound),
                "as": Field.STORED,
            }
        }


def namespace_count(ref: CheckpointRef, bound: int) -> list[dict[str, Any]]:
    """How many checkpoints `ref`'s namespace holds, up to `bound`, and the newest of
    them: one `{count: n, newest: id}`, or nothing for an empty namespace (in the
    index's order, so the server reads keys only)."""
    newest = f"${Field.ID_CHECKPOINT_ID}"
    return [
        {"$match": lineage_of(ref)},
        {"$sort": {Field.ID_CHECKPOINT_ID: DESCENDING}},
        {"$limit": bound},
        {"$group": {"_id": None, Field.COUNT: {"$sum": 1}, Field.NEWEST: {"$first": newest}}},
    ]


def get_tuple_pipeline(
    ref: CheckpointRef, join: WritesJoin, count: NamespaceCount | None = None
) -> list[dict[str, Any]]:
    """The checkpoint `ref` names, or the newest of its thread and namespace; with
    `count`, and how many checkpoints the namespace holds (up to its bound)."""
    match = lineage_of(ref)
    if ref.checkpoint_id is not None:
        match[Field.ID_CHECKPOINT_ID] = ref.checkpoint_id
    pipeline: list[dict[str, Any]] = [
        {"$match": match},
        {"$sort": {Field.ID_CHECKPOINT_ID: DESCENDING}},
        {"$limit": 1},
        {"$project": _READ_PROJECTION},
    ]
    if count is not None:
        pipeline.append(count.stage(ref))
    pipeline.append(join.stage(ref.thread_id))
    return pipeline


def newest_stamp(thread_id: str) -> tuple[tuple[dict[str, Any], dict[str, Any]], dict[str, Any]]:
    """`find` arguments of the stamp of a thread's newest root checkpoint (in the index's
    order: one key and one document read)."""
    match = {Field.THREAD_ID: thread_id, Field.ID_CHECKPOINT_NS: ""}
    options = {"sort": list(NEWEST_FIRST.items()), "limit": 1}
    return (match, {Field.TOUCHED_AT: 1}), options


def list_pipeline(
    *,
    thread_id: str | None,
    checkpoint_ns: str | None,
    checkpoint_id: str | None,
    before_id: str | None,
    metadata_conditions: Mapping[str, Any],
    limit: int | None,
    join: WritesJoin,
) -> list[dict[str, Any]]:
    """Checkpoints newest first across threads and namespaces, as `PostgresSaver` orders
    them. `metadata_conditions` (see `_metadata`) are on `metadata.<key>` paths, so an
    index a user creates on one serves them."""
    match: dict[str, Any] = dict(metadata_conditions)
    if thread_id is not None:
        match[Field.THREAD_ID] = thread_id
    if checkpoint_ns is not None:
        match[Field.ID_CHECKPOINT_NS] = checkpoint_ns
    id_condition: dict[str, Any] = {}
    if checkpoint_id is not None:
        id_condition["$eq"] = checkpoint_id
    if before_id is not None:
        id_condition["$lt"] = before_id
    if id_condition:
        match[Field.ID_CHECKPOINT_ID] = id_condition
    pipeline: list[dict[str, Any]] = [{"$match": match}, {"$sort": NEWEST_FIRST}]
    if limit is not None:
        pipeline.append({"$limit": limit})
    pipeline += [{"$project": _READ_PROJECTION}, join.stage(thread_id)]
    return pipeline


def page_options(limit: int) -> dict[str, Any]:
    """`aggregate` options of a page of `limit` documents: all of it in the first batch,
    with one document more so the server closes the cursor (no `getMore`)."""
    return {"batchSize": min(limit + 1, _MAX_BATCH_SIZE)}


def without_join(
    pipeline: list[dict[str, Any]], after: Joined | None = None, page: int | None = None
) -> list[dict[str, Any]]:
    """A read pipeline up to its join of pending writes (last in it), for reading them apart.
    `after` (the last document read) resumes it; `page` replaces its `$limit`."""
    cut = next((i for i, stage in enumerate(pipeline) if _joins_writes(stage)), len(pipeline))
    stages = [stage for stage in pipeline[:cut] if page is None or "$limit" not in stage]
    if after is not None:
        # The next documents in `NEWEST_FIRST` order.
        thread, ns, cid = key_fields(after[Field.ID])
        later = [
            {Field.ID_CHECKPOINT_ID: {"$lt": cid}},
            {Field.ID_CHECKPOINT_ID: cid, Field.THREAD_ID: {"$gt": thread}},
            {
                Field.ID_CHECKPOINT_ID: cid,
                Field.THREAD_ID: thread,
                Field.ID_CHECKPOINT_NS: {"$gt": ns},
            },
        ]
        stages[0] = {"$match": {"$and": [stages[0]["$match"], {"$or": later}]}}
    if page is not None:
        stages.append({"$limit": page})
    return stages


def _joins_writes(stage: Mapping[str, Any]) -> bool:
    return "$lookup" in stage and stage["$lookup"]["as"] == Field.JOINED_WRITES


# Threads: each thread's latest root checkpoint (`list_threads`).

# The order of `setup()`'s index `thread_ns_checkpoint`: per thread, its root checkpoints
# (namespace "", the smallest string) come first, newest first.
THREAD_ORDER = {
    Field.THREAD_ID: ASCENDING,
    Field.ID_CHECKPOINT_NS: ASCENDING,
    Field.ID_CHECKPOINT_ID: DESCENDING,
}


def threads_pipeline(
    *, after: str | None, metadata_conditions: Mapping[str, Any], limit: int | None
) -> list[dict[str, Any]]:
    """Threads in thread id order (those after `after`), each as its latest root
    checkpoint's id, metadata, serialized checkpoint and stamp (`ThreadDocument`).

    `$sort` in the index's order then `$group` taking only `$first`: a DISTINCT_SCAN of
    `thread_ns_checkpoint`, one seek and one document per thread. The grouped fields keep
    the stored names, so `metadata_conditions` (see `_metadata`) match the same paths.
    `$group` does not order its output: the `$sort` after it does.
    """
    match: dict[str, Any] = {Field.ID_CHECKPOINT_NS: ""}
    if after is not None:
        match[Field.THREAD_ID] = {"$gt": after}
    latest = {
        name: {"$first": f"${path}"}
        for name, path in (
            (Field.CHECKPOINT_ID, Field.ID_CHECKPOINT_ID),
            (Field.CHECKPOINT, Field.CHECKPOINT),
            (Field.METADATA, Field.METADATA),
            (Field.SERIALIZED_METADATA, Field.SERIALIZED_METADATA),
            (Field.TOUCHED_AT, Field.TOUCHED_AT),
        )
    }
    pipeline: list[dict[str, Any]] = [
        {"$match": match},
        {"$sort": THREAD_ORDER},
        {"$group": {Field.ID: f"${Field.THREAD_ID}", **latest}},
    ]
    if metadata_conditions:
        pipeline.append({"$match": dict(metadata_conditions)})
    pipeline.append({"$sort": {Field.ID: ASCENDING}})
    if limit is not None:
        pipeline.append({"$limit": limit})
    return pipeline


def threads_options(limit: int | None) -> dict[str, Any]:
    """`aggregate` options of `threads_pipeline`: a page in one batch (`page_options`), and
    `allowDiskUse` for servers that run the `$group` itself (before 6.0: 100 MiB without it)."""
    options: dict[str, Any] = {"allowDiskUse": True}
    if limit is not None:
        options.update(page_options(limit))
    return options


# The largest `batchSize` a server takes (an int32).
_MAX_BATCH_SIZE = 2**31 - 1


def checkpoint_counts_pipeline(thread_ids: Sequence[str]) -> list[dict[str, Any]]:
    """How many checkpoints each of these threads stores, per namespace (`CountDocument`),
    from the `thread_ns_checkpoint` index alone."""
    namespace = {
        Field.THREAD_ID: f"${Field.THREAD_ID}",
        Field.CHECKPOINT_NS: f"${Field.ID_CHECKPOINT_NS}",
    }
    group = {Field.ID: namespace, Field.COUNT: {"$sum": 1}}
    return [{"$match": of_threads(thread_ids)}, {"$group": group}]


# The delta-channel history (see `_delta`).

LINEAGE_PROJECTION = {
    Field.ID: 1,
    Field.PARENT_CHECKPOINT_ID: 1,
    # The stored channels' names, not their values.
    f"{Field.CHANNEL_VALUES}.{Field.CHANNEL}": 1,
    Field.REPLAYED_CHANNELS: 1,
    # Where `replayed_channels` is left out, the channels are these counters' keys.
    f"{Field.METADATA}.{DELTA_COUNTERS}": 1,
}
# A `keep_last` trim's lineage: also each checkpoint's run (see `_delta.run_start`).
TRIM_LINEAGE_PROJECTION = {**LINEAGE_PROJECTION, f"{Field.METADATA}.run_id": 1}
# Lineage documents are small: one large batch keeps a lineage read to one round trip.
LINEAGE_OPTIONS = {"sort": [(Field.ID_CHECKPOINT_ID, DESCENDING)], "batch_size": 100_000}
# The history read returns one document per checkpoint of the chain: one batch too.
HISTORY_OPTIONS = {"batchSize": 100_000}
# The pending writes a read takes apart (`find` options): one batch, as a join would be.
WRITES_OPTIONS = {"batch_size": 100_000}


def lineage_of(ref: CheckpointRef) -> dict[str, Any]:
    """The lineage of `ref`'s whole namespace: the walk follows parent ids, and nothing guarantees
    that an ancestor's id sorts before its descendant's (another writer's clock, custom ids)."""
    return {Field.THREAD_ID: ref.thread_id, Field.ID_CHECKPOINT_NS: ref.checkpoint_ns}


def history_pipeline(
    ref: CheckpointRef,
    chain: list[str],
    seeds: Iterable[str],
    channels: Sequence[str],
    join: WritesJoin,
) -> list[dict[str, Any]]:
    """The `chain`'s checkpoints with their writes to `channels`; the stored values of
    `channels` only for `seeds`."""
    is_seed = {"$in": [f"${Field.ID_CHECKPOINT_ID}", {"$literal": sorted(set(seeds))}]}
    wanted = {"$in": [f"$$this.{Field.CHANNEL}", {"$literal": list(channels)}]}
    seed_values = {"$filter": {"input": f"${Field.CHANNEL_VALUES}", "cond": wanted}}
    writes = {"$filter": {"input": f"${Field.JOINED_WRITES}", "cond": wanted}}
    values = {"$cond": [is_seed, seed_values, "$$REMOVE"]}
    return [
        {"$match": {**lineage_of(ref), Field.ID_CHECKPOINT_ID: {"$in": chain}}},
        {"$project": {Field.ID: 1, Field.CHANNEL_VALUES: values}},
        join.stage(ref.thread_id),
        {"$addFields": {Field.JOINED_WRITES: writes}},
    ]


# `delete_for_runs`: LangGraph's `run_id` in the readable metadata (indexed).
RUN_ID_PATH = f"{Field.METADATA}.run_id"


def of_runs(run_ids: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`find` filter and projection: the checkpoints these runs may have written, with
    their exact `run_id` (readable, or the serializer's copy where a document keeps one)."""
    projection = {Field.ID: 1, RUN_ID_PATH: 1, Field.SERIALIZED_METADATA: 1}
    return {RUN_ID_PATH: {"$in": run_ids}}, projection


# Indexes.


def indexes(join: WritesJoin, reads_apart: bool = False) -> list[tuple[Target, IndexModel]]:
    """Every index `setup()` creates (the TTL index aside), with the queries it serves;
    `reads_apart`: on a server where reads take pending writes apart (`WritesReads`)."""
    found = [
        # get_tuple (latest and by id), list of a thread, delete_thread, prune, lineage.
        (Target.CHECKPOINTS, IndexModel(list(THREAD_ORDER.items()), name="thread_ns_checkpoint")),
        # delete_for_runs.
        (
            Target.CHECKPOINTS,
            IndexModel([(RUN_ID_PATH, ASCENDING)], name="metadata_run_id", sparse=True),
        ),
        # The targeted $lookup of a checkpoint's writes, reading them apart, and by its
        # prefix delete_thread, copy_thread, prune and the TTL stamp of a thread.
        (
            Target.WRITES,
            IndexModel(
                [(Field.THREAD_ID, ASCENDING), (Field.WRITE_CHECKPOINT, ASCENDING)],
                name="thread_checkpoint",
            ),
        ),
    ]
    if not join.by_thread:
        # The plain $lookup matches `_id.checkpoint` alone.
        found.append(
            (Target.WRITES, IndexModel([(Field.WRITE_CHECKPOINT, ASCENDING)], name="checkpoint"))
        )
    if reads_apart:
        # `writes_of_thread_checkpoints`, with exactly this index's fields.
        keys = [(Field.THREAD_ID, ASCENDING), (WRITE_CHECKPOINT_ID, ASCENDING)]
        found.append((Target.WRITES, IndexModel(keys, name="thread_checkpoint_id")))
    return found


INDEX_NAMES = frozenset(
    index.document["name"]
    for by_thread in (True, False)
    for _, index in indexes(WritesJoin("", by_thread), reads_apart=True)
)


# Whole-thread expiry (see `_ttl`).

TTL_INDEX_NAME = "thread_ttl"


def ttl_index(seconds: int) -> IndexModel:
    """Whole-thread expiry: every document of a thread carries the same stamp."""
    return IndexModel(
        [(Field.TOUCHED_AT, ASCENDING)],
        name=TTL_INDEX_NAME,
        expireAfterSeconds=seconds,
        sparse=True,
    )


PINNED_INDEX_NAME = "thread_pinned"


def pinned_index() -> IndexModel:
    """A pinned thread's documents, and only theirs (`_ttl`): a write's `pin_check` of an
    unpinned thread seeks an empty range of it, and unpinned documents cost it nothing."""
    return IndexModel(
        [(Field.THREAD_ID, ASCENDING), (Field.TOUCHED_AT, ASCENDING)],
        name=PINNED_INDEX_NAME,
        partialFilterExpression={Field.TOUCHED_AT: {"$gte": PINNED}},
    )


# The update of a check: `$min` with the pin changes no stamp (none is later), so what it
# matched counts as matched, not modified. (An unstamped document would get the pin: it
# never expired anyway, and counts as modified.)
_CHANGES_NOTHING = {"$min": {Field.TOUCHED_AT: PINNED}}


def pin_check(
    thread_id: str, pinned: bool, parent: CheckpointKey | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A check that rides after a write, in its command. After a write stamped for an
    unpinned thread, it matches one of the thread's pinned documents, if any
    (`pinned_index`); after a checkpoint stamped `pinned`, its `parent` if that is not
    pinned. Filter and update: it changes nothing (see `_ttl.pin_seen`)."""
    if not pinned or parent is None:
        where: dict[str, Any] = {Field.THREAD_ID: thread_id, Field.TOUCHED_AT: {"$gte": PINNED}}
    else:
        where = {Field.ID: parent, Field.THREAD_ID: thread_id}
        where[Field.TOUCHED_AT] = {"$not": {"$gte": PINNED}}
    return where, _CHANGES_NOTHING


def collections_named(names: Sequence[str]) -> tuple[tuple[str], dict[str, Any]]:
    """Arguments of the database command (listCollections) that describes the named collections,
    their options included, in one round trip: a collection that does not exist is not listed."""
    return ("listCollections",), {"filter": {"name": {"$in": list(names)}}}


def listed_collections(reply: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """`collections_named`'s answer: each listed collection's options, by name (the
    first batch holds them all: a batch has room for 101)."""
    return {doc["name"]: doc.get("options") or {} for doc in reply["cursor"]["firstBatch"]}


# The options of an index that make two indexes of one name and key different.
_INDEX_OPTIONS = ("unique", "sparse", "expireAfterSeconds", "partialFilterExpression")


def index_exists(index_information: Mapping[str, Any], index: IndexModel) -> bool:
    """Whether the collection (its `index_information()`) has `index` already, by name,
    key and options: then creating it again would change nothing."""
    wanted = index.document
    existing = index_information.get(wanted["name"])
    if existing is None:
        return False
    if _key_pairs(existing.get("key", ())) != _key_pairs(wanted["key"].items()):
        return False
    return all(_same(existing.get(option), wanted.get(option)) for option in _INDEX_OPTIONS)


def _same(existing: Any, wanted: Any) -> bool:
    """An index option as listed and as wanted: equal, or the same BSON (a date read back
    naive, or in another time zone)."""
    if (existing or None) == (wanted or None):
        return True
    return (
        existing is not None
        and wanted is not None
        and bson.encode({"": existing}) == bson.encode({"": wanted})
    )


def _key_pairs(key: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """An index key's pairs, a direction read back as a float (`1.0`) as the int it is."""
    return [(field, int(d) if isinstance(d, float) else d) for field, d in key]


def collation_of(options: Mapping[str, Any]) -> Any:
    """A collection's default collation (from `Collection.options()`), unless it is the
    binary one (none, or `locale: "simple"`), which every query of the savers assumes."""
    collation = options.get("collation")
    if not collation or collation.get("locale") == "simple":
        return None
    return collation


def foreign_index(index_information: Mapping[str, Any]) -> str | None:
    """The name of an index `langgraph-checkpoint-mongodb` created on the checkpoints
    collection (its documents keep `checkpoint_id` at the top level, ours only in `_id`),
    if the collection has one: the sign that it holds that saver's documents."""
    for name, index in index_information.items():
        if name not in INDEX_NAMES and Field.CHECKPOINT_ID in dict(index.get("key", ())):
            return str(name)
    return None


def is_thread_ttl(index_information: Mapping[str, Any]) -> bool:
    """Whether an existing index (as `index_information()` describes it) is on our stamp."""
    return [field for field, _ in index_information.get("key", ())] == [Field.TOUCHED_AT]


def ttl_retimed(collection: str, seconds: int) -> tuple[tuple[str, str], dict[str, Any]]:
    """Arguments of the database command (collMod) that changes the TTL of the index."""
    change = {"name": TTL_INDEX_NAME, "expireAfterSeconds": seconds}
    return ("collMod", collection), {"index": change}


def touch_thread(
    thread_id: str, now: datetime, pinned: datetime | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Filter and update that move a thread's older documents to the stamp `now`, never
    backwards (`$not: {$gte: now}` also catches documents without a stamp), and, with
    `pinned`, its documents stamped `pinned` too (see `_ttl`)."""
    older: dict[str, Any] = {Field.TOUCHED_AT: {"$not": {"$gte": now}}}
    if pinned is not None:
        older = {"$or": [older, {Field.TOUCHED_AT: {"$gte": pinned}}]}
    return {Field.THREAD_ID: thread_id, **older}, {"$set": {Field.TOUCHED_AT: now}}


# Copying threads in from another saver (`migrate`).


def foreign_documents_of(thread_id: str) -> dict[str, Any]:
    """A thread's checkpoint documents that this package did not write (they have no
    channel entries: `langgraph-checkpoint-mongodb` shares our default names)."""
    return {Field.THREAD_ID: thread_id, Field.CHANNEL_VALUES: {"$exists": False}}
