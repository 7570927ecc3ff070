"""Exceptions the savers raise beyond the driver's own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.mongo._keys import namespace_label, short_repr


class CheckpointTooLargeError(ValueError):
    """A checkpoint or pending write is larger than the saver's `state_max_bytes`, or
    what of it cannot move to chunk documents (metadata, ids, the checkpoint's own
    fields) exceeds MongoDB's 16 MiB document limit.

    Raised before anything is sent, so the previous checkpoint stays the latest and
    nothing is half-written. Opt-in compression (`compression="zstd"`), a larger
    `state_max_bytes`, or keeping large payloads out of the graph state are the fixes.
    """

    def __init__(
        self,
        what: str,
        *,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        size: int,
        limit: int,
        compression: str | None = None,
        option: str | None = None,
    ) -> None:
        self.thread_id, self.checkpoint_ns = thread_id, checkpoint_ns
        self.checkpoint_id, self.size, self.limit = checkpoint_id, size, limit
        over = (
            f"over this saver's {option}={limit}"
            if option
            else f"over MongoDB's limit of {limit} bytes per document"
        )
        # Compression is advised only to a saver that does not compress already.
        remedies = [] if compression else ["enable compression='zstd'"]
        remedies += [f"raise {option}"] if option else []
        remedies.append("keep large payloads out of the graph state")
        fix = (
            remedies[-1] if len(remedies) == 1 else f"{', '.join(remedies[:-1])} or {remedies[-1]}"
        )
        if compression:
            fix = f"The saver already compresses (compression={compression!r}): {fix}"
        else:
            fix = fix[0].upper() + fix[1:]
        super().__init__(
            f"{what} of {namespace_label(thread_id, checkpoint_ns)}, checkpoint "
            f"{short_repr(checkpoint_id)} encodes to {size} bytes, {over}; nothing was "
            f"written. {fix}."
        )


# The server's codes for a user who lacks a privilege (`Unauthorized`), and for
# credentials it does not accept (`AuthenticationFailed`).
UNAUTHORIZED = 13
AUTHENTICATION_FAILED = 18
_OPERATIONS_DOCS = (
    "https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/operations/"
    "#mongodb-compatible-services"
)


def server_message(error: BaseException) -> str:
    """What the server said (its `errmsg`), without the reply document PyMongo appends."""
    details = getattr(error, "details", None)
    message = details.get("errmsg") if isinstance(details, Mapping) else None
    return str(message) if message else str(error)


class IndexCreationError(RuntimeError):
    """`setup()` could not create an index; names the index, its collection and the fix.

    MongoDB-compatible services refuse some index kinds, and a user may lack the `createIndex`
    privilege. `setup(skip_indexes=...)` or `setup(create_indexes=False)` skip them; create
    equivalents by hand where possible. `unauthorized`: the user may not create indexes at all.
    """

    def __init__(self, collection: str, index: Mapping[str, Any], cause: Exception) -> None:
        self.collection = collection
        self.index = dict(index)
        self.unauthorized = getattr(cause, "code", None) == UNAUTHORIZED
        name = index.get("name")
        if self.unauthorized:
            super().__init__(
                f"setup() may not create indexes on collection {collection!r} (the user "
                f"lacks the createIndex privilege: {server_message(cause)}): have them "
                "created by a user who may, then call setup(create_indexes=False) before the "
                "saver's first command (which otherwise runs setup() itself), once per "
                f"process; see {_OPERATIONS_DOCS}"
            )
            return
        super().__init__(
            f"setup() could not create index {name!r} {dict(index.get('key', {}))} on "
            f"collection {collection!r}: {cause}. If your service refuses this kind of index "
            f"(some MongoDB-compatible services do), call setup(skip_indexes={{{name!r}}}) "
            "and create an equivalent index yourself, or setup(create_indexes=False), "
            f"before the saver's first command (which otherwise runs setup() itself); see "
            f"{_OPERATIONS_DOCS}"
        )


class CheckpointCycleError(ValueError):
    """A thread's parent chain loops back through two or more checkpoints, so no walk
    over it can finish.

    A checkpoint that names itself as its parent (`put` under a config that already named
    it, as `InMemorySaver` allows) is no loop: walks take it for the root of its chain.
    Longer loops come only from data written by other tools (a migration passing
    `t.config` where `t.parent_config` belonged); `delete_thread` removes such a thread.
    """

    def __init__(self, thread_id: str, checkpoint_ns: str, cycle: list[str]) -> None:
        self.thread_id, self.checkpoint_ns, self.cycle = thread_id, checkpoint_ns, cycle
        super().__init__(
            f"the parent chain of {namespace_label(thread_id, checkpoint_ns)} loops: "
            f"{' -> '.join(short_repr(c) for c in cycle)}; the stored data is inconsistent "
            "(a checkpoint cannot be its own ancestor). Delete the thread or repair its "
            "parent_checkpoint_id fields."
        )


class ThreadChangedError(RuntimeError):
    """A multi-read operation saw the thread change under it (a concurrent delete or prune)
    on every attempt; retrying the call later is safe."""
