"""Pending writes that no stored checkpoint owns: `prune` deletes them once their
checkpoint ids are older than the grace, and never anything else (see `_operations.retention`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig

from langgraph.checkpoint.mongo import MongoDBSaver
from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._chunks import ORPHAN_GRACE
from langgraph.checkpoint.mongo._commands import Command, Plan
from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._operations.retention import checkpoint_id_time
from support.graphs import Driver, linear_graph
from support.helpers import (
    after_commands,
    checkpoint,
    checkpoint_id_at,
    config,
    either,
    ids,
    langgraph_clock_at,
    listed,
    methods,
    new_thread,
    put,
)

PAST_GRACE = ORPHAN_GRACE + timedelta(minutes=5)


def ago(delta: timedelta) -> datetime:
    return datetime.now(timezone.utc) - delta


async def stored_writes(saver: Any, thread_id: str, checkpoint_id: str | None = None) -> int:
    """How many write documents the thread stores (for this checkpoint id)."""
    query = {"thread_id": thread_id}
    if checkpoint_id is not None:
        query["_id.checkpoint.checkpoint_id"] = checkpoint_id
    return int(await maybe_await(saver.writes_collection.count_documents(query)))


async def never_stored(saver: Any, thread_id: str, checkpoint_id: str, ns: str = "") -> None:
    """What a step leaves when its checkpoint's `put` never lands (a kill, cancellation or
    fault while LangGraph sends it in the background): its tasks' writes."""
    step = config(thread_id, ns, checkpoint_id)
    await either(saver).put_writes(step, [("messages", "hi"), ("counter", 1)], "task-1")
    await either(saver).put_writes(step, [("__error__", "boom")], "task-2")


async def old_thread(saver: Any, thread_id: str, count: int) -> list[RunnableConfig]:
    """`count` checkpoints with writes, made by a writer clock past the grace."""
    stored: list[RunnableConfig] = []
    for step in range(count):
        parent = stored[-1]["configurable"]["checkpoint_id"] if stored else None
        made = checkpoint_id_at(ago(PAST_GRACE + timedelta(minutes=count - step)))
        stored.append(await put(saver, thread_id, parent=parent, id=made))
        await either(saver).put_writes(stored[-1], [("w", step)], "t")
    return stored


def test_checkpoint_id_time_reads_langgraphs_ids_only() -> None:
    when = datetime(2024, 2, 29, 12, 30, 15, 123456, tzinfo=timezone.utc)
    made = checkpoint_id_at(when)
    assert checkpoint_id_time(made) == when
    for other in (
        made.upper(),
        "{" + made + "}",
        made.replace("-", ""),
        "1ef4f797-8335-11ef-8000-5b5e8ce3a6f9",  # a version-1 UUID
        "custom-id",
        "",
        None,
        42,
    ):
        assert checkpoint_id_time(other) is None, other


@pytest.mark.parametrize(
    ("prune_args", "kept"),
    [
        ({"strategy": "keep_latest"}, 1),
        ({"keep_last": 2}, 2),
        ({"keep_last": 0}, 0),
        ({"strategy": "keep_last", "keep_last": 10}, 3),
        ({"strategy": "delete"}, 0),
    ],
    ids=["keep_latest", "keep_last=2", "keep_last=0", "keep_last=10", "delete"],
)
async def test_every_prune_removes_old_orphan_writes_and_keeps_the_rest(
    saver: Any, prune_args: dict[str, Any], kept: int
) -> None:
    thread, other = new_thread(), new_thread()
    await old_thread(saver, thread, 3)
    old = checkpoint_id_at(ago(PAST_GRACE))
    old_sub = checkpoint_id_at(ago(PAST_GRACE))
    young = checkpoint_id_at(ago(ORPHAN_GRACE - timedelta(minutes=5)))
    future = checkpoint_id_at(ago(-timedelta(minutes=5)))  # a writer's clock ahead of ours
    custom = "my-own-checkpoint-id"
    await never_stored(saver, thread, old)
    await never_stored(saver, thread, old_sub, ns="child:1")
    for kept_id in (young, future, custom):
        await never_stored(saver, thread, kept_id)
    await never_stored(saver, other, checkpoint_id_at(ago(PAST_GRACE)))  # not pruned
    before = await listed(saver, config(thread))

    await either(saver).prune([thread], **prune_args)

    assert await stored_writes(saver, thread, old) == 0
    assert await stored_writes(saver, thread, old_sub) == 0
    whole_thread = prune_args.get("strategy") == "delete"
    for kept_id in (young, future, custom):
        assert await stored_writes(saver, thread, kept_id) == (0 if whole_thread else 3)
    assert await stored_writes(saver, other) == 3
    # The checkpoints prune keeps read exactly as before, their writes included.
    assert await listed(saver, config(thread)) == before[:kept]


