"""Operator-looking ids, property-based: an id only ever reaches its own data
(see `support/properties.py`)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from support.backends import Backend
from support.helpers import config, either, ids, listed
from support.properties import (
    METADATA,
    STRINGS,
    assert_same_tuple,
    counts,
    put_both,
    ref,
    run_property,
)


@pytest.mark.soak
def test_operator_looking_ids_only_see_their_own_data(backend: Backend) -> None:
    """A string id is only an id: a checkpoint, its writes and its listing are reached
    under that exact string; reads behave as in `InMemorySaver`, and `copy_thread`,
    `prune` and `delete_thread` with it never touch the victim thread."""

    async def prop(
        thread: str,
        ns: str,
        probe_id: str,
        task_id: str,
        task_path: str,
        channel: str,
        metadata: dict[str, Any],
    ) -> None:
        victim = "victim"

        memory = InMemorySaver()
        async with backend.saver() as saver:
            for t in [victim, thread] if thread != victim else [victim]:
                for n in dict.fromkeys(["", ns]):
                    stored = await put_both(saver, memory, config(t, n), metadata, {"v": t})
                    for target in (saver, memory):
                        writes = [(channel, f"{t}/{n}"), ("other", 1)]
                        await either(target).put_writes(stored, writes, task_id, task_path)

            probes: list[RunnableConfig] = [
                config(thread),
                config(thread, ns),
                config(thread, ns, probe_id),
                config(thread, probe_id),
                config(probe_id, ns),
            ]
            for probe in probes:
                got = await either(saver).get_tuple(probe)
                assert_same_tuple(got, memory.get_tuple(probe))
                got_list = await listed(saver, probe)
                want_list = list(memory.list(probe))
                assert ids(got_list) == ids(want_list)
                for g, w in zip(got_list, want_list, strict=True):
                    assert_same_tuple(g, w)
            for t in dict.fromkeys([thread, probe_id, victim]):
                got_list = await listed(saver, config(t, None))
                assert {ref(x) for x in got_list} == {ref(x) for x in memory.list(config(t, None))}
                assert {x.checkpoint["channel_values"]["v"] for x in got_list} <= {t}

            victim_before = await listed(saver, config(victim, None))
            if thread != victim:
                copy_to = probe_id if probe_id not in (thread, victim) else thread + "-copy"
                await either(saver).copy_thread(thread, copy_to)
                copied = await listed(saver, config(copy_to, None))
                original = await listed(saver, config(thread, None))
                assert ids(copied) == ids(original)
                assert [t.pending_writes for t in copied] == [t.pending_writes for t in original]
                # A newer checkpoint in the copy: `keep_latest` keeps one per namespace.
                newest = await put_both(saver, memory, config(copy_to), {}, {"v": copy_to})
                await either(saver).prune([copy_to], strategy="keep_latest")
                kept = await listed(saver, config(copy_to, None))
                assert len(kept) == len({"", ns})
                assert ids(kept)[0] == newest["configurable"]["checkpoint_id"]
                assert ids(await listed(saver, config(thread, None))) == ids(original)
                await either(saver).delete_thread(thread)
                memory.delete_thread(thread)
                assert await listed(saver, config(thread, None)) == []
                await either(saver).prune([copy_to], strategy="delete")
                assert await listed(saver, config(copy_to, None)) == []
                victim_after = await listed(saver, config(victim, None))
                assert [ref(t) for t in victim_after] == [ref(t) for t in victim_before]
                for g, w in zip(victim_after, victim_before, strict=True):
                    assert_same_tuple(g, w)
                # Only the victim's documents are left.
                n_checkpoints, n_writes = await counts(saver)
                assert n_checkpoints == len(victim_after)
                assert n_writes == sum(len(t.pending_writes or []) for t in victim_after)

    run_property(
        backend,
        prop,
        thread=STRINGS,
        ns=STRINGS,
        probe_id=STRINGS,
        task_id=STRINGS,
        task_path=STRINGS,
        channel=STRINGS,
        metadata=METADATA,
    )
