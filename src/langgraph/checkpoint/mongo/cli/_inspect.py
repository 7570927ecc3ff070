"""The operator's view of one checkpoint, without the graph that wrote it: its state as
LangGraph loads it, the nodes that run next, the interrupts it waits on; and what
changed between two checkpoints.

A `DeltaChannel` stores its value only every few updates; LangGraph rebuilds the rest
from the saver's `get_delta_channel_history` (the nearest stored value, the `seed`, and
the writes since) through the channel's reducer. The reducer is the graph's; here, the
one every `DeltaChannel` of messages uses is applied (`add_messages`, messages by id), and
list concatenation to other lists. A channel whose writes are neither is shown as its
seed and writes (`Unrebuilt`).

What runs next is LangGraph's rule for a `StateGraph`: a node whose trigger channel
(`branch:to:NODE`, or `__start__`) holds a version newer than the node has seen, and a
`Send` pending in `__pregel_tasks`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple, DeltaChannelHistory
from langgraph.checkpoint.serde.types import INTERRUPT, TASKS

from langgraph.checkpoint.mongo._langgraph_serde import DeltaSnapshot
from langgraph.checkpoint.mongo._metadata import DELTA_COUNTERS
from langgraph.checkpoint.mongo.sync import MongoDBSaver

START = "__start__"
BRANCH_PREFIX = "branch:to:"


@dataclass(frozen=True)
class Unrebuilt:
    """A `DeltaChannel` value rebuilt by a reducer this view does not know: its seed
    (`None` for none) and the writes since, oldest first."""

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


def load(saver: MongoDBSaver, item: CheckpointTuple) -> State:
    """`item` (as `get_tuple` or `list` read it) with its `DeltaChannel`s rebuilt: one
    `get_delta_channel_history` when any needs it."""
    checkpoint = item.checkpoint
    stored = checkpoint["channel_values"]
    values = {k: v for k, v in stored.items() if _is_state(k)}
    for channel, value in values.items():
        if isinstance(value, DeltaSnapshot):
            values[channel] = value.value
    counted = delta_channels(item)
    replayed = [c for c in counted if c in checkpoint["channel_versions"] and c not in stored]
    for channel in counted:
        # Never written: LangGraph reads it as its type's empty value (a list, as the
        # DeltaChannels of messages and logs are).
        values.setdefault(channel, [])
    if replayed:
        histories = saver.get_delta_channel_history(config=item.config, channels=replayed)
        for channel, history in histories.items():
            values[channel] = rebuild(history)
    return State(item, dict(sorted(values.items())), next_nodes(checkpoint), interrupts(item))


def _is_state(channel: str) -> bool:
    return not channel.startswith(("__", BRANCH_PREFIX))


def delta_channels(item: CheckpointTuple) -> list[str]:
    """The checkpoint's `DeltaChannel`s: those LangGraph counts updates of in the
    metadata (`counters_since_delta_snapshot`)."""
    counters = item.metadata.get(DELTA_COUNTERS)
    return sorted(counters) if isinstance(counters, dict) else []


def rebuild(history: DeltaChannelHistory) -> Any:
    """A `DeltaChannel`'s value from its seed and the writes since, as `replay_writes`
    does: the last `Overwrite` resets it, the writes after it are reduced."""
    # LangGraph itself (not only langgraph-checkpoint) is the `cli` extra's: every other
    # command runs without it.
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
    """The nodes LangGraph runs from this checkpoint (a `StateGraph`'s): `Send`s first,
    then triggered nodes by name."""
    values = checkpoint["channel_values"]
    versions = checkpoint["channel_versions"]
    seen = checkpoint["versions_seen"]
    sends = values.get(TASKS) or []
    found = [str(getattr(send, "node", send)) for send in sends]
    triggered = []
    for channel in values:
        if channel == START:
            node = START
        elif channel.startswith(BRANCH_PREFIX):
            node = channel.removeprefix(BRANCH_PREFIX)
        else:
            continue
        read = seen.get(node, {}).get(channel)
        try:
            newer = read is None or versions.get(channel) > read  # type: ignore[operator]
        except TypeError:  # versions of two kinds: LangGraph would not compare them
            newer = False
        if newer:
            triggered.append(node)
    return found + sorted(triggered)


def interrupts(item: CheckpointTuple | None) -> list[dict[str, Any]]:
    """The interrupts raised at this checkpoint: those its pending writes hold
    (LangGraph writes a task's `interrupt()`s there, as one sequence, and resumes from
    them)."""
    return [
        {"value": getattr(each, "value", each), "id": getattr(each, "id", None), "task_id": task}
        for task, channel, value in ((item.pending_writes or []) if item else [])
        if channel == INTERRUPT
        for each in (value if isinstance(value, (list, tuple)) else [value])
    ]


def diff(old: State, new: State) -> dict[str, Any]:
    """Per channel that differs: `added` or `removed` (with its value), or `changed`;
    lists of messages by message id (`messages`: added, removed, edited), other values
    whole (`from`, `to`)."""
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
