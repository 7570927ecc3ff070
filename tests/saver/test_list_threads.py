"""`list_threads` / `alist_threads`: every thread by its latest root checkpoint, in thread
id order, with `list`'s metadata filter, paged by a `before` cursor.

`InMemorySaver` has no `list_threads`; what it would answer is read from it
(`reference_threads`: each thread's latest checkpoint of namespace "", as its `get_tuple`
returns it, kept when `list`'s metadata test accepts it), and the same scenario, run on
both, must list the same threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, ThreadInfo, _queries
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._commands import Command as DriverCommand
from langgraph.checkpoint.mongo._commands import Method, NextDocument, OpenCursor
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._queries import WritesJoin
from support.backends import MONGODB_URI, Backend, CommandLog
from support.graphs import Run, chat_graph, human, in_memory, linear_graph, run_on, subgraph_parent
from support.helpers import config, either, methods, put

# A value of metadata, not a clock: no test reads the time from it.
AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


def reference_threads(
    saver: InMemorySaver,
    *,
    filter: dict[str, Any] | None = None,
    limit: int | None = None,
    before: str | None = None,
) -> list[ThreadInfo]:
    """What `list_threads` answers, read from `InMemorySaver`."""
    found = []
    for thread_id in sorted({t.config["configurable"]["thread_id"] for t in saver.list(None)}):
        latest = saver.get_tuple(config(thread_id))
        if latest is None or (before is not None and thread_id <= before):
            continue
        if all(value == latest.metadata.get(key) for key, value in (filter or {}).items()):
            found.append(
                ThreadInfo(thread_id, latest.config, latest.metadata, latest.checkpoint["ts"])
            )
    return found[:limit]


async def listed_threads(checkpointer: Any, **kwargs: Any) -> list[ThreadInfo]:
    if isinstance(checkpointer, InMemorySaver):
        return reference_threads(checkpointer, **kwargs)
    return await either(checkpointer).list_threads(**kwargs)


def recorded(run: Run, label: str, found: list[ThreadInfo]) -> None:
    """Ids become ordinals and `ts` differs between runs: both savers' own `ts` are
    checked against their own `get_tuple` elsewhere."""
    run.record(label, [(t.thread_id, t.config, t.metadata) for t in found])


async def test_real_graphs_list_as_in_memory_saver_would(backend: Backend) -> None:
    """Chats, a subgraph interrupted inside its child (checkpoints in two namespaces), an
    interrupt resumed and an `update_state`: the threads, their latest root checkpoints
    and metadata, with and without filters and pages, as `InMemorySaver` holds them."""

    async def scenario(run: Run) -> None:
        chat = run.compile(chat_graph())
        for thread_id, turns in (("chat-b", 3), ("chat-a", 1)):
            for turn in range(turns):
                await chat.invoke(human(turn), config(thread_id))
        parent = run.compile(subgraph_parent())
        await parent.invoke({"log": []}, config("sub"))
        asking = run.compile(linear_graph("one", "ask", "two", ask="ask"))
        await asking.invoke({"log": []}, config("asked"))
        await asking.invoke(Command(resume="yes"), config("asked"))
        await asking.update(config("asked"), {"log": ["edited"]})
        checkpointer = run.checkpointer
        recorded(run, "all", await listed_threads(checkpointer))
        recorded(run, "loop", await listed_threads(checkpointer, filter={"source": "loop"}))
        recorded(run, "update", await listed_threads(checkpointer, filter={"source": "update"}))
        recorded(run, "step 1", await listed_threads(checkpointer, filter={"step": 1}))
        recorded(run, "page", await listed_threads(checkpointer, limit=2, before="asked"))
        recorded(run, "after last", await listed_threads(checkpointer, before="sub"))

    async with backend.saver() as saver:

        def reopen() -> Any:
            return backend.saver(db_name=saver.db.name)

        got = await run_on(saver, backend.is_sync, reopen, scenario)
        for info in await either(saver).list_threads():
            latest = await either(saver).get_tuple(config(info.thread_id))
            assert latest is not None
            assert info == (
                info.thread_id,
                latest.config,
                latest.metadata,
                latest.checkpoint["ts"],
            )
            assert not info.pinned
    want = await in_memory(backend.is_sync, scenario)
    assert got.log == want.log
    assert [t[0] for t in want.log["all"]] == ["asked", "chat-a", "chat-b", "sub"]
    assert want.log["update"]
    assert want.log["loop"]
    assert want.log["page"]


async def test_metadata_filters_apply_to_the_latest_root_checkpoint(backend: Backend) -> None:
    """`list`'s semantics (each `key: value` equal, `True == 1`, `None` for a missing key,
    lists compared whole), on each thread's latest root checkpoint only: an older match,
    or one in a subgraph namespace, does not list a thread."""
    memory = InMemorySaver()
    async with backend.saver() as saver:
        for checkpointer in (saver, memory):
            histories: dict[str, list[dict[str, Any]]] = {
                "t1": [{"user": "ann", "n": 1}, {"user": "bob", "n": True, "tags": ["a"]}],
                "t2": [{"user": "bob"}, {"user": "ann", "n": 1.0, "tags": ["a", "b"]}],
                "t3": [{"user": "ann", "tags": ["a"], "n": 0}],
                "t4": [{"user": "cy", "deep": {"x": [1, 2]}}],
                # Metadata a document keeps the serializer's copy of (a datetime).
                "t5": [{"user": "dee", "at": AT}, {"user": "ann", "at": AT + timedelta(1)}],
            }
            for thread_id, history in histories.items():
                parent = None
                for metadata in history:
                    stored = await put(checkpointer, thread_id, parent=parent, metadata=metadata)
                    parent = stored["configurable"]["checkpoint_id"]
                await put(checkpointer, thread_id, ns="child", metadata={"user": "sub"})
        filters: list[dict[str, Any]] = [
            {"user": "ann"},
            {"user": "bob"},
            {"user": "sub"},
            {"n": 1},
            {"n": True},
            {"n": False},
            {"tags": ["a"]},
            {"tags": ["a", "b"], "user": "ann"},
            {"deep": {"x": [1, 2]}},
            {"at": AT},
            {"at": AT + timedelta(1)},
            {"missing": None},
            {"user": None},
            {},
        ]
        for metadata_filter in filters:
            for limit in (None, 1, 2):
                got = await either(saver).list_threads(filter=metadata_filter, limit=limit)
                want = reference_threads(memory, filter=metadata_filter, limit=limit)
                assert [t.thread_id for t in got] == [t.thread_id for t in want], metadata_filter
                assert [t.metadata for t in got] == [t.metadata for t in want], metadata_filter
        found = await either(saver).list_threads(filter={"user": "ann"})
        assert [t.thread_id for t in found] == ["t2", "t3", "t5"]
        assert found[-1].metadata["at"] == AT + timedelta(1)
        # Read from the serializer's copy, which that document keeps (not vacuous).
        stored = await maybe_await(
            saver.checkpoint_collection.find_one({"thread_id": "t5", "metadata.user": "ann"})
        )
        assert "serialized_metadata" in stored
        assert await either(saver).list_threads(filter={"user": "sub"}) == []


async def test_pages_follow_the_cursor_one_command_each(
    backend: Backend, command_log: CommandLog, sent_commands: list[DriverCommand]
) -> None:
    """Pages of `limit` threads, each resumed from the last thread of the one before (as a
    `ThreadInfo` or its id), add up to the whole listing; a page is one `aggregate`."""
    async with backend.saver(command_log) as saver:
        names = [f"thread-{i:02}" for i in range(7)] + ["Z", "é", "日本"]
        for thread_id in names:
            stored = await put(saver, thread_id)
            await put(saver, thread_id, parent=stored["configurable"]["checkpoint_id"])
        whole = await either(saver).list_threads()
        assert [t.thread_id for t in whole] == sorted(names)  # code point order
        for size in (1, 3, 10, 11):
            pages: list[list[ThreadInfo]] = []
            cursor: str | ThreadInfo | None = None
            while True:
                sent_commands.clear()
                page = await either(saver).list_threads(limit=size, before=cursor)
                assert methods(sent_commands) == ["aggregate"], (size, sent_commands)
                if not page:
                    break
                pages.append(page)
                cursor = page[-1] if len(pages) % 2 else page[-1].thread_id
            assert [t for page in pages for t in page] == whole
            assert all(len(page) == size for page in pages[:-1])
        command_log.reset()
        sent_commands.clear()
        assert await either(saver).list_threads(limit=0) == []
        assert await either(saver).list_threads(limit=-1) == []
        assert sent_commands == []
        assert command_log.names == []


async def test_a_listing_stopped_early_closes_its_server_cursor(
    counting: Backend, command_log: CommandLog
) -> None:
    """More threads than a first batch holds, the caller stops after one: the cursor is
    killed then (`killCursors`), not left open on the server until it times out."""
    async with counting.saver(command_log) as saver:
        for i in range(150):
            await put(saver, f"t{i:03}")
        command_log.reset()
        if isinstance(saver, MongoDBSaver):
            for _ in saver.list_threads():
                break
        else:
            stream = saver.alist_threads()
            async for _ in stream:
                break
            assert isinstance(stream, AsyncGenerator)  # closed as LangGraph closes it
            await stream.aclose()
        assert command_log.names == ["aggregate", "killCursors"]


async def test_a_thread_without_root_checkpoints_is_not_listed(backend: Backend) -> None:
    """Only subgraph checkpoints (what a prune of the root namespace could leave): no
    latest root checkpoint, so no entry, as the reference has none."""
    async with backend.saver() as saver:
        await put(saver, "only-child", ns="child")
        await put(saver, "root")
        assert [t.thread_id for t in await either(saver).list_threads()] == ["root"]


async def test_bad_arguments_raise_before_any_command(
    backend: Backend, command_log: CommandLog
) -> None:
    """The checks of `list` (limit, filter), and a cursor that is not a thread id."""
    async with backend.saver(command_log) as saver:
        command_log.reset()
        with pytest.raises(TypeError, match="limit must be an int"):
            await either(saver).list_threads(limit="3")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="limit must be an int"):
            await either(saver).list_threads(limit=True)
        with pytest.raises(ValueError, match="limit must be at most"):
            await either(saver).list_threads(limit=2**63)
        with pytest.raises(TypeError, match="filter must be a dict"):
            await either(saver).list_threads(filter=["user"])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="before must be a thread id"):
            await either(saver).list_threads(before=config("t"))  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="before is not valid Unicode"):
            await either(saver).list_threads(before="\ud800")
        assert command_log.names == []


async def test_the_other_api_of_each_saver_lists_the_same(backend: Backend) -> None:
    """`MongoDBSaver.alist_threads` (a worker thread) and `AsyncMongoDBSaver.list_threads`
    (from another thread than the saver's loop)."""
    async with backend.saver() as saver:
        for thread_id in ("b", "a"):
            await put(saver, thread_id, metadata={"user": thread_id})
        want = await either(saver).list_threads(filter={"user": "b"})
        if isinstance(saver, MongoDBSaver):
            got = [t async for t in saver.alist_threads(filter={"user": "b"})]
        else:
            assert isinstance(saver, AsyncMongoDBSaver)
            got = await asyncio.to_thread(lambda: list(saver.list_threads(filter={"user": "b"})))
        assert got == want
        assert [t.thread_id for t in got] == ["b"]


def test_the_pipeline_is_one_the_server_answers_from_the_index() -> None:
    """What MongoDB's `$sort` + `$group` + `$first` optimization (a DISTINCT_SCAN) needs,
    checked on the pipeline itself, since only `MONGODB_URI` runs can `explain` it: a
    leading `$match` on index fields only, a `$sort` in exactly the order of the index
    `setup()` creates, then a `$group` by that index's first field whose every
    accumulator is `$first`; the order of the output is set by a `$sort` after it."""
    [index] = [
        index.document
        for _, index in _queries.indexes(WritesJoin("w"))
        if index.document["name"] == "thread_ns_checkpoint"
    ]
    index_keys = list(index["key"].items())
    for after in (None, "t"):
        pipeline = _queries.threads_pipeline(after=after, metadata_conditions={}, limit=5)
        match, sort, group, order, limit = pipeline
        assert set(match["$match"]) <= {key for key, _ in index_keys}
        assert list(sort["$sort"].items()) == index_keys
        first_field = index_keys[0][0]
        assert group["$group"].pop("_id") == f"${first_field}"
        assert group["$group"]
        assert all(list(accumulator) == ["$first"] for accumulator in group["$group"].values())
        assert order == {"$sort": {"_id": 1}}
        assert limit == {"$limit": 5}


def test_a_page_is_one_command_that_the_server_closes() -> None:
    """With an exact filter the page's `$limit` is on the server and its first batch holds
    one document more than the page, so the server ends the cursor with it; a filter
    checked in Python sends no `$limit` and stops reading after `limit` accepted."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    from langgraph.checkpoint.mongo._channel_values import RecentValues
    from langgraph.checkpoint.mongo._codec import Codec
    from langgraph.checkpoint.mongo._runners import run_listing

    codec = Codec(JsonPlusSerializer())
    storage = ops.Storage(codec, WritesJoin("w"), None, RecentValues(0))

    def docs(*tags: list[str]) -> list[dict[str, Any]]:
        stored = codec.encode({"ts": "2026-01-01T00:00:00+00:00"})
        return [
            {"_id": f"t{i}", "checkpoint_id": "c", "checkpoint": stored, "metadata": {"tags": t}}
            for i, t in enumerate(tags)
        ]

    def run(metadata_filter: dict[str, Any]) -> tuple[list[ThreadInfo], list[Any]]:
        requests: list[Any] = []
        available = iter(docs(["a"], ["b"], ["a"], ["a"], ["a"]))

        def answer(request: Any) -> Any:
            requests.append(request)
            if isinstance(request, OpenCursor):
                return "cursor"
            return next(available, None)

        listing = ops.list_threads(storage, filter=metadata_filter, limit=2, before=None)
        return list(run_listing(listing, answer)), requests

    for metadata_filter, exact in (({"tags": "a"}, True), ({"tags": ["a"]}, False)):
        found, requests = run(metadata_filter)
        opened = requests[0]
        assert isinstance(opened, OpenCursor)
        command: DriverCommand = opened.command
        assert command.method is Method.AGGREGATE
        [pipeline] = command.args
        assert ({"$limit": 2} in pipeline) is exact
        assert all(isinstance(r, NextDocument) for r in requests[1:])
        assert len(found) == 2
        if exact:
            assert command.kwargs == {"allowDiskUse": True, "batchSize": 3}
            assert len(requests) == 1 + 2
        else:
            assert command.kwargs == {"allowDiskUse": True}
            assert len(requests) == 1 + 3  # t0, t1 refused, t2


@pytest.mark.integration
@pytest.mark.mongodb_planner
@pytest.mark.skipif(not MONGODB_URI, reason="needs a real server: set MONGODB_URI")
async def test_a_page_reads_the_index_not_the_collection() -> None:
    """`explain` of a page, its next page and a filtered listing on a real server: no
    collection scan, the index `thread_ns_checkpoint`; off a sharded cluster (where a
    shard filter may stop it before MongoDB 8.0) the DISTINCT_SCAN itself."""
    from support.real_server import Plan, deployment

    async with Backend("async", MONGODB_URI).saver() as saver:
        for i in range(40):  # enough documents that a planner would prefer an index
            parent = None
            for step in range(3):
                stored = await put(saver, f"t{i:02}", parent=parent, metadata={"step": step})
                parent = stored["configurable"]["checkpoint_id"]
        pipelines = [
            _queries.threads_pipeline(after=None, metadata_conditions={}, limit=10),
            _queries.threads_pipeline(after="t10", metadata_conditions={}, limit=10),
            _queries.threads_pipeline(
                after=None, metadata_conditions={"metadata.step": {"$eq": 2}}, limit=None
            ),
        ]
        for pipeline in pipelines:
            explained = await saver.db.command(
                {
                    "explain": {
                        "aggregate": saver.checkpoint_collection_name,
                        "pipeline": pipeline,
                        "cursor": {},
                    },
                    "verbosity": "executionStats",
                }
            )
            plan = Plan.read(explained)
            assert "COLLSCAN" not in plan.stages, (pipeline, plan)
            assert "thread_ns_checkpoint" in plan.indexes, (pipeline, plan)
            if deployment().topology != "sharded":
                assert "DISTINCT_SCAN" in plan.stages, (pipeline, plan)
