"""Client CPU: what each saver call, and each chat turn, costs the application's process.

The wire server runs in a process of its own (`benchmarks/server.py`), so the CPU time
of this process (`time.process_time()`: every thread, user + system) around a call is
the saver, the driver and LangGraph alone: the mock's work is not in it.

Two measurements, each at several lengths of chat history (turns before the measured
one), on the plain `add_messages` chat:

* **per call**: the calls of one recorded chat turn (`benchmarks/recorder.py`) replayed
  into each saver: `put` (the turn's three, ÷ 3), `put_writes` (its two, ÷ 2),
  `get_tuple` (the latest checkpoint) and `list(limit=10)`, on a thread holding the
  last few turns before it. Beside the savers, two floors: the cheapest single driver
  command that stores or reads the same documents our saver stores (prebuilt, so no
  saver code runs), on each client; and the serializer alone on the same values.
* **per turn**: one `ainvoke` / `invoke` of the chat graph on a thread whose latest
  checkpoint (stored by a `put` of the saver itself just before, as the previous turn
  would have) holds that much history; the saver's own share is the turn minus
  `InMemorySaver`'s turn run the same way.

Machines are noisy (this one is a shared 2-core VM): every contender is measured in
every round, in an order that rotates from round to round, so that a slow period
hits all of them alike, and the results are medians over many rounds with a bootstrap
interval. The cyclic garbage collector runs as usual, but the objects that exist before
the measurement (recordings, other measurements' results) are frozen out of it
(`gc.freeze()`), so its cost depends on what the calls allocate, not on the harness.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.memory import InMemorySaver
from pymongo import AsyncMongoClient, MongoClient, UpdateOne

from benchmarks.contenders import OFFICIAL, OURS_ASYNC, OURS_SYNC, Backend, contenders
from benchmarks.graphs import chat_graph, human_input, thread_config
from benchmarks.scenarios import STORAGE_THREAD, Log, Recording, Settings, _db_name, _record
from benchmarks.server import ServerProcess

CALL_OPS = ("put", "put_writes", "get_tuple", "list")
LIST_LIMIT = 10
# Turns of the recording replayed before the measured one, so `list` finds LIST_LIMIT.
PREFIX_TURNS = 4


@dataclass(frozen=True)
class Row:
    """One line of a table: a contender and how it is called."""

    key: str
    label: str
    reference: str | None = None  # the row its ratios are taken against


CALL_ROWS = (
    Row("ours_async", "ours async: a* methods, AsyncMongoClient", "official_async"),
    Row("ours_sync", "ours sync: methods, MongoClient", "official_sync"),
    Row("official_async", "official: a* methods (thread pool)"),
    Row("official_sync", "official: methods, MongoClient"),
    Row("floor_async", "floor: driver alone, AsyncMongoClient", "official_async"),
    Row("floor_sync", "floor: driver alone, MongoClient", "official_sync"),
    Row("serializer", "floor: serializer alone", "official_sync"),
)
TURN_ROWS = (
    Row("ours_async", "ours async, ainvoke", "official_async"),
    Row("official_async", "official, ainvoke"),
    Row("memory_async", "InMemorySaver, ainvoke"),
    Row("ours_sync", "ours sync, invoke", "official_sync"),
    Row("official_sync", "official, invoke"),
    Row("memory_sync", "InMemorySaver, invoke"),
)
# The InMemorySaver row whose turn is subtracted from each row's (same API style).
BASELINE = {
    "ours_async": "memory_async",
    "official_async": "memory_async",
    "ours_sync": "memory_sync",
    "official_sync": "memory_sync",
}


@dataclass
class ClientCpu:
    histories: tuple[int, ...]
    call_rounds: int
    turn_rounds: int
    call_rows: list[Row]
    turn_rows: list[Row]
    # history -> row key -> op -> µs per call, one sample per round (aligned by round)
    calls: dict[int, dict[str, dict[str, list[float]]]] = field(default_factory=dict)
    # history -> row key -> µs per turn, one sample per round (aligned by round)
    turns: dict[int, dict[str, list[float]]] = field(default_factory=dict)
    # the driver command each floor sends per op
    floor_commands: dict[str, str] = field(default_factory=dict)

    def own_turn(self, history: int, key: str) -> list[float]:
        """A row's turn minus InMemorySaver's turn of the same round and style."""
        base = self.turns[history][BASELINE[key]]
        return [t - b for t, b in zip(self.turns[history][key], base, strict=True)]


# ----------------------------------------------------------------------------- statistics


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float]) -> float:
    """Interquartile range ÷ median: how much single samples scatter."""
    if len(values) < 2:
        return 0.0
    low, _, high = statistics.quantiles(values, n=4)
    middle = statistics.median(values)
    return (high - low) / middle if middle else 0.0


def ratio_interval(
    values: Sequence[float],
    reference: Sequence[float],
    base: Sequence[float] | None = None,
    resamples: int = 400,
) -> tuple[float, float, float]:
    """`values` ÷ `reference` (each minus `base`, if given), and a 95% bootstrap interval.

    Samples are paired by round (measured moments apart), so the estimate is
    1 + median(values - reference) ÷ median(reference - base): the paired difference
    cancels load that drifts from round to round, which a ratio of two separate
    medians does not. The rounds are resampled together; the seed is fixed, so the
    same samples give the same interval.
    """
    n = len(values)
    below = base if base is not None else [0.0] * n
    differences = [v - r for v, r in zip(values, reference, strict=True)]
    denominators = [r - b for r, b in zip(reference, below, strict=True)]

    def estimate(picks: Sequence[int]) -> float:
        return 1 + median([differences[i] for i in picks]) / median(
            [denominators[i] for i in picks]
        )

    rng = random.Random(14)
    ratios = sorted(estimate([rng.randrange(n) for _ in range(n)]) for _ in range(resamples))
    return estimate(range(n)), ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


# ----------------------------------------------------------------------------- timing


async def _cpu_us(action: Callable[[], Awaitable[Any]]) -> float:
    """Client CPU (µs, all threads of this process) until `action()` completes."""
    started = time.process_time()
    await action()
    return (time.process_time() - started) * 1e6


def _rotated(items: Sequence[Any], by: int) -> list[Any]:
    by %= len(items)
    return [*items[by:], *items[:by]]


# ----------------------------------------------------------------------------- per call


@dataclass
class _TurnCalls:
    """The recorded calls of the measured turn and of the turns before it."""

    prefix: list[tuple[str, tuple[Any, ...]]]
    puts: list[tuple[Any, ...]]
    writes: list[tuple[Any, ...]]
    thread: RunnableConfig


def _turn_calls(recording: Recording, history: int) -> _TurnCalls:
    start = recording.ends[max(0, history - PREFIX_TURNS)]
    turn = recording.calls[recording.ends[history] : recording.ends[history + 1]]
    return _TurnCalls(
        prefix=recording.calls[start : recording.ends[history]],
        puts=[args for method, args in turn if method == "put"],
        writes=[args for method, args in turn if method == "put_writes"],
        thread=thread_config(STORAGE_THREAD),
    )


class _Caller:
    """Performs the four ops one way; `prepare` runs once, untimed."""

    async def prepare(self, calls: _TurnCalls) -> None:
        self.calls = calls

    async def put(self) -> None:
        raise NotImplementedError

    async def put_writes(self) -> None:
        raise NotImplementedError

    async def get_tuple(self) -> None:
        raise NotImplementedError

    async def list(self) -> None:
        raise NotImplementedError


class _SaverCaller(_Caller):
    """A saver through its sync methods, or through its `a*` methods."""

    def __init__(self, backend: Backend, use_async: bool) -> None:
        self.backend = backend
        self.use_async = use_async
        self.saver: Any = None

    async def prepare(self, calls: _TurnCalls) -> None:
        await super().prepare(calls)
        self.saver = await self.backend.saver(_db_name("cpu"))
        for method, args in calls.prefix:
            await self._call(method, args)
        await self.put()
        await self.put_writes()

    async def _call(self, method: str, args: tuple[Any, ...]) -> None:
        if self.use_async:
            await getattr(self.saver, f"a{method}")(*args)
        else:
            getattr(self.saver, method)(*args)

    async def put(self) -> None:
        for args in self.calls.puts:
            await self._call("put", args)

    async def put_writes(self) -> None:
        for args in self.calls.writes:
            await self._call("put_writes", args)

    async def get_tuple(self) -> None:
        if self.use_async:
            await self.saver.aget_tuple(self.calls.thread)
        else:
            self.saver.get_tuple(self.calls.thread)

    async def list(self) -> None:
        if self.use_async:
            found = [t async for t in self.saver.alist(self.calls.thread, limit=LIST_LIMIT)]
        else:
            found = list(self.saver.list(self.calls.thread, limit=LIST_LIMIT))
        if len(found) != LIST_LIMIT:
            raise RuntimeError(f"list returned {len(found)} checkpoints, not {LIST_LIMIT}")

    async def drop(self) -> None:
        if self.saver is not None:
            await self.backend.drop(self.saver.db.name)


@dataclass
class _Stored:
    """The documents our saver stores for the measured turn, as the floors send them."""

    checkpoints: list[dict[str, Any]]  # one per put of the turn
    writes: list[list[dict[str, Any]]]  # per put_writes of the turn
    latest: Any  # `_id` of the thread's latest checkpoint
    thread_checkpoints: list[dict[str, Any]]  # every checkpoint document of the thread


async def _stored_by_ours(server: ServerProcess, calls: _TurnCalls) -> _Stored:
    """Each call of the turn into an empty database of ours, so that what it stored is
    all there is: no knowledge of our document format needed."""
    backend = OURS_SYNC.open(server)
    reader: MongoClient[dict[str, Any]] = MongoClient(server.uri)
    try:

        async def alone(method: str, args: tuple[Any, ...]) -> tuple[list[Any], list[Any]]:
            saver = await backend.saver(_db_name("cpufloor"))
            getattr(saver, method)(*args)
            db = reader[saver.db.name]
            found = (
                list(db[saver.checkpoint_collection.name].find({})),
                list(db[saver.writes_collection.name].find({})),
            )
            await backend.drop(saver.db.name)
            return found

        checkpoints = [(await alone("put", args))[0][0] for args in calls.puts]
        writes = [(await alone("put_writes", args))[1] for args in calls.writes]
        saver = await backend.saver(_db_name("cpufloor"))
        for method, args in [*calls.prefix, *[("put", a) for a in calls.puts]]:
            getattr(saver, method)(*args)
        thread = list(reader[saver.db.name][saver.checkpoint_collection.name].find({}))
        await backend.drop(saver.db.name)
    finally:
        reader.close()
        await backend.close()
    return _Stored(checkpoints, writes, checkpoints[-1]["_id"], thread)


FLOOR_COMMANDS = {
    "put": "replace_one (upsert) of the stored document",
    "put_writes": "update_one (upsert, $setOnInsert) per write; bulk_write of them for several",
    "get_tuple": "find of the latest checkpoint document by _id",
    "list": f"find of the thread's checkpoint documents, newest {LIST_LIMIT} by _id",
}


def _upsert(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An insert-if-absent of a write document, as a saver sends it: filter and update."""
    return {"_id": doc["_id"]}, {"$setOnInsert": {k: v for k, v in doc.items() if k != "_id"}}


