"""Calling either saver the same way, so one test body covers both.

For `MongoDBSaver` the tests call its sync methods directly (not its thread-pool async
wrappers), so the sync path is what runs on the sync backends.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from types import SimpleNamespace
from typing import Any, cast
from unittest import mock

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.base import id as langgraph_id
from langgraph.checkpoint.base.id import uuid6
from pymongo.errors import OperationFailure

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, ThreadInfo
from langgraph.checkpoint.mongo._commands import Command, Plan, SaverPlan


class EitherSaver:
    """Either saver through one typed async API: `MongoDBSaver`'s own sync methods, or
    the async ones of any other saver (`AsyncMongoDBSaver`, `InMemorySaver` as the
    reference); a test awaits `either(saver).put(...)`.

    Metadata is any mapping: tests store metadata LangGraph's `TypedDict` does not name.
    """

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.saver = saver

    async def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        if isinstance(self.saver, MongoDBSaver):
            return self.saver.get_tuple(config)
        return await self.saver.aget_tuple(config)

    async def get_stored(self, config: RunnableConfig) -> CheckpointTuple:
        """`get_tuple` of a checkpoint the test stored: present, or the test fails here."""
        found = await self.get_tuple(config)
        assert found is not None, f"nothing stored at {config}"
        return found

    async def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: Mapping[str, Any],
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        md = cast(CheckpointMetadata, metadata)
        if isinstance(self.saver, MongoDBSaver):
            return self.saver.put(config, checkpoint, md, new_versions)
        return await self.saver.aput(config, checkpoint, md, new_versions)

    async def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        if isinstance(self.saver, MongoDBSaver):
            return self.saver.put_writes(config, writes, task_id, task_path)
        return await self.saver.aput_writes(config, writes, task_id, task_path)

    async def delete_thread(self, thread_id: str) -> None:
        if isinstance(self.saver, MongoDBSaver):
            return self.saver.delete_thread(thread_id)
        return await self.saver.adelete_thread(thread_id)

    async def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        if isinstance(self.saver, MongoDBSaver):
            return self.saver.delete_for_runs(run_ids)
        return await self.saver.adelete_for_runs(run_ids)

    async def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        if isinstance(self.saver, MongoDBSaver):
            return self.saver.copy_thread(source_thread_id, target_thread_id)
        return await self.saver.acopy_thread(source_thread_id, target_thread_id)

    async def prune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> None:
        """`keep_last` is this package's (and the Redis saver's); it is passed on only when
        given, so `InMemorySaver` and the other savers keep their own signature."""
        extra = {} if keep_last is None else {"keep_last": keep_last}
        if isinstance(self.saver, MongoDBSaver):
            return self.saver.prune(thread_ids, strategy=strategy, **extra)
        return await self.saver.aprune(thread_ids, strategy=strategy, **extra)

    async def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        if isinstance(self.saver, MongoDBSaver):
            return self.saver.get_delta_channel_history(config=config, channels=channels)
        return await self.saver.aget_delta_channel_history(config=config, channels=channels)

    async def list_threads(
        self,
        *,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
        before: str | ThreadInfo | None = None,
    ) -> list[ThreadInfo]:
        """This package's own method (LangGraph's savers have none): only on ours."""
        if isinstance(self.saver, MongoDBSaver):
            return list(self.saver.list_threads(filter=filter, limit=limit, before=before))
        if isinstance(self.saver, AsyncMongoDBSaver):
            listing = self.saver.alist_threads(filter=filter, limit=limit, before=before)
            return [t async for t in listing]
        raise TypeError(f"{type(self.saver).__name__} has no list_threads")


def as_metadata(metadata: Mapping[str, Any]) -> CheckpointMetadata:
    """Metadata of any keys, as LangGraph's API types it (its TypedDict names only its own
    keys; a user's are the subject of many tests)."""
    return cast(CheckpointMetadata, metadata)


def either(saver: BaseCheckpointSaver[Any]) -> EitherSaver:
    return EitherSaver(saver)


