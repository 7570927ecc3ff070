"""The cache of recent channel values (`RecentValues`): bounded in the memory it really
holds, and set by the saver option `cache_max_bytes` (0 turns it off, and every step is
still stored exactly as it was)."""

from __future__ import annotations

import gc
import tracemalloc
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command
from mongomock_motor import AsyncMongoMockClient

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._channel_values import DEFAULT_CACHE_MAX_BYTES, RecentValues
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._queries import WritesJoin
from langgraph.checkpoint.mongo._runners import run_plan
from support.backends import Backend
from support.graphs import Run, chat_graph, human, in_memory, linear_graph, run_on
from support.helpers import checkpoint, config

BOUND = 1024 * 1024


def tiny_puts(recent: RecentValues, count: int) -> None:
    """`count` puts of a small two-channel state, each on a thread of its own, run through
    the core (no I/O: the cache is what keeps anything)."""
    storage = ops.Storage(Codec(JsonPlusSerializer()), WritesJoin("writes"), None, recent)

    def one(i: int) -> None:
        cp = checkpoint({"messages": [f"m{i}"], "step": i})
        thread = f"thread-{uuid.uuid4().hex}"
        plan = ops.put(storage, config(thread), cp, {"step": i}, cp["channel_versions"])
        run_plan(plan, lambda command: None)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(one, range(count)))


@pytest.mark.no_server
def test_many_tiny_entries_stay_near_the_bound() -> None:
    """20,000 tiny checkpoints hold about the bound, not 20,000 times their values' bytes
    (values alone count a few bytes of the ~1 KB each entry takes), on every Python: the
    per-entry estimate follows the running version's object sizes (dicts are larger
    before 3.11)."""
    recent = RecentValues(BOUND)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tiny_puts(recent, 20_000)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 1.25 * BOUND, f"the cache holds {held} bytes for a bound of {BOUND}"
    # An estimate far above the truth would waste the memory the user granted.
    assert held > 0.6 * BOUND, f"the cache holds only {held} bytes for a bound of {BOUND}"
    assert len(recent._entries) > 100  # still a cache


def test_a_bound_of_zero_keeps_nothing() -> None:
    recent = RecentValues(0)
    tiny_puts(recent, 50)
    assert not recent._entries


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (True, TypeError),
        (1.5, TypeError),
        ("1024", TypeError),
        (None, TypeError),
        (-1, ValueError),
    ],
)
def test_cache_max_bytes_is_checked(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="cache_max_bytes"):
        AsyncMongoDBSaver(AsyncMongoMockClient(), cache_max_bytes=value)


def test_cache_max_bytes_sets_the_bound() -> None:
    client: Any = AsyncMongoMockClient()
    assert AsyncMongoDBSaver(client).storage.recent.max_bytes == DEFAULT_CACHE_MAX_BYTES
    assert AsyncMongoDBSaver(client, cache_max_bytes=0).storage.recent.max_bytes == 0
    assert AsyncMongoDBSaver(client, cache_max_bytes=12345).storage.recent.max_bytes == 12345


async def test_from_conn_string_takes_cache_max_bytes(backend: Backend) -> None:
    """Both savers' `from_conn_string` pass the option to the saver, not to the client."""
    if backend.wire is None or backend.name.endswith("motor"):
        pytest.skip("from_conn_string opens a PyMongo client on the wire server")
    db_name = f"test_{uuid.uuid4().hex[:16]}"
    if backend.is_sync:
        with MongoDBSaver.from_conn_string(
            str(backend.uri), db_name, cache_max_bytes=4096
        ) as saver:
            assert saver.storage.recent.max_bytes == 4096
            saver.client.drop_database(db_name)
    else:
        async with AsyncMongoDBSaver.from_conn_string(
            str(backend.uri), db_name, cache_max_bytes=4096
        ) as asaver:
            assert asaver.storage.recent.max_bytes == 4096
            await asaver.client.drop_database(db_name)


async def test_without_the_cache_graphs_store_every_step_as_in_memory(backend: Backend) -> None:
    """Chat turns and an interrupted run, with the cache off: every stored checkpoint (the
    whole history) equals `InMemorySaver`'s."""

    async def scenario(run: Run) -> None:
        chat = run.compile(chat_graph())
        for turn in range(1, 5):
            await chat.invoke(human(turn), config("chat"))
        run.record("chat history", await chat.history(config("chat")))
        asking = run.compile(linear_graph("one", "ask", "two", ask="ask"))
        await asking.invoke({"log": []}, config("ask"))
        await asking.invoke(Command(resume="yes"), config("ask"))
        run.record("ask history", await asking.history(config("ask")))

    async with backend.saver(cache_max_bytes=0) as saver:

        def reopen() -> Any:
            return backend.saver(db_name=saver.db.name, cache_max_bytes=0)

        got = await run_on(saver, backend.is_sync, reopen, scenario)
        assert not saver.storage.recent._entries
    want = await in_memory(backend.is_sync, scenario)
    assert got.log == want.log
