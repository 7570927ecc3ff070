"""What `_langgraph_serde` (and `_codec`) take from LangGraph's serializer beyond its public
API, checked against the installed LangGraph: a release that moves or changes any of it
fails here, naming what moved, instead of `copy-threads` deciding wrongly what decodes
exactly, or the codec storing values in a longer form."""

from __future__ import annotations

import dataclasses
import datetime
import importlib
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo import _langgraph_serde as lg_serde
from langgraph.checkpoint.mongo._bson_values import BSON_CODES
from langgraph.checkpoint.mongo._codec import IMPLIED_TYPE

ADAPTER = "src/langgraph/checkpoint/mongo/_langgraph_serde.py"


def moved(what: str, detail: str) -> str:
    return f"LangGraph moved or changed {what} ({detail}): update {ADAPTER} to follow it"


@dataclasses.dataclass
class Point:
    x: int


def test_the_extension_codes_are_langgraphs() -> None:
    theirs = {name: value for name, value in vars(jsonplus).items() if name.startswith("EXT_")}
    for name, code in lg_serde.EXT_CODES.items():
        assert name in theirs, moved(f"jsonplus.{name}", "no longer defined")
        assert theirs[name] == code, moved(f"jsonplus.{name}", f"{theirs[name]}, not {code}")
    new = sorted(set(theirs) - set(lg_serde.EXT_CODES))
    assert not new, moved("jsonplus' extension codes", f"new ones: {new}")


def test_the_safe_types_and_methods_are_langgraphs() -> None:
    module = "langgraph.checkpoint.serde._msgpack"
    try:
        msgpack = importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(moved(module, f"cannot be imported: {exc}"))
    for name, ours in [
        ("SAFE_MSGPACK_TYPES", lg_serde.SAFE_TYPES),
        ("SAFE_MSGPACK_METHODS", lg_serde.SAFE_METHODS),
    ]:
        theirs = getattr(msgpack, name, None)
        assert theirs is ours, moved(f"{module}.{name}", "not the set the adapter reads")
    assert ("datetime", "datetime") in lg_serde.SAFE_TYPES
    assert ("datetime", "datetime", "fromisoformat") in lg_serde.SAFE_METHODS


@pytest.mark.parametrize(
    ("allowed", "expected"),
    [
        (None, {("os", "PathLike"): False, ("datetime", "date"): True}),
        ([("os", "PathLike")], {("os", "PathLike"): True, ("os", "sep"): False}),
        (True, {("os", "PathLike"): True}),
    ],
)
def test_the_allow_list_is_where_the_adapter_reads_it(
    allowed: Any, expected: dict[tuple[str, str], bool]
) -> None:
    serde = JsonPlusSerializer(allowed_msgpack_modules=allowed)
    assert hasattr(serde, lg_serde.ALLOWED_ATTRIBUTE), moved(
        f"JsonPlusSerializer.{lg_serde.ALLOWED_ATTRIBUTE}", "no such attribute"
    )
    for (module, name), allows in expected.items():
        assert lg_serde.allows(serde, module, name) is allows, moved(
            f"JsonPlusSerializer.{lg_serde.ALLOWED_ATTRIBUTE}",
            f"allowed_msgpack_modules={allowed!r} no longer reads as it did for {module}.{name}",
        )


def test_the_ext_hook_is_the_one_loads_typed_calls() -> None:
    """Replacing the hook must change how values decode: an attribute left behind by a
    release that decodes through another would make the check a silent no-op."""
    serde = JsonPlusSerializer()
    assert callable(getattr(serde, lg_serde.EXT_HOOK_ATTRIBUTE, None)), moved(
        f"JsonPlusSerializer.{lg_serde.EXT_HOOK_ATTRIBUTE}", "no such attribute"
    )
    seen: list[int] = []

    def hook(code: int, data: bytes) -> Any:
        seen.append(code)
        return lg_serde.ext_hook(serde)(code, data)

    value = {"point": Point(1), "when": datetime.datetime(2020, 1, 2, tzinfo=datetime.timezone.utc)}
    stored = serde.dumps_typed(value)
    assert lg_serde.with_ext_hook(serde, hook).loads_typed(stored) == value
    assert seen, moved(
        f"JsonPlusSerializer.{lg_serde.EXT_HOOK_ATTRIBUTE}", "loads_typed no longer calls it"
    )
    assert set(seen) <= lg_serde.CONSTRUCTED | {lg_serde.METHOD}
    assert serde.loads_typed(stored) == value  # the original keeps its own hook
    assert lg_serde.unpack(stored[1], lg_serde.ext_hook(serde)) == value


