"""Network failures, retries and races: what an interrupted or racing operation leaves.

Network faults are injected through the wire server (`WireServer.fault` hangs up on a
chosen command unexecuted), so the real drivers see a real connection failure.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import timedelta, timezone
from typing import Any

import pytest
from pymongo.errors import PyMongoError

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, testing
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._commands import Command, Plan
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._keys import checkpoint_key
from langgraph.checkpoint.mongo._schema import Field
from langgraph.checkpoint.mongo.errors import ThreadChangedError
from support.backends import Backend
from support.helpers import call_by_name, config, either, ids, listed, new_thread, put


def hang_up_on(name: str, nth: int = 1) -> Callable[[str, dict[str, Any]], bool]:
    """A `WireServer.fault` that hangs up on the `nth` command called `name` only."""
    seen = 0

    def fault(command: str, body: dict[str, Any]) -> bool:
        nonlocal seen
        if command != name:
            return False
        seen += 1
        return seen == nth

    return fault


async def documents(collection: Any, thread: str) -> list[dict[str, Any]]:
    return list(await maybe_await(collection.find({"thread_id": thread}).to_list(None)))


async def three_checkpoints_with_writes(saver: Any, thread: str) -> list[str]:
    parent = None
    for i in range(3):
        stored = await put(saver, thread, parent=parent, metadata={"run_id": f"run-{i}"})
        await either(saver).put_writes(stored, [("a", i)], f"task-{i}")
        parent = stored["configurable"]["checkpoint_id"]
    return ids(await listed(saver, config(thread)))


async def assert_every_write_has_its_checkpoint(saver: Any, thread: str) -> None:
    checkpoints = {
        d["_id"]["checkpoint_id"] for d in await documents(saver.checkpoint_collection, thread)
    }
    writes = await documents(saver.writes_collection, thread)
    assert {w["_id"]["checkpoint"]["checkpoint_id"] for w in writes} <= checkpoints


@pytest.mark.parametrize(
    "operation",
    [
        ("prune", lambda thread: ([thread],), {"strategy": "keep_latest"}),
        ("delete_for_runs", lambda thread: (["run-0", "run-1"],), {}),
    ],
    ids=["prune", "delete_for_runs"],
)
async def test_a_retry_finishes_an_interrupted_delete(backend: Backend, operation: Any) -> None:
    """The connection drops on the second delete (after the first one ran); running
    the operation again deletes everything the first try meant to, writes included."""
    if backend.wire is None:
        pytest.skip("injects a network failure through the wire server")
    name, args, kwargs = operation
    async with backend.saver() as saver:
        thread = new_thread()
        newest, *_ = await three_checkpoints_with_writes(saver, thread)
        backend.wire.fault = hang_up_on("delete", nth=2)
        with pytest.raises(PyMongoError):
            await call_by_name(saver, name, *args(thread), **kwargs)
        backend.wire.fault = None
        await call_by_name(saver, name, *args(thread), **kwargs)
        assert ids(await listed(saver, config(thread))) == [newest]
        await assert_every_write_has_its_checkpoint(saver, thread)
        assert len(await documents(saver.writes_collection, thread)) == 1


async def test_copy_thread_copies_only_the_writes_of_copied_checkpoints(saver: Any) -> None:
    """A write that no checkpoint joins (left by an interrupted delete elsewhere) stays
    behind, and never overwrites the target's own write with the same key."""
    source, target = new_thread(), new_thread()
    stored = await put(saver, source)
    await either(saver).put_writes(stored, [("a", "source")], "task")
    [write] = await documents(saver.writes_collection, source)
    orphan_checkpoint = {**write["_id"]["checkpoint"], "checkpoint_id": "deleted-checkpoint"}
    orphan = {**write, "_id": {**write["_id"], "checkpoint": orphan_checkpoint}}
    await maybe_await(saver.writes_collection.insert_one(orphan))
    # The target already has a live checkpoint with that id, and a write of its own.
    live = await put(saver, target, id="deleted-checkpoint")
    await either(saver).put_writes(live, [("a", "target")], "task")

    await either(saver).copy_thread(source, target)

    copied = await either(saver).get_tuple(
        config(target, "", stored["configurable"]["checkpoint_id"])
    )
    assert copied is not None
    assert copied.pending_writes == [("task", "a", "source")]
    kept = await either(saver).get_tuple(live)
    assert kept is not None
    assert kept.pending_writes == [("task", "a", "target")]


