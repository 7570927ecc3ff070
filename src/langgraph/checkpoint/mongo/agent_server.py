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

Environment variables, each with its default, range and meaning on the docs' Agent Server
page (a bad one raises a `ValueError` naming it, before any I/O): `MONGODB_URI` (required;
its options apply, `serverSelectionTimeoutMS` among them: how long startup waits for an
unreachable server), `MONGODB_DB_NAME`, `MONGODB_CHECKPOINT_COLLECTION`,
`MONGODB_WRITES_COLLECTION`, and the saver's options: `MONGODB_TTL_SECONDS`,
`MONGODB_KEEP_LAST`, `MONGODB_REFRESH_TTL_ON_READ`, `MONGODB_STATE_MAX_BYTES`,
`MONGODB_STATE_WARN_BYTES`, `MONGODB_CACHE_MAX_BYTES`, `MONGODB_COMPRESSION`,
`MONGODB_TARGETED_JOINS` and `MONGODB_ALLOWED_MSGPACK_MODULES` (the types of your state the
serializer may rebuild, `module:Name` entries separated by commas).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pymongo import AsyncMongoClient
from pymongo.errors import ConfigurationError, OperationFailure, ServerSelectionTimeoutError

from langgraph.checkpoint.mongo import _options
from langgraph.checkpoint.mongo._base import (
    DEFAULT_CHECKPOINT_COLLECTION,
    DEFAULT_DB_NAME,
    DEFAULT_WRITES_COLLECTION,
)
from langgraph.checkpoint.mongo._channel_values import DEFAULT_CACHE_MAX_BYTES
from langgraph.checkpoint.mongo._codec import Compression
from langgraph.checkpoint.mongo._documents import DEFAULT_STATE_MAX_BYTES
from langgraph.checkpoint.mongo._drivers import DRIVER_INFO, close_client
from langgraph.checkpoint.mongo._options import AllowedTypes, redact_uri
from langgraph.checkpoint.mongo._sizes import DEFAULT_STATE_WARN_BYTES
from langgraph.checkpoint.mongo.aio import AsyncMongoDBSaver
from langgraph.checkpoint.mongo.errors import AUTHENTICATION_FAILED, server_message

T = TypeVar("T")


def _variable(env: Mapping[str, str], name: str, parse: Callable[[str, str], T], default: T) -> T:
    """Variable `name` of `env` parsed (and checked) by `parse`; `default` if unset or empty."""
    text = env.get(name)
    return parse(text, name) if text else default


def _ttl_seconds(text: str, variable: str) -> float:
    seconds = _options.parse_seconds(text, variable)
    _options.ttl(seconds, variable)
    return seconds


def _int(check: Callable[[int, str], T]) -> Callable[[str, str], T]:
    """A variable read as an integer, then checked as the saver checks that option."""
    return lambda text, variable: check(_options.parse_int(text, variable), variable)


