"""`DeltaChannel` support: the history walk in two round trips, and what deletes must keep.

A `DeltaChannel` stores its value only in snapshot checkpoints; any other checkpoint rebuilds it
from the nearest ancestor snapshot plus the writes along the parent chain. The base class reads one
`get_tuple` per ancestor; here one read fetches the *lineage* (ids, parent ids, and the channels
each checkpoint stores or replays), walked in memory, and a second the chain's writes and seeds.

The same walk tells `prune` and `delete_for_runs` which ancestors a surviving
checkpoint still needs, so they never leave a thread that rebuilds to a wrong state.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from langgraph.checkpoint.base import DeltaChannelHistory, PendingWrite

from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._documents import pending_writes
from langgraph.checkpoint.mongo._keys import checkpoint_key, key_fields, short_repr
from langgraph.checkpoint.mongo._metadata import DELTA_COUNTERS
from langgraph.checkpoint.mongo._schema import (
    CheckpointKey,
    Field,
    HistoryDocument,
    LineageDocument,
)
from langgraph.checkpoint.mongo.errors import CheckpointCycleError

Lineage = Mapping[str, LineageDocument]  # checkpoint id -> lineage document, one namespace


def by_namespace(
    docs: Iterable[LineageDocument],
) -> dict[tuple[str, str], dict[str, LineageDocument]]:
    """Lineage documents grouped by (thread, namespace), each newest first."""
    groups: dict[tuple[str, str], dict[str, LineageDocument]] = defaultdict(dict)
    for doc in docs:
        thread_id, ns, checkpoint_id = key_fields(doc[Field.ID])
        groups[thread_id, ns][checkpoint_id] = doc
    return groups


@dataclass
class Walk:
    """A checkpoint's ancestors, newest first, and where each channel finds its seed;
    `missing`: the ancestor the chain names and the lineage lacks, with channels still
    unseeded (deleted while the lineage was read, or before), `unseeded` those channels."""

    chain: list[str] = field(default_factory=list)
    seed_at: dict[str, str] = field(default_factory=dict)
    missing: str | None = None
    unseeded: frozenset[str] = frozenset()

    def reach(self, channel: str) -> list[str]:
        """Ancestors whose writes to `channel` count: up to and including its seed."""
        if channel in self.seed_at:
            return self.chain[: self.chain.index(self.seed_at[channel]) + 1]
        return self.chain


def parent_id(doc: LineageDocument) -> str | None:
    """The parent a checkpoint names; `None` for a root, and for a checkpoint that names
    itself (stored so when `put`'s config already named it, as `InMemorySaver` stores
    it): every walk over parent ids takes that one for the root of its chain."""
    parent = doc.get(Field.PARENT_CHECKPOINT_ID)
    return None if parent == doc[Field.ID][Field.CHECKPOINT_ID] else parent


def walk(lineage: Lineage, target_id: str | None, channels: Iterable[str]) -> Walk:
    """Follow parent ids from the target until every channel has a seed or the root is
    reached; a chain that comes back to a checkpoint it passed (other than one that
    names itself, a root) raises, never loops."""
    result = Walk()
    if target_id is None or target_id not in lineage:
        return result
    remaining = set(channels)
    current = parent_id(lineage[target_id])
    seen = {target_id}
    while current is not None and remaining and current in lineage:
        doc = lineage[current]
        if current in seen:
            path = [target_id, *result.chain, current]
            cycle = path[path.index(current) :]
            raise CheckpointCycleError(
                doc[Field.ID][Field.THREAD_ID], doc[Field.ID][Field.CHECKPOINT_NS], cycle
            )
        seen.add(current)
        result.chain.append(current)
        stored = {entry[Field.CHANNEL] for entry in doc.get(Field.CHANNEL_VALUES, ())}
        for channel in remaining.intersection(stored):
            result.seed_at[channel] = current
        remaining.difference_update(stored)
        current = parent_id(doc)
    if current is not None and remaining and current not in lineage:
        result.missing, result.unseeded = current, frozenset(remaining)
    return result


def refuse_undeclared_gap(lineage: Lineage, target_id: str, found: Walk, label: str) -> None:
    """Refuse a walk that met a missing ancestor (`found.missing`) for channels the target does
    not declare as `DeltaChannel`s: retention keeps no ancestors for those, so reading again
    cannot close the gap (for declared ones it is a concurrent delete: the caller reads again)."""
    undeclared = sorted(found.unseeded - set(replayed_channels(lineage[target_id])))
    if undeclared:
        raise ValueError(
            f"get_delta_channel_history: {label}, checkpoint {short_repr(target_id)}: the "
            f"history of {undeclared} reaches ancestor {short_repr(found.missing)}, which "
            "is gone: the checkpoint does not declare them as DeltaChannels (metadata "
            f"{DELTA_COUNTERS!r}), so prune and keep_last kept no ancestors for them; a "
            "retry cannot help: ask only for the checkpoint's DeltaChannels"
        )


def replayed_channels(doc: LineageDocument) -> list[str]:
    """The `DeltaChannel`s a checkpoint rebuilds from its ancestors: stored apart where
    its readable metadata's counters do not name them exactly, else those counters' keys."""
    if Field.REPLAYED_CHANNELS in doc:
        return doc[Field.REPLAYED_CHANNELS]
    metadata = doc.get(Field.METADATA)
    counters = metadata.get(DELTA_COUNTERS) if isinstance(metadata, Mapping) else None
    return list(counters) if isinstance(counters, Mapping) else []


def needed_by(lineage: Lineage, survivors: Iterable[str]) -> set[str]:
    """Ancestors the `survivors` rebuild their delta channels from (seeds included)."""
    needed: set[str] = set()
    for checkpoint_id in survivors:
        replayed = replayed_channels(lineage[checkpoint_id])
        if replayed:
            needed.update(walk(lineage, checkpoint_id, replayed).chain)
    return needed


def run_start(lineage_docs: Iterable[LineageDocument], run_id: str) -> str | None:
    """The newest checkpoint of the namespace (`lineage_docs`) that run `run_id` did not
    write (one without a readable `run_id` counts as another run's): the latest as the run
    found it, which a `keep_last` trim keeps so that rolling the run back leaves it latest."""
    others = (
        doc[Field.ID][Field.CHECKPOINT_ID]
        for doc in lineage_docs
        if not isinstance(doc.get(Field.METADATA), Mapping)
        or doc[Field.METADATA].get("run_id") != run_id
    )
    return max(others, default=None)


def prunable(
    lineage_docs: Iterable[LineageDocument],
    keep_last: int = 1,
    *,
    boundary: str | None = None,
    protect: Collection[str] = (),
) -> list[CheckpointKey]:
    """What `prune` deletes, of the checkpoints it has read: all but the `keep_last`
    newest of each namespace and the ancestors their delta channels rebuild from.

    A `keep_last` trim also keeps what its run needs: the newest are counted among ids up
    to `boundary` (the newest when the run started), every newer one stays (the run's
    own), and so do the `protect`ed ones (the checkpoints the run started from)."""
    doomed: list[CheckpointKey] = []
    for (thread_id, ns), lineage in by_namespace(lineage_docs).items():
        old = sorted((c for c in lineage if boundary is None or c <= boundary), reverse=True)
        survivors = {*old[:keep_last], *(set(lineage) - set(old)), *(set(protect) & set(lineage))}
        keep = survivors | needed_by(lineage, survivors)
        doomed += [checkpoint_key(thread_id, ns, c) for c in sorted(lineage) if c not in keep]
    return doomed


def deletable(
    lineage_docs: Iterable[LineageDocument], doomed: Iterable[CheckpointKey]
) -> list[CheckpointKey]:
    """The `doomed` checkpoints (`_id`s) that no surviving checkpoint rebuilds from."""
    doomed_ids: dict[tuple[str, str], set[str]] = defaultdict(set)
    for key in doomed:
        doomed_ids[key[Field.THREAD_ID], key[Field.CHECKPOINT_NS]].add(key[Field.CHECKPOINT_ID])
    result: list[CheckpointKey] = []
    for (thread_id, ns), lineage in by_namespace(lineage_docs).items():
        ids = doomed_ids.get((thread_id, ns), set())
        kept_for_others = needed_by(lineage, [c for c in lineage if c not in ids])
        result += [checkpoint_key(thread_id, ns, c) for c in sorted(ids - kept_for_others)]
    return result


def assemble(
    codec: Codec, found: Walk, docs: Sequence[HistoryDocument], channels: Sequence[str]
) -> dict[str, DeltaChannelHistory]:
    """The base class's result shape: writes oldest first, the seed where one was found."""
    by_id = {doc[Field.ID][Field.CHECKPOINT_ID]: doc for doc in docs}
    writes_at = {
        cid: pending_writes(codec, doc.get(Field.JOINED_WRITES, ())) for cid, doc in by_id.items()
    }
    seed_values = {
        cid: {entry[Field.CHANNEL]: entry for entry in by_id[cid][Field.CHANNEL_VALUES]}
        for cid in set(found.seed_at.values())
    }
    result: dict[str, DeltaChannelHistory] = {}
    for channel in channels:
        writes: list[PendingWrite] = [
            write
            for cid in reversed(found.reach(channel))
            for write in writes_at.get(cid, ())
            if write[1] == channel
        ]
        entry: DeltaChannelHistory = {"writes": writes}
        if channel in found.seed_at:
            entry["seed"] = codec.decode(seed_values[found.seed_at[channel]][channel])
        result[channel] = entry
    return result
