"""`langgraph.checkpoint.mongo.testing`: the in-process stand-ins users test their apps on.

A graph on each saver, on the module's clients, gives what it gives on `InMemorySaver`; the
mongomock fixes are applied once, when a client is asked for, never by importing the package.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, testing
from support.graphs import chat_graph
from support.helpers import checkpoint, config

pytestmark = pytest.mark.no_server  # the package's own stand-ins or no server at all

CONFIG: Any = {"configurable": {"thread_id": "user-42"}}
TURNS = [
    {"messages": [HumanMessage(text, id=f"human-{i}")]} for i, text in enumerate(["hi", "again"])
]


def _history(graph: Any) -> list[tuple[Any, Any]]:
    return [(s.values, s.next) for s in graph.get_state_history(CONFIG)]


def _expected() -> list[tuple[Any, Any]]:
    graph = chat_graph().compile(checkpointer=InMemorySaver())
    for turn in TURNS:
        graph.invoke(turn, CONFIG)
    return _history(graph)


def test_sync_saver_runs_a_graph_on_client() -> None:
    saver = MongoDBSaver(testing.client())
    saver.setup()
    graph = chat_graph().compile(checkpointer=saver)
    for turn in TURNS:
        graph.invoke(turn, CONFIG)
    assert _history(graph) == _expected()


async def test_async_saver_runs_a_graph_on_async_client() -> None:
    saver = AsyncMongoDBSaver(testing.async_client())
    await saver.setup()
    graph = chat_graph().compile(checkpointer=saver)
    for turn in TURNS:
        await graph.ainvoke(turn, CONFIG)
    history = [(s.values, s.next) async for s in graph.aget_state_history(CONFIG)]
    assert history == _expected()


def test_each_client_is_a_server_of_its_own() -> None:
    first, second = testing.client(), testing.client()
    MongoDBSaver(first).setup()
    assert first.list_database_names() == ["checkpointing_db"]
    assert second.list_database_names() == []


def test_fixes_are_applied_once() -> None:
    from mongomock import aggregate
    from mongomock.collection import BulkOperationBuilder

    testing.client()
    lookup, add_update = aggregate._PIPELINE_HANDLERS["$lookup"], BulkOperationBuilder.add_update
    testing.async_client()
    testing.apply_mongomock_fixes()
    assert aggregate._PIPELINE_HANDLERS["$lookup"] is lookup
    assert BulkOperationBuilder.add_update is add_update


def test_importing_the_package_leaves_mongomock_alone() -> None:
    code = (
        "import sys, langgraph.checkpoint.mongo, langgraph.checkpoint.mongo.testing\n"
        "assert not [m for m in sys.modules if m.startswith('mongomock')], sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_nan_read_back_is_a_new_float_as_from_a_server() -> None:
    """A filter holding the very NaN object that was stored matches nothing, as on a server
    and `InMemorySaver` (both hand back a new float): the stand-in must not match it by
    identity (`[nan] == [nan]` holds for one object)."""
    nan = float("nan")
    memory = InMemorySaver()
    saver = MongoDBSaver(testing.client())
    saver.setup()
    stored = checkpoint()
    for each in (memory, saver):
        each.put(config("t"), stored, {"k": [nan]}, {})
    assert list(memory.list(None, filter={"k": [nan]})) == []
    assert list(saver.list(None, filter={"k": [nan]})) == []


def test_a_partial_index_is_listed_with_its_filter_as_a_server_lists_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`create_indexes` keeps an `IndexModel`'s `partialFilterExpression` (mongomock's drops
    it), so a saver with `ttl` set up once finds its indexes as they are on a server and
    creates nothing the next time."""
    saver = MongoDBSaver(testing.client(), ttl=3600)
    saver.setup()
    partial = saver.checkpoint_collection.index_information()["thread_pinned"]
    assert list(partial["partialFilterExpression"]) == ["thread_touched_at"]
    created: list[Any] = []
    collection = type(saver.checkpoint_collection)
    create = collection.create_indexes

    def counted(*args: Any, **kwargs: Any) -> Any:
        created.append(args)
        return create(*args, **kwargs)

    monkeypatch.setattr(collection, "create_indexes", counted)
    MongoDBSaver(saver.client, ttl=3600).setup()
    assert created == []


def test_the_mock_refuses_documents_over_16_mib_as_a_server_does() -> None:
    """A backend that stores what a server would refuse hides defects: the mock refuses
    each kind of write with mongod's code and keeps nothing of it, and refuses an
    aggregation result over the limit as a server refuses a `$lookup` joining too much."""
    from pymongo.errors import OperationFailure, WriteError

    mib = 1024 * 1024
    coll = testing.client().db.limits
    coll.insert_one({"_id": "grown", "a": b"a" * (9 * mib), "k": 1})
    with pytest.raises(WriteError) as inserted:
        coll.insert_one({"_id": "new", "blob": b"i" * (17 * mib)})
    with pytest.raises(WriteError) as updated:
        coll.update_one({"_id": "grown"}, {"$set": {"b": b"b" * (9 * mib)}})
    with pytest.raises(WriteError) as upserted:
        coll.update_one({"_id": "up"}, {"$set": {"blob": b"u" * (17 * mib)}}, upsert=True)
    assert (inserted.value.code, updated.value.code, upserted.value.code) == (2, 17419, 17420)
    assert [d["_id"] for d in coll.find({}, {"_id": 1})] == ["grown"]
    assert "b" not in coll.find_one({"_id": "grown"})  # rolled back
    coll.insert_one({"_id": "other", "a": b"o" * (9 * mib), "k": 1})
    join = {"from": "limits", "localField": "k", "foreignField": "k", "as": "all"}
    with pytest.raises(OperationFailure) as joined:
        list(coll.aggregate([{"$match": {"_id": "grown"}}, {"$lookup": join}]))
    assert joined.value.code == 4568


def test_without_the_testing_extra_the_import_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib

    monkeypatch.setitem(sys.modules, "mongomock_motor", None)  # not installed
    monkeypatch.delitem(sys.modules, "langgraph.checkpoint.mongo.testing")
    with pytest.raises(ImportError) as missing:
        importlib.import_module("langgraph.checkpoint.mongo.testing")
    assert str(missing.value) == (
        "langgraph.checkpoint.mongo.testing needs mongomock_motor (the testing extra): "
        'pip install "langgraph-checkpoint-mongo[testing]"'
    )


@pytest.mark.parametrize("saver", ["MongoDBSaver", "AsyncMongoDBSaver"])
def test_a_plain_mongomock_client_is_refused_naming_the_testing_client(saver: str) -> None:
    """Before the fixes, its first call failed with mongomock's `NotImplementedError`."""
    client, maker = (
        ("mongomock_motor.AsyncMongoMockClient()", "async_client")
        if saver == "AsyncMongoDBSaver"
        else ("mongomock.MongoClient()", "client")
    )
    code = (
        f"import mongomock, mongomock_motor\n"
        f"from langgraph.checkpoint.mongo import {saver}\n"
        f"{saver}({client})\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 1
    shown = client.removesuffix("()")
    assert run.stderr.splitlines()[-1] == (
        f"TypeError: {saver} got a plain {shown}, which lacks commands the savers send "
        "(listCollections, $lookup with a pipeline): build it with "
        f"langgraph.checkpoint.mongo.testing.{maker}(), or call "
        "langgraph.checkpoint.mongo.testing.apply_mongomock_fixes() before the first saver"
    )
