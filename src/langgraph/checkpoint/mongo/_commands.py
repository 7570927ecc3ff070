"""The unit of I/O the core hands to a saver: one driver call on one collection."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from enum import Enum
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

T = TypeVar("T")


class Target(Enum):
    CHECKPOINTS = "checkpoints"
    WRITES = "writes"
    DATABASE = "database"


# The driver methods that only read. A read cancelled on the wire may be abandoned: the
# server answering it changes nothing. Every other method writes (a new read method left
# out of this set is only waited for when cancelled, never wrongly abandoned).
READ_METHODS = frozenset({"aggregate", "count_documents", "find", "index_information", "options"})

# The keywords of a command that has none (read-only: it is shared).
NO_KWARGS: Mapping[str, Any] = MappingProxyType({})


class Command(NamedTuple):
    """One driver call: `collection.method(*args, **kwargs)`; reads return a cursor."""

    target: Target
    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = NO_KWARGS

    @property
    def returns_cursor(self) -> bool:
        return self.method in ("aggregate", "find")

    @property
    def is_write(self) -> bool:
        """Whether the command may change the database (see `READ_METHODS`)."""
        return self.method not in READ_METHODS


Plan = Generator[Command, Any, T]
