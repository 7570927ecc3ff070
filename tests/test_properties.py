"""Hostile input, property-based: request data can never act as a query.

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
import math
import re
from collections.abc import Coroutine
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple, get_checkpoint_metadata
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend, CommandLog
from support.helpers import call, checkpoint, config, ids, listed

# Examples per property: many in process, fewer over a socket.
MOCK_EXAMPLES = 150
WIRE_EXAMPLES = 25


def run_property(backend: Backend, mock: int = MOCK_EXAMPLES, wire: int = WIRE_EXAMPLES) -> Any:
    """`settings` for one property: `mock` examples in process, `wire` over a socket."""
    return settings(
        max_examples=mock if backend.name == "mock" else wire,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def run(coro: Coroutine[Any, Any, None]) -> None:
    """One example, on an event loop of its own (the saver's clients are made inside)."""
    asyncio.run(coro)


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


def reordered(value: Any) -> Any:
    """The same value with every dict's keys in reverse order (equal in Python)."""
    if isinstance(value, dict):
        return {k: reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(v) for v in value]
    return value


def retyped(value: Any) -> Any:
    """An equal value of another type where Python has one (`1 == 1.0 == True`)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        as_float = float(value)
        return as_float if as_float == value else value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def variants(value: Any) -> st.SearchStrategy[Any]:
    """Filter values derived from a stored value: equal ones and near misses."""
    options: list[Any] = [value, reordered(value), retyped(value), [value], {"$eq": value}]
    options.append({"$in": [value]})
    if isinstance(value, dict) and value:
        first = next(iter(value))
        options.append({k: v for k, v in value.items() if k != first})  # a sub-dict
        options.append({**value, "$ne": None})  # a super-dict
        options.append(value[first])
    if isinstance(value, list):
        options += [value[::-1], tuple(value), [*value, None]]
        if value:
            options.append(value[0])  # a scalar never equals a list containing it
    if isinstance(value, str):
        options += [value + "\x00", value.upper(), {"$regex": value}]
    return st.one_of(st.sampled_from(options).map(copy.deepcopy), VALUES, st.none())


def filters_for(stored: list[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Filters drawn partly from the stored metadata: its entries, variants, sub-dicts."""
    entries = [(k, v) for md in stored for k, v in md.items()]
    known_keys = sorted({k for k, _ in entries})
    entry_strategies: list[st.SearchStrategy[tuple[str, Any]]] = [
        st.tuples(KEYS, VALUES),  # mostly missing keys
        st.tuples(KEYS, st.none()),
    ]
    if entries:
        entry_strategies.append(
            st.sampled_from(entries).flatmap(lambda kv: st.tuples(st.just(kv[0]), variants(kv[1])))
        )
        entry_strategies.append(st.tuples(st.sampled_from(known_keys), st.none()))
    from_entries = st.lists(st.one_of(entry_strategies), max_size=3).map(dict)
    strategies = [from_entries]
    non_empty = [md for md in stored if md]
    if non_empty:
        # A whole stored metadata dict, or part of it, reordered or not.
        strategies.append(
            st.sampled_from(non_empty).flatmap(
                lambda md: st.lists(st.sampled_from(sorted(md)), unique=True).map(
                    lambda keys: {k: copy.deepcopy(md[k]) for k in keys}
                )
            )
        )
        strategies.append(st.sampled_from(non_empty).map(reordered))
    return st.one_of(strategies)


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
    stored: RunnableConfig = await call(
        saver, "put", cfg, cp, copy.deepcopy(metadata), cp["channel_versions"]
    )
    expected = memory.put(copy.deepcopy(cfg), cp, copy.deepcopy(metadata), cp["channel_versions"])
    assert stored == expected
    return stored


# ------------------------------------------------------------- A: metadata round trips

CONFIG_EXTRAS = st.dictionaries(
    KEYS.filter(lambda k: k not in ("thread_id", "checkpoint_ns", "checkpoint_id")),
    st.one_of(STRINGS, st.integers(INT_MIN, INT_MAX), st.floats(), st.booleans(), OPERATORS),
    max_size=3,
)


def test_metadata_round_trips_like_in_memory(backend: Backend) -> None:
    """`put` then `get_tuple`/`list` return the metadata `InMemorySaver` returns,
    config keys merged in by `get_checkpoint_metadata` included, and the stored
    document keeps its key fields intact and no key a server would read as a path."""

    @run_property(backend)
    @given(
        metadata=METADATA,
        extras=CONFIG_EXTRAS,
        config_metadata=CONFIG_EXTRAS,
        thread=STRINGS,
        ns=STRINGS,
    )
    def prop(
        metadata: dict[str, Any],
        extras: dict[str, Any],
        config_metadata: dict[str, Any],
        thread: str,
        ns: str,
    ) -> None:
        async def scenario() -> None:
            memory = InMemorySaver()
            async with backend.saver() as saver:
                cfg: Any = config(thread, ns)
                cfg["configurable"].update(extras)
                cfg["metadata"] = config_metadata
                stored = await put_both(saver, memory, cfg, metadata)
                want = memory.get_tuple(stored)
                assert want is not None
                assert same(want.metadata, get_checkpoint_metadata(cfg, metadata))
                got = await call(saver, "get_tuple", stored)
                assert_same_tuple(got, want)
                assert_same_tuple(await call(saver, "get_tuple", config(thread, ns)), want)
                [listed_tuple] = await listed(saver, config(thread, ns))
                assert_same_tuple(listed_tuple, want)

                docs = await maybe_await(saver.checkpoint_collection.find({}).to_list(None))
                [doc] = docs
                key = {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": ids([want])[0]}
                assert doc["_id"] == key
                assert list(doc["_id"]) == list(key)  # a server compares keys in field order
                assert {k: doc[k] for k in key} == key
                assert_safe_keys(doc["metadata"])

        run(scenario())

    prop()


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

    @run_property(backend, mock=20, wire=5)
    @given(base=METADATA, key=KEYS, value=too_big, nested=st.booleans())
    def prop(base: dict[str, Any], key: str, value: int, nested: bool) -> None:
        metadata = {**base, key: {"x": [value]} if nested else value}

        async def scenario() -> None:
            memory = InMemorySaver()
            async with backend.saver() as saver:
                cp = checkpoint()
                with pytest.raises(TypeError):
                    memory.put(config("t"), cp, copy.deepcopy(metadata), {})
                with pytest.raises(TypeError):
                    await call(saver, "put", config("t"), cp, metadata, {})
                assert await counts(saver) == (0, 0)

        run(scenario())

    prop()


# ------------------------------------------------------------------------ B: filters


@st.composite
def stored_sets(draw: st.DrawFn) -> dict[str, Any]:
    threads = draw(st.lists(STRINGS, min_size=1, max_size=2, unique=True))
    namespaces = draw(st.lists(STRINGS, min_size=1, max_size=2, unique=True))
    puts = draw(
        st.lists(
            st.tuples(st.sampled_from(threads), st.sampled_from(namespaces), METADATA),
            min_size=2,
            max_size=5,
        )
    )
    # Filters reuse what `get_tuple` returns (top-level NULs stripped), not only the input.
    effective = [get_checkpoint_metadata(config(t, ns), md) for t, ns, md in puts]
    filters = draw(st.lists(filters_for(effective + [md for _, _, md in puts]), max_size=3))
    limit = draw(st.one_of(st.none(), st.integers(-1, 4)))
    before = draw(st.one_of(st.none(), st.integers(0, len(puts) - 1), STRINGS))
    return {
        "threads": threads,
        "namespaces": namespaces,
        "puts": puts,
        "filters": [{}, *filters],
        "limit": limit,
        "before": before,
    }


def test_list_filters_match_in_memory(backend: Backend) -> None:
    """`list(config, filter=f)` selects what `InMemorySaver` selects, in the same order
    within one thread and namespace, for filters made of stored entries, their near
    misses, operator-shaped values, `None` and missing keys."""

    @run_property(backend)
    @given(case=stored_sets())
    def prop(case: dict[str, Any]) -> None:
        async def scenario() -> None:
            memory = InMemorySaver()
            async with backend.saver() as saver:
                stored_ids = []
                for thread, ns, metadata in case["puts"]:
                    stored = await put_both(saver, memory, config(thread, ns), metadata)
                    stored_ids.append(stored["configurable"]["checkpoint_id"])
                before_value = case["before"]
                before_id = stored_ids[before_value] if isinstance(before_value, int) else None

                for flt in case["filters"]:
                    # Within one thread and namespace: same ids, same order.
                    for thread in case["threads"]:
                        for ns in case["namespaces"]:
                            cfg = config(thread, ns)
                            want = list(memory.list(cfg, filter=copy.deepcopy(flt)))
                            got = await listed(saver, cfg, filter=copy.deepcopy(flt))
                            assert ids(got) == ids(want), flt
                            for g, w in zip(got, want, strict=True):
                                assert_same_tuple(g, w)
                            bounded: dict[str, Any] = {"limit": case["limit"]}
                            if before_value is not None:
                                bounded["before"] = config(
                                    thread, ns, before_id if before_id else before_value
                                )
                            want = list(memory.list(cfg, filter=copy.deepcopy(flt), **bounded))
                            got = await listed(saver, cfg, filter=copy.deepcopy(flt), **bounded)
                            assert ids(got) == ids(want), (flt, bounded)
                        # Every namespace of a thread, and every thread: same set,
                        # newest first.
                        want = list(memory.list(config(thread, None), filter=copy.deepcopy(flt)))
                        got = await listed(saver, config(thread, None), filter=copy.deepcopy(flt))
                        assert sorted(ids(got)) == sorted(ids(want)), flt
                        assert ids(got) == sorted(ids(got), reverse=True)
                    want = list(memory.list(None, filter=copy.deepcopy(flt)))
                    got = await listed(saver, None, filter=copy.deepcopy(flt))
                    assert sorted(ids(got)) == sorted(ids(want)), flt
                    assert ids(got) == sorted(ids(got), reverse=True)
                    assert {ref(t) for t in got} == {ref(t) for t in want}

        run(scenario())

    prop()


NUMERIC_KEYS = st.one_of(
    st.integers(-2, 2), st.sampled_from([0.0, -0.0, 1.0, 0.5, math.inf, math.nan])
)
NUMERIC_KEYED = st.dictionaries(NUMERIC_KEYS, st.one_of(SCALARS, OPERATORS), min_size=1, max_size=3)


def test_filters_on_dicts_with_numeric_keys_match_in_memory(backend: Backend) -> None:
    """Nested dicts with int and float keys (`{1: x} == {1.0: x} == {True: x}`, and
    a NaN key equals no other NaN key) filter as Python equality does."""

    @run_property(backend, mock=100, wire=15)
    @given(stored=st.lists(NUMERIC_KEYED, min_size=1, max_size=3), data=st.data())
    def prop(stored: list[dict[Any, Any]], data: st.DataObject) -> None:
        wanted = data.draw(
            st.one_of(
                st.sampled_from(stored).map(copy.deepcopy),
                st.sampled_from(stored).map(reordered),
                st.sampled_from(stored).map(lambda d: {retyped(k): v for k, v in d.items()}),
                NUMERIC_KEYED,
            )
        )

        async def scenario() -> None:
            memory = InMemorySaver()
            async with backend.saver() as saver:
                for value in stored:
                    await put_both(saver, memory, config("t"), {"d": value})
                flt = {"d": wanted}
                want = list(memory.list(config("t"), filter=copy.deepcopy(flt)))
                got = await listed(saver, config("t"), filter=copy.deepcopy(flt))
                assert ids(got) == ids(want)

        run(scenario())

    prop()


# Metadata keys LangGraph itself writes and reads back.
RESERVED_KEYS = ["counters_since_delta_snapshot", "source", "step", "parents", "run_id"]
# What `get_checkpoint_metadata` merges from `config["metadata"]` (scalars only).
CONFIG_SCALARS = st.one_of(STRINGS, st.integers(INT_MIN, INT_MAX), st.floats(), st.booleans())


def test_reserved_metadata_keys_with_hostile_values_round_trip(backend: Backend) -> None:
    """Keys LangGraph reserves, with request-supplied values (in the metadata, or in
    `config["metadata"]`, which `get_checkpoint_metadata` merges in), are stored, read
    back and filtered on as `InMemorySaver` does."""

    @run_property(backend, mock=50, wire=10)
    @given(
        key=st.sampled_from(RESERVED_KEYS),
        value=st.one_of(VALUES, CONFIG_SCALARS),
        via_config=st.booleans(),
    )
    def prop(key: str, value: Any, via_config: bool) -> None:
        async def scenario() -> None:
            memory = InMemorySaver()
            async with backend.saver() as saver:
                cfg: Any = config("t")
                metadata: dict[str, Any] = {}
                if via_config:
                    cfg["metadata"] = {key: value}
                else:
                    metadata[key] = value
                stored = await put_both(saver, memory, cfg, metadata)
                assert_same_tuple(await call(saver, "get_tuple", stored), memory.get_tuple(stored))
                flt = {key: value}
                want = list(memory.list(config("t"), filter=copy.deepcopy(flt)))
                assert ids(await listed(saver, config("t"), filter=flt)) == ids(want)

        run(scenario())

    prop()


RUN_IDS = st.one_of(
    st.sampled_from(["r", "s"]),
    STRINGS,
    # Request data where a string is expected: containers of run ids.
    st.lists(st.sampled_from(["r", "s"]), min_size=1, max_size=2),
    st.dictionaries(KEYS, st.sampled_from(["r", "s"]), min_size=1, max_size=2),
    st.sampled_from(["r", "s"]).map(lambda r: {"$in": [r]}),
    # Beyond int64: the readable copy keeps such ints as strings.
    st.integers(2**63, INT_MAX),
)


def test_delete_for_runs_deletes_exactly_the_runs_named(backend: Backend) -> None:
    """`delete_for_runs(ids)` deletes the checkpoints (and their writes) whose metadata
    `run_id` equals one of `ids`; a `run_id` that is a list, a dict, an operator-shaped
    value or a number never matches a string, and other threads are untouched."""

    @run_property(backend, mock=100, wire=15)
    @given(
        run_ids=st.lists(st.one_of(st.none(), RUN_IDS, VALUES), min_size=1, max_size=4),
        data=st.data(),
    )
    def prop(run_ids: list[Any], data: st.DataObject) -> None:
        strings = [r for r in run_ids if isinstance(r, str)]
        nested = [x for r in run_ids if isinstance(r, list) for x in r if isinstance(x, str)]
        numbers = [str(r) for r in run_ids if isinstance(r, int)]
        pool = [*strings, *nested, *numbers, "r", "s"]
        deleted = data.draw(st.lists(st.one_of(st.sampled_from(pool), STRINGS), max_size=3))

        async def scenario() -> None:
            async with backend.saver() as saver:
                made = []
                for i, run_id in enumerate(run_ids):
                    metadata = {} if run_id is None else {"run_id": run_id}
                    cfg = config(f"thread-{i % 2}")
                    cp = checkpoint()
                    stored = await call(saver, "put", cfg, cp, copy.deepcopy(metadata), {})
                    await call(saver, "put_writes", stored, [("c", i)], "t")
                    effective = get_checkpoint_metadata(cfg, metadata)
                    made.append((cp["id"], effective.get("run_id")))
                await call(saver, "delete_for_runs", deleted)
                survivors = {cid for cid, run_id in made if run_id not in deleted}
                left = await listed(saver, None)
                assert set(ids(left)) == survivors, (made, deleted)
                assert await counts(saver) == (len(survivors), len(survivors))

        run(scenario())

    prop()


# ---------------------------------------------------------------------- C: isolation


def test_operator_looking_ids_only_see_their_own_data(backend: Backend) -> None:
    """A string id is only an id: a checkpoint, its writes and its listing are reached
    under that exact string; reads behave as in `InMemorySaver`, and `copy_thread`,
    `prune` and `delete_thread` with it never touch the victim thread."""

    @run_property(backend)
    @given(
        thread=STRINGS,
        ns=STRINGS,
        probe_id=STRINGS,
        task_id=STRINGS,
        task_path=STRINGS,
        channel=STRINGS,
        metadata=METADATA,
    )
    def prop(
        thread: str,
        ns: str,
        probe_id: str,
        task_id: str,
        task_path: str,
        channel: str,
        metadata: dict[str, Any],
    ) -> None:
        victim = "victim"

        async def scenario() -> None:
            memory = InMemorySaver()
            async with backend.saver() as saver:
                for t in [victim, thread] if thread != victim else [victim]:
                    for n in dict.fromkeys(["", ns]):
                        stored = await put_both(saver, memory, config(t, n), metadata, {"v": t})
                        for target in (saver, memory):
                            writes = [(channel, f"{t}/{n}"), ("other", 1)]
                            await call_either(
                                target, "put_writes", stored, writes, task_id, task_path
                            )

                probes: list[RunnableConfig] = [
                    config(thread),
                    config(thread, ns),
                    config(thread, ns, probe_id),
                    config(thread, probe_id),
                    config(probe_id, ns),
                ]
                for probe in probes:
                    got = await call(saver, "get_tuple", probe)
                    assert_same_tuple(got, memory.get_tuple(probe))
                    got_list = await listed(saver, probe)
                    want_list = list(memory.list(probe))
                    assert ids(got_list) == ids(want_list)
                    for g, w in zip(got_list, want_list, strict=True):
                        assert_same_tuple(g, w)
                for t in dict.fromkeys([thread, probe_id, victim]):
                    got_list = await listed(saver, config(t, None))
                    assert {ref(x) for x in got_list} == {
                        ref(x) for x in memory.list(config(t, None))
                    }
                    assert {x.checkpoint["channel_values"]["v"] for x in got_list} <= {t}

                victim_before = await listed(saver, config(victim, None))
                if thread != victim:
                    copy_to = probe_id if probe_id not in (thread, victim) else thread + "-copy"
                    await call(saver, "copy_thread", thread, copy_to)
                    copied = await listed(saver, config(copy_to, None))
                    original = await listed(saver, config(thread, None))
                    assert ids(copied) == ids(original)
                    assert [t.pending_writes for t in copied] == [
                        t.pending_writes for t in original
                    ]
                    # A newer checkpoint in the copy: `keep_latest` keeps one per namespace.
                    newest = await put_both(saver, memory, config(copy_to), {}, {"v": copy_to})
                    await call(saver, "prune", [copy_to], strategy="keep_latest")
                    kept = await listed(saver, config(copy_to, None))
                    assert len(kept) == len({"", ns})
                    assert ids(kept)[0] == newest["configurable"]["checkpoint_id"]
                    assert ids(await listed(saver, config(thread, None))) == ids(original)
                    await call(saver, "delete_thread", thread)
                    memory.delete_thread(thread)
                    assert await listed(saver, config(thread, None)) == []
                    await call(saver, "prune", [copy_to], strategy="delete")
                    assert await listed(saver, config(copy_to, None)) == []
                    victim_after = await listed(saver, config(victim, None))
                    assert [ref(t) for t in victim_after] == [ref(t) for t in victim_before]
                    for g, w in zip(victim_after, victim_before, strict=True):
                        assert_same_tuple(g, w)
                    # Only the victim's documents are left.
                    n_checkpoints, n_writes = await counts(saver)
                    assert n_checkpoints == len(victim_after)
                    assert n_writes == sum(len(t.pending_writes) for t in victim_after)

        run(scenario())

    prop()


async def call_either(target: Any, method: str, *args: Any) -> Any:
    if isinstance(target, InMemorySaver):
        return getattr(target, method)(*args)
    return await call(target, method, *args)


# --------------------------------------------------- C and 5: bad arguments are refused

ID_FIELDS = ["thread_id", "checkpoint_ns", "checkpoint_id"]
LIMITS = st.sampled_from([None, 1, 0, -1])


class Refusals:
    """Checks that a call raises an error naming a field and sends and changes nothing."""

    def __init__(self, saver: Any, log: CommandLog, backend: Backend) -> None:
        self.saver, self.log, self.backend = saver, log, backend

    async def check(
        self, error: type[Exception], field: str, method: str, *args: Any, **kwargs: Any
    ) -> None:
        before = await counts(self.saver)
        self.log.reset()
        saver = self.saver
        invoke = (
            listed(saver, *args, **kwargs)
            if method == "list"
            else call(saver, method, *args, **kwargs)
        )
        with pytest.raises(error, match=re.escape(field)):
            await invoke
        if self.backend.counts_commands:
            assert self.log.names == [], f"{method} sent {self.log.names} refusing {field}"
        assert await counts(self.saver) == before
        # The listener is live: the counts above were seen (so the check is not vacuous).
        assert self.log.names or not self.backend.counts_commands


async def victim_with_write(saver: Any) -> RunnableConfig:
    stored: RunnableConfig = await call(saver, "put", config("victim"), checkpoint(), {"k": 1}, {})
    await call(saver, "put_writes", stored, [("c", 1)], "t")
    return stored


async def assert_victim_intact(saver: Any) -> None:
    [left] = await listed(saver, None)
    assert left.config["configurable"]["thread_id"] == "victim"
    assert left.metadata == {"k": 1}
    assert left.pending_writes == [("t", "c", 1)]


def test_non_string_ids_are_refused_before_any_io(backend: Backend) -> None:
    """A non-string `thread_id`, `checkpoint_ns` or `checkpoint_id` in a config raises a
    `TypeError` naming the field, from every method and whatever the other arguments
    (`limit=0` included), before any command is sent."""

    @run_property(backend)
    @given(field=st.sampled_from(ID_FIELDS), value=NON_STRINGS, thread=STRINGS, limit=LIMITS)
    def prop(field: str, value: Any, thread: str, limit: int | None) -> None:
        async def scenario() -> None:
            log = CommandLog()
            async with backend.saver(log) as saver:
                await victim_with_write(saver)
                refused = Refusals(saver, log, backend)
                bad: Any = config(thread)
                bad["configurable"][field] = value
                with_id: Any = copy.deepcopy(bad)
                with_id["configurable"].setdefault("checkpoint_id", "some-id")
                await refused.check(TypeError, field, "get_tuple", bad)
                await refused.check(TypeError, field, "list", bad, limit=limit)
                await refused.check(TypeError, field, "list", bad, filter={"k": 1}, limit=limit)
                await refused.check(TypeError, field, "put", bad, checkpoint(), {}, {})
                await refused.check(TypeError, field, "put_writes", with_id, [("c", 1)], "task")
                if field == "checkpoint_id":
                    await refused.check(
                        TypeError, "before", "list", config(thread), before=bad, limit=limit
                    )
                if field == "thread_id":
                    await refused.check(TypeError, "thread_id", "delete_thread", value)
                    await refused.check(TypeError, "source_thread_id", "copy_thread", value, "x")
                    await refused.check(
                        TypeError, "target_thread_id", "copy_thread", "victim", value
                    )
                    await refused.check(TypeError, "thread_ids", "prune", [value])
                    await refused.check(TypeError, "thread_ids", "prune", ["victim", value])
                await assert_victim_intact(saver)

        run(scenario())

    prop()


def test_missing_thread_id_is_refused(backend: Backend) -> None:
    """No `thread_id` (absent or `None`) is a `ValueError` naming it, never "every thread"."""

    @run_property(backend, mock=30, wire=8)
    @given(
        ns=st.one_of(st.none(), STRINGS),
        checkpoint_id=st.one_of(st.none(), STRINGS),
        explicit_none=st.booleans(),
        limit=LIMITS,
    )
    def prop(
        ns: str | None, checkpoint_id: str | None, explicit_none: bool, limit: int | None
    ) -> None:
        async def scenario() -> None:
            log = CommandLog()
            async with backend.saver(log) as saver:
                await victim_with_write(saver)
                refused = Refusals(saver, log, backend)
                bad: Any = {"configurable": {"checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}
                if explicit_none:
                    bad["configurable"]["thread_id"] = None
                await refused.check(ValueError, "thread_id", "get_tuple", bad)
                await refused.check(ValueError, "thread_id", "list", bad, limit=limit)
                await refused.check(ValueError, "thread_id", "put", bad, checkpoint(), {}, {})
                await refused.check(ValueError, "thread_id", "put_writes", bad, [("c", 1)], "t")
                await assert_victim_intact(saver)

        run(scenario())

    prop()


def test_none_namespace_means_every_namespace_only_in_list(backend: Backend) -> None:
    """`checkpoint_ns=None` lists every namespace, as in `InMemorySaver`; where a single
    namespace is needed (`get_tuple`, `put`, `put_writes`) it is refused by name."""

    @run_property(backend, mock=30, wire=8)
    @given(thread=STRINGS, namespaces=st.lists(STRINGS, min_size=1, max_size=3, unique=True))
    def prop(thread: str, namespaces: list[str]) -> None:
        async def scenario() -> None:
            memory = InMemorySaver()
            log = CommandLog()
            async with backend.saver(log) as saver:
                for ns in namespaces:
                    await put_both(saver, memory, config(thread, ns), {"ns": ns})
                no_ns: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": None}}
                got = await listed(saver, no_ns)
                assert sorted(ids(got)) == sorted(ids(list(memory.list(no_ns))))
                refused = Refusals(saver, log, backend)
                await refused.check(TypeError, "checkpoint_ns", "get_tuple", no_ns)
                await refused.check(TypeError, "checkpoint_ns", "put", no_ns, checkpoint(), {}, {})
                with_id = copy.deepcopy(no_ns)
                with_id["configurable"]["checkpoint_id"] = ids(got)[0]
                await refused.check(
                    TypeError, "checkpoint_ns", "put_writes", with_id, [("c", 1)], "t"
                )

        run(scenario())

    prop()


BAD_VALUES = st.one_of(st.none(), NON_STRINGS)


def test_bad_writes_are_refused_whole(backend: Backend) -> None:
    """A bad channel (anywhere in the batch), task id, task path or checkpoint id raises
    an error naming it, and nothing of the batch is stored."""

    @run_property(backend, mock=100, wire=20)
    @given(
        value=BAD_VALUES,
        good=st.lists(st.tuples(STRINGS, VALUES), max_size=3),
        position=st.integers(0, 3),
    )
    def prop(value: Any, good: list[tuple[str, Any]], position: int) -> None:
        async def scenario() -> None:
            log = CommandLog()
            async with backend.saver(log) as saver:
                stored = await victim_with_write(saver)
                refused = Refusals(saver, log, backend)
                writes = list(good)
                writes.insert(min(position, len(writes)), (value, "x"))
                await refused.check(TypeError, "channel", "put_writes", stored, writes, "task")
                some = good or [("c", 2)]
                await refused.check(TypeError, "task_id", "put_writes", stored, some, value)
                await refused.check(TypeError, "task_path", "put_writes", stored, some, "t2", value)
                cp = checkpoint()
                cp["id"] = value
                await refused.check(
                    TypeError, "checkpoint['id']", "put", config("victim"), cp, {}, {}
                )
                await assert_victim_intact(saver)

        run(scenario())

    prop()


HASHABLE_NON_STRINGS = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.booleans(),
    st.floats(width=32),
    st.binary(max_size=3),
    st.tuples(STRINGS),
)
# Filter values, NaN (which matches nothing) and None (missing) included.
FILTER_VALUES = st.one_of(VALUES, st.just(math.nan), st.lists(st.just(math.nan), max_size=1))


def test_bad_filters_and_limits_are_refused(backend: Backend) -> None:
    """A non-string filter key (wherever it is in the filter, whatever the other
    entries are), a filter that is not a dict and a `limit` that is not an int raise an
    error naming them, and never an empty result."""

    @run_property(backend)
    @given(
        entries=st.lists(st.tuples(KEYS, FILTER_VALUES), max_size=3),
        bad_key=HASHABLE_NON_STRINGS,
        position=st.integers(0, 3),
        not_a_dict=st.one_of(st.lists(STRINGS, max_size=2), st.integers(), st.booleans(), TEXT),
        bad_limit=st.one_of(st.floats(), STRINGS, st.booleans(), OPERATORS),
        limit=LIMITS,
        thread=st.one_of(st.none(), STRINGS),
    )
    def prop(
        entries: list[tuple[str, Any]],
        bad_key: Any,
        position: int,
        not_a_dict: Any,
        bad_limit: Any,
        limit: int | None,
        thread: str | None,
    ) -> None:
        async def scenario() -> None:
            log = CommandLog()
            async with backend.saver(log) as saver:
                await victim_with_write(saver)
                refused = Refusals(saver, log, backend)
                cfg = None if thread is None else config(thread)
                entries.insert(min(position, len(entries)), (bad_key, "x"))
                flt = dict(entries)
                await refused.check(TypeError, "filter key", "list", cfg, filter=flt, limit=limit)
                await refused.check(
                    TypeError, "filter", "list", cfg, filter=not_a_dict, limit=limit
                )
                await refused.check(TypeError, "limit", "list", cfg, limit=bad_limit)
                await assert_victim_intact(saver)

        run(scenario())

    prop()
