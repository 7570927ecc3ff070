"""The few places where PyMongo's async API and Motor's differ, handled once.

PyMongo async (`AsyncMongoClient`) returns awaitables from `aggregate`, `close` and
cursor `close`; Motor (and mongomock-motor, which imitates it) returns a cursor from
`aggregate` and plain values from `close`. Awaiting only what is awaitable covers both.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, NoReturn, TypeVar

from pymongo.driver_info import DriverInfo

from langgraph.checkpoint.mongo._commands import Command

T = TypeVar("T")

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

    PyMongo's clients have `append_metadata` (since 4.14, the floor of our dependency);
    Motor wraps one as `delegate`. The in-process stand-ins (mongomock's clients), which
    have no driver metadata, are left as they are. Attributes are looked up on the class:
    a client's `__getattr__` turns any name into a database.
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
    one costs more with DEBUG off (`benchmarks/` measures the command path).
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


async def finished_before_cancelling(pending: Awaitable[T]) -> T:
    """Await a write to its end even when the awaiting task is cancelled meanwhile, and
    only then let the cancellation propagate.

    Cancelling the await of a command already handed to the driver stops only the
    waiting: the server still runs the command, and the write would land after the
    caller saw `CancelledError`. `InMemorySaver` promises that once a method raised
    `CancelledError` none of its writes is still in flight, and so do we: the cancelled
    task waits for the command (as long as the client's `timeoutMS` and socket timeouts
    let it run), and its plan stops before the next command. A cancellation that reaches
    the task before the command is handed over still cancels at once.
    """
    running = asyncio.ensure_future(pending)
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError as cancelled:
        await _outlive(running, cancelled)


async def _outlive(running: asyncio.Future[Any], cancelled: asyncio.CancelledError) -> NoReturn:
    """Wait for `running` to end, through any further cancellation, then raise
    `cancelled` (caused by `running`'s failure, if it failed). A `running` that was
    cancelled itself (the event loop is closing) ends the wait at once."""
    while not running.done():
        try:
            await asyncio.wait([running])
        except asyncio.CancelledError:
            continue  # cancelled again: the write is still in flight
    failure = None if running.cancelled() else running.exception()
    raise cancelled from failure


class _CallerGoneError(BaseException):
    """Raised in a worker thread before a command of a call whose async caller was
    cancelled: the call stops there. A `BaseException`, so plans do not catch it."""


class _WorkerCall:
    """A sync call running in a worker thread for a cancellable async caller (see
    `in_worker_thread`): whether the caller was cancelled, and whether the thread is
    running a write command now."""

    __slots__ = ("cancelled", "lock", "writing")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cancelled = False
        self.writing = False

    def starting(self, command: Command) -> None:
        with self.lock:
            if self.cancelled:
                raise _CallerGoneError
            self.writing = command.is_write

    def finished(self) -> None:
        with self.lock:
            self.writing = False

    def cancel(self) -> bool:
        """Stop before the next command; whether a write command is running now."""
        with self.lock:
            self.cancelled = True
            return self.writing


# The call the current worker thread runs for a cancellable async caller, if any; read
# by `execute_sync` (asyncio.to_thread runs the function in a copy of our context).
_worker_call: ContextVar[_WorkerCall | None] = ContextVar("_worker_call", default=None)


async def in_worker_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`asyncio.to_thread(function, ...)` for a sync saver method that writes, cancelled
    like a native async one (`finished_before_cancelling`): a cancellation stops the call
    before its next command; when a write command is running, it waits for that command
    first. (A thread cannot be interrupted: cancelling `to_thread` alone would leave the
    call running, and its writes landing, after the caller saw `CancelledError`.)
    """
    call = _WorkerCall()
    token = _worker_call.set(call)
    try:
        running = asyncio.ensure_future(asyncio.to_thread(function, *args, **kwargs))
    finally:
        _worker_call.reset(token)
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError as cancelled:
        if call.cancel():
            await _outlive(running, cancelled)
        # Only a read is running: the thread stops before its next command; its
        # outcome (`_CallerGoneError`, a read's error) is no one's to handle.
        running.add_done_callback(_ignore_outcome)
        raise


def _ignore_outcome(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def execute_async(operation: str, collection: Any, command: Command) -> Any:
    """Run one command; a read is drained into a list (use `open_cursor` to stream).
    A write, once handed to the driver, finishes before a cancellation propagates
    (`finished_before_cancelling`)."""
    with Timed(operation, command):
        pending = call(collection, command)
        if command.is_write and inspect.isawaitable(pending):
            return await finished_before_cancelling(pending)
        result = await maybe_await(pending)
        if command.returns_cursor:
            return [doc async for doc in result]
        return result


def execute_sync(operation: str, collection: Any, command: Command) -> Any:
    """`execute_async` for the sync driver; in a worker thread of `in_worker_thread`, it
    first checks that the async caller still waits."""
    worker_call = _worker_call.get()
    if worker_call is None:
        return _execute_sync(operation, collection, command)
    worker_call.starting(command)
    try:
        return _execute_sync(operation, collection, command)
    finally:
        worker_call.finished()


def _execute_sync(operation: str, collection: Any, command: Command) -> Any:
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
