"""A channel is stored as it was when it changed, not as it is when `put` runs.

LangGraph hands `put` live channel objects; with `durability="async"` a `put` runs
after the next step has started mutating them (a join barrier's `seen` set). A channel
not in `new_versions` must be stored with the bytes its parent stored for it.
"""

from __future__ import annotations

import asyncio
import operator
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._channel_values import DEFAULT_CACHE_MAX_BYTES, RecentValues
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._commands import Command, Detach
from langgraph.checkpoint.mongo._queries import WritesJoin
from langgraph.checkpoint.mongo._runners import run_plan
from support.backends import Backend, CommandLog
from support.graphs import Driver
from support.helpers import checkpoint, config, either, methods, new_thread, read_commands

TURNS = 4
CONVERSATIONS = 3


class JoinState(TypedDict, total=False):
    count: Annotated[int, operator.add]
    done: Annotated[list[str], operator.add]


def join_graph(checkpointer: Any) -> Any:
    """`a`, `b`, `c` run in parallel and meet in `join` (a barrier channel) every turn."""

    def branch(state: JoinState) -> JoinState:
        return {"count": 1}

    def join(state: JoinState) -> JoinState:
        return {"done": [f"join{len(state.get('done', []))}:{state['count']}"]}

    builder: StateGraph[Any] = StateGraph(JoinState)
    for name in "abc":
        builder.add_node(name, branch)
        builder.add_edge(START, name)
    builder.add_node("join", join)
    builder.add_edge(["a", "b", "c"], "join")
    return builder.compile(checkpointer=checkpointer)


def expected_done(turns: int) -> list[str]:
    return [f"join{i}:{3 * (i + 1)}" for i in range(turns)]


def shape(history: list[Any]) -> list[tuple[Any, ...]]:
    """What must match between savers: step, next nodes and values of each checkpoint."""
    return [
        (s.metadata["step"], s.next, s.values.get("count"), s.values.get("done")) for s in history
    ]


async def _run_conversations(graph: Any, threads: list[str], sync: bool) -> None:
    if sync:

        def turns(thread: str) -> None:
            for _ in range(TURNS):
                graph.invoke({"count": 0}, config(thread))

        with ThreadPoolExecutor(len(threads)) as pool:
            for future in [pool.submit(turns, thread) for thread in threads]:
                future.result()
        return

    async def aturns(thread: str) -> None:
        for _ in range(TURNS):
            await graph.ainvoke({"count": 0}, config(thread))

    await asyncio.gather(*(aturns(thread) for thread in threads))


async def test_concurrent_joins_store_each_step_as_it_was(backend: Backend) -> None:
    """Three conversations at once, with latency on the server so that each `put`
    lands after the next step began: every stored checkpoint, and a replay from the
    one before the last join, match `InMemorySaver`'s."""
    memory_graph = join_graph(InMemorySaver())
    for _ in range(TURNS):
        memory_graph.invoke({"count": 0}, config("memory"))
    expected = shape(list(memory_graph.get_state_history(config("memory"))))
    assert memory_graph.get_state(config("memory")).values["done"] == expected_done(TURNS)

    sync = backend.is_sync
    async with backend.saver() as saver:
        graph = join_graph(saver)
        threads = [new_thread() for _ in range(CONVERSATIONS)]
        if backend.wire is not None:
            backend.wire.delay = 0.005
        try:
            await _run_conversations(graph, threads, sync)
        finally:
            if backend.wire is not None:
                backend.wire.delay = 0.0
        for thread in threads:
            history = await Driver(graph, sync).history(config(thread))
            assert shape(history) == expected, thread
            before_last_join = next(s for s in history if s.next == ("join",))
            replayed = await Driver(graph, sync).invoke(None, before_last_join.config)
            assert replayed["done"] == expected_done(TURNS), thread


