"""Behaviour the conformance suite does not pin down, on every backend and both savers."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._commands import Command
from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend, CommandLog
from support.helpers import (
    after_commands,
    checkpoint,
    config,
    either,
    ids,
    listed,
    methods,
    new_thread,
    put,
)


async def test_pending_writes_come_back_in_writes_sort_key_order(saver: Any) -> None:
    thread = new_thread()
    stored = await put(saver, thread)
    # Stored out of order: task paths decide first, then task ids, then the index.
    await either(saver).put_writes(stored, [("a", 1), ("b", 2)], "task-z", "~__pregel_pull, n2")
    await either(saver).put_writes(stored, [("c", 3)], "task-a", "~__pregel_pull, n2")
    await either(saver).put_writes(stored, [("d", 4), (ERROR, "boom")], "task-b", "")
    await either(saver).put_writes(stored, [("e", 5)], "task-c", "~__pregel_pull, n1")
    expected = [
        ("task-b", ERROR, "boom"),  # no task path sorts first; idx -1 before 0
        ("task-b", "d", 4),
        ("task-c", "e", 5),
        ("task-a", "c", 3),
        ("task-z", "a", 1),
        ("task-z", "b", 2),
    ]
    got = await either(saver).get_tuple(stored)
    assert got is not None
    assert got.pending_writes == expected
    [listed_tuple] = await listed(saver, stored)
    assert listed_tuple.pending_writes == expected


async def test_regular_writes_keep_first_value_special_writes_replace(saver: Any) -> None:
    thread = new_thread()
    stored = await put(saver, thread)
    await either(saver).put_writes(stored, [("ch", "first"), (INTERRUPT, "i1")], "t1")
    await either(saver).put_writes(stored, [("ch", "second"), (INTERRUPT, "i2")], "t1")
    got = await either(saver).get_tuple(stored)
    assert got is not None
    assert got.pending_writes is not None
    assert sorted(got.pending_writes) == [("t1", INTERRUPT, "i2"), ("t1", "ch", "first")]
    # One document per channel: the interrupt is stored at LangGraph's fixed index for
    # its channel, not at its position, which is what makes a retry replace it.
    docs = await maybe_await(saver.writes_collection.find({"thread_id": thread}).to_list(None))
    assert sorted((d["channel"], d["_id"]["idx"]) for d in docs) == [
        (INTERRUPT, WRITES_IDX_MAP[INTERRUPT]),
        ("ch", 0),
    ]
    # The same, one write per call (sent as a single update_one, not a bulk write).
    for value in ("first", "second"):
        await either(saver).put_writes(stored, [("ch", value)], "t2")
        await either(saver).put_writes(stored, [(INTERRUPT, value)], "t2")
    got = await either(saver).get_tuple(stored)
    assert got is not None
    assert got.pending_writes is not None
    assert sorted(w for w in got.pending_writes if w[0] == "t2") == [
        ("t2", INTERRUPT, "second"),
        ("t2", "ch", "first"),
    ]


async def test_retried_put_and_put_writes_leave_one_copy(saver: Any) -> None:
    thread = new_thread()
    cp = checkpoint({"x": 1})
    md = {"source": "loop", "step": 1, "parents": {}}
    for _ in range(3):
        stored = await either(saver).put(config(thread), cp, md, {})
        await either(saver).put_writes(stored, [("x", 2), ("y", 3)], "t")
    [only] = await listed(saver, config(thread))
    assert only.checkpoint["id"] == cp["id"]
    assert only.pending_writes is not None
    assert sorted(only.pending_writes) == [("t", "x", 2), ("t", "y", 3)]


async def test_get_tuple_latest_and_by_id(saver: Any) -> None:
    thread = new_thread()
    first = await put(saver, thread, values={"v": 1})
    second = await put(
        saver, thread, parent=first["configurable"]["checkpoint_id"], values={"v": 2}
    )
    latest = await either(saver).get_tuple(config(thread))
    assert latest is not None
    assert latest.config == second
    assert latest.checkpoint["channel_values"] == {"v": 2}
    assert latest.parent_config == first
    older = await either(saver).get_tuple(first)
    assert older is not None
    assert older.checkpoint["channel_values"] == {"v": 1}
    assert older.parent_config is None
    assert await either(saver).get_tuple(config(thread, checkpoint_id="nope")) is None
    assert await either(saver).get_tuple(config(new_thread())) is None
    assert await either(saver).get_tuple(config(thread, "other-ns")) is None


async def test_list_is_newest_first_across_threads_and_namespaces(saver: Any) -> None:
    a, b = new_thread(), new_thread()
    order = []
    for thread, ns in [(a, ""), (b, ""), (a, "sub:1"), (b, "sub:2"), (a, "")]:
        order.append((await put(saver, thread, ns=ns))["configurable"]["checkpoint_id"])
    everything = ids(await listed(saver, None))
    assert [i for i in everything if i in order] == order[::-1]
    only_a = await listed(saver, {"configurable": {"thread_id": a}})
    assert ids(only_a) == [order[4], order[2], order[0]]
    root_a = await listed(saver, config(a, ""))
    assert ids(root_a) == [order[4], order[0]]
    by_id = await listed(saver, config(a, "", order[0]))
    assert ids(by_id) == [order[0]]


async def test_list_limit_and_before_edges(saver: Any) -> None:
    thread = new_thread()
    made = [(await put(saver, thread))["configurable"]["checkpoint_id"] for _ in range(5)]
    newest_first = made[::-1]
    cfg = config(thread)
    assert await listed(saver, cfg, limit=0) == []
    assert await listed(saver, cfg, limit=-1) == []
    assert ids(await listed(saver, cfg, limit=2)) == newest_first[:2]
    assert ids(await listed(saver, cfg, limit=50)) == newest_first
    before = config(thread, checkpoint_id=made[2])
    assert ids(await listed(saver, cfg, before=before)) == [made[1], made[0]]
    assert ids(await listed(saver, cfg, before=before, limit=1)) == [made[1]]
    # `before` the oldest: nothing; `before` without an id: no bound.
    assert await listed(saver, cfg, before=config(thread, checkpoint_id=made[0])) == []
    assert ids(await listed(saver, cfg, before=config(thread))) == newest_first
    with pytest.raises(TypeError, match="limit"):
        await listed(saver, cfg, limit="3")


async def test_metadata_keys_with_dots_and_dollars_round_trip_and_filter(saver: Any) -> None:
    thread = new_thread()
    md = {"a.b": 1, "$where": "x", "$": {"$gt": 1, "n.m": [1, 2]}, "": "empty", "ü": "ø"}
    stored = await put(saver, thread, metadata=md)
    await put(saver, thread, metadata={"a.b": 2})
    got = await either(saver).get_tuple(stored)
    assert got is not None
    for key, value in md.items():
        assert got.metadata[key] == value
    for key, value in md.items():
        found = await listed(saver, config(thread), filter={key: value})
        assert ids(found) == [stored["configurable"]["checkpoint_id"]], key


async def test_filter_is_python_equality(saver: Any) -> None:
    thread = new_thread()
    nested = await put(saver, thread, metadata={"d": {"x": 1, "y": [1, 2]}, "tags": ["a", "b"]})
    nested_id = nested["configurable"]["checkpoint_id"]
    numbers = await put(saver, thread, metadata={"n": 1, "f": 2.5, "big": 2**62})
    numbers_id = numbers["configurable"]["checkpoint_id"]

    async def matches(**flt: Any) -> list[str]:
        return ids(await listed(saver, config(thread), filter=flt))

    assert await matches(d={"y": [1, 2], "x": 1}) == [nested_id]  # key order is irrelevant
    assert await matches(d={"x": 1}) == []  # a sub-dict is not equal
    assert await matches(tags="a") == []  # a scalar never matches a list containing it
    assert await matches(tags=["b", "a"]) == []  # lists compare in order
    assert await matches(tags=["a", "b"]) == [nested_id]
    assert await matches(n=1.0) == [numbers_id]  # 1 == 1.0 == True in Python
    assert await matches(n=True) == [numbers_id]
    assert await matches(n="1") == []
    assert await matches(f=2.5, big=2**62) == [numbers_id]
    assert await matches(f=float("nan")) == []


async def test_none_filter_matches_missing_or_none(saver: Any) -> None:
    thread = new_thread()
    missing = (await put(saver, thread))["configurable"]["checkpoint_id"]
    explicit = (await put(saver, thread, metadata={"k": None}))["configurable"]["checkpoint_id"]
    present = (await put(saver, thread, metadata={"k": 0}))["configurable"]["checkpoint_id"]
    found = ids(await listed(saver, config(thread), filter={"k": None}))
    assert sorted(found) == sorted([missing, explicit])
    assert ids(await listed(saver, config(thread), filter={"k": 0})) == [present]
    assert ids(await listed(saver, config(thread), filter={})) == [present, explicit, missing]


@pytest.mark.parametrize(
    "value",
    [{"$ne": None}, {"$gt": ""}, {"$exists": True}, {"$regex": ".*"}, {"$in": ["loop", "input"]}],
)
async def test_operator_shaped_filter_values_are_data(saver: Any, value: Any) -> None:
    thread = new_thread()
    await put(saver, thread, metadata={"source": "loop"})
    literal = (await put(saver, thread, metadata={"source": value}))["configurable"][
        "checkpoint_id"
    ]
    assert ids(await listed(saver, config(thread), filter={"source": value})) == [literal]


@pytest.mark.parametrize("field", ["thread_id", "checkpoint_ns", "checkpoint_id"])
@pytest.mark.parametrize("value", [{"$ne": None}, {"$gt": ""}, 7, ["x"]])
async def test_non_string_ids_are_refused(saver: Any, field: str, value: Any) -> None:
    victim = new_thread()
    await put(saver, victim)
    cfg: Any = config("attacker")
    cfg["configurable"][field] = value
    with pytest.raises(TypeError, match=field):
        await either(saver).get_tuple(cfg)
    with pytest.raises(TypeError, match=field):
        await listed(saver, cfg)
    with pytest.raises(TypeError, match=field):
        await either(saver).put(cfg, checkpoint(), {}, {})
    if field != "checkpoint_id":
        cfg["configurable"].setdefault("checkpoint_id", "x")
    with pytest.raises(TypeError, match=field):
        await either(saver).put_writes(cfg, [("c", 1)], "task")
    assert len(await listed(saver, config(victim))) == 1


async def test_bad_arguments_are_named(saver: Any) -> None:
    thread = new_thread()
    stored = await put(saver, thread)
    with pytest.raises(ValueError, match="thread_id"):
        await either(saver).get_tuple({"configurable": {}})
    with pytest.raises(ValueError, match="configurable"):
        await either(saver).put({}, checkpoint(), {}, {})
    with pytest.raises(TypeError, match="task_id"):
        await either(saver).put_writes(stored, [("c", 1)], {"$ne": None})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="checkpoint_id"):
        await either(saver).put_writes(config(thread), [("c", 1)], "t")
    with pytest.raises(TypeError, match="filter key"):
        await listed(saver, None, filter={1: "x"})
    with pytest.raises(TypeError, match="filter"):
        await listed(saver, None, filter=[("source", "loop")])
    with pytest.raises(TypeError, match="run_ids"):
        await either(saver).delete_for_runs("run-1")
    with pytest.raises(TypeError, match="thread_ids"):
        await either(saver).prune(thread)
    with pytest.raises(ValueError, match="strategy"):
        await either(saver).prune([thread], strategy="keep_oldest")
    with pytest.raises(TypeError, match="thread_id"):
        await either(saver).delete_thread({"$ne": None})  # type: ignore[arg-type]
    assert len(await listed(saver, config(thread))) == 1


class Unserializable:
    def __reduce__(self) -> Any:
        raise RuntimeError("cannot serialize this")


async def test_unencodable_values_raise_and_send_nothing(
    saver: Any, command_log: CommandLog, sent_commands: list[Command]
) -> None:
    """A value the serializer refuses, or a malformed argument, is named before any
    command is sent (nothing reaches the driver; the wire server's log shows none)."""
    thread = new_thread()
    stored = await put(saver, thread)
    command_log.reset()
    sent_commands.clear()
    with pytest.raises(TypeError, match=r"checkpoint\['channel_values'\]\['bad'\]"):
        await put(saver, thread, values={"ok": 1, "bad": Unserializable()})
    outside = checkpoint()
    outside["versions_seen"] = {"node": {"x": Unserializable()}}  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"^checkpoint cannot be serialized"):
        await either(saver).put(config(thread), outside, {}, {})
    with pytest.raises(TypeError, match=r"metadata\['bad'\] cannot be serialized"):
        await put(saver, thread, metadata={"ok": 1, "bad": Unserializable()})
    with pytest.raises(TypeError, match=r"writes\[1\] value \(channel 'bad'\)"):
        await either(saver).put_writes(stored, [("ok", 1), ("bad", Unserializable())], "t")
    # Malformed arguments are named too.
    for writes, named in [
        ({"ok": 1}, "writes must be a sequence"),
        ([("ok", 1), ("lonely",)], r"writes\[1\] must be a \(channel, value\) pair"),
        (["ab"], r"writes\[0\] must be"),
    ]:
        with pytest.raises(TypeError, match=named):
            await either(saver).put_writes(stored, writes, "t")  # type: ignore[arg-type]
    for args, named in [
        (("not a checkpoint", {}), "checkpoint must be a dict"),
        ((checkpoint(), "not metadata"), "metadata must be a dict"),
    ]:
        with pytest.raises(TypeError, match=named):
            await either(saver).put(config(thread), *args, {})  # type: ignore[arg-type]
    assert sent_commands == []
    assert command_log.names == []
    [only] = await listed(saver, config(thread))
    assert only.config == stored
    assert only.pending_writes == []


