"""The metadata filter terms: equal exactly when Python's `==` says so, in every process."""

from __future__ import annotations

import copy
import datetime as dt
import enum
import itertools
import json
import os
import subprocess
import sys
import uuid
from decimal import Decimal
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo._metadata import _canonical, _equals_term, metadata_terms
from langgraph.checkpoint.mongo._queries import metadata_filter
from support.helpers import call, config, ids, listed, new_thread, put

UTC = dt.timezone.utc
PLUS_ONE = dt.timezone(dt.timedelta(hours=1))
MINUS_TWO = dt.timezone(dt.timedelta(hours=-2))
PARIS = ZoneInfo("Europe/Paris")


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Level(enum.IntEnum):
    ONE = 1


class Kind(str, enum.Enum):
    A = "a"


# Values whose every pair is checked: same term iff `a == b` in Python.
VALUES: list[Any] = [
    # numbers
    0,
    -0.0,
    False,
    1,
    True,
    1.0,
    Decimal("1"),
    Decimal("1.000"),
    Decimal("-0"),
    Fraction(1, 1),
    complex(1, 0),
    Level.ONE,
    2,
    Decimal("2E0"),
    100,
    Decimal("1E+2"),
    1.5,
    Decimal("1.5"),
    Decimal("1.50"),
    Fraction(3, 2),
    -1.5,
    Decimal("-1.5"),
    0.1,
    Decimal("0.1"),
    Fraction(1, 10),
    Fraction(1, 3),
    complex(1, 2),
    2**64,
    Decimal(2**64),
    float(2**64),
    10**700,
    Decimal(10**700),
    Decimal("1E+700"),
    10**5000,
    Decimal("1E+5000"),
    Decimal("1E+999999999"),
    float("inf"),
    Decimal("Infinity"),
    float("-inf"),
    Decimal("-Infinity"),
    # strings and bytes
    "1",
    "a",
    Kind.A,
    "A",
    b"a",
    bytearray(b"a"),
    # containers
    [1],
    (1,),
    [1.0],
    [Decimal("1")],
    ["1"],
    [],
    (),
    {},
    [1, 2],
    [2, 1],
    (1, 2),
    {"a": 1, "b": 2},
    {"b": 2, "a": 1},
    {"a": 1},
    {"a": Decimal("1")},
    {"a": 1.5},
    {1, 2},
    {2, 1},
    frozenset({1, 2}),
    {1.0, 2.0},
    frozenset({Decimal(1), Decimal(2)}),
    {1: None, 2: None}.keys(),
    {1},
    frozenset(),
    set(),
    {"alpha", "beta", "gamma"},
    frozenset({"gamma", "beta", "alpha"}),
    {"k": {"x", "y"}},
    {"k": frozenset({"y", "x"})},
    [{1, 2}],
    [frozenset({1, 2})],
    # dates and times
    dt.datetime(2026, 1, 1, 12, tzinfo=UTC),
    dt.datetime(2026, 1, 1, 13, tzinfo=PLUS_ONE),
    dt.datetime(2026, 1, 1, 10, tzinfo=MINUS_TWO),
    dt.datetime(2026, 1, 1, 13, tzinfo=PARIS),
    dt.datetime(2026, 1, 1, 13, tzinfo=dt.timezone(dt.timedelta(hours=1), "CET")),
    dt.datetime(2026, 1, 1, 12),
    dt.datetime(2026, 1, 1, 12, fold=1),
    dt.datetime(2026, 1, 1, 13),
    dt.datetime(2026, 1, 1, 12, 0, 0, 1, tzinfo=UTC),
    dt.datetime(2026, 1, 1, tzinfo=UTC),
    dt.datetime(2026, 1, 1),
    dt.date(2026, 1, 1),
    dt.date(2026, 1, 2),
    # a repeated wall time (PEP 495): unequal to every instant of another time zone
    dt.datetime(2020, 10, 25, 2, 30, tzinfo=PARIS),
    dt.datetime(2020, 10, 25, 2, 30, fold=1, tzinfo=PARIS),
    dt.datetime(2020, 10, 25, 0, 30, tzinfo=UTC),
    dt.datetime(2020, 10, 25, 1, 30, tzinfo=UTC),
    # instants outside the datetime range in UTC
    dt.datetime(1, 1, 1, tzinfo=PLUS_ONE),
    dt.datetime(1, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    dt.datetime(1, 1, 1),
    dt.time(12, tzinfo=UTC),
    dt.time(13, tzinfo=PLUS_ONE),
    dt.time(12),
    dt.time(12, fold=1),
    dt.time(23, tzinfo=MINUS_TWO),
    dt.time(1, tzinfo=UTC),
    dt.time(0, 30, tzinfo=dt.timezone(dt.timedelta(minutes=-30))),
    dt.time(12, tzinfo=PARIS),  # no offset without a date: compares as naive
    dt.timedelta(days=1),
    dt.timedelta(hours=24),
    dt.timedelta(seconds=1),
    # other types the serializer round-trips
    uuid.UUID(int=1),
    uuid.UUID("00000000-0000-0000-0000-000000000001"),
    uuid.UUID(int=2),
    Color.RED,
    Color.GREEN,
    None,
]


def _describe(value: Any) -> str:
    try:
        return f"{type(value).__name__}:{value!r}"[:80]
    except ValueError:  # an int too long for `repr`
        return f"{type(value).__name__}:<{value.bit_length()} bits>"


def rebuilt(value: Any) -> Any:
    """An equal value made anew: containers filled in reverse order, the rest copied."""
    if isinstance(value, dict):
        return {k: rebuilt(value[k]) for k in reversed(list(value))}
    if isinstance(value, type({}.keys())):
        return dict.fromkeys(reversed(list(value))).keys()
    if isinstance(value, (set, frozenset)):
        return type(value)(rebuilt(v) for v in reversed(list(value)))
    if type(value) in (list, tuple):
        return type(value)(rebuilt(v) for v in value)
    return copy.deepcopy(value)


@pytest.mark.parametrize("value", VALUES, ids=lambda v: _describe(v)[:40])
def test_a_value_has_one_term(value: Any) -> None:
    """An equal value built apart (another object, its dicts and sets filled in another
    order) has the same term."""
    again = rebuilt(value)
    assert again == value
    assert _equals_term("k", again) == _equals_term("k", value)


def test_terms_agree_with_python_equality() -> None:
    wrong = []
    for a, b in itertools.combinations(VALUES, 2):
        same_term = _equals_term("k", a) == _equals_term("k", b)
        if same_term != (a == b):
            wrong.append(f"{_describe(a)} vs {_describe(b)}: == is {a == b}")
    assert wrong == []


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"a", "b"}, frozenset({"a", "b"})),
        (dt.datetime(2026, 1, 1, 12, tzinfo=UTC), dt.datetime(2026, 1, 1, 13, tzinfo=PLUS_ONE)),
        (dt.datetime(2026, 1, 1, 12, tzinfo=UTC), dt.datetime(2026, 1, 1, 13, tzinfo=PARIS)),
        (1, Decimal("1")),
        (1.0, Decimal("1.000")),
        (1.5, Decimal("1.5")),
        (Decimal("0.1"), Fraction(1, 10)),
        (Level.ONE, 1),
        (Kind.A, "a"),
    ],
)
def test_equal_values_from_the_reported_bugs_share_a_term(a: Any, b: Any) -> None:
    assert a == b
    assert _equals_term("k", a) == _equals_term("k", b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (1, "1"),
        ([1], (1,)),
        (dt.datetime(2026, 1, 1, 12), dt.datetime(2026, 1, 1, 12, tzinfo=UTC)),
        (dt.date(2026, 1, 1), dt.datetime(2026, 1, 1)),
        (Decimal("0.1"), 0.1),
        (Color.RED, 1),
        ({1, 2}, [1, 2]),
        ({1, 2}, (1, 2)),
        (b"a", "a"),
        (dt.timedelta(days=1), 86400),
    ],
)
def test_unequal_values_have_different_terms(a: Any, b: Any) -> None:
    assert a != b
    assert _equals_term("k", a) != _equals_term("k", b)


