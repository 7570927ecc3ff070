"""The LangGraph methods of both savers, each written once: `SaverSurface`.

LangGraph asks every saver for both colours of each method (`put` and `aput`, ...).
Each method here builds its operation's plan (`_operations`) and hands it to one of four
hooks that each saver supplies, since how a plan runs is all that differs per saver:
`_call` and `_acall` run a plan (sync, async), `_iterate` and `_aiterate` a listing.
`AsyncMongoDBSaver` runs plans natively on its event loop, its sync methods on that loop
from another thread; `MongoDBSaver` runs them on the calling thread, its async methods
in a worker thread. The methods stay explicit `def`s and `async def`s, so type checkers,
IDEs and the API reference read their signatures and docstrings; the contract is
documented once, on the method without the `a`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._base import ClientT, MongoDBSaverBase, OpenedT
from langgraph.checkpoint.mongo._documents import ThreadInfo

if TYPE_CHECKING:
    from langgraph.checkpoint.mongo._commands import Listing, SaverPlan

T = TypeVar("T")


class SaverSurface(MongoDBSaverBase[ClientT, OpenedT]):
    """Both savers' LangGraph methods, over the hooks each saver supplies."""

    if TYPE_CHECKING:
        # Each saver's hooks: run `operation`'s plan or listing (its name in the log) on
        # the saver's collections, set up first.
        def _call(self, operation: str, plan: SaverPlan[T]) -> T: ...
        async def _acall(self, operation: str, plan: SaverPlan[T]) -> T: ...
        def _iterate(self, operation: str, listing: Listing[T]) -> Iterator[T]: ...
        def _aiterate(self, operation: str, listing: Listing[T]) -> AsyncGenerator[T, None]: ...

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint `config` names, with its pending writes, in one round trip (two on
        a server whose `$lookup` would read every write, such as SecantusDB).

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
        return self._call("get_tuple", ops.get_tuple(self.storage, config))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """`get_tuple`, asynchronously: the same argument, result and errors."""
        return await self._acall("get_tuple", ops.get_tuple(self.storage, config))

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
        yield from self._iterate("list", listing)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """`list`, asynchronously: the same arguments, checkpoints and errors; its
        `aclose()` closes the cursors of a listing stopped early."""
        listing = ops.list_checkpoints(
            self.storage, config, filter=filter, before=before, limit=limit
        )
        # `aclosing`: a caller's `aclose()` reaches the stream now, which closes its cursor.
        async with aclosing(self._aiterate("list", listing)) as items:
            async for item in items:
                yield item

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
        yield from self._iterate("list_threads", listing)

    async def alist_threads(
        self,
        *,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
        before: str | ThreadInfo | None = None,
    ) -> AsyncIterator[ThreadInfo]:
        """`list_threads`, asynchronously: the same arguments, order and cost."""
        listing = ops.list_threads(self.storage, filter=filter, limit=limit, before=before)
        async with aclosing(self._aiterate("list_threads", listing)) as items:
            async for item in items:
                yield item

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
        return self._call("put", ops.put(self.storage, config, checkpoint, metadata, new_versions))

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """`put`, asynchronously: the same arguments, result and errors."""
        plan = ops.put(self.storage, config, checkpoint, metadata, new_versions)
        return await self._acall("put", plan)

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
        self._call("put_writes", ops.put_writes(self.storage, config, writes, task_id, task_path))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """`put_writes`, asynchronously: the same arguments and errors."""
        plan = ops.put_writes(self.storage, config, writes, task_id, task_path)
        await self._acall("put_writes", plan)

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and pending write of a thread, in all its namespaces.

        Args:
            thread_id: the thread; one that has nothing stored is no error.

        Raises:
            TypeError: `thread_id` is not a str.
            ValueError: `thread_id` is not valid Unicode text or is too long.
            pymongo.errors.PyMongoError: the server or the network failed.
        """
        self._call("delete_thread", ops.delete_thread(self.storage, thread_id))

    async def adelete_thread(self, thread_id: str) -> None:
        """`delete_thread`, asynchronously: the same argument and errors."""
        await self._acall("delete_thread", ops.delete_thread(self.storage, thread_id))

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
        self._call("delete_for_runs", ops.delete_for_runs(self.storage, run_ids))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """`delete_for_runs`, asynchronously: the same argument and errors."""
        await self._acall("delete_for_runs", ops.delete_for_runs(self.storage, run_ids))

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
        self._call("copy_thread", ops.copy_thread(self.storage, source_thread_id, target_thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """`copy_thread`, asynchronously: the same arguments and errors."""
        plan = ops.copy_thread(self.storage, source_thread_id, target_thread_id)
        await self._acall("copy_thread", plan)

    def pin_thread(self, thread_id: str) -> None:
        """Keep a thread from `ttl` expiry, whatever is written to it, until `unpin_thread`.

        Every document of the thread gets a stamp no TTL pass reaches: one `update_many` per
        collection, as a stamp move costs. Every write of a saver with `ttl` checks the pin as it
        lands, in its own command, so the pin holds against runs of any process, those that read
        the thread before it included: their writes pin the whole thread.

        Args:
            thread_id: the thread; one that has nothing stored is no error.

        Raises:
            TypeError: `thread_id` is not a str.
            ValueError: `thread_id` is not valid Unicode text or is too long.
            pymongo.errors.PyMongoError: the server or the network failed; a retry
                helps (pinning twice is pinning once).
        """
        self._call("pin_thread", ops.pin_thread(self.storage, thread_id, True))

    async def apin_thread(self, thread_id: str) -> None:
        """`pin_thread`, asynchronously: the same argument and errors."""
        await self._acall("pin_thread", ops.pin_thread(self.storage, thread_id, True))

    def unpin_thread(self, thread_id: str) -> None:
        """Let a pinned thread expire again, `ttl` after this call or its next write.

        A write that lands while the unpin runs, or a run that read the thread pinned and writes
        after it, pins the thread again (a pin is never lost to a race, an unpin may be): unpin
        once no run writes to the thread.

        Args:
            thread_id: the thread; one not pinned, or with nothing stored, is no error.

        Raises:
            TypeError: `thread_id` is not a str.
            ValueError: `thread_id` is not valid Unicode text or is too long.
            pymongo.errors.PyMongoError: the server or the network failed; a retry
                helps.
        """
        self._call("unpin_thread", ops.pin_thread(self.storage, thread_id, False))

    async def aunpin_thread(self, thread_id: str) -> None:
        """`unpin_thread`, asynchronously: the same argument and errors."""
        await self._acall("unpin_thread", ops.pin_thread(self.storage, thread_id, False))

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
        self._call("prune", ops.prune(self.storage, thread_ids, strategy, keep_last))

    async def aprune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        keep_last: int | None = None,
    ) -> None:
        """`prune`, asynchronously: the same arguments and errors."""
        await self._acall("prune", ops.prune(self.storage, thread_ids, strategy, keep_last))

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
        plan = ops.delta_history(self.storage, config, channels)
        return self._call("get_delta_channel_history", plan)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """`get_delta_channel_history`, asynchronously: the same arguments, result and errors."""
        plan = ops.delta_history(self.storage, config, channels)
        return await self._acall("get_delta_channel_history", plan)
