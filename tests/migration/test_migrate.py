"""`copy_threads` / `verify_threads`: what arrives, re-runs, conflicts, failures, memory.

The graph-level proof (copied threads continue exactly as on the source) is in
`test_migrate_graphs.py`; this file checks the copy itself on every backend, mostly from
an `InMemorySaver` source.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT
from pymongo.errors import AutoReconnect

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, migrate
from langgraph.checkpoint.mongo._commands import Command
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo.migrate import (
    OfficialMongoDBSource,
    ThreadStatus,
    copy_threads,
    source_thread_ids,
)
from support.backends import Backend
from support.graphs import Run, chat_graph, human, run_on
from support.helpers import as_metadata, checkpoint, config, either, listed, methods
from support.migration_sources import (
    Source,
    copy,
    fail_bulk_writes_after,
    official_client,
    official_saver_class,
    open_source,
    verify,
)


async def chat(saver: Any, thread_id: str, turns: range, *, sync: bool = True) -> None:
    async def scenario(run: Run) -> None:
        graph = run.compile(chat_graph())
        for turn in turns:
            await graph.invoke(human(turn), config(thread_id))

    await run_on(saver, sync, None, scenario)


async def count(collection: Any, query: dict[str, Any] | None = None) -> int:
    return int(await maybe_await(collection.count_documents(query or {})))


async def stored(saver: Any) -> tuple[int, int]:
    return await count(saver.checkpoint_collection), await count(saver.writes_collection)


def memory_source(saver: InMemorySaver | None = None) -> Source:
    return Source("memory", saver or InMemorySaver())


def source_documents(memory: InMemorySaver) -> tuple[int, int]:
    checkpoints = sum(len(ids) for ns in memory.storage.values() for ids in ns.values())
    return checkpoints, sum(len(writes) for writes in memory.writes.values())


# What arrives.


async def test_ids_metadata_and_versions_arrive_unchanged(backend: Backend, saver: Any) -> None:
    memory = InMemorySaver()
    cfg: RunnableConfig = {
        "configurable": {"thread_id": "t", "checkpoint_ns": "", "user_id": "u-1"}
    }
    first = checkpoint({"a": 1})
    first["channel_versions"] = {"a": memory.get_next_version(None, None)}
    metadata = as_metadata({"source": "input", "step": -1, "parents": {}, "note": ("tuple", 1)})
    stored_at = memory.put(cfg, first, metadata, first["channel_versions"])
    second = checkpoint({"a": 2})
    previous = first["channel_versions"]["a"]
    assert isinstance(previous, str)  # InMemorySaver's versions are strings
    second["channel_versions"] = {"a": memory.get_next_version(previous, None)}
    memory.put(
        stored_at, second, {"source": "loop", "step": 0, "parents": {}}, second["channel_versions"]
    )
    sub = checkpoint({"b": [1]})
    memory.put(config("t", "child:1"), sub, {"source": "loop", "step": 1}, {})

    report = await copy(backend, memory_source(memory), saver)
    assert [(t.thread_id, t.status, t.checkpoints) for t in report.threads] == [
        ("t", ThreadStatus.COPIED, 3)
    ]
    theirs = {ids_of(t): t for t in memory.list({"configurable": {"thread_id": "t"}})}
    ours = {ids_of(t): t for t in await listed(saver, {"configurable": {"thread_id": "t"}})}
    assert ours.keys() == theirs.keys()
    for key, mine in ours.items():
        assert mine.checkpoint == theirs[key].checkpoint
        # Exactly the source's metadata: the copy adds no config keys, drops none.
        assert mine.metadata == theirs[key].metadata
        assert mine.parent_config == theirs[key].parent_config
    # InMemorySaver's put added the config's user_id to the first; nothing to the second.
    assert ours[("", first["id"])].metadata["user_id"] == "u-1"
    assert set(ours[("", second["id"])].metadata) == {"source", "step", "parents"}
    assert ours[("", second["id"])].checkpoint["channel_values"] == {"a": 2}
    assert isinstance(ours[("", second["id"])].checkpoint["channel_versions"]["a"], str)


def ids_of(t: Any) -> tuple[str, str]:
    return t.config["configurable"]["checkpoint_ns"], t.config["configurable"]["checkpoint_id"]


def pending_writes_fixture(put_writes: Any) -> None:
    """Three tasks whose paths order them unlike their ids, one with an error write."""
    put_writes([("x", 1), ("y", 2)], "task-a", "~z")
    put_writes([("x", 3)], "task-b", "~a")
    put_writes([(ERROR, "boom")], "task-c", "~m")
    put_writes([(INTERRUPT, "ask")], "task-a", "~z")


async def test_pending_writes_keep_task_ids_and_order(backend: Backend, saver: Any) -> None:
    memory = InMemorySaver()
    cp = checkpoint({"a": 1})
    at = memory.put(config("t", ""), cp, {"source": "loop", "step": 0}, {})
    pending_writes_fixture(lambda w, task, path: memory.put_writes(at, w, task, path))
    want = memory.get_tuple(at)
    assert want is not None
    assert want.pending_writes is not None
    assert [(w[0], w[1]) for w in want.pending_writes] == [
        ("task-b", "x"),
        ("task-c", ERROR),
        ("task-a", INTERRUPT),
        ("task-a", "x"),
        ("task-a", "y"),
    ]
    await copy(backend, memory_source(memory), saver)
    got = await either(saver).get_tuple(at)
    assert got is not None
    assert got.pending_writes == want.pending_writes
    # The tuple has no task paths: ordinal paths keep the order, indexes are rebuilt.
    docs = await maybe_await(saver.writes_collection.find({}, {"task_path": 1}).to_list(None))
    assert sorted((d["_id"]["task_id"], d["task_path"], d["_id"]["idx"]) for d in docs) == [
        ("task-a", "00000002", -3),
        ("task-a", "00000002", 0),
        ("task-a", "00000002", 1),
        ("task-b", "00000000", 0),
        ("task-c", "00000001", -1),
    ]


async def test_official_collections_keep_task_paths_and_indexes(
    backend: Backend, saver: Any
) -> None:
    official = official_saver_class()
    async with official_client(backend) as client:
        source = official(client, "official_paths")
        try:
            cp = checkpoint({"a": 1})
            at = source.put(config("t", ""), cp, {"source": "loop", "step": 0}, {})
            pending_writes_fixture(lambda w, task, path: source.put_writes(at, w, task, path))
            report = await copy(backend, Source("official", source), saver)
            assert report.ok
            theirs = sorted(
                (d["task_id"], d["task_path"], d["idx"], d["channel"])
                for d in source.writes_collection.find({})
            )
        finally:
            client.drop_database("official_paths")
    docs = await maybe_await(saver.writes_collection.find({}).to_list(None))
    ours = sorted(
        (d["_id"]["task_id"], d["task_path"], d["_id"]["idx"], d["channel"]) for d in docs
    )
    assert ours == theirs
    got = await either(saver).get_tuple(at)
    assert got is not None
    # Our order is LangGraph's `writes_sort_key` (task path first); the official saver
    # returns writes in insertion order.
    assert got.pending_writes is not None
    assert [(w[0], w[1]) for w in got.pending_writes] == [
        ("task-b", "x"),
        ("task-c", ERROR),
        ("task-a", INTERRUPT),
        ("task-a", "x"),
        ("task-a", "y"),
    ]


async def test_official_threads_come_from_one_aggregation(backend: Backend) -> None:
    official = official_saver_class()
    async with official_client(backend) as client:
        source = official(client, "official_threads")
        try:
            for thread_id in ("b", "a", "c"):
                await chat(source, thread_id, range(2))
            if backend.wire is not None:
                before = backend.wire.count()
            assert source_thread_ids(source) == ["a", "b", "c"]
            if backend.wire is not None:
                assert backend.wire.commands[before:] == ["aggregate"]
            assert sorted(source_thread_ids(source, fast_path=False)) == ["a", "b", "c"]
            direct = OfficialMongoDBSource(client["official_threads"])
            assert direct.thread_ids() == ["a", "b", "c"]
        finally:
            client.drop_database("official_threads")


# Re-runs, conflicts, failures.


async def test_an_interrupted_copy_resumes_without_duplicates(
    backend: Backend,
    saver: Any,
    sent_commands: list[Command],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = InMemorySaver()
    for thread_id in ("one", "two"):
        await chat(memory, thread_id, range(3))
    source = memory_source(memory)
    with monkeypatch.context() as failing:
        sent = fail_bulk_writes_after(failing, allowed=3)
        with pytest.raises(AutoReconnect, match="injected"):
            await copy(backend, source, saver, batch_size=2)
    # Stopped between a batch's writes and its checkpoints.
    assert sent == ["writes", "checkpoints", "writes"]
    partial = await listed(saver, {"configurable": {"thread_id": "one"}})
    assert len(partial) == 2
    for mine in partial:  # never a checkpoint without its writes
        theirs = memory.get_tuple(mine.config)
        assert theirs is not None
        assert mine.pending_writes == theirs.pending_writes

    report = await copy(backend, source, saver, batch_size=2)
    assert [(t.thread_id, t.status) for t in report.threads] == [
        ("one", ThreadStatus.COMPLETED),
        ("two", ThreadStatus.COPIED),
    ]
    assert await stored(saver) == source_documents(memory)
    assert (await verify(backend, source, saver)).ok

    sent_commands.clear()
    again = await copy(backend, source, saver)
    assert {t.status for t in again.threads} == {ThreadStatus.UNCHANGED}
    # Nothing rewritten, touched or deleted: the copy only read.
    assert sent_commands, "the copy compared nothing"
    assert all(command.method.reads for command in sent_commands), methods(sent_commands)
    assert await stored(saver) == source_documents(memory)


async def test_a_thread_held_with_other_data_is_a_conflict_unless_overwrite(
    backend: Backend, saver: Any
) -> None:
    memory = InMemorySaver()
    await chat(memory, "t", range(2))
    await chat(memory, "other", range(1))
    await chat(saver, "t", range(5, 6), sync=backend.is_sync)
    before = await listed(saver, {"configurable": {"thread_id": "t"}})
    source = memory_source(memory)

    report = await copy(backend, source, saver)
    statuses = {t.thread_id: t.status for t in report.threads}
    assert statuses == {"t": ThreadStatus.CONFLICT, "other": ThreadStatus.COPIED}
    assert not report.ok
    [conflict] = report.problems
    assert "differs in the target" in str(conflict.detail) or "the source does not" in str(
        conflict.detail
    )
    assert "conflict" in report.summary()
    assert await listed(saver, {"configurable": {"thread_id": "t"}}) == before
    assert not (await verify(backend, source, saver)).ok

    replaced = await copy(backend, source, saver, overwrite=True)
    statuses = {t.thread_id: t.status for t in replaced.threads}
    assert statuses == {"t": ThreadStatus.REPLACED, "other": ThreadStatus.UNCHANGED}
    assert (await verify(backend, source, saver)).ok


async def test_a_target_that_went_on_is_a_conflict_a_source_that_went_on_completes(
    backend: Backend, saver: Any
) -> None:
    memory = InMemorySaver()
    await chat(memory, "ahead", range(2))
    await chat(memory, "behind", range(2))
    source = memory_source(memory)
    await copy(backend, source, saver)
    await chat(saver, "ahead", range(2, 3), sync=backend.is_sync)
    await chat(memory, "behind", range(2, 3))

    report = await copy(backend, source, saver)
    found = {t.thread_id: (t.status, t.detail) for t in report.threads}
    assert found["ahead"][0] is ThreadStatus.CONFLICT
    assert "the target holds 3 checkpoint(s)" in str(found["ahead"][1])
    assert found["behind"] == (ThreadStatus.COMPLETED, None)
    verified = await verify(backend, source, saver, thread_ids=["behind"])
    assert verified.ok, verified.summary()


async def test_a_dry_run_writes_nothing(backend: Backend, saver: Any) -> None:
    memory = InMemorySaver()
    await chat(memory, "t", range(2))
    report = await copy(backend, memory_source(memory), saver, dry_run=True)
    [thread] = report.threads
    assert (thread.status, thread.checkpoints, thread.writes) == (
        ThreadStatus.COPIED,
        *source_documents(memory),
    )
    assert report.dry_run
    assert "would be written" in report.summary()
    assert await stored(saver) == (0, 0)


async def test_a_checkpoint_too_large_fails_its_thread_only(backend: Backend) -> None:
    memory = InMemorySaver()
    big = checkpoint({"blob": os.urandom(17 * 1024 * 1024)})
    memory.put(config("big", ""), big, {"source": "input", "step": -1}, {"blob": 1})
    await chat(memory, "small", range(1))
    async with backend.saver(state_max_bytes=16 * 1024 * 1024) as saver:
        report = await copy(backend, memory_source(memory), saver)
        found = {t.thread_id: t for t in report.threads}
        assert found["small"].status is ThreadStatus.COPIED
        assert found["big"].status is ThreadStatus.FAILED
        assert big["id"] in str(found["big"].detail)
        assert "state_max_bytes=16777216" in str(found["big"].detail)
        assert await count(saver.checkpoint_collection, {"thread_id": "big"}) == 0
        assert await count(saver.writes_collection, {"thread_id": "big"}) == 0


async def test_states_beyond_16_mib_are_copied_in_chunks_and_verify(
    backend: Backend, saver: Any
) -> None:
    memory = InMemorySaver()
    blob, write = os.urandom(17 * 1024 * 1024), os.urandom(20 * 1024 * 1024)
    big = checkpoint({"blob": blob})
    stored_config = memory.put(config("big", ""), big, {"source": "input", "step": -1}, {"blob": 1})
    memory.put_writes(stored_config, [("w", write)], "task")
    report = await copy(backend, memory_source(memory), saver)
    [thread] = report.threads
    assert (thread.status, thread.checkpoints, thread.writes) == (ThreadStatus.COPIED, 1, 1)
    got = await either(saver).get_tuple(config("big", ""))
    assert got is not None
    assert got.checkpoint["channel_values"]["blob"] == blob
    assert got.pending_writes == [("task", "w", write)]
    assert (await verify(backend, memory_source(memory), saver)).ok
    [again] = (await copy(backend, memory_source(memory), saver)).threads
    assert again.status is ThreadStatus.UNCHANGED


async def test_copied_threads_get_the_target_ttl_stamp(backend: Backend) -> None:
    memory = InMemorySaver()
    await chat(memory, "t", range(2))
    async with backend.saver(ttl=3600) as saver:
        await copy(backend, memory_source(memory), saver)
        stamped = {"thread_touched_at": {"$exists": True}}
        assert await count(saver.checkpoint_collection, stamped) == source_documents(memory)[0]
        assert await count(saver.writes_collection, stamped) == source_documents(memory)[1]


# Verification.


async def test_verify_names_every_kind_of_difference(backend: Backend, saver: Any) -> None:
    memory = InMemorySaver()
    await chat(memory, "t", range(2))
    await chat(memory, "missing", range(1))
    source = memory_source(memory)
    await copy(backend, source, saver, thread_ids=["t"])
    latest = memory.get_tuple(config("t"))
    assert latest is not None
    # One write of the first checkpoint gone, one checkpoint added, metadata changed.
    [oldest] = [t for t in memory.list(config("t")) if t.metadata["step"] == -1]
    gone = {"_id.checkpoint.checkpoint_id": oldest.config["configurable"]["checkpoint_id"]}
    await maybe_await(saver.writes_collection.delete_one(gone))
    extra = checkpoint({"x": 1})
    await either(saver).put(latest.config, extra, {"source": "update", "step": 9}, {})

    report = await verify(backend, source, saver)
    assert not report.ok
    found = {t.thread_id: t.differences for t in report.threads}
    assert found["missing"] == [
        *[
            f"checkpoint {cid!r} (namespace ''): missing from the target"
            for cid in ids("missing", memory)
        ],
        f"latest checkpoint: {ids('missing', memory)[0]!r} in the source, None in the target",
    ]
    assert oldest.pending_writes is not None
    assert found["t"] == [
        f"checkpoint {oldest.config['configurable']['checkpoint_id']!r} (namespace ''): "
        "pending writes of task(s) " + repr(oldest.pending_writes[0][0]) + " differ",
        f"checkpoint {extra['id']!r} (namespace ''): in the target only",
        f"latest checkpoint: {latest.config['configurable']['checkpoint_id']!r} in the "
        f"source, {extra['id']!r} in the target",
    ]
    assert "2 thread(s) differ" in report.summary()


async def test_a_checkpoint_trimmed_from_the_target_is_missing_and_copied_again(
    backend: Backend, saver: Any
) -> None:
    """A target checkpoint deleted since the copy (a `keep_last` trim, a `prune`):
    verify names it missing, and copying again brings it back."""
    memory = InMemorySaver()
    await chat(memory, "t", range(2))
    source = memory_source(memory)
    await copy(backend, source, saver)
    [oldest] = [t for t in memory.list(config("t")) if t.metadata["step"] == -1]
    oldest_id = oldest.config["configurable"]["checkpoint_id"]
    await maybe_await(saver.checkpoint_collection.delete_one({"_id.checkpoint_id": oldest_id}))
    report = await verify(backend, source, saver)
    [thread] = report.threads
    assert thread.differences == [
        f"checkpoint {oldest_id!r} (namespace ''): missing from the target"
    ]
    again = await copy(backend, source, saver)
    assert [t.status for t in again.threads] == [ThreadStatus.COMPLETED]
    assert (await verify(backend, source, saver)).ok
    assert ids("t", memory) == [
        t.config["configurable"]["checkpoint_id"] for t in await listed(saver, config("t"))
    ]


def ids(thread_id: str, memory: InMemorySaver) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in memory.list(config(thread_id))]


# Memory.


class CountingSaver(InMemorySaver):
    """An `InMemorySaver` that counts the checkpoints its `list` and its `get_tuple` have
    handed out (in a dict its shallow copies share: the copy reads through one)."""

    def __init__(self) -> None:
        super().__init__()
        self.handed_out = {"list": 0, "get_tuple": 0}

    def list(self, config: Any, **kwargs: Any) -> Iterator[Any]:
        for item in super().list(config, **kwargs):
            self.handed_out["list"] += 1
            yield item

    def get_tuple(self, config: Any) -> Any:
        self.handed_out["get_tuple"] += 1
        return super().get_tuple(config)


async def test_a_long_thread_is_checked_whole_then_read_and_written_a_batch_at_a_time(
    backend: Backend, saver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = CountingSaver()
    await chat(memory, "long", range(10))  # 30 checkpoints
    sent = fail_bulk_writes_after(monkeypatch, allowed=1000)
    seen: list[tuple[int, int]] = []  # (listed, fetched and not yet written), per batch
    done = 0

    def on_progress(thread_id: str, checkpoints: int) -> None:
        nonlocal done
        done += checkpoints
        seen.append((memory.handed_out["list"], memory.handed_out["get_tuple"] - done))

    memory.handed_out.update({"list": 0, "get_tuple": 0})
    await copy(
        backend,
        memory_source(memory),
        saver,
        thread_ids=["long"],
        batch_size=4,
        on_progress=on_progress,
    )
    assert done == 30
    # The whole thread was checked before anything was written, and each batch is read
    # just before it is written: never more than a batch in memory.
    assert seen == [(30, 0)] * 8
    assert sent.count("checkpoints") == 8


# Bad input.


async def test_bad_arguments_are_named(backend: Backend, saver: Any) -> None:
    memory = InMemorySaver()
    with pytest.raises(TypeError, match="OfficialMongoDBSource, got dict"):
        await copy(backend, Source("memory", {}), saver)
    with pytest.raises(ValueError, match="batch_size must be an int of at least 1, got 0"):
        await copy(backend, memory_source(memory), saver, batch_size=0)
    with pytest.raises(TypeError, match="thread_ids must be a sequence of str"):
        await copy(backend, memory_source(memory), saver, thread_ids="abc")
    with pytest.raises(TypeError, match="thread_ids\\[1\\] must be a str"):
        await copy(backend, memory_source(memory), saver, thread_ids=["a", 1])
    if not backend.is_sync:
        with pytest.raises(TypeError, match="use acopy_threads"):
            await asyncio.to_thread(copy_threads, memory, saver)


async def test_sources_that_refuse_async_are_read_in_a_thread(
    backend: Backend, saver: Any, tmp_path: Path
) -> None:
    """`SqliteSaver` refuses `alist`; `acopy_threads` reads its `list` in a worker thread."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    with sqlite3.connect(tmp_path / "s.db", check_same_thread=False) as conn:
        sqlite = SqliteSaver(conn)
        await chat(sqlite, "t", range(2))
        report = await migrate.acopy_threads(sqlite, saver)
        assert [t.status for t in report.threads] == [ThreadStatus.COPIED]
        assert (await migrate.averify_threads(sqlite, saver)).ok


