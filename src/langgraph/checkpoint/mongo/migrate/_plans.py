"""Copying threads from any saver into ours, and comparing them afterwards, without I/O.

The plans yield `Command`s for the target and `SourceRead`s, which `migrate` answers from the source
(its `list`/`get_tuple`, or the official saver's collections): the copy and the verification are
written once for the sync and the async API.

A thread is copied in two passes. The first reads it a batch at a time and builds our documents,
keeping their keys: a checkpoint that does not decode exactly (`_decoding`) or cannot be stored
fails the thread by name before anything of it is written. It also compares them with the target's:
a subset of the source (an interrupted copy, or a source grown since) is completed, an identical
thread left alone, anything else is a conflict, left alone unless `overwrite`. The second pass reads
the checkpoints again, parents first, and upserts them by key, each batch's pending writes before
its checkpoints: a copy stopped at any point leaves an older, consistent history of the thread
(never a checkpoint without its writes or ancestors), and running it again duplicates nothing.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from functools import partial
from typing import Any, TypeVar

import bson
from langgraph.checkpoint.base import WRITES_IDX_MAP, CheckpointTuple, PendingWrite, writes_sort_key

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo import _ttl
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._commands import Command, Plan, Target
from langgraph.checkpoint.mongo._documents import (
    checkpoint_document,
    checkpoint_tuple,
    stored_metadata,
    write_documents,
    written_by_us,
)
from langgraph.checkpoint.mongo._keys import (
    CheckpointRef,
    checkpoint_key,
    checkpoint_label,
    key_fields,
)
from langgraph.checkpoint.mongo._schema import (
    CheckpointDocument,
    CheckpointKey,
    Field,
    StoredField,
    WriteDocument,
)
from langgraph.checkpoint.mongo.migrate._decoding import UnrestorableValueError

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ReadCheckpoints:
    """The next `limit` checkpoints of a thread, every namespace, in the source's order
    (`[]` once it has no more); `from_start` reads the thread again from its first."""

    thread_id: str
    limit: int
    from_start: bool


@dataclass(frozen=True, slots=True)
class ReadCheckpointsByKey:
    """These checkpoints of a thread, `(namespace, checkpoint id)` each, in this order."""

    thread_id: str
    keys: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ReadLatest:
    """The source's newest checkpoint of the thread's root namespace (`get_tuple`)."""

    thread_id: str


@dataclass(frozen=True, slots=True)
class ReadThreadIds:
    """Every thread id the source holds."""


# A request the source answers (`isinstance(request, SourceRead)` tells it from a `Command`).
SourceRead = ReadThreadIds | ReadCheckpoints | ReadCheckpointsByKey | ReadLatest
# A plan that also reads the source.
MigrationPlan = Generator[Command | SourceRead, Any, T]


@dataclass(frozen=True, slots=True)
class SourceWrite:
    """A pending write with the key it is stored under (`task_id`, `idx`) and `task_path`."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    value: Any


@dataclass(frozen=True, slots=True)
class SourceCheckpoint:
    """One checkpoint as a source holds it: the tuple its `list` returns, and its writes
    as stored where the source shows them, else as `inferred_writes` rebuilds them."""

    tuple: CheckpointTuple
    writes: Sequence[SourceWrite]


@dataclass(frozen=True, slots=True)
class UnreadableCheckpoint:
    """A checkpoint the source cannot give exactly: `where` names it, `reason` says why."""

    where: str
    reason: str


# What a source answers for each checkpoint it is asked for.
SourceItem = SourceCheckpoint | UnreadableCheckpoint


def inferred_writes(pending: Sequence[PendingWrite]) -> list[SourceWrite]:
    """A tuple's `pending_writes` as stored writes, for sources that show nothing more.

    A `CheckpointTuple` lacks each write's stored `idx` and its task's `task_path` (which LangGraph
    uses only to order a step's writes): a task's regular writes are numbered 0, 1, ... in order,
    special channels (errors, interrupts, resumes) take their fixed `idx`, and the path is `""`,
    or, where ordering by `(task_id, idx)` would then change the source's order, an ordinal per
    task (`"00000000"`, ...) that keeps it.
    """
    counters: dict[str, int] = {}
    writes = []
    for task_id, channel, value in pending:
        idx = WRITES_IDX_MAP.get(channel)
        if idx is None:
            idx = counters.get(task_id, 0)
            counters[task_id] = idx + 1
        writes.append(SourceWrite(task_id, "", idx, channel, value))
    keys = [writes_sort_key(w.task_path, w.task_id, w.idx) for w in writes]
    if keys == sorted(keys):
        return writes
    ordinals: dict[str, int] = {}
    for write in writes:
        ordinals.setdefault(write.task_id, len(ordinals))
    return [replace(w, task_path=f"{ordinals[w.task_id]:08}") for w in writes]


