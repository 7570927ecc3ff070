"""What retention and expiry cost: `keep_last`, `ttl` (a stamp that moves or stays) and
LangGraph's `durability="exit"`, on our async saver over the wire server.

- storage: the 500-turn chat of the storage measurement (the same recorded calls),
  replayed into `MongoDBSaver(keep_last=10)`; the thread's BSON bytes at the end.
- commands per chat turn (delay 0) and median ms per turn (at 20 ms) of the chat graph,
  with and without `keep_last=10` (whose trims the saver sends in the background: they are
  counted, and not timed, since the invoke does not wait for them).
- commands per invoke and median ms per step (at 20 ms) of the 5-node graph of the latency
  measurement, for each variant. The variants' invokes alternate (one of each, then the
  next round), so that a load change on the shared machine hits them alike.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from pymongo import AsyncMongoClient, MongoClient

from benchmarks.graphs import LINEAR_INPUT, chat_graph, human_input, linear_graph, thread_config
from benchmarks.scenarios import STORAGE_THREAD, Log, Settings, _record, _thread_bytes
from benchmarks.server import ServerProcess
from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver
from langgraph.checkpoint.mongo._operations import slack

KEEP_LAST = 10
TTL = timedelta(hours=16)  # buckets of an hour

# The step variants, in table order: (label, saver options, invoke options, moves the clock).
PLAIN = "default"
KEEP = f"keep_last={KEEP_LAST}"
TTL_STAYS = "ttl, stamp stays"
TTL_MOVES = "ttl, stamp moves"
EXIT = 'durability="exit"'
VARIANTS: tuple[tuple[str, dict[str, Any], dict[str, Any], bool], ...] = (
    (PLAIN, {}, {}, False),
    (KEEP, {"keep_last": KEEP_LAST}, {}, False),
    (TTL_STAYS, {"ttl": TTL}, {}, False),
    (TTL_MOVES, {"ttl": TTL}, {}, True),
    (EXIT, {}, {"durability": "exit"}, False),
)


@dataclass
class Retention:
    storage_turns: int
    chat_turns: int
    nodes: int
    invokes: int
    delay: float
    keep_last: int = KEEP_LAST
    stored_bytes: int = 0
    stored_documents: int = 0
    turn_commands: dict[str, float] = field(default_factory=dict)  # PLAIN / KEEP
    turn_ms: dict[str, float] = field(default_factory=dict)
    invoke_commands: dict[str, float] = field(default_factory=dict)  # label -> mean per invoke
    step_ms: dict[str, float] = field(default_factory=dict)


class _Clock:
    """The expiry clock of the `ttl` variants: now, plus the buckets `advance` added."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(timezone.utc) + self.offset

    def advance(self) -> None:
        self.offset += TTL / 16


def _db_name() -> str:
    return f"bench_keep_{uuid.uuid4().hex[:10]}"


async def retention(
    server: ServerProcess, settings: Settings, checks: list[str], log: Log
) -> Retention:
    result = Retention(
        max(settings.storage_turns),
        settings.chat_turns,
        settings.latency_nodes,
        settings.latency_invokes,
        max(settings.latency_delays),
    )
    started = time.perf_counter()
    _storage(server, result, checks)
    log(f"  retention: storage with {KEEP} ({time.perf_counter() - started:.1f} s)")
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(server.uri)
    try:
        started = time.perf_counter()
        await _chat_turns(server, client, result)
        log(f"  retention: chat turns ({time.perf_counter() - started:.1f} s)")
        started = time.perf_counter()
        await _steps(server, client, result, checks)
        log(f"  retention: steps ({time.perf_counter() - started:.1f} s)")
    finally:
        server.delay = 0.0
        await client.close()
    return result


