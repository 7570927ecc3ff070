"""Whole-thread expiry (`ttl=`): a thread expires as a unit, never half-way.

Every document of a thread carries the same `thread_touched_at` (`Field.TOUCHED_AT`): the time
of the thread's last write rounded *up* to a bucket of `ttl / 16`, so a TTL index with
`expireAfterSeconds = ttl` deletes all of them in one pass once the thread has been idle for
between `ttl` and `ttl * 17/16`. A write stamps its own document; the first write of a thread in
each new bucket (per process) also moves the thread's older documents: one `update_many` per
collection, one in the write's own command (one round trip more). Writes move first, checkpoints
after: a crash in between leaves writes that outlive their checkpoints (reads reach writes
through them), never checkpoints that expire before their writes or the thread's newest.

A write stamped in one bucket may land after the next began. No write of this process moves the
thread past a write of it still in flight from the bucket before (`ThreadMoves.claim`): that write
moves the thread itself once landed, and if it is cancelled or dies first, the thread stays on the
older stamp, whole. So a thread's newest checkpoint is never on an earlier stamp than its older
documents, unless another process (or a write in flight for more than a bucket) moved the thread
meanwhile: the window docs/operations.md states. What a process remembers (`thread_moves`) is
shared by its savers on the same collections: a saver per request moves a thread once per bucket.

Pinning (`pin`): a pinned thread's documents carry `PINNED`, a date the TTL index never reaches and
that no move to a bucket touches (`$not: {$gte: now}`). A run learns a pin from its first read
(`get_tuple` returns the newest checkpoint, stamp included: `learn`); its writes then stamp `PINNED`
and move the rest of the thread there too (once per process). What a run read may be stale when it
writes, so the server decides: every write carries a check of the pin after it, in its command
(`stamped_write`, `pin_check`). A write stamped for an unpinned thread that finds a pinned document
of it, and a checkpoint stamped `PINNED` whose parent is not (an unpin of another process), pin the
whole thread. Only an unpin brings documents down from `PINNED`: its own update, and the move after
each write of its process that was stamped `PINNED` and lands after it (`down`). A write that lands
while an unpin is half done (or after an unpin of another process, stamped pinned) may pin the
thread again: a pin is never lost to a race, an unpin may be.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, NamedTuple

from pymongo import UpdateMany, UpdateOne

from langgraph.checkpoint.mongo import _queries
from langgraph.checkpoint.mongo._commands import Command, Method, Plan, Target
from langgraph.checkpoint.mongo._schema import PINNED, CheckpointKey

BUCKETS_PER_TTL = 16
# Threads remembered per set of collections, and sets of collections per process.
_CACHE_SIZE = 10_000
_COLLECTION_SETS = 64


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True, eq=False)
class StampedWrite:
    """A write in flight (from `ThreadExpiry.start_write` to `end`), and its stamp."""

    thread_id: str
    stamp: datetime
    moves: ThreadMoves

    def end(self) -> None:
        """The write landed, failed or was given up; idempotent."""
        self.moves.end_write(self)


class ThreadMoves:
    """Which threads this process moved to which stamp, the moves in flight, and the
    writes in flight with their stamps, of one set of collections (thread-safe)."""

    def __init__(self) -> None:
        self._moved: OrderedDict[str, datetime] = OrderedDict()
        # Moves in flight: thread -> the stamp its claimer moves it to.
        self._claimed: dict[str, datetime] = {}
        # Writes in flight, per thread.
        self._writing: dict[str, list[StampedWrite]] = {}
        # Whether each thread was pinned when this process last read or (un)pinned it.
        self._pinned: OrderedDict[str, bool] = OrderedDict()
        self._lock = threading.Lock()

    def learn(self, thread_id: str, pinned: bool | None) -> None:
        """A read, a write's check, or a pin or unpin of this process found the thread pinned
        or not: its next writes here stamp so (`None`: a read found no root checkpoint)."""
        with self._lock:
            if pinned is None:
                self._pinned.pop(thread_id, None)
                return
            self._pinned[thread_id] = pinned
            self._pinned.move_to_end(thread_id)
            while len(self._pinned) > _CACHE_SIZE:
                self._pinned.popitem(last=False)

    def pinned(self, thread_id: str) -> bool | None:
        """What `learn` last said of the thread (`None`: nothing, or forgotten)."""
        with self._lock:
            return self._pinned.get(thread_id)

    def forget_move(self, thread_id: str) -> None:
        """The thread is not on the stamp this process moved it to (a write found it
        pinned, or unpinned, by another process): the next move is sent."""
        with self._lock:
            self._moved.pop(thread_id, None)

    def needs_move(self, thread_id: str, stamp: datetime) -> bool:
        with self._lock:
            return self._moved.get(thread_id) != stamp

    def start_write(self, thread_id: str, stamp: Callable[[], datetime]) -> StampedWrite:
        """A write of the thread begins: its stamp (`PINNED` for a thread learned pinned,
        else `stamp()`), taken and registered in one step, so that no move claimed after
        it overtakes it."""
        with self._lock:
            write = StampedWrite(
                thread_id, PINNED if self._pinned.get(thread_id) else stamp(), self
            )
            self._writing.setdefault(thread_id, []).append(write)
            return write

    def end_write(self, write: StampedWrite) -> None:
        with self._lock:
            writes = self._writing.get(write.thread_id)
            if writes is not None and write in writes:
                writes.remove(write)
                if not writes:
                    del self._writing[write.thread_id]

    def claim(self, thread_id: str, stamp: datetime, bucket: timedelta) -> bool:
        """Whether the caller is the one write of this process that moves the thread to
        `stamp`: not when it is there or being moved there, or while a write stamped in the
        bucket before (to or from `PINNED`: any other stamp) is in flight (it moves the thread
        once landed). The winner calls `moved` once its commands succeeded, or `release`."""
        with self._lock:
            if self._moved.get(thread_id) == stamp or self._claimed.get(thread_id) == stamp:
                return False
            for w in self._writing.get(thread_id, ()):
                pinning = PINNED in (stamp, w.stamp)
                if w.stamp != stamp and (pinning or stamp - bucket <= w.stamp < stamp):
                    return False
            self._claimed[thread_id] = stamp
            return True

    def release(self, thread_id: str, stamp: datetime) -> None:
        """A claimed move failed: the next write of the bucket moves the thread."""
        with self._lock:
            if self._claimed.get(thread_id) == stamp:
                del self._claimed[thread_id]

    def moved(self, thread_id: str, stamp: datetime) -> None:
        with self._lock:
            if self._claimed.get(thread_id) == stamp:
                del self._claimed[thread_id]
            self._moved[thread_id] = stamp
            self._moved.move_to_end(thread_id)
            while len(self._moved) > _CACHE_SIZE:
                self._moved.popitem(last=False)


_shared: OrderedDict[Hashable, ThreadMoves] = OrderedDict()
_shared_lock = threading.Lock()


def thread_moves(collections: Hashable | None) -> ThreadMoves:
    """The process's `ThreadMoves` of a set of collections (a key naming the deployment,
    the database and both collections), least recently used forgotten first; `None`
    (a client whose deployment cannot be named): one of the saver's own."""
    if collections is None:
        return ThreadMoves()
    with _shared_lock:
        moves = _shared.get(collections)
        if moves is None:
            moves = _shared[collections] = ThreadMoves()
        _shared.move_to_end(collections)
        while len(_shared) > _COLLECTION_SETS:
            _shared.popitem(last=False)
        return moves


