"""One validator per option, shared by the savers' arguments, the Agent Server's environment
variables and the command line's flags, which only parse a string (`parse_*`) first: a value is
accepted or refused with the same words wherever it is given, naming the option as the user spelt
it (`ttl`, `MONGODB_TTL_SECONDS`, `--ttl`). The URI is shown the same way everywhere: `redact_uri`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from langgraph.checkpoint.mongo._codec import COMPRESSIONS, Compression
from langgraph.checkpoint.mongo._keys import require_str
from langgraph.checkpoint.mongo._schema import MAX_DOCUMENT_SIZE

# The largest `expireAfterSeconds` MongoDB accepts for a TTL index (a 32-bit int): above
# it the server refuses the index, so `setup()` would fail after the client connected.
MAX_TTL_SECONDS = 2**31 - 1
# MongoDB's database names: under 64 bytes, none of these characters (PyMongo refuses the
# same characters when the client is indexed, with an `InvalidName` naming no option).
MAX_DB_NAME_BYTES = 63
DB_NAME_FORBIDDEN = '/\\. "$\x00'
# Types a strict serializer rebuilds: (module, class name) pairs.
AllowedTypes = tuple[tuple[str, str], ...]
# The largest int a server takes in a command (a BSON int64): `keep_last` ends up in one.
MAX_INT64 = 2**63 - 1
# How environment variables spell a bool.
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


class _OptionError(Exception):
    """An option's bad value: `option` is its name as given, `problem` what is wrong."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(f"{option} {problem}")
        self.option = option
        self.problem = problem


class OptionTypeError(_OptionError, TypeError): ...


class OptionValueError(_OptionError, ValueError): ...


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
    if value is not None and value not in COMPRESSIONS:
        raise OptionValueError(
            option, f"must be one of {', '.join(COMPRESSIONS)} or None, got {value!r}"
        )
    return value  # type: ignore[no-any-return]


def serde(value: Any, option: str = "serde") -> Any:
    """`serde`: `None` (LangGraph's `JsonPlusSerializer`), or an object with LangGraph's
    `SerializerProtocol` (`dumps_typed` and `loads_typed`) or its older untyped one
    (`dumps` and `loads`, which the base class wraps). Anything else, a name such as
    `"json"` included, would fail only at the first `put`."""
    if value is None:
        return None
    for methods in (("dumps_typed", "loads_typed"), ("dumps", "loads")):
        if all(callable(getattr(value, name, None)) for name in methods):
            return value
    raise OptionTypeError(
        option,
        "must be a serializer object with dumps_typed() and loads_typed() (LangGraph's "
        "SerializerProtocol, e.g. JsonPlusSerializer() or EncryptedSerializer), or None "
        f"for LangGraph's default, got {_shown(value)}",
    )


def targeted_joins(value: Any, option: str = "targeted_joins") -> bool:
    if not isinstance(value, bool):
        raise OptionTypeError(option, f"must be a bool, got {_shown(value)}")
    return value


def _int(value: Any, option: str, expected: str, minimum: int, at_least: str) -> int:
    """`value` if it is an int (not a bool: `True` is a mistake, not 1) of at least `minimum`, else
    the option's error, saying what it `expected` or that it must be `at_least`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionTypeError(option, f"must be {expected}, got {_shown(value)}")
    if value < minimum:
        raise OptionValueError(option, f"must be {at_least}, got {value}")
    return value


def cache_max_bytes(value: Any, option: str = "cache_max_bytes") -> int:
    expected = "an int (the value cache's bound in bytes)"
    return _int(value, option, expected, 0, "0 (no cache) or more bytes")


def prune_keep_last(value: Any, option: str = "keep_last") -> int | None:
    """`prune(keep_last=...)`: checkpoints to keep per namespace, from 0 to 2**63 - 1, or
    `None` (not a bool); every other `keep_last` is checked here too."""
    if value is None:
        return None
    count = _int(
        value, option, "an int or None", 0, "0 or more (the checkpoints kept per namespace)"
    )
    if count > MAX_INT64:
        raise OptionValueError(option, f"must be at most 2**63 - 1 (a BSON int64), got {count}")
    return count


def keep_last(value: Any, option: str = "keep_last") -> int | None:
    """The saver's `keep_last`: 1 or more (a thread goes on from its latest checkpoint)."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 1:
        raise OptionValueError(
            option,
            f"must be 1 or more (a thread goes on from its latest checkpoint), got {value}; "
            "use prune(thread_ids, keep_last=0) or delete_thread to remove a thread's "
            "checkpoints",
        )
    return prune_keep_last(value, option)