class _FloorCaller(_Caller):
    """The driver alone: the same documents, prebuilt, one command per saver call."""

    def __init__(self, server: ServerProcess, stored: _Stored, use_async: bool) -> None:
        self.use_async = use_async
        self.stored = stored
        self.db_name = _db_name("cpufloor")
        self.client: Any = AsyncMongoClient(server.uri) if use_async else MongoClient(server.uri)
        self.checkpoints: Any = self.client[self.db_name]["checkpoints"]
        self.writes: Any = self.client[self.db_name]["checkpoint_writes"]

    async def _await(self, value: Any) -> Any:
        return await value if self.use_async else value

    async def prepare(self, calls: _TurnCalls) -> None:
        await super().prepare(calls)
        await self._await(self.checkpoints.insert_many(self.stored.thread_checkpoints))

    async def put(self) -> None:
        for doc in self.stored.checkpoints:
            await self._await(self.checkpoints.replace_one({"_id": doc["_id"]}, doc, upsert=True))

    async def put_writes(self) -> None:
        for docs in self.stored.writes:
            if len(docs) == 1:
                query, update = _upsert(docs[0])
                await self._await(self.writes.update_one(query, update, upsert=True))
            else:
                requests = [UpdateOne(*_upsert(d), upsert=True) for d in docs]
                await self._await(self.writes.bulk_write(requests, ordered=False))

    async def _read(self, query: dict[str, Any], **options: Any) -> list[Any]:
        cursor = self.checkpoints.find(query, **options)
        if self.use_async:
            return [doc async for doc in cursor]
        return list(cursor)

    async def get_tuple(self) -> None:
        await self._read({"_id": self.stored.latest})

    async def list(self) -> None:
        await self._read({}, sort=[("_id", -1)], limit=LIST_LIMIT)

    async def close(self) -> None:
        await self._await(self.client.drop_database(self.db_name))
        await self._await(self.client.close())