class ThreadStatus(str, Enum):
    COPIED = "copied"  # written (in a dry run: would be)
    COMPLETED = "completed"  # the target held part of it (an interrupted copy): finished
    UNCHANGED = "unchanged"  # the target already held exactly this thread
    REPLACED = "replaced"  # the target held different data, replaced (`overwrite=True`)
    CONFLICT = "conflict"  # the target holds different data: left alone
    FAILED = "failed"  # a checkpoint could not be stored (`detail` says which and why)
    MISSING = "missing"  # the source has no checkpoint of the thread: nothing written


@dataclass(frozen=True, slots=True)
class ThreadCopy:
    """What happened to one thread; `checkpoints`/`writes` counts what was written (in a
    dry run: would be) or, for `unchanged`, what the target holds."""

    thread_id: str
    status: ThreadStatus
    checkpoints: int = 0
    writes: int = 0
    detail: str | None = None


_PROBLEMS = (ThreadStatus.CONFLICT, ThreadStatus.FAILED, ThreadStatus.MISSING)
_WRITTEN = (ThreadStatus.COPIED, ThreadStatus.COMPLETED, ThreadStatus.REPLACED)


@dataclass
class CopyReport:
    """The outcome of `copy_threads`: one `ThreadCopy` per thread, in order."""

    dry_run: bool = False
    threads: list[ThreadCopy] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No conflict, no failure and no thread missing from the source."""
        return not self.problems

    @property
    def problems(self) -> list[ThreadCopy]:
        return [t for t in self.threads if t.status in _PROBLEMS]

    def count(self, status: ThreadStatus) -> int:
        return sum(1 for t in self.threads if t.status is status)

    def summary(self) -> str:
        written = [t for t in self.threads if t.status in _WRITTEN]
        would = "would be " if self.dry_run else ""
        counts = [
            f"{self.count(s)} {would if s in _WRITTEN else ''}{s.value}"
            for s in ThreadStatus
            if self.count(s)
        ]
        lines = [
            ", ".join([f"{len(self.threads)} thread(s)", *counts]),
            f"{sum(t.checkpoints for t in written)} checkpoint(s) and "
            f"{sum(t.writes for t in written)} pending write(s) {would}written",
        ]
        lines += [f"  {t.thread_id!r}: {t.status.value}: {t.detail}" for t in self.problems]
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class ThreadVerification:
    thread_id: str
    checkpoints: int
    differences: list[str]


@dataclass
class VerifyReport:
    """The outcome of `verify_threads`: every difference found, thread by thread."""

    threads: list[ThreadVerification] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(t.differences for t in self.threads)

    def summary(self) -> str:
        different = [t for t in self.threads if t.differences]
        checkpoints = sum(t.checkpoints for t in self.threads)
        lines = [
            f"{len(self.threads)} thread(s), {checkpoints} checkpoint(s) compared: "
            + (f"{len(different)} thread(s) differ" if different else "identical")
        ]
        for thread in different:
            lines.append(f"  {thread.thread_id!r}:")
            lines += [f"    {d}" for d in thread.differences]
        return "\n".join(lines)


OnThread = Callable[[Any], None]


@dataclass(frozen=True, slots=True)
class CopyOptions:
    overwrite: bool = False
    dry_run: bool = False
    batch_size: int = 100
    on_progress: Callable[[str, int], None] | None = None  # (thread id, checkpoints just done)
    on_thread: OnThread | None = None  # a finished thread's `ThreadCopy`


def _ids(item: SourceCheckpoint, thread_id: str) -> tuple[str, str, str | None]:
    """(namespace, checkpoint id, parent id), checked against the thread asked for."""
    configurable = item.tuple.config["configurable"]
    if configurable.get("thread_id") != thread_id:
        raise ValueError(
            f"the source returned a checkpoint of thread {configurable.get('thread_id')!r} "
            f"when asked for thread {thread_id!r}"
        )
    checkpoint_id, checkpoint = configurable["checkpoint_id"], item.tuple.checkpoint
    if not isinstance(checkpoint, Mapping):
        raise TypeError(f"it decodes to {type(checkpoint).__name__}, not a checkpoint (a dict)")
    if checkpoint.get("id") != checkpoint_id:
        raise ValueError(f"checkpoint {checkpoint_id!r} holds the id {checkpoint.get('id')!r}")
    parent = item.tuple.parent_config
    parent_id = parent["configurable"].get("checkpoint_id") if parent else None
    return configurable.get("checkpoint_ns", ""), checkpoint_id, parent_id


# A checkpoint as our documents: its own, and those of its writes.
Built = tuple[CheckpointDocument, list[WriteDocument]]


def documents(
    target: ops.Storage, thread_id: str, item: SourceCheckpoint, stamp: datetime | None
) -> Built:
    """A source checkpoint as our documents, each whole (`ops.store_documents` splits values
    too large for one), refused over the target's `state_max_bytes`: every channel value
    serialized from the tuple (no `new_versions`), its metadata (an empty config adds no keys),
    and its writes as `put_writes` builds them, under the source's own `idx`."""
    ns, checkpoint_id, parent_id = _ids(item, thread_id)
    codec, max_bytes = target.codec, target.max_bytes
    checkpoint = checkpoint_document(
        codec,
        CheckpointRef(thread_id, ns, parent_id),
        item.tuple.checkpoint,
        item.tuple.metadata,
        {},
        stamp,
        max_bytes=max_bytes,
    )
    ref = CheckpointRef(thread_id, ns, checkpoint_id)
    writes: list[WriteDocument] = []
    for w in item.writes:
        [(_, doc)] = write_documents(
            codec, ref, [(w.channel, w.value)], w.task_id, w.task_path, stamp, max_bytes=max_bytes
        )
        doc["_id"]["idx"] = w.idx
        writes.append(doc)
    return checkpoint, writes


