"""The source savers the migration tests copy from, on each backend.

- `memory`: `InMemorySaver` (string channel versions);
- `sqlite`: `SqliteSaver` on a file (string channel versions);
- `official`: `langgraph-checkpoint-mongodb`'s `MongoDBSaver` (int versions; needs Python
  3.11), copied through its collections (`fast_path=True`), on the backend's server
  through the real sync driver (on `mock`, the mongomock client under the async one);
- `official-public`: the same saver, copied through its `list`/`get_tuple` only.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from pymongo.errors import AutoReconnect

from langgraph.checkpoint.mongo import migrate
from langgraph.checkpoint.mongo.migrate import (
    acopy_threads,
    averify_threads,
    copy_threads,
    verify_threads,
)

from .backends import Backend

SOURCES = ["memory", "sqlite", "official", "official-public"]


def official_saver_class() -> Any:
    if sys.version_info < (3, 11):
        pytest.skip("langgraph-checkpoint-mongodb needs Python 3.11")
    return pytest.importorskip("langgraph.checkpoint.mongodb").MongoDBSaver


@dataclass
class Source:
    kind: str
    saver: Any
    # Keyword arguments of copy_threads/verify_threads for this source.
    options: dict[str, Any] = field(default_factory=dict)


@asynccontextmanager
async def official_client(backend: Backend) -> AsyncIterator[Any]:
    """A sync client on the backend's server (the official saver is sync only)."""
    async with backend.sync_client() as client:
        yield client


@asynccontextmanager
async def open_source(kind: str, backend: Backend, tmp_path: Path) -> AsyncIterator[Source]:
    if kind == "memory":
        yield Source(kind, InMemorySaver())
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(tmp_path / "source.db", check_same_thread=False)
        try:
            yield Source(kind, SqliteSaver(conn))
        finally:
            conn.close()
    else:
        saver_class = official_saver_class()
        db_name = f"official_{uuid.uuid4().hex[:12]}"
        async with official_client(backend) as client:
            try:
                yield Source(kind, saver_class(client, db_name), {"fast_path": kind == "official"})
            finally:
                client.drop_database(db_name)


async def copy(backend: Backend, source: Source, target: Any, **kwargs: Any) -> Any:
    """`copy_threads` on the sync backends (in a worker thread), `acopy_threads` otherwise."""
    kwargs = {**source.options, **kwargs}
    if backend.is_sync:
        return await asyncio.to_thread(copy_threads, source.saver, target, **kwargs)
    return await acopy_threads(source.saver, target, **kwargs)


async def verify(backend: Backend, source: Source, target: Any, **kwargs: Any) -> Any:
    kwargs = {**source.options, **kwargs}
    if backend.is_sync:
        return await asyncio.to_thread(verify_threads, source.saver, target, **kwargs)
    return await averify_threads(source.saver, target, **kwargs)


def fail_bulk_writes_after(monkeypatch: pytest.MonkeyPatch, allowed: int) -> list[str]:
    """Let `allowed` batch writes of a copy through (a bulk write, or an `update_one` for a
    batch of one document), then fail each as a lost connection."""
    sent: list[str] = []

    def check(command: Any) -> None:
        if command.method in ("bulk_write", "update_one"):
            if len(sent) >= allowed:
                raise AutoReconnect("injected: connection lost")
            sent.append(command.target.value)

    from langgraph.checkpoint.mongo._executors import execute_async, execute_sync

    def failing(operation: str, collection: Any, command: Any) -> Any:
        check(command)
        return execute_sync(operation, collection, command)

    async def failing_async(operation: str, collection: Any, command: Any) -> Any:
        check(command)
        return await execute_async(operation, collection, command)

    monkeypatch.setattr(migrate, "execute_sync", failing)
    monkeypatch.setattr(migrate, "execute_async", failing_async)
    return sent