def _storage(server: ServerProcess, result: Retention, checks: list[str]) -> None:
    server.delay = 0.0
    recording = _record(False, result.storage_turns)
    client: MongoClient[dict[str, Any]] = MongoClient(server.uri)
    db = _db_name()
    try:
        saver = MongoDBSaver(client, db, keep_last=KEEP_LAST)
        saver.setup()
        for method, args in recording.calls:
            getattr(saver, method)(*args)
        saver.settle()
        result.stored_bytes, result.stored_documents = _thread_bytes(client, saver)
        kept = saver.checkpoint_collection.count_documents({"thread_id": STORAGE_THREAD})
        if not KEEP_LAST <= kept <= KEEP_LAST + slack(KEEP_LAST) + 3:  # a turn: 3
            checks.append(f"retention: {kept} checkpoints stored with {KEEP}")
        listed = len(list(saver.list(thread_config(STORAGE_THREAD))))
        if listed != KEEP_LAST:
            checks.append(f"retention: {listed} checkpoints listed with {KEEP}")
        state = saver.get_tuple(thread_config(STORAGE_THREAD))
        messages = state.checkpoint["channel_values"].get("messages", []) if state else []
        if len(messages) != 2 * result.storage_turns:
            checks.append(
                f"retention: the trimmed thread reads back {len(messages)} messages, "
                f"expected {2 * result.storage_turns}"
            )
    finally:
        client.drop_database(db)
        client.close()


async def _timed_invoke(graph: Any, value: Any, config: Any, **options: Any) -> float:
    """Milliseconds until the invoke returns; then what the saver runs in the background
    (a `keep_last` trim) is waited for, untimed, so that its commands are counted with
    the invoke that caused them, and no other invoke overlaps it."""
    started = time.perf_counter()
    await graph.ainvoke(value, config, **options)
    elapsed = (time.perf_counter() - started) * 1000
    await graph.checkpointer.settle()
    return elapsed


async def _chat_turns(
    server: ServerProcess, client: AsyncMongoClient[dict[str, Any]], result: Retention
) -> None:
    dbs = {label: _db_name() for label in (PLAIN, KEEP)}
    graphs = {}
    for label, options in ((PLAIN, {}), (KEEP, {"keep_last": KEEP_LAST})):
        saver = AsyncMongoDBSaver(client, dbs[label], **options)  # type: ignore[arg-type]
        await saver.setup()
        graphs[label] = chat_graph(delta=False).compile(checkpointer=saver)
    config = thread_config("chat")
    commands = dict.fromkeys(graphs, 0)
    times: dict[str, list[float]] = {label: [] for label in graphs}
    for delay in (0.0, result.delay):
        server.delay = delay
        for turn in range(result.chat_turns):
            for label, graph in graphs.items():
                server.reset()
                ms = await _timed_invoke(graph, human_input(turn), config)
                if delay:
                    times[label].append(ms)
                else:
                    commands[label] += server.count()
        config = thread_config("chat at delay")
    server.delay = 0.0
    for label in graphs:
        result.turn_commands[label] = commands[label] / result.chat_turns
        result.turn_ms[label] = statistics.median(times[label])
        await client.drop_database(dbs[label])


async def _steps(
    server: ServerProcess,
    client: AsyncMongoClient[dict[str, Any]],
    result: Retention,
    checks: list[str],
) -> None:
    server.delay = 0.0
    runs: list[tuple[str, Any, dict[str, Any], Callable[[], None] | None, str]] = []
    for label, saver_options, invoke_options, moves in VARIANTS:
        db = _db_name()
        saver = AsyncMongoDBSaver(client, db, **saver_options)
        await saver.setup()
        advance = None
        if saver.storage.expiry is not None:
            clock = _Clock()
            saver.storage.expiry.clock = clock
            advance = clock.advance if moves else None
        graph = linear_graph(result.nodes).compile(checkpointer=saver)
        runs.append((label, graph, invoke_options, advance, db))
    config = thread_config("steps")
    server.delay = result.delay
    for _label, graph, options, _advance, _db in runs:  # the threads, a warm pool
        await graph.ainvoke(LINEAR_INPUT, config, **options)
    times: dict[str, list[float]] = {run[0]: [] for run in runs}
    commands: dict[str, int] = {run[0]: 0 for run in runs}
    for _ in range(result.invokes):
        for label, graph, options, advance, _ in runs:
            if advance is not None:
                advance()
            server.reset()
            times[label].append(await _timed_invoke(graph, LINEAR_INPUT, config, **options))
            commands[label] += server.count()
    server.delay = 0.0
    for label, graph, _options, _advance, db in runs:
        result.step_ms[label] = statistics.median(times[label]) / result.nodes
        result.invoke_commands[label] = commands[label] / result.invokes
        state = await graph.aget_state(config)
        if state.values.get("count") != result.nodes:
            checks.append(f"retention: {label}: the 5-node graph ended with {state.values}")
        await client.drop_database(db)
