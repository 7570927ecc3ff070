"""States and pending writes beyond MongoDB's 16 MiB document limit: stored in chunk
documents, read back whole, and covered by every operation.

Each case runs on every backend (the mock and the wire server refuse a document over
16 MiB as a server does, so nothing here passes on what a server would refuse), and
compares with `InMemorySaver` where it has an answer.
"""

from __future__ import annotations

import asyncio
import operator
import os
import random
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, TypedDict

import bson
import pytest
from bson import ObjectId
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pymongo.errors import ConnectionFailure

from langgraph.checkpoint.mongo import _chunks
from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend
from support.helpers import checkpoint, config, either, listed, new_thread

MIB = 1024 * 1024
MAX_DOCUMENT = 16 * MIB
CHUNKED = {"_id.chunk": {"$exists": True}}


async def _put(
    savers: list[Any],
    thread: str,
    values: dict[str, Any],
    parent: str | None = None,
    changed: list[str] | None = None,
) -> Any:
    """The same checkpoint put on each saver (versions bumped for `changed`, default all)."""
    cp = checkpoint(values)
    new_versions = {c: cp["channel_versions"][c] for c in (changed or values)}
    results = []
    for saver in savers:
        md = {"source": "loop", "step": 0, "parents": {}}
        results.append(await either(saver).put(config(thread, "", parent), cp, md, new_versions))
    assert all(r == results[0] for r in results)
    return results[0]


def _same(ours: CheckpointTuple | None, theirs: CheckpointTuple | None) -> None:
    assert ours is not None
    assert theirs is not None
    assert ours.config == theirs.config
    assert ours.parent_config == theirs.parent_config
    assert ours.checkpoint == theirs.checkpoint
    assert ours.metadata == theirs.metadata
    assert ours.pending_writes == theirs.pending_writes


async def _raw(saver: Any, collection: Any, query: dict[str, Any]) -> list[dict[str, Any]]:
    return list(await maybe_await(collection.find({**query}).to_list(None)))


async def _chunks_of(saver: Any, thread: str) -> list[dict[str, Any]]:
    return await _raw(saver, saver.writes_collection, {"thread_id": thread, **CHUNKED})


async def _every_document_fits(saver: Any, thread: str) -> None:
    for collection in (saver.checkpoint_collection, saver.writes_collection):
        for doc in await _raw(saver, collection, {"thread_id": thread}):
            assert len(bson.encode(doc)) <= MAX_DOCUMENT


@pytest.mark.parametrize("size_mib", [17, 40])
async def test_a_large_value_and_a_20_mib_write_read_back_whole(
    backend: Backend, size_mib: int
) -> None:
    memory = InMemorySaver()
    async with backend.saver() as saver:
        thread = new_thread()
        first = await _put([saver, memory], thread, {"small": "ok"})
        blob = os.urandom(size_mib * MIB)
        big = await _put(
            [saver, memory],
            thread,
            {"small": "ok", "blob": blob},
            parent=first["configurable"]["checkpoint_id"],
            changed=["blob"],
        )
        # A 20 MiB write beside the 17 MiB value (the 40 MiB case: a small one only).
        writes = [("w", os.urandom(20 * MIB if size_mib == 17 else MIB)), ("x", 1)]
        for s in (saver, memory):
            await either(s).put_writes(big, writes, "task")

        _same(await either(saver).get_tuple(big), await either(memory).get_tuple(big))
        _same(
            await either(saver).get_tuple(config(thread)),
            await either(memory).get_tuple(config(thread)),
        )
        ours, theirs = await listed(saver, config(thread)), await listed(memory, config(thread))
        assert len(ours) == len(theirs) == 2
        for a, b in zip(ours, theirs, strict=True):
            _same(a, b)
        await _every_document_fits(saver, thread)
        chunks = await _chunks_of(saver, thread)
        assert sum(len(c["data"]) for c in chunks) >= (size_mib + (size_mib == 17) * 20) * MIB
        assert all(len(c["data"]) <= _chunks.CHUNK_SIZE for c in chunks)
        assert all(c["thread_id"] == thread for c in chunks)  # the shard key


