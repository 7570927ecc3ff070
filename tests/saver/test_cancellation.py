"""A cancelled call leaves nothing in flight: once a saver method raised `CancelledError`,
none of its writes lands later, as with `InMemorySaver`.

Through the real drivers: the wire server holds a chosen command after it arrived and
runs it once the hold is over, whether or not the client still waits (as a real server
runs a command it received). The test cancels the call while the command is held,
reads the stored documents at once, lets the server finish every command it holds
(`WireServer.settle`) and reads again: both reads must agree. For `MongoDBSaver` the
async methods (a worker thread each) are the ones cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver
from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend
from support.graphs import Norm, chat_graph, human
from support.helpers import checkpoint, config

# How long the server holds the chosen command: long enough that a late write shows.
HOLD_SECONDS = 0.5

# The wire commands that change data (bulk writes of upserts are `update`s).
WRITE_COMMANDS = {"update", "delete", "insert"}

Saver = AsyncMongoDBSaver | MongoDBSaver


@pytest.fixture
def wire(backend: Backend) -> Backend:
    if backend.wire is None:
        pytest.skip("holds commands on the wire server")
    return backend


@dataclass
class Hold:
    """A `WireServer.hold`: holds the `nth` command whose name is in `names`."""

    names: set[str]
    nth: int = 1
    seconds: float = HOLD_SECONDS
    arrived: threading.Event = field(default_factory=threading.Event)
    seen: int = 0

    def __call__(self, name: str, body: dict[str, Any]) -> float:
        if name not in self.names:
            return 0.0
        self.seen += 1
        if self.seen != self.nth:
            return 0.0
        self.arrived.set()
        return self.seconds


def stored(backend: Backend, saver: Saver) -> dict[str, list[dict[str, Any]]]:
    """Every document of the saver's two collections, as the server holds them now."""
    assert backend.wire is not None
    with backend.wire.lock:
        db = backend.wire.mock[saver.db.name]
        return {
            name: sorted(db[name].find(), key=lambda doc: repr(doc["_id"]))
            for name in (saver.checkpoint_collection_name, saver.writes_collection_name)
        }


async def settled(backend: Backend) -> None:
    assert backend.wire is not None
    await asyncio.to_thread(backend.wire.settle)


# A thread of three checkpoints (runs 0, 1, 2) with a write each, the same on every saver.


@dataclass
class Seed:
    thread: str
    checkpoints: list[Checkpoint]

    @classmethod
    def new(cls) -> Seed:
        made = [checkpoint({"a": i, "b": f"value {i}"}) for i in range(3)]
        return cls(f"thread-{uuid.uuid4().hex[:12]}", made)

    async def store(self, saver: Saver) -> None:
        parent = None
        for i, cp in enumerate(self.checkpoints):
            metadata: CheckpointMetadata = {
                "source": "loop",
                "step": i,
                "parents": {},
                "run_id": f"run-{i}",
            }
            stored = await saver.aput(
                config(self.thread, "", parent), cp, metadata, cp["channel_versions"]
            )
            await saver.aput_writes(stored, [("a", i), ("b", f"write {i}")], f"task-{i}")
            parent = cp["id"]

    @property
    def last(self) -> Any:
        return config(self.thread, "", self.checkpoints[-1]["id"])


NEXT = checkpoint({"a": 9, "b": "next"})

# Each write method of a saver, as called in these tests, and how many write commands it
# sends for `Seed` (each is held in turn).
OPERATIONS: dict[str, tuple[Callable[[Saver, Seed], Coroutine[Any, Any, Any]], int]] = {
    "aput": (
        lambda s, seed: s.aput(
            seed.last, NEXT, {"source": "loop", "step": 3}, NEXT["channel_versions"]
        ),
        1,
    ),
    "aput_writes": (lambda s, seed: s.aput_writes(seed.last, [("a", 7), ("b", 8)], "late"), 1),
    "aput_writes (one)": (lambda s, seed: s.aput_writes(seed.last, [("a", 7)], "late"), 1),
    "adelete_thread": (lambda s, seed: s.adelete_thread(seed.thread), 2),
    "adelete_for_runs": (lambda s, seed: s.adelete_for_runs(["run-1", "run-2"]), 2),
    "acopy_thread": (lambda s, seed: s.acopy_thread(seed.thread, seed.thread + "-copy"), 2),
    "aprune keep_latest": (lambda s, seed: s.aprune([seed.thread]), 2),
    "aprune delete": (lambda s, seed: s.aprune([seed.thread], strategy="delete"), 2),
}
CASES = [(name, nth) for name, (_, writes) in OPERATIONS.items() for nth in range(1, writes + 1)]