class _SerializerCaller(_Caller):
    """The serializer alone, on the values the saver calls serialize or read back."""

    def __init__(self, serde: Any) -> None:
        self.serde = serde

    async def prepare(self, calls: _TurnCalls) -> None:
        await super().prepare(calls)
        latest = calls.puts[-1]
        self.latest = (self.serde.dumps_typed(latest[1]), self.serde.dumps_typed(latest[2]))
        recent = [args for method, args in calls.prefix if method == "put"] + calls.puts
        self.recent = [
            (self.serde.dumps_typed(a[1]), self.serde.dumps_typed(a[2]))
            for a in recent[-LIST_LIMIT:]
        ]

    async def put(self) -> None:
        for args in self.calls.puts:
            self.serde.dumps_typed(args[1])
            self.serde.dumps_typed(args[2])

    async def put_writes(self) -> None:
        for args in self.calls.writes:
            for _, value in args[1]:
                self.serde.dumps_typed(value)

    async def get_tuple(self) -> None:
        for typed in self.latest:
            self.serde.loads_typed(typed)

    async def list(self) -> None:
        for checkpoint, metadata in self.recent:
            self.serde.loads_typed(checkpoint)
            self.serde.loads_typed(metadata)


# Calls per sample: the turn's puts and put_writes are timed together and divided.
def _per_call(op: str, calls: _TurnCalls) -> int:
    if op == "put":
        return len(calls.puts)
    if op == "put_writes":
        return len(calls.writes)
    return 1


