"""What only a real server can show; these run when `MONGODB_URI` is set (`nox -s integration`).

- every command the savers send for a thread's operations is served by an index (no
  `COLLSCAN`, no join that scans, checked with `explain`) and, on a sharded cluster, goes
  to the one shard that holds the thread;
- server errors keep their details (codes and messages) through our exceptions and logs;
- a document just under 16 MiB is accepted by the server, so our size check is not stricter
  than the server's (the check itself is tested on every backend in test_large_states.py).
TTL expiry on a real server is in test_ttl.py (it polls for the TTL monitor).
Each test says which documented server behaviour it relies on; CI runs them on MongoDB 5.0,
6.0, 7.0 and 8.0 replica sets and an 8.0 sharded cluster (.github/workflows/integration.yml).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest
from pymongo import UpdateMany, WriteConcern
from pymongo.errors import OperationFailure

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, IndexCreationError, MongoDBSaver
from langgraph.checkpoint.mongo._commands import Command, Target
from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import MONGODB_URI, Backend
from support.helpers import (
    config,
    either,
    first_put_refused_by_write_concern,
    new_thread,
    put,
    thread_operations,
)
from support.real_server import INDEX_STAGES, INDEXED_JOINS, Plan, deployment

pytestmark = pytest.mark.integration


async def _explain(saver: Any, command: dict[str, Any]) -> Any:
    return await maybe_await(saver.db.command({"explain": command, "verbosity": "executionStats"}))


def _explainable(saver: Any, command: Command) -> list[dict[str, Any]]:
    """The server commands a saver's driver call sends, in a form `explain` takes."""
    name = {
        Target.CHECKPOINTS: saver.checkpoint_collection_name,
        Target.WRITES: saver.writes_collection_name,
    }.get(command.target)
    if name is None or command.method in ("create_indexes", "index_information"):
        return []  # setup, not a query
    args, kwargs = command.args, command.kwargs
    if command.method == "find":
        found: dict[str, Any] = {"find": name, "filter": args[0]}
        if len(args) > 1:
            found["projection"] = args[1]
        if "sort" in kwargs:
            found["sort"] = dict(kwargs["sort"])
        return [found]
    if command.method == "aggregate":
        return [{"aggregate": name, "pipeline": args[0], "cursor": {}}]
    if command.method == "update_many":
        return [{"update": name, "updates": [{"q": args[0], "u": args[1], "multi": True}]}]
    if command.method == "update_one":
        return [{"update": name, "updates": [{"q": args[0], "u": args[1], "upsert": True}]}]
    if command.method == "delete_many":
        return [{"delete": name, "deletes": [{"q": args[0], "limit": 0}]}]
    if command.method == "bulk_write":  # upserts, and the `UpdateMany`s that ride with them
        return [
            {
                "update": name,
                "updates": [
                    {"q": r._filter, "u": r._doc, "upsert": bool(r._upsert)}
                    | ({"multi": True} if isinstance(r, UpdateMany) else {})
                ],
            }
            for r in args[0]
        ]
    raise AssertionError(f"no explain for {command}")


@pytest.mark.mongodb_planner
@pytest.mark.parametrize(("targeted_joins", "keep_last"), [(True, None), (False, None), (True, 10)])
async def test_every_query_uses_an_index(
    sent_commands: list[Command], targeted_joins: bool, keep_last: int | None
) -> None:
    """Every command of a thread's operations, explained on the server.

    Relies on `explain` with executionStats on find, aggregate, update and delete (every
    version; executed reads, planned writes), in any of the shapes `Plan` reads; on
    `indexesUsed` of a classic `$lookup` (5.0+) or the `indexName` of an `EQ_LOOKUP`; and
    through `mongos`, on one shard's explain per shard a command went to. The commands are
    recorded on AsyncMongoDBSaver (MongoDBSaver builds the same ones from the same core),
    so this runs once, not per driver. With `keep_last`, `get_tuple`'s count `$lookup`
    and the background trim are among them. The same operations run on every backend in
    `test_retention.py` (`test_a_threads_operations_give_what_memory_gives`), where no
    planner is asked.
    """
    join_index = "thread_checkpoint" if targeted_joins else "checkpoint"
    sharded = deployment().topology == "sharded"
    async with Backend("async", MONGODB_URI).saver(
        ttl=3600, targeted_joins=targeted_joins, keep_last=keep_last
    ) as saver:
        by_run_id = await thread_operations(saver, sent_commands)
        assert {c.method for c in sent_commands} >= {
            "find",
            "aggregate",
            "update_many",
            "update_one",
            "bulk_write",
            "delete_many",
        }
        joins: set[str] = set()
        for position, command in enumerate(sent_commands):
            for explainable in _explainable(saver, command):
                plan = Plan.read(await _explain(saver, explainable))
                assert "COLLSCAN" not in plan.stages, (command, plan)
                assert INDEX_STAGES & plan.stages, (command, plan)
                assert all(scans == 0 for scans in plan.lookup_scans), (command, plan)
                assert set(plan.join_strategies) <= INDEXED_JOINS, (command, plan)
                if plan.lookup_scans or plan.join_strategies:
                    joins |= plan.indexes
                if sharded and position == by_run_id:
                    # Scatter-gather, as the README says: sharding an empty collection on a
                    # hashed key puts chunks on every shard, so a search by run id asks both.
                    assert len(plan.shards) > 1, (command, plan)
                elif sharded:
                    assert len(plan.shards) == 1, (command, plan)  # the thread's shard only
                else:
                    assert not plan.shards, (command, plan)
        # Through mongos a join runs on the shards, whose join statistics mongos's explain
        # is not documented to carry: the checks above apply to whatever it reports.
        if not sharded:
            assert join_index in joins


