"""States near MongoDB's 16 MiB document limit, and opt-in compression."""

from __future__ import annotations

import operator
import os
import sys
import threading
from collections import OrderedDict
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from langgraph.checkpoint.mongo import CheckpointTooLargeError, _sizes
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._keys import CheckpointRef
from langgraph.checkpoint.mongo._logging import logger
from langgraph.checkpoint.mongo.testing._wire import cursors
from support.backends import Backend
from support.graphs import Driver
from support.helpers import config, either, listed, new_thread, put

MIB = 1024 * 1024


async def test_a_checkpoint_over_state_max_bytes_fails_cleanly(backend: Backend) -> None:
    async with backend.saver(state_max_bytes=16 * MIB) as saver:
        thread = new_thread()
        previous = await put(saver, thread, values={"small": "ok"})
        with pytest.raises(CheckpointTooLargeError) as caught:
            await put(
                saver,
                thread,
                parent=previous["configurable"]["checkpoint_id"],
                values={"blob": os.urandom(17 * MIB)},
            )
        error = caught.value
        assert isinstance(error, ValueError)
        assert error.thread_id == thread
        assert error.checkpoint_ns == ""
        assert error.size > error.limit == 16 * MIB
        assert thread in str(error)
        assert f"state_max_bytes={16 * MIB}" in str(error)
        latest = await either(saver).get_tuple(config(thread))
        assert latest is not None
        assert latest.config == previous
        assert len(await listed(saver, config(thread))) == 1
        # Nothing of it was written: no chunk either.
        assert await _chunk_count(saver, thread) == 0


@pytest.mark.parametrize("compression", [None, "zstd", "zlib"])
async def test_too_large_advises_compression_only_to_a_saver_without_it(
    backend: Backend, compression: Any
) -> None:
    async with backend.saver(compression=compression, state_max_bytes=16 * MIB) as saver:
        with pytest.raises(CheckpointTooLargeError) as caught:
            await put(saver, new_thread(), values={"blob": os.urandom(17 * MIB)})
    message = str(caught.value)
    if compression is None:
        assert "Enable compression='zstd'" in message
    else:
        assert "Enable compression" not in message
        assert f"already compresses (compression={compression!r})" in message
    assert "keep large payloads out of the graph state" in message


async def test_a_write_over_state_max_bytes_fails_and_writes_nothing(backend: Backend) -> None:
    async with backend.saver(state_max_bytes=16 * MIB) as saver:
        thread = new_thread()
        stored = await put(saver, thread)
        writes = [("small", 1), ("huge", os.urandom(17 * MIB))]
        named = r"^Write 1 \(channel 'huge', task 'task'\) of thread"
        with pytest.raises(CheckpointTooLargeError, match=named):
            await either(saver).put_writes(stored, writes, "task")
        assert (await either(saver).get_stored(stored)).pending_writes == []
        assert await _chunk_count(saver, thread) == 0


def test_state_max_bytes_is_checked() -> None:
    from langgraph.checkpoint.mongo import MongoDBSaver
    from langgraph.checkpoint.mongo.testing import client

    with pytest.raises(ValueError, match="state_max_bytes must be at least 16777216"):
        MongoDBSaver(client(), state_max_bytes=MIB)
    with pytest.raises(TypeError, match="state_max_bytes must be an int"):
        MongoDBSaver(client(), state_max_bytes=20.0 * MIB)  # type: ignore[arg-type]


async def _chunk_count(saver: Any, thread: str) -> int:
    query = {"thread_id": thread, "_id.chunk": {"$exists": True}}
    return int(await maybe_await(saver.writes_collection.count_documents(query)))


class BlobState(TypedDict, total=False):
    blobs: Annotated[list[bytes], operator.add]
    log: Annotated[list[str], operator.add]
    big: bool


