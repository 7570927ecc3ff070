"""How many checkpoints a thread keeps: `prune(keep_last=N)`, on every backend."""

from __future__ import annotations

import logging
import uuid
from contextlib import AbstractContextManager
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command
from pymongo.errors import AutoReconnect, BulkWriteError

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, _queries
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._commands import Command as DriverCommand
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._keys import CheckpointRef, checkpoint_key
from langgraph.checkpoint.mongo._queries import WindowRead, WritesJoin
from langgraph.checkpoint.mongo._retention import TRIM_BATCH, Trim
from support.backends import Backend, CommandLog
from support.graphs import (
    CHANNELS,
    LANGGRAPH_1_2_13,
    Driver,
    Norm,
    Run,
    chat_graph,
    compare,
    human,
    linear_graph,
)
from support.helpers import (
    checkpoint,
    config,
    either,
    ids,
    listed,
    methods,
    new_thread,
    put,
    settle,
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
    await either(saver).prune([thread], keep_last=10**30)  # beyond any int64: everything
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


# The saver's `keep_last`: threads trimmed as they are written.

KEEP = 5
# The most marked checkpoints of a thread stored before a trim deletes them, plus one.
BATCH = max(KEEP, TRIM_BATCH)


async def stored_ids(saver: Any, thread: str) -> dict[str, list[str]]:
    """The checkpoint ids stored for the thread, by namespace, newest first."""
    docs = await maybe_await(saver.checkpoint_collection.find({"thread_id": thread}).to_list(None))
    by_ns: dict[str, list[str]] = {}
    for doc in docs:
        by_ns.setdefault(doc["_id"]["checkpoint_ns"], []).append(doc["_id"]["checkpoint_id"])
    return {ns: sorted(found, reverse=True) for ns, found in by_ns.items()}


@pytest.mark.parametrize("channel", CHANNELS)
async def test_keep_last_bounds_a_chat_as_it_is_written(backend: Backend, channel: str) -> None:
    """After every turn, reads see exactly the `keep_last` newest checkpoints (a
    `DeltaChannel` chat also the ancestors back to its last snapshot), before the
    background trims ran too; each of them reads as `InMemorySaver`'s (which keeps all);
    one out of the window reads as gone. Stored: the window and fewer marked checkpoints
    than a trim batch once the trims are done, and no write without its checkpoint."""
    thread = new_thread()
    ancestors = 5 if channel == "delta" else 0  # snapshot_frequency
    memory = Driver(chat_graph(channel, snapshot_frequency=5).compile(InMemorySaver()), False)
    async with backend.saver(keep_last=KEEP) as saver:
        graph = Driver(chat_graph(channel, snapshot_frequency=5).compile(saver), backend.is_sync)
        for turn in range(12):
            await chat(graph, thread, range(turn, turn + 1))
            await chat(memory, thread, range(turn, turn + 1))
            every = await memory.history(config(thread))
            seen = await graph.history(config(thread))
            want = [Norm()(s) for s in every[:KEEP]]
            assert [Norm()(s) for s in seen[:KEEP]] == want
            assert len(seen) >= min(KEEP, len(every))
            if channel == "reducer":
                assert len(seen) == min(KEEP, len(every))
            else:  # exactly what `prune(keep_last=KEEP)` keeps, of a copy
                copy = new_thread()
                await either(saver).copy_thread(thread, copy)
                await either(saver).prune([copy], keep_last=KEEP)
                assert ids(await listed(saver, config(copy))) == [
                    s.config["configurable"]["checkpoint_id"] for s in seen
                ]
            # Rebuilt one by one too: a kept DeltaChannel checkpoint still finds its seed.
            rebuilt = [await graph.state(s.config) for s in seen[:KEEP]]
            assert [Norm()(s)["values"] for s in rebuilt] == [s["values"] for s in want]
            if len(every) > len(seen):
                gone = every[len(seen)].config
                assert await either(saver).get_tuple(gone) is None
        await settle(saver)
        [stored] = (await stored_ids(saver, thread)).values()
        assert KEEP <= len(stored) < KEEP + BATCH + ancestors
        assert await stored_write_owners(saver, thread) <= set(stored)


@pytest.mark.parametrize("channel", CHANNELS)
async def test_keep_last_holds_from_the_first_turn_of_a_new_process(
    backend: Backend, channel: str
) -> None:
    """A thread written without `keep_last` (or by another process): the first turn of a
    saver with `keep_last` leaves exactly the window visible, to that saver and to
    any other, and the stored history beyond it goes with the saver's next trim."""
    thread = new_thread()
    ancestors = 5 if channel == "delta" else 0
    async with backend.saver() as before:
        graph = Driver(chat_graph(channel, snapshot_frequency=5).compile(before), backend.is_sync)
        await chat(graph, thread, range(6))  # 18 checkpoints
        async with backend.saver(keep_last=KEEP, db_name=before.db.name) as saver:
            kept = Driver(chat_graph(channel, snapshot_frequency=5).compile(saver), backend.is_sync)
            await chat(kept, thread, range(6, 7))
            for reader in (kept, graph):
                seen = await reader.history(config(thread))
                if channel == "reducer":
                    assert len(seen) == KEEP
                else:
                    assert KEEP <= len(seen) <= KEEP + ancestors + 3
            state = await kept.state(config(thread))
            assert [m.id for m in state.values["messages"]][-2:] == ["h-6", "ai-7"]
            assert len(state.values["messages"]) == 14
            await chat(kept, thread, range(7, 12))
            await settle(saver)
            [stored] = (await stored_ids(saver, thread)).values()
            assert len(stored) < KEEP + BATCH + ancestors


@pytest.mark.parametrize("channel", CHANNELS)
async def test_keep_last_interrupts_time_travel_and_forks_behave_as_in_memory(
    backend: Backend, channel: str
) -> None:
    """Histories are compared over the window (`limit=keep_last`), where every checkpoint
    is kept; time travel and forks go to checkpoints inside it."""

    async def scenario(run: Run) -> None:
        cfg = config("kept")
        graph = run.compile(linear_graph("a", "b", "c", ask="b", channel=channel))
        for round_ in range(3):
            run.record(f"first {round_}", await graph.invoke({"log": [f"start {round_}"]}, cfg))
            run.record(f"interrupted {round_}", await graph.state(cfg))
            resumed = await graph.invoke(Command(resume=f"yes {round_}"), cfg)
            run.record(f"resumed {round_}", resumed)
            history = run.record(f"history {round_}", await graph.history(cfg, limit=KEEP))
            before_c = next(s for s in history if s.next == ("c",))
            forked = run.record(
                f"fork {round_}", await graph.update(before_c.config, {"log": ["B2"]}, "b")
            )
            run.record(f"fork run {round_}", await graph.invoke(None, forked))
            run.record(f"update {round_}", await graph.update(cfg, {"log": ["manual"]}, "a"))
            run.record(f"window {round_}", await graph.history(cfg, limit=KEEP))
        run.record("state", await graph.state(cfg))

    log = await compare(backend, scenario, keep_last=KEEP)
    # LangGraph's own answer to a DeltaChannel fork (the comparison above holds on every
    # 1.2 release): before 1.2.13 it runs the forked step's node again.
    if LANGGRAPH_1_2_13 or channel == "reducer":
        assert log["fork run 2"]["log"][-2:] == ["B2", "c"]


@pytest.mark.parametrize("channel", CHANNELS)
async def test_after_forks_the_window_is_what_prune_keeps_and_each_checkpoint_whole(
    backend: Backend, channel: str
) -> None:
    """A fork from inside the window, then the main line going on from its head: the
    fork leaves the window once it is not among the newest (nor an ancestor they
    rebuild from), as `prune(keep_last=N)` would delete it, and every checkpoint listed
    at any time reads back as it did when it was written (its `DeltaChannel` seeds
    kept)."""
    thread = new_thread()
    async with backend.saver(keep_last=3) as saver:
        graph = Driver(chat_graph(channel, snapshot_frequency=5).compile(saver), backend.is_sync)
        first_seen: dict[str, Any] = {}

        async def check() -> None:
            seen = await graph.history(config(thread))
            for snapshot in seen:
                rebuilt = Norm()(await graph.state(snapshot.config))["values"]
                cid = snapshot.config["configurable"]["checkpoint_id"]
                assert first_seen.setdefault(cid, rebuilt) == rebuilt
            copy = new_thread()
            await either(saver).copy_thread(thread, copy)
            await either(saver).prune([copy], keep_last=3)
            want = [s.config["configurable"]["checkpoint_id"] for s in seen]
            assert ids(await listed(saver, config(copy))) == want

        await chat(graph, thread, range(4))
        await check()
        window = await graph.history(config(thread))
        head = window[0].config
        await graph.update(window[-1].config, {"messages": [HumanMessage("fork", id="f")]}, "bot")
        await check()
        for turn in range(4, 8):
            message = HumanMessage(f"turn {turn}", id=f"h-{turn}")
            await graph.invoke({"messages": [message]}, head)
            head = (await graph.history(config(thread), limit=1))[0].config
            await check()
        state = await graph.state(config(thread))
        assert [m.id for m in state.values["messages"]][-2:] == ["h-7", "ai-8"]


@pytest.mark.parametrize("read_first", [True, False])
async def test_keep_last_marks_in_the_puts_command_and_deletes_in_the_background(
    counting: Backend, sent_commands: list[DriverCommand], read_first: bool
) -> None:
    """Every `put` past the window marks the checkpoint that leaves it in its own
    `update` command, after the upsert, with an `UpdateOne` (a retryable write), so reads
    never see more than `keep_last`. Once `TRIM_BATCH` checkpoints of the thread were
    marked, one trim, sent after that `put` returned, deletes them and then their writes.

    A thread this process did not read first (LangGraph reads it at the start of every
    run) may hold older checkpoints it never saw: the first mark also marks those, with an
    `UpdateMany` (not retryable), and the trim finds them first."""
    log = CommandLog()
    thread = new_thread()
    async with counting.saver(log, keep_last=2) as saver:
        if read_first:
            assert await either(saver).get_tuple(config(thread)) is None
        made = [await put(saver, thread)]
        deleted: set[str] = set()
        for _ in range(TRIM_BATCH + 2):
            log.reset()
            sent_commands.clear()
            made.append(await put(saver, thread, parent=made[-1]["configurable"]["checkpoint_id"]))
            await settle(saver)
            await either(saver).put_writes(made[-1], [("w", 1)], "t")
            trimmed = len(made) == TRIM_BATCH + 2
            trim = [*([] if read_first else ["find"]), "delete", "delete"] if trimmed else []
            assert log.names == ["update", *trim, "update"]
            kept = [c["configurable"]["checkpoint_id"] for c in made[-2:]]
            assert ids(await listed(saver, config(thread))) == kept[::-1]
            store = sent_commands[0]
            if len(made) < 3:
                assert store.method.name == "UPDATE_ONE"
                continue
            [requests] = store.args
            first = ["UpdateMany"] if len(made) == 3 and not read_first else []
            assert [type(r).__name__ for r in requests] == ["UpdateOne", "UpdateOne", *first]
            assert await either(saver).get_tuple(made[-3]) is None
            cursor = saver.checkpoint_collection.find({"thread_id": thread, "trimmed": True})
            marked = {doc["_id"]["checkpoint_id"] for doc in await to_list(cursor)}
            if trimmed:
                deleted = {c["configurable"]["checkpoint_id"] for c in made[:-2]}
            older = {c["configurable"]["checkpoint_id"] for c in made[:-2]}
            assert marked == older - deleted
            assert (
                await stored_write_owners(saver, thread)
                == {
                    c["configurable"]["checkpoint_id"]
                    for c in made[1:]  # each with a write
                }
                - deleted
            )
        assert deleted


async def test_checkpoints_out_of_the_window_are_gone_for_every_operation(
    backend: Backend,
) -> None:
    """What `keep_last` marked and has not deleted yet: a saver without `keep_last` does
    not read it either, `copy_thread` leaves it (and its writes) behind, and any `prune`
    deletes it, however many checkpoints it keeps."""
    thread, copy = new_thread(), new_thread()
    async with backend.saver(keep_last=3) as saver:
        made = await chain(saver, thread, 5)  # no trim yet: 5 <= 2 * 3
        assert len(await stored_ids(saver, thread)) == 1
        [stored] = (await stored_ids(saver, thread)).values()
        assert stored == made[::-1]
        async with backend.saver(db_name=saver.db.name) as plain:
            assert ids(await listed(plain, config(thread))) == made[:1:-1]
            assert await tuples(plain, thread, "", made[:2]) == [None, None]
            await either(plain).copy_thread(thread, copy)
            assert ids(await listed(plain, config(copy))) == made[:1:-1]
            assert (await stored_ids(plain, copy))[""] == made[:1:-1]
            assert await stored_write_owners(plain, copy) == set(made[2:])
            await either(plain).prune([thread], keep_last=100)
            assert (await stored_ids(plain, thread))[""] == made[:1:-1]
            assert await stored_write_owners(plain, thread) == set(made[2:])


async def test_a_failed_put_leaves_the_window_whole(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `put` whose command failed may not have stored its checkpoint: the saver does
    not count it in the window, so the next turn (which reads the thread first, as
    LangGraph does) still keeps `keep_last` checkpoints, not one fewer."""
    from langgraph.checkpoint.mongo import _executors

    thread = new_thread()
    call = _executors.call
    failing = {"left": 0}

    def flaky(collection: Any, command: DriverCommand) -> Any:
        if failing["left"] and command.method.name == "BULK_WRITE":
            failing["left"] -= 1
            raise AutoReconnect("injected: connection lost")
        return call(collection, command)

    monkeypatch.setattr(_executors, "call", flaky)
    async with backend.saver(keep_last=2) as saver:
        made = await chain(saver, thread, 3)
        failing["left"] = 1
        with pytest.raises(AutoReconnect):
            await put(saver, thread, parent=made[-1])
        latest = await either(saver).get_tuple(config(thread))
        assert latest is not None
        assert latest.config["configurable"]["checkpoint_id"] == made[-1]
        made += await chain(saver, thread, 1, parent=made[-1])
        assert ids(await listed(saver, config(thread))) == made[:-3:-1]


@pytest.mark.parametrize("rollback_keep_last", [3, None])
async def test_a_rollback_brings_back_the_window_the_run_pushed_out(
    backend: Backend, rollback_keep_last: int | None
) -> None:
    """`delete_for_runs` (the Agent Server's rollback and `runs.delete`) of the latest
    run: the thread reads as before that run, with the window applied again by the
    saver that rolls back (one without `keep_last` shows every checkpoint still stored),
    each checkpoint with its writes."""
    thread = new_thread()
    async with backend.saver(keep_last=3) as saver:
        made: list[str] = []
        for run, count in (("r1", 5), ("r2", 3)):
            for _ in range(count):
                stored = await put(
                    saver, thread, parent=made[-1] if made else None, metadata={"run_id": run}
                )
                made.append(stored["configurable"]["checkpoint_id"])
                await either(saver).put_writes(stored, [("w", made[-1])], "t")
        assert ids(await listed(saver, config(thread))) == made[:-4:-1]
        async with backend.saver(db_name=saver.db.name, keep_last=rollback_keep_last) as other:
            await either(other).delete_for_runs(["r2"])
            first_run = made[:5][::-1]
            want = first_run[:3] if rollback_keep_last else first_run
            for reader in (saver, other):
                found = await listed(reader, config(thread))
                assert ids(found) == want
                assert [t.pending_writes for t in found] == [[("t", "w", c)] for c in want]


async def _runs(saver: Any, thread: str, runs: list[tuple[str, int]], made: list[str]) -> None:
    """Checkpoints of these runs (run id, how many), each with a write, as LangGraph
    writes them: a read of the thread first."""
    await either(saver).get_tuple(config(thread))
    for run, count in runs:
        for _ in range(count):
            stored = await put(
                saver, thread, parent=made[-1] if made else None, metadata={"run_id": run}
            )
            made.append(stored["configurable"]["checkpoint_id"])
            await either(saver).put_writes(stored, [("w", made[-1])], "t")


async def test_a_rollback_by_another_saver_is_read_back_before_the_next_mark(
    backend: Backend,
) -> None:
    """Another process rolls the latest run back: the next run here reads the thread
    first, and its `put` keeps `keep_last` checkpoints, not counting the deleted ones."""
    thread = new_thread()
    async with backend.saver(keep_last=3) as saver:
        made: list[str] = []
        await _runs(saver, thread, [("r1", 5), ("r2", 3)], made)
        async with backend.saver(db_name=saver.db.name, keep_last=3) as other:
            await either(other).delete_for_runs(["r2"])
        del made[5:]
        await _runs(saver, thread, [("r3", 1)], made)
        assert ids(await listed(saver, config(thread))) == made[:-4:-1]


async def test_a_trim_never_takes_a_checkpoint_brought_back_nor_its_writes(
    backend: Backend,
) -> None:
    """A trim names the checkpoints marked when it was queued; one brought back into the
    window since (a rollback, in another process, while the trim was on its way or
    queued again after a failure) stays, and keeps its writes."""
    thread = new_thread()
    async with backend.saver(keep_last=3) as saver:
        made: list[str] = []
        await _runs(saver, thread, [("r1", 6)], made)  # the first 3 marked, no trim yet
        assert ids(await listed(saver, config(thread))) == made[:2:-1]
        keys = [checkpoint_key(thread, "", c) for c in made[:4]]  # made[3] is not marked
        keep_last = saver.storage.keep_last
        assert keep_last is not None
        saver._in_background("keep_last", ops._trim(keep_last, Trim(thread, keys, False)))
        await settle(saver)
        assert (await stored_ids(saver, thread))[""] == made[:2:-1]
        assert await stored_write_owners(saver, thread) == set(made[3:])


async def test_a_put_whose_id_sorts_among_the_old_ones_stays_in_the_window(
    backend: Backend,
) -> None:
    """Another host's clock ahead of this one's: the checkpoint being stored is not
    marked by its own `put`, though its id sorts below the newest ones."""
    thread = new_thread()
    async with backend.saver(keep_last=2) as saver:
        made = await chain(saver, thread, 3)
        early = checkpoint({"n": 1})
        early["id"] = made[0][:-1] + "0"  # between the first two, by id
        stored = await either(saver).put(
            config(thread, "", made[-1]), early, {"step": 9}, early["channel_versions"]
        )
        assert await either(saver).get_tuple(stored) is not None


async def test_a_new_process_on_a_thread_this_option_keeps_marks_with_retryable_writes(
    backend: Backend, sent_commands: list[DriverCommand]
) -> None:
    """A process's first run on a thread that `keep_last` already keeps finds the whole
    window in its first read: its marks are `UpdateOne`s only (a retryable write). On a
    thread with older history, the first mark also sends the `UpdateMany` of the older
    checkpoints."""
    kept, old = new_thread(), new_thread()
    async with backend.saver(keep_last=3) as saver:
        history: dict[str, list[str]] = {kept: [], old: []}
        await _runs(saver, kept, [("r1", 6)], history[kept])
        async with backend.saver(db_name=saver.db.name) as plain:
            await _runs(plain, old, [("r0", 6)], history[old])
        for thread in (kept, old):
            async with backend.saver(db_name=saver.db.name, keep_last=3) as fresh:
                sent_commands.clear()
                await _runs(fresh, thread, [("r2", 1)], history[thread])
                [store] = [c for c in sent_commands if c.method.name == "BULK_WRITE"]
                [requests] = store.args
                # The upsert, then a mark per known checkpoint out of the window (the read
                # returns one more than the window: on the old thread, it leaves too).
                marks = ["UpdateOne", "UpdateOne", "UpdateMany"] if thread == old else ["UpdateOne"]
                assert [type(r).__name__ for r in requests] == ["UpdateOne", *marks]
                assert ids(await listed(fresh, config(thread))) == history[thread][:-4:-1]


async def test_a_failed_upsert_marks_nothing(backend: Backend) -> None:
    """The marks come after the upsert in its ordered bulk write: an upsert the server
    refuses (here a unique index of the user's) stops them, and the window stays whole."""
    thread = new_thread()
    async with backend.saver(keep_last=2) as saver:
        await maybe_await(saver.checkpoint_collection.create_index("metadata.tag", unique=True))
        made: list[str] = []
        for tag in ("a", "b", "c"):
            stored = await put(
                saver, thread, parent=made[-1] if made else None, metadata={"tag": tag}
            )
            made.append(stored["configurable"]["checkpoint_id"])
        with pytest.raises(BulkWriteError):
            await put(saver, thread, parent=made[-1], metadata={"tag": "a"})
        assert ids(await listed(saver, config(thread))) == made[:-3:-1]
        await either(saver).get_tuple(config(thread))  # a run starts with it
        made += await chain(saver, thread, 1, parent=made[-1])
        assert ids(await listed(saver, config(thread))) == made[:-3:-1]


async def test_saver_keep_last_is_checked(backend: Backend) -> None:
    for bad, error in ((0, ValueError), (-3, ValueError), (True, TypeError), (2.0, TypeError)):
        with pytest.raises(error, match="keep_last"):
            async with backend.saver(keep_last=bad):
                pass


async def test_leaving_from_conn_string_waits_for_the_trims_in_flight(
    real_driver: Backend,
) -> None:
    """The client `from_conn_string` opened closes only after the saver's background
    trims finished: a trim cut off between its two deletes would leave the deleted
    checkpoints' writes behind, and its retry queue goes with the saver."""
    thread = new_thread()
    uri, wire = real_driver.uri, real_driver.wire
    assert uri is not None
    cls = MongoDBSaver if real_driver.is_sync else AsyncMongoDBSaver
    db_name = f"test_{uuid.uuid4().hex[:16]}"
    opened = cls.from_conn_string(uri, db_name, keep_last=1)
    if wire is not None:
        wire.delay = 0.2  # the trim is still on its way when the block ends
    try:
        if isinstance(opened, AbstractContextManager):
            with opened as saver:
                await _trimmed_chain(saver, thread)
        else:
            async with opened as saver:
                await _trimmed_chain(saver, thread)
    finally:
        if wire is not None:
            wire.delay = 0.0
    async with real_driver.saver(db_name=db_name) as reader:
        kept = await listed(reader, config(thread))
        assert len(kept) == 1
        cursor = reader.writes_collection.find({"thread_id": thread}, {"_id": 1})
        owners = {doc["_id"]["checkpoint"]["checkpoint_id"] for doc in await to_list(cursor)}
        assert owners == {kept[0].config["configurable"]["checkpoint_id"]}
        await maybe_await(reader.client.drop_database(db_name))


async def to_list(cursor: Any) -> list[Any]:
    return list(await maybe_await(cursor.to_list(None)))


async def _trimmed_chain(saver: Any, thread: str) -> None:
    """With `keep_last=1`: a chain of checkpoints with a write each, whose last `put`
    starts a trim of every checkpoint but the newest."""
    made = [await put(saver, thread)]
    await either(saver).put_writes(made[-1], [("w", 0)], "t")
    for n in range(TRIM_BATCH):
        made.append(await put(saver, thread, parent=made[-1]["configurable"]["checkpoint_id"]))
        await either(saver).put_writes(made[-1], [("w", n)], "t")


async def test_with_allowlist_copies_share_the_savers_background_work(backend: Backend) -> None:
    """LangGraph runs a graph on `with_allowlist` copies (one per run under strict
    msgpack): `settle()` of the saver waits for the trims the copies started."""
    thread = new_thread()
    strict = JsonPlusSerializer(allowed_msgpack_modules=[("collections", "OrderedDict")])
    async with backend.saver(keep_last=1, serde=strict) as saver:
        copy = saver.with_allowlist([("decimal", "Decimal")])
        assert copy is not saver
        assert isinstance(copy, (AsyncMongoDBSaver, MongoDBSaver))
        await _trimmed_chain(copy, thread)
        if backend.wire is not None:
            backend.wire.delay = 0.1  # the copy's trim is still on its way
        try:
            await settle(saver)
        finally:
            if backend.wire is not None:
                backend.wire.delay = 0.0
        assert len(await listed(saver, config(thread))) == 1


def test_a_read_apart_keeps_the_window() -> None:
    """When a checkpoint with its writes is over 16 MiB, `get_tuple` reads them apart:
    the window of the namespace's newest checkpoints still comes with the checkpoint."""
    ref = CheckpointRef("t", "", None)
    pipeline = _queries.get_tuple_pipeline(ref, WritesJoin("w"), WindowRead("c", 3))
    joins = [stage["$lookup"]["as"] for stage in pipeline if "$lookup" in stage]
    assert joins == ["window", "pending_writes"]
    apart = _queries.without_join(pipeline)
    assert [stage["$lookup"]["as"] for stage in apart if "$lookup" in stage] == ["window"]


def test_what_a_saver_remembers_of_threads_stays_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads of many new threads that are never written (LangGraph reads a thread before
    its first run) do not grow what `keep_last` remembers beyond its bound."""
    from langgraph.checkpoint.mongo import _retention

    monkeypatch.setattr(_retention, "_NAMESPACES", 10)
    keep_last = _retention.KeepLast(2)
    for n in range(100):
        keep_last.window(f"thread-{n}", "", [])
    assert len(keep_last._known) == 10
    assert len(keep_last._unknown_marked) == 10
