"""`AsyncMongoDBSaver`: natively async, on PyMongo's `AsyncMongoClient` or Motor."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import (
    AsyncGenerator,
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
from contextlib import AbstractAsyncContextManager, AsyncExitStack, aclosing, asynccontextmanager
from functools import partial
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
from langgraph.checkpoint.mongo._base import MongoDBSaverBase, background_failed
from langgraph.checkpoint.mongo._cancellation import cancellable_read
from langgraph.checkpoint.mongo._commands import Command, Listing, NextDocument, OpenCursor, Plan
from langgraph.checkpoint.mongo._documents import ThreadInfo
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
    `MongoDBSaverBase`). It runs `setup()` (the indexes, and the checks that refuse
    collections it cannot use) before its first command, once per process; call
    `await saver.setup()` yourself to pass it options, or to fail at start-up rather
    than at the first call.
    `async with saver:` calls `aclose()` on exit and `with saver:` calls `close()`; both
    close only a client `from_conn_string` opened.

    The sync methods (`get_tuple`, `list`, `put`, ...) are for code running in *another*
    thread than the event loop the saver runs on; called from that loop they raise
    `asyncio.InvalidStateError` instead of deadlocking it.

    A call that the server or the network fails raises PyMongo's error
    (`pymongo.errors.PyMongoError`); pass `timeoutMS` so that a stalled server raises
    instead of hanging: see [timeouts](https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/operations/#timeouts).
    """

    asynchronous = True
    """`True`: the saver takes an asynchronous client (`MongoDBSaver`'s is `False`)."""
    # The event loop the saver's client runs on: the first one it is used on.
    loop: asyncio.AbstractEventLoop | None = None
    """The event loop the saver runs on: the first one an async call ran on (`None`
    before). Its sync methods run their calls on it, from other threads."""
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
        saver: AsyncMongoDBSaver | None = None
        try:
            saver = build(client)
            saver._owned_client = client
            await saver._set_up_first()
            yield saver
        finally:
            if saver is not None:  # its background work uses the client: let it finish
                await saver.settle()
            await close_client(client)

    async def aclose(self) -> None:
        """Close the client `from_conn_string` opened for this saver; a client you passed
        to the constructor stays open (it is yours, and may be shared). Idempotent. Also
        what `async with saver:` calls on exit. What the saver runs in the background
        (`settle`) finishes first."""
        await self.settle()
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
        if not self._setup_state.done:
            await self._set_up_first()
        return await arun_plan(plan, self._executor(operation))

    async def _set_up_first(self) -> None:
        """Run `setup()` before the saver's first command, once (see `SetupState`)."""
        async with self._setup_state.lock:
            if not self._setup_state.set_up_before():
                await self.setup()

    def _executor(self, operation: str) -> Callable[[Command], Awaitable[Any]]:
        """Runs one command of `operation` on this saver's collections."""
        return lambda command: execute_async(operation, self._collection(command), command)

    async def setup(
        self, *, create_indexes: bool = True, skip_indexes: Collection[str] = ()
    ) -> None:
        """Create the indexes every query uses and set the TTL index; idempotent.

        It first checks both collections: one with a default collation other than the
        binary one, or holding the official `langgraph-checkpoint-mongodb` saver's
        documents, is refused.

        The saver calls it itself before its first command unless a `setup()` of this
        process on the same collections (the same deployment, database and collection
        names, `ttl` and `targeted_joins`) left every index the saver's options ask for:
        once per process, also when many first calls come at once, so a saver built per
        request sends no setup command after the first; a failed or cancelled `setup()`
        is tried again by the next call. Called yourself, it always does its whole job
        (a dropped index is created again). An index the server refuses that a `setup()`
        of this process was told to skip is left out with a warning.

        Args:
            create_indexes: `False` creates no index (your operators manage them); the
                collections are still checked.
            skip_indexes: names of indexes not to create, for services that refuse some
                kinds; see [MongoDB-compatible services](https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/operations/#mongodb-compatible-services).

        Raises:
            ValueError: a collection has a non-binary default collation, holds the
                official saver's documents, or has an index named like the TTL index on
                other keys; or `skip_indexes` names an unknown index.
            IndexCreationError: the server refused an index (named, with the switches
                that skip it), or the user may not create indexes.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        self._bind_loop()
        await arun_plan(self._setup_plan(create_indexes, skip_indexes), self._executor("setup"))
        self._setup_state.finished()

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint `config` names, with its pending writes, in one round trip.

        That is the checkpoint of `config["configurable"]["checkpoint_id"]` or, without one, the
        thread's latest in its namespace (`checkpoint_ns`, `""` by default), as LangGraph's
        `InMemorySaver` answers.

        Args:
            config: the thread (`{"configurable": {"thread_id": ...}}`), optionally with
                `checkpoint_ns` and `checkpoint_id`.

        Returns:
            The checkpoint, its metadata, its parent's config and its pending writes, or `None`
            when the thread (or that checkpoint) has none.

        Raises:
            TypeError: `config` is not a dict, or an id in it is not a str.
            ValueError: `config` has no `configurable` dict or no `thread_id`, or an id in it
                is not valid Unicode text or is too long.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        found = await self._run("get_tuple", ops.get_tuple(self.storage, config))
        self._in_background("refresh_ttl_on_read", ops.refresh_on_read(self.storage, config))
        return found

    def _in_background(self, operation: str, plan: Plan[None] | None) -> None:
        """Run `plan` (a `keep_last` trim, a stamp move of `refresh_ttl_on_read`) in a
        task of its own, which the caller does not wait for; a cancelled caller does not
        cancel it, and a write it sent finishes before a cancellation of the task itself
        propagates."""
        if plan is not None:
            task = asyncio.get_running_loop().create_task(self._run(operation, plan))
            self._background.tasks.add(task)
            task.add_done_callback(self._background.tasks.discard)
            task.add_done_callback(partial(_background_done, operation))

    async def settle(self) -> None:
        """Wait until what the saver runs in the background (`keep_last` trims, stamp
        moves of `refresh_ttl_on_read`) has finished."""
        while self._background.tasks:
            await asyncio.wait(list(self._background.tasks))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """The checkpoints of a thread, or of every thread, newest first, streamed from one query.

        Args:
            config: the thread (`thread_id`), narrowed by `checkpoint_ns` to one namespace and
                by `checkpoint_id` to one checkpoint; `None` lists every thread.
            filter: metadata every listed checkpoint has: each key's value is compared as
                Python compares it (`{"source": "input", "step": 1}`); see
                [metadata filters](https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/stored-format/#metadata-filters).
            before: only checkpoints older than the one this config names.
            limit: at most this many checkpoints; `None` for all.

        Yields:
            One `CheckpointTuple` per checkpoint, as `aget_tuple` returns it.

        Raises:
            TypeError: `config` or `before` is not a dict, an id in them is not a str,
                `filter` is not a dict or `limit` not an int.
            ValueError: `config` has no `configurable` dict or no `thread_id`, an id is not
                valid Unicode text or is too long, or `limit` is over 2**63 - 1.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        listing = ops.list_checkpoints(
            self.storage, config, filter=filter, before=before, limit=limit
        )
        self._in_background("refresh_ttl_on_read", ops.refresh_on_read(self.storage, config))
        # `aclosing`: a caller's `aclose()` reaches the stream now, which closes its cursor.
        async with aclosing(self._stream("list", listing)) as items:
            async for item in items:
                yield item

    async def alist_threads(
        self,
        *,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
        before: str | ThreadInfo | None = None,
    ) -> AsyncIterator[ThreadInfo]:
        """The threads of the collections, each by its latest root checkpoint, in thread
        id order: `MongoDBSaver.list_threads`, natively async (the same arguments, order
        and cost; see "Finding threads" in docs/operations.md)."""
        listing = ops.list_threads(self.storage, filter=filter, limit=limit, before=before)
        async with aclosing(self._stream("list_threads", listing)) as items:
            async for item in items:
                yield item

    async def _stream(self, operation: str, listing: Listing[T]) -> AsyncGenerator[T, None]:
        """Run a listing on this saver's collections: its cursors are closed when the
        caller stops early."""
        self._bind_loop()
        if not self._setup_state.done:
            await self._set_up_first()
        async with AsyncExitStack() as cursors:

            async def answer(request: Any) -> Any:
                if isinstance(request, OpenCursor):
                    command = request.command
                    opened = open_cursor(operation, self._collection(command), command)
                    return await cancellable_read(cursors.enter_async_context(opened))
                if isinstance(request, NextDocument):
                    return await cancellable_read(anext(request.cursor, None))
                return await self._executor(operation)(request)

            async for item in arun_listing(listing, answer):
                yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store `checkpoint` as the newest of its thread, in one round trip.

        A channel not in `new_versions` did not change since the parent checkpoint: it is
        stored with the bytes the parent stored. The write is acknowledged before this returns.

        Args:
            config: the thread and namespace, with the parent's `checkpoint_id` when there is
                one.
            checkpoint: the checkpoint LangGraph made (its `id`, channel values and versions).
            metadata: stored readable, for `alist(filter=...)`; the `configurable` values of
                `config` are merged into it, as `InMemorySaver` does.
            new_versions: the channels that changed in this step, with their new versions.

        Returns:
            `config` naming the stored checkpoint (`thread_id`, `checkpoint_ns`,
            `checkpoint_id`).

        Raises:
            CheckpointTooLargeError: the checkpoint would exceed `state_max_bytes`, or
                what of it cannot move to chunk documents MongoDB's document limit;
                nothing was written.
            TypeError: `config` is not a dict, or an id in it is not a str.
            ValueError: `config` has no `configurable` dict or no `thread_id`, or an id in it
                is not valid Unicode text or is too long.
                Also a value the serializer refuses (`TypeError` or `ValueError`, naming
                it); nothing was written.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        stored = await self._run(
            "put", ops.put(self.storage, config, checkpoint, metadata, new_versions)
        )
        self._in_background("keep_last", ops.trim_after_put(self.storage, config, metadata, stored))
        return stored

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes for the checkpoint `config` names, in one round trip.

        As in `InMemorySaver`, a write stored again (the same task and index) keeps its first
        value, while the special writes (errors, interrupts, ...) are replaced.

        Args:
            config: the checkpoint the writes belong to (`thread_id`, `checkpoint_ns`,
                `checkpoint_id`).
            writes: `(channel, value)` pairs, in the task's order.
            task_id: the task that made them.
            task_path: the task's path in the graph, which orders writes of parallel tasks.

        Raises:
            CheckpointTooLargeError: a write would exceed `state_max_bytes`, or what of
                it cannot move to chunk documents MongoDB's document limit; nothing was
                written.
            TypeError: `config` is not a dict, or an id in it is not a str.
            ValueError: `config` has no `configurable` dict or no `thread_id`, or an id in it
                is not valid Unicode text or is too long.
                Also a value the serializer refuses (`TypeError` or `ValueError`, naming
                it); nothing was written.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        await self._run(
            "put_writes", ops.put_writes(self.storage, config, writes, task_id, task_path)
        )

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and pending write of a thread, in all its namespaces.

        Args:
            thread_id: the thread; one that has nothing stored is no error.

        Raises:
            TypeError: `thread_id` is not a str.
            ValueError: `thread_id` is not valid Unicode text or is too long.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        await self._run("delete_thread", ops.delete_thread(self.storage, thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints of these runs (their metadata's `run_id`) and their writes.

        An ancestor that a remaining checkpoint of the thread still rebuilds a `DeltaChannel`
        from is kept.

        Args:
            run_ids: the runs; an empty sequence deletes nothing.

        Raises:
            TypeError: `run_ids` is not a sequence of str.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        await self._run("delete_for_runs", ops.delete_for_runs(self.storage, run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and pending write of one thread to another thread.

        Args:
            source_thread_id: the thread to copy; one with no checkpoint copies nothing.
            target_thread_id: the thread that receives the copies, under the same checkpoint
                ids and namespaces.

        Raises:
            TypeError: an id is not a str.
            ValueError: an id is not valid Unicode text or is too long.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        await self._run(
            "copy_thread", ops.copy_thread(self.storage, source_thread_id, target_thread_id)
        )

    async def aprune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> None:
        """Delete old checkpoints of threads, or whole threads.

        Every strategy also deletes the threads' pending writes that no stored checkpoint
        owns (a step whose `put` never landed), once their LangGraph checkpoint ids are an
        hour old: see docs/retention.md.

        Args:
            thread_ids: the threads; an empty sequence prunes nothing.
            strategy: `"keep_latest"` keeps the newest checkpoint of each namespace (and the
                ancestors it rebuilds a `DeltaChannel` from) and deletes the others with their
                writes; `"delete"` (or `"delete_all"`, the Agent Server's name) deletes the
                threads entirely.
            keep_last: keep each namespace's `keep_last` newest checkpoints (and the
                ancestors their `DeltaChannel`s rebuild from), deleting the older ones with
                their writes; it overrides `strategy`. `0` deletes them all; a number larger
                than the thread deletes nothing.

        Raises:
            ValueError: `strategy` is not one of these, or `keep_last` is negative or
                over 2**63 - 1.
            TypeError: `thread_ids` is not a sequence of str, or `keep_last` not an int.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        await self._run("prune", ops.prune(self.storage, thread_ids, strategy, keep_last))

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The writes and seed of `DeltaChannel`s along the parent chain, in two round trips.

        Args:
            config: the checkpoint whose history is read (its thread's latest without
                `checkpoint_id`).
            channels: the `DeltaChannel`s to read.

        Returns:
            For each channel, the value it starts from and the writes after it, oldest first,
            as LangGraph's `BaseCheckpointSaver` defines them.

        Raises:
            CheckpointCycleError: the stored parent chain loops.
            ThreadChangedError: a concurrent delete or prune changed the thread on every
                attempt; calling again later is safe.
            TypeError: `config` is not a dict, or an id in it is not a str.
            ValueError: `config` has no `configurable` dict or no `thread_id`, or an id in it
                is not valid Unicode text or is too long.
                A channel the checkpoint does not declare as a `DeltaChannel` whose
                ancestors a prune or `keep_last` removed (a retry cannot help).
            pymongo.errors.PyMongoError: the server or the network failed.
        """
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
        """`aget_tuple`, from synchronous code in another thread.

        The call runs on the saver's event loop (the first one it ran an async call on), and
        this thread waits for it.

        Args:
            config: as in `aget_tuple`.

        Returns:
            What `aget_tuple` returns.

        Raises:
            asyncio.InvalidStateError: called on the saver's event loop (it would deadlock),
                or that loop is not running.
            Exception: what `aget_tuple` raises.
        """
        return self._from_thread(self.aget_tuple(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """`alist`, from synchronous code in another thread.

        The call runs on the saver's event loop (the first one it ran an async call on), and
        this thread waits for it.

        Args:
            config: as in `alist`.
            filter: as in `alist`.
            before: as in `alist`.
            limit: as in `alist`.

        Yields:
            What `alist` yields (read whole before the first is yielded).

        Raises:
            asyncio.InvalidStateError: called on the saver's event loop (it would deadlock),
                or that loop is not running.
            Exception: what `alist` raises.
        """

        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before, limit=limit)]

        yield from self._from_thread(collect())

    def list_threads(
        self,
        *,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
        before: str | ThreadInfo | None = None,
    ) -> Iterator[ThreadInfo]:
        """`alist_threads`, from another thread than the saver's event loop."""

        async def collect() -> list[ThreadInfo]:
            return [t async for t in self.alist_threads(filter=filter, limit=limit, before=before)]

        yield from self._from_thread(collect())

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """`aput`, from synchronous code in another thread.

        The call runs on the saver's event loop (the first one it ran an async call on), and
        this thread waits for it.

        Args:
            config: as in `aput`.
            checkpoint: as in `aput`.
            metadata: as in `aput`.
            new_versions: as in `aput`.

        Returns:
            What `aput` returns.

        Raises:
            asyncio.InvalidStateError: called on the saver's event loop (it would deadlock),
                or that loop is not running.
            Exception: what `aput` raises.
        """
        return self._from_thread(self.aput(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """`aput_writes`, from synchronous code in another thread.

        The call runs on the saver's event loop (the first one it ran an async call on), and
        this thread waits for it.

        Args:
            config: as in `aput_writes`.
            writes: as in `aput_writes`.
            task_id: as in `aput_writes`.
            task_path: as in `aput_writes`.

        Raises:
            asyncio.InvalidStateError: called on the saver's event loop (it would deadlock),
                or that loop is not running.
            Exception: what `aput_writes` raises.
        """
        self._from_thread(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """`adelete_thread`, from synchronous code in another thread.

        The call runs on the saver's event loop (the first one it ran an async call on), and
        this thread waits for it.

        Args:
            thread_id: as in `adelete_thread`.

        Raises:
            asyncio.InvalidStateError: called on the saver's event loop (it would deadlock),
                or that loop is not running.
            Exception: what `adelete_thread` raises.
        """
        self._from_thread(self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """`adelete_for_runs`, from synchronous code in another thread.

        The call runs on the saver's event loop (the first one it ran an async call on), and
        this thread waits for it.

        Args:
            run_ids: as in `adelete_for_runs`.

        Raises:
            asyncio.InvalidStateError: called on the saver's event loop (it would deadlock),
                or that loop is not running.
            Exception: what `adelete_for_runs` raises.
        """
        self._from_thread(self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """`acopy_thread`, from synchronous code in another thread.

        The call runs on the saver's event loop (the first one it ran an async call on), and
        this thread waits for it.

        Args:
            source_thread_id: as in `acopy_thread`.
            target_thread_id: as in `acopy_thread`.

        Raises:
            asyncio.InvalidStateError: called on the saver's event loop (it would deadlock),
                or that loop is not running.
            Exception: what `acopy_thread` raises.
        """
        self._from_thread(self.acopy_thread(source_thread_id, target_thread_id))

    def prune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> None:
        """`aprune`, from synchronous code in another thread.

        The call runs on the saver's event loop (the first one it ran an async call on), and
        this thread waits for it.

        Args:
            thread_ids: as in `aprune`.
            strategy: as in `aprune`.
            keep_last: as in `aprune`.

        Raises:
            asyncio.InvalidStateError: called on the saver's event loop (it would deadlock),
                or that loop is not running.
            Exception: what `aprune` raises.
        """
        self._from_thread(self.aprune(thread_ids, strategy=strategy, keep_last=keep_last))

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """`aget_delta_channel_history`, from synchronous code in another thread.

        The call runs on the saver's event loop (the first one it ran an async call on), and
        this thread waits for it.

        Args:
            config: as in `aget_delta_channel_history`.
            channels: as in `aget_delta_channel_history`.

        Returns:
            What `aget_delta_channel_history` returns.

        Raises:
            asyncio.InvalidStateError: called on the saver's event loop (it would deadlock),
                or that loop is not running.
            Exception: what `aget_delta_channel_history` raises.
        """
        return self._from_thread(self.aget_delta_channel_history(config=config, channels=channels))


def _background_done(operation: str, task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        background_failed(operation, task.exception())
