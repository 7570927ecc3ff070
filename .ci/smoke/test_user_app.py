"""A user's own tests, as the README shows them: a graph on each saver, on the testing module.

`.ci/check_dist.py` runs this file with pytest in a clean virtual environment outside the
repository, where the package comes from the built wheel (with its `testing` extra) alone.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver
from langgraph.checkpoint.mongo.testing import async_client, client


class State(TypedDict):
    count: int


def build() -> StateGraph[State]:
    builder = StateGraph(State)
    builder.add_node("increment", lambda state: {"count": state["count"] + 1})
    builder.add_edge(START, "increment")
    return builder


CONFIG: Any = {"configurable": {"thread_id": "user-42"}}


def test_sync_graph_resumes_from_mongodb_saver() -> None:
    saver = MongoDBSaver(client())
    saver.setup()
    graph = build().compile(checkpointer=saver)
    graph.invoke({"count": 1}, CONFIG)
    assert graph.get_state(CONFIG).values == {"count": 2}
    assert len(list(graph.get_state_history(CONFIG))) == 3


@pytest.mark.asyncio
async def test_async_graph_resumes_from_async_mongodb_saver() -> None:
    saver = AsyncMongoDBSaver(async_client())
    await saver.setup()
    graph = build().compile(checkpointer=saver)
    await graph.ainvoke({"count": 1}, CONFIG)
    assert (await graph.aget_state(CONFIG)).values == {"count": 2}
    assert len([s async for s in graph.aget_state_history(CONFIG)]) == 3
