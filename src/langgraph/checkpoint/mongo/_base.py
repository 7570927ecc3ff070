"""What the async and the sync saver share: the base class (options, collections, the
plans' `Storage`) and the check of `from_conn_string`'s keywords against PyMongo's."""

from __future__ import annotations

import asyncio
import dataclasses
import difflib
import inspect
import random
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Generic, NoReturn, TypeVar, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from pymongo import MongoClient
from pymongo.common import VALIDATORS

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo import _options
from langgraph.checkpoint.mongo._channel_values import DEFAULT_CACHE_MAX_BYTES, RecentValues
from langgraph.checkpoint.mongo._codec import Compression, codec
from langgraph.checkpoint.mongo._commands import Command, Plan, Target
from langgraph.checkpoint.mongo._documents import DEFAULT_STATE_MAX_BYTES
from langgraph.checkpoint.mongo._drivers import client_options, deployment, identify, require_client
from langgraph.checkpoint.mongo._logging import logger
from langgraph.checkpoint.mongo._queries import NamespaceCount, WritesJoin
from langgraph.checkpoint.mongo._sizes import DEFAULT_STATE_WARN_BYTES
from langgraph.checkpoint.mongo._ttl import ThreadExpiry, thread_moves
from langgraph.checkpoint.mongo.errors import IndexCreationError

# A saver's client type, and what its `from_conn_string` returns (a context manager of
# the saver: sync for `MongoDBSaver`, async for `AsyncMongoDBSaver`).
ClientT = TypeVar("ClientT")
OpenedT = TypeVar("OpenedT")
SaverT = TypeVar("SaverT", bound="MongoDBSaverBase[Any, Any]")
LockT = TypeVar("LockT")

DEFAULT_DB_NAME = "checkpointing_db"
DEFAULT_CHECKPOINT_COLLECTION = "checkpoints"
DEFAULT_WRITES_COLLECTION = "checkpoint_writes"


@dataclasses.dataclass(eq=False)
class SetupState(Generic[LockT]):
    """Whether a saver is set up, what the process set up on its collections, and the
    lock a saver's first call sets it up under.

    A saver sets itself up before its first command, as the official saver does in its
    constructor: code that switched by changing only the import never calls `setup()`,
    whose check refuses the official saver's collections by name. That setup runs once per
    process: what a `setup()` found or created is remembered by `key` (deployment, database,
    collection names, `ttl`, `targeted_joins`) as index names, so a saver built per request
    sends no setup command once every index its options ask for (`needs`) is known to
    exist, and sets up only the missing part otherwise.

    What the application declined (`create_indexes=False`, `skip_indexes`) is remembered by
    `collections`: a deployment that cannot create those indexes (Azure Cosmos DB, a user
    without the privilege) then has the refusal logged once instead of failing every
    request. Concurrent first calls run one `setup()` (the others wait on `lock`); one that
    fails or is cancelled leaves `done` false, so the next call tries again. `with_allowlist`
    copies share the object. `reads` (how reads get pending writes, as `setup()` found)
    is remembered with it, so every saver reads as the one that ran the setup.
    """

    lock: LockT
    key: Hashable | None = None
    collections: Hashable | None = None
    needs: frozenset[str] = frozenset()
    done: bool = False
    reads: ops.WritesReads = dataclasses.field(default_factory=lambda: ops.WritesReads())

    def set_up_before(self) -> bool:
        """Whether this process set up every index of `needs` already (then `done`, and
        `reads` as that setup found them)."""
        if self.key is not None:
            with _set_up_lock:
                remembered = _set_up.get(self.key)
            if remembered is not None and self.needs <= remembered[0]:
                self.reads.joined = remembered[1].joined
                self.done = True
        return self.done

    def declined(self, names: Collection[str]) -> None:
        """A `setup()` was told not to create these indexes on these collections."""
        if self.collections is not None and names:
            with _set_up_lock:
                _declined[self.collections] = _declined.get(self.collections, frozenset()) | set(
                    names
                )

    def tolerates(self, name: str) -> bool:
        """Whether a refusal of index `name` is one the application declared (see
        `declined`): then setup goes on without it."""
        return self.collections is not None and name in _declined.get(self.collections, ())

    def record(self, present: frozenset[str]) -> None:
        """What a `setup()` left on the collections, for the savers of the process."""
        if self.key is not None:
            with _set_up_lock:
                before = _set_up.get(self.key, (frozenset(), self.reads))[0]
                _set_up[self.key] = (before | present, dataclasses.replace(self.reads))
                _set_up.move_to_end(self.key)
                while len(_set_up) > _SET_UP_SIZE:
                    _set_up.popitem(last=False)

    def finished(self) -> None:
        """`setup()` succeeded: this saver runs without another automatic setup."""
        self.done = True