def _source_label(item: SourceCheckpoint) -> str:
    """The source checkpoint, as messages name it (from its config as the source gave it)."""
    ids = item.tuple.config["configurable"]
    return checkpoint_label(ids.get("checkpoint_ns", ""), ids.get("checkpoint_id"))


class _BadCheckpointError(Exception):
    """A source checkpoint that cannot become our documents (the cause is chained)."""


def _target_documents(
    target: ops.Storage, thread_id: str, batch: Sequence[SourceItem], stamp: datetime | None
) -> list[Built]:
    """Our documents of a batch; one that cannot be built raises `_BadCheckpointError`."""
    built = []
    for item in batch:
        if isinstance(item, UnreadableCheckpoint):
            raise _BadCheckpointError(f"{item.where}: {item.reason}")
        try:
            built.append(documents(target, thread_id, item, stamp))
        except (TypeError, ValueError) as exc:
            raise _BadCheckpointError(f"{_source_label(item)}: {exc}") from exc
    return built


def _write_fields(key: Any) -> tuple[str, str, str, str, int]:
    return (*key_fields(key[Field.CHECKPOINT]), key[Field.TASK_ID], key[Field.IDX])


def _decode_equal(decode: Callable[[Any], Any], stored: Any, built: Any) -> bool:
    """Both decode equal, exactly (see `_decoding`: a value that cannot differs)."""
    try:
        return bool(decode(stored) == decode(built))
    except UnrestorableValueError:
        return False


def _same_value(codec: Codec, stored: StoredField, built: StoredField) -> bool:
    """The same bytes, or (a serializer that encrypts, another compression) equal values."""
    return stored == built or _decode_equal(codec.decode, stored, built)


