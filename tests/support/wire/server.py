"""Test-only loopback MongoDB wire-protocol server backed by mongomock.

``WireServer`` listens on ``127.0.0.1`` (never any other address) and lets the
real drivers -- pymongo ``MongoClient``, pymongo ``AsyncMongoClient`` and Motor
``AsyncIOMotorClient`` -- talk to it over a real TCP socket.  Every command is
executed on an in-process ``mongomock.MongoClient`` (``server.mock``).

Why not mockupdb
----------------
mockupdb 1.8.1 parses OP_MSG and answers the pymongo 4.20 handshake well
enough, but it runs every responder while holding one server-wide lock
(``MockupDB._server_loop`` is decorated with ``@_synchronized``), so a
responder that sleeps serialises all connections: measured, 10 concurrent
``find`` calls with a 0.2 s sleep in the responder took 2.0 s instead of 0.2 s.
Working around that needs its private ``_unlock()``.  Its ``stop()`` also waits
up to 1 s for a ``select`` timeout in the accept loop.  So this module is a
small threaded socket server that only uses ``bson`` (shipped with pymongo):

* one accept thread (woken for shutdown through a socket pair) and one daemon
  thread per client connection;
* OP_MSG (opcode 2013) for all commands, including document sequences
  (kind-1 sections) and ``moreToCome`` (unacknowledged writes: no reply);
  OP_QUERY (opcode 2004) on ``<db>.$cmd`` only, for a legacy first handshake
  (pymongo 4.20 itself sends OP_MSG from the start), answered with OP_REPLY.
  Any other opcode (e.g. OP_COMPRESSED) or a malformed message closes the
  connection;
* mongomock is not thread-safe, so all work on it runs under ``self.lock``;
  the ``delay`` sleep, BSON encoding and socket I/O happen outside that lock,
  so N concurrent commands with delay d wait about d, not N*d;
* ``stop()`` interrupts ``delay`` sleeps and hangs up on commands in flight
  (the drivers see a connection error, as when a server goes away).

The hello reply has no ``topologyVersion``, so driver monitors poll (no
streaming/exhaust hello), no ``setName`` (a standalone server, so drivers do
not use retryable writes or transactions) and no ``compression``.

Supported commands (anything else answers CommandNotFound, code 59):

* handshake and chatter, not counted in ``commands``: hello, isMaster/ismaster,
  ping, buildInfo/buildinfo, endSessions, getLastError, whatsmyuri,
  connectionStatus, getFreeMonitoringStatus; saslStart, saslContinue,
  authenticate, getnonce and getParameter are not counted either but answer
  an error (no authentication, no server parameters);
* reads: find, aggregate, getMore, killCursors, count, distinct,
  listIndexes, listCollections, listDatabases;
* writes: insert, update, delete, findAndModify;
* DDL: createIndexes, dropIndexes, collMod (TTL ``expireAfterSeconds`` of an
  index only), create, drop, dropDatabase.

Cursors are materialised when opened (a snapshot) and handed out in real
batches: first batch ``batchSize`` or 101 documents, each getMore
``batchSize`` or the rest, every batch capped at 16 MiB of documents (at
least one document).  Open cursors live in a dict keyed by a random positive
int64 id; a cursor reported with id 0 is exhausted.

Like mongod (and unlike bare mongomock) a collection stays after its last
document is deleted once it was written to, and an inserted document over
16 MiB answers a write error (code 2): for acknowledged writes pymongo only
refuses, with ``DocumentTooLarge``, commands over 16 MiB + 16 KiB.  Two
mongomock internals are used (``Collection._store``): to mark collections
as created and to change an index's TTL in ``collMod`` (mongomock enforces
TTL indexes when a collection is read, so the new TTL takes effect).

Known limitations: no transactions (``startTransaction`` answers error 20
IllegalOperation, as a standalone server does), no authentication, no TLS, no
compression, no change streams, no ``explain``, no collations or
``arrayFilters`` (mongomock raises NotImplementedError, answered as error
115), no collation/validator/capped/time-series collection options, no
tailable cursors, no check of the 16 MiB limit on the result of an update.
Query, update and aggregation semantics are mongomock's (e.g. ``$inc`` on an
int64 may come back as int32 when it fits).  Touching ``mock`` directly while
clients are running commands should hold ``server.lock``.
"""

from __future__ import annotations

import contextlib
import datetime
import itertools
import random
import selectors
import socket
import struct
import threading
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

import bson
import mongomock
from bson.codec_options import CodecOptions
from bson.int64 import Int64
from bson.raw_bson import RawBSONDocument
from mongomock.filtering import filter_applies

from .. import mongomock_patch

# The same mongomock fixes as the in-process backend (also when the benchmarks run
# this server in a process of their own).
mongomock_patch.apply()

__all__ = ["WireServer"]

OP_REPLY = 1
OP_QUERY = 2004
OP_MSG = 2013

_MSG_CHECKSUM_PRESENT = 1 << 0
_MSG_MORE_TO_COME = 1 << 1

MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
# mongod builds results up to 16 KiB over the user limit (BSONObjMaxInternalSize).
MAX_INTERNAL_OBJECT_SIZE = MAX_BSON_OBJECT_SIZE + 16 * 1024
MAX_MESSAGE_SIZE_BYTES = 48_000_000
MAX_WRITE_BATCH_SIZE = 100_000
MAX_WIRE_VERSION = 21  # MongoDB 7.0
DEFAULT_FIRST_BATCH = 101

