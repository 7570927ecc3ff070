"""`python -m langgraph.checkpoint.mongo copy-threads`: copy threads from the official
MongoDB saver's collections or a SqliteSaver file into this package's collections."""

from __future__ import annotations

import argparse
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from pymongo import MongoClient

from langgraph.checkpoint.mongo import _options, migrate
from langgraph.checkpoint.mongo._base import DEFAULT_DB_NAME
from langgraph.checkpoint.mongo._codec import COMPRESSIONS
from langgraph.checkpoint.mongo.cli import _common
from langgraph.checkpoint.mongo.cli._common import Progress
from langgraph.checkpoint.mongo.migrate import ThreadCopy, ThreadStatus, ThreadVerification
from langgraph.checkpoint.mongo.sync import MongoDBSaver

DESCRIPTION = """\
Copy LangGraph threads into langgraph-checkpoint-mongo's collections: every checkpoint of
every namespace with its id, parent, metadata, channel versions and pending writes.
Running the same command again finishes an interrupted copy and duplicates nothing; a
thread the target already holds with other data is reported and left alone (see
--overwrite). A thread holding a value that this environment cannot restore exactly
(a type it cannot import) fails by name, and nothing of it is written.

exit codes: 0 every thread was copied (and, with --verify, verified); 1 a thread
conflicted, failed or differs, or any other error; 2 bad arguments (also: a URI that is
not one, a source database or collection that does not exist); 130 interrupted (Ctrl-C):
run the same command again to finish.
"""

EPILOG = """\
examples:
  # from langgraph-checkpoint-mongodb, into a new database of the same cluster
  python -m langgraph.checkpoint.mongo copy-threads \\
      --from-mongodb "$MONGODB_URI" --from-db checkpointing_db \\
      --to "$MONGODB_URI" --to-db langgraph_db --verify
  # from a SqliteSaver file (pip install "langgraph-checkpoint-mongo[sqlite]")
  python -m langgraph.checkpoint.mongo copy-threads --from-sqlite checkpoints.db \\
      --to "$MONGODB_URI" --thread user-42 --thread user-43 --dry-run
"""


