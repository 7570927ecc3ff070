"""One validator per option, shared by every way of giving it: the savers' arguments, the
Agent Server's environment variables (`agent_server.py`) and `copy-threads`' flags
(`migrate/_cli.py`). Those two only turn a string into a value (`parse_*`), then call the
same validator as the saver, so a value is accepted or refused, with the same words,
wherever it is given; each error names the option as the user spelt it (`ttl`,
`MONGODB_TTL_SECONDS`, `--ttl`).

The URI is shown the same way everywhere too: `redact_uri`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from langgraph.checkpoint.mongo._codec import COMPRESSIONS, Compression
from langgraph.checkpoint.mongo._keys import require_str

# The largest `expireAfterSeconds` MongoDB accepts for a TTL index (a 32-bit int): above
# it the server refuses the index, so `setup()` would fail after the client connected.
MAX_TTL_SECONDS = 2**31 - 1
# MongoDB's database names: under 64 bytes, none of these characters (PyMongo refuses the
# same characters when the client is indexed, with an `InvalidName` naming no option).
MAX_DB_NAME_BYTES = 63
DB_NAME_FORBIDDEN = '/\\. "$\x00'
# Types a strict serializer rebuilds: (module, class name) pairs.
AllowedTypes = tuple[tuple[str, str], ...]
# How environment variables spell a bool.
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


class _OptionError(Exception):
    """An option's bad value: `option` is its name as given, `problem` what is wrong."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option} {problem}")
        self.option = option
        self.problem = problem


class OptionTypeError(_OptionError, TypeError):
    """An option of the wrong type."""


class OptionValueError(_OptionError, ValueError):
    """An option of the right type and a wrong value."""


def _shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def ttl(value: Any, option: str = "ttl") -> timedelta | None:
    """`ttl`: seconds (an int or float) or a `timedelta`, from one second to MongoDB's
    largest TTL; `None`: threads never expire. NaN and infinities are out of range."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, timedelta)):
        raise OptionTypeError(
            option, f"must be seconds (an int or float), a timedelta or None, got {_shown(value)}"
        )
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if not 1 <= seconds <= MAX_TTL_SECONDS:  # NaN too: it compares false with everything
        raise OptionValueError(
            option,
            f"must be from 1 to {MAX_TTL_SECONDS} seconds (MongoDB's largest TTL), got {value!r}",
        )
    return value if isinstance(value, timedelta) else timedelta(seconds=seconds)


def compression(value: Any, option: str = "compression") -> Compression | None:
    """`compression`: `"zstd"`, `"zlib"` or `None`."""
    if value is not None and value not in COMPRESSIONS:
        raise OptionValueError(
            option, f"must be one of {', '.join(COMPRESSIONS)} or None, got {value!r}"
        )
    return value  # type: ignore[no-any-return]


def targeted_joins(value: Any, option: str = "targeted_joins") -> bool:
    """`targeted_joins`: a bool."""
    if not isinstance(value, bool):
        raise OptionTypeError(option, f"must be a bool, got {_shown(value)}")
    return value


def cache_max_bytes(value: Any, option: str = "cache_max_bytes") -> int:
    """`cache_max_bytes`: an int of 0 (no cache) or more bytes."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionTypeError(
            option, f"must be an int (the value cache's bound in bytes), got {_shown(value)}"
        )
    if value < 0:
        raise OptionValueError(option, f"must be 0 (no cache) or more bytes, got {value}")
    return value


def db_name(value: Any, option: str = "db_name") -> str:
    """A MongoDB database name: a str of at most 63 bytes, none of `/\\. "$` or NUL."""
    require_str(value, option)
    size = len(value.encode("utf-8"))
    if not value or size > MAX_DB_NAME_BYTES or any(c in DB_NAME_FORBIDDEN for c in value):
        raise OptionValueError(
            option,
            f"must be a MongoDB database name (1 to {MAX_DB_NAME_BYTES} bytes, none of "
            f"{DB_NAME_FORBIDDEN!r}), got {value!r}",
        )
    return value  # type: ignore[no-any-return]


def collection_name(value: Any, option: str) -> str:
    """A MongoDB collection name: not empty, no `$`, NUL or `..`, not starting with
    `system.`, not starting or ending with `.`."""
    require_str(value, option)
    if (
        not value
        or "$" in value
        or "\x00" in value
        or ".." in value
        or value.startswith((".", "system."))
        or value.endswith(".")
    ):
        raise OptionValueError(
            option,
            "must be a MongoDB collection name (not empty, no '$', null character or '..', "
            f"not starting with 'system.', not starting or ending with '.'), got {value!r}",
        )
    return value  # type: ignore[no-any-return]


