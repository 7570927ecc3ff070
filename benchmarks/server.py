"""The wire server in a process of its own.

The wire server (`langgraph.checkpoint.mongo.testing._wire`) is threaded; run in the
benchmark's process it would share the GIL with the clients being measured, so the mock's
work would be billed to the savers. `ServerProcess` starts it in a child process and
forwards the few public calls the benchmark uses (`uri`, `delay`, `reset()`, `count()`)
over a pipe.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from multiprocessing.connection import Connection
from pathlib import Path
from types import TracebackType
from typing import Any


def _serve(conn: Connection) -> None:
    from langgraph.checkpoint.mongo.testing._wire import WireServer

    with WireServer() as server:
        conn.send(server.uri)
        while True:
            request, argument = conn.recv()
            reply: Any = None
            if request == "delay":
                server.delay = float(argument)
            elif request == "reset":
                server.reset()
            elif request == "count":
                reply = server.count()
            elif request == "stop":
                conn.send(None)
                return
            conn.send(reply)


class ServerProcess:
    """A `WireServer` in a child process, with the same small control surface."""

    def __init__(self) -> None:
        self.uri = ""
        self._delay = 0.0
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None

    def start(self) -> ServerProcess:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), name="wire-server")
        self._process.daemon = True
        self._process.start()
        child.close()
        self._conn = parent
        self.uri = parent.recv()
        return self

    def stop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(EOFError, OSError):
                self._call("stop")
            self._conn.close()
            self._conn = None
        if self._process is not None:
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.kill()
            self._process = None

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _call(self, request: str, argument: Any = None) -> Any:
        if self._conn is None:
            raise RuntimeError("the server process is not running")
        self._conn.send((request, argument))
        return self._conn.recv()

    @property
    def delay(self) -> float:
        """Seconds the server sleeps before executing each counted command."""
        return self._delay

    @delay.setter
    def delay(self, value: float) -> None:
        self._call("delay", value)
        self._delay = value

    def reset(self) -> None:
        """Forget the commands counted so far."""
        self._call("reset")

    def cpu_seconds(self) -> float | None:
        """CPU time the server process has used so far (Linux only, else None)."""
        if self._process is None or self._process.pid is None:
            return None
        try:
            fields = Path(f"/proc/{self._process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def count(self) -> int:
        """Commands received since the last `reset()` (handshakes not counted)."""
        return int(self._call("count"))
