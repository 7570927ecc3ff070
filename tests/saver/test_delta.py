"""`get_delta_channel_history` against the base class's contract, and DeltaChannel graphs."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from langgraph.checkpoint.mongo import MongoDBSaver
from langgraph.checkpoint.mongo._commands import Command
from support.backends import Backend, CommandLog
from support.graphs import Driver, chat_graph
from support.helpers import checkpoint, config, either, methods, new_thread, read_commands

_versions = itertools.count(1)


async def put_versioned(
    saver: Any, thread: str, parent: str | None, values: dict[str, Any] | None = None
) -> str:
    """A put whose channel versions are unique, so InMemorySaver's blobs never collide."""
    cp = checkpoint(values)
    cp["channel_versions"] = {k: next(_versions) for k in values or {}}
    md = {"source": "loop", "step": 0, "parents": {}}
    stored = await either(saver).put(config(thread, "", parent), cp, md, cp["channel_versions"])
    return str(stored["configurable"]["checkpoint_id"])


async def build_tree(saver: Any, thread: str) -> dict[str, str]:
    """root(a stored) -> c1 -> c2(b snapshot) -> c3 -> c4, and a fork c2 -> f3."""
    ids: dict[str, str] = {}
    ids["root"] = await put_versioned(saver, thread, None, {"a": [0], "plain": "p"})
    ids["c1"] = await put_versioned(saver, thread, ids["root"], {"plain": "p"})
    ids["c2"] = await put_versioned(saver, thread, ids["c1"], {"b": _DeltaSnapshot(["B"])})
    ids["c3"] = await put_versioned(saver, thread, ids["c2"])
    ids["f3"] = await put_versioned(saver, thread, ids["c2"])
    ids["c4"] = await put_versioned(saver, thread, ids["c3"])

    async def write(at: str, writes: list[tuple[str, Any]], task: str, path: str = "") -> None:
        await either(saver).put_writes(config(thread, "", ids[at]), writes, task, path)

    await write("root", [("a", "r1")], "t0")
    # Within a checkpoint: task_path, then task_id, then idx decide the order.
    await write("c1", [("a", "c1-late"), ("b", "ignored-before-seed")], "t9", "~p2")
    await write("c1", [("a", "c1-early-0"), ("a", "c1-early-1")], "t1", "~p1")
    await write("c1", [("a", "c1-no-path")], "tz")
    await write("c2", [("a", "c2"), ("b", "b-at-seed")], "t1", "~p1")
    await write("c3", [("a", "c3"), ("b", "b-after-seed")], "t1", "~p1")
    await write("f3", [("a", "fork-only")], "t1", "~p1")
    await write("c4", [("a", "target-own")], "t1", "~p1")
    return ids


async def delta(saver: Any, cfg: Any, channels: list[str]) -> Any:
    return await either(saver).get_delta_channel_history(config=cfg, channels=channels)


async def base_delta(saver: Any, cfg: Any, channels: list[str]) -> Any:
    """The base class's walk, one get_tuple per ancestor: the contract's reference."""
    if isinstance(saver, MongoDBSaver):
        return BaseCheckpointSaver.get_delta_channel_history(saver, config=cfg, channels=channels)
    return await BaseCheckpointSaver.aget_delta_channel_history(
        saver, config=cfg, channels=channels
    )


CHANNELS = ["a", "b", "never", "plain"]


