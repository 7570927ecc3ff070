"""A `put` whose config already names the checkpoint it stores (the official, Postgres and
Redis savers' own suites, and users' tests, put checkpoints so): stored and read back as
`InMemorySaver` stores it, its own parent, and taken for the root of its chain by every
walk over parent ids (prune, delete_for_runs, delta history, copy_thread)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from support.helpers import checkpoint, config, either, ids, listed, new_thread

_versions = itertools.count(1)

# The metadata counters through which a checkpoint says it rebuilds a `DeltaChannel`
# from its ancestors (`_delta.replayed_channels`).
REPLAYS_D = {"counters_since_delta_snapshot": {"d": 1}}


async def bounded(awaitable: Any) -> Any:
    # A walk that loops would hang: bound it so the test fails instead.
    return await asyncio.wait_for(awaitable, timeout=30)


async def put_at(
    saver: Any,
    thread: str,
    parent: str | None,
    values: dict[str, Any] | None = None,
    *,
    itself: bool = False,
    metadata: dict[str, Any] | None = None,
) -> str:
    """Put a checkpoint under `parent`, or with `itself=True` under a config that already
    names it. Channel versions are unique, so `InMemorySaver`'s blobs never collide."""
    cp = checkpoint(values)
    cp["channel_versions"] = {k: next(_versions) for k in values or {}}
    cfg = config(thread, "", cp["id"] if itself else parent)
    md = {"source": "loop", "step": 0, "parents": {}, **(metadata or {})}
    stored = await bounded(either(saver).put(cfg, cp, md, cp["channel_versions"]))
    assert stored == config(thread, "", cp["id"])
    return str(cp["id"])


async def test_put_under_its_own_id_reads_back_as_in_memory(saver: Any) -> None:
    thread = new_thread()
    memory = InMemorySaver()
    cp = checkpoint({"x": 1, "y": [1, 2]})
    md = {"source": "input", "step": -1, "parents": {}, "run_id": "r"}
    itself = config(thread, "", cp["id"])
    child = checkpoint({"x": 2})
    child["channel_versions"] = {"x": 2, "y": 1}
    child["channel_values"]["y"] = [1, 2]
    for target in (saver, memory):
        # Twice: a retried put of the same checkpoint changes nothing.
        for _ in range(2):
            assert await either(target).put(itself, cp, md, cp["channel_versions"]) == itself
        await either(target).put_writes(itself, [("x", "w")], "task")
        await either(target).put(itself, child, md, {"x": 2})
    latest = config(thread)
    assert await either(saver).get_tuple(latest) == memory.get_tuple(latest)
    got = await either(saver).get_tuple(itself)
    assert got is not None
    assert got == memory.get_tuple(itself)
    assert got.parent_config == itself  # its own parent, as InMemorySaver has it
    assert await listed(saver, latest) == list(memory.list(latest))


async def test_prune_keeps_what_a_checkpoint_rebuilds_from_up_to_one_naming_itself(
    saver: Any,
) -> None:
    """`older` (a root) <- ... ; `root` names itself; `latest` replays `d` from it: the walk
    from `latest` ends at `root`, which is kept; `older` goes."""
    thread = new_thread()
    older = await put_at(saver, thread, None)
    root = await put_at(saver, thread, older, itself=True)
    latest = await put_at(saver, thread, root, metadata=REPLAYS_D)
    await bounded(either(saver).prune([thread], strategy="keep_latest"))
    assert ids(await listed(saver, config(thread))) == [latest, root]

    # The newest one names itself and replays `d`: it has no ancestor to keep.
    alone = await put_at(saver, thread, latest, itself=True, metadata=REPLAYS_D)
    await bounded(either(saver).prune([thread], strategy="keep_latest"))
    assert ids(await listed(saver, config(thread))) == [alone]


async def test_delete_for_runs_keeps_a_self_named_root_others_rebuild_from(saver: Any) -> None:
    thread = new_thread()
    root = await put_at(saver, thread, None, itself=True, metadata={"run_id": "r1"})
    child = await put_at(saver, thread, root, metadata={"run_id": "r2", **REPLAYS_D})
    lone = await put_at(saver, thread, child, itself=True, metadata={"run_id": "r3", **REPLAYS_D})

    await bounded(either(saver).delete_for_runs(["r1", "r3"]))
    assert ids(await listed(saver, config(thread))) == [child, root]  # `child` needs `root`
    await bounded(either(saver).delete_for_runs(["r2"]))
    await bounded(either(saver).delete_for_runs(["r1"]))
    assert await listed(saver, config(thread)) == []
    assert lone  # deleted with r3


async def _chain(saver: Any, thread: str, *, itself: bool) -> list[str]:
    """root (stores `a`) <- mid <- target, with writes at each; `root` names itself or
    is a plain root."""
    chain = [await put_at(saver, thread, None, {"a": ["seed"]}, itself=itself)]
    chain.append(await put_at(saver, thread, chain[-1]))
    chain.append(await put_at(saver, thread, chain[-1]))
    for name, checkpoint_id in zip(("root", "mid", "target"), chain, strict=True):
        writes = [("a", f"a@{name}"), ("never", f"never@{name}")]
        await either(saver).put_writes(config(thread, "", checkpoint_id), writes, "task")
    return chain


async def test_delta_history_ends_at_a_checkpoint_naming_itself(saver: Any) -> None:
    """The same history as `InMemorySaver` gives where that checkpoint is a plain root
    (`InMemorySaver`'s own walk never ends on a checkpoint naming itself)."""
    thread = new_thread()
    ours = await _chain(saver, thread, itself=True)
    memory = InMemorySaver()
    theirs = await _chain(memory, thread, itself=False)
    channels = ["a", "never"]
    for ours_id, theirs_id in zip(ours, theirs, strict=True):
        got = await bounded(
            either(saver).get_delta_channel_history(
                config=config(thread, "", ours_id),
                channels=channels,
            )
        )
        expected = memory.get_delta_channel_history(
            config=config(thread, "", theirs_id), channels=channels
        )
        assert got == expected
    assert got["never"] == {
        "writes": [("task", "never", "never@root"), ("task", "never", "never@mid")]
    }


async def test_copy_thread_copies_a_checkpoint_naming_itself(saver: Any) -> None:
    source, target = new_thread(), new_thread()
    chain = await _chain(saver, source, itself=True)
    await bounded(either(saver).copy_thread(source, target))
    copied = await listed(saver, config(target))
    original = await listed(saver, config(source))
    assert ids(copied) == ids(original) == chain[::-1]
    assert copied[-1].parent_config == config(target, "", chain[0])
    history = await bounded(
        either(saver).get_delta_channel_history(config=config(target), channels=["a"])
    )
    assert history["a"]["seed"] == ["seed"]
