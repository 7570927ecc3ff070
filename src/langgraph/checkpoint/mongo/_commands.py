"""The requests a plan yields, and what a plan is.

A plan (every saver operation, in `_operations`) is a generator that yields requests and
receives their answers, without doing any I/O; the savers' executors answer them:

- `Command`: one driver call on one of the saver's collections (or its database);
- `OpenCursor` and `NextDocument`: `list`'s stream, a cursor read one document at a time;
- `Detach`: a follow-up plan the saver runs in the background, unwaited;
- copy-threads' plans also yield `SourceRead`s (`migrate/_plans.py`), for the source saver.

A command's `Method` says whether it only reads (a read cancelled on the wire may be
abandoned; a write is waited for) and whether its answer is a cursor.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from enum import Enum
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

from langgraph.checkpoint.base import CheckpointTuple

T = TypeVar("T")


class Target(Enum):
    CHECKPOINTS = "checkpoints"
    WRITES = "writes"
    DATABASE = "database"


class Method(str, Enum):
    """A driver method a command calls (the value is its name), with what it does:
    `reads` (it changes nothing in the database) and `returns_cursor` (its answer is a
    cursor, drained into a list unless streamed). A new method must say both."""

    reads: bool
    returns_cursor: bool

    def __new__(cls, name: str, reads: bool, returns_cursor: bool = False) -> Method:
        member = str.__new__(cls, name)
        member._value_ = name
        member.reads = reads
        member.returns_cursor = returns_cursor
        return member

    def __str__(self) -> str:
        return str(self._value_)

    AGGREGATE = ("aggregate", True, True)
    FIND = ("find", True, True)
    COUNT_DOCUMENTS = ("count_documents", True)
    INDEX_INFORMATION = ("index_information", True)
    UPDATE_ONE = ("update_one", False)
    UPDATE_MANY = ("update_many", False)
    BULK_WRITE = ("bulk_write", False)
    DELETE_MANY = ("delete_many", False)
    CREATE_INDEXES = ("create_indexes", False)
    # A database command (`collMod`): not a read.
    COMMAND = ("command", False)


# The keywords of a command that has none (read-only: it is shared).
NO_KWARGS: Mapping[str, Any] = MappingProxyType({})


class Command(NamedTuple):
    """One driver call: `collection.method(*args, **kwargs)`."""

    target: Target
    method: Method
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = NO_KWARGS


class OpenCursor(NamedTuple):
    """A `list` step: open a streamed cursor on `command`; the answer is that cursor."""

    command: Command


class NextDocument(NamedTuple):
    """A `list` step: the cursor's next document, or None after the last."""

    cursor: Any


class Detach(NamedTuple):
    """Run `plan` in the saver's background (`operation`: its name in the log); answered
    `None` at once. `settle()` and `close()` wait for it; a failure is logged, not raised."""

    operation: str
    plan: Plan[None]


# What a saver answers: every request of the core's plans.
Request = Command | OpenCursor | NextDocument | Detach

# What a listing (`list`, `list_threads`) yields: a request for the saver, or an item for
# the caller.
ListStep = Request | CheckpointTuple
Listing = Generator[Request | T, Any, None]

Plan = Generator[Command, Any, T]
"""An operation, without I/O: it yields `Command`s, receives their results and returns the
method's result (see `_operations`)."""

SaverPlan = Generator[Command | Detach, Any, T]
"""A saver method's plan: a `Plan` that may also hand follow-ups to the background
(`Detach`). Only the savers run these; a plan that other code runs too (copying threads,
a detached follow-up) is a `Plan`."""
