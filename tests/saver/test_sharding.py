"""Every command of a thread's operations names its thread: what a sharded cluster targets.

Both collections can shard on `{thread_id: "hashed"}`; a command that names the thread
by equality (or `$in`) goes to the shards that hold it, anything else to every shard.
The commands are recorded as the async saver sends them, on the in-process backend.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, testing
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._commands import Command
from langgraph.checkpoint.mongo._schema import Joined
from langgraph.checkpoint.mongo.migrate import acopy_threads
from support.backends import Backend
from support.helpers import config, either, listed, new_thread, put


def _names_thread(query: Any, thread: str) -> bool:
    value = query.get("thread_id")
    return bool(value == thread or value == {"$in": [thread]})


def _targets(command: Command, thread: str) -> bool:
    if command.method == "aggregate":
        [pipeline] = command.args
        lookups = [stage["$lookup"] for stage in pipeline if "$lookup" in stage]
        return _names_thread(pipeline[0]["$match"], thread) and all(
            any(_names_thread(s.get("$match", {}), thread) for s in lookup.get("pipeline", []))
            for lookup in lookups
        )
    if command.method == "bulk_write":
        [requests] = command.args
        return all(_names_thread(request._filter, thread) for request in requests)
    return _names_thread(command.args[0], thread)


@pytest.mark.parametrize("keep_last", [None, 1])
async def test_thread_operations_name_their_thread(
    sent_commands: list[Command], keep_last: int | None
) -> None:
    """With `keep_last`: `get_tuple`'s count `$lookup` and the background trim too."""
    saver = AsyncMongoDBSaver(testing.async_client(), ttl=3600, keep_last=keep_last)
    await saver.setup()
    thread, copy = new_thread(), new_thread()
    sent_commands.clear()
    first = await put(saver, thread, metadata={"run_id": "r1"})
    second = await put(saver, thread, parent=first["configurable"]["checkpoint_id"])
    latest = second
    for _ in range(ops.slack(1)):
        latest = await put(saver, thread, parent=latest["configurable"]["checkpoint_id"])
    await either(saver).get_tuple(config(thread))  # over the bound: the next put trims
    latest = await put(saver, thread, parent=latest["configurable"]["checkpoint_id"])
    await saver.settle()
    if keep_last is not None:
        assert sum(c.method == "delete_many" for c in sent_commands) == 2
    await either(saver).put_writes(latest, [("a", 0)], "task")
    await either(saver).put_writes(second, [("a", 1), ("__error__", "x")], "task")
    await either(saver).put_writes(second, [("b", 2)], "task-2")  # one write, with its check
    await either(saver).get_tuple(config(thread))
    await either(saver).get_tuple(second)
    await listed(saver, config(thread), limit=5)
    await either(saver).get_delta_channel_history(config=second, channels=["a"])
    await either(saver).prune([thread], strategy="keep_latest")
    await either(saver).delete_thread(thread)
    # With `ttl`, every write carries the check of a pin: a `bulk_write`, never an `update_one`.
    assert {c.method for c in sent_commands} >= {"bulk_write", "aggregate", "find"}
    assert [c for c in sent_commands if not _targets(c, thread)] == []

    # copy_thread reads the source thread and writes the target's.
    await put(saver, thread)
    sent_commands.clear()
    await either(saver).copy_thread(thread, copy)
    reads = [c for c in sent_commands if c.method == "find"]
    writes = [c for c in sent_commands if c.method != "find"]
    assert reads
    assert writes
    assert all(_targets(c, thread) for c in reads)
    assert all(_targets(c, copy) for c in writes)


def _upserts(commands: list[Command]) -> list[tuple[str, dict[str, Any]]]:
    """(method, filter) of every upsert among `commands`."""
    found = []
    for command in commands:
        if command.method == "update_one" and command.kwargs.get("upsert"):
            found.append((str(command.method), command.args[0]))
        elif command.method == "bulk_write":
            [requests] = command.args
            found += [(str(command.method), r._filter) for r in requests if r._upsert]
    return found


def _thread_of_key(key: dict[str, Any]) -> str:
    """The thread in a checkpoint's `_id`, or in a write's (under its checkpoint's key)."""
    return str(key["checkpoint"]["thread_id"] if "checkpoint" in key else key["thread_id"])


async def test_every_upsert_filter_carries_the_thread_id_of_its_document(
    sent_commands: list[Command],
) -> None:
    """On a collection sharded on `{thread_id: "hashed"}`, `_id` is unique per shard only:
    an `_id` holds its thread id, and it stays unique across shards because every upsert's
    filter names that thread by equality (the server routes it to the thread's shard and
    refuses an upsert without the shard key). Every write path is run here, copying
    threads in included."""
    saver = AsyncMongoDBSaver(testing.async_client(), ttl=3600)
    await saver.setup()
    thread, copy, source_thread = new_thread(), new_thread(), new_thread()
    source = InMemorySaver()
    await put(source, source_thread)
    sent_commands.clear()
    first = await put(saver, thread, metadata={"run_id": "r1"})
    second = await put(saver, thread, parent=first["configurable"]["checkpoint_id"])
    await either(saver).put_writes(second, [("a", 1), ("__error__", "x")], "task")
    await either(saver).put_writes(second, [("b", 2)], "task-2")
    await either(saver).copy_thread(thread, copy)
    await acopy_threads(source, saver)
    upserts = _upserts(sent_commands)
    assert {method for method, _ in upserts} == {"update_one", "bulk_write"}
    assert len(upserts) == 2 + 3 + 2 + 3 + 1  # puts, writes, the copy, the copied-in thread
    for _, filter_ in upserts:
        assert set(filter_) == {"_id", "thread_id"}
        assert filter_["thread_id"] == _thread_of_key(filter_["_id"])


