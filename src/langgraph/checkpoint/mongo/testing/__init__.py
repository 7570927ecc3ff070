"""In-process stand-ins for a MongoDB server, for testing applications that use the savers.

`client()` returns a `mongomock.MongoClient` for `MongoDBSaver`, `async_client()` a
mongomock-motor `AsyncMongoMockClient` for `AsyncMongoDBSaver`: both savers run on them
unchanged, in process, with no server and no network. Install them with the `testing`
extra (`pip install "langgraph-checkpoint-mongo[testing]"`):

```python
from langgraph.checkpoint.mongo import MongoDBSaver
from langgraph.checkpoint.mongo.testing import client

saver = MongoDBSaver(client())
saver.setup()
graph = builder.compile(checkpointer=saver)
```

mongomock 4.3 lacks or breaks a few things the savers send to every server, so each
function first applies these fixes to mongomock (once per process; they patch mongomock's
classes, so they affect every mongomock client of the process, and nothing else):

1. `Collection.options()`, which mongomock lacks (its `__getattr__` would hand back a
   sub-collection named "options"): it returns `{}`, as a server does for a collection
   created without options (mongomock keeps none; see its
   https://github.com/mongomock/mongomock/blob/develop/Missing_Features.rst).
2. `$lookup` with a `pipeline`, which mongomock refuses: MongoDB 5.0's concise correlated
   form (`localField`/`foreignField` *and* a `pipeline`), which the savers send, runs as
   the server defines it: the equality join, then the sub-pipeline on each joined array. A
   `let`, or a `pipeline` without `localField`, is still refused
   (https://github.com/mongomock/mongomock/issues/845).
3. `bulk_write` on pymongo >= 4.11, which passes `sort=` to the bulk builder's
   `add_update`/`add_replace` (https://github.com/mongomock/mongomock/issues/912). The
   savers never send a `sort` on an update, so one is refused rather than ignored.
4. TTL expiry of a document whose `_id` is a subdocument (the savers' are): mongomock's
   sweep deletes by the raw dict and crashes with `TypeError: unhashable type: 'dict'`
   (the `del self[exp_id]` of https://github.com/mongomock/mongomock/issues/799).
5. Floats read back as new objects, as a server's reply decodes them: mongomock hands out
   the float objects it stored, so `[nan] == [nan]` would hold by identity, as it never
   does for what a server returns.
6. The 16 MiB document limit, which mongomock does not enforce, so code that works on it
   could fail on every server. A write whose document would exceed it fails as mongod 7.0
   answers it, and nothing is stored: an insert with a `WriteError` of code 2 ("object to
   insert too large"), an update with 17419 ("Resulting document after update is larger
   than 16777216"), an upsert that inserts with 17420 ("Document to upsert is larger than
   16777216"), one statement of a bulk write in its `BulkWriteError`. An aggregation result
   over the server's internal limit (16 MiB + 16 KiB: a `$lookup` that joins too much)
   fails with `OperationFailure` code 4568, as mongod's classic engine answers it.
7. The `listCollections` and `buildInfo` database commands, which mongomock's `command`
   lacks: the first lists the collections its `filter` matches, each with no options, in
   a first batch as a server replies; the second answers as MongoDB 7.0 does (the version
   the wire server reports too).
8. BSON values stored as a server stores them, and so read back as a driver decodes them:
   a `bson.datetime_ms.DatetimeMS` reads back as a `datetime` and a `Binary` of subtype 0
   as `bytes`, where mongomock keeps the object it was given (a `DatetimeMS` beyond
   `datetime`'s years stays one, as PyMongo's `DATETIME_AUTO` returns it); and an empty
   `Timestamp(0, 0)` inside a subdocument or array is kept, where mongomock replaces it by
   the current time at any depth (a server only in top-level fields). Filters compare them
   as a server does too.
9. `create_indexes` with a partial index: mongomock's drops the `partialFilterExpression`
   (its `create_index` keeps it), so a `setup()` that compares the listed index with the
   one it wants would create it again on every call
   (https://github.com/mongomock/mongomock/issues/798).

And two speed-ups, behaviour unchanged, so that a test suite with many threads stays fast:

- mongomock's `aggregate` copies the whole collection before its first stage; a leading
  `$match` is applied as a `find` filter first (the same filter engine);
- a scan of a collection reads its documents from the underlying dict, in the same order,
  instead of walking its `OrderedDict`, which re-hashes each subdocument `_id` in Python.

mongomock is not MongoDB: it proves your application's logic, not your deployment (indexes,
timeouts, a network). Run the same tests against a real server too when you can.

To try the `threads` and `copy-threads` commands or an application with a real driver and
no MongoDB, `python -m langgraph.checkpoint.mongo.testing serve [--port 27017]` serves the
same mongomock, with these fixes, over MongoDB's wire protocol on 127.0.0.1: for trying
and testing only, its data in memory, not for data you keep.
"""