async def _calls_at(
    server: ServerProcess,
    recording: Recording,
    history: int,
    rounds: int,
) -> dict[str, dict[str, list[float]]]:
    calls = _turn_calls(recording, history)
    backends = {c.key: c.open(server) for c in contenders(networked_only=True)}
    callers: dict[str, _Caller] = {
        "ours_async": _SaverCaller(backends[OURS_ASYNC.key], use_async=True),
        "ours_sync": _SaverCaller(backends[OURS_SYNC.key], use_async=False),
    }
    if OFFICIAL.key in backends:
        callers["official_async"] = _SaverCaller(backends[OFFICIAL.key], use_async=True)
        callers["official_sync"] = _SaverCaller(backends[OFFICIAL.key], use_async=False)
    stored = await _stored_by_ours(server, calls)
    callers["floor_async"] = _FloorCaller(server, stored, use_async=True)
    callers["floor_sync"] = _FloorCaller(server, stored, use_async=False)
    try:
        for caller in callers.values():
            await caller.prepare(calls)
        ours = callers["ours_sync"]
        assert isinstance(ours, _SaverCaller)
        callers["serializer"] = _SerializerCaller(ours.saver.serde)
        await callers["serializer"].prepare(calls)
        keys = list(callers)
        samples: dict[str, dict[str, list[float]]] = {k: {op: [] for op in CALL_OPS} for k in keys}
        for round_ in range(rounds):
            for op in CALL_OPS:
                for key in _rotated(keys, round_):
                    spent = await _cpu_us(getattr(callers[key], op))
                    samples[key][op].append(spent / _per_call(op, calls))
    finally:
        for caller in callers.values():
            if isinstance(caller, _SaverCaller):
                await caller.drop()
            elif isinstance(caller, _FloorCaller):
                await caller.close()
        for backend in backends.values():
            await backend.close()
    return samples


# ----------------------------------------------------------------------------- per turn


class _TurnRunner:
    """One contender and API style: a fresh thread seeded with `history` turns, then
    one timed turn, then the thread is deleted."""

    THREAD = "cpu-turn"

    def __init__(self, saver: BaseCheckpointSaver[Any], use_async: bool) -> None:
        self.saver = saver
        self.use_async = use_async
        self.graph = chat_graph(delta=False).compile(checkpointer=saver)
        self.seed: tuple[Checkpoint, CheckpointMetadata] | None = None
        self.config = thread_config(self.THREAD)

    def set_seed(self, checkpoint: Checkpoint, metadata: CheckpointMetadata) -> None:
        self.seed = (checkpoint, metadata)

    async def _seed(self) -> None:
        assert self.seed is not None
        checkpoint, metadata = self.seed
        config: RunnableConfig = {"configurable": {"thread_id": self.THREAD, "checkpoint_ns": ""}}
        versions = dict(checkpoint["channel_versions"])  # every channel: a whole state
        if self.use_async:
            await self.saver.aput(config, checkpoint, metadata, versions)
        else:
            self.saver.put(config, checkpoint, metadata, versions)

    async def _delete(self) -> None:
        if self.use_async:
            await self.saver.adelete_thread(self.THREAD)
        else:
            self.saver.delete_thread(self.THREAD)

    async def turn(self, history: int) -> float:
        await self._seed()
        value = human_input(history)

        async def run() -> Any:
            if self.use_async:
                return await self.graph.ainvoke(value, self.config)
            return self.graph.invoke(value, self.config)

        result: list[Any] = []

        async def timed() -> None:
            result.append(await run())

        spent = await _cpu_us(timed)
        await self._delete()
        got = len(result[0]["messages"])
        if got != 2 * (history + 1):
            raise RuntimeError(f"a turn after {history} turns ended with {got} messages")
        return spent