def _same_metadata(codec: Codec, stored: Any, built: CheckpointDocument) -> bool:
    """The same stored copies (a NaN included), or metadata that decode equal."""
    copies = (Field.METADATA, Field.SERIALIZED_METADATA)
    if all(bson.encode({k: stored.get(k)}) == bson.encode({k: built.get(k)}) for k in copies):
        return True
    return _decode_equal(partial(stored_metadata, codec), stored, built)


def _values_differ(codec: Codec, stored: Any, built: Any) -> bool:
    """Channel entries differ in channels or values (their versions are in the checkpoint)."""
    old = {entry[Field.CHANNEL]: entry for entry in stored or ()}
    new = {entry[Field.CHANNEL]: entry for entry in built}
    return old.keys() != new.keys() or any(not _same_value(codec, old[c], new[c]) for c in new)


def _checkpoint_differs(codec: Codec, stored: Any, built: CheckpointDocument) -> bool:
    return (
        stored.get(Field.PARENT_CHECKPOINT_ID) != built[Field.PARENT_CHECKPOINT_ID]
        or not _same_value(codec, stored[Field.CHECKPOINT], built[Field.CHECKPOINT])
        or _values_differ(codec, stored.get(Field.CHANNEL_VALUES), built[Field.CHANNEL_VALUES])
        or not _same_metadata(codec, stored, built)
    )


def _write_differs(codec: Codec, stored: Any, built: WriteDocument) -> bool:
    return (
        stored.get(Field.CHANNEL) != built[Field.CHANNEL]
        or stored.get(Field.TASK_PATH) != built[Field.TASK_PATH]
        or not _same_value(codec, stored[Field.VALUE], built[Field.VALUE])
    )


# A checkpoint of the thread: (namespace, checkpoint id).
SourceKey = tuple[str, str]


@dataclass
class _Check:
    """What reading the whole source thread found, before anything is written."""

    order: list[SourceKey]  # parents first (see `_parents_first`)
    checkpoints: int = 0  # in the source
    writes: int = 0
    matched_checkpoints: int = 0  # in the source and, the same, in the target
    matched_writes: int = 0
    difference: str | None = None  # the first difference found with the target


def _parents_first(checkpoints: list[tuple[str, str, str | None]]) -> list[SourceKey]:
    """`(namespace, id, parent id)`s, each after its parent, else by id (LangGraph's ids grow with
    time): any prefix of this order is a history whose every checkpoint has its ancestors, so a
    copy stopped halfway leaves an older state, never a shortened one (a `DeltaChannel` is
    rebuilt from the ancestors' writes)."""
    present = {(ns, cid) for ns, cid, _ in checkpoints}
    children: dict[SourceKey, list[tuple[str, str]]] = {}
    ready: list[tuple[str, str]] = []  # (id, namespace): a heap, smallest id first
    for ns, cid, parent in checkpoints:
        if parent is None or parent == cid or (ns, parent) not in present:
            ready.append((cid, ns))
        else:
            children.setdefault((ns, parent), []).append((cid, ns))
    heapq.heapify(ready)
    order: list[SourceKey] = []
    while ready:
        cid, ns = heapq.heappop(ready)
        order.append((ns, cid))
        for child in children.pop((ns, cid), ()):
            heapq.heappush(ready, child)
    # Checkpoints on a cycle of parents (no root): last, by id.
    order += sorted((ns, cid) for group in children.values() for cid, ns in group)
    return order