class ThreadExpiry:
    """A saver's stamps (its `ttl`, the bucket, the clock), and what the process
    remembers of its collections' threads (`moves`)."""

    def __init__(
        self, ttl: timedelta, moves: ThreadMoves | None = None, clock: Callable[[], datetime] = _now
    ) -> None:
        self.ttl = ttl
        self.bucket = max(ttl / BUCKETS_PER_TTL, timedelta(seconds=1))
        self.clock = clock
        self.moves = moves if moves is not None else ThreadMoves()

    @property
    def seconds(self) -> int:
        return max(1, int(self.ttl.total_seconds()))

    def stamp(self) -> datetime:
        """Now, rounded up to the bucket (whole milliseconds, as BSON stores them)."""
        epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
        bucket_ms = int(self.bucket / timedelta(milliseconds=1))
        now_ms = -(-int((self.clock() - epoch) / timedelta(milliseconds=1)) // bucket_ms)
        return epoch + timedelta(milliseconds=now_ms * bucket_ms)

    def start_write(self, thread_id: str) -> StampedWrite:
        """A write of the thread and its stamp, in flight until its `end()`."""
        return self.moves.start_write(thread_id, self.stamp)

    def stamp_of(self, thread_id: str) -> datetime:
        """The stamp a write of the thread would take now (`PINNED`, or `stamp()`)."""
        return PINNED if self.moves.pinned(thread_id) else self.stamp()


class Ride(NamedTuple):
    """A write that carries the move of its own collection (`target`) in its one command:
    `send(first)` builds that command, with `first` sent before the write in it."""

    target: Target
    send: Callable[[Sequence[UpdateMany]], Command]


def move_thread(
    expiry: ThreadExpiry,
    thread_id: str,
    stamp: datetime,
    ride: Ride | None = None,
    *,
    claim: bool = True,
    down: bool = False,
) -> Plan[Any]:
    """Every move of a thread's expiry stamp: its documents to `stamp`, one `update_many`
    per collection, the pending writes' before the checkpoints'. With `ride`, the move of
    the write's collection rides in the write's command; returns that write's result.

    `claim`: once per bucket and process (`ThreadMoves.claim`), claimed when the plan runs,
    not when it is made; if not won, only the riding write is sent. A failed move releases
    its claim. `down`: the pinned documents too (a write stamped pinned that landed after its
    own process unpinned the thread); no other move brings a pin down.
    """
    if claim and not expiry.moves.claim(thread_id, stamp, expiry.bucket):
        return (yield ride.send(())) if ride is not None else None
    touch = _queries.touch_thread(thread_id, stamp, PINNED if down else None)
    result = None
    try:
        for target in (Target.WRITES, Target.CHECKPOINTS):
            if ride is not None and target is ride.target:
                result = yield ride.send([UpdateMany(*touch)])
            else:
                yield Command(target, Method.UPDATE_MANY, touch)
    except BaseException:
        if claim:
            expiry.moves.release(thread_id, stamp)
        raise
    expiry.moves.moved(thread_id, stamp)
    return result


def stamped_write(
    expiry: ThreadExpiry | None,
    write: StampedWrite | None,
    target: Target,
    send: Callable[[Sequence[UpdateMany], Sequence[UpdateOne]], Command],
    upserts: int,
    parent: CheckpointKey | None = None,
) -> Plan[None]:
    """The one command of a write to `target` stamped `write.stamp`, `upserts` documents:
    `send(first, last)` builds it, with `first` sent before the write in it and `last`
    after it. The write is in flight (`ThreadExpiry.start_write`) until its command
    returned or failed.

    The first write of the thread in a new bucket (per process) also moves the thread's older
    documents, riding in the write (`move_thread`). A write stamped in a bucket that ended while
    it was in flight moves the thread to the new stamp after it landed, unless this process did.
    The write checks the pin as it lands (`pin_check`, riding after it; see the module docstring):
    the pin wins over a run that read the thread before it.
    """
    if expiry is None or write is None:
        yield send((), ())
        return
    thread_id, stamp = write.thread_id, write.stamp
    pinned = stamp == PINNED
    check = None if pinned and parent is None else _queries.pin_check(thread_id, pinned, parent)
    checks = [UpdateOne(*check)] if check else []
    try:
        ride = Ride(target, lambda first: send(first, checks))
        result = yield from move_thread(expiry, thread_id, stamp, ride)
    finally:
        write.end()
    seen = check is not None and (yield from pin_seen(result, upserts, target, check[0]))
    if seen:
        expiry.moves.learn(thread_id, True)
        expiry.moves.forget_move(thread_id)  # the thread is not where this process moved it
    now = expiry.stamp_of(thread_id)
    # Landed pinned after its own process unpinned the thread: it comes down with the rest.
    down = pinned and now != PINNED
    if now != stamp or seen:
        # Bringing the thread into line after a race is this write's own job, whatever
        # other writes of the process claimed: each of them may have passed its documents.
        yield from move_thread(expiry, thread_id, now, claim=not (seen or down), down=down)


def pin_seen(result: Any, upserts: int, target: Target, check: Mapping[str, Any]) -> Plan[bool]:
    """Whether a write's `pin_check` matched (the thread is pinned, or its checkpoint's
    parent is not). The check changes nothing, so in the write's result it counts as
    matched and not modified, as does a write's document that was stored already with
    the same content (a retry). Every move riding in the command modifies each document
    it matches. So when every document was new (`upserts` upserted), matched minus
    modified is the check's answer; otherwise a `count_documents` of the check asks."""
    if result.upserted_count == upserts:
        return bool(result.matched_count - result.modified_count)
    count = yield Command(target, Method.COUNT_DOCUMENTS, (check,), {"limit": 1})
    return bool(count)


def pin(expiry: ThreadExpiry | None, thread_id: str, pinned: bool) -> Plan[None]:
    """`pin_thread` (`pinned`) or `unpin_thread`: every document of the thread to `PINNED`,
    or from it to the current stamp (the bucket's, or now without `ttl`), one `update_many`
    per collection. A pin moves the pending writes first, an unpin the checkpoints first, so
    a crash in between leaves writes that only outlive their checkpoints, and the newest
    checkpoint says where the next move brings the rest. This process's writes learn it at
    once (`ThreadMoves.learn`); it claims no move: writes in flight move the thread after it.
    """
    stamp = PINNED if pinned else expiry.stamp() if expiry else _now()
    touch = _queries.touch_thread(thread_id, stamp, None if pinned else PINNED)
    if expiry is not None:
        expiry.moves.learn(thread_id, pinned)
    order = (Target.WRITES, Target.CHECKPOINTS)
    for target in order if pinned else reversed(order):
        yield Command(target, Method.UPDATE_MANY, touch)


def move_after_copy(
    expiry: ThreadExpiry | None, thread_id: str, written: datetime | None
) -> Plan[None]:
    """After a copy's writes stamped `written` (`copy_thread`, `migrate`), move the
    thread's older documents to the current stamp, unless this process did already.

    Never backwards (`$not: {$gte: now}`), so a write stamped in an older bucket that landed
    after another writer's move is moved too, and unstamped documents join the thread's
    stamp. The copy's writes are not in flight for `claim`, so the move is not claimed.
    """
    if expiry is None or written is None:
        return
    now = expiry.stamp()
    if now == written and not expiry.moves.needs_move(thread_id, now):
        return
    yield from move_thread(expiry, thread_id, now, claim=False)
