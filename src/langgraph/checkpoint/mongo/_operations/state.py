"""What every plan takes of its saver (`Storage`), and what a run's first reads found
for its `put`s (`RunStarts`): below every plan, which all import it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from langgraph.checkpoint.mongo import _options, _queries
from langgraph.checkpoint.mongo._channel_values import RecentValues
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._documents import DEFAULT_STATE_MAX_BYTES
from langgraph.checkpoint.mongo._ttl import ThreadExpiry


@dataclass(slots=True)
class WritesReads:
    """How reads get each checkpoint's pending writes on the saver's server: `joined`, in
    the read's own aggregation (one round trip), or else apart by one `find` (two), where
    the `$lookup` would read the whole writes collection (`_queries.joins_by_index`).
    `setup()` decides, and the process remembers it (`_base.SetupState`)."""

    joined: bool = True


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
        count: with `keep_last`, how `get_tuple` counts the namespace's checkpoints; `None`
            without it or with `targeted_joins=False` (the trim counts first).
        run_starts: with `keep_last`, what each namespace's last reads found, for the
            next `put` (see `trim_after_put`).
        refresh_ttl_on_read: the saver's option (see `refresh_on_read`).
        max_bytes: the largest checkpoint or pending write stored (`state_max_bytes`).
        warn_bytes: the size of a checkpoint from which `put` logs a warning
            (`state_warn_bytes`; 0: never).
        reads: how reads get pending writes (`setup()` decides); shared with copies.
    """

    codec: Codec
    join: _queries.WritesJoin
    expiry: ThreadExpiry | None
    recent: RecentValues
    keep_last: int | None = None
    count: _queries.NamespaceCount | None = None
    run_starts: RunStarts = field(default_factory=lambda: RunStarts())
    refresh_ttl_on_read: bool = False
    max_bytes: int = DEFAULT_STATE_MAX_BYTES
    warn_bytes: int = 0
    reads: WritesReads = field(default_factory=WritesReads)

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
    """A checkpoint `get_tuple` returned, the run that wrote it (its metadata's `run_id`, if any),
    and the namespace's newest checkpoint as the read counted it (`None`: not counted)."""

    checkpoint_id: str
    run_id: str | None
    newest: str | None = None


class RunStart(NamedTuple):
    """What a run's first reads found of a namespace: the last two checkpoints returned
    (the one a run goes on from and, if not the latest, the latest), and whether it holds
    more than `keep_last` + `slack` (`None`: not counted; the trim counts first)."""

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