def collection_names(
    checkpoints: Any,
    writes: Any,
    options: tuple[str, str] = ("checkpoint_collection_name", "writes_collection_name"),
) -> tuple[str, str]:
    """The checkpoint and writes collection names: two different collection names."""
    checkpoints = collection_name(checkpoints, options[0])
    writes = collection_name(writes, options[1])
    if checkpoints == writes:
        raise OptionValueError(
            f"{options[0]} and {options[1]}",
            f"must name two different collections, both are {checkpoints!r}",
        )
    return checkpoints, writes


def batch_size(value: Any, option: str = "batch_size") -> int:
    """`copy_threads`' `batch_size`: an int of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionTypeError(option, f"must be an int of at least 1, got {_shown(value)}")
    if value < 1:
        raise OptionValueError(option, f"must be an int of at least 1, got {value}")
    return value


def allowed_msgpack_modules(value: Any, option: str = "allowed_msgpack_modules") -> AllowedTypes:
    """The types a strict serializer rebuilds besides LangGraph's safe ones, as LangGraph's
    `JsonPlusSerializer(allowed_msgpack_modules=...)` takes them: `(module, name)` pairs,
    `module` a dotted import path and `name` a class name (what a stored value records)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise OptionTypeError(option, f"must be (module, name) pairs, got {_shown(value)}")
    pairs = []
    for entry in value:
        if not (isinstance(entry, tuple) and len(entry) == 2 and all(map(_is_str, entry))):
            raise OptionTypeError(option, f"must be (module, name) pairs, got {entry!r} in it")
        module, name = entry
        if not all(part.isidentifier() for part in module.split(".")) or not name.isidentifier():
            raise OptionValueError(
                option,
                "must name types as module:Name (for example my_agent.models:Order), got "
                + repr(f"{module}:{name}".strip(":")),
            )
        pairs.append((module, name))
    return tuple(pairs)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


# Strings to values, for environment variables and command-line flags.


def parse_number(text: str, option: str, unit: str = "seconds") -> float:
    """A number given as text (`"86400"`, `"1.5"`, `"1e3"`)."""
    try:
        return float(text)
    except ValueError:
        raise OptionValueError(option, f"must be a number of {unit}, got {text!r}") from None


def parse_int(text: str, option: str) -> int:
    """A whole number given as text."""
    try:
        return int(text)
    except ValueError:
        raise OptionValueError(option, f"must be a whole number, got {text!r}") from None


def parse_bool(text: str, option: str) -> bool:
    """`true`/`false`, `1`/`0` or `yes`/`no`, in any case."""
    value = _BOOLEANS.get(text.strip().lower())
    if value is None:
        raise OptionValueError(option, f"must be true or false, got {text!r}")
    return value


def parse_compression(text: str, option: str) -> Compression | None:
    """A compression given as text, in any case: `zstd`, `zlib`, or `none`."""
    name = text.strip().lower()
    return None if name == "none" else compression(name, option)


def parse_msgpack_modules(text: str, option: str) -> AllowedTypes:
    """Types given as text: `module:Name` entries separated by commas (spaces ignored)."""
    entries = [entry.strip() for entry in text.split(",") if entry.strip()]
    pairs = []
    for entry in entries:
        module, _, name = entry.partition(":")
        pairs.append((module.strip(), name.strip()))
    return allowed_msgpack_modules(pairs, option)


def redact_uri(uri: str) -> str:
    """`uri` as messages, logs and `repr`s show it: its scheme, hosts and database, with
    its credentials (`user:password@`) and its options (`?...`, where
    `tlsCertificateKeyFilePassword` and `authMechanismProperties` carry secrets) each
    replaced by `***`.

    A password may hold an unescaped `@` or `/`, so the credentials end at the last `@`;
    when a `?` comes before that `@`, it is not known whether the `@` belongs to the
    password or to an option, and nothing after the scheme is shown.
    """
    scheme, separator, rest = uri.partition("://")
    if not separator:  # a bare host list, as PyMongo also takes
        scheme, rest = "", uri
    credentials, at, after = rest.rpartition("@")
    if "?" in credentials:
        return f"{scheme}{separator}***"
    hosts, question, _ = after.partition("?")
    return f"{scheme}{separator}{'***@' if at else ''}{hosts}{'?***' if question else ''}"
