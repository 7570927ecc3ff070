"""The five measurements. Each returns plain data; `report` renders it.

All networked contenders talk to one `WireServer` (real drivers, real sockets,
commands executed by mongomock); `server.delay` is set only around the timed part of a
measurement, everything else (building threads, setup, clean-up) runs at delay 0.
Every cell works on fresh databases that are dropped afterwards, because mongomock
has no indexes: its reads and updates scan whole collections under one lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import statistics
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import bson
from bson.raw_bson import RawBSONDocument
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    Checkpoint,
    CheckpointMetadata,
    copy_checkpoint,
)
from langgraph.checkpoint.base.id import uuid6
from langgraph.pregel import Pregel
from pymongo import MongoClient

from benchmarks.contenders import (
    MEMORY,
    OFFICIAL,
    OURS_ASYNC,
    OURS_SYNC,
    Backend,
    Contender,
    contenders,
)
from benchmarks.graphs import (
    LINEAR_INPUT,
    ai_text,
    chat_graph,
    human_input,
    linear_graph,
    thread_config,
)
from benchmarks.recorder import Call, RecordingSaver
from benchmarks.server import ServerProcess

Log = Callable[[str], None]


@dataclass(frozen=True)
class Settings:
    """Sizes of every measurement; `quick()` is a smoke test, not a benchmark."""

    chat_turns: int = 30  # the round-trip thread: 3 checkpoints per turn, >= 50 in all
    delta_turns: int = 40
    list_limit: int = 50
    latency_delays: tuple[float, ...] = (0.001, 0.020)
    latency_nodes: int = 5
    latency_invokes: int = 15
    history_repeats: int = 5
    concurrency_levels: tuple[int, ...] = (1, 10, 100, 500)
    concurrency_delay: float = 0.020
    concurrency_nodes: int = 3
    min_runs: int = 40  # low concurrency levels repeat waves until this many runs
    threads_per_db: int = 10
    storage_turns: tuple[int, ...] = (10, 100, 500)
    storage_segment_turns: int = 100
    compression_turns: tuple[int, ...] = (100, 500)
    compression_repeats: int = 21
    cpu_histories: tuple[int, ...] = (5, 30)
    cpu_call_rounds: int = 100
    cpu_turn_rounds: int = 400

    @classmethod
    def quick(cls) -> Settings:
        return cls(
            chat_turns=26,
            delta_turns=8,
            latency_invokes=2,
            history_repeats=1,
            concurrency_levels=(1, 10, 50),
            min_runs=4,
            storage_turns=(5, 20),
            compression_turns=(5, 20),
            compression_repeats=3,
            cpu_histories=(3, 5),
            cpu_call_rounds=3,
            cpu_turn_rounds=3,
        )


def _db_name(prefix: str) -> str:
    return f"bench_{prefix}_{uuid.uuid4().hex[:10]}"


# ----------------------------------------------------------------------------- round trips

RT_OPS = (
    "get_tuple",
    "list (limit 50)",
    "put",
    "put_writes",
    "graph step (1-node invoke)",
    "get_state_history (50)",
    "get_state, DeltaChannel thread",
    "graph step, DeltaChannel thread",
)


@dataclass
class RoundTrips:
    contenders: list[Contender]
    counts: dict[str, dict[str, int | None]]  # contender key -> op -> commands
    delta_turns: int
    chat_turns: int


async def _counted(server: ServerProcess, networked: bool, action: Awaitable[Any]) -> int | None:
    server.reset()
    await action
    return server.count() if networked else None


async def round_trips(
    server: ServerProcess, settings: Settings, checks: list[str], log: Log
) -> RoundTrips:
    server.delay = 0.0
    counts: dict[str, dict[str, int | None]] = {}
    found = contenders()
    for contender in found:
        started = time.perf_counter()
        backend = contender.open(server)
        try:
            counts[contender.key] = await _round_trips_of(backend, server, settings, checks)
        finally:
            await backend.close()
        log(f"  round trips: {contender.label} ({time.perf_counter() - started:.1f} s)")
    return RoundTrips(found, counts, settings.delta_turns, settings.chat_turns)


async def _round_trips_of(
    backend: Backend, server: ServerProcess, settings: Settings, checks: list[str]
) -> dict[str, int | None]:
    networked = backend.contender.networked
    label = backend.contender.label
    out: dict[str, int | None] = {}
    db = _db_name("rt")
    delta_db = _db_name("rtdelta")
    saver = await backend.saver(db)
    chat = chat_graph(delta=False).compile(checkpointer=saver)
    cfg = thread_config("chat")
    for turn in range(settings.chat_turns):
        await backend.invoke(chat, human_input(turn), cfg)

    out["get_tuple"] = await _counted(server, networked, backend.get_tuple(saver, cfg))
    listed: list[Any] = []

    async def do_list() -> None:
        listed.extend(await backend.list(saver, cfg, settings.list_limit))

    out["list (limit 50)"] = await _counted(server, networked, do_list())
    history: list[Any] = []

    async def do_history() -> None:
        history.extend(await backend.history(chat, cfg, settings.list_limit))

    out["get_state_history (50)"] = await _counted(server, networked, do_history())
    for what, got in (("list", listed), ("get_state_history", history)):
        if len(got) != settings.list_limit:
            checks.append(f"{label}: {what} returned {len(got)} items, not {settings.list_limit}")

    out["graph step (1-node invoke)"] = await _counted(
        server, networked, backend.invoke(chat, human_input(settings.chat_turns), cfg)
    )

    latest = await backend.get_tuple(saver, cfg)
    assert latest is not None
    checkpoint: Checkpoint = copy_checkpoint(latest.checkpoint)
    checkpoint["id"] = str(uuid6(clock_seq=-1))
    metadata: CheckpointMetadata = {"source": "update", "step": latest.metadata["step"] + 1}
    stored: list[RunnableConfig] = []

    async def do_put() -> None:
        stored.append(await backend.put(saver, latest.config, checkpoint, metadata, {}))

    out["put"] = await _counted(server, networked, do_put())
    reply = AIMessage(content=ai_text(10_000), id="ai-extra")
    out["put_writes"] = await _counted(
        server,
        networked,
        backend.put_writes(saver, stored[0], [("messages", [reply])], str(uuid.uuid4())),
    )

    delta_saver = await backend.saver(delta_db)
    delta_chat = chat_graph(delta=True).compile(checkpointer=delta_saver)
    for turn in range(settings.delta_turns):
        await backend.invoke(delta_chat, human_input(turn), cfg)
    states: list[Any] = []

    async def do_get_state() -> None:
        states.append(await backend.get_state(delta_chat, cfg))

    out["get_state, DeltaChannel thread"] = await _counted(server, networked, do_get_state())
    messages = states[0].values.get("messages", [])
    if len(messages) != 2 * settings.delta_turns:
        checks.append(
            f"{label}: get_state of the {settings.delta_turns}-turn DeltaChannel thread has "
            f"{len(messages)} messages, expected {2 * settings.delta_turns}"
        )
    out["graph step, DeltaChannel thread"] = await _counted(
        server, networked, backend.invoke(delta_chat, human_input(settings.delta_turns), cfg)
    )
    await backend.drop(db)
    await backend.drop(delta_db)
    return out


# ----------------------------------------------------------------------------- latency


@dataclass
class Latency:
    contenders: list[Contender]
    delays: tuple[float, ...]
    nodes: int
    invoke_ms: dict[str, dict[float, float]]  # median ms per invoke; memory under 0.0
    invoke_round_trips: dict[str, int | None]
    history_ms: dict[str, dict[float, float]]  # median ms of get_state_history(50)

    def step_ms(self, key: str, delay: float) -> float:
        by_delay = self.invoke_ms[key]
        return by_delay.get(delay, by_delay.get(0.0, math.nan)) / self.nodes

    def history(self, key: str, delay: float) -> float:
        by_delay = self.history_ms[key]
        return by_delay.get(delay, by_delay.get(0.0, math.nan))


async def _timed(action: Awaitable[Any]) -> float:
    """Milliseconds until `action` (a coroutine not started yet) completes."""
    started = time.perf_counter()
    await action
    return (time.perf_counter() - started) * 1000


async def latency(
    server: ServerProcess, settings: Settings, checks: list[str], log: Log
) -> Latency:
    found = contenders()
    result = Latency(found, settings.latency_delays, settings.latency_nodes, {}, {}, {})
    for contender in found:
        started = time.perf_counter()
        backend = contender.open(server)
        try:
            await _latency_of(backend, server, settings, result)
        finally:
            server.delay = 0.0
            await backend.close()
        log(f"  latency: {contender.label} ({time.perf_counter() - started:.1f} s)")
    return result


async def _latency_of(
    backend: Backend, server: ServerProcess, settings: Settings, result: Latency
) -> None:
    """Invokes on a thread of their own database (few documents, so that mongomock's
    whole-collection copies stay negligible); history on a 50-checkpoint thread."""
    key = backend.contender.key
    networked = backend.contender.networked
    server.delay = 0.0
    history_db = _db_name("hist")
    history_graph = linear_graph(settings.latency_nodes).compile(
        checkpointer=await backend.saver(history_db)
    )
    cfg = thread_config("latency")
    # get_state_history(50) needs 50 checkpoints: each invoke stores nodes + 1.
    for _ in range(math.ceil(settings.list_limit / (settings.latency_nodes + 1))):
        await backend.invoke(history_graph, LINEAR_INPUT, cfg)
    result.invoke_ms[key] = {}
    result.history_ms[key] = {}
    for delay in settings.latency_delays if networked else (0.0,):
        db = _db_name("lat")
        graph = linear_graph(settings.latency_nodes).compile(checkpointer=await backend.saver(db))
        server.delay = delay
        await backend.invoke(graph, LINEAR_INPUT, cfg)  # creates the thread, warms the pool
        invokes = []
        for _ in range(settings.latency_invokes):
            server.reset()
            invokes.append(await _timed(backend.invoke(graph, LINEAR_INPUT, cfg)))
            result.invoke_round_trips[key] = server.count() if networked else None
        histories = [
            await _timed(backend.history(history_graph, cfg, settings.list_limit))
            for _ in range(settings.history_repeats)
        ]
        server.delay = 0.0
        result.invoke_ms[key][delay] = statistics.median(invokes)
        result.history_ms[key][delay] = statistics.median(histories)
        await backend.drop(db)
    await backend.drop(history_db)


# ----------------------------------------------------------------------------- throughput


@dataclass(frozen=True)
class Mode:
    """A contender and how the application runs graphs concurrently."""

    contender: Contender
    runner: str  # "gather": asyncio.gather of ainvoke; "threads": N OS threads calling invoke

    @property
    def key(self) -> str:
        return f"{self.contender.key}/{self.runner}"

    @property
    def label(self) -> str:
        how = "asyncio.gather(ainvoke)" if self.runner == "gather" else "N OS threads, invoke"
        short = self.contender.label.split(" (")[0]
        return f"{short}: {how}"


@dataclass
class Throughput:
    modes: list[Mode]
    levels: tuple[int, ...]
    delay: float
    nodes: int
    threads_per_db: int
    min_runs: int
    runs_per_s: dict[str, dict[int, float]] = field(default_factory=dict)
    runs: dict[str, dict[int, int]] = field(default_factory=dict)
    client_cpu_ms: dict[str, dict[int, float]] = field(default_factory=dict)  # per run
    server_cpu_ms: dict[str, dict[int, float]] = field(default_factory=dict)  # per run


def throughput_modes() -> list[Mode]:
    found = {c.key: c for c in contenders()}
    modes = [Mode(OURS_ASYNC, "gather"), Mode(OURS_SYNC, "threads")]
    if OFFICIAL.key in found:
        modes += [Mode(OFFICIAL, "threads"), Mode(OFFICIAL, "gather")]
    modes.append(Mode(MEMORY, "gather"))
    return modes


async def throughput(
    server: ServerProcess, settings: Settings, checks: list[str], log: Log
) -> Throughput:
    modes = throughput_modes()
    result = Throughput(
        modes,
        settings.concurrency_levels,
        settings.concurrency_delay,
        settings.concurrency_nodes,
        settings.threads_per_db,
        settings.min_runs,
    )
    for mode in modes:
        started = time.perf_counter()
        backend = mode.contender.open(server)
        for table in (result.runs_per_s, result.runs, result.client_cpu_ms, result.server_cpu_ms):
            table[mode.key] = {}
        warmed = 0  # connections the client has opened at least (pools only grow here)
        try:
            for n in settings.concurrency_levels:
                cell = await _throughput_cell(backend, mode, n, warmed, server, settings, checks)
                warmed = max(warmed, min(n, POOL_SIZE))
                result.runs_per_s[mode.key][n] = cell.runs / cell.seconds
                result.runs[mode.key][n] = cell.runs
                result.client_cpu_ms[mode.key][n] = 1000 * cell.client_cpu / cell.runs
                if cell.server_cpu is not None:
                    result.server_cpu_ms[mode.key][n] = 1000 * cell.server_cpu / cell.runs
        finally:
            server.delay = 0.0
            await backend.close()
        log(f"  throughput: {mode.label} ({time.perf_counter() - started:.1f} s)")
    return result


POOL_SIZE = 100  # PyMongo's default maxPoolSize


@dataclass
class _Cell:
    runs: int
    seconds: float
    client_cpu: float
    server_cpu: float | None


Job = tuple[Pregel[Any], RunnableConfig]


async def _throughput_cell(
    backend: Backend,
    mode: Mode,
    n: int,
    warmed: int,
    server: ServerProcess,
    settings: Settings,
    checks: list[str],
) -> _Cell:
    """`n` LangGraph threads run the graph at once, in waves until `min_runs` runs.

    Threads are spread over databases of `threads_per_db` threads each, so that
    mongomock's collection scans stay as cheap as indexed lookups would be. An
    untimed wave first opens the connections this level needs, if earlier levels
    did not: pool growth is a start-up cost, not throughput.
    """
    server.delay = 0.0
    dbs: list[str] = []

    async def graphs_for(threads: int) -> list[Pregel[Any]]:
        """Graphs on fresh databases, one per `threads_per_db` of `threads` threads."""
        graphs = []
        for _ in range(math.ceil(threads / settings.threads_per_db)):
            dbs.append(_db_name("tp"))
            saver = await backend.saver(dbs[-1])
            graphs.append(linear_graph(settings.concurrency_nodes).compile(checkpointer=saver))
        return graphs

    warm_up = min(n, POOL_SIZE) if min(n, POOL_SIZE) > warmed else 0
    warm_graphs = await graphs_for(warm_up)
    warm_jobs = [
        (warm_graphs[i // settings.threads_per_db], thread_config(f"warm-{i}"))
        for i in range(warm_up)
    ]
    waves = max(1, math.ceil(settings.min_runs / n))
    # Each wave on databases of its own: no database ever holds more than
    # `threads_per_db` threads, whatever the number of waves.
    jobs = []
    for wave in range(waves):
        graphs = await graphs_for(n)
        jobs.append(
            [
                (graphs[i // settings.threads_per_db], thread_config(f"w{wave}-t{i}"))
                for i in range(n)
            ]
        )
    results: list[Any] = []
    with ThreadPoolExecutor(max_workers=n) if mode.runner == "threads" else _no_pool() as pool:

        async def run_wave(wave_jobs: list[Job]) -> list[Any]:
            if pool is None:
                return list(
                    await asyncio.gather(*(g.ainvoke(LINEAR_INPUT, c) for g, c in wave_jobs))
                )
            return list(pool.map(lambda job: job[0].invoke(LINEAR_INPUT, job[1]), wave_jobs))

        if pool is not None:
            barrier = threading.Barrier(n)
            list(pool.map(lambda _: barrier.wait(), range(n)))  # start all n threads first
        server.delay = settings.concurrency_delay
        if warm_jobs:
            await run_wave(warm_jobs)
        server_cpu = server.cpu_seconds()
        client_cpu = time.process_time()
        started = time.perf_counter()
        for wave_jobs in jobs:
            results.extend(await run_wave(wave_jobs))
        seconds = time.perf_counter() - started
        client_cpu = time.process_time() - client_cpu
        server_after = server.cpu_seconds()
        server.delay = 0.0
    bad = [r for r in results if r.get("count") != settings.concurrency_nodes]
    if bad:
        checks.append(f"{mode.label}, {n} threads: {len(bad)} runs ended with a wrong state")
    for db in dbs:
        await backend.drop(db)
    return _Cell(
        len(results),
        seconds,
        client_cpu,
        None if server_cpu is None or server_after is None else server_after - server_cpu,
    )


@contextlib.contextmanager
def _no_pool() -> Iterator[None]:
    yield None


# ----------------------------------------------------------------------------- storage

# The compression settings measured: none first (the reference of the compression
# table's ratios), then zstd (the recommended one), then zlib.
COMPRESSIONS: tuple[str | None, ...] = (None, "zstd", "zlib")


@dataclass(frozen=True)
class StorageVariant:
    contender: Contender
    delta: bool
    compression: str | None

    @property
    def key(self) -> str:
        return f"{self.contender.key}/{'delta' if self.delta else 'list'}/{self.compression}"

    @property
    def label(self) -> str:
        short = "ours" if self.contender is OURS_SYNC else self.contender.label.split(" (")[0]
        parts = [short, "DeltaChannel" if self.delta else "add_messages list"]
        if self.compression:
            parts.append(self.compression)
        return ", ".join(parts)


@dataclass
class Storage:
    variants: list[StorageVariant]
    turns: tuple[int, ...]
    segment_turns: int
    bytes_per_thread: dict[str, dict[int, int]] = field(default_factory=dict)
    documents: dict[str, dict[int, int]] = field(default_factory=dict)


def storage_variants() -> list[StorageVariant]:
    found = {c.key for c in contenders()}
    variants = []
    for delta in (False, True):
        if OFFICIAL.key in found:
            variants.append(StorageVariant(OFFICIAL, delta, None))
        variants.append(StorageVariant(OURS_SYNC, delta, None))
        for setting in COMPRESSIONS[1:]:
            variants.append(StorageVariant(OURS_SYNC, delta, setting))
    return variants


STORAGE_THREAD = "storage"


@dataclass
class Recording:
    """The write calls of one chat run; `ends[t]` = number of calls after `t` turns."""

    calls: list[Call]
    ends: list[int]

    def expected_documents(self) -> int:
        """Documents the calls create: one per checkpoint, one per (task, index) write."""
        keys: set[tuple[Any, ...]] = set()
        for method, args in self.calls:
            conf = args[0]["configurable"]
            if method == "put":
                keys.add(("checkpoint", conf.get("checkpoint_ns", ""), args[1]["id"]))
            else:
                for position, (channel, _) in enumerate(args[1]):
                    idx = WRITES_IDX_MAP.get(channel, position)
                    keys.add(("write", conf["checkpoint_id"], args[2], idx))
        return len(keys)


@functools.cache
def _record(delta: bool, turns: int) -> Recording:
    """Run the chat graph for `turns` turns on a recording saver (once per run: the
    storage and compression measurements replay the same recording; neither changes it).
    """
    saver = RecordingSaver()
    graph = chat_graph(delta=delta).compile(checkpointer=saver)
    cfg = thread_config(STORAGE_THREAD)
    ends = [0]
    for turn in range(turns):
        graph.invoke(human_input(turn), cfg)
        ends.append(len(saver.calls))
    return Recording(saver.calls, ends)


def _thread_bytes(client: MongoClient[Any], saver: Any) -> tuple[int, int]:
    """(BSON bytes, documents) of the storage thread in both of the saver's collections."""
    total = docs = 0
    db = client.get_database(
        saver.db.name,
        codec_options=saver.db.codec_options.with_options(document_class=RawBSONDocument),
    )
    for collection in (saver.checkpoint_collection.name, saver.writes_collection.name):
        for doc in db[collection].find({"thread_id": STORAGE_THREAD}):
            total += len(doc.raw)
            docs += 1
    return total, docs


