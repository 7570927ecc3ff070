"""What retention and expiry cost: `keep_last`, `ttl` (a stamp that moves or stays) and
LangGraph's `durability="exit"`, on our async saver over the wire server.

- storage: the 500-turn chat of the storage measurement (the same recorded calls, each
  turn after the `get_tuple` LangGraph starts a run with), replayed into
  `MongoDBSaver(keep_last=10)`, one saver for the whole chat and a new saver per turn (a
  saver per request); the thread's BSON bytes at the end.
- commands per chat turn (delay 0) and median ms per turn (at 20 ms) of the chat graph,
  with and without `keep_last=10` (whose trims the saver sends in the background: they are
  counted, and not timed, since the invoke does not wait for them), on one saver and on a
  saver per request (its `setup()` before the count: a process sets up once).
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

# The step variants, in table order: (label, saver options, invoke options, moves the
# clock, a new saver per invoke).
PLAIN = "default"
KEEP = f"keep_last={KEEP_LAST}"
PER_REQUEST = f"keep_last={KEEP_LAST}, a saver per request"
TTL_STAYS = "ttl, stamp stays"
TTL_MOVES = "ttl, stamp moves"
EXIT = 'durability="exit"'
EXIT_KEEP = f'durability="exit", keep_last={KEEP_LAST}'
EXIT_PER_REQUEST = f'durability="exit", keep_last={KEEP_LAST}, a saver per request'
_KEEP = {"keep_last": KEEP_LAST}
_EXIT = {"durability": "exit"}
VARIANTS: tuple[tuple[str, dict[str, Any], dict[str, Any], bool, bool], ...] = (
    (PLAIN, {}, {}, False, False),
    (KEEP, _KEEP, {}, False, False),
    (PER_REQUEST, _KEEP, {}, False, True),
    (TTL_STAYS, {"ttl": TTL}, {}, False, False),
    (TTL_MOVES, {"ttl": TTL}, {}, True, False),
    (EXIT, {}, _EXIT, False, False),
    (EXIT_KEEP, _KEEP, _EXIT, False, False),
    (EXIT_PER_REQUEST, _KEEP, _EXIT, False, True),
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
    stored_bytes_per_request: int = 0
    stored_documents_per_request: int = 0
    turn_commands: dict[str, float] = field(default_factory=dict)  # PLAIN / KEEP / PER_REQUEST
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
    try:
        for per_request in (False, True):
            db = _db_name()
            saver = MongoDBSaver(client, db, keep_last=KEEP_LAST)
            for start, end in zip(recording.ends, recording.ends[1:], strict=False):
                if per_request:
                    saver.close()
                    saver = MongoDBSaver(client, db, keep_last=KEEP_LAST)
                saver.get_tuple(thread_config(STORAGE_THREAD))  # LangGraph starts a run so
                for method, args in recording.calls[start:end]:
                    getattr(saver, method)(*args)
            saver.settle()
            stored = _thread_bytes(client, saver)
            if per_request:
                result.stored_bytes_per_request, result.stored_documents_per_request = stored
            else:
                result.stored_bytes, result.stored_documents = stored
            _check_stored(saver, result, checks)
            client.drop_database(db)
    finally:
        client.close()


def _check_stored(saver: MongoDBSaver, result: Retention, checks: list[str]) -> None:
    kept = saver.checkpoint_collection.count_documents({"thread_id": STORAGE_THREAD})
    if not KEEP_LAST <= kept <= KEEP_LAST + slack(KEEP_LAST) + 3:  # a turn: 3
        checks.append(f"retention: {kept} checkpoints stored with {KEEP}")
    listed = len(list(saver.list(thread_config(STORAGE_THREAD))))
    if listed != kept:
        checks.append(f"retention: {listed} checkpoints listed with {KEEP}, {kept} stored")
    state = saver.get_tuple(thread_config(STORAGE_THREAD))
    messages = state.checkpoint["channel_values"].get("messages", []) if state else []
    if len(messages) != 2 * result.storage_turns:
        checks.append(
            f"retention: the trimmed thread reads back {len(messages)} messages, "
            f"expected {2 * result.storage_turns}"
        )


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
    shapes = ((PLAIN, {}, False), (KEEP, _KEEP, False), (PER_REQUEST, _KEEP, True))
    dbs = {label: _db_name() for label, *_ in shapes}
    commands = dict.fromkeys(dbs, 0)
    times: dict[str, list[float]] = {label: [] for label in dbs}
    graphs: dict[str, Any] = {}
    config = thread_config("chat")
    for delay in (0.0, result.delay):
        server.delay = delay
        for turn in range(result.chat_turns):
            for label, options, per_request in shapes:
                graph = graphs.get(label)
                if graph is None or per_request:
                    graph = await _set_up_graph(client, dbs[label], options)
                    graphs[label] = graph
                server.reset()
                ms = await _timed_invoke(graph, human_input(turn), config)
                if delay:
                    times[label].append(ms)
                else:
                    commands[label] += server.count()
        config = thread_config("chat at delay")
    server.delay = 0.0
    for label in dbs:
        result.turn_commands[label] = commands[label] / result.chat_turns
        result.turn_ms[label] = statistics.median(times[label])
        await client.drop_database(dbs[label])


async def _set_up_graph(
    client: AsyncMongoClient[dict[str, Any]], db: str, options: dict[str, Any], nodes: int = 0
) -> Any:
    """The chat graph (or the `nodes`-node graph) on a new saver, set up (a process sets
    up once: a saver per request pays no `setup()` of its own once the process did)."""
    saver = AsyncMongoDBSaver(client, db, **options)
    await saver.setup()
    builder = linear_graph(nodes) if nodes else chat_graph(delta=False)
    return builder.compile(checkpointer=saver)


async def _steps(
    server: ServerProcess,
    client: AsyncMongoClient[dict[str, Any]],
    result: Retention,
    checks: list[str],
) -> None:
    server.delay = 0.0
    runs: list[tuple[str, Any, dict[str, Any], Callable[[], None] | None, str]] = []
    for label, saver_options, invoke_options, moves, _ in VARIANTS:
        db = _db_name()
        graph = await _set_up_graph(client, db, saver_options, result.nodes)
        advance = None
        expiry = graph.checkpointer.storage.expiry
        if expiry is not None:
            clock = _Clock()
            expiry.clock = clock
            advance = clock.advance if moves else None
        runs.append((label, graph, invoke_options, advance, db))
    per_request = {label: options for label, options, _, _, fresh in VARIANTS if fresh}
    config = thread_config("steps")
    server.delay = result.delay
    for _label, graph, options, _advance, _db in runs:  # the threads, a warm pool
        await graph.ainvoke(LINEAR_INPUT, config, **options)
    times: dict[str, list[float]] = {run[0]: [] for run in runs}
    commands: dict[str, int] = {run[0]: 0 for run in runs}
    for _ in range(result.invokes):
        for label, graph, options, advance, db in runs:
            if advance is not None:
                advance()
            if label in per_request:
                delay, server.delay = server.delay, 0.0
                graph = await _set_up_graph(client, db, per_request[label], result.nodes)
                server.delay = delay
            server.reset()
            times[label].append(await _timed_invoke(graph, LINEAR_INPUT, config, **options))
            commands[label] += server.count()
    server.delay = 0.0
    for label, graph, options, _advance, db in runs:
        if options:  # `durability="exit"`: commands over whole trim cycles
            result.invoke_commands[label] = await _exit_commands(
                server, client, graph, db, per_request.get(label), result.nodes
            )
    for label, graph, _options, _advance, db in runs:
        result.step_ms[label] = statistics.median(times[label]) / result.nodes
        result.invoke_commands.setdefault(label, commands[label] / result.invokes)
        state = await graph.aget_state(config)
        if state.values.get("count") != result.nodes:
            checks.append(f"retention: {label}: the 5-node graph ended with {state.values}")
        await client.drop_database(db)


async def _exit_commands(
    server: ServerProcess,
    client: AsyncMongoClient[dict[str, Any]],
    graph: Any,
    db: str,
    per_request: dict[str, Any] | None,
    nodes: int,
) -> float:
    """Commands per invoke under `durability="exit"` (one checkpoint per run), over four
    whole `keep_last` trim cycles (a trim once every `slack + 1` runs), so that the mean
    does not depend on where the timed invokes fell in the cycle."""
    runs = 4 * (slack(KEEP_LAST) + 1)
    commands = 0
    for _ in range(runs):
        if per_request is not None:
            graph = await _set_up_graph(client, db, per_request, nodes)
        server.reset()
        await _timed_invoke(graph, LINEAR_INPUT, thread_config("steps"), durability="exit")
        commands += server.count()
    return commands / runs
