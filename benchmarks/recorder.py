"""Record the exact `put` / `put_writes` calls a graph run makes, to replay them.

The storage measurement runs the chat graph once per channel kind on a
`RecordingSaver` and replays the recorded calls into every saver, so every saver
stores the same checkpoints (and the official saver, which rebuilds a DeltaChannel
one `get_tuple` per ancestor, does not need an hour of mongomock scans for 500 turns).

`RecordingSaver` keeps one thread in memory as Python objects, without serializing:
LangGraph's reducers here (`add_messages`, `_messages_delta_reducer`) return new
lists and the graph never mutates a message, so the objects kept stay as they were
stored. It uses `BaseCheckpointSaver`'s integer channel versions, as both MongoDB
savers do (`InMemorySaver`'s long string versions would inflate every checkpoint).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
    get_checkpoint_id,
    writes_sort_key,
)

Call = tuple[str, tuple[Any, ...]]


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


class RecordingSaver(BaseCheckpointSaver[int]):
    """A one-namespace in-memory saver that records every write call, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        # (thread_id, checkpoint_ns) -> checkpoint id -> (checkpoint, metadata, parent id)
        self._checkpoints: dict[
            tuple[str, str], dict[str, tuple[Checkpoint, CheckpointMetadata, str | None]]
        ] = {}
        # (thread_id, checkpoint_ns, checkpoint id) -> (task_id, idx) -> (task_path, channel, value)
        self._writes: dict[tuple[str, str, str], dict[tuple[str, int], tuple[str, str, Any]]] = {}

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        with self._lock:
            stored_config: RunnableConfig = {"configurable": dict(conf)}
            self.calls.append(
                (
                    "put",
                    (
                        stored_config,
                        copy_checkpoint(checkpoint),
                        dict(metadata),
                        dict(new_versions),
                    ),
                )
            )
            thread = self._checkpoints.setdefault((thread_id, ns), {})
            thread[checkpoint["id"]] = (
                copy_checkpoint(checkpoint),
                CheckpointMetadata(**metadata),
                conf.get("checkpoint_id"),
            )
        return _config(thread_id, ns, checkpoint["id"])

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        conf = config["configurable"]
        key = (conf["thread_id"], conf.get("checkpoint_ns", ""), conf["checkpoint_id"])
        with self._lock:
            self.calls.append(
                ("put_writes", ({"configurable": dict(conf)}, list(writes), task_id, task_path))
            )
            stored = self._writes.setdefault(key, {})
            for position, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, position)
                if idx >= 0 and (task_id, idx) in stored:
                    continue  # a regular write keeps its first value, as in every saver
                stored[(task_id, idx)] = (task_path, channel, value)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        with self._lock:
            thread = self._checkpoints.get((thread_id, ns), {})
            checkpoint_id = get_checkpoint_id(config) or max(thread, default=None)
            if checkpoint_id is None or checkpoint_id not in thread:
                return None
            checkpoint, metadata, parent = thread[checkpoint_id]
            writes = self._writes.get((thread_id, ns, checkpoint_id), {})
            ordered = sorted(writes.items(), key=lambda item: writes_sort_key(item[1][0], *item[0]))
            return CheckpointTuple(
                config=_config(thread_id, ns, checkpoint_id),
                checkpoint=copy_checkpoint(checkpoint),
                metadata=metadata,
                parent_config=_config(thread_id, ns, parent) if parent else None,
                pending_writes=[(task_id, ch, v) for (task_id, _), (_, ch, v) in ordered],
            )

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        raise NotImplementedError("the recorder only serves graph runs")