# What the setups of this process left (`SetupState.key` -> index names present or declined,
# and `reads`), least recently used forgotten first; and the indexes declined per collections.
_set_up: OrderedDict[Hashable, tuple[frozenset[str], ops.WritesReads]] = OrderedDict()
_declined: dict[Hashable, frozenset[str]] = {}
_set_up_lock = threading.Lock()
_SET_UP_SIZE = 1024


@dataclasses.dataclass(eq=False)
class Background:
    """What a saver runs in the background (`keep_last` trims, `refresh_ttl_on_read`'s
    moves), shared with its `with_allowlist` copies so `settle()` and `close()` wait for
    their work too: `tasks`, the async saver's in flight (the loop holds tasks weakly);
    `executor`, the sync saver's worker thread, made on first use under `lock`.
    """

    tasks: set[asyncio.Task[None]] = dataclasses.field(default_factory=set)
    executor: ThreadPoolExecutor | None = None
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


class _SaverContextManagerBase:
    """What `from_conn_string` returns: a context manager that opens a client and yields
    the saver. Used as the saver itself (without `with`), it says how to open it."""

    def __init__(self, opened: Any, saver: str) -> None:
        self._opened = opened
        self._saver = saver

    def __getattr__(self, name: str) -> NoReturn:
        if name.startswith("_"):  # protocols probed by copy, pickle, inspect, ...
            raise AttributeError(name)
        opening = "async with" if isinstance(self, AsyncSaverContextManager) else "with"
        raise AttributeError(
            f"{self._saver}.from_conn_string(...) returns a context manager that opens a "
            f"client and yields the saver, not the saver (asked for {name!r}): write "
            f"`{opening} {self._saver}.from_conn_string(...) as saver:` and use `saver` "
            "inside that block (graph = builder.compile(checkpointer=saver))"
        )


class SaverContextManager(_SaverContextManagerBase, AbstractContextManager[Any]):
    def __enter__(self) -> Any:
        return self._opened.__enter__()

    def __exit__(self, *exc_info: Any) -> Any:
        return self._opened.__exit__(*exc_info)


class AsyncSaverContextManager(_SaverContextManagerBase, AbstractAsyncContextManager[Any]):
    async def __aenter__(self) -> Any:
        return await self._opened.__aenter__()

    async def __aexit__(self, *exc_info: Any) -> Any:
        return await self._opened.__aexit__(*exc_info)


