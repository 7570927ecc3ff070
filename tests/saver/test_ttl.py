"""Whole-thread TTL: a thread expires as a unit, a live one never loses documents."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from pymongo.errors import ConnectionFailure

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._commands import Command, Detach
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._executors import execute_async, execute_sync
from langgraph.checkpoint.mongo._queries import TTL_INDEX_NAME
from langgraph.checkpoint.mongo._runners import step_plan
from langgraph.checkpoint.mongo._schema import PINNED, Field
from langgraph.checkpoint.mongo._ttl import ThreadMoves
from support.backends import MONGODB_URI, Backend, CommandLog
from support.graphs import Driver, linear_graph
from support.helpers import (
    call_by_name,
    checkpoint,
    config,
    either,
    listed,
    methods,
    new_thread,
    put,
    read_commands,
    saver_like,
    settle,
)


class Clock:
    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now


class Ticking:
    """A clock that reads `times` one after the other, then `then`: time passing mid-write."""

    def __init__(self, times: list[datetime], then: datetime) -> None:
        self.times, self.then = list(times), then

    def __call__(self) -> datetime:
        return self.times.pop(0) if self.times else self.then


def hour_boundary() -> datetime:
    """The latest whole hour: a bucket boundary of `ttl=16 h` savers (buckets of an hour).

    Relative to now, never a fixed date: a TTL index (the embedded one too) deletes what
    was stamped more than `ttl` ago, so a fixed clock turns the suite red a day later.
    """
    return datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)


@asynccontextmanager
async def two_writers(backend: Backend) -> AsyncIterator[tuple[Any, Any]]:
    """Two savers with `ttl=16 h` on one database, as two processes writing one thread."""
    ttl = timedelta(hours=16)
    async with (
        backend.saver(ttl=ttl) as first,
        backend.saver(db_name=first.db.name, ttl=ttl) as second,
    ):
        yield first, second


async def stamps(saver: Any, thread: str) -> set[datetime]:
    found = set()
    for collection in (saver.checkpoint_collection, saver.writes_collection):
        cursor = collection.find({"thread_id": thread}, {Field.TOUCHED_AT: 1})
        docs = await maybe_await(cursor.to_list(None))
        found |= {doc.get(Field.TOUCHED_AT) for doc in docs}
    return found


async def test_all_documents_of_a_thread_share_one_stamp(
    backend: Backend, sent_commands: list[Command]
) -> None:
    log = CommandLog()
    async with backend.saver(log, ttl=timedelta(hours=16)) as saver:
        boundary = hour_boundary()
        clock = Clock(boundary - timedelta(minutes=55))
        assert saver.storage.expiry is not None
        saver.storage.expiry.clock = clock
        thread, other = new_thread(), new_thread()
        sent_commands.clear()
        first = await put(saver, thread)
        # The first write of a bucket moves the thread: the writes' move, then the
        # checkpoints' with the checkpoint in one command.
        assert methods(sent_commands) == ["update_many", "bulk_write"]
        await either(saver).put_writes(first, [("a", 1)], "t")
        sent_commands.clear()
        second = await put(saver, thread, parent=first["configurable"]["checkpoint_id"])
        await either(saver).put_writes(second, [("a", 2)], "t")
        # No extra round trip: each write's command carries the check of a pin (a
        # `bulk_write` of the write and the check).
        assert methods(sent_commands) == ["bulk_write", "bulk_write"]
        await put(saver, other)
        [stamp] = await stamps(saver, thread)
        assert stamp.replace(tzinfo=timezone.utc) == boundary

        # An hour later the bucket (ttl / 16 = 1 hour) is the next one: every
        # document of the thread moves, not just the new one; other threads stay.
        clock.now += timedelta(hours=1)
        await either(saver).put_writes(second, [("b", 3)], "t2")
        [moved] = await stamps(saver, thread)
        assert moved.replace(tzinfo=timezone.utc) == boundary + timedelta(hours=1)
        [untouched] = await stamps(saver, other)
        assert untouched == stamp

        await either(saver).copy_thread(thread, "copied-" + thread)
        [copied] = await stamps(saver, "copied-" + thread)
        assert copied == moved


@asynccontextmanager
async def counted_ttl_saver(counting: Backend) -> AsyncIterator[tuple[Any, CommandLog, Clock]]:
    """A `ttl=16 h` saver whose commands are counted at the wire (a test using it takes
    the `counting` fixture), on a clock half a bucket before a boundary."""
    log = CommandLog()
    async with counting.saver(log, ttl=timedelta(hours=16)) as saver:
        clock = Clock(hour_boundary() - timedelta(minutes=30))
        assert saver.storage.expiry is not None
        saver.storage.expiry.clock = clock
        yield saver, log, clock


@pytest.mark.parametrize("durability", ["async", "sync"])
async def test_an_invoke_that_moves_the_stamp_costs_one_command_more(
    counting: Backend, durability: str
) -> None:
    """However many of its writes are in flight when the bucket changes, the thread
    moves once: one command more than an invoke in the same bucket."""
    async with counted_ttl_saver(counting) as (saver, log, clock):
        graph = Driver(
            linear_graph("a", "b", "c", "d", "e").compile(checkpointer=saver), counting.is_sync
        )
        thread = new_thread()
        counts = []
        for hour in (0, 0, 1, 0, 2):
            clock.now += timedelta(hours=hour)
            log.reset()
            await graph.invoke({"log": []}, config(thread), durability=durability)
            counts.append(log.count())
        same_bucket = counts[1]
        assert counts[2:] == [same_bucket + 1, same_bucket, same_bucket + 1]
        [stamp] = await stamps(saver, thread)
        assert stamp.replace(tzinfo=timezone.utc) == clock.now.replace(minute=0) + timedelta(
            hours=1
        )


async def test_idle_thread_expires_whole_live_thread_stays(ttl_pass: Backend) -> None:
    """On a real server this relies on the TTL monitor, which deletes expired documents
    in a pass every 60 s by default (`ttlMonitorSleepSecs`; 1 s in `docker/` and on CI's
    SecantusDB; on a sharded cluster each shard runs its own, so a thread's checkpoints and
    writes may go in different passes): it waits up to two default passes for every
    document of the idle thread to be gone. The embedded backends
    expire on access."""
    async with ttl_pass.saver(ttl=60) as saver:
        idle, live = new_thread(), new_thread()
        assert saver.storage.expiry is not None
        saver.storage.expiry.clock = Clock(datetime.now(timezone.utc) - timedelta(hours=2))
        parent = None
        for i in range(3):
            stored = await put(saver, idle, parent=parent)
            await either(saver).put_writes(stored, [("x", i)], "t")
            parent = stored["configurable"]["checkpoint_id"]
        # Stamped 10 minutes ahead: the wait can outlast ttl=60 s, and a thread written
        # now would then rightly expire before it is looked at.
        assert saver.storage.expiry is not None
        saver.storage.expiry.clock = Clock(datetime.now(timezone.utc) + timedelta(minutes=10))
        kept = await put(saver, live)
        await either(saver).put_writes(kept, [("y", 1)], "t")
        deadline = asyncio.get_running_loop().time() + (130 if MONGODB_URI else 5)
        while await stamps(saver, idle):  # checkpoints and writes: the whole thread
            assert asyncio.get_running_loop().time() < deadline, "idle thread did not expire"
            await asyncio.sleep(1)
        assert await listed(saver, config(idle)) == []
        assert (await either(saver).get_stored(config(live))).pending_writes == [("t", "y", 1)]


async def index_ttl(collection: Any) -> Any:
    info = await maybe_await(collection.index_information())
    return info[TTL_INDEX_NAME].get("expireAfterSeconds") if TTL_INDEX_NAME in info else None


async def test_setup_retimes_the_ttl_index(real_driver: Backend) -> None:
    """A new `ttl` changes the index's expiry in place (`collMod`, which mongomock lacks)."""
    async with real_driver.saver(ttl=3600) as saver:
        assert await index_ttl(saver.checkpoint_collection) == 3600
        async with real_driver.saver(db_name=saver.db.name, ttl=timedelta(days=2)) as retimed:
            assert await index_ttl(retimed.checkpoint_collection) == 2 * 86400
            assert await index_ttl(retimed.writes_collection) == 2 * 86400


