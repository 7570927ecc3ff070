"""What each saver method sends, step by step, without doing any I/O.

Each operation is a generator that yields `Command`s and receives their results; its
return value is the method's result. The async and the sync saver only run these
generators against their driver (h11-style sans-I/O), so the logic of every
operation is written exactly once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import Any, NamedTuple, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    get_checkpoint_metadata,
)
from pymongo import IndexModel, UpdateMany
from pymongo.errors import OperationFailure, WriteConcernError

from langgraph.checkpoint.mongo import _chunks, _delta, _options, _orphans, _queries
from langgraph.checkpoint.mongo._channel_values import (
    RecentValues,
    StoredValues,
    stored_values,
)
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._commands import (
    Command,
    Listing,
    ListStep,
    Method,
    NextDocument,
    OpenCursor,
    Plan,
    Target,
)
from langgraph.checkpoint.mongo._documents import (
    DEFAULT_STATE_MAX_BYTES,
    NewCheckpoint,
    ThreadInfo,
    build_checkpoint,
    checkpoint_tuple,
    moved_checkpoint,
    moved_write,
    new_checkpoint,
    stored_form,
    stored_metadata,
    stored_write_form,
    stored_writes,
    thread_info,
    written_by_us,
)
from langgraph.checkpoint.mongo._keys import (
    CheckpointRef,
    KeyFields,
    before_id_from_config,
    checkpoint_key,
    key_fields,
    list_scope,
    namespace_label,
    ref_from_config,
    require_str,
    short_repr,
    str_list,
)
from langgraph.checkpoint.mongo._logging import logger
from langgraph.checkpoint.mongo._metadata import metadata_filter
from langgraph.checkpoint.mongo._schema import (
    CheckpointDocument,
    CheckpointKey,
    CountDocument,
    Field,
    HistoryDocument,
    Joined,
    JoinedCheckpoint,
    LineageDocument,
    MetadataDocument,
    WriteDocument,
    WrittenTo,
)
from langgraph.checkpoint.mongo._ttl import StampedWrite, ThreadExpiry
from langgraph.checkpoint.mongo.errors import (
    UNAUTHORIZED,
    IndexCreationError,
    ThreadChangedError,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Storage:
    """What the plans need of a saver besides each call's arguments (no client: they do
    no I/O). A saver builds it once; a `with_allowlist` copy gets one with its own codec.

    Attributes:
        codec: how values become stored bytes (the saver's serializer and compression).
        join: how reads join each checkpoint with its pending writes.
        expiry: the whole-thread expiry stamps; `None` when the saver has no `ttl`.
        recent: the cache of channel values read or written lately, which a `put` of
            the next checkpoint reuses instead of reading its parent.
        keep_last: the saver's `keep_last`; `None` when threads keep every checkpoint.
        count: with `keep_last`, how `get_tuple` counts the namespace's checkpoints
            beside the one it returns; `None` without `keep_last`, or with
            `targeted_joins=False` (services without MongoDB 5.0's `$lookup`: the trim
            counts them first).
        run_starts: with `keep_last`, what each namespace's last reads found, for the
            next `put` (see `trim_after_put`).
        refresh_on_read: the saver's `refresh_ttl_on_read`: a read of a thread moves
            its expiry stamp too (see `refresh_on_read`).
        max_bytes: the largest checkpoint or pending write stored (`state_max_bytes`).
    """

    codec: Codec
    join: _queries.WritesJoin
    expiry: ThreadExpiry | None
    recent: RecentValues
    keep_last: int | None = None
    count: _queries.NamespaceCount | None = None
    run_starts: RunStarts = field(default_factory=lambda: RunStarts())
    refresh_on_read: bool = False
    max_bytes: int = DEFAULT_STATE_MAX_BYTES

    def forget_threads(self, thread_ids: Sequence[str]) -> None:
        """A delete changed these threads: drop what this process remembers of them."""
        self.recent.forget_threads(thread_ids)


def slack(keep_last: int) -> int:
    """How many checkpoints over `keep_last` a namespace may hold before a run trims it:
    each trim costs three commands, which a small `keep_last` must not make per run."""
    return max(keep_last, 10)


def count_bound(keep_last: int) -> int:
    """Up to how many checkpoints a run's first read counts a namespace: one more than
    `keep_last` + `slack` means it needs a trim (at most what a server's `$limit` takes)."""
    return min(keep_last + slack(keep_last) + 1, _options.MAX_INT64)


class ReadCheckpoint(NamedTuple):
    """A checkpoint `get_tuple` returned, the run that wrote it (its metadata's `run_id`,
    if any), and the namespace's newest checkpoint as the read counted it (`None`: not
    counted)."""

    checkpoint_id: str
    run_id: str | None
    newest: str | None = None


class RunStart(NamedTuple):
    """What the reads at the start of a run found of a namespace: the last two
    checkpoints they returned (LangGraph reads the one a run goes on from and, when that
    is not the latest, the latest too), and whether the namespace holds more than
    `keep_last` + `slack` (`None`: not counted; the trim counts first)."""

    read: tuple[ReadCheckpoint, ...]
    over: bool | None

    @property
    def ids(self) -> list[str]:
        return [checkpoint.checkpoint_id for checkpoint in self.read]


def _boundary(reads: Sequence[ReadCheckpoint]) -> str:
    """The newest checkpoint of the namespace when these reads were made: a trim keeps
    the `keep_last` newest up to it, and every newer one (the run's own). The count
    names it; without one (`targeted_joins=False`), the newest checkpoint read."""
    return max(read.newest or read.checkpoint_id for read in reads)


# Namespaces a saver remembers a run start of until their next `put`; a saver that only
# reads many threads starts again empty past it (the next run reads again).
_RUN_STARTS = 10_000


class RunStarts:
    """A hint from a run's first reads to its `put`s, which every run rebuilds: never the
    truth about what is stored (the trim reads the namespace again)."""

    def __init__(self) -> None:
        self._starts: dict[tuple[str, str], RunStart] = {}
        self._lock = threading.Lock()

    def read(self, thread_id: str, ns: str, checkpoint: ReadCheckpoint, over: bool | None) -> None:
        """`get_tuple` returned this checkpoint; `over` as `RunStart`'s."""
        with self._lock:
            if len(self._starts) >= _RUN_STARTS:
                self._starts.clear()
            known = self._starts.get((thread_id, ns))
            read: tuple[ReadCheckpoint, ...] = (checkpoint,)
            if known is not None:
                over = True if known.over else over
                earlier = (c for c in known.read if c.checkpoint_id != checkpoint.checkpoint_id)
                read = (*earlier, checkpoint)[-2:]
            self._starts[thread_id, ns] = RunStart(read, over)

    def judged(self, thread_id: str, ns: str, over: Callable[[RunStart], bool | None]) -> None:
        """Settle whether the namespace needs a trim, by `over` of what its reads found
        (`None`: `over` cannot tell, and what the reads found stands)."""
        with self._lock:
            known = self._starts.get((thread_id, ns))
            verdict = None if known is None else over(known)
            if known is not None and verdict is not None:
                self._starts[thread_id, ns] = known._replace(over=known.over or verdict)

    def take(self, thread_id: str, ns: str) -> RunStart | None:
        with self._lock:
            return self._starts.pop((thread_id, ns), None)


def index_names(storage: Storage) -> frozenset[str]:
    """The indexes `setup()` creates for a saver of these options (`setup`'s `needs`)."""
    names = {index.document["name"] for _, index in _queries.indexes(storage.join)}
    return frozenset(names | ({_queries.TTL_INDEX_NAME} if storage.expiry else set()))


def setup(
    storage: Storage,
    names: Mapping[Target, str],
    create_indexes: bool,
    skip_indexes: Collection[str],
) -> Plan[frozenset[str]]:
    """Check both collections, then create the indexes they lack: on a new database
    three commands (one listCollections, one createIndexes per collection), on one set
    up before three reads (the listCollections and each collection's listIndexes).
    Returns which of the saver's indexes (`index_names`) the collections now have.

    Every check reads before the first write: a collation other than the binary one,
    the official saver's indexes, an index named like the TTL index on other keys.
    """
    skip = set(str_list(list(skip_indexes), "skip_indexes"))
    known = _queries.INDEX_NAMES | {_queries.TTL_INDEX_NAME}
    unknown = skip - known
    if unknown:
        raise ValueError(
            f"skip_indexes names unknown indexes {sorted(unknown)}; the indexes are {sorted(known)}"
        )
    targets = (Target.CHECKPOINTS, Target.WRITES)
    listed = yield Command(
        Target.DATABASE,
        Method.COMMAND,
        *_queries.collections_named([names[target] for target in targets]),
    )
    found = _queries.listed_collections(listed)
    existing: dict[Target, Mapping[str, Any]] = {}
    for target in targets:
        _refuse_collation(names[target], found.get(names[target], {}))
        # A collection that does not exist has no index (and nothing to refuse).
        if names[target] in found:
            existing[target] = yield Command(target, Method.INDEX_INFORMATION)
        else:
            existing[target] = {}
        _refuse_foreign_index(names[target], existing[target])
    have = {name for target in targets for name in existing[target]} & index_names(storage)
    if not create_indexes:
        return frozenset(have)
    expiry = storage.expiry if _queries.TTL_INDEX_NAME not in skip else None
    if _queries.TTL_INDEX_NAME not in skip:
        for target in targets:
            _refuse_other_ttl_index(names[target], existing[target], expiry)
    for target in targets:
        wanted = [
            index
            for of, index in _queries.indexes(storage.join)
            if of is target and index.document["name"] not in skip
        ]
        ttl = existing[target].get(_queries.TTL_INDEX_NAME)
        seconds = expiry.seconds if expiry is not None else None
        if seconds is not None and ttl is None:
            wanted.append(_queries.ttl_index(seconds))
        missing = [index for index in wanted if not _queries.index_exists(existing[target], index)]
        if missing:
            yield from _create_indexes(names[target], target, missing)
        if seconds is not None and ttl is not None and ttl.get("expireAfterSeconds") != seconds:
            retimed = _queries.ttl_retimed(names[target], seconds)
            yield Command(Target.DATABASE, Method.COMMAND, *retimed)
    return (index_names(storage) - skip) | have


def _refuse_collation(collection: str, options: Mapping[str, Any]) -> None:
    """Refuse a collection whose default collation (`options`: its listed options) is
    not MongoDB's binary one: every match of ids and of metadata strings must be byte
    equality (`"A" != "a"`), as in `InMemorySaver`, not a locale's."""
    collation = _queries.collation_of(options)
    if collation is not None:
        raise ValueError(
            f"collection {collection!r} has the default collation {collation}: this saver "
            "matches thread ids, checkpoint ids and metadata strings byte for byte, which a "
            "collation would change (with strength 2, 'A' and 'a' would be one thread). "
            "Use collections created without a collation (other names, or another database)"
        )


def _refuse_foreign_index(collection: str, existing: Mapping[str, Any]) -> None:
    """Refuse collections that `langgraph-checkpoint-mongodb` writes to (it uses the same
    default names, and its constructor creates these indexes; `existing` is the
    collection's `index_information()`): reads of one namespace match `_id.checkpoint_ns`,
    which its documents lack, so without this check such a thread would look empty, and
    the next write would fail on that saver's unique index (E11000) or be stored among
    its documents."""
    name = _queries.foreign_index(existing)
    if name is not None:
        raise ValueError(
            f"collection {collection!r} has the index {name!r} on "
            f"{list(dict(existing[name]['key']))}, which langgraph-checkpoint-mongodb "
            "creates: it holds that saver's documents. Give this saver its own collections "
            "(checkpoint_collection_name=..., writes_collection_name=...) or database; see "
            "https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/migrating/#moving-from-langgraph-checkpoint-mongodb"
        )


def _refuse_other_ttl_index(
    collection: str, indexes: Mapping[str, Any], expiry: ThreadExpiry | None
) -> None:
    """Refuse an index named like the whole-thread TTL index on other keys (`indexes`:
    the collection's `index_information()`). A saver without `ttl` (a script, a
    notebook) leaves an existing TTL index alone: it must not switch expiry off for the
    services that share the collections, so dropping the index is left to a person."""
    name = _queries.TTL_INDEX_NAME
    existing = indexes.get(name)
    if existing is not None and not _queries.is_thread_ttl(existing):
        raise ValueError(
            f"collection {collection!r} has an index named {name!r} on "
            f"{existing.get('key')}, not on {Field.TOUCHED_AT!r}: drop or rename it, or call "
            f"setup(skip_indexes={{{name!r}}})"
        )
    if expiry is None and existing is not None:
        logger.warning(
            "collection %r has the TTL index %r but this saver has ttl=None: threads "
            "stamped by savers with a ttl still expire; drop the index to stop that",
            collection,
            name,
        )


# Failures of createIndexes that are not the server refusing an index: the error comes
# out as the server sent it (a write concern that cannot be met, a failed login, a time
# limit, a node that stopped being primary), without index advice. (A user without the
# createIndex privilege is told how to run without creating indexes: `IndexCreationError`.)
_NOT_INDEX_REFUSALS = frozenset(
    {18, 50, 64, 79, 91, 100, 189, 262, 10107, 11600, 11602, 13435, 13436}
)


def _create_indexes(collection: str, target: Target, indexes: Sequence[IndexModel]) -> Plan[None]:
    """One createIndexes with all of `indexes`. When the server refuses it, each index is
    created on its own, so that the error names the one it refuses
    (`IndexCreationError`); a failure that is not an index refusal is raised as the
    server sent it, with a note that it happened while setting up."""
    try:
        yield Command(target, Method.CREATE_INDEXES, (list(indexes),))
    except OperationFailure as exc:
        if exc.code == UNAUTHORIZED:  # the user may not create indexes (no privilege)
            raise IndexCreationError(collection, indexes[0].document, exc) from exc
        if isinstance(exc, WriteConcernError) or exc.code in _NOT_INDEX_REFUSALS:
            note = getattr(exc, "add_note", None)
            if note is not None:
                note(f"while setup() created the indexes of collection {collection!r}")
            raise
        if len(indexes) == 1:
            raise IndexCreationError(collection, indexes[0].document, exc) from exc
        for index in indexes:
            yield from _create_indexes(collection, target, [index])
        raise


def upsert_command(
    target: Target,
    docs: Sequence[tuple[bool, Mapping[str, Any]]],
    first: Sequence[UpdateMany] = (),
    *,
    ordered: bool = False,
) -> Command:
    """`(keep_existing, document)` upserts (`_queries.upsert`) in one command: a bulk
    write (unordered unless `ordered`: then in order, stopping at the first failure), or
    for a single document an `update_one`, which the driver dispatches for less client
    CPU. `first`: updates of the same collection sent before them in that command."""
    if len(docs) == 1 and not first:
        [(keep, doc)] = docs
        return Command(
            target, Method.UPDATE_ONE, _queries.upsert(doc, keep_existing=keep), _queries.UPSERT
        )
    upserts = (_queries.upsert_request(doc, keep_existing=keep) for keep, doc in docs)
    options = _queries.ORDERED if ordered else _queries.UNORDERED
    return Command(target, Method.BULK_WRITE, ([*first, *upserts],), options)


def touch_thread(
    expiry: ThreadExpiry | None, thread_id: str, written: datetime | None
) -> Plan[None]:
    """After a write stamped `written`, move the thread's older documents to the current
    stamp, unless this process did already (writes first, see `_ttl`).

    Done after the write and never backwards (`$not: {$gte: now}`), so a write that was
    stamped in an older bucket but landed after another writer's move is moved too, and
    unstamped documents (written before `ttl` was set) join the thread's stamp.
    """
    if expiry is None or written is None:
        return
    now = expiry.stamp()
    if now == written and not expiry.needs_move(thread_id, now):
        return
    for target in (Target.WRITES, Target.CHECKPOINTS):
        yield Command(target, Method.UPDATE_MANY, _queries.touch_thread(thread_id, now))
    expiry.moved(thread_id, now)


def _stamped_write(
    expiry: ThreadExpiry | None,
    write: StampedWrite | None,
    target: Target,
    send: Callable[[Sequence[UpdateMany]], Command],
) -> Plan[None]:
    """The one command of a write to `target` stamped `write.stamp`: `send(first)`
    builds it, with `first` sent before the write in it. The write is in flight
    (`ThreadExpiry.start_write`) until its command returned or failed.

    The first write of the thread in a new bucket (per process: `ThreadExpiry.claim`)
    also moves the thread's older documents: the move of `target`'s rides first in the
    same command, the other collection's is one more command, the pending writes' always
    before the checkpoints' (see `_ttl`). Other writes of the bucket, in flight at the
    same time included, send nothing more. A write that lands in a later bucket than it
    was stamped in moves the thread after it (`_late_move`).
    """
    if expiry is None or write is None:
        yield send(())
        return
    thread_id, stamp = write.thread_id, write.stamp
    try:
        if not expiry.claim(thread_id, stamp):
            yield send(())
        else:
            yield from _moved_with(expiry, thread_id, stamp, target, send)
    finally:
        write.end()
    yield from _late_move(expiry, thread_id, stamp)


def _moved_with(
    expiry: ThreadExpiry,
    thread_id: str,
    stamp: datetime,
    target: Target,
    send: Callable[[Sequence[UpdateMany]], Command],
) -> Plan[None]:
    """A claimed move of the thread to `stamp`, with the write `send` builds."""
    other = Target.WRITES if target is Target.CHECKPOINTS else Target.CHECKPOINTS
    touch = _queries.touch_thread(thread_id, stamp)
    try:
        if other is Target.WRITES:
            yield Command(other, Method.UPDATE_MANY, touch)
        yield send([UpdateMany(*touch)])
        if other is Target.CHECKPOINTS:
            yield Command(other, Method.UPDATE_MANY, touch)
    except BaseException:
        expiry.release(thread_id, stamp)
        raise
    expiry.moved(thread_id, stamp)


def refresh_on_read(storage: Storage, config: RunnableConfig | None) -> Plan[None] | None:
    """With `refresh_ttl_on_read`, what a read of `config`'s thread (`get_tuple`, `list`
    of one thread) sends besides: the move of the thread's stamp, once per bucket and
    process, as a plan of its own that the saver runs without making the read wait for
    it (`None`: nothing to send). Reads of no single thread move nothing; a config the
    read refuses is refused here with the read's own error, as without the option."""
    expiry = storage.expiry
    if expiry is None or not storage.refresh_on_read or config is None:
        return None
    thread_id = list_scope(config)[0]
    stamp = expiry.stamp()
    if not expiry.needs_move(thread_id, stamp):
        return None
    return _claimed_move(expiry, thread_id, stamp)


def _claimed_move(expiry: ThreadExpiry, thread_id: str, stamp: datetime) -> Plan[None]:
    """A read's move of its thread, claimed when the saver runs it rather than when it is
    scheduled: a run that fails before the plan starts (a failed `setup()`) holds no
    claim, and the next read moves the thread."""
    if expiry.claim(thread_id, stamp):
        yield from _move_thread(expiry, thread_id, stamp)


def _move_thread(expiry: ThreadExpiry, thread_id: str, stamp: datetime) -> Plan[None]:
    """A claimed move of the thread's documents to `stamp`, the pending writes first."""
    try:
        for target in (Target.WRITES, Target.CHECKPOINTS):
            yield Command(target, Method.UPDATE_MANY, _queries.touch_thread(thread_id, stamp))
    except BaseException:
        expiry.release(thread_id, stamp)
        raise
    expiry.moved(thread_id, stamp)


def _late_move(expiry: ThreadExpiry, thread_id: str, stamp: datetime) -> Plan[None]:
    """A write stamped in a bucket that ended while it was in flight moves the thread to
    the new bucket's stamp after it landed, unless this process did since (see `_ttl`:
    no move of this process overtook it while it was in flight)."""
    now = expiry.stamp()
    if now != stamp and expiry.claim(thread_id, now):
        yield from _move_thread(expiry, thread_id, now)


def _parent_values(storage: Storage, new: NewCheckpoint) -> Plan[StoredValues | None]:
    """The stored channel entries of the parent checkpoint, when a channel did not
    change since it: from this process's cache, else read (one round trip)."""
    if new.parent_id is None or not new.unchanged:
        return None
    key = checkpoint_key(new.ref.thread_id, new.ref.checkpoint_ns, new.parent_id)
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


def store_checkpoint(document: CheckpointDocument, first: Sequence[UpdateMany] = ()) -> Command:
    """The one command that stores a checkpoint document: an upsert (`update_one`).

    `first`: updates of the checkpoints collection the write must not land without (the
    thread's expiry stamp moved), sent before the upsert in the same command, an ordered
    `bulk_write` that stops at the first failure. PyMongo sends one wire command per kind
    of request: an `UpdateMany` shares the upsert's, a `DeleteMany` would cost a round
    trip of its own.
    """
    if not first:
        return upsert_command(Target.CHECKPOINTS, [(False, document)])
    requests = [*first, _queries.upsert_request(document)]
    return Command(Target.CHECKPOINTS, Method.BULK_WRITE, (requests,))


def put(
    storage: Storage,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> Plan[RunnableConfig]:
    """Store a checkpoint: validate what was handed over once (`new_checkpoint`), read
    the parent's entries of unchanged channels if this process has not cached them,
    build the document and its cache entry in one pass (`build_checkpoint`), send it
    (`store_checkpoint`), cache its entries, move the thread's expiry stamp.

    The seam for what a checkpoint write grows: commands that must land before the
    document (the pieces of a value too large for one document) are yielded between
    `build_checkpoint` and `store_checkpoint` (`_chunks`); updates that must ride with
    the document in its one command (moving the thread's stamp) go in
    `store_checkpoint(..., first=...)` (`_stamped_write`). With `keep_last`, the saver
    then sends the trim the run's first reads called for, in the background
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
        built = build_checkpoint(storage.codec, new, parent, stamp, max_bytes=storage.max_bytes)
        if built.chunks:
            # Before the document that refers to them (see `_chunks`).
            yield upsert_command(
                Target.WRITES, [(False, chunk) for chunk in built.chunks], ordered=True
            )
        send = partial(store_checkpoint, built.document)
        yield from _stamped_write(expiry, write, Target.CHECKPOINTS, send)
    finally:
        if write is not None:
            write.end()
    storage.recent.remember(new.key, built.values)
    return new.ref.config()


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
        documents, chunks = stored_writes(
            storage.codec, ref, writes, task_id, task_path, stamp, max_bytes=storage.max_bytes
        )
        if documents:
            # A regular write keeps its first stored value, a special one is replaced; a
            # retried write still keeps the thread alive (its stamp moves forward). Chunks
            # come first, in the same ordered bulk write (see `_chunks`).
            upserts: list[tuple[bool, Mapping[str, Any]]] = [(False, c) for c in chunks]
            upserts += [(not replace, doc) for replace, doc in documents]
            send = partial(upsert_command, Target.WRITES, upserts, ordered=bool(chunks))
            yield from _stamped_write(expiry, write, Target.WRITES, send)
    finally:
        if write is not None:
            write.end()


def trim_after_put(
    storage: Storage, config: RunnableConfig, metadata: CheckpointMetadata, stored: RunnableConfig
) -> Plan[None] | None:
    """With `keep_last`: after the `put(config, ..., metadata)` of `stored`, the trim its
    namespace needs, as a plan of its own that the saver runs in the background without
    making LangGraph wait for it (`None`: nothing to trim).

    The run's first reads decided (`get_tuple` counts the namespace in its own
    aggregation, `delta_history` judges from the lineage it reads), and the first `put`
    of the run sends the trim, so that a read alone never deletes. The trim is
    `prune(keep_last=N)` of the namespace as its run found it: the `keep_last` newest up
    to the namespace's newest when the run read it (the latest before the run, also when
    the run travels back in time), every newer one (the run's own), the checkpoints the
    run read, and the ancestors they all rebuild a `DeltaChannel` from stay. Nothing is
    remembered across runs: a trim that failed or never ran (a saver dropped, a process
    killed) is decided again by the namespace's next run.

    A read of a checkpoint the putting run wrote itself (`get_state` while it runs, a
    UI polling the thread) is not where the run started: such reads set no boundary, so
    the newest checkpoint before the run always stays, and rolling the run back
    (`delete_for_runs`) leaves it the latest. Without such a read, nothing is trimmed
    until the next run.
    """
    keep_last = storage.keep_last
    if keep_last is None:
        return None
    ref = ref_from_config(stored)
    start = storage.run_starts.take(ref.thread_id, ref.checkpoint_ns)
    if start is None or start.over is False:
        return None
    run_id = get_checkpoint_metadata(config, metadata).get("run_id")
    started_from = [c for c in start.read if run_id is None or c.run_id != run_id]
    if not started_from:
        return None
    namespace = CheckpointRef(ref.thread_id, ref.checkpoint_ns, None)
    return _trim(keep_last, namespace, started_from, run_id, counted=start.over is not None)


def _trim(
    keep_last: int,
    namespace: CheckpointRef,
    started_from: Sequence[ReadCheckpoint],
    run_id: str | None,
    *,
    counted: bool,
) -> Plan[None]:
    """The trim of `trim_after_put`. What the server holds decides what the run started
    from, beside what this process saw it read: the newest checkpoint the putting run did
    not write stays (a read of an older one while the run goes on, a UI browsing the
    history, would otherwise move the boundary past it)."""
    if not counted:  # no count came with the read (`targeted_joins=False`)
        bound = count_bound(keep_last)
        pipeline = _queries.namespace_count(namespace, bound)
        found = yield Command(Target.CHECKPOINTS, Method.AGGREGATE, (pipeline,))
        if not found or found[0][Field.COUNT] < bound:
            return
    lineage = yield _find_lineage(_queries.lineage_of(namespace), _queries.TRIM_LINEAGE_PROJECTION)
    protect = [read.checkpoint_id for read in started_from]
    if run_id is not None and (start := _delta.run_start(lineage, run_id)) is not None:
        protect.append(start)
    boundary = _boundary(started_from)
    doomed = _delta.prunable(lineage, keep_last, boundary=boundary, protect=protect)
    yield from _delete_checkpoints(doomed, checkpoints_first=True)


# A joined read too large to return, by the code the server refuses it with:
# - 10334 (BSONObjectTooLarge): the joined document, or the reply, is over 16 MiB;
# - 4568: the classic engine's `$lookup` collected over its intermediate limit
#   (`internalLookupStageIntermediateDocumentMaxSizeBytes`: 100 MiB, 16 MiB on some Atlas
#   tiers);
# - 146 (ExceededMemoryLimit): the same limit where the slot-based engine runs the
#   `$lookup` (MongoDB 6.0+; it runs the plain join of `targeted_joins=False`).
_JOIN_TOO_LARGE = frozenset({146, 4568, 10334})


def join_too_large(error: BaseException) -> bool:
    """A read failed because a checkpoint with its writes exceeds 16 MiB (each alone fits):
    read them apart instead."""
    return isinstance(error, OperationFailure) and error.code in _JOIN_TOO_LARGE


def _read_apart(
    pipeline: list[dict[str, Any]], channels: list[str] | None = None
) -> Plan[list[Any]]:
    """The checkpoints of a read pipeline, then their writes in one `find`: two round
    trips instead of one, for checkpoints too large to return with their writes."""
    docs: list[Joined] = yield Command(Target.CHECKPOINTS, Method.AGGREGATE, (pipeline,))
    if docs:
        # A single checkpoint's chunks come with its writes; a page's are read one
        # checkpoint at a time, as it is returned (see `_chunks.resolve`).
        query = _queries.writes_of([d[Field.ID] for d in docs], channels, chunks=len(docs) == 1)
        writes: list[WriteDocument] = yield Command(Target.WRITES, Method.FIND, (query,))
        joined: dict[KeyFields, list[WriteDocument]] = {}
        for write in writes:
            joined.setdefault(key_fields(write[Field.ID][Field.CHECKPOINT]), []).append(write)
        for doc in docs:
            doc[Field.JOINED_WRITES] = joined.get(key_fields(doc[Field.ID]), [])
    return docs


def _read_joined(
    pipeline: list[dict[str, Any]],
    options: Mapping[str, Any] | None = None,
    channels: list[str] | None = None,
) -> Plan[list[Any]]:
    """A read pipeline's documents (`Joined`) with their writes: one aggregation, or read
    apart when the server refuses a joined document over 16 MiB."""
    try:
        docs: list[Joined] = yield Command(
            Target.CHECKPOINTS, Method.AGGREGATE, (pipeline,), options or {}
        )
    except OperationFailure as exc:
        if not join_too_large(exc):
            raise
        docs = yield from _read_apart(_queries.without_join(pipeline), channels)
    return docs


def get_tuple(storage: Storage, config: RunnableConfig) -> Plan[CheckpointTuple | None]:
    ref = ref_from_config(config)
    pipeline = _queries.get_tuple_pipeline(ref, storage.join, storage.count)
    docs: list[JoinedCheckpoint] = yield from _read_joined(pipeline)
    if not docs:
        if ref.checkpoint_id is not None:
            _warn_not_stored(ref)
        return None
    stored = docs[0].pop(Field.STORED, None)
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


MAX_LIMIT = 2**63 - 1

# Checkpoints per page once a `list` reads apart: each may be near 16 MiB.
LIST_APART_PAGE = 25


class _ListedDocuments:
    """The documents of a `list` pipeline in order: streamed from one aggregation; after
    the server refuses a joined document over 16 MiB (`join_too_large`), the rest in
    pages read apart, from where the stream stopped."""

    def __init__(self, pipeline: list[dict[str, Any]]) -> None:
        self.pipeline = pipeline
        # The request for the stream's next document, once its cursor is open.
        self.next_document: NextDocument | None = None
        self.streaming = True
        self.page: list[JoinedCheckpoint] = []
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
            pipeline = _queries.without_join(self.pipeline, self.last, page_size)
            self.page = yield from _read_apart(pipeline)
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
    documents = _ListedDocuments(pipeline)
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


def list_threads(
    storage: Storage,
    *,
    filter: dict[str, Any] | None,
    limit: int | None,
    before: str | ThreadInfo | None,
) -> Listing[ThreadInfo]:
    """`list_threads`: each thread by its latest root checkpoint, in thread id order,
    those after `before`, each yielded as soon as it is read; one aggregation.

    The metadata filter applies to that latest checkpoint, as `list`'s does to each
    checkpoint: where its server condition is exact, the server also applies `limit`
    (a page is one command); otherwise each thread read is checked in Python and the
    listing stops after `limit` accepted ones.
    """
    _check_limit(limit)
    metadata = metadata_filter(filter)
    after = _thread_cursor(before)
    if limit is not None and limit <= 0:
        return
    server_limit = limit if metadata.exact else None
    pipeline = _queries.threads_pipeline(
        after=after, metadata_conditions=metadata.conditions, limit=server_limit
    )
    options = _queries.threads_options(server_limit)
    cursor = yield OpenCursor(Command(Target.CHECKPOINTS, Method.AGGREGATE, (pipeline,), options))
    accepted = 0
    while accepted != limit and (doc := (yield NextDocument(cursor))) is not None:
        found = thread_info(storage.codec, doc)
        if metadata.exact or metadata.matches(found.metadata):
            accepted += 1
            yield found


def _thread_cursor(before: Any) -> str | None:
    """The thread id a `list_threads(before=...)` resumes after."""
    if before is None:
        return None
    if isinstance(before, ThreadInfo):
        before = before.thread_id
    elif not isinstance(before, str):
        raise TypeError(
            "before must be a thread id (str), a ThreadInfo that list_threads yielded, or "
            f"None, got {type(before).__name__}"
        )
    return require_str(before, "before")


def checkpoint_counts(thread_ids: Sequence[str]) -> Plan[dict[str, dict[str, int]]]:
    """How many checkpoints each of these threads has, per namespace (one aggregation);
    a thread without any is absent."""
    threads = str_list(thread_ids, "thread_ids")
    if not threads:
        return {}
    pipeline = _queries.checkpoint_counts_pipeline(threads)
    docs: list[CountDocument] = yield Command(Target.CHECKPOINTS, Method.AGGREGATE, (pipeline,))
    counts: dict[str, dict[str, int]] = {}
    for doc in docs:
        key = doc[Field.ID]
        counts.setdefault(key[Field.THREAD_ID], {})[key[Field.CHECKPOINT_NS]] = doc[Field.COUNT]
    return counts


def _find_lineage(
    query: dict[str, Any], projection: Mapping[str, Any] = _queries.LINEAGE_PROJECTION
) -> Command:
    return Command(Target.CHECKPOINTS, Method.FIND, (query, projection), _queries.LINEAGE_OPTIONS)


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
            assert target_id is not None  # a walk from no checkpoint misses nothing
            _delta.refuse_undeclared_gap(lineage, target_id, found, namespace_label(*ref[:2]))
            continue  # an ancestor deleted while the read ran: a short chain is wrong
        docs: list[HistoryDocument] = []
        if found.chain:
            seeds = found.seed_at.values()
            pipeline = _queries.history_pipeline(ref, found.chain, seeds, wanted, storage.join)
            docs = yield from _read_joined(pipeline, _queries.HISTORY_OPTIONS, wanted)
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


def delete_thread(storage: Storage, thread_id: str) -> Plan[None]:
    thread_id = require_str(thread_id, "thread_id")
    storage.forget_threads([thread_id])
    # Checkpoints go first: if the second step fails, what is left are writes that no
    # checkpoint joins, never a checkpoint that silently lost its writes.
    yield Command(Target.CHECKPOINTS, Method.DELETE_MANY, (_queries.of_thread(thread_id),))
    yield Command(Target.WRITES, Method.DELETE_MANY, (_queries.of_thread(thread_id),))


def delete_for_runs(storage: Storage, run_ids: Sequence[str]) -> Plan[None]:
    """Delete the runs' checkpoints and writes, except ancestors that a surviving
    checkpoint of the thread still rebuilds its `DeltaChannel`s from. A `keep_last`
    trim keeps the newest checkpoint a run started on, so rolling that run back leaves
    the thread's latest as it was before the run."""
    runs = str_list(run_ids, "run_ids")
    if not runs:
        return
    found: list[MetadataDocument] = yield Command(
        Target.CHECKPOINTS, Method.FIND, _queries.of_runs(runs)
    )
    # The index narrows; the exact metadata decides, as Python compares it: an array
    # that contains a run id, or another type that prints like one, is not that run.
    doomed = [doc[Field.ID] for doc in found if _run_id(storage.codec, doc) in runs]
    if not doomed:
        return
    threads = sorted({key[Field.THREAD_ID] for key in doomed})
    lineage: list[LineageDocument] = yield _find_lineage(_queries.of_threads(threads))
    storage.forget_threads(threads)
    yield from _delete_checkpoints(_delta.deletable(lineage, doomed))


# Keys per delete command: some 1 MiB of filter, far below the 16 MiB command limit.
DELETE_BATCH = 10_000


def _delete_checkpoints(
    keys: Sequence[CheckpointKey], *, checkpoints_first: bool = False
) -> Plan[None]:
    """Delete these checkpoints (`_id`s) and their writes, a batch of keys per command.

    Per batch the writes go first. A failure in between leaves checkpoints that are
    still doomed, which running the operation again finds and deletes, with whatever
    writes they still have: a retry finishes the job. (The other order would leave
    writes that no checkpoint joins and that a retry, reading the checkpoints that
    remain, could no longer find.) A `keep_last` trim, which runs while readers may
    read the checkpoints it deletes, takes the checkpoints first: a reader then finds
    a checkpoint with its writes or not at all.
    """
    for start in range(0, len(keys), DELETE_BATCH):
        batch = list(keys[start : start + DELETE_BATCH])
        first = Command(Target.WRITES, Method.DELETE_MANY, (_queries.writes_of(batch),))
        then = Command(Target.CHECKPOINTS, Method.DELETE_MANY, (_queries.checkpoints_of(batch),))
        if checkpoints_first:
            first, then = then, first
        yield first
        yield then


def _run_id(codec: Codec, doc: MetadataDocument) -> str | None:
    """The run a checkpoint belongs to. Metadata that is not a mapping (a document another
    program wrote) has no run id, as a mapping without a string `run_id` has none."""
    metadata = stored_metadata(codec, doc)
    run_id = metadata.get("run_id") if isinstance(metadata, Mapping) else None
    return run_id if isinstance(run_id, str) else None


def copy_thread(storage: Storage, source_thread_id: str, target_thread_id: str) -> Plan[None]:
    source = require_str(source_thread_id, "source_thread_id")
    target = require_str(target_thread_id, "target_thread_id")
    checkpoints: list[CheckpointDocument] = yield Command(
        Target.CHECKPOINTS, Method.FIND, (_queries.of_thread(source),)
    )
    if not checkpoints:
        return
    copied_ids = {key_fields(doc[Field.ID]) for doc in checkpoints}
    writes: list[WriteDocument] = yield Command(
        Target.WRITES, Method.FIND, (_queries.writes_of_thread(source),)
    )
    expiry = storage.expiry
    stamp = expiry.stamp() if expiry else None
    # Writes first: a copy that fails half way leaves no checkpoint without its writes,
    # and upserting by `_id` makes running the copy again converge. Only the writes of
    # the copied checkpoints: a write no checkpoint joins (left by an interrupted
    # delete) must not land in the target thread.
    kept = [doc for doc in writes if key_fields(doc[Field.ID][Field.CHECKPOINT]) in copied_ids]
    # Before both, the chunks they refer to, one checkpoint's at a time, under new value
    # ids (dated by this copy: see `_chunks.fresh_value_ids`).
    ids = _chunks.fresh_value_ids(checkpoints, kept)
    for read in _chunks.referenced_chunks(checkpoints, kept):
        found: list[WriteDocument] = yield read
        moved = [
            (False, _chunks.with_value_ids(moved_write(chunk, target, stamp), ids))
            for chunk in found
        ]
        if moved:  # none when a concurrent delete took the source's checkpoint
            yield upsert_command(Target.WRITES, moved, ordered=True)
    copied_writes = [
        (False, _chunks.with_value_ids(moved_write(doc, target, stamp), ids)) for doc in kept
    ]
    if copied_writes:
        yield upsert_command(Target.WRITES, copied_writes)
    copied = [
        (False, _chunks.with_value_ids(moved_checkpoint(doc, target, stamp), ids))
        for doc in checkpoints
    ]
    yield upsert_command(Target.CHECKPOINTS, copied)
    yield from touch_thread(expiry, target, stamp)


PRUNE_STRATEGIES = ("keep_latest", "delete")


def prune(
    storage: Storage, thread_ids: Sequence[str], strategy: str, keep_last: int | None = None
) -> Plan[None]:
    """Delete old checkpoints of the threads, with their writes.

    `keep_last=N` (the Redis saver's semantics) overrides `strategy`: each namespace keeps
    its N newest checkpoints (0: none). `"keep_latest"` is `keep_last=1`; `"delete"`
    removes the threads whole. A kept checkpoint also keeps the ancestors it rebuilds its
    `DeltaChannel`s from (dropping those would silently empty the channels), so it reads
    back exactly as before. Only what was read is deleted: a checkpoint written
    meanwhile is newer, and stays. Pending writes no stored checkpoint owns go too, once
    old enough (see `_orphans`).
    """
    threads = str_list(thread_ids, "thread_ids")
    keep = _options.prune_keep_last(keep_last)
    if strategy == "delete_all":  # LangGraph's Agent Server's name for "delete"
        strategy = "delete"
    if keep is None and strategy == "keep_last":
        raise ValueError(
            "strategy='keep_last' (the Redis saver's name) needs keep_last=N, the "
            "checkpoints to keep per namespace"
        )
    if strategy not in (*PRUNE_STRATEGIES, "keep_last"):
        raise ValueError(
            f"strategy must be one of {PRUNE_STRATEGIES} (or 'delete_all', the same as "
            f"'delete'; or 'keep_last' with keep_last=N), got {short_repr(strategy)}"
        )
    if not threads:
        return
    storage.forget_threads(threads)
    in_threads = _queries.of_threads(threads)
    if keep is None and strategy == "delete":
        yield Command(Target.CHECKPOINTS, Method.DELETE_MANY, (in_threads,))
        yield Command(Target.WRITES, Method.DELETE_MANY, (in_threads,))
        return
    # Before the lineage: see `_orphans`.
    written = yield Command(
        Target.WRITES,
        Method.AGGREGATE,
        (_queries.checkpoints_written_to(threads),),
        _queries.WRITTEN_TO_OPTIONS,
    )
    lineage = yield _find_lineage(in_threads)
    yield from _delete_checkpoints(_delta.prunable(lineage, 1 if keep is None else keep))
    yield from _remove_orphan_writes(written, lineage)
    # The deleted checkpoints' chunks went with their writes; what a crash or a checkpoint
    # stored again left unreferenced goes now.
    yield from _chunks.remove_unreferenced_chunks(threads)


def _remove_orphan_writes(
    written: Sequence[WrittenTo], lineage: Sequence[LineageDocument]
) -> Plan[None]:
    """Delete the pending writes and chunks that no stored checkpoint owns, once their
    checkpoint ids are older than the grace (see `_orphans`), a batch of keys per
    command."""
    doomed = _orphans.orphaned(written, lineage, datetime.now(timezone.utc))
    for start in range(0, len(doomed), DELETE_BATCH):
        batch = doomed[start : start + DELETE_BATCH]
        yield Command(Target.WRITES, Method.DELETE_MANY, (_queries.writes_of(batch),))


# What `migrate` (copying threads in from another saver) runs on the target.


def store_documents(target: Target, docs: Sequence[Mapping[str, Any]]) -> Plan[None]:
    """Insert these whole documents (checkpoints, or writes: see `checkpoint_document`) or
    replace the stored ones under their keys: one command, after one for the chunks of
    those too large for one document (in the writes collection, in one ordered bulk write
    with the writes themselves)."""
    chunks: list[Mapping[str, Any]] = []
    stored: list[Mapping[str, Any]] = []
    for doc in docs:
        if target is Target.CHECKPOINTS:
            doc, parts = stored_form(doc)  # type: ignore[arg-type]
        else:
            doc, parts = stored_write_form(doc)  # type: ignore[arg-type]
        chunks += parts
        stored.append(doc)
    upserts = [(False, doc) for doc in chunks]
    if target is Target.CHECKPOINTS and chunks:
        yield upsert_command(Target.WRITES, upserts, ordered=True)
        upserts = []
    rest = [*upserts, *((False, doc) for doc in stored)]
    yield upsert_command(target, rest, ordered=bool(upserts))


def thread_document_counts(thread_id: str) -> Plan[tuple[int, int]]:
    """How many checkpoint and pending-write documents the thread has (chunks aside)."""
    query = _queries.of_thread(thread_id)
    checkpoints = yield Command(Target.CHECKPOINTS, Method.COUNT_DOCUMENTS, (query,))
    writes_query = {**_queries.of_thread(thread_id), _queries.CHUNK_ID: {"$exists": False}}
    writes = yield Command(Target.WRITES, Method.COUNT_DOCUMENTS, (writes_query,))
    return checkpoints, writes


def stored_documents(keys: list[CheckpointKey]) -> Plan[tuple[list[Any], list[Any]]]:
    """The documents of these checkpoints, as stored but with every chunked value whole
    (see `_chunks`), and every write stored for them (also writes whose checkpoint is not
    there: an interrupted copy leaves those)."""
    query = _queries.checkpoints_of(keys)
    checkpoints = yield Command(Target.CHECKPOINTS, Method.FIND, (query,))
    writes = yield Command(Target.WRITES, Method.FIND, (_queries.writes_of(keys),))
    writes = yield from _chunks.resolve_documents(checkpoints, writes)
    return checkpoints, writes


def refuse_foreign_documents(thread_id: str) -> Plan[None]:
    """Raise `ValueError`, saying what to do, if another package's checkpoint documents
    share the thread's collection."""
    query = _queries.foreign_documents_of(thread_id)
    for doc in (yield Command(Target.CHECKPOINTS, Method.FIND, (query,), {"limit": 1})):
        written_by_us(doc)


def checkpoint_keys_of_thread(thread_id: str) -> Plan[list[CheckpointKey]]:
    """The keys of the thread's checkpoints."""
    docs = yield Command(Target.CHECKPOINTS, Method.FIND, _queries.keys_of_thread(thread_id))
    return [doc[Field.ID] for doc in docs]
