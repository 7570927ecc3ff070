"""`python -m langgraph.checkpoint.mongo threads ACTION` (see DESCRIPTION): reads and
writes go through a `MongoDBSaver` and named plans of the core (`_views.run_core`).
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, TextIO

from bson import json_util
from bson.errors import BSONError
from langgraph.checkpoint.base import CheckpointTuple
from pymongo.collection import Collection

from langgraph.checkpoint.mongo import _operations as ops
from langgraph.checkpoint.mongo import _options, _queries
from langgraph.checkpoint.mongo._documents import ThreadInfo
from langgraph.checkpoint.mongo._keys import ref_from_config
from langgraph.checkpoint.mongo._options import redact_uri
from langgraph.checkpoint.mongo.cli import _common, _inspect, _serde, _views
from langgraph.checkpoint.mongo.cli.history import show_diff, show_history
from langgraph.checkpoint.mongo.sync import MongoDBSaver

DESCRIPTION = """\
See and tidy the threads of langgraph-checkpoint-mongo's collections.

  ls               every thread: its checkpoints, its last activity, whether it is pinned
  show ID          a thread's latest state (a pending interrupt too), and its history;
                   --checkpoint CHECKPOINT: the state at that checkpoint
  history ID       a thread's checkpoints, newest first, a page at a time: step, source,
                   time, next nodes, pending writes, interrupts, stored size
  diff ID          what changed between two checkpoints (default: the latest and its
                   parent), per channel; messages by message id
  prune            keep each thread's N newest checkpoints per namespace (--keep-last),
                   optionally only in threads idle for a while (--idle-for); --dry-run first
  delete ID...     delete whole threads (asks first, unless --yes)
  pin ID...        keep threads from the savers' ttl expiry; unpin ID... lets them expire
Each takes --json: one JSON document on stdout, for scripts (an error too).
Encrypted threads (LangGraph's EncryptedSerializer) read with LANGGRAPH_AES_KEY set, as
the application reads them; another serializer with --serde module:factory.

exit codes: 0 done; 1 a thread was not found, a deletion was declined, or any other
error; 2 bad arguments (also: a URI that is not one; a database or collection that does
not exist, or holds langgraph-checkpoint-mongodb's documents; delete without --yes when
stdin is not a terminal); 130 interrupted (Ctrl-C): nothing is half-written, run the
same command again to finish.
"""


EPILOG = """\
examples:
  export MONGODB_URI="mongodb://..."
  # or, to try it without MongoDB (in memory; for trying and testing only):
  #   python -m langgraph.checkpoint.mongo.testing serve
  python -m langgraph.checkpoint.mongo threads ls --filter source=loop
  python -m langgraph.checkpoint.mongo threads show user-42
  python -m langgraph.checkpoint.mongo threads history user-42 --limit 10
  python -m langgraph.checkpoint.mongo threads show user-42 --checkpoint 1f0c...
  python -m langgraph.checkpoint.mongo threads diff user-42 --from 1f0a... --to 1f0c...
  python -m langgraph.checkpoint.mongo threads prune --keep-last 10 --idle-for 7d --dry-run
  python -m langgraph.checkpoint.mongo threads delete user-42 user-43 --yes
  python -m langgraph.checkpoint.mongo threads pin user-42
"""

BATCH = 100  # threads counted, pruned or shown per round trip of `ls` and `prune`
DEFAULT_HISTORY = 20  # checkpoints `show` and `history` list by default

_DURATION_UNITS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([wdhms])")


class Duration(timedelta):
    """A `--idle-for` value: a timedelta that prints as it was typed."""

    text = ""

    def __str__(self) -> str:
        return self.text


def _duration(text: str) -> Duration:
    """`7d`, `12h`, `1d12h`, `90m`, `2w`, `45s`, or plain seconds."""
    parts = _DURATION.findall(text)
    try:
        seconds = float(text)
    except ValueError:
        if not parts or "".join(number + unit for number, unit in parts) != text:
            raise argparse.ArgumentTypeError(
                f"must be a duration such as 7d, 12h, 1d12h, 90m, 2w or 45s, got {text!r}"
            ) from None
        seconds = sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)
    if not 0 <= seconds < 1e9:
        raise argparse.ArgumentTypeError(f"must be 0 or more and below 1e9 s, got {text!r}")
    duration = Duration(seconds=seconds)
    duration.text = text
    return duration


def _at_least_one(text: str, name: str) -> int:
    """A count of at least 1 that a server takes (`limit`: a BSON int64)."""
    value = _options.batch_size(_options.parse_int(text, name), name)
    if value > _options.MAX_INT64:
        raise _options.OptionValueError(
            name, f"must be at most 2**63 - 1 (a BSON int64), got {value}"
        )
    return value


def _filter_entry(text: str) -> tuple[str, Any]:
    """`KEY=VALUE`: the value as MongoDB Extended JSON when it reads as JSON (`step=3`,
    `user={"$oid": "65a1..."}` for an `ObjectId`), else the text (`source=loop`)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"must be KEY=VALUE, got {text!r}")
    try:
        return key, json_util.loads(value)
    except BSONError as error:  # JSON, but not a BSON value: {"$oid": "nope"}
        raise argparse.ArgumentTypeError(f"{key}: {value} is no BSON value: {error}") from None
    except ValueError:
        return key, value


