"""The driver adapter, client lifecycle, and sync calls on the async saver."""

from __future__ import annotations

import asyncio
import concurrent.futures
from datetime import timedelta
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pymongo import AsyncMongoClient, MongoClient
from pymongo.driver_info import DriverInfo

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, testing
from langgraph.checkpoint.mongo._commands import Command, Method, Target
from langgraph.checkpoint.mongo._drivers import DRIVER_INFO
from langgraph.checkpoint.mongo._executors import execute_async, open_cursor
from langgraph.checkpoint.mongo._queries import TTL_INDEX_NAME
from support.backends import Backend
from support.helpers import config, either, listed, new_thread, put


class _Cursor:
    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self.docs = docs
        self.closed = False

    def __aiter__(self) -> Any:
        return self

    async def __anext__(self) -> Any:
        if not self.docs:
            raise StopAsyncIteration
        return self.docs.pop(0)


class MotorShapedCollection:
    """Motor: `aggregate` returns a cursor at once, cursor `close` is a plain call."""

    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self.cursor = _Cursor(docs)

    def aggregate(self, pipeline: list[Any]) -> _Cursor:
        def close() -> None:
            self.cursor.closed = True

        self.cursor.close = close  # type: ignore[attr-defined]
        return self.cursor

    async def delete_many(self, query: dict[str, Any]) -> str:
        return f"deleted {query}"


class PyMongoAsyncShapedCollection(MotorShapedCollection):
    """PyMongo async: `aggregate` is awaited for its cursor, cursor `close` too."""

    async def aggregate(self, pipeline: list[Any]) -> _Cursor:  # type: ignore[override]
        async def close() -> None:
            self.cursor.closed = True

        self.cursor.close = close  # type: ignore[attr-defined]
        return self.cursor


@pytest.mark.parametrize("shape", [MotorShapedCollection, PyMongoAsyncShapedCollection])
async def test_adapter_runs_both_driver_shapes(shape: type[MotorShapedCollection]) -> None:
    docs = [{"n": 1}, {"n": 2}]
    read = Command(Target.CHECKPOINTS, Method.AGGREGATE, ([],))
    assert await execute_async("get_tuple", shape(list(docs)), read) == docs
    collection = shape(list(docs))
    async with open_cursor("list", collection, read) as cursor:
        assert [d async for d in cursor] == docs
    assert collection.cursor.closed
    delete = Command(Target.WRITES, Method.DELETE_MANY, ({"thread_id": "t"},))
    assert await execute_async("delete_thread", collection, delete) == "deleted {'thread_id': 't'}"


async def test_sync_call_on_async_saver_in_its_loop_raises_not_hangs(backend: Backend) -> None:
    if backend.is_sync:
        pytest.skip("about AsyncMongoDBSaver")
    async with backend.saver() as saver:
        thread = new_thread()
        stored = await put(saver, thread)
        with pytest.raises(asyncio.InvalidStateError, match="ainvoke"):
            saver.get_tuple(stored)
        with pytest.raises(asyncio.InvalidStateError):
            list(saver.list(config(thread)))
        # From another thread the sync API works, on the saver's own loop.
        got = await asyncio.to_thread(saver.get_tuple, stored)
        assert got is not None
        assert got.config == stored
        listed_sync = await asyncio.to_thread(lambda: list(saver.list(config(thread))))
        assert [t.config for t in listed_sync] == [stored]
        history = await asyncio.to_thread(
            lambda: saver.get_delta_channel_history(config=stored, channels=["x"])
        )
        assert history == {"x": {"writes": []}}


def test_sync_call_when_the_saver_loop_is_not_running_raises_not_hangs() -> None:
    loop = asyncio.new_event_loop()
    saver = AsyncMongoDBSaver(testing.async_client())
    stored = loop.run_until_complete(put(saver, new_thread()))
    # The loop exists but does not run (between run_until_complete calls), then is closed.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        for _ in range(2):
            # A regression would hang: give it 10 s, in a thread, then fail.
            attempt = pool.submit(saver.get_tuple, stored)
            with pytest.raises(asyncio.InvalidStateError, match="wait forever"):
                attempt.result(timeout=10)
            loop.close()


async def test_async_saver_created_outside_a_loop_explains_itself() -> None:
    saver = await asyncio.to_thread(AsyncMongoDBSaver, testing.async_client())
    with pytest.raises(asyncio.InvalidStateError, match="MongoDBSaver"):
        await asyncio.to_thread(saver.get_tuple, config("t"))


