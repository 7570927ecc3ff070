"""Validated identifiers and the composite keys built from them.

Every `_id` and join key is built here and nowhere else: a MongoDB server compares
subdocuments field by field *in order*, so one builder is what keeps two keys for the
same checkpoint equal. Identifiers must be strings: a dict arriving from request data
(``{"$ne": None}``) is refused here, before it could reach a query.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypeGuard

from langchain_core.runnables import RunnableConfig

from langgraph.checkpoint.mongo._schema import CheckpointKey, Field, WriteKey


class CheckpointRef(NamedTuple):
    """Where a checkpoint lives: its thread, its namespace and (unless "latest") its id."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None

    def config(self) -> RunnableConfig:
        return {
            "configurable": {
                "thread_id": self.thread_id,
                "checkpoint_ns": self.checkpoint_ns,
                "checkpoint_id": self.checkpoint_id,
            }
        }


# The longest identifier accepted, in UTF-8 bytes: far above any real id, and low enough
# that every command repeating one (a filter, a join, a document) stays far below
# MongoDB's 16 MiB limit, so the limit is met with this error and not the driver's.
MAX_ID_BYTES = 64 * 1024

_SHORT_REPR = reprlib.Repr()
_SHORT_REPR.maxstring = _SHORT_REPR.maxother = 80


def short_repr(value: Any) -> str:
    """`repr(value)`, cut to a readable length: error messages may quote hostile input."""
    return _SHORT_REPR.repr(value)


def namespace_label(thread_id: str, checkpoint_ns: str) -> str:
    """A thread's namespace, as error messages name it."""
    return f"thread {short_repr(thread_id)}, namespace {short_repr(checkpoint_ns)}"


def checkpoint_label(checkpoint_ns: str, checkpoint_id: Any) -> str:
    """A checkpoint, as messages name it."""
    return f"checkpoint {short_repr(checkpoint_id)} (namespace {short_repr(checkpoint_ns)})"


def _plain_id(value: Any) -> TypeGuard[str]:
    """An id `require_str` accepts without looking at its bytes: an ASCII `str` (every id
    LangGraph makes) is one byte a character, so its length is its size."""
    return type(value) is str and value.isascii() and len(value) <= MAX_ID_BYTES


def require_str(value: Any, what: str) -> str:
    """A string the server can store and match: valid UTF-8 and of a sane length. `what`
    names it in an error. A `_plain_id` is answered without encoding it."""
    if _plain_id(value):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}: {short_repr(value)}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} is not valid Unicode text (a lone surrogate {value[exc.start]!r} at "
            f"index {exc.start}, as json.loads('\"\\ud800\"') yields): {short_repr(value)}"
        ) from None
    if size > MAX_ID_BYTES:
        raise ValueError(
            f"{what} is {size} bytes long in UTF-8, over the limit of {MAX_ID_BYTES}: "
            f"{short_repr(value)}"
        )
    return value


def _configurable(config: Any, what: str) -> Mapping[str, Any]:
    if type(config) is dict:  # what LangGraph passes; the ABC checks are slower
        configurable = config.get("configurable")
        if type(configurable) is dict:
            return configurable
    if not isinstance(config, Mapping):
        raise TypeError(f"{what} must be a RunnableConfig dict, got {type(config).__name__}")
    configurable = config.get("configurable")
    if not isinstance(configurable, Mapping):
        raise ValueError(
            f"{what} has no 'configurable' dict; pass {{'configurable': {{'thread_id': ...}}}}"
        )
    return configurable


def _ids(config: Any, what: str) -> tuple[str, Any, str | None]:
    """`(thread_id, raw checkpoint_ns, checkpoint_id)`; the caller decides on the namespace."""
    configurable = _configurable(config, what)
    if configurable.get("thread_id") is None:
        raise ValueError(
            f"{what}['configurable'] is missing 'thread_id': a checkpointer needs "
            "{'configurable': {'thread_id': ...}} to know which thread to use"
        )
    thread_id = require_str(configurable["thread_id"], f"{what}['configurable']['thread_id']")
    checkpoint_id = configurable.get("checkpoint_id")
    if checkpoint_id is not None:
        require_str(checkpoint_id, f"{what}['configurable']['checkpoint_id']")
    return thread_id, configurable.get("checkpoint_ns", ""), checkpoint_id or None


def ref_from_config(config: Any, *, what: str = "config") -> CheckpointRef:
    """Read thread, namespace and optional checkpoint id from a config, strictly. A config
    as LangGraph makes it (dicts, ASCII ids) takes the fast path: every write and read reads one."""
    if type(config) is dict:
        configurable = config.get("configurable")
        if type(configurable) is dict:
            thread_id = configurable.get("thread_id")
            checkpoint_ns = configurable.get("checkpoint_ns", "")
            checkpoint_id = configurable.get("checkpoint_id")
            if (
                _plain_id(thread_id)
                and _plain_id(checkpoint_ns)
                and (checkpoint_id is None or _plain_id(checkpoint_id))
            ):
                return CheckpointRef(thread_id, checkpoint_ns, checkpoint_id or None)
    thread_id, checkpoint_ns, checkpoint_id = _ids(config, what)
    require_str(checkpoint_ns, f"{what}['configurable']['checkpoint_ns']")
    return CheckpointRef(thread_id, checkpoint_ns, checkpoint_id)


def list_scope(config: Any) -> tuple[str, str | None, str | None]:
    """What a `list` config restricts to; a `None` or absent namespace means every one."""
    thread_id, checkpoint_ns, checkpoint_id = _ids(config, "config")
    if "checkpoint_ns" not in config["configurable"] or checkpoint_ns is None:
        return thread_id, None, checkpoint_id
    ns = require_str(checkpoint_ns, "config['configurable']['checkpoint_ns']")
    return thread_id, ns, checkpoint_id


def before_id_from_config(before: Any) -> str | None:
    """The exclusive upper bound of a `list(before=...)`; no id means no bound."""
    if before is None:
        return None
    checkpoint_id = _configurable(before, "before").get("checkpoint_id")
    if checkpoint_id is None:
        return None
    return require_str(checkpoint_id, "before['configurable']['checkpoint_id']") or None


def str_list(values: Any, what: str) -> list[str]:
    """A list of ids from a sequence; a bare string is refused rather than split into chars."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"{what} must be a sequence of str, got {type(values).__name__}")
    return [require_str(v, f"{what}[{i}]") for i, v in enumerate(values)]


# (thread_id, checkpoint_ns, checkpoint_id): a checkpoint key as a hashable tuple.
KeyFields = tuple[str, str, str]


def checkpoint_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> CheckpointKey:
    """`_id` of a checkpoint document, and the key its writes join on."""
    return {
        Field.THREAD_ID: thread_id,
        Field.CHECKPOINT_NS: checkpoint_ns,
        Field.CHECKPOINT_ID: checkpoint_id,
    }


def key_fields(key: CheckpointKey) -> KeyFields:
    """A checkpoint key as a hashable tuple, whatever the field order it came back in."""
    return key[Field.THREAD_ID], key[Field.CHECKPOINT_NS], key[Field.CHECKPOINT_ID]


def upsert_filter(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An upsert's filter: the `_id`, and the shard key `thread_id` for sharded clusters."""
    return {Field.ID: doc[Field.ID], Field.THREAD_ID: doc[Field.THREAD_ID]}


def write_key(checkpoint: CheckpointKey, task_id: str, idx: int) -> WriteKey:
    """`_id` of a pending-write document; `checkpoint` comes from `checkpoint_key`."""
    return {Field.CHECKPOINT: checkpoint, Field.TASK_ID: task_id, Field.IDX: idx}