from __future__ import annotations

import functools
import importlib.util
import struct
import threading
from typing import Any

# Both stand-ins come with the `testing` extra: without it, say which install brings them
# here, at the import, rather than a bare `No module named 'mongomock'` at the first call.
_missing = [m for m in ("mongomock", "mongomock_motor") if importlib.util.find_spec(m) is None]
if _missing:
    raise ImportError(
        f"langgraph.checkpoint.mongo.testing needs {' and '.join(_missing)} (the testing "
        'extra): pip install "langgraph-checkpoint-mongo[testing]"',
        name=_missing[0],
    )

# mongod's maxBsonObjectSize, and the 16 KiB more it allows a document it builds itself
# (BSONObjMaxInternalSize: an aggregation's result, for example).
MAX_DOCUMENT_SIZE = 16 * 1024 * 1024
MAX_INTERNAL_DOCUMENT_SIZE = MAX_DOCUMENT_SIZE + 16 * 1024
_TOO_LARGE_TO_INSERT = "object to insert too large"

__all__ = ["apply_mongomock_fixes", "async_client", "client"]

_applied = False
_applying = threading.Lock()


def client(**kwargs: Any) -> Any:
    """A new `mongomock.MongoClient` (an empty in-memory server) for `MongoDBSaver`.

    Keyword arguments go to `mongomock.MongoClient`. Every client is a server of its own:
    share one client between savers that must see the same data.
    """
    apply_mongomock_fixes()
    import mongomock

    return mongomock.MongoClient(**kwargs)


def async_client(**kwargs: Any) -> Any:
    """A new mongomock-motor `AsyncMongoMockClient` (Motor's API) for `AsyncMongoDBSaver`.

    Keyword arguments go to `AsyncMongoMockClient`. Every client is a server of its own:
    share one client between savers that must see the same data.
    """
    apply_mongomock_fixes()
    from mongomock_motor import AsyncMongoMockClient

    return AsyncMongoMockClient(**kwargs)


def apply_mongomock_fixes() -> None:
    """Apply the fixes listed in this module's docstring to mongomock; idempotent.

    `client()` and `async_client()` call it; call it yourself only for mongomock clients
    you build otherwise (for example a wire-protocol test server that executes on one).
    """
    global _applied
    with _applying:
        if _applied:
            return
        _patch_mongomock()
        _applied = True