class AsyncOnlySaver(InMemorySaver):
    """A saver that reads only through its async methods (as an `AsyncPostgresSaver` on
    its own loop does), and notes the thread each read ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.read_on: set[str] = set()

    def list(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("sync reads are refused")

    def get_tuple(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("sync reads are refused")

    async def alist(self, *args: Any, **kwargs: Any) -> Any:
        self.read_on.add(threading.current_thread().name)
        for stored in super().list(*args, **kwargs):
            yield stored

    async def aget_tuple(self, *args: Any, **kwargs: Any) -> Any:
        self.read_on.add(threading.current_thread().name)
        return super().get_tuple(*args, **kwargs)


async def test_the_async_api_reads_a_source_through_its_async_methods_on_the_loop(
    saver: Any,
) -> None:
    """`acopy_threads` and `averify_threads` read a saver through `alist`/`aget_tuple`, on
    the event loop's thread; the sync reads are never tried."""
    source = AsyncOnlySaver()
    await chat(source, "t", range(2), sync=False)
    source.read_on.clear()
    report = await migrate.acopy_threads(source, saver, batch_size=1)
    assert [t.status for t in report.threads] == [ThreadStatus.COPIED]
    assert (await migrate.averify_threads(source, saver, batch_size=1)).ok
    assert source.read_on == {threading.current_thread().name}


