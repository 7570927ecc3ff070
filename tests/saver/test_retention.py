"""How many checkpoints a thread keeps: `prune(keep_last=N)`, on every backend."""

from __future__ import annotations

import asyncio
import logging
import math
import os
import signal
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, asynccontextmanager
from functools import partial
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pymongo.errors import AutoReconnect

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, _queries
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._commands import Command as DriverCommand
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._keys import CheckpointRef
from langgraph.checkpoint.mongo._queries import NamespaceCount, WritesJoin
from support.backends import Backend, CommandLog
from support.graphs import (
    CHANNELS,
    Driver,
    Norm,
    chat_graph,
    human,
    linear_graph,
)
from support.helpers import (
    config,
    either,
    ids,
    listed,
    methods,
    new_thread,
    put,
    read_commands,
    settle,
    thread_operations,
)


async def chain(
    saver: Any, thread: str, n: int, ns: str = "", parent: str | None = None
) -> list[str]:
    """`n` checkpoints of one namespace, each the parent of the next (the first of
    `parent`), each with a write."""
    made: list[str] = []
    for _ in range(n):
        stored = await put(saver, thread, ns=ns, parent=made[-1] if made else parent)
        made.append(stored["configurable"]["checkpoint_id"])
        await either(saver).put_writes(stored, [("w", made[-1])], "t")
    return made


async def tuples(saver: Any, thread: str, ns: str, checkpoint_ids: list[str]) -> list[Any]:
    return [await either(saver).get_tuple(config(thread, ns, c)) for c in checkpoint_ids]


async def stored_write_owners(saver: Any, thread: str) -> set[str]:
    """The checkpoint ids that writes are stored for (joined to a checkpoint or not)."""
    docs = await maybe_await(saver.writes_collection.find({"thread_id": thread}).to_list(None))
    return {doc["_id"]["checkpoint"]["checkpoint_id"] for doc in docs}


async def test_keep_last_keeps_the_newest_of_each_namespace_and_their_writes(
    saver: Any,
) -> None:
    thread, other = new_thread(), new_thread()
    root = await chain(saver, thread, 5)
    child = await chain(saver, thread, 3, ns="child:1")
    untouched = await chain(saver, other, 4)
    before_root = await tuples(saver, thread, "", root)
    before_child = await tuples(saver, thread, "child:1", child)
    before_other = await listed(saver, config(other))

    await either(saver).prune([thread], keep_last=2)

    assert await tuples(saver, thread, "", root[-2:]) == before_root[-2:]
    assert await tuples(saver, thread, "child:1", child[-2:]) == before_child[-2:]
    assert await tuples(saver, thread, "", root[:-2]) == [None] * 3
    assert await tuples(saver, thread, "child:1", child[:-2]) == [None]
    # The writes of removed checkpoints went with them.
    assert await stored_write_owners(saver, thread) == {*root[-2:], *child[-2:]}
    assert await listed(saver, config(other)) == before_other
    assert await stored_write_owners(saver, other) == set(untouched)


async def test_keep_last_overrides_strategy_zero_removes_all_and_more_changes_nothing(
    saver: Any, sent_commands: list[DriverCommand]
) -> None:
    thread = new_thread()
    made = await chain(saver, thread, 4)
    before = await listed(saver, config(thread))

    sent_commands.clear()
    await either(saver).prune([thread], strategy="delete", keep_last=4)
    # The checkpoints writes refer to and the lineage are read, then chunks a crash left
    # looked for: nothing to delete.
    assert methods(sent_commands) == ["aggregate", "find", "find"]
    assert await listed(saver, config(thread)) == before
    await either(saver).prune([thread], keep_last=2**63 - 1)  # the largest: everything
    assert await listed(saver, config(thread)) == before

    # The Redis saver's spelling of the same call.
    await either(saver).prune([thread], strategy="keep_last", keep_last=3)
    assert ids(await listed(saver, config(thread))) == made[:0:-1]

    await either(saver).prune([thread], strategy="keep_latest", keep_last=0)
    assert await listed(saver, config(thread)) == []
    assert await stored_write_owners(saver, thread) == set()


@pytest.mark.parametrize(
    ("keep_last", "error", "message"),
    [
        (-1, ValueError, "keep_last must be 0 or more.*got -1"),
        (10**30, ValueError, r"keep_last must be at most 2\*\*63 - 1 \(a BSON int64\), got 10{30}"),
        (True, TypeError, "keep_last must be an int or None, got bool"),
        (1.0, TypeError, "keep_last must be an int or None, got float"),
        ("2", TypeError, "keep_last must be an int or None, got str"),
    ],
)
async def test_bad_keep_last_is_refused_before_anything_is_read(
    saver: Any,
    command_log: CommandLog,
    sent_commands: list[DriverCommand],
    keep_last: Any,
    error: Any,
    message: str,
) -> None:
    thread = new_thread()
    await chain(saver, thread, 2)
    command_log.reset()
    sent_commands.clear()
    with pytest.raises(error, match=message):
        await either(saver).prune([thread], keep_last=keep_last)
    with pytest.raises(error, match=message):
        await either(saver).prune([], keep_last=keep_last)
    assert sent_commands == []
    assert command_log.names == []
    assert len(await listed(saver, config(thread))) == 2