def add_parser(commands: Any) -> None:
    """Add `copy-threads` to the `python -m langgraph.checkpoint.mongo` parser."""
    copy = commands.add_parser(
        "copy-threads",
        help="copy threads from langgraph-checkpoint-mongodb or SqliteSaver",
        usage="%(prog)s (--from-mongodb URI | --from-sqlite PATH) --to URI [options]",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = copy.add_argument_group("source (one of)")
    origin = source.add_mutually_exclusive_group(required=True)
    origin.add_argument(
        "--from-mongodb",
        metavar="URI",
        help="connection string of the database that langgraph-checkpoint-mongodb (0.3 to "
        "0.5) writes to; its collections are only read",
    )
    origin.add_argument(
        "--from-sqlite",
        metavar="PATH",
        type=Path,
        help="a SqliteSaver database file, opened read-only (needs the [sqlite] extra)",
    )
    _common.add_names(
        source,
        "--from-",
        "with --from-mongodb: the database name (default: %(default)s)",
        "with --from-mongodb: its checkpoint collection (default: %(default)s)",
        "with --from-mongodb: its writes collection (default: %(default)s)",
    )
    target = copy.add_argument_group("target")
    target.add_argument(
        "--to", required=True, metavar="URI", help="connection string of the target MongoDB"
    )
    _common.add_names(
        target,
        "--to-",
        "the target database (default: %(default)s); it must not be the source's "
        "collections: both packages use the same default names",
        "the target checkpoint collection (default: %(default)s)",
        "the target writes collection (default: %(default)s)",
    )
    target.add_argument(
        "--compression",
        choices=COMPRESSIONS,
        help="compress stored values of 1 KiB or more, as the saver's compression= does",
    )
    target.add_argument(
        "--ttl",
        type=_common.flag(_options.ttl, "--ttl", _options.parse_seconds),
        metavar="SECONDS",
        help="the ttl your savers use: copied threads get a fresh whole-thread TTL stamp",
    )
    _common.add_timeout(target, "a server (source or target)")
    what = copy.add_argument_group("what to do")
    what.add_argument(
        "--thread",
        action="append",
        dest="threads",
        metavar="ID",
        help="copy this thread (repeat for more); default: every thread of the source",
    )
    what.add_argument(
        "--dry-run",
        action="store_true",
        help="read and check everything, write nothing (not even indexes); report what "
        "would be copied",
    )
    what.add_argument(
        "--verify",
        action="store_true",
        help="after copying, compare source and target thread by thread (checkpoint ids, "
        "metadata, pending writes, latest state) and report any difference",
    )
    what.add_argument(
        "--overwrite",
        action="store_true",
        help="replace threads that the target holds with other data (default: report "
        "them as conflicts and leave them alone)",
    )
    what.add_argument(
        "--batch-size",
        type=_common.flag(_options.batch_size, "--batch-size", _options.parse_int),
        default=100,
        metavar="N",
        help="checkpoints read and written per round trip; memory holds about this many "
        "(default: %(default)s)",
    )
    _common.add_no_progress(what)
    copy.set_defaults(handler=run, parser=copy)


def _check_arguments(args: argparse.Namespace) -> None:
    """What argparse cannot check, before any connection is made."""
    same_db = args.from_mongodb == args.to and args.from_db == args.to_db  # never for sqlite
    targets = {args.to_checkpoints, args.to_writes}
    if same_db and {args.from_checkpoints, args.from_writes} & targets:
        raise _common.UsageError(
            "the source and the target are the same collections: both packages use the names "
            "'checkpoints' and 'checkpoint_writes' by default, so copy into another database "
            "(--to-db) or other collections (--to-checkpoints, --to-writes)"
        )
    if args.from_sqlite is not None and not args.from_sqlite.is_file():
        raise _common.UsageError(f"--from-sqlite {str(args.from_sqlite)!r}: no such file")
    _common.distinct_collections(
        args.to_checkpoints, args.to_writes, ("--to-checkpoints", "--to-writes")
    )


@contextmanager
def _source(args: argparse.Namespace, err: TextIO) -> Iterator[migrate.Source]:
    if args.from_mongodb is not None:
        client = _common.connect(args.from_mongodb, "source (--from-mongodb)", args.timeout)
        try:
            # Refuse a source database without the official saver's collections.
            wanted = {
                "--from-checkpoints": args.from_checkpoints,
                "--from-writes": args.from_writes,
            }
            check = f"--from-db (langgraph-checkpoint-mongodb's default is {DEFAULT_DB_NAME!r})"
            _common.require_collections(client, args.from_mongodb, args.from_db, wanted, check)
            # This package's documents (a composite `_id`), not the official saver's: both
            # use the same default names.
            doc = client[args.from_db][args.from_checkpoints].find_one({}, {"_id": 1})
            if doc is not None and isinstance(doc["_id"], Mapping):
                yield _our_collections(client, args, err)
                return
            yield migrate.OfficialMongoDBSource(
                client[args.from_db],
                args.from_checkpoints,
                args.from_writes,
                batch_size=args.batch_size,
            )
        finally:
            client.close()
        return
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
    except ImportError as exc:
        raise _common.SetupError(
            "--from-sqlite needs langgraph-checkpoint-sqlite: "
            'pip install "langgraph-checkpoint-mongo[sqlite]"'
        ) from exc
    path: Path = args.from_sqlite
    # Read-only: the copy never changes its source.
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    try:
        _require_sqlite_saver_tables(conn, path)
        yield SqliteSaver(conn)
    finally:
        conn.close()


def _our_collections(
    client: MongoClient[Any], args: argparse.Namespace, err: TextIO
) -> migrate.Source:
    """This package's collections as the source, read through its saver (no index made)."""
    where = f"{args.from_db}.{args.from_checkpoints}"
    print(
        f"note: {where} holds langgraph-checkpoint-mongo's own documents, not "
        "langgraph-checkpoint-mongodb's: copying them through this package's saver",
        file=err,
    )
    saver = MongoDBSaver(client, args.from_db, args.from_checkpoints, args.from_writes)
    saver.setup(create_indexes=False)
    return saver


def _require_sqlite_saver_tables(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a file that is not a SqliteSaver database before `SqliteSaver` tries to
    create its tables in it (read-only: `attempt to write a readonly database`)."""
    try:
        found = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.DatabaseError as exc:  # not SQLite at all
        raise _common.SetupError(
            f"--from-sqlite {str(path)!r} is not a SQLite database: {exc}"
        ) from None
    missing = sorted({"checkpoints", "writes"} - {name for (name,) in found})
    if missing:
        raise _common.SetupError(
            f"--from-sqlite {str(path)!r} is not a SqliteSaver database: it has no table "
            f"{' or '.join(map(repr, missing))}"
        )


@contextmanager
def _target(args: argparse.Namespace) -> Iterator[MongoDBSaver]:
    client = _common.connect(args.to, "target (--to)", args.timeout)
    try:
        saver = MongoDBSaver(
            client,
            args.to_db,
            args.to_checkpoints,
            args.to_writes,
            compression=args.compression,
            ttl=args.ttl,
        )
        if not args.dry_run:
            saver.setup()
        yield saver
    finally:
        client.close()


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    _check_arguments(args)
    show = not args.no_progress and err.isatty()
    with _source(args, err) as source, _target(args) as target:
        threads = args.threads or migrate.source_thread_ids(source)
        with Progress("copy", len(threads), show, err, "checkpoints") as progress:
            report = migrate.copy_threads(
                source,
                target,
                threads,
                overwrite=args.overwrite,
                dry_run=args.dry_run,
                batch_size=args.batch_size,
                on_progress=lambda _thread_id, count: progress.advance(checkpoints=count),
                on_thread=_noting(progress),
            )
        print(("dry run: " if args.dry_run else "") + report.summary(), file=out)
        if not args.verify or args.dry_run:
            return 0 if report.ok else 1
        with Progress("verify", len(threads), show, err, "checkpoints") as progress:
            verified = migrate.verify_threads(
                source, target, threads, batch_size=args.batch_size, on_thread=_noting(progress)
            )
        print("verify: " + verified.summary(), file=out)
        return 0 if report.ok and verified.ok else 1


def _noting(progress: Progress) -> Callable[[ThreadCopy | ThreadVerification], None]:
    """Notes each thread's problem, if any, above the bar."""

    def done(result: ThreadCopy | ThreadVerification) -> None:
        checkpoints = 0
        if isinstance(result, ThreadVerification):
            checkpoints = result.checkpoints
            if result.differences:
                progress.note(f"differs: {result.thread_id!r} ({len(result.differences)})")
        elif result.status in (ThreadStatus.CONFLICT, ThreadStatus.FAILED, ThreadStatus.MISSING):
            progress.note(f"{result.status.value}: {result.thread_id!r}: {result.detail}")
        progress.advance(threads=1, checkpoints=checkpoints)

    return done