async def test_history_matches_base_walk_and_in_memory(saver: Any) -> None:
    thread = new_thread()
    ids = await build_tree(saver, thread)
    memory = InMemorySaver()
    memory_ids = await build_tree(memory, thread)  # same shape, other ids

    for name in ("c4", "f3", "c2", "c1", "root"):
        cfg = config(thread, "", ids[name])
        got = await delta(saver, cfg, CHANNELS)
        assert got == await base_delta(saver, cfg, CHANNELS), name
        in_memory = config(thread, "", memory_ids[name])
        assert got == memory.get_delta_channel_history(config=in_memory, channels=CHANNELS), name
    latest = await delta(saver, config(thread), CHANNELS)
    assert latest == await delta(saver, config(thread, "", ids["c4"]), CHANNELS)

    got = await delta(saver, config(thread, "", ids["c4"]), CHANNELS)
    mem = memory.get_delta_channel_history(config=config(thread), channels=CHANNELS)
    assert got == mem
    assert [w[2] for w in got["a"]["writes"]] == [
        "r1",  # the seed ancestor's own writes are included
        "c1-no-path",  # no task path sorts first
        "c1-early-0",
        "c1-early-1",
        "c1-late",
        "c2",
        "c3",  # the target's own write is excluded
    ]
    assert got["a"]["seed"] == [0]
    assert got["b"] == {
        "writes": [("t1", "b", "b-at-seed"), ("t1", "b", "b-after-seed")],
        "seed": _DeltaSnapshot(["B"]),
    }
    assert got["never"] == {"writes": []}  # the walk reached the root: no seed key
    assert got["plain"] == {"writes": [], "seed": "p"}

    fork = await delta(saver, config(thread, "", ids["f3"]), ["a"])
    assert [w[2] for w in fork["a"]["writes"]][-1] == "c2"  # c3 is not on the fork's path
    assert "fork-only" not in [w[2] for w in fork["a"]["writes"]]


async def test_history_edge_cases(saver: Any) -> None:
    thread = new_thread()
    ids = await build_tree(saver, thread)
    assert await delta(saver, config(thread, "", ids["c4"]), []) == {}
    unknown = await delta(saver, config(thread, "", "no-such-id"), ["a"])
    assert unknown == {"a": {"writes": []}}
    assert await delta(saver, config(new_thread()), ["a"]) == {"a": {"writes": []}}
    assert await delta(saver, config(thread, "other-ns"), ["a"]) == {"a": {"writes": []}}
    with pytest.raises(TypeError, match="channels"):
        await delta(saver, config(thread), "a")  # type: ignore[arg-type]


async def test_history_costs_its_lineage_and_one_read(counting: Backend) -> None:
    log = CommandLog()
    async with counting.saver(log) as saver:
        thread = new_thread()
        parent = await put_versioned(saver, thread, None, {"a": []})
        # Longer than a default first batch (101 documents): still no getMore.
        for i in range(120):
            parent = await put_versioned(saver, thread, parent)
            await either(saver).put_writes(config(thread, "", parent), [("a", i)], "t")
        log.reset()
        got = await delta(saver, config(thread), ["a"])
        # The lineage, then the chain with its writes: one aggregation (SecantusDB: the
        # writes apart, by one find more).
        assert log.names == ["find", *read_commands(saver)]
        assert [w[2] for w in got["a"]["writes"]] == list(range(119))


async def test_history_follows_parents_whatever_their_ids(saver: Any) -> None:
    """Ids usually grow along a thread, but the contract is the parent chain: a parent
    whose id sorts after its child's (another writer's clock, custom ids) still counts."""
    thread = new_thread()
    md = {"source": "loop", "step": 0, "parents": {}}
    parent: str | None = None
    for checkpoint_id, values in (("z-root", {"a": ["seed"]}), ("m-mid", None), ("a-leaf", None)):
        cp = checkpoint(values, id=checkpoint_id)
        await either(saver).put(config(thread, "", parent), cp, md, {})
        if parent is not None:
            await either(saver).put_writes(config(thread, "", parent), [("a", parent)], "t")
        parent = checkpoint_id
    got = await delta(saver, config(thread, "", "a-leaf"), ["a"])
    assert got == await base_delta(saver, config(thread, "", "a-leaf"), ["a"])
    assert got["a"] == {"writes": [("t", "a", "z-root"), ("t", "a", "m-mid")], "seed": ["seed"]}


def delta_chat(checkpointer: Any, sync: bool) -> Driver:
    """The chat graph with its messages a `DeltaChannel` snapshotted every 15 updates."""
    graph = chat_graph("delta", snapshot_frequency=15).compile(checkpointer=checkpointer)
    return Driver(graph, sync)


async def run_chat(graph: Driver, thread: str, turns: int) -> None:
    for turn in range(turns):
        cfg = {**config(thread), "metadata": {"run_id": f"run-{turn:03d}"}}
        await graph.invoke({"messages": [HumanMessage(f"turn {turn}", id=f"h-{turn}")]}, cfg)