async def test_keep_last_strategy_needs_a_number(saver: Any) -> None:
    with pytest.raises(ValueError, match=r"strategy='keep_last'.*needs keep_last=N"):
        await either(saver).prune([new_thread()], strategy="keep_last")
    with pytest.raises(ValueError, match="strategy must be one of"):
        await either(saver).prune([new_thread()], strategy="keep_lats", keep_last=2)


async def chat(graph: Driver, thread: str, turns: range) -> None:
    for turn in turns:
        message = HumanMessage(f"turn {turn}", id=f"h-{turn}")
        await graph.invoke({"messages": [message]}, config(thread))


async def states_by_id(graph: Driver, thread: str) -> dict[str, Any]:
    """Every checkpoint of the thread, as `get_state` rebuilds it."""
    found = {}
    for snapshot in await graph.history(config(thread)):
        rebuilt = await graph.state(snapshot.config)
        found[snapshot.config["configurable"]["checkpoint_id"]] = (rebuilt.values, rebuilt.next)
    return found


async def test_time_travel_to_a_checkpoint_no_longer_stored_warns_and_starts_afresh(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """A UI kept the config of a checkpoint that `prune` (or `keep_last`, or `ttl`) has
    since removed: as for any id a saver does not hold (`InMemorySaver` too), LangGraph
    shows an empty state and a run from it starts the thread afresh, which becomes its
    latest; the saver says so, naming the thread and the checkpoint. A read of a thread's
    latest checkpoint (a new thread) is not time travel and says nothing."""
    caplog.set_level(logging.WARNING, logger="langgraph.checkpoint.mongo")
    memory = Driver(chat_graph().compile(InMemorySaver()), False)
    async with backend.saver() as saver:
        graph = Driver(chat_graph().compile(saver), backend.is_sync)
        thread = new_thread()
        await chat(graph, thread, range(3))
        old = (await graph.history(config(thread)))[-1].config
        missing = old["configurable"]["checkpoint_id"]
        await either(saver).prune([thread], keep_last=2)

        def warnings() -> list[str]:
            found = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
            caplog.clear()
            return found

        warnings()
        await chat(graph, new_thread(), range(1))
        assert (await graph.state(config(new_thread()))).values == {}
        assert warnings() == []

        elsewhere: Any = {"configurable": {**old["configurable"], "thread_id": new_thread()}}
        assert (await graph.state(old)).values == (await memory.state(elsewhere)).values == {}
        [said] = warnings()
        assert repr(thread) in said
        assert repr(missing) in said
        assert all(cause in said for cause in ("keep_last", "prune", "ttl"))

        answer = await graph.invoke(human(9), old)
        assert answer == await memory.invoke(human(9), elsewhere)
        assert len(answer["messages"]) == 2
        invoked = warnings()
        assert invoked, "the run read the missing checkpoint without a word"
        assert all(repr(thread) in said and repr(missing) in said for said in invoked)
        latest = await graph.state(config(thread))
        assert latest.values == answer


@pytest.mark.parametrize("channel", ["reducer", "delta"])
async def test_kept_checkpoints_of_a_real_chat_read_back_as_before(
    backend: Backend, channel: str
) -> None:
    """A `DeltaChannel` chat (snapshot every 5 updates) keeps the ancestors its kept
    checkpoints rebuild from; a plain one keeps exactly the newest N."""
    async with backend.saver() as saver:
        graph = Driver(chat_graph(channel, snapshot_frequency=5).compile(saver), backend.is_sync)
        thread = new_thread()
        await chat(graph, thread, range(8))  # 3 checkpoints per turn
        before = await states_by_id(graph, thread)
        stored_before = dict(
            zip(before, await tuples(saver, thread, "", list(before)), strict=True)
        )
        newest = sorted(before, reverse=True)[:4]

        await either(saver).prune([thread], keep_last=4)

        after = await states_by_id(graph, thread)
        assert set(newest) <= set(after)
        assert {c: before[c] for c in after} == after
        assert await tuples(saver, thread, "", list(after)) == [stored_before[c] for c in after]
        if channel == "reducer":
            assert set(after) == set(newest)
        else:  # the ancestors back to the last snapshot stay, no more
            assert len(newest) < len(after) < len(before)
        # The thread goes on as if nothing was pruned.
        await chat(graph, thread, range(8, 10))
        state = await graph.state(config(thread))
        assert [m.id for m in state.values["messages"]][-4:] == ["h-8", "ai-9", "h-9", "ai-10"]
        assert len(state.values["messages"]) == 20


# The saver's `keep_last`: decided by each run from what the server holds.

KEEP = 3
SLACK = ops.slack(KEEP)
TURN = 3  # checkpoints a chat turn writes: the input, the start, the bot's
SNAPSHOT = 5  # the `DeltaChannel` chat's snapshot frequency
# The checkpoints before its last snapshot a `DeltaChannel` chat's newest rebuild from:
# docs/retention.md's 1.5 x `snapshot_frequency` (two updates of the channel per turn of
# three checkpoints).
ANCESTORS = {"reducer": 0, "delta": math.ceil(1.5 * SNAPSHOT)}
SHAPES = ["one saver", "a saver per request", "a restart per run"]

Graph = Callable[[Any], Driver]


def stored_ids_of(docs: list[dict[str, Any]]) -> dict[str, list[str]]:
    by_ns: dict[str, list[str]] = {}
    for doc in docs:
        by_ns.setdefault(doc["_id"]["checkpoint_ns"], []).append(doc["_id"]["checkpoint_id"])
    return {ns: sorted(found, reverse=True) for ns, found in by_ns.items()}


async def stored_ids(saver: Any, thread: str) -> dict[str, list[str]]:
    """The checkpoint ids stored for the thread, by namespace, newest first."""
    cursor = saver.checkpoint_collection.find({"thread_id": thread}, {"_id": 1})
    return stored_ids_of(await maybe_await(cursor.to_list(None)))


async def stored(saver: Any, thread: str) -> list[str]:
    return (await stored_ids(saver, thread)).get("", [])


class Deployment:
    """Savers of `keep_last` as a deployment builds them (`shape`): one for every run, a
    new `MongoDBSaver`/`AsyncMongoDBSaver` per run on a shared client and `close()`
    after (a web app's request), or a new client and saver per run (a restart). Each
    run's saver is settled before `run` returns, unless `drop` (a saver dropped, its
    trim left to run or not)."""

    def __init__(self, backend: Backend, shape: str, first: Any, options: dict[str, Any]):
        self.backend, self.shape, self.first, self.options = backend, shape, first, options

    @asynccontextmanager
    async def saver(self) -> AsyncIterator[Any]:
        if self.shape == "one saver":
            yield self.first
        elif self.shape == "a saver per request":
            saver = type(self.first)(self.first.client, self.first.db.name, **self.options)
            try:
                yield saver
            finally:
                await maybe_await(saver.close())
        else:
            async with self.backend.saver(db_name=self.first.db.name, **self.options) as saver:
                yield saver

    async def run(self, channel: str, work: Callable[[Driver], Awaitable[Any]]) -> Any:
        async with self.saver() as saver:
            graph = chat_graph(channel, snapshot_frequency=SNAPSHOT).compile(saver)
            done = await work(Driver(graph, self.backend.is_sync))
            await settle(saver)  # a trim still in flight ends before the next run reads
            return done


@asynccontextmanager
async def deployment(backend: Backend, shape: str, **options: Any) -> AsyncIterator[Deployment]:
    async with backend.saver(**options) as first:
        yield Deployment(backend, shape, first, options)


def say(turn: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"turn {turn}", id=f"h-{turn}")]}