def _check(
    target: ops.Storage, thread_id: str, held: tuple[int, int], batch_size: int
) -> MigrationPlan[_Check]:
    """Read the whole source thread, turning every checkpoint into our documents (a
    checkpoint that cannot be raises `_BadCheckpointError`), and compare them with the
    target's (`held`: how many documents of each kind it holds of the thread)."""
    keys: list[tuple[str, str, str | None]] = []
    check = _Check([])
    codec = target.codec
    from_start = True
    while batch := (yield ReadCheckpoints(thread_id, batch_size, from_start)):
        from_start = False
        built = _target_documents(target, thread_id, batch, None)
        for checkpoint, write_docs in built:
            _, ns, cid = key_fields(checkpoint[Field.ID])
            keys.append((ns, cid, checkpoint[Field.PARENT_CHECKPOINT_ID]))
            check.checkpoints += 1
            check.writes += len(write_docs)
        if held == (0, 0):
            continue
        checkpoints, writes = yield from ops.stored_documents([cp[Field.ID] for cp, _ in built])
        stored = {key_fields(doc[Field.ID]): doc for doc in checkpoints}
        stored_writes = {_write_fields(doc[Field.ID]): doc for doc in writes}
        for item, (checkpoint, write_docs) in zip(batch, built, strict=True):
            label = _source_label(item)
            old = stored.get(key_fields(checkpoint[Field.ID]))
            if old is not None and _checkpoint_differs(codec, written_by_us(old), checkpoint):
                check.difference = check.difference or f"{label} differs in the target"
            elif old is not None:
                check.matched_checkpoints += 1
            for write in write_docs:
                old = stored_writes.get(_write_fields(write[Field.ID]))
                if old is not None and _write_differs(codec, old, write):
                    check.difference = check.difference or (
                        f"a pending write of task {write[Field.ID][Field.TASK_ID]!r} (channel "
                        f"{write[Field.CHANNEL]!r}) of {label} differs in the target"
                    )
                elif old is not None:
                    check.matched_writes += 1
    check.order = _parents_first(keys)
    if held == (0, 0):
        return check
    extra = (held[0] - check.matched_checkpoints, held[1] - check.matched_writes)
    if extra[0]:
        # Documents another package wrote (the official saver shares our default names)
        # stop the copy with a message that says so.
        yield from ops.refuse_foreign_documents(thread_id)
    if extra != (0, 0) and check.difference is None:
        check.difference = (
            f"the target holds {extra[0]} checkpoint(s) and {extra[1]} pending write(s) of "
            "this thread that the source does not"
        )
    return check


def copy_thread(
    target: ops.Storage, thread_id: str, options: CopyOptions
) -> MigrationPlan[ThreadCopy]:
    """Check the whole thread first (nothing is written for a thread that cannot be
    copied exactly), then write it parents first, a batch at a time."""
    held = yield from ops.thread_document_counts(thread_id)
    try:
        check = yield from _check(target, thread_id, held, options.batch_size)
    except _BadCheckpointError as bad:
        detail = f"{bad}; nothing of this thread was written"
        return ThreadCopy(thread_id, ThreadStatus.FAILED, detail=detail)
    if check.checkpoints == 0:  # a misspelt id, or a thread deleted from the source
        detail = "the source has no checkpoint of this thread; nothing was written"
        return ThreadCopy(thread_id, ThreadStatus.MISSING, detail=detail)
    status = ThreadStatus.COPIED
    if held != (0, 0):
        matched = (check.matched_checkpoints, check.matched_writes)
        if check.difference is None and (check.checkpoints, check.writes) == matched:
            return ThreadCopy(thread_id, ThreadStatus.UNCHANGED, *matched)
        if check.difference is None:
            status = ThreadStatus.COMPLETED
        elif not options.overwrite:
            return ThreadCopy(thread_id, ThreadStatus.CONFLICT, detail=check.difference)
        else:
            status = ThreadStatus.REPLACED
    if options.dry_run:
        if options.on_progress is not None:
            options.on_progress(thread_id, check.checkpoints)
        return ThreadCopy(thread_id, status, check.checkpoints, check.writes)
    if status is ThreadStatus.REPLACED:
        yield from ops.delete_thread(target, thread_id)
    try:
        return (yield from _write_thread(target, thread_id, check.order, options, status))
    except _BadCheckpointError as bad:  # the source changed since `_check` read it
        if status is not ThreadStatus.COPIED:
            detail = f"{bad}; the target keeps an older, consistent part of this thread"
            return ThreadCopy(thread_id, ThreadStatus.FAILED, detail=detail)
        # The target held nothing of the thread: nor does it now.
        yield from ops.delete_thread(target, thread_id)
        detail = f"{bad}; nothing of this thread was kept"
        return ThreadCopy(thread_id, ThreadStatus.FAILED, detail=detail)


