"""Pending writes that no stored checkpoint owns, which `prune` deletes.

LangGraph stores a step's task writes (`put_writes` for checkpoint C) while C's own `put`
may still be on its way (`durability="async"`, the default). A kill, cancellation or
fault in between leaves writes, and chunks, whose checkpoint never exists; so does a
`delete_thread` stopped between its two deletes. Reads never see them (a write is read
through its checkpoint), but nothing else would ever delete them.

Which are orphans is decided from what the server holds: the checkpoints the threads'
writes refer to, read *before* `prune` reads the threads' lineage, less those the lineage
holds. Of those, only ids that LangGraph made (a version-6 UUID, which carries its time)
more than `ORPHAN_GRACE` ago go: LangGraph sends a checkpoint's `put` as its step starts,
so a `put` that has not landed by then never will. Any other id (a custom one) is never
taken for an orphan.

Reading the writes first means the writes of a checkpoint stored meanwhile are never taken
for orphans, unless the checkpoint lands after the lineage read while its writes landed
before the writes read: both reads within the one round trip of a writer that stores the
writes of an id older than the grace before the checkpoint itself. Copies into the thread
do (`copy_thread`, `migrate`: they keep the source's ids; running the copy again restores
the writes), and so does LangGraph's first checkpoint of a `durability="exit"` run on a new
thread with `DeltaChannel`s, whose id dates from the run's start.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

from langgraph.checkpoint.mongo._chunks import ORPHAN_GRACE
from langgraph.checkpoint.mongo._keys import key_fields
from langgraph.checkpoint.mongo._schema import CheckpointKey, Field, LineageDocument, WrittenTo

# uuid6's (and uuid1's) clock: 100 ns ticks since the Gregorian reform, 1582-10-15.
_GREGORIAN = datetime(1582, 10, 15, tzinfo=timezone.utc)


def checkpoint_id_time(checkpoint_id: object) -> datetime | None:
    """When LangGraph made this checkpoint id (`langgraph.checkpoint.base.id.uuid6`), or
    `None` for an id that is not a version-6 UUID in its canonical form."""
    if not isinstance(checkpoint_id, str):
        return None
    try:
        parsed = uuid.UUID(checkpoint_id)
    except ValueError:
        return None
    if parsed.version != 6 or str(parsed) != checkpoint_id:
        return None
    ticks = (parsed.time_low << 28) | (parsed.time_mid << 12) | (parsed.time_hi_version & 0x0FFF)
    return _GREGORIAN + timedelta(microseconds=ticks // 10)


def orphaned(
    written: Iterable[WrittenTo], lineage: Iterable[LineageDocument], now: datetime
) -> list[CheckpointKey]:
    """Of the checkpoints that writes refer to (`written`, read before `lineage`), those
    the lineage does not hold whose ids LangGraph made more than `ORPHAN_GRACE` before
    `now`."""
    stored = {key_fields(doc[Field.ID]) for doc in lineage}
    cutoff = now - ORPHAN_GRACE
    doomed = []
    for doc in written:
        key = doc[Field.ID]
        if key_fields(key) in stored:
            continue
        made = checkpoint_id_time(key[Field.CHECKPOINT_ID])
        if made is not None and made < cutoff:
            doomed.append(key)
    return doomed
