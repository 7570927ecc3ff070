"""What the async and the sync saver share: the base class (options, collections, the
plans' `Storage`) and the check of `from_conn_string`'s keywords against PyMongo's."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import random
from collections.abc import Callable, Collection
from datetime import timedelta
from typing import Any, ClassVar, Generic, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from pymongo import MongoClient
from pymongo.common import VALIDATORS

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._channel_values import (
    DEFAULT_CACHE_MAX_BYTES,
    RecentValues,
    check_cache_max_bytes,
)
from langgraph.checkpoint.mongo._codec import Codec, Compression, check_compression
from langgraph.checkpoint.mongo._commands import Command, Plan, Target
from langgraph.checkpoint.mongo._documents import DEFAULT_STATE_MAX_BYTES, check_state_max_bytes
from langgraph.checkpoint.mongo._drivers import client_options, identify, require_client
from langgraph.checkpoint.mongo._keys import require_str
from langgraph.checkpoint.mongo._queries import WritesJoin
from langgraph.checkpoint.mongo._ttl import ThreadExpiry, as_timedelta

# A saver's client type, and what its `from_conn_string` returns (a context manager of
# the saver: sync for `MongoDBSaver`, async for `AsyncMongoDBSaver`).
ClientT = TypeVar("ClientT")
OpenedT = TypeVar("OpenedT")
SaverT = TypeVar("SaverT", bound="MongoDBSaverBase[Any, Any]")

DEFAULT_DB_NAME = "checkpointing_db"
DEFAULT_CHECKPOINT_COLLECTION = "checkpoints"
DEFAULT_WRITES_COLLECTION = "checkpoint_writes"


class MongoDBSaverBase(BaseCheckpointSaver[int], Generic[ClientT, OpenedT]):
    """Options and collections of a saver; subclasses only run plans on a driver.

    The constructor's positional order is the official `langgraph-checkpoint-mongodb`
    saver's (`client, db_name, checkpoint_collection_name, writes_collection_name, ttl`);
    the other options are keyword-only.

    Args:
        client: `MongoDBSaver`: a `pymongo.MongoClient`; `AsyncMongoDBSaver`: a
            `pymongo.AsyncMongoClient` or Motor's `AsyncIOMotorClient` (or a subclass of
            one; the in-process stand-ins of mongomock and mongomock-motor are accepted
            too). A client of the other kind raises `TypeError`. The saver never closes
            a client passed in: it is yours, and often shared.
        db_name: the database holding both collections.
        checkpoint_collection_name: one document per checkpoint.
        writes_collection_name: one document per pending write.
        ttl: seconds or a `timedelta`; a thread expires as a whole after that long
            without a write. `None`: threads never expire.
        serde: the serializer of checkpoints, writes and metadata (LangGraph's default if
            `None`), for example an `EncryptedSerializer`.
        compression: `"zstd"` (or `"zlib"`) to compress stored values of 1 KiB or more.
        targeted_joins: join pending writes with a `thread_id` match (MongoDB 5.0+), so
            reads target one shard of a sharded `checkpoint_writes`; `False` for services
            without MongoDB 5.0's `$lookup` (Azure Cosmos DB for MongoDB).
        cache_max_bytes: the bound, in bytes of memory, of the cache of channel values this
            process recently wrote or read (it spares `put` a read of the parent); 0 turns
            it off. See docs/reliability.md for what it counts and how to size it.
        state_max_bytes: the largest checkpoint, and the largest pending write, the saver
            stores, in bytes as stored (serialized, then compressed when `compression` is
            set); at least 16 MiB. A larger one raises `CheckpointTooLargeError` and nothing
            is written. What does not fit one MongoDB document goes to chunk documents
            (see docs/stored-format.md); this bound keeps a runaway state from filling the
            database and the process's memory.

    Raises:
        TypeError: `client` is not of the kind the saver takes, or an option has the
            wrong type.
        ValueError: an option has a wrong value (equal collection names, a negative
            `ttl`, an unknown `compression`, ...).
    """

    # Whether the saver takes an asynchronous client (see `_drivers.require_client`).
    asynchronous: ClassVar[bool]
    # The client `from_conn_string` opened for this saver: the only one `close()` closes.
    _owned_client: ClientT | None = None

    def __init__(
        self,
        client: ClientT,
        db_name: str = DEFAULT_DB_NAME,
        checkpoint_collection_name: str = DEFAULT_CHECKPOINT_COLLECTION,
        writes_collection_name: str = DEFAULT_WRITES_COLLECTION,
        ttl: float | timedelta | None = None,
        *,
        serde: SerializerProtocol | None = None,
        compression: Compression | None = None,
        targeted_joins: bool = True,
        cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
        state_max_bytes: int = DEFAULT_STATE_MAX_BYTES,
    ) -> None:
        require_client(client, asynchronous=self.asynchronous)
        super().__init__(serde=serde)
        self.compression = check_compression(compression)
        ttl_delta = as_timedelta(ttl)
        self.ttl = ttl_delta
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
        self.db = client[db_name]  # type: ignore[index]
        self.checkpoint_collection_name = checkpoint_collection_name
        self.writes_collection_name = writes_collection_name
        self.checkpoint_collection = self.db[checkpoint_collection_name]
        self.writes_collection = self.db[writes_collection_name]
        # The join, expiry and cache are shared with `with_allowlist` copies, like the
        # collections; the codec is each copy's own (see `with_allowlist`).
        self.storage = ops.Storage(
            codec=Codec(self.serde, self.compression),
            join=WritesJoin(writes_collection_name, by_thread=targeted_joins),
            expiry=ThreadExpiry(ttl_delta) if ttl_delta is not None else None,
            recent=RecentValues(check_cache_max_bytes(cache_max_bytes)),
            max_bytes=check_state_max_bytes(state_max_bytes),
        )

    @classmethod
    def from_conn_string(
        cls,
        conn_string: str,
        db_name: str = DEFAULT_DB_NAME,
        checkpoint_collection_name: str = DEFAULT_CHECKPOINT_COLLECTION,
        writes_collection_name: str = DEFAULT_WRITES_COLLECTION,
        ttl: float | timedelta | None = None,
        *,
        serde: SerializerProtocol | None = None,
        compression: Compression | None = None,
        targeted_joins: bool = True,
        cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
        state_max_bytes: int = DEFAULT_STATE_MAX_BYTES,
        **client_kwargs: Any,
    ) -> OpenedT:
        """A saver on a client of its own: `with MongoDBSaver.from_conn_string(...) as
        saver:` or `async with AsyncMongoDBSaver.from_conn_string(...) as saver:`.

        On entry it opens a `pymongo.MongoClient` (`AsyncMongoClient` for
        `AsyncMongoDBSaver`), builds the saver on it and runs `setup()`; on exit it
        closes that client. The saver's parameters come in the official
        `langgraph-checkpoint-mongodb` saver's positional order.

        Args:
            conn_string: a MongoDB connection string (`mongodb://...` or
                `mongodb+srv://...`), as `pymongo.MongoClient` takes it.
            db_name: as in the constructor.
            checkpoint_collection_name: as in the constructor.
            writes_collection_name: as in the constructor.
            ttl: as in the constructor.
            serde: as in the constructor.
            compression: as in the constructor.
            targeted_joins: as in the constructor.
            cache_max_bytes: as in the constructor.
            state_max_bytes: as in the constructor.
            **client_kwargs: PyMongo client options, passed to the client
                (`timeoutMS`, `serverSelectionTimeoutMS`, TLS options, `w`, `driver`, ...).

        Raises:
            TypeError: a keyword that is neither a saver parameter nor a PyMongo client
                option (a misspelt `db_nmae`), naming the saver's parameters.
        """
        unknown = [name for name in client_kwargs if name.lower() not in _CLIENT_KEYWORDS]
        if unknown:
            raise _unknown_options(cls, unknown)
        return cls._connect(
            conn_string,
            client_options(client_kwargs),
            lambda client: cls(
                client,
                db_name,
                checkpoint_collection_name,
                writes_collection_name,
                ttl,
                serde=serde,
                compression=compression,
                targeted_joins=targeted_joins,
                cache_max_bytes=cache_max_bytes,
                state_max_bytes=state_max_bytes,
            ),
        )

    @classmethod
    def _connect(
        cls, conn_string: str, client_kwargs: dict[str, Any], build: Callable[[Any], Any]
    ) -> OpenedT:
        """`from_conn_string`'s context manager: open a client, `build` the saver on it
        (and own the client), set it up, close the client on exit."""
        raise NotImplementedError  # each saver opens its own kind of client

    def close(self) -> object:
        """Close the client `from_conn_string` opened (see each saver's `close`)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        """Close the client `from_conn_string` opened; nothing else (see `close`)."""
        raise NotImplementedError

    def _disown_client(self) -> ClientT | None:
        """The client this saver opened, once: closing twice closes it once."""
        client, self._owned_client = self._owned_client, None
        return client

    def __enter__(self: SaverT) -> SaverT:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self: SaverT) -> SaverT:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def get_next_version(self, current: int | str | None, channel: None) -> Any:
        """Ints, as the base class counts; a thread whose versions are strings (copied from
        `InMemorySaver`, `SqliteSaver` or `PostgresSaver`: `"<counter:032>.<random>"`) keeps
        that form, since LangGraph compares a thread's versions with each other. (`Any`:
        the base class's version type is one of int, float or str, not a union.)"""
        if isinstance(current, str):
            counter = int(current.split(".", 1)[0])
            return f"{counter + 1:032}.{random.random():016}"
        return super().get_next_version(current, channel)

    def _collection(self, command: Command) -> Any:
        if command.target is Target.CHECKPOINTS:
            return self.checkpoint_collection
        if command.target is Target.WRITES:
            return self.writes_collection
        return self.db

    def with_allowlist(
        self, extra_allowlist: Collection[tuple[str, ...]]
    ) -> BaseCheckpointSaver[int]:
        """A shallow copy of the saver whose serializer also restores the types of
        `extra_allowlist` (the base class swaps `serde` on the copy): its codec is built
        on that serializer; collections, expiry and the value cache stay shared."""
        clone = super().with_allowlist(extra_allowlist)
        if clone is not self and isinstance(clone, MongoDBSaverBase):
            codec = Codec(clone.serde, self.compression)
            clone.storage = dataclasses.replace(self.storage, codec=codec)
        return clone

    def _setup_plan(self, create_indexes: bool, skip_indexes: Collection[str]) -> Plan[None]:
        names = {
            Target.CHECKPOINTS: self.checkpoint_collection_name,
            Target.WRITES: self.writes_collection_name,
        }
        return ops.setup(self.storage, names, create_indexes, skip_indexes)


