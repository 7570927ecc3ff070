"""What every command shares: its errors, flags checked by the saver's own validators, the
connection, the check that a database and its collections exist, and the progress bar."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TextIO, TypeVar

from pymongo import MongoClient
from pymongo.errors import InvalidURI, OperationFailure, ServerSelectionTimeoutError

from langgraph.checkpoint.mongo import _options
from langgraph.checkpoint.mongo._base import (
    DEFAULT_CHECKPOINT_COLLECTION,
    DEFAULT_DB_NAME,
    DEFAULT_WRITES_COLLECTION,
)
from langgraph.checkpoint.mongo._drivers import DRIVER_INFO
from langgraph.checkpoint.mongo._options import redact_uri
from langgraph.checkpoint.mongo.errors import AUTHENTICATION_FAILED, server_message

T = TypeVar("T")

DEFAULT_TIMEOUT = 10.0
MIN_TIMEOUT = 0.1

_SERVER_DATABASES = frozenset({"admin", "config", "local"})  # every server's, never the one meant


class Parser(argparse.ArgumentParser):
    """argparse's parser without abbreviated flags (`--checkpoint` is not `--checkpoints`),
    whose refusals raise `Refused`, which `main` also reports as JSON."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            self._print_message(message, sys.stderr)
        raise Refused(status, (message or "").strip())


class Refused(SystemExit):
    """argparse ended the command (`--help`: 0; bad arguments: 2), having printed why;
    `problem` is its error line."""

    def __init__(self, code: int, problem: str) -> None:
        super().__init__(code)
        self.problem = problem


class NotFoundError(Exception):
    """What a command was asked about does not exist, told as one line (exit code 1)."""


class UsageError(Exception):
    """A problem with the arguments, told as one line (exit code 2)."""


class SetupError(Exception):
    """A problem with the environment or a connection, told as one line (exit code 1)."""


def flag(
    check: Callable[[Any, str], T], name: str, parse: Callable[[str, str], Any] = lambda t, _: t
) -> Callable[[str], T]:
    """An argparse `type` for the flag `name`: `check`, a validator of `_options` (the saver's
    own check), of what `parse` reads; a refusal told as argparse tells one (exit code 2)."""

    def checked(text: str) -> T:
        try:
            return check(parse(text, name), name)
        except (TypeError, ValueError) as exc:
            raise argparse.ArgumentTypeError(getattr(exc, "problem", str(exc))) from None

    return checked


def add_names(group: Any, prefix: str, *helps: str) -> None:
    """`<prefix>db`, `<prefix>checkpoints`, `<prefix>writes`, checked as the saver checks them."""
    names = [
        ("db", DEFAULT_DB_NAME, _options.db_name),
        ("checkpoints", DEFAULT_CHECKPOINT_COLLECTION, _options.collection_name),
        ("writes", DEFAULT_WRITES_COLLECTION, _options.collection_name),
    ]
    for (suffix, default, check), help in zip(names, helps, strict=True):
        option = prefix + suffix
        group.add_argument(
            option, default=default, type=flag(check, option), metavar="NAME", help=help
        )


def add_no_progress(group: Any) -> None:
    group.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (there is none anyway when stderr is not a terminal or "
        "tqdm is not installed)",
    )


def add_timeout(group: Any, servers: str) -> None:
    group.add_argument(
        "--timeout",
        type=flag(_timeout, "--timeout"),
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"how long to wait for {servers} to answer before giving up and naming it "
        "(default: %(default)g)",
    )


def _timeout(text: str, name: str) -> float:
    seconds = _options.parse_seconds(text, name)
    if not MIN_TIMEOUT <= seconds < math.inf:  # NaN compares false
        raise _options.OptionValueError(
            name, f"must be a number of seconds of at least {MIN_TIMEOUT:g}, got {text}"
        )
    return seconds


def distinct_collections(checkpoints: str, writes: str, flags: tuple[str, str]) -> None:
    """The savers' check that the two collections differ, as bad arguments naming `flags`."""
    try:
        _options.collection_names(checkpoints, writes, flags)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def connect(uri: str, what: str, seconds: float) -> MongoClient[dict[str, Any]]:
    """A client that has reached its server within `seconds`; a `uri` PyMongo cannot
    read (`http://...`, a bad port) is a bad argument."""
    try:
        connected: MongoClient[dict[str, Any]] = MongoClient(
            uri, driver=DRIVER_INFO, serverSelectionTimeoutMS=int(seconds * 1000)
        )
    except (InvalidURI, ValueError) as exc:
        raise UsageError(
            f"the {what} {redact_uri(uri)!r} is not a MongoDB connection string: {exc}"
        ) from None
    try:
        connected.admin.command("buildInfo")
    except ServerSelectionTimeoutError as exc:
        connected.close()
        raise SetupError(
            f"cannot reach the {what} at {redact_uri(uri)}: no server answered within "
            f"{seconds:g} s (--timeout): {exc}"
        ) from None
    except OperationFailure as exc:
        connected.close()
        if exc.code != AUTHENTICATION_FAILED:
            raise
        raise SetupError(
            f"the {what} at {redact_uri(uri)} refused the login ({server_message(exc)}): "
            "check the user name, password and authSource in that URI"
        ) from None
    return connected


def require_collections(
    client: MongoClient[Any], uri: str, db: str, wanted: Mapping[str, str], check: str
) -> None:
    """Refuse a missing database or collection (`wanted`: flag to name; `check`: the flag
    for the database) as bad arguments: a misspelt name reads as empty, and a command on
    it would report success having done nothing."""
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


class Progress(contextlib.AbstractContextManager["Progress"]):
    """A tqdm bar over threads (when `show` and tqdm is installed) with a running count
    of checkpoints (`counted`: what they are), and notes printed above it."""

    def __init__(self, what: str, total: int, show: bool, out: TextIO, counted: str) -> None:
        self.out = out
        self.counted = counted
        self.checkpoints = 0
        self.bar: Any = None
        if show:
            try:
                from tqdm import tqdm
            except ImportError:  # the `cli` extra brings it; without, no bar
                return
            self.bar = tqdm(total=total, desc=what, unit="thread", file=out, dynamic_ncols=True)

    def advance(self, threads: int = 0, checkpoints: int = 0) -> None:
        self.checkpoints += checkpoints
        if self.bar is not None:
            self.bar.set_postfix_str(f"{self.checkpoints} {self.counted}", refresh=False)
            if threads:
                self.bar.update(threads)

    def note(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=self.out)
        else:
            print(line, file=self.out)

    def __exit__(self, *exc_info: object) -> None:
        if self.bar is not None:
            self.bar.close()