def _write_thread(
    target: ops.Storage,
    thread_id: str,
    order: list[SourceKey],
    options: CopyOptions,
    status: ThreadStatus,
) -> MigrationPlan[ThreadCopy]:
    expiry = target.expiry
    stamp = expiry.stamp() if expiry is not None else None
    checkpoints = writes = 0
    for start in range(0, len(order), options.batch_size):
        keys = order[start : start + options.batch_size]
        batch = yield ReadCheckpointsByKey(thread_id, tuple(keys))
        built = _target_documents(target, thread_id, batch, stamp)
        write_docs = [doc for _, docs in built for doc in docs]
        # The writes first: a copy stopped in between leaves writes that no checkpoint
        # joins yet, never a checkpoint without its writes. Upserts overwrite (the source
        # is the truth) and move TTL stamps only forward, as `put` does.
        if write_docs:
            yield from ops.store_documents(Target.WRITES, write_docs)
        yield from ops.store_documents(Target.CHECKPOINTS, [doc for doc, _ in built])
        checkpoints += len(built)
        writes += len(write_docs)
        if options.on_progress is not None:
            options.on_progress(thread_id, len(built))
    if checkpoints:
        yield from _ttl.move_after_copy(expiry, thread_id, stamp)
    return ThreadCopy(thread_id, status, checkpoints, writes)


def copy_threads(
    target: ops.Storage, thread_ids: Iterable[str] | None, options: CopyOptions
) -> MigrationPlan[CopyReport]:
    """Copy these threads, or (`None`) every thread of the source."""
    copy = partial(copy_thread, target, options=options)
    copies = yield from _each_thread(thread_ids, copy, options.on_thread)
    return CopyReport(options.dry_run, copies)


def _each_thread(
    thread_ids: Iterable[str] | None,
    run: Callable[[str], MigrationPlan[R]],
    on_thread: OnThread | None,
) -> MigrationPlan[list[R]]:
    """`run` for each thread (`None`: every thread of the source), in order, then `on_thread`."""
    if thread_ids is None:
        thread_ids = yield ReadThreadIds()
    results = []
    for thread_id in thread_ids:
        results.append((yield from run(thread_id)))
        if on_thread is not None:
            on_thread(results[-1])
    return results


# Differences listed per thread before the rest are only counted.
MAX_DIFFERENCES = 20


def _target_tuples(
    codec: Codec, keys: list[CheckpointKey]
) -> Plan[dict[tuple[str, str, str], CheckpointTuple | str]]:
    """The target's tuples of these checkpoints, or why one cannot be restored exactly."""
    checkpoints, writes = yield from ops.stored_documents(keys)
    joined: dict[tuple[str, str, str], list[Any]] = {}
    for write in writes:
        joined.setdefault(key_fields(write[Field.ID][Field.CHECKPOINT]), []).append(write)
    found: dict[tuple[str, str, str], CheckpointTuple | str] = {}
    for doc in checkpoints:
        key = key_fields(doc[Field.ID])
        with_writes: Any = {**doc, Field.JOINED_WRITES: joined.get(key, [])}
        try:
            found[key] = checkpoint_tuple(codec, with_writes)
        except UnrestorableValueError as exc:
            found[key] = f"does not decode exactly in the target: {exc}"
    return found


def _writes_by_task(pending: Sequence[PendingWrite] | None) -> dict[tuple[str, str], list[Any]]:
    """Writes grouped by task and channel: sources order a step's writes differently (the
    official saver by insertion, the others by task path), but never a channel's writes."""
    grouped: dict[tuple[str, str], list[Any]] = {}
    for task_id, channel, value in pending or ():
        grouped.setdefault((task_id, channel), []).append(value)
    return grouped


def _mapping_differences(what: str, source: Mapping[str, Any], target: Mapping[str, Any]) -> str:
    keys = sorted(k for k in source.keys() | target.keys() if source.get(k) != target.get(k))
    return f"{what} {', '.join(repr(k) for k in keys)} differ"