def blob_graph() -> StateGraph[Any]:
    """`a -> b`, each node adding 10 MiB to the state when `big` is set."""

    def node(name: str) -> Any:
        def run(state: BlobState) -> dict[str, Any]:
            return {"blobs": [os.urandom(10 * MIB)] if state.get("big") else [], "log": [name]}

        return run

    builder: StateGraph[Any] = StateGraph(BlobState)
    builder.add_node("a", node("a"))
    builder.add_node("b", node("b"))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", END)
    return builder


async def test_a_refused_checkpoint_leaves_its_steps_writes_pending(backend: Backend) -> None:
    """What docs/reliability.md says of a step whose checkpoint is refused: its writes stay
    pending on the checkpoint before it, `invoke(None)` applies them and is refused every
    time, and only new input moves the thread on, without that step's writes. (A bound of
    16 MiB: the writes of the step fit, the checkpoint holding them all does not.)"""
    async with backend.saver(state_max_bytes=16 * MIB) as saver:
        graph = Driver(blob_graph().compile(checkpointer=saver), backend.is_sync)
        thread = config(new_thread())
        for run_input in ({"big": True}, None, None):
            with pytest.raises(CheckpointTooLargeError):
                await graph.invoke(run_input, thread)
            latest = await either(saver).get_tuple(thread)
            assert latest is not None
            assert latest.checkpoint["channel_values"]["log"] == ["a"]
            assert latest.pending_writes is not None
            assert sorted({channel for _, channel, _ in latest.pending_writes}) == [
                "blobs",
                "log",
            ]
            # The state read applies the pending writes: the run looks finished.
            shown = await graph.state(thread)
            assert (shown.next, shown.values["log"]) == ((), ["a", "b"])
        await graph.invoke({"big": False, "log": ["new"]}, thread)
        shown = await graph.state(thread)
        assert shown.values["log"] == ["a", "new", "a", "b"]
        assert len(shown.values["blobs"]) == 1