async def storage(
    server: ServerProcess, settings: Settings, checks: list[str], log: Log
) -> Storage:
    """BSON bytes per chat thread after N turns.

    The chat graph runs once per channel kind on a `RecordingSaver`; its exact
    sequence of `put`/`put_writes` calls is then replayed into each saver, so every
    saver stores the same checkpoints. Both our savers store identical documents (one
    shared core), so ours is measured through `MongoDBSaver`.

    The replay goes into a fresh database every `storage_segment_turns` turns and the
    thread's size is the sum over its segments. A document depends only on the call
    that wrote it (checkpoints and writes are upserted by key and no call touches an
    earlier one's document, which the document count checks), so segments change no
    byte; they keep mongomock's per-command collection scans short. The first segment
    is read back through the saver and must give the whole conversation.
    """
    server.delay = 0.0
    variants = storage_variants()
    result = Storage(variants, settings.storage_turns, settings.storage_segment_turns)
    recordings = {}
    for delta in (False, True):
        started = time.perf_counter()
        recordings[delta] = _record(delta, max(settings.storage_turns))
        log(
            f"  storage: recorded {max(settings.storage_turns)} turns, "
            f"{'DeltaChannel' if delta else 'add_messages list'} "
            f"({len(recordings[delta].calls)} calls, {time.perf_counter() - started:.1f} s)"
        )
    reader: MongoClient[Any] = MongoClient(server.uri)
    try:
        for variant in variants:
            started = time.perf_counter()
            backend = variant.contender.open(server)
            try:
                await _store(
                    backend, variant, recordings[variant.delta], reader, settings, result, checks
                )
            finally:
                await backend.close()
            log(f"  storage: {variant.label} ({time.perf_counter() - started:.1f} s)")
    finally:
        reader.close()
    return result


