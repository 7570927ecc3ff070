"""How reads get pending writes: joined in the read's own aggregation (`$lookup`, one round
trip) where the server serves that join by an index, apart (the checkpoints, then their
writes by one `find`) where it would read the whole writes collection (SecantusDB), as
`setup()` decides from the server's `buildInfo` and the process remembers with the setup.

The stand-ins report MongoDB, so the suite's other tests run the joined plan; these run
the apart plan on every backend (a saver told so, as `setup()` tells one on such a server)
against `InMemorySaver`, and check the choice itself.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo import _queries
from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend
from support.helpers import (
    checkpoint,
    config,
    either,
    listed,
    methods,
    new_thread,
    put,
    saver_like,
)
from support.real_server import MONGODB_URI


def _comparable(found: CheckpointTuple | None) -> Any:
    if found is None:
        return None
    writes = sorted(found.pending_writes or [], key=lambda w: (w[0], w[1]))
    return (found.config, found.checkpoint, dict(found.metadata), found.parent_config, writes)


async def _write_both(saver: Any, memory: InMemorySaver, thread: str) -> list[Any]:
    """The same checkpoints (two namespaces, each a chain) and pending writes in both."""
    stored = []
    parents: dict[str, str | None] = {"": None, "child:1": None}
    for step in range(6):
        ns = "" if step % 3 else "child:1"
        cp = checkpoint({"n": step})
        cp["channel_versions"] = {"n": step + 1}  # InMemorySaver keeps values by version
        metadata: dict[str, Any] = {
            "source": "input" if step == 0 else "loop",
            "step": step,
            "parents": {},
        }
        target = config(thread, ns, parents[ns])
        for each in (saver, memory):
            cfg = await either(each).put(target, cp, metadata, cp["channel_versions"])
            await either(each).put_writes(cfg, [("n", step), ("log", f"w{step}")], f"t{step}")
        parents[ns] = cfg["configurable"]["checkpoint_id"]
        stored.append(cfg)
    return stored


async def test_reads_apart_return_what_joined_reads_do(
    saver: Any, sent_commands: list[Any]
) -> None:
    saver.storage.reads.joined = False  # as `setup()` decides on SecantusDB
    memory = InMemorySaver()
    thread = new_thread()
    stored = await _write_both(saver, memory, thread)
    root = config(thread)
    for target in (root, stored[1], stored[3], config(thread, "child:1")):
        sent_commands.clear()
        got = await either(saver).get_tuple(target)
        assert _comparable(got) == _comparable(await memory.aget_tuple(target)), target
        assert methods(sent_commands) == ["aggregate", "find"]
        # Exactly the `thread_checkpoint_id` index's fields: SecantusDB's planner uses an
        # index only for such a filter.
        [query] = sent_commands[1].args
        assert set(query) == {"thread_id", "_id.checkpoint.checkpoint_id"}
        assert query["thread_id"] == thread
        assert got is not None
        assert len(got.pending_writes or []) == 2
    cases: list[tuple[Any, dict[str, Any]]] = [
        (root, {"limit": 2}),
        (root, {"before": stored[4]}),
        (config(thread, None), {}),
        (None, {"filter": {"source": "loop"}, "limit": 4}),
    ]
    for target, kwargs in cases:
        sent_commands.clear()
        got_list = await listed(saver, target, **kwargs)
        # Across namespaces this saver lists newest first, as `PostgresSaver` does;
        # `InMemorySaver` namespace by namespace: the same checkpoints, in id order.
        limit = kwargs.pop("limit", None)
        want = [t async for t in memory.alist(target, **kwargs)]
        want = sorted(want, key=lambda t: t.checkpoint["id"], reverse=True)[:limit]
        assert [_comparable(t) for t in got_list] == [_comparable(t) for t in want], kwargs
        assert methods(sent_commands) == ["aggregate", "find"], kwargs
    assert len(await listed(saver, config(thread, None))) == 6  # not vacuous


async def test_reads_apart_keep_each_namespaces_own_writes(saver: Any) -> None:
    """Writes are found by thread and checkpoint id, then kept by their checkpoint's whole
    key: two namespaces' checkpoints of one id (a thread copied into another's namespace
    can have them) each read back their own writes, as in `InMemorySaver`."""
    saver.storage.reads.joined = False
    memory = InMemorySaver()
    thread = new_thread()
    cp = checkpoint({"n": 1})
    cp["channel_versions"] = {"n": 1}
    metadata: dict[str, Any] = {"source": "loop", "step": 1, "parents": {}}
    for ns in ("", "child:1"):
        for each in (saver, memory):
            cfg = await either(each).put(config(thread, ns), cp, metadata, {"n": 1})
            await either(each).put_writes(cfg, [("n", ns or "root")], f"task-{ns}")
    for ns in ("", "child:1"):
        target = config(thread, ns)
        got = await either(saver).get_tuple(target)
        assert _comparable(got) == _comparable(await memory.aget_tuple(target))
        assert got is not None
        assert got.pending_writes == [(f"task-{ns}", "n", ns or "root")]
    listed_all = await listed(saver, config(thread, None))
    assert sorted(t.pending_writes[0][2] for t in listed_all if t.pending_writes) == [
        "child:1",
        "root",
    ]


async def test_reads_apart_refuse_another_savers_documents_by_name(saver: Any) -> None:
    saver.storage.reads.joined = False
    foreign = {"thread_id": "shared", "checkpoint_ns": "", "checkpoint_id": "1", "type": "msgpack"}
    await maybe_await(saver.checkpoint_collection.insert_one(foreign))
    for target in (config("shared", None), None):
        with pytest.raises(ValueError, match="langgraph-checkpoint-mongodb's format"):
            await listed(saver, target)


async def test_setup_remembers_how_reads_get_writes(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, sent_commands: list[Any]
) -> None:
    """A server whose `$lookup` scans: `setup()` reads apart, and a saver the process set
    up before (a saver per request) reads apart too, without sending setup again."""
    monkeypatch.setattr(_queries, "joins_by_index", lambda build_info: False)
    async with backend.saver() as first:
        assert first.storage.reads.joined is False
        # The index the apart reads' `find` uses, on such a server only.
        indexes = await maybe_await(first.writes_collection.index_information())
        assert "thread_checkpoint_id" in indexes
        thread = new_thread()
        stored = await put(first, thread)
        again = saver_like(first)(first.client, first.db.name)
        sent_commands.clear()
        found = await either(again).get_tuple(stored)
        assert found is not None
        assert methods(sent_commands) == ["aggregate", "find"]  # no setup command
        assert again.storage.reads.joined is False


async def test_setup_asks_the_server_once(saver: Any, sent_commands: list[Any]) -> None:
    """`setup()` asks `buildInfo` before anything else; on MongoDB and its stand-ins the
    reads then join."""
    saver.storage.reads.joined = False
    await maybe_await(saver.setup())
    first = sent_commands[0]
    assert (str(first.method), first.args) == ("command", _queries.BUILD_INFO)
    if not MONGODB_URI:
        assert saver.storage.reads.joined is True


def test_which_servers_join_by_index() -> None:
    assert _queries.joins_by_index({"version": "8.0.4", "versionArray": [8, 0, 4, 0]})
    assert not _queries.joins_by_index({"version": "8.2.11", "secantusVersion": "0.7.0b3"})


@pytest.mark.integration
async def test_the_server_decides_how_reads_get_writes(saver: Any) -> None:
    from support.real_server import deployment

    assert saver.storage.reads.joined is (deployment().server != "SecantusDB")
    indexes = await maybe_await(saver.writes_collection.index_information())
    assert ("thread_checkpoint_id" in indexes) is (not saver.storage.reads.joined)
    thread = new_thread()
    stored = await put(saver, thread)
    await either(saver).put_writes(stored, [("a", 1)], "task")
    found = await either(saver).get_tuple(stored)
    assert found is not None
    assert found.pending_writes == [("task", "a", 1)]