async def check_bound(
    saver: Any, graph: Driver, memory: Driver, thread: str, channel: str, run: int = TURN
) -> list[str]:
    """The promise, after a settled run: the namespace stores at least the `KEEP` newest,
    each as `InMemorySaver` (which keeps all) has it, rebuilt as it has it; at most `KEEP`
    + the slack + one run (+ `DeltaChannel` ancestors); reads show what is stored."""
    kept = await stored(saver, thread)
    seen = await graph.history(config(thread))
    every = await memory.history(config(thread))
    assert [s.config["configurable"]["checkpoint_id"] for s in seen] == kept
    newest = min(KEEP, len(every))
    assert [Norm()(s) for s in seen[:newest]] == [Norm()(s) for s in every[:newest]]
    rebuilt = [Norm()(await graph.state(s.config))["values"] for s in seen[:newest]]
    assert rebuilt == [Norm()(s)["values"] for s in every[:newest]]
    assert len(kept) <= KEEP + SLACK + run + ANCESTORS[channel]
    return kept


@pytest.mark.soak
@pytest.mark.parametrize("channel", CHANNELS)
@pytest.mark.parametrize("shape", SHAPES)
async def test_keep_last_holds_however_savers_live(
    backend: Backend, shape: str, channel: str
) -> None:
    """A 24-turn chat with `keep_last`, its runs on one saver, on a saver per request
    or after a restart each: after every run the thread keeps the newest `KEEP` as
    `InMemorySaver` has them, and stores no more than the bound; the trims come."""
    thread = new_thread()
    memory = Driver(
        chat_graph(channel, snapshot_frequency=SNAPSHOT).compile(InMemorySaver()), False
    )
    sizes = []

    async def chat_turn(graph: Driver, turn: int) -> None:
        await graph.invoke(say(turn), config(thread))

    async with deployment(backend, shape, keep_last=KEEP) as shapes:
        reader = Driver(
            chat_graph(channel, snapshot_frequency=SNAPSHOT).compile(shapes.first), backend.is_sync
        )
        for turn in range(24):
            await memory.invoke(say(turn), config(thread))
            await shapes.run(channel, partial(chat_turn, turn=turn))
            sizes.append(len(await check_bound(shapes.first, reader, memory, thread, channel)))
        assert min(sizes[-8:]) < max(sizes[-8:])  # trimmed, and growing between trims
        state = await memory.state(config(thread))
        assert len(state.values["messages"]) == 48


