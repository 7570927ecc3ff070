"""Hostile filters and run ids, property-based: `list(filter=...)` and
`delete_for_runs` select what Python equality selects (see `support/properties.py`)."""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import strategies as st
from langgraph.checkpoint.base import get_checkpoint_metadata
from langgraph.checkpoint.memory import InMemorySaver

from support.backends import Backend
from support.helpers import as_metadata, checkpoint, config, either, ids, listed
from support.properties import (
    INT_MAX,
    INT_MIN,
    KEYS,
    METADATA,
    OPERATORS,
    SCALARS,
    STRINGS,
    VALUES,
    assert_same_tuple,
    counts,
    put_both,
    ref,
    run_property,
)


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

    async def prop(case: dict[str, Any]) -> None:
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

    run_property(backend, prop, case=stored_sets())


NUMERIC_KEYS = st.one_of(
    st.integers(-2, 2), st.sampled_from([0.0, -0.0, 1.0, 0.5, math.inf, math.nan])
)
NUMERIC_KEYED = st.dictionaries(NUMERIC_KEYS, st.one_of(SCALARS, OPERATORS), min_size=1, max_size=3)


def test_filters_on_dicts_with_numeric_keys_match_in_memory(backend: Backend) -> None:
    """Nested dicts with int and float keys (`{1: x} == {1.0: x} == {True: x}`, and
    a NaN key equals no other NaN key) filter as Python equality does."""

    async def prop(stored: list[dict[Any, Any]], data: st.DataObject) -> None:
        wanted = data.draw(
            st.one_of(
                st.sampled_from(stored).map(copy.deepcopy),
                st.sampled_from(stored).map(reordered),
                st.sampled_from(stored).map(lambda d: {retyped(k): v for k, v in d.items()}),
                NUMERIC_KEYED,
            )
        )

        memory = InMemorySaver()
        async with backend.saver() as saver:
            for value in stored:
                await put_both(saver, memory, config("t"), {"d": value})
            flt = {"d": wanted}
            want = list(memory.list(config("t"), filter=copy.deepcopy(flt)))
            got = await listed(saver, config("t"), filter=copy.deepcopy(flt))
            assert ids(got) == ids(want)

    run_property(
        backend,
        prop,
        stored=st.lists(NUMERIC_KEYED, min_size=1, max_size=3),
        data=st.data(),
        mock=100,
        wire=15,
    )


# Metadata keys LangGraph itself writes and reads back.
RESERVED_KEYS = ["counters_since_delta_snapshot", "source", "step", "parents", "run_id"]
# What `get_checkpoint_metadata` merges from `config["metadata"]` (scalars only).
CONFIG_SCALARS = st.one_of(STRINGS, st.integers(INT_MIN, INT_MAX), st.floats(), st.booleans())


def test_reserved_metadata_keys_with_hostile_values_round_trip(backend: Backend) -> None:
    """Keys LangGraph reserves, with request-supplied values (in the metadata, or in
    `config["metadata"]`, which `get_checkpoint_metadata` merges in), are stored, read
    back and filtered on as `InMemorySaver` does."""

    async def prop(key: str, value: Any, via_config: bool) -> None:
        memory = InMemorySaver()
        async with backend.saver() as saver:
            cfg: Any = config("t")
            metadata: dict[str, Any] = {}
            if via_config:
                cfg["metadata"] = {key: value}
            else:
                metadata[key] = value
            stored = await put_both(saver, memory, cfg, metadata)
            assert_same_tuple(await either(saver).get_tuple(stored), memory.get_tuple(stored))
            flt = {key: value}
            want = list(memory.list(config("t"), filter=copy.deepcopy(flt)))
            assert ids(await listed(saver, config("t"), filter=flt)) == ids(want)

    run_property(
        backend,
        prop,
        key=st.sampled_from(RESERVED_KEYS),
        value=st.one_of(VALUES, CONFIG_SCALARS),
        via_config=st.booleans(),
        mock=50,
        wire=10,
    )


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

    async def prop(run_ids: list[Any], data: st.DataObject) -> None:
        strings = [r for r in run_ids if isinstance(r, str)]
        nested = [x for r in run_ids if isinstance(r, list) for x in r if isinstance(x, str)]
        numbers = [str(r) for r in run_ids if isinstance(r, int)]
        pool = [*strings, *nested, *numbers, "r", "s"]
        deleted = data.draw(st.lists(st.one_of(st.sampled_from(pool), STRINGS), max_size=3))

        async with backend.saver() as saver:
            made = []
            for i, run_id in enumerate(run_ids):
                metadata = {} if run_id is None else {"run_id": run_id}
                cfg = config(f"thread-{i % 2}")
                cp = checkpoint()
                stored = await either(saver).put(cfg, cp, copy.deepcopy(metadata), {})
                await either(saver).put_writes(stored, [("c", i)], "t")
                effective = get_checkpoint_metadata(cfg, as_metadata(metadata))
                made.append((cp["id"], effective.get("run_id")))
            await either(saver).delete_for_runs(deleted)
            survivors = {cid for cid, run_id in made if run_id not in deleted}
            left = await listed(saver, None)
            assert set(ids(left)) == survivors, (made, deleted)
            assert await counts(saver) == (len(survivors), len(survivors))

    run_property(
        backend,
        prop,
        run_ids=st.lists(st.one_of(st.none(), RUN_IDS, VALUES), min_size=1, max_size=4),
        data=st.data(),
        mock=100,
        wire=15,
    )
