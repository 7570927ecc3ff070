"""How many checkpoints a thread keeps: `prune(keep_last=N)`, on every backend."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langgraph.checkpoint.mongo._drivers import maybe_await
from support.backends import Backend, CommandLog
from support.graphs import Driver, chat_graph
from support.helpers import call, config, ids, listed, new_thread, put


async def chain(saver: Any, thread: str, n: int, ns: str = "") -> list[str]:
    """`n` checkpoints of one namespace, each the parent of the next, each with a write."""
    made: list[str] = []
    for _ in range(n):
        stored = await put(saver, thread, ns=ns, parent=made[-1] if made else None)
        made.append(stored["configurable"]["checkpoint_id"])
        await call(saver, "put_writes", stored, [("w", made[-1])], "t")
    return made


async def tuples(saver: Any, thread: str, ns: str, checkpoint_ids: list[str]) -> list[Any]:
    return [await call(saver, "get_tuple", config(thread, ns, c)) for c in checkpoint_ids]


async def stored_write_owners(saver: Any, thread: str) -> set[str]:
    """The checkpoint ids that writes are stored for (joined to a checkpoint or not)."""
    docs = await maybe_await(saver.writes_collection.find({"thread_id": thread}).to_list(None))
    return {doc["_id"]["checkpoint"]["checkpoint_id"] for doc in docs}


async def test_keep_last_keeps_the_newest_of_each_namespace_and_their_writes(
    saver: Any,
) -> None:
    thread, other = new_thread(), new_thread()
    root = await chain(saver, thread, 5)
    child = await chain(saver, thread, 3, ns="child:1")
    untouched = await chain(saver, other, 4)
    before_root = await tuples(saver, thread, "", root)
    before_child = await tuples(saver, thread, "child:1", child)
    before_other = await listed(saver, config(other))

    await call(saver, "prune", [thread], keep_last=2)

    assert await tuples(saver, thread, "", root[-2:]) == before_root[-2:]
    assert await tuples(saver, thread, "child:1", child[-2:]) == before_child[-2:]
    assert await tuples(saver, thread, "", root[:-2]) == [None] * 3
    assert await tuples(saver, thread, "child:1", child[:-2]) == [None]
    # The writes of removed checkpoints went with them.
    assert await stored_write_owners(saver, thread) == {*root[-2:], *child[-2:]}
    assert await listed(saver, config(other)) == before_other
    assert await stored_write_owners(saver, other) == set(untouched)


async def test_keep_last_overrides_strategy_zero_removes_all_and_more_changes_nothing(
    saver: Any, backend: Backend, command_log: CommandLog
) -> None:
    thread = new_thread()
    made = await chain(saver, thread, 4)
    before = await listed(saver, config(thread))

    command_log.reset()
    await call(saver, "prune", [thread], strategy="delete", keep_last=4)
    if backend.counts_commands:  # the thread's lineage is read; nothing to delete
        assert command_log.names == ["find"]
    assert await listed(saver, config(thread)) == before
    await call(saver, "prune", [thread], keep_last=10**30)  # beyond any int64: everything
    assert await listed(saver, config(thread)) == before

    # The Redis saver's spelling of the same call.
    await call(saver, "prune", [thread], strategy="keep_last", keep_last=3)
    assert ids(await listed(saver, config(thread))) == made[:0:-1]

    await call(saver, "prune", [thread], strategy="keep_latest", keep_last=0)
    assert await listed(saver, config(thread)) == []
    assert await stored_write_owners(saver, thread) == set()


@pytest.mark.parametrize(
    ("keep_last", "error", "message"),
    [
        (-1, ValueError, "keep_last must be 0 or more.*got -1"),
        (True, TypeError, "keep_last must be an int or None, got bool"),
        (1.0, TypeError, "keep_last must be an int or None, got float"),
        ("2", TypeError, "keep_last must be an int or None, got str"),
    ],
)
async def test_bad_keep_last_is_refused_before_anything_is_read(
    saver: Any, backend: Backend, command_log: CommandLog, keep_last: Any, error: Any, message: str
) -> None:
    thread = new_thread()
    await chain(saver, thread, 2)
    command_log.reset()
    with pytest.raises(error, match=message):
        await call(saver, "prune", [thread], keep_last=keep_last)
    with pytest.raises(error, match=message):
        await call(saver, "prune", [], keep_last=keep_last)
    if backend.counts_commands:
        assert command_log.names == []
    assert len(await listed(saver, config(thread))) == 2


async def test_keep_last_strategy_needs_a_number(saver: Any) -> None:
    with pytest.raises(ValueError, match=r"strategy='keep_last'.*needs keep_last=N"):
        await call(saver, "prune", [new_thread()], strategy="keep_last")
    with pytest.raises(ValueError, match="strategy must be one of"):
        await call(saver, "prune", [new_thread()], strategy="keep_lats", keep_last=2)


async def chat(graph: Driver, thread: str, turns: range) -> None:
    for turn in turns:
        message = HumanMessage(f"turn {turn}", id=f"h-{turn}")
        await graph.invoke({"messages": [message]}, config(thread))


async def states_by_id(graph: Driver, thread: str) -> dict[str, Any]:
    """Every checkpoint of the thread, as `get_state` rebuilds it."""
    found = {}
    for snapshot in await graph.history(config(thread)):
        rebuilt = await graph.state(snapshot.config)
        found[snapshot.config["configurable"]["checkpoint_id"]] = (rebuilt.values, rebuilt.next)
    return found


@pytest.mark.parametrize("channel", ["reducer", "delta"])
async def test_kept_checkpoints_of_a_real_chat_read_back_as_before(
    backend: Backend, channel: str
) -> None:
    """A `DeltaChannel` chat (snapshot every 5 updates) keeps the ancestors its kept
    checkpoints rebuild from; a plain one keeps exactly the newest N."""
    async with backend.saver() as saver:
        graph = Driver(chat_graph(channel, snapshot_frequency=5).compile(saver), backend.is_sync)
        thread = new_thread()
        await chat(graph, thread, range(8))  # 3 checkpoints per turn
        before = await states_by_id(graph, thread)
        newest = sorted(before, reverse=True)[:4]

        await call(saver, "prune", [thread], keep_last=4)

        after = await states_by_id(graph, thread)
        assert set(newest) <= set(after)
        assert {c: before[c] for c in after} == after
        if channel == "reducer":
            assert set(after) == set(newest)
        else:  # the ancestors back to the last snapshot stay, no more
            assert len(newest) < len(after) < len(before)
        # The thread goes on as if nothing was pruned.
        await chat(graph, thread, range(8, 10))
        state = await graph.state(config(thread))
        assert [m.id for m in state.values["messages"]][-4:] == ["h-8", "ai-9", "h-9", "ai-10"]
        assert len(state.values["messages"]) == 20