async def test_several_medium_channels_adding_past_16_mib(backend: Backend) -> None:
    memory = InMemorySaver()
    async with backend.saver() as saver:
        thread = new_thread()
        values = {f"c{i}": os.urandom((3 + i) * MIB // 2) for i in range(6)}  # 1.5..4 MiB
        stored = await _put([saver, memory], thread, values)
        _same(await either(saver).get_tuple(stored), await either(memory).get_tuple(stored))
        [doc] = await _raw(saver, saver.checkpoint_collection, {"thread_id": thread})
        moved = [e["channel"] for e in doc["channel_values"] if "chunks" in e]
        # Only the largest ones moved, just enough for the document to fit.
        assert moved == ["c5"]
        assert all(len(e["data"]) > 0 for e in doc["channel_values"] if "chunks" not in e)
        # No `data` beside `chunks`: 0.1.0 fails on such a value instead of reading b"".
        assert all("data" not in e for e in doc["channel_values"] if "chunks" in e)
        await _every_document_fits(saver, thread)


@pytest.mark.parametrize("cache_max_bytes", [0, 64 * MIB], ids=["no-cache", "cache"])
async def test_an_unchanged_large_channel_is_kept_by_each_checkpoint(
    backend: Backend, cache_max_bytes: int
) -> None:
    """A child that did not change the large channel stores its parent's bytes (from the
    cache, or read back from the parent's chunks) under its own key: pruning the parent
    leaves the child whole."""
    memory = InMemorySaver()
    async with backend.saver(cache_max_bytes=cache_max_bytes) as saver:
        thread = new_thread()
        blob = os.urandom(17 * MIB)
        parent = await _put([saver, memory], thread, {"blob": blob, "n": 0})
        child = await _put(
            [saver, memory],
            thread,
            {"blob": blob, "n": 1},
            parent=parent["configurable"]["checkpoint_id"],
            changed=["n"],
        )
        _same(await either(saver).get_tuple(child), await either(memory).get_tuple(child))
        await either(saver).prune([thread], strategy="keep_latest")
        [only] = await listed(saver, config(thread))
        assert only.checkpoint["channel_values"]["blob"] == blob
        owners = {c["_id"]["checkpoint"]["checkpoint_id"] for c in await _chunks_of(saver, thread)}
        assert owners == {child["configurable"]["checkpoint_id"]}


async def test_every_delete_takes_the_chunks_with_it(backend: Backend) -> None:
    async with backend.saver() as saver:
        thread, other = new_thread(), new_thread()
        cps = []
        parent = None
        for run in ("run-a", "run-b", "run-c"):
            cp = checkpoint({"blob": os.urandom(17 * MIB)})
            md = {"source": "loop", "step": 0, "parents": {}, "run_id": run}
            stored = await either(saver).put(
                config(thread, "", parent), cp, md, cp["channel_versions"]
            )
            await either(saver).put_writes(stored, [("w", os.urandom(17 * MIB))], "t")
            cps.append(stored)
            parent = stored["configurable"]["checkpoint_id"]
        await _put([saver], other, {"blob": os.urandom(17 * MIB)})
        owners = await _chunk_owners(saver, thread)
        assert owners == {c["configurable"]["checkpoint_id"] for c in cps}

        await either(saver).delete_for_runs(["run-a"])
        assert await _chunk_owners(saver, thread) == {
            c["configurable"]["checkpoint_id"] for c in cps[1:]
        }
        await either(saver).prune([thread], strategy="keep_latest")
        assert await _chunk_owners(saver, thread) == {cps[-1]["configurable"]["checkpoint_id"]}
        latest = await either(saver).get_tuple(config(thread))
        assert latest is not None
        assert len(latest.checkpoint["channel_values"]["blob"]) == 17 * MIB
        assert latest.pending_writes is not None
        assert len(latest.pending_writes[0][2]) == 17 * MIB

        copy = new_thread()
        await either(saver).copy_thread(thread, copy)
        await either(saver).delete_thread(thread)
        assert await _chunks_of(saver, thread) == []
        copied = await either(saver).get_tuple(config(copy))
        assert copied is not None
        assert copied.checkpoint["channel_values"] == latest.checkpoint["channel_values"]
        assert copied.pending_writes == latest.pending_writes
        assert {c["thread_id"] for c in await _chunks_of(saver, copy)} == {copy}
        await either(saver).prune([copy], strategy="delete")
        assert await _chunks_of(saver, copy) == []
        assert len(await _chunks_of(saver, other)) == 3  # untouched


async def test_a_copy_stores_its_chunks_under_new_value_ids(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`copy_thread` writes the chunks first, then the documents that refer to them, and a
    `prune` of the target may run in between: it spares chunks younger than
    `ORPHAN_GRACE`, judged by their value id's time. So the copy's chunks get value ids of
    their own, dated by the copy, not by the source's write (which may be older)."""
    two_hours_ago = datetime.now(timezone.utc) - timedelta(hours=2)

    def dated_two_hours_ago() -> ObjectId:
        return ObjectId(ObjectId.from_datetime(two_hours_ago).binary[:4] + os.urandom(8))

    async with backend.saver() as saver:
        thread, copy = new_thread(), new_thread()
        with monkeypatch.context() as old_clock:
            old_clock.setattr(_chunks, "ObjectId", dated_two_hours_ago)
            stored = await _put([saver], thread, {"blob": os.urandom(17 * MIB)})
            await either(saver).put_writes(stored, [("w", os.urandom(17 * MIB))], "t")
        source_ids = {c["_id"]["chunk"] for c in await _chunks_of(saver, thread)}
        assert all(
            ObjectId(i).generation_time < two_hours_ago + timedelta(minutes=1) for i in source_ids
        )
        await either(saver).copy_thread(thread, copy)
        copy_ids = {c["_id"]["chunk"] for c in await _chunks_of(saver, copy)}
        assert len(copy_ids) == len(source_ids) == 2
        young = datetime.now(timezone.utc) - _chunks.ORPHAN_GRACE
        assert all(ObjectId(i).generation_time > young for i in copy_ids)
        copied = await either(saver).get_tuple(config(copy))
        original = await either(saver).get_tuple(config(thread))
        assert copied is not None
        assert original is not None
        assert copied.checkpoint["channel_values"] == original.checkpoint["channel_values"]
        assert copied.pending_writes == original.pending_writes


async def _chunk_owners(saver: Any, thread: str) -> set[str]:
    return {c["_id"]["checkpoint"]["checkpoint_id"] for c in await _chunks_of(saver, thread)}


async def test_a_crash_between_chunks_and_document_leaves_only_harmless_chunks(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection drops on the checkpoint's own write, after its chunks were written:
    the thread reads as before, and `prune` removes the chunks once they are older than
    `ORPHAN_GRACE` (never a chunk a `put` in flight is about to refer to)."""
    if backend.wire is None:
        pytest.skip("needs the wire server's fault injection")
    async with backend.saver() as saver:
        thread = new_thread()
        first = await _put([saver], thread, {"blob": os.urandom(17 * MIB)})
        name = saver.checkpoint_collection_name
        backend.wire.fault = lambda command, body: command == "update" and body["update"] == name
        try:
            with pytest.raises(ConnectionFailure):
                await _put(
                    [saver],
                    thread,
                    {"blob": os.urandom(17 * MIB)},
                    parent=first["configurable"]["checkpoint_id"],
                )
        finally:
            backend.wire.fault = None
        assert (await either(saver).get_stored(config(thread))).config == first
        assert [t.config for t in await listed(saver, config(thread))] == [first]
        assert len(await _chunks_of(saver, thread)) == 6  # 3 referenced, 3 orphaned
        await either(saver).prune([thread], strategy="keep_latest")
        assert len(await _chunks_of(saver, thread)) == 6  # too young to be sure
        monkeypatch.setattr(_chunks, "ORPHAN_GRACE", timedelta(0))
        await either(saver).prune([thread], strategy="keep_latest")
        assert await _chunk_owners(saver, thread) == {first["configurable"]["checkpoint_id"]}
        assert len(await _chunks_of(saver, thread)) == 3
        assert len((await either(saver).get_stored(first)).checkpoint["channel_values"]["blob"])


@pytest.mark.soak
async def test_a_200_mib_value(backend: Backend) -> None:
    """Through one real driver only: the same code path as the 40 MiB case on every
    backend, at a size that costs seconds and hundreds of MiB of memory per backend."""
    if backend.name != "wire-sync":
        pytest.skip("200 MiB runs on wire-sync only (same path as 40 MiB, which runs on all)")
    async with backend.saver(state_max_bytes=256 * MIB) as saver:
        thread = new_thread()
        blob = random.Random(200).randbytes(200 * MIB)
        stored = await _put([saver], thread, {"blob": blob})
        got = await either(saver).get_tuple(stored)
        assert got is not None
        assert got.checkpoint["channel_values"]["blob"] == blob
        del got
        [listed_one] = await listed(saver, config(thread))
        assert listed_one.checkpoint["channel_values"]["blob"] == blob


# A graph whose state grows by 1 MiB of incompressible data per turn, past 16 MiB.


def _grow(state: list[bytes], writes: list[list[bytes]]) -> list[bytes]:
    return state + [item for write in writes for item in write]


class _Growing(TypedDict, total=False):
    # Only each turn's write is stored, plus a snapshot every 20 updates (20, 40 MiB...):
    # a plain reducer channel would store the whole state again every step.
    files: Annotated[list[bytes], DeltaChannel(_grow, snapshot_frequency=20)]
    log: Annotated[list[str], operator.add]


def _file(turn: int) -> bytes:
    return random.Random(turn).randbytes(MIB)


def _growing_graph() -> StateGraph[Any]:
    def agent(state: Any) -> dict[str, Any]:
        turn = len(state["files"])
        if turn == 30:  # one turn asks a person first
            answer = interrupt(f"keep file {turn}?")
            return {"log": [f"{turn}: {answer}"]}
        return {"log": [f"{turn}"]}

    builder: StateGraph[Any] = StateGraph(_Growing)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", END)
    return builder


@pytest.mark.soak
async def test_a_graph_growing_1_mib_per_turn_for_60_turns(backend: Backend) -> None:
    """60 turns, an interrupt and its resume on turn 30, then a time-travel fork from
    turn 45: every state reads back whole, and the snapshots of 20 and 40 MiB (over one
    document) are chunked."""
    if backend.name not in ("mock", "wire-sync", "sync"):
        # Each turn reads the whole state back (LangGraph rebuilds it): 1.8 GiB in all,
        # seconds per backend. The commands are those of the chunked cases that run on
        # every backend; one real driver (the sync one, on the wire server or against
        # MONGODB_URI) and the mock run it.
        pytest.skip("on the mock and through the sync driver (same commands as the others)")
    async with backend.saver() as saver:
        graph = _growing_graph().compile(checkpointer=saver)
        thread = new_thread()
        cfg: Any = {"configurable": {"thread_id": thread}}

        # Through LangGraph's sync API (in a worker thread, as an application's sync code
        # calls it; `AsyncMongoDBSaver` serves it through its sync methods): on Python 3.10
        # `interrupt()` cannot find its config in a node that `ainvoke` runs.
        async def invoke(input: Any, at: Any = cfg) -> Any:
            return await asyncio.to_thread(graph.invoke, input, at)

        async def state(at: Any = cfg) -> Any:
            return await asyncio.to_thread(graph.get_state, at)

        for turn in range(1, 61):
            result = await invoke({"files": [_file(turn)]})
            if turn == 30:
                assert "__interrupt__" in result
                result = await invoke(Command(resume="yes"))
            assert len(result["files"]) == turn
        final = await state()
        assert final.values["files"] == [_file(t) for t in range(1, 61)]
        assert final.values["log"][29] == "30: yes"
        assert len(final.values["log"]) == 60

        # The end of turn 45: the oldest step with 45 log lines (the next one already
        # holds turn 46's input). The list is newest first.
        at_45 = [
            t
            for t in await listed(saver, cfg)
            if t.metadata["source"] == "loop"
            and len(t.checkpoint["channel_values"].get("log", ())) == 45
        ][-1]
        forked = await invoke({"files": [b"fork"]}, at_45.config)
        assert forked["files"] == [*(_file(t) for t in range(1, 46)), b"fork"]
        assert (await state()).values["files"][-1] == b"fork"  # the newest branch
        assert (await state(final.config)).values["files"] == final.values["files"]
        owners = {c["_id"]["checkpoint"]["checkpoint_id"] for c in await _chunks_of(saver, thread)}
        # The snapshots over one document: 20 MiB (as stored: two channels... see below).
        assert len(owners) >= 2


async def test_list_reads_one_large_checkpoint_at_a_time(
    backend: Backend, sent_commands: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the joined read is refused, a page of checkpoints is read apart without
    their chunks, and each checkpoint's chunks are read only when it is returned."""
    async with backend.saver() as saver:
        thread = new_thread()
        blobs, parent = [], None
        for _ in range(3):
            blobs.append(os.urandom(17 * MIB))
            stored = await _put([saver], thread, {"blob": blobs[-1]}, parent=parent)
            parent = stored["configurable"]["checkpoint_id"]
        sent_commands.clear()
        if backend.is_sync:
            listing: Any = saver.list(config(thread))
            first = next(listing)
        else:
            listing = saver.alist(config(thread))
            first = await listing.__anext__()
        assert first.checkpoint["channel_values"]["blob"] == blobs[-1]
        chunk_reads = [c for c in sent_commands if c.method == "find" and "_id" in c.args[0]]
        assert len(chunk_reads) == 1  # the first checkpoint's chunks only
        rest = list(listing) if backend.is_sync else [t async for t in listing]
        assert [t.checkpoint["channel_values"]["blob"] for t in rest] == blobs[-2::-1]


async def test_chunks_carry_the_thread_ttl_stamp(backend: Backend) -> None:
    async with backend.saver(ttl=3600) as saver:
        thread = new_thread()
        stored = await _put([saver], thread, {"blob": os.urandom(17 * MIB)})
        await either(saver).put_writes(stored, [("w", os.urandom(17 * MIB))], "t")
        [doc] = await _raw(saver, saver.checkpoint_collection, {"thread_id": thread})
        chunks = await _chunks_of(saver, thread)
        assert len(chunks) == 6
        assert {c["thread_touched_at"] for c in chunks} == {doc["thread_touched_at"]}


async def test_delta_history_reads_a_chunked_seed_and_a_chunked_write(backend: Backend) -> None:
    memory = InMemorySaver()
    async with backend.saver() as saver:
        thread = new_thread()
        seed, write = os.urandom(17 * MIB), os.urandom(17 * MIB)
        root = await _put([saver, memory], thread, {"a": seed})
        for s in (saver, memory):
            await either(s).put_writes(root, [("a", write), ("b", "small")], "t")
        leaf = await _put([saver, memory], thread, {}, parent=root["configurable"]["checkpoint_id"])
        ours = await either(saver).get_delta_channel_history(config=leaf, channels=["a"])
        theirs = await either(memory).get_delta_channel_history(config=leaf, channels=["a"])
        assert ours == theirs == {"a": {"writes": [("t", "a", write)], "seed": seed}}
