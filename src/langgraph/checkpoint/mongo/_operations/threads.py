"""The thread-level reads: `list_threads`, and what the `threads` CLI asks of one thread
(its checkpoint counts, whether it is pinned, what a checkpoint takes as stored)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import bson

from langgraph.checkpoint.mongo import _chunks, _queries
from langgraph.checkpoint.mongo._commands import (
    Command,
    Listing,
    Method,
    NextDocument,
    OpenCursor,
    Plan,
    Target,
)
from langgraph.checkpoint.mongo._documents import ThreadInfo, thread_info
from langgraph.checkpoint.mongo._keys import CheckpointRef, checkpoint_key, require_str, str_list
from langgraph.checkpoint.mongo._metadata import metadata_filter
from langgraph.checkpoint.mongo._operations.read import _check_limit
from langgraph.checkpoint.mongo._operations.state import Storage
from langgraph.checkpoint.mongo._schema import CheckpointDocument, CountDocument, Field, is_pinned
from langgraph.checkpoint.mongo._sizes import StoredSize, largest_channels


def list_threads(
    storage: Storage,
    *,
    filter: dict[str, Any] | None,
    limit: int | None,
    before: str | ThreadInfo | None,
) -> Listing[ThreadInfo]:
    """`list_threads`: each thread by its latest root checkpoint, in thread id order,
    those after `before`, each yielded as soon as it is read; one aggregation.

    The metadata filter applies to that checkpoint: where its server condition is exact,
    the server applies `limit` too; otherwise each thread is checked in Python.
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


def stored_size(ref: CheckpointRef) -> Plan[StoredSize | None]:
    """What checkpoint `ref` takes as stored (its document with its chunks, without its
    pending writes), or None when it is not stored: one `find`, and one more for the
    chunks of a state over 16 MiB (`threads show`)."""
    if ref.checkpoint_id is None:
        raise ValueError("stored_size needs a checkpoint id")
    key = checkpoint_key(ref.thread_id, ref.checkpoint_ns, ref.checkpoint_id)
    docs: list[CheckpointDocument] = yield Command(
        Target.CHECKPOINTS, Method.FIND, (_queries.checkpoints_of([key]),)
    )
    if not docs:
        return None
    yield from _chunks.resolve(docs)
    return StoredSize(len(bson.encode(docs[0])), largest_channels(docs[0][Field.CHANNEL_VALUES]))


def thread_pinned(thread_id: str) -> Plan[bool | None]:
    """Whether a thread is pinned (`pin_thread`): its newest root checkpoint is, as
    `ThreadInfo.pinned` says (one `find` of that document's stamp); `None`: the thread
    has no root checkpoint."""
    query, options = _queries.newest_stamp(require_str(thread_id, "thread_id"))
    docs = yield Command(Target.CHECKPOINTS, Method.FIND, query, options)
    return is_pinned(docs[0].get(Field.TOUCHED_AT)) if docs else None


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
