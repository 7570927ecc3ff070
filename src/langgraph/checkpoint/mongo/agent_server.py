"""A checkpointer for LangGraph's Agent Server (`langgraph dev`, `langgraph up`, LangSmith
deployments), configured from environment variables.

The server loads it from `langgraph.json`, by module path (the loader splits it on its last
`.`, so `module:name` is not found):

```json
"checkpointer": {"path": "langgraph.checkpoint.mongo.agent_server.checkpointer"}
```

or from a file of your project that imports it, as `examples/agent_server/` does
(`"./checkpointer.py:checkpointer"`, resolved against the directory `langgraph dev` runs
in). It enters it once at startup, calls only the saver's async methods, and exits it at
shutdown.

Environment variables (a bad one raises a `ValueError` naming it, before any I/O):

- `MONGODB_URI` (required): the connection string (`mongodb+srv://...` for Atlas); its
  options apply, `serverSelectionTimeoutMS` among them (how long startup waits for an
  unreachable server, 30 s by default);
- `MONGODB_DB_NAME`: the database (default `checkpointing_db`);
- `MONGODB_CHECKPOINT_COLLECTION`, `MONGODB_WRITES_COLLECTION`: collection names
  (default `checkpoints`, `checkpoint_writes`), two different ones;
- `MONGODB_TTL_SECONDS`: whole-thread expiry after that long without a write, from 1 to
  2147483647 seconds (default: none);
- `MONGODB_KEEP_LAST`: each thread keeps that many newest checkpoints per namespace,
  trimmed as it is written (the saver's `keep_last`; default: all);
- `MONGODB_COMPRESSION`: `zstd` (recommended) or `zlib` (default: none);
- `MONGODB_TARGETED_JOINS`: `false` for services without MongoDB 5.0's `$lookup`, such as
  Azure Cosmos DB for MongoDB (default `true`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from typing import Any

from pymongo import AsyncMongoClient
from pymongo.errors import ConfigurationError, ServerSelectionTimeoutError

from langgraph.checkpoint.mongo._base import (
    DEFAULT_CHECKPOINT_COLLECTION,
    DEFAULT_DB_NAME,
    DEFAULT_WRITES_COLLECTION,
)
from langgraph.checkpoint.mongo._codec import COMPRESSIONS, Compression, check_compression
from langgraph.checkpoint.mongo._drivers import DRIVER_INFO, close_client
from langgraph.checkpoint.mongo.aio import AsyncMongoDBSaver

_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}
# The largest `expireAfterSeconds` MongoDB accepts for a TTL index (a 32-bit int); above it
# `setup()` would fail on the server, after the client connected.
_MAX_TTL_SECONDS = 2**31 - 1
# MongoDB's database names: under 64 bytes, none of these characters (PyMongo refuses the
# same set when the client is indexed, a `pymongo.errors.InvalidName` naming no variable).
_MAX_DB_NAME_BYTES = 63
_DB_NAME_FORBIDDEN = '/\\. "$\x00'
# The password of `scheme://user:password@hosts` (up to the last `@` before the options,
# or of the whole URI when a malformed one has none there), and options that carry secrets.
_URI_PASSWORD = re.compile(r"^([A-Za-z0-9+.-]*://[^:@/?]*:)(?:[^?]*|.*)@")
_URI_SECRET_OPTIONS = re.compile(
    r"((?:^|[?&])(?:tlsCertificateKeyFilePassword|authMechanismProperties)=)[^&]*",
    re.IGNORECASE,
)


def redact(uri: str) -> str:
    """`uri` with its password and secret-bearing options replaced by `***`, for messages
    and `repr`: the URI is the one secret the server's logs must not show."""
    shown = _URI_PASSWORD.sub(r"\1***@", uri, count=1)
    return _URI_SECRET_OPTIONS.sub(r"\1***", shown)