@pytest.mark.parametrize(("operation", "nth"), CASES)
async def test_a_cancelled_write_never_lands_later(wire: Backend, operation: str, nth: int) -> None:
    """Cancelled while its `nth` write command is on the wire, a method leaves what a read
    at once and a read once the server is done agree on; running it again finishes the
    job (the same documents as one uncancelled run)."""
    assert wire.wire is not None
    run, _ = OPERATIONS[operation]
    seed = Seed.new()
    async with wire.saver() as saver, wire.saver() as uncancelled:
        await seed.store(saver)
        await seed.store(uncancelled)
        await run(uncancelled, seed)
        hold = Hold(WRITE_COMMANDS, nth)
        wire.wire.hold = hold
        task = asyncio.create_task(run(saver, seed))
        assert await asyncio.to_thread(hold.arrived.wait, 10), "the write never arrived"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        at_once = stored(wire, saver)
        await settled(wire)
        assert stored(wire, saver) == at_once
        wire.wire.hold = None
        await run(saver, seed)
        assert stored(wire, saver) == stored(wire, uncancelled)


# Calls cancelled while a read is on the wire, by the read's wire command.
CANCELLED_READS: dict[str, tuple[str, Callable[[Saver, Seed], Coroutine[Any, Any, Any]]]] = {
    # Before any of its deletes is sent: it sends none.
    "adelete_for_runs": ("find", lambda s, seed: s.adelete_for_runs(["run-1", "run-2"])),
    "aget_tuple": ("aggregate", lambda s, seed: s.aget_tuple(config(seed.thread))),
}


@pytest.mark.parametrize("operation", CANCELLED_READS)
async def test_a_call_cancelled_during_a_read_raises_at_once(wire: Backend, operation: str) -> None:
    """A cancellation that reaches a call while it reads (before any write is sent) is not
    waited for, and nothing changes, now or once the server is done."""
    assert wire.wire is not None
    command, run = CANCELLED_READS[operation]
    seed = Seed.new()
    async with wire.saver() as saver:
        await seed.store(saver)
        before = stored(wire, saver)
        hold = Hold({command}, seconds=30)
        wire.wire.hold = hold
        task = asyncio.create_task(run(saver, seed))
        assert await asyncio.to_thread(hold.arrived.wait, 10)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert time.monotonic() - started < 10, "waited for the read"
        wire.wire.hold = None
        assert stored(wire, saver) == before
        wire.wire.release()
        await settled(wire)
        assert stored(wire, saver) == before


async def conversation(
    saver: Any, hold: Callable[[], None], settle: Callable[[], Awaitable[None]]
) -> dict[str, Any]:
    """Chat turns, two of them cancelled by `asyncio.wait_for` (`hold` makes the saver's
    `put`s slow, `settle` lets the server finish them and ends that): after the first,
    the history is read at once and once settled; after the second the thread is
    deleted at once (a rollback), and a new conversation starts on it once settled.

    The cancelled turns run with `durability="sync"`, where LangGraph awaits each `put`
    in the run itself, so the cancellation reaches it. (With `"async"` or `"exit"`
    LangGraph runs the `put`s in the background of the run and does not cancel them;
    `ainvoke` may raise before they end: see docs/reliability.md.)"""
    graph = chat_graph().compile(checkpointer=saver)
    log: dict[str, Any] = {}
    thread: RunnableConfig = {"configurable": {"thread_id": "chat"}}

    async def history() -> list[Any]:
        # Ids as ordinals within each history: the turns before differ by design.
        return Norm()([s async for s in graph.aget_state_history(thread)])  # type: ignore[no-any-return]

    async def cancelled_turn(turn: int) -> bool:
        hold()
        try:
            await asyncio.wait_for(
                graph.ainvoke(human(turn), thread, durability="sync"), timeout=HOLD_SECONDS / 5
            )
        except asyncio.TimeoutError:
            return True
        return False

    await graph.ainvoke(human(1), thread)
    log["timed out"] = [await cancelled_turn(2)]
    log["at once"] = await history()
    await settle()
    log["later"] = await history()
    log["timed out"].append(await cancelled_turn(3))
    await saver.adelete_thread("chat")
    await settle()
    log["deleted"] = await history()
    await graph.ainvoke(human(4), thread)
    log["final"] = await history()
    return log