@pytest.mark.soak
@pytest.mark.parametrize("channel", CHANNELS)
async def test_two_savers_side_by_side_on_different_threads(backend: Backend, channel: str) -> None:
    """Two processes' savers (a client each), their runs at the same time on two
    threads of one database: each thread keeps its own bound."""
    threads = [new_thread(), new_thread()]
    memory = Driver(
        chat_graph(channel, snapshot_frequency=SNAPSHOT).compile(InMemorySaver()), False
    )
    async with (
        backend.saver(keep_last=KEEP) as first,
        backend.saver(keep_last=KEEP, db_name=first.db.name) as second,
    ):
        graphs = [
            Driver(chat_graph(channel, snapshot_frequency=SNAPSHOT).compile(s), backend.is_sync)
            for s in (first, second)
        ]
        for turn in range(16):
            await asyncio.gather(
                *(g.invoke(say(turn), config(t)) for g, t in zip(graphs, threads, strict=True))
            )
            await asyncio.gather(settle(first), settle(second))
            for graph, thread in zip(graphs, threads, strict=True):
                await memory.invoke(say(turn), config(thread))
                await check_bound(first, graph, memory, thread, channel)


@pytest.mark.soak
@pytest.mark.parametrize("channel", CHANNELS)
async def test_a_fresh_saver_that_travels_back_in_time(backend: Backend, channel: str) -> None:
    """A thread of 30 checkpoints written without `keep_last`; a new saver with it
    replays from an old checkpoint (`invoke(input, old_config)`): the fork reads as
    `InMemorySaver`'s, and the thread is back within the bound after that run, and
    after every later one."""
    thread = new_thread()
    memory = Driver(
        chat_graph(channel, snapshot_frequency=SNAPSHOT).compile(InMemorySaver()), False
    )
    async with backend.saver() as plain:
        graph = Driver(
            chat_graph(channel, snapshot_frequency=SNAPSHOT).compile(plain), backend.is_sync
        )
        for turn in range(10):
            await graph.invoke(say(turn), config(thread))
            await memory.invoke(say(turn), config(thread))
        assert len(await stored(plain, thread)) == 30
        step = {(s.metadata or {})["step"]: s for s in await graph.history(config(thread))}[4]
        old = step.config
        in_memory = {(s.metadata or {})["step"]: s for s in await memory.history(config(thread))}[4]
        async with backend.saver(keep_last=KEEP, db_name=plain.db.name) as fresh:
            kept = Driver(
                chat_graph(channel, snapshot_frequency=SNAPSHOT).compile(fresh), backend.is_sync
            )
            travelled = await kept.invoke(say(100), old)
            assert Norm()(travelled) == Norm()(await memory.invoke(say(100), in_memory.config))
            await settle(fresh)
            await check_bound(fresh, kept, memory, thread, channel)
            for turn in range(101, 112):
                await kept.invoke(say(turn), config(thread))
                await memory.invoke(say(turn), config(thread))
                await settle(fresh)
                await check_bound(fresh, kept, memory, thread, channel)


@pytest.mark.soak
@pytest.mark.parametrize("shape", SHAPES)
async def test_delta_channel_forks_keep_every_checkpoint_whole(
    backend: Backend, shape: str
) -> None:
    """Forks from old checkpoints of a `DeltaChannel` chat, then the main line going on
    from its head, on savers as each deployment builds them: every checkpoint listed at
    any time reads back as it did when it was written (its seeds kept), the newest
    `KEEP` are what `prune(keep_last=KEEP)` of a copy keeps, and the bound holds."""
    thread = new_thread()
    first_seen: dict[str, Any] = {}
    async with deployment(backend, shape, keep_last=KEEP) as shapes:

        async def check(graph: Driver) -> None:
            seen = await graph.history(config(thread))
            for snapshot in seen:
                rebuilt = Norm()(await graph.state(snapshot.config))["values"]
                cid = snapshot.config["configurable"]["checkpoint_id"]
                assert first_seen.setdefault(cid, rebuilt) == rebuilt
            copy = new_thread()
            await either(shapes.first).copy_thread(thread, copy)
            await either(shapes.first).prune([copy], keep_last=KEEP)
            pruned = ids(await listed(shapes.first, config(copy)))
            assert [s.config["configurable"]["checkpoint_id"] for s in seen[:KEEP]] == pruned[:KEEP]
            # A run from the head after a fork protects both branches' ancestors.
            assert len(seen) <= len(pruned) + SLACK + 2 * TURN + ANCESTORS["delta"]

        reader = Driver(
            chat_graph("delta", snapshot_frequency=SNAPSHOT).compile(shapes.first), backend.is_sync
        )
        head = config(thread)

        async def turn_from(graph: Driver, turn: int, start: Any) -> None:
            await graph.invoke(say(turn), start)

        for turn in range(18):
            if turn >= 6 and turn % 3 == 0:  # a fork from the oldest stored, then the head
                history = await reader.history(config(thread))
                head = history[0].config
                await shapes.run(
                    "delta", partial(turn_from, turn=1000 + turn, start=history[-1].config)
                )
                await check(reader)
            await shapes.run("delta", partial(turn_from, turn=turn, start=head))
            await check(reader)
            head = (await reader.history(config(thread), limit=1))[0].config


