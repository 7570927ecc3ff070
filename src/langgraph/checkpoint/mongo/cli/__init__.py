"""`python -m langgraph.checkpoint.mongo COMMAND`: the parser of every command and `main`,
which runs one and turns what it raises into a line on stderr and an exit code.

Each command adds its own parser (`copy_threads.add_parser`, `threads.add_parser`) and
shares `_common`'s errors, flags and connection; neither imports the other.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from langgraph.checkpoint.mongo._drivers import __version__
from langgraph.checkpoint.mongo.cli import copy_threads, threads
from langgraph.checkpoint.mongo.cli._common import SetupError, UsageError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
        print(f"error: {type(exc).__name__}: {exc}", file=err)
        return 1
