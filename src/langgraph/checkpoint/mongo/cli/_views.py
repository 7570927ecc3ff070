"""What the `threads` commands share: reading through the saver and the core's named
plans, and printing what they read (times, tables, JSON)."""

from __future__ import annotations

import argparse
import json
import reprlib
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

from langgraph.checkpoint.base import CheckpointTuple

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo._base import command_collection
from langgraph.checkpoint.mongo._commands import Plan
from langgraph.checkpoint.mongo._executors import execute_sync
from langgraph.checkpoint.mongo._options import redact_uri
from langgraph.checkpoint.mongo._runners import run_plan
from langgraph.checkpoint.mongo.cli import _inspect
from langgraph.checkpoint.mongo.cli._common import NotFoundError, T
from langgraph.checkpoint.mongo.sync import MongoDBSaver

# Channel values in `show`: a line each.
VALUE_REPR = reprlib.Repr()
VALUE_REPR.maxstring = VALUE_REPR.maxother = 60
VALUE_REPR.maxlist = VALUE_REPR.maxdict = 3


def where(saver: MongoDBSaver, args: argparse.Namespace) -> str:
    return f"{args.db}.{saver.checkpoint_collection_name} at {redact_uri(args.uri)}"


def counts(saver: MongoDBSaver, thread_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Checkpoints per namespace of each of these threads (one aggregation)."""
    return run_core(saver, ops.checkpoint_counts(thread_ids))


def run_core(saver: MongoDBSaver, plan: Plan[T]) -> T:
    return run_plan(
        plan, lambda command: execute_sync("threads", command_collection(saver, command), command)
    )


def size_text(size: int) -> str:
    """A size in bytes as `threads` prints it (`9.3 MiB`, `12.0 KiB`, `512 B`)."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def parse_time(ts: str) -> datetime | None:
    """A checkpoint's `ts` as an aware datetime, or None when it does not read as one."""
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def age(ts: str, now: datetime) -> str:
    """`2026-11-27 13:28:44 UTC (3h ago)`; a `ts` that is not a time, as it is."""
    when = parse_time(ts)
    if when is None:
        return ts or "-"
    seconds = max(0, int((now - when).total_seconds()))
    units = (("d", 86400), ("h", 3600), ("m", 60))
    unit, size = next(((unit, size) for unit, size in units if seconds >= size), ("s", 1))
    return f"{when.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC ({seconds // size}{unit} ago)"


def print_table(rows: Sequence[tuple[str, ...]], right: set[int], out: TextIO) -> None:
    """`rows` in columns (those numbered in `right` aligned right), indented two spaces."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = zip(row, widths, strict=True)
        line = "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(cells))
        print(f"  {line.rstrip()}", file=out)


def shown(thread_id: str) -> str:
    """A thread id as typed on a command line: bare when it is plain text, else quoted."""
    if thread_id and thread_id.isprintable() and not any(c.isspace() for c in thread_id):
        return thread_id
    return repr(thread_id)


def state_at(
    saver: MongoDBSaver, args: argparse.Namespace, checkpoint_ns: str, checkpoint_id: str | None
) -> _inspect.State:
    """The state at this checkpoint (None: the namespace's latest), or why there is none."""
    configurable = {"thread_id": args.thread_id, "checkpoint_ns": checkpoint_ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    item = saver.get_tuple({"configurable": configurable})
    if item is None:
        what = "no checkpoint" if checkpoint_id is None else f"no checkpoint {checkpoint_id!r}"
        raise NotFoundError(
            f"{what} in namespace {checkpoint_ns!r} of thread {args.thread_id!r} in "
            f"{where(saver, args)} (see `threads history {shown(args.thread_id)}`)"
        )
    return _inspect.load(saver, item, args.thread_id)


def checkpoint_json(item: CheckpointTuple) -> dict[str, Any]:
    configurable = item.config["configurable"]
    parent = (item.parent_config or {}).get("configurable", {})
    return {
        "checkpoint_id": configurable["checkpoint_id"],
        "checkpoint_ns": configurable["checkpoint_ns"],
        "parent_checkpoint_id": parent.get("checkpoint_id"),
        "step": item.metadata.get("step"),
        "source": item.metadata.get("source"),
        "created": item.checkpoint.get("ts", ""),
        "pending_writes": len(item.pending_writes or []),
    }


def state_json(state: _inspect.State) -> dict[str, Any]:
    return {
        **checkpoint_json(state.item),
        "next": state.next,
        "metadata": state.item.metadata,
        "channels": state.values,
        "interrupts": state.interrupts,
    }


def json_text(value: Any) -> str:
    """JSON as every `--json` prints it: a value JSON cannot hold as its Python repr."""
    return json.dumps(value, default=repr, ensure_ascii=False)


def print_state(label: str, state: dict[str, Any], now: datetime, out: TextIO) -> None:
    ns = f" (namespace {state['checkpoint_ns']!r})" if state["checkpoint_ns"] else ""
    print(
        f"{label}: {state['checkpoint_id']}{ns}, step {state['step']}, source "
        f"{state['source']}, {age(state['created'], now)}",
        file=out,
    )
    if label != "latest":
        print(f"  parent: {state['parent_checkpoint_id'] or '-'}", file=out)
        print(f"  metadata: {VALUE_REPR.repr(state['metadata'])}", file=out)
    if state["next"]:
        print(f"  next: {', '.join(state['next'])}", file=out)
    values = state["channels"]
    print(f"  channels ({len(values)}):", file=out)
    for channel in values:
        print(f"    {channel}: {VALUE_REPR.repr(values[channel])}", file=out)
    print(f"  pending writes: {state['pending_writes']}", file=out)
    for interrupt in state["interrupts"]:
        print(
            f"  waiting on an interrupt: {VALUE_REPR.repr(interrupt['value'])} "
            f"(id {interrupt['id']}, task {interrupt['task_id']})",
            file=out,
        )