@pytest.mark.parametrize("cache_max_bytes", [DEFAULT_CACHE_MAX_BYTES, 0])
async def test_unchanged_channel_keeps_its_parent_bytes(
    backend: Backend, cache_max_bytes: int
) -> None:
    """A value mutated after its channel last changed is stored as it was then, also with
    the value cache off (`put` then reads the parent's bytes)."""
    async with backend.saver(cache_max_bytes=cache_max_bytes) as saver:
        thread = new_thread()
        seen = {"a"}
        first = checkpoint({"barrier": seen, "other": 1})
        stored = await either(saver).put(
            config(thread), first, {"step": 0}, first["channel_versions"]
        )
        seen.add("b")  # the next step mutates the live object before the next put runs
        second = checkpoint({"barrier": seen, "other": 2})
        second["channel_versions"] = {"barrier": 1, "other": 2}
        await either(saver).put(stored, second, {"step": 1}, {"other": 2})
        got = await either(saver).get_tuple(config(thread))
        assert got is not None
        assert got.checkpoint["id"] == second["id"]
        assert got.checkpoint["channel_values"] == {"barrier": {"a"}, "other": 2}
        assert bool(saver.storage.recent._entries) == (cache_max_bytes > 0)


async def test_parent_bytes_are_read_when_another_process_wrote_the_parent(
    backend: Backend, sent_commands: list[Command]
) -> None:
    """On a cache miss (the parent written by another saver, or evicted) the parent's
    stored bytes are read in one extra round trip; a changed channel is serialized."""
    log = CommandLog()
    async with backend.saver(log) as writer:
        thread = new_thread()
        first = checkpoint({"barrier": {"a"}, "other": 1})
        stored = await either(writer).put(
            config(thread), first, {"step": 0}, first["channel_versions"]
        )
        async with backend.saver(db_name=writer.db.name) as other:
            second = checkpoint({"barrier": {"a", "b"}, "other": 2})
            second["channel_versions"] = {"barrier": 1, "other": 2}
            sent_commands.clear()
            await either(other).put(stored, second, {"step": 1}, {"other": 2})
            assert methods(sent_commands) == ["find", "update_one"]
            got = await either(other).get_tuple(config(thread))
            assert got is not None
            assert got.checkpoint["channel_values"] == {"barrier": {"a"}, "other": 2}
            # A channel whose version differs from the parent's is serialized afresh.
            third = checkpoint({"barrier": {"a", "c"}})
            third["channel_versions"] = {"barrier": 3}
            parent = got.config
            await either(other).put(parent, third, {"step": 2}, {})
            got = await either(other).get_tuple(config(thread))
            assert got is not None
            assert got.checkpoint["channel_values"] == {"barrier": {"a", "c"}}


async def test_a_graph_turn_sends_no_extra_read_for_parents(counting: Backend) -> None:
    """The parent of every `put` of a turn is the checkpoint read or written just
    before it, so the cache serves it: the turn's round trips stay as they were."""
    log = CommandLog()
    async with counting.saver(log) as saver:
        graph = join_graph(saver)
        thread = new_thread()
        await _run_conversations(graph, [thread], counting.is_sync)
        log.reset()
        await Driver(graph, counting.is_sync).invoke({"count": 0}, config(thread))
        reads = read_commands(saver)  # the turn's get_tuple
        assert [name for name in log.names if name in ("aggregate", "find")] == reads


def test_put_remembers_the_versions_it_stored_not_what_the_caller_changes_meanwhile() -> None:
    """The cache pairs a checkpoint's stored entries with the versions they were stored
    at, copied before the command runs: the caller's `channel_versions` may move on while
    it does (a caller other than LangGraph, which hands `put` a copy)."""
    codec, thread = Codec(JsonPlusSerializer()), new_thread()
    storage = ops.Storage(codec, WritesJoin("writes"), None, RecentValues())
    first = checkpoint({"c": "old"})

    def moving_on(command: Command | Detach) -> None:
        if isinstance(command, Command) and command.method == "update_one":
            first["channel_versions"]["c"] = 2

    stored = run_plan(ops.put(storage, config(thread), first, {}, {"c": 1}), moving_on)
    second = checkpoint({"c": "new"})
    second["channel_versions"] = {"c": 2}
    sent: list[Command | Detach] = []
    run_plan(ops.put(storage, stored, second, {}, {}), sent.append)
    [update] = [c for c in sent if isinstance(c, Command) and c.method == "update_one"]
    [entry] = update.args[1]["$set"]["channel_values"]
    assert codec.decode(entry) == "new"  # not the parent's bytes, stored at version 1
