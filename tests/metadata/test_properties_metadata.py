"""Hostile metadata, property-based: it round trips as in `InMemorySaver`, and
integers beyond 64 bits are refused (see `support/properties.py`)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import strategies as st
from langgraph.checkpoint.base import get_checkpoint_metadata
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend
from support.helpers import as_metadata, checkpoint, config, either, ids, listed
from support.properties import (
    INT_MAX,
    INT_MIN,
    KEYS,
    METADATA,
    OPERATORS,
    STRINGS,
    assert_same_tuple,
    counts,
    put_both,
    run_property,
    same,
)

CONFIG_EXTRAS = st.dictionaries(
    KEYS.filter(lambda k: k not in ("thread_id", "checkpoint_ns", "checkpoint_id")),
    st.one_of(STRINGS, st.integers(INT_MIN, INT_MAX), st.floats(), st.booleans(), OPERATORS),
    max_size=3,
)


def test_metadata_round_trips_like_in_memory(backend: Backend) -> None:
    """`put` then `get_tuple`/`list` return the metadata `InMemorySaver` returns,
    config keys merged in by `get_checkpoint_metadata` included, and the stored
    document keeps its key fields intact and no key a server would read as a path."""

    async def prop(
        metadata: dict[str, Any],
        extras: dict[str, Any],
        config_metadata: dict[str, Any],
        thread: str,
        ns: str,
    ) -> None:
        memory = InMemorySaver()
        async with backend.saver() as saver:
            cfg: Any = config(thread, ns)
            cfg["configurable"].update(extras)
            cfg["metadata"] = config_metadata
            stored = await put_both(saver, memory, cfg, metadata)
            want = memory.get_tuple(stored)
            assert want is not None
            assert same(want.metadata, get_checkpoint_metadata(cfg, as_metadata(metadata)))
            got = await either(saver).get_tuple(stored)
            assert_same_tuple(got, want)
            assert_same_tuple(await either(saver).get_tuple(config(thread, ns)), want)
            [listed_tuple] = await listed(saver, config(thread, ns))
            assert_same_tuple(listed_tuple, want)

            docs = await maybe_await(saver.checkpoint_collection.find({}).to_list(None))
            [doc] = docs
            key = {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": ids([want])[0]}
            assert doc["_id"] == key
            assert list(doc["_id"]) == list(key)  # a server compares keys in field order
            assert doc["thread_id"] == thread  # the shard key; the other ids only in `_id`
            assert {"checkpoint_ns", "checkpoint_id"}.isdisjoint(doc)
            assert_safe_keys(doc["metadata"])

    run_property(
        backend,
        prop,
        metadata=METADATA,
        extras=CONFIG_EXTRAS,
        config_metadata=CONFIG_EXTRAS,
        thread=STRINGS,
        ns=STRINGS,
    )


def assert_safe_keys(value: Any) -> None:
    """No key of the readable metadata is an operator or a path for a server."""
    if isinstance(value, list):
        for v in value:
            assert_safe_keys(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            assert isinstance(k, str)
            assert not k.startswith("$")
            assert "." not in k
            assert "\x00" not in k
            assert_safe_keys(v)


def test_ints_beyond_64_bits_are_refused_and_store_nothing(backend: Backend) -> None:
    too_big = st.one_of(st.integers(min_value=INT_MAX + 1), st.integers(max_value=INT_MIN - 1))

    async def prop(base: dict[str, Any], key: str, value: int, nested: bool) -> None:
        metadata = {**base, key: {"x": [value]} if nested else value}

        memory = InMemorySaver()
        async with backend.saver() as saver:
            cp = checkpoint()
            with pytest.raises(TypeError):
                memory.put(config("t"), cp, as_metadata(copy.deepcopy(metadata)), {})
            with pytest.raises(TypeError):
                await either(saver).put(config("t"), cp, metadata, {})
            assert await counts(saver) == (0, 0)

    run_property(
        backend, prop, base=METADATA, key=KEYS, value=too_big, nested=st.booleans(), mock=20, wire=5
    )