class MongoDBSaverBase(BaseCheckpointSaver[int], Generic[ClientT, OpenedT]):
    """What both savers share: their arguments, `from_conn_string` and their collections.

    Subclasses only run plans on a driver. The constructor does no I/O. Its positional
    order is the official `langgraph-checkpoint-mongodb` saver's (`client, db_name,
    checkpoint_collection_name, writes_collection_name, ttl`); the other arguments are
    keyword-only. [Options](https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/options/)
    has them in one table, with links to what each one changes.

    A call that the server or the network fails raises PyMongo's error
    (`pymongo.errors.PyMongoError`); pass `timeoutMS` so that a stalled server raises
    instead of hanging: see [timeouts](https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/operations/#timeouts).

    Args:
        client: `MongoDBSaver`: a `pymongo.MongoClient`; `AsyncMongoDBSaver`: a
            `pymongo.AsyncMongoClient` or Motor's `AsyncIOMotorClient` (or a subclass of
            one; the in-process stand-ins of mongomock and mongomock-motor are accepted
            too). A client of the other kind raises `TypeError`. The saver never closes
            a client passed in: it is yours, and often shared.
        db_name: the database holding both collections.
        checkpoint_collection_name: one document per checkpoint.
        writes_collection_name: one document per pending write.
        ttl: seconds or a `timedelta`, from 1 to 2147483647 seconds (MongoDB's largest
            TTL); a thread expires as a whole after that long without a write. `None`:
            threads never expire.
        serde: the serializer of checkpoints, writes and metadata (LangGraph's default if
            `None`), for example an `EncryptedSerializer`.
        compression: `"zstd"` (or `"zlib"`) to compress stored values of 1 KiB or more.
        targeted_joins: join pending writes with a `thread_id` match (MongoDB 5.0+), so
            reads target one shard of a sharded `checkpoint_writes`; `False` for services
            without MongoDB 5.0's `$lookup` (Azure Cosmos DB for MongoDB).
        cache_max_bytes: the bound, in bytes of memory, of the cache of channel values this
            process recently wrote or read (it spares `put` a read of the parent); 0 turns
            it off. See
            [the value cache](https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/reliability/#the-value-cache-and-its-bound)
            for what it counts and how to size it.
        keep_last: each namespace of a thread keeps at least its `keep_last` newest
            checkpoints (and the ancestors their `DeltaChannel`s rebuild from), and
            stores at most `max(keep_last, 10)` more plus one run's (and those
            ancestors): a run whose first read finds more trims the namespace in the
            background after its first `put` (see
            [retention](https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/retention/)).
            `None`: threads keep every checkpoint.
        refresh_ttl_on_read: with `ttl`, a read of a thread (`get_tuple`, `list` of one
            thread) also moves its expiry stamp, at most once per `ttl / 16` and process,
            in the background: the read does not wait for it. Needs `ttl`.
        state_max_bytes: the largest checkpoint, and the largest pending write, the saver
            stores, in bytes as stored (serialized, then compressed when `compression` is
            set); at least 16 MiB. A larger one raises `CheckpointTooLargeError` and nothing
            is written. What does not fit one MongoDB document goes to
            [chunk documents](https://langgraph-checkpoint-mongo.github.io/langgraph-checkpoint-mongo/stored-format/#chunk-documents-values-too-large-for-one-document);
            this bound keeps a runaway state from filling the database and the process's
            memory.
        state_warn_bytes: the size, in bytes as stored, from which a `put` logs a
            WARNING (once per thread and process) naming the thread, namespace and
            checkpoint, its size and its largest channels: a state growing toward
            `state_max_bytes` is seen before it is refused (default 8 MiB; 0: never).

    Attributes:
        client: the client the saver was built on.
        db: the database (`client[db_name]`).
        checkpoint_collection: the collection of checkpoints (PyMongo's or Motor's
            collection object, for indexes of your own).
        writes_collection: the collection of pending writes.
        checkpoint_collection_name: its name, as given.
        writes_collection_name: its name, as given.
        ttl: `ttl` as a `timedelta`, or `None`.
        compression: `compression`, as given.
        serde: the serializer (LangGraph's `JsonPlusSerializer` unless one was given).

    Raises:
        TypeError: `client` is not of the kind the saver takes, or an option has the
            wrong type.
        ValueError: an option has a wrong value (equal collection names, a `ttl` under
            one second or over MongoDB's largest, an unknown `compression`, ...).
    """

    # Whether the saver takes an asynchronous client (see `_drivers.require_client`).
    asynchronous: ClassVar[bool]
    # The client `from_conn_string` opened for this saver: the only one `close()` closes.
    _owned_client: ClientT | None = None

    def __new__(cls: type[SaverT], *args: Any, **kwargs: Any) -> SaverT:
        """Refuse arguments the constructor does not take, naming the saver called, not
        this base class (a subclass's own constructor is left to it; `copy.copy` passes none)."""
        if (args or kwargs) and cls.__init__ is MongoDBSaverBase.__init__:
            try:
                _SIGNATURE.bind(*args, **kwargs)
            except TypeError as error:
                raise _constructor_error(cls.__name__, args, kwargs, error) from None
        return object.__new__(cls)

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
        keep_last: int | None = None,
        refresh_ttl_on_read: bool = False,
        state_max_bytes: int = DEFAULT_STATE_MAX_BYTES,
        state_warn_bytes: int = DEFAULT_STATE_WARN_BYTES,
    ) -> None:
        require_client(client, asynchronous=self.asynchronous)
        super().__init__(serde=_options.serde(serde))
        # Each option is checked by `_options`, as the Agent Server and the CLI check it.
        self.compression = _options.compression(compression)
        ttl_delta = _options.ttl(ttl)
        self.keep_last = _options.keep_last(keep_last)
        self.refresh_ttl_on_read = _options.refresh_ttl_on_read(refresh_ttl_on_read, ttl_delta)
        self.ttl = ttl_delta
        _options.db_name(db_name)
        _options.collection_names(checkpoint_collection_name, writes_collection_name)
        _options.targeted_joins(targeted_joins)
        cache_bound = _options.cache_max_bytes(cache_max_bytes)
        identify(client)
        self.client = client
        self.db = client[db_name]  # type: ignore[index]
        self.checkpoint_collection_name = checkpoint_collection_name
        self.writes_collection_name = writes_collection_name
        self.checkpoint_collection = self.db[checkpoint_collection_name]
        self.writes_collection = self.db[writes_collection_name]
        # What the process remembers of these collections, beyond this saver object.
        collections = deployment(client)
        if collections is not None:
            collections = (collections, db_name, checkpoint_collection_name, writes_collection_name)
        # Shared with `with_allowlist` copies, except the codec (see `with_allowlist`).
        self.storage = ops.Storage(
            codec=codec(self.serde, self.compression),
            join=WritesJoin(writes_collection_name, by_thread=targeted_joins),
            expiry=(
                ThreadExpiry(ttl_delta, thread_moves(collections))
                if ttl_delta is not None
                else None
            ),
            recent=RecentValues(cache_bound),
            keep_last=self.keep_last,
            count=(
                NamespaceCount(checkpoint_collection_name, ops.count_bound(self.keep_last))
                if self.keep_last is not None and targeted_joins
                else None
            ),
            refresh_ttl_on_read=self.refresh_ttl_on_read,
            max_bytes=_options.state_max_bytes(state_max_bytes),
            warn_bytes=_options.state_warn_bytes(state_warn_bytes),
        )
        setup_key = None
        if collections is not None:
            seconds = self.storage.expiry.seconds if self.storage.expiry else None
            setup_key = (collections, targeted_joins, seconds)
        self._setup_state: SetupState[Any] = SetupState(
            asyncio.Lock() if self.asynchronous else threading.Lock(),
            setup_key,
            collections,
            ops.index_names(self.storage),
            reads=self.storage.reads,
        )
        self._background = Background()

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
        keep_last: int | None = None,
        refresh_ttl_on_read: bool = False,
        state_max_bytes: int = DEFAULT_STATE_MAX_BYTES,
        state_warn_bytes: int = DEFAULT_STATE_WARN_BYTES,
        **client_kwargs: Any,
    ) -> OpenedT:
        """A saver on a client of its own: `with MongoDBSaver.from_conn_string(...) as
        saver:` or `async with AsyncMongoDBSaver.from_conn_string(...) as saver:`.

        On entry it opens a `pymongo.MongoClient` (`AsyncMongoClient` for `AsyncMongoDBSaver`),
        builds the saver on it and runs `setup()` unless this process set the same collections up
        before; on exit it closes that client. Every other parameter is the constructor's, in
        the official `langgraph-checkpoint-mongodb` saver's positional order.

        Args:
            conn_string: a MongoDB connection string (`mongodb://...` or
                `mongodb+srv://...`), as `pymongo.MongoClient` takes it.
            **client_kwargs: PyMongo client options, passed to the client
                (`timeoutMS`, `serverSelectionTimeoutMS`, TLS options, `w`, `driver`, ...).

        Returns:
            A context manager (`async with` for `AsyncMongoDBSaver`, `with` for
            `MongoDBSaver`) that yields the saver, set up.

        Raises:
            TypeError: a keyword that is neither a saver parameter nor a PyMongo client
                option (a misspelt `db_nmae`), naming the saver's parameters; on entry,
                what the constructor raises.
            ValueError: on entry, what the constructor and `setup()` raise.
            pymongo.errors.PyMongoError: on entry, the server could not be reached or
                refused `setup()`.
        """
        unknown = [name for name in client_kwargs if name.lower() not in _CLIENT_KEYWORDS]
        if unknown:
            raise _unknown_options(cls, unknown)
        opened = cls._connect(
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
                keep_last=keep_last,
                refresh_ttl_on_read=refresh_ttl_on_read,
                state_max_bytes=state_max_bytes,
                state_warn_bytes=state_warn_bytes,
            ),
        )
        opener = AsyncSaverContextManager if cls.asynchronous else SaverContextManager
        return cast(OpenedT, opener(opened, cls.__name__))

    if TYPE_CHECKING:
        # Each saver's: `from_conn_string`'s context manager (open a client, `build` the saver
        # on it, which owns it, set it up; close it on exit), and `close`, `aclose`.
        @classmethod
        def _connect(
            cls, conn_string: str, client_kwargs: dict[str, Any], build: Callable[[Any], Any]
        ) -> OpenedT: ...
        def close(self) -> object: ...
        async def aclose(self) -> None: ...

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
        """The version a channel gets when it changes (LangGraph calls it; you do not).

        Ints, as the base class counts; a thread whose versions are strings (copied from
        `InMemorySaver`, `SqliteSaver` or `PostgresSaver`: `"<counter:032>.<random>"`) keeps
        that form, since LangGraph compares a thread's versions with each other. (`Any`:
        the base class's version type is one of int, float or str, not a union.)

        Args:
            current: the channel's current version, `None` for a new channel.
            channel: unused (LangGraph passes `None`).
        """
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
        """A shallow copy of the saver whose serializer also restores more types.

        LangGraph calls it with the types a graph's schema names. The base class swaps
        `serde` on the copy; its codec is built on that serializer, while the client,
        collections, expiry and value cache stay shared.

        Args:
            extra_allowlist: `(module, name)` pairs of the types to allow too.

        Returns:
            The copy, or the saver itself when its serializer stays the same (one that
            is not a `JsonPlusSerializer`).
        """
        clone = super().with_allowlist(extra_allowlist)
        if clone is not self and isinstance(clone, MongoDBSaverBase):
            clone.storage = dataclasses.replace(
                self.storage, codec=codec(clone.serde, self.compression)
            )
        return clone

    def _setup_plan(self, create_indexes: bool, skip_indexes: Collection[str]) -> Plan[None]:
        """`ops.setup`, remembered for the process (see `SetupState`): a refused index that
        a `setup()` of this process declined is left out (logged) instead of failing."""
        names = {
            Target.CHECKPOINTS: self.checkpoint_collection_name,
            Target.WRITES: self.writes_collection_name,
        }
        state = self._setup_state
        skip = set(skip_indexes)
        left_out: frozenset[str] = frozenset()
        while True:
            try:
                present = yield from ops.setup(self.storage, names, create_indexes, skip)
                break
            except IndexCreationError as refused:
                # The saver's indexes as the setup's first command found the server.
                needs = ops.index_names(self.storage)
                if refused.unauthorized:  # the user may create none: all were declined?
                    gone = needs if all(map(state.tolerates, needs)) else None
                else:
                    name = str(refused.index.get("name"))
                    gone = frozenset({name}) if state.tolerates(name) else None
                if gone is None or gone <= skip:
                    raise
                logger.warning(
                    "%s; going on without it: a setup() of this process was told not to create it",
                    refused,
                )
                left_out |= gone
                skip |= gone
        state.declined(ops.index_names(self.storage) if not create_indexes else skip_indexes)
        state.record(present | left_out)


