"""`python -m langgraph.checkpoint.mongo copy-threads`: copy threads from the official
MongoDB saver's collections or a SqliteSaver file into this package's collections."""

from __future__ import annotations

import argparse
import math
import sqlite3
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO, TypeVar

from pymongo import MongoClient
from pymongo.errors import InvalidURI, OperationFailure, ServerSelectionTimeoutError

from langgraph.checkpoint.mongo import _options
from langgraph.checkpoint.mongo._base import (
    DEFAULT_CHECKPOINT_COLLECTION,
    DEFAULT_DB_NAME,
    DEFAULT_WRITES_COLLECTION,
)
from langgraph.checkpoint.mongo._codec import COMPRESSIONS
from langgraph.checkpoint.mongo._drivers import DRIVER_INFO, __version__
from langgraph.checkpoint.mongo._options import redact_uri
from langgraph.checkpoint.mongo.errors import AUTHENTICATION_FAILED, server_message
from langgraph.checkpoint.mongo.migrate import (
    OfficialMongoDBSource,
    Source,
    ThreadCopy,
    ThreadStatus,
    ThreadVerification,
    copy_threads,
    source_thread_ids,
    verify_threads,
)
from langgraph.checkpoint.mongo.sync import MongoDBSaver

T = TypeVar("T")

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


# Seconds to wait for a server to answer before saying which one did not.
DEFAULT_TIMEOUT = 10.0
MIN_TIMEOUT = 0.1


class UsageError(Exception):
    """A problem with the arguments, told as one line (exit code 2)."""


class SetupError(Exception):
    """A problem with the environment or a connection, told as one line (exit code 1)."""


def _flag(parse: Callable[[str, str], T], flag: str) -> Callable[[str], T]:
    """An argparse `type` for `flag`: `parse` (a parser and validator of `_options`, the
    saver's own check), its refusal told as argparse tells one (`argument --ttl: must be
    ...`, exit code 2)."""

    def checked(text: str) -> T:
        try:
            return parse(text, flag)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(getattr(exc, "problem", str(exc))) from None

    return checked


def _ttl(text: str, flag: str) -> timedelta | None:
    return _options.ttl(_options.parse_seconds(text, flag), flag)


def _batch_size(text: str, flag: str) -> int:
    return _options.batch_size(_options.parse_int(text, flag), flag)


def _timeout(text: str, flag: str) -> float:
    """Seconds to wait for a server: at least a tenth of a second, and finite."""
    seconds = _options.parse_seconds(text, flag)
    if not MIN_TIMEOUT <= seconds < math.inf:  # NaN compares false
        raise _options.OptionValueError(
            flag, f"must be a number of seconds of at least {MIN_TIMEOUT:g}, got {text}"
        )
    return seconds


def _add_names(group: Any, side: str, *helps: str) -> None:
    """`--<side>-db`, `--<side>-checkpoints` and `--<side>-writes`, checked as the saver
    checks its `db_name` and collection names."""
    names = [
        ("db", DEFAULT_DB_NAME, _options.db_name),
        ("checkpoints", DEFAULT_CHECKPOINT_COLLECTION, _options.collection_name),
        ("writes", DEFAULT_WRITES_COLLECTION, _options.collection_name),
    ]
    for (suffix, default, check), help in zip(names, helps, strict=True):
        flag = f"--{side}-{suffix}"
        group.add_argument(
            flag, default=default, type=_flag(check, flag), metavar="NAME", help=help
        )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m langgraph.checkpoint.mongo",
        description="Tools for langgraph-checkpoint-mongo.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
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
    _add_names(
        source,
        "from",
        "with --from-mongodb: the database name (default: %(default)s)",
        "with --from-mongodb: its checkpoint collection (default: %(default)s)",
        "with --from-mongodb: its writes collection (default: %(default)s)",
    )
    target = copy.add_argument_group("target")
    target.add_argument(
        "--to", required=True, metavar="URI", help="connection string of the target MongoDB"
    )
    _add_names(
        target,
        "to",
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
        type=_flag(_ttl, "--ttl"),
        metavar="SECONDS",
        help="the ttl your savers use: copied threads get a fresh whole-thread TTL stamp",
    )
    target.add_argument(
        "--timeout",
        type=_flag(_timeout, "--timeout"),
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help="how long to wait for a server (source or target) to answer before giving up "
        "and naming it (default: %(default)g)",
    )
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
        type=_flag(_batch_size, "--batch-size"),
        default=100,
        metavar="N",
        help="checkpoints read and written per round trip; memory holds about this many "
        "(default: %(default)s)",
    )
    what.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (there is none anyway when stderr is not a terminal or "
        "tqdm is not installed)",
    )
    copy.set_defaults(handler=_copy_threads, parser=copy)
    # Imported here: the threads command uses this module's conventions (errors, client).
    from langgraph.checkpoint.mongo import _threads_cli

    _threads_cli.add_parser(commands)
    return parser


