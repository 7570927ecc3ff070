"""Many graph runs at once on one saver, driver errors, logging, and valid documents."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any

import bson
import pytest
from langgraph.graph import START, StateGraph
from pymongo import AsyncMongoClient, MongoClient
from pymongo.errors import PyMongoError
from typing_extensions import TypedDict

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver
from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend
from support.graphs import Driver
from support.helpers import config, either, listed, new_thread, put


def _append(left: list[str], right: list[str]) -> list[str]:
    return left + right


class State(TypedDict):
    log: Annotated[list[str], _append]
    owner: str


def step_graph(checkpointer: Any) -> Any:
    def first(state: State) -> dict[str, Any]:
        return {"log": [f"{state['owner']}:first"]}

    def second(state: State) -> dict[str, Any]:
        return {"log": [f"{state['owner']}:second:{len(state['log'])}"]}

    builder: StateGraph[Any] = StateGraph(State)
    builder.add_node("first", first)
    builder.add_node("second", second)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    return builder.compile(checkpointer=checkpointer)


RUNS = 200


def expected(owner: str) -> list[str]:
    return [f"{owner}:first", f"{owner}:second:1"]


@pytest.mark.soak
async def test_200_concurrent_runs_each_end_with_their_own_state(backend: Backend) -> None:
    async with backend.saver() as saver:
        graph = step_graph(saver)
        owners = [f"owner-{i}-{new_thread()}" for i in range(RUNS)]

        def cfg(owner: str) -> Any:
            return config(owner)

        if backend.is_sync:
            # One sync saver shared by OS threads, as in a threaded web server.
            def run(owner: str) -> Any:
                graph.invoke({"owner": owner, "log": []}, cfg(owner))
                return graph.get_state(cfg(owner))

            with ThreadPoolExecutor(max_workers=32) as pool:
                states = await asyncio.to_thread(lambda: list(pool.map(run, owners)))
        else:

            async def arun(owner: str) -> Any:
                await graph.ainvoke({"owner": owner, "log": []}, cfg(owner))
                return await graph.aget_state(cfg(owner))

            states = await asyncio.gather(*(arun(owner) for owner in owners))
        for owner, state in zip(owners, states, strict=True):
            assert state.values == {"owner": owner, "log": expected(owner)}
        for owner in owners[:5]:
            history = await Driver(graph, backend.is_sync).history(cfg(owner))
            # Newest first: steps 2, 1, 0 carry the owner, the input checkpoint (-1) none.
            assert [s.values.get("owner") for s in history] == [owner, owner, owner, None]


async def test_every_stored_document_is_valid_bson_under_the_limit(backend: Backend) -> None:
    async with backend.saver() as saver:
        graph = step_graph(saver)
        owner = new_thread()
        if backend.is_sync:
            await asyncio.to_thread(graph.invoke, {"owner": owner, "log": []}, config(owner))
        else:
            await graph.ainvoke({"owner": owner, "log": []}, config(owner))
        stored = await put(saver, owner, metadata={"a.b": 1, "$x": {"y": (1, 2)}, "n": 2**62})
        await either(saver).put_writes(stored, [("c", {"nested": [1, "x"]})], "t")
        seen = 0
        for collection in (saver.checkpoint_collection, saver.writes_collection):
            docs = await maybe_await(collection.find({"thread_id": owner}).to_list(None))
            for doc in docs:
                assert len(bson.encode(doc)) < 16 * 1024 * 1024
                seen += 1
        assert seen > 5


async def test_driver_errors_propagate_and_are_logged(
    real_driver: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    backend = real_driver
    # Nothing listens on port 9 of the loopback: server selection times out.
    uri = "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200&connectTimeoutMS=200"
    caplog.set_level(logging.DEBUG, logger="langgraph.checkpoint.mongo")
    if backend.is_sync:
        client: Any = MongoClient(uri)
        saver: Any = MongoDBSaver(client, "unreachable")
    elif backend.name.endswith("motor"):
        from motor.motor_asyncio import AsyncIOMotorClient

        client = AsyncIOMotorClient(uri)
        saver = AsyncMongoDBSaver(client, "unreachable")
    else:
        client = AsyncMongoClient(uri)
        saver = AsyncMongoDBSaver(client, "unreachable")
    try:
        with pytest.raises(PyMongoError):  # the setup() before the first command
            await either(saver).get_tuple(config("t"))
        saver._setup_state.done = True  # from here, each operation's own commands
        with pytest.raises(PyMongoError):
            await either(saver).get_tuple(config("t"))
        with pytest.raises(PyMongoError):
            await put(saver, "t")
        with pytest.raises(PyMongoError):  # Motor sends it at the first fetch: still logged
            await listed(saver, config("t"))
    finally:
        await maybe_await(client.close())
    failures = [r.getMessage() for r in caplog.records if " failed " in r.getMessage()]
    assert [m.split(" failed ")[0] for m in failures] == [
        "setup: database.command",
        "get_tuple: checkpoints.aggregate",
        "put: checkpoints.update_one",
        "list: checkpoints.aggregate",
    ]
    assert all(r.exc_info for r in caplog.records if " failed " in r.getMessage())


async def test_each_command_is_logged_with_its_duration(
    saver: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="langgraph.checkpoint.mongo")
    stored = await put(saver, new_thread())
    await either(saver).get_tuple(stored)
    await listed(saver, stored)
    messages = [r.getMessage() for r in caplog.records if r.name == "langgraph.checkpoint.mongo"]
    assert any(
        m.startswith("put: checkpoints.update_one took ") and m.endswith(" ms") for m in messages
    )
    assert any(m.startswith("get_tuple: checkpoints.aggregate took ") for m in messages)
    assert any(m.startswith("list: checkpoints.aggregate took ") for m in messages)
