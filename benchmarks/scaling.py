"""How reads grow with the data: `python -m benchmarks --only scaling [--sizes 1000,10000]`.

Against `MONGODB_URI` (any server: Atlas, a local mongod, SecantusDB, FerretDB), or the
wire server when it is unset (mongomock copies a collection per aggregation: keep the
sizes small there). Both savers, sync (`MongoDBSaver` and the official one), each on
databases of its own, in two layouts:

- `threads`: threads of 20 checkpoints with 2 pending writes each (N / 20 threads);
- `long`: one thread of N checkpoints, 2 pending writes each.

Each saver writes one thread of 20 checkpoints itself (its real `put`/`put_writes`); the
rest is cloned from those documents (thread ids and checkpoint ids replaced, everything
else as the saver wrote it) with `insert_many`, growing the same databases from one size
to the next. At each size, per operation: the median and p95 ms of `rounds` calls (after
one warm-up call; fewer when a call takes seconds: at least 3, or `time_cap` seconds),
the commands one call sends (a PyMongo command listener: what the server receives,
`getMore` included), and, where the server explains them, what served each read command
(`index`: every stage an index scan, including a `$lookup` the explain reports;
`scan`: a collection scan somewhere, with the documents examined; `?` where the explain
says nothing of a stage, as SecantusDB's says nothing of `$lookup`).

The operations: `get_tuple` of the thread's latest checkpoint and of one by id (the middle
one), `list` of the thread with `limit=10`, `list(None, filter={"source": "loop"},
limit=10)`, `list_threads(limit=20)` (ours only; the official saver has none), and `put`
then `put_writes` (2 writes) of a new thread's first checkpoint.
"""

from __future__ import annotations

import copy
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from pymongo import MongoClient, monitoring

from benchmarks.contenders import OFFICIAL_SKIP_REASON, OFFICIAL_VERSION, OfficialSaver
from benchmarks.report import Table
from langgraph.checkpoint.mongo import MongoDBSaver

Log = Callable[[str], None]

LAYOUTS = ("threads", "long")
THREAD_LENGTH = 20  # checkpoints per thread of the `threads` layout, and per template
WRITES = 2  # pending writes per checkpoint
SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (100, 300)
BATCH = 2_000  # checkpoints per insert_many
# `list(None, filter)` again, ours, with the index docs/operations.md advises for a
# metadata key a deployment filters on.
INDEXED = 'the same list(None, filter), "metadata.source" indexed'
METADATA_INDEX = [
    ("metadata.source", 1),
    ("_id.checkpoint_id", -1),
    ("thread_id", 1),
    ("_id.checkpoint_ns", 1),
]
OPERATIONS = (
    "get_tuple latest",
    "get_tuple by id",
    "list(thread, limit=10)",
    'list(None, {"source": "loop"}, limit=10)',
    "list_threads(limit=20)",
    "put + put_writes",
    INDEXED,
)
_READ_COMMANDS = {"aggregate", "find"}


class _Commands(monitoring.CommandListener):
    """The commands a client sends (their names and, for reads, their documents)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any], str]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.command_name not in {"endSessions", "hello", "isMaster", "ismaster"}:
            self.sent.append((event.command_name, dict(event.command), event.database_name))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@dataclass
class Figure:
    median_ms: float
    p95_ms: float
    calls: int
    commands: int
    plan: str


@dataclass
class Scaling:
    server: str
    sizes: tuple[int, ...]
    rounds: int
    load_seconds: dict[str, float] = field(default_factory=dict)  # "layout saver size"
    # (layout, operation, saver) -> size -> Figure
    figures: dict[tuple[str, str, str], dict[int, Figure]] = field(default_factory=dict)


# Loading: documents a saver wrote, cloned.


def _ids(count: int) -> list[str]:
    """`count` new checkpoint ids, increasing, of LangGraph's kind (uuid6)."""
    return sorted(str(uuid6(clock_seq=i)) for i in range(count))