async def test_a_young_steps_writes_stay_until_its_put_lands(saver: Any) -> None:
    """The writes of a step whose `put` is still on its way are never taken for orphans;
    once the `put` lands, the checkpoint reads back with them."""
    thread = new_thread()
    await old_thread(saver, thread, 2)
    step = checkpoint()  # made now, as LangGraph makes it
    await never_stored(saver, thread, step["id"])
    await either(saver).prune([thread], keep_last=1)
    assert await stored_writes(saver, thread, step["id"]) == 3
    md = {"source": "loop", "step": 5, "parents": {}}
    await either(saver).put(config(thread), step, md, step["channel_versions"])
    got = await either(saver).get_stored(config(thread))
    assert got.checkpoint["id"] == step["id"]
    assert got.pending_writes is not None
    assert len(got.pending_writes) == 3


async def test_a_graph_whose_put_was_lost_leaves_orphans_that_prune_removes(
    saver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real run whose step-1 checkpoint never lands (its `put` lost, as a kill or fault
    between a step's writes and its `put` leaves it), on a clock past the grace: its
    tasks' writes stay behind, invisible; a prune removes them, and every read of the
    thread is as before."""
    thread = new_thread()
    lost: list[str] = []

    def lose(config: Any, checkpoint: Any, metadata: Any) -> Any:
        """The config a `put` of step 1 answers, without storing it; `None` for others."""
        if metadata["step"] != 1:
            return None
        lost.append(checkpoint["id"])
        return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}

    sync = isinstance(saver, MongoDBSaver)
    name = "put" if sync else "aput"
    real_put = getattr(saver, name)

    def put(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
        return lose(config, checkpoint, metadata) or real_put(
            config, checkpoint, metadata, versions
        )

    async def aput(config: Any, checkpoint: Any, metadata: Any, versions: Any) -> Any:
        found = lose(config, checkpoint, metadata)
        return found or await real_put(config, checkpoint, metadata, versions)

    monkeypatch.setattr(saver, name, put if sync else aput)
    graph = Driver(linear_graph("a", "b", "c").compile(checkpointer=saver), sync)
    with langgraph_clock_at(ago(PAST_GRACE)):
        await graph.invoke({"log": []}, config(thread))
    monkeypatch.setattr(saver, name, real_put)
    [orphan] = lost
    assert await stored_writes(saver, thread, orphan) > 0
    before = await listed(saver, config(thread))
    state = await graph.state(config(thread))
    assert state.values == {"log": ["a", "b", "c"]}

    await either(saver).prune([thread], keep_last=len(before))

    assert await stored_writes(saver, thread, orphan) == 0
    assert await listed(saver, config(thread)) == before
    assert (await graph.state(config(thread))).values == state.values


def _first_command(plan: Plan[Any]) -> Plan[None]:
    """`plan` stopped after its first command: a process killed in between."""
    yield next(plan)


async def test_prune_reclaims_what_an_interrupted_delete_thread_leaves(saver: Any) -> None:
    """`delete_thread` deletes the checkpoints first: stopped before its second delete,
    it leaves writes no checkpoint owns, which a prune of the thread deletes."""
    thread = new_thread()
    await old_thread(saver, thread, 3)
    await _run(saver, _first_command(ops.delete_thread(saver.storage, thread)))
    assert await listed(saver, config(thread)) == []
    assert await stored_writes(saver, thread) == 3
    await either(saver).prune([thread], keep_last=1)
    assert await stored_writes(saver, thread) == 0


@pytest.mark.parametrize("after", [1, 2], ids=["after-first-read", "after-second-read"])
async def test_a_copy_landing_during_a_prune_keeps_its_writes(saver: Any, after: int) -> None:
    """A copy keeps the source's (old) checkpoint ids: its writes landing while a prune of
    the target runs are not taken for orphans, whichever of the prune's reads it follows."""
    source, target = new_thread(), new_thread()
    stored = await old_thread(saver, source, 3)
    await put(saver, target, id=checkpoint_id_at(ago(PAST_GRACE + timedelta(hours=1))))
    copy = ops.copy_thread(saver.storage, source, target)
    prune = ops.prune(saver.storage, [target], "keep_latest", keep_last=10)
    await _run(saver, after_commands(prune, after, copy))
    copied = await listed(saver, config(target))
    newest_first = [s["configurable"]["checkpoint_id"] for s in stored[::-1]]
    assert ids(copied)[:3] == ids(await listed(saver, config(source))) == newest_first
    assert [t.pending_writes for t in copied[:3]] == [[("t", "w", s)] for s in (2, 1, 0)]


async def test_a_prune_without_orphans_sends_one_command_more(
    saver: Any, sent_commands: list[Command]
) -> None:
    thread = new_thread()
    await old_thread(saver, thread, 3)
    sent_commands.clear()
    await either(saver).prune([thread], keep_last=1)
    assert methods(sent_commands) == [
        "aggregate",  # the checkpoints the writes refer to
        "find",  # the lineage
        "delete_many",
        "delete_many",
        "find",  # chunk keys (`remove_unreferenced_chunks`)
    ]
    await never_stored(saver, thread, checkpoint_id_at(ago(PAST_GRACE)))
    sent_commands.clear()
    await either(saver).prune([thread], keep_last=1)
    assert methods(sent_commands) == ["aggregate", "find", "delete_many", "find"]


async def _run(saver: Any, plan: Plan[Any]) -> Any:
    return await maybe_await(saver._run("test", plan))