# The keywords a PyMongo client takes, lower-cased as its own validation reads them: its
# options (`pymongo.common.VALIDATORS`, which it checks them against) and the named
# parameters of its constructor.
_CLIENT_KEYWORDS = frozenset(VALIDATORS) | frozenset(
    name.lower()
    for name, parameter in inspect.signature(MongoClient).parameters.items()
    if parameter.kind is not parameter.VAR_KEYWORD
)


def _unknown_options(saver: type[MongoDBSaverBase[Any, Any]], unknown: list[str]) -> TypeError:
    parameters = inspect.signature(saver.from_conn_string).parameters.values()
    own = [p.name for p in parameters if p.name != "conn_string" and p.kind is not p.VAR_KEYWORD]
    hints = [
        f"{name!r} (did you mean {match[0]!r}?)"
        if (match := difflib.get_close_matches(name, own, n=1))
        else repr(name)
        for name in unknown
    ]
    return TypeError(
        f"{saver.__name__}.from_conn_string() got unknown keyword argument(s) "
        f"{', '.join(hints)}: neither a parameter of the saver ({', '.join(own)}) nor a "
        "PyMongo client option (timeoutMS, serverSelectionTimeoutMS, tls, w, ...)"
    )


def command_collection(saver: MongoDBSaverBase[Any, Any], command: Command) -> Any:
    """The collection (or database) of `saver` that `command` runs on: with
    `_executors.execute_sync`/`execute_async`, a plan that also waits on other I/O (copying
    threads in from another saver) runs its commands on a saver."""
    return saver._collection(command)