async def test_setup_creates_and_keeps_the_ttl_index(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    async with backend.saver(ttl=3600) as saver:
        assert await index_ttl(saver.checkpoint_collection) == 3600
        assert await index_ttl(saver.writes_collection) == 3600

    # A saver without ttl (a script, a notebook) leaves the services' expiry as it is,
    # and says so.
    async with backend.saver(ttl=3600) as saver:
        caplog.clear()
        async with backend.saver(db_name=saver.db.name):
            assert await index_ttl(saver.checkpoint_collection) == 3600
            assert await index_ttl(saver.writes_collection) == 3600
        warned = [r for r in caplog.records if r.levelname == "WARNING"]
        assert len(warned) == 2
        assert TTL_INDEX_NAME in warned[0].getMessage()


async def test_ttl_index_can_be_skipped(backend: Backend) -> None:
    for options in ({"skip_indexes": {TTL_INDEX_NAME}}, {"create_indexes": False}):
        async with backend.saver(ttl=3600) as saver:
            await maybe_await(saver.checkpoint_collection.drop_index(TTL_INDEX_NAME))
            await maybe_await(saver.writes_collection.drop_index(TTL_INDEX_NAME))
            await maybe_await(saver.setup(**options))
            assert await index_ttl(saver.checkpoint_collection) is None, options
            assert await index_ttl(saver.writes_collection) is None, options


async def test_an_index_of_that_name_on_another_field_is_refused(backend: Backend) -> None:
    async with backend.saver() as saver:
        await maybe_await(saver.writes_collection.create_index([("other", 1)], name=TTL_INDEX_NAME))
        for ttl in (3600, None):
            client: Any = saver.client  # the saver's own kind of client
            retimed = type(saver)(client, saver.db.name, ttl=ttl)
            with pytest.raises(ValueError, match=f"{TTL_INDEX_NAME}.*other.*skip_indexes"):
                await maybe_await(retimed.setup())
        info = await maybe_await(saver.writes_collection.index_information())
        assert "expireAfterSeconds" not in info[TTL_INDEX_NAME]


async def test_a_write_stamped_before_another_writers_move_is_moved_too(
    backend: Backend,
) -> None:
    """Two writers straddle a bucket boundary (ttl / 16 = 1 hour here).

    `late` writes at 11:01 and moves the thread to the 12:00 stamp; `early` stamped
    its document at 10:59 (11:00) but it lands after that move. It must not keep the
    older stamp, or it would expire a bucket before the rest of its thread.
    """
    async with two_writers(backend) as (early, late):
        boundary = hour_boundary()
        late.storage.expiry.clock = Clock(boundary + timedelta(minutes=1))
        thread = new_thread()
        first = await put(late, thread)
        early.storage.expiry.clock = Ticking(
            [boundary - timedelta(minutes=1)], then=boundary + timedelta(minutes=2)
        )
        await put(early, thread, parent=first["configurable"]["checkpoint_id"])
        [stamp] = await stamps(early, thread)
        assert stamp.replace(tzinfo=timezone.utc) == boundary + timedelta(hours=1)


async def test_enabling_ttl_stamps_older_documents_of_a_thread(backend: Backend) -> None:
    async with backend.saver() as plain:
        thread = new_thread()
        first = await put(plain, thread)
        await either(plain).put_writes(first, [("a", 1)], "t")
        async with backend.saver(db_name=plain.db.name, ttl=3600) as timed:
            await put(timed, thread, parent=first["configurable"]["checkpoint_id"])
            [stamp] = await stamps(timed, thread)
            assert stamp is not None


@pytest.mark.parametrize(
    ("ttl", "error"),
    [(0, ValueError), (-5, ValueError), (0.5, ValueError), (True, TypeError), ("1h", TypeError)],
)
def test_bad_ttl_is_refused(ttl: Any, error: type[Exception]) -> None:
    from mongomock_motor import AsyncMongoMockClient

    with pytest.raises(error, match="ttl"):
        AsyncMongoDBSaver(AsyncMongoMockClient(), ttl=ttl)


async def test_without_ttl_nothing_is_stamped(saver: Any) -> None:
    thread = new_thread()
    stored = await put(saver, thread)
    await either(saver).put_writes(stored, [("a", 1)], "t")
    assert await stamps(saver, thread) == {None}


async def test_a_writer_with_a_lagging_clock_never_moves_a_thread_back(backend: Backend) -> None:
    """Stamps only move forward: a writer whose clock is a bucket behind stamps its own
    document in its bucket, but leaves the newer stamps of the thread where they are."""
    async with two_writers(backend) as (ahead, behind):
        boundary = hour_boundary()
        ahead.storage.expiry.clock = Clock(boundary + timedelta(minutes=1))
        behind.storage.expiry.clock = Clock(boundary - timedelta(minutes=1))
        thread = new_thread()
        first = await put(ahead, thread)
        await either(ahead).put_writes(first, [("a", 1)], "t")
        await put(behind, thread, parent=first["configurable"]["checkpoint_id"])
        later, earlier = boundary + timedelta(hours=1), boundary
        found = {stamp.replace(tzinfo=timezone.utc) for stamp in await stamps(ahead, thread)}
        assert found == {later, earlier}
        writes = await maybe_await(
            ahead.writes_collection.find({"thread_id": thread}).to_list(None)
        )
        assert [w[Field.TOUCHED_AT].replace(tzinfo=timezone.utc) for w in writes] == [later]


async def test_refresh_ttl_on_read_moves_the_stamp_once_per_bucket_in_the_background(
    backend: Backend, sent_commands: list[Command]
) -> None:
    log = CommandLog()
    ttl = timedelta(hours=16)
    async with backend.saver(log, ttl=ttl, refresh_ttl_on_read=True) as saver:
        clock = Clock(hour_boundary() - timedelta(minutes=30))
        assert saver.storage.expiry is not None
        saver.storage.expiry.clock = clock
        thread = new_thread()
        stored = await put(saver, thread)
        await either(saver).put_writes(stored, [("a", 1)], "t")
        [written] = await stamps(saver, thread)
        clock.now += timedelta(hours=1)
        wire = backend.wire
        if wire is not None:  # the move waits on the server: the read must not
            wire.hold = lambda name, body: 30.0 if name == "update" else 0.0
        log.reset()
        sent_commands.clear()
        got = await either(saver).get_tuple(config(thread))
        assert got is not None
        assert got.pending_writes == [("t", "a", 1)]
        if wire is not None:
            settling = asyncio.ensure_future(settle(saver))
            await asyncio.sleep(0.2)
            assert not settling.done()
            assert await stamps(saver, thread) == {written}
            wire.hold = None
            wire.release()
            await settling
        await settle(saver)
        [moved] = await stamps(saver, thread)
        assert moved.replace(tzinfo=timezone.utc) == hour_boundary() + timedelta(hours=1)
        for _ in range(3):  # the same bucket: no more moves
            await either(saver).get_tuple(config(thread))
            await listed(saver, config(thread))
            await put(saver, thread, parent=stored["configurable"]["checkpoint_id"])
        await settle(saver)
        # The two update_many of one move, then the 3 puts' bulk_write (each with its check).
        sent = methods(sent_commands)
        assert (sent.count("update_many"), sent.count("bulk_write")) == (2, 3), sent
        assert log.names.count("update") in (0, 2 + 3)  # on the wire too (none on the mock)

    # Without the option a read moves nothing; reads of no single thread never do.
    async with backend.saver(ttl=ttl) as plain:
        assert plain.storage.expiry is not None
        plain.storage.expiry.clock = clock
        thread = new_thread()
        await put(plain, thread)
        [written] = await stamps(plain, thread)
        clock.now += timedelta(hours=1)
        await either(plain).get_tuple(config(thread))
        await listed(plain, None)
        await settle(plain)
        assert await stamps(plain, thread) == {written}


async def test_refresh_ttl_on_read_is_checked(backend: Backend) -> None:
    with pytest.raises(ValueError, match="refresh_ttl_on_read must be False without ttl"):
        async with backend.saver(refresh_ttl_on_read=True):
            pass
    with pytest.raises(TypeError, match="refresh_ttl_on_read must be a bool"):
        async with backend.saver(ttl=60, refresh_ttl_on_read="yes"):
            pass


@pytest.mark.parametrize(
    ("bad", "error", "named"),
    [
        ("x", TypeError, "must be a RunnableConfig dict"),
        ({"configurable": "x"}, ValueError, "no 'configurable' dict"),
        ({"configurable": {"thread_id": 5}}, TypeError, "thread_id'\\] must be a str"),
    ],
)
async def test_refresh_ttl_on_read_refuses_a_bad_config_as_the_read_does(
    backend: Backend, bad: Any, error: type[Exception], named: str
) -> None:
    """The option changes what a read sends besides, not which configs it accepts: `list`
    and `get_tuple` name a bad config with the error they raise without it."""
    async with backend.saver(ttl=60, refresh_ttl_on_read=True) as saver:
        with pytest.raises(error, match=named):
            await listed(saver, bad)
        with pytest.raises(error, match=named):
            await either(saver).get_tuple(bad)


async def test_writes_in_flight_together_move_the_thread_once(counting: Backend) -> None:
    """Eight `put_writes` at once in a new bucket: one of them moves the thread (one
    command more), the others send their own command only."""
    async with counted_ttl_saver(counting) as (saver, log, clock):
        thread = new_thread()
        stored = await put(saver, thread)
        clock.now += timedelta(hours=1)
        log.reset()

        async def write(task: int) -> None:
            writes = [("w", task)]
            if counting.is_sync:  # threads, as LangGraph's sync runner writes
                await asyncio.to_thread(saver.put_writes, stored, writes, f"t{task}")
            else:
                await saver.aput_writes(stored, writes, f"t{task}")

        await asyncio.gather(*(write(task) for task in range(8)))
        assert log.names == ["update"] * (8 + 1)
        [stamp] = await stamps(saver, thread)
        assert stamp.replace(tzinfo=timezone.utc) == hour_boundary() + timedelta(hours=1)


async def test_a_refresh_of_a_read_whose_setup_failed_is_left_to_the_next_read(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `list` whose automatic `setup()` fails detaches no stamp move (its plan never
    started), sends nothing more in the background, and claims nothing: the next read of
    the bucket moves the thread."""
    async with backend.saver(ttl=timedelta(hours=16), refresh_ttl_on_read=True) as saver:
        clock = Clock(hour_boundary() - timedelta(minutes=30))
        assert saver.storage.expiry is not None
        saver.storage.expiry.clock = clock
        thread = new_thread()
        await put(saver, thread)
        [written] = await stamps(saver, thread)
        clock.now += timedelta(hours=1)
        failures = [ConnectionFailure("injected")]
        real_setup: Any = saver.setup

        def failing_sync(*args: Any, **kwargs: Any) -> Any:
            if failures:
                raise failures.pop()
            return real_setup(*args, **kwargs)

        async def failing_async(*args: Any, **kwargs: Any) -> Any:
            if failures:
                raise failures.pop()
            return await real_setup(*args, **kwargs)

        failing = failing_sync if isinstance(saver, MongoDBSaver) else failing_async
        monkeypatch.setattr(saver, "setup", failing)
        # As a saver before its first command, in a process that never set these up.
        saver._setup_state.key, saver._setup_state.done = None, False
        with pytest.raises(ConnectionFailure):
            await listed(saver, config(thread))
        await settle(saver)
        assert failures == []  # one setup: none ran in the background
        assert await stamps(saver, thread) == {written}
        await listed(saver, config(thread))
        await settle(saver)
        [moved] = await stamps(saver, thread)
        assert moved.replace(tzinfo=timezone.utc) == hour_boundary() + timedelta(hours=1)


async def _land(saver: Any, command: Command | Detach) -> Any:
    """Run one command of a plan on the saver's collections, as its executor does."""
    assert isinstance(command, Command)  # without `keep_last`, `put` detaches nothing
    collection = saver._collection(command)
    if isinstance(saver, MongoDBSaver):
        return await asyncio.to_thread(execute_sync, "put", collection, command)
    return await execute_async("put", collection, command)


async def checkpoint_stamps(saver: Any, thread: str) -> dict[str, datetime]:
    cursor = saver.checkpoint_collection.find({"thread_id": thread})
    docs = await maybe_await(cursor.to_list(None))
    return {d["_id"]["checkpoint_id"]: utc(d[Field.TOUCHED_AT]) for d in docs}


def utc(stamp: datetime) -> datetime:
    return stamp.replace(tzinfo=timezone.utc)


@pytest.mark.parametrize("finished", [False, True], ids=["cancelled", "finished"])
async def test_a_put_in_flight_across_a_bucket_boundary_is_never_left_behind(
    backend: Backend, finished: bool
) -> None:
    """A `put` stamped just before a boundary is in flight while a pending write of the
    thread (LangGraph writes a step's writes as its `put` lands) comes in the next
    bucket. The write does not move the thread past the `put` in flight: the `put`
    moves it after it landed, or, cancelled (or killed) before that, leaves every
    checkpoint of the thread on one stamp, the newest one included."""
    async with backend.saver(ttl=timedelta(hours=16)) as saver:
        boundary = hour_boundary()
        clock = Clock(boundary - timedelta(minutes=1))
        assert saver.storage.expiry is not None
        saver.storage.expiry.clock = clock
        thread = new_thread()
        first = await put(saver, thread)
        await either(saver).put_writes(first, [("a", 1)], "t")
        newer = checkpoint({"x": 1})
        metadata: Any = {"source": "loop", "step": 1, "parents": {}}
        plan = ops.put(saver.storage, first, newer, metadata, newer["channel_versions"])
        command = plan.send(None)  # stamped in the old bucket, not yet sent
        clock.now = boundary + timedelta(minutes=1)
        await either(saver).put_writes(config(thread, checkpoint_id=newer["id"]), [("b", 2)], "t")
        result = await _land(saver, command)
        if finished:
            following, _ = step_plan(plan, result)
            while following is not None:
                following, _ = step_plan(plan, await _land(saver, following))
        else:
            plan.close()  # cancelled, or its process died, before anything more
        found = await checkpoint_stamps(saver, thread)
        assert found[newer["id"]] == max(found.values())
        assert len(set(found.values())) == 1
        expected = boundary + timedelta(hours=1) if finished else boundary
        assert found[newer["id"]] == expected
        # The pending writes never expire before their checkpoints.
        writes = await maybe_await(
            saver.writes_collection.find({"thread_id": thread}).to_list(None)
        )
        assert min(utc(w[Field.TOUCHED_AT]) for w in writes) >= expected


async def test_savers_built_per_request_move_a_thread_once_per_bucket(
    backend: Backend, sent_commands: list[Command]
) -> None:
    """What a process remembers of its threads' stamps outlives the saver object: a
    saver built per request on the same collections moves a thread once per bucket,
    as one long-lived saver does."""
    ttl = timedelta(hours=16)
    async with backend.saver(ttl=ttl) as saver:
        clock = Clock(hour_boundary() - timedelta(minutes=30))
        thread, parent = new_thread(), None
        sent: list[list[str]] = []
        for hour in (0, 0, 1, 0):
            clock.now += timedelta(hours=hour)
            per_request = saver_like(saver)(saver.client, saver.db.name, ttl=ttl)
            assert per_request.storage.expiry is not None
            per_request.storage.expiry.clock = clock
            sent_commands.clear()
            stored = await put(per_request, thread, parent=parent)
            parent = stored["configurable"]["checkpoint_id"]
            sent.append(methods(sent_commands))
        move = ["update_many", "bulk_write"]
        assert sent == [move, ["bulk_write"], move, ["bulk_write"]]


async def test_savers_built_per_request_refresh_a_thread_once_per_bucket(
    backend: Backend, sent_commands: list[Command]
) -> None:
    """`refresh_ttl_on_read` with a saver per request: the first read of the bucket moves
    the thread, the next requests' reads send nothing more."""
    ttl = timedelta(hours=16)
    async with backend.saver(ttl=ttl) as saver:
        clock = Clock(hour_boundary() - timedelta(minutes=30))
        assert saver.storage.expiry is not None
        saver.storage.expiry.clock = clock
        thread = new_thread()
        await put(saver, thread)
        clock.now += timedelta(hours=1)
        moves = []
        for _ in range(3):
            per_request = saver_like(saver)(
                saver.client, saver.db.name, ttl=ttl, refresh_ttl_on_read=True
            )
            per_request.storage.expiry.clock = clock
            sent_commands.clear()
            assert await either(per_request).get_tuple(config(thread)) is not None
            await settle(per_request)
            moves.append(methods(sent_commands).count("update_many"))
        assert moves == [2, 0, 0]
        [stamp] = await stamps(saver, thread)
        assert utc(stamp) == hour_boundary() + timedelta(hours=1)


# Pinned threads (`pin_thread`): kept from expiry, whatever is written to them later,
# until unpinned; a pin racing a run leaves the thread whole, pinned or expiring together.

PIN_TTL = timedelta(seconds=60)


def long_ago() -> Clock:
    """A clock whose stamps have expired by the time the TTL monitor looks."""
    return Clock(datetime.now(timezone.utc) - timedelta(hours=2))


def ahead() -> Clock:
    """A clock whose stamps outlast the test (the embedded backends expire on access)."""
    return Clock(datetime.now(timezone.utc) + timedelta(minutes=10))


def in_process(saver: Any, clock: Clock, moves: ThreadMoves | None = None) -> Any:
    """A saver built per request on `saver`'s client and collections, on `clock`; with
    `moves`, as in a process of its own (what a process remembers of threads: a restart
    starts it empty)."""
    other = saver_like(saver)(saver.client, saver.db.name, ttl=saver.storage.expiry.ttl)
    assert other.storage.expiry is not None
    other.storage.expiry.clock = clock
    if moves is not None:
        other.storage.expiry.moves = moves
    return other


async def run(saver: Any, thread: str, step: int) -> RunnableConfig:
    """What a LangGraph run sends: its first read, then a checkpoint and its writes."""
    latest = await either(saver).get_tuple(config(thread))
    parent = None if latest is None else latest.config["configurable"]["checkpoint_id"]
    stored = await put(saver, thread, parent=parent, metadata={"step": step})
    await either(saver).put_writes(stored, [("x", step)], f"t{step}")
    return stored


async def expired(saver: Any, gone: str) -> None:
    """Wait for a TTL pass to delete every document of `gone` (the embedded backends
    expire on access; a real server's monitor runs every 60 s by default)."""
    deadline = asyncio.get_running_loop().time() + (130 if MONGODB_URI else 5)
    while await stamps(saver, gone):
        assert asyncio.get_running_loop().time() < deadline, f"{gone} did not expire"
        await asyncio.sleep(1)


async def document_count(saver: Any, thread: str) -> int:
    count = 0
    for collection in (saver.checkpoint_collection, saver.writes_collection):
        count += await maybe_await(collection.count_documents({"thread_id": thread}))
    return count


async def pinned(saver: Any, thread: str) -> bool:
    [info] = [t for t in await either(saver).list_threads() if t.thread_id == thread]
    return info.pinned


PINNED_STAMPS = {PINNED.replace(tzinfo=None)}


async def test_a_pinned_thread_outlives_its_unpinned_neighbour_across_requests_and_a_restart(
    ttl_pass: Backend,
) -> None:
    """Pinned by one request's saver, written by another request's after a restart (it
    learns the pin from its run's first read) at a time long enough ago to have expired,
    a thread survives the TTL pass that removes its unpinned neighbour, written then
    too; unpinned, it expires whole, `ttl` after the unpin."""
    async with ttl_pass.saver(ttl=PIN_TTL) as saver:
        kept, neighbour = new_thread(), new_thread()
        for step in range(2):
            await run(in_process(saver, ahead()), kept, step)
        await call_by_name(in_process(saver, ahead()), "pin_thread", kept)
        assert await pinned(saver, kept)
        assert set(await stamps(saver, kept)) == PINNED_STAMPS
        clock = long_ago()
        await run(in_process(saver, clock, ThreadMoves()), kept, 2)
        await run(in_process(saver, clock), neighbour, 0)
        assert set(await stamps(saver, kept)) == PINNED_STAMPS
        await expired(saver, neighbour)
        assert await document_count(saver, kept) == 6
        assert [t.thread_id for t in await either(saver).list_threads()] == [kept]

        # Unpinned by a process that never read it, it expires whole: the unpin counts
        # as its last write (stamped, here, long ago).
        await call_by_name(in_process(saver, clock, ThreadMoves()), "unpin_thread", kept)
        await expired(saver, kept)


async def test_pinning_costs_a_stamp_move_and_a_pinned_thread_moves_once_per_process(
    backend: Backend, sent_commands: list[Command]
) -> None:
    async with backend.saver(ttl=timedelta(hours=16)) as saver:
        clock = Clock(hour_boundary() - timedelta(minutes=30))
        thread = new_thread()
        await run(in_process(saver, clock), thread, 0)
        sent_commands.clear()
        await call_by_name(in_process(saver, clock), "pin_thread", thread)
        assert methods(sent_commands) == ["update_many", "update_many"]
        sent: list[list[str]] = []
        for step, hour in enumerate((0, 1, 0, 5)):
            clock.now += timedelta(hours=hour)
            sent_commands.clear()
            await run(in_process(saver, clock), thread, step + 1)
            sent.append(methods(sent_commands))
        # The first write after the pin moves the thread to the pinned stamp once (it
        # catches a write that raced the pin); no bucket moves it again.
        # A pinned checkpoint carries the check of its parent's pin in its command.
        reads = read_commands(saver)  # the run's first read
        moved = [*reads, "update_many", "bulk_write", "update_one"]
        assert sent == [moved] + [[*reads, "bulk_write", "update_one"]] * 3
        assert set(await stamps(saver, thread)) == PINNED_STAMPS


async def test_pinning_a_thread_nothing_is_stored_of_is_no_error(saver: Any) -> None:
    thread = new_thread()
    await call_by_name(saver, "pin_thread", thread)
    await call_by_name(saver, "unpin_thread", thread)
    assert await stamps(saver, thread) == set()


async def test_a_saver_without_ttl_pins_and_unpins(backend: Backend) -> None:
    """`threads pin` runs a saver without `ttl`: it stamps the same."""
    async with backend.saver(ttl=PIN_TTL) as saver:
        thread = new_thread()
        await run(in_process(saver, ahead()), thread, 0)
        plain = saver_like(saver)(saver.client, saver.db.name)
        await call_by_name(plain, "pin_thread", thread)
        assert set(await stamps(saver, thread)) == PINNED_STAMPS
        await call_by_name(plain, "unpin_thread", thread)
        [stamp] = await stamps(saver, thread)
        assert utc(stamp) <= datetime.now(timezone.utc)


async def test_a_pin_racing_a_run_of_the_same_process_keeps_the_whole_thread(
    backend: Backend,
) -> None:
    """A run reads the thread unpinned, the process pins it (another request), then the
    run writes: its writes learn the pin at once, the whole thread stays pinned."""
    async with backend.saver(ttl=PIN_TTL) as saver:
        thread = new_thread()
        await run(in_process(saver, ahead()), thread, 0)
        running = in_process(saver, long_ago())
        latest = await either(running).get_stored(config(thread))
        await call_by_name(in_process(saver, ahead()), "pin_thread", thread)
        stored = await put(running, thread, parent=latest.config["configurable"]["checkpoint_id"])
        await either(running).put_writes(stored, [("x", 1)], "t1")
        assert set(await stamps(saver, thread)) == PINNED_STAMPS
        assert await document_count(saver, thread) == 4


async def test_a_write_in_flight_when_its_process_pins_the_thread_is_pinned_after_it_lands(
    backend: Backend,
) -> None:
    """A write stamped before the pin lands after it: it then moves the thread to the
    pinned stamp (as a write stamped in the bucket before moves it to the next), and no
    write of the pinned thread moved it before that one landed."""
    async with backend.saver(ttl=PIN_TTL) as saver:
        thread = new_thread()
        clock = ahead()
        await run(in_process(saver, clock), thread, 0)
        running = in_process(saver, clock)
        stored = await either(running).get_stored(config(thread))
        newer = checkpoint({"x": 1})
        metadata: Any = {"source": "loop", "step": 1, "parents": {}}
        plan = ops.put(running.storage, stored.config, newer, metadata, newer["channel_versions"])
        command = plan.send(None)  # stamped before the pin, not yet sent
        await call_by_name(in_process(saver, clock), "pin_thread", thread)
        # A write of the pinned thread meanwhile does not move it past the one in flight.
        await either(running).put_writes(stored.config, [("y", 2)], "t2")
        following, _ = step_plan(plan, await _land(running, command))
        while following is not None:
            following, _ = step_plan(plan, await _land(running, following))
        assert set(await stamps(saver, thread)) == PINNED_STAMPS


@pytest.mark.parametrize("first", ["put", "put_writes"])
@pytest.mark.parametrize("hours", [0, 1])
async def test_a_pin_racing_a_run_of_another_process_keeps_the_whole_thread(
    backend: Backend, first: str, hours: int
) -> None:
    """A run of another process read the thread before the pin and writes after it
    (`first`: a checkpoint or pending writes; in the bucket its process had moved the
    thread to, or in a later one, whose move would once have brought the pin down): its
    write finds the pin as it lands and pins the whole thread, its own documents
    included, across a restart. A pin is never undone by a run that read before it."""
    async with backend.saver(ttl=PIN_TTL) as saver:
        clock = ahead()
        thread = new_thread()
        racing = in_process(saver, clock, ThreadMoves())
        stored = await run(racing, thread, 0)  # moved the thread to this bucket
        await either(racing).get_tuple(config(thread))  # the run's read, before the pin
        await call_by_name(in_process(saver, clock, ThreadMoves()), "pin_thread", thread)
        clock.now += timedelta(hours=hours)
        if first == "put_writes":
            await either(racing).put_writes(stored, [("y", 1)], "t1")
        stored = await put(racing, thread, parent=stored["configurable"]["checkpoint_id"])
        await either(racing).put_writes(stored, [("x", 1)], "t2")
        assert set(await stamps(saver, thread)) == PINNED_STAMPS
        assert await pinned(saver, thread)
        await run(in_process(saver, clock, ThreadMoves()), thread, 2)
        assert set(await stamps(saver, thread)) == PINNED_STAMPS
        assert await document_count(saver, thread) == (7 if first == "put_writes" else 6)


async def test_a_pin_after_an_unpin_of_the_writing_process_holds(backend: Backend) -> None:
    """A run reads the thread, its own process unpins it, another process pins it, then the
    run writes: what the process knew of its own unpin does not bring the new pin down."""
    async with backend.saver(ttl=PIN_TTL) as saver:
        clock = ahead()
        thread = new_thread()
        moves = ThreadMoves()
        await run(in_process(saver, clock, moves), thread, 0)
        await call_by_name(in_process(saver, clock, moves), "pin_thread", thread)
        running = in_process(saver, clock, moves)
        stored = await either(running).get_stored(config(thread))
        await call_by_name(in_process(saver, clock, moves), "unpin_thread", thread)
        await call_by_name(in_process(saver, clock, ThreadMoves()), "pin_thread", thread)
        clock.now += timedelta(hours=1)  # the run's write moves the thread: a new bucket
        await either(running).put_writes(stored.config, [("y", 1)], "t1")
        assert set(await stamps(saver, thread)) == PINNED_STAMPS
        assert await document_count(saver, thread) == 3


async def test_a_check_leaves_a_checkpoint_without_a_stamp_stored(backend: Backend) -> None:
    """A saver without `ttl` sharing the collections writes a checkpoint with no stamp into
    a pinned thread; the next pinned checkpoint's check of that parent stamps nothing that
    a TTL pass would reach: the parent is still there, and the thread still pinned."""
    async with backend.saver(ttl=PIN_TTL) as saver:
        clock = ahead()
        thread = new_thread()
        pinned_run = in_process(saver, clock, ThreadMoves())
        stored = await run(pinned_run, thread, 0)
        await call_by_name(pinned_run, "pin_thread", thread)
        await either(pinned_run).get_tuple(config(thread))  # learns the pin
        # Its process moves the thread to the pin now, so no move rides with its next write.
        stored = await put(pinned_run, thread, parent=stored["configurable"]["checkpoint_id"])
        plain = saver_like(saver)(saver.client, saver.db.name)
        unstamped = await put(plain, thread, parent=stored["configurable"]["checkpoint_id"])
        await put(pinned_run, thread, parent=unstamped["configurable"]["checkpoint_id"])
        assert await either(saver).get_tuple(unstamped) is not None
        assert set(await stamps(saver, thread)) == PINNED_STAMPS
        assert await pinned(saver, thread)


async def test_a_retried_write_asks_with_a_count_whether_the_thread_is_pinned(
    backend: Backend, sent_commands: list[Command]
) -> None:
    """A write whose documents were all stored already (a retry) cannot tell its check's
    answer from its command's result: it asks with one `count_documents`, and moves the
    thread to the pin only when it finds one."""
    async with backend.saver(ttl=PIN_TTL) as saver:
        clock = ahead()
        thread = new_thread()
        racing = in_process(saver, clock, ThreadMoves())
        stored = await run(racing, thread, 0)
        sent_commands.clear()
        await either(racing).put_writes(stored, [("x", 0)], "t0")  # the run's write, again
        assert methods(sent_commands) == ["bulk_write", "count_documents"]
        assert not await pinned(saver, thread)
        await call_by_name(in_process(saver, clock, ThreadMoves()), "pin_thread", thread)
        sent_commands.clear()
        await either(racing).put_writes(stored, [("x", 0)], "t0")
        assert methods(sent_commands) == [
            "bulk_write",
            "count_documents",
            "update_many",
            "update_many",
        ]
        assert set(await stamps(saver, thread)) == PINNED_STAMPS


async def test_an_unpin_racing_a_run_of_another_process_ends_with_the_thread_whole(
    backend: Backend,
) -> None:
    """The mirror race: a run read the thread pinned and stores a checkpoint after an unpin
    of another process. Its checkpoint finds its parent unpinned as it lands and pins the
    whole thread again (the pin wins here too: unpin it again once the run ended)."""
    async with backend.saver(ttl=PIN_TTL) as saver:
        clock = ahead()
        thread = new_thread()
        await run(in_process(saver, clock), thread, 0)
        await call_by_name(in_process(saver, clock), "pin_thread", thread)
        racing = in_process(saver, clock, ThreadMoves())
        stored = await run(racing, thread, 1)  # learned the pin, moved the thread to it
        await call_by_name(in_process(saver, clock, ThreadMoves()), "unpin_thread", thread)
        await put(racing, thread, parent=stored["configurable"]["checkpoint_id"])
        assert set(await stamps(saver, thread)) == PINNED_STAMPS
        assert await pinned(saver, thread)
        await call_by_name(in_process(saver, clock, ThreadMoves()), "unpin_thread", thread)
        await run(in_process(saver, clock, ThreadMoves()), thread, 3)
        [stamp] = await stamps(saver, thread)
        assert stamp not in PINNED_STAMPS


async def test_a_pinned_thread_deleted_and_written_again_is_not_pinned(backend: Backend) -> None:
    """The process that wrote a pinned thread reads it again after another process deleted
    it: the new thread's writes are stamped as any thread's, not pinned."""
    async with backend.saver(ttl=PIN_TTL) as saver:
        clock = ahead()
        thread = new_thread()
        writer = in_process(saver, clock)
        await run(writer, thread, 0)
        await call_by_name(writer, "pin_thread", thread)
        await run(writer, thread, 1)
        await call_by_name(in_process(saver, clock, ThreadMoves()), "delete_thread", thread)
        await run(writer, thread, 0)
        [stamp] = await stamps(saver, thread)
        assert stamp not in PINNED_STAMPS