async def test_a_target_on_the_official_collections_is_refused_by_name(backend: Backend) -> None:
    """Both packages default to the same collection names: copying into the collections
    the source uses must stop with a message, not mix documents."""
    if backend.wire is None and backend.uri is None:
        pytest.skip("the official saver cannot share the in-process mock's database")
    official = official_saver_class()
    name = f"shared_{uuid.uuid4().hex[:12]}"
    async with official_client(backend) as client:
        try:
            source = official(client, name)
            await chat(source, "t", range(1))
            async with backend.client() as ours:
                # No setup(): our indexes clash with the official saver's unique one.
                saver_class = MongoDBSaver if backend.is_sync else AsyncMongoDBSaver
                target = saver_class(ours, name)
                with pytest.raises(ValueError, match="looks like langgraph-checkpoint-mongodb's"):
                    await copy(backend, Source("official", source), target)
        finally:
            client.drop_database(name)


# Values this environment cannot restore, and checkpoints that do not decode.


class ShopTypes:
    """An application's module of types (`shop_types.Order`), importable until `hide()`:
    as in an environment the application is not installed in."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.path = str(tmp_path)
        self.monkeypatch = monkeypatch
        (tmp_path / "shop_types.py").write_text(
            "from dataclasses import dataclass\n\n@dataclass\nclass Order:\n    number: int\n"
        )
        monkeypatch.syspath_prepend(self.path)  # restores sys.path afterwards

    def order(self, number: int) -> Any:
        return importlib.import_module("shop_types").Order(number)

    def hide(self) -> None:
        self.monkeypatch.delitem(sys.modules, "shop_types")
        sys.path.remove(self.path)

    def show(self) -> None:
        sys.path.insert(0, self.path)


def shop_thread(shop: ShopTypes) -> tuple[InMemorySaver, Any]:
    """A source whose thread `shop` holds an `Order` in its channel values."""
    memory = InMemorySaver()
    held = checkpoint({"order": shop.order(7)})
    memory.put(config("shop", ""), held, {"source": "input", "step": -1}, {"order": 1})
    return memory, held


async def test_an_application_type_that_cannot_be_imported_fails_its_thread_by_name(
    backend: Backend, saver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangGraph's serializer would return the object's fields as a dict (and log once):
    copied, the application would later read a dict where it stored its own type."""
    shop = ShopTypes(tmp_path, monkeypatch)
    memory, held = shop_thread(shop)
    await chat(memory, "plain", range(1))
    shop.hide()

    report = await copy(backend, memory_source(memory), saver)
    found = {t.thread_id: t for t in report.threads}
    assert found["plain"].status is ThreadStatus.COPIED
    assert found["shop"].status is ThreadStatus.FAILED
    detail = str(found["shop"].detail)
    assert detail.startswith(f"checkpoint {held['id']!r} (namespace ''")
    assert "shop_types.Order (cannot be imported here: ModuleNotFoundError" in detail
    assert "nothing of this thread was written" in detail
    assert await count(saver.checkpoint_collection, {"thread_id": "shop"}) == 0
    assert not report.ok

    verified = await verify(backend, memory_source(memory), saver, thread_ids=["shop"])
    assert not verified.ok
    assert "shop_types.Order" in verified.summary()

    shop.show()  # importable again: the copy is exact
    again = await copy(backend, memory_source(memory), saver, thread_ids=["shop"])
    assert [t.status for t in again.threads] == [ThreadStatus.COPIED]
    copied = await either(saver).get_tuple(config("shop", ""))
    assert copied is not None
    assert copied.checkpoint["channel_values"]["order"] == shop.order(7)
    assert (await verify(backend, memory_source(memory), saver, thread_ids=["shop"])).ok


