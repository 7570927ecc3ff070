"""`setup()`: the indexes, the switches for services that refuse some, and its errors."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pymongo.errors import OperationFailure

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, IndexCreationError, MongoDBSaver
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._channel_values import RecentValues
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._commands import Command, Target
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._queries import WritesJoin, indexes
from langgraph.checkpoint.mongo._runners import run_plan
from support.backends import Backend, CommandLog
from support.helpers import (
    checkpoint,
    config,
    either,
    first_put_refused_by_write_concern,
    listed,
    methods,
    new_thread,
    put,
    saver_like,
)


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
    """Run setup()'s plan, the server listing both collections with `options`, every
    other command answered with nothing: mongomock keeps no collation (the integration
    suite creates a collection with one on a real server)."""
    names = {Target.CHECKPOINTS: "cps", Target.WRITES: "ws"}
    storage = ops.Storage(Codec(JsonPlusSerializer()), WritesJoin("ws"), None, RecentValues())
    plan = ops.setup(storage, names, True, ())
    listed = [{"name": name, "options": options} for name in names.values()]

    def answer(command: Command) -> Any:
        if command.args == ("listCollections",):
            return {"cursor": {"firstBatch": listed}}
        return {}

    run_plan(plan, answer)


def test_setup_refuses_a_default_collation_other_than_the_binary_one() -> None:
    with pytest.raises(ValueError, match=r"'cps' has the default collation .*'locale': 'en'"):
        _setup_answering({"collation": {"locale": "en", "strength": 2}})
    _setup_answering({"collation": {"locale": "simple"}})
    _setup_answering({})


# The setup() before a saver's first command, for code that never calls it (as the
# official saver's users never do: its constructor creates its indexes).


def count_setups(saver: Any) -> list[dict[str, Any]]:
    """The `setup()` calls of `saver` from now on (their keyword arguments)."""
    calls: list[dict[str, Any]] = []
    setup = saver.setup

    def counted(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return setup(**kwargs)

    saver.setup = counted
    return calls


async def test_the_first_command_sets_the_saver_up_once(
    backend: Backend, sent_commands: list[Command]
) -> None:
    log = CommandLog()
    async with backend.saver(log, set_up=False, ttl=3600) as saver:
        setups = count_setups(saver)
        thread = new_thread()
        log.reset()
        sent_commands.clear()
        assert await either(saver).get_tuple(config(thread)) is None
        assert setups == [{}]  # setup() as a user calls it: every index, the TTL index
        # A new database: what the server is (buildInfo), both collections listed with
        # their options in one command, then one createIndexes per collection, then the
        # read itself.
        sent = methods(sent_commands)
        assert sent == ["command", "command", "create_indexes", "create_indexes", "aggregate"]
        expiry = {"thread_ttl", "thread_pinned"}
        assert {"thread_ns_checkpoint", "metadata_run_id", *expiry} <= await index_names(
            saver.checkpoint_collection
        )
        assert {"thread_checkpoint", *expiry} <= await index_names(saver.writes_collection)
        # Later calls pay nothing for it.
        log.reset()
        sent_commands.clear()
        stored = await put(saver, thread)
        await either(saver).put_writes(stored, [("c", 1)], "task")
        assert len(await listed(saver, config(thread))) == 1
        await either(saver).get_tuple(config(thread))
        assert setups == [{}]
        assert not {"command", "index_information", "create_indexes"} & set(methods(sent_commands))
        assert not {"listCollections", "listIndexes", "createIndexes"} & set(log.names)


async def test_a_saver_set_up_by_hand_is_not_set_up_again(backend: Backend) -> None:
    # setup() stays for those who call it (from_conn_string and the Agent Server's
    # factory do), and create_indexes=False keeps the indexes in the user's hands.
    async with backend.saver(set_up=False) as saver:
        await run_setup(saver, create_indexes=False)
        setups = count_setups(saver)
        thread = new_thread()
        await put(saver, thread)
        assert len(await listed(saver, config(thread))) == 1
        assert setups == []
        assert await index_names(saver.checkpoint_collection) <= {"_id_"}


async def test_with_allowlist_copies_share_the_setup(backend: Backend) -> None:
    strict = JsonPlusSerializer(allowed_msgpack_modules=[("os", "PathLike")])
    async with backend.saver(set_up=False, serde=strict) as saver:
        copy = saver.with_allowlist([("module", "Type")])
        assert copy is not saver
        setups = count_setups(saver)
        await either(copy).get_tuple(config(new_thread()))
        await either(saver).get_tuple(config(new_thread()))
        assert setups == []  # the copy ran its own setup(), which counts for both
        assert "thread_ns_checkpoint" in await index_names(saver.checkpoint_collection)


async def test_many_first_calls_at_once_run_one_setup(backend: Backend) -> None:
    if backend.wire is not None:
        backend.wire.delay = 0.01  # each command takes a while: the calls overlap
    async with backend.saver(set_up=False) as saver:
        setups = count_setups(saver)
        threads = [new_thread() for _ in range(8)]
        if isinstance(saver, MongoDBSaver):
            with ThreadPoolExecutor(len(threads)) as pool:
                found = await asyncio.to_thread(
                    lambda: list(pool.map(lambda t: saver.get_tuple(config(t)), threads))
                )
        else:
            found = await asyncio.gather(*(saver.aget_tuple(config(t)) for t in threads))
        assert found == [None] * len(threads)
        assert setups == [{}]


async def test_the_sync_savers_async_methods_set_it_up_once(backend: Backend) -> None:
    if not backend.is_sync:
        pytest.skip("MongoDBSaver's async methods")
    if backend.wire is not None:
        backend.wire.delay = 0.01
    async with backend.saver(set_up=False) as saver:
        setups = count_setups(saver)
        thread = new_thread()
        first = [saver.aget_tuple(config(new_thread())) for _ in range(4)]
        found = await asyncio.gather(*first, saver.aput(config(thread), *checkpoint_args()))
        assert found[:4] == [None] * 4
        assert [t.config async for t in saver.alist(config(thread))] == [found[4]]
        assert setups == [{}]


async def test_a_failed_setup_fails_the_call_and_the_next_call_tries_again(
    backend: Backend,
) -> None:
    async with backend.saver(set_up=False) as saver:
        setups = count_setups(saver)
        official_index = [("thread_id", 1), ("checkpoint_ns", 1), ("checkpoint_id", -1)]
        await maybe_await(saver.checkpoint_collection.create_index(official_index, unique=True))
        thread = new_thread()
        for _ in range(2):
            with pytest.raises(ValueError, match="langgraph-checkpoint-mongodb"):
                await put(saver, thread)
        assert await index_names(saver.checkpoint_collection) == {
            "_id_",
            "thread_id_1_checkpoint_ns_1_checkpoint_id_-1",
        }
        await maybe_await(
            saver.checkpoint_collection.drop_index("thread_id_1_checkpoint_ns_1_checkpoint_id_-1")
        )
        stored = await put(saver, thread)
        assert [t.config for t in await listed(saver, config(thread))] == [stored]
        assert len(setups) == 3
        assert "thread_ns_checkpoint" in await index_names(saver.checkpoint_collection)


def checkpoint_args() -> tuple[Any, ...]:
    cp = checkpoint({"x": 1})
    return cp, {"source": "loop", "step": 0, "parents": {}}, cp["channel_versions"]


# Setup once per process: a saver built per request (on a shared client, or on a client
# of its own as `from_conn_string` opens one) sends no setup command after the first.


async def test_a_new_database_is_set_up_in_four_commands_and_checked_in_four_reads(
    backend: Backend, sent_commands: list[Command]
) -> None:
    async with backend.saver(set_up=False, ttl=3600) as saver:
        sent_commands.clear()
        await run_setup(saver)
        # What the server is (how reads get pending writes there), both collections
        # listed with their options at once, then one createIndexes per collection with
        # all its indexes (the TTL index among them).
        sent = methods(sent_commands)
        assert sent == ["command", "command", "create_indexes", "create_indexes"]
        assert sent_commands[0].args == ("buildInfo",)
        sent_commands.clear()
        await run_setup(saver)  # called by hand: the whole job, every check
        sent = methods(sent_commands)
        assert sent == ["command", "command", "index_information", "index_information"]
        assert {
            "thread_ns_checkpoint",
            "metadata_run_id",
            "thread_ttl",
            "thread_pinned",
        } <= await index_names(saver.checkpoint_collection)


async def test_a_second_saver_of_the_process_sends_no_setup_command(
    backend: Backend, sent_commands: list[Command]
) -> None:
    async with backend.saver(set_up=False, ttl=3600) as first:
        await put(first, new_thread())  # the process's first saver sets the collections up
        for client in (first.client, None):
            async with backend.client() if client is None else nullcontext(client) as opened:
                second = saver_like(first)(opened, first.db.name, ttl=3600)
                setups = count_setups(second)
                sent_commands.clear()
                await put(second, new_thread())
                assert setups == []
                # The checkpoint only: its thread's stamp moves in the same command.
                assert methods(sent_commands) == ["update_many", "bulk_write"]


async def test_an_explicit_setup_after_the_process_set_up_still_creates_a_dropped_index(
    backend: Backend,
) -> None:
    async with backend.saver() as saver:
        await maybe_await(saver.checkpoint_collection.drop_index("metadata_run_id"))
        second = saver_like(saver)(saver.client, saver.db.name)
        await put(second, new_thread())  # remembered: the automatic setup sends nothing
        assert "metadata_run_id" not in await index_names(saver.checkpoint_collection)
        await run_setup(second)
        assert "metadata_run_id" in await index_names(saver.checkpoint_collection)


async def test_each_database_and_pair_of_collections_is_set_up_once(backend: Backend) -> None:
    async with backend.saver(set_up=False) as saver:
        other_db = f"test_{uuid.uuid4().hex[:16]}"
        places = [(saver.db.name,), (other_db,), (saver.db.name, "cps", "ws")]
        try:
            setups = []
            for _ in range(3):  # three requests, a saver each
                for place in places:
                    per_request = saver_like(saver)(saver.client, *place)
                    calls = count_setups(per_request)
                    await put(per_request, new_thread())
                    setups.append(len(calls))
                    collection = per_request.checkpoint_collection
                    assert "thread_ns_checkpoint" in await index_names(collection)
            assert setups == [1, 1, 1] + [0, 0, 0] * 2
        finally:
            await maybe_await(saver.client.drop_database(other_db))


async def test_a_write_concern_setup_cannot_meet_is_the_servers_error(
    real_driver: Backend,
) -> None:
    """`w: 50` on a single node: the first write fails in the automatic setup with the
    server's own error and code, as `test_server_errors_keep_their_details` expects on
    each topology (`first_put_refused_by_write_concern`), not as a refused index with
    advice that does not apply where the server could say what it was."""
    name = f"test_{uuid.uuid4().hex[:16]}"
    async with real_driver.client(w=50) as client, real_driver.client() as plain:
        cls = MongoDBSaver if real_driver.is_sync else AsyncMongoDBSaver
        saver: Any = cls(client, name)
        try:
            await first_put_refused_by_write_concern(real_driver, saver)
        finally:
            await maybe_await(plain.drop_database(name))


# What one saver's setup() leaves to another: each gets what its own options ask for, and
# a deployment that cannot create an index the application declined sets up once.


def refuse_creating(
    monkeypatch: pytest.MonkeyPatch, code: int, message: str, index: str | None = None
) -> list[str]:
    """The server refuses every createIndexes (with `index` among its indexes, if given)
    with `code`, as Azure Cosmos DB refuses an index kind, or as MongoDB refuses a user
    without the createIndex privilege (13); returns the index names refused."""
    from langgraph.checkpoint.mongo import _executors

    call = _executors.call
    refused: list[str] = []

    def refusing(collection: Any, command: Command) -> Any:
        if command.method == "create_indexes":
            names = [index.document["name"] for index in command.args[0]]
            if index is None or index in names:
                refused.extend(names)
                raise OperationFailure(message, code, {"ok": 0, "errmsg": message, "code": code})
        return call(collection, command)

    monkeypatch.setattr(_executors, "call", refusing)
    return refused


async def test_a_setup_without_indexes_leaves_the_next_saver_its_own(backend: Backend) -> None:
    """`setup(create_indexes=False)` of one saver left later savers of default options with
    no index at all: the next one's first call creates them."""
    async with backend.saver(set_up=False) as bare:
        await run_setup(bare, create_indexes=False)
        assert await index_names(bare.checkpoint_collection) <= {"_id_"}
        later = saver_like(bare)(bare.client, bare.db.name)
        await put(later, new_thread())
        assert {"thread_ns_checkpoint", "metadata_run_id"} <= await index_names(
            bare.checkpoint_collection
        )
        assert "thread_checkpoint" in await index_names(bare.writes_collection)


