"""What only a real server can show; these run when `MONGODB_URI` is set (`nox -s integration`).

- every command the savers send for a thread's operations is served by an index (no
  `COLLSCAN`, checked with `explain`);
- server errors keep their details (codes and messages) through our exceptions and logs;
- a document just under 16 MiB is accepted by the server, so our size check is not stricter
  than the server's (the check itself is tested on every backend in test_large_states.py).
TTL expiry on a real server is in test_ttl.py (it polls for the TTL monitor).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import pytest
from pymongo import WriteConcern
from pymongo.errors import OperationFailure

from conftest import MONGODB_URI, Backend
from helpers import call, config, listed, new_thread, put
from langgraph.checkpoint.mongo import AsyncMongoDBSaver, IndexCreationError, MongoDBSaver
from langgraph.checkpoint.mongo._commands import Command, Target
from langgraph.checkpoint.mongo._drivers import maybe_await

pytestmark = pytest.mark.skipif(not MONGODB_URI, reason="needs a real server: set MONGODB_URI")


def _stages(plan: Any) -> list[str]:
    """Every `stage` name anywhere in an explain document."""
    found: list[str] = []
    if isinstance(plan, dict):
        if isinstance(plan.get("stage"), str):
            found.append(plan["stage"])
        for value in plan.values():
            found += _stages(value)
    elif isinstance(plan, list):
        for value in plan:
            found += _stages(value)
    return found


def _lookup_scans(plan: Any) -> list[int]:
    """`collectionScans` of every `$lookup` in an executionStats explain (MongoDB >= 6)."""
    found: list[int] = []
    if isinstance(plan, dict):
        if "$lookup" in plan and "collectionScans" in plan:
            found.append(int(plan["collectionScans"]))
        for value in plan.values():
            found += _lookup_scans(value)
    elif isinstance(plan, list):
        for value in plan:
            found += _lookup_scans(value)
    return found


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
    if command.method == "replace_one":
        return [{"update": name, "updates": [{"q": args[0], "u": args[1], "upsert": True}]}]
    if command.method == "delete_many":
        return [{"delete": name, "deletes": [{"q": args[0], "limit": 0}]}]
    if command.method == "bulk_write":
        return [
            {"update": name, "updates": [{"q": r._filter, "u": r._doc, "upsert": True}]}
            for r in args[0]
        ]
    raise AssertionError(f"no explain for {command}")


async def test_every_query_uses_an_index(backend: Backend, sent_commands: list[Command]) -> None:
    """Every command the savers send for a thread's operations, explained on the server."""
    if backend.is_sync:
        pytest.skip("the commands are recorded on AsyncMongoDBSaver; both savers send the same")
    async with backend.saver(ttl=3600) as saver:
        thread, copy_ = new_thread(), new_thread()
        parent = None
        for i in range(30):  # enough documents that a planner would prefer an index
            stored = await put(saver, thread, parent=parent, metadata={"run_id": f"run-{i}"})
            await call(saver, "put_writes", stored, [("c", i), ("__error__", "e")], "t")
            parent = stored["configurable"]["checkpoint_id"]
        await call(saver, "get_tuple", config(thread))
        await call(saver, "get_tuple", stored)
        await listed(saver, config(thread), limit=10)
        await listed(saver, config(thread), before=stored, limit=10)
        await call(saver, "get_delta_channel_history", config=stored, channels=["c"])
        await call(saver, "copy_thread", thread, copy_)
        await call(saver, "delete_for_runs", ["run-3"])
        await call(saver, "prune", [copy_], strategy="keep_latest")
        await call(saver, "delete_thread", copy_)
        assert {c.method for c in sent_commands} >= {
            "find",
            "aggregate",
            "update_many",
            "replace_one",
            "bulk_write",
            "delete_many",
        }
        for command in sent_commands:
            for explainable in _explainable(saver, command):
                explained = await _explain(saver, explainable)
                stages = _stages(explained)
                assert "COLLSCAN" not in stages, (command, stages)
                assert {"IXSCAN", "EXPRESS_IXSCAN", "IDHACK", "EXPRESS_IDHACK"} & set(stages), (
                    command,
                    stages,
                )
                assert all(scans == 0 for scans in _lookup_scans(explained)), (command, explained)


async def test_server_errors_keep_their_details(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
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
        assert str(cause.details.get("errmsg")) in str(caught.value)

    # A write concern the deployment cannot satisfy: the driver's error, with the server's
    # code, propagates from put and the log names the operation.
    caplog.set_level(logging.DEBUG, logger="langgraph.checkpoint.mongo")
    async with backend.client() as client:
        cls = MongoDBSaver if backend.is_sync else AsyncMongoDBSaver
        saver = cls(client, f"test_{new_thread()}")
        saver.checkpoint_collection = saver.checkpoint_collection.with_options(
            write_concern=WriteConcern(w=50)
        )
        try:
            with pytest.raises(OperationFailure) as failed:
                await put(saver, new_thread())
            assert failed.value.code in (100, 2)  # UnsatisfiableWriteConcern / BadValue
            assert any(
                "put: checkpoints.replace_one failed" in r.getMessage() for r in caplog.records
            )
        finally:
            await maybe_await(client.drop_database(saver.db.name))


async def test_server_accepts_what_the_size_check_accepts(backend: Backend) -> None:
    async with backend.saver() as saver:
        thread = new_thread()
        blob = os.urandom(16 * 1024 * 1024 - 64 * 1024)
        stored = await put(saver, thread, values={"blob": blob})
        got = await call(saver, "get_tuple", config(thread))
        assert got.config == stored
        assert got.checkpoint["channel_values"]["blob"] == blob