# The other settings, each read from one variable by its parser (the saver's own check),
# in this order; unset or empty, the field's default.
_VARIABLES: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "db_name": ("MONGODB_DB_NAME", _options.db_name),
    "compression": ("MONGODB_COMPRESSION", _options.parse_compression),
    "targeted_joins": ("MONGODB_TARGETED_JOINS", _options.parse_bool),
    "allowed_msgpack_modules": ("MONGODB_ALLOWED_MSGPACK_MODULES", _options.parse_msgpack_modules),
    "keep_last": ("MONGODB_KEEP_LAST", _int(_options.keep_last)),
    "state_max_bytes": ("MONGODB_STATE_MAX_BYTES", _int(_options.state_max_bytes)),
    "cache_max_bytes": ("MONGODB_CACHE_MAX_BYTES", _int(_options.cache_max_bytes)),
    "state_warn_bytes": ("MONGODB_STATE_WARN_BYTES", _int(_options.state_warn_bytes)),
}


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
    allowed_msgpack_modules: AllowedTypes | None = None
    keep_last: int | None = None
    refresh_ttl_on_read: bool = False
    state_max_bytes: int = DEFAULT_STATE_MAX_BYTES
    cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES
    state_warn_bytes: int = DEFAULT_STATE_WARN_BYTES

    def __repr__(self) -> str:
        shown = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.uri is not None:
            shown["uri"] = redact_uri(self.uri)
        return f"Settings({', '.join(f'{name}={value!r}' for name, value in shown.items())})"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings in `environ` (`os.environ` by default); a bad value raises
        `ValueError` naming its variable, so the server stops at startup, not mid-run."""
        env = os.environ if environ is None else environ
        checkpoints, writes = _options.collection_names(
            env.get("MONGODB_CHECKPOINT_COLLECTION") or DEFAULT_CHECKPOINT_COLLECTION,
            env.get("MONGODB_WRITES_COLLECTION") or DEFAULT_WRITES_COLLECTION,
            ("MONGODB_CHECKPOINT_COLLECTION", "MONGODB_WRITES_COLLECTION"),
        )
        ttl = _variable(env, "MONGODB_TTL_SECONDS", _ttl_seconds, None)
        refresh_ttl_on_read = _options.refresh_ttl_on_read(
            _variable(env, "MONGODB_REFRESH_TTL_ON_READ", _options.parse_bool, False),
            ttl,
            "MONGODB_REFRESH_TTL_ON_READ",
            "MONGODB_TTL_SECONDS",
        )
        default = cls()
        return cls(
            uri=env.get("MONGODB_URI") or None,
            checkpoint_collection_name=checkpoints,
            writes_collection_name=writes,
            ttl=ttl,
            refresh_ttl_on_read=refresh_ttl_on_read,
            **{
                name: _variable(env, variable, parse, getattr(default, name))
                for name, (variable, parse) in _VARIABLES.items()
            },
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
        raise ValueError(f"MONGODB_URI {redact_uri(uri)!r} is not valid: {error}") from None


def _serializer(settings: Settings) -> JsonPlusSerializer | None:
    """LangGraph's serializer, strict with the allowed types when they are set; else `None`
    (the saver's default: LangGraph's, strict only with `LANGGRAPH_STRICT_MSGPACK=true`)."""
    if settings.allowed_msgpack_modules is None:
        return None
    return JsonPlusSerializer(allowed_msgpack_modules=settings.allowed_msgpack_modules)


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
    saver: AsyncMongoDBSaver | None = None
    try:
        saver = AsyncMongoDBSaver(
            client,
            settings.db_name,
            settings.checkpoint_collection_name,
            settings.writes_collection_name,
            compression=settings.compression,
            ttl=settings.ttl,
            targeted_joins=settings.targeted_joins,
            serde=_serializer(settings),
            keep_last=settings.keep_last,
            refresh_ttl_on_read=settings.refresh_ttl_on_read,
            state_max_bytes=settings.state_max_bytes,
            cache_max_bytes=settings.cache_max_bytes,
            state_warn_bytes=settings.state_warn_bytes,
        )
        where = f"MONGODB_URI {redact_uri(settings.uri)!r}" if settings.uri else "the client"
        try:
            await saver.setup()
        except ServerSelectionTimeoutError as error:
            raise ServerSelectionTimeoutError(
                f"no MongoDB server of {where} could be reached at startup (the URI's "
                f"serverSelectionTimeoutMS sets how long setup() waits): {error}",
                error.details,
            ) from error
        except OperationFailure as error:
            if error.code != AUTHENTICATION_FAILED:
                raise
            raise OperationFailure(
                f"the server of {where} refused the login ({server_message(error)}): check "
                "the user name, password and authSource in MONGODB_URI",
                error.code,
            ) from error
        yield saver
    finally:
        if saver is not None:  # its background work (keep_last trims) uses the client
            await saver.settle()
        await close_client(client)
