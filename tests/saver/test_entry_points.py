"""How a saver is built, opened and closed, as users arriving from the official
`langgraph-checkpoint-mongodb` saver or from `InMemorySaver` write it: `from_conn_string`
in the official positional order with every saver option named, the client kind checked
when the saver is built, and `close()` / the saver as a context manager."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import mongomock
import pytest
from langgraph.graph import StateGraph
from mongomock_motor import AsyncMongoMockClient
from motor.motor_asyncio import AsyncIOMotorClient
from pymongo import AsyncMongoClient, MongoClient
from pymongo.errors import InvalidOperation

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver
from langgraph.checkpoint.mongo._commands import Command
from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend
from support.graphs import LogState
from support.helpers import config, either, listed, methods, new_thread, put

SAVERS = [MongoDBSaver, AsyncMongoDBSaver]
# An address nothing listens on: the clients below are built, never used.
NOWHERE = "mongodb://localhost:1/?serverSelectionTimeoutMS=1"


def saver_class(backend: Backend) -> type[MongoDBSaver] | type[AsyncMongoDBSaver]:
    if backend.uri is None:
        pytest.skip("from_conn_string needs a server address")
    return MongoDBSaver if backend.is_sync else AsyncMongoDBSaver


@asynccontextmanager
async def opened(backend: Backend, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
    """`from_conn_string` of the backend's saver, entered the way that saver is."""
    cls = saver_class(backend)
    if cls is MongoDBSaver:
        with MongoDBSaver.from_conn_string(backend.uri or "", *args, **kwargs) as saver:
            yield saver
    else:
        async with AsyncMongoDBSaver.from_conn_string(backend.uri or "", *args, **kwargs) as asaver:
            yield asaver


async def is_closed(client: Any) -> bool:
    try:
        await maybe_await(client.list_database_names())
    except InvalidOperation as error:
        return "after close" in str(error)
    return False


async def closes_soon(client: Any) -> bool:
    """Whether a close started without being awaited ends within a few seconds."""
    for _ in range(100):
        if await is_closed(client):
            return True
        await asyncio.sleep(0.05)
    return False


def db_name() -> str:
    return f"test_{uuid.uuid4().hex[:16]}"


async def test_from_conn_string_takes_the_official_positional_order(backend: Backend) -> None:
    """The official saver's own suite passes `ttl` fifth."""
    name = db_name()
    async with opened(backend, name, "cps", "cp_writes", 3600) as saver:
        assert (saver.db.name, saver.checkpoint_collection.name) == (name, "cps")
        assert saver.writes_collection.name == "cp_writes"
        assert saver.ttl == timedelta(hours=1)
        stored = await put(saver, new_thread())
        assert (await either(saver).get_stored(stored)).config == stored
        await maybe_await(saver.client.drop_database(name))


async def test_from_conn_string_per_request_sets_up_once_per_process(
    backend: Backend, sent_commands: list[Command]
) -> None:
    """A web handler's `with MongoDBSaver.from_conn_string(...)` per request: the first
    request of the process sets the collections up, the next ones send their own
    commands only, each on the client it opened."""
    name = db_name()
    sent = []
    for _ in range(3):
        sent_commands.clear()
        async with opened(backend, name, ttl=3600) as saver:
            await put(saver, new_thread())
            sent.append(methods(sent_commands))
    # buildInfo, listCollections, then one createIndexes per collection.
    setup = ["command", "command", "create_indexes", "create_indexes"]
    assert sent == [[*setup, "update_many", "bulk_write"]] + [["update_many", "bulk_write"]] * 2
    async with backend.client() as client:
        await maybe_await(client.drop_database(name))


@pytest.mark.parametrize("cls", SAVERS)
def test_from_conn_string_names_every_constructor_option(cls: type[Any]) -> None:
    """Same names, order, kinds, defaults and types: a saver option added to the
    constructor must be added to `from_conn_string` too (both are in `_base.py`)."""
    built = list(inspect.signature(cls).parameters.values())
    opened = list(inspect.signature(cls.from_conn_string).parameters.values())
    assert built[0].name == "client"
    assert opened[0].name == "conn_string"
    assert opened[-1].kind is inspect.Parameter.VAR_KEYWORD
    assert opened[1:-1] == built[1:]


