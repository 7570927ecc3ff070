"""Deleting checkpoints: the `keep_last` trim after a `put`, `prune`, `delete_thread`,
`delete_for_runs`; and the pending writes no stored checkpoint owns, which `prune` deletes too.

LangGraph stores a step's task writes while the checkpoint's own `put` may still be on its way
(`durability="async"`): a kill or fault in between, or a `delete_thread` stopped between its two
deletes, leaves writes (and chunks) whose checkpoint never exists. Reads never see them, but
nothing else would ever delete them.

Which are orphans is decided from what the server holds: the checkpoints the threads' writes refer
to, read *before* `prune` reads the threads' lineage, less those the lineage holds. Of those, only
ids that LangGraph made (a version-6 UUID, which carries its time) more than `ORPHAN_GRACE` ago go:
LangGraph sends a checkpoint's `put` as its step starts, so a `put` that has not landed by then
never will. Any other id (a custom one) is never taken for an orphan.

Reading the writes first means a checkpoint stored meanwhile never has its writes taken for
orphans, unless it lands after the lineage read and its writes before the writes read, with an
id older than the grace: copies into the thread can (`copy_thread`, `migrate` keep the source's
ids; copying again restores the writes), as can LangGraph's first checkpoint of a
`durability="exit"` run on a new thread with `DeltaChannel`s, whose id dates from the run's start.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, get_checkpoint_metadata

from langgraph.checkpoint.mongo import _chunks, _delta, _options, _queries
from langgraph.checkpoint.mongo._chunks import ORPHAN_GRACE
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._commands import Command, Detach, Method, Plan, Target
from langgraph.checkpoint.mongo._documents import stored_metadata
from langgraph.checkpoint.mongo._keys import (
    CheckpointRef,
    key_fields,
    ref_from_config,
    require_str,
    short_repr,
    str_list,
)
from langgraph.checkpoint.mongo._operations.history import _find_lineage
from langgraph.checkpoint.mongo._operations.state import (
    ReadCheckpoint,
    Storage,
    _boundary,
    count_bound,
)
from langgraph.checkpoint.mongo._schema import (
    CheckpointKey,
    Field,
    LineageDocument,
    MetadataDocument,
    WrittenTo,
)


def trim_after_put(
    storage: Storage, config: RunnableConfig, metadata: CheckpointMetadata, stored: RunnableConfig
) -> Generator[Detach, Any, None]:
    """With `keep_last`: after the `put(config, ..., metadata)` of `stored`, the trim its
    namespace needs, detached, so LangGraph does not wait for it (nothing: no trim).

    The run's first reads decide (`get_tuple`'s count, `delta_history`'s lineage) and its first
    `put` sends the trim, so a read alone never deletes. The trim is `prune(keep_last=N)` of the
    namespace as the run found it: the `keep_last` newest up to the newest when the run read it
    (also when it travels back in time), every newer one (the run's own), the checkpoints the run
    read, and the ancestors they rebuild a `DeltaChannel` from stay. A trim that failed or never
    ran is decided again by the namespace's next run.

    Reads of checkpoints the putting run wrote itself (`get_state` while it runs) set no
    boundary, so the newest checkpoint before the run stays, and rolling the run back
    (`delete_for_runs`) leaves it the latest. Without a read, nothing is trimmed until the next run.
    """
    keep_last = storage.keep_last
    if keep_last is None:
        return
    ref = ref_from_config(stored)
    start = storage.run_starts.take(ref.thread_id, ref.checkpoint_ns)
    if start is None or start.over is False:
        return
    run_id = get_checkpoint_metadata(config, metadata).get("run_id")
    started_from = [c for c in start.read if run_id is None or c.run_id != run_id]
    if not started_from:
        return
    namespace = CheckpointRef(ref.thread_id, ref.checkpoint_ns, None)
    trim = _trim(keep_last, namespace, started_from, run_id, counted=start.over is not None)
    yield Detach("keep_last", trim)


def _trim(
    keep_last: int,
    namespace: CheckpointRef,
    started_from: Sequence[ReadCheckpoint],
    run_id: str | None,
    *,
    counted: bool,
) -> Plan[None]:
    """The trim of `trim_after_put`. Beside what this process saw the run read, the newest
    stored checkpoint the run did not write stays (a UI browsing older ones meanwhile would
    otherwise move the boundary past it)."""
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


def delete_thread(storage: Storage, thread_id: str) -> Plan[None]:
    thread_id = require_str(thread_id, "thread_id")
    storage.forget_threads([thread_id])
    # Checkpoints go first: if the second step fails, what is left are writes that no
    # checkpoint joins, never a checkpoint that silently lost its writes.
    yield Command(Target.CHECKPOINTS, Method.DELETE_MANY, (_queries.of_thread(thread_id),))
    yield Command(Target.WRITES, Method.DELETE_MANY, (_queries.of_thread(thread_id),))


def delete_for_runs(storage: Storage, run_ids: Sequence[str]) -> Plan[None]:
    """Delete the runs' checkpoints and writes, except ancestors that a surviving checkpoint of the
    thread still rebuilds its `DeltaChannel`s from. A `keep_last` trim keeps the newest checkpoint a
    run started on, so rolling that run back leaves the thread's latest as it was before the run."""
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

    Per batch the writes go first: a failure in between leaves checkpoints still doomed, which a
    retry finds and deletes with their remaining writes (the other order would leave writes a
    retry could no longer find). A `keep_last` trim, which runs while readers may read what it
    deletes, takes the checkpoints first: a reader finds a checkpoint with its writes or not at all.
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


PRUNE_STRATEGIES = ("keep_latest", "delete")


def prune(
    storage: Storage, thread_ids: Sequence[str], strategy: str, keep_last: int | None = None
) -> Plan[None]:
    """Delete old checkpoints of the threads, with their writes.

    `keep_last=N` (the Redis saver's semantics) overrides `strategy`: each namespace keeps its N
    newest checkpoints (0: none). `"keep_latest"` is `keep_last=1`; `"delete"` removes the threads
    whole. A kept checkpoint also keeps the ancestors it rebuilds its `DeltaChannel`s from, so it
    reads back exactly as before; a checkpoint written meanwhile stays. Pending writes no stored
    checkpoint owns go too, once old enough (see this module's docstring).
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
    # Before the lineage: see this module's docstring.
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
    """Delete the pending writes and chunks that no stored checkpoint owns, once their checkpoint
    ids are older than the grace (see this module's docstring), a batch of keys per command."""
    doomed = orphaned(written, lineage, datetime.now(timezone.utc))
    for start in range(0, len(doomed), DELETE_BATCH):
        batch = doomed[start : start + DELETE_BATCH]
        yield Command(Target.WRITES, Method.DELETE_MANY, (_queries.writes_of(batch),))


# uuid6's (and uuid1's) clock: 100 ns ticks since the Gregorian reform, 1582-10-15.
_GREGORIAN = datetime(1582, 10, 15, tzinfo=timezone.utc)


def checkpoint_id_time(checkpoint_id: object) -> datetime | None:
    """When LangGraph made this checkpoint id (`langgraph.checkpoint.base.id.uuid6`), or
    `None` for an id that is not a version-6 UUID in its canonical form."""
    if not isinstance(checkpoint_id, str):
        return None
    try:
        parsed = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if parsed.version != 6 or str(parsed) != checkpoint_id:
        return None
    ticks = (parsed.time_low << 28) | (parsed.time_mid << 12) | (parsed.time_hi_version & 0x0FFF)
    return _GREGORIAN + timedelta(microseconds=ticks // 10)


def orphaned(
    written: Iterable[WrittenTo], lineage: Iterable[LineageDocument], now: datetime
) -> list[CheckpointKey]:
    """Of the checkpoints that writes refer to (`written`, read before `lineage`), those the lineage
    does not hold whose ids LangGraph made more than `ORPHAN_GRACE` before `now`."""
    stored = {key_fields(doc[Field.ID]) for doc in lineage}
    cutoff = now - ORPHAN_GRACE
    doomed = []
    for doc in written:
        key = doc[Field.ID]
        if key_fields(key) in stored:
            continue
        made = checkpoint_id_time(key[Field.CHECKPOINT_ID])
        if made is not None and made < cutoff:
            doomed.append(key)
    return doomed
