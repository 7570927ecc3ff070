"""`python -m langgraph.checkpoint.mongo COMMAND`: every command's parser, and `main`, which
runs one and turns what it raises into a line on stderr and an exit code. As a Unix tool,
output cut short by a closed pipe (`threads ls | head -1`) ends quietly with exit code 0;
with `--json` an error is also a JSON object on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from typing import TextIO

from langgraph.checkpoint.mongo._drivers import __version__
from langgraph.checkpoint.mongo.cli import _common, copy_threads, threads
from langgraph.checkpoint.mongo.errors import server_message


def _parser() -> argparse.ArgumentParser:
    parser = _common.Parser(
        prog="python -m langgraph.checkpoint.mongo",
        description="Tools for langgraph-checkpoint-mongo.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    copy_threads.add_parser(commands)
    threads.add_parser(commands)
    return parser


def main(
    argv: Sequence[str] | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv
    try:
        args, unknown = _parser().parse_known_args(argv)
        if unknown:  # told with the usage of the command they were given to, not the root's
            args.parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    except _common.Refused as exc:  # argparse printed the usage and the error on stderr
        if as_json and exc.code == 2:
            _json_error(out, exc.problem, 2)
        raise
    try:
        code: int = args.handler(args, out, err)
        out.flush()  # a closed pipe fails here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        return _pipe_closed(out)
    except KeyboardInterrupt:
        print(
            "\ninterrupted: nothing is half-written; run the same command again to finish", file=err
        )
        return 130
    except _common.UsageError as exc:
        return _failed(out, err, str(exc), 2, as_json)
    except (_common.SetupError, _common.NotFoundError) as exc:
        return _failed(out, err, str(exc), 1, as_json)
    except Exception as exc:  # any failure: one line (drivers name the server or document)
        return _failed(out, err, f"{type(exc).__name__}: {server_message(exc)}", 1, as_json)


def _failed(out: TextIO, err: TextIO, problem: str, code: int, as_json: bool) -> int:
    print(f"error: {problem}", file=err)
    if as_json:
        _json_error(out, problem, code)
    return code


def _json_error(out: TextIO, problem: str, code: int) -> None:
    try:
        print(json.dumps({"error": problem, "exit_code": code}, ensure_ascii=False), file=out)
        out.flush()
    except BrokenPipeError:
        _pipe_closed(out)


def _pipe_closed(out: TextIO) -> int:
    """The reader of stdout went away (`| head`): write nothing more, and keep the
    interpreter's last flush at exit from failing (a test's StringIO has no file)."""
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    return 0
