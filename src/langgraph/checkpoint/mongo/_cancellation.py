"""Cancellation that never leaves a write in flight: an async caller cancelled while a
write command runs waits for it before `CancelledError` propagates, natively
(`finished_before_cancelling`) or for a sync call in a worker thread
(`in_worker_thread`, whose thread stops before its next command); and a read cancelled
while it ran raises, even when the driver returned its result (`cancellable_read`)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any, NoReturn, TypeVar

from langgraph.checkpoint.mongo._commands import Command

T = TypeVar("T")


def cancel_requests() -> int:
    """How many cancellations of the running task are pending (`Task.cancelling()`,
    Python 3.11+; always 0 on 3.10, which cannot tell)."""
    cancelling = getattr(asyncio.current_task(), "cancelling", None)
    return cancelling() if cancelling is not None else 0


def raise_if_cancelled_since(requested: int) -> None:
    """Raise the `CancelledError` a read swallowed: before Python 3.12, `asyncio.wait_for` (in
    PyMongo's async network layer) returns the result when it completes as the task is cancelled,
    and the run would go on. `requested`: the `cancel_requests()` before the read."""
    if cancel_requests() > requested:
        raise asyncio.CancelledError


async def cancellable_read(read: Awaitable[T]) -> T:
    """Await a read that raises when the task was cancelled meanwhile, even when the
    driver returned its result (see `raise_if_cancelled_since`)."""
    requested = cancel_requests()
    result = await read
    raise_if_cancelled_since(requested)
    return result


async def finished_before_cancelling(pending: Awaitable[T]) -> T:
    """Await a write to its end even when the awaiting task is cancelled meanwhile, and
    only then let the cancellation propagate.

    Cancelling the await of a command handed to the driver stops only the waiting: the write
    would land after the caller saw `CancelledError`. As `InMemorySaver` promises, once a method
    raised `CancelledError` none of its writes is in flight: the task waits for the command (as
    long as the client's timeouts let it run) and its plan stops before the next one. A
    cancellation before the command is handed over still cancels at once. The command runs in a
    task of its own (`_settle`): `asyncio.shield`, with one pass of the event loop fewer.
    """
    loop = asyncio.get_running_loop()
    outcome: asyncio.Future[T] = loop.create_future()
    running = loop.create_task(_settle(pending, outcome))
    try:
        return await outcome
    except asyncio.CancelledError as cancelled:
        await _outlive(running, cancelled)


async def _settle(pending: Awaitable[T], outcome: asyncio.Future[T]) -> None:
    """Await `pending` and set `outcome` to its result or failure, or raise the failure once
    the caller stopped waiting (for `_outlive` to chain). A cancellation of this task (the loop
    closing) cancels `outcome` too; `KeyboardInterrupt` and `SystemExit` propagate as in tasks."""
    try:
        result = await pending
    except asyncio.CancelledError:
        outcome.cancel()
        raise
    except BaseException as error:
        caller_gone = outcome.done()
        if not caller_gone:
            outcome.set_exception(error)
        if caller_gone or not isinstance(error, Exception):
            raise
        return
    if not outcome.done():
        outcome.set_result(result)


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


class WorkerCall:
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
            self.writing = not command.method.reads

    def finished(self) -> None:
        with self.lock:
            self.writing = False

    def cancel(self) -> bool:
        """Stop before the next command; whether a write command is running now."""
        with self.lock:
            self.cancelled = True
            return self.writing


# The call the current worker thread runs for a cancellable async caller, if any; read by
# `_executors.execute_sync` (asyncio.to_thread runs the function in a copy of our context).
current_worker_call: ContextVar[WorkerCall | None] = ContextVar("current_worker_call", default=None)


async def in_worker_thread(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`asyncio.to_thread(function, ...)` for a sync saver method that writes, cancelled
    like a native async one (`finished_before_cancelling`): a cancellation stops the call
    before its next command, after waiting for a running write command. (A thread cannot
    be interrupted: cancelling `to_thread` alone would let its writes land later.)
    """
    call = WorkerCall()
    token = current_worker_call.set(call)
    try:
        running = asyncio.ensure_future(asyncio.to_thread(function, *args, **kwargs))
    finally:
        current_worker_call.reset(token)
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