@pytest.mark.parametrize("keep_last", [1, KEEP])
@pytest.mark.parametrize("history", [0, 8])
async def test_a_rollback_after_a_restart_leaves_the_latest_from_before_the_run(
    backend: Backend, keep_last: int, history: int
) -> None:
    """Saver A writes run r1 (8 checkpoints) and goes away; saver B writes run r2 (13),
    trimming the thread when its first read finds it over the bound (with older
    history); `delete_for_runs(["r2"])` leaves r1's last checkpoint the thread's latest,
    with the state `InMemorySaver` had after r1, and nothing that was gone before r2
    comes back."""
    thread = new_thread()
    short, long = linear_graph(*"abcdef"), linear_graph(*"abcdefghijk")
    memory = InMemorySaver()

    def run(run_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread}, "metadata": {"run_id": run_id}}

    async with backend.saver(keep_last=keep_last) as a:
        for builder, run_id in [(short, "r0")] * bool(history) + [(short, "r1")]:
            await Driver(builder.compile(a), backend.is_sync).invoke({"log": [run_id]}, run(run_id))
            await Driver(builder.compile(memory), False).invoke({"log": [run_id]}, run(run_id))
        await settle(a)
        want = await Driver(short.compile(memory), False).state(config(thread))
        before = await stored(a, thread)
        assert len(before) == history + 8
        async with backend.saver(keep_last=keep_last, db_name=a.db.name) as b:
            graph = Driver(long.compile(b), backend.is_sync)
            await graph.invoke({"log": ["r2"]}, run("r2"))
            await settle(b)
            during = await stored(b, thread)
            assert len(set(during) - set(before)) == 13
            trimmed = len(before) > keep_last + ops.slack(keep_last)
            assert (len(set(before) - set(during)) > 0) == trimmed
            await either(b).delete_for_runs(["r2"])
            after = await stored(b, thread)
            assert after
            assert after[0] == before[0]
            assert set(after) <= set(during)
            state = await graph.state(config(thread))
            assert (state.values, state.next) == (want.values, want.next)


async def three_runs(
    backend: Backend, saver: Any, memory: InMemorySaver, thread: str, nodes: str
) -> tuple[Any, list[str]]:
    """Runs r0, r1 and r2 of a linear graph of `nodes` on `saver` and on `memory`, settled:
    `InMemorySaver`'s state after them, and the checkpoints `saver` then stores."""
    short = linear_graph(*nodes)
    for run_id in ["r0", "r1", "r2"]:
        run = {"configurable": {"thread_id": thread}, "metadata": {"run_id": run_id}}
        await Driver(short.compile(saver), backend.is_sync).invoke({"log": [run_id]}, run)
        await Driver(short.compile(memory), False).invoke({"log": [run_id]}, run)
    await settle(saver)
    want = await Driver(short.compile(memory), False).state(config(thread))
    return want, await stored(saver, thread)


async def test_a_read_of_the_thread_during_a_run_never_moves_what_the_trim_keeps(
    backend: Backend,
) -> None:
    """A node (or a UI in the same process) reads the thread while the run writes it: the
    read returns a checkpoint of the run itself, which is no start of a run, so the
    trim after the run's next `put` still keeps the latest from before the run, and
    `delete_for_runs` of the run leaves it the latest, as `InMemorySaver` is left."""
    thread = new_thread()
    memory = InMemorySaver()

    def run(run_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread}, "metadata": {"run_id": run_id}}

    async with backend.saver(keep_last=KEEP) as saver:
        polled: list[Any] = []

        def polling(builder: Any) -> Any:
            def poll(state: Any) -> dict[str, Any]:
                polled.append(saver.get_tuple(config(thread)))  # a sync read, any saver
                return {"log": ["poll"]}

            builder.add_node("poll", poll)
            builder.add_edge("f", "poll")
            return builder

        want, before = await three_runs(backend, saver, memory, thread, "abcdef")
        long = polling(linear_graph(*"abcdefghijk"))
        graph = Driver(long.compile(saver), backend.is_sync)
        # Each step's checkpoint lands before the next step runs, so the poll reads one of
        # the run's own (with "async", on a slow server, it may read the one before).
        await graph.invoke({"log": ["r3"]}, run("r3"), durability="sync")
        await settle(saver)
        assert polled
        assert all(t.metadata["run_id"] == "r3" for t in polled)
        during = await stored(saver, thread)
        assert before[0] in during
        assert len(during) <= KEEP + ops.slack(KEEP) + 14  # one run: 13 checkpoints and poll's
        await either(saver).delete_for_runs(["r3"])
        assert (await stored(saver, thread))[0] == before[0]
        state = await graph.state(config(thread))
        assert (state.values, state.next) == (want.values, want.next)