async def test_encrypted_serializer(backend: Backend) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 32)
    async with backend.saver(serde=serde) as saver:
        thread = new_thread()
        stored = await put(saver, thread, values={"secret": "hunter2"}, metadata={"user": "ann"})
        await either(saver).put_writes(stored, [("secret", "hunter3")], "t")
        got = await either(saver).get_tuple(stored)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"secret": "hunter2"}
        assert got.pending_writes == [("t", "secret", "hunter3")]
        assert ids(await listed(saver, None, filter={"user": "ann"})) == [got.checkpoint["id"]]
        raw = await call_raw(saver.checkpoint_collection, "find_one", {"thread_id": thread})
        assert raw["checkpoint"]["type"].endswith("+aes")
        assert b"hunter2" not in raw["checkpoint"]["data"]
        raw_write = await call_raw(saver.writes_collection, "find_one", {"thread_id": thread})
        assert b"hunter3" not in raw_write["value"]["data"]


async def call_raw(collection: Any, method: str, *args: Any) -> Any:
    return await maybe_await(getattr(collection, method)(*args))


async def test_delete_thread_copy_thread_prune_and_runs(saver: Any) -> None:
    a, b = new_thread(), new_thread()
    a1 = await put(saver, a, metadata={"run_id": "r1"})
    a2 = await put(saver, a, parent=a1["configurable"]["checkpoint_id"], metadata={"run_id": "r2"})
    sub = await put(saver, a, ns="child:1", metadata={"run_id": "r2"})
    for cfg in (a1, a2, sub):
        await either(saver).put_writes(cfg, [("w", cfg["configurable"]["checkpoint_id"])], "t")
    await either(saver).copy_thread(a, b)
    copied = await listed(saver, {"configurable": {"thread_id": b}})
    original = await listed(saver, {"configurable": {"thread_id": a}})
    assert ids(copied) == ids(original)
    assert [t.pending_writes for t in copied] == [t.pending_writes for t in original]
    assert {t.config["configurable"]["thread_id"] for t in copied} == {b}
    [copied_a2] = [t for t in copied if t.checkpoint["id"] == a2["configurable"]["checkpoint_id"]]
    assert copied_a2.parent_config == {**a1, "configurable": {**a1["configurable"], "thread_id": b}}

    await either(saver).prune([a], strategy="keep_latest")
    kept = await listed(saver, {"configurable": {"thread_id": a}})
    assert sorted(ids(kept)) == sorted(
        [a2["configurable"]["checkpoint_id"], sub["configurable"]["checkpoint_id"]]
    )
    assert all(t.pending_writes for t in kept)

    await either(saver).delete_for_runs(["r2"])
    remaining_b = await listed(saver, {"configurable": {"thread_id": b}})
    assert ids(remaining_b) == [a1["configurable"]["checkpoint_id"]]
    assert remaining_b[0].pending_writes == [("t", "w", a1["configurable"]["checkpoint_id"])]
    assert await listed(saver, {"configurable": {"thread_id": a}}) == []

    await either(saver).delete_thread(b)
    assert await listed(saver, {"configurable": {"thread_id": b}}) == []
    assert await call_raw(saver.writes_collection, "count_documents", {}) == 0


