"""A loopback MongoDB wire-protocol server backed by mongomock, for tests and trials.

`WireServer` listens on 127.0.0.1 only and lets the real drivers (PyMongo, Motor) talk to it
over TCP; every command runs on an in-process `mongomock.MongoClient` (`server.mock`). Modules:
`framing` (the messages), `cursors` (batches, `getMore`, `killCursors`), `commands` (what each
command does) and this one (sockets, threads, counting, delay, holding, faults). The suite's
`wire-*` backends and the benchmarks run it on a free port; `testing serve` on a named one.

Not mockupdb: it runs every responder under one server-wide lock, so a sleeping responder
serialises all connections, and its `stop()` waits up to 1 s for a `select` timeout.

Here: one accept thread (woken for shutdown through a socket pair) and one daemon thread per
connection. mongomock is not thread-safe, so all work on it runs under `self.lock`; the `delay`
sleep, BSON encoding and socket I/O happen outside it, so N concurrent commands with delay d wait
about d, not N*d. `stop()` interrupts `delay` and `hold` sleeps and hangs up on commands in flight
(a connection error, as when a server goes away). Touching `mock` directly should hold `lock`.
"""

from __future__ import annotations

import contextlib
import itertools
import selectors
import socket
import threading
from collections.abc import Callable
from typing import Any

import bson
import mongomock

from langgraph.checkpoint.mongo import testing

from . import framing
from .commands import CHATTER, Commands
from .errors import CommandError, error_reply

__all__ = ["WireServer"]


class _HangUpError(Exception):
    """The server is stopping: close the connection instead of replying."""