def _connection_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    where = common.add_argument_group("where")
    where.add_argument(
        "--uri",
        default=os.environ.get("MONGODB_URI"),
        metavar="URI",
        help="connection string (default: the MONGODB_URI environment variable)",
    )
    _common.add_names(
        where,
        "--",
        "the database (default: %(default)s)",
        "the checkpoint collection (default: %(default)s)",
        "the pending-writes collection (default: %(default)s)",
    )
    _common.add_timeout(where, "the server")
    where.add_argument(
        "--serde",
        metavar="MODULE:FACTORY",
        help="the serializer the application's saver uses: FACTORY() from MODULE (default: "
        "LangGraph's EncryptedSerializer when LANGGRAPH_AES_KEY is set, else LangGraph's "
        "default serializer)",
    )
    return common


_Adder = Callable[[argparse.ArgumentParser], object]
_Action = Callable[[MongoDBSaver, argparse.Namespace, TextIO, TextIO], int]


def _arg(*flags: str, **options: Any) -> _Adder:
    return lambda parser: parser.add_argument(*flags, **options)


def _count(name: str, help: str, **options: Any) -> _Adder:
    return _arg(name, type=_common.flag(_at_least_one, name), metavar="N", help=help, **options)


def _json(help: str) -> _Adder:
    return _arg("--json", action="store_true", help=help)


def _ns(help: str) -> _Adder:
    return _arg("--ns", dest="checkpoint_ns", metavar="NS", help=help)