def _replace(value: Any, names: dict[str, str]) -> Any:
    """`value` with every string in `names` (a thread id, a checkpoint id) replaced,
    in dict values and lists; bytes (serialized values) as they are."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {key: _replace(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace(item, names) for item in value]
    return value


@dataclass
class _Seeded:
    """What one saver wrote itself, to clone: its thread, checkpoint ids and documents."""

    thread_id: str
    checkpoint_ids: list[str]
    docs: dict[str, list[dict[str, Any]]]  # collection name -> documents


def _seed(saver: Any, thread_id: str) -> list[str]:
    """A thread of `THREAD_LENGTH` checkpoints with `WRITES` pending writes each, written
    by `saver` as LangGraph would (the first from the input, then the loop)."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    ids = []
    for step in range(THREAD_LENGTH):
        checkpoint = create_checkpoint(checkpoint, None, step)
        checkpoint["channel_values"] = {"messages": [f"message {step}"] * 4, "step": step}
        checkpoint["channel_versions"] = {"messages": step + 1, "step": step + 1}
        source = "input" if step == 0 else "loop"
        metadata = {"source": source, "step": step - 1, "parents": {}}
        config = saver.put(config, checkpoint, metadata, {"messages": step + 1, "step": step + 1})
        writes = [("messages", f"pending {step}"), ("step", step + 1)][:WRITES]
        saver.put_writes(config, writes, f"task-{step}")
        ids.append(config["configurable"]["checkpoint_id"])
    return ids


def _thread_documents(db: Any, names: Sequence[str], thread_id: str) -> dict[str, list[Any]]:
    return {name: list(db[name].find({"thread_id": thread_id})) for name in names}


def _without_ids(docs: list[dict[str, Any]], names: dict[str, str]) -> Iterator[dict[str, Any]]:
    """Clones of `docs` under new names; the official saver's documents get new
    ObjectIds (their `_id` is one)."""
    for doc in docs:
        clone = _replace(copy.copy(doc), names)
        if not isinstance(clone["_id"], dict):
            del clone["_id"]
        yield clone


def _grow(db: Any, seeded: _Seeded, layout: str, have: int, want: int) -> None:
    """Add clones of the seeded thread until the databases hold `want` checkpoints."""
    per_clone = THREAD_LENGTH
    clones = (want - have) // per_clone
    first = have // per_clone
    batch: dict[str, list[dict[str, Any]]] = {name: [] for name in seeded.docs}

    def flush() -> None:
        for name, docs in batch.items():
            if docs:
                db[name].insert_many(docs, ordered=False)
            docs.clear()

    fresh = _ids(clones * per_clone) if layout == "long" else []
    for n in range(clones):
        names: dict[str, str]
        if layout == "threads":
            names = {seeded.thread_id: f"{seeded.thread_id}-{first + n}"}
        else:  # the same thread, newer checkpoints
            new = fresh[n * per_clone : (n + 1) * per_clone]
            names = dict(zip(seeded.checkpoint_ids, new, strict=True))
        for name, docs in seeded.docs.items():
            batch[name].extend(_without_ids(docs, names))
        if len(batch[next(iter(batch))]) >= BATCH:
            flush()
    flush()


# Measuring.


def _plan(client: MongoClient[Any], sent: Sequence[tuple[str, dict[str, Any], str]]) -> str:
    """What served the read commands of one call, as their explains say (see the module
    docstring); `-` where the server explains nothing."""
    verdicts = []
    for name, command, db_name in sent:
        if name not in _READ_COMMANDS:
            continue
        body = {k: v for k, v in command.items() if not k.startswith("$") and k != "lsid"}
        for generic in ("readConcern", "writeConcern", "txnNumber"):
            body.pop(generic, None)
        try:
            explained = client[db_name].command({"explain": body, "verbosity": "executionStats"})
        except Exception:
            return "-"
        verdicts.append(_verdict(explained, "pipeline" in body and _has_lookup(body)))
    runs: list[list[Any]] = []  # equal verdicts in a row, counted: "index x10"
    for verdict in verdicts:
        if runs and runs[-1][0] == verdict:
            runs[-1][1] += 1
        else:
            runs.append([verdict, 1])
    return " + ".join(v if n == 1 else f"{v} x{n}" for v, n in runs) if runs else "-"


def _has_lookup(body: dict[str, Any]) -> bool:
    return any("$lookup" in stage for stage in body.get("pipeline", []))


