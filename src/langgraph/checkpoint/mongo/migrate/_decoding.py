"""Decoding that fails instead of returning a stand-in, so a copy stores exactly what its
source stores or fails the thread by name.

LangGraph's `JsonPlusSerializer` rebuilds a stored object by importing its class; where
the import or the construction fails (a type of an application that is not installed
here, `langgraph.types.Interrupt` without `langgraph`), or an allowlist blocks the type
(`LANGGRAPH_STRICT_MSGPACK=true`), it logs once and returns the object's serialized
arguments instead: a `dict` where the application stored its own type. Copied, that dict
would be stored as a dict, and read back equal to it. `exact_serializer` wraps a
serializer so that every such case, and any payload that does not decode at all, raises
`UnrestorableValueError` naming the type.
"""

from __future__ import annotations

import copy
import importlib
import threading
from collections.abc import Callable
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde import _msgpack as lg_msgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

# `JsonPlusSerializer`'s msgpack extension codes (langgraph.checkpoint.serde.jsonplus).
_CONSTRUCTED = (0, 1, 2, 4, 5)  # a class called with the stored arguments
_METHOD = 3  # a class's method called with the stored argument (datetime, ...)
_NUMPY_ARRAY = 6
_DELTA_SNAPSHOT = 7
ExtHook = Callable[[int, bytes], Any]


class UnrestorableValueError(ValueError):
    """A stored value that this environment cannot restore exactly."""


class _Failures(threading.local):
    first: str | None = None


def _unpack(data: bytes, hook: ExtHook) -> Any:
    return ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)


def _checked_hook(base: ExtHook, allowed: Any, failures: _Failures) -> ExtHook:
    """`base` (the serializer's own hook), after checking that it will rebuild the value
    itself; a failure is recorded (ormsgpack replaces a hook's exception by its own)."""

    def fail(reason: str) -> None:
        if failures.first is None:
            failures.first = reason
        raise UnrestorableValueError(reason)

    def hook(code: int, data: bytes) -> Any:
        if code == _DELTA_SNAPSHOT:
            _unpack(data, hook)  # checks the values inside
            return base(code, data)
        if code == _NUMPY_ARRAY:
            value = base(code, data)
            if value is None:
                fail("a numpy array (numpy cannot be imported here)")
            return value
        if code not in _CONSTRUCTED and code != _METHOD:
            fail(f"a value of msgpack extension type {code}, which LangGraph does not write")
        parts = _unpack(data, hook)  # checks the arguments first
        module, name = str(parts[0]), str(parts[1])
        if code == _METHOD:
            if (module, name, parts[3]) not in lg_msgpack.SAFE_MSGPACK_METHODS:
                fail(f"{module}.{name}.{parts[3]} (a method LangGraph does not call)")
        elif (module, name) not in lg_msgpack.SAFE_MSGPACK_TYPES and not (
            allowed is True or (allowed is not None and (module, name) in allowed)
        ):
            fail(f"{module}.{name} (not in the serializer's allowed_msgpack_modules)")
        try:
            cls = getattr(importlib.import_module(module), name)
        except Exception as exc:
            fail(f"{module}.{name} (cannot be imported here: {type(exc).__name__}: {exc})")
        value = base(code, data)
        if code != _METHOD and isinstance(cls, type) and not isinstance(value, cls):
            fail(f"{module}.{name} (its stored arguments do not rebuild it here)")
        return value

    return hook


class ExactSerializer(SerializerProtocol):
    """`serde`, decoding only what it restores exactly (see the module's docstring)."""

    def __init__(self, serde: SerializerProtocol) -> None:
        self._failures = _Failures()
        self.serde = self._checking(serde)

    def _checking(self, serde: SerializerProtocol) -> SerializerProtocol:
        if isinstance(serde, EncryptedSerializer):
            return EncryptedSerializer(serde.cipher, self._checking(serde.serde))
        if not isinstance(serde, JsonPlusSerializer):
            return serde  # another serializer: what it decodes is taken as exact
        checking = copy.copy(serde)
        checking._unpack_ext_hook = _checked_hook(
            serde._unpack_ext_hook, serde._allowed_msgpack_modules, self._failures
        )
        return checking

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.serde.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self._failures.first = None
        try:
            return self.serde.loads_typed(data)
        except Exception as exc:
            reason = self._failures.first
            self._failures.first = None
            if reason is not None:
                raise UnrestorableValueError(f"it holds {reason}") from exc
            raise UnrestorableValueError(
                f"its {data[0]!r} payload does not decode: {type(exc).__name__}: {exc}"
            ) from exc


def exact_serializer(serde: SerializerProtocol) -> ExactSerializer:
    return serde if isinstance(serde, ExactSerializer) else ExactSerializer(serde)
