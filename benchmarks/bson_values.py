"""BSON values in a state: `python -m benchmarks.bson_values`.

Not part of `python -m benchmarks`. Through `MongoDBSaver` on the wire server in a
process of its own (`ServerProcess`), it times `put` then `get_tuple` of a checkpoint
whose one channel holds 1,000 `ObjectId`s, against the same checkpoint holding their
1,000 24-character hex strings (LangGraph's plain msgpack), rounds interleaved, and
prints the medians and their ratio (issue 43's budget: at most 1.5).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from bson import ObjectId
from langgraph.checkpoint.base import empty_checkpoint
from pymongo import MongoClient

from benchmarks.server import ServerProcess
from langgraph.checkpoint.mongo import MongoDBSaver


def _round_trip(saver: MongoDBSaver, thread_id: str, values: list[Any]) -> float:
    """Seconds to `put` a checkpoint holding `values` and `get_tuple` it back."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"ids": values}
    checkpoint["channel_versions"] = {"ids": 1}
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    started = time.perf_counter()
    stored = saver.put(config, checkpoint, {}, {"ids": 1})
    read = saver.get_tuple(stored)
    seconds = time.perf_counter() - started
    if read is None or read.checkpoint["channel_values"]["ids"] != values:
        raise AssertionError("the state did not read back equal")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200, help="rounds per row (default 200)")
    parser.add_argument("--count", type=int, default=1000, help="values (default 1000)")
    args = parser.parse_args()
    ids = [ObjectId() for _ in range(args.count)]
    rows: dict[str, list[float]] = {"ObjectId": [], "str": []}
    states: dict[str, list[Any]] = {"ObjectId": ids, "str": [str(oid) for oid in ids]}
    with ServerProcess() as server:
        client: MongoClient[Any] = MongoClient(server.uri)
        saver = MongoDBSaver(client, "bson_values")
        saver.setup()
        for number in range(args.rounds + 10):
            for name, values in states.items():
                seconds = _round_trip(saver, f"{name}-{number}", values)
                if number >= 10:  # the first rounds warm up
                    rows[name].append(seconds)
        client.close()
    medians = {name: statistics.median(times) for name, times in rows.items()}
    print(f"put + get_tuple of {args.count} values in one channel, median of {args.rounds}")
    print(f"{'values':<12} {'ms':>8}")
    for name, seconds in medians.items():
        print(f"{name:<12} {seconds * 1000:>8.2f}")
    print(f"ratio ObjectId / str: {medians['ObjectId'] / medians['str']:.2f}")


if __name__ == "__main__":
    main()
