"""`MongoDBSaver`: the same saver for synchronous code, on `pymongo.MongoClient`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from pymongo import MongoClient

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._base import MongoDBSaverBase
from langgraph.checkpoint.mongo._cancellation import in_worker_thread
from langgraph.checkpoint.mongo._commands import Command, NextDocument, OpenCursor, Plan
from langgraph.checkpoint.mongo._executors import execute_sync, open_cursor_sync
from langgraph.checkpoint.mongo._runners import run_listing, run_plan

T = TypeVar("T")


class MongoDBSaver(MongoDBSaverBase[MongoClient[Any], AbstractContextManager["MongoDBSaver"]]):
    """A LangGraph checkpointer on MongoDB for synchronous code (`graph.invoke`).

    Takes a `pymongo.MongoClient` (arguments: see `MongoDBSaverBase`).
    Call `saver.setup()` once per process before use, or use `from_conn_string`.
    `with saver:` / `async with saver:` call `close()` on exit.

    Its async methods run the sync ones in a worker thread (`asyncio.to_thread`), so a
    graph compiled with it also works under `ainvoke`; asyncio applications get
    native async I/O from `AsyncMongoDBSaver` instead.
    """

    asynchronous = False

    @classmethod
    @contextmanager
    def _connect(
        cls,
        conn_string: str,
        client_kwargs: dict[str, Any],
        build: Callable[[MongoClient[dict[str, Any]]], MongoDBSaver],
    ) -> Iterator[MongoDBSaver]:
        client: MongoClient[dict[str, Any]] = MongoClient(conn_string, **client_kwargs)
        try:
            saver = build(client)
            saver._owned_client = client
            saver.setup()
            yield saver
        finally:
            client.close()

    def close(self) -> None:
        """Close the client `from_conn_string` opened for this saver; a client you passed
        to the constructor stays open (it is yours, and may be shared). Idempotent. Also
        what `with saver:` and `async with saver:` call on exit."""
        client = self._disown_client()
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """`close`, in a worker thread."""
        await asyncio.to_thread(self.close)

    def _run(self, operation: str, plan: Plan[T]) -> T:
        """Run the plan of `operation` (its name in the log) on this saver's collections."""
        return run_plan(plan, self._executor(operation))

    def _executor(self, operation: str) -> Callable[[Command], Any]:
        """Runs one command of `operation` on this saver's collections."""
        return lambda command: execute_sync(operation, self._collection(command), command)

    def setup(self, *, create_indexes: bool = True, skip_indexes: Collection[str] = ()) -> None:
        """Create the indexes every query uses and set the TTL index; idempotent.

        `skip_indexes` names indexes not to create (for services that refuse some kinds);
        `create_indexes=False` creates none. See "MongoDB-compatible services":
        https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/operations/#mongodb-compatible-services
        """
        self._run("setup", self._setup_plan(create_indexes, skip_indexes))

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._run("get_tuple", ops.get_tuple(self.storage, config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        with ExitStack() as cursors:

            def answer(request: Any) -> Any:
                if isinstance(request, OpenCursor):
                    command = request.command
                    opened = open_cursor_sync("list", self._collection(command), command)
                    return cursors.enter_context(opened)
                if isinstance(request, NextDocument):
                    return next(request.cursor, None)
                return self._executor("list")(request)

            listing = ops.list_checkpoints(
                self.storage, config, filter=filter, before=before, limit=limit
            )
            yield from run_listing(listing, answer)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._run("put", ops.put(self.storage, config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._run("put_writes", ops.put_writes(self.storage, config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._run("delete_thread", ops.delete_thread(self.storage, thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._run("delete_for_runs", ops.delete_for_runs(self.storage, run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._run("copy_thread", ops.copy_thread(self.storage, source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._run("prune", ops.prune(self.storage, thread_ids, strategy))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed of `DeltaChannel`s along the parent chain, in two round trips."""
        return self._run(
            "get_delta_channel_history", ops.delta_history(self.storage, config, channels)
        )

    # Async access for graphs run with `ainvoke`: the sync calls, in a worker thread (for
    # writes, one that stops when the caller is cancelled, as `AsyncMongoDBSaver` does).

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(
            lambda: [*self.list(config, filter=filter, before=before, limit=limit)]
        )
        for item in found:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await in_worker_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await in_worker_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await in_worker_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await in_worker_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await in_worker_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await in_worker_thread(self.prune, thread_ids, strategy=strategy)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )
