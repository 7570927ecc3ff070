"""`python -m langgraph.checkpoint.mongo.testing serve`: the test suite's stand-in for a
MongoDB server, on 127.0.0.1, for trying the `threads` and `copy-threads` commands and an
application without MongoDB.

It is the wire server the suite's `wire-*` backends run (`_wire`): the real drivers talk
to it over a socket, and every command runs on mongomock with the `testing` module's fixes.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TextIO

from langgraph.checkpoint.mongo import _options

DEFAULT_PORT = 27017

# How often a running server forgets the command names it counts for the test suite, so
# that a server left running does not grow.
_FORGET_EVERY = 60.0

# Said in the startup line, `--help` and the docs.
NOT_FOR_DATA = "for trying and testing only: data in memory only, not for data you keep"

DESCRIPTION = """\
Serve a stand-in for MongoDB on 127.0.0.1 (this machine only): the in-memory mongomock
behind MongoDB's wire protocol, as langgraph-checkpoint-mongo's own test suite uses it.
Point MONGODB_URI, the threads and copy-threads commands or your application at the
address it prints. Ctrl-C (or SIGTERM) stops it.

For trying and testing only, not for data you keep: the data lives in memory and is gone
when it stops, and it serves only the commands the savers, the CLI and the drivers send
(any other fails with CommandNotFound).

exit codes: 0 stopped by Ctrl-C or SIGTERM; 1 the port cannot be listened on (in use);
2 bad arguments.
"""

EPILOG = """\
example:
  python -m langgraph.checkpoint.mongo.testing serve --port 27017 &
  export MONGODB_URI="mongodb://127.0.0.1:27017/?directConnection=true"
  python -m langgraph.checkpoint.mongo threads ls
"""


def _port(text: str) -> int:
    """`--port`: a TCP port, or 0 for any free one."""
    try:
        port = _options.parse_int(text, "--port")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(getattr(exc, "problem", str(exc))) from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be from 0 to 65535, got {text}")
    return port


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m langgraph.checkpoint.mongo.testing",
        description="Stand-ins for a MongoDB server, for trying and testing.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="serve a MongoDB stand-in on 127.0.0.1 (in memory, for trying and testing)",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    serve.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        metavar="PORT",
        help="the port on 127.0.0.1 (default: %(default)s, MongoDB's; 0: any free port)",
    )
    return parser


def main(
    argv: Sequence[str] | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    args = _parser().parse_args(argv)
    try:
        from langgraph.checkpoint.mongo.testing._wire import WireServer
    except ImportError as exc:
        print(
            f"error: serve needs the testing extra ({exc}): "
            'pip install "langgraph-checkpoint-mongo[testing]"',
            file=err,
        )
        return 1
    stop = threading.Event()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    server = WireServer(port=args.port)
    try:
        server.start()
    except OSError as exc:
        print(
            f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc} "
            "(is a MongoDB or another serve running there? --port 0 takes a free port)",
            file=err,
        )
        return 1
    try:
        print(f"serving a MongoDB stand-in at {server.uri} ({NOT_FOR_DATA})", file=out)
        print(f'  export MONGODB_URI="{server.uri}"', file=out)
        print("Ctrl-C stops it.", file=out, flush=True)
        while not stop.wait(_FORGET_EVERY):
            server.reset()
    finally:
        server.stop()
    print("stopped; the data it held is gone", file=out, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
