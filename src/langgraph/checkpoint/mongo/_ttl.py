"""Whole-thread expiry (`ttl=`): a thread expires as a unit, never half-way.

Every document of a thread carries the same `thread_touched_at` (`Field.TOUCHED_AT`): the
time of the thread's last write rounded *up* to a bucket of `ttl / 16`. A TTL index with
`expireAfterSeconds = ttl` on that field deletes all of them in the same pass once the
thread has been idle for between `ttl` and `ttl * 17/16`. A write stamps its own
document, and the first write of a thread in each new bucket (per process) also moves
the thread's older documents to the new value: one `update_many` per collection, one of
them in the write's own command, so that write costs one round trip more; the other
writes of the bucket (those in flight meanwhile included) cost nothing extra.

The pending writes move first, the checkpoints after: a crash in between leaves writes
stamped later than their checkpoints, which only outlive them (reads reach writes through
their checkpoint), never checkpoints that expire before their writes or before the
thread's newest checkpoint.

Changing `ttl` changes the index's `expireAfterSeconds` at `setup()` (collMod), which
applies at once to every thread, idle ones included.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

BUCKETS_PER_TTL = 16
_CACHE_SIZE = 10_000


def _now() -> datetime:
    return datetime.now(timezone.utc)


class ThreadExpiry:
    """The stamp a write gets, and which threads this process already moved to it."""

    def __init__(self, ttl: timedelta, clock: Callable[[], datetime] = _now) -> None:
        self.ttl = ttl
        self.bucket = max(ttl / BUCKETS_PER_TTL, timedelta(seconds=1))
        self.clock = clock
        self._moved: OrderedDict[str, datetime] = OrderedDict()
        # Moves in flight: thread -> the stamp its claimer moves it to.
        self._claimed: dict[str, datetime] = {}
        self._lock = threading.Lock()

    @property
    def seconds(self) -> int:
        return max(1, int(self.ttl.total_seconds()))

    def stamp(self) -> datetime:
        """Now, rounded up to the bucket (whole milliseconds, as BSON stores them)."""
        epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
        bucket_ms = int(self.bucket / timedelta(milliseconds=1))
        now_ms = -(-int((self.clock() - epoch) / timedelta(milliseconds=1)) // bucket_ms)
        return epoch + timedelta(milliseconds=now_ms * bucket_ms)

    def needs_move(self, thread_id: str, stamp: datetime) -> bool:
        with self._lock:
            return self._moved.get(thread_id) != stamp

    def claim(self, thread_id: str, stamp: datetime) -> bool:
        """Whether the caller is the one write of this process that moves the thread to
        `stamp`: not when it was moved there already, or another write is moving it.
        The winner calls `moved` once its commands succeeded, or `release`."""
        with self._lock:
            if self._moved.get(thread_id) == stamp or self._claimed.get(thread_id) == stamp:
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