@pytest.mark.parametrize("cls", SAVERS)
def test_a_misspelt_saver_option_is_named_with_the_savers_options(cls: type[Any]) -> None:
    with pytest.raises(TypeError, match=r"'db_nmae' \(did you mean 'db_name'\?\)") as raised:
        cls.from_conn_string(NOWHERE, db_nmae="x")
    message = str(raised.value)
    assert f"{cls.__name__}.from_conn_string()" in message
    for option in ("checkpoint_collection_name", "ttl", "serde", "compression"):
        assert option in message
    with pytest.raises(TypeError, match=r"unknown keyword argument\(s\) 'lz4_level'"):
        cls.from_conn_string(NOWHERE, lz4_level=3)


@pytest.mark.parametrize("cls", SAVERS)
def test_a_timeout_without_its_unit_points_to_timeout_ms(cls: type[Any]) -> None:
    hint = r"'timeout' \(did you mean 'timeoutMS'\? PyMongo's timeouts are milliseconds\)"
    with pytest.raises(TypeError, match=hint):
        cls.from_conn_string(NOWHERE, timeout=2000)
    client: Any = mongomock.MongoClient() if cls is MongoDBSaver else AsyncMongoMockClient()
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\(\) got .*{hint}"):
        cls(client, timeout=2000)
    with pytest.raises(TypeError, match=r"'connectTimeout' \(did you mean 'connectTimeoutMS'"):
        cls.from_conn_string(NOWHERE, connectTimeout=2000)


@pytest.mark.parametrize("cls", SAVERS)
def test_constructor_errors_name_the_saver_not_its_base_class(cls: type[Any]) -> None:
    client: Any = mongomock.MongoClient() if cls is MongoDBSaver else AsyncMongoMockClient()
    # The official saver's sixth positional argument is its serializer.
    official_order = (client, "db", "checkpoints", "checkpoint_writes", None, object())
    with pytest.raises(TypeError) as raised:
        cls(*official_order)
    message = str(raised.value)
    assert message.startswith(f"{cls.__name__}() takes at most 5 positional arguments")
    assert "serde=..." in message
    assert "Base" not in message
    with pytest.raises(TypeError, match=r"'db_nmae' \(did you mean 'db_name'\?\)") as raised:
        cls(client, db_nmae="x")
    assert "Base" not in str(raised.value)
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\(\): multiple values .*'client'"):
        cls(client, client=client)
    # A subclass with a constructor of its own takes what it declares.

    class WithOptions(cls):  # type: ignore[misc]
        def __init__(self, client: Any, label: str, **kwargs: Any) -> None:
            super().__init__(client, **kwargs)
            self.label = label

    assert WithOptions(client, "mine", ttl=60).label == "mine"


@pytest.mark.parametrize("cls", SAVERS)
async def test_from_conn_string_without_with_says_how_to_open_it(cls: type[Any]) -> None:
    opener = cls.from_conn_string(NOWHERE)
    opening = "with" if cls is MongoDBSaver else "async with"
    usage = rf"`{opening} {cls.__name__}\.from_conn_string\(\.\.\.\) as saver:`"
    for method in ("get_tuple", "aget_tuple", "setup", "list"):
        with pytest.raises(
            AttributeError, match=rf"not the saver \(asked for '{method}'\).*{usage}"
        ):
            getattr(opener, method)
    assert not hasattr(opener, "put")
    # LangGraph refuses it when the graph is compiled, naming what it got.
    with pytest.raises(TypeError, match="SaverContextManager"):
        StateGraph(LogState).compile(checkpointer=opener)


async def test_client_options_in_any_case_reach_the_client(backend: Backend) -> None:
    async with opened(backend, db_name(), SERVERSELECTIONTIMEOUTMS=1234, appname="my-app") as saver:
        options = saver.client.options
        assert options.server_selection_timeout == 1.234
        assert options.pool_options.metadata["application"] == {"name": "my-app"}


class MyClient(MongoClient[dict[str, Any]]):
    """An application's own client class."""