def add_parser(commands: Any) -> None:
    """Add `threads` and its commands to the `python -m langgraph.checkpoint.mongo` parser."""
    threads = commands.add_parser(
        "threads",
        help="list, show, prune, delete and pin threads",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    threads.set_defaults(handler=run)
    common = [_connection_options()]
    actions = threads.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, act: _Action, help: str, description: str, *arguments: _Adder) -> None:
        parser = actions.add_parser(name, parents=common, help=help, description=description)
        parser.set_defaults(parser=parser, act=act)
        for add in arguments:
            add(parser)

    action(
        "ls",
        _ls,
        "every thread: checkpoints and last activity",
        "Every thread in thread id order: how many checkpoints it has (all "
        "namespaces) and when its latest root checkpoint was written.",
        _arg(
            "--filter",
            action="append",
            type=_filter_entry,
            default=[],
            metavar="KEY=VALUE",
            help="only threads whose latest root checkpoint has this metadata (repeat for "
            "more; VALUE is read as MongoDB Extended JSON when it can be: step=3, "
            'tags=\'["a"]\', user=\'{"$oid": "65a1b2c3d4e5f60718293a4b"}\')',
        ),
        _count("--limit", "at most N threads"),
        _arg("--after", metavar="ID", help="start after this thread id (the last of a page)"),
        _json(
            "a JSON array, one object per thread: thread_id, checkpoints, last_activity, "
            "checkpoint_id, metadata, pinned"
        ),
    )
    action(
        "show",
        _show,
        "a thread's latest state and its history",
        "A thread's latest root checkpoint (its channels, its pending writes "
        "and the interrupt it waits on, if any) and its checkpoints newest first, every "
        "namespace, counted as reads see them. Reads the thread's whole history once.",
        _arg("thread_id", metavar="ID"),
        _arg(
            "--checkpoint",
            metavar="CHECKPOINT",
            help="show this checkpoint's state instead of the latest: its channels as "
            "LangGraph loads them (DeltaChannel values rebuilt), metadata, next nodes, "
            "pending writes and interrupts",
        ),
        _ns('the namespace of --checkpoint (default: the root, "")'),
        _count(
            "--history",
            "how many checkpoints of the history to list (default: %(default)s)",
            default=DEFAULT_HISTORY,
        ),
        _json(
            "one JSON object: thread_id, checkpoints, namespaces, pinned, latest, "
            "interrupts, history, with --checkpoint: checkpoint, then latest_stored"
        ),
    )
    action(
        "history",
        show_history,
        "a thread's checkpoints, newest first, a page at a time",
        "A thread's checkpoints newest first, per namespace (or the one "
        "--ns names): id, step, source, time, the nodes that run next, pending writes "
        "and interrupts, stored size. One indexed query per page and namespace, however "
        "long the thread; the next page: --before the last id listed.",
        _arg("thread_id", metavar="ID"),
        _ns("only this namespace (default: every namespace, the root first)"),
        _count(
            "--limit", "checkpoints per namespace (default: %(default)s)", default=DEFAULT_HISTORY
        ),
        _arg("--before", metavar="CHECKPOINT", help="only checkpoints older than this one"),
        _json("one JSON object: thread_id, namespaces (checkpoint_ns, checkpoints, history)"),
    )
    action(
        "diff",
        show_diff,
        "what changed between two checkpoints",
        "What changed between two checkpoints of a thread (forks included), "
        "per channel: added, removed or changed; lists of messages by message id (added, "
        "removed, edited). DeltaChannel values are rebuilt on both sides.",
        _arg("thread_id", metavar="ID"),
        _arg("--from", dest="old", metavar="CHECKPOINT", help="default: the parent of --to"),
        _arg("--to", dest="new", metavar="CHECKPOINT", help="default: the latest"),
        _ns('the namespace of both checkpoints (default: the root, "")'),
        _json("one JSON object: thread_id, checkpoint_ns, from, to, channels, next"),
    )
    action(
        "prune",
        _prune,
        "keep each thread's newest checkpoints",
        "Keep each thread's N newest checkpoints per namespace (and the older ones a DeltaChannel "
        "rebuilds its value from); delete the rest with their pending writes, and pending writes "
        "no checkpoint owns once an hour old. Safe to run again: an interrupted prune finishes.",
        _arg(
            "--keep-last",
            type=_common.flag(_options.prune_keep_last, "--keep-last", _options.parse_int),
            required=True,
            metavar="N",
            help="checkpoints to keep per namespace of each thread (0: delete them all)",
        ),
        _arg(
            "--idle-for",
            type=_duration,
            metavar="DURATION",
            help="only threads whose last activity is at least this long ago (7d, 12h, "
            "1d12h, 90m, 2w, 45s)",
        ),
        _arg("--dry-run", action="store_true", help="count what would go; delete nothing"),
        _json(
            "one JSON object: dry_run, keep_last, idle_for, threads, left_alone, "
            "checkpoints_before, checkpoints_removed, checkpoints_kept"
        ),
        _common.add_no_progress,
    )
    action(
        "delete",
        _change,
        "delete whole threads",
        "Delete these threads: every checkpoint of every namespace and every "
        "pending write. Asks first, on the terminal, unless --yes.",
        _arg("thread_ids", nargs="+", metavar="ID"),
        _arg("--yes", action="store_true", help="delete without asking"),
        _json("one JSON object: deleted (thread_id and checkpoints of each), not_found"),
    )
    for name, doing in (("pin", "Keep"), ("unpin", "Stop keeping")):
        action(
            name,
            _change,
            f"{doing.lower()} threads from ttl expiry",
            f"{doing} these threads from the savers' ttl expiry (a pinned thread never "
            "expires, whatever is written to it, until unpinned; unpinned, it expires ttl "
            "after the unpin or its last write). Two update_many per thread.",
            _arg("thread_ids", nargs="+", metavar="ID"),
            _json(f"one JSON object: {name}ned, not_found"),
        )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run `threads ACTION`; `main` reports what it raises. First what argparse cannot
    check (it checked each name on its own)."""
    _common.distinct_collections(args.checkpoints, args.writes, ("--checkpoints", "--writes"))
    if not args.uri:
        raise _common.UsageError("no server: pass --uri or set MONGODB_URI")
    if args.action == "delete" and not args.yes and not _can_ask():
        raise _common.UsageError(
            "delete asks before deleting, and stdin is not a terminal to ask on: pass "
            "--yes to delete without asking"
        )
    with _saver(args) as saver:
        code: int = args.act(saver, args, out, err)
        return code


@contextmanager
def _saver(args: argparse.Namespace) -> Iterator[MongoDBSaver]:
    client = _common.connect(args.uri, "server (--uri)", args.timeout)
    try:
        wanted = {"--checkpoints": args.checkpoints, "--writes": args.writes}
        _common.require_collections(client, args.uri, args.db, wanted, "--db")
        for option, name in wanted.items():
            _refuse_official_collection(client[args.db][name], option, args)
        serde = _serde.serializer(args.serde)
        saver = MongoDBSaver(client, args.db, args.checkpoints, args.writes, serde=serde)
        # Refuses collections it cannot read (another package's, a collation); no writes.
        saver.setup(create_indexes=False)
        yield saver
    finally:
        client.close()


def _refuse_official_collection(
    collection: Collection[Any], option: str, args: argparse.Namespace
) -> None:
    """The saver's refusal of `langgraph-checkpoint-mongodb`'s collections (which names
    Python arguments), told with this command's flags."""
    index = _queries.foreign_index(collection.index_information())
    if index is None:
        return
    uri = redact_uri(args.uri)
    raise _common.UsageError(
        f"collection {collection.name!r} ({option}) of database {args.db!r} at {uri} holds "
        f"langgraph-checkpoint-mongodb's documents (it has that saver's index {index!r}), "
        "which this command does not read: name this package's collections with "
        "--db, --checkpoints and --writes, or copy these threads into them with "
        f"`python -m langgraph.checkpoint.mongo copy-threads --from-mongodb URI --from-db "
        f"{args.db} --to URI --to-db OTHER_DB` (see its --help)"
    )


