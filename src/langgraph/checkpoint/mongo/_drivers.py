"""The drivers the savers run on: which clients each saver takes, how the package names
itself to the server (`DriverInfo`), and where PyMongo's async API and Motor's differ: PyMongo
returns awaitables from `aggregate` and `close`, Motor (and mongomock-motor) a cursor and plain
values; awaiting only what is awaitable covers both.
"""

from __future__ import annotations

import inspect
import itertools
import sys
import threading
import weakref
from collections.abc import Hashable, Mapping
from typing import Any

from pymongo.driver_info import DriverInfo

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

    PyMongo's clients have `append_metadata` (4.14+); Motor wraps one as `delegate`;
    mongomock's have none. Attributes are looked up on the class: a client's `__getattr__`
    turns any name into a database.
    """
    target = getattr(client, "__dict__", {}).get("delegate", client)
    append = getattr(type(target), "append_metadata", None)
    if append is not None:
        append(target, DRIVER_INFO)


def deployment(client: Any) -> Hashable | None:
    """A key naming the deployment a client talks to, for what a process remembers of it
    beyond one saver object (that setup ran, which threads' expiry stamps it moved).

    PyMongo's clients are equal when they reach the same deployment (`eq_props`: seeds, replica
    set, SRV name), whatever their options, so a client opened per request names the one before;
    Motor wraps one as `delegate`. An in-process stand-in is named by its store (mongomock's
    `_store`) while it lives. `None`: the saver then remembers only what it did itself.
    """
    target = getattr(client, "__dict__", {}).get("delegate", client)
    eq_props = getattr(type(target), "eq_props", None)
    if eq_props is not None:
        return ("server", eq_props(target))
    store = getattr(client, "_store", None)
    if store is None:
        return None
    with _stores_lock:
        key = _live_stores.get(id(store))
        if key is None:
            key = _live_stores[id(store)] = ("in-process", next(_store_numbers))
            weakref.finalize(store, _live_stores.pop, id(store), None)
    return key


# The in-process stores `deployment` named, by `id` while they live: a store made later
# at the address of a collected one gets a new number, not the old one's name.
_live_stores: dict[int, Hashable] = {}
_store_numbers = itertools.count()
_stores_lock = threading.Lock()


# The clients each saver takes, as (module, class): PyMongo's, and those of the in-process stand-ins
# tests use (mongomock's, mongomock-motor's). Looked up among imported modules only: a client of a
# class whose module was never imported cannot exist, so Motor and the mocks stay optional.
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
        _require_fixed_mock(client, asynchronous)
        return
    other_saver, _, other = _TAKES[not asynchronous]
    got = f"{type(client).__module__}.{type(client).__qualname__}"
    hint = f"; a {got} goes with {other_saver}" if isinstance(client, _loaded(other)) else ""
    raise TypeError(f"{saver} takes {takes} (or a subclass of one), got {got}{hint}")


# The in-process stand-ins' clients (mongomock-motor's poses as Motor's by its name).
_MOCKS = (("mongomock", "MongoClient"), ("mongomock_motor", "AsyncMongoMockClient"))


def _require_fixed_mock(client: Any, asynchronous: bool) -> None:
    """Refuse a mongomock client while `testing.apply_mongomock_fixes()` has not run: bare
    mongomock lacks commands every saver sends, and would fail with a bare `NotImplementedError`."""
    mocks = [f"{m}.{n}" for m, n in _MOCKS if isinstance(client, _loaded(((m, n),)))]
    testing = sys.modules.get("langgraph.checkpoint.mongo.testing")
    if not mocks or getattr(testing, "_applied", False):
        return
    saver, maker = _TAKES[asynchronous][0], "async_client" if asynchronous else "client"
    raise TypeError(
        f"{saver} got a plain {mocks[0]}, "
        "which lacks commands the savers send (listCollections, $lookup with a pipeline): "
        f"build it with langgraph.checkpoint.mongo.testing.{maker}(), or call "
        "langgraph.checkpoint.mongo.testing.apply_mongomock_fixes() before the first saver"
    )


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def close_client(client: Any) -> None:
    await maybe_await(client.close())