async def test_sync_saver_async_methods_run_in_a_thread(backend: Backend) -> None:
    if not backend.is_sync:
        pytest.skip("about MongoDBSaver")
    async with backend.saver() as saver:
        thread = new_thread()
        stored = await saver.aput(config(thread), *_args())
        assert (await either(saver).get_stored(stored)).config == stored
        assert [t.config async for t in saver.alist(config(thread))] == [stored]


def _args() -> tuple[Any, ...]:
    from support.helpers import checkpoint

    cp = checkpoint({"x": 1})
    return cp, {"source": "input", "step": -1, "parents": {}}, cp["channel_versions"]


async def test_from_conn_string_sets_up_identifies_and_closes(backend: Backend) -> None:
    if backend.uri is None:
        pytest.skip("needs a server address")
    db_name = f"test_{new_thread()}"
    # Every saver option, none at its default: each must reach the saver it builds.
    names = (db_name, "cps", "cp_writes")
    options: dict[str, Any] = {
        "serde": _Serde(),
        "compression": "zlib",
        "ttl": 3600,
        "targeted_joins": False,
        "cache_max_bytes": 1024,
        "state_max_bytes": 20 * 1024 * 1024,
    }
    # A client option we also set (the application's own driver metadata) is theirs to give.
    options["driver"] = DriverInfo(name="my-app")
    if backend.is_sync:
        with MongoDBSaver.from_conn_string(backend.uri, *names, **options) as sync_saver:
            await _check_ready(sync_saver, options)
            client: Any = sync_saver.client
            assert isinstance(client, MongoClient)
            client.drop_database(db_name)
    else:
        async with AsyncMongoDBSaver.from_conn_string(backend.uri, *names, **options) as saver:
            await _check_ready(saver, options)
            client = saver.client
            assert isinstance(client, AsyncMongoClient)
            await client.drop_database(db_name)
    metadata = client.options.pool_options.metadata["driver"]
    assert DRIVER_INFO.name in metadata["name"]
    assert "my-app" in metadata["name"]
    with pytest.raises(Exception, match=r"Cannot use \w+ after close"):
        await _maybe(client.list_database_names())


class _Serde(JsonPlusSerializer):
    """A serializer of its own class, which `from_conn_string` must hand to the saver."""


async def _check_ready(saver: Any, options: dict[str, Any]) -> None:
    assert saver.checkpoint_collection.name == "cps"
    assert saver.writes_collection.name == "cp_writes"
    assert saver.serde is options["serde"]
    assert saver.compression == options["compression"]
    assert saver.ttl == timedelta(seconds=options["ttl"])
    assert saver.storage.join.by_thread is options["targeted_joins"]
    assert saver.storage.recent.max_bytes == options["cache_max_bytes"]
    assert saver.storage.max_bytes == options["state_max_bytes"]
    indexes = await _maybe(saver.checkpoint_collection.index_information())
    assert "thread_ns_checkpoint" in indexes
    assert indexes[TTL_INDEX_NAME]["expireAfterSeconds"] == options["ttl"]
    thread = new_thread()
    stored = await put(saver, thread)
    assert [t.config for t in await listed(saver, config(thread))] == [stored]
    assert (await either(saver).get_stored(stored)).config == stored


async def _maybe(value: Any) -> Any:
    from langgraph.checkpoint.mongo._drivers import maybe_await

    return await maybe_await(value)


async def test_user_clients_are_identified(real_driver: Backend) -> None:
    backend = real_driver
    async with backend.client() as client:
        (MongoDBSaver if backend.is_sync else AsyncMongoDBSaver)(client, "identify")
        pymongo_client = vars(client).get("delegate", client)
        metadata = pymongo_client.options.pool_options.metadata["driver"]
        assert metadata["name"].endswith("|" + DRIVER_INFO.name)


def test_every_method_is_a_driver_method_of_its_kind() -> None:
    """Each `Method` names a method of PyMongo's collections (`command`: of its databases),
    sync and async, and a read's name is one of PyMongo's reads: a misspelt or misfiled
    method fails here, not on the first cancelled call."""
    from pymongo.asynchronous.collection import AsyncCollection
    from pymongo.asynchronous.database import AsyncDatabase
    from pymongo.collection import Collection
    from pymongo.database import Database

    reads = {"aggregate", "count_documents", "find", "index_information"}
    for database, collection in ((Database, Collection), (AsyncDatabase, AsyncCollection)):
        for method in Method:
            owner = database if method is Method.COMMAND else collection
            assert callable(getattr(owner, method.value, None)), method
            assert method.reads == (method.value in reads), method
            assert method.returns_cursor == (method.value in {"aggregate", "find"}), method
