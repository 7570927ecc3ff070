"""Where a chat turn's client CPU goes: `python -m benchmarks.turn_profile`.

Not part of `python -m benchmarks` (profiling slows what it measures). For each saver
and way of running (as in the `cpu` measurement), fresh threads are seeded with a
checkpoint holding `--history` turns of chat (unprofiled), then one turn runs on each
under `cProfile`: the benchmark's thread while the turn runs, and every thread started
meanwhile (LangGraph runs sync savers' calls, and the official saver its `a*` calls,
in worker threads), PyMongo's monitor threads aside. Each run gets an event loop of its
own, so the worker threads of one run end with it.

Each function's own time is charged to a kind by its file: our saver, the official
saver, PyMongo, BSON, the serializer, asyncio, thread hand-off, socket system calls,
LangGraph. Functions of no kind (builtins such as `dict.get`, langchain-core, pydantic,
the rest of the standard library) are charged to their callers, in proportion to the
time each caller spent in them, so a message model dumped by the serializer counts
as the serializer and one built by the graph as LangGraph. Calls that wait (epoll,
`recv`, lock and queue waits, `sleep`) are left out: they take time, not CPU.

cProfile's wall-clock timer adds a fixed cost per call, so Python-heavy kinds look
heavier than they are; the shares compare kinds, the unprofiled `cpu` measurement of
`python -m benchmarks` gives the real totals.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import resource
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig

from benchmarks.contenders import (
    MEMORY,
    OFFICIAL,
    OFFICIAL_SKIP_REASON,
    OURS_ASYNC,
    OURS_SYNC,
    Contender,
)
from benchmarks.cpu import _memory_seed
from benchmarks.graphs import chat_graph, human_input, thread_config
from benchmarks.scenarios import _db_name, _record
from benchmarks.server import ServerProcess

# (kind, fragments of a file path or builtin's name), tried in order.
KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("our saver", ("langgraph/checkpoint/mongo/",)),
    ("official saver", ("langgraph/checkpoint/mongodb/",)),
    ("serializer", ("langgraph/checkpoint/serde/", "ormsgpack")),
    ("BSON", ("/bson/", "bson.", "pymongo._cmessage")),
    ("PyMongo", ("/pymongo/",)),
    ("asyncio", ("/asyncio/", "/selectors.py")),
    ("thread hand-off", ("/concurrent/futures/", "/threading.py", "/queue.py")),
    ("LangGraph", ("/langgraph/",)),
)
ORDER = [kind for kind, _ in KINDS] + ["other"]
# Builtins that wait, or whose wall time is mostly the kernel's: left out of the shares
# (system time is measured apart). A send wakes the server up, and on a busy machine
# the sender is often descheduled inside it, so its wall time says little.
WAITS = (
    "'poll' of 'select.epoll'",
    "of '_socket.socket' objects",
    "_thread.start_new_thread",
    "'acquire' of '_thread.lock'",
    "'acquire' of '_thread.RLock'",
    "'get' of '_queue.SimpleQueue'",
    "time.sleep",
    "select.select",
    "select.poll",
)

Func = tuple[str, int, str]


def _own_kind(func: Func) -> str | None:
    filename, _, name = func
    where = name if filename == "~" else filename.replace("\\", "/")
    for kind, fragments in KINDS:
        if any(fragment in where for fragment in fragments):
            return kind
    return None


def kinds(stats: dict[Func, Any]) -> Counter[str]:
    """Seconds of own time per kind; kindless functions charge their callers."""
    shares: dict[Func, dict[str, float]] = {}

    def share(func: Func, depth: int) -> dict[str, float]:
        if func in shares:
            return shares[func]
        own = _own_kind(func)
        if own is not None:
            result = {own: 1.0}
        else:
            callers = stats[func][4] if func in stats else {}
            total = sum(entry[2] for entry in callers.values())
            if depth > 30 or not total:
                result = {"other": 1.0}
            else:
                result = {}
                shares[func] = {"other": 1.0}  # a cycle back here counts as other
                for caller, entry in callers.items():
                    for kind, part in share(caller, depth + 1).items():
                        result[kind] = result.get(kind, 0.0) + part * entry[2] / total
        shares[func] = result
        return result

    seconds: Counter[str] = Counter()
    for func, (_, _, own_time, _, _) in stats.items():
        if any(wait in func[2] for wait in WAITS):
            continue
        for kind, part in share(func, 0).items():
            seconds[kind] += own_time * part
    return seconds


class _Profiles:
    """cProfile in the benchmark's thread (on while a turn runs) and in every thread
    started while this is installed (on from its start), PyMongo's monitors aside."""

    def __init__(self) -> None:
        self.main = cProfile.Profile()
        self.workers: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def _start_thread(self, *_: Any) -> None:
        if threading.current_thread().name.startswith("pymongo"):
            sys.setprofile(None)
            return
        profile = cProfile.Profile()
        with self._lock:
            self.workers.append(profile)
        profile.enable()

    @contextmanager
    def installed(self) -> Iterator[None]:
        threading.setprofile(self._start_thread)
        try:
            yield
        finally:
            threading.setprofile(None)

    def stats(self) -> dict[Func, Any]:
        combined = pstats.Stats(self.main)
        for profile in self.workers:
            profile.create_stats()
            if profile.stats:
                combined.add(profile)
        return combined.stats  # type: ignore[attr-defined,no-any-return]


