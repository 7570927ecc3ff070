"""BSON's own values (`ObjectId`, `Decimal128`, `Binary`, ...) in states, pending writes
and metadata: stored and read back with their exact type, on every backend and both
savers, with LangGraph's default serializer, its strict mode and an encrypting one;
metadata filters match them by value (issue 43)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from bson import SON, Code, Int64
from bson.binary import Binary
from bson.datetime_ms import DatetimeMS
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde import _msgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel, ConfigDict

from langgraph.checkpoint.mongo import migrate
from langgraph.checkpoint.mongo._bson_values import BSON_MSGPACK, with_bson_values
from langgraph.checkpoint.mongo._codec import codec
from langgraph.checkpoint.mongo._commands import Command
from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend
from support.helpers import config, either, listed, new_thread, put, read_commands
from support.properties import same

OID = ObjectId("65a1b2c3d4e5f60718293a4b")

# Each value a BSON type of its own, read back with that exact type.
BSON_VALUES: dict[str, Any] = {
    "ObjectId": OID,
    "Decimal128": Decimal128("-1.10E+5"),
    "Binary4": Binary(uuid.UUID("12345678-1234-5678-1234-567812345678").bytes, 4),
    "Binary0": Binary(b"raw", 0),
    "Binary128": Binary(b"user-defined", 128),
    "Timestamp": Timestamp(1_700_000_000, 7),
    "Regex": Regex("^a.*b$", "im"),
    "DBRef": DBRef("orders", ObjectId("65a1b2c3d4e5f60718293a4c"), "shop", {"note": "x"}),
    "MinKey": MinKey(),
    "MaxKey": MaxKey(),
    "DatetimeMS": DatetimeMS(1_700_000_000_123),
}

# Subclasses of int, dict and str, which msgpack packs as such: read back as those.
SUBCLASSED: dict[str, tuple[Any, Any]] = {
    "Int64": (Int64(2**40), 2**40),
    "SON": (SON([("b", 1), ("a", OID)]), {"b": 1, "a": OID}),
    "Code": (Code("f()"), "f()"),
}


class AesLike:
    """A cipher for `EncryptedSerializer` (XOR: the test needs bytes changed, not safety)."""

    def encrypt(self, plaintext: bytes) -> tuple[str, bytes]:
        return "xor", bytes(b ^ 0x5A for b in plaintext)

    def decrypt(self, ciphername: str, ciphertext: bytes) -> bytes:
        assert ciphername == "xor"
        return bytes(b ^ 0x5A for b in ciphertext)


def strict() -> JsonPlusSerializer:
    """LangGraph's serializer as `LANGGRAPH_STRICT_MSGPACK=true` makes it: only its safe
    types (and whatever a graph's schema allow-lists) are rebuilt."""
    return JsonPlusSerializer(allowed_msgpack_modules=None)


SERDES: dict[str, Callable[[], SerializerProtocol]] = {
    "default": JsonPlusSerializer,
    "strict": strict,
    "encrypted": lambda: EncryptedSerializer(AesLike(), JsonPlusSerializer()),
    "encrypted-strict": lambda: EncryptedSerializer(AesLike(), strict()),
}


@dataclasses.dataclass
class Holder:
    ids: list[Any]
    ref: Any


class Order(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    id: ObjectId
    price: Decimal128
    refs: list[Any]


# What a graph's schema would allow-list (LangGraph does it for the types it names).
SCHEMA_TYPES = [(__name__, "Holder"), (__name__, "Order")]


async def stored_writes(saver: Any, stored: Any) -> dict[str, Any]:
    got = await either(saver).get_stored(stored)
    return {channel: value for _, channel, value in got.pending_writes or []}


@pytest.mark.parametrize("serde", SERDES)
async def test_bson_values_round_trip_with_their_exact_type(backend: Backend, serde: str) -> None:
    """In `channel_values` (each alone, and in a dict and a list), in pending writes and in
    metadata: `get_tuple` and `list` return every value with its exact type."""
    async with backend.saver(serde=SERDES[serde]()) as saver:
        values = {f"one_{name}": value for name, value in BSON_VALUES.items()}
        values["all"] = dict(BSON_VALUES)
        values["list"] = list(BSON_VALUES.values())
        values["plain"] = {"text": "no BSON value here", "n": [1, 2.5, None]}
        metadata = {"user": OID, "bson": dict(BSON_VALUES)}
        stored = await put(saver, new_thread(), values=values, metadata=metadata)
        writes = [("w_all", dict(BSON_VALUES)), ("w_binary", BSON_VALUES["Binary4"])]
        await either(saver).put_writes(stored, writes, "task")
        got = await either(saver).get_stored(stored)
        [first] = await listed(saver, stored)
        for read in (got, first):
            channel_values = read.checkpoint["channel_values"]
            for name, value in values.items():
                assert same(channel_values[name], value), (name, channel_values[name])
            assert same(read.metadata["user"], OID)
            assert same(read.metadata["bson"], BSON_VALUES)
        written = await stored_writes(saver, stored)
        assert same(written["w_all"], BSON_VALUES)
        assert same(written["w_binary"], BSON_VALUES["Binary4"])


@pytest.mark.parametrize("serde", SERDES)
async def test_bson_values_nested_in_objects_round_trip(backend: Backend, serde: str) -> None:
    """Inside a dataclass, a pydantic model and LangChain messages (which LangGraph packs
    itself): exact too, in strict mode with only the graph's own types allow-listed."""
    async with backend.saver(serde=SERDES[serde]()) as base:
        saver = base.with_allowlist(SCHEMA_TYPES)
        holder = Holder(ids=[OID, BSON_VALUES["Binary4"]], ref=BSON_VALUES["DBRef"])
        order = Order(id=OID, price=BSON_VALUES["Decimal128"], refs=list(BSON_VALUES.values()))
        messages = [
            HumanMessage("hi", id="1", additional_kwargs={"user": OID}),
            AIMessage("ok", id="2", response_metadata={"values": dict(BSON_VALUES)}),
        ]
        values = {"holder": holder, "order": order, "messages": messages, "set": {OID}}
        stored = await put(saver, new_thread(), values=values)
        await either(saver).put_writes(stored, [("messages", messages)], "task")
        got = (await either(saver).get_stored(stored)).checkpoint["channel_values"]
        assert got["holder"] == holder
        assert type(got["holder"]) is Holder
        assert same(got["holder"].ids, holder.ids)
        assert same(got["holder"].ref, holder.ref)
        assert type(got["order"]) is Order
        assert same(got["order"].refs, order.refs)
        assert same(got["order"].id, OID)
        assert same(got["order"].price, order.price)
        assert got["messages"] == messages
        assert same(got["messages"][0].additional_kwargs, {"user": OID})
        assert same(got["messages"][1].response_metadata, {"values": BSON_VALUES})
        assert got["set"] == {OID}
        assert type(next(iter(got["set"]))) is ObjectId
        assert (await stored_writes(saver, stored))["messages"] == messages


async def test_int64_son_and_code_read_back_as_the_types_they_subclass(saver: Any) -> None:
    """msgpack packs them as the int, dict (in order) and str they are, as LangGraph's
    serializer always has."""
    values = {name: value for name, (value, _) in SUBCLASSED.items()}
    stored = await put(saver, new_thread(), values=values, metadata={"bson": values})
    got = await either(saver).get_stored(stored)
    for name, (_, plain) in SUBCLASSED.items():
        assert same(got.checkpoint["channel_values"][name], plain)
        assert same(got.metadata["bson"][name], plain)


async def test_a_state_without_bson_values_is_stored_as_before(saver: Any) -> None:
    """The stored format is a promise: a value LangGraph's serializer packs is stored with
    its bytes (bare, type `msgpack` implied), exactly as 0.2.0 stored it; only a value
    that holds BSON values gets the new type, which LangGraph's serializer (all 0.2.0 reads
    with) refuses by name instead of returning something else."""
    plain = {"text": "hello", "n": [1, 2.5, None], "nested": {"k": True}}
    stored = await put(saver, new_thread(), values={"plain": plain, "oid": OID})
    doc = await maybe_await(
        saver.checkpoint_collection.find_one({"thread_id": stored["configurable"]["thread_id"]})
    )
    entries = {entry["channel"]: entry for entry in doc["channel_values"]}
    assert set(entries["plain"]) == {"channel", "data"}
    assert entries["plain"]["data"] == JsonPlusSerializer().dumps_typed(plain)[1]
    assert entries["oid"]["type"] == BSON_MSGPACK
    with pytest.raises(NotImplementedError, match=BSON_MSGPACK):
        JsonPlusSerializer().loads_typed((BSON_MSGPACK, bytes(entries["oid"]["data"])))


async def test_metadata_stores_bson_values_as_mongodb_stores_them(saver: Any) -> None:
    """`metadata` holds each value as the server stores it (read back here as the driver
    decodes it: a `DatetimeMS` is a BSON date, a subtype-0 `Binary` binary data), and the
    serializer's copy beside it is what reads return."""
    stored = await put(saver, new_thread(), metadata={"bson": dict(BSON_VALUES)})
    doc = await maybe_await(
        saver.checkpoint_collection.find_one({"thread_id": stored["configurable"]["thread_id"]})
    )
    readable = doc["metadata"]["bson"]
    expected = dict(BSON_VALUES)
    expected["DatetimeMS"] = BSON_VALUES["DatetimeMS"].as_datetime()
    expected["Binary0"] = b"raw"
    assert same(dict(readable), expected)
    assert "serialized_metadata" in doc


async def test_a_date_beyond_pythons_years_in_metadata_reads_back(saver: Any) -> None:
    """A driver decodes a BSON date beyond `datetime`'s years only when told to: such a
    `DatetimeMS` is kept out of `metadata` (as its repr), so every read still decodes."""
    far = DatetimeMS(2**62)
    stored = await put(saver, new_thread(), values={"far": far}, metadata={"far": far})
    got = await either(saver).get_stored(stored)
    assert same(got.metadata["far"], far)
    assert same(got.checkpoint["channel_values"]["far"], far)
    assert [t.metadata["far"] for t in await listed(saver, None, filter={"far": far})] == [far]


# Filter values beside metadata values the server may call equal and Python does not.
FILTER_CASES: list[tuple[str, Any, list[Any]]] = [
    ("ObjectId", OID, [OID, ObjectId("65a1b2c3d4e5f60718293a4c"), str(OID)]),
    ("Decimal128", Decimal128("1.0"), [Decimal128("1.0"), Decimal128("1.00"), 1, 1.0]),
    ("Binary0", Binary(b"x", 0), [Binary(b"x", 0), b"x", Binary(b"x", 5)]),
    ("Binary4", BSON_VALUES["Binary4"], [BSON_VALUES["Binary4"], BSON_VALUES["Binary4"][:]]),
    ("Timestamp", Timestamp(5, 1), [Timestamp(5, 1), Timestamp(5, 2)]),
    ("Timestamp-empty", Timestamp(0, 0), [Timestamp(0, 0), Timestamp(0, 1)]),
    ("Regex", Regex("a", "i"), [Regex("a", "i"), Regex("a"), "a"]),
    ("DBRef", DBRef("c", OID), [DBRef("c", OID), DBRef("c", OID, "db"), {"$ref": "c"}]),
    (
        "DBRef-extra",
        DBRef("c", 1, x=1, y=2),
        [DBRef("c", 1.0, y=2, x=1), DBRef("c", True, x=1, y=2)],
    ),
    ("MinKey", MinKey(), [MinKey(), MaxKey(), None]),
    ("DatetimeMS", DatetimeMS(5), [DatetimeMS(5), DatetimeMS(6), DatetimeMS(5).as_datetime()]),
    ("Code", Code("a"), ["a", Code("a")]),
    ("str-vs-Code", "a", [Code("a"), "a"]),
]


@pytest.mark.parametrize(
    ("name", "wanted", "stored_values"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
async def test_metadata_filters_match_bson_values_as_in_memory_saver_does(
    saver: Any, name: str, wanted: Any, stored_values: list[Any]
) -> None:
    """`list(filter=...)` and `list_threads(filter=...)` return exactly what `InMemorySaver`
    (with a serializer that stores BSON values) returns: Python's equality."""
    memory = InMemorySaver(serde=with_bson_values(JsonPlusSerializer()))
    threads = []
    for value in stored_values:
        thread = new_thread()
        threads.append(thread)
        for each in (saver, memory):
            await put(each, thread, metadata={"v": value})
    want = [
        t.config["configurable"]["thread_id"]
        for t in await listed(memory, None, filter={"v": wanted})
    ]
    got = [
        t.config["configurable"]["thread_id"]
        for t in await listed(saver, None, filter={"v": wanted})
    ]
    assert sorted(got) == sorted(want)
    found = await either(saver).list_threads(filter={"v": wanted})
    assert sorted(t.thread_id for t in found) == sorted(want)


async def test_a_filter_on_an_object_id_is_an_equality_an_index_serves(
    saver: Any, sent_commands: list[Command]
) -> None:
    """The server condition is `$eq` on the ObjectId itself (what an index on the metadata
    field serves), exact: `limit` goes to the server."""
    users = [ObjectId() for _ in range(3)]
    for user in users:
        await put(saver, new_thread(), metadata={"user": user})
    sent_commands.clear()
    [found] = await listed(saver, None, filter={"user": users[1]}, limit=1)
    assert found.metadata["user"] == users[1]
    # One aggregate; where the server's `$lookup` scans (SecantusDB) the writes follow apart.
    assert [c.method for c in sent_commands] == read_commands(saver)
    command = sent_commands[0]
    match = command.args[0][0]["$match"]
    assert match["metadata.user"]["$eq"] == users[1]
    assert any("$limit" in stage for stage in command.args[0])


async def test_a_value_no_serializer_takes_is_refused_by_path_with_nothing_written(
    saver: Any,
) -> None:
    thread = new_thread()
    with pytest.raises(
        TypeError, match=r"checkpoint\['channel_values'\]\['bad'\].*nothing was written"
    ):
        await put(saver, thread, values={"oid": OID, "bad": [OID, object()]})
    with pytest.raises(TypeError, match=r"metadata\['bad'\]"):
        await put(saver, thread, metadata={"user": OID, "bad": object()})
    stored = await put(saver, thread)
    with pytest.raises(TypeError, match=r"writes\[0\] value"):
        await either(saver).put_writes(stored, [("w", {"oid": OID, "x": object()})], "task")
    assert len(await listed(saver, config(thread))) == 1
    assert (await either(saver).get_stored(stored)).pending_writes == []


async def test_copy_and_verify_threads_carry_bson_values_exactly(backend: Backend) -> None:
    """From one of our savers to another, in strict mode: the copy holds the values with
    their exact types, and the verification compares them so."""
    serde = strict()
    async with backend.saver(serde=serde) as source, backend.saver(serde=serde) as target:
        reader: Any = source.with_allowlist(SCHEMA_TYPES)
        writer: Any = target.with_allowlist(SCHEMA_TYPES)
        values = {"all": dict(BSON_VALUES), "holder": Holder([OID], BSON_VALUES["DBRef"])}
        stored = await put(reader, new_thread(), values=values, metadata={"user": OID})
        await either(reader).put_writes(stored, [("w", dict(BSON_VALUES))], "task")
        report = await migrate.acopy_threads(reader, writer)
        assert [t.status.value for t in report.threads] == ["copied"]
        assert (await migrate.averify_threads(reader, writer)).ok
        got = await either(writer).get_stored(stored)
        assert same(got.checkpoint["channel_values"]["all"], BSON_VALUES)
        assert same(got.checkpoint["channel_values"]["holder"].ref, BSON_VALUES["DBRef"])
        assert same(got.metadata["user"], OID)
        assert same((await stored_writes(writer, stored))["w"], BSON_VALUES)


def test_strict_mode_from_the_environment_needs_no_allow_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`LANGGRAPH_STRICT_MSGPACK=true` (read when a `JsonPlusSerializer` is made) blocks
    every unlisted type; the codec's serializer lists BSON's own."""
    monkeypatch.setattr(_msgpack, "STRICT_MSGPACK_ENABLED", True)
    serde: SerializerProtocol = with_bson_values(JsonPlusSerializer())
    value = {
        "holder": [dict(BSON_VALUES)],
        "message": HumanMessage("x", additional_kwargs={"u": OID}),
    }
    assert same(serde.loads_typed(serde.dumps_typed(value))["holder"], [BSON_VALUES])
    assert serde.loads_typed(serde.dumps_typed(value))["message"].additional_kwargs == {"u": OID}


BSON_STRATEGY = st.one_of(
    st.binary(min_size=12, max_size=12).map(ObjectId),
    # Decimal128 holds 34 significant digits: 31 before the point and 3 after it at most.
    st.decimals(-(10**30) + 1, 10**30 - 1, places=3).map(Decimal128),
    st.sampled_from([Decimal128("Infinity"), Decimal128("-Infinity"), Decimal128("-0")]),
    st.builds(Binary, st.binary(max_size=8), st.sampled_from([0, 3, 4, 5, 128, 255])),
    st.builds(Timestamp, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1)),
    st.builds(Regex, st.text(max_size=4), st.integers(0, 255)),
    st.builds(DBRef, st.text(max_size=4), st.binary(min_size=12, max_size=12).map(ObjectId)),
    st.sampled_from([MinKey(), MaxKey()]),
    st.integers(-(2**63), 2**63 - 1).map(DatetimeMS),
)
NESTED = st.recursive(
    st.one_of(BSON_STRATEGY, st.none(), st.integers(-5, 5), st.text(max_size=3)),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(max_size=3), children, max_size=3),
        st.builds(Holder, st.lists(children, max_size=2), children),
    ),
    max_leaves=8,
)


@pytest.mark.no_server
@settings(max_examples=300, deadline=None)
@given(value=NESTED, serde=st.sampled_from(sorted(SERDES)))
def test_any_nesting_of_bson_values_round_trips_through_the_codec(value: Any, serde: str) -> None:
    """What the savers store: a value serialized by the saver's codec, stored, and
    decoded back is the value, with every BSON value's exact type."""
    saver_codec = codec(SERDES[serde](), "zstd")
    with_schema = saver_codec._replace(serde=with_bson_values(allowing_schema(SERDES[serde]())))
    for each in (saver_codec, with_schema):
        back = each.decode(each.encode_field(value))
        if serde.endswith("strict") and each is saver_codec and _holds_holder(value):
            continue  # the graph's own dataclass needs its schema's allow-list
        assert same_deep(back, value), (value, back)


def allowing_schema(serde: SerializerProtocol) -> SerializerProtocol:
    if isinstance(serde, EncryptedSerializer):
        return EncryptedSerializer(serde.cipher, allowing_schema(serde.serde))
    assert isinstance(serde, JsonPlusSerializer)
    return serde.with_msgpack_allowlist(SCHEMA_TYPES)


def _holds_holder(value: Any) -> bool:
    if isinstance(value, Holder):
        return True
    if isinstance(value, list):
        return any(_holds_holder(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_holder(item) for item in value.values())
    return False


def same_deep(a: Any, b: Any) -> bool:
    """`same`, into dataclasses too."""
    if isinstance(a, Holder) or isinstance(b, Holder):
        return type(a) is type(b) and same_deep(a.ids, b.ids) and same_deep(a.ref, b.ref)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_deep(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same_deep(a[k], b[k]) for k in a)
    return same(a, b)
