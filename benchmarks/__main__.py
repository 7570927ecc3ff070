"""`python -m benchmarks`: run every measurement, print tables, write results.md/.png.

See benchmarks/README.md. Options are for development; the published numbers come
from the bare command.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks import cpu, retention, scaling, scenarios, shapes
from benchmarks.contenders import OFFICIAL_SKIP_REASON, OFFICIAL_VERSION_ERROR
from benchmarks.report import Environment, Results, markdown, plot, tables
from benchmarks.server import ServerProcess

HERE = Path(__file__).resolve().parent
MEASUREMENTS = (
    "round_trips",
    "latency",
    "throughput",
    "storage",
    "compression",
    "cpu",
    "retention",
    "shapes",
)
PACKAGES = (
    "langgraph-checkpoint-mongo",
    "langgraph-checkpoint-mongodb",
    "langgraph",
    "langgraph-checkpoint",
    "langchain-core",
    "pymongo",
    "mongomock",
    "zstandard",
    "matplotlib",
)


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Compare our MongoDB savers with the official one and InMemorySaver.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes, a smoke test of the harness (writes files only with --out)",
    )
    parser.add_argument(
        "--only",
        default=",".join(MEASUREMENTS),
        help=f"comma-separated subset of {','.join(MEASUREMENTS)}",
    )
    parser.add_argument(
        "--concurrency-delay",
        type=float,
        default=None,
        help="server delay (s) during the throughput measurement (default 0.020)",
    )
    parser.add_argument(
        "--cpu-rounds",
        type=int,
        nargs=2,
        metavar=("PER_CALL", "PER_TURN"),
        default=None,
        help="rounds of the cpu measurement (default 100 400): more narrow its intervals",
    )
    parser.add_argument(
        "--sizes",
        default=None,
        help="with --only scaling: comma-separated checkpoint counts (default "
        f"{','.join(map(str, scaling.SIZES))} against MONGODB_URI, "
        f"{','.join(map(str, scaling.QUICK_SIZES))} on the wire server)",
    )
    parser.add_argument(
        "--layouts",
        default=",".join(scaling.LAYOUTS),
        help=f"with --only scaling: comma-separated subset of {','.join(scaling.LAYOUTS)}",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=15,
        help="with --only scaling: calls per operation and size (default 15)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="directory for results.md and results.png"
    )
    return parser.parse_args(argv)


def _machine() -> list[tuple[str, str]]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return [
        ("CPU", f"{cpu}, {os.cpu_count()} cores"),
        ("OS", platform.platform()),
        ("Python", f"{platform.python_implementation()} {platform.python_version()}"),
    ]


def _packages() -> list[tuple[str, str]]:
    found = []
    for name in PACKAGES:
        try:
            found.append((name, version(name)))
        except PackageNotFoundError:
            found.append((name, "not installed"))
    return found


def _settings(settings: scenarios.Settings) -> list[tuple[str, str]]:
    delays = ", ".join(f"{d * 1000:g} ms" for d in settings.latency_delays)
    return [
        (
            "round trips",
            f"delay 0; {settings.chat_turns}-turn chat thread, "
            f"{settings.delta_turns}-turn DeltaChannel thread",
        ),
        (
            "latency",
            f"delays {delays}; {settings.latency_nodes}-node graph, median of "
            f"{settings.latency_invokes} invokes, history median of {settings.history_repeats}",
        ),
        (
            "throughput",
            f"delay {settings.concurrency_delay * 1000:g} ms; "
            f"{settings.concurrency_nodes}-node graph; "
            f"{', '.join(map(str, settings.concurrency_levels))} concurrent threads",
        ),
        ("storage", f"delay 0; {', '.join(map(str, settings.storage_turns))} chat turns"),
        (
            "compression",
            f"delay 0; ours sync, compression None, zstd, zlib; the checkpoint after "
            f"{', '.join(map(str, settings.compression_turns))} chat turns (add_messages list); "
            f"median of {settings.compression_repeats}",
        ),
        (
            "cpu",
            f"delay 0; client process CPU; {', '.join(map(str, settings.cpu_histories))} turns "
            f"of history; {settings.cpu_call_rounds} rounds per call, "
            f"{settings.cpu_turn_rounds} per turn",
        ),
        (
            "retention",
            f"ours; keep_last=10 on the {max(settings.storage_turns)}-turn chat's calls; "
            f"{settings.chat_turns} chat turns; {settings.latency_nodes}-node graph at "
            f"{max(settings.latency_delays) * 1000:g} ms, median of {settings.latency_invokes} "
            "invokes (keep_last, ttl, durability exit)",
        ),
        (
            "shapes",
            f"ours sync and the official saver; {shapes.REQUESTS} requests of one chat turn "
            "per deployment shape (long-lived, per request on a shared client, "
            "from_conn_string per request), without and with ttl; commands at delay 0, "
            f"median request at {max(settings.latency_delays) * 1000:g} ms",
        ),
    ]


def _log(message: str) -> None:
    print(message, flush=True)


async def _run(args: argparse.Namespace, settings: scenarios.Settings, results: Results) -> None:
    wanted = [m.strip() for m in args.only.split(",") if m.strip()]
    unknown = set(wanted) - set(MEASUREMENTS)
    if unknown:
        raise SystemExit(f"unknown measurement(s) {sorted(unknown)}; choose from {MEASUREMENTS}")
    steps: dict[str, Callable[..., Awaitable[Any]]] = {
        "round_trips": scenarios.round_trips,
        "latency": scenarios.latency,
        "throughput": scenarios.throughput,
        "storage": scenarios.storage,
        "compression": scenarios.compression,
        "cpu": cpu.client_cpu,
        "retention": retention.retention,
        "shapes": shapes.shapes,
    }
    with ServerProcess() as server:
        for name in MEASUREMENTS:
            if name not in wanted:
                continue
            started = time.perf_counter()
            _log(f"{name} ...")
            value = await steps[name](server, settings, results.checks, _log)
            setattr(results, name, value)
            _log(f"{name}: {time.perf_counter() - started:.1f} s")


def _scaling(args: argparse.Namespace) -> int:
    """`--only scaling`: against MONGODB_URI, or the wire server in a process of its own."""
    uri = scaling.default_uri()
    sizes = scaling.SIZES if uri else scaling.QUICK_SIZES
    if args.quick:
        sizes = scaling.QUICK_SIZES
    if args.sizes:
        sizes = tuple(int(size) for size in args.sizes.split(","))
    rounds = 3 if args.quick else args.rounds
    layouts = [layout for layout in scaling.LAYOUTS if layout in args.layouts.split(",")]
    started = time.perf_counter()
    if uri:
        result = scaling.scaling(uri, sizes, _log, rounds=rounds, layouts=layouts)
    else:
        _log("NOTE: MONGODB_URI is unset: the wire server (mongomock), small sizes only")
        with ServerProcess() as server:
            result = scaling.scaling(
                server.uri,
                sizes,
                _log,
                rounds=rounds,
                layouts=layouts,
                server="the wire server (mongomock)",
            )
    print()
    found = scaling.tables(result)
    for table in found:
        print(table.text())
        print()
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "scaling.md").write_text("\n\n".join(t.markdown() for t in found) + "\n")
        print(f"wrote {args.out / 'scaling.md'}")
    print(f"total wall time: {time.perf_counter() - started:.0f} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if OFFICIAL_VERSION_ERROR:
        print(f"error: {OFFICIAL_VERSION_ERROR}", file=sys.stderr)
        return 2
    if "scaling" in args.only.split(","):
        if args.only.strip() != "scaling":
            raise SystemExit("scaling runs alone: --only scaling")
        warnings.filterwarnings("ignore", message=".*[Bb]eta.*")
        return _scaling(args)
    warnings.filterwarnings("ignore", message=".*[Bb]eta.*")
    settings = scenarios.Settings.quick() if args.quick else scenarios.Settings()
    if args.concurrency_delay is not None:
        settings = scenarios.Settings(
            **{**settings.__dict__, "concurrency_delay": args.concurrency_delay}
        )
    if args.cpu_rounds is not None:
        per_call, per_turn = args.cpu_rounds
        settings = scenarios.Settings(
            **{**settings.__dict__, "cpu_call_rounds": per_call, "cpu_turn_rounds": per_turn}
        )
    command = " ".join(["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])])
    results = Results(
        Environment(
            date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            command=command,
            wall_seconds=0.0,
            machine=_machine(),
            packages=_packages(),
            settings=_settings(settings),
        )
    )
    if OFFICIAL_SKIP_REASON:
        note = f"The official saver was skipped: {OFFICIAL_SKIP_REASON}."
        _log(f"NOTE: {note}")
        results.notes.append(note)
    started = time.perf_counter()
    asyncio.run(_run(args, settings, results))
    results.environment.wall_seconds = time.perf_counter() - started

    print()
    for table in tables(results):
        print(table.text())
        print()
    if results.checks:
        print("CORRECTNESS CHECKS FAILED:")
        for check in results.checks:
            print(f"  {check}")
    out = args.out if args.out is not None else (None if args.quick else HERE)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.md").write_text(markdown(results))
        plot(results, out / "results.png")
        print(f"wrote {out / 'results.md'} and {out / 'results.png'}")
    print(f"total wall time: {results.environment.wall_seconds:.0f} s")
    return 1 if results.checks else 0


if __name__ == "__main__":
    sys.exit(main())