def test_the_codecs_implied_types_are_what_langgraph_writes() -> None:
    """`_codec` leaves out the type `msgpack` and stores `None` as null: both are what
    `JsonPlusSerializer` writes for almost every value (a change costs bytes, never data)."""
    serde = JsonPlusSerializer()
    assert serde.dumps_typed({"a": 1})[0] == IMPLIED_TYPE, moved(
        "JsonPlusSerializer.dumps_typed", f"a dict is no longer typed {IMPLIED_TYPE!r}"
    )
    assert serde.dumps_typed(None) == ("null", b""), moved(
        "JsonPlusSerializer.dumps_typed", "None is no longer ('null', b'')"
    )


def test_the_rebuilt_encoder_packs_what_langgraph_packs_byte_for_byte() -> None:
    """`_bson_values` packs with a copy of LangGraph's encoder (`lg_serde.encoder`): for
    every value LangGraph packs, the copy's bytes are LangGraph's where the hook takes
    nothing, the hook is asked at every depth (inside what LangGraph packs too), and the
    globals it replaces are still the ones LangGraph's encoder reads."""
    for name in lg_serde.ENCODER_GLOBALS:
        assert name in vars(jsonplus), moved(f"jsonplus.{name}", "no longer defined")
    names = set(jsonplus._msgpack_enc.__code__.co_names)
    assert {"_msgpack_default", "_option"} <= names, moved(
        "jsonplus._msgpack_enc", f"it no longer packs with its module's globals: {names}"
    )
    asked: list[Any] = []
    encoder = lg_serde.encoder(lambda value: asked.append(value))
    values: list[Any] = [
        {"a": [1, 2.5, None, "x", b"y"]},
        Point(3),
        {"p": [Point(1)], "when": datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)},
        {frozenset({1}), 2},
        HumanMessage("hi", id="1", additional_kwargs={"k": [Point(2)]}),
    ]
    for value in values:
        assert encoder.encode(value) == jsonplus._msgpack_enc(value), moved(
            "jsonplus._msgpack_enc", f"the rebuilt copy packs {value!r} differently"
        )
    # A frozenset inside a set: packed by LangGraph's own `_msgpack_enc`, which the copy's is.
    assert frozenset({1}) in asked, moved("jsonplus._msgpack_default", "inner values skip the hook")


def test_bson_extension_codes_are_not_langgraphs() -> None:
    """Stored `msgpack-bson` values carry these codes; LangGraph's own stay below them."""
    assert max(lg_serde.EXT_CODES.values()) < min(BSON_CODES.values())
    assert len(set(BSON_CODES.values())) == len(BSON_CODES)


def test_the_permissive_warning_set_is_where_bson_values_quiets_it() -> None:
    warned = getattr(jsonplus, lg_serde.WARNED_ATTRIBUTE, None)
    assert isinstance(warned, set), moved(f"jsonplus.{lg_serde.WARNED_ATTRIBUTE}", "not a set")


def test_a_delta_snapshot_decodes_to_the_type_the_threads_command_unwraps() -> None:
    """`threads show` shows a `DeltaChannel` snapshot's value, not the snapshot."""
    from langgraph.channels.delta import DeltaChannel

    channel: DeltaChannel[list[str]] = DeltaChannel(
        lambda state, writes: state, snapshot_frequency=1
    )
    serde = JsonPlusSerializer()
    snapshot = serde.loads_typed(serde.dumps_typed(lg_serde.DeltaSnapshot(["a"])))
    assert isinstance(snapshot, lg_serde.DeltaSnapshot), moved("_DeltaSnapshot", "decodes apart")
    assert snapshot.value == ["a"]
    assert channel.from_checkpoint(snapshot).get() == ["a"]
