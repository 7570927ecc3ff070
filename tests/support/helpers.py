"""Calling either saver the same way, so one test body covers both.

For `MongoDBSaver` the tests call its sync methods directly (not its thread-pool async
wrappers), so the sync path is what runs on the sync backends.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timezone
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from langgraph.checkpoint.base.id import uuid6

from langgraph.checkpoint.mongo import MongoDBSaver


async def call(saver: Any, method: str, *args: Any, **kwargs: Any) -> Any:
    if isinstance(saver, MongoDBSaver):
        return getattr(saver, method)(*args, **kwargs)
    return await getattr(saver, "a" + method)(*args, **kwargs)


async def listed(saver: Any, config: RunnableConfig | None, **kwargs: Any) -> list[CheckpointTuple]:
    if isinstance(saver, MongoDBSaver):
        return list(saver.list(config, **kwargs))
    return [t async for t in saver.alist(config, **kwargs)]


async def settle(saver: Any) -> None:
    """Wait for what the saver runs in the background (`keep_last` trims, stamp moves of
    `refresh_ttl_on_read`); `MongoDBSaver.settle` blocks, so it waits in a thread."""
    if isinstance(saver, MongoDBSaver):
        await asyncio.to_thread(saver.settle)
    else:
        await saver.settle()


def new_thread() -> str:
    return f"thread-{uuid.uuid4().hex[:12]}"


def checkpoint(
    channel_values: dict[str, Any] | None = None, *, id: str | None = None
) -> Checkpoint:
    values = channel_values or {}
    return Checkpoint(
        v=1,
        id=id or str(uuid6(clock_seq=-1)),
        ts=datetime.now(timezone.utc).isoformat(),
        channel_values=values,
        channel_versions={k: 1 for k in values},
        versions_seen={},
        updated_channels=None,
    )


def config(
    thread_id: str, checkpoint_ns: str | None = "", checkpoint_id: str | None = None
) -> RunnableConfig:
    """`checkpoint_ns=None` leaves the namespace out: `list` then reads every namespace."""
    configurable: dict[str, Any] = {"thread_id": thread_id}
    if checkpoint_ns is not None:
        configurable["checkpoint_ns"] = checkpoint_ns
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


async def put(
    saver: Any,
    thread_id: str,
    *,
    ns: str = "",
    parent: str | None = None,
    metadata: dict[str, Any] | None = None,
    values: dict[str, Any] | None = None,
    id: str | None = None,
) -> RunnableConfig:
    cp = checkpoint(values, id=id)
    md: dict[str, Any] = {"source": "loop", "step": 0, "parents": {}}
    md.update(metadata or {})
    result: RunnableConfig = await call(
        saver, "put", config(thread_id, ns, parent), cp, md, cp["channel_versions"]
    )
    return result


def ids(tuples: list[CheckpointTuple]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]