@dataclass
class Cost:
    """Process CPU per turn, unprofiled (ms): user and system (kernel) time."""

    user: float
    system: float


async def _turns(
    server: ServerProcess,
    contender: Contender,
    use_async: bool,
    history: int,
    turns: int,
    profiles: _Profiles | None,
) -> Cost:
    """Seed `turns` threads, then run one turn on each (profiled if `profiles`)."""
    backend = contender.open(server)
    db = _db_name("prof")
    saver = await backend.saver(db)
    if contender.networked:
        recording = _record(False, history)
        seed = next(args[1:3] for method, args in reversed(recording.calls) if method == "put")
    else:
        seed = _memory_seed(history)
    graph = chat_graph(delta=False).compile(checkpointer=saver)
    threads = [f"profile-{i}" for i in range(turns)]
    for thread in threads:
        config: RunnableConfig = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        versions = dict(seed[0]["channel_versions"])
        if contender is OURS_ASYNC:
            await saver.aput(config, *seed, versions)
        else:
            saver.put(config, *seed, versions)
    user = system = 0.0
    for thread in threads:
        before = resource.getrusage(resource.RUSAGE_SELF)
        if profiles is not None:
            profiles.main.enable()
        if use_async:
            await graph.ainvoke(human_input(history), thread_config(thread))
        else:
            graph.invoke(human_input(history), thread_config(thread))
        if profiles is not None:
            profiles.main.disable()
        after = resource.getrusage(resource.RUSAGE_SELF)
        user += after.ru_utime - before.ru_utime
        system += after.ru_stime - before.ru_stime
    await backend.drop(db)
    await backend.close()
    return Cost(user * 1000 / turns, system * 1000 / turns)


def table(history: int, runs: list[tuple[str, Counter[str], Cost]]) -> str:
    """One Markdown table: a column per saver and way of running, a row per kind.

    A kind's milliseconds are its share of the profiled time applied to the unprofiled
    user CPU of the same turns; the kernel row is their system CPU."""
    lines = [
        f"| ms per turn, {history} turns of history | " + " | ".join(r[0] for r in runs) + " |",
        "|:---|" + "---:|" * len(runs),
    ]
    for kind in ORDER:
        cells = []
        for _, seconds, cost in runs:
            share = seconds.get(kind, 0.0) / (sum(seconds.values()) or 1.0)
            cells.append(f"{share * cost.user:.2f} ({share:.0%})")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines.append(
        "| kernel (system calls: sockets, thread wake-ups) | "
        + " | ".join(f"{cost.system:.2f}" for _, _, cost in runs)
        + " |"
    )
    lines.append(
        "| **total** | " + " | ".join(f"**{c.user + c.system:.2f}**" for _, _, c in runs) + " |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.turn_profile",
        description="Profile chat turns of our savers (and others) by kind of code.",
    )
    parser.add_argument("--history", type=int, default=5, help="turns before the profiled one")
    parser.add_argument("--turns", type=int, default=200, help="turns per saver and pass")
    parser.add_argument(
        "--contrast",
        action="store_true",
        help="also profile the official saver and InMemorySaver",
    )
    args = parser.parse_args(argv)
    runs: list[tuple[str, Contender, bool]] = [
        ("ours async, ainvoke", OURS_ASYNC, True),
        ("ours sync, invoke", OURS_SYNC, False),
    ]
    if args.contrast:
        if OFFICIAL_SKIP_REASON is None:
            runs += [("official, ainvoke", OFFICIAL, True), ("official, invoke", OFFICIAL, False)]
        runs += [("InMemorySaver, ainvoke", MEMORY, True), ("InMemorySaver, invoke", MEMORY, False)]
    measured: list[tuple[str, Counter[str], Cost]] = []
    with ServerProcess() as server:
        for label, contender, use_async in runs:
            cost = asyncio.run(_turns(server, contender, use_async, args.history, args.turns, None))
            profiles = _Profiles()
            with profiles.installed():
                asyncio.run(
                    _turns(server, contender, use_async, args.history, args.turns, profiles)
                )
            measured.append((label, kinds(profiles.stats()), cost))
            print(f"{label}: done", file=sys.stderr, flush=True)
    print(table(args.history, measured))


if __name__ == "__main__":
    main()