def _verdict(explained: Any, joins: bool) -> str:
    stages: set[str] = set()
    lookup_scans = 0
    lookup_indexes: set[str] = set()
    strategies: list[str] = []
    examined = 0

    def walk(node: Any) -> None:
        nonlocal lookup_scans, examined
        if isinstance(node, list):
            for item in node:
                walk(item)
            return
        if not isinstance(node, dict):
            return
        stage = node.get("stage")
        if isinstance(stage, str):
            stages.add(stage)
            if stage == "EQ_LOOKUP":
                strategies.append(str(node.get("strategy")))
        if "$lookup" in node and isinstance(node.get("collectionScans"), int):
            lookup_scans += node["collectionScans"]
            lookup_indexes.update(map(str, node.get("indexesUsed", [])))
        if isinstance(node.get("totalDocsExamined"), int):
            examined = max(examined, node["totalDocsExamined"])
        for item in node.values():
            walk(item)

    walk(explained)
    scans = (
        "COLLSCAN" in stages
        or lookup_scans > 0
        or any(s in {"NestedLoopJoin", "HashJoin"} for s in strategies)
    )
    lookup_known = bool(strategies) or lookup_scans > 0 or bool(lookup_indexes)
    verdict = f"scan ({examined} docs)" if scans else "index"
    if joins and not lookup_known and not scans:
        verdict += ", $lookup ?"
    return verdict


def _timed(call: Callable[[], Any], rounds: int, time_cap: float) -> list[float]:
    call()  # warm-up
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < rounds and (len(times) < 3 or time.perf_counter() - started < time_cap):
        begin = time.perf_counter()
        call()
        times.append((time.perf_counter() - begin) * 1000)
    return times


def _p95(times: list[float]) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


