"""The serializer `threads` reads with, the application's: what `--serde module:factory`
returns; else, with `LANGGRAPH_AES_KEY` set, `EncryptedSerializer.from_pycryptodome_aes()`
(docs/security.md's recipe; it reads unencrypted values too); else LangGraph's default,
with an encrypted value read as `Sealed`, so that what is stored in plain text (metadata,
ids) still lists and a command that needs the values says which key is missing.
"""

from __future__ import annotations

import functools
import importlib
import os
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo.cli._common import SetupError, UsageError

KEY_VARIABLE = "LANGGRAPH_AES_KEY"


class Sealed(dict[str, Any]):
    """An encrypted value read without its key: an empty mapping (a checkpoint read so
    has no `ts`, no versions) that knows its serializer type."""

    def __init__(self, type: str) -> None:
        super().__init__()
        self.type = type

    def __repr__(self) -> str:
        return f"<encrypted: {self.type}>"


class _WithoutKey(JsonPlusSerializer):
    """LangGraph's default serializer, reading encrypted values (`<type>+<cipher>`) as `Sealed`."""

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        if "+" in data[0]:
            return Sealed(data[0])
        return super().loads_typed(data)


def serializer(spec: str | None) -> SerializerProtocol:
    """The serializer `--serde` names (`module:factory` or `module:Class.method`), else the
    one the environment implies."""
    if spec is not None:
        module_name, _, attribute = spec.partition(":")
        if not module_name or not attribute or module_name.startswith("."):
            raise UsageError(f"--serde must be module:factory, got {spec!r}")
        try:
            factory = functools.reduce(
                getattr, attribute.split("."), importlib.import_module(module_name)
            )
        except (ImportError, AttributeError) as exc:
            raise UsageError(f"--serde {spec!r}: {type(exc).__name__}: {exc}") from None
        try:
            serde = factory() if callable(factory) else factory
        except (TypeError, ValueError, ImportError) as exc:  # its settings, not ours
            raise UsageError(f"--serde {spec!r}: {type(exc).__name__}: {exc}") from None
        if not callable(getattr(serde, "loads_typed", None)):
            raise UsageError(
                f"--serde {spec!r} gave a {type(serde).__name__}, not a serializer "
                "(an object with dumps_typed and loads_typed)"
            )
        return serde
    if os.environ.get(KEY_VARIABLE):
        from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

        try:
            return EncryptedSerializer.from_pycryptodome_aes()
        except ImportError:
            raise SetupError(
                f"{KEY_VARIABLE} is set, and reading encrypted threads needs pycryptodome: "
                "pip install pycryptodome"
            ) from None
        except ValueError as exc:  # a key of the wrong length
            raise UsageError(str(exc)) from None
    return _WithoutKey()


def sealed_types(value: Any) -> set[str]:
    """The serializer types of the `Sealed` values nested in `value`."""
    if isinstance(value, Sealed):
        return {value.type}
    if isinstance(value, dict):
        return set().union(*(sealed_types(v) for v in value.values()))
    if isinstance(value, (list, tuple)):
        return set().union(*(sealed_types(v) for v in value))
    return set()


def require_key(item: CheckpointTuple, what: str) -> None:
    """Refuse `item` when part of it is encrypted and no key was given (a checkpoint read
    so is merged into a plain dict that lacks its versions)."""
    types = sealed_types([item.checkpoint, item.pending_writes])
    if "channel_versions" not in item.checkpoint and not types:
        types.add("TYPE+CIPHER")
    if types:
        raise UsageError(
            f"{what} is encrypted ({', '.join(sorted(types))}): set {KEY_VARIABLE} to the "
            "key of the application's EncryptedSerializer, or name the application's "
            "serializer with --serde module:factory"
        )
