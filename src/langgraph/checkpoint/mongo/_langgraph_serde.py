"""LangGraph's serializer where this package needs more than its public API: the one module
that names `JsonPlusSerializer`'s private parts, so that a LangGraph release moving them
breaks here and nowhere else, and `tests/migration/test_langgraph_serde.py` (which checks every name
below against the installed LangGraph) says what moved.

`copy-threads` decodes a source's values exactly (`migrate/_decoding.py`): it wraps the
serializer's msgpack extension hook to see which type each stored value names, and asks
the serializer's allow-lists whether it would rebuild it, without importing what they
block. None of that is public: the hook and the allow-list are attributes
(`_unpack_ext_hook`, `_allowed_msgpack_modules`), the safe types live in
`langgraph.checkpoint.serde._msgpack`, and the extension codes are constants of
`jsonplus` that stored checkpoints carry (so LangGraph cannot renumber them; a new one is
what the test watches for). The `threads` command unwraps a `DeltaChannel` snapshot
(`serde.types._DeltaSnapshot`) to show its value.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde import _msgpack
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import _DeltaSnapshot

ExtHook = Callable[[int, bytes], Any]

# `jsonplus`'s msgpack extension codes (`EXT_*`), as stored values carry them.
EXT_CODES: dict[str, int] = {
    "EXT_CONSTRUCTOR_SINGLE_ARG": 0,
    "EXT_CONSTRUCTOR_POS_ARGS": 1,
    "EXT_CONSTRUCTOR_KW_ARGS": 2,
    "EXT_METHOD_SINGLE_ARG": 3,
    "EXT_PYDANTIC_V1": 4,
    "EXT_PYDANTIC_V2": 5,
    "EXT_NUMPY_ARRAY": 6,
    "EXT_DELTA_SNAPSHOT": 7,
}
# A class called with the stored arguments.
CONSTRUCTED = frozenset(
    EXT_CODES[name]
    for name in (
        "EXT_CONSTRUCTOR_SINGLE_ARG",
        "EXT_CONSTRUCTOR_POS_ARGS",
        "EXT_CONSTRUCTOR_KW_ARGS",
        "EXT_PYDANTIC_V1",
        "EXT_PYDANTIC_V2",
    )
)
# A class's method called with the stored argument (`datetime.fromisoformat`, ...).
METHOD = EXT_CODES["EXT_METHOD_SINGLE_ARG"]
NUMPY_ARRAY = EXT_CODES["EXT_NUMPY_ARRAY"]
DELTA_SNAPSHOT = EXT_CODES["EXT_DELTA_SNAPSHOT"]

# The types and methods LangGraph rebuilds whatever the allow-list says.
SAFE_TYPES: frozenset[tuple[str, ...]] = _msgpack.SAFE_MSGPACK_TYPES
SAFE_METHODS: frozenset[tuple[str, str, str]] = _msgpack.SAFE_MSGPACK_METHODS

# What a `DeltaChannel` snapshot decodes to (`EXT_DELTA_SNAPSHOT`): the `threads` command
# shows the value it holds.
DeltaSnapshot: type[Any] = _DeltaSnapshot

# The serializer's attributes read and replaced here.
EXT_HOOK_ATTRIBUTE = "_unpack_ext_hook"
ALLOWED_ATTRIBUTE = "_allowed_msgpack_modules"


def unpack(data: bytes, hook: ExtHook) -> Any:
    """msgpack bytes decoded as `JsonPlusSerializer.loads_typed` decodes them."""
    return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)


def _private(serde: JsonPlusSerializer, name: str) -> Any:
    """`serde`'s attribute `name`, or an error that says LangGraph moved it."""
    try:
        return getattr(serde, name)
    except AttributeError:
        raise RuntimeError(
            f"this langgraph-checkpoint's JsonPlusSerializer has no {name}, which "
            "langgraph-checkpoint-mongo reads to decode a copy's values exactly: install "
            "the langgraph-checkpoint version this release was tested with, or a newer "
            "langgraph-checkpoint-mongo"
        ) from None


def ext_hook(serde: JsonPlusSerializer) -> ExtHook:
    """The hook `serde` rebuilds extension types with."""
    return _private(serde, EXT_HOOK_ATTRIBUTE)  # type: ignore[no-any-return]


def with_ext_hook(serde: JsonPlusSerializer, hook: ExtHook) -> JsonPlusSerializer:
    """A shallow copy of `serde` that rebuilds extension types with `hook`."""
    changed = copy.copy(serde)
    setattr(changed, EXT_HOOK_ATTRIBUTE, hook)
    return changed


def allows(serde: JsonPlusSerializer, module: str, name: str) -> bool:
    """Whether `serde` rebuilds the type `module.name` (a safe type, or one its allow-list
    names, or any with the permissive default)."""
    if (module, name) in SAFE_TYPES:
        return True
    allowed = _private(serde, ALLOWED_ATTRIBUTE)
    return allowed is True or (allowed is not None and (module, name) in allowed)