@pytest.mark.parametrize(
    ("cls", "make_client"),
    [
        (MongoDBSaver, lambda: MongoClient(NOWHERE, connect=False)),
        (MongoDBSaver, lambda: MyClient(NOWHERE, connect=False)),
        (MongoDBSaver, mongomock.MongoClient),
        (AsyncMongoDBSaver, lambda: AsyncMongoClient(NOWHERE)),
        (AsyncMongoDBSaver, lambda: AsyncIOMotorClient(NOWHERE)),
        (AsyncMongoDBSaver, AsyncMongoMockClient),
    ],
)
async def test_each_saver_takes_its_kind_of_client(cls: type[Any], make_client: Any) -> None:
    client = make_client()
    try:
        assert cls(client).client is client
    finally:
        await maybe_await(client.close())


@pytest.mark.parametrize(
    ("cls", "make_client", "named", "use"),
    [
        (MongoDBSaver, lambda: AsyncMongoClient(NOWHERE), "AsyncMongoClient", "AsyncMongoDBSaver"),
        (MongoDBSaver, lambda: AsyncIOMotorClient(NOWHERE), "AsyncIOMotorClient", "Async"),
        # mongomock-motor names its client class after Motor's.
        (MongoDBSaver, AsyncMongoMockClient, "AsyncIOMotorClient", "AsyncMongoDBSaver"),
        (
            AsyncMongoDBSaver,
            lambda: MongoClient(NOWHERE, connect=False),
            "MongoClient",
            "with MongoDBSaver",
        ),
        (
            AsyncMongoDBSaver,
            mongomock.MongoClient,
            "mongomock.mongo_client.MongoClient",
            "with MongoDBSaver",
        ),
        (MongoDBSaver, lambda: "mongodb://localhost", "builtins.str", ""),
    ],
)
async def test_a_client_of_the_other_kind_is_refused_when_the_saver_is_built(
    cls: type[Any], make_client: Any, named: str, use: str
) -> None:
    client = make_client()
    try:
        with pytest.raises(TypeError, match=rf"{cls.__name__} takes .* got \S*{named}") as raised:
            cls(client)
        assert use in str(raised.value)
    finally:
        if not isinstance(client, str):
            await maybe_await(client.close())


async def test_close_closes_only_the_client_from_conn_string_opened(backend: Backend) -> None:
    async with opened(backend, db_name()) as saver:
        owned = saver.client
        async with backend.client() as theirs:
            cls = type(saver)
            passed = cls(theirs, saver.db.name)
            await maybe_await(passed.close())
            async with passed:
                pass
            if cls is MongoDBSaver:
                with passed:
                    pass
            assert not await is_closed(theirs)  # the caller's stays open
        assert not await is_closed(owned)
        await maybe_await(saver.close())
        assert await is_closed(owned)
        await maybe_await(saver.close())  # idempotent
    # ... and leaving `from_conn_string` after a close is fine.


async def test_the_saver_is_a_context_manager_closing_what_it_opened(backend: Backend) -> None:
    async with opened(backend, db_name()) as saver:
        async with saver as entered:
            assert entered is saver
            stored = await put(saver, new_thread())
            assert [
                t.config for t in await listed(saver, config(stored["configurable"]["thread_id"]))
            ] == [stored]
        assert await is_closed(saver.client)
    if isinstance(saver, MongoDBSaver):
        with MongoDBSaver.from_conn_string(backend.uri or "", db_name()) as sync_saver:
            with sync_saver as entered:
                assert entered is sync_saver
            assert await is_closed(sync_saver.client)


async def test_async_close_works_awaited_or_not_and_from_another_thread(backend: Backend) -> None:
    if saver_class(backend) is not AsyncMongoDBSaver:
        pytest.skip("about AsyncMongoDBSaver")
    async with opened(backend, db_name()) as awaited:
        await awaited.close()
        assert await is_closed(awaited.client)
    async with opened(backend, db_name()) as not_awaited:
        not_awaited.close()  # as code written for the official saver's close() calls it
        assert await closes_soon(not_awaited.client)
    async with opened(backend, db_name()) as from_thread:
        await asyncio.to_thread(from_thread.close)
        assert await is_closed(from_thread.client)
    async with opened(backend, db_name()) as managed:
        with managed:
            pass
        assert await closes_soon(managed.client)