def _same_collections(args: argparse.Namespace) -> bool:
    return bool(args.from_mongodb == args.to and args.from_db == args.to_db) and (
        args.from_checkpoints in (args.to_checkpoints, args.to_writes)
        or args.from_writes in (args.to_checkpoints, args.to_writes)
    )


def _check_arguments(args: argparse.Namespace) -> None:
    """What argparse cannot check, before any connection is made."""
    if args.from_mongodb is not None and _same_collections(args):
        raise UsageError(
            "the source and the target are the same collections: both packages use "
            "the names 'checkpoints' and 'checkpoint_writes' by default, so copy into "
            "another database (--to-db) or other collections (--to-checkpoints, "
            "--to-writes)"
        )
    if args.from_sqlite is not None and not args.from_sqlite.is_file():
        raise UsageError(f"--from-sqlite {str(args.from_sqlite)!r}: no such file")
    _distinct_collections(args.to_checkpoints, args.to_writes, ("--to-checkpoints", "--to-writes"))


def _distinct_collections(checkpoints: str, writes: str, flags: tuple[str, str]) -> None:
    """The savers' check that the two collections differ (`_options.collection_names`),
    refused as bad arguments naming the flags, before any connection is made."""
    try:
        _options.collection_names(checkpoints, writes, flags)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _client(uri: str, what: str, timeout: float) -> MongoClient[dict[str, Any]]:
    """A client that has reached its server within `timeout` seconds; a `uri` PyMongo
    cannot read (`http://...`, a bad port) is a bad argument."""
    try:
        client: MongoClient[dict[str, Any]] = MongoClient(
            uri, driver=DRIVER_INFO, serverSelectionTimeoutMS=int(timeout * 1000)
        )
    except (InvalidURI, ValueError) as exc:
        raise UsageError(
            f"the {what} {redact_uri(uri)!r} is not a MongoDB connection string: {exc}"
        ) from None
    try:
        client.admin.command("buildInfo")
    except ServerSelectionTimeoutError as exc:
        client.close()
        raise SetupError(
            f"cannot reach the {what} at {redact_uri(uri)}: no server answered within "
            f"{timeout:g} s (--timeout): {exc}"
        ) from None
    except OperationFailure as exc:
        client.close()
        if exc.code != AUTHENTICATION_FAILED:
            raise
        raise SetupError(
            f"the {what} at {redact_uri(uri)} refused the login ({server_message(exc)}): "
            "check the user name, password and authSource in that URI"
        ) from None
    return client