def _patch_mongomock() -> None:
    from collections import OrderedDict

    import bson
    from bson.binary import Binary
    from bson.datetime_ms import DatetimeMS
    from bson.errors import InvalidBSON
    from bson.timestamp import Timestamp
    from mongomock import aggregate as mongomock_aggregate
    from mongomock import collection as mongomock_collection
    from mongomock import command_cursor as mongomock_command_cursor
    from mongomock import filtering, helpers
    from mongomock.collection import BulkOperationBuilder, Collection
    from mongomock.database import Database
    from mongomock.store import CollectionStore
    from pymongo import IndexModel
    from pymongo.errors import DuplicateKeyError, OperationFailure, WriteError

    # mongomock's stubs leave this untyped; the handlers below take and return its documents.
    process_pipeline: Any = mongomock_aggregate.process_pipeline
    filter_applies: Any = filtering.filter_applies

    def no_options(self: Any, session: Any = None, comment: Any = None) -> dict[str, Any]:
        return {}

    def concise_lookup(plain_lookup: Any) -> Any:
        @functools.wraps(plain_lookup)
        def handler(documents: Any, database: Any, options: Any) -> Any:
            if "pipeline" not in options or "let" in options or "localField" not in options:
                return plain_lookup(documents, database, options)
            plain = {key: value for key, value in options.items() if key != "pipeline"}
            joined = plain_lookup(documents, database, plain)
            for document in joined:
                document[options["as"]] = list(
                    process_pipeline(document[options["as"]], database, options["pipeline"], None)
                )
            return joined

        return handler

    def accept_sort(method: Any) -> Any:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, sort: Any = None, **kwargs: Any) -> Any:
            if sort is not None:
                raise NotImplementedError("mongomock cannot apply a sort to a bulk update")
            return method(self, *args, **kwargs)

        return wrapper

    def delete_by_hashable_id(method: Any) -> Any:
        @functools.wraps(method)
        def wrapper(self: Any, key: Any) -> Any:
            if isinstance(key, dict) and not isinstance(key, helpers.hashdict):
                key = helpers.hashdict(key)
            return method(self, key)

        return wrapper

    class TooLargeError(DuplicateKeyError):
        # Raised where mongomock checks unique indexes, so it rolls the write back; the
        # wrappers below turn it into the server's error before any caller sees it.
        def __init__(self, size: int) -> None:
            super().__init__(f"document of {size} bytes", 11000)
            self.size = size

    def within_size_limit(method: Any) -> Any:
        @functools.wraps(method)
        def wrapper(self: Any, new_data: Any) -> Any:
            size = len(bson.encode(new_data))
            if size > MAX_DOCUMENT_SIZE:
                raise TooLargeError(size)
            return method(self, new_data)

        return wrapper

    def refuse_large(method: Any, update: bool) -> Any:
        # An upsert inserts through `_insert`: its refusal becomes the upsert's.
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except TooLargeError as exc:
                code, message = (
                    (17419, "Resulting document after update is larger than")
                    if update
                    else (2, f"{_TOO_LARGE_TO_INSERT}. size in bytes: {exc.size}, max size:")
                )
            except WriteError as exc:
                if not update or exc.code != 2 or not str(exc).startswith(_TOO_LARGE_TO_INSERT):
                    raise
                code, message = 17420, "Document to upsert is larger than"
            raise WriteError(f"{message} {MAX_DOCUMENT_SIZE}", code) from None

        return wrapper

    def aggregate_match_first(self: Any, pipeline: Any, session: Any = None, **_: Any) -> Any:
        if pipeline and "$match" in pipeline[0] and len(pipeline[0]) == 1:
            documents = list(self.find(pipeline[0]["$match"]))
            rest = pipeline[1:]
        else:
            documents, rest = list(self.find()), pipeline
        results = list(process_pipeline(documents, self.database, rest, session))
        for result in results:
            size = len(bson.encode(result))
            if size > MAX_INTERNAL_DOCUMENT_SIZE:
                raise OperationFailure(
                    f"Total size of documents in the $lookup result ({size} bytes) exceeds "
                    f"maximum document size {MAX_INTERNAL_DOCUMENT_SIZE}",
                    4568,
                )
        return command_cursor(results)

    copy_field: Any = mongomock_collection._copy_field

    def copy_field_with_new_floats(value: Any, container: Any) -> Any:
        if type(value) is float:  # a new object with the same bits (NaN payloads too)
            return struct.unpack("<d", struct.pack("<d", value))[0]
        return copy_field(value, container)  # its recursion comes back here

    def documents_without_rehashing(self: Any) -> Any:
        self._remove_expired_documents()
        with self._rwlock.reader():
            yield from dict.values(self._documents)

    def server_commands(command: Any) -> Any:
        @functools.wraps(command)
        def wrapper(self: Any, name: Any, *args: Any, **kwargs: Any) -> Any:
            if name == "buildInfo":
                return {"version": "7.0.0", "versionArray": [7, 0, 0, 0], "bits": 64, "ok": 1.0}
            if name != "listCollections":
                return command(self, name, *args, **kwargs)
            selected = kwargs.get("filter") or {}
            listed = [
                {"name": collection, "type": "collection", "options": {}, "info": {}}
                for collection in self.list_collection_names()
                if filter_applies(selected, {"name": collection})
            ]
            ns = f"{self.name}.$cmd.listCollections"
            return {"cursor": {"id": 0, "ns": ns, "firstBatch": listed}, "ok": 1.0}

        return wrapper

    normalized: Any = helpers.patch_datetime_awareness_in_document

    def as_a_server_stores(value: Any, depth: int = 0) -> Any:
        for mapping in (OrderedDict, dict):
            if isinstance(value, mapping):
                return mapping((k, as_a_server_stores(v, depth + 1)) for k, v in value.items())
        if isinstance(value, (tuple, list)):
            return [as_a_server_stores(item, depth + 1) for item in value]
        if isinstance(value, Timestamp) and depth > 1:  # not a top-level field
            return value
        if type(value) is Binary and value.subtype == 0:
            return bytes(value)
        if isinstance(value, DatetimeMS):
            try:
                value = value.as_datetime()
            except (OverflowError, ValueError, InvalidBSON):
                return value
        return normalized(value)

    def create_indexes_with_partial_filters(
        self: Any, indexes: list[Any], session: Any = None
    ) -> list[str]:
        for index in indexes:
            if not isinstance(index, IndexModel):
                raise TypeError(f"{index!r} is not an instance of pymongo.operations.IndexModel")
        options = ("expireAfterSeconds", "unique", "sparse", "name", "partialFilterExpression")
        return [
            self.create_index(
                index.document["key"].items(),
                session=session,
                **{option: index.document.get(option) for option in options},
            )
            for index in indexes
        ]

    command_cursor: Any = mongomock_command_cursor.CommandCursor
    handlers = mongomock_aggregate._PIPELINE_HANDLERS
    setattr(helpers, "patch_datetime_awareness_in_document", as_a_server_stores)  # noqa: B010
    setattr(mongomock_collection, "_copy_field", copy_field_with_new_floats)  # noqa: B010
    handlers["$lookup"] = concise_lookup(handlers["$lookup"])
    # setattr: these replace methods that mongomock's stubs declare (or lack).
    setattr(Collection, "options", no_options)  # noqa: B010
    setattr(Database, "command", server_commands(Database.command))  # noqa: B010
    setattr(Collection, "aggregate", aggregate_match_first)  # noqa: B010
    setattr(Collection, "create_indexes", create_indexes_with_partial_filters)  # noqa: B010
    setattr(Collection, "_ensure_uniques", within_size_limit(Collection._ensure_uniques))  # noqa: B010
    setattr(Collection, "_insert", refuse_large(Collection._insert, update=False))  # noqa: B010
    setattr(Collection, "_update", refuse_large(Collection._update, update=True))  # noqa: B010
    for name in ("add_update", "add_replace"):
        setattr(BulkOperationBuilder, name, accept_sort(getattr(BulkOperationBuilder, name)))
    setattr(CollectionStore, "__delitem__", delete_by_hashable_id(CollectionStore.__delitem__))  # noqa: B010
    setattr(CollectionStore, "documents", property(documents_without_rehashing))  # noqa: B010