# The constructor's parameters after `self`: positional (the official saver's order),
# then keyword-only.
_PARAMETERS = list(inspect.signature(MongoDBSaverBase.__init__).parameters.values())[1:]
_POSITIONAL = [p.name for p in _PARAMETERS if p.kind is p.POSITIONAL_OR_KEYWORD]
_KEYWORD_ONLY = [p.name for p in _PARAMETERS if p.kind is p.KEYWORD_ONLY]
_SIGNATURE = inspect.Signature(_PARAMETERS)
# What `inspect.signature(MongoDBSaver)` shows (tools, docs): the constructor's, not the
# `(*args, **kwargs)` of the `__new__` that checks them.
MongoDBSaverBase.__signature__ = _SIGNATURE  # type: ignore[attr-defined]


def _constructor_error(
    saver: str, args: tuple[Any, ...], kwargs: dict[str, Any], error: TypeError
) -> TypeError:
    if len(args) > len(_POSITIONAL):
        return TypeError(
            f"{saver}() takes at most {len(_POSITIONAL)} positional arguments "
            f"({', '.join(_POSITIONAL)}) but {len(args)} were given; the others are "
            f"keyword-only: {', '.join(name + '=...' for name in _KEYWORD_ONLY)} (the "
            "official saver's sixth positional argument is serde=... here)"
        )
    own = [p.name for p in _PARAMETERS]
    unknown = [name for name in kwargs if name not in own]
    if unknown:
        return TypeError(
            f"{saver}() got unknown keyword argument(s) "
            f"{', '.join(_hint(name, own) for name in unknown)}; its parameters are "
            f"{', '.join(own)}. Client options (timeoutMS, ...) go to the client you pass "
            "in, or to from_conn_string()"
        )
    return TypeError(f"{saver}(): {error}")


