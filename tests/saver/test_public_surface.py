"""The savers' public surface, pinned: every public method of both savers with its
parameters (names, kinds, defaults) and colour, the constructor's parameters (0.2.0's 12,
then 0.3.0's `state_warn_bytes`, keyword-only) and
`from_conn_string`'s, the saver attributes and the package root's names. The expected
values are written out (taken once from 0.2.0), so a refactor that moves a method, turns
a sync one async or drops a default fails here rather than in a user's application."""

from __future__ import annotations

import inspect
from typing import Any

import mongomock
import pytest
from mongomock_motor import AsyncMongoMockClient

import langgraph.checkpoint.mongo as package
from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver, aio, sync

CONSTRUCTOR = (
    "(client, db_name='checkpointing_db', checkpoint_collection_name='checkpoints', "
    "writes_collection_name='checkpoint_writes', ttl=None, *, serde=None, compression=None, "
    "targeted_joins=True, cache_max_bytes=67108864, keep_last=None, "
    "refresh_ttl_on_read=False, state_max_bytes=67108864, state_warn_bytes=8388608)"
)

# Each public callable of a saver: its parameters, the same on both savers.
SIGNATURES = {
    "aclose": "(self)",
    "acopy_thread": "(self, source_thread_id, target_thread_id)",
    "adelete_for_runs": "(self, run_ids)",
    "adelete_thread": "(self, thread_id)",
    "aget": "(self, config)",
    "aget_delta_channel_history": "(self, *, config, channels)",
    "aget_tuple": "(self, config)",
    "apin_thread": "(self, thread_id)",
    "alist": "(self, config, *, filter=None, before=None, limit=None)",
    "alist_threads": "(self, *, filter=None, limit=None, before=None)",
    "aprune": "(self, thread_ids, *, strategy='keep_latest', keep_last=None)",
    "aput": "(self, config, checkpoint, metadata, new_versions)",
    "aput_writes": "(self, config, writes, task_id, task_path='')",
    "aunpin_thread": "(self, thread_id)",
    "close": "(self)",
    "copy_thread": "(self, source_thread_id, target_thread_id)",
    "delete_for_runs": "(self, run_ids)",
    "delete_thread": "(self, thread_id)",
    "from_conn_string": CONSTRUCTOR.replace("(client,", "(conn_string,").replace(
        ")", ", **client_kwargs)"
    ),
    "get": "(self, config)",
    "get_delta_channel_history": "(self, *, config, channels)",
    "get_next_version": "(self, current, channel)",
    "get_tuple": "(self, config)",
    "list": "(self, config, *, filter=None, before=None, limit=None)",
    "list_threads": "(self, *, filter=None, limit=None, before=None)",
    "pin_thread": "(self, thread_id)",
    "prune": "(self, thread_ids, *, strategy='keep_latest', keep_last=None)",
    "put": "(self, config, checkpoint, metadata, new_versions)",
    "put_writes": "(self, config, writes, task_id, task_path='')",
    "settle": "(self)",
    "setup": "(self, *, create_indexes=True, skip_indexes=())",
    "unpin_thread": "(self, thread_id)",
    "with_allowlist": "(self, extra_allowlist)",
}

# Each public callable's colour on `MongoDBSaver`: a plain function, a generator, a
# coroutine function or an async generator.
SYNC_COLOURS = {
    "aclose": "coroutine",
    "acopy_thread": "coroutine",
    "adelete_for_runs": "coroutine",
    "adelete_thread": "coroutine",
    "aget": "coroutine",
    "aget_delta_channel_history": "coroutine",
    "aget_tuple": "coroutine",
    "alist": "async generator",
    "alist_threads": "async generator",
    "apin_thread": "coroutine",
    "aprune": "coroutine",
    "aput": "coroutine",
    "aput_writes": "coroutine",
    "aunpin_thread": "coroutine",
    "close": "function",
    "copy_thread": "function",
    "delete_for_runs": "function",
    "delete_thread": "function",
    "from_conn_string": "function",
    "get": "function",
    "get_delta_channel_history": "function",
    "get_next_version": "function",
    "get_tuple": "function",
    "list": "generator",
    "list_threads": "generator",
    "pin_thread": "function",
    "prune": "function",
    "put": "function",
    "put_writes": "function",
    "settle": "function",
    "setup": "function",
    "unpin_thread": "function",
    "with_allowlist": "function",
}
# `AsyncMongoDBSaver`'s differ in `setup` and `settle` only (its `close()` is a function
# returning an awaitable: asserted below).
ASYNC_COLOURS = {**SYNC_COLOURS, "settle": "coroutine", "setup": "coroutine"}

ATTRIBUTES = {
    "asynchronous",
    "checkpoint_collection",
    "checkpoint_collection_name",
    "client",
    "compression",
    "config_specs",
    "db",
    "keep_last",
    "refresh_ttl_on_read",
    "serde",
    "storage",
    "ttl",
    "writes_collection",
    "writes_collection_name",
}

