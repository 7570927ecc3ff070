"""What each deployment shape costs per chat turn: one long-lived saver, a saver built per
request on a shared client, and `from_conn_string` per request (a client per request),
with and without `ttl`, ours (`MongoDBSaver`) beside the official saver.

Each shape serves `REQUESTS` requests of one chat turn each (the one-node chat graph, on
one thread), on a fresh database of this process: its first request pays whatever
setting up costs (ours: once per process; the official saver: in every constructor).
The graph is compiled once; a request only gives it its saver, as a handler that builds
the saver per request does.

- commands per turn: every command the server received at delay 0 (handshakes
  excluded), over all the requests, ÷ `REQUESTS`;
- ms per turn: the median request at 20 ms, after the process's first request, timed
  from building (or opening) the saver to closing it.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from pymongo import MongoClient

from benchmarks.contenders import OfficialSaver
from benchmarks.graphs import chat_graph, human_input, thread_config
from benchmarks.scenarios import Log, Settings
from benchmarks.server import ServerProcess
from langgraph.checkpoint.mongo import MongoDBSaver

REQUESTS = 10
TTL_SECONDS = 16 * 3600
LONG_LIVED = "one long-lived saver"
PER_REQUEST = "a saver per request, shared client"
CONN_STRING = "from_conn_string per request"
SHAPES = (LONG_LIVED, PER_REQUEST, CONN_STRING)
OURS = "ours"
OFFICIAL = "official"

# A request's saver, from (the saver class, the server's URI, the shared client, the
# database, the saver's ttl): a context manager that yields it and closes what it opened.
Opener = Callable[[Any, str, Any, str, int | None], AbstractContextManager[Any]]


@dataclass
class Shapes:
    requests: int
    delay: float
    # (contender, shape, ttl) -> value
    commands: dict[tuple[str, str, bool], float] = field(default_factory=dict)
    turn_ms: dict[tuple[str, str, bool], float] = field(default_factory=dict)


@contextmanager
def _on_shared_client(cls: Any, uri: str, client: Any, db: str, ttl: int | None) -> Iterator[Any]:
    yield cls(client, db, ttl=ttl)


@contextmanager
def _from_conn_string(cls: Any, uri: str, client: Any, db: str, ttl: int | None) -> Iterator[Any]:
    with cls.from_conn_string(uri, db, ttl=ttl) as saver:
        yield saver


def _requests(
    server: ServerProcess, cls: Any, shape: str, ttl: int | None, graph: Any
) -> tuple[list[int], list[float]]:
    """`REQUESTS` chat turns on one thread in `shape`: the commands and ms of each."""
    client: MongoClient[dict[str, Any]] = MongoClient(server.uri)
    db = f"bench_shapes_{uuid.uuid4().hex[:10]}"
    thread = thread_config("chat")
    counts, times = [], []
    try:
        long_lived = cls(client, db, ttl=ttl) if shape == LONG_LIVED else None
        opener: Opener = _from_conn_string if shape == CONN_STRING else _on_shared_client
        for turn in range(REQUESTS):
            server.reset()
            started = time.perf_counter()
            if long_lived is not None:
                graph.checkpointer = long_lived
                graph.invoke(human_input(turn), thread)
            else:
                with opener(cls, server.uri, client, db, ttl) as saver:
                    graph.checkpointer = saver
                    graph.invoke(human_input(turn), thread)
            times.append((time.perf_counter() - started) * 1000)
            counts.append(server.count())
    finally:
        client.drop_database(db)
        client.close()
    return counts, times


async def shapes(server: ServerProcess, settings: Settings, checks: list[str], log: Log) -> Shapes:
    result = Shapes(REQUESTS, max(settings.latency_delays))
    contenders = [(OURS, MongoDBSaver)]
    if OfficialSaver is not None:
        contenders.append((OFFICIAL, OfficialSaver))
    graph = chat_graph(delta=False).compile()
    try:
        for name, cls in contenders:
            for shape in SHAPES:
                for with_ttl in (False, True):
                    ttl = TTL_SECONDS if with_ttl else None
                    key = (name, shape, with_ttl)
                    server.delay = 0.0
                    counts, _ = _requests(server, cls, shape, ttl, graph)
                    result.commands[key] = sum(counts) / REQUESTS
                    server.delay = result.delay
                    _, times = _requests(server, cls, shape, ttl, graph)
                    result.turn_ms[key] = statistics.median(times[1:])
                    log(f"  shapes: {name}, {shape}, ttl={ttl}: {counts}")
    finally:
        server.delay = 0.0
    for with_ttl in (False, True):
        floor = result.commands[(OURS, LONG_LIVED, with_ttl)]
        for shape, budget in ((PER_REQUEST, 0.5), (CONN_STRING, 1.5)):
            over = result.commands[(OURS, shape, with_ttl)] - floor
            if over > budget:
                checks.append(
                    f"shapes: {shape} (ttl={with_ttl}) sends {over:.2f} commands per turn "
                    f"more than one long-lived saver (budget {budget})"
                )
    return result