_HEADER = struct.Struct("<iiii")
# dict documents, naive UTC datetimes, bytes for Binary subtype 0.
_CODEC: CodecOptions[dict[str, Any]] = CodecOptions()

# Lower-cased names of commands that are connection / monitoring chatter.
_UNCOUNTED = frozenset(
    {
        "hello",
        "ismaster",
        "ping",
        "buildinfo",
        "endsessions",
        "getlasterror",
        "saslstart",
        "saslcontinue",
        "authenticate",
        "getnonce",
        "getfreemonitoringstatus",
        "getparameter",
        "whatsmyuri",
        "connectionstatus",
    }
)

_CODE_NAMES = {
    1: "InternalError",
    2: "BadValue",
    9: "FailedToParse",
    13: "Unauthorized",
    14: "TypeMismatch",
    18: "AuthenticationFailed",
    20: "IllegalOperation",
    26: "NamespaceNotFound",
    27: "IndexNotFound",
    43: "CursorNotFound",
    48: "NamespaceExists",
    59: "CommandNotFound",
    72: "InvalidOptions",
    85: "IndexOptionsConflict",
    86: "IndexKeySpecsConflict",
    115: "CommandNotSupported",
    11000: "DuplicateKey",
}

# Find options that change semantics and that mongomock cannot honour.
_UNSUPPORTED_FIND_OPTIONS = (
    "tailable",
    "awaitData",
    "min",
    "max",
    "returnKey",
    "showRecordId",
    "let",
    "oplogReplay",
)
# create options that would silently be ignored.
_UNSUPPORTED_CREATE_OPTIONS = frozenset(
    {
        "capped",
        "size",
        "max",
        "validator",
        "validationLevel",
        "validationAction",
        "viewOn",
        "pipeline",
        "timeseries",
        "clusteredIndex",
        "changeStreamPreAndPostImages",
        "collation",
        "expireAfterSeconds",
        "storageEngine",
        "indexOptionDefaults",
        "encryptedFields",
    }
)
# Top-level fields any command may carry that this server ignores.
_GENERIC_FIELDS = frozenset(
    {
        "lsid",
        "$db",
        "$readPreference",
        "txnNumber",
        "$clusterTime",
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
        "comment",
        "writeConcern",
        "readConcern",
        "maxTimeMS",
        "bypassDocumentValidation",
    }
)


class CommandError(Exception):
    """A command failure answered as ``{ok: 0, code, errmsg, codeName}``."""

    def __init__(self, code: int, errmsg: str) -> None:
        super().__init__(errmsg)
        self.code = code
        self.errmsg = errmsg


class _HangUpError(Exception):
    """The server is stopping: close the connection instead of replying."""


def _error_reply(code: int, errmsg: str) -> dict[str, Any]:
    return {
        "ok": 0.0,
        "errmsg": errmsg,
        "code": code,
        "codeName": _CODE_NAMES.get(code, "UnknownError"),
    }


def _exception_code(exc: BaseException) -> tuple[int, str]:
    """Map an exception raised while executing on mongomock to (code, errmsg)."""
    if isinstance(exc, CommandError):
        return exc.code, exc.errmsg
    if isinstance(exc, mongomock.OperationFailure):
        code = exc.code if isinstance(exc.code, int) and exc.code else 2
        return code, str(exc) or type(exc).__name__
    if isinstance(exc, NotImplementedError):
        return 115, f"not supported by the mongomock wire server: {exc}"
    return 2, f"{type(exc).__name__}: {exc}"


