"""Decoding that fails instead of returning a stand-in, so a copy stores exactly what its
source stores or fails the thread by name.

Where LangGraph's `JsonPlusSerializer` cannot rebuild a stored object (its class, an application's
or `langgraph.types.Interrupt` without `langgraph`, cannot be imported or constructed here, or an
allowlist blocks it: `LANGGRAPH_STRICT_MSGPACK=true`), it logs and returns the object's serialized
arguments: a `dict`, which a copy would store as a dict.
`ExactSerializer` raises `UnrestorableValueError` naming the type instead (and for any payload
that does not decode); or, with `keep_stand_ins`, decodes as LangGraph does and records why
(`take_failure`), for a reader that must name the checkpoint holding it (a saver's `list`
decodes a whole checkpoint before its caller learns the checkpoint's id).
"""

from __future__ import annotations

import importlib
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo import _langgraph_serde as lg_serde
from langgraph.checkpoint.mongo._langgraph_serde import ExtHook


class UnrestorableValueError(ValueError):
    """A stored value that this environment cannot restore exactly."""


def _checked_hook(serde: JsonPlusSerializer, failures: list[str], raises: bool) -> ExtHook:
    """`serde`'s own hook, after checking that it will rebuild the value itself. A failure
    is recorded (ormsgpack replaces a hook's exception by its own), then raised, or (not
    `raises`) the value decodes as `serde` decodes it."""
    base = lg_serde.ext_hook(serde)

    def fail(reason: str) -> None:
        failures.append(reason)
        if raises:
            raise UnrestorableValueError(reason)

    def hook(code: int, data: bytes) -> Any:
        if code == lg_serde.DELTA_SNAPSHOT:
            lg_serde.unpack(data, hook)  # checks the values inside
            return base(code, data)
        if code == lg_serde.NUMPY_ARRAY:
            value = base(code, data)
            if value is None:
                fail("a numpy array (numpy cannot be imported here)")
            return value
        if code not in lg_serde.CONSTRUCTED and code != lg_serde.METHOD:
            fail(f"a value of msgpack extension type {code}, which LangGraph does not write")
            return base(code, data)
        parts = lg_serde.unpack(data, hook)  # checks the arguments first
        module, name = str(parts[0]), str(parts[1])
        if code == lg_serde.METHOD:
            if (module, name, parts[3]) not in lg_serde.SAFE_METHODS:
                fail(f"{module}.{name}.{parts[3]} (a method LangGraph does not call)")
                return base(code, data)  # never import what the serializer would not
        elif not lg_serde.allows(serde, module, name):
            fail(f"{module}.{name} (not in the serializer's allowed_msgpack_modules)")
            return base(code, data)  # never import what the allow-list blocks
        try:
            cls = getattr(importlib.import_module(module), name)
        except Exception as exc:
            # LangGraph's own types come with the package `langgraph`, which the `cli`
            # extra brings (a saver alone needs only `langgraph-checkpoint`).
            own = module.partition(".")[0] == "langgraph"
            install = '; pip install "langgraph-checkpoint-mongo[cli]" brings it' if own else ""
            fail(f"{module}.{name} (cannot be imported here: {type(exc).__name__}: {exc}{install})")
            return base(code, data)
        value = base(code, data)
        if code != lg_serde.METHOD and isinstance(cls, type) and not isinstance(value, cls):
            fail(f"{module}.{name} (its stored arguments do not rebuild it here)")
        return value

    return hook


class ExactSerializer(SerializerProtocol):
    """`serde`, decoding only what it restores exactly (see the module's docstring)."""

    def __init__(self, serde: SerializerProtocol, *, keep_stand_ins: bool = False) -> None:
        self._failures: list[str] = []
        self.keep_stand_ins = keep_stand_ins
        self.serde = self._checking(serde)

    def _checking(self, serde: SerializerProtocol) -> SerializerProtocol:
        if isinstance(serde, ExactSerializer):
            serde = serde.serde
        if isinstance(serde, EncryptedSerializer):
            return EncryptedSerializer(serde.cipher, self._checking(serde.serde))
        if not isinstance(serde, JsonPlusSerializer):
            return serde  # another serializer: what it decodes is taken as exact
        hook = _checked_hook(serde, self._failures, raises=not self.keep_stand_ins)
        return lg_serde.with_ext_hook(serde, hook)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.serde.dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        if not self.keep_stand_ins:
            self._failures.clear()
        try:
            return self.serde.loads_typed(data)
        except Exception as exc:
            reason = self.take_failure() or (
                f"its {data[0]!r} payload does not decode: {type(exc).__name__}: {exc}"
            )
            raise UnrestorableValueError(reason) from exc

    def take_failure(self) -> str | None:
        """With `keep_stand_ins`: why a value decoded since the last call is a stand-in."""
        reason = f"it holds {self._failures[0]}" if self._failures else None
        self._failures.clear()
        return reason