async def _store(
    backend: Backend,
    variant: StorageVariant,
    recording: Recording,
    reader: MongoClient[Any],
    settings: Settings,
    result: Storage,
    checks: list[str],
) -> None:
    marks = set(settings.storage_turns)
    total_turns = len(recording.ends) - 1
    result.bytes_per_thread[variant.key] = {}
    result.documents[variant.key] = {}
    done_bytes = done_docs = 0
    start = 0
    while start < total_turns:
        end = min(start + settings.storage_segment_turns, total_turns)
        db = _db_name("st")
        saver = await backend.saver(db, compression=variant.compression)
        position = recording.ends[start]
        size = docs = 0
        for stop in sorted({t for t in marks if start < t < end} | {end}):
            for method, args in recording.calls[position : recording.ends[stop]]:
                getattr(saver, method)(*args)
            position = recording.ends[stop]
            size, docs = _thread_bytes(reader, saver)
            if stop in marks:
                result.bytes_per_thread[variant.key][stop] = done_bytes + size
                result.documents[variant.key][stop] = done_docs + docs
        if start == 0:
            _check_read_back(saver, variant, 2 * end, checks)
        done_bytes += size
        done_docs += docs
        await backend.drop(db)
        start = end
    expected = recording.expected_documents()
    if done_docs != expected:
        checks.append(f"{variant.label}: stored {done_docs} documents, expected {expected}")


