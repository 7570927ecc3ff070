"""Backends every saver test runs on.

Without `MONGODB_URI`:
- `mock`: mongomock-motor in process (Motor's API shape, no driver, no network), from
  `langgraph.checkpoint.mongo.testing.async_client()` as users' tests get it;
- `wire-async`, `wire-motor`, `wire-sync`: the real drivers (`AsyncMongoClient`,
  Motor's `AsyncIOMotorClient`, `MongoClient`) over a socket to the wire server
  (`langgraph.checkpoint.mongo.testing._wire`, what `testing serve` runs),
  a loopback MongoDB wire-protocol server that executes commands on mongomock.
With `MONGODB_URI`: `async`, `motor`, `sync`, the same drivers against that server.

`SAVER_BACKENDS=mock,wire-sync` (comma-separated) narrows the set for a quick run.
On a sharded cluster every test database is sharded as the README advises (real_server.py).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from pymongo import AsyncMongoClient, MongoClient, monitoring

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, testing
from langgraph.checkpoint.mongo._drivers import maybe_await

MONGODB_URI = os.environ.get("MONGODB_URI")
ALL_BACKENDS = (
    ["async", "motor", "sync"] if MONGODB_URI else ["mock", "wire-async", "wire-motor", "wire-sync"]
)
_selected = os.environ.get("SAVER_BACKENDS")
BACKENDS = [b for b in ALL_BACKENDS if not _selected or b in _selected.split(",")]
if not BACKENDS:
    raise pytest.UsageError(f"SAVER_BACKENDS={_selected!r} selects none of {ALL_BACKENDS}")

# Connection chatter that is not an operation of the saver.
_NOT_COUNTED = {"hello", "ismaster", "isMaster", "ping", "buildInfo", "buildinfo", "endSessions"}


@dataclass
class CommandLog:
    """Commands sent to the server, as a network sees them (`getMore` included).

    On the wire backends they are read from the wire server itself; against a real
    server, from the driver's command monitoring.
    """

    _seen: list[str] = field(default_factory=list)
    _server: Any = None
    _start: int = 0

    @property
    def names(self) -> list[str]:
        if self._server is not None:
            return list(self._server.commands[self._start :])
        return list(self._seen)

    def attach(self, server: Any) -> None:
        self._server = server
        self._start = server.count()

    def reset(self) -> None:
        if self._server is not None:
            self._start = self._server.count()
        self._seen.clear()

    def count(self) -> int:
        return len(self.names)


class _Listener(monitoring.CommandListener):
    def __init__(self, log: CommandLog) -> None:
        self.log = log

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in _NOT_COUNTED:
            self.log._seen.append(event.command_name)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@dataclass
class Backend:
    name: str
    uri: str | None
    wire: Any = None  # the WireServer, on wire backends
    _mock: Any = None  # one in-process mock per test, so two savers can share a database
    _mock_sync: Any = None  # the mongomock client under `_mock`: the same data, sync API

    @property
    def is_sync(self) -> bool:
        # "wire-async" ends with "sync" too: compare the driver part whole.
        return self.name.rpartition("-")[2] == "sync"

    @asynccontextmanager
    async def client(self, log: CommandLog | None = None, **options: Any) -> AsyncIterator[Any]:
        """A client of the backend's driver; `options` (client options such as `w`) go to
        a real driver's client (the mock takes none)."""
        listeners = []
        if log is not None and self.wire is not None:
            log.attach(self.wire)
        elif log is not None:
            listeners.append(_Listener(log))
        if self.name == "mock":
            yield self._mock_clients()[0]
            return
        if self.name.endswith("motor"):
            from motor.motor_asyncio import AsyncIOMotorClient

            client: Any = AsyncIOMotorClient(self.uri, event_listeners=listeners, **options)
        elif self.is_sync:
            client = MongoClient(self.uri, event_listeners=listeners, **options)
        else:
            client = AsyncMongoClient(self.uri, event_listeners=listeners, **options)
        try:
            yield client
        finally:
            await maybe_await(client.close())

    def _mock_clients(self) -> tuple[Any, Any]:
        if self._mock is None:
            self._mock_sync = testing.client()
            self._mock = testing.async_client(mock_mongo_client=self._mock_sync)
        return self._mock, self._mock_sync

    @asynccontextmanager
    async def sync_client(self) -> AsyncIterator[Any]:
        """A client with PyMongo's sync API on the backend's server, whatever the backend's
        driver (for sync-only savers such as `langgraph-checkpoint-mongodb`'s): on `mock`,
        the mongomock client under the async one, so both see the same data."""
        if self.name == "mock":
            yield self._mock_clients()[1]
            return
        client: MongoClient[dict[str, Any]] = MongoClient(self.uri)
        try:
            yield client
        finally:
            client.close()

    @asynccontextmanager
    async def saver(
        self, log: CommandLog | None = None, *, set_up: bool = True, **kwargs: Any
    ) -> AsyncIterator[AsyncMongoDBSaver | MongoDBSaver]:
        """A set-up saver on a database of its own, dropped afterwards.

        With `db_name=` (another saver's `saver.db.name`) it opens that database
        again and leaves dropping it to the saver that created it. With `set_up=False`
        no `setup()` is called (the saver's first command runs it).
        """
        owned = "db_name" not in kwargs
        db_name = kwargs.pop("db_name", f"test_{uuid.uuid4().hex[:16]}")
        async with self.client(log) as client:
            cls = MongoDBSaver if self.is_sync else AsyncMongoDBSaver
            saver: AsyncMongoDBSaver | MongoDBSaver = cls(client, db_name, **kwargs)
            if owned and MONGODB_URI:
                # Imported here, after pytest loaded the plugin (and rewrote its asserts).
                from .real_server import deployment, shard_like_the_readme

                if deployment().topology == "sharded":
                    await shard_like_the_readme(client, saver)
            if set_up:
                await maybe_await(saver.setup())
            try:
                yield saver
            finally:
                if owned:
                    await maybe_await(client.drop_database(db_name))
