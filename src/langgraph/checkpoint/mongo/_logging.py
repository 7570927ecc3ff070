"""The package's logger, and how each command is logged: at DEBUG, with the saver
operation it serves and its duration, or its failure."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from langgraph.checkpoint.mongo._commands import Command

logger = logging.getLogger("langgraph.checkpoint.mongo")


class Timed:
    """Log a command at DEBUG with the saver operation it serves and its duration; name
    both when it fails (the exception propagates untouched). A class, not `@contextmanager`:
    it runs around every command, where a generator-based one costs more.
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
            self.command.method.value,
            outcome,
            (time.perf_counter() - self.started) * 1000,
            exc_info=error_type is not None,
        )


# What `timed` gives when the logger drops DEBUG records: a context that does nothing.
_UNTIMED = nullcontext()


def timed(operation: str, command: Command) -> Timed | nullcontext[None]:
    """`Timed(operation, command)`; while DEBUG is off, a shared context that does nothing,
    so a command pays neither the clock nor an object for a record that would be dropped."""
    if logger.isEnabledFor(logging.DEBUG):
        return Timed(operation, command)
    return _UNTIMED


@contextmanager
def failures_logged(operation: str, command: Command) -> Iterator[None]:
    try:
        yield
    except Exception:
        logger.debug(
            "%s: %s.%s failed while reading more results",
            operation,
            command.target.value,
            command.method.value,
            exc_info=True,
        )
        raise
