"""Input a caller should never send, and stored data no saver should have written:
clear errors that name the field (values cut to a readable length), nothing stored,
and no walk that loops forever."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo._keys import MAX_ID_BYTES
from langgraph.checkpoint.mongo.errors import CheckpointCycleError
from support.helpers import call_by_name, checkpoint, config, either, listed, new_thread, put

LONE_SURROGATE = json.loads('"thread-\\ud800"')


async def stored_count(saver: Any) -> int:
    total = 0
    for collection in (saver.checkpoint_collection, saver.writes_collection):
        total += await maybe_await(collection.count_documents({}))
    return total


async def _loop_parents(saver: Any, thread: str, links: dict[str, str]) -> None:
    """Rewrite stored parent ids (as a faulty migration would) so the chain loops."""
    for child, parent in links.items():
        await maybe_await(
            saver.checkpoint_collection.update_one(
                {"thread_id": thread, "_id.checkpoint_id": child},
                {"$set": {"parent_checkpoint_id": parent}},
            )
        )


async def test_every_walk_stops_on_a_cycle_with_a_clear_error(saver: Any) -> None:
    """`a <- b <- c` rewritten to `a <- b <- c <- a`: delta history, prune and
    delete_for_runs raise, naming the loop, instead of walking it forever. (A checkpoint
    that names itself is no loop but a root: see test_self_parented.py.)"""
    thread = new_thread()
    ids: list[str] = []
    parent = None
    for i in range(3):
        stored = await put(
            saver,
            thread,
            parent=parent,
            metadata={"run_id": f"run-{i}", "counters_since_delta_snapshot": {"d": 1}},
        )
        parent = stored["configurable"]["checkpoint_id"]
        ids.append(parent)
    await _loop_parents(saver, thread, {ids[0]: ids[2]})
    loop = rf"{ids[2]}' -> '{ids[1]}' -> '{ids[0]}' -> '{ids[2]}"

    async def bounded(method: str, *args: Any, **kwargs: Any) -> Any:
        # A hang would be the defect: bound it so the test fails instead.
        return await asyncio.wait_for(call_by_name(saver, method, *args, **kwargs), timeout=30)

    with pytest.raises(CheckpointCycleError, match=loop):
        await bounded("get_delta_channel_history", config=config(thread), channels=["d"])
    with pytest.raises(CheckpointCycleError, match="parent chain of thread"):
        await bounded("prune", [thread], strategy="keep_latest")
    with pytest.raises(CheckpointCycleError):
        await bounded("delete_for_runs", ["run-0"])
    assert len(await listed(saver, config(thread))) == 3  # nothing deleted half-way
    await bounded("delete_thread", thread)  # the way out
    assert await listed(saver, config(thread)) == []


@pytest.mark.parametrize("limit", [2**63, 10**30])
async def test_a_limit_beyond_int64_is_refused_by_name(saver: Any, limit: int) -> None:
    with pytest.raises(ValueError, match=r"limit must be at most 2\*\*63 - 1"):
        await listed(saver, config("t"), limit=limit)


async def test_the_largest_int64_limit_is_accepted(saver: Any) -> None:
    stored = await put(saver, new_thread())
    assert len(await listed(saver, stored, limit=2**63 - 1)) == 1


@pytest.mark.parametrize(
    ("field", "build"),
    [
        ("thread_id", lambda bad: (config(bad), checkpoint())),
        ("checkpoint_ns", lambda bad: (config("t", bad), checkpoint())),
        ("checkpoint['id']", lambda bad: (config("t"), checkpoint(id=bad))),
    ],
)
async def test_a_lone_surrogate_in_an_id_is_named(saver: Any, field: str, build: Any) -> None:
    """What `json.loads('"\\ud800"')` yields cannot be stored as UTF-8: the error names
    the field, not BSON's `UnicodeEncodeError`."""
    cfg, cp = build(LONE_SURROGATE)
    with pytest.raises(ValueError, match=rf"{re.escape(field)}.*lone surrogate") as raised:
        await either(saver).put(cfg, cp, {}, {})
    assert not isinstance(raised.value, UnicodeError)
    with pytest.raises(ValueError, match=r"thread_id.*lone surrogate"):
        await either(saver).get_tuple(config(LONE_SURROGATE))
    stored = await put(saver, new_thread())
    with pytest.raises(ValueError, match=r"task_id.*lone surrogate"):
        await either(saver).put_writes(stored, [("a", 1)], LONE_SURROGATE)
    with pytest.raises(ValueError, match=r"channel.*lone surrogate"):
        await either(saver).put_writes(stored, [(LONE_SURROGATE, 1)], "task")
    assert await stored_count(saver) == 1


async def test_a_huge_thread_id_is_refused_before_anything_is_sent(saver: Any) -> None:
    """6 MiB: over the id limit, named with its size, and not echoed whole."""
    huge = "t" * (6 * 1024 * 1024)
    with pytest.raises(
        ValueError, match=f"thread_id.*is {len(huge)} bytes long.*{MAX_ID_BYTES}"
    ) as e:
        await put(saver, huge)
    assert len(str(e.value)) < 500
    with pytest.raises(ValueError, match="thread_id"):
        await either(saver).get_tuple(config(huge))
    assert await stored_count(saver) == 0


async def test_an_id_at_the_limit_is_stored_and_read(saver: Any) -> None:
    longest = "t" * MAX_ID_BYTES
    stored = await put(saver, longest)
    await either(saver).put_writes(stored, [("a", 1)], "task")
    got = await either(saver).get_tuple(config(longest))
    assert got is not None
    assert got.pending_writes == [("task", "a", 1)]


async def test_a_huge_non_string_id_is_not_echoed_whole(saver: Any) -> None:
    huge = list(range(1_000_000))
    with pytest.raises(TypeError, match=r"thread_id'\] must be a str, got list") as e:
        await either(saver).get_tuple({"configurable": {"thread_id": huge}})
    assert len(str(e.value)) < 500


@pytest.mark.parametrize(
    ("argument", "bad", "named"),
    [
        ("checkpoint", None, "checkpoint must be a dict, got NoneType"),
        ("metadata", ["step"], "metadata must be a dict, got list"),
        ("new_versions", None, "new_versions must be a dict, got NoneType"),
    ],
)
async def test_put_refuses_a_non_mapping_by_name_before_anything_is_sent(
    saver: Any, argument: str, bad: Any, named: str
) -> None:
    """As `InMemorySaver` fails on them (it reads each as a dict), but by name."""
    cp = checkpoint({"a": 1})
    arguments = {"checkpoint": cp, "metadata": {}, "new_versions": cp["channel_versions"]}
    arguments[argument] = bad
    with pytest.raises(TypeError, match=named):
        await either(saver).put(
            config(new_thread()),
            arguments["checkpoint"],  # type: ignore[arg-type]
            arguments["metadata"],
            arguments["new_versions"],  # type: ignore[arg-type]
        )
    assert await stored_count(saver) == 0
