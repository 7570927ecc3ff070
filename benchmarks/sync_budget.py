"""What ours sync may spend per call and still meet issue 14's target (0.95 times the
official saver's turn):
`python -m benchmarks.sync_budget [--history 5] [--rounds 300]`.

Not part of `python -m benchmarks`. Two measurements on the recorded chat:

* **in a turn**: sync `invoke` turns of ours, the official saver and `InMemorySaver`,
  in an order that rotates per round (as in the `cpu` measurement), with the thread CPU
  spent inside each saver method added up per turn (LangGraph runs a sync saver's calls
  in worker threads; `time.thread_time` counts the calling thread only);
* **without I/O**: the measured turn's `put`s and `put_writes` on each saver whose
  collections do nothing (our Python and the serializer, or the official saver's), best
  of 7 runs of 1,000.

From them, two numbers that decide the sync target:

* the **exchange rate**: how many µs a µs of Python without I/O costs inside a turn,
  taken from `put`, where both savers send one `update_one` upsert of a similar document:
  (ours - official in a turn) ÷ (ours - official without I/O);
* the **budget**: how many µs without I/O ours' three `put`s and two `put_writes` may cost
  beyond the official saver's for the turn to cost at most 0.95 times the official's, given what
  ours saves elsewhere in the turn (`get_tuple` reads in one round trip instead of two).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import statistics
import time
import timeit
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from benchmarks.contenders import OFFICIAL, OFFICIAL_SKIP_REASON, OURS_SYNC
from benchmarks.cpu import (
    _memory_seed,
    _recorded_seed,
    _rotated,
    _turn_calls,
    _TurnRunner,
    ratio_interval,
)
from benchmarks.report import TIMES
from benchmarks.scenarios import _db_name, _record
from benchmarks.server import ServerProcess
from langgraph.checkpoint.mongo import MongoDBSaver

METHODS = ("get_tuple", "put", "put_writes")
TARGET = 0.95
# Below this difference in `put` without I/O (µs) the exchange rate is not measurable.
MIN_EXCESS = 5.0


class _MethodClock:
    """Thread CPU inside a saver's methods, per method, while `on`."""

    def __init__(self, saver: Any) -> None:
        self.on = False
        self.spent: list[tuple[str, float]] = []  # list.append is atomic across threads
        for name in METHODS:
            self._wrap(saver, name)

    def _wrap(self, saver: Any, name: str) -> None:
        method = getattr(saver, name)

        # `wraps`: LangGraph reads `put_writes`' signature to decide whether to pass
        # `task_path`; a bare wrapper would hide it and change the writes stored.
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.thread_time()
            try:
                return method(*args, **kwargs)
            finally:
                if self.on:
                    self.spent.append((name, (time.thread_time() - started) * 1e6))

        setattr(saver, name, timed)

    @contextmanager
    def counting(self) -> Iterator[None]:
        self.on = True
        try:
            yield
        finally:
            self.on = False

    def take(self) -> dict[str, float]:
        """µs per method since the last `take`, and `<method> calls`: how many."""
        per_method = dict.fromkeys(METHODS, 0.0)
        for name, us in self.spent:
            per_method[name] += us
            per_method[f"{name} calls"] = per_method.get(f"{name} calls", 0) + 1
        self.spent.clear()
        return per_method


async def _turns(history: int, rounds: int, server: ServerProcess) -> dict[str, Any]:
    recording = _record(False, history + 1)
    backends = {"ours": OURS_SYNC.open(server), "official": OFFICIAL.open(server)}
    savers: dict[str, Any] = {k: await b.saver(_db_name("budget")) for k, b in backends.items()}
    clocks = {key: _MethodClock(saver) for key, saver in savers.items()}
    runners = {key: _TurnRunner(saver, False) for key, saver in savers.items()}
    runners["memory"] = _TurnRunner(InMemorySaver(), False)
    for key, runner in runners.items():
        runner.set_seed(
            *(_memory_seed(history) if key == "memory" else _recorded_seed(recording, history))
        )
    turns: dict[str, list[float]] = {key: [] for key in runners}
    methods: dict[str, list[dict[str, float]]] = {key: [] for key in clocks}
    gc.collect()
    gc.freeze()
    try:
        for round_ in range(rounds + 1):
            for key in _rotated(list(runners), round_):
                clock = clocks.get(key)
                spent = await runners[key].turn(history, clock.counting() if clock else None)
                per_method = clock.take() if clock else None
                if round_:  # the first round warms up
                    turns[key].append(spent)
                    if per_method is not None:
                        methods[key].append(per_method)
        no_io = {key: _without_io(savers[key], recording, history) for key in savers}
    finally:
        gc.unfreeze()
        for key, backend in backends.items():
            await backend.drop(savers[key].db.name)
            await backend.close()
    return {"turns": turns, "methods": methods, "no_io": no_io}


