"""LangGraph's serializer where this package needs more than its public API: the one module
that names `JsonPlusSerializer`'s private parts, so that a LangGraph release moving them
breaks here and nowhere else, and `tests/migration/test_langgraph_serde.py` (which checks every name
below against the installed LangGraph) says what moved.

`copy-threads` decodes a source's values exactly (`migrate/_decoding.py`): it wraps the serializer's
private msgpack extension hook (`_unpack_ext_hook`) to see which type each value names, and asks its
allow-lists (`_allowed_msgpack_modules`, the safe types of `serde._msgpack`) whether it would
rebuild it, without importing what they block. The extension codes are `jsonplus` constants that
stored checkpoints carry, so LangGraph cannot renumber them. The `threads` command unwraps a
`DeltaChannel` snapshot (`serde.types._DeltaSnapshot`) to show its value.

To store BSON's own values (`_bson_values`), the msgpack encoder is rebuilt around a hook
(`encoder`): LangGraph packs a dataclass's or model's fields with its module's `_msgpack_enc`,
which a hook reaches only in a copy with other globals. `quiet_unregistered` marks the BSON
types as warned about by LangGraph's permissive mode.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import ormsgpack
from langgraph.checkpoint.serde import _msgpack, jsonplus
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
# A class called with the stored arguments (`EXT_CONSTRUCTOR_*`, `EXT_PYDANTIC_*`).
CONSTRUCTED = frozenset(
    code
    for name, code in EXT_CODES.items()
    if name.startswith(("EXT_CONSTRUCTOR_", "EXT_PYDANTIC_"))
)
# A class's method called with the stored argument (`datetime.fromisoformat`, ...).
METHOD = EXT_CODES["EXT_METHOD_SINGLE_ARG"]
# `(module, name, args)`: the class called with the arguments.
POSITIONAL = EXT_CODES["EXT_CONSTRUCTOR_POS_ARGS"]
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


def permissive(serde: JsonPlusSerializer) -> bool:
    """Whether `serde` rebuilds every type (LangGraph's default, outside strict mode)."""
    return _private(serde, ALLOWED_ATTRIBUTE) is True


def allows(serde: JsonPlusSerializer, module: str, name: str) -> bool:
    """Whether `serde` rebuilds the type `module.name` (a safe type, or one its allow-list
    names, or any with the permissive default)."""
    if (module, name) in SAFE_TYPES:
        return True
    allowed = _private(serde, ALLOWED_ATTRIBUTE)
    return allowed is True or (allowed is not None and (module, name) in allowed)


# `jsonplus`'s encoder: `_msgpack_enc` packs with `_msgpack_default` and `_option`, which
# it looks up among the module's globals on every call; `_msgpack_default` packs what
# an object holds (a dataclass's fields, a model's dump) with `_msgpack_enc`.
ENCODER_GLOBALS = ("_msgpack_enc", "_msgpack_default", "_option")
# The set LangGraph's permissive hook records the types it warned about in, once each.
WARNED_ATTRIBUTE = "_warned_unregistered_types"


class Encoder(NamedTuple):
    """LangGraph's msgpack encoder, rebuilt around a hook (see `encoder`).

    Attributes:
        encode: `_msgpack_enc` with the hook at every depth: bytes as LangGraph writes
            them, but a value the hook takes is packed as it says.
        default: LangGraph's `_msgpack_default`, whose own packing goes through the
            hook: for a caller's top-level `default` to hand over what it does not take.
        option: LangGraph's `ormsgpack` options.
    """

    encode: Callable[[Any], bytes]
    default: Callable[[Any], Any]
    option: int


def encoder(hook: Callable[[Any], ormsgpack.Ext | None]) -> Encoder:
    """LangGraph's msgpack encoder, with `hook` asked first about every value it cannot
    pack itself, at every depth (inside the fields of a dataclass or a pydantic model
    too, which LangGraph packs with its module's own `_msgpack_enc`).

    LangGraph's functions are copied with a copy of the module's globals, so LangGraph's
    module is left unchanged for other savers of the process."""
    namespace = dict(vars(jsonplus))
    for name in ENCODER_GLOBALS:
        if name not in namespace:
            raise RuntimeError(
                f"this langgraph-checkpoint's jsonplus has no {name}, which "
                "langgraph-checkpoint-mongo rebuilds to store BSON values: install the "
                "langgraph-checkpoint version this release was tested with, or a newer "
                "langgraph-checkpoint-mongo"
            )
    original = namespace["_msgpack_default"]
    default = _with_globals(original, namespace)

    def hooked(value: Any) -> Any:
        packed = hook(value)
        return default(value) if packed is None else packed

    namespace["_msgpack_default"] = hooked
    namespace["_msgpack_enc"] = _with_globals(namespace["_msgpack_enc"], namespace)
    return Encoder(namespace["_msgpack_enc"], default, namespace["_option"])


def _with_globals(function: Any, namespace: dict[str, Any]) -> Any:
    return types.FunctionType(
        function.__code__, namespace, function.__name__, function.__defaults__, function.__closure__
    )


def quiet_unregistered(names: Iterable[tuple[str, str]]) -> None:
    """Mark `names` as already warned about in LangGraph's permissive mode, whose warning ("will be
    blocked in a future version") is not true of types a saver allow-lists in strict mode."""
    warned = getattr(jsonplus, WARNED_ATTRIBUTE, None)
    if isinstance(warned, set):
        warned.update(names)
