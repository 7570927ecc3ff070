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
)
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from pymongo import AsyncMongoClient

from langgraph.checkpoint.mongo._base import background_done
from langgraph.checkpoint.mongo._cancellation import cancellable_read
from langgraph.checkpoint.mongo._commands import (
    Command,
    Detach,
    Listing,
    NextDocument,
    OpenCursor,
    SaverPlan,
)
from langgraph.checkpoint.mongo._drivers import close_client
from langgraph.checkpoint.mongo._executors import execute_async, open_cursor
from langgraph.checkpoint.mongo._runners import arun_listing, arun_plan
from langgraph.checkpoint.mongo._surface import SaverSurface

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
    SaverSurface["AsyncClient", AbstractAsyncContextManager["AsyncMongoDBSaver"]]
):
    """A LangGraph checkpointer on MongoDB for asyncio applications.

    Takes a `pymongo.AsyncMongoClient` or Motor's `AsyncIOMotorClient` (arguments, and the errors a
    failing server raises: see `MongoDBSaverBase`). It runs `setup()` (the indexes, and the checks
    that refuse collections it cannot use) before its first command, once per process; call
    `await saver.setup()` yourself to pass it options, or to fail at start-up rather than at the
    first call. `async with saver:` calls `aclose()` on exit and `with saver:` calls `close()`; both
    close only a client `from_conn_string` opened.

    The sync methods (`get_tuple`, `list`, `put`, ...) are for code running in *another*
    thread than the event loop the saver runs on: the call runs on that loop (the first
    one the saver ran an async call on) and the thread waits for it. Called from that
    loop, or while it is not running, they raise `asyncio.InvalidStateError` instead of
    deadlocking it; a `list` is read whole before its first checkpoint is yielded.
    """

    asynchronous = True
    """`True`: the saver takes an asynchronous client (`MongoDBSaver`'s is `False`)."""
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
        try:
            saver = build(client)
        except BaseException:
            await close_client(client)
            raise
        saver._owned_client = client
        async with saver:  # `aclose()`: its background work (which uses the client) first
            await saver._set_up_first()
            yield saver

    async def aclose(self) -> None:
        """`MongoDBSaver.close`, asynchronously: after `settle()`, it closes the client
        `from_conn_string` opened, never one you passed in; idempotent. Also what `async
        with saver:` calls on exit."""
        await self.settle()
        client = self._disown_client()
        if client is not None:
            await close_client(client)

    def close(self) -> Awaitable[None]:
        """`aclose`, for code that calls `close()` (as on the official saver): await it
        (`await saver.close()`), or call it without awaiting. On the saver's event loop it starts
        the close and returns it as a task (awaiting it waits for the end); from another thread
        (sync code) it returns once the client is closed, on the saver's loop, which must be
        running. Without a client of its own to close it does nothing."""
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

    async def _run(self, operation: str, plan: SaverPlan[T]) -> T:
        self._bind_loop()
        if not self._setup_state.done:
            await self._set_up_first()
        return await arun_plan(plan, self._executor(operation))

    _acall = _run

    def _call(self, operation: str, plan: SaverPlan[T]) -> T:
        return self._from_thread(self._run(operation, plan))

    async def _set_up_first(self) -> None:
        async with self._setup_state.lock:
            if not self._setup_state.set_up_before():
                await self.setup()

    def _executor(self, operation: str) -> Callable[[Command | Detach], Awaitable[Any]]:
        """`MongoDBSaver._executor` on the async driver: a coroutine per request."""

        def execute(request: Command | Detach) -> Awaitable[Any]:
            if isinstance(request, Detach):
                return self._in_background(request)
            return execute_async(operation, self._collection(request), request)

        return execute

    async def _in_background(self, detached: Detach) -> None:
        """Run a detached plan in a task of its own, which the caller does not wait for; a
        cancelled caller does not cancel it, and a write it sent finishes before a
        cancellation of the task itself propagates."""
        task = asyncio.get_running_loop().create_task(self._run(detached.operation, detached.plan))
        self._background.tasks.add(task)
        task.add_done_callback(self._background.tasks.discard)
        task.add_done_callback(partial(background_done, detached.operation))

    async def setup(
        self, *, create_indexes: bool = True, skip_indexes: Collection[str] = ()
    ) -> None:
        """`MongoDBSaver.setup`, asynchronously: the same options, errors and automatic
        run before the saver's first command, once per process."""
        self._bind_loop()
        await arun_plan(self._setup_plan(create_indexes, skip_indexes), self._executor("setup"))
        self._setup_state.finished()

    async def settle(self) -> None:
        """`MongoDBSaver.settle`, asynchronously."""
        while self._background.tasks:
            await asyncio.wait(list(self._background.tasks))

    async def _aiterate(self, operation: str, listing: Listing[T]) -> AsyncGenerator[T, None]:
        """A listing streamed on the saver's loop; `aclose()` on it, or stopping early,
        closes its cursors."""
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

    def _iterate(self, operation: str, listing: Listing[T]) -> Iterator[T]:
        """A listing read whole on the saver's loop, then yielded."""

        async def collect() -> list[T]:
            return [item async for item in self._aiterate(operation, listing)]

        yield from self._from_thread(collect())

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
