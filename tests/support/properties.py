"""What the property tests (`test_properties_*.py`) share: strategies of hostile input,
exact comparisons, and `run_property`. Their claim: request data never acts as a query.

Applications pass `thread_id`, metadata and `filter` straight from HTTP requests. These
properties generate such input (keys with dots and leading `$`, operator-shaped dicts,
lists where scalars are expected, NUL, unicode, extreme numbers) and check that

- every result equals `InMemorySaver`'s for the same operations (the reference
  semantics: metadata round trips, `list(filter=...)` is Python equality);
- a string id that looks like an operator is just an id: it sees only its own data;
- a non-string id, filter key or write field raises an error naming that field before
  anything is read or written (on the wire backends: before any command is sent).

Each property runs many examples in process (`mock`) and fewer over the wire, every
example on a database of its own.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import math
from collections.abc import Callable, Coroutine
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend
from support.helpers import as_metadata, checkpoint, either

# Examples per property: many in process, fewer over a socket.
MOCK_EXAMPLES = 150
WIRE_EXAMPLES = 25


def run_property(
    backend: Backend,
    prop: Callable[..., Coroutine[Any, Any, None]],
    *,
    mock: int = MOCK_EXAMPLES,
    wire: int = WIRE_EXAMPLES,
    **strategies: st.SearchStrategy[Any],
) -> None:
    """Check the async property `prop` on examples drawn from `strategies` (by keyword):
    `mock` examples in process, `wire` over a socket, each on an event loop of its own
    (the saver's clients are made inside)."""

    @functools.wraps(prop)  # Hypothesis keys its example database on `prop`'s source
    def example(**drawn: Any) -> None:
        asyncio.run(prop(**drawn))

    examples = settings(
        max_examples=mock if backend.name == "mock" else wire,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    examples(given(**strategies)(example))()


# --------------------------------------------------------------------------- strategies

# No lone surrogates: msgpack (and UTF-8) cannot encode them.
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)

HOSTILE_STRINGS = [
    "",
    ".",
    "a.b",
    "$",
    "$where",
    "$gt",
    "$ne",
    "$regex",
    "$in",
    "$exists",
    "_id",
    "source",
    "step",
    "run_id",
    "thread_id",
    "__x",
    "\x00",
    "a\x00b",
    "ü",
    "ø.$",
    "🦜",
    ".*",
    "{'$gt': ''}",
    '{"$ne": null}',
    "1",
]

KEYS = st.one_of(st.sampled_from(HOSTILE_STRINGS), TEXT)
STRINGS = st.one_of(st.sampled_from(HOSTILE_STRINGS), TEXT)

OPERATOR_SHAPES: list[Any] = [
    {"$ne": None},
    {"$gt": ""},
    {"$gte": None},
    {"$where": "1"},
    {"$regex": ".*"},
    {"$exists": True},
    {"$in": ["loop", "input", None]},
    {"$nin": []},
    {"$elemMatch": {"$ne": None}},
    {"$not": {"$eq": 1}},
    {"$expr": {"$eq": [1, 1]}},
    {"$size": 0},
    {"$type": "string"},
    {"$all": []},
]
OPERATORS = st.sampled_from(OPERATOR_SHAPES).map(copy.deepcopy)

# The serializer stores ints in [-2**63, 2**64 - 1] (msgpack int64 and uint64).
INT_MIN, INT_MAX = -(2**63), 2**64 - 1

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(INT_MIN, INT_MAX),
    st.sampled_from([INT_MIN, 2**63 - 1, 2**63, INT_MAX, 2**53, 2**53 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, math.inf, -math.inf, math.nan, 2.0**63, 1e300]),
    STRINGS,
)

VALUES = st.recursive(
    st.one_of(SCALARS, OPERATORS),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(KEYS, children, max_size=3),
        OPERATORS,
    ),
    max_leaves=6,
)

METADATA = st.dictionaries(KEYS, VALUES, max_size=4)


NON_STRINGS = st.one_of(
    OPERATORS,
    st.lists(STRINGS, max_size=2),
    st.tuples(STRINGS),
    st.integers(-5, 5),
    st.booleans(),
    st.floats(allow_nan=False, width=32),
    st.binary(max_size=3),
    st.dictionaries(KEYS, STRINGS, max_size=2),
)


# ------------------------------------------------------------------------------ helpers


def same(a: Any, b: Any) -> bool:
    """Exact structural equality: types must match, NaN equals NaN, -0.0 differs from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def ref(t: CheckpointTuple | None) -> tuple[str, str, str] | None:
    if t is None:
        return None
    c = t.config["configurable"]
    return (c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])


def parent_ref(t: CheckpointTuple) -> tuple[str, str, str] | None:
    if t.parent_config is None:
        return None
    c = t.parent_config["configurable"]
    return (c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"])


def assert_same_tuple(got: CheckpointTuple | None, want: CheckpointTuple | None) -> None:
    assert ref(got) == ref(want)
    if got is None or want is None:
        return
    assert got.checkpoint["id"] == want.checkpoint["id"]
    assert got.checkpoint["channel_values"] == want.checkpoint["channel_values"]
    assert same(got.metadata, want.metadata), (got.metadata, want.metadata)
    assert parent_ref(got) == parent_ref(want)
    assert got.pending_writes == want.pending_writes


async def counts(saver: Any) -> tuple[int, int]:
    return (
        await maybe_await(saver.checkpoint_collection.count_documents({})),
        await maybe_await(saver.writes_collection.count_documents({})),
    )


async def put_both(
    saver: Any,
    memory: InMemorySaver,
    cfg: RunnableConfig,
    metadata: dict[str, Any],
    values: dict[str, Any] | None = None,
) -> RunnableConfig:
    cp = checkpoint(values)
    stored: RunnableConfig = await either(saver).put(
        cfg, cp, copy.deepcopy(metadata), cp["channel_versions"]
    )
    md = as_metadata(copy.deepcopy(metadata))
    expected = memory.put(copy.deepcopy(cfg), cp, md, cp["channel_versions"])
    assert stored == expected
    return stored