async def test_server_errors_keep_their_details(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """Relies on createIndexes refusing a taken index name with code 85 or 86 (every
    version), and on a write concern of w: 50 failing with UnsatisfiableWriteConcern (100)
    on a replica set or through mongos, BadValue (2) on a standalone (which has no
    replication to wait for): CI runs replica sets and a sharded cluster."""
    async with backend.saver() as saver:
        # An index of ours whose name is taken by other keys: the server's code and message
        # travel with IndexCreationError.
        await maybe_await(saver.writes_collection.drop_index("thread_checkpoint"))
        await maybe_await(
            saver.writes_collection.create_index([("channel", 1)], name="thread_checkpoint")
        )
        with pytest.raises(IndexCreationError) as caught:
            await maybe_await(saver.setup())
        cause = caught.value.__cause__
        assert isinstance(cause, OperationFailure)
        assert cause.code in (85, 86)  # IndexOptionsConflict / IndexKeySpecsConflict
        assert cause.details is not None
        assert str(cause.details.get("errmsg")) in str(caught.value)

    # A write concern the deployment cannot satisfy: the driver's error, with the server's
    # code, propagates from the automatic setup before the first put (a replica set answers
    # after the write, so nothing is an index refusal; a standalone refuses the command with
    # BadValue, which setup cannot tell from a refused index), then from put itself, and
    # the log names the operation.
    caplog.set_level(logging.DEBUG, logger="langgraph.checkpoint.mongo")
    refused_up_front = deployment().refuses_unmet_write_concern
    unsatisfiable = WriteConcern(w=50)
    async with backend.client() as client:
        cls = MongoDBSaver if backend.is_sync else AsyncMongoDBSaver
        saver = cls(client, f"test_{new_thread()}")
        healthy = saver.checkpoint_collection
        saver.checkpoint_collection = healthy.with_options(write_concern=unsatisfiable)
        try:
            await first_put_refused_by_write_concern(backend, saver)
            assert any(
                "setup: checkpoints.create_indexes failed" in r.getMessage() for r in caplog.records
            )
            saver.checkpoint_collection = healthy
            await maybe_await(saver.setup())
            saver.checkpoint_collection = healthy.with_options(write_concern=unsatisfiable)
            caplog.clear()
            with pytest.raises(OperationFailure) as failed:
                await put(saver, new_thread())
            assert failed.value.code == (2 if refused_up_front else 100)
            assert any(
                "put: checkpoints.update_one failed" in r.getMessage() for r in caplog.records
            )
        finally:
            await maybe_await(client.drop_database(saver.db.name))


async def test_server_accepts_what_the_size_check_accepts(backend: Backend) -> None:
    """Relies on the server's 16 MiB BSON document limit (`maxBsonObjectSize`, every
    version; mongos accepts the same size)."""
    async with backend.saver() as saver:
        thread = new_thread()
        blob = os.urandom(16 * 1024 * 1024 - 64 * 1024)
        stored = await put(saver, thread, values={"blob": blob})
        got = await either(saver).get_tuple(config(thread))
        assert got is not None
        assert got.config == stored
        assert got.checkpoint["channel_values"]["blob"] == blob


async def test_setup_refuses_a_collection_with_a_collation(backend: Backend) -> None:
    """Relies on a real server's collations: with strength 2, "A" and "a" would be one
    thread and one metadata value."""
    async with backend.client() as client:
        cls = MongoDBSaver if backend.is_sync else AsyncMongoDBSaver
        db_name = f"test_{new_thread()}"
        try:
            collation = {"locale": "en", "strength": 2}
            await maybe_await(client[db_name].create_collection("cps", collation=collation))
            with pytest.raises(ValueError, match="'cps' has the default collation"):
                await maybe_await(cls(client, db_name, "cps", "ws").setup())
        finally:
            await maybe_await(client.drop_database(db_name))
