"""How a command reaches a driver: run it (a read drained into a list), or stream a
cursor, each logged (`_logging`) and, for a write, finished before a cancellation
propagates (`_cancellation`)."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from langgraph.checkpoint.mongo._cancellation import (
    cancel_requests,
    current_worker_call,
    finished_before_cancelling,
    raise_if_cancelled_since,
)
from langgraph.checkpoint.mongo._commands import Command
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._logging import failures_logged, timed


def call(collection: Any, command: Command) -> Any:
    return getattr(collection, command.method)(*command.args, **command.kwargs)


async def execute_async(operation: str, collection: Any, command: Command) -> Any:
    """Run one command; a read is drained into a list (use `open_cursor` to stream). A write
    finishes before a cancellation propagates (`finished_before_cancelling`); a read
    cancelled meanwhile raises even with its result (`raise_if_cancelled_since`)."""
    with timed(operation, command):
        pending = call(collection, command)
        awaitable = inspect.isawaitable(pending)
        if not command.method.reads and awaitable:
            return await finished_before_cancelling(pending)
        requested = cancel_requests()
        result = await pending if awaitable else pending
        if command.method.returns_cursor:
            result = [doc async for doc in result]
        raise_if_cancelled_since(requested)
        return result


def execute_sync(operation: str, collection: Any, command: Command) -> Any:
    """`execute_async` for the sync driver; in a worker thread of `in_worker_thread`, it
    first checks that the async caller still waits."""
    worker_call = current_worker_call.get()
    if worker_call is None:
        return _execute_sync(operation, collection, command)
    worker_call.starting(command)
    try:
        return _execute_sync(operation, collection, command)
    finally:
        worker_call.finished()


def _execute_sync(operation: str, collection: Any, command: Command) -> Any:
    with timed(operation, command):
        result = call(collection, command)
        return list(result) if command.method.returns_cursor else result


@asynccontextmanager
async def open_cursor(
    operation: str, collection: Any, command: Command
) -> AsyncIterator[AsyncIterator[Any]]:
    """The command's documents, streamed; the cursor is closed (killCursors) even when the
    reader stops early. The first batch is fetched inside the timing: Motor sends the
    command only then. A failing `getMore` is logged like the command."""
    cursor = None
    try:
        with timed(operation, command):
            cursor = await maybe_await(call(collection, command))
            first = await anext(cursor, None)

        async def documents() -> AsyncIterator[Any]:
            if first is not None:
                yield first
                with failures_logged(operation, command):
                    async for doc in cursor:
                        yield doc

        yield documents()
    finally:
        if cursor is not None:
            await maybe_await(cursor.close())


@contextmanager
def open_cursor_sync(operation: str, collection: Any, command: Command) -> Iterator[Iterator[Any]]:
    """`open_cursor` for the sync driver."""
    cursor = None
    try:
        with timed(operation, command):
            cursor = call(collection, command)
            first = next(cursor, None)

        def documents() -> Iterator[Any]:
            if first is not None:
                yield first
                with failures_logged(operation, command):
                    yield from cursor

        yield documents()
    finally:
        if cursor is not None:
            cursor.close()
