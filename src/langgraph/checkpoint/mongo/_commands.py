"""The unit of I/O the core hands to a saver: one driver call on one collection."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeVar

T = TypeVar("T")


class Target(Enum):
    CHECKPOINTS = "checkpoints"
    WRITES = "writes"
    DATABASE = "database"


@dataclass(frozen=True, slots=True)
class Command:
    """One driver call: `collection.method(*args, **kwargs)`; reads return a cursor."""

    target: Target
    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def returns_cursor(self) -> bool:
        return self.method in ("aggregate", "find")


Plan = Generator[Command, Any, T]
