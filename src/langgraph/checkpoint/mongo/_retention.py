"""How many checkpoints a thread keeps: `prune(keep_last=N)`, and the saver's `keep_last`
option, which trims each namespace as it is written."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from langgraph.checkpoint.mongo import _delta
from langgraph.checkpoint.mongo._schema import Field, LineageDocument
from langgraph.checkpoint.mongo.errors import CheckpointCycleError

# Namespaces whose recent lineage a saver remembers (least recently written go first).
_NAMESPACES = 10_000


class Trim(NamedTuple):
    """Delete a namespace's checkpoints with ids below `below`, and their writes."""

    thread_id: str
    checkpoint_ns: str
    below: str


class KeepLast:
    """The saver's `keep_last`: which checkpoints of a namespace leave its window, from
    the lineage this process has seen (its own `put`s, the reads LangGraph starts each
    run with, and the window `get_tuple` reads beside the checkpoint).

    Two steps, so that no read ever sees more than the window and a chat turn sends no
    command more (`_operations.put`):

    - each `put` marks the checkpoints older than the `keep_last` newest known ones (and
      the ancestors their `DeltaChannel`s rebuild from) `trimmed`, with an `UpdateMany`
      that rides in the put's own command, after its upsert; every read leaves marked
      checkpoints out (`_queries.NOT_TRIMMED`);
    - once more than `2 * keep_last` checkpoints of a namespace are known, the marked
      ones and their writes are deleted, in two commands the saver sends in the
      background (`_operations.trim_after_put`).

    Checkpoints this process does not know (another process's) can only be newer than the
    cut-off or older than it: the newest `keep_last` known ones always stay, so a mark
    never leaves fewer than `keep_last`. A `DeltaChannel` namespace is marked only when
    the known lineage reaches back to the seeds its kept checkpoints need; otherwise it
    waits.
    """

    def __init__(self, keep_last: int) -> None:
        self.keep_last = keep_last
        self._known: OrderedDict[tuple[str, str], dict[str, LineageDocument]] = OrderedDict()
        self._trimmed_below: dict[tuple[str, str], str] = {}
        self._marked_below: dict[tuple[str, str], str] = {}
        self._pending: dict[str, list[Trim]] = {}
        self._lock = threading.Lock()

    def saw(self, docs: Iterable[Mapping[str, Any]]) -> None:
        """Remember the lineage of these stored checkpoints (documents of any projection
        that holds `LINEAGE_PROJECTION`'s fields), except those out of the window."""
        with self._lock:
            for doc in docs:
                if doc.get(Field.TRIMMED):
                    continue
                key = doc[Field.ID]
                namespace = (key[Field.THREAD_ID], key[Field.CHECKPOINT_NS])
                below = self._trimmed_below.get(namespace)
                if below is not None and key[Field.CHECKPOINT_ID] < below:
                    continue
                known = self._known.setdefault(namespace, {})
                known[key[Field.CHECKPOINT_ID]] = lineage_entry(doc)
                self._known.move_to_end(namespace)
            while len(self._known) > _NAMESPACES:
                # Forgotten whole, its queued trim included: memory stays bounded, and a
                # namespace written again is trimmed once it is known again.
                self._forget(next(iter(self._known)))

    def mark_below(self, document: Mapping[str, Any]) -> str | None:
        """Before the `put` of `document`: the id below which its namespace's checkpoints
        leave the window once it is stored (`None`: nothing more to mark).

        `document` counts as known from here on; a `put` that fails must call `failed`,
        which forgets the namespace (the document may not be stored, and a window
        counted with it could keep fewer than `keep_last`)."""
        self.saw([document])
        key = document[Field.ID]
        namespace = (key[Field.THREAD_ID], key[Field.CHECKPOINT_NS])
        with self._lock:
            known = self._known.get(namespace, {})
            if len(known) <= self.keep_last:
                return None
            below = _keep_from(known, self.keep_last)
            marked = self._marked_below.get(namespace)
            if below is None or (marked is not None and below <= marked):
                return None
            return below

    def after_put(self, thread_id: str, checkpoint_ns: str, marked: str | None) -> None:
        """After a `put` that marked below `marked`: remember it, and queue a delete of
        the marked checkpoints once the namespace holds enough to delete."""
        with self._lock:
            namespace = (thread_id, checkpoint_ns)
            if marked is not None:
                self._marked_below[namespace] = max(
                    marked, self._marked_below.get(namespace, marked)
                )
            known = self._known.get(namespace, {})
            below = self._marked_below.get(namespace)
            if len(known) <= 2 * self.keep_last or below is None or below <= min(known):
                return
            for old in [c for c in known if c < below]:
                del known[old]
            self._trimmed_below[namespace] = below
            pending = self._pending.setdefault(thread_id, [])
            pending[:] = [t for t in pending if t.checkpoint_ns != checkpoint_ns]
            pending.append(Trim(thread_id, checkpoint_ns, below))

    def failed(self, thread_id: str, checkpoint_ns: str) -> None:
        """A `put` failed: forget what was known of its namespace (the next read of it
        tells again), its trim queued before included."""
        with self._lock:
            self._forget((thread_id, checkpoint_ns))

    def _forget(self, namespace: tuple[str, str]) -> None:
        """Drop all that is known of the namespace, its queued trim included (under the
        lock)."""
        thread_id, ns = namespace
        self._known.pop(namespace, None)
        self._trimmed_below.pop(namespace, None)
        self._marked_below.pop(namespace, None)
        pending = [t for t in self._pending.pop(thread_id, []) if t.checkpoint_ns != ns]
        if pending:
            self._pending[thread_id] = pending

    def take(self, thread_id: str) -> list[Trim]:
        """The trims queued for the thread, now owned by the caller (`give_back` on failure)."""
        with self._lock:
            return self._pending.pop(thread_id, [])

    def give_back(self, trims: list[Trim]) -> None:
        """Queue again trims that did not finish (a newer trim of a namespace wins)."""
        with self._lock:
            for trim in trims:
                pending = self._pending.setdefault(trim.thread_id, [])
                if not any(t.checkpoint_ns == trim.checkpoint_ns for t in pending):
                    pending.append(trim)

    def forget_threads(self, thread_ids: Iterable[str]) -> None:
        """A delete or prune changed these threads: what was known of them may be gone,
        and a trim queued before it would cut a thread written again since."""
        with self._lock:
            doomed = set(thread_ids)
            for thread_id in doomed:
                self._pending.pop(thread_id, None)
            for namespace in [n for n in self._known if n[0] in doomed]:
                self._forget(namespace)