async def test_a_graph_run_cancelled_by_wait_for_leaves_what_it_shows(wire: Backend) -> None:
    """What a read shows at once after the timeout is what it shows once the server is
    done; a thread deleted at once stays empty and ends as on `InMemorySaver` with the
    same calls (where the turns finish before the timeout)."""
    server = wire.wire
    assert server is not None

    def hold_puts() -> None:
        def hold(name: str, body: dict[str, Any]) -> float:
            into = body.get(name)
            return (
                HOLD_SECONDS
                if name == "update" and into == saver.checkpoint_collection_name
                else 0.0
            )

        server.hold = hold

    async def settle() -> None:
        server.hold = None
        await settled(wire)

    async def nothing() -> None:
        pass

    async with wire.saver() as saver:
        got = await conversation(saver, hold_puts, settle)
    want = await conversation(InMemorySaver(), lambda: None, nothing)
    assert got["timed out"] == [True, True]
    assert got["at once"] == got["later"]
    assert got["deleted"] == want["deleted"] == []
    assert got["final"] == want["final"]


async def test_a_first_call_cancelled_during_its_setup_leaves_it_to_the_next_call(
    wire: Backend,
) -> None:
    """The `setup()` before a saver's first command creates indexes: cancelled while one
    is on the wire, the call waits for it and stops there (nothing of it runs later); the
    next call sets the saver up from the start. For `MongoDBSaver`, the read is cancelled
    in its async method, whose setup runs as a write does."""
    assert wire.wire is not None
    thread = f"thread-{uuid.uuid4().hex[:12]}"
    async with wire.saver(set_up=False) as saver:
        hold = Hold({"createIndexes"}, nth=1)  # the checkpoints' (the writes' follow)
        wire.wire.hold = hold
        start = wire.wire.count()
        task = asyncio.create_task(saver.aget_tuple(config(thread)))
        assert await asyncio.to_thread(hold.arrived.wait, 10), "the index never arrived"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        sent = wire.wire.commands[start:]
        await settled(wire)
        assert wire.wire.commands[start:] == sent  # nothing of the setup ran later
        assert sent == ["listCollections", "createIndexes"]
        wire.wire.hold = None
        assert await saver.aget_tuple(config(thread)) is None
        again = wire.wire.commands[start + len(sent) :]
        # The checkpoints collection exists now (with its indexes), the writes' not yet.
        assert again == ["listCollections", "listIndexes", "createIndexes", "aggregate"]


SWALLOWED_READS: dict[str, Callable[[Saver, str], Coroutine[Any, Any, Any]]] = {
    "aget_tuple": lambda s, thread: s.aget_tuple(config(thread)),
    "alist": lambda s, thread: _alist(s, thread),
    "aget_delta_channel_history": lambda s, thread: s.aget_delta_channel_history(
        config=config(thread), channels=["a"]
    ),
}


async def _alist(saver: Saver, thread: str) -> list[Any]:
    return [t async for t in saver.alist(config(thread))]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Task.cancelling() came in 3.11")
@pytest.mark.parametrize("operation", SWALLOWED_READS)
async def test_a_read_whose_driver_swallows_the_cancellation_still_raises(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    """Before Python 3.12 `asyncio.wait_for`, which PyMongo's async network layer awaits
    through, returns its result when the read completes as the task is cancelled (a
    cancelled `aget_tuple` returned its tuple in 20 of 206 tries on 3.11.7). The driver
    is made to do so on every read here: the call raises `CancelledError` all the same."""
    if backend.is_sync:
        pytest.skip("AsyncMongoDBSaver's reads run on the event loop")
    from langgraph.checkpoint.mongo import _executors

    async with backend.saver() as saver:
        thread = f"thread-{uuid.uuid4().hex[:12]}"
        await Seed(thread, [checkpoint({"a": 1})]).store(saver)
        arrived = asyncio.Event()
        call = _executors.call

        def swallowing(collection: Any, command: Any) -> Any:
            result = call(collection, command)
            if not command.method.reads:
                return result

            async def answer() -> Any:
                arrived.set()
                # What asyncio.wait_for may do before Python 3.12:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(30)
                return await maybe_await(result)

            return answer()

        monkeypatch.setattr(_executors, "call", swallowing)
        task = asyncio.create_task(SWALLOWED_READS[operation](saver, thread))
        await asyncio.wait_for(arrived.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
