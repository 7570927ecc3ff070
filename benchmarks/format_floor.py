"""What our stored format costs, and what our savers' own work costs on top of it:
`python -m benchmarks.format_floor [--history 5 30] [--rounds 300]`.

Not part of `python -m benchmarks`. It answers one question about client CPU per chat
turn (the `cpu` measurement's "saver's own"): how much of the difference from the
official saver is the stored format itself (a document per checkpoint with one entry per
channel, readable metadata, composite keys), and how much the work each of our calls
does besides storing it.

A *floor* saver stores the same documents as ours (checked first: the calls of a
recorded turn leave equal collections) in the fewest steps: `put` and `put_writes` build
their one command in a single function, with none of what our plans do besides:
validation of what LangGraph hands over, with named errors; the size check before
sending, with `state_max_bytes` and chunks; the check that metadata reads back as itself;
the plan layering; and the options that are off here (TTL, `keep_last`, compression,
other serializers). It keeps what the measured turn needs: the value cache (its bound
included) with its version check, a special write replacing the stored one. Reads, the
plan runner, the executors and the write protection on cancellation are ours. It is a
measuring device, not a saver: it only handles the inputs of these turns, and it drops
exactly the guarantees whose cost it measures.

For each history length it runs chat turns (as the `cpu` measurement does: one `invoke`
or `ainvoke` on a thread seeded with that much history, the seed not timed) with our
saver, the floor saver, the official saver and `InMemorySaver`, in an order shuffled
every round, and prints each one's own CPU (the turn minus `InMemorySaver`'s) as a ratio
to the official saver's, and ours to the floor's, with `cpu`'s paired estimator and its
95% interval.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.memory import InMemorySaver
from pymongo import AsyncMongoClient, MongoClient, UpdateOne

from benchmarks.contenders import OFFICIAL_SKIP_REASON, OfficialSaver
from benchmarks.cpu import (
    _memory_seed,
    _recorded_seed,
    _turn_calls,
    _TurnRunner,
    ratio_interval,
)
from benchmarks.scenarios import _db_name, _record
from benchmarks.server import ServerProcess
from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver
from langgraph.checkpoint.mongo._channel_values import StoredValues
from langgraph.checkpoint.mongo._commands import Command, Method, Plan, Target
from langgraph.checkpoint.mongo._keys import checkpoint_key
from langgraph.checkpoint.mongo._operations import Storage
from langgraph.checkpoint.mongo._queries import _OPTIONAL_CHECKPOINT_FIELDS

# What a put of ours unsets: the optional fields a checkpoint stored again must lose.
_UNSET = {name: "" for name in _OPTIONAL_CHECKPOINT_FIELDS}


def floor_put(
    storage: Storage,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> Plan[RunnableConfig]:
    """Our `put`'s command, built in one function (see the module docstring)."""
    configurable = config["configurable"]
    thread_id = configurable["thread_id"]
    ns = configurable.get("checkpoint_ns", "")
    parent_id = configurable.get("checkpoint_id")
    key = checkpoint_key(thread_id, ns, checkpoint["id"])
    parent = None
    if parent_id is not None:
        parent = storage.recent.recall(checkpoint_key(thread_id, ns, parent_id))
    kept = parent.entries if parent is not None else {}
    versions = dict(checkpoint["channel_versions"])
    dumps = storage.codec.serde.dumps_typed
    entries: dict[str, Any] = {}
    for channel, value in checkpoint["channel_values"].items():
        entry = kept.get(channel) if channel not in new_versions else None
        if entry is None or parent is None or parent.versions.get(channel) != versions.get(channel):
            type_, data = dumps(value)
            entry = {"channel": channel, "data": data}
            if type_ != "msgpack":
                entry["type"] = type_
        entries[channel] = entry
    blob = dict(checkpoint)
    del blob["id"], blob["channel_values"]
    document = {
        "thread_id": thread_id,
        "parent_checkpoint_id": parent_id,
        "checkpoint": dumps(blob)[1],
        "channel_values": list(entries.values()),
        "metadata": get_checkpoint_metadata(config, metadata),
    }
    update = {"$set": document, "$unset": _UNSET}
    yield Command(
        Target.CHECKPOINTS,
        Method.UPDATE_ONE,
        ({"_id": key, "thread_id": thread_id}, update),
        {"upsert": True},
    )
    storage.recent.remember(key, StoredValues(entries, versions))
    return {"configurable": dict(key)}


def floor_put_writes(
    storage: Storage,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str = "",
) -> Plan[None]:
    """Our `put_writes`'s command, built in one function (see the module docstring)."""
    configurable = config["configurable"]
    thread_id = configurable["thread_id"]
    ns = configurable.get("checkpoint_ns", "")
    joins = checkpoint_key(thread_id, ns, configurable["checkpoint_id"])
    dumps = storage.codec.serde.dumps_typed
    upserts = []
    for position, (channel, value) in enumerate(writes):
        type_, data = dumps(value)
        stored: Any = data if type_ == "msgpack" else {"data": data, "type": type_}
        if type_ == "null":
            stored = None
        fields = {"thread_id": thread_id, "task_path": task_path, "channel": channel}
        fields["value"] = stored
        idx = WRITES_IDX_MAP.get(channel, position)
        key = {"checkpoint": joins, "task_id": task_id, "idx": idx}
        # A special write (idx < 0) replaces the stored one; a regular one keeps it.
        operator = "$set" if idx < 0 else "$setOnInsert"
        upserts.append(({"_id": key, "thread_id": thread_id}, {operator: fields}))
    if len(upserts) == 1:
        yield Command(Target.WRITES, Method.UPDATE_ONE, upserts[0], {"upsert": True})
    else:
        requests = [UpdateOne(*upsert, upsert=True) for upsert in upserts]
        yield Command(Target.WRITES, Method.BULK_WRITE, (requests,), {"ordered": False})


