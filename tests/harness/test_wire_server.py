"""Tests of the loopback wire-protocol server, through the real drivers.

It serves only what the drivers and the savers send (see
`langgraph/checkpoint/mongo/testing/_wire/commands.py`): these tests cover that, and that
anything else is refused rather than ignored.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import bson
import pytest
from bson.int64 import Int64
from motor.motor_asyncio import AsyncIOMotorClient
from pymongo import (
    ASCENDING,
    AsyncMongoClient,
    IndexModel,
    InsertOne,
    MongoClient,
    ReplaceOne,
    UpdateOne,
    WriteConcern,
)
from pymongo.errors import (
    BulkWriteError,
    ConnectionFailure,
    DocumentTooLarge,
    DuplicateKeyError,
    OperationFailure,
    WriteConcernError,
)

from langgraph.checkpoint.mongo._drivers import maybe_await
from langgraph.checkpoint.mongo.testing._wire import WireServer

pytestmark = pytest.mark.no_server  # the package's own stand-ins or no server at all

ASYNC_DRIVERS = ["pymongo-async", "motor"]


@pytest.fixture
def srv() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture
def client(srv: WireServer) -> Iterator[MongoClient[Any]]:
    c: MongoClient[Any] = MongoClient[dict[str, Any]](srv.uri, serverSelectionTimeoutMS=5000)
    try:
        yield c
    finally:
        c.close()


@asynccontextmanager
async def async_client(driver: str, uri: str, **kwargs: Any) -> AsyncIterator[Any]:
    c: Any
    if driver == "motor":
        c = AsyncIOMotorClient(uri, serverSelectionTimeoutMS=5000, **kwargs)
    else:
        c = AsyncMongoClient(uri, serverSelectionTimeoutMS=5000, **kwargs)
    try:
        yield c
    finally:
        await maybe_await(c.close())


def _sample_doc() -> dict[str, Any]:
    return {
        "_id": "doc-1",
        "blob": b"\x00\x01\xffbinary\x00",
        "big": Int64(2**40),
        "small64": Int64(7),
        "nested": {"z": 1, "a": {"y": 2, "b": 3}, "m": [3, 1, 2]},
        "when": datetime.datetime(2024, 5, 6, 7, 8, 9, 123000),
    }


def found(doc: dict[str, Any] | None) -> dict[str, Any]:
    """The document a `find_one` found (the test fails here when it found none)."""
    assert doc is not None
    return doc


def _assert_sample(doc: dict[str, Any]) -> None:
    expected = _sample_doc()
    assert doc == expected
    assert isinstance(doc["blob"], bytes)
    assert list(doc) == list(expected)
    assert list(doc["nested"]) == ["z", "a", "m"]
    assert list(doc["nested"]["a"]) == ["y", "b"]


# ----------------------------------------------------------------- sync driver


def test_sync_round_trip_types(srv: WireServer, client: MongoClient[Any]) -> None:
    coll = client.db.items
    coll.insert_one(_sample_doc())
    _assert_sample(found(coll.find_one({"blob": b"\x00\x01\xffbinary\x00"})))
    assert found(coll.find_one({"big": 2**40, "nested.a.b": 3}))["_id"] == "doc-1"
    stored = found(srv.mock.db.items.find_one())
    assert isinstance(stored["big"], Int64)


def test_sync_find_streams_in_batches(srv: WireServer, client: MongoClient[Any]) -> None:
    coll = client.db.stream
    coll.insert_many([{"_id": i} for i in range(250)])
    srv.reset()
    docs = list(coll.find().sort("_id", ASCENDING).batch_size(100))
    assert [d["_id"] for d in docs] == list(range(250))
    assert srv.commands == ["find", "getMore", "getMore"]

    srv.reset()
    assert len(list(coll.find())) == 250  # default: 101 first, then the rest
    assert srv.commands == ["find", "getMore"]

    srv.reset()
    cursor = coll.find().batch_size(10)
    next(cursor)
    cursor.close()
    assert srv.commands == ["find", "killCursors"]

    srv.reset()
    assert len(list(coll.find(limit=30).batch_size(25))) == 30
    assert found(coll.find_one(sort=[("_id", -1)]))["_id"] == 249
    assert srv.commands == ["find", "getMore", "find"]


def test_sync_aggregate_match_sort_lookup(client: MongoClient[Any]) -> None:
    db = client.agg
    db.orders.insert_many(
        [
            {"_id": 1, "item": "a", "qty": 5},
            {"_id": 2, "item": "b", "qty": 1},
            {"_id": 3, "item": "a", "qty": 9},
        ]
    )
    db.stock.insert_many([{"_id": "a", "price": 3}, {"_id": "b", "price": 4}])
    join = {"from": "stock", "localField": "item", "foreignField": "_id", "as": "stock"}
    pipeline: list[dict[str, Any]] = [
        {"$match": {"item": "a"}},
        {"$sort": {"qty": -1}},
        {"$lookup": join},
    ]
    result = list(db.orders.aggregate(pipeline, allowDiskUse=True))
    assert [r["_id"] for r in result] == [3, 1]
    assert result[0]["stock"] == [{"_id": "a", "price": 3}]
    db.orders.insert_many([{"item": "c", "qty": i} for i in range(300)])
    assert len(list(db.orders.aggregate([{"$match": {"item": "c"}}], batchSize=50))) == 300


def test_sync_duplicate_key(client: MongoClient[Any]) -> None:
    coll = client.db.dups
    coll.insert_one({"_id": 1})
    with pytest.raises(DuplicateKeyError) as info:
        coll.insert_one({"_id": 1})
    assert info.value.code == 11000
    coll.create_index("k", unique=True)
    coll.insert_one({"_id": 2, "k": "x"})
    with pytest.raises(DuplicateKeyError):
        coll.update_one({"_id": 1}, {"$set": {"k": "x"}})
    assert coll.find_one({"_id": 1}) == {"_id": 1}


def test_sync_bulk_write(srv: WireServer, client: MongoClient[Any]) -> None:
    coll = client.db.bulk
    ops: Sequence[UpdateOne | ReplaceOne[Any]] = [
        UpdateOne({"_id": "a"}, {"$setOnInsert": {"v": 1}}, upsert=True),
        ReplaceOne({"_id": "b"}, {"v": 2}, upsert=True),
    ]
    srv.reset()
    result = coll.bulk_write(ops)
    assert srv.commands == ["update"]
    assert result.upserted_count == 2
    assert result.upserted_ids == {0: "a", 1: "b"}
    again = coll.bulk_write(ops)
    assert (again.upserted_count, again.matched_count, again.modified_count) == (0, 2, 0)
    assert sorted(coll.find(), key=lambda d: d["_id"]) == [
        {"_id": "a", "v": 1},
        {"_id": "b", "v": 2},
    ]

    with pytest.raises(BulkWriteError) as info:
        coll.bulk_write(
            [InsertOne({"_id": "c"}), InsertOne({"_id": "a"}), InsertOne({"_id": "d"})],
            ordered=False,
        )
    details = info.value.details
    assert [(e["index"], e["code"]) for e in details["writeErrors"]] == [(1, 11000)]
    assert details["nInserted"] == 2

    with pytest.raises(BulkWriteError) as info:
        coll.bulk_write([InsertOne({"_id": "e"}), InsertOne({"_id": "a"}), InsertOne({"_id": "f"})])
    assert info.value.details["nInserted"] == 1  # ordered: stops at the error
    assert coll.find_one({"_id": "f"}) is None


def test_sync_update_and_delete(client: MongoClient[Any]) -> None:
    coll = client.db.upd
    coll.insert_many([{"_id": i, "g": i % 2, "n": 0} for i in range(6)])
    res = coll.update_many({"g": 0}, {"$inc": {"n": 1}})
    assert (res.matched_count, res.modified_count) == (3, 3)
    assert coll.replace_one({"_id": 1}, {"r": True}).modified_count == 1
    assert coll.find_one({"_id": 1}) == {"_id": 1, "r": True}
    res = coll.update_one({"_id": 99}, {"$set": {"n": 1}}, upsert=True)
    assert (res.matched_count, res.upserted_id) == (0, 99)
    assert coll.count_documents({"g": 0}) == 3
    assert coll.delete_one({"g": 1}).deleted_count == 1
    assert coll.delete_many({"g": 0}).deleted_count == 3
    assert coll.count_documents({}) == 3
    with pytest.raises(OperationFailure):
        coll.update_one({"_id": 1}, {"$set": {"_id": 5}})


def test_sync_unknown_command_and_mongomock_errors(client: MongoClient[Any]) -> None:
    with pytest.raises(OperationFailure, match="fooBar") as info:
        client.db.command("fooBar")
    assert info.value.code == 59
    with pytest.raises(OperationFailure, match="explain"):
        client.db.command("explain", {"find": "x"})
    with pytest.raises(OperationFailure, match=r"\$foo"):
        client.db.x.find_one({"$foo": 1})
    with pytest.raises(OperationFailure, match="not supported"):
        list(client.db.x.aggregate([{"$foo": 1}]))
    assert client.db.command("hello")["ok"] == 1.0  # the connection survived


def test_what_the_savers_never_send_is_refused(client: MongoClient[Any]) -> None:
    coll = client.db.refused
    coll.insert_one({"_id": 1})
    with pytest.raises(OperationFailure) as not_found:
        coll.find_one_and_delete({"_id": 1})
    assert not_found.value.code == 59  # findAndModify: no such command
    refused: dict[str, Callable[[], object]] = {
        "database sizes": lambda: client.admin.command("listDatabases"),
        "find option": lambda: coll.find_one(skip=1),
        "pipeline update": lambda: coll.update_one({"_id": 1}, [{"$set": {"p": 1}}]),
        "index option": lambda: coll.create_index("p", hidden=True),
        "delete option": lambda: coll.delete_one({"_id": 1}, hint="_id_"),
    }
    for what, call in refused.items():
        with pytest.raises(OperationFailure, match="not supported") as info:
            call()
        assert info.value.code == 115, what
    assert coll.find_one() == {"_id": 1}  # nothing was half done


def test_sync_driver_refuses_documents_over_the_hello_limit(
    srv: WireServer, client: MongoClient[Any]
) -> None:
    assert client.db.command("hello")["maxBsonObjectSize"] == 16 * 1024 * 1024
    srv.reset()
    with pytest.raises(DocumentTooLarge):
        client.db.big.insert_one({"blob": b"x" * (17 * 1024 * 1024)})
    assert srv.count() == 0  # refused by the driver, never sent
    client.db.big.insert_one({"_id": 1, "blob": b"x" * (15 * 1024 * 1024)})
    assert len(found(client.db.big.find_one())["blob"]) == 15 * 1024 * 1024


def test_sync_large_documents_split_batches(srv: WireServer, client: MongoClient[Any]) -> None:
    coll = client.db.large
    for i in range(3):
        coll.insert_one({"_id": i, "blob": b"y" * (7 * 1024 * 1024)})
    srv.reset()
    assert [d["_id"] for d in coll.find()] == [0, 1, 2]
    assert srv.commands == ["find", "getMore"]  # 16 MiB per batch: 2 docs, then 1
    # A result document over 16 MiB + 16 KiB is refused as mongod refuses a `$lookup`
    # joining too much: the savers then read a checkpoint and its writes apart.
    join = {"from": "large", "localField": "k", "foreignField": "k", "as": "all"}
    coll.update_many({}, {"$set": {"k": 1}})
    with pytest.raises(OperationFailure) as too_large:
        list(coll.aggregate([{"$match": {"_id": 0}}, {"$lookup": join}]))
    assert too_large.value.code == 4568


def test_sync_indexes_and_ttl(srv: WireServer, client: MongoClient[Any]) -> None:
    coll = client.db.idx
    with pytest.raises(OperationFailure):
        client.db.command("collMod", "idx", index={"name": "x", "expireAfterSeconds": 1})
    assert list(coll.list_indexes()) == []
    coll.create_index([("ts", ASCENDING)], name="ts_ttl", expireAfterSeconds=3600)
    coll.create_index([("a", 1), ("b", -1)], unique=True)
    coll.create_index([("ts", ASCENDING)], name="ts_ttl", expireAfterSeconds=3600)  # no-op
    info = coll.index_information()
    assert set(info) == {"_id_", "ts_ttl", "a_1_b_-1"}
    assert info["ts_ttl"]["expireAfterSeconds"] == 3600
    assert info["a_1_b_-1"]["key"] == [("a", 1), ("b", -1)]
    assert info["a_1_b_-1"]["unique"] is True
    with pytest.raises(OperationFailure) as conflict:
        coll.create_index([("ts", ASCENDING)], name="ts_ttl", expireAfterSeconds=60)
    assert conflict.value.code == 85

    reply = client.db.command("collMod", "idx", index={"name": "ts_ttl", "expireAfterSeconds": 0})
    assert reply["expireAfterSeconds_old"] == 3600
    assert reply["expireAfterSeconds_new"] == 0
    assert coll.index_information()["ts_ttl"]["expireAfterSeconds"] == 0
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    coll.insert_one({"_id": 1, "ts": old})
    assert coll.count_documents({}) == 0  # expired right away with the new TTL

    coll.drop_index("ts_ttl")
    assert set(coll.index_information()) == {"_id_", "a_1_b_-1"}
    with pytest.raises(OperationFailure) as missing:
        coll.drop_index("nope")
    assert missing.value.code == 27
    coll.drop_index("a_1_b_-1")
    assert set(coll.index_information()) == {"_id_"}  # the emptied collection still exists


def test_a_write_concern_above_one_node_is_answered_unsatisfiable(
    client: MongoClient[Any],
) -> None:
    """The write is applied and the reply carries a writeConcernError (code 100), as a
    replica set answers a `w` above its data-bearing nodes; `w: 1` and majority pass."""
    docs = client.concern.docs
    for w in (1, "majority"):
        docs.with_options(write_concern=WriteConcern(w=w)).insert_one({"w": str(w)})
    unmet = docs.with_options(write_concern=WriteConcern(w=50))
    with pytest.raises(WriteConcernError) as caught:
        unmet.update_one({"_id": 1}, {"$set": {"x": 1}}, upsert=True)
    assert caught.value.code == 100
    with pytest.raises(WriteConcernError):
        unmet.create_indexes([IndexModel([("x", ASCENDING)], name="x_1")])
    assert docs.find_one({"_id": 1}) == {"_id": 1, "x": 1}
    assert "x_1" in docs.index_information()
    client.drop_database("concern")


def test_sync_drop_database(client: MongoClient[Any]) -> None:
    db = client.gone
    db.docs.insert_one({"_id": 1})
    db.docs.create_index("k", name="k_1")
    assert "gone" in client.list_database_names()
    client.drop_database("gone")
    assert "gone" not in client.list_database_names()
    assert db.docs.find_one() is None
    assert db.docs.index_information() == {}  # no such collection any more
    client.drop_database("never-existed")


def test_reset_count_and_chatter_not_counted(srv: WireServer) -> None:
    with MongoClient[dict[str, Any]](srv.uri) as c:
        assert c.admin.command("buildInfo")["version"] == "7.0.0"
        c.admin.command("hello")
        c.admin.command("isMaster")
        assert srv.count() == 0
        assert srv.commands == []
        c.db.x.insert_one({})
        c.db.x.find_one()
        assert srv.commands == ["insert", "find"]
        assert srv.count() == 2
        srv.reset()
        assert srv.count() == 0
    assert srv.commands == []  # endSessions on close is not counted


def test_sync_threads_concurrent(srv: WireServer, client: MongoClient[Any]) -> None:
    srv.delay = 0.1
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            client.db.threads.insert_one({"_id": n})
            assert client.db.threads.find_one({"_id": n}) == {"_id": n}
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    assert errors == []
    assert client.db.threads.count_documents({}) == 8
    assert elapsed < 1.2  # 16 commands x 0.1 s would be 1.6 s if serialised


def _server_threads(server: WireServer) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"WireServer-{server.port}")]


def test_servers_are_independent_and_stop_cleanly() -> None:
    a = WireServer().start()
    b = WireServer().start()
    try:
        assert a.uri != b.uri
        assert a.uri.startswith("mongodb://127.0.0.1:")
        assert a.uri.endswith("/?directConnection=true")
        with (
            MongoClient[dict[str, Any]](a.uri, serverSelectionTimeoutMS=300) as ca,
            MongoClient[dict[str, Any]](b.uri) as cb,
        ):
            ca.db.x.insert_one({"_id": "only-a"})
            assert cb.db.x.find_one() is None
            assert a.mock.db.x.find_one() == {"_id": "only-a"}
            assert len(_server_threads(a)) >= 2  # accept loop + connection threads
            started = time.monotonic()
            a.stop()  # hangs up on ca's open connections
            assert time.monotonic() - started < 1.0
            assert _server_threads(a) == []
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", a.port), timeout=1).close()
            with pytest.raises(ConnectionFailure):
                ca.db.x.find_one()
    finally:
        a.stop()
        b.stop()
    assert _server_threads(b) == []


def test_stop_hangs_up_on_commands_in_flight() -> None:
    server = WireServer(delay=5.0).start()
    outcome: list[BaseException | None] = []
    with MongoClient[dict[str, Any]](server.uri, serverSelectionTimeoutMS=300) as c:
        c.admin.command("hello")  # connect before the delayed command (not delayed)

        def run() -> None:
            try:
                c.db.x.find_one()
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=run)
        worker.start()
        deadline = time.monotonic() + 2
        while server.count() == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        server.stop()
        worker.join(5)
        assert time.monotonic() - started < 2.0  # the delay sleep was interrupted
    assert len(outcome) == 1
    assert isinstance(outcome[0], ConnectionFailure)


def _raw_round_trip(uri_port: int, opcode: int, payload: bytes) -> tuple[int, int, bytes]:
    """Send one raw message; return (response opcode, responseTo, body)."""
    with socket.create_connection(("127.0.0.1", uri_port), timeout=2) as sock:
        sock.sendall(struct.pack("<iiii", 16 + len(payload), 4242, 0, opcode) + payload)
        header = b""
        while len(header) < 16:
            chunk = sock.recv(16 - len(header))
            if not chunk:
                return -1, -1, b""
            header += chunk
        length, _rid, response_to, reply_opcode = struct.unpack("<iiii", header)
        body = b""
        while len(body) < length - 16:
            body += sock.recv(length - 16 - len(body))
        return reply_opcode, response_to, body


def test_raw_legacy_handshake_and_bad_messages(srv: WireServer) -> None:
    query = bson.encode({"isMaster": 1, "helloOk": True})
    op_query = struct.pack("<i", 0) + b"admin.$cmd\x00" + struct.pack("<ii", 0, -1) + query
    opcode, response_to, body = _raw_round_trip(srv.port, 2004, op_query)
    assert (opcode, response_to) == (1, 4242)  # OP_REPLY to our request
    flags, cursor_id, _start, n_returned = struct.unpack_from("<iqii", body)
    assert (flags, cursor_id, n_returned) == (0, 0, 1)
    hello = bson.decode(body[20:])
    assert hello["ismaster"] is True
    assert hello["isWritablePrimary"] is True
    assert hello["maxWireVersion"] >= 21
    assert hello["maxMessageSizeBytes"] == 48_000_000
    assert hello["maxWriteBatchSize"] == 100_000
    assert hello["logicalSessionTimeoutMinutes"] == 30

    # OP_QUERY is for that handshake only: a legacy read or another command fails.
    legacy_find = struct.pack("<i", 0) + b"db.coll\x00" + struct.pack("<ii", 0, 0) + bson.encode({})
    legacy_cmd = struct.pack("<i", 0) + b"db.$cmd\x00" + struct.pack("<ii", 0, -1)
    for message in (legacy_find, legacy_cmd + bson.encode({"find": "coll"})):
        opcode, _, body = _raw_round_trip(srv.port, 2004, message)
        assert opcode == 1
        assert struct.unpack_from("<i", body)[0] & 2  # QueryFailure
        assert bson.decode(body[20:])["ok"] == 0

    assert _raw_round_trip(srv.port, 2012, b"\x00" * 9) == (-1, -1, b"")  # OP_COMPRESSED
    assert _raw_round_trip(srv.port, 2013, b"\x00\x00\x00\x00\x07junk") == (-1, -1, b"")
    # moreToCome (an unacknowledged write): no driver sends one here, so it is refused.
    unacknowledged = struct.pack("<IB", 2, 0) + bson.encode({"insert": "x", "$db": "db"})
    assert _raw_round_trip(srv.port, 2013, unacknowledged) == (-1, -1, b"")
    assert srv.commands == []


# ---------------------------------------------------------------- async drivers


@pytest.mark.parametrize("driver", ASYNC_DRIVERS)
async def test_async_round_trip_and_batches(srv: WireServer, driver: str) -> None:
    async with async_client(driver, srv.uri) as c:
        coll = c.db.items
        await coll.insert_one(_sample_doc())
        _assert_sample(await coll.find_one({"_id": "doc-1"}))
        await coll.insert_many([{"_id": i} for i in range(250)])
        srv.reset()
        docs = await coll.find({"_id": {"$type": "int"}}).batch_size(100).to_list(None)
        assert len(docs) == 250
        assert srv.commands == ["find", "getMore", "getMore"]


@pytest.mark.parametrize("driver", ASYNC_DRIVERS)
async def test_async_aggregate_errors_and_bulk(srv: WireServer, driver: str) -> None:
    async with async_client(driver, srv.uri) as c:
        db = c.adb
        await db.left.insert_many([{"_id": i, "k": i % 3} for i in range(9)])
        await db.right.insert_many([{"_id": k, "label": f"L{k}"} for k in range(3)])
        join = {"from": "right", "localField": "k", "foreignField": "_id", "as": "r"}
        pipeline = [{"$match": {"k": {"$gt": 0}}}, {"$sort": {"_id": -1}}, {"$lookup": join}]
        # Motor returns the cursor, PyMongo's async API a coroutine of it.
        out = await (await maybe_await(db.left.aggregate(pipeline))).to_list(None)
        assert [d["_id"] for d in out] == [8, 7, 5, 4, 2, 1]
        assert out[0]["r"] == [{"_id": 2, "label": "L2"}]

        with pytest.raises(DuplicateKeyError):
            await db.left.insert_one({"_id": 0})
        with pytest.raises(OperationFailure, match="fooBar"):
            await db.command("fooBar")
        with pytest.raises(DocumentTooLarge):
            await db.left.insert_one({"blob": b"z" * (17 * 1024 * 1024)})

        upserts = [
            UpdateOne({"_id": 1}, {"$setOnInsert": {"v": 1}}, upsert=True),
            ReplaceOne({"_id": 2}, {"v": 2}, upsert=True),
        ]
        assert (await db.bulk.bulk_write(upserts)).upserted_ids == {0: 1, 1: 2}
        inserts = [InsertOne({"_id": 3}), InsertOne({"_id": 1}), InsertOne({"_id": 4})]
        with pytest.raises(BulkWriteError) as info:
            await db.bulk.bulk_write(inserts, ordered=False)
        assert [e["index"] for e in info.value.details["writeErrors"]] == [1]
        assert await db.bulk.count_documents({}) == 4


@pytest.mark.parametrize("driver", ASYNC_DRIVERS)
async def test_async_indexes_ttl(srv: WireServer, driver: str) -> None:
    async with async_client(driver, srv.uri) as c:
        coll = c.db.ttl
        await coll.create_index("created", name="created_ttl", expireAfterSeconds=10)
        change = {"name": "created_ttl", "expireAfterSeconds": 20}
        await c.db.command("collMod", "ttl", index=change)
        cursor = await maybe_await(coll.list_indexes())
        indexes = {i["name"]: i for i in await cursor.to_list(None)}
        assert indexes["created_ttl"]["expireAfterSeconds"] == 20
        assert indexes["created_ttl"]["key"] == {"created": 1}


@pytest.mark.parametrize("driver", ASYNC_DRIVERS)
async def test_async_delay_does_not_serialize(srv: WireServer, driver: str) -> None:
    async with async_client(driver, srv.uri) as c:
        coll = c.db.delay
        await coll.insert_one({"_id": 1})
        srv.delay = 0.2
        srv.reset()
        start = time.monotonic()
        found = await asyncio.gather(*(coll.find_one({"_id": 1}) for _ in range(20)))
        elapsed = time.monotonic() - start
        srv.delay = 0.0
        assert found == [{"_id": 1}] * 20
        assert srv.commands == ["find"] * 20
        assert 0.2 <= elapsed < 2.0


async def test_async_fifty_clients_concurrently(srv: WireServer) -> None:
    srv.delay = 0.05

    async def one(n: int) -> Any:
        driver = "motor" if n % 2 else "pymongo-async"
        async with async_client(driver, srv.uri, maxPoolSize=2) as c:
            await c.db.many.insert_one({"_id": n, "payload": bytes([n]) * 100})
            return await c.db.many.find_one({"_id": n})

    start = time.monotonic()
    docs = await asyncio.gather(*(one(n) for n in range(50)))
    elapsed = time.monotonic() - start
    assert [d["_id"] for d in docs] == list(range(50))
    assert all(d["payload"] == bytes([d["_id"]]) * 100 for d in docs)
    assert srv.mock.db.many.count_documents({}) == 50
    assert srv.count() == 100
    assert elapsed < 4.0  # 100 commands x 0.05 s = 5 s if serialised


MIB = 1024 * 1024


def test_writes_over_16_mib_are_refused_as_mongod_refuses_them(
    srv: WireServer, client: MongoClient[Any]
) -> None:
    """What PyMongo does not refuse itself (acknowledged bulk writes), the server refuses
    with mongod 7.0's codes, per statement, and stores nothing of it: an insert with 2
    (BadValue), an update with 17419, an upsert that inserts with 17420."""
    coll = client.db.limits
    coll.insert_one({"_id": "grown", "a": b"a" * (9 * MIB)})
    requests: Sequence[InsertOne[Any] | UpdateOne | ReplaceOne[Any]] = [
        InsertOne({"_id": "inserted", "blob": b"i" * (17 * MIB)}),
        UpdateOne({"_id": "grown"}, {"$set": {"b": b"b" * (9 * MIB)}}),
        UpdateOne({"_id": "upserted"}, {"$set": {"blob": b"u" * (17 * MIB)}}, upsert=True),
        ReplaceOne({"_id": "grown"}, {"c": b"c" * (17 * MIB)}),
        InsertOne({"_id": "small"}),
    ]
    with pytest.raises(BulkWriteError) as refused:
        coll.bulk_write(requests, ordered=False)
    errors = refused.value.details["writeErrors"]
    assert [(e["index"], e["code"]) for e in errors] == [(0, 2), (1, 17419), (2, 17420), (3, 17419)]
    assert errors[0]["errmsg"].startswith("object to insert too large. size in bytes: ")
    assert errors[1]["errmsg"] == f"Resulting document after update is larger than {16 * MIB}"
    assert errors[2]["errmsg"] == f"Document to upsert is larger than {16 * MIB}"
    assert sorted(d["_id"] for d in coll.find({}, {"_id": 1})) == ["grown", "small"]
    assert list(coll.find({"_id": "grown"}, {"a": 0})) == [{"_id": "grown"}]  # unchanged
    # The same on single writes whose statement PyMongo lets through (under 16 MiB + 16 KiB).
    with pytest.raises(OperationFailure) as grown:
        coll.update_one({"_id": "grown"}, {"$set": {"b": b"b" * (8 * MIB)}})
    assert grown.value.code == 17419
    # What PyMongo refuses itself is never sent.
    srv.reset()
    with pytest.raises(DocumentTooLarge):
        coll.update_one({"_id": "x"}, {"$set": {"blob": b"x" * (17 * MIB)}}, upsert=True)
    assert srv.count() == 0


@pytest.mark.parametrize("driver", ASYNC_DRIVERS)
async def test_async_bulk_write_over_16_mib_is_refused(srv: WireServer, driver: str) -> None:
    async with async_client(driver, srv.uri) as c:
        coll = c.adb.limits
        requests = [
            UpdateOne({"_id": 1}, {"$set": {"blob": b"u" * (17 * MIB)}}, upsert=True),
            UpdateOne({"_id": 2}, {"$set": {"blob": b"s"}}, upsert=True),
        ]
        with pytest.raises(BulkWriteError) as refused:
            await coll.bulk_write(requests, ordered=False)
        assert [e["code"] for e in refused.value.details["writeErrors"]] == [17420]
        assert [d["_id"] async for d in coll.find({}, {"_id": 1})] == [2]


def test_ping_is_answered_and_a_login_refused_in_one_line(srv: WireServer) -> None:
    """PyMongo's documented connection check answers as on a server; credentials are
    refused as a server refuses a user it does not have, saying that this one has none
    (it answered `no such command: 'saslStart'` before)."""
    plain: MongoClient[Any]
    logged_in: MongoClient[Any]
    with MongoClient(srv.uri, serverSelectionTimeoutMS=5000) as plain:
        assert plain.admin.command("ping")["ok"] == 1.0
    uri = srv.uri.replace("mongodb://", "mongodb://someone:secret@")
    with (
        MongoClient(uri, serverSelectionTimeoutMS=5000) as logged_in,
        pytest.raises(OperationFailure) as refused,
    ):
        logged_in.admin.command("ping")
    assert refused.value.code == 18
    assert refused.value.details is not None
    assert refused.value.details["errmsg"] == (
        "Authentication failed: the stand-in server has no users or authentication; "
        "connect without a username and password"
    )
