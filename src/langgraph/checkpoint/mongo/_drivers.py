"""The few places where PyMongo's async API and Motor's differ, handled once.

PyMongo async (`AsyncMongoClient`) returns awaitables from `aggregate`, `close` and
cursor `close`; Motor (and mongomock-motor, which imitates it) returns a cursor from
`aggregate` and plain values from `close`. Awaiting only what is awaitable covers both.
"""

from __future__ import annotations

import inspect
import logging
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
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


def client_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Keywords of a client we create: our `DriverInfo`, unless the caller passes their own
    (`identify` still adds ours to it)."""
    return {"driver": DRIVER_INFO, **options}


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


# The clients each saver takes, as (module, class): PyMongo's, and those of the in-process
# stand-ins tests use (mongomock's, mongomock-motor's). Looked up among imported modules
# only: a client of a class whose module was never imported cannot exist, so Motor and
# the mocks stay optional.
SYNC_CLIENTS = (("pymongo", "MongoClient"), ("mongomock", "MongoClient"))
ASYNC_CLIENTS = (
    ("pymongo", "AsyncMongoClient"),
    ("motor.motor_asyncio", "AsyncIOMotorClient"),
    ("mongomock_motor", "AsyncMongoMockClient"),
)


def _loaded(clients: tuple[tuple[str, str], ...]) -> tuple[type, ...]:
    found = (getattr(sys.modules.get(module), name, None) for module, name in clients)
    return tuple(cls for cls in found if isinstance(cls, type))


# Per saver (by `asynchronous`): its name, the clients it takes in words, and as classes.
_TAKES = {
    False: ("MongoDBSaver", "a synchronous client, pymongo.MongoClient", SYNC_CLIENTS),
    True: (
        "AsyncMongoDBSaver",
        "an asynchronous client, pymongo.AsyncMongoClient or Motor's AsyncIOMotorClient",
        ASYNC_CLIENTS,
    ),
}


def require_client(client: Any, *, asynchronous: bool) -> None:
    """Refuse a client of the other kind (or no client) when a saver is built, instead of
    failing deep in its first call. A client is recognised by its class, subclasses
    included (a wrapper of one's own subclasses the client it wraps)."""
    saver, takes, wanted = _TAKES[asynchronous]
    if isinstance(client, _loaded(wanted)):
        return
    other_saver, _, other = _TAKES[not asynchronous]
    got = f"{type(client).__module__}.{type(client).__qualname__}"
    hint = f"; a {got} goes with {other_saver}" if isinstance(client, _loaded(other)) else ""
    raise TypeError(f"{saver} takes {takes} (or a subclass of one), got {got}{hint}")


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Timed:
    """Log a command at DEBUG with the saver operation it serves and its duration; name
    both when it fails (the exception itself propagates untouched).

    A class, not `@contextmanager`: it runs around every command, and a generator-based
    one cost about 2 µs more per command with DEBUG off.
    """

    __slots__ = ("command", "operation", "started")

    def __init__(self, operation: str, command: Command) -> None:
        self.operation = operation
        self.command = command

    def __enter__(self) -> None:
        self.started = time.perf_counter()

    def __exit__(self, error_type: type[BaseException] | None, *_: object) -> None:
        if error_type is None:
            if not logger.isEnabledFor(logging.DEBUG):
                return
            outcome = "took"
        elif issubclass(error_type, Exception):
            outcome = "failed after"
        else:
            return
        logger.debug(
            "%s: %s.%s %s %.2f ms",
            self.operation,
            self.command.target.value,
            self.command.method,
            outcome,
            (time.perf_counter() - self.started) * 1000,
            exc_info=error_type is not None,
        )


def call(collection: Any, command: Command) -> Any:
    return getattr(collection, command.method)(*command.args, **command.kwargs)


def plan_name(plan: Any) -> str:
    """The saver operation a plan implements: its generator function's name."""
    return str(getattr(plan, "__name__", "operation"))


async def execute_async(operation: str, collection: Any, command: Command) -> Any:
    """Run one command; a read is drained into a list (use `open_cursor` to stream)."""
    with Timed(operation, command):
        result = await maybe_await(call(collection, command))
        if command.returns_cursor:
            return [doc async for doc in result]
        return result


def execute_sync(operation: str, collection: Any, command: Command) -> Any:
    """`execute_async` for the sync driver."""
    with Timed(operation, command):
        result = call(collection, command)
        return list(result) if command.returns_cursor else result


@asynccontextmanager
async def open_cursor(
    operation: str, collection: Any, command: Command
) -> AsyncIterator[AsyncIterator[Any]]:
    """The command's documents, streamed; the cursor is closed (killCursors) even when the
    reader stops early. The first batch is fetched inside the timing: Motor sends the
    command only then. A failing `getMore` is logged like the command."""
    cursor = None
    try:
        with Timed(operation, command):
            cursor = await maybe_await(call(collection, command))
            first = await anext(cursor, None)

        async def documents() -> AsyncIterator[Any]:
            if first is None:
                return
            yield first
            with _failures_logged(operation, command):
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
        with Timed(operation, command):
            cursor = call(collection, command)
            first = next(cursor, None)

        def documents() -> Iterator[Any]:
            if first is None:
                return
            yield first
            with _failures_logged(operation, command):
                yield from cursor

        yield documents()
    finally:
        if cursor is not None:
            cursor.close()


@contextmanager
def _failures_logged(operation: str, command: Command) -> Iterator[None]:
    try:
        yield
    except Exception:
        logger.debug(
            "%s: %s.%s failed while reading more results",
            operation,
            command.target.value,
            command.method,
            exc_info=True,
        )
        raise


async def close_client(client: Any) -> None:
    await maybe_await(client.close())
