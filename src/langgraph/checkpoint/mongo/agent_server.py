"""A checkpointer for LangGraph's Agent Server (`langgraph dev`, `langgraph up`, LangSmith
deployments), configured from environment variables.

The server loads it from `langgraph.json`::

    "checkpointer": {"path": "langgraph.checkpoint.mongo.agent_server:checkpointer"}

(or from a file of your project that imports it, as `examples/agent_server/` does), enters
it once at startup, calls only the saver's async methods, and exits it at shutdown.

Environment variables:

- `MONGODB_URI` (required): the connection string (`mongodb+srv://...` for Atlas);
- `MONGODB_DB_NAME`: the database (default `checkpointing_db`);
- `MONGODB_CHECKPOINT_COLLECTION`, `MONGODB_WRITES_COLLECTION`: collection names
  (default `checkpoints`, `checkpoint_writes`);
- `MONGODB_TTL_SECONDS`: whole-thread expiry after that long without a write (default:
  none);
- `MONGODB_COMPRESSION`: `zstd` (recommended) or `zlib` (default: none);
- `MONGODB_TARGETED_JOINS`: `false` for services without MongoDB 5.0's `$lookup`, such as
  Azure Cosmos DB for MongoDB (default `true`).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pymongo import AsyncMongoClient

from langgraph.checkpoint.mongo._base import (
    DEFAULT_CHECKPOINT_COLLECTION,
    DEFAULT_DB_NAME,
    DEFAULT_WRITES_COLLECTION,
)
from langgraph.checkpoint.mongo._codec import COMPRESSIONS, Compression, check_compression
from langgraph.checkpoint.mongo._drivers import DRIVER_INFO, close_client
from langgraph.checkpoint.mongo.aio import AsyncMongoDBSaver

_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _ttl(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        raise ValueError(
            f"MONGODB_TTL_SECONDS must be a number of seconds, got {value!r}"
        ) from None


def _compression(value: str | None) -> Compression | None:
    if not value or value.lower() == "none":
        return None
    if value.lower() not in COMPRESSIONS:
        raise ValueError(
            f"MONGODB_COMPRESSION must be one of {', '.join(COMPRESSIONS)} or none, got {value!r}"
        )
    return check_compression(value.lower())


def _flag(value: str | None, name: str, default: bool) -> bool:
    if not value:
        return default
    if value.lower() not in _BOOLEANS:
        raise ValueError(f"{name} must be true or false, got {value!r}")
    return _BOOLEANS[value.lower()]


@dataclass(frozen=True, slots=True)
class Settings:
    """What the factory builds the saver from; `from_env` reads the variables above."""

    uri: str | None = None
    db_name: str = DEFAULT_DB_NAME
    checkpoint_collection_name: str = DEFAULT_CHECKPOINT_COLLECTION
    writes_collection_name: str = DEFAULT_WRITES_COLLECTION
    ttl: float | None = None
    compression: Compression | None = None
    targeted_joins: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings in `environ` (`os.environ` by default); a bad value raises
        `ValueError` naming its variable, so the server stops at startup, not mid-run."""
        env = os.environ if environ is None else environ
        return cls(
            uri=env.get("MONGODB_URI") or None,
            db_name=env.get("MONGODB_DB_NAME") or DEFAULT_DB_NAME,
            checkpoint_collection_name=(
                env.get("MONGODB_CHECKPOINT_COLLECTION") or DEFAULT_CHECKPOINT_COLLECTION
            ),
            writes_collection_name=(
                env.get("MONGODB_WRITES_COLLECTION") or DEFAULT_WRITES_COLLECTION
            ),
            ttl=_ttl(env.get("MONGODB_TTL_SECONDS")),
            compression=_compression(env.get("MONGODB_COMPRESSION")),
            targeted_joins=_flag(env.get("MONGODB_TARGETED_JOINS"), "MONGODB_TARGETED_JOINS", True),
        )


@asynccontextmanager
async def checkpointer(
    settings: Settings | None = None, *, client: Any = None
) -> AsyncIterator[AsyncMongoDBSaver]:
    """A set-up `AsyncMongoDBSaver` for the server's lifetime; its client closes on exit.

    The server calls it without arguments: the settings come from the environment.
    `client` (an `AsyncMongoClient` or Motor client) is used instead of one made from
    `MONGODB_URI`, and closed on exit too.
    """
    settings = Settings.from_env() if settings is None else settings
    if client is None:
        if settings.uri is None:
            raise ValueError(
                "MONGODB_URI is not set: the Agent Server's MongoDB checkpointer needs the "
                "connection string of your MongoDB (for example mongodb+srv://... for Atlas)"
            )
        client = AsyncMongoClient(settings.uri, driver=DRIVER_INFO)
    try:
        saver = AsyncMongoDBSaver(
            client,
            settings.db_name,
            settings.checkpoint_collection_name,
            settings.writes_collection_name,
            compression=settings.compression,
            ttl=settings.ttl,
            targeted_joins=settings.targeted_joins,
        )
        await saver.setup()
        yield saver
    finally:
        await close_client(client)