async def test_a_type_strict_mode_blocks_is_never_imported(
    backend: Backend, saver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an allow-list (LangGraph's strict mode), a type outside it fails its thread by
    name, and its module is not imported: importing runs the module's code, which is what
    strict mode exists to prevent for a database you do not fully control."""
    shop = ShopTypes(tmp_path, monkeypatch)
    memory, _ = shop_thread(shop)
    monkeypatch.delitem(sys.modules, "shop_types")  # importable, not imported
    memory.serde = JsonPlusSerializer(allowed_msgpack_modules=None)  # strict mode

    report = await copy(backend, memory_source(memory), saver)
    [thread] = report.threads
    assert thread.status is ThreadStatus.FAILED
    assert "shop_types.Order (not in the serializer's allowed_msgpack_modules)" in str(
        thread.detail
    )
    assert "shop_types" not in sys.modules
    assert await count(saver.checkpoint_collection, {"thread_id": "shop"}) == 0


async def test_verify_compares_exactly_what_the_target_stores(
    backend: Backend, saver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stand-ins (the same dict of fields on both sides) are not an identical copy."""
    shop = ShopTypes(tmp_path, monkeypatch)
    memory, _ = shop_thread(shop)
    assert (await copy(backend, memory_source(memory), saver)).ok
    shop.hide()
    verified = await verify(backend, memory_source(memory), saver)
    assert not verified.ok
    assert "shop_types.Order (cannot be imported here" in verified.summary()


@pytest.mark.parametrize("kind", ["sqlite", "official"])
async def test_a_checkpoint_that_does_not_decode_fails_its_thread_only(
    backend: Backend, kind: str, tmp_path: Path
) -> None:
    async with open_source(kind, backend, tmp_path) as source, backend.saver() as target:
        for thread_id in ("good", "garbled", "nothing"):
            await chat(source.saver, thread_id, range(2))
        garbled = source.saver.get_tuple(config("garbled"))
        nothing = source.saver.get_tuple(config("nothing"))
        for tuple_, type_, data in [(garbled, "msgpack", b"\xc1"), (nothing, "null", b"")]:
            ids = tuple_.config["configurable"]
            if kind == "sqlite":
                with source.saver.cursor() as cursor:
                    cursor.execute(
                        "UPDATE checkpoints SET type = ?, checkpoint = ? "
                        "WHERE thread_id = ? AND checkpoint_id = ?",
                        (type_, data, ids["thread_id"], ids["checkpoint_id"]),
                    )
            else:
                source.saver.checkpoint_collection.update_one(
                    {"thread_id": ids["thread_id"], "checkpoint_id": ids["checkpoint_id"]},
                    {"$set": {"type": type_, "checkpoint": data}},
                )

        report = await copy(backend, source, target)
        found = {t.thread_id: t for t in report.threads}
        assert found["good"].status is ThreadStatus.COPIED
        assert found["garbled"].status is ThreadStatus.FAILED
        assert "'msgpack' payload does not decode" in str(found["garbled"].detail)
        if kind == "official":  # the stream names the checkpoint; `list` only the one before
            assert garbled.config["configurable"]["checkpoint_id"] in str(found["garbled"].detail)
        else:
            assert "the first checkpoint the source lists" in str(found["garbled"].detail)
        assert found["nothing"].status is ThreadStatus.FAILED
        assert str(found["nothing"].detail).startswith(
            f"checkpoint {nothing.config['configurable']['checkpoint_id']!r} (namespace ''): "
            "it decodes to NoneType, not a checkpoint (a dict)"
        )
        for thread_id in ("garbled", "nothing"):
            assert await count(target.checkpoint_collection, {"thread_id": thread_id}) == 0
            assert await count(target.writes_collection, {"thread_id": thread_id}) == 0
        verified = await verify(backend, source, target)
        assert {t.thread_id for t in verified.threads if t.differences} == {"garbled", "nothing"}


async def test_an_encrypted_source_is_decoded_exactly_too(
    backend: Backend, saver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    shop = ShopTypes(tmp_path, monkeypatch)
    encrypted = InMemorySaver(serde=EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 16))
    held = checkpoint({"order": shop.order(7)})
    encrypted.put(config("shop", ""), held, {"source": "input", "step": -1}, {"order": 1})
    shop.hide()
    report = await copy(backend, memory_source(encrypted), saver)
    assert [t.status for t in report.threads] == [ThreadStatus.FAILED]
    assert "shop_types.Order (cannot be imported here" in str(report.threads[0].detail)


class ForgettingSaver(InMemorySaver):
    """Loses a checkpoint after listing it: as a source another process prunes while the
    copy runs, between the pass that checks a thread and the one that writes it."""

    forgotten: str | None = None

    def get_tuple(self, config: Any) -> Any:
        if config["configurable"].get("checkpoint_id") == self.forgotten:
            return None
        return super().get_tuple(config)


async def test_a_thread_the_source_changes_while_copied_fails_and_leaves_nothing(
    backend: Backend, saver: Any
) -> None:
    source = ForgettingSaver()
    await chat(source, "pruned", range(3))
    listed_ids = [t.config["configurable"]["checkpoint_id"] for t in source.list(None)]
    source.forgotten = listed_ids[len(listed_ids) // 2]
    report = await copy(backend, memory_source(source), saver, batch_size=2)
    [thread] = report.threads
    assert thread.status is ThreadStatus.FAILED
    assert str(thread.detail) == (
        f"checkpoint {source.forgotten!r} (namespace ''): the source no longer holds it; "
        "nothing of this thread was kept"
    )
    assert await stored(saver) == (0, 0)


async def test_a_thread_the_source_lacks_is_missing_never_copied(
    backend: Backend, saver: Any
) -> None:
    """A misspelt thread id was reported `copied` (`ok` true) and verified "identical";
    with `overwrite=True` the target's thread of that id is left as it is, not replaced by
    nothing."""
    memory = InMemorySaver()
    await chat(memory, "t", range(1))
    await chat(saver, "typo", range(1), sync=backend.is_sync)
    held = await listed(saver, {"configurable": {"thread_id": "typo"}})
    source = memory_source(memory)
    for overwrite in (False, True):
        report = await copy(backend, source, saver, thread_ids=["typo", "t"], overwrite=overwrite)
        statuses = {t.thread_id: t.status for t in report.threads}
        assert statuses["typo"] is ThreadStatus.MISSING
        assert statuses["t"] in (ThreadStatus.COPIED, ThreadStatus.UNCHANGED)
        assert not report.ok
        assert [t.thread_id for t in report.problems] == ["typo"]
        assert report.summary().splitlines()[-1] == (
            "  'typo': missing: the source has no checkpoint of this thread; nothing was written"
        )
        assert await listed(saver, {"configurable": {"thread_id": "typo"}}) == held
    verified = await verify(backend, source, saver, thread_ids=["typo"])
    assert not verified.ok
    assert "identical" not in verified.summary()
    assert verified.threads[0].differences[0] == "the source has no checkpoint of this thread"


async def test_this_packages_collections_as_the_official_source_are_named(
    backend: Backend, saver: Any
) -> None:
    """Both packages use the same default names: read as the official saver's, ours failed
    with a bare `KeyError: 'checkpoint_ns'`; a saver source copies them."""
    await chat(saver, "t", range(1), sync=backend.is_sync)
    async with backend.sync_client() as client, backend.saver() as target:
        ours = OfficialMongoDBSource(client[saver.db.name])
        with pytest.raises(ValueError, match="langgraph-checkpoint-mongo's own documents") as named:
            await copy(backend, Source("official", ours), target)
        assert str(named.value) == (
            f"collection {saver.db.name}.checkpoints holds langgraph-checkpoint-mongo's own "
            "documents, not langgraph-checkpoint-mongodb's: copy from it with this package's "
            "saver as the source (copy_threads(MongoDBSaver(client, db_name, ...), target))"
        )
        report = await copy(backend, Source("saver", saver), target)
        assert [t.status for t in report.threads] == [ThreadStatus.COPIED]
