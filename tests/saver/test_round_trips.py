"""Commands sent per operation, counted where a network would see them.

On the wire backends the wire server counts the commands it receives on its sockets
(`getMore` and `killCursors` included, handshakes not: `CommandLog` reads its list);
against a real server (`MONGODB_URI`) the driver's command monitoring counts them. The
in-process mock has no wire: these tests skip it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable
from typing import Any

import pytest

from langgraph.checkpoint.mongo import MongoDBSaver
from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend, CommandLog
from support.helpers import checkpoint, config, either, listed, new_thread, put, read_commands


async def test_commands_per_operation(counting: Backend) -> None:
    log = CommandLog()
    async with counting.saver(log) as saver:
        thread = new_thread()
        stored = await put(saver, thread)
        await put(saver, thread, parent=stored["configurable"]["checkpoint_id"])

        async def sent(operation: Awaitable[object]) -> list[str]:
            """The commands one operation sends (it starts only when awaited here)."""
            log.reset()
            await operation
            return list(log.names)

        saver_ = either(saver)
        cp = checkpoint({"x": 1})
        md = {"source": "loop", "step": 1, "parents": {}}
        assert await sent(saver_.put(config(thread), cp, md, cp["channel_versions"])) == ["update"]
        writes = [("a", 1), ("b", 2), ("__error__", "x")]
        assert await sent(saver_.put_writes(stored, writes, "task")) == ["update"]
        # One write goes as a single update_one: the same one command on the wire.
        assert await sent(saver_.put_writes(stored, [("c", 3)], "task-2")) == ["update"]
        reads = read_commands(saver)  # ["aggregate"]; SecantusDB: its writes apart
        assert await sent(saver_.get_tuple(config(thread))) == reads
        assert await sent(saver_.get_tuple(stored)) == reads
        log.reset()
        assert len(await listed(saver, config(thread))) == 3
        assert log.names == reads
        assert await sent(saver_.delete_thread(thread)) == ["delete", "delete"]


@pytest.mark.mongodb_lookup
async def test_list_streams_across_batches(counting: Backend) -> None:
    log = CommandLog()
    async with counting.saver(log) as saver:
        thread = new_thread()
        for _ in range(250):
            await put(saver, thread)
        log.reset()
        if isinstance(saver, MongoDBSaver):
            iterator: Any = saver.list(config(thread))
            first = await asyncio.to_thread(next, iterator)
            assert log.names == ["aggregate"]  # nothing more read before the first item
            rest = list(iterator)
        else:
            aiterator = saver.alist(config(thread)).__aiter__()
            first = await aiterator.__anext__()
            assert log.names == ["aggregate"]
            rest = [t async for t in aiterator]
        assert first.checkpoint["id"] > rest[0].checkpoint["id"]
        assert len(rest) == 249
        assert log.names[0] == "aggregate"
        assert set(log.names[1:]) == {"getMore"}
        assert len(log.names) >= 2


@pytest.mark.mongodb_lookup
async def test_early_stop_closes_the_server_cursor(counting: Backend) -> None:
    log = CommandLog()
    async with counting.saver(log) as saver:
        thread = new_thread()
        for _ in range(150):
            await put(saver, thread)
        log.reset()
        if isinstance(saver, MongoDBSaver):
            for _ in saver.list(config(thread)):
                break
        else:
            stream = saver.alist(config(thread))
            async for _ in stream:
                break
            assert isinstance(stream, AsyncGenerator)  # closed as LangGraph closes it
            await stream.aclose()
        assert log.names == ["aggregate", "killCursors"]


async def test_requests_riding_with_a_checkpoint_share_its_command(counting: Backend) -> None:
    """`store_checkpoint(document, first=[...])`: an `UpdateMany` on the thread (what the
    expiry stamp's move is) goes in the checkpoint's one `update` command, before the
    upsert, and both land."""
    from pymongo import UpdateMany

    from langgraph.checkpoint.mongo import _operations as ops
    from langgraph.checkpoint.mongo._documents import build_checkpoint, new_checkpoint
    from langgraph.checkpoint.mongo._keys import ref_from_config
    from support.helpers import checkpoint

    log = CommandLog()
    async with counting.saver(log) as saver:
        thread = new_thread()
        first = await put(saver, thread)
        cp = checkpoint({"x": 2})
        parent = config(thread, "", first["configurable"]["checkpoint_id"])
        new = new_checkpoint(ref_from_config(parent), cp, {"step": 2}, parent, {})
        document = build_checkpoint(saver.storage.codec, new).document
        older = {"thread_id": thread, "_id.checkpoint_id": {"$ne": cp["id"]}}
        mark = UpdateMany(older, {"$set": {"marked": True}})

        def plan() -> Any:
            yield ops.store_checkpoint(document, first=[mark])

        log.reset()
        await maybe_await(saver._run("put", plan()))
        assert log.names == ["update"]
        stored = await maybe_await(
            saver.checkpoint_collection.find({"thread_id": thread}).to_list()
        )
        marked = {doc["_id"]["checkpoint_id"]: doc.get("marked") for doc in stored}
        assert marked == {first["configurable"]["checkpoint_id"]: True, cp["id"]: None}