class _Nothing:
    """A collection whose every method does nothing."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        return lambda *args, **kwargs: None


def _without_io(saver: Any, recording: Any, history: int) -> dict[str, float]:
    """µs per `put` and per `put_writes` of the measured turn, collections doing nothing
    (the parent-values cache is warm, as in a turn: the calls ran once over the wire)."""
    calls = _turn_calls(recording, history)
    for method, args in calls.prefix:
        getattr(saver, method)(*args)
    for args in calls.puts:
        saver.put(*args)
    nothing = _Nothing()
    if isinstance(saver, MongoDBSaver):  # ours: every command goes through `_collection`
        saver._collection = lambda command: nothing
    else:  # the official saver's `put`/`put_writes` use only these two
        saver.checkpoint_collection = saver.writes_collection = nothing

    def puts() -> None:
        for args in calls.puts:
            saver.put(*args)

    def writes() -> None:
        for args in calls.writes:
            saver.put_writes(*args)

    best = {}
    for name, run, per in (
        ("put", puts, len(calls.puts)),
        ("put_writes", writes, len(calls.writes)),
    ):
        best[name] = min(timeit.repeat(run, number=1000, repeat=7)) / 1000 / per * 1e6
    return best


def report(history: int, measured: dict[str, Any]) -> str:
    turns, methods, no_io = measured["turns"], measured["methods"], measured["no_io"]
    own = {
        k: [t - m for t, m in zip(turns[k], turns["memory"], strict=True)]
        for k in ("ours", "official")
    }
    own_official = statistics.median(own["official"])
    ratio, low, high = ratio_interval(turns["ours"], turns["official"], turns["memory"])
    in_turn = {
        k: {m: statistics.median([r[m] for r in methods[k]]) for m in METHODS} for k in methods
    }
    # Calls per turn, as LangGraph made them (the same for both savers: checked).
    calls = {
        m: round(statistics.median([r.get(f"{m} calls", 0) for r in methods["ours"]]))
        for m in METHODS
    }
    for m in METHODS:
        if (
            round(statistics.median([r.get(f"{m} calls", 0) for r in methods["official"]]))
            != calls[m]
        ):
            raise RuntimeError(f"the savers' turns made different numbers of {m} calls")
    per_call = {k: {m: in_turn[k][m] / calls[m] for m in METHODS} for k in in_turn}
    put_excess = no_io["ours"]["put"] - no_io["official"]["put"]
    rate = (per_call["ours"]["put"] - per_call["official"]["put"]) / put_excess
    allowed_turn = (TARGET - 1) * own_official
    # Outside the saver's methods: each turn minus its methods, paired by round.
    outside = statistics.median(
        [
            (t_ours - sum(r_ours[m] for m in METHODS)) - (t_off - sum(r_off[m] for m in METHODS))
            for t_ours, r_ours, t_off, r_off in zip(
                turns["ours"], methods["ours"], turns["official"], methods["official"], strict=True
            )
        ]
    )
    elsewhere = in_turn["ours"]["get_tuple"] - in_turn["official"]["get_tuple"] + outside
    writes = ("put", "put_writes")
    excess = sum(calls[m] * (no_io["ours"][m] - no_io["official"][m]) for m in writes)
    budget = (allowed_turn - elsewhere) / rate
    lines = [
        f"Sync chat turn, {history} turns of history, {len(turns['ours'])} rounds; "
        f"{calls['put']} `put` and {calls['put_writes']} `put_writes` per turn.",
        "",
        "| µs | get_tuple | put | put_writes | turn's own (turn - InMemorySaver), per turn |",
        "|:---|---:|---:|---:|---:|",
    ]
    for key in ("ours", "official"):
        cells = " | ".join(f"{per_call[key][m]:.0f}" for m in METHODS)
        lines.append(
            f"| {key}, in a turn (per call) | {cells} | {statistics.median(own[key]):.0f} |"
        )
    for key in ("ours", "official"):
        cells = " | ".join(f"{no_io[key][m]:.1f}" for m in writes)
        lines.append(f"| {key}, without I/O (per call) | - | {cells} | - |")
    if put_excess < MIN_EXCESS:
        # At long histories ours' `put` costs less than the official's without I/O (the
        # channel cache skips serializer work): the rate divides noise by a small number.
        lines += [
            "",
            f"- turn ratio (as in `results.md`): {ratio:.3f}{TIMES} ({low:.3f}-{high:.3f})",
            f"- ours' `put` costs {put_excess:+.1f} µs without I/O against the official's: "
            "no exchange rate or budget to take from it",
        ]
        return "\n".join(lines)
    lines += [
        "",
        f"- turn ratio (as in `results.md`): {ratio:.3f}{TIMES} ({low:.3f}-{high:.3f}); "
        f"the target {TARGET}{TIMES} allows {allowed_turn:+.0f} µs against the official "
        "saver's turn",
        f"- exchange rate (from `put`): 1 µs without I/O costs {rate:.2f} µs in a turn",
        f"- ours elsewhere in the turn: {elsewhere:+.0f} µs (`get_tuple` "
        f"{in_turn['ours']['get_tuple'] - in_turn['official']['get_tuple']:+.0f}, outside the "
        f"saver's methods {outside:+.0f})",
        f"- budget: the turn's `put`s and `put_writes` may cost {budget:+.0f} µs without I/O "
        f"beyond the official saver's; ours cost {excess:+.0f} µs beyond it",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.sync_budget",
        description="What ours sync may spend per call for a turn at 0.95 times the official's.",
    )
    parser.add_argument("--history", type=int, default=5, help="turns before the measured one")
    parser.add_argument("--rounds", type=int, default=300, help="turns per saver")
    args = parser.parse_args(argv)
    if OFFICIAL_SKIP_REASON is not None:
        raise SystemExit(f"needs the official saver: {OFFICIAL_SKIP_REASON}")
    with ServerProcess() as server:
        server.delay = 0.0
        measured = asyncio.run(_turns(args.history, args.rounds, server))
    print(report(args.history, measured))


if __name__ == "__main__":
    main()
