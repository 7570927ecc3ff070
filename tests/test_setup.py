"""`setup()`: the indexes, the switches for services that refuse some, and its errors."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo import IndexCreationError
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._channel_values import RecentValues
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._commands import Command, Target
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._queries import WritesJoin
from langgraph.checkpoint.mongo._runners import run_plan
from support.backends import Backend
from support.helpers import config, listed, new_thread, put


async def run_setup(saver: Any, **kwargs: Any) -> None:
    await maybe_await(saver.setup(**kwargs))


async def index_names(collection: Any) -> set[str]:
    return set(await maybe_await(collection.index_information()))


async def test_setup_is_idempotent_and_creates_every_index(saver: Any) -> None:
    for _ in range(2):
        await run_setup(saver)
    assert {"thread_ns_checkpoint", "metadata_run_id"} <= await index_names(
        saver.checkpoint_collection
    )
    writes_indexes = await index_names(saver.writes_collection)
    assert "thread_checkpoint" in writes_indexes
    assert "checkpoint" not in writes_indexes  # only the plain join needs it


async def test_plain_joins_get_the_index_they_need(backend: Backend) -> None:
    async with backend.saver(targeted_joins=False) as plain:
        assert {"thread_checkpoint", "checkpoint"} <= await index_names(plain.writes_collection)


async def test_skip_indexes_and_create_indexes_false(backend: Backend) -> None:
    async with backend.client() as client:
        from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver

        cls = MongoDBSaver if backend.is_sync else AsyncMongoDBSaver
        db_name = f"test_{new_thread()}"
        try:
            skipping = cls(client, db_name)
            await run_setup(skipping, skip_indexes={"metadata_run_id"})
            assert "metadata_run_id" not in await index_names(skipping.checkpoint_collection)
            assert "thread_ns_checkpoint" in await index_names(skipping.checkpoint_collection)
            none = cls(client, db_name, "other_checkpoints", "other_writes")
            await run_setup(none, create_indexes=False)
            assert await index_names(none.checkpoint_collection) <= {"_id_"}
            # The saver works without its indexes, only slower.
            thread = new_thread()
            stored = await put(none, thread)
            assert [t.config for t in await listed(none, config(thread))] == [stored]
            with pytest.raises(ValueError, match="no_such_index"):
                await run_setup(none, skip_indexes=["no_such_index"])
            with pytest.raises(TypeError, match="skip_indexes"):
                await run_setup(none, skip_indexes=[1])
        finally:
            await maybe_await(client.drop_database(db_name))


async def test_refused_index_names_index_collection_and_fix(saver: Any) -> None:
    # Another index already holds the name with other keys: the server refuses ours.
    await maybe_await(saver.writes_collection.drop_index("thread_checkpoint"))
    await maybe_await(
        saver.writes_collection.create_index([("channel", 1)], name="thread_checkpoint")
    )
    with pytest.raises(IndexCreationError) as caught:
        await run_setup(saver)
    message = str(caught.value)
    assert "'thread_checkpoint'" in message
    assert saver.writes_collection_name in message
    assert "skip_indexes={'thread_checkpoint'}" in message
    assert caught.value.collection == saver.writes_collection_name
    await run_setup(saver, skip_indexes={"thread_checkpoint"})


async def test_setup_refuses_the_official_savers_collections(saver: Any) -> None:
    # langgraph-checkpoint-mongodb uses the same default collection names and creates this
    # index on them; a read of one namespace would not see its documents (they have no
    # `_id.checkpoint_ns`), so setup() says so instead.
    await maybe_await(
        saver.checkpoint_collection.create_index(
            [("thread_id", 1), ("checkpoint_ns", 1), ("checkpoint_id", -1)], unique=True
        )
    )
    with pytest.raises(ValueError, match="checkpoint_collection_name="):
        await run_setup(saver, create_indexes=False)  # a read, so checked all the same
    with pytest.raises(ValueError, match="thread_id_1_checkpoint_ns_1_checkpoint_id_-1") as caught:
        await run_setup(saver)
    message = str(caught.value)
    assert saver.checkpoint_collection_name in message
    assert "langgraph-checkpoint-mongodb" in message
    assert "checkpoint_collection_name=" in message


def _setup_answering(options: dict[str, Any]) -> None:
    """Run setup()'s plan, the server answering `options()` with `options`, every other
    command with nothing: mongomock keeps no collation (the integration suite creates a
    collection with one on a real server)."""
    names = {Target.CHECKPOINTS: "cps", Target.WRITES: "ws"}
    storage = ops.Storage(Codec(JsonPlusSerializer()), WritesJoin("ws"), None, RecentValues())
    plan = ops.setup(storage, names, True, ())

    def answer(command: Command) -> Any:
        return options if command.method == "options" else {}

    run_plan(plan, answer)


def test_setup_refuses_a_default_collation_other_than_the_binary_one() -> None:
    with pytest.raises(ValueError, match=r"'cps' has the default collation .*'locale': 'en'"):
        _setup_answering({"collation": {"locale": "en", "strength": 2}})
    _setup_answering({"collation": {"locale": "simple"}})
    _setup_answering({})