def tuple_differences(where: str, source: CheckpointTuple, target: CheckpointTuple) -> list[str]:
    """What differs between a source tuple and ours, as a reader of the API sees them."""
    found = []
    parents = [
        t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
        for t in (source, target)
    ]
    if parents[0] != parents[1]:
        found.append(f"{where}: parent {parents[0]!r} in the source, {parents[1]!r} in the target")
    if source.checkpoint != target.checkpoint:
        s, t = source.checkpoint, target.checkpoint
        if s.get("channel_values") != t.get("channel_values"):
            values = s.get("channel_values", {}), t.get("channel_values", {})
            found.append(_mapping_differences(f"{where}: channel values", *values))
        others = {k: v for k, v in s.items() if k != "channel_values"}
        if others != {k: v for k, v in t.items() if k != "channel_values"}:
            found.append(_mapping_differences(f"{where}: checkpoint fields", s, t))
    if source.metadata != target.metadata:
        found.append(_mapping_differences(f"{where}: metadata", source.metadata, target.metadata))
    writes = _writes_by_task(source.pending_writes), _writes_by_task(target.pending_writes)
    if writes[0] != writes[1]:
        either = writes[0].keys() | writes[1].keys()
        tasks = sorted({k[0] for k in either if writes[0].get(k) != writes[1].get(k)})
        found.append(f"{where}: pending writes of task(s) {', '.join(map(repr, tasks))} differ")
    return found


def _source_refs(
    thread_id: str, batch: Sequence[SourceItem], differences: list[str]
) -> list[tuple[SourceCheckpoint, tuple[str, str, str | None]]]:
    """The batch's checkpoints with their ids; one the source cannot give exactly differs."""
    refs = []
    for item in batch:
        if isinstance(item, UnreadableCheckpoint):
            differences.append(f"{item.where}: {item.reason}")
            continue
        try:
            refs.append((item, _ids(item, thread_id)))
        except (TypeError, ValueError) as exc:
            differences.append(f"{_source_label(item)}: {exc}")
    return refs


def verify_thread(
    target: ops.Storage, thread_id: str, batch_size: int
) -> MigrationPlan[ThreadVerification]:
    """Both sides are decoded exactly (see `_decoding`): a value either side cannot
    restore is a difference, never two stand-ins that compare equal."""
    differences: list[str] = []
    seen: set[tuple[str, str]] = set()
    from_start = True
    while batch := (yield ReadCheckpoints(thread_id, batch_size, from_start)):
        from_start = False
        refs = _source_refs(thread_id, batch, differences)
        keys = [checkpoint_key(thread_id, ns, cid) for _, (ns, cid, _) in refs]
        stored = yield from _target_tuples(target.codec, keys)
        for item, (ns, cid, _) in refs:
            seen.add((ns, cid))
            where = checkpoint_label(ns, cid)
            ours = stored.get((thread_id, ns, cid))
            if ours is None:
                differences.append(f"{where}: missing from the target")
            elif isinstance(ours, str):
                differences.append(f"{where}: {ours}")
            else:
                differences += tuple_differences(where, item.tuple, ours)
    if not seen and not differences:
        differences.append("the source has no checkpoint of this thread")
    for key in (yield from ops.checkpoint_keys_of_thread(thread_id)):
        _, ns, cid = key_fields(key)
        if (ns, cid) not in seen:
            differences.append(f"{checkpoint_label(ns, cid)}: in the target only")
    theirs = yield ReadLatest(thread_id)
    try:
        ours_latest = yield from ops.read_tuple(target, CheckpointRef(thread_id, "", None).config())
    except UnrestorableValueError as exc:
        differences.append(f"latest checkpoint: does not decode exactly in the target: {exc}")
    else:
        if isinstance(theirs, UnreadableCheckpoint):
            differences.append(f"latest checkpoint: {theirs.reason}")
            theirs = ours_latest
        latest = [
            t.config["configurable"]["checkpoint_id"] if t else None for t in (theirs, ours_latest)
        ]
        if latest[0] != latest[1]:
            differences.append(
                f"latest checkpoint: {latest[0]!r} in the source, {latest[1]!r} in the target"
            )
    if len(differences) > MAX_DIFFERENCES:
        more = len(differences) - MAX_DIFFERENCES
        differences = [*differences[:MAX_DIFFERENCES], f"... and {more} more"]
    return ThreadVerification(thread_id, len(seen), differences)


def verify_threads(
    target: ops.Storage,
    thread_ids: Iterable[str] | None,
    batch_size: int,
    on_thread: OnThread | None,
) -> MigrationPlan[VerifyReport]:
    verify = partial(verify_thread, target, batch_size=batch_size)
    return VerifyReport((yield from _each_thread(thread_ids, verify, on_thread)))
