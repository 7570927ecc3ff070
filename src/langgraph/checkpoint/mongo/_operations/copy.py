"""`copy_thread`, and what `migrate` (copying threads in from another saver) runs on the target."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.checkpoint.mongo import _chunks, _queries
from langgraph.checkpoint.mongo._commands import Command, Method, Plan, Target
from langgraph.checkpoint.mongo._documents import (
    moved_checkpoint,
    moved_write,
    stored_form,
    stored_write_form,
    written_by_us,
)
from langgraph.checkpoint.mongo._keys import key_fields, require_str
from langgraph.checkpoint.mongo._operations.state import Storage
from langgraph.checkpoint.mongo._operations.write import upsert_command
from langgraph.checkpoint.mongo._schema import (
    CheckpointDocument,
    CheckpointKey,
    Field,
    WriteDocument,
)
from langgraph.checkpoint.mongo._ttl import move_after_copy


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
    # and upserts by `_id` make a rerun converge. Only the copied checkpoints' writes: one
    # no checkpoint joins (left by an interrupted delete) must not land in the target.
    kept = [doc for doc in writes if key_fields(doc[Field.ID][Field.CHECKPOINT]) in copied_ids]
    # Before both, their chunks, a checkpoint's at a time, under new ids (`fresh_value_ids`).
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
    yield from move_after_copy(expiry, target, stamp)


# What `migrate` (copying threads in from another saver) runs on the target.


def store_documents(target: Target, docs: Sequence[Mapping[str, Any]]) -> Plan[None]:
    """Insert these whole documents (checkpoints, or writes: see `checkpoint_document`) or
    replace the stored ones: one command, after one for the chunks of those too large
    (for writes, in one ordered bulk write with them)."""
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
    writes_query = _queries.writes_of_thread(thread_id)
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
