"""What the async and the sync saver share: options, collections, plan stepping."""

from __future__ import annotations

import inspect
import random
from collections.abc import Awaitable, Callable, Collection, Generator, Mapping
from datetime import timedelta
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._channel_values import RecentValues
from langgraph.checkpoint.mongo._codec import Codec, Compression, check_compression
from langgraph.checkpoint.mongo._commands import Command, Plan, Target
from langgraph.checkpoint.mongo._drivers import client_options, identify
from langgraph.checkpoint.mongo._keys import require_str
from langgraph.checkpoint.mongo._queries import WritesJoin
from langgraph.checkpoint.mongo._ttl import ThreadExpiry, as_timedelta

T = TypeVar("T")
Y = TypeVar("Y")

DEFAULT_DB_NAME = "checkpointing_db"
DEFAULT_CHECKPOINT_COLLECTION = "checkpoints"
DEFAULT_WRITES_COLLECTION = "checkpoint_writes"


def step(
    plan: Generator[Y, Any, T], result: Any = None, error: BaseException | None = None
) -> tuple[Y | None, T | None]:
    """Hand a plan the last command's result (or error): `(next command, None)` or
    `(None, its return value)`. Sending `None` to a fresh generator starts it."""
    try:
        return (plan.throw(error) if error is not None else plan.send(result)), None
    except StopIteration as done:
        return None, done.value


def run_plan(plan: Generator[Y, Any, T], execute: Callable[[Y], Any]) -> T:
    """Run a plan to its end, each request answered by `execute`; an error it raises
    goes back into the plan, which handles it or lets it propagate."""
    request, value = step(plan)
    while request is not None:
        try:
            result = execute(request)
        except Exception as error:
            request, value = step(plan, error=error)
        else:
            request, value = step(plan, result)
    return value  # type: ignore[return-value]


async def arun_plan(plan: Generator[Y, Any, T], execute: Callable[[Y], Awaitable[Any]]) -> T:
    """`run_plan` with an async `execute`."""
    request, value = step(plan)
    while request is not None:
        try:
            result = await execute(request)
        except Exception as error:
            request, value = step(plan, error=error)
        else:
            request, value = step(plan, result)
    return value  # type: ignore[return-value]


class MongoDBSaverBase(BaseCheckpointSaver[int]):
    """Options and collections of a saver; subclasses only run plans on a driver.

    Args:
        client: `AsyncMongoDBSaver`: a `pymongo.AsyncMongoClient` or Motor's
            `AsyncIOMotorClient`; `MongoDBSaver`: a `pymongo.MongoClient`.
        db_name: the database holding both collections.
        checkpoint_collection_name: one document per checkpoint.
        writes_collection_name: one document per pending write.
        serde: the serializer of checkpoints, writes and metadata (LangGraph's default if
            `None`), for example an `EncryptedSerializer`.
        compression: `"zstd"` (or `"zlib"`) to compress stored values of 1 KiB or more.
        ttl: seconds or a `timedelta`; a thread expires as a whole after that long
            without a write.
        targeted_joins: join pending writes with a `thread_id` match (MongoDB 5.0+), so
            reads target one shard of a sharded `checkpoint_writes`; `False` for services
            without MongoDB 5.0's `$lookup` (Azure Cosmos DB for MongoDB).

    `from_conn_string(conn_string, *args, **options)` opens a client of its own, builds a
    saver on it, runs `setup()`, and closes the client on exit: `args` and the keywords
    above (all but `client`) go to the saver, every other keyword to the client
    (`timeoutMS`, TLS options, `w`, ...).
    """

    def __init__(
        self,
        client: Any,
        db_name: str = DEFAULT_DB_NAME,
        checkpoint_collection_name: str = DEFAULT_CHECKPOINT_COLLECTION,
        writes_collection_name: str = DEFAULT_WRITES_COLLECTION,
        *,
        serde: SerializerProtocol | None = None,
        compression: Compression | None = None,
        ttl: float | timedelta | None = None,
        targeted_joins: bool = True,
    ) -> None:
        super().__init__(serde=serde)
        self.compression = check_compression(compression)
        ttl_delta = as_timedelta(ttl)
        self.ttl = ttl_delta
        self.expiry = ThreadExpiry(ttl_delta) if ttl_delta is not None else None
        require_str(db_name, "db_name")
        require_str(checkpoint_collection_name, "checkpoint_collection_name")
        require_str(writes_collection_name, "writes_collection_name")
        if checkpoint_collection_name == writes_collection_name:
            raise ValueError(
                "checkpoint_collection_name and writes_collection_name must differ, both are "
                f"{checkpoint_collection_name!r}"
            )
        if not isinstance(targeted_joins, bool):
            raise TypeError(f"targeted_joins must be a bool, got {targeted_joins!r}")
        identify(client)
        self.client = client
        self.db = client[db_name]
        self.checkpoint_collection_name = checkpoint_collection_name
        self.writes_collection_name = writes_collection_name
        self.checkpoint_collection = self.db[checkpoint_collection_name]
        self.writes_collection = self.db[writes_collection_name]
        self.join = WritesJoin(writes_collection_name, by_thread=targeted_joins)
        # Shared with `with_allowlist` copies, like the collections.
        self.recent = RecentValues()

    def get_next_version(self, current: int | str | None, channel: None) -> Any:
        """Ints, as the base class counts; a thread whose versions are strings (copied from
        `InMemorySaver`, `SqliteSaver` or `PostgresSaver`: `"<counter:032>.<random>"`) keeps
        that form, since LangGraph compares a thread's versions with each other. (`Any`:
        the base class's version type is one of int, float or str, not a union.)"""
        if isinstance(current, str):
            counter = int(current.split(".", 1)[0])
            return f"{counter + 1:032}.{random.random():016}"
        return super().get_next_version(current, channel)

    @classmethod
    def _split_options(cls, options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """`from_conn_string`'s keywords: the saver's (its constructor's parameters), and
        the client's."""
        own = inspect.signature(cls).parameters.keys() - {"client"}
        saver = {k: v for k, v in options.items() if k in own}
        return saver, client_options({k: v for k, v in options.items() if k not in own})

    def _collection(self, command: Command) -> Any:
        if command.target is Target.CHECKPOINTS:
            return self.checkpoint_collection
        if command.target is Target.WRITES:
            return self.writes_collection
        return self.db

    @property
    def codec(self) -> Codec:
        # Built per call: `with_allowlist` swaps `serde` on a shallow copy of the saver.
        return Codec(self.serde, self.compression)

    def _list_read(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> ops.ListRead | None:
        return ops.list_read(
            self.codec, self.join, config, filter=filter, before=before, limit=limit
        )

    def _setup_plan(self, create_indexes: bool, skip_indexes: Collection[str]) -> Plan[None]:
        names = {
            Target.CHECKPOINTS: self.checkpoint_collection_name,
            Target.WRITES: self.writes_collection_name,
        }
        return ops.setup(names, self.join, self.expiry, create_indexes, skip_indexes)


def command_collection(saver: MongoDBSaverBase, command: Command) -> Any:
    """The collection (or database) of `saver` that `command` runs on: with
    `_drivers.execute_sync`/`execute_async`, a plan that also waits on other I/O (copying
    threads in from another saver) runs its commands on a saver."""
    return saver._collection(command)