def _ttl(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(
            f"MONGODB_TTL_SECONDS must be a number of seconds, got {value!r}"
        ) from None
    if not math.isfinite(seconds) or not 1 <= seconds <= _MAX_TTL_SECONDS:
        raise ValueError(
            f"MONGODB_TTL_SECONDS must be from 1 to {_MAX_TTL_SECONDS} seconds (MongoDB's "
            f"largest TTL), got {value!r}"
        )
    return seconds


def _keep_last(value: str | None) -> int | None:
    if not value:
        return None
    if not value.strip().isdigit() or int(value) < 1:
        raise ValueError(
            f"MONGODB_KEEP_LAST must be a whole number of checkpoints, 1 or more, got {value!r}"
        )
    return int(value)


def _db_name(value: str) -> str:
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > _MAX_DB_NAME_BYTES or any(c in _DB_NAME_FORBIDDEN for c in value):
        raise ValueError(
            f"MONGODB_DB_NAME must be a MongoDB database name (at most {_MAX_DB_NAME_BYTES} "
            f"bytes, none of {_DB_NAME_FORBIDDEN!r}), got {value!r}"
        )
    return value


def _collection_name(value: str, variable: str) -> str:
    if (
        "$" in value
        or "\x00" in value
        or ".." in value
        or value.startswith((".", "system."))
        or value.endswith(".")
    ):
        raise ValueError(
            f"{variable} must be a MongoDB collection name (no '$', null character or '..', "
            f"not starting with 'system.', not starting or ending with '.'), got {value!r}"
        )
    return value


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
    """What the factory builds the saver from; `from_env` reads the variables above.

    Its `repr` shows the URI without its password.
    """

    uri: str | None = None
    db_name: str = DEFAULT_DB_NAME
    checkpoint_collection_name: str = DEFAULT_CHECKPOINT_COLLECTION
    writes_collection_name: str = DEFAULT_WRITES_COLLECTION
    ttl: float | None = None
    compression: Compression | None = None
    targeted_joins: bool = True
    keep_last: int | None = None

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.uri is not None:
            shown["uri"] = redact(self.uri)
        return f"Settings({', '.join(f'{name}={value!r}' for name, value in shown.items())})"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings in `environ` (`os.environ` by default); a bad value raises
        `ValueError` naming its variable, so the server stops at startup, not mid-run."""
        env = os.environ if environ is None else environ
        checkpoints = _collection_name(
            env.get("MONGODB_CHECKPOINT_COLLECTION") or DEFAULT_CHECKPOINT_COLLECTION,
            "MONGODB_CHECKPOINT_COLLECTION",
        )
        writes = _collection_name(
            env.get("MONGODB_WRITES_COLLECTION") or DEFAULT_WRITES_COLLECTION,
            "MONGODB_WRITES_COLLECTION",
        )
        if checkpoints == writes:
            raise ValueError(
                "MONGODB_CHECKPOINT_COLLECTION and MONGODB_WRITES_COLLECTION must name two "
                f"different collections, both are {checkpoints!r} (a variable left unset "
                "takes its default)"
            )
        return cls(
            uri=env.get("MONGODB_URI") or None,
            db_name=_db_name(env.get("MONGODB_DB_NAME") or DEFAULT_DB_NAME),
            checkpoint_collection_name=checkpoints,
            writes_collection_name=writes,
            ttl=_ttl(env.get("MONGODB_TTL_SECONDS")),
            compression=_compression(env.get("MONGODB_COMPRESSION")),
            targeted_joins=_flag(env.get("MONGODB_TARGETED_JOINS"), "MONGODB_TARGETED_JOINS", True),
            keep_last=_keep_last(env.get("MONGODB_KEEP_LAST")),
        )


def _client(uri: str | None) -> AsyncMongoClient[Any]:
    """A client for `uri`; it parses the URI here and connects only on first use."""
    if uri is None:
        raise ValueError(
            "MONGODB_URI is not set: the Agent Server's MongoDB checkpointer needs the "
            "connection string of your MongoDB (for example mongodb+srv://... for Atlas)"
        )
    try:
        return AsyncMongoClient(uri, driver=DRIVER_INFO)
    except (ConfigurationError, ValueError) as error:  # InvalidURI, bad options, ports
        raise ValueError(f"MONGODB_URI {redact(uri)!r} is not valid: {error}") from None


@asynccontextmanager
async def checkpointer(
    settings: Settings | None = None, *, client: Any = None
) -> AsyncIterator[AsyncMongoDBSaver]:
    """A set-up `AsyncMongoDBSaver` for the server's lifetime; its client closes on exit.

    The server calls it without arguments: the settings come from the environment.
    `client` (an `AsyncMongoClient` or Motor client) is used instead of one made from
    `MONGODB_URI`, and closed on exit too. A server that cannot be reached within the URI's
    `serverSelectionTimeoutMS` raises `ServerSelectionTimeoutError` naming `MONGODB_URI`
    (without its password).
    """
    settings = Settings.from_env() if settings is None else settings
    if client is None:
        client = _client(settings.uri)
    try:
        saver = AsyncMongoDBSaver(
            client,
            settings.db_name,
            settings.checkpoint_collection_name,
            settings.writes_collection_name,
            compression=settings.compression,
            ttl=settings.ttl,
            targeted_joins=settings.targeted_joins,
            keep_last=settings.keep_last,
        )
        try:
            await saver.setup()
        except ServerSelectionTimeoutError as error:
            where = f"MONGODB_URI {redact(settings.uri)!r}" if settings.uri else "the client"
            raise ServerSelectionTimeoutError(
                f"no MongoDB server of {where} could be reached at startup (the URI's "
                f"serverSelectionTimeoutMS sets how long setup() waits): {error}",
                error.details,
            ) from error
        yield saver
    finally:
        await close_client(client)
