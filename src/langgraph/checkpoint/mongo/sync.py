"""`MongoDBSaver`: the same saver for synchronous code, on `pymongo.MongoClient`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from functools import partial
from typing import Any, TypeVar

from pymongo import MongoClient

from langgraph.checkpoint.mongo._base import background_done
from langgraph.checkpoint.mongo._cancellation import in_worker_thread
from langgraph.checkpoint.mongo._commands import (
    Command,
    Detach,
    Listing,
    NextDocument,
    OpenCursor,
    SaverPlan,
)
from langgraph.checkpoint.mongo._executors import execute_sync, open_cursor_sync
from langgraph.checkpoint.mongo._runners import run_listing, run_plan
from langgraph.checkpoint.mongo._surface import SaverSurface

T = TypeVar("T")


class MongoDBSaver(SaverSurface[MongoClient[Any], AbstractContextManager["MongoDBSaver"]]):
    """A LangGraph checkpointer on MongoDB for synchronous code (`graph.invoke`).

    Takes a `pymongo.MongoClient` (arguments, and the errors a failing server raises:
    see `MongoDBSaverBase`). It runs `setup()` (the indexes, and the checks that refuse collections
    it cannot use) before its first command, once per process; call `saver.setup()` yourself to pass
    it options, or to fail at start-up rather than at the first call. `with saver:` /
    `async with saver:` call `close()` on exit.

    Its async methods run the sync ones in a worker thread (`asyncio.to_thread`), so a
    graph compiled with it also works under `ainvoke`; cancelled, a method that writes
    stops before its next command and waits for a write already sent, and `alist` reads
    whole before its first checkpoint is yielded. asyncio applications get native async
    I/O from `AsyncMongoDBSaver` instead.
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
        try:
            saver = build(client)
        except BaseException:
            client.close()
            raise
        saver._owned_client = client
        with saver:  # `close()`: its background work (which uses the client) first
            saver._set_up_first()
            yield saver

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

    def _run(self, operation: str, plan: SaverPlan[T]) -> T:
        if not self._setup_state.done:
            self._set_up_first()
        return run_plan(plan, self._executor(operation))

    _call = _run

    async def _acall(self, operation: str, plan: SaverPlan[T]) -> T:
        """`_run` in a worker thread: a read's (`asyncio.to_thread`, see `_read`), or a write's that
        stops when the caller is cancelled (`in_worker_thread`), as `AsyncMongoDBSaver` does."""
        if operation in _READS:
            return await self._read(self._run, operation, plan)
        return await in_worker_thread(self._run, operation, plan)

    async def _read(self, function: Callable[..., T], /, *args: Any) -> T:
        """`asyncio.to_thread` for a read. The `setup()` before the saver's first command
        creates indexes, so it runs first as writes do (`in_worker_thread`): a cancelled
        caller leaves none of its commands in flight."""
        if not self._setup_state.done:
            await in_worker_thread(self._set_up_first)
        return await asyncio.to_thread(function, *args)

    def _set_up_first(self) -> None:
        """Run `setup()` before the saver's first command, once (see `SetupState`)."""
        with self._setup_state.lock:
            if not self._setup_state.set_up_before():
                self.setup()

    def _executor(self, operation: str) -> Callable[[Command | Detach], Any]:
        """Answers a request of `operation`: a command runs on this saver's collections, a
        `Detach` goes to the background."""

        def execute(request: Command | Detach) -> Any:
            if isinstance(request, Detach):
                return self._in_background(request)
            return execute_sync(operation, self._collection(request), request)

        return execute

    def _in_background(self, detached: Detach) -> None:
        """Run a detached plan in a worker thread of the saver's own, which the caller
        does not wait for (`settle` and `close` do)."""
        background = self._background
        with background.lock:
            if background.executor is None:
                background.executor = ThreadPoolExecutor(1, "langgraph-checkpoint-mongo")
            future = background.executor.submit(self._run, detached.operation, detached.plan)
        future.add_done_callback(partial(background_done, detached.operation))

    def setup(self, *, create_indexes: bool = True, skip_indexes: Collection[str] = ()) -> None:
        """Create the indexes every query uses and set the TTL index; idempotent.

        It first checks both collections: one with a default collation other than the binary one, or
        holding the official `langgraph-checkpoint-mongodb` saver's documents, is refused.

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

    def settle(self) -> None:
        """Wait until what the saver runs in the background (`keep_last` trims, stamp
        moves of `refresh_ttl_on_read`) has finished."""
        background = self._background
        with background.lock:
            executor, background.executor = background.executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def _iterate(self, operation: str, listing: Listing[T]) -> Iterator[T]:
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

    async def _aiterate(self, operation: str, listing: Listing[T]) -> AsyncGenerator[T, None]:
        """A listing read whole in a worker thread (as `_read` reads), then yielded."""
        for item in await self._read(lambda: [*self._iterate(operation, listing)]):
            yield item


# The operations that only read: a cancelled async caller abandons one (`_read`); every
# other one writes, and its thread stops before its next command (`in_worker_thread`).
_READS = frozenset({"get_tuple", "get_delta_channel_history"})