def _memory_seed(history: int) -> tuple[Checkpoint, CheckpointMetadata]:
    """InMemorySaver's own checkpoint after `history` turns (its versions are strings,
    so the recording's integer versions cannot seed it)."""
    saver = InMemorySaver()
    graph = chat_graph(delta=False).compile(checkpointer=saver)
    config = thread_config("seed")
    for turn in range(history):
        graph.invoke(human_input(turn), config)
    found = saver.get_tuple(config)
    assert found is not None
    return found.checkpoint, found.metadata


def _recorded_seed(recording: Recording, history: int) -> tuple[Checkpoint, CheckpointMetadata]:
    for method, args in reversed(recording.calls[: recording.ends[history]]):
        if method == "put":
            return args[1], args[2]
    raise ValueError(f"the recording has no checkpoint after {history} turns")


async def _turns_at(
    server: ServerProcess, recording: Recording, history: int, rounds: int
) -> dict[str, list[float]]:
    backends = {c.key: c.open(server) for c in contenders(networked_only=True)}
    dbs: list[tuple[Backend, str]] = []

    async def saver(key: str) -> Any:
        dbs.append((backends[key], _db_name("cpu")))
        return await backends[key].saver(dbs[-1][1])

    runners: dict[str, _TurnRunner] = {
        "ours_async": _TurnRunner(await saver(OURS_ASYNC.key), True),
        "ours_sync": _TurnRunner(await saver(OURS_SYNC.key), False),
        "memory_async": _TurnRunner(InMemorySaver(), True),
        "memory_sync": _TurnRunner(InMemorySaver(), False),
    }
    if OFFICIAL.key in backends:
        official = await saver(OFFICIAL.key)
        runners["official_async"] = _TurnRunner(official, True)
        runners["official_sync"] = _TurnRunner(official, False)
    recorded = _recorded_seed(recording, history)
    memory = _memory_seed(history)
    for key, runner in runners.items():
        runner.set_seed(*(memory if key.startswith("memory") else recorded))
    keys = [row.key for row in TURN_ROWS if row.key in runners]
    samples: dict[str, list[float]] = {k: [] for k in keys}
    try:
        for round_ in range(rounds):
            for key in _rotated(keys, round_):
                samples[key].append(await runners[key].turn(history))
    finally:
        for backend, db in dbs:
            await backend.drop(db)
        for backend in backends.values():
            await backend.close()
    return samples


# ----------------------------------------------------------------------------- entry


async def client_cpu(
    server: ServerProcess, settings: Settings, checks: list[str], log: Log
) -> ClientCpu:
    server.delay = 0.0
    found = {c.key for c in contenders(networked_only=True)}
    call_rows = [r for r in CALL_ROWS if not r.key.startswith("official") or OFFICIAL.key in found]
    turn_rows = [r for r in TURN_ROWS if not r.key.startswith("official") or OFFICIAL.key in found]
    result = ClientCpu(
        settings.cpu_histories,
        settings.cpu_call_rounds,
        settings.cpu_turn_rounds,
        call_rows,
        turn_rows,
        floor_commands=dict(FLOOR_COMMANDS),
    )
    recording = _record(False, max(settings.cpu_histories) + 1)
    gc.collect()
    gc.freeze()
    try:
        steps: list[tuple[str, Callable[..., Awaitable[Any]], int, dict[int, Any]]] = [
            ("per call", _calls_at, settings.cpu_call_rounds, result.calls),
            ("per turn", _turns_at, settings.cpu_turn_rounds, result.turns),
        ]
        for history in settings.cpu_histories:
            for what, measure, rounds, into in steps:
                started = time.perf_counter()
                try:
                    into[history] = await measure(server, recording, history, rounds)
                except RuntimeError as exc:
                    checks.append(f"client CPU {what}, {history} turns: {exc}")
                log(f"  cpu: {what}, {history} turns ({time.perf_counter() - started:.1f} s)")
    finally:
        gc.unfreeze()
    return result