async def test_forty_turn_delta_chat_matches_memory(
    backend: Backend, sent_commands: list[Command]
) -> None:
    log = CommandLog()
    thread = new_thread()
    memory_graph = delta_chat(InMemorySaver(), sync=False)
    await run_chat(memory_graph, thread, 40)
    expected = await memory_graph.state(config(thread))
    async with backend.saver(log) as saver:
        graph = delta_chat(saver, backend.is_sync)
        await run_chat(graph, thread, 40)
        log.reset()
        sent_commands.clear()
        state = await graph.state(config(thread))
        assert state.values == expected.values
        assert len(state.values["messages"]) == 80
        assert state.next == expected.next
        # One read of the checkpoint, then at most two for the delta history (its
        # lineage and one read: each read one command, or two on SecantusDB).
        most = 1 + 2 * len(read_commands(saver))
        assert len(sent_commands) <= most, methods(sent_commands)
        assert log.count() <= most, log.names  # no getMore either (empty on the mock)


async def states_by_id(graph: Driver, thread: str) -> dict[str, Any]:
    """Every checkpoint of the thread, rebuilt one by one through `get_state`."""
    found = {}
    for snapshot in await graph.history(config(thread)):
        rebuilt = await graph.state(snapshot.config)
        found[snapshot.config["configurable"]["checkpoint_id"]] = rebuilt.values
    return found


@pytest.mark.soak
async def test_prune_delete_for_runs_and_copy_keep_delta_threads_whole(backend: Backend) -> None:
    async with backend.saver() as saver:
        graph = delta_chat(saver, backend.is_sync)
        thread = new_thread()
        await run_chat(graph, thread, 20)  # snapshots every 15 updates
        before = await states_by_id(graph, thread)
        latest = await graph.state(config(thread))
        assert len(latest.values["messages"]) == 40

        copy = new_thread()
        await either(saver).copy_thread(thread, copy)
        assert await states_by_id(graph, copy) == before

        # Delete the runs of turns 5..9: later checkpoints still rebuild from them.
        snapshots = await graph.history(config(thread))
        runs = sorted({s.metadata["run_id"] for s in snapshots if s.metadata is not None})
        assert len(runs) == 20
        await either(saver).delete_for_runs(runs[5:10])
        after = await states_by_id(graph, thread)
        assert after, "nothing survived"
        for checkpoint_id, values in after.items():
            assert values == before[checkpoint_id]
        # The last run's checkpoints survive; deleted runs' unneeded ones are gone.
        assert set(after) < set(before)

        await either(saver).prune([copy], strategy="keep_latest")
        pruned = await graph.state(config(copy))
        assert pruned.values == latest.values
        remaining = await graph.history(config(copy))
        assert 1 < len(remaining) < len(before)  # ancestors back to the snapshot only


async def test_history_of_an_undeclared_channel_past_a_prune_says_a_retry_cannot_help(
    saver: Any, sent_commands: list[Command]
) -> None:
    """Checkpoints that never declare "c" a `DeltaChannel` keep no ancestors for it
    through `prune`: its history reaches a checkpoint that is gone for good. That was a
    `ThreadChangedError` after three reads ("a concurrent delete or prune; try again")."""
    from support.helpers import put

    thread, parent = new_thread(), None
    for i in range(5):
        stored = await put(saver, thread, parent=parent)
        await either(saver).put_writes(stored, [("c", i)], "t")
        parent = stored["configurable"]["checkpoint_id"]
    await either(saver).prune([thread], keep_last=2)
    sent_commands.clear()
    with pytest.raises(ValueError, match="a retry cannot help") as refused:
        await either(saver).get_delta_channel_history(config=stored, channels=["c"])
    assert str(refused.value).startswith(
        f"get_delta_channel_history: thread {thread!r}, namespace '', checkpoint "
        f"{parent!r}: the history of ['c'] reaches ancestor "
    )
    assert methods(sent_commands) == ["find"]  # the lineage, read once: no retries
