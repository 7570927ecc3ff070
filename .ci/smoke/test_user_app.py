"""A user's own tests, as the README shows them: a graph on each saver, on the testing module,
and on the stand-in server its `serve` command runs.

`.ci/check_dist.py` runs this file with pytest in a clean virtual environment outside the
repository, where the package comes from the built wheel (with its `testing` extra) alone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from pymongo import MongoClient

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


def test_graph_on_the_stand_in_server_that_serve_runs() -> None:
    command = [sys.executable, "-m", "langgraph.checkpoint.mongo.testing", "serve", "--port", "0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as server:
        try:
            assert server.stdout is not None
            first = server.stdout.readline()
            assert "not for data you keep" in first, first
            uri = first.split(" at ", 1)[1].split()[0]
            with MongoClient(uri) as mongo:
                saver = MongoDBSaver(mongo)
                saver.setup()
                graph = build().compile(checkpointer=saver)
                graph.invoke({"count": 1}, CONFIG)
                assert graph.get_state(CONFIG).values == {"count": 2}
            listed = subprocess.run(
                [sys.executable, "-m", "langgraph.checkpoint.mongo", "threads", "ls"],
                env={**os.environ, "MONGODB_URI": uri},
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert listed.returncode == 0, listed.stderr
            assert "user-42" in listed.stdout
        finally:
            server.send_signal(signal.SIGTERM)
            assert server.wait(timeout=30) == 0