class _Contender:
    def __init__(self, key: str, client: MongoClient[Any], db_name: str) -> None:
        self.key = key
        self.client = client
        self.db_name = db_name
        client.drop_database(db_name)
        self.saver: Any = (
            MongoDBSaver(client, db_name)
            if key == "ours"
            else OfficialSaver(client, db_name=db_name)
        )
        if key == "ours":
            self.saver.setup()
        self.collections = (
            ("checkpoints", "checkpoint_writes")
            if key == "ours"
            else (self.saver.checkpoint_collection.name, self.saver.writes_collection.name)
        )
        self.puts = 0

    def operations(self, seeded: _Seeded) -> dict[str, Callable[[], Any] | None]:
        saver = self.saver
        thread = {"configurable": {"thread_id": seeded.thread_id, "checkpoint_ns": ""}}
        middle = seeded.checkpoint_ids[len(seeded.checkpoint_ids) // 2]
        by_id = {"configurable": {**thread["configurable"], "checkpoint_id": middle}}

        def put_and_writes() -> None:
            self.puts += 1
            config = {"configurable": {"thread_id": f"put-{self.puts}", "checkpoint_ns": ""}}
            checkpoint = create_checkpoint(empty_checkpoint(), None, 1)
            checkpoint["channel_values"] = {"messages": ["hi"] * 4}
            checkpoint["channel_versions"] = {"messages": 1}
            metadata = {"source": "loop", "step": 1, "parents": {}}
            stored = saver.put(config, checkpoint, metadata, {"messages": 1})
            saver.put_writes(stored, [("messages", "a"), ("step", 2)], "task")

        return {
            "get_tuple latest": lambda: saver.get_tuple(thread),
            "get_tuple by id": lambda: saver.get_tuple(by_id),
            "list(thread, limit=10)": lambda: list(saver.list(thread, limit=10)),
            'list(None, {"source": "loop"}, limit=10)': lambda: list(
                saver.list(None, filter={"source": "loop"}, limit=10)
            ),
            "list_threads(limit=20)": (
                (lambda: list(saver.list_threads(limit=20)))
                if hasattr(saver, "list_threads")
                else None
            ),
            "put + put_writes": put_and_writes,
            INDEXED: (
                (lambda: list(saver.list(None, filter={"source": "loop"}, limit=10)))
                if self.key == "ours"
                else None
            ),
        }


def _server_name(client: MongoClient[Any]) -> str:
    build = client.admin.command("buildInfo")
    if "secantusVersion" in build:
        return f"SecantusDB {build['secantusVersion']} (MongoDB {build['version']})"
    if "ferretdb" in build:
        return f"FerretDB {build['ferretdb'].get('version', '')}"
    return f"MongoDB {build.get('version', '?')}"


def scaling(
    uri: str,
    sizes: Sequence[int],
    log: Log,
    *,
    rounds: int = 15,
    time_cap: float = 20.0,
    layouts: Sequence[str] = LAYOUTS,
    server: str | None = None,
) -> Scaling:
    """Measure on `uri` (`server`: how the tables name it; by default from `buildInfo`)."""
    listener = _Commands()
    client: MongoClient[Any] = MongoClient(uri, event_listeners=[listener])
    try:
        result = Scaling(server or _server_name(client), tuple(sizes), rounds)
        keys = ["ours"] + (["official"] if OFFICIAL_SKIP_REASON is None else [])
        for layout in layouts:
            for key in keys:
                contender = _Contender(key, client, f"bench_scaling_{key}_{layout}")
                db = client[contender.db_name]
                thread = f"{layout}-thread"
                ids = _seed(contender.saver, thread)
                seeded = _Seeded(thread, ids, _thread_documents(db, contender.collections, thread))
                operations = contender.operations(seeded)
                have = THREAD_LENGTH
                for size in sizes:
                    started = time.perf_counter()
                    _grow(db, seeded, layout, have, size)
                    have = max(have, size)
                    loaded = time.perf_counter() - started
                    result.load_seconds[f"{layout} {key} {size}"] = loaded
                    log(f"  {layout}, {key}: {size} checkpoints loaded in {loaded:.1f} s")
                    for operation in OPERATIONS:
                        call = operations.get(operation)
                        if call is None:
                            continue
                        if operation == INDEXED:
                            db["checkpoints"].create_index(METADATA_INDEX, name="source")
                        times = _timed(call, rounds, time_cap)
                        listener.sent.clear()
                        call()
                        sent = list(listener.sent)
                        plan = _plan(client, sent) if operation != "put + put_writes" else "-"
                        figure = Figure(
                            statistics.median(times), _p95(times), len(times), len(sent), plan
                        )
                        result.figures.setdefault((layout, operation, key), {})[size] = figure
                        if operation == INDEXED:
                            db["checkpoints"].drop_index("source")
                        log(
                            f"    {operation:42s} {figure.median_ms:9.1f} ms (p95 "
                            f"{figure.p95_ms:.1f}), {figure.commands} commands, {plan}"
                        )
                client.drop_database(contender.db_name)
        return result
    finally:
        client.close()


def _size(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def tables(result: Scaling) -> list[Table]:
    """One table per layout: per operation and saver, median (p95) ms at each size, the
    growth from the smallest size to the largest, commands per call and the plan at the
    largest size."""
    found = []
    labels = {"ours": "ours (MongoDBSaver)", "official": f"official {OFFICIAL_VERSION}"}
    sizes = result.sizes
    for layout in LAYOUTS:
        rows = []
        for operation in OPERATIONS:
            for key in ("ours", "official"):
                figures = result.figures.get((layout, operation, key))
                if not figures:
                    continue
                cells = [operation, labels[key]]
                for size in sizes:
                    f = figures.get(size)
                    cells.append(f"{f.median_ms:.1f} ({f.p95_ms:.1f})" if f else "-")
                first, last = figures.get(sizes[0]), figures.get(sizes[-1])
                growth = f"{last.median_ms / first.median_ms:.1f}x" if first and last else "-"
                cells += [growth, str(last.commands) if last else "-", last.plan if last else "-"]
                rows.append(cells)
        if not rows:
            continue
        what = (
            f"threads of {THREAD_LENGTH} checkpoints" if layout == "threads" else "one long thread"
        )
        headers = ["operation", "saver"]
        headers += [f"{_size(size)} ms (p95)" for size in sizes]
        headers += [f"{_size(sizes[0])}->{_size(sizes[-1])}", "commands", "plan"]
        found.append(
            Table(
                f"Scaling on {result.server}: {what}, {WRITES} pending writes each",
                headers,
                rows,
                [
                    f"median (p95) of up to {result.rounds} calls per cell; commands and plan "
                    f"at {_size(sizes[-1])} checkpoints (plan: what the server's explain says "
                    "served each read command)"
                ],
            )
        )
    return found


def default_uri() -> str | None:
    return os.environ.get("MONGODB_URI") or None