class FloorSaver(MongoDBSaver):
    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self._run("put", floor_put(self.storage, config, checkpoint, metadata, new_versions))

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self._run("put_writes", floor_put_writes(self.storage, config, writes, task_id, task_path))


class AsyncFloorSaver(AsyncMongoDBSaver):
    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        plan = floor_put(self.storage, config, checkpoint, metadata, new_versions)
        return await self._run("put", plan)

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        plan = floor_put_writes(self.storage, config, writes, task_id, task_path)
        await self._run("put_writes", plan)


def _same_documents(uri: str, history: int) -> None:
    """The calls of a recorded turn (and the turns before it) stored by ours and by the
    floor saver leave equal collections."""
    calls = _turn_calls(_record(False, history + 1), history)
    client: MongoClient[dict[str, Any]] = MongoClient(uri)
    try:
        found = []
        for kind in (MongoDBSaver, FloorSaver):
            saver = kind(client, _db_name("floor"))
            saver.setup()
            for method, args in [*calls.prefix, *[("put", a) for a in calls.puts]]:
                getattr(saver, method)(*args)
            for args in calls.writes:
                saver.put_writes(*args)
            found.append(
                [
                    sorted(map(repr, collection.find({})))
                    for collection in (saver.checkpoint_collection, saver.writes_collection)
                ]
            )
            client.drop_database(saver.db.name)
    finally:
        client.close()
    if found[0] != found[1]:
        raise SystemExit("the floor saver stores other documents than ours: fix floor_put")


async def _turns(
    uri: str, history: int, rounds: int, use_async: bool
) -> tuple[dict[str, tuple[float, float, float]], float]:
    """Own CPU per turn, as ratios with their 95% intervals (`cpu.ratio_interval`): ours
    and the floor saver's ÷ the official saver's, ours ÷ the floor saver's; and the
    official saver's median own CPU, in µs."""
    recording = _record(False, history + 1)
    client: Any = AsyncMongoClient(uri) if use_async else MongoClient(uri)
    official_client: MongoClient[dict[str, Any]] = MongoClient(uri)
    kind = (AsyncMongoDBSaver, AsyncFloorSaver) if use_async else (MongoDBSaver, FloorSaver)
    savers: dict[str, Any] = {
        "ours": kind[0](client, _db_name("floor")),
        "floor": kind[1](client, _db_name("floor")),
        "official": OfficialSaver(official_client, _db_name("floor")),
    }
    for name in ("ours", "floor"):
        if use_async:
            await savers[name].setup()
        else:
            savers[name].setup()
    runners = {name: _TurnRunner(saver, use_async) for name, saver in savers.items()}
    runners["memory"] = _TurnRunner(InMemorySaver(), use_async)
    seeds = {"memory": _memory_seed(history)}
    for name, runner in runners.items():
        runner.set_seed(*seeds.get(name, _recorded_seed(recording, history)))
    samples: dict[str, list[float]] = {name: [] for name in runners}
    order = list(runners)
    shuffle = random.Random(history).shuffle
    gc.collect()
    gc.freeze()
    try:
        for round_ in range(rounds + 20):  # the first 20 warm up
            shuffle(order)
            for name in order:
                spent = await runners[name].turn(history)
                if round_ >= 20:
                    samples[name].append(spent)
    finally:
        gc.unfreeze()
        for name in ("ours", "floor", "official"):
            official_client.drop_database(savers[name].db.name)
        official_client.close()
        if use_async:
            await client.close()
        else:
            client.close()
    memory = samples["memory"]
    ratios = {
        "ours": ratio_interval(samples["ours"], samples["official"], memory),
        "floor": ratio_interval(samples["floor"], samples["official"], memory),
        "ours_floor": ratio_interval(samples["ours"], samples["floor"], memory),
    }
    official = statistics.median(
        spent - base for spent, base in zip(samples["official"], memory, strict=True)
    )
    return ratios, official


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.format_floor")
    parser.add_argument("--history", type=int, nargs="+", default=[5, 30])
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args(argv)
    if OFFICIAL_SKIP_REASON:
        raise SystemExit(OFFICIAL_SKIP_REASON)
    with ServerProcess() as server:
        _same_documents(server.uri, max(args.history))
        print("saver's own CPU per chat turn: ratios (95% interval), same way of running")
        columns = ("ours ÷ official", "floor ÷ official", "ours ÷ floor")
        print(f"{'history':>7} {'how':>7}  " + "".join(f"{c:<21}" for c in columns), end="")
        print("official's own")
        for history in args.history:
            for use_async in (False, True):
                ratios, official = asyncio.run(_turns(server.uri, history, args.rounds, use_async))
                how = "ainvoke" if use_async else "invoke"
                cells = [_ratio(ratios[name]) for name in ("ours", "floor", "ours_floor")]
                print(f"{history:>7} {how:>7}  " + "".join(f"{c:<21}" for c in cells), end="")
                print(f"{official:,.0f} µs")


def _ratio(found: tuple[float, float, float]) -> str:
    return f"{found[0]:.3f} ({found[1]:.3f}-{found[2]:.3f})"


if __name__ == "__main__":
    main()