def test_the_key_is_part_of_the_term() -> None:
    assert _equals_term("a", 1) != _equals_term("b", 1)


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        Decimal("NaN"),
        Decimal("sNaN"),
        [float("nan")],
        {Decimal("NaN")},
        {"x": frozenset({float("nan")})},
        complex(float("nan"), 0),
    ],
    ids=repr,
)
def test_nan_filters_match_nothing(value: Any) -> None:
    assert metadata_filter({"k": value}) == {"metadata_terms": {"$in": []}}


_TERMS_SCRIPT = """
import json, sys
from langgraph.checkpoint.mongo._metadata import metadata_terms
tags = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
metadata = {"set": tags, "frozen": frozenset(tags), "nested": {"k": tags, "z": 1}}
print(json.dumps({"order": repr(tags), "terms": [t.hex() for t in metadata_terms(metadata)]}))
"""


def test_terms_are_the_same_under_any_hash_seed() -> None:
    runs = []
    for seed in ("0", "1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _TERMS_SCRIPT],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        runs.append(json.loads(done.stdout))
    # The seeds do change the set's iteration order, so the check below means something.
    assert len({run["order"] for run in runs}) > 1
    assert all(run["terms"] == runs[0]["terms"] for run in runs)
    here = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
    local = metadata_terms({"set": here, "frozen": frozenset(here), "nested": {"k": here, "z": 1}})
    assert [t.hex() for t in local] == runs[0]["terms"]


def test_existing_encodings_are_kept() -> None:
    """Terms already stored for values that were encoded right stay valid."""
    utc = dt.datetime(2026, 1, 1, tzinfo=UTC)
    naive = dt.datetime(2026, 1, 1)
    assert _canonical(utc) == f"odatetime.datetime:{utc!r}"
    assert _canonical(naive) == f"odatetime.datetime:{naive!r}"
    assert _canonical(dt.date(2026, 1, 1)) == "odatetime.date:datetime.date(2026, 1, 1)"
    assert _canonical(uuid.UUID(int=1)) == f"ouuid.UUID:{uuid.UUID(int=1)!r}"
    assert _canonical(2**64) == f"i{2**64}"
    assert _canonical(True) == "i1"
    assert _canonical(2.0) == "i2"
    assert _canonical(1.5) == "f1.5"
    assert _canonical("x") == '"x"'
    assert _canonical([1, (2,), {"b": None, "a": b"z"}]) == '[i1,(i2),{"a":b7a,"b":N}]'


# ----------------------------------------------------------------- end to end


STORED: list[dict[str, Any]] = [
    {"tags": {"a", "b"}, "when": dt.datetime(2026, 1, 1, 12, tzinfo=UTC), "amount": 1},
    {"tags": frozenset({"a"}), "when": dt.datetime(2026, 1, 1, 13, tzinfo=PLUS_ONE)},
    {"amount": Decimal("1.5"), "when": dt.datetime(2026, 1, 1, 12)},
    {"amount": Decimal("0.1"), "day": dt.date(2026, 1, 1), "id": uuid.UUID(int=1)},
    {"amount": 0.1, "span": dt.timedelta(days=1), "pair": [1, 2]},
]

FILTERS: list[dict[str, Any]] = [
    {"tags": frozenset({"b", "a"})},
    {"tags": {"a"}},
    {"tags": ["a", "b"]},
    {"when": dt.datetime(2026, 1, 1, 12, tzinfo=UTC)},
    {"when": dt.datetime(2026, 1, 1, 11, tzinfo=dt.timezone(dt.timedelta(hours=-1)))},
    {"when": dt.datetime(2026, 1, 1, 13, tzinfo=PARIS)},
    {"when": dt.datetime(2026, 1, 1, 12)},
    {"amount": Decimal("1")},
    {"amount": 1.0},
    {"amount": 1.5},
    {"amount": Decimal("1.50")},
    {"amount": Decimal("0.1")},
    {"amount": 0.1},
    {"amount": Fraction(1, 10)},
    {"amount": Decimal("NaN")},
    {"day": dt.datetime(2026, 1, 1)},
    {"day": dt.date(2026, 1, 1)},
    {"id": uuid.UUID("00000000-0000-0000-0000-000000000001")},
    {"span": dt.timedelta(hours=24)},
    {"pair": (1, 2)},
    {"pair": [Decimal(1), 2.0]},
]


async def test_filters_on_rich_values_match_in_memory(saver: Any) -> None:
    thread = new_thread()
    memory = InMemorySaver()
    for metadata in STORED:
        stored = await put(saver, thread, metadata=metadata)
        checkpoint_id = stored["configurable"]["checkpoint_id"]
        await put(memory, thread, metadata=metadata, id=checkpoint_id)
        # The serializer gives these types back as they were.
        got = await call(saver, "get_tuple", stored)
        for key, value in metadata.items():
            assert got.metadata[key] == value
            assert type(got.metadata[key]) is type(value)
    for flt in FILTERS:
        want = ids(await listed(memory, config(thread), filter=flt))
        got_ids = ids(await listed(saver, config(thread), filter=flt))
        assert got_ids == want, flt
    # The cases above are not vacuous.
    assert ids(await listed(saver, config(thread), filter={"tags": frozenset({"a", "b"})}))