def lineage_entry(doc: Mapping[str, Any]) -> LineageDocument:
    """What the walk over parent ids reads of a stored checkpoint, and nothing else
    (no values: this is kept in memory)."""
    entry: dict[str, Any] = {
        Field.ID: doc[Field.ID],
        Field.PARENT_CHECKPOINT_ID: doc.get(Field.PARENT_CHECKPOINT_ID),
        Field.CHANNEL_VALUES: [
            {Field.CHANNEL: value[Field.CHANNEL]} for value in doc.get(Field.CHANNEL_VALUES, ())
        ],
        Field.REPLAYED_CHANNELS: _delta.replayed_channels(doc),  # type: ignore[arg-type]
    }
    return entry  # type: ignore[return-value]


def _keep_from(known: Mapping[str, LineageDocument], keep_last: int) -> str | None:
    """The lowest id a trim keeps: that of the oldest of the `keep_last` newest, or of an
    ancestor they rebuild a `DeltaChannel` from; `None` when a kept checkpoint's walk
    leaves the known lineage before finding its seeds (trimming could break it)."""
    newest = sorted(known, reverse=True)[:keep_last]
    lowest = newest[-1]
    for checkpoint_id in newest:
        replayed = _delta.replayed_channels(known[checkpoint_id])
        if not replayed:
            continue
        try:
            walk = _delta.walk(known, checkpoint_id, replayed)
        except CheckpointCycleError:
            return None  # data another program wrote: `prune` reports it, a put does not
        last = walk.chain[-1] if walk.chain else checkpoint_id
        if set(replayed) - set(walk.seed_at) and _delta.parent_id(known[last]) is not None:
            return None
        lowest = min([lowest, *walk.chain])
    return lowest
