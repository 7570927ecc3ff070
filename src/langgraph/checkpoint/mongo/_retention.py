"""How many checkpoints a thread keeps: `prune(keep_last=N)`, and the saver's `keep_last`
option, which trims each namespace as it is written."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.checkpoint.mongo import _delta
from langgraph.checkpoint.mongo._keys import checkpoint_key, key_fields
from langgraph.checkpoint.mongo._schema import CheckpointKey, Field, LineageDocument
from langgraph.checkpoint.mongo.errors import CheckpointCycleError

# Namespaces whose recent lineage a saver remembers (least recently written go first).
_NAMESPACES = 10_000
# The fewest marked checkpoints of a thread a trim deletes (with `keep_last` above it,
# `keep_last`): each trim is two commands, and a small `keep_last` must not make one per
# `put`.
TRIM_BATCH = 10


class Marks(NamedTuple):
    """What a `put` marks `trimmed` in its own command, after its upsert: the known
    checkpoints of its namespace that leave the window (one `UpdateOne` each, so the
    command stays a retryable write), and, at the namespace's first mark in this process,
    every checkpoint below `unknown_below` (an `UpdateMany`: older checkpoints this
    process never saw, written before it started)."""

    thread_id: str
    checkpoint_ns: str
    leaving: list[CheckpointKey]
    unknown_below: str | None


class Trim(NamedTuple):
    """Delete marked checkpoints of a thread and their writes: `keys`, and with `find`
    also the marked ones this process does not know (those an `unknown_below` mark
    reached)."""

    thread_id: str
    keys: list[CheckpointKey]
    find: bool


class KeepLast:
    """The saver's `keep_last`: which checkpoints of a namespace leave its window, from
    the lineage this process has seen (its own `put`s, the `DeltaChannel` history reads,
    and the window `get_tuple` returns beside the checkpoint).

    Two steps, so that no read sees more than the window and a chat turn sends no
    command more (`_operations.put`):

    - each `put` marks the checkpoints of its namespace that are neither among the
      `keep_last` newest known ones nor an ancestor those rebuild a `DeltaChannel` from
      (what `prune(keep_last=N)` would delete) `trimmed`, in its own command after the
      upsert (`Marks`); every read leaves marked checkpoints out
      (`_queries.NOT_TRIMMED`);
    - once `keep_last` (at least `TRIM_BATCH`) checkpoints of a thread were marked, in
      any of its namespaces, they are deleted with their writes, in commands the saver
      sends in the background (`Trim`, `_operations.trim_after_put`).

    Checkpoints this process does not know (another process wrote them after its last
    read of the thread) are never marked by it: the newest `keep_last` known ones always
    stay, so a mark never leaves fewer than `keep_last`. A `DeltaChannel` namespace is
    marked only when the known lineage reaches back to the seeds its kept checkpoints
    need; otherwise it waits.
    """

    def __init__(self, keep_last: int) -> None:
        self.keep_last = keep_last
        self._known: OrderedDict[tuple[str, str], dict[str, LineageDocument]] = OrderedDict()
        # Namespaces whose older, unknown checkpoints were marked (below this id), or that
        # have none: a window read found all their checkpoints (`window`).
        self._unknown_marked: dict[tuple[str, str], str | None] = {}
        # Per thread (as many as namespaces, least recently marked first): the trim its
        # marks so far call for, queued once it is large enough.
        self._marked: OrderedDict[str, Trim] = OrderedDict()
        self._pending: dict[str, Trim] = {}
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
                known = self._known.setdefault(namespace, {})
                known[key[Field.CHECKPOINT_ID]] = lineage_entry(doc)
                self._known.move_to_end(namespace)
            while len(self._known) > _NAMESPACES:
                # Forgotten whole: memory stays bounded, and a namespace written again is
                # trimmed once it is known again.
                self._forget(next(iter(self._known)))

    def window(
        self,
        thread_id: str,
        checkpoint_ns: str,
        newest: Sequence[Mapping[str, Any]],
        also: Iterable[Mapping[str, Any]] = (),
    ) -> None:
        """What `get_tuple` read of a namespace: its `keep_last + 1` newest checkpoints
        that reads see (`newest`), and the checkpoint it returned (`also`); nothing for a
        namespace with no checkpoint. The truth about them: a known checkpoint as new
        as the oldest of them that is not among them was deleted or marked since (by
        another process: a rollback, a trim), and is forgotten; with `keep_last` or
        fewer (a new thread, or one this option keeps), they are every checkpoint reads
        see, and the namespace's first mark needs no `UpdateMany` of older ones."""
        namespace = (thread_id, checkpoint_ns)
        ids = {doc[Field.ID][Field.CHECKPOINT_ID] for doc in newest}
        complete = len(ids) <= self.keep_last
        with self._lock:
            known = self._known.get(namespace)
            if known is not None:
                lowest = "" if complete else min(ids)
                for stale in [c for c in known if c >= lowest and c not in ids]:
                    del known[stale]
            if complete:
                self._unknown_marked.setdefault(namespace, None)
                # Known (empty for a new namespace), so the bound on namespaces forgets it.
                self._known.setdefault(namespace, {})
        self.saw([*newest, *also])

    def marks(self, document: Mapping[str, Any]) -> Marks | None:
        """Before the `put` of `document`: what its command marks (`None`: nothing).

        `document` counts as known from here on; the `put` then calls `stored` with the
        marks, or `failed` (the document may not be stored, and a window counted with
        it could keep fewer than `keep_last`)."""
        self.saw([document])
        key = document[Field.ID]
        thread_id, ns, own = (
            key[Field.THREAD_ID],
            key[Field.CHECKPOINT_NS],
            key[Field.CHECKPOINT_ID],
        )
        with self._lock:
            known = self._known.get((thread_id, ns), {})
            if len(known) <= self.keep_last:
                return None
            kept = _kept(known, self.keep_last)
            if kept is None:
                return None
            # The checkpoint being stored stays, even when its id sorts among the old ones
            # (another host's clock ahead of this one's).
            leaving = sorted(set(known) - kept - {own})
            # At the namespace's first mark in this process, older checkpoints it never
            # saw (written before it started) go too, unless a window read found none.
            unknown_below = None if (thread_id, ns) in self._unknown_marked else min(known)
            if not leaving and unknown_below is None:
                return None
            keys = [checkpoint_key(thread_id, ns, c) for c in leaving]
            return Marks(thread_id, ns, keys, unknown_below)

    def stored(self, marks: Marks | None) -> None:
        """The `put` that sent `marks` was acknowledged: the marked checkpoints are out of
        the window; a delete of the thread's marked checkpoints is queued once there are
        `keep_last` (at least `TRIM_BATCH`) of them."""
        if marks is None:
            return
        with self._lock:
            thread_id, ns = marks.thread_id, marks.checkpoint_ns
            known = self._known.get((thread_id, ns), {})
            for key in marks.leaving:
                known.pop(key[Field.CHECKPOINT_ID], None)
            if marks.unknown_below is not None:
                self._unknown_marked[thread_id, ns] = marks.unknown_below
            so_far = self._marked.pop(thread_id, None)
            marked = Trim(thread_id, marks.leaving, marks.unknown_below is not None)
            if so_far is not None:
                marked = _merged(so_far, marked)
            if len(marked.keys) >= max(self.keep_last, TRIM_BATCH):
                self._queue(marked)
                return
            self._marked[thread_id] = marked
            while len(self._marked) > _NAMESPACES:
                # Left in the collection, out of every read, until a `prune` or a trim
                # that finds them.
                self._marked.popitem(last=False)

    def failed(self, thread_id: str, checkpoint_ns: str) -> None:
        """A `put` failed: forget the namespace's lineage (the next read of it tells
        again); what earlier puts marked stays to be deleted."""
        with self._lock:
            self._forget((thread_id, checkpoint_ns))

    def _forget(self, namespace: tuple[str, str]) -> None:
        """Drop the namespace's lineage (under the lock); marked checkpoints a trim has
        not deleted stay in the collection, out of every read, until a `prune` or a
        later process's first mark of the namespace (its trim finds them)."""
        self._known.pop(namespace, None)
        self._unknown_marked.pop(namespace, None)

    def take(self, thread_id: str) -> Trim | None:
        """The trim queued for the thread, now owned by the caller (`give_back` on
        failure)."""
        with self._lock:
            return self._pending.pop(thread_id, None)

    def give_back(self, trim: Trim) -> None:
        """Queue again a trim that did not finish (merged with one queued since)."""
        with self._lock:
            self._queue(trim)

    def _queue(self, trim: Trim) -> None:
        """Queue `trim`, merged with one queued for its thread (under the lock)."""
        queued = self._pending.get(trim.thread_id)
        self._pending[trim.thread_id] = trim if queued is None else _merged(trim, queued)

    def forget_threads(self, thread_ids: Iterable[str]) -> None:
        """A delete or prune changed these threads: what was known of them may be gone
        (a prune deletes every marked checkpoint, a delete of runs may bring some back)."""
        with self._lock:
            doomed = set(thread_ids)
            for thread_id in doomed:
                self._pending.pop(thread_id, None)
                self._marked.pop(thread_id, None)
            for namespace in [n for n in self._known if n[0] in doomed]:
                self._forget(namespace)