@pytest.mark.parametrize("reader", ["the run's saver", "another saver"])
async def test_a_read_of_an_older_checkpoint_during_a_run_never_lets_the_trim_take_its_start(
    backend: Backend, reader: str
) -> None:
    """A UI browses the thread's history while the agent runs: it reads a checkpoint from
    the middle of the previous run by id, through the run's saver (the Agent Server has
    one) or another. The trim after the run's next `put` still keeps the latest from
    before the run, so `delete_for_runs` of the run leaves it the latest, as
    `InMemorySaver` is left (with `keep_last=1` it left a checkpoint from the middle of
    the previous run)."""
    thread = new_thread()
    memory = InMemorySaver()

    def run(run_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread}, "metadata": {"run_id": run_id}}

    async with backend.saver(keep_last=1) as saver:
        client: Any = saver.client
        ui = saver if reader == "the run's saver" else type(saver)(client, saver.db.name)
        await maybe_await(ui.setup())  # (an async saver's sync calls need its loop known)
        browsed: list[Any] = []
        older: list[str] = []

        def browsing(builder: Any) -> Any:
            def browse(state: Any) -> dict[str, Any]:
                browsed.append(ui.get_tuple(config(thread, "", older[0])))  # a sync read
                return {"log": ["browse"]}

            builder.add_node("browse", browse)
            builder.add_edge("b", "browse")
            return builder

        want, before = await three_runs(backend, saver, memory, thread, "abcde")
        older.append(before[3])  # the middle of r2
        graph = Driver(browsing(linear_graph(*"abcde")).compile(saver), backend.is_sync)
        await graph.invoke({"log": ["r3"]}, run("r3"))
        await settle(saver)
        assert [t.config["configurable"]["checkpoint_id"] for t in browsed] == older
        during = await stored(saver, thread)
        assert before[0] in during
        await either(saver).delete_for_runs(["r3"])
        assert (await stored(saver, thread))[0] == before[0]
        state = await graph.state(config(thread))
        assert (state.values, state.next) == (want.values, want.next)