ROOT_NAMES = [
    "AsyncMongoDBSaver",
    "CheckpointCycleError",
    "CheckpointTooLargeError",
    "IndexCreationError",
    "MongoDBSaver",
    "ThreadChangedError",
    "ThreadInfo",
    "__version__",
]


def parameters(function: Any) -> str:
    """A signature's parameters as Python spells them (names, kinds, defaults), without
    annotations, so that only what a caller can pass is compared."""
    shown = []
    keyword_only_marked = False
    parameters = list(inspect.signature(function).parameters.values())
    for index, parameter in enumerate(parameters):
        if parameter.kind is parameter.VAR_POSITIONAL:
            keyword_only_marked = True
            shown.append(f"*{parameter.name}")
            continue
        if parameter.kind is parameter.KEYWORD_ONLY and not keyword_only_marked:
            keyword_only_marked = True
            shown.append("*")
        name = parameter.name
        if parameter.kind is parameter.VAR_KEYWORD:
            name = f"**{name}"
        elif parameter.default is not parameter.empty:
            name = f"{name}={parameter.default!r}"
        shown.append(name)
        following = parameters[index + 1] if index + 1 < len(parameters) else None
        if parameter.kind is parameter.POSITIONAL_ONLY and (
            following is None or following.kind is not parameter.POSITIONAL_ONLY
        ):
            shown.append("/")
    return f"({', '.join(shown)})"


def colour(function: Any) -> str:
    if inspect.isasyncgenfunction(function):
        return "async generator"
    if inspect.iscoroutinefunction(function):
        return "coroutine"
    if inspect.isgeneratorfunction(function):
        return "generator"
    return "function"


def public_callables(cls: type[Any]) -> dict[str, Any]:
    names = (name for name in dir(cls) if not name.startswith("_"))
    return {name: getattr(cls, name) for name in names if callable(getattr(cls, name))}


@pytest.mark.parametrize(
    ("cls", "colours"), [(MongoDBSaver, SYNC_COLOURS), (AsyncMongoDBSaver, ASYNC_COLOURS)]
)
def test_every_public_method_keeps_its_parameters_and_colour(
    cls: type[Any], colours: dict[str, str]
) -> None:
    found = public_callables(cls)
    assert len(found) == 33  # 0.2.0's 29, and pin_thread, unpin_thread (and their a-twins)
    assert {name: parameters(function) for name, function in found.items()} == SIGNATURES
    assert {name: colour(function) for name, function in found.items()} == colours


@pytest.mark.parametrize("cls", [MongoDBSaver, AsyncMongoDBSaver])
def test_the_constructor_keeps_its_parameters_and_keyword_only_split(
    cls: type[Any],
) -> None:
    signature = inspect.signature(cls)
    assert parameters(cls) == CONSTRUCTOR
    kinds = [p.kind for p in signature.parameters.values()]
    # 0.2.0's 12 in their order, then `state_warn_bytes` (0.3.0), keyword-only.
    assert len(kinds) == 13
    assert (
        kinds
        == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 5 + [inspect.Parameter.KEYWORD_ONLY] * 8
    )


async def test_close_is_sync_on_the_sync_saver_and_awaitable_on_the_async_one() -> None:
    close: Any = MongoDBSaver(mongomock.MongoClient()).close
    assert close() is None
    closing = AsyncMongoDBSaver(AsyncMongoMockClient()).close()
    assert inspect.isawaitable(closing)
    await closing


def test_the_saver_attributes_are_kept() -> None:
    saver = MongoDBSaver(mongomock.MongoClient())
    asaver = AsyncMongoDBSaver(AsyncMongoMockClient())
    for each, expected in ((saver, ATTRIBUTES), (asaver, ATTRIBUTES | {"loop"})):
        methods = public_callables(type(each))
        assert {n for n in dir(each) if not n.startswith("_") and n not in methods} == expected
    assert (saver.asynchronous, asaver.asynchronous, asaver.loop) == (False, True, None)


def test_the_package_root_and_the_saver_modules_keep_their_names() -> None:
    assert package.__all__ == ROOT_NAMES
    assert all(hasattr(package, name) for name in ROOT_NAMES)
    assert (aio.AsyncMongoDBSaver, sync.MongoDBSaver) == (AsyncMongoDBSaver, MongoDBSaver)


def test_thread_info_unpacks_into_its_four_fields_and_carries_pinned_beside_them() -> None:
    """0.2.0's `ThreadInfo` was a 4-tuple: `for thread_id, config, metadata, ts in
    saver.list_threads()` keeps working; `pinned` (0.3.0) is an attribute beside them."""
    info = package.ThreadInfo("t", {}, {}, "2026-11-29T00:00:00+00:00", pinned=True)
    thread_id, config, metadata, ts = info
    assert (thread_id, config, metadata, ts) == ("t", {}, {}, "2026-11-29T00:00:00+00:00")
    assert len(info) == 4
    assert info.pinned
    assert not package.ThreadInfo("t", {}, {}, "").pinned