async def call_by_name(saver: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call a method named by data (tests parametrized over the savers' methods): the
    sync method on `MongoDBSaver`, its `a`-prefixed twin on `AsyncMongoDBSaver`."""
    if isinstance(saver, MongoDBSaver):
        return getattr(saver, method)(*args, **kwargs)
    return await getattr(saver, "a" + method)(*args, **kwargs)


async def listed(saver: Any, config: RunnableConfig | None, **kwargs: Any) -> list[CheckpointTuple]:
    if isinstance(saver, MongoDBSaver):
        return list(saver.list(config, **kwargs))
    return [t async for t in saver.alist(config, **kwargs)]


async def settle(saver: Any) -> None:
    """Wait for what the saver runs in the background (`keep_last` trims, stamp moves of
    `refresh_ttl_on_read`); `MongoDBSaver.settle` blocks, so it waits in a thread."""
    if isinstance(saver, MongoDBSaver):
        await asyncio.to_thread(saver.settle)
    else:
        await saver.settle()


def new_thread() -> str:
    return f"thread-{uuid.uuid4().hex[:12]}"


@contextmanager
def langgraph_clock_at(when: datetime) -> Iterator[None]:
    """LangGraph's checkpoint ids (its `uuid6`) made as by a writer clock stopped at
    `when` (a time relative to now), each id still greater than the last. Its memory of
    the last id is set aside meanwhile, and given back."""
    clock = SimpleNamespace(time_ns=lambda: int(when.timestamp() * 1e9))
    with (
        mock.patch.object(langgraph_id, "time", clock),
        mock.patch.object(langgraph_id, "_last_v6_timestamp", None),
    ):
        yield


def checkpoint_id_at(when: datetime) -> str:
    """A checkpoint id as LangGraph makes it, at `when` on the writer's clock."""
    with langgraph_clock_at(when):
        return str(uuid6(clock_seq=0))


def checkpoint(
    channel_values: dict[str, Any] | None = None, *, id: str | None = None
) -> Checkpoint:
    values = channel_values or {}
    return Checkpoint(
        v=1,
        id=id or str(uuid6(clock_seq=-1)),
        ts=datetime.now(timezone.utc).isoformat(),
        channel_values=values,
        channel_versions={k: 1 for k in values},
        versions_seen={},
        updated_channels=None,
    )


def config(
    thread_id: str, checkpoint_ns: str | None = "", checkpoint_id: str | None = None
) -> RunnableConfig:
    """`checkpoint_ns=None` leaves the namespace out: `list` then reads every namespace."""
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_ns is not None:
        configurable["checkpoint_ns"] = checkpoint_ns
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


async def put(
    saver: Any,
    thread_id: str,
    *,
    ns: str = "",
    parent: str | None = None,
    metadata: dict[str, Any] | None = None,
    values: dict[str, Any] | None = None,
    id: str | None = None,
) -> RunnableConfig:
    cp = checkpoint(values, id=id)
    md: dict[str, Any] = {"source": "loop", "step": 0, "parents": {}}
    md.update(metadata or {})
    return await either(saver).put(config(thread_id, ns, parent), cp, md, cp["channel_versions"])


def methods(commands: Sequence[Command]) -> list[str]:
    """The driver methods of `sent_commands`, in order: one round trip each (a cursor's
    further batches aside), on every backend."""
    return [str(command.method) for command in commands]


def read_commands(saver: Any) -> list[str]:
    """The commands (`methods`) a read of at most one page sends on `saver`'s server: one
    `aggregate` joining pending writes, or, where `setup()` found that the server's
    `$lookup` reads every write (SecantusDB), the checkpoints and then their writes."""
    return ["aggregate"] if saver.storage.reads.joined else ["aggregate", "find"]


def ids(tuples: list[CheckpointTuple]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


def saver_like(saver: Any) -> Any:
    """The class of `saver`, to build another saver of its kind on its kind of client
    (typed `Any`: which client a saver takes depends on the backend)."""
    return type(saver)


def after_commands(plan: Plan[Any], count: int, meanwhile: SaverPlan[Any]) -> SaverPlan[Any]:
    """Run `plan`, with the commands of `meanwhile` sent right after its first `count`
    (a concurrent operation landing between two of its commands)."""
    command = next(plan)
    for _ in range(count):
        command = plan.send((yield command))
    yield from meanwhile
    try:
        while True:
            command = plan.send((yield command))
    except StopIteration as done:
        return done.value


async def first_put_refused_by_write_concern(backend: Any, saver: Any) -> OperationFailure:
    """The first `put` of a saver whose writes ask for a write concern the deployment cannot
    meet (`w: 50`) fails in its automatic setup, before anything of the checkpoint is
    written, with the server's own error: UnsatisfiableWriteConcern (100) where the server
    applies a write and then answers that the concern is not met (a replica set, `mongos`,
    SecantusDB, the wire stand-in); where it refuses the command up front with BadValue (2:
    a standalone `mongod`), as `IndexCreationError`, since setup cannot tell that from a
    refused index. Returns the server's error."""
    from langgraph.checkpoint.mongo import IndexCreationError
    from support.real_server import deployment

    if backend.wire is None and deployment().refuses_unmet_write_concern:
        with pytest.raises(IndexCreationError) as refused:
            await put(saver, new_thread())
        cause = refused.value.__cause__
        assert isinstance(cause, OperationFailure)
        assert cause.code == 2
        return cause
    with pytest.raises(OperationFailure) as failed:
        await put(saver, new_thread())
    assert failed.value.code == 100
    assert "skip_indexes" not in str(failed.value)
    return failed.value


async def thread_operations(saver: Any, sent: Sequence[Command]) -> int:
    """Every operation of a thread, as an application sends them: 31 checkpoints, each
    declaring the `DeltaChannel` "c" (a snapshot of it every 10th) with a write to it, and
    reads; with `keep_last`, the trim the 31st `put` calls for; listings, the channel's
    history (checked against `InMemorySaver`'s), a copy, a rollback, a prune and deletes.
    Returns the position in `sent` of `delete_for_runs`' search by run id (the one command
    that is not per thread)."""
    from langgraph.checkpoint.memory import InMemorySaver

    from langgraph.checkpoint.mongo._metadata import DELTA_COUNTERS

    memory = InMemorySaver()
    thread, copy_ = new_thread(), new_thread()
    parent: str | None = None
    for i in range(31):  # enough documents that a planner would prefer an index
        values = {"c": f"snapshot-{i}"} if i % 10 == 0 else {}
        md = {"run_id": f"run-{i}", DELTA_COUNTERS: {"c": i % 10}}
        stored = await put(saver, thread, parent=parent, metadata=md, values=values)
        cp = checkpoint(values, id=stored["configurable"]["checkpoint_id"])
        cp["channel_versions"] = {"c": i + 1} if values else {}  # one blob per snapshot
        md_: Any = {"source": "loop", "step": 0, **md}
        memory.put(config(thread, "", parent), cp, md_, cp["channel_versions"])
        if i < 30:
            await either(saver).put_writes(stored, [("c", i), ("__error__", "e")], "t")
            memory.put_writes(stored, [("c", i), ("__error__", "e")], "t")
            if i == 29:
                # The run's first reads: with `keep_last`, the thread is over its bound and
                # the next put's trim follows it.
                await either(saver).get_tuple(config(thread))
                await either(saver).get_tuple(stored)
        parent = stored["configurable"]["checkpoint_id"]
    await settle(saver)
    await listed(saver, config(thread), limit=10)
    await listed(saver, config(thread), before=stored, limit=10)
    history = await either(saver).get_delta_channel_history(config=stored, channels=["c"])
    expected = memory.get_delta_channel_history(config=stored, channels=["c"])
    assert history == expected, (history, expected)
    assert history["c"].get("seed") == "snapshot-20"
    await either(saver).copy_thread(thread, copy_)
    by_run_id = len(sent)
    await either(saver).delete_for_runs(["run-3"])
    await either(saver).prune([copy_], strategy="keep_latest")
    await either(saver).delete_thread(copy_)
    return by_run_id
