"""`AsyncMongoDBSaver`: natively async, on PyMongo's `AsyncMongoClient` or Motor."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Coroutine,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from pymongo import AsyncMongoClient

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._base import MongoDBSaverBase
from langgraph.checkpoint.mongo._commands import Command, NextDocument, OpenCursor, Plan
from langgraph.checkpoint.mongo._drivers import close_client
from langgraph.checkpoint.mongo._executors import execute_async, open_cursor
from langgraph.checkpoint.mongo._runners import arun_listing, arun_plan

if TYPE_CHECKING:
    from motor.motor_asyncio import AsyncIOMotorClient

    # What `AsyncMongoDBSaver` takes (Motor is optional: where it is not installed, a
    # type checker sees `Any` for it).
    AsyncClient = AsyncMongoClient[Any] | AsyncIOMotorClient[Any]

T = TypeVar("T")


class _NothingToAwait:
    """What `close()` returns when it has finished before returning: awaiting it is
    immediate (a coroutine would warn if never awaited)."""

    def __await__(self) -> Generator[Any, None, None]:
        yield from ()


_NOTHING_TO_AWAIT = _NothingToAwait()

# How often a sync caller waiting on the saver's loop checks that the loop still runs.
_LOOP_CHECK_SECONDS = 0.1


class AsyncMongoDBSaver(
    MongoDBSaverBase["AsyncClient", AbstractAsyncContextManager["AsyncMongoDBSaver"]]
):
    """A LangGraph checkpointer on MongoDB for asyncio applications.

    Takes a `pymongo.AsyncMongoClient` or Motor's `AsyncIOMotorClient` (arguments: see
    `MongoDBSaverBase`). Call `await saver.setup()` once per process before use (it
    creates the indexes and is idempotent), or use `from_conn_string`, which does.
    `async with saver:` calls `aclose()` on exit and `with saver:` calls `close()`; both
    close only a client `from_conn_string` opened.

    The sync methods (`get_tuple`, `list`, `put`, ...) are for code running in *another*
    thread than the event loop the saver runs on; called from that loop they raise
    `asyncio.InvalidStateError` instead of deadlocking it.
    """

    asynchronous = True
    # The event loop the saver's client runs on: the first one it is used on.
    loop: asyncio.AbstractEventLoop | None = None
    # A close started by `close()` on the loop.
    _closing: asyncio.Task[None] | None = None

    def _bind_loop(self) -> None:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()

    @classmethod
    @asynccontextmanager
    async def _connect(
        cls,
        conn_string: str,
        client_kwargs: dict[str, Any],
        build: Callable[[AsyncMongoClient[dict[str, Any]]], AsyncMongoDBSaver],
    ) -> AsyncIterator[AsyncMongoDBSaver]:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(conn_string, **client_kwargs)
        try:
            saver = build(client)
            saver._owned_client = client
            await saver.setup()
            yield saver
        finally:
            await close_client(client)

    async def aclose(self) -> None:
        """Close the client `from_conn_string` opened for this saver; a client you passed
        to the constructor stays open (it is yours, and may be shared). Idempotent. Also
        what `async with saver:` calls on exit."""
        client = self._disown_client()
        if client is not None:
            await close_client(client)

    def close(self) -> Awaitable[None]:
        """`aclose`, for code that calls `close()` (as on the official saver): await it
        (`await saver.close()`), or call it without awaiting. On the saver's event loop
        it starts the close and returns it as a task (awaiting it waits for the end);
        from another thread (sync code) it returns once the client is closed, on the
        saver's loop, which must be running. Without a client of its own to close it
        does nothing."""
        if self._owned_client is None:
            return _NOTHING_TO_AWAIT
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            self._from_thread(self.aclose())
            return _NOTHING_TO_AWAIT
        # Kept: the loop holds tasks weakly, and this one may never be awaited.
        self._closing = running.create_task(self.aclose())
        return self._closing

    async def _run(self, operation: str, plan: Plan[T]) -> T:
        """Run the plan of `operation` (its name in the log) on this saver's collections."""
        self._bind_loop()
        return await arun_plan(plan, self._executor(operation))

    def _executor(self, operation: str) -> Callable[[Command], Awaitable[Any]]:
        """Runs one command of `operation` on this saver's collections."""
        return lambda command: execute_async(operation, self._collection(command), command)

    async def setup(
        self, *, create_indexes: bool = True, skip_indexes: Collection[str] = ()
    ) -> None:
        """Create the indexes every query uses and set the TTL index; idempotent.

        `skip_indexes` names indexes not to create (for services that refuse some kinds);
        `create_indexes=False` creates none. See "MongoDB-compatible services":
        https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/operations/#mongodb-compatible-services
        """
        await self._run("setup", self._setup_plan(create_indexes, skip_indexes))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._run("get_tuple", ops.get_tuple(self.storage, config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        self._bind_loop()
        async with AsyncExitStack() as cursors:

            async def answer(request: Any) -> Any:
                if isinstance(request, OpenCursor):
                    command = request.command
                    opened = open_cursor("list", self._collection(command), command)
                    return await cursors.enter_async_context(opened)
                if isinstance(request, NextDocument):
                    return await anext(request.cursor, None)
                return await self._executor("list")(request)

            listing = ops.list_checkpoints(
                self.storage, config, filter=filter, before=before, limit=limit
            )
            async for item in arun_listing(listing, answer):
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await self._run(
            "put", ops.put(self.storage, config, checkpoint, metadata, new_versions)
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._run(
            "put_writes", ops.put_writes(self.storage, config, writes, task_id, task_path)
        )

    async def adelete_thread(self, thread_id: str) -> None:
        await self._run("delete_thread", ops.delete_thread(self.storage, thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._run("delete_for_runs", ops.delete_for_runs(self.storage, run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._run(
            "copy_thread", ops.copy_thread(self.storage, source_thread_id, target_thread_id)
        )

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._run("prune", ops.prune(self.storage, thread_ids, strategy))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Writes and seed of `DeltaChannel`s along the parent chain, in two round trips."""
        return await self._run(
            "get_delta_channel_history", ops.delta_history(self.storage, config, channels)
        )

    # Sync access from other threads, run on the saver's own event loop.

    def _from_thread(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` on the saver's loop and wait for it, watching the loop: a loop that
        stops or closes before or while it runs raises instead of leaving us waiting."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        loop = self.loop
        if loop is None or running is loop:
            coro.close()
            raise self._unusable(
                "are only possible from a thread other than its event loop's, once it has "
                "run an async call on that loop"
            )
        try:
            if loop.is_closed() or not loop.is_running():
                raise RuntimeError("stopped")
            future = asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:  # stopped, or closed between our look and the call
            coro.close()
            raise self._stopped() from None
        while True:
            try:
                return future.result(timeout=_LOOP_CHECK_SECONDS)
            except concurrent.futures.TimeoutError:
                if not loop.is_running():
                    future.cancel()
                    if loop.is_closed():  # it never ran, and never will
                        coro.close()
                    raise self._stopped() from None

    @classmethod
    def _stopped(cls) -> asyncio.InvalidStateError:
        return cls._unusable(
            "need its event loop (the first one it ran on) to be running; it is not (or it "
            "stopped before the call finished), so the call would wait forever"
        )

    @staticmethod
    def _unusable(problem: str) -> asyncio.InvalidStateError:
        return asyncio.InvalidStateError(
            f"Synchronous calls to AsyncMongoDBSaver {problem}. "
            "In async code use the async methods and graph.ainvoke()/astream(); for sync "
            "code use MongoDBSaver with a pymongo.MongoClient."
        )

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._from_thread(self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        yield from self._from_thread(collect())

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._from_thread(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._from_thread(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._from_thread(self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._from_thread(self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._from_thread(self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._from_thread(self.aprune(thread_ids, strategy=strategy))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self._from_thread(self.aget_delta_channel_history(config=config, channels=channels))