def _as_int(value: Any, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CommandError(14, f"BSON field '{field}' is the wrong type")
    return int(value)


def _norm_key(key: Any) -> list[tuple[str, Any]]:
    """Index key spec (document or list of pairs) as comparable pairs."""
    items = key.items() if isinstance(key, Mapping) else key
    out = []
    for field, direction in items:
        if isinstance(direction, (int, float)) and not isinstance(direction, bool):
            direction = int(direction)
        out.append((field, direction))
    return out


class _Context:
    """Per-request facts a handler may need besides the command document."""

    __slots__ = ("conn_id", "doc_sizes")

    def __init__(self, conn_id: int, doc_sizes: dict[str, list[int]] | None = None) -> None:
        self.conn_id = conn_id
        #: Encoded sizes of the documents of each OP_MSG document sequence.
        self.doc_sizes: dict[str, list[int]] = doc_sizes or {}


class _Cursor:
    __slots__ = ("docs", "ns", "pos")

    def __init__(self, ns: str, docs: list[Any]) -> None:
        self.ns = ns
        self.docs = docs
        self.pos = 0

    @property
    def exhausted(self) -> bool:
        return self.pos >= len(self.docs)


class WireServer:
    """A MongoDB-speaking server on 127.0.0.1 that executes on mongomock.

    Use as a context manager or call :meth:`start` / :meth:`stop`.  ``uri`` is
    valid after :meth:`start`.  ``commands`` lists the names of counted
    commands (everything except handshake/monitoring chatter) in the order
    they were received; ``delay`` seconds are slept (outside the execution
    lock) before each counted command is executed.
    """

    def __init__(self, *, delay: float = 0.0) -> None:
        self.delay: float = delay
        #: Fault injection: called with each counted command's name and body before it
        #: runs; returning True hangs up on it unexecuted, as a network failure would.
        self.fault: Callable[[str, dict[str, Any]], bool] | None = None
        self.mock: mongomock.MongoClient[dict[str, Any]] = mongomock.MongoClient()
        self.commands: list[str] = []
        self.uri: str = ""
        self.host: str = "127.0.0.1"
        self.port: int = 0
        #: Serialises every operation on ``mock``; hold it when touching
        #: ``mock`` directly while clients may be running commands.
        self.lock: threading.Lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._cursors: dict[int, _Cursor] = {}
        self._conns: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._stopping = threading.Event()
        self._listener: socket.socket | None = None
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._request_ids = itertools.count(1)
        self._conn_ids = itertools.count(1)
        self._rng = random.Random()
        self._handlers: dict[str, Callable[[str, dict[str, Any], _Context], dict[str, Any]]] = {
            "hello": self._cmd_hello,
            "isMaster": self._cmd_hello,
            "ismaster": self._cmd_hello,
            "ping": self._cmd_ok,
            "buildInfo": self._cmd_build_info,
            "buildinfo": self._cmd_build_info,
            "endSessions": self._cmd_ok,
            "getLastError": self._cmd_get_last_error,
            "getlasterror": self._cmd_get_last_error,
            "whatsmyuri": self._cmd_whatsmyuri,
            "connectionStatus": self._cmd_connection_status,
            "getFreeMonitoringStatus": self._cmd_free_monitoring,
            "find": self._cmd_find,
            "aggregate": self._cmd_aggregate,
            "getMore": self._cmd_get_more,
            "killCursors": self._cmd_kill_cursors,
            "count": self._cmd_count,
            "distinct": self._cmd_distinct,
            "insert": self._cmd_insert,
            "update": self._cmd_update,
            "delete": self._cmd_delete,
            "findAndModify": self._cmd_find_and_modify,
            "findandmodify": self._cmd_find_and_modify,
            "createIndexes": self._cmd_create_indexes,
            "listIndexes": self._cmd_list_indexes,
            "dropIndexes": self._cmd_drop_indexes,
            "deleteIndexes": self._cmd_drop_indexes,
            "collMod": self._cmd_coll_mod,
            "listCollections": self._cmd_list_collections,
            "listDatabases": self._cmd_list_databases,
            "create": self._cmd_create,
            "drop": self._cmd_drop,
            "dropDatabase": self._cmd_drop_database,
        }

    # ------------------------------------------------------------------ API

    def start(self) -> WireServer:
        """Bind a free port on 127.0.0.1 and start serving; returns ``self``."""
        if self._listener is not None:
            raise RuntimeError("WireServer already started")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
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
            self._cursors.clear()

    def __enter__(self) -> WireServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget the counted commands received so far."""
        with self._state_lock:
            self.commands.clear()

    def count(self) -> int:
        """Number of counted commands received since start / last reset."""
        with self._state_lock:
            return len(self.commands)

    def __repr__(self) -> str:
        return f"WireServer(uri={self.uri!r}, delay={self.delay!r})"

    # ------------------------------------------------------------ networking

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

    @staticmethod
    def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
        buf = bytearray(size)
        view = memoryview(buf)
        got = 0
        while got < size:
            n = sock.recv_into(view[got:], size - got)
            if n == 0:
                return None
            got += n
        return bytes(buf)

    def _serve_connection(self, conn: socket.socket, conn_id: int) -> None:
        try:
            while not self._stopping.is_set():
                header = self._recv_exact(conn, 16)
                if header is None:
                    return
                length, request_id, _response_to, opcode = _HEADER.unpack(header)
                if length < 16 or length > MAX_MESSAGE_SIZE_BYTES:
                    return
                body = self._recv_exact(conn, length - 16)
                if body is None:
                    return
                if opcode == OP_MSG:
                    flags, db, cmd, sizes = self._parse_op_msg(body)
                    reply = self._run_command(db, cmd, _Context(conn_id, sizes))
                    if flags & _MSG_MORE_TO_COME:
                        continue
                    payload = struct.pack("<IB", 0, 0) + reply
                    out_opcode = OP_MSG
                elif opcode == OP_QUERY:
                    query_db, cmd = self._parse_op_query(body)
                    if query_db is None:
                        reply = bson.encode(
                            {"$err": "only commands are supported", "code": 115, "ok": 0.0}
                        )
                        flags_out = 2  # QueryFailure
                    else:
                        reply = self._run_command(query_db, cmd, _Context(conn_id))
                        flags_out = 0
                    payload = struct.pack("<iqii", flags_out, 0, 0, 1) + reply
                    out_opcode = OP_REPLY
                else:
                    return  # unsupported opcode (e.g. OP_COMPRESSED): hang up
                conn.sendall(
                    _HEADER.pack(16 + len(payload), next(self._request_ids), request_id, out_opcode)
                    + payload
                )
        except (_HangUpError, OSError):
            return
        except Exception:  # malformed message: hang up, as mongod does
            return
        finally:
            with self._state_lock:
                self._conns.discard(conn)
            conn.close()

    @staticmethod
    def _parse_op_msg(
        body: bytes,
    ) -> tuple[int, str, dict[str, Any], dict[str, list[int]]]:
        (flags,) = struct.unpack_from("<I", body, 0)
        end = len(body) - (4 if flags & _MSG_CHECKSUM_PRESENT else 0)
        pos = 4
        cmd: dict[str, Any] | None = None
        sequences: dict[str, list[Any]] = {}
        sizes: dict[str, list[int]] = {}
        while pos < end:
            kind = body[pos]
            pos += 1
            (size,) = struct.unpack_from("<i", body, pos)
            if kind == 0:
                cmd = bson.decode(body[pos : pos + size], codec_options=_CODEC)
                pos += size
            elif kind == 1:
                section_end = pos + size
                ident_end = body.index(b"\x00", pos + 4)
                ident = body[pos + 4 : ident_end].decode()
                docs = sequences.setdefault(ident, [])
                doc_sizes = sizes.setdefault(ident, [])
                pos = ident_end + 1
                while pos < section_end:
                    (doc_size,) = struct.unpack_from("<i", body, pos)
                    docs.append(bson.decode(body[pos : pos + doc_size], codec_options=_CODEC))
                    doc_sizes.append(doc_size)
                    pos += doc_size
                if pos != section_end:
                    raise ValueError("malformed OP_MSG document sequence")
            else:
                raise ValueError(f"unknown OP_MSG section kind {kind}")
        if cmd is None:
            raise ValueError("OP_MSG without a body section")
        cmd.update(sequences)
        db = cmd.get("$db")
        return flags, db if isinstance(db, str) else "admin", cmd, sizes

    @staticmethod
    def _parse_op_query(body: bytes) -> tuple[str | None, dict[str, Any]]:
        ns_end = body.index(b"\x00", 4)
        ns = body[4:ns_end].decode()
        pos = ns_end + 1 + 8  # numberToSkip, numberToReturn
        (size,) = struct.unpack_from("<i", body, pos)
        query = bson.decode(body[pos : pos + size], codec_options=_CODEC)
        if "$query" in query and isinstance(query["$query"], dict):
            query = query["$query"]
        db, _, coll = ns.partition(".")
        if coll != "$cmd":
            return None, query
        return db, query

    # -------------------------------------------------------------- dispatch

    def _run_command(self, db: str, cmd: dict[str, Any], ctx: _Context) -> bytes:
        name = next(iter(cmd), "")
        if name.lower() not in _UNCOUNTED:
            with self._state_lock:
                self.commands.append(name)
            delay = self.delay
            if delay > 0:
                self._stopping.wait(delay)
        fault = self.fault
        if self._stopping.is_set() or (fault is not None and fault(name, cmd)):
            raise _HangUpError
        try:
            if "startTransaction" in cmd or "autocommit" in cmd:
                raise CommandError(
                    20, "Transaction numbers are only allowed on a replica set member or mongos"
                )
            handler = self._handlers.get(name)
            if handler is None:
                raise CommandError(59, f"no such command: '{name}'")
            reply = handler(db, cmd, ctx)
            reply["ok"] = 1.0
        except Exception as exc:
            reply = _error_reply(*_exception_code(exc))
        try:
            return bson.encode(reply)
        except Exception as exc:
            return bson.encode(_error_reply(1, f"cannot encode reply: {exc}"))

    def _coll(self, db: str, cmd: dict[str, Any], field: str) -> Any:
        name = cmd.get(field)
        if not isinstance(name, str) or not name:
            raise CommandError(2, f"collection name has invalid type for '{field}'")
        return self.mock[db][name]

    def _exists(self, db: str, name: str) -> bool:
        return name in self.mock[db].list_collection_names()

    def _ensure_collection(self, db: str, name: str) -> bool:
        """Mark ``db.name`` as created, as a server does on the first write.

        Otherwise mongomock forgets a collection once its last document and
        index are gone.  Returns True if the collection did not exist before.
        """
        existed = self._exists(db, name)
        self.mock[db][name]._store.create()
        return not existed

    # --------------------------------------------------------------- cursors

    def _take_batch(self, cur: _Cursor, limit: int | None) -> list[RawBSONDocument]:
        batch: list[RawBSONDocument] = []
        size = 0
        while not cur.exhausted and (limit is None or len(batch) < limit):
            raw = bson.encode(cur.docs[cur.pos])
            if len(raw) > MAX_INTERNAL_OBJECT_SIZE:
                # What mongod answers for a `$lookup` whose joined array makes a document
                # too large (code 4568; 10334 BSONObjectTooLarge for other results).
                raise CommandError(
                    4568,
                    f"Total size of documents in the $lookup result ({len(raw)} bytes) "
                    f"exceeds maximum document size {MAX_INTERNAL_OBJECT_SIZE}",
                )
            if batch and size + len(raw) > MAX_BSON_OBJECT_SIZE:
                break
            batch.append(RawBSONDocument(raw))
            size += len(raw)
            cur.pos += 1
        return batch

    def _register_cursor(self, cur: _Cursor) -> int:
        with self._state_lock:
            while True:
                cursor_id = self._rng.randint(1, 2**63 - 1)
                if cursor_id not in self._cursors:
                    self._cursors[cursor_id] = cur
                    return cursor_id

    def _cursor_reply(
        self,
        ns: str,
        docs: list[Any],
        batch_size: Any = None,
        single_batch: bool = False,
    ) -> dict[str, Any]:
        cur = _Cursor(ns, docs)
        if batch_size is None:
            limit = DEFAULT_FIRST_BATCH
        else:
            limit = _as_int(batch_size, "batchSize")
            if limit < 0:
                raise CommandError(2, "BatchSize value must be non-negative")
        batch = self._take_batch(cur, limit)
        cursor_id = 0
        if not single_batch and not cur.exhausted:
            cursor_id = self._register_cursor(cur)
        return {"cursor": {"firstBatch": batch, "id": Int64(cursor_id), "ns": ns}}

    def _cmd_get_more(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        cursor_id = _as_int(cmd.get("getMore"), "getMore")
        coll = cmd.get("collection")
        batch_size = cmd.get("batchSize")
        limit = _as_int(batch_size, "batchSize") if batch_size is not None else 0
        if limit < 0:
            raise CommandError(2, "BatchSize value must be non-negative")
        with self._state_lock:
            cur = self._cursors.pop(cursor_id, None)
        if cur is None:
            raise CommandError(43, f"cursor id {cursor_id} not found")
        ns = f"{db}.{coll}"
        if cur.ns != ns:
            with self._state_lock:
                self._cursors[cursor_id] = cur
            raise CommandError(
                13,
                f"Requested getMore on namespace '{ns}', but cursor belongs to a "
                f"different namespace {cur.ns}",
            )
        batch = self._take_batch(cur, limit or None)
        if cur.exhausted:
            cursor_id = 0
        else:
            with self._state_lock:
                self._cursors[cursor_id] = cur
        return {"cursor": {"nextBatch": batch, "id": Int64(cursor_id), "ns": ns}}

    def _cmd_kill_cursors(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        killed: list[Int64] = []
        not_found: list[Int64] = []
        with self._state_lock:
            for raw_id in cmd.get("cursors") or []:
                cursor_id = int(raw_id)
                if self._cursors.pop(cursor_id, None) is None:
                    not_found.append(Int64(cursor_id))
                else:
                    killed.append(Int64(cursor_id))
        return {
            "cursorsKilled": killed,
            "cursorsNotFound": not_found,
            "cursorsAlive": [],
            "cursorsUnknown": [],
        }

    # ------------------------------------------------------ chatter commands

    def _cmd_hello(self, db: str, cmd: dict[str, Any], ctx: _Context) -> dict[str, Any]:
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        reply: dict[str, Any] = {"helloOk": True, "isWritablePrimary": True}
        if next(iter(cmd)) != "hello":
            reply["ismaster"] = True
        reply.update(
            {
                "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
                "maxMessageSizeBytes": MAX_MESSAGE_SIZE_BYTES,
                "maxWriteBatchSize": MAX_WRITE_BATCH_SIZE,
                "localTime": now.replace(microsecond=now.microsecond // 1000 * 1000),
                "logicalSessionTimeoutMinutes": 30,
                "connectionId": ctx.conn_id,
                "minWireVersion": 0,
                "maxWireVersion": MAX_WIRE_VERSION,
                "readOnly": False,
            }
        )
        return reply

    def _cmd_ok(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        return {}

    def _cmd_build_info(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        return {
            "version": "7.0.0",
            "versionArray": [7, 0, 0, 0],
            "gitVersion": "mongomock-wire-server",
            "bits": 64,
            "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
            "storageEngines": ["mongomock"],
        }

    def _cmd_get_last_error(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        return {"n": 0, "err": None}

    def _cmd_whatsmyuri(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        return {"you": "127.0.0.1"}

    def _cmd_connection_status(
        self, db: str, cmd: dict[str, Any], _ctx: _Context
    ) -> dict[str, Any]:
        return {"authInfo": {"authenticatedUsers": [], "authenticatedUserRoles": []}}

    def _cmd_free_monitoring(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        return {"state": "disabled"}

    # ------------------------------------------------------------ read path

    def _cmd_find(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "find")
        for option in _UNSUPPORTED_FIND_OPTIONS:
            if cmd.get(option):
                raise CommandError(115, f"find option '{option}' is not supported")
        flt = cmd.get("filter") or {}
        projection = cmd.get("projection") or None
        sort = cmd.get("sort") or None
        skip = _as_int(cmd.get("skip"), "skip")
        limit = _as_int(cmd.get("limit"), "limit")
        single_batch = bool(cmd.get("singleBatch"))
        if skip < 0:
            raise CommandError(2, "skip value must be non-negative")
        if limit < 0:
            limit, single_batch = -limit, True
        collation = cmd.get("collation")
        with self.lock:
            cursor = coll.find(flt, projection, collation=collation)
            if sort:
                if not isinstance(sort, Mapping):
                    raise CommandError(14, "sort must be a document")
                cursor = cursor.sort(list(sort.items()))
            if skip:
                cursor = cursor.skip(skip)
            if limit:
                cursor = cursor.limit(limit)
            docs = list(cursor)
        return self._cursor_reply(f"{db}.{coll.name}", docs, cmd.get("batchSize"), single_batch)

    def _cmd_aggregate(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        target = cmd.get("aggregate")
        if not isinstance(target, str):
            raise CommandError(115, "database-level aggregate ({aggregate: 1}) is not supported")
        if cmd.get("explain"):
            raise CommandError(115, "aggregate explain is not supported")
        pipeline = cmd.get("pipeline")
        if not isinstance(pipeline, list):
            raise CommandError(14, "'pipeline' option must be specified as an array")
        cursor_opts = cmd.get("cursor")
        if not isinstance(cursor_opts, Mapping):
            raise CommandError(
                9, "The 'cursor' option is required, except for aggregate with the explain argument"
            )
        coll = self._coll(db, cmd, "aggregate")
        with self.lock:
            docs = list(coll.aggregate(pipeline))
        return self._cursor_reply(f"{db}.{coll.name}", docs, cursor_opts.get("batchSize"))

    def _cmd_count(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "count")
        skip = _as_int(cmd.get("skip"), "skip")
        limit = abs(_as_int(cmd.get("limit"), "limit"))
        with self.lock:
            cursor = coll.find(cmd.get("query") or {}, {"_id": 1})
            if skip:
                cursor = cursor.skip(skip)
            if limit:
                cursor = cursor.limit(limit)
            n = sum(1 for _ in cursor)
        return {"n": n}

    def _cmd_distinct(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "distinct")
        key = cmd.get("key")
        if not isinstance(key, str):
            raise CommandError(14, "BSON field 'distinct.key' is missing or not a string")
        with self.lock:
            values = coll.distinct(key, cmd.get("query") or {})
        return {"values": list(values)}

    def _cmd_list_collections(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        flt = cmd.get("filter") or {}
        name_only = bool(cmd.get("nameOnly"))
        with self.lock:
            names = sorted(self.mock[db].list_collection_names())
            docs = []
            for name in names:
                doc: dict[str, Any] = {"name": name, "type": "collection"}
                if not name_only:
                    doc["options"] = {}
                    doc["info"] = {"readOnly": False}
                    doc["idIndex"] = {"v": 2, "key": {"_id": 1}, "name": "_id_"}
                if not flt or filter_applies(flt, doc):
                    docs.append(doc)
        batch_size = (cmd.get("cursor") or {}).get("batchSize")
        return self._cursor_reply(f"{db}.$cmd.listCollections", docs, batch_size)

    def _cmd_list_databases(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        flt = cmd.get("filter") or {}
        name_only = bool(cmd.get("nameOnly"))
        with self.lock:
            names = sorted(self.mock.list_database_names())
        dbs = []
        for name in names:
            doc: dict[str, Any] = {"name": name}
            if not name_only:
                doc.update({"sizeOnDisk": 0, "empty": False})
            if not flt or filter_applies(flt, doc):
                dbs.append(doc)
        reply: dict[str, Any] = {"databases": dbs}
        if not name_only:
            reply["totalSize"] = 0
        return reply

    def _cmd_list_indexes(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "listIndexes")
        with self.lock:
            if not self._exists(db, coll.name):
                raise CommandError(26, f"ns does not exist: {db}.{coll.name}")
            docs = []
            for info in coll.list_indexes():
                doc = {"v": info.get("v", 2), "key": dict(info["key"]), "name": info["name"]}
                doc.update({k: v for k, v in info.items() if k not in doc})
                docs.append(doc)
        batch_size = (cmd.get("cursor") or {}).get("batchSize")
        return self._cursor_reply(f"{db}.{coll.name}", docs, batch_size)

    # ----------------------------------------------------------- write path

    def _write_error(self, index: int, exc: Exception, ns: str) -> dict[str, Any]:
        code, errmsg = _exception_code(exc)
        if code == 11000 and not errmsg.startswith("E11000 duplicate key error collection"):
            errmsg = f"E11000 duplicate key error collection: {ns} ({errmsg})"
        return {"index": index, "code": code, "errmsg": errmsg}

    @staticmethod
    def _statements(cmd: dict[str, Any], field: str) -> list[Any]:
        stmts = cmd.get(field)
        if not isinstance(stmts, list):
            raise CommandError(9, f"BSON field '{field}' is missing or not an array")
        if len(stmts) > MAX_WRITE_BATCH_SIZE:
            raise CommandError(2, f"Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}")
        return stmts

    def _cmd_insert(self, db: str, cmd: dict[str, Any], ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "insert")
        docs = self._statements(cmd, "documents")
        sizes = ctx.doc_sizes.get("documents")
        if sizes is None or len(sizes) != len(docs):
            sizes = [len(bson.encode(d)) if isinstance(d, Mapping) else 0 for d in docs]
        ordered = cmd.get("ordered", True) is not False
        ns = f"{db}.{coll.name}"
        n = 0
        errors: list[dict[str, Any]] = []
        with self.lock:
            if docs:
                self._ensure_collection(db, coll.name)
            for index, doc in enumerate(docs):
                try:
                    if not isinstance(doc, dict):
                        raise CommandError(14, "document to insert must be an object")
                    if sizes[index] > MAX_BSON_OBJECT_SIZE:
                        raise CommandError(
                            2,
                            f"object to insert too large. size in bytes: {sizes[index]}, "
                            f"max size: {MAX_BSON_OBJECT_SIZE}",
                        )
                    coll.insert_one(doc)
                    n += 1
                except Exception as exc:
                    errors.append(self._write_error(index, exc, ns))
                    if ordered:
                        break
        reply: dict[str, Any] = {"n": n}
        if errors:
            reply["writeErrors"] = errors
        return reply

    def _cmd_update(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "update")
        updates = self._statements(cmd, "updates")
        ordered = cmd.get("ordered", True) is not False
        ns = f"{db}.{coll.name}"
        n = 0
        n_modified = 0
        upserted: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        with self.lock:
            if any(isinstance(u, Mapping) and u.get("upsert") for u in updates):
                self._ensure_collection(db, coll.name)
            for index, stmt in enumerate(updates):
                try:
                    matched, modified, upserted_id = self._one_update(coll, stmt)
                except Exception as exc:
                    errors.append(self._write_error(index, exc, ns))
                    if ordered:
                        break
                    continue
                n += matched
                n_modified += modified
                if upserted_id is not None:
                    n += 1
                    upserted.append({"index": index, "_id": upserted_id})
        reply: dict[str, Any] = {"n": n, "nModified": n_modified}
        if upserted:
            reply["upserted"] = upserted
        if errors:
            reply["writeErrors"] = errors
        return reply

    @staticmethod
    def _one_update(coll: Any, stmt: Any) -> tuple[int, int, Any]:
        """Run one update statement; returns (matched, modified, upserted _id or None)."""
        if not isinstance(stmt, Mapping):
            raise CommandError(14, "update statement must be an object")
        query = stmt.get("q")
        update = stmt.get("u")
        if not isinstance(query, Mapping):
            raise CommandError(9, "BSON field 'update.updates.q' is missing or not an object")
        upsert = bool(stmt.get("upsert"))
        multi = bool(stmt.get("multi"))
        kwargs: dict[str, Any] = {}
        if stmt.get("arrayFilters") is not None:
            kwargs["array_filters"] = stmt["arrayFilters"]
        if stmt.get("collation") is not None:
            kwargs["collation"] = stmt["collation"]
        if isinstance(update, list) or (
            isinstance(update, Mapping) and update and next(iter(update)).startswith("$")
        ):
            method = coll.update_many if multi else coll.update_one
            result = method(query, update, upsert=upsert, **kwargs)
        elif isinstance(update, Mapping):
            if multi:
                raise CommandError(9, "multi update is not supported for replacement-style update")
            if kwargs:
                raise CommandError(2, "replacement-style update takes no arrayFilters/collation")
            result = coll.replace_one(query, update, upsert=upsert)
        else:
            raise CommandError(9, "BSON field 'update.updates.u' is missing or the wrong type")
        return result.matched_count, result.modified_count, result.upserted_id

    def _cmd_delete(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "delete")
        deletes = self._statements(cmd, "deletes")
        ordered = cmd.get("ordered", True) is not False
        ns = f"{db}.{coll.name}"
        n = 0
        errors: list[dict[str, Any]] = []
        with self.lock:
            for index, stmt in enumerate(deletes):
                try:
                    if not isinstance(stmt, Mapping) or not isinstance(stmt.get("q"), Mapping):
                        raise CommandError(9, "BSON field 'delete.deletes.q' is missing")
                    limit = _as_int(stmt.get("limit"), "limit")
                    if limit not in (0, 1):
                        raise CommandError(2, "The limit field in delete objects must be 0 or 1")
                    kwargs = {}
                    if stmt.get("collation") is not None:
                        kwargs["collation"] = stmt["collation"]
                    method = coll.delete_one if limit == 1 else coll.delete_many
                    n += method(stmt["q"], **kwargs).deleted_count
                except Exception as exc:
                    errors.append(self._write_error(index, exc, ns))
                    if ordered:
                        break
        reply: dict[str, Any] = {"n": n}
        if errors:
            reply["writeErrors"] = errors
        return reply

    def _cmd_find_and_modify(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, next(iter(cmd)))
        query = cmd.get("query") or {}
        sort = cmd.get("sort") or None
        remove = bool(cmd.get("remove"))
        update = cmd.get("update")
        return_new = bool(cmd.get("new"))
        fields = cmd.get("fields") or None
        upsert = bool(cmd.get("upsert"))
        if remove == (update is not None):
            raise CommandError(9, "Either an update or remove=true must be specified")
        if remove and (return_new or upsert):
            raise CommandError(9, "Cannot specify both remove=true and new=true/upsert=true")
        stmt: dict[str, Any] = {"q": None, "u": update, "upsert": False, "multi": False}
        for src, dst in (("arrayFilters", "arrayFilters"), ("collation", "collation")):
            if cmd.get(src) is not None:
                stmt[dst] = cmd[src]
        last_error: dict[str, Any] = {"n": 0}
        with self.lock:
            cursor = coll.find(query, {"_id": 1})
            if sort:
                cursor = cursor.sort(list(sort.items()))
            target = next(iter(cursor.limit(1)), None)
            value = None
            if target is not None:
                by_id = {"_id": target["_id"]}
                before = coll.find_one(by_id, fields)
                if remove:
                    coll.delete_one(by_id)
                    value = before
                else:
                    stmt["q"] = by_id
                    self._one_update(coll, stmt)
                    after_id = target["_id"]
                    if isinstance(update, Mapping) and "_id" in update:
                        after_id = update["_id"]
                    value = coll.find_one({"_id": after_id}, fields) if return_new else before
                    last_error["updatedExisting"] = True
                last_error["n"] = 1
            elif upsert and not remove:
                self._ensure_collection(db, coll.name)
                stmt["q"] = query
                stmt["upsert"] = True
                _matched, _modified, upserted_id = self._one_update(coll, stmt)
                last_error.update({"n": 1, "updatedExisting": False, "upserted": upserted_id})
                if return_new:
                    value = coll.find_one({"_id": upserted_id}, fields)
            elif not remove:
                last_error["updatedExisting"] = False
        return {"lastErrorObject": last_error, "value": value}

    # ------------------------------------------------------------------ DDL

    def _cmd_create_indexes(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "createIndexes")
        specs = cmd.get("indexes")
        if not isinstance(specs, list) or not specs:
            raise CommandError(2, "Must specify at least one index to create")
        allowed = {
            "key",
            "name",
            "unique",
            "sparse",
            "partialFilterExpression",
            "expireAfterSeconds",
            "background",
            "v",
            "ns",
        }
        with self.lock:
            created_automatically = self._ensure_collection(db, coll.name)
            before = coll.index_information()
            num_before = len(before) if before else 1
            existing = dict(before)
            note = None
            for spec in specs:
                if not isinstance(spec, Mapping) or not isinstance(spec.get("key"), Mapping):
                    raise CommandError(9, "index specification must have a 'key' document")
                unknown = set(spec) - allowed
                if unknown:
                    raise CommandError(
                        115, f"index option(s) {sorted(unknown)} not supported by mongomock"
                    )
                key = _norm_key(spec["key"])
                if not key:
                    raise CommandError(67, "Index keys cannot be empty.")
                name = spec.get("name")
                if not isinstance(name, str) or not name:
                    raise CommandError(9, "The 'name' field is a required property of an index")
                options = {
                    k: spec[k]
                    for k in ("unique", "sparse", "partialFilterExpression", "expireAfterSeconds")
                    if spec.get(k) not in (None, False)
                }
                same_name = existing.get(name)
                if same_name is not None:
                    if _norm_key(same_name["key"]) != key:
                        raise CommandError(
                            86,
                            f"An existing index has the same name as the requested index "
                            f"but different key: {name}",
                        )
                    current = {
                        k: same_name[k]
                        for k in (
                            "unique",
                            "sparse",
                            "partialFilterExpression",
                            "expireAfterSeconds",
                        )
                        if same_name.get(k) not in (None, False)
                    }
                    if name != "_id_" and current != options:
                        raise CommandError(
                            85,
                            f"An existing index has the same name as the requested index "
                            f"but different options: {name}",
                        )
                    note = "all indexes already exist"
                    continue
                for other_name, info in existing.items():
                    if _norm_key(info["key"]) == key:
                        raise CommandError(
                            85, f"Index already exists with a different name: {other_name}"
                        )
                coll.create_index(key, name=name, **options)
                existing = coll.index_information()
            num_after = len(coll.index_information())
        reply: dict[str, Any] = {
            "numIndexesBefore": num_before,
            "numIndexesAfter": num_after,
            "createdCollectionAutomatically": created_automatically,
        }
        if note and num_after == num_before:
            reply["note"] = note
        return reply

    def _find_index_name(self, coll: Any, selector: Any) -> str:
        info = coll.index_information()
        if isinstance(selector, str):
            if selector not in info:
                raise CommandError(27, f"index not found with name [{selector}]")
            return selector
        if isinstance(selector, Mapping):
            wanted = _norm_key(selector)
            for name, index in info.items():
                if _norm_key(index["key"]) == wanted:
                    return str(name)
            raise CommandError(27, f"can't find index with key: {dict(selector)}")
        raise CommandError(14, "index must be a name or a key pattern")

    def _cmd_drop_indexes(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, next(iter(cmd)))
        selector = cmd.get("index")
        with self.lock:
            if not self._exists(db, coll.name):
                raise CommandError(26, f"ns not found {db}.{coll.name}")
            n_was = len(coll.index_information())
            if selector == "*":
                for name in list(coll.index_information()):
                    if name != "_id_":
                        coll.drop_index(name)
            else:
                selectors_ = selector if isinstance(selector, list) else [selector]
                names = [self._find_index_name(coll, s) for s in selectors_]
                if "_id_" in names:
                    raise CommandError(72, "cannot drop _id index")
                for name in names:
                    coll.drop_index(name)
        return {"nIndexesWas": n_was}

    def _cmd_coll_mod(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "collMod")
        unsupported = set(cmd) - {"collMod", "index"} - _GENERIC_FIELDS
        if unsupported:
            raise CommandError(115, f"collMod option(s) {sorted(unsupported)} not supported")
        index = cmd.get("index")
        reply: dict[str, Any] = {}
        with self.lock:
            if not self._exists(db, coll.name):
                raise CommandError(26, f"ns does not exist: {db}.{coll.name}")
            if index is None:
                return reply
            if not isinstance(index, Mapping):
                raise CommandError(14, "collMod 'index' must be a document")
            bad = set(index) - {"name", "keyPattern", "expireAfterSeconds"}
            if bad:
                raise CommandError(115, f"collMod index option(s) {sorted(bad)} not supported")
            if ("name" in index) == ("keyPattern" in index):
                raise CommandError(72, "must specify exactly one of 'name' or 'keyPattern'")
            name = self._find_index_name(coll, index.get("name", index.get("keyPattern")))
            if "expireAfterSeconds" not in index:
                raise CommandError(72, "no expireAfterSeconds or hidden field")
            new_ttl = index["expireAfterSeconds"]
            if isinstance(new_ttl, bool) or not isinstance(new_ttl, (int, float)) or new_ttl < 0:
                raise CommandError(2, "expireAfterSeconds must be a non-negative number")
            if name == "_id_":
                raise CommandError(72, "cannot set expireAfterSeconds on the _id index")
            # mongomock keeps index options (and its TTL bookkeeping) in the
            # collection store; re-registering the index under the same name
            # updates both, so documents really expire with the new TTL.
            store = coll._store
            current = dict(store.indexes[name])
            old_ttl = current.get("expireAfterSeconds")
            current["expireAfterSeconds"] = new_ttl
            store.create_index(name, current)
        if old_ttl is not None:
            reply["expireAfterSeconds_old"] = old_ttl
        reply["expireAfterSeconds_new"] = new_ttl
        return reply

    def _cmd_create(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "create")
        unsupported = _UNSUPPORTED_CREATE_OPTIONS & set(cmd)
        if unsupported:
            raise CommandError(115, f"create option(s) {sorted(unsupported)} not supported")
        with self.lock:
            if self._exists(db, coll.name):
                raise CommandError(48, f"Collection {db}.{coll.name} already exists.")
            self.mock[db].create_collection(coll.name)
        return {}

    def _cmd_drop(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        coll = self._coll(db, cmd, "drop")
        with self.lock:
            if not self._exists(db, coll.name):
                return {}  # MongoDB >= 7.0: dropping a missing collection succeeds
            n_was = len(coll.index_information())
            self.mock[db].drop_collection(coll.name)
        return {"nIndexesWas": n_was, "ns": f"{db}.{coll.name}"}

    def _cmd_drop_database(self, db: str, cmd: dict[str, Any], _ctx: _Context) -> dict[str, Any]:
        with self.lock:
            self.mock.drop_database(db)
        return {"dropped": db}
