"""The few places where PyMongo's async API and Motor's differ, handled once.

PyMongo async (`AsyncMongoClient`) returns awaitables from `aggregate`, `close` and
cursor `close`; Motor (and mongomock-motor, which imitates it) returns a cursor from
`aggregate` and plain values from `close`. Awaiting only what is awaitable covers both.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from pymongo.driver_info import DriverInfo

from langgraph.checkpoint.mongo._commands import Command

logger = logging.getLogger("langgraph.checkpoint.mongo")

try:
    from importlib.metadata import version as _version

    __version__ = _version("langgraph-checkpoint-mongo")
except Exception:  # pragma: no cover - running from a source tree without metadata
    __version__ = "0"

DRIVER_INFO = DriverInfo(name="langgraph-checkpoint-mongo", version=__version__)


def identify(client: Any) -> None:
    """Add our name to the driver metadata servers log (Atlas shows it per connection).

    PyMongo >= 4.14 clients have `append_metadata`; Motor wraps one as `delegate`.
    Clients without it (older PyMongo, mocks) are left as they are. Attributes are
    looked up on the class: a client's `__getattr__` turns any name into a database.
    """
    target = getattr(client, "__dict__", {}).get("delegate", client)
    append = getattr(type(target), "append_metadata", None)
    if append is not None:
        append(target, DRIVER_INFO)


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


@contextmanager
def timed(command: Command) -> Iterator[None]:
    """Log each command at DEBUG with its duration, and name it when it fails."""
    started = time.perf_counter()
    try:
        yield
    except Exception:
        logger.debug("%s.%s failed", command.target.value, command.method, exc_info=True)
        raise
    if logger.isEnabledFor(logging.DEBUG):
        elapsed = (time.perf_counter() - started) * 1000
        logger.debug("%s.%s took %.2f ms", command.target.value, command.method, elapsed)


def call(collection: Any, command: Command) -> Any:
    return getattr(collection, command.method)(*command.args, **command.kwargs)


async def execute_async(collection: Any, command: Command) -> Any:
    """Run one command; a read is drained into a list (use `open_cursor` to stream)."""
    with timed(command):
        result = await maybe_await(call(collection, command))
        if command.returns_cursor:
            return [doc async for doc in result]
        return result


@asynccontextmanager
async def open_cursor(collection: Any, command: Command) -> AsyncIterator[Any]:
    """A cursor that is closed (killCursors) even when the reader stops early."""
    with timed(command):
        cursor = await maybe_await(call(collection, command))
    try:
        yield cursor
    finally:
        await maybe_await(cursor.close())


async def close_client(client: Any) -> None:
    await maybe_await(client.close())