def _with_before_second(plan: Plan[Any], meanwhile: Callable[[], Plan[Any]]) -> Plan[Any]:
    """Run `plan`, running a fresh `meanwhile()` plan before each of its commands after
    the first: a concurrent writer acting between every two reads."""
    command = next(plan)
    first = True
    try:
        while True:
            if not first:
                yield from meanwhile()
            first = False
            command = plan.send((yield command))
    except StopIteration as done:
        return done.value


async def test_a_delete_between_the_reads_of_delta_history_rereads(saver: Any) -> None:
    """`delete_thread` between the lineage and the chain read: the read starts again
    and answers for the thread as it is now, as the base class would."""
    thread = new_thread()
    first = await put(saver, thread, values={"a": "seed"})
    await either(saver).put_writes(first, [("a", "w")], "t")
    second = await put(saver, thread, parent=first["configurable"]["checkpoint_id"])
    history = ops.delta_history(saver.storage, second, ["a"])
    deleted = iter([ops.delete_thread(saver.storage, thread)])
    nothing: Plan[Any] = iter(())  # type: ignore[assignment]
    racing = _with_before_second(history, lambda: next(deleted, nothing))
    assert await maybe_await(saver._run("racing", racing)) == {"a": {"writes": []}}


def test_delta_history_gives_up_on_a_thread_that_keeps_changing() -> None:
    """Every attempt finds chain checkpoints gone: a clear error, not a wrong answer."""
    lineage = [
        {"_id": checkpoint_key("t", "", "2"), "parent_checkpoint_id": "1"},
        {"_id": checkpoint_key("t", "", "1"), "channel_values": [{"channel": "a"}]},
    ]
    saver = AsyncMongoDBSaver(testing.async_client())
    plan = ops.delta_history(saver.storage, config("t", "", "2"), ["a"])

    def drive() -> None:
        command: Command | None = next(plan)
        while command is not None:
            command = plan.send(lineage if command.method == "find" else [])

    with pytest.raises(ThreadChangedError, match="3 times"):
        drive()


async def test_delta_history_refuses_a_chain_whose_ancestor_is_gone(saver: Any) -> None:
    """An ancestor deleted under the read (a `keep_last` trim racing a reader of an old
    checkpoint): the chain would end before its seed, so the read fails loudly after
    its retries instead of answering with a short history."""
    thread = new_thread()
    first = await put(saver, thread, values={"a": "seed"})
    second = await put(saver, thread, parent=first["configurable"]["checkpoint_id"])
    await either(saver).put_writes(second, [("a", "w")], "t")
    # "a" declared a DeltaChannel (as LangGraph's metadata does): a gap in its chain is a
    # concurrent delete, which a retry may outrun (an undeclared channel's gap is refused
    # at once: test_delta.py).
    third = await put(
        saver,
        thread,
        parent=second["configurable"]["checkpoint_id"],
        metadata={"counters_since_delta_snapshot": {"a": 2}},
    )
    assert await either(saver).get_delta_channel_history(config=third, channels=["a"]) == {
        "a": {"writes": [("t", "a", "w")], "seed": "seed"}
    }
    gone = {"_id.checkpoint_id": first["configurable"]["checkpoint_id"]}
    await maybe_await(saver.checkpoint_collection.delete_one(gone))
    with pytest.raises(ThreadChangedError, match="3 times"):
        await either(saver).get_delta_channel_history(config=third, channels=["a"])


