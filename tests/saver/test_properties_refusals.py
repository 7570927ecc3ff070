"""Bad arguments, property-based: refused by name before any command is sent,
nothing stored or changed (see `support/properties.py`)."""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import pytest
from hypothesis import strategies as st
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from langgraph.checkpoint.mongo._commands import Command
from support.backends import Backend, CommandLog
from support.helpers import call_by_name, checkpoint, config, either, ids, listed
from support.properties import (
    KEYS,
    NON_STRINGS,
    OPERATORS,
    STRINGS,
    TEXT,
    VALUES,
    counts,
    put_both,
    run_property,
)

ID_FIELDS = ["thread_id", "checkpoint_ns", "checkpoint_id"]
LIMITS = st.sampled_from([None, 1, 0, -1])


class Refusals:
    """Checks that a call raises an error naming a field and sends and changes nothing."""

    def __init__(self, saver: Any, log: CommandLog, sent: list[Command]) -> None:
        # The recorder is live: the saver's own commands before this were seen, so an
        # empty `sent` after a refusal is not vacuous.
        assert sent, "no command recorded: is `sent_commands` the fixture's list?"
        self.saver, self.log, self.sent = saver, log, sent

    async def check(
        self, error: type[Exception], field: str, method: str, *args: Any, **kwargs: Any
    ) -> None:
        before = await counts(self.saver)
        self.log.reset()
        self.sent.clear()
        saver = self.saver
        invoke = (
            listed(saver, *args, **kwargs)
            if method == "list"
            else call_by_name(saver, method, *args, **kwargs)
        )
        with pytest.raises(error, match=re.escape(field)):
            await invoke
        assert self.sent == [], f"{method} sent {self.sent} refusing {field}"
        assert self.log.names == [], f"{method} sent {self.log.names} refusing {field}"
        assert await counts(self.saver) == before


async def victim_with_write(saver: Any) -> RunnableConfig:
    stored: RunnableConfig = await either(saver).put(config("victim"), checkpoint(), {"k": 1}, {})
    await either(saver).put_writes(stored, [("c", 1)], "t")
    return stored


async def assert_victim_intact(saver: Any) -> None:
    [left] = await listed(saver, None)
    assert left.config["configurable"]["thread_id"] == "victim"
    assert left.metadata == {"k": 1}
    assert left.pending_writes == [("t", "c", 1)]


def test_non_string_ids_are_refused_before_any_io(
    backend: Backend, sent_commands: list[Command]
) -> None:
    """A non-string `thread_id`, `checkpoint_ns` or `checkpoint_id` in a config raises a
    `TypeError` naming the field, from every method and whatever the other arguments
    (`limit=0` included), before any command is sent."""

    async def prop(field: str, value: Any, thread: str, limit: int | None) -> None:
        log = CommandLog()
        async with backend.saver(log) as saver:
            await victim_with_write(saver)
            refused = Refusals(saver, log, sent_commands)
            bad: Any = config(thread)
            bad["configurable"][field] = value
            with_id: Any = copy.deepcopy(bad)
            with_id["configurable"].setdefault("checkpoint_id", "some-id")
            await refused.check(TypeError, field, "get_tuple", bad)
            await refused.check(TypeError, field, "list", bad, limit=limit)
            await refused.check(TypeError, field, "list", bad, filter={"k": 1}, limit=limit)
            await refused.check(TypeError, field, "put", bad, checkpoint(), {}, {})
            await refused.check(TypeError, field, "put_writes", with_id, [("c", 1)], "task")
            if field == "checkpoint_id":
                await refused.check(
                    TypeError, "before", "list", config(thread), before=bad, limit=limit
                )
            if field == "thread_id":
                await refused.check(TypeError, "thread_id", "delete_thread", value)
                await refused.check(TypeError, "source_thread_id", "copy_thread", value, "x")
                await refused.check(TypeError, "target_thread_id", "copy_thread", "victim", value)
                await refused.check(TypeError, "thread_ids", "prune", [value])
                await refused.check(TypeError, "thread_ids", "prune", ["victim", value])
            await assert_victim_intact(saver)

    run_property(
        backend,
        prop,
        field=st.sampled_from(ID_FIELDS),
        value=NON_STRINGS,
        thread=STRINGS,
        limit=LIMITS,
    )