async def test_saver_survives_copy(saver: Any) -> None:
    thread = new_thread()
    stored = await put(saver, thread)
    clone = copy.copy(saver)
    assert (await either(clone).get_stored(stored)).config == stored


@dataclasses.dataclass
class AllowedPoint:
    """A type the strict serializer of the allowlist test restores only once allowed."""

    x: int


async def test_with_allowlist_copy_decodes_with_its_own_serializer(backend: Backend) -> None:
    """`with_allowlist` swaps `serde` on a shallow copy: that copy reads with the new
    allowlist, the original keeps its own (LangGraph blocks a type not on it)."""
    strict = JsonPlusSerializer(allowed_msgpack_modules=[("os", "PathLike")])
    async with backend.saver(serde=strict) as saver:
        stored = await put(saver, new_thread(), values={"p": AllowedPoint(1)})
        allowed = saver.with_allowlist([(__name__, "AllowedPoint")])
        assert allowed is not saver
        restored = await either(allowed).get_tuple(stored)
        assert restored is not None
        assert restored.checkpoint["channel_values"]["p"] == AllowedPoint(1)
        blocked = await either(saver).get_tuple(stored)
        assert blocked is not None
        assert blocked.checkpoint["channel_values"]["p"] == {"x": 1}


async def test_documents_of_the_official_saver_are_refused_by_name(saver: Any) -> None:
    # langgraph-checkpoint-mongodb uses the same default collection names.
    foreign: dict[str, Any] = {
        "thread_id": "shared",
        "checkpoint_ns": "",
        "checkpoint_id": "1",
        "parent_checkpoint_id": None,
        "type": "msgpack",
        "checkpoint": b"\x80",
        "metadata": {},
    }
    await maybe_await(saver.checkpoint_collection.insert_one(foreign))
    # Reads of one namespace match `_id.checkpoint_ns`, which its documents do not have;
    # reads across namespaces or threads meet them, and refuse them by name.
    with pytest.raises(ValueError, match="langgraph-checkpoint-mongodb's format"):
        await listed(saver, config("shared", None))
    with pytest.raises(ValueError, match="checkpoint_collection_name"):
        await listed(saver, None)