async def test_a_skipped_ttl_index_is_created_for_the_next_ttl_saver(backend: Backend) -> None:
    """`setup(skip_indexes={"thread_ttl"})` of a `ttl` saver left later `ttl` savers with no
    TTL index, so nothing ever expired: the next one's first call creates it."""
    async with backend.saver(set_up=False, ttl=3600) as first:
        await run_setup(first, skip_indexes={"thread_ttl"})
        assert "thread_ttl" not in await index_names(first.checkpoint_collection)
        later = saver_like(first)(first.client, first.db.name, ttl=3600)
        await put(later, new_thread())
        assert "thread_ttl" in await index_names(first.checkpoint_collection)
        assert "thread_ttl" in await index_names(first.writes_collection)


async def test_a_service_that_refuses_a_declined_index_sets_up_once_per_process(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Azure Cosmos DB refuses the TTL index on our stamp: the application calls
    `setup(skip_indexes={"thread_ttl"})` at startup and builds a saver per request. The
    first request's saver asks for the index once, is refused, says so and goes on; the
    others send no setup command."""
    async with backend.saver(set_up=False, ttl=3600) as first:
        await run_setup(first, skip_indexes={"thread_ttl"})
        refused = refuse_creating(monkeypatch, 67, "TTL index only on _ts", "thread_ttl")
        setups = []
        for _ in range(3):
            per_request = saver_like(first)(first.client, first.db.name, ttl=3600)
            calls = count_setups(per_request)
            thread = new_thread()
            stored = await put(per_request, thread)
            assert [t.config for t in await listed(per_request, config(thread))] == [stored]
            setups.append(len(calls))
        assert setups == [1, 0, 0]
        assert refused == ["thread_ttl"]
        assert any("going on without it" in r.getMessage() for r in caplog.records)
        assert "thread_ttl" not in await index_names(first.checkpoint_collection)


async def test_a_user_who_may_not_create_indexes_is_told_how_to_run(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user without the createIndex privilege: the first call names the documented way
    to run without creating indexes; once the application says so at startup, savers
    built per request set up once per process."""
    message = "not authorized on db to execute command { createIndexes: ... }"
    async with backend.saver(set_up=False) as first:
        refused = refuse_creating(monkeypatch, 13, message)
        with pytest.raises(IndexCreationError) as caught:
            await put(first, new_thread())
        assert str(caught.value) == (
            f"setup() may not create indexes on collection {first.checkpoint_collection_name!r} "
            f"(the user lacks the createIndex privilege: {message}): have them created by a "
            "user who may, then call setup(create_indexes=False) before the saver's first "
            "command (which otherwise runs setup() itself), once per process; see "
            "https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/operations/"
            "#mongodb-compatible-services"
        )
        await run_setup(first, create_indexes=False)
        refused.clear()
        setups = []
        for _ in range(3):
            per_request = saver_like(first)(first.client, first.db.name)
            calls = count_setups(per_request)
            await put(per_request, new_thread())
            setups.append(len(calls))
        assert setups == [1, 0, 0]
        # One collection's: the first createIndexes refused, the rest left out at once.
        assert refused == [
            index.document["name"]
            for target, index in indexes(first.storage.join)
            if target is Target.CHECKPOINTS
        ]
