"""`MongoDBSaver`: the same saver for synchronous code, on `pymongo.MongoClient`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from functools import partial
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
from langgraph.checkpoint.mongo._base import MongoDBSaverBase, background_failed
from langgraph.checkpoint.mongo._cancellation import in_worker_thread
from langgraph.checkpoint.mongo._commands import Command, Listing, NextDocument, OpenCursor, Plan
from langgraph.checkpoint.mongo._documents import ThreadInfo
from langgraph.checkpoint.mongo._executors import execute_sync, open_cursor_sync
from langgraph.checkpoint.mongo._runners import run_listing, run_plan

T = TypeVar("T")


class MongoDBSaver(MongoDBSaverBase[MongoClient[Any], AbstractContextManager["MongoDBSaver"]]):
    """A LangGraph checkpointer on MongoDB for synchronous code (`graph.invoke`).

    Takes a `pymongo.MongoClient` (arguments: see `MongoDBSaverBase`).
    It runs `setup()` (the indexes, and the checks that refuse collections it cannot
    use) before its first command, once per process; call `saver.setup()` yourself to
    pass it options, or to fail at start-up rather than at the first call.
    `with saver:` / `async with saver:` call `close()` on exit.

    Its async methods run the sync ones in a worker thread (`asyncio.to_thread`), so a
    graph compiled with it also works under `ainvoke`; asyncio applications get
    native async I/O from `AsyncMongoDBSaver` instead.

    A call that the server or the network fails raises PyMongo's error
    (`pymongo.errors.PyMongoError`); pass `timeoutMS` so that a stalled server raises
    instead of hanging: see [timeouts](https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/operations/#timeouts).
    """

    asynchronous = False
    """`False`: the saver takes a synchronous client (`AsyncMongoDBSaver`'s is `True`)."""

    @classmethod
    @contextmanager
    def _connect(
        cls,
        conn_string: str,
        client_kwargs: dict[str, Any],
        build: Callable[[MongoClient[dict[str, Any]]], MongoDBSaver],
    ) -> Iterator[MongoDBSaver]:
        client: MongoClient[dict[str, Any]] = MongoClient(conn_string, **client_kwargs)
        saver: MongoDBSaver | None = None
        try:
            saver = build(client)
            saver._owned_client = client
            saver._set_up_first()
            yield saver
        finally:
            if saver is not None:  # its background work uses the client: let it finish
                saver.settle()
            client.close()

    def close(self) -> None:
        """Close the client `from_conn_string` opened for this saver; a client you passed
        to the constructor stays open (it is yours, and may be shared). Idempotent. Also
        what `with saver:` and `async with saver:` call on exit. What the saver runs in
        the background (`settle`) finishes first."""
        self.settle()
        client = self._disown_client()
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """`close`, in a worker thread."""
        await asyncio.to_thread(self.close)

    def _run(self, operation: str, plan: Plan[T]) -> T:
        """Run the plan of `operation` (its name in the log) on this saver's collections."""
        if not self._setup_state.done:
            self._set_up_first()
        return run_plan(plan, self._executor(operation))

    def _set_up_first(self) -> None:
        """Run `setup()` before the saver's first command, once (see `SetupState`)."""
        with self._setup_state.lock:
            if not self._setup_state.set_up_before():
                self.setup()

    def _executor(self, operation: str) -> Callable[[Command], Any]:
        """Runs one command of `operation` on this saver's collections."""
        return lambda command: execute_sync(operation, self._collection(command), command)

    def setup(self, *, create_indexes: bool = True, skip_indexes: Collection[str] = ()) -> None:
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
        run_plan(self._setup_plan(create_indexes, skip_indexes), self._executor("setup"))
        self._setup_state.finished()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
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
        found = self._run("get_tuple", ops.get_tuple(self.storage, config))
        self._in_background("refresh_ttl_on_read", ops.refresh_on_read(self.storage, config))
        return found

    def _in_background(self, operation: str, plan: Plan[None] | None) -> None:
        """Run `plan` (a `keep_last` trim, a stamp move of `refresh_ttl_on_read`) in a
        worker thread of the saver's own, which the caller does not wait for (`settle`
        and `close` do)."""
        if plan is not None:
            background = self._background
            with background.lock:
                if background.executor is None:
                    background.executor = ThreadPoolExecutor(1, "langgraph-checkpoint-mongo")
                future = background.executor.submit(self._run, operation, plan)
            future.add_done_callback(partial(_background_done, operation))

    def settle(self) -> None:
        """Wait until what the saver runs in the background (`keep_last` trims, stamp
        moves of `refresh_ttl_on_read`) has finished."""
        background = self._background
        with background.lock:
            executor, background.executor = background.executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
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
            One `CheckpointTuple` per checkpoint, as `get_tuple` returns it.

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
        yield from self._stream("list", listing)

    def list_threads(
        self,
        *,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
        before: str | ThreadInfo | None = None,
    ) -> Iterator[ThreadInfo]:
        """The threads of the collections, each by its latest root checkpoint, in thread
        id order: one aggregation, streamed (a page of `limit` threads is one command).

        Args:
            filter: metadata the latest root checkpoint must have, with `list`'s
                semantics (each `key: value` equal to the metadata's).
            limit: at most this many threads.
            before: a cursor: a thread id, or the last `ThreadInfo` of the previous
                page; the listing resumes with the threads whose id sorts after it
                (byte order of the ids' UTF-8), as `list`'s `before` resumes past a
                checkpoint it yielded.

        A thread whose checkpoints are all in subgraph namespaces is not listed. See
        "Finding threads" in docs/operations.md for the order and what a page costs.
        """
        listing = ops.list_threads(self.storage, filter=filter, limit=limit, before=before)
        yield from self._stream("list_threads", listing)

    def _stream(self, operation: str, listing: Listing[T]) -> Iterator[T]:
        """Run a listing on this saver's collections: its cursors are closed when the
        caller stops early."""
        if not self._setup_state.done:
            self._set_up_first()
        with ExitStack() as cursors:

            def answer(request: Any) -> Any:
                if isinstance(request, OpenCursor):
                    command = request.command
                    opened = open_cursor_sync(operation, self._collection(command), command)
                    return cursors.enter_context(opened)
                if isinstance(request, NextDocument):
                    return next(request.cursor, None)
                return self._executor(operation)(request)

            yield from run_listing(listing, answer)

    def put(
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
            metadata: stored readable, for `list(filter=...)`; the `configurable` values of
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
        stored = self._run("put", ops.put(self.storage, config, checkpoint, metadata, new_versions))
        self._in_background("keep_last", ops.trim_after_put(self.storage, config, metadata, stored))
        return stored

    def put_writes(
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
        self._run("put_writes", ops.put_writes(self.storage, config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and pending write of a thread, in all its namespaces.

        Args:
            thread_id: the thread; one that has nothing stored is no error.

        Raises:
            TypeError: `thread_id` is not a str.
            ValueError: `thread_id` is not valid Unicode text or is too long.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        self._run("delete_thread", ops.delete_thread(self.storage, thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints of these runs (their metadata's `run_id`) and their writes.

        An ancestor that a remaining checkpoint of the thread still rebuilds a `DeltaChannel`
        from is kept.

        Args:
            run_ids: the runs; an empty sequence deletes nothing.

        Raises:
            TypeError: `run_ids` is not a sequence of str.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        self._run("delete_for_runs", ops.delete_for_runs(self.storage, run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
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
        self._run("copy_thread", ops.copy_thread(self.storage, source_thread_id, target_thread_id))

    def prune(
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
        self._run("prune", ops.prune(self.storage, thread_ids, strategy, keep_last))

    def get_delta_channel_history(
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
        return self._run(
            "get_delta_channel_history", ops.delta_history(self.storage, config, channels)
        )

    # Async access for graphs run with `ainvoke`: the sync calls, in a worker thread (for
    # writes, one that stops when the caller is cancelled, as `AsyncMongoDBSaver` does).

    async def _read(self, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """`asyncio.to_thread` for a read. The `setup()` before the saver's first command
        creates indexes, so it runs first as writes do (`in_worker_thread`): a cancelled
        caller leaves none of its commands in flight."""
        if not self._setup_state.done:
            await in_worker_thread(self._set_up_first)
        return await asyncio.to_thread(function, *args, **kwargs)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """`get_tuple` in a worker thread, for a graph run with `ainvoke`.

        It runs in a worker thread (`asyncio.to_thread`).

        Args:
            config: as in `get_tuple`.

        Returns:
            What `get_tuple` returns.

        Raises:
            Exception: what `get_tuple` raises.
        """
        return await self._read(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """`list` in a worker thread, for a graph run with `ainvoke`.

        It runs in a worker thread (`asyncio.to_thread`).

        Args:
            config: as in `list`.
            filter: as in `list`.
            before: as in `list`.
            limit: as in `list`.

        Yields:
            What `list` yields.

        Raises:
            Exception: what `list` raises.
        """
        found = await self._read(
            lambda: [*self.list(config, filter=filter, before=before, limit=limit)]
        )
        for item in found:
            yield item

    async def alist_threads(
        self,
        *,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
        before: str | ThreadInfo | None = None,
    ) -> AsyncIterator[ThreadInfo]:
        """`list_threads` in a worker thread, for code that runs with `ainvoke`.

        Args:
            filter: as in `list_threads`.
            limit: as in `list_threads`.
            before: as in `list_threads`.

        Yields:
            What `list_threads` yields.

        Raises:
            Exception: what `list_threads` raises.
        """
        found = await self._read(
            lambda: [*self.list_threads(filter=filter, limit=limit, before=before)]
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
        """`put` in a worker thread, for a graph run with `ainvoke`.

        It runs in a worker thread (cancelled, it stops before its next command
        and waits for a write already sent).

        Args:
            config: as in `put`.
            checkpoint: as in `put`.
            metadata: as in `put`.
            new_versions: as in `put`.

        Returns:
            What `put` returns.

        Raises:
            Exception: what `put` raises.
        """
        return await in_worker_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """`put_writes` in a worker thread, for a graph run with `ainvoke`.

        It runs in a worker thread (cancelled, it stops before its next command
        and waits for a write already sent).

        Args:
            config: as in `put_writes`.
            writes: as in `put_writes`.
            task_id: as in `put_writes`.
            task_path: as in `put_writes`.

        Raises:
            Exception: what `put_writes` raises.
        """
        await in_worker_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """`delete_thread` in a worker thread, for a graph run with `ainvoke`.

        It runs in a worker thread (cancelled, it stops before its next command
        and waits for a write already sent).

        Args:
            thread_id: as in `delete_thread`.

        Raises:
            Exception: what `delete_thread` raises.
        """
        await in_worker_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """`delete_for_runs` in a worker thread, for a graph run with `ainvoke`.

        It runs in a worker thread (cancelled, it stops before its next command
        and waits for a write already sent).

        Args:
            run_ids: as in `delete_for_runs`.

        Raises:
            Exception: what `delete_for_runs` raises.
        """
        await in_worker_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """`copy_thread` in a worker thread, for a graph run with `ainvoke`.

        It runs in a worker thread (cancelled, it stops before its next command
        and waits for a write already sent).

        Args:
            source_thread_id: as in `copy_thread`.
            target_thread_id: as in `copy_thread`.

        Raises:
            Exception: what `copy_thread` raises.
        """
        await in_worker_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> None:
        """`prune` in a worker thread, for a graph run with `ainvoke`.

        It runs in a worker thread (cancelled, it stops before its next command
        and waits for a write already sent).

        Args:
            thread_ids: as in `prune`.
            strategy: as in `prune`.
            keep_last: as in `prune`.

        Raises:
            Exception: what `prune` raises.
        """
        await in_worker_thread(self.prune, thread_ids, strategy=strategy, keep_last=keep_last)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """`get_delta_channel_history` in a worker thread, for a graph run with `ainvoke`.

        It runs in a worker thread (`asyncio.to_thread`).

        Args:
            config: as in `get_delta_channel_history`.
            channels: as in `get_delta_channel_history`.

        Returns:
            What `get_delta_channel_history` returns.

        Raises:
            Exception: what `get_delta_channel_history` raises.
        """
        return await self._read(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )


def _background_done(operation: str, future: Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        background_failed(operation, future.exception())