@contextmanager
def _source(args: argparse.Namespace, err: TextIO) -> Iterator[Source]:
    if args.from_mongodb is not None:
        client = _client(args.from_mongodb, "source (--from-mongodb)", args.timeout)
        try:
            _require_official_collections(client, args)
            if _holds_our_documents(client[args.from_db][args.from_checkpoints]):
                yield _our_collections(client, args, err)
                return
            yield OfficialMongoDBSource(
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
        raise SetupError(
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


def _holds_our_documents(collection: Any) -> bool:
    """Whether a source collection holds this package's documents (a composite `_id`),
    not the official saver's: both use the same default names."""
    doc = collection.find_one({}, {"_id": 1})
    return doc is not None and isinstance(doc["_id"], Mapping)


def _our_collections(client: MongoClient[Any], args: argparse.Namespace, err: TextIO) -> Source:
    """This package's collections as the source, read through its saver (set up with no
    index created: the source is only read)."""
    where = f"{args.from_db}.{args.from_checkpoints}"
    print(
        f"note: {where} holds langgraph-checkpoint-mongo's own documents, not "
        "langgraph-checkpoint-mongodb's: copying them through this package's saver",
        file=err,
    )
    saver = MongoDBSaver(client, args.from_db, args.from_checkpoints, args.from_writes)
    saver.setup(create_indexes=False)
    return saver


def _require_official_collections(client: MongoClient[Any], args: argparse.Namespace) -> None:
    """Refuse a source database without the official saver's collections."""
    wanted = {"--from-checkpoints": args.from_checkpoints, "--from-writes": args.from_writes}
    check = f"--from-db (langgraph-checkpoint-mongodb's default is {DEFAULT_DB_NAME!r})"
    require_collections(client, args.from_mongodb, args.from_db, wanted, check)


# Databases every server has, never the one a user means.
_SERVER_DATABASES = frozenset({"admin", "config", "local"})


def require_collections(
    client: MongoClient[Any], uri: str, db: str, wanted: Mapping[str, str], check: str
) -> None:
    """Refuse a database or a collection (`wanted`: flag to name) that does not exist,
    naming it and what does exist, as bad arguments: a misspelt name reads as empty, and
    a command on it would report success having done nothing. `check` says which flag to
    check when the database itself is missing."""
    names = set(client[db].list_collection_names())
    missing = {flag: name for flag, name in wanted.items() if name not in names}
    if not missing:
        return
    where = f"database {db!r} at {redact_uri(uri)}"
    if not names:
        databases = sorted(set(client.list_database_names()) - _SERVER_DATABASES)
        raise UsageError(
            f"{where} has no collections (it does not exist): check {check}; the databases "
            f"there: {databases or 'none'}"
        )
    lacking = ", ".join(f"{name!r} ({flag})" for flag, name in missing.items())
    raise UsageError(f"{where} has no collection {lacking}; its collections: {sorted(names)}")


def _require_sqlite_saver_tables(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a file that is not a SqliteSaver database before `SqliteSaver` tries to
    create its tables in it (which read-only fails with `attempt to write a readonly
    database`)."""
    try:
        found = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.DatabaseError as exc:  # not SQLite at all
        raise SetupError(f"--from-sqlite {str(path)!r} is not a SQLite database: {exc}") from None
    missing = sorted({"checkpoints", "writes"} - {name for (name,) in found})
    if missing:
        raise SetupError(
            f"--from-sqlite {str(path)!r} is not a SqliteSaver database: it has no table "
            f"{' or '.join(map(repr, missing))}"
        )


@contextmanager
def _target(args: argparse.Namespace) -> Iterator[MongoDBSaver]:
    client = _client(args.to, "target (--to)", args.timeout)
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


class Progress:
    """A tqdm bar over threads, with checkpoints done, rate and time left; problems are
    printed above it as they happen."""

    def __init__(self, what: str, total: int, show: bool, out: TextIO) -> None:
        self.out = out
        self.checkpoints = 0
        self.bar: Any = None
        if show:
            try:
                from tqdm import tqdm
            except ImportError:  # the `cli` extra brings it; without, no bar
                return
            self.bar = tqdm(total=total, desc=what, unit="thread", file=out, dynamic_ncols=True)

    def checkpoints_done(self, thread_id: str, count: int) -> None:
        self.checkpoints += count
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.checkpoints} checkpoints", refresh=False)

    def note(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=self.out)
        else:
            print(line, file=self.out)

    def thread_done(self, result: ThreadCopy | ThreadVerification) -> None:
        if isinstance(result, ThreadVerification):
            self.checkpoints_done(result.thread_id, result.checkpoints)
            if result.differences:
                self.note(f"differs: {result.thread_id!r} ({len(result.differences)})")
        elif result.status in (ThreadStatus.CONFLICT, ThreadStatus.FAILED, ThreadStatus.MISSING):
            self.note(f"{result.status.value}: {result.thread_id!r}: {result.detail}")
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _copy_threads(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    _check_arguments(args)
    show = not args.no_progress and err.isatty()
    with _source(args, err) as source, _target(args) as target:
        threads = args.threads or source_thread_ids(source)
        with _closing(Progress("copy", len(threads), show, err)) as progress:
            report = copy_threads(
                source,
                target,
                threads,
                overwrite=args.overwrite,
                dry_run=args.dry_run,
                batch_size=args.batch_size,
                on_progress=progress.checkpoints_done,
                on_thread=progress.thread_done,
            )
        print(("dry run: " if args.dry_run else "") + report.summary(), file=out)
        if not args.verify or args.dry_run:
            return 0 if report.ok else 1
        with _closing(Progress("verify", len(threads), show, err)) as progress:
            verified = verify_threads(
                source, target, threads, batch_size=args.batch_size, on_thread=progress.thread_done
            )
        print("verify: " + verified.summary(), file=out)
        return 0 if report.ok and verified.ok else 1


@contextmanager
def _closing(progress: Progress) -> Iterator[Progress]:
    try:
        yield progress
    finally:
        progress.close()


def main(
    argv: Sequence[str] | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    args, unknown = _parser().parse_known_args(argv)
    if unknown:  # told with the usage of the command they were given to, not the root's
        args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        handler: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.handler
        return handler(args, out, err)
    except KeyboardInterrupt:
        print(
            "\ninterrupted: nothing is half-written; run the same command again to finish",
            file=err,
        )
        return 130
    except UsageError as exc:
        print(f"error: {exc}", file=err)
        return 2
    except SetupError as exc:
        print(f"error: {exc}", file=err)
        return 1
    except Exception as exc:  # any failure: one line (drivers name the server or document)
        print(f"error: {type(exc).__name__}: {server_message(exc)}", file=err)
        return 1
