"""How large a checkpoint is as stored, and the warning `put` logs before the limit.

From `state_warn_bytes` a `put` logs one WARNING per thread and process, naming the largest
channels, with the size `_documents` measured for `state_max_bytes` (no encoding, no command).
`threads show` reports the same sizes (`StoredSize`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import NamedTuple

from langgraph.checkpoint.mongo._keys import CheckpointRef
from langgraph.checkpoint.mongo._logging import logger
from langgraph.checkpoint.mongo._schema import ChannelValue, Field

# The size from which `put` warns (`state_warn_bytes`): half of one MongoDB document, an
# eighth of the default bound, where LibreChat's own wrapper starts warning.
DEFAULT_STATE_WARN_BYTES = 8 * 1024 * 1024

# The threads this process warned about, at most this many (then the oldest is forgotten,
# by one atomic `popitem`: threads of a sync saver evicting at once never fail a put).
_WARNED_THREADS_MAX = 10_000
_warned_threads: OrderedDict[str, None] = OrderedDict()
_LARGEST_NAMED = 3  # how many of a checkpoint's largest channels a warning names


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MiB"


def largest_channels(entries: Iterable[ChannelValue]) -> list[tuple[str, int]]:
    """A checkpoint's channel entries, each with its bytes (as built, or as read with its
    chunks put back), as `(channel, stored bytes)`, largest first."""
    sizes = [(entry[Field.CHANNEL], len(entry.get(Field.DATA, b""))) for entry in entries]
    return sorted(sizes, key=lambda item: (-item[1], item[0]))


class StoredSize(NamedTuple):
    """What a stored checkpoint takes (`threads show`).

    Attributes:
        size: its document's BSON size, its chunks' bytes included.
        channels: `(channel, stored bytes)`, largest first (`largest_channels`).
    """

    size: int
    channels: list[tuple[str, int]]


def warn_if_large(
    ref: CheckpointRef, size: int, entries: Iterable[ChannelValue], warn_bytes: int, max_bytes: int
) -> None:
    """Log one WARNING per thread and process when a checkpoint `put` builds is
    `warn_bytes` or more (`state_warn_bytes`; 0: never), naming its largest channels."""
    if not warn_bytes or size < warn_bytes or ref.thread_id in _warned_threads:
        return
    _warned_threads[ref.thread_id] = None
    if len(_warned_threads) > _WARNED_THREADS_MAX:
        _warned_threads.popitem(last=False)
    largest = ", ".join(
        f"{channel!r} {_mib(bytes_)}"
        for channel, bytes_ in largest_channels(entries)[:_LARGEST_NAMED]
    )
    logger.warning(
        "checkpoint %r of thread %r (namespace %r) is %s as stored, over state_warn_bytes "
        "(%s), on its way to state_max_bytes (%s), where put is refused; largest channels: "
        "%s. Keep large values out of the state (or trim it: RemoveMessage, keep_last), or "
        "raise the limits; the put succeeded, and this thread is not warned about again "
        "in this process",
        str(ref.checkpoint_id),
        ref.thread_id,
        ref.checkpoint_ns,
        _mib(size),
        _mib(warn_bytes),
        _mib(max_bytes),
        largest or "none",
    )
