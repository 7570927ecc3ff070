"""What only a real server can show; these run when `MONGODB_URI` is set (`nox -s integration`).

- every query the savers send is served by an index (no `COLLSCAN`, checked with `explain`);
- a document just under 16 MiB is accepted by the server, so our size check is not stricter
  than the server's (the check itself is tested on every backend in test_large_states.py).
TTL expiry on a real server is in test_ttl.py (it polls for the TTL monitor).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from conftest import MONGODB_URI, Backend
from helpers import call, config, new_thread, put
from langgraph.checkpoint.mongo import _delta, _queries
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._keys import CheckpointRef

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


async def test_every_query_uses_an_index(backend: Backend) -> None:
    async with backend.saver() as saver:
        thread = new_thread()
        parent = None
        for i in range(30):  # enough documents that a planner would prefer an index
            stored = await put(saver, thread, parent=parent, metadata={"run_id": f"run-{i}"})
            await call(saver, "put_writes", stored, [("c", i)], "t")
            parent = stored["configurable"]["checkpoint_id"]
        checkpoints, writes = saver.checkpoint_collection_name, saver.writes_collection_name
        ref = CheckpointRef(thread, "", parent)
        latest = CheckpointRef(thread, "", None)
        listing = _queries.list_pipeline(
            thread_id=thread,
            checkpoint_ns="",
            checkpoint_id=None,
            before_id=parent,
            metadata_match={},
            limit=10,
            writes_collection=writes,
        )
        reads: dict[str, dict[str, Any]] = {
            "get_tuple latest": {
                "aggregate": checkpoints,
                "pipeline": _queries.get_tuple_pipeline(latest, writes),
                "cursor": {},
            },
            "get_tuple by id": {
                "aggregate": checkpoints,
                "pipeline": _queries.get_tuple_pipeline(ref, writes),
                "cursor": {},
            },
            "list a thread": {"aggregate": checkpoints, "pipeline": listing, "cursor": {}},
            "delta lineage": {
                "find": checkpoints,
                "filter": _delta.lineage_query(ref),
                "projection": _delta.LINEAGE_PROJECTION,
                "sort": {"checkpoint_id": -1},
            },
            "delete_for_runs": {
                "find": checkpoints,
                "filter": {"metadata.run_id": {"$in": ["run-3"]}},
            },
            "writes of a thread": {"find": writes, "filter": {"thread_id": thread}},
        }
        for name, command in reads.items():
            explained = await _explain(saver, command)
            stages = _stages(explained)
            assert "COLLSCAN" not in stages, (name, stages)
            assert "IXSCAN" in stages or "EXPRESS_IXSCAN" in stages or "IDHACK" in stages, name
            assert all(scans == 0 for scans in _lookup_scans(explained)), (name, explained)


async def test_server_accepts_what_the_size_check_accepts(backend: Backend) -> None:
    async with backend.saver() as saver:
        thread = new_thread()
        blob = os.urandom(16 * 1024 * 1024 - 64 * 1024)
        stored = await put(saver, thread, values={"blob": blob})
        got = await call(saver, "get_tuple", config(thread))
        assert got.config == stored
        assert got.checkpoint["channel_values"]["blob"] == blob