def test_missing_thread_id_is_refused(backend: Backend, sent_commands: list[Command]) -> None:
    """No `thread_id` (absent or `None`) is a `ValueError` naming it, never "every thread"."""

    async def prop(
        ns: str | None, checkpoint_id: str | None, explicit_none: bool, limit: int | None
    ) -> None:
        log = CommandLog()
        async with backend.saver(log) as saver:
            await victim_with_write(saver)
            refused = Refusals(saver, log, sent_commands)
            bad: Any = {"configurable": {"checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}
            if explicit_none:
                bad["configurable"]["thread_id"] = None
            await refused.check(ValueError, "thread_id", "get_tuple", bad)
            await refused.check(ValueError, "thread_id", "list", bad, limit=limit)
            await refused.check(ValueError, "thread_id", "put", bad, checkpoint(), {}, {})
            await refused.check(ValueError, "thread_id", "put_writes", bad, [("c", 1)], "t")
            await assert_victim_intact(saver)

    run_property(
        backend,
        prop,
        ns=st.one_of(st.none(), STRINGS),
        checkpoint_id=st.one_of(st.none(), STRINGS),
        explicit_none=st.booleans(),
        limit=LIMITS,
        mock=30,
        wire=8,
    )


def test_none_namespace_means_every_namespace_only_in_list(
    backend: Backend, sent_commands: list[Command]
) -> None:
    """`checkpoint_ns=None` lists every namespace, as in `InMemorySaver`; where a single
    namespace is needed (`get_tuple`, `put`, `put_writes`) it is refused by name."""

    async def prop(thread: str, namespaces: list[str]) -> None:
        memory = InMemorySaver()
        log = CommandLog()
        async with backend.saver(log) as saver:
            for ns in namespaces:
                await put_both(saver, memory, config(thread, ns), {"ns": ns})
            no_ns: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": None}}
            got = await listed(saver, no_ns)
            assert sorted(ids(got)) == sorted(ids(list(memory.list(no_ns))))
            refused = Refusals(saver, log, sent_commands)
            await refused.check(TypeError, "checkpoint_ns", "get_tuple", no_ns)
            await refused.check(TypeError, "checkpoint_ns", "put", no_ns, checkpoint(), {}, {})
            with_id = copy.deepcopy(no_ns)
            with_id["configurable"]["checkpoint_id"] = ids(got)[0]
            await refused.check(TypeError, "checkpoint_ns", "put_writes", with_id, [("c", 1)], "t")

    run_property(
        backend,
        prop,
        thread=STRINGS,
        namespaces=st.lists(STRINGS, min_size=1, max_size=3, unique=True),
        mock=30,
        wire=8,
    )


BAD_VALUES = st.one_of(st.none(), NON_STRINGS)


def test_bad_writes_are_refused_whole(backend: Backend, sent_commands: list[Command]) -> None:
    """A bad channel (anywhere in the batch), task id, task path or checkpoint id raises
    an error naming it, and nothing of the batch is stored."""

    async def prop(value: Any, good: list[tuple[str, Any]], position: int) -> None:
        log = CommandLog()
        async with backend.saver(log) as saver:
            stored = await victim_with_write(saver)
            refused = Refusals(saver, log, sent_commands)
            writes = list(good)
            writes.insert(min(position, len(writes)), (value, "x"))
            await refused.check(TypeError, "channel", "put_writes", stored, writes, "task")
            some = good or [("c", 2)]
            await refused.check(TypeError, "task_id", "put_writes", stored, some, value)
            await refused.check(TypeError, "task_path", "put_writes", stored, some, "t2", value)
            cp = checkpoint()
            cp["id"] = value
            await refused.check(TypeError, "checkpoint['id']", "put", config("victim"), cp, {}, {})
            await assert_victim_intact(saver)

    run_property(
        backend,
        prop,
        value=BAD_VALUES,
        good=st.lists(st.tuples(STRINGS, VALUES), max_size=3),
        position=st.integers(0, 3),
        mock=100,
        wire=20,
    )


HASHABLE_NON_STRINGS = st.one_of(
    st.none(),
    st.integers(-5, 5),
    st.booleans(),
    st.floats(width=32),
    st.binary(max_size=3),
    st.tuples(STRINGS),
)
# Filter values, NaN (which matches nothing) and None (missing) included.
FILTER_VALUES = st.one_of(VALUES, st.just(math.nan), st.lists(st.just(math.nan), max_size=1))


def test_bad_filters_and_limits_are_refused(backend: Backend, sent_commands: list[Command]) -> None:
    """A non-string filter key (wherever it is in the filter, whatever the other
    entries are), a filter that is not a dict and a `limit` that is not an int raise an
    error naming them, and never an empty result."""

    async def prop(
        entries: list[tuple[str, Any]],
        bad_key: Any,
        position: int,
        not_a_dict: Any,
        bad_limit: Any,
        limit: int | None,
        thread: str | None,
    ) -> None:
        log = CommandLog()
        async with backend.saver(log) as saver:
            await victim_with_write(saver)
            refused = Refusals(saver, log, sent_commands)
            cfg = None if thread is None else config(thread)
            entries.insert(min(position, len(entries)), (bad_key, "x"))
            flt = dict(entries)
            await refused.check(TypeError, "filter key", "list", cfg, filter=flt, limit=limit)
            await refused.check(TypeError, "filter", "list", cfg, filter=not_a_dict, limit=limit)
            await refused.check(TypeError, "limit", "list", cfg, limit=bad_limit)
            await assert_victim_intact(saver)

    run_property(
        backend,
        prop,
        entries=st.lists(st.tuples(KEYS, FILTER_VALUES), max_size=3),
        bad_key=HASHABLE_NON_STRINGS,
        position=st.integers(0, 3),
        not_a_dict=st.one_of(st.lists(STRINGS, max_size=2), st.integers(), st.booleans(), TEXT),
        bad_limit=st.one_of(st.floats(), STRINGS, st.booleans(), OPERATORS),
        limit=LIMITS,
        thread=st.one_of(st.none(), STRINGS),
    )