def _merged(first: Trim, then: Trim) -> Trim:
    """One trim of a thread that does what both do."""
    return Trim(first.thread_id, [*first.keys, *then.keys], first.find or then.find)


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


def _kept(known: Mapping[str, LineageDocument], keep_last: int) -> set[str] | None:
    """What stays of a namespace: the `keep_last` newest known checkpoints and the
    ancestors they rebuild a `DeltaChannel` from (`_delta.prunable`'s rule); `None` when
    a kept checkpoint's walk leaves the known lineage before finding its seeds (marking
    could break it)."""
    newest = sorted(known, reverse=True)[:keep_last]
    kept = set(newest)
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
        kept.update(walk.chain)
    return kept


def window_after_delete(
    lineage_docs: Iterable[LineageDocument],
    deleted: Iterable[CheckpointKey],
    keep_last: int | None,
) -> list[CheckpointKey]:
    """The marked checkpoints to bring back into the window once `deleted` are gone (a
    rollback deletes a run's checkpoints, which held the window): per namespace, those
    among the `keep_last` newest that remain and the ancestors they rebuild a
    `DeltaChannel` from; without `keep_last`, every marked one (that saver keeps all)."""
    gone = {key_fields(key) for key in deleted}
    back: list[CheckpointKey] = []
    for (thread_id, ns), lineage in _delta.by_namespace(lineage_docs).items():
        left = {c: doc for c, doc in lineage.items() if (thread_id, ns, c) not in gone}
        keep = set(left) if keep_last is None else _delta.kept(left, left, keep_last)
        back += [
            checkpoint_key(thread_id, ns, c) for c in sorted(keep) if left[c].get(Field.TRIMMED)
        ]
    return back
