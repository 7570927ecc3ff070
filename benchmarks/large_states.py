"""States beyond 16 MiB: `python -m benchmarks.large_states`.

Not part of `python -m benchmarks` (it moves hundreds of MiB). Through `MongoDBSaver` on
the wire server in a process of its own (`ServerProcess`), for a state of `--mib` MiB of
incompressible bytes in one channel, it prints per operation the wall time (median of
`--rounds`), the commands the server received and the bytes the server then stores:

- `put` of a checkpoint holding the state, and `get_tuple` of it;
- `put` of its child whose large channel did not change (only a small one did): what
  chunks owned by each checkpoint cost against chunks shared between checkpoints (which
  would send and store nothing for the unchanged channel, as `PostgresSaver`'s per
  channel and version blobs do; see `_chunks`'s docstring for why they are owned);
- the same child with the value cache off (`cache_max_bytes=0`): its parent's bytes are
  read back first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from pymongo import MongoClient

from benchmarks.server import ServerProcess
from langgraph.checkpoint.mongo import MongoDBSaver

MIB = 1024 * 1024


def _checkpoint(values: dict[str, Any], versions: dict[str, Any]) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = values
    cp["channel_versions"] = versions
    return cp


def _chunk_bytes(saver: MongoDBSaver, config: Any) -> int:
    """The bytes of the chunks the checkpoint `config` names owns."""
    owner = "_id.checkpoint.checkpoint_id"
    query = {"thread_id": config["configurable"]["thread_id"], "_id.chunk": {"$exists": True}}
    query[owner] = config["configurable"]["checkpoint_id"]
    return sum(len(chunk["data"]) for chunk in saver.writes_collection.find(query))


def _measure(
    server: ServerProcess,
    rounds: int,
    run: Callable[[int], Any],
    prepare: Callable[[int], Any] = lambda number: None,
) -> tuple[float, int]:
    """Median seconds of `run(round)` (after `prepare(round)`, not measured), and the
    commands of its last round."""
    times = []
    for number in range(rounds):
        prepare(number)
        server.reset()
        started = time.perf_counter()
        run(number)
        times.append(time.perf_counter() - started)
    return statistics.median(times), server.count()


def _rows(
    server: ServerProcess, client: MongoClient[Any], blob: bytes, rounds: int, cache: int
) -> tuple[list[tuple[str, float, int]], int]:
    """The rows of one saver (`cache_max_bytes=cache`), and the chunk bytes of a child."""
    saver = MongoDBSaver(client, f"large_{cache}", cache_max_bytes=cache)
    saver.setup()
    parents: list[Any] = []
    children: list[Any] = []

    def put_parent(number: int) -> None:
        cp = _checkpoint({"blob": blob, "n": 0}, {"blob": 1, "n": 1})
        config: Any = {"configurable": {"thread_id": f"t{number}", "checkpoint_ns": ""}}
        parents.append(saver.put(config, cp, {}, {"blob": 1, "n": 1}))

    def put_child(number: int) -> None:
        cp = _checkpoint({"blob": blob, "n": 1}, {"blob": 1, "n": 2})
        children.append(saver.put(parents[-1], cp, {}, {"n": 2}))

    if not cache:
        return [("the same, value cache off", *_measure(server, rounds, put_child, put_parent))], 0
    rows = [("put", *_measure(server, rounds, put_parent))]
    rows.append(("get_tuple", *_measure(server, rounds, lambda n: saver.get_tuple(parents[-1]))))
    child = _measure(server, rounds, put_child, put_parent)
    rows.append(("put child, large channel unchanged", *child))
    return rows, _chunk_bytes(saver, children[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=40, help="state size in MiB (default 40)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per row (default 3)")
    args = parser.parse_args()
    blob = os.urandom(args.mib * MIB)
    with ServerProcess() as server:
        client: MongoClient[Any] = MongoClient(server.uri)
        rows, per_child = _rows(server, client, blob, args.rounds, 64 * MIB)
        rows += _rows(server, client, blob, args.rounds, 0)[0]
        client.close()
    print(f"A state of {args.mib} MiB in one channel, median of {args.rounds} rounds")
    print(f"{'operation':<40} {'seconds':>8} {'commands':>9}")
    for name, seconds, commands in rows:
        print(f"{name:<40} {seconds:>8.3f} {commands:>9}")
    print(
        f"The child owns {per_child / MIB:.1f} MiB of chunks: the unchanged channel, stored "
        "again (chunks shared by channel and version would add none, and send none)."
    )


if __name__ == "__main__":
    main()