async def test_stamps_never_move_back_on_a_retried_write(backend: Backend) -> None:
    """A retried `put` or `put_writes` from a writer whose clock lags a bucket (ttl / 16)
    keeps the newer stamp: no document of the thread expires before the rest of it."""
    ttl = timedelta(hours=16)
    async with (
        backend.saver(ttl=ttl) as ahead,
        backend.saver(db_name=ahead.db.name, ttl=ttl) as behind,
    ):
        thread = new_thread()
        first = await put(ahead, thread, id=None)
        await either(ahead).put_writes(first, [("a", 1), ("__error__", "e")], "t")
        assert ahead.storage.expiry is not None
        stamp = ahead.storage.expiry.stamp()
        assert behind.storage.expiry is not None
        ahead_expiry = ahead.storage.expiry
        behind.storage.expiry.clock = lambda: ahead_expiry.clock() - timedelta(hours=2)
        # The same checkpoint and writes again, from the lagging writer.
        tuple_ = await either(ahead).get_tuple(first)
        assert tuple_ is not None
        await either(behind).put(
            {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
            tuple_.checkpoint,
            tuple_.metadata,
            tuple_.checkpoint["channel_versions"],
        )
        await either(behind).put_writes(first, [("a", 1), ("__error__", "e")], "t")
        for collection in (ahead.checkpoint_collection, ahead.writes_collection):
            for doc in await documents(collection, thread):
                assert doc[Field.TOUCHED_AT].replace(tzinfo=timezone.utc) == stamp, collection.name


def test_sync_call_raises_when_the_loop_stops_before_running_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop passes the running check, then stops before it runs the call: the
    waiting thread raises `InvalidStateError` instead of waiting forever."""
    loop = asyncio.new_event_loop()
    saver = AsyncMongoDBSaver(testing.async_client())
    runner = threading.Thread(target=loop.run_forever)
    runner.start()
    asyncio.run_coroutine_threadsafe(saver.setup(), loop).result()
    blocked, scheduled = threading.Event(), threading.Event()

    def block_then_stop() -> None:
        blocked.set()
        scheduled.wait()
        loop.stop()  # the call scheduled meanwhile is left in the next batch, never run

    schedule = asyncio.run_coroutine_threadsafe

    def schedule_and_tell(coro: Any, target: Any) -> Any:
        future = schedule(coro, target)
        scheduled.set()
        return future

    monkeypatch.setattr(asyncio, "run_coroutine_threadsafe", schedule_and_tell)
    loop.call_soon_threadsafe(block_then_stop)
    blocked.wait()
    outcome: list[BaseException | str] = []

    def caller() -> None:
        try:
            saver.get_tuple(config("t"))
            outcome.append("returned")
        except BaseException as exc:
            outcome.append(exc)

    waiting = threading.Thread(target=caller, daemon=True)
    waiting.start()
    waiting.join(timeout=30)
    runner.join(timeout=30)
    try:
        assert not waiting.is_alive(), "the sync call waits forever on a stopped loop"
        [error] = outcome
        assert isinstance(error, asyncio.InvalidStateError), error
        assert "stopped before the call finished" in str(error)
    finally:
        loop.run_until_complete(asyncio.sleep(0))  # let the cancelled call clean up
        loop.close()


def test_sync_call_on_a_loop_closed_meanwhile_raises_the_documented_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop closes between the running check and scheduling: asyncio's bare
    `RuntimeError` becomes the documented `InvalidStateError`."""
    loop = asyncio.new_event_loop()
    saver = AsyncMongoDBSaver(testing.async_client())
    runner = threading.Thread(target=loop.run_forever)
    runner.start()
    try:
        asyncio.run_coroutine_threadsafe(saver.setup(), loop).result()

        def closed(coro: Any, target: Any) -> Any:
            raise RuntimeError("Event loop is closed")

        monkeypatch.setattr(asyncio, "run_coroutine_threadsafe", closed)
        with pytest.raises(asyncio.InvalidStateError, match="event loop"):
            saver.get_tuple(config("t"))
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(timeout=30)
        loop.close()


async def test_timeout_ms_bounds_a_stalled_server(backend: Backend) -> None:
    """`from_conn_string(..., timeoutMS=...)` (documented in the quick start) turns a
    stalled server into an error instead of a call that never returns."""
    if backend.wire is None:
        pytest.skip("stalls the wire server")
    if backend.name.endswith("motor"):
        pytest.skip("from_conn_string opens a PyMongo client")
    db_name = f"test_{new_thread()}"
    try:
        if backend.is_sync:
            with MongoDBSaver.from_conn_string(str(backend.uri), db_name, timeoutMS=300) as saver:
                backend.wire.delay = 2.0
                with pytest.raises(PyMongoError, match=r"(?i)timed out|timeout"):
                    saver.get_tuple(config("t"))
        else:
            async with AsyncMongoDBSaver.from_conn_string(
                str(backend.uri), db_name, timeoutMS=300
            ) as asaver:
                backend.wire.delay = 2.0
                with pytest.raises(PyMongoError, match=r"(?i)timed out|timeout"):
                    await asaver.aget_tuple(config("t"))
    finally:
        backend.wire.delay = 0.0