async def test_prune_keeps_a_checkpoint_written_while_it_runs(saver: Any) -> None:
    thread = new_thread()
    first = await put(saver, thread)
    second = await put(saver, thread, parent=first["configurable"]["checkpoint_id"])
    newer = checkpoint()
    parent = config(thread, "", second["configurable"]["checkpoint_id"])
    write_newer = ops.put(saver.storage, parent, newer, {"source": "loop", "step": 2}, {})
    # After its reads: the writes' checkpoints, then the lineage.
    racing = after_commands(ops.prune(saver.storage, [thread], "keep_latest"), 2, write_newer)
    await maybe_await(saver._run("racing", racing))
    assert ids(await listed(saver, config(thread))) == [
        newer["id"],
        second["configurable"]["checkpoint_id"],
    ]


async def test_every_composite_key_has_one_field_order(saver: Any) -> None:
    """A server compares subdocuments field by field in order: a join or an upsert on a
    key built in another order would silently miss. Copies are checked too."""
    thread, copy_ = new_thread(), new_thread()
    stored = await put(saver, thread)
    await either(saver).put_writes(stored, [("a", 1), ("__error__", "e")], "task")
    await either(saver).copy_thread(thread, copy_)
    checkpoint_fields = ["thread_id", "checkpoint_ns", "checkpoint_id"]
    for owner in (thread, copy_):
        query = {"thread_id": owner}
        checkpoints = await maybe_await(saver.checkpoint_collection.find(query).to_list(None))
        writes = await maybe_await(saver.writes_collection.find(query).to_list(None))
        assert len(checkpoints) == 1
        assert len(writes) == 2
        assert [list(doc["_id"]) for doc in checkpoints] == [checkpoint_fields]
        for write in writes:
            assert list(write["_id"]) == ["checkpoint", "task_id", "idx"]
            assert list(write["_id"]["checkpoint"]) == checkpoint_fields
            assert write["_id"]["checkpoint"] == checkpoints[0]["_id"]
            assert write["_id"]["checkpoint"]["thread_id"] == write["thread_id"] == owner
    [got] = await listed(saver, config(copy_))
    assert got.pending_writes is not None
    assert len(got.pending_writes) == 2


