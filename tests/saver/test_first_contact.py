"""Switching from `langgraph-checkpoint-mongodb` by changing only the import.

Both packages default to the same database and collection names, and the official saver
creates its indexes in its constructor, so code that switches has no `setup()` call. The
first command our saver sends must refuse the official saver's collections by name,
before anything is written, and no driver error (E11000) may reach the user.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from langgraph.types import Command as Resume

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver
from support.backends import Backend
from support.graphs import Driver, linear_graph
from support.helpers import config, either, listed, new_thread, put
from support.migration_sources import official_saver_class

# What every refusal says: who wrote the collections, and where the way out is.
REFUSAL = r"langgraph-checkpoint-mongodb(?s:.*)checkpoint_collection_name=(?s:.*)/migrating/"


@asynccontextmanager
async def official_database(backend: Backend) -> AsyncIterator[tuple[str, str]]:
    """A database where the official saver left a thread waiting at an interrupt, in its
    default collections: (database name, thread id)."""
    official = official_saver_class()
    db_name = f"official_{uuid.uuid4().hex[:12]}"
    thread = new_thread()
    async with backend.sync_client() as client:
        try:
            builder = linear_graph("a", "ask", "b", ask="ask")
            graph = Driver(builder.compile(official(client, db_name)), True)
            await graph.invoke({"log": []}, config(thread))
            assert (await graph.state(config(thread))).next == ("ask",)
            yield db_name, thread
        finally:
            client.drop_database(db_name)


async def stored(backend: Backend, db_name: str) -> list[Any]:
    """Every document of the default collections, sorted, to compare before and after."""
    async with backend.sync_client() as client:
        db = client[db_name]
        return [
            sorted(repr(doc) for doc in db[name].find())
            for name in ("checkpoints", "checkpoint_writes")
        ]


def our_saver(backend: Backend, client: Any, db_name: str, **kwargs: Any) -> Any:
    cls = MongoDBSaver if backend.is_sync else AsyncMongoDBSaver
    return cls(client, db_name, **kwargs)


async def test_resuming_the_official_savers_interrupt_is_refused_by_name(
    backend: Backend,
) -> None:
    async with official_database(backend) as (db_name, thread), backend.client() as client:
        before = await stored(backend, db_name)
        saver = our_saver(backend, client, db_name)  # the import changed, nothing else
        graph = Driver(linear_graph("a", "ask", "b", ask="ask").compile(saver), backend.is_sync)
        with pytest.raises(ValueError, match=REFUSAL):
            await graph.state(config(thread))
        with pytest.raises(ValueError, match=REFUSAL):
            await graph.invoke(Resume(resume="yes"), config(thread))
        with pytest.raises(ValueError, match=REFUSAL):
            await graph.invoke({"log": []}, config(new_thread()))
        assert await stored(backend, db_name) == before


# A first call of each kind, on thread `t`.
FIRST_CALLS: dict[str, Callable[[Any, str], Awaitable[Any]]] = {
    "get_tuple": lambda saver, t: either(saver).get_tuple(config(t)),
    "list": lambda saver, t: listed(saver, None),
    "put": lambda saver, t: put(saver, t),
    "put_writes": lambda saver, t: either(saver).put_writes(
        config(t, checkpoint_id="1"), [("c", 1)], "task"
    ),
    "delete_thread": lambda saver, t: either(saver).delete_thread(t),
    "copy_thread": lambda saver, t: either(saver).copy_thread(t, new_thread()),
    "get_delta_channel_history": lambda saver, t: either(saver).get_delta_channel_history(
        config=config(t), channels=["log"]
    ),
}


@pytest.mark.parametrize("first", FIRST_CALLS)
async def test_every_first_command_refuses_before_writing(backend: Backend, first: str) -> None:
    async with official_database(backend) as (db_name, thread), backend.client() as client:
        before = await stored(backend, db_name)
        saver = our_saver(backend, client, db_name)
        with pytest.raises(ValueError, match=REFUSAL):
            await FIRST_CALLS[first](saver, thread)
        assert await stored(backend, db_name) == before


async def test_the_official_savers_writes_collection_alone_is_refused(backend: Backend) -> None:
    # Our own checkpoints collection, the official saver's default writes collection: our
    # writes would break its unique index (E11000) or land among its documents.
    async with official_database(backend) as (db_name, thread), backend.client() as client:
        before = await stored(backend, db_name)
        saver = our_saver(backend, client, db_name, checkpoint_collection_name="ours")
        with pytest.raises(ValueError, match="'checkpoint_writes' has the index"):
            await put(saver, thread)
        assert await stored(backend, db_name) == before
