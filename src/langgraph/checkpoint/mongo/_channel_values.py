"""Channel values as stored: one serialized entry per channel, captured when it changed.

LangGraph hands `put` a shallow copy of the checkpoint whose channel values are live objects,
which with `durability="async"` the next step may have mutated by the time `put` runs. A channel
whose version did not change since the parent (not in `new_versions`) is therefore stored with the
parent's exact bytes, never serialized again (`InMemorySaver` and `PostgresSaver` get the same from
their per-version blobs). The parent's bytes come from `RecentValues`, a bounded cache of what this
process last wrote or read; only on a miss does `put` read them, in one extra round trip.
"""

from __future__ import annotations

import struct
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._keys import KeyFields, key_fields
from langgraph.checkpoint.mongo._schema import ChannelValue, CheckpointKey, Field


@dataclass(frozen=True, slots=True)
class StoredValues:
    """A checkpoint's stored channel entries by channel name, and the channel versions they hold
    (its `channel_versions`: an entry does not repeat its version). The entries are shared, not
    copied: nothing mutates a stored entry, and consecutive checkpoints reuse them."""

    entries: dict[str, ChannelValue]
    versions: Mapping[str, Any]


def stored_values(entries: Iterable[ChannelValue], versions: Mapping[str, Any]) -> StoredValues:
    """A document's `channel_values` array, with the versions of its checkpoint (copied:
    `put` is handed live objects)."""
    return StoredValues({entry[Field.CHANNEL]: entry for entry in entries}, dict(versions))


def encode_channel_values(
    channel_values: Mapping[str, Any],
    versions: Mapping[str, Any],
    unchanged: Collection[str],
    parent: StoredValues | None,
    encode: Callable[[str, Any], ChannelValue],
) -> dict[str, ChannelValue]:
    """Each channel's stored entry: the parent's, where the channel is `unchanged` since
    it and the parent holds it at the same version; else `encode(channel, value)`'s."""
    kept = parent.entries if parent is not None and unchanged else {}
    result: dict[str, ChannelValue] = {}
    for channel, value in channel_values.items():
        entry = kept.get(channel) if channel in unchanged else None
        if entry is None or parent is None or parent.versions.get(channel) != versions.get(channel):
            entry = encode(channel, value)
        result[channel] = entry
    return result


def decode_channel_values(codec: Codec, entries: Iterable[ChannelValue]) -> dict[str, Any]:
    return {entry[Field.CHANNEL]: codec.decode(entry) for entry in entries}


# The default bound of the cache, in bytes of process memory (`cache_max_bytes`).
DEFAULT_CACHE_MAX_BYTES = 64 * 1024 * 1024


def _per_key_dict_bytes() -> int:
    """What one more key adds to a dict, on average over a dict's growth (its index and
    entry slots, with the table's spare room)."""
    many = 64
    return (sys.getsizeof(dict.fromkeys(range(many))) - sys.getsizeof({0: None})) // (many - 1)


def _layout_overheads() -> tuple[int, int]:
    """What a cached checkpoint takes besides its values' bytes, per checkpoint and per channel, as
    the running CPython lays the objects out (dicts are larger before 3.11, so constants would let
    the cache outgrow its bound on another version): the key, the cache's slot, the `StoredValues`
    and its dicts; per channel its entry dict, `bytes` object, dict slots and version (ids and
    versions sized as LangGraph makes them). Values alone would miss most of a small checkpoint."""
    an_id = "0" * 36
    version = "0" * 49
    entry: ChannelValue = {Field.CHANNEL: "channel", Field.DATA: b""}
    values = StoredValues({"channel": entry}, {"channel": version})
    key_slot = _per_key_dict_bytes()
    pointer = struct.calcsize("P")
    checkpoint = (
        sys.getsizeof((an_id, "", an_id))
        + 2 * sys.getsizeof(an_id)
        + key_slot
        + 4 * pointer
        + sys.getsizeof((values, 0))
        + sys.getsizeof(values)
        + sys.getsizeof(values.entries)
        + sys.getsizeof(values.versions)
    )
    channel = sys.getsizeof(entry) + sys.getsizeof(b"") + 2 * key_slot + sys.getsizeof(version)
    return checkpoint, channel


CHECKPOINT_OVERHEAD_BYTES, CHANNEL_OVERHEAD_BYTES = _layout_overheads()


def cached_size(values: StoredValues) -> int:
    """The memory a cached checkpoint takes, estimated (see `_layout_overheads`);
    an entry shared with another cached checkpoint is counted in each."""
    entries = values.entries.values()
    return (
        CHECKPOINT_OVERHEAD_BYTES
        + CHANNEL_OVERHEAD_BYTES * len(entries)
        + sum(len(entry[Field.DATA]) for entry in entries)
    )


class RecentValues:
    """The stored channel entries of checkpoints this process recently wrote or read,
    least recently used evicted first, within `max_bytes` of memory (estimated by
    `cached_size`; 0 keeps nothing). Thread-safe: a sync saver serves many threads."""

    def __init__(self, max_bytes: int = DEFAULT_CACHE_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[KeyFields, tuple[StoredValues, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def recall(self, checkpoint: CheckpointKey) -> StoredValues | None:
        """The entries cached for the checkpoint of this `_id`, if any."""
        key = key_fields(checkpoint)
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def remember(self, checkpoint: CheckpointKey, values: StoredValues) -> None:
        """Cache the entries of the checkpoint of this `_id` (written or read just now)."""
        key = key_fields(checkpoint)
        size = cached_size(values)
        with self._lock:
            self._remove(key)
            if size > self.max_bytes:
                return
            self._entries[key] = (values, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                self._remove(next(iter(self._entries)))

    def forget_threads(self, thread_ids: Iterable[str]) -> None:
        """Drop deleted threads: a checkpoint written later under a deleted parent's id
        must not inherit bytes that are no longer stored."""
        doomed = set(thread_ids)
        with self._lock:
            for key in [key for key in self._entries if key[0] in doomed]:
                self._remove(key)

    def _remove(self, key: KeyFields) -> None:
        found = self._entries.pop(key, None)
        if found is not None:
            self._bytes -= found[1]