async def test_scatter_gather_is_what_the_readme_says(sent_commands: list[Command]) -> None:
    """`list(None)` and `delete_for_runs`' lookup by run id search every thread."""
    saver = AsyncMongoDBSaver(testing.async_client())
    thread = new_thread()
    await put(saver, thread, metadata={"run_id": "r1"})
    sent_commands.clear()
    await listed(saver, None)
    [search] = sent_commands
    assert "thread_id" not in search.args[0][0]["$match"]
    sent_commands.clear()
    await either(saver).delete_for_runs(["r1"])
    assert "thread_id" not in sent_commands[0].args[0]
    assert all(_targets(c, thread) for c in sent_commands[1:])


async def test_plain_joins_for_services_without_the_concise_lookup(
    backend: Backend, sent_commands: list[Command]
) -> None:
    """`targeted_joins=False` (Azure Cosmos DB for MongoDB) sends the plain `$lookup`
    and reads the same tuples (the joined plan on every server, whatever `setup()` chose
    for this one)."""
    async with (
        backend.saver() as targeted,
        backend.saver(db_name=targeted.db.name, targeted_joins=False) as plain,
    ):
        targeted.storage.reads.joined = plain.storage.reads.joined = True
        thread = new_thread()
        first = await put(targeted, thread, values={"a": [0]})
        await either(targeted).put_writes(first, [("a", 1), ("b", 2)], "t")
        second = await put(targeted, thread, parent=first["configurable"]["checkpoint_id"])
        await either(targeted).put_writes(second, [("a", 3)], "t")
        sent_commands.clear()
        for cfg in (config(thread), first):
            assert await either(plain).get_tuple(cfg) == await either(targeted).get_tuple(cfg)
        assert await listed(plain, config(thread)) == await listed(targeted, config(thread))
        history = await either(plain).get_delta_channel_history(config=second, channels=["a"])
        assert history == {"a": {"writes": [("t", "a", 1)], "seed": [0]}}
    lookups = [
        stage["$lookup"]
        for command in sent_commands
        if command.method == "aggregate"
        for stage in command.args[0]
        if "$lookup" in stage
    ]
    assert any("pipeline" in lookup for lookup in lookups)
    assert any("pipeline" not in lookup for lookup in lookups)


def test_a_list_read_apart_resumes_exactly_where_it_stopped() -> None:
    """`without_join` resumes a `list` after any document, in NEWEST_FIRST order (checkpoint id
    descending, then thread and namespace ascending), without a gap or a repeat."""
    from mongomock import MongoClient

    from langgraph.checkpoint.mongo import _queries
    from langgraph.checkpoint.mongo._keys import checkpoint_key

    collection: Any = MongoClient().db.checkpoints  # mongomock: untyped
    for cid in ("c1", "c2", "c3"):  # the same ids in several threads and namespaces
        for thread in ("t1", "t2"):
            for ns in ("", "sub"):
                key = checkpoint_key(thread, ns, cid)
                collection.insert_one({"_id": key, **key})
    join = _queries.WritesJoin("checkpoint_writes")
    for limit in (None, 5):
        pipeline = _queries.list_pipeline(
            thread_id=None,
            checkpoint_ns=None,
            checkpoint_id=None,
            before_id=None,
            metadata_conditions={},
            limit=limit,
            join=join,
        )
        everything = list(collection.aggregate(_queries.without_join(pipeline)))
        assert len(everything) == (limit or 12)
        for read in range(len(everything) - 1):
            page = len(everything) - read - 1
            rest = list(
                collection.aggregate(
                    _queries.without_join(pipeline, cast(Joined, everything[read]), page)
                )
            )
            assert [d["_id"] for d in rest] == [d["_id"] for d in everything[read + 1 :]]


async def test_chunked_states_name_their_thread(sent_commands: list[Command]) -> None:
    """Chunk documents carry the shard key: writing, reading, sweeping and deleting them
    names the thread, and a copy writes them to the target thread."""
    import os

    from langgraph.checkpoint.mongo.testing import async_client

    big = os.urandom(17 * 1024 * 1024)
    saver = AsyncMongoDBSaver(async_client(), ttl=3600, cache_max_bytes=0)
    await saver.setup()
    thread, copy = new_thread(), new_thread()
    sent_commands.clear()
    first = await put(saver, thread, values={"blob": big})
    second = await put(saver, thread, parent=first["configurable"]["checkpoint_id"])
    await either(saver).put_writes(second, [("a", big)], "task")
    await either(saver).get_tuple(config(thread))
    await listed(saver, config(thread))
    await either(saver).get_delta_channel_history(config=second, channels=["a"])
    await either(saver).prune([thread], strategy="keep_latest")
    assert [c for c in sent_commands if not _targets(c, thread)] == []
    sent_commands.clear()
    await either(saver).copy_thread(thread, copy)
    assert all(_targets(c, copy) for c in sent_commands if c.method != "find")
    assert (await either(saver).get_stored(config(copy))).pending_writes == [("task", "a", big)]
    await either(saver).delete_thread(thread)
