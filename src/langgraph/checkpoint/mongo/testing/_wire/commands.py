"""The commands the drivers and the savers send, executed on mongomock.

Only those, as logged from the full test suite and the benchmarks, plus `buildInfo` and
`listDatabases` (names only), which tests send, and `ping`, which applications send at startup.
Any other command answers CommandNotFound (59), and a field, write statement or index option
not listed here CommandNotSupported (115), so nothing is silently ignored. A login (`saslStart`)
is refused as a server refuses an unknown user (AuthenticationFailed, 18): it has no users.

Like mongod (and unlike bare mongomock), a collection stays once written to or indexed,
after its last document is deleted. The hello reply has no `topologyVersion` (monitors
poll), no `setName` (a standalone: no retryable writes, no transactions) and no
`compression`. A write whose concern asks for more than this one node is applied and
answered with a `writeConcernError` (UnsatisfiableWriteConcern). Query, update and
aggregation semantics are mongomock's.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable, Mapping
from typing import Any

import mongomock

from .cursors import MAX_BSON_OBJECT_SIZE, Cursors
from .errors import CommandError, code_and_message, error_reply, non_negative

MAX_WRITE_BATCH_SIZE = 100_000
MAX_WIRE_VERSION = 21  # MongoDB 7.0

# Handshakes, server facts and session cleanup: not operations of a saver (lower-cased).
CHATTER = frozenset({"hello", "ismaster", "buildinfo", "endsessions"})

# Fields any command may carry that change nothing on this server.
_GENERIC_FIELDS = frozenset(
    {
        "$db",
        "lsid",
        "$readPreference",
        "$clusterTime",
        "comment",
        "writeConcern",
        "readConcern",
        "maxTimeMS",
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
    }
)
_INDEX_OPTIONS = ("unique", "sparse", "expireAfterSeconds", "partialFilterExpression")

Handler = Callable[[str, dict[str, Any], int], dict[str, Any]]

# A write concern asking for more nodes than this single node: the write is applied, and
# the reply says the concern cannot be met, as a replica set answers a `w` above its
# number of data-bearing nodes.
_WRITE_COMMANDS = frozenset(
    {"insert", "update", "delete", "createIndexes", "dropIndexes", "collMod", "dropDatabase"}
)
UNSATISFIABLE_WRITE_CONCERN = {
    "code": 100,
    "codeName": "UnsatisfiableWriteConcern",
    "errmsg": "Not enough data-bearing nodes",
}


def _unsatisfiable(concern: Any) -> bool:
    w = concern.get("w") if isinstance(concern, Mapping) else None
    return isinstance(w, int) and not isinstance(w, bool) and w > 1


def _only(what: str, document: Mapping[str, Any], allowed: set[str] | frozenset[str]) -> None:
    unknown = set(document) - allowed
    if unknown:
        raise CommandError(115, f"{what}: {sorted(unknown)} not supported by the wire server")


def _key(spec: Any) -> list[tuple[str, Any]]:
    """An index key (document or pairs) as comparable pairs."""
    pairs = spec.items() if isinstance(spec, Mapping) else spec
    return [(f, int(d) if isinstance(d, float) else d) for f, d in pairs]


def _options(index: Mapping[str, Any]) -> dict[str, Any]:
    return {k: index[k] for k in _INDEX_OPTIONS if index.get(k) not in (None, False)}


class Commands:
    """Runs one command document on `mock` (under `lock`) and builds its reply."""

    def __init__(self, mock: mongomock.MongoClient[Any], lock: threading.Lock) -> None:
        self.mock = mock
        self.lock = lock
        self.cursors = Cursors()
        # name -> (handler, the command's own fields, space-separated; None: any, for handshakes)
        self._handlers: dict[str, tuple[Handler, str | None]] = {
            "hello": (self._hello, None),
            "ismaster": (self._hello, None),
            "isMaster": (self._hello, None),
            "buildInfo": (self._build_info, ""),
            "endSessions": (lambda db, cmd, conn: {}, ""),
            "ping": (lambda db, cmd, conn: {}, ""),
            "saslStart": (self._no_authentication, None),
            "find": (self._find, "filter projection sort limit batchSize singleBatch"),
            "aggregate": (self._aggregate, "pipeline cursor allowDiskUse"),
            "getMore": (
                lambda db, cmd, conn: self.cursors.get_more(db, cmd),
                "collection batchSize",
            ),
            "killCursors": (lambda db, cmd, conn: self.cursors.kill(cmd), "cursors"),
            "listIndexes": (self._list_indexes, "cursor"),
            "listCollections": (
                self._list_collections,
                "filter cursor nameOnly authorizedCollections",
            ),
            "insert": (self._insert, "documents ordered"),
            "update": (self._update, "updates ordered"),
            "delete": (self._delete, "deletes ordered"),
            "createIndexes": (self._create_indexes, "indexes"),
            "dropIndexes": (self._drop_indexes, "index"),
            "collMod": (self._coll_mod, "index"),
            "dropDatabase": (self._drop_database, ""),
            "listDatabases": (self._list_databases, "nameOnly"),
        }

    def run(self, db: str, cmd: dict[str, Any], conn_id: int) -> dict[str, Any]:
        """The reply to `cmd`: `ok: 1` and the results, or `ok: 0` and the error."""
        name = next(iter(cmd), "")
        try:
            if name not in self._handlers:
                raise CommandError(59, f"no such command: '{name}'")
            handler, fields = self._handlers[name]
            if fields is not None:
                _only(name, cmd, {name, *fields.split()} | _GENERIC_FIELDS)
            reply = handler(db, cmd, conn_id)
        except Exception as exc:
            return error_reply(exc)
        if name in _WRITE_COMMANDS and _unsatisfiable(cmd.get("writeConcern")):
            reply["writeConcernError"] = UNSATISFIABLE_WRITE_CONCERN
        reply["ok"] = 1.0
        return reply

    def _coll(self, db: str, cmd: dict[str, Any]) -> Any:
        name = next(iter(cmd.values()))
        if not isinstance(name, str) or not name:
            raise CommandError(2, f"collection name has invalid type for '{next(iter(cmd))}'")
        return self.mock[db][name]

    def _exists(self, coll: Any) -> bool:
        return bool(coll.name in coll.database.list_collection_names())

    def _ensure_collection(self, coll: Any) -> bool:
        """Mark the collection created, as a server does on the first write; True if it
        was not (mongomock forgets a collection once its last document and index go)."""
        existed = self._exists(coll)
        coll._store.create()
        return not existed

    @staticmethod
    def _statements(cmd: dict[str, Any], field: str, allowed: frozenset[str]) -> list[Any]:
        statements = cmd.get(field)
        if not isinstance(statements, list) or not statements:
            raise CommandError(9, f"BSON field '{field}' is missing or not a non-empty array")
        if len(statements) > MAX_WRITE_BATCH_SIZE:
            raise CommandError(2, f"Write batch sizes must be between 1 and {MAX_WRITE_BATCH_SIZE}")
        for statement in statements:
            if not isinstance(statement, dict):
                raise CommandError(14, f"each of '{field}' must be a document")
            _only(field, statement, allowed)
        return statements

    def _write(
        self,
        coll: Any,
        cmd: dict[str, Any],
        statements: list[Any],
        one: Callable[[Any], dict[str, Any]],
        creates: bool = False,
    ) -> dict[str, Any]:
        """Statements in order under the lock; `ordered` stops at the first error."""
        totals: dict[str, Any] = {"n": 0}
        errors: list[dict[str, Any]] = []
        with self.lock:
            if creates:
                self._ensure_collection(coll)
            for index, statement in enumerate(statements):
                try:
                    counts = one(statement)
                except Exception as exc:
                    code, errmsg = code_and_message(exc)
                    errors.append({"index": index, "code": code, "errmsg": errmsg})
                    if cmd.get("ordered", True) is not False:
                        break
                    continue
                for key, value in counts.items():
                    if key == "upserted":
                        totals.setdefault(key, []).append({"index": index, "_id": value})
                    else:
                        totals[key] = totals.get(key, 0) + value
        if errors:
            totals["writeErrors"] = errors
        return totals

    def _hello(self, db: str, cmd: dict[str, Any], conn_id: int) -> dict[str, Any]:
        now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        reply: dict[str, Any] = {"helloOk": True, "isWritablePrimary": True}
        if next(iter(cmd)) != "hello":
            reply["ismaster"] = True
        reply.update(
            maxBsonObjectSize=MAX_BSON_OBJECT_SIZE,
            maxMessageSizeBytes=48_000_000,
            maxWriteBatchSize=MAX_WRITE_BATCH_SIZE,
            localTime=now.replace(microsecond=now.microsecond // 1000 * 1000),
            logicalSessionTimeoutMinutes=30,
            connectionId=conn_id,
            minWireVersion=0,
            maxWireVersion=MAX_WIRE_VERSION,
            readOnly=False,
        )
        return reply

    def _no_authentication(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        # A server refuses credentials of a user it does not have: this one has no users.
        raise CommandError(
            18,
            "Authentication failed: the stand-in server has no users or authentication; "
            "connect without a username and password",
        )

    def _build_info(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        return {"version": "7.0.0", "versionArray": [7, 0, 0, 0], "bits": 64}

    def _find(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        coll = self._coll(db, cmd)
        sort = cmd.get("sort")
        if sort is not None and not isinstance(sort, Mapping):
            raise CommandError(14, "sort must be a document")
        limit = non_negative(cmd.get("limit"), "limit")
        with self.lock:
            cursor = coll.find(cmd.get("filter") or {}, cmd.get("projection") or None)
            if sort:
                cursor = cursor.sort(list(sort.items()))
            docs = list(cursor.limit(limit) if limit else cursor)
        ns = f"{db}.{coll.name}"
        return self.cursors.first_batch(
            ns, docs, cmd.get("batchSize"), bool(cmd.get("singleBatch"))
        )

    def _aggregate(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        coll = self._coll(db, cmd)
        pipeline, cursor = cmd.get("pipeline"), cmd.get("cursor")
        if not isinstance(pipeline, list) or not isinstance(cursor, Mapping):
            raise CommandError(9, "aggregate needs a 'pipeline' array and a 'cursor' document")
        _only("aggregate cursor", cursor, {"batchSize"})
        with self.lock:
            docs = list(coll.aggregate(pipeline))
        return self.cursors.first_batch(f"{db}.{coll.name}", docs, cursor.get("batchSize"))

    def _list_collections(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        """`Collection.options()` asks for one collection by name, the savers' setup for
        two (`$in`); mongomock keeps no collection options (no collation), so every
        collection has none."""
        filter_ = cmd.get("filter") or {}
        wanted = filter_.get("name")
        if set(filter_) - {"name"} or (isinstance(wanted, Mapping) and set(wanted) != {"$in"}):
            raise CommandError(2, f"listCollections filter {filter_!r} is not supported here")
        with self.lock:
            names = self.mock[db].list_collection_names()
        if isinstance(wanted, Mapping):  # the savers' setup: both collections at once
            names = [n for n in names if n in wanted["$in"]]
        elif wanted is not None:
            names = [n for n in names if n == wanted]
        docs = [{"name": n, "type": "collection", "options": {}, "info": {}} for n in names]
        return self.cursors.first_batch(f"{db}.$cmd.listCollections", docs, None)

    def _list_indexes(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        coll = self._coll(db, cmd)
        with self.lock:
            if not self._exists(coll):
                raise CommandError(26, f"ns does not exist: {db}.{coll.name}")
            docs = []
            for info in coll.list_indexes():
                doc = {"v": info.get("v", 2), "key": dict(info["key"]), "name": info["name"]}
                doc.update({k: v for k, v in info.items() if k not in doc})
                docs.append(doc)
        batch_size = (cmd.get("cursor") or {}).get("batchSize")
        return self.cursors.first_batch(f"{db}.{coll.name}", docs, batch_size)

    def _insert(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        coll = self._coll(db, cmd)
        documents = cmd.get("documents")
        if not isinstance(documents, list) or not documents:
            raise CommandError(9, "BSON field 'documents' is missing or not a non-empty array")

        def insert(document: Any) -> dict[str, Any]:
            coll.insert_one(document)
            return {"n": 1}

        return self._write(coll, cmd, documents, insert, creates=True)

    def _update(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        coll = self._coll(db, cmd)
        statements = self._statements(cmd, "updates", frozenset({"q", "u", "upsert", "multi"}))

        def update(statement: dict[str, Any]) -> dict[str, Any]:
            query, change = statement.get("q"), statement.get("u")
            upsert, multi = bool(statement.get("upsert")), bool(statement.get("multi"))
            if not isinstance(query, Mapping):
                raise CommandError(9, "BSON field 'update.updates.q' must be a document")
            if not isinstance(change, Mapping):
                raise CommandError(115, "a pipeline update is not supported by the wire server")
            if change and next(iter(change)).startswith("$"):
                method = coll.update_many if multi else coll.update_one
                result = method(query, change, upsert=upsert)
            elif multi:
                raise CommandError(9, "multi update is not supported for replacement-style update")
            else:
                result = coll.replace_one(query, change, upsert=upsert)
            counts = {"n": result.matched_count, "nModified": result.modified_count}
            if result.upserted_id is not None:
                counts.update(n=1, upserted=result.upserted_id)
            return counts

        upserts = any(statement.get("upsert") for statement in statements)
        reply = self._write(coll, cmd, statements, update, creates=upserts)
        reply.setdefault("nModified", 0)
        return reply

    def _delete(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        coll = self._coll(db, cmd)
        statements = self._statements(cmd, "deletes", frozenset({"q", "limit"}))

        def delete(statement: dict[str, Any]) -> dict[str, Any]:
            limit = non_negative(statement.get("limit"), "limit")
            if not isinstance(statement.get("q"), Mapping) or limit not in (0, 1):
                raise CommandError(9, "a delete needs a 'q' document and a 'limit' of 0 or 1")
            method = coll.delete_one if limit == 1 else coll.delete_many
            return {"n": method(statement["q"]).deleted_count}

        return self._write(coll, cmd, statements, delete)

    def _create_indexes(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        coll = self._coll(db, cmd)
        specs = self._statements(cmd, "indexes", frozenset({"key", "name", *_INDEX_OPTIONS}))
        with self.lock:
            created = self._ensure_collection(coll)
            before = coll.index_information()
            for spec in specs:
                key, name = _key(spec.get("key") or {}), spec.get("name")
                if not key or not isinstance(name, str) or not name:
                    raise CommandError(67, "an index needs a non-empty 'key' and a 'name'")
                existing = coll.index_information()
                same_name = existing.get(name)
                if same_name is not None and _key(same_name["key"]) != key:
                    raise CommandError(
                        86, f"An existing index has the same name but a different key: {name}"
                    )
                if same_name is not None and _options(same_name) != _options(spec):
                    raise CommandError(
                        85, f"An existing index has the same name but other options: {name}"
                    )
                for other, info in existing.items():
                    if other != name and _key(info["key"]) == key:
                        raise CommandError(85, f"Index already exists with another name: {other}")
                if same_name is None:
                    coll.create_index(key, name=name, **_options(spec))
            after = coll.index_information()
        return {
            "numIndexesBefore": len(before) or 1,
            "numIndexesAfter": len(after),
            "createdCollectionAutomatically": created,
        }

    def _drop_indexes(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        coll = self._coll(db, cmd)
        name = cmd.get("index")
        with self.lock:
            if not self._exists(coll):
                raise CommandError(26, f"ns not found {db}.{coll.name}")
            indexes = coll.index_information()
            if name not in indexes or name == "_id_":
                raise CommandError(27, f"index not found with name [{name}]")
            coll.drop_index(name)
        return {"nIndexesWas": len(indexes)}

    def _coll_mod(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        """Changes the TTL of an index, the one use the savers have for it."""
        coll = self._coll(db, cmd)
        index = cmd.get("index")
        if not isinstance(index, Mapping):
            raise CommandError(115, "collMod: only {index: {name, expireAfterSeconds}}")
        _only("collMod index", index, {"name", "expireAfterSeconds"})
        new_ttl = index.get("expireAfterSeconds")
        if isinstance(new_ttl, bool) or not isinstance(new_ttl, (int, float)) or new_ttl < 0:
            raise CommandError(2, "expireAfterSeconds must be a non-negative number")
        with self.lock:
            if not self._exists(coll):
                raise CommandError(26, f"ns does not exist: {db}.{coll.name}")
            name = index.get("name")
            if name not in coll.index_information() or name == "_id_":
                raise CommandError(27, f"index not found with name [{name}]")
            # mongomock keeps index options, TTL bookkeeping included, in the collection
            # store: registering the index again under its name makes documents really
            # expire with the new TTL (mongomock applies TTLs when a collection is read).
            store = coll._store
            current = dict(store.indexes[name])
            old_ttl = current.get("expireAfterSeconds")
            current["expireAfterSeconds"] = new_ttl
            store.create_index(name, current)
        reply: dict[str, Any] = {"expireAfterSeconds_new": new_ttl}
        if old_ttl is not None:
            reply["expireAfterSeconds_old"] = old_ttl
        return reply

    def _drop_database(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        with self.lock:
            self.mock.drop_database(db)
        return {"dropped": db}

    def _list_databases(self, db: str, cmd: dict[str, Any], _conn: int) -> dict[str, Any]:
        """Names only: what `list_database_names()` asks (test_cli checks a dry run)."""
        if not cmd.get("nameOnly"):
            raise CommandError(115, "listDatabases without nameOnly is not supported here")
        with self.lock:
            names = sorted(self.mock.list_database_names())
        return {"databases": [{"name": name} for name in names]}