def background_done(operation: str, done: asyncio.Future[None] | Future[None]) -> None:
    """A background plan ended: a failure is logged, not raised, since no caller waits for
    it; the next run trims again, and a stamp move's claim is released."""
    if not done.cancelled() and (error := done.exception()) is not None:
        logger.warning("%s in the background failed (tried again later)", operation, exc_info=error)


# The keywords a PyMongo client takes, lower-cased as it validates them: its options
# (`pymongo.common.VALIDATORS`) and its constructor's named parameters.
_CLIENT_KEYWORDS = frozenset(VALIDATORS) | frozenset(
    name.lower()
    for name, parameter in inspect.signature(MongoClient).parameters.items()
    if parameter.kind is not parameter.VAR_KEYWORD
)


def _unknown_options(saver: type[MongoDBSaverBase[Any, Any]], unknown: list[str]) -> TypeError:
    parameters = inspect.signature(saver.from_conn_string).parameters.values()
    own = [p.name for p in parameters if p.name != "conn_string" and p.kind is not p.VAR_KEYWORD]
    hints = [_hint(name, own) for name in unknown]
    return TypeError(
        f"{saver.__name__}.from_conn_string() got unknown keyword argument(s) "
        f"{', '.join(hints)}: neither a parameter of the saver ({', '.join(own)}) nor a "
        "PyMongo client option (timeoutMS, serverSelectionTimeoutMS, tls, w, ...)"
    )


def _hint(unknown: str, own: list[str]) -> str:
    """An unknown keyword, with the closest saver parameter, or the PyMongo option it
    misses the unit of (`timeout` for `timeoutMS`)."""
    if (unknown + "ms").lower() in _CLIENT_KEYWORDS:
        return f"{unknown!r} (did you mean {unknown + 'MS'!r}? PyMongo's timeouts are milliseconds)"
    if match := difflib.get_close_matches(unknown, own, n=1):
        return f"{unknown!r} (did you mean {match[0]!r}?)"
    return repr(unknown)


def command_collection(saver: MongoDBSaverBase[Any, Any], command: Command) -> Any:
    """The collection (or database) of `saver` that `command` runs on, for plans run by
    `_executors` that also wait on other I/O (copying threads in from another saver)."""
    return saver._collection(command)
