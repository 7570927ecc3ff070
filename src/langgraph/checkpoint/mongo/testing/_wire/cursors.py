"""Server-side cursors: `find`, `aggregate` and `listIndexes` results, then `getMore`
and `killCursors`.

A result is read whole when the cursor opens (a snapshot) and handed out in batches as a
server's (`batchSize` or 101 first, then `batchSize` or the rest, at most 16 MiB but at least
one document each), so the drivers' batching is exercised. Id 0 means exhausted.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import bson
from bson.int64 import Int64
from bson.raw_bson import RawBSONDocument

from .errors import CommandError, non_negative

MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
# mongod builds results up to 16 KiB over the user limit (BSONObjMaxInternalSize).
MAX_INTERNAL_OBJECT_SIZE = MAX_BSON_OBJECT_SIZE + 16 * 1024
DEFAULT_FIRST_BATCH = 101
# The code a too-large joined document is refused with (tests set the others mongod uses).
JOIN_TOO_LARGE = 4568


class _Cursor:
    __slots__ = ("docs", "ns", "pos")

    def __init__(self, ns: str, docs: list[Any]) -> None:
        self.ns = ns
        self.docs = docs
        self.pos = 0

    @property
    def exhausted(self) -> bool:
        return self.pos >= len(self.docs)

    def take(self, limit: int | None) -> list[RawBSONDocument]:
        batch: list[RawBSONDocument] = []
        size = 0
        while not self.exhausted and (limit is None or len(batch) < limit):
            raw = bson.encode(self.docs[self.pos])
            if len(raw) > MAX_INTERNAL_OBJECT_SIZE:
                # What mongod answers for a `$lookup` whose joined array makes a document
                # too large (the savers then read the checkpoint and its writes apart).
                raise CommandError(
                    JOIN_TOO_LARGE,
                    f"Total size of documents in the $lookup result ({len(raw)} bytes) "
                    f"exceeds maximum document size {MAX_INTERNAL_OBJECT_SIZE}",
                )
            if batch and size + len(raw) > MAX_BSON_OBJECT_SIZE:
                break
            batch.append(RawBSONDocument(raw))
            size += len(raw)
            self.pos += 1
        return batch


class Cursors:
    """The open cursors of one server, shared by all its connections."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, _Cursor] = {}
        self._rng = random.Random()

    def first_batch(
        self, ns: str, docs: list[Any], batch_size: Any = None, single_batch: bool = False
    ) -> dict[str, Any]:
        """The reply of a command that opens a cursor on `docs`."""
        cursor = _Cursor(ns, docs)
        limit = DEFAULT_FIRST_BATCH if batch_size is None else non_negative(batch_size, "batchSize")
        batch = cursor.take(limit)
        cursor_id = 0 if single_batch or cursor.exhausted else self._register(cursor)
        return {"cursor": {"firstBatch": batch, "id": Int64(cursor_id), "ns": ns}}

    def _register(self, cursor: _Cursor) -> int:
        with self._lock:
            while True:
                cursor_id = self._rng.randint(1, 2**63 - 1)
                if cursor_id not in self._open:
                    self._open[cursor_id] = cursor
                    return cursor_id

    def get_more(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        cursor_id = non_negative(cmd["getMore"], "getMore")
        ns = f"{db}.{cmd.get('collection')}"
        limit = non_negative(cmd.get("batchSize"), "batchSize") or None
        with self._lock:
            cursor = self._open.get(cursor_id)
            if cursor is None:
                raise CommandError(43, f"cursor id {cursor_id} not found")
            if cursor.ns != ns:
                raise CommandError(
                    13, f"getMore on namespace '{ns}' for a cursor of namespace '{cursor.ns}'"
                )
            del self._open[cursor_id]
        batch = cursor.take(limit)
        if cursor.exhausted:
            cursor_id = 0
        else:
            with self._lock:
                self._open[cursor_id] = cursor
        return {"cursor": {"nextBatch": batch, "id": Int64(cursor_id), "ns": ns}}

    def kill(self, cmd: dict[str, Any]) -> dict[str, Any]:
        killed: list[Int64] = []
        not_found: list[Int64] = []
        with self._lock:
            for raw_id in cmd.get("cursors") or []:
                found = self._open.pop(int(raw_id), None) is not None
                (killed if found else not_found).append(Int64(raw_id))
        return {
            "cursorsKilled": killed,
            "cursorsNotFound": not_found,
            "cursorsAlive": [],
            "cursorsUnknown": [],
        }

    def clear(self) -> None:
        with self._lock:
            self._open.clear()
