"""The Agent Server factory, used as the server uses it: load `examples/agent_server/`
from its `langgraph.json`, enter the checkpointer, run the graph through the async API,
exit, and find the client closed; on every backend."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import re
import socket
import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pymongo.errors import InvalidOperation, OperationFailure, ServerSelectionTimeoutError

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, agent_server
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._options import redact_uri
from langgraph.checkpoint.mongo.agent_server import Settings, checkpointer
from support.backends import Backend
from support.helpers import new_thread, put

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "agent_server"


def load(path: str) -> Any:
    """What the server does with a `"./file.py:name"` path of `langgraph.json`."""
    file, _, name = path.partition(":")
    spec = importlib.util.spec_from_file_location(
        f"agent_example_{Path(file).stem}", EXAMPLE / file
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


# Every place that gives users a `langgraph.json` checkpointer path.
DOCUMENTED = [
    "docs/agent-server.md",
    "examples/agent_server/README.md",
    "examples/agent_server/langgraph.json",
    "examples/agent_server/checkpointer.py",
    "src/langgraph/checkpoint/mongo/agent_server.py",
    "CHANGELOG.md",
]


def test_every_documented_path_resolves_as_langgraph_api_resolves_it() -> None:
    """langgraph-api 0.16 reads a path holding `/` or `.py:` as `file:name` (the file
    relative to where `langgraph dev` runs: the example's directory), any other as a module
    path split on its LAST `.`. tests/agent_server/test_agent_server_e2e.py starts the real
    server with both forms; this keeps every path the docs give one of them."""
    paths = {
        path
        for name in DOCUMENTED
        for path in re.findall(r'"path":\s*"([^"]+)"', (ROOT / name).read_text())
    }
    assert paths == {
        "./checkpointer.py:checkpointer",
        "langgraph.checkpoint.mongo.agent_server.checkpointer",
    }
    for path in paths:
        if "/" in path or ".py:" in path:
            assert load(path) is checkpointer
        else:
            module, _, name = path.rpartition(".")
            assert vars(importlib.import_module(module)).get(name) is checkpointer, path


async def factory_arguments(
    backend: Backend, stack: AsyncExitStack, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, Any], Any]:
    """What the factory is called with on `backend`, and a watch on the client's `close`
    (the mock's does nothing) or `None`. The server calls the factory without arguments:
    MONGODB_URI names the server. The in-process mock has no URI, and Motor is not what
    the factory creates: those two hand it their client, which it closes on exit all the
    same."""
    if backend.name != "mock" and not backend.name.endswith("motor"):
        monkeypatch.setenv("MONGODB_URI", str(backend.uri))
        return {}, None
    client = await stack.enter_async_context(backend.client())
    close = None
    if backend.name == "mock":
        close = stack.enter_context(mock.patch.object(client, "close", wraps=client.close))
    return {"client": client}, close


async def test_the_example_runs_on_the_factory(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = json.loads((EXAMPLE / "langgraph.json").read_text())
    factory = load(config["checkpointer"]["path"])
    graph = load(config["graphs"]["chat"])
    db_name = f"agent_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("MONGODB_DB_NAME", db_name)
    monkeypatch.setenv("MONGODB_COMPRESSION", "zstd")
    monkeypatch.setenv("MONGODB_TTL_SECONDS", "3600")
    monkeypatch.setenv("MONGODB_KEEP_LAST", "3")
    monkeypatch.setenv("MONGODB_REFRESH_TTL_ON_READ", "true")
    monkeypatch.setenv("MONGODB_STATE_MAX_BYTES", str(32 * 1024 * 1024))
    monkeypatch.setenv("MONGODB_CACHE_MAX_BYTES", "0")
    monkeypatch.setenv("MONGODB_STATE_WARN_BYTES", str(4 * 1024 * 1024))
    async with AsyncExitStack() as stack:
        kwargs, close = await factory_arguments(backend, stack, monkeypatch)
        async with factory(**kwargs) as saver:
            assert isinstance(saver, AsyncMongoDBSaver)
            assert saver.ttl is not None
            assert (saver.db.name, saver.compression, saver.ttl.total_seconds()) == (
                db_name,
                "zstd",
                3600,
            )
            assert saver.keep_last == 3
            assert saver.refresh_ttl_on_read is True
            assert saver.storage.max_bytes == 32 * 1024 * 1024
            assert saver.storage.recent.max_bytes == 0
            assert saver.storage.warn_bytes == 4 * 1024 * 1024
            # What the server checks for: present, so rollback, fast copies and pruning work.
            for method in ("adelete_for_runs", "acopy_thread", "aprune"):
                assert getattr(type(saver), method) is not getattr(BaseCheckpointSaver, method)
            running = graph.copy(update={"checkpointer": saver})
            thread: RunnableConfig = {"configurable": {"thread_id": "t"}}
            await running.ainvoke({"messages": [("user", "hi")]}, thread)
            out = await running.ainvoke({"messages": [("user", "again")]}, thread)
            assert out["messages"][-1].content == "message 2 of this thread: again"
            await saver.acopy_thread("t", "copy")
            state = await running.aget_state({"configurable": {"thread_id": "copy"}})
            assert len(state.values["messages"]) == 4
            await maybe_await(saver.client.drop_database(db_name))
        if close is not None:
            close.assert_called_once_with()
        else:
            with pytest.raises(InvalidOperation):
                await saver.aget_tuple(thread)


@dataclasses.dataclass
class Order:
    """A type of an application's state that `MONGODB_ALLOWED_MSGPACK_MODULES` allows."""

    number: int


@dataclasses.dataclass
class Unlisted:
    """A type it does not allow."""

    name: str


async def test_allowed_msgpack_modules_make_the_factorys_serializer_strict(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """langchain-ai/langgraph#7695: strict mode under the server, with the application's
    own types allowed. An allowed type comes back as itself, another as LangGraph's
    stand-in (its fields as a dict), as `InMemorySaver` with the same serializer does."""
    db_name = f"agent_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("MONGODB_DB_NAME", db_name)
    monkeypatch.setenv("MONGODB_ALLOWED_MSGPACK_MODULES", f" {__name__}:Order ,os:PathLike")
    values = {"order": Order(7), "other": Unlisted("x"), "when": uuid.UUID(int=1)}
    async with AsyncExitStack() as stack:
        kwargs, _ = await factory_arguments(backend, stack, monkeypatch)
        async with checkpointer(**kwargs) as saver:
            assert isinstance(saver.serde, JsonPlusSerializer)
            stored = await put(saver, new_thread(), values=values)
            tuple_ = await saver.aget_tuple(stored)
            assert tuple_ is not None
            restored = tuple_.checkpoint["channel_values"]
            await maybe_await(saver.client.drop_database(db_name))
    memory = InMemorySaver(serde=saver.serde)
    in_memory = await memory.aget_tuple(await put(memory, new_thread(), values=values))
    assert in_memory is not None
    assert restored == in_memory.checkpoint["channel_values"]
    assert restored == {"order": Order(7), "other": {"name": "x"}, "when": uuid.UUID(int=1)}


def test_settings_come_from_the_environment() -> None:
    assert Settings.from_env({}) == Settings()
    env = {
        "MONGODB_URI": "mongodb://db.example:27017",
        "MONGODB_DB_NAME": "agents",
        "MONGODB_CHECKPOINT_COLLECTION": "cps",
        "MONGODB_WRITES_COLLECTION": "ws",
        "MONGODB_TTL_SECONDS": "86400",
        "MONGODB_COMPRESSION": "ZSTD",
        "MONGODB_TARGETED_JOINS": "false",
        "MONGODB_ALLOWED_MSGPACK_MODULES": "my_agent.models:Order,my_agent.state:Cart",
        "MONGODB_KEEP_LAST": "10",
        "MONGODB_REFRESH_TTL_ON_READ": "yes",
        "MONGODB_STATE_MAX_BYTES": "33554432",
        "MONGODB_CACHE_MAX_BYTES": "0",
        "MONGODB_STATE_WARN_BYTES": "0",
    }
    assert Settings.from_env(env) == Settings(
        "mongodb://db.example:27017",
        "agents",
        "cps",
        "ws",
        86400.0,
        "zstd",
        False,
        (("my_agent.models", "Order"), ("my_agent.state", "Cart")),
        10,
        True,
        33554432,
        0,
        0,
    )


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("MONGODB_TTL_SECONDS", "a day", "must be a number of seconds"),
        *(
            ("MONGODB_TTL_SECONDS", value, "must be from 1 to 2147483647 seconds")
            for value in ("inf", "-inf", "1e400", "nan", "-5", "0", "0.5", "2147483648")
        ),
        ("MONGODB_COMPRESSION", "lz4", "must be one of zlib, zstd or None"),
        ("MONGODB_TARGETED_JOINS", "maybe", "must be true or false"),
        *(
            ("MONGODB_ALLOWED_MSGPACK_MODULES", value, "must name types as module:Name")
            for value in ("my_agent.models.Order", "my agent:Order", "a:B:C", "a:", ":B", "a.:B")
        ),
        *(("MONGODB_KEEP_LAST", value, "must be 1 or more") for value in ("0", "-1")),
        ("MONGODB_KEEP_LAST", str(2**63), "must be at most 2**63 - 1 (a BSON int64)"),
        *(("MONGODB_KEEP_LAST", value, "must be a whole number") for value in ("2.5", "ten")),
        ("MONGODB_REFRESH_TTL_ON_READ", "sometimes", "must be true or false"),
        *(
            ("MONGODB_STATE_MAX_BYTES", value, "must be at least 16777216")
            for value in ("16777215", "0", "-1")
        ),
        *(
            (variable, value, "must be a whole number")
            for variable in (
                "MONGODB_STATE_MAX_BYTES",
                "MONGODB_CACHE_MAX_BYTES",
                "MONGODB_STATE_WARN_BYTES",
            )
            for value in ("64MiB", "1e8", "2.5")
        ),
        ("MONGODB_CACHE_MAX_BYTES", "-1", "must be 0 (no cache) or more bytes"),
        ("MONGODB_STATE_WARN_BYTES", "-1", "must be 0 (no warning) or more bytes"),
        *(
            ("MONGODB_DB_NAME", value, "must be a MongoDB database name")
            for value in ("my.db", "my db", "a/b", "a\\b", "a$b", 'a"b', "a\x00b", "d" * 64)
        ),
        *(
            (variable, value, "must be a MongoDB collection name")
            for variable in ("MONGODB_CHECKPOINT_COLLECTION", "MONGODB_WRITES_COLLECTION")
            for value in ("a$b", "a\x00b", "a..b", ".a", "a.", "system.cps")
        ),
    ],
)
def test_a_bad_variable_is_named(variable: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{variable} {message}")):
        Settings.from_env({"MONGODB_URI": "mongodb://db.example", variable: value})


@pytest.mark.parametrize("ttl", [None, ""])
def test_refresh_ttl_on_read_without_a_ttl_names_both_variables(ttl: str | None) -> None:
    env = {"MONGODB_REFRESH_TTL_ON_READ": "true"}
    if ttl is not None:
        env["MONGODB_TTL_SECONDS"] = ttl  # empty: unset
    with pytest.raises(
        ValueError,
        match=r"MONGODB_REFRESH_TTL_ON_READ must be False without MONGODB_TTL_SECONDS: .*; "
        r"set MONGODB_TTL_SECONDS too",
    ):
        Settings.from_env(env)
    assert Settings.from_env({**env, "MONGODB_REFRESH_TTL_ON_READ": "false"}) == Settings()


@pytest.mark.parametrize(
    "env",
    [
        {"MONGODB_CHECKPOINT_COLLECTION": "same", "MONGODB_WRITES_COLLECTION": "same"},
        {"MONGODB_WRITES_COLLECTION": "checkpoints"},  # the other's default
        {"MONGODB_CHECKPOINT_COLLECTION": "checkpoint_writes"},
    ],
)
def test_equal_collection_names_are_named(env: dict[str, str]) -> None:
    with pytest.raises(
        ValueError,
        match="MONGODB_CHECKPOINT_COLLECTION and MONGODB_WRITES_COLLECTION must name two "
        "different collections",
    ):
        Settings.from_env(env)


async def test_a_bad_variable_stops_the_factory_before_any_io(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What the server runs at startup: the factory without arguments."""
    monkeypatch.setenv("MONGODB_URI", "mongodb://db.example")
    monkeypatch.setenv("MONGODB_TTL_SECONDS", "nan")

    def no_client(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a client was created before the settings were checked")

    monkeypatch.setattr(agent_server, "AsyncMongoClient", no_client)
    with pytest.raises(ValueError, match="MONGODB_TTL_SECONDS"):
        async with checkpointer():
            pass


async def test_a_malformed_uri_is_named_without_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MONGODB_URI", "mongodb://app:s3cret@db.example:notaport/")
    with pytest.raises(ValueError, match=r"MONGODB_URI 'mongodb://\*\*\*@db") as raised:
        async with checkpointer():
            pass
    assert "s3cret" not in str(raised.value)


async def test_an_unreachable_server_is_named_without_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(
        "MONGODB_URI", f"mongodb://app:s3cret@127.0.0.1:{port}/?serverSelectionTimeoutMS=200"
    )
    with pytest.raises(ServerSelectionTimeoutError) as raised:
        async with checkpointer():
            pass
    message = str(raised.value)
    assert f"MONGODB_URI 'mongodb://***@127.0.0.1:{port}/?***'" in message
    assert "serverSelectionTimeoutMS" in message
    assert "s3cret" not in message


async def test_a_refused_login_is_one_line_without_the_password(
    monkeypatch: pytest.MonkeyPatch, wire_server: Any
) -> None:
    """It was the server's whole error document."""
    uri = wire_server.uri.replace("mongodb://", "mongodb://app:s3cret@")
    monkeypatch.setenv("MONGODB_URI", uri)
    with pytest.raises(OperationFailure) as raised:
        async with checkpointer():
            pass
    assert raised.value.code == 18
    assert str(raised.value) == (
        f"the server of MONGODB_URI {redact_uri(uri)!r} refused the login (Authentication "
        "failed: the stand-in server has no users or authentication; connect without a "
        "username and password): check the user name, password and authSource in MONGODB_URI"
    )


async def test_without_a_uri_the_factory_says_what_is_missing() -> None:
    with pytest.raises(ValueError, match="MONGODB_URI is not set"):
        async with checkpointer(Settings()):
            pass