async def test_a_checkpoint_too_large_to_return_with_its_writes_is_read_apart(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """9 MiB of state and 2 x 5 MiB of writes each fit a document, but joined they do not:
    a server refuses the joined read (and so does the in-process mock)."""
    monkeypatch.setattr(ops.read, "LIST_APART_PAGE", 1)  # the rest of a list comes in pages
    async with backend.saver() as saver:
        thread = new_thread()
        oldest = await put(saver, thread)
        blob, first, second = os.urandom(9 * MIB), os.urandom(5 * MIB), os.urandom(5 * MIB)
        parent = oldest["configurable"]["checkpoint_id"]
        big = await put(saver, thread, parent=parent, values={"blob": blob})
        await either(saver).put_writes(big, [("a", first), ("b", second)], "t")
        # More newer checkpoints than a first batch holds (101): the failure comes in a
        # getMore, after part of the list was returned.
        newer = []
        parent = big["configurable"]["checkpoint_id"]
        for _ in range(101):
            newer.append(await put(saver, thread, parent=parent))
            parent = newer[-1]["configurable"]["checkpoint_id"]

        got = await either(saver).get_tuple(big)
        assert got is not None
        assert got.checkpoint["channel_values"]["blob"] == blob
        assert got.pending_writes == [("t", "a", first), ("t", "b", second)]

        expected = [c["configurable"]["checkpoint_id"] for c in [*reversed(newer), big, oldest]]
        everything = await listed(saver, config(thread))
        assert [t.checkpoint["id"] for t in everything] == expected
        assert everything[101].pending_writes == got.pending_writes
        assert [t.checkpoint["id"] for t in await listed(saver, config(thread), limit=102)] == (
            expected[:102]
        )
        # Failing in the first batch: the big checkpoint comes first.
        [only] = await listed(saver, config(thread), before=newer[0], limit=1)
        assert only.pending_writes == got.pending_writes


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(10334, id="BSONObjectTooLarge"),
        pytest.param(4568, id="lookup-classic-engine"),
        pytest.param(146, id="ExceededMemoryLimit-slot-based-engine"),
    ],
)
async def test_a_join_refused_with_any_too_large_code_is_read_apart(
    backend: Backend, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    """Each code a server refuses an oversized joined read with leads to reading the
    checkpoint and its writes apart, for `get_tuple` and `list`. (The wire server's limit is
    lowered to 64 KiB so that small documents stand in for 16 MiB ones.)"""
    if backend.wire is None:
        pytest.skip("needs the wire server, whose limit and error code the test sets")
    monkeypatch.setattr(cursors, "MAX_INTERNAL_OBJECT_SIZE", 64 * 1024)
    monkeypatch.setattr(cursors, "JOIN_TOO_LARGE", code)
    async with backend.saver() as saver:
        thread = new_thread()
        blob, first, second = os.urandom(40 * 1024), os.urandom(20 * 1024), os.urandom(20 * 1024)
        stored = await put(saver, thread, values={"blob": blob})
        await either(saver).put_writes(stored, [("a", first), ("b", second)], "t")

        got = await either(saver).get_tuple(config(thread))
        assert got is not None
        assert got.checkpoint["channel_values"]["blob"] == blob
        assert got.pending_writes == [("t", "a", first), ("t", "b", second)]
        [listed_one] = await listed(saver, config(thread))
        assert listed_one.pending_writes == got.pending_writes


async def test_delta_history_reads_a_seed_too_large_for_its_writes_apart(
    backend: Backend,
) -> None:
    async with backend.saver() as saver:
        thread = new_thread()
        seed = os.urandom(9 * MIB)
        root = await put(saver, thread, values={"a": seed})
        big_write, small_write = os.urandom(8 * MIB), "x"
        await either(saver).put_writes(root, [("a", big_write), ("b", small_write)], "t")
        leaf = await put(saver, thread, parent=root["configurable"]["checkpoint_id"])
        history = await either(saver).get_delta_channel_history(config=leaf, channels=["a"])
        assert history == {"a": {"writes": [("t", "a", big_write)], "seed": seed}}


@pytest.mark.parametrize("compression", ["zstd", "zlib"])
async def test_compression_fits_a_compressible_17_mib_state(
    backend: Backend, compression: str
) -> None:
    state = {"text": "all work and no play " * (17 * MIB // 21)}
    async with backend.saver(compression=compression) as saver:
        thread = new_thread()
        stored = await put(saver, thread, values=state)
        await either(saver).put_writes(stored, [("text", state["text"])], "t")
        got = await either(saver).get_tuple(stored)
        assert got is not None
        assert got.checkpoint["channel_values"] == state
        assert got.pending_writes == [("t", "text", state["text"])]
        raw = await maybe_await(saver.checkpoint_collection.find_one({"thread_id": thread}))
        [text] = raw["channel_values"]  # each channel's value is stored (and compressed) apart
        assert text["compression"] == compression
        assert len(text["data"]) < MIB


async def test_any_compression_setting_reads_any_other(backend: Backend) -> None:
    big = {"text": "x" * 10_000}
    async with (
        backend.saver(compression="zlib") as zipped,
        backend.saver(db_name=zipped.db.name, compression="zstd") as zstd,
        backend.saver(db_name=zipped.db.name) as plain,
    ):
        thread, parent = new_thread(), None
        written = []
        for writer in (zipped, zstd, plain):
            written.append(await put(writer, thread, parent=parent, values=big))
            parent = written[-1]["configurable"]["checkpoint_id"]
        stored = await maybe_await(
            plain.checkpoint_collection.find({"thread_id": thread}).to_list(None)
        )
        assert sorted(doc["channel_values"][0].get("compression", "-") for doc in stored) == [
            "-",
            "zlib",
            "zstd",
        ]
        for reader in (plain, zipped, zstd):
            for cfg in written:
                got = await either(reader).get_tuple(cfg)
                assert got is not None
                assert got.checkpoint["channel_values"] == big
        small = await put(zipped, new_thread(), values={"v": 1})
        raw = await maybe_await(
            zipped.checkpoint_collection.find_one(
                {"_id.checkpoint_id": small["configurable"]["checkpoint_id"]}
            )
        )
        # Small values are not worth it: the checkpoint is stored as bare bytes.
        assert isinstance(raw["checkpoint"], bytes)
        assert "compression" not in raw["channel_values"][0]


def test_unknown_compression_is_refused() -> None:
    from mongomock_motor import AsyncMongoMockClient

    from langgraph.checkpoint.mongo import AsyncMongoDBSaver

    with pytest.raises(ValueError, match="compression"):
        AsyncMongoDBSaver(AsyncMongoMockClient(), compression="lz4")  # type: ignore[arg-type]


async def test_unknown_stored_compression_is_named(saver: Any) -> None:
    thread = new_thread()
    stored = await put(saver, thread)
    await maybe_await(
        saver.checkpoint_collection.update_one(
            {"thread_id": thread},
            {"$set": {"checkpoint": {"data": b"x", "compression": "brotli"}}},
        )
    )
    with pytest.raises(ValueError, match="brotli"):
        await either(saver).get_tuple(stored)


async def test_a_state_over_state_warn_bytes_is_warned_about_once_per_thread(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    """From `state_warn_bytes`, a `put` logs one WARNING per thread and process naming
    the thread, namespace, checkpoint, its size and largest channels; the put succeeds,
    and sends what it sends without the warning."""
    async with backend.saver(state_warn_bytes=64 * 1024) as saver:
        thread, quiet = new_thread(), new_thread()
        big = {"files": os.urandom(100 * 1024), "messages": os.urandom(30 * 1024), "n": 1}
        with caplog.at_level("WARNING", logger="langgraph.checkpoint.mongo"):
            first = await put(saver, thread, ns="sub", values=big)
            await put(
                saver, thread, ns="sub", values=big, parent=first["configurable"]["checkpoint_id"]
            )
            await put(saver, quiet, values={"n": 1, "small": os.urandom(1024)})
        [record] = [r for r in caplog.records if r.levelname == "WARNING"]
        message = record.getMessage()
        assert repr(thread) in message
        assert repr("sub") in message
        assert repr(first["configurable"]["checkpoint_id"]) in message
        assert "0.1 MiB as stored" in message
        assert "largest channels: 'files' 0.1 MiB, 'messages' 0.0 MiB, 'n' 0.0 MiB" in message
        assert (await either(saver).get_stored(first)).checkpoint["channel_values"]["n"] == 1


async def test_state_warn_bytes_zero_never_warns(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    async with backend.saver(state_warn_bytes=0) as saver:
        with caplog.at_level("WARNING", logger="langgraph.checkpoint.mongo"):
            await put(saver, new_thread(), values={"files": os.urandom(100 * 1024)})
        assert [r for r in caplog.records if r.levelname == "WARNING"] == []


def test_threads_warning_at_once_past_the_memo_bound_never_fail_a_put(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The memo of warned threads evicts its oldest past its bound: threads of a sync saver
    evicting at once (the same oldest key) must not raise inside `put`."""
    monkeypatch.setattr(_sizes, "_WARNED_THREADS_MAX", 1)
    monkeypatch.setattr(_sizes, "_warned_threads", OrderedDict())
    monkeypatch.setattr(logger, "warning", lambda *args: None)
    errors: list[BaseException] = []

    def warn(worker: int) -> None:
        try:
            for i in range(3000):
                ref = CheckpointRef(f"{worker}-{i}", "", None)
                _sizes.warn_if_large(ref, 2, [], 1, 4)
        except BaseException as exc:
            errors.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        workers = [threading.Thread(target=warn, args=(n,)) for n in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == []
    assert len(_sizes._warned_threads) <= 1 + len(workers)
