"""`threads history ID` (a thread's checkpoints, a page at a time) and `threads diff ID`
(what changed between two of its checkpoints)."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from typing import Any, TextIO

from langchain_core.messages import BaseMessage

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo.cli import _inspect, _serde, _views
from langgraph.checkpoint.mongo.cli._common import NotFoundError
from langgraph.checkpoint.mongo.sync import MongoDBSaver


def show_history(saver: MongoDBSaver, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    thread_id: str = args.thread_id
    namespaces = _views.counts(saver, [thread_id]).get(thread_id, {})
    if not namespaces:
        raise NotFoundError(f"no thread {thread_id!r} in {_views.where(saver, args)}")
    chosen = sorted(namespaces) if args.checkpoint_ns is None else [args.checkpoint_ns]
    if args.checkpoint_ns is not None and args.checkpoint_ns not in namespaces:
        raise NotFoundError(
            f"no namespace {args.checkpoint_ns!r} in thread {thread_id!r}; its namespaces: "
            f"{sorted(namespaces)}"
        )
    pages: list[dict[str, Any]] = []
    for ns in chosen:
        plan = ops.history_page(saver.storage, thread_id, ns, args.before, args.limit)
        listed = []
        for item, size in _views.run_core(saver, plan):
            _serde.require_key(item, f"thread {thread_id!r}")
            listed.append(
                {
                    **_views.checkpoint_json(item),
                    "next": _inspect.next_nodes(item.checkpoint),
                    "interrupts": _inspect.interrupts(item),
                    "size": size,
                }
            )
        pages.append({"checkpoint_ns": ns, "checkpoints": namespaces[ns], "history": listed})
    if args.json:
        print(_views.json_text({"thread_id": thread_id, "namespaces": pages}), file=out)
        return 0
    now = datetime.now(timezone.utc)
    for page in pages:
        count = len(page["history"])
        print(
            f"thread {thread_id!r}, namespace {page['checkpoint_ns']!r}: {count} of "
            f"{page['checkpoints']} checkpoints, newest first"
            + (f", before {args.before}" if args.before else ""),
            file=out,
        )
        rows = [("CHECKPOINT", "STEP", "SOURCE", "CREATED", "NEXT", "WRITES", "INTERRUPTS", "SIZE")]
        for item in page["history"]:
            rows.append(
                (
                    item["checkpoint_id"],
                    str("" if item["step"] is None else item["step"]),
                    str(item["source"] or ""),
                    _views.age(item["created"], now),
                    ",".join(item["next"]) or "-",
                    str(item["pending_writes"]),
                    str(len(item["interrupts"])),
                    _views.size_text(item["size"]),
                )
            )
        _views.print_table(rows, {1, 5, 6, 7}, out)
        if count == args.limit:
            last = page["history"][-1]["checkpoint_id"]
            ns = f" --ns {page['checkpoint_ns']!r}" if page["checkpoint_ns"] else ""
            print(f"  (more: --before {last}{ns})", file=out)
    return 0


def show_diff(saver: MongoDBSaver, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    ns = args.checkpoint_ns or ""
    new = _views.state_at(saver, args, ns, args.new)
    old_id = args.old
    if old_id is None:
        parent = (new.item.parent_config or {}).get("configurable", {})
        old_id = parent.get("checkpoint_id")
        if old_id is None:
            raise NotFoundError(
                f"checkpoint {new.checkpoint_id} of thread {args.thread_id!r} has no parent "
                "to compare with: name one with --from"
            )
    old = _views.state_at(saver, args, ns, old_id)
    changes = _inspect.diff(old, new)
    described = {
        "thread_id": args.thread_id,
        "checkpoint_ns": ns,
        "from": _views.checkpoint_json(old.item),
        "to": _views.checkpoint_json(new.item),
        "channels": changes,
        "next": {"from": old.next, "to": new.next},
    }
    if args.json:
        print(_views.json_text(described), file=out)
        return 0
    print(
        f"thread {args.thread_id!r}"
        + (f", namespace {ns!r}" if ns else "")
        + f": from {old.checkpoint_id} (step {old.item.metadata.get('step')}) to "
        f"{new.checkpoint_id} (step {new.item.metadata.get('step')})",
        file=out,
    )
    if not changes:
        print("  no channel changed", file=out)
    for channel, change in changes.items():
        _print_change(channel, change, out)
    if old.next != new.next:
        print(f"  next: {_listed(old.next)} -> {_listed(new.next)}", file=out)
    return 0


def _listed(names: list[str]) -> str:
    return ", ".join(names) or "-"


def _print_change(channel: str, change: dict[str, Any], out: TextIO) -> None:
    kind = change["change"]
    if kind != "changed":
        print(f"  {channel}: {kind}: {_views.VALUE_REPR.repr(change['value'])}", file=out)
        return
    if "messages" not in change:
        print(
            f"  {channel}: changed: {_views.VALUE_REPR.repr(change['from'])} -> "
            f"{_views.VALUE_REPR.repr(change['to'])}",
            file=out,
        )
        return
    messages = change["messages"]
    print(
        f"  {channel}: {len(messages['added'])} added, {len(messages['removed'])} removed, "
        f"{len(messages['edited'])} edited",
        file=out,
    )
    for sign, key in (("+", "added"), ("-", "removed")):
        for message in messages[key]:
            print(f"    {sign} {message.id}: {_said(message)}", file=out)
    for edit in messages["edited"]:
        print(f"    ~ {edit['id']}: {_said(edit['from'])} -> {_said(edit['to'])}", file=out)


def _said(message: BaseMessage) -> str:
    """`HumanMessage 'order 5678'`: a message's kind and content, shortened."""
    return f"{type(message).__name__} {_views.VALUE_REPR.repr(message.content)}"
