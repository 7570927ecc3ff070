"""Whole-thread expiry (`ttl=`): a thread expires as a unit, never half-way.

Every document of a thread carries the same `thread_touched_at` (`Field.TOUCHED_AT`): the
time of the thread's last write rounded *up* to a bucket of `ttl / 16`. A TTL index with
`expireAfterSeconds = ttl` on that field deletes all of them in the same pass once the
thread has been idle for between `ttl` and `ttl * 17/16`. A write stamps its own
document, and the first write of a thread in each new bucket (per process) also moves
the thread's older documents to the new value: two `update_many`s, so the steady-state
cost per write is one extra field and no extra round trip.

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

    def moved(self, thread_id: str, stamp: datetime) -> None:
        with self._lock:
            self._moved[thread_id] = stamp
            self._moved.move_to_end(thread_id)
            while len(self._moved) > _CACHE_SIZE:
                self._moved.popitem(last=False)