async def test_large_deletes_go_in_batches(
    saver: Any, sent_commands: list[Command], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prune and delete_for_runs send their keys in batches: one filter holding every key
    of a large prune would exceed MongoDB's 16 MiB command limit."""
    monkeypatch.setattr(ops.retention, "DELETE_BATCH", 2)
    thread, runs = new_thread(), new_thread()
    stored = [await put(saver, thread)]
    for _ in range(6):
        stored.append(await put(saver, thread, parent=stored[-1]["configurable"]["checkpoint_id"]))
    for cfg in stored:
        await either(saver).put_writes(cfg, [("w", 1)], "t")
    for i in range(5):
        await put(saver, runs, id=f"cp-{i}", metadata={"run_id": "doomed"})
    sent_commands.clear()
    await either(saver).prune([thread], strategy="keep_latest")
    await either(saver).delete_for_runs(["doomed"])
    assert ids(await listed(saver, config(thread))) == [stored[-1]["configurable"]["checkpoint_id"]]
    assert await listed(saver, config(runs)) == []
    writes = await maybe_await(saver.writes_collection.count_documents({"thread_id": thread}))
    assert writes == 1
    # 6 pruned and 5 deleted checkpoints, 2 keys per batch
    assert methods(sent_commands).count("delete_many") == 2 * (3 + 3)


async def test_prune_delete_all_is_delete(saver: Any) -> None:
    """LangGraph's Agent Server asks for `strategy="delete_all"` to delete everything."""
    doomed, kept = new_thread(), new_thread()
    for thread in (doomed, kept):
        stored = await put(saver, thread)
        await either(saver).put_writes(stored, [("w", 1)], "t")
    await either(saver).prune([doomed], strategy="delete_all")
    assert await listed(saver, config(doomed)) == []
    assert await call_raw(saver.writes_collection, "count_documents", {"thread_id": doomed}) == 0
    assert len(await listed(saver, config(kept))) == 1
    with pytest.raises(ValueError, match=r"strategy must be one of .*'delete_all'.*got 'all'"):
        await either(saver).prune([kept], strategy="all")


@pytest.mark.parametrize("field", ["metadata", "serialized_metadata"])
async def test_delete_for_runs_skips_metadata_that_is_not_a_mapping(saver: Any, field: str) -> None:
    """A document another program wrote, whose metadata (readable, or the serializer's
    copy) is a list holding the run id: it belongs to no run and stays."""
    thread = new_thread()
    foreign = await put(saver, thread, metadata={"run_id": "r"})
    await put(saver, thread, metadata={"run_id": "r"})  # deleted
    as_list = [{"run_id": "r"}]
    stored = as_list if field == "metadata" else saver.storage.codec.encode(as_list)
    await call_raw(
        saver.checkpoint_collection,
        "update_one",
        {"_id.checkpoint_id": foreign["configurable"]["checkpoint_id"]},
        {"$set": {field: stored}},
    )
    await either(saver).delete_for_runs(["r"])
    assert [t.config for t in await listed(saver, config(thread))] == [foreign]