class WireServer:
    """A MongoDB-speaking server on 127.0.0.1 that executes on mongomock.

    Use as a context manager or call `start()` / `stop()`; `uri` and `port` (the one
    asked for, or a free one when 0) are valid after `start()`. `commands` lists the
    names of the commands received, in order, except handshakes and session cleanup;
    `delay` seconds are slept (outside the execution lock) before each of them is
    executed, and then whatever `hold` says for it. Both happen after the command
    arrived and before it runs: a client that gives up on it meanwhile (a cancelled task,
    a timeout) does not stop it from running, as on a real server. `release()` ends the
    holds at once, `settle()` waits until every command received has run.
    """

    def __init__(self, *, delay: float = 0.0, port: int = 0) -> None:
        self.delay: float = delay
        #: Fault injection: called with each counted command's name and body before it
        #: runs; returning True hangs up on it unexecuted, as a network failure would.
        self.fault: Callable[[str, dict[str, Any]], bool] | None = None
        #: Holding one command: called with each counted command's name and body when it
        #: arrives; the command then waits that many seconds before it runs.
        self.hold: Callable[[str, dict[str, Any]], float] | None = None
        # With the testing module's mongomock fixes, as the in-process backend (also when
        # the benchmarks run this server in a process of their own).
        self.mock: mongomock.MongoClient[dict[str, Any]] = testing.client()
        self.commands: list[str] = []
        self.uri: str = ""
        self.host: str = "127.0.0.1"
        self.port: int = port
        #: Serialises every operation on `mock`.
        self.lock: threading.Lock = threading.Lock()
        self._executor = Commands(self.mock, self.lock)
        self._state_lock = threading.Lock()
        # Counted commands received and not yet run (or hung up on), for `settle`.
        self._unsettled = 0
        self._settled = threading.Condition(self._state_lock)
        self._conns: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._stopping = threading.Event()
        # Set to end every `hold` now (`release`, `stop`).
        self._released = threading.Event()
        self._listener: socket.socket | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._request_ids = itertools.count(1)
        self._conn_ids = itertools.count(1)

    def start(self) -> WireServer:
        """Bind `port` (a free one when 0) on 127.0.0.1 and start serving; returns `self`."""
        if self._listener is not None:
            raise RuntimeError("WireServer already started")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            # A port named again right after a stop is free to bind (not in TIME_WAIT).
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(128)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        self._listener = listener
        self.port = listener.getsockname()[1]
        self.uri = f"mongodb://127.0.0.1:{self.port}/?directConnection=true"
        self._wake_r, self._wake_w = socket.socketpair()
        self._stopping.clear()
        self._released.clear()
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name=f"WireServer-accept-{self.port}", daemon=True
        )
        self._accept_thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, hang up on every client and join the threads."""
        if self._listener is None or self._stopping.is_set():
            return
        self._stopping.set()
        self._released.set()
        assert self._wake_w is not None
        assert self._accept_thread is not None
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._accept_thread.join(5)
        self._listener.close()
        for sock in (self._wake_r, self._wake_w):
            if sock is not None:
                sock.close()
        with self._state_lock:
            conns = list(self._conns)
            threads = list(self._threads)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(5)
        with self._state_lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
            self._threads.clear()
        self._executor.cursors.clear()

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget the commands received so far."""
        with self._state_lock:
            self.commands.clear()

    def count(self) -> int:
        """Number of commands received since start / last reset."""
        with self._state_lock:
            return len(self.commands)

    def release(self) -> None:
        """End every hold now: the held commands run at once."""
        self._released.set()
        self._released.clear()  # the waiting threads are woken all the same

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until every command received so far has run (held ones included)."""
        with self._settled:
            if not self._settled.wait_for(lambda: self._unsettled == 0, timeout):
                raise TimeoutError(f"{self._unsettled} commands still running after {timeout} s")

    def __repr__(self) -> str:
        return f"WireServer(uri={self.uri!r}, delay={self.delay!r})"

    def _accept_loop(self) -> None:
        assert self._listener is not None
        assert self._wake_r is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in sel.select():
                    if key.fileobj is self._wake_r or self._stopping.is_set():
                        return
                    try:
                        conn, _addr = self._listener.accept()
                    except OSError:
                        continue
                    conn.setblocking(True)
                    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    conn_id = next(self._conn_ids)
                    thread = threading.Thread(
                        target=self._serve_connection,
                        args=(conn, conn_id),
                        name=f"WireServer-{self.port}-conn{conn_id}",
                        daemon=True,
                    )
                    with self._state_lock:
                        self._conns.add(conn)
                        # Finished threads stay until here so stop() joins them all.
                        self._threads = {t for t in self._threads if t.is_alive()}
                        self._threads.add(thread)
                    thread.start()

    def _serve_connection(self, conn: socket.socket, conn_id: int) -> None:
        try:
            while not self._stopping.is_set():
                message = framing.read_message(conn)
                if message is None:
                    return
                request_id, opcode, body = message
                if opcode == framing.OP_MSG:
                    db, cmd = framing.parse_op_msg(body)
                    reply = self._run(db, cmd, conn_id)
                    out = framing.op_msg_reply(next(self._request_ids), request_id, reply)
                elif opcode == framing.OP_QUERY:
                    out = self._legacy_handshake(request_id, body, conn_id)
                else:
                    return  # e.g. OP_COMPRESSED: the hello reply offers no compression
                conn.sendall(out)
        except Exception:  # malformed message, or stopping: hang up, as mongod does
            return
        finally:
            with self._state_lock:
                self._conns.discard(conn)
            conn.close()

    def _legacy_handshake(self, request_id: int, body: bytes, conn_id: int) -> bytes:
        """OP_QUERY serves only the first `ismaster` of PyMongo < 4.20 (see `framing`)."""
        db, cmd = framing.parse_op_query(body)
        if db is None or next(iter(cmd), "").lower() not in {"hello", "ismaster"}:
            refused = {"$err": "OP_QUERY is only for the handshake", "code": 115, "ok": 0.0}
            return framing.op_reply(
                next(self._request_ids), request_id, bson.encode(refused), failure=True
            )
        reply = self._run(db, cmd, conn_id)
        return framing.op_reply(next(self._request_ids), request_id, reply)

    def _run(self, db: str, cmd: dict[str, Any], conn_id: int) -> bytes:
        name = next(iter(cmd), "")
        if name.lower() in CHATTER:
            return self._execute(db, cmd, conn_id)
        with self._state_lock:
            self.commands.append(name)
            self._unsettled += 1
        try:
            if self.delay > 0:
                self._stopping.wait(self.delay)
            hold = self.hold
            held = hold(name, cmd) if hold is not None else 0.0
            if held > 0:
                self._released.wait(held)
            return self._execute(db, cmd, conn_id)
        finally:
            with self._settled:
                self._unsettled -= 1
                self._settled.notify_all()

    def _execute(self, db: str, cmd: dict[str, Any], conn_id: int) -> bytes:
        fault = self.fault
        if self._stopping.is_set() or (fault is not None and fault(next(iter(cmd), ""), cmd)):
            raise _HangUpError
        reply = self._executor.run(db, cmd, conn_id)
        try:
            return bson.encode(reply)
        except Exception as exc:
            return bson.encode(error_reply(CommandError(1, f"cannot encode reply: {exc}")))
