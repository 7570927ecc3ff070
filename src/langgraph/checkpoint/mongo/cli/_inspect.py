"""One checkpoint as the operator sees it without the graph that wrote it (its state,
the nodes that run next, its interrupts), and what changed between two checkpoints.

A `DeltaChannel`'s value is rebuilt from its `seed` and the writes since; the reducer is
the graph's, so here lists of messages get `add_messages` (by id), other lists are
concatenated, and anything else is shown as seed and writes (`Unrebuilt`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple, DeltaChannelHistory
from langgraph.checkpoint.serde.types import INTERRUPT, TASKS

from langgraph.checkpoint.mongo._langgraph_serde import DeltaSnapshot
from langgraph.checkpoint.mongo._metadata import DELTA_COUNTERS
from langgraph.checkpoint.mongo.cli import _serde
from langgraph.checkpoint.mongo.sync import MongoDBSaver

START = "__start__"
BRANCH_PREFIX = "branch:to:"


@dataclass(frozen=True)
class Unrebuilt:
    """A `DeltaChannel` value this view cannot reduce: its seed (or None) and the writes
    since, oldest first."""

    seed: Any
    writes: list[Any]


@dataclass
class State:
    """A checkpoint as the operator reads it: `values`, the graph's channels (LangGraph's
    own, which say what runs next, left out) with `DeltaChannel`s rebuilt."""

    item: CheckpointTuple
    values: dict[str, Any]
    next: list[str]
    interrupts: list[dict[str, Any]]

    @property
    def checkpoint_id(self) -> str:
        return str(self.item.config["configurable"]["checkpoint_id"])


def load(saver: MongoDBSaver, item: CheckpointTuple, thread_id: str) -> State:
    """`item` with its `DeltaChannel`s rebuilt (one `get_delta_channel_history`, if any),
    or the error that says which key is missing."""
    _serde.require_key(item, f"thread {thread_id!r}")
    checkpoint = item.checkpoint
    stored = checkpoint["channel_values"]
    values = {k: v for k, v in stored.items() if not k.startswith(("__", BRANCH_PREFIX))}
    for channel, value in values.items():
        if isinstance(value, DeltaSnapshot):
            values[channel] = value.value
    # The `DeltaChannel`s: those whose updates LangGraph counts in the metadata.
    counters = item.metadata.get(DELTA_COUNTERS)
    counted = sorted(counters) if isinstance(counters, dict) else []
    replayed = [c for c in counted if c in checkpoint["channel_versions"] and c not in stored]
    for channel in counted:
        # Never written: LangGraph reads it as its type's empty value, here a list.
        values.setdefault(channel, [])
    if replayed:
        histories = saver.get_delta_channel_history(config=item.config, channels=replayed)
        for channel, history in histories.items():
            values[channel] = rebuild(history)
    return State(item, dict(sorted(values.items())), next_nodes(checkpoint), interrupts(item))


def rebuild(history: DeltaChannelHistory) -> Any:
    """A value as `replay_writes` rebuilds it: the last `Overwrite` resets, later writes reduce."""
    # LangGraph itself comes with the `cli` extra: every other command runs without it.
    from langgraph.graph.message import add_messages
    from langgraph.types import Overwrite

    seed = history.get("seed")
    if isinstance(seed, DeltaSnapshot):
        seed = seed.value
    writes = [value for _, _, value in history["writes"]]
    base = seed
    for i, value in enumerate(writes):
        if isinstance(value, Overwrite):
            base, writes = value.value, writes[i + 1 :]
    if base is None:
        base = []
    if not isinstance(base, list) or not all(isinstance(w, list) for w in writes):
        return Unrebuilt(seed, writes)
    flat = [entry for write in writes for entry in write]
    if any(isinstance(entry, BaseMessage) for entry in [*base, *flat]):
        return add_messages(base, flat)
    return [*base, *flat]


def next_nodes(checkpoint: Checkpoint) -> list[str]:
    """LangGraph's rule for a `StateGraph`: pending `Send`s, then (by name) each node whose
    trigger (`branch:to:NODE`, `__start__`) has a version newer than the node has seen."""
    values = checkpoint["channel_values"]
    versions = checkpoint["channel_versions"]
    seen = checkpoint["versions_seen"]
    sends = values.get(TASKS) or []
    found = [str(getattr(send, "node", send)) for send in sends]
    triggered = []
    for channel in values:
        if channel != START and not channel.startswith(BRANCH_PREFIX):
            continue
        node = channel.removeprefix(BRANCH_PREFIX)
        read = seen.get(node, {}).get(channel)
        try:
            newer = read is None or versions.get(channel) > read  # type: ignore[operator]
        except TypeError:  # versions of two kinds: LangGraph would not compare them
            newer = False
        if newer:
            triggered.append(node)
    return found + sorted(triggered)


def interrupts(item: CheckpointTuple) -> list[dict[str, Any]]:
    """The interrupts raised at this checkpoint: LangGraph writes a task's `interrupt()`s
    to its pending writes, as one sequence."""
    return [
        {"value": getattr(each, "value", each), "id": getattr(each, "id", None), "task_id": task}
        for task, channel, value in item.pending_writes or []
        if channel == INTERRUPT
        for each in (value if isinstance(value, (list, tuple)) else [value])
    ]


def diff(old: State, new: State) -> dict[str, Any]:
    """Per channel that differs: `added` or `removed` (with its value), or `changed`:
    lists of messages by id (`messages`), other values whole (`from`, `to`)."""
    changes: dict[str, Any] = {}
    for channel in sorted(old.values.keys() | new.values.keys()):
        if channel not in old.values:
            changes[channel] = {"change": "added", "value": new.values[channel]}
        elif channel not in new.values:
            changes[channel] = {"change": "removed", "value": old.values[channel]}
        elif old.values[channel] != new.values[channel]:
            before, after = old.values[channel], new.values[channel]
            if _messages(before) and _messages(after):
                changes[channel] = {"change": "changed", "messages": _by_id(before, after)}
            else:
                changes[channel] = {"change": "changed", "from": before, "to": after}
    return changes


def _messages(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(m, BaseMessage) and m.id is not None for m in value
    )


def _by_id(before: list[BaseMessage], after: list[BaseMessage]) -> dict[str, list[Any]]:
    old = {m.id: m for m in before}
    new = {m.id: m for m in after}
    return {
        "added": [m for m in after if m.id not in old],
        "removed": [m for m in before if m.id not in new],
        "edited": [
            {"id": m.id, "from": old[m.id], "to": m}
            for m in after
            if m.id in old and old[m.id] != m
        ],
    }