async def test_a_saver_dropped_before_its_trim_ran_is_made_good_by_the_next_run(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Savers that die before their trim lands (here each trim's delete fails, as when
    a process is killed between its commands): the thread grows past the bound, no
    checkpoint is lost, and the next run of a healthy saver brings it back."""
    from langgraph.checkpoint.mongo import _executors

    thread = new_thread()
    memory = Driver(chat_graph().compile(InMemorySaver()), False)
    call = _executors.call

    def killed(collection: Any, command: DriverCommand) -> Any:
        if command.method.name == "DELETE_MANY":
            raise AutoReconnect("injected: the process died")
        return call(collection, command)

    async def chat_turn(graph: Driver, turn: int) -> None:
        await graph.invoke(say(turn), config(thread))

    async with deployment(backend, "a saver per request", keep_last=KEEP) as shapes:
        monkeypatch.setattr(_executors, "call", killed)
        for turn in range(12):
            await shapes.run("reducer", partial(chat_turn, turn=turn))
            await memory.invoke(say(turn), config(thread))
        assert len(await stored(shapes.first, thread)) == 36
        monkeypatch.setattr(_executors, "call", call)

        async def healthy(graph: Driver) -> None:
            await graph.invoke(say(12), config(thread))

        await memory.invoke(say(12), config(thread))
        await shapes.run("reducer", healthy)
        graph = Driver(chat_graph().compile(shapes.first), backend.is_sync)
        assert len(await check_bound(shapes.first, graph, memory, thread, "reducer")) == KEEP + TURN


_KILLED_CHILD = textwrap.dedent(
    """
    import sys
    from langchain_core.messages import HumanMessage
    from pymongo import MongoClient
    from langgraph.checkpoint.mongo import MongoDBSaver
    from support.graphs import chat_graph

    uri, db, thread, first = sys.argv[1:5]
    with MongoDBSaver(MongoClient(uri), db, keep_last=3) as saver:
        graph = chat_graph().compile(checkpointer=saver)
        for turn in range(int(first), 1000):
            message = HumanMessage(f"turn {turn}", id=f"h-{turn}")
            graph.invoke({"messages": [message]}, {"configurable": {"thread_id": thread}})
            print(turn, flush=True)
    """
)


@pytest.mark.soak
async def test_processes_killed_mid_run_then_the_next_run_trims(real_driver: Backend) -> None:
    """A chat whose process is killed (SIGKILL) mid-run, four times, a new process each
    time: every stored checkpoint reads back whole, and once the next run has trimmed,
    the bound holds."""
    thread = new_thread()
    assert real_driver.uri is not None
    async with real_driver.saver(keep_last=KEEP) as saver:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        turn = 0
        for _ in range(4):
            command = [sys.executable, "-c", _KILLED_CHILD, real_driver.uri, saver.db.name]
            child = await asyncio.create_subprocess_exec(
                *command, thread, str(turn), stdout=subprocess.PIPE, env=env
            )
            assert child.stdout is not None
            for _ in range(5):
                turn = int(await child.stdout.readline()) + 1
            child.send_signal(signal.SIGKILL)
            await child.wait()
        graph = Driver(chat_graph().compile(saver), real_driver.is_sync)
        for snapshot in await graph.history(config(thread)):
            assert (await graph.state(snapshot.config)).values == snapshot.values
        await graph.invoke(say(1000), config(thread))
        await settle(saver)
        kept = await stored(saver, thread)
        assert KEEP <= len(kept) <= KEEP + SLACK + TURN
        messages = [m.id for m in (await graph.state(config(thread))).values["messages"]]
        assert len(set(messages)) == len(messages)
        assert messages[-2] == "h-1000"
        assert [m for m in messages if m.startswith("h-")][:turn] == [f"h-{n}" for n in range(turn)]


async def test_durability_exit_and_keep_last(backend: Backend) -> None:
    """`durability="exit"` writes one checkpoint per run: the runs' first reads still
    find the namespace over the bound, and the trims come."""
    thread = new_thread()
    async with backend.saver(keep_last=1) as saver:
        graph = Driver(chat_graph().compile(saver), backend.is_sync)
        for turn in range(30):
            await graph.invoke(say(turn), config(thread), durability="exit")
            await settle(saver)
            assert len(await stored(saver, thread)) <= 1 + ops.slack(1) + 1
        state = await graph.state(config(thread))
        assert len(state.values["messages"]) == 60


@asynccontextmanager
async def written_without_keep_last(
    backend: Backend, thread: str, turns: int, **options: Any
) -> AsyncIterator[Any]:
    """A saver of `options` on a database of its own whose thread a saver without
    `keep_last` wrote `turns` chat turns of."""
    async with backend.saver() as plain:
        graph = Driver(chat_graph().compile(plain), backend.is_sync)
        for turn in range(turns):
            await graph.invoke(say(turn), config(thread))
        async with backend.saver(db_name=plain.db.name, **options) as saver:
            yield saver


async def test_a_read_alone_never_deletes(
    backend: Backend, sent_commands: list[DriverCommand]
) -> None:
    """`get_tuple` (a dashboard, `get_state`) of a thread over the bound sends nothing
    more than its one aggregation; the trim comes with the next `put` of a run."""
    thread = new_thread()
    async with written_without_keep_last(backend, thread, 6, keep_last=KEEP) as saver:
        sent_commands.clear()
        for _ in range(3):
            assert await either(saver).get_tuple(config(thread)) is not None
            await settle(saver)
        assert methods(sent_commands) == read_commands(saver) * 3
        assert len(await stored(saver, thread)) == 18
        kept = Driver(chat_graph().compile(saver), backend.is_sync)
        await kept.invoke(say(6), config(thread))
        await settle(saver)
        assert len(await stored(saver, thread)) == KEEP + TURN


async def test_the_trim_is_prune_of_the_namespace_as_its_run_found_it(
    backend: Backend, sent_commands: list[DriverCommand]
) -> None:
    """What a trim sends, once the run's first `put` was acknowledged: the namespace's
    lineage, then the checkpoints and then their writes (a reader finds a checkpoint
    whole or not at all); the read that started the run counted the namespace in its
    own aggregation. The `KEEP` newest when the run started stay, and the run's own."""
    thread = new_thread()
    async with written_without_keep_last(backend, thread, 6, keep_last=KEEP) as saver:
        before = await stored(saver, thread)
        sent_commands.clear()
        latest = await either(saver).get_tuple(config(thread))
        assert latest is not None
        own = await put(saver, thread, parent=latest.config["configurable"]["checkpoint_id"])
        await settle(saver)
        assert methods(sent_commands) == [
            *read_commands(saver),
            "update_one",
            "find",
            "delete_many",
            "delete_many",
        ]
        assert [c.target.name for c in sent_commands[-2:]] == ["CHECKPOINTS", "WRITES"]
        kept = [own["configurable"]["checkpoint_id"], *before[:KEEP]]
        assert await stored(saver, thread) == kept


@pytest.mark.parametrize(("targeted_joins", "commands"), [(True, 0), (False, 1)])
async def test_without_targeted_joins_the_trim_counts_first(
    backend: Backend, sent_commands: list[DriverCommand], targeted_joins: bool, commands: int
) -> None:
    """With `targeted_joins=False` (no MongoDB 5.0 `$lookup`) the read cannot count the
    namespace: each run's first `put` sends one count more, in the background."""
    thread = new_thread()
    async with backend.saver(keep_last=KEEP, targeted_joins=targeted_joins) as saver:
        graph = Driver(chat_graph().compile(saver), backend.is_sync)
        await graph.invoke(say(0), config(thread))
        await settle(saver)
        sent_commands.clear()
        await graph.invoke(say(1), config(thread))
        await settle(saver)
        # The run's first read: one command, or two where reads take writes apart.
        read_apart = len(read_commands(saver)) - 1
        assert len(sent_commands) == 2 * TURN + commands + read_apart
        for turn in range(2, 12):
            await graph.invoke(say(turn), config(thread))
            await settle(saver)
            assert len(await stored(saver, thread)) <= KEEP + SLACK + TURN


async def test_saver_keep_last_is_checked(backend: Backend) -> None:
    for bad, error in ((0, ValueError), (-3, ValueError), (True, TypeError), (2.0, TypeError)):
        with pytest.raises(error, match="keep_last"):
            async with backend.saver(keep_last=bad):
                pass
    with pytest.raises(ValueError, match=r"keep_last must be at most 2\*\*63 - 1"):
        async with backend.saver(keep_last=2**63):
            pass
    thread = new_thread()
    async with backend.saver(keep_last=2**63 - 1) as saver:  # the largest: every read works
        graph = Driver(chat_graph().compile(saver), backend.is_sync)
        for turn in range(2):
            await graph.invoke(say(turn), config(thread))
        assert len(await graph.history(config(thread))) == 2 * TURN


async def test_leaving_from_conn_string_waits_for_the_trims_in_flight(
    real_driver: Backend,
) -> None:
    """The client `from_conn_string` opened closes only after the saver's background
    trim finished: a trim cut off between its two deletes would leave the deleted
    checkpoints' writes behind."""
    thread = new_thread()
    uri, wire = real_driver.uri, real_driver.wire
    assert uri is not None
    cls = MongoDBSaver if real_driver.is_sync else AsyncMongoDBSaver
    db_name = f"test_{uuid.uuid4().hex[:16]}"
    async with real_driver.saver(db_name=db_name) as plain:
        graph = Driver(chat_graph().compile(plain), real_driver.is_sync)
        for turn in range(5):
            await graph.invoke(say(turn), config(thread))
    opened = cls.from_conn_string(uri, db_name, keep_last=1)
    if wire is not None:
        wire.delay = 0.05  # the trim is still on its way when the block ends
    try:
        if isinstance(opened, AbstractContextManager):
            with opened as saver:
                await Driver(chat_graph().compile(saver), True).invoke(say(5), config(thread))
        else:
            async with opened as saver:
                await Driver(chat_graph().compile(saver), False).invoke(say(5), config(thread))
    finally:
        if wire is not None:
            wire.delay = 0.0
    async with real_driver.saver(db_name=db_name) as reader:
        kept = await stored(reader, thread)
        assert len(kept) == 1 + TURN
        cursor = reader.writes_collection.find({"thread_id": thread}, {"_id": 1})
        owners = {doc["_id"]["checkpoint"]["checkpoint_id"] for doc in await to_list(cursor)}
        assert owners <= set(kept)
        await maybe_await(reader.client.drop_database(db_name))


async def to_list(cursor: Any) -> list[Any]:
    return list(await maybe_await(cursor.to_list(None)))


async def test_with_allowlist_copies_share_the_savers_background_work(backend: Backend) -> None:
    """LangGraph runs a graph on `with_allowlist` copies (one per run under strict
    msgpack): `settle()` of the saver waits for the trims the copies started."""
    thread = new_thread()
    strict = JsonPlusSerializer(allowed_msgpack_modules=[("collections", "OrderedDict")])
    async with backend.saver(serde=strict) as plain:
        graph = Driver(chat_graph().compile(plain), backend.is_sync)
        for turn in range(5):
            await graph.invoke(say(turn), config(thread))
        async with backend.saver(keep_last=1, serde=strict, db_name=plain.db.name) as saver:
            copy = saver.with_allowlist([("decimal", "Decimal")])
            assert copy is not saver
            assert isinstance(copy, (AsyncMongoDBSaver, MongoDBSaver))
            if backend.wire is not None:
                backend.wire.delay = 0.05  # the copy's trim is still on its way
            try:
                await Driver(chat_graph().compile(copy), backend.is_sync).invoke(
                    say(5), config(thread)
                )
                await settle(saver)
            finally:
                if backend.wire is not None:
                    backend.wire.delay = 0.0
            assert len(await stored(saver, thread)) == 1 + TURN


def test_a_read_apart_keeps_the_count() -> None:
    """When a checkpoint with its writes is over 16 MiB, `get_tuple` reads them apart:
    the count of the namespace still comes with the checkpoint."""
    ref = CheckpointRef("t", "", None)
    pipeline = _queries.get_tuple_pipeline(ref, WritesJoin("w"), NamespaceCount("c", 3))
    joins = [stage["$lookup"]["as"] for stage in pipeline if "$lookup" in stage]
    assert joins == ["stored", "pending_writes"]
    apart = _queries.without_join(pipeline)
    assert [stage["$lookup"]["as"] for stage in apart if "$lookup" in stage] == ["stored"]


def test_what_a_saver_remembers_of_run_starts_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reads of many threads that are never written (a dashboard) do not grow what a
    saver remembers for their runs' `put`s beyond its bound."""
    monkeypatch.setattr(ops.state, "_RUN_STARTS", 10)
    starts = ops.RunStarts()
    for n in range(100):
        starts.read(f"thread-{n}", "", ops.ReadCheckpoint("c", None), True)
    assert len(starts._starts) <= 10


@pytest.mark.parametrize("keep_last", [None, 10])
async def test_a_threads_operations_give_what_memory_gives(
    backend: Backend, sent_commands: list[DriverCommand], keep_last: int | None
) -> None:
    """The operations whose every command `test_every_query_uses_an_index` explains on
    MongoDB, on every backend (that test needs MongoDB's planner): the `DeltaChannel`
    history after a `keep_last` trim equals `InMemorySaver`'s, and nothing raises."""
    async with backend.saver(ttl=3600, keep_last=keep_last) as saver:
        await thread_operations(saver, sent_commands)