def _check_read_back(saver: Any, variant: StorageVariant, messages: int, checks: list[str]) -> None:
    graph = chat_graph(delta=variant.delta).compile(checkpointer=saver)
    state = graph.get_state(thread_config(STORAGE_THREAD))
    got = state.values.get("messages", [])
    if len(got) != messages or got[-1].content != ai_text(messages // 2 - 1):
        checks.append(
            f"{variant.label}: the replayed thread reads back {len(got)} messages, "
            f"expected {messages} ending with the last reply"
        )


# ----------------------------------------------------------------------------- compression


def compression_name(compression: str | None) -> str:
    return compression or "none"


@dataclass
class Compression:
    turns: tuple[int, ...]
    repeats: int
    compressions: tuple[str | None, ...] = COMPRESSIONS
    # turns -> compression name -> value
    messages: dict[int, int] = field(default_factory=dict)
    document_bytes: dict[int, dict[str, int]] = field(default_factory=dict)
    put_ms: dict[int, dict[str, float]] = field(default_factory=dict)
    get_ms: dict[int, dict[str, float]] = field(default_factory=dict)
    encode_ms: dict[int, dict[str, float]] = field(default_factory=dict)
    decode_ms: dict[int, dict[str, float]] = field(default_factory=dict)


def _last_put(recording: Recording, turns: int) -> tuple[Any, ...]:
    """The arguments of the `put` that stored the checkpoint after `turns` turns."""
    for method, args in reversed(recording.calls[: recording.ends[turns]]):
        if method == "put":
            return args
    raise ValueError(f"the recording has no checkpoint after {turns} turns")


async def compression(
    server: ServerProcess, settings: Settings, checks: list[str], log: Log
) -> Compression:
    """What `compression="zstd"` and `"zlib"` cost and save on one long chat checkpoint.

    The checkpoint the chat graph (`add_messages` list) stored after N turns holds the
    whole conversation (2N messages). For each N, our sync saver stores it in a fresh
    database with each setting, then the timed calls alternate between the settings (so
    that a load change on the machine hits both alike): `put` of that checkpoint again
    (an upsert replacing its one document: the collection stays one document, so
    mongomock's scans do not grow), `get_tuple` of it, and, without I/O, the client's
    encoding (serializer, compression, BSON) and decoding of the checkpoint value.
    """
    server.delay = 0.0
    result = Compression(settings.compression_turns, settings.compression_repeats)
    started = time.perf_counter()
    recording = _record(False, max(settings.compression_turns))
    log(
        f"  compression: recording of {max(settings.compression_turns)} turns ready "
        f"({time.perf_counter() - started:.1f} s)"
    )
    backend = OURS_SYNC.open(server)
    reader: MongoClient[Any] = MongoClient(server.uri)
    try:
        for turns in settings.compression_turns:
            started = time.perf_counter()
            args = _last_put(recording, turns)
            await _compression_of(backend, reader, args, turns, settings, result, checks)
            log(f"  compression: {turns} turns ({time.perf_counter() - started:.1f} s)")
    finally:
        reader.close()
        await backend.close()
    return result


async def _compression_of(
    backend: Backend,
    reader: MongoClient[Any],
    args: tuple[Any, ...],
    turns: int,
    settings: Settings,
    result: Compression,
    checks: list[str],
) -> None:
    config, checkpoint, metadata, new_versions = args
    result.messages[turns] = len(checkpoint["channel_values"].get("messages", []))
    savers: dict[str, tuple[Any, RunnableConfig, str]] = {}
    for setting in result.compressions:
        db = _db_name("zip")
        saver = await backend.saver(db, compression=setting)
        stored = await backend.put(saver, config, checkpoint, metadata, new_versions)
        savers[compression_name(setting)] = (saver, stored, db)
    samples: dict[str, dict[str, list[float]]] = {
        name: {"put": [], "get": [], "encode": [], "decode": []} for name in savers
    }
    for _ in range(settings.compression_repeats):
        for name, (saver, stored, _db) in savers.items():
            times = samples[name]
            times["put"].append(
                await _timed(backend.put(saver, config, checkpoint, metadata, new_versions))
            )
            times["get"].append(await _timed(backend.get_tuple(saver, stored)))
            codec = saver.storage.codec
            started = time.perf_counter()
            raw = bson.encode({"checkpoint": codec.encode(checkpoint)})
            encoded = time.perf_counter()
            codec.decode(bson.decode(raw)["checkpoint"])
            decoded = time.perf_counter()
            times["encode"].append((encoded - started) * 1000)
            times["decode"].append((decoded - encoded) * 1000)
    for table, what in (
        (result.put_ms, "put"),
        (result.get_ms, "get"),
        (result.encode_ms, "encode"),
        (result.decode_ms, "decode"),
    ):
        table[turns] = {name: statistics.median(samples[name][what]) for name in savers}
    result.document_bytes[turns] = {}
    for name, (saver, stored, db) in savers.items():
        raw_db = reader.get_database(
            db, codec_options=saver.db.codec_options.with_options(document_class=RawBSONDocument)
        )
        docs = list(raw_db[saver.checkpoint_collection.name].find({}))
        result.document_bytes[turns][name] = sum(len(doc.raw) for doc in docs)
        label = f"compression {name}, {turns} turns"
        # Each channel's value is stored (and compressed) apart: the messages are the
        # channel large enough to compress.
        stored_as = [
            entry.get("compression")
            for doc in docs
            for entry in doc["channel_values"]
            if entry["channel"] == "messages"
        ]
        if stored_as != [None if name == "none" else name]:
            checks.append(f"{label}: the messages channel is stored with compression={stored_as}")
        got = await backend.get_tuple(saver, stored)
        messages = got.checkpoint["channel_values"].get("messages", []) if got else []
        if len(messages) != 2 * turns or messages[-1].content != ai_text(turns - 1):
            checks.append(
                f"{label}: get_tuple returned {len(messages)} messages, expected {2 * turns} "
                "ending with the last reply"
            )
        await backend.drop(db)