def refresh_ttl_on_read(
    value: Any,
    ttl: timedelta | float | None,
    option: str = "refresh_ttl_on_read",
    ttl_option: str = "ttl",
) -> bool:
    """`refresh_ttl_on_read`: a bool, `True` only with a `ttl` (there is a stamp to move);
    `ttl_option` is how the user spelt the ttl (`MONGODB_TTL_SECONDS`), for the message."""
    if not isinstance(value, bool):
        raise OptionTypeError(option, f"must be a bool, got {_shown(value)}")
    if value and ttl is None:
        raise OptionValueError(
            option,
            f"must be False without {ttl_option}: threads never expire, so there is no "
            f"stamp to move; set {ttl_option} too, or leave {option} False",
        )
    return value


def state_max_bytes(value: Any, option: str = "state_max_bytes") -> int:
    at_least = f"at least {MAX_DOCUMENT_SIZE} (one MongoDB document)"
    return _int(value, option, "an int (bytes)", MAX_DOCUMENT_SIZE, at_least)


def state_warn_bytes(value: Any, option: str = "state_warn_bytes") -> int:
    return _int(value, option, "an int (bytes)", 0, "0 (no warning) or more bytes")


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
    checkpoints = collection_name(checkpoints, options[0])
    writes = collection_name(writes, options[1])
    if checkpoints == writes:
        raise OptionValueError(
            f"{options[0]} and {options[1]}",
            f"must name two different collections, both are {checkpoints!r}",
        )
    return checkpoints, writes


def batch_size(value: Any, option: str = "batch_size") -> int:
    return _int(value, option, "an int of at least 1", 1, "an int of at least 1")


def allowed_msgpack_modules(
    value: Iterable[tuple[str, str]], option: str = "allowed_msgpack_modules"
) -> AllowedTypes:
    """The types a strict serializer rebuilds besides LangGraph's safe ones, as LangGraph's
    `JsonPlusSerializer(allowed_msgpack_modules=...)` takes them: `(module, name)` pairs,
    `module` a dotted import path and `name` a class name (what a stored value records)."""
    pairs = tuple(value)
    for module, name in pairs:
        if not all(part.isidentifier() for part in module.split(".")) or not name.isidentifier():
            raise OptionValueError(
                option,
                "must name types as module:Name (for example my_agent.models:Order), got "
                + repr(f"{module}:{name}".strip(":")),
            )
    return pairs


# Strings to values, for environment variables and command-line flags.


def parse_seconds(text: str, option: str) -> float:
    """A number of seconds given as text (`"86400"`, `"1.5"`, `"1e3"`)."""
    try:
        return float(text)
    except ValueError:
        raise OptionValueError(option, f"must be a number of seconds, got {text!r}") from None


def parse_int(text: str, option: str) -> int:
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
    entries = [entry.partition(":") for entry in text.split(",") if entry.strip()]
    pairs = [(module.strip(), name.strip()) for module, _, name in entries]
    return allowed_msgpack_modules(pairs, option)


def redact_uri(uri: str) -> str:
    """`uri` as messages, logs and `repr`s show it: its scheme, hosts and database, with its
    credentials (`user:password@`) and its options (`?...`, where `tlsCertificateKeyFilePassword`
    and `authMechanismProperties` carry secrets) each replaced by `***`.

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
