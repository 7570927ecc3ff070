"""The stored format of the metadata terms, pinned byte for byte.

Checkpoints store these terms for the values their readable metadata cannot answer a
filter on exactly, and `list(filter=...)` matches on them (see the docstring of
`_metadata`), so a change to the canonical encoding, to its hashing or to which values
get terms can make the checkpoints already stored stop matching filters. Such a change
must bump `METADATA_TERMS_VERSION` (and come with a migration of `metadata_terms`, unless
the new queries still match the old documents): these fixed values, computed once, make
it fail here first.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
import re
import uuid
from decimal import Decimal
from fractions import Fraction
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from langgraph.checkpoint.mongo import _metadata
from langgraph.checkpoint.mongo._metadata import (
    METADATA_TERMS_VERSION,
    _canonical,
    _equals_term,
    _present_term,
    metadata_terms,
)
from langgraph.checkpoint.mongo._queries import metadata_filter

PLUS_ONE = dt.timezone(dt.timedelta(hours=1))
MINUS_TWO = dt.timezone(dt.timedelta(hours=-2))
PARIS = ZoneInfo("Europe/Paris")

# (tag, value, its canonical encoding, the term of `{"k": value}`): every tag of the table
# in `_metadata`'s docstring, some more than once.
FORMAT: list[tuple[str, Any, str, bytes]] = [
    ("N", None, "N", b"v\xdb\x3b\x19\x44\x2e\xea\xf1\xc1\xfd\xa1\xac\xf4\xb8\x92\x9f\x41"),
    ("i", True, "i1", b"v\x50\x6f\xd2\x3c\xb1\xa8\x45\xb4\x7b\x5e\x42\x55\x22\xbb\x5a\x31"),
    ("i", -7, "i-7", b"v\x4a\x7f\x7b\xec\x4f\x72\x30\x04\x9d\x59\xe3\x9f\x88\x85\xd6\x4f"),
    ("i", 2.0, "i2", b"v\x01\x60\x3e\x8b\x3c\xbc\x5d\x18\xbf\x76\x09\xfd\xe6\x28\x46\xf2"),
    (
        "e",
        10**5000,
        "e1e5000",
        b"v\x39\x38\x90\x2a\x99\x1a\xac\xcd\x3c\x1b\xc4\xb2\xb4\x22\x84\xdc",
    ),
    (
        "e",
        -3 * 10**4301,
        "e-3e4301",
        b"v\xc7\x6a\x19\x05\xdc\x4f\xca\x1a\x20\x42\xb0\x9d\xd7\xaa\xc5\xd8",
    ),
    ("f", 0.5, "f0.5", b"v\xbf\xd2\xdc\x6a\x06\x1c\x36\x37\x6d\x55\x42\x98\x11\xd4\x3a\x79"),
    (
        "f",
        float("nan"),
        "fnan",
        b"v\xb3\x73\x1e\xf2\xef\x39\x32\x19\xe9\x7a\x01\x76\x02\x5e\x1c\xb0",
    ),
    (
        "f",
        float("-inf"),
        "f-inf",
        b"v\x85\xcf\x65\xbb\xce\xfe\x4f\x42\xfd\xd5\xbf\x49\xf8\xbe\xea\xa2",
    ),
    (
        "d",
        Decimal("0.1"),
        "d1e-1",
        b"v\xc8\x27\x28\x00\x74\x04\xb6\xf0\x36\xd7\x10\x8f\xb2\x90\xaa\xa3",
    ),
    (
        "q",
        Fraction(1, 3),
        "q1/3",
        b"v\x45\xa6\x00\x1e\x29\x26\xbe\x89\xe3\x06\xdf\x21\xdb\xab\x2b\xd7",
    ),
    (
        "c",
        complex(1, 2),
        "c(i1,i2)",
        b"v\x93\x10\xd2\xff\x89\xbd\x20\x30\x5f\x95\x38\xc5\x0a\x1d\x7b\xa6",
    ),
    (
        '"',
        "h\u00e9",
        '"h\\u00e9"',
        b"v\xf9\xf0\x76\x58\x69\x89\xfa\x4d\x50\xdf\x81\x1e\x99\xbd\xed\x97",
    ),
    (
        "b",
        b"\x00\xff",
        "b00ff",
        b"v\x04\x38\x46\x19\x33\x70\xa4\x0a\xe6\xfe\x9c\x39\x1a\x82\xa0\xf0",
    ),
    (
        "[",
        [1, "a"],
        '[i1,"a"]',
        b"v\xbd\x44\xb5\x56\x6b\x3d\xfc\x8b\x60\xc9\x72\x5d\x14\x22\x8b\x81",
    ),
    (
        "(",
        (1, "a"),
        '(i1,"a")',
        b"v\xd0\x5c\x1f\xbb\xdd\x17\xfa\x53\xaf\x2b\xbb\xa4\x18\xa7\xdd\x1a",
    ),
    (
        "{",
        {"b": 1, "a": None},
        '{"a":N,"b":i1}',
        b"v\xae\x38\x1c\x58\x9c\xcb\xd5\x61\x9c\xb9\x65\xc0\xe8\x58\x97\x60",
    ),
    (
        "s{",
        frozenset({2, 1}),
        "s{i1,i2}",
        b"v\x3f\xa9\x65\x7d\x89\x4f\x99\xb6\x65\x6d\xf8\x7f\x6f\x98\xbf\x37",
    ),
    (
        "odatetime.datetime:",
        dt.datetime(2024, 1, 2, 3, 4, 5, 6),
        "odatetime.datetime:datetime.datetime(2024, 1, 2, 3, 4, 5, 6)",
        b"v\xae\x2d\x18\x08\xd3\x82\x1a\x54\xac\x14\x31\x57\x57\x1e\x21\xdb",
    ),
    (
        "odatetime.datetime:",
        dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=PLUS_ONE),
        "odatetime.datetime:datetime.datetime(2024, 1, 2, 2, 4, 5, tzinfo=datetime.timezone.utc)",
        b"v\xda\x09\x9d\x98\xe1\xb0\xfb\x60\x1b\x04\xc9\x21\x81\x7a\x3e\xff",
    ),
    (
        "odatetime.datetime:",
        dt.datetime(2024, 10, 27, 2, 30, tzinfo=PARIS),  # 02:30 happens twice that night
        "odatetime.datetime:datetime.datetime(2024, 10, 27, 2, 30, "
        "tzinfo=zoneinfo.ZoneInfo(key='Europe/Paris'))",
        b"v\x47\x84\x21\x21\xb6\x4b\x4a\xd6\x4a\x97\x60\xef\x12\x0d\xa2\x3a",
    ),
    (
        "odatetime.datetime@utc:",
        dt.datetime(1, 1, 1, 0, 30, tzinfo=PLUS_ONE),
        "odatetime.datetime@utc:datetime.timedelta(days=-1, seconds=84600)",
        b"v\xe4\x1f\x23\xfa\xb6\xd1\x14\x35\x27\xbd\xb0\xfa\x7b\x20\xda\xc1",
    ),
    (
        "odatetime.time:",
        dt.time(12, 30, tzinfo=MINUS_TWO),
        "odatetime.time:datetime.time(14, 30, tzinfo=datetime.timezone.utc)",
        b"v\x2b\xa3\xe3\xba\xb5\x9e\x8e\xee\x97\xdc\xe8\x14\x14\x78\x38\x3f",
    ),
    (
        "odatetime.time@utc:",
        dt.time(23, 0, tzinfo=MINUS_TWO),
        "odatetime.time@utc:90000,0",
        b"v\x5a\xd2\xc0\xb3\xbd\xe0\x50\x0e\xc6\x0a\x9c\x47\x46\xdd\x13\x84",
    ),
    (
        "o",
        uuid.UUID(int=1),
        "ouuid.UUID:UUID('00000000-0000-0000-0000-000000000001')",
        b"v\x48\x1c\xc7\x58\xb8\x42\x3b\x07\x4c\xba\x39\x1c\xb8\xb2\xd4\x7b",
    ),
]

# The "present" term of the key "k".
K_PRESENT = b"k\x06\x86\x43\x5f\xdf\x46\xf2\xda\xfc\xf9\x5e\x8f\x3d\xc1\xd5\xf2"


def test_the_version_these_values_pin() -> None:
    assert METADATA_TERMS_VERSION == 2


@pytest.mark.parametrize(
    ("tag", "value", "canonical", "term"), FORMAT, ids=[row[2][:40] for row in FORMAT]
)
def test_each_tag_encodes_and_hashes_as_stored(
    tag: str, value: Any, canonical: str, term: bytes
) -> None:
    assert _canonical(value) == canonical
    assert canonical.startswith(tag)
    assert _equals_term("k", value) == term
    assert len(term) == 17


def test_every_documented_tag_is_pinned() -> None:
    assert _metadata.__doc__ is not None
    documented = re.findall(r"^\| `([^`]+)` \|", _metadata.__doc__, re.MULTILINE)
    assert len(documented) == len(set(documented)) == 18
    assert set(documented) == {tag for tag, *_ in FORMAT}


def test_the_terms_of_a_key_are_pinned() -> None:
    assert _present_term("k") == K_PRESENT
    assert (
        _present_term("s") == b"k\x12\x57\xfe\xfe\x1d\x9f\x2c\xad\x44\x08\xe3\x92\x3a\xb6\x5a\xa8"
    )
    assert (
        _equals_term("s", "x")
        == b"v\xa5\xfe\xc1\x1b\x18\x53\x6e\xe3\x62\x91\xc6\x2c\x47\x5b\x9e\x3b"
    )


class Level(enum.IntEnum):
    HIGH = 1


class Text(str):
    pass


# Values the readable copy answers every filter on exactly: no terms (version 2).
PLAIN: list[Any] = [
    "x",
    1,
    -(2**63),
    2**63 - 1,
    0.5,
    -0.0,
    math.inf,
    {},
    {"a": 1},
    {"": "x"},
    {"a": [None, [1, 2.5], {"b": "c"}, []]},
]
# Values it does not: a "present" and an "equals" term, as in version 1.
TERMED: list[Any] = [
    True,
    False,
    2**63,
    math.nan,
    [],
    ["x"],
    (1,),
    {"a": 1, "b": 2},
    {"a": True},
    {"a": [False]},
    {"a": (1,)},
    {"a.b": 1},
    {"$a": 1},
    {1: "x"},
    {"a": {"b": 1, "c": 2}},
    b"x",
    Decimal(1),
    Level.HIGH,
    Text("x"),
    uuid.UUID(int=1),
    {1, 2},
]


@pytest.mark.parametrize("value", PLAIN, ids=repr)
def test_a_plain_value_stores_no_terms(value: Any) -> None:
    assert metadata_terms({"k": value, "n": None}) == []


@pytest.mark.parametrize("value", TERMED, ids=repr)
def test_any_other_value_stores_two_terms(value: Any) -> None:
    assert metadata_terms({"k": value, "n": None, "s": "x"}) == [
        K_PRESENT,
        _equals_term("k", value),
    ]


@pytest.mark.parametrize("key", ["", "a.b", "$a", "a\0b"])
def test_a_key_that_is_no_plain_path_stores_two_terms(key: str) -> None:
    assert metadata_terms({key: "x"}) == [_present_term(key), _equals_term(key, "x")]


def test_a_document_of_version_1_is_matched_by_its_terms() -> None:
    """Version 1 stored terms for every key not None: its documents still match, since a
    termed key is matched by its terms alone and the terms themselves are unchanged."""
    assert metadata_filter({"k": True}) == {
        "$or": [
            {"metadata_terms": FORMAT[1][3]},
            {"metadata.k": {"$eq": 1}, "metadata_terms": {"$ne": K_PRESENT}},
        ]
    }