def _batches(items: Iterable[Any], size: int = BATCH) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def _ls(saver: MongoDBSaver, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    found = saver.list_threads(filter=dict(args.filter), limit=args.limit, before=args.after)
    now = datetime.now(timezone.utc)
    listed = 0
    for batch in _batches(found):
        counts = _views.counts(saver, [info.thread_id for info in batch])
        for info in batch:
            total = sum(counts.get(info.thread_id, {}).values())
            if args.json:
                entry = {
                    "thread_id": info.thread_id,
                    "checkpoints": total,
                    "last_activity": _ts(info),
                    "checkpoint_id": info.config["configurable"]["checkpoint_id"],
                    "metadata": info.metadata,
                    "pinned": info.pinned,
                }
                out.write(("[" if not listed else ",") + "\n  " + _views.json_text(entry))
            else:
                if not listed:
                    print(_ls_line("CHECKPOINTS", "LAST ACTIVITY", "PINNED", "THREAD"), file=out)
                age = _views.age(_ts(info), now)
                pinned = "yes" if info.pinned else "-"
                print(_ls_line(str(total), age, pinned, _views.shown(info.thread_id)), file=out)
            listed += 1
    if args.json:
        out.write("\n]\n" if listed else "[]\n")
    elif not listed:
        print(f"no threads in {_views.where(saver, args)}", file=err)
    return 0


def _ts(info: ThreadInfo) -> str:
    """When the latest checkpoint was written: its `ts`, else (encrypted, no key given)
    the time in its id."""
    if info.ts:
        return info.ts
    when = ops.checkpoint_id_time(info.config["configurable"]["checkpoint_id"])
    return "" if when is None else when.isoformat()


def _ls_line(checkpoints: str, last_activity: str, pinned: str, thread: str) -> str:
    """A row of `ls`: the thread id last, so that rows streamed in batches line up."""
    return f"{checkpoints:>11}  {last_activity:<36}  {pinned:<6}  {thread}"


def _show(saver: MongoDBSaver, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    thread_id: str = args.thread_id
    latest = saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    namespaces = _views.counts(saver, [thread_id]).get(thread_id, {})
    if latest is None and not namespaces:
        raise _common.NotFoundError(f"no thread {thread_id!r} in {_views.where(saver, args)}")
    asked = None
    if args.checkpoint is not None:
        asked = _views.state_at(saver, args, args.checkpoint_ns or "", args.checkpoint)
    elif args.checkpoint_ns is not None:
        raise _common.UsageError("--ns goes with --checkpoint: name the checkpoint to show")
    history = list(saver.list({"configurable": {"thread_id": thread_id}}, limit=args.history))
    state = None if latest is None else _inspect.load(saver, latest, thread_id)
    shown = {
        "thread_id": thread_id,
        "checkpoints": sum(namespaces.values()),
        "namespaces": namespaces,
        "pinned": bool(_views.run_core(saver, ops.thread_pinned(thread_id))),
        "latest": None if state is None else _views.state_json(state),
        "interrupts": [] if state is None else state.interrupts,
        "history": [_views.checkpoint_json(item) for item in history],
    }
    if asked is not None:
        shown["checkpoint"] = _views.state_json(asked)
    if latest is not None:
        shown["latest_stored"] = _stored_json(saver, latest)
    if args.json:
        print(_views.json_text(shown), file=out)
    else:
        _print_show(shown, out)
    return 0


_LARGEST_SHOWN = 5  # the latest checkpoint's largest channels `show` names


def _stored_json(saver: MongoDBSaver, latest: CheckpointTuple) -> dict[str, Any] | None:
    """The latest checkpoint's stored size and largest channels (None: deleted meanwhile)."""
    stored = _views.run_core(saver, ops.stored_size(ref_from_config(latest.config)))
    if stored is None:
        return None
    return {
        "bytes": stored.size,
        "largest_channels": [
            {"channel": channel, "bytes": size}
            for channel, size in stored.channels[:_LARGEST_SHOWN]
        ],
    }


def _print_show(shown: dict[str, Any], out: TextIO) -> None:
    now = datetime.now(timezone.utc)
    namespaces: dict[str, int] = shown["namespaces"]
    total: int = shown["checkpoints"]
    subgraphs = len(namespaces) - ("" in namespaces)
    split = f" ({namespaces.get('', 0)} root, the rest in {subgraphs} subgraph namespace(s))"
    print(
        f"thread {shown['thread_id']!r}: {total} checkpoints{split if subgraphs else ''}", file=out
    )
    if shown["pinned"]:
        print("pinned: kept from ttl expiry until `threads unpin`", file=out)
    if "checkpoint" in shown:
        _views.print_state("checkpoint", shown["checkpoint"], now, out)
    elif shown["latest"] is not None:
        _views.print_state("latest", shown["latest"], now, out)
    if shown.get("latest_stored") is not None:
        stored = shown["latest_stored"]
        largest = ", ".join(
            f"{item['channel']} {_views.size_text(item['bytes'])}"
            for item in stored["largest_channels"]
        )
        largest = f"; largest channels: {largest}" if largest else ""
        print(f"latest stored: {_views.size_text(stored['bytes'])}{largest}", file=out)
    print(f"history (newest first, {len(shown['history'])} of {total}):", file=out)
    rows = [("CHECKPOINT", "NAMESPACE", "STEP", "SOURCE", "CREATED", "WRITES")]
    for item in shown["history"]:
        rows.append(
            (
                item["checkpoint_id"],
                item["checkpoint_ns"] or '""',
                str("" if item["step"] is None else item["step"]),
                str(item["source"] or ""),
                _views.age(item["created"], now),
                str(item["pending_writes"]),
            )
        )
    _views.print_table(rows, {2, 5}, out)


def _prune(saver: MongoDBSaver, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    keep: int = args.keep_last
    now = datetime.now(timezone.utc)
    chosen: list[str] = []
    active = unreadable = 0
    for info in saver.list_threads():
        if args.idle_for is not None:
            when = _views.parse_time(info.ts)
            if when is None:
                unreadable += 1
                continue
            if now - when < args.idle_for:
                active += 1
                continue
        chosen.append(info.thread_id)
    show = not args.no_progress and err.isatty()
    before = after = 0
    with _common.Progress("prune", len(chosen), show, err, "checkpoints removed") as progress:
        for batch in _batches(chosen):
            counts = _views.counts(saver, batch)
            stored = sum(sum(c.values()) for c in counts.values())
            if args.dry_run:
                kept = sum(min(keep, n) for c in counts.values() for n in c.values())
            else:
                saver.prune(batch, keep_last=keep)
                kept = sum(sum(c.values()) for c in _views.counts(saver, batch).values())
            before += stored
            after += kept
            progress.advance(threads=len(batch), checkpoints=stored - kept)
    if args.json:
        pruned = {
            "dry_run": args.dry_run,
            "keep_last": keep,
            "idle_for": None if args.idle_for is None else str(args.idle_for),
            "threads": len(chosen),
            "left_alone": {"active": active, "unreadable_timestamp": unreadable},
            "checkpoints_before": before,
            "checkpoints_removed": before - after,
            "checkpoints_kept": after,
        }
        print(_views.json_text(pruned), file=out)
        return 0
    left = []
    if active:
        left.append(f"{active} active in the last {args.idle_for} left alone")
    if unreadable:
        left.append(f"{unreadable} without a readable timestamp left alone")
    scope = f"{len(chosen)} thread(s)" + (f" ({'; '.join(left)})" if left else "")
    if args.dry_run:
        print(
            f"dry run: would prune {scope} to {keep} checkpoint(s) per namespace: about "
            f"{before - after} of {before} checkpoints would go (a DeltaChannel's "
            "ancestors stay), nothing was deleted",
            file=out,
        )
    else:
        print(
            f"pruned {scope} to {keep} checkpoint(s) per namespace: {before - after} of "
            f"{before} checkpoints removed, with their pending writes; {after} kept",
            file=out,
        )
    return 0


def _change(saver: MongoDBSaver, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """`delete`, `pin`, `unpin`: each named thread found, said as it goes (an interrupted
    command says what it did); exit 1 when one was not found, or nothing was done."""
    thread_ids = list(dict.fromkeys(args.thread_ids))
    counts = _views.counts(saver, thread_ids)
    missing = [t for t in thread_ids if t not in counts]
    for thread_id in missing:
        print(_no_thread(saver, args, thread_id), file=err)
    found = {t: sum(counts[t].values()) for t in thread_ids if t in counts}
    done = []
    for entry, line in _changing(saver, args, found, err):
        done.append(entry)
        if not args.json:
            print(line, file=out)
    code = 1 if missing or not done else 0
    if args.json:
        key = "deleted" if args.action == "delete" else f"{args.action}ned"
        report: dict[str, Any] = {key: done, "not_found": missing}
        if code:  # as `main` reports any other error
            problems = [_no_thread(saver, args, t) for t in missing] or ["nothing deleted"]
            report.update(error="; ".join(problems), exit_code=code)
        print(_views.json_text(report), file=out)
    return code


def _no_thread(saver: MongoDBSaver, args: argparse.Namespace, thread_id: str) -> str:
    return f"no thread {thread_id!r} in {_views.where(saver, args)}"


def _changing(
    saver: MongoDBSaver, args: argparse.Namespace, found: dict[str, int], err: TextIO
) -> Iterator[tuple[Any, str]]:
    """Pin, unpin or delete (after asking, unless `--yes`) the threads `found`, yielding
    each one's JSON entry and line once done."""
    if args.action != "delete":
        pin = saver.pin_thread if args.action == "pin" else saver.unpin_thread
        for thread_id in found:
            pin(thread_id)
            yield thread_id, f"{args.action}ned {thread_id!r}"
        return
    if not found:
        return
    if not args.yes:
        listed = ", ".join(f"{t!r} ({n})" for t, n in found.items())
        print(
            f"delete {len(found)} thread(s), {sum(found.values())} checkpoints, from "
            f"{_views.where(saver, args)}: {listed}",
            file=err,
        )
        err.write("delete them? [y/N] ")
        err.flush()
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            print("nothing deleted", file=err)
            return
    for thread_id, checkpoints in found.items():
        saver.delete_thread(thread_id)
        entry = {"thread_id": thread_id, "checkpoints": checkpoints}
        yield entry, f"deleted {thread_id!r} ({checkpoints} checkpoints)"


def _can_ask() -> bool:
    return sys.stdin is not None and not sys.stdin.closed and sys.stdin.isatty()
