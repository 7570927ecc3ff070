"""Reading a source's threads for `migrate`: through any saver's public API (`list`/`get_tuple`,
or `alist`/`aget_tuple`), or straight from the collections of the official MongoDB saver,
`langgraph-checkpoint-mongodb`.

Readers and `Requests` yield `SourceCall`s, without I/O, answered by `run_source` (sync methods,
also in a worker thread for a source that only reads synchronously) or `acall` (async ones).
`Requests` keeps at most one stream open: reading never holds more than a batch, and a source that
locks while it lists (`SqliteSaver`) is asked for nothing else meanwhile. Values decode exactly
(`_decoding`): a checkpoint that does not is an `UnreadableCheckpoint` naming it.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, NamedTuple, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo import _options
from langgraph.checkpoint.mongo._keys import checkpoint_label
from langgraph.checkpoint.mongo._runners import run_plan
from langgraph.checkpoint.mongo.migrate._decoding import ExactSerializer, UnrestorableValueError
from langgraph.checkpoint.mongo.migrate._plans import (
    ReadCheckpoints,
    ReadLatest,
    ReadThreadIds,
    SourceCheckpoint,
    SourceItem,
    SourceRead,
    SourceWrite,
    UnreadableCheckpoint,
    inferred_writes,
)

T = TypeVar("T")


def _config(thread_id: str, **configurable: str) -> Any:
    return {"configurable": {"thread_id": thread_id, **configurable}}


def _listed_after(last: CheckpointTuple | None) -> str:
    """The checkpoint a stream failed on, which a saver's `list` does not name."""
    if last is None:
        return "the first checkpoint the source lists"
    return f"the checkpoint the source lists after {checkpoint_label(*_key(last))}"


def _key(checkpoint: CheckpointTuple) -> tuple[str, str]:
    configurable = checkpoint.config["configurable"]
    return configurable.get("checkpoint_ns", ""), configurable["checkpoint_id"]


def _inexact(where: str, reason: object) -> UnreadableCheckpoint:
    return UnreadableCheckpoint(where, f"does not decode exactly here: {reason}")


def _missing(key: tuple[str, str]) -> UnreadableCheckpoint:
    return UnreadableCheckpoint(checkpoint_label(*key), "the source no longer holds it")


class SaverCall(NamedTuple):
    """`saver.<method>(config)` (`"get_tuple"`: a checkpoint tuple or None; `"list"`: a stream
    of them), or with `acall` its async twin, `a<method>` (`alist` is a stream too)."""

    saver: BaseCheckpointSaver[Any]
    method: str
    config: Any


class StreamCall(NamedTuple):
    """The next item of a stream a request opened (None after the last), or with `close` its
    closing before its end (a saver's `list` holds a cursor or a lock)."""

    stream: Any
    close: bool = False


class Blocking(NamedTuple):
    """`function(*args)`: I/O of a source that reads only synchronously (the official saver's
    collections, `SqliteSaver`'s table), which only `run_source` answers (`reads_in_threads`)."""

    function: Callable[..., Any]
    args: tuple[Any, ...] = ()


SourceCall = SaverCall | StreamCall | Blocking
SourceIO = Generator[SourceCall, Any, T]


def run_source(reading: SourceIO[T]) -> T:
    """Run `reading` with the saver's sync methods."""
    return run_plan(reading, _call)


def _call(call: SourceCall) -> Any:
    if isinstance(call, SaverCall):
        return getattr(call.saver, call.method)(call.config)
    if isinstance(call, StreamCall):
        if not call.close:
            return next(call.stream, None)
        close = getattr(call.stream, "close", None)
        return None if close is None else close()
    return call.function(*call.args)


async def acall(call: SourceCall) -> Any:
    """`call` answered with the saver's async methods (the runner of the async API)."""
    if isinstance(call, SaverCall):
        answer = getattr(call.saver, f"a{call.method}")(call.config)
        return answer if call.method == "list" else await answer
    if isinstance(call, StreamCall):
        if not call.close:
            return await anext(call.stream, None)
        aclose = getattr(call.stream, "aclose", None)
        return None if aclose is None else await aclose()
    raise TypeError(  # `reads_in_threads` sends such a source to `run_source`
        f"{call.function.__qualname__} reads synchronously: it runs in a worker thread"
    )


def _blocking(function: Callable[..., T], *args: Any) -> SourceIO[T]:
    answer: T = yield Blocking(function, args)
    return answer


def _sqlite_thread_ids(saver: BaseCheckpointSaver[Any]) -> list[str]:
    """`SqliteSaver`'s threads from its table, instead of deserializing every checkpoint."""
    with saver.cursor(transaction=False) as cursor:  # type: ignore[attr-defined]
        cursor.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")
        return [row[0] for row in cursor]


def _is_a(value: Any, module: str, name: str) -> bool:
    """`isinstance(value, module.name)`, without importing `module` (an optional package)."""
    cls = getattr(sys.modules.get(module), name, None)
    return cls is not None and isinstance(value, cls)


_SQLITE = ("langgraph.checkpoint.sqlite", "SqliteSaver")
_OFFICIAL = ("langgraph.checkpoint.mongodb.saver", "MongoDBSaver")


@dataclass
class Listed:
    """A thread's checkpoints as a source streams them (a saver's `list`), the last one it
    returned, and whether it ended with an error (a saver's `list` ends with it)."""

    stream: Any
    last: CheckpointTuple | None = None
    ended: bool = False


class SaverReader:
    """Any saver, through `list` and `get_tuple` (or `alist` and `aget_tuple`) of a shallow copy
    that decodes exactly (as LangGraph's `with_allowlist` copies a saver with another serializer).
    Its decodes keep LangGraph's stand-ins, so a `list` goes on, and each tuple is checked once
    returned, to name the checkpoint holding a value that could not be rebuilt."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.source = saver  # lists thread ids, whatever its values decode to
        self.serde = ExactSerializer(saver.serde, keep_stand_ins=True)
        self.saver = copy.copy(saver)
        self.saver.serde = self.serde

    def _item(self, checkpoint: CheckpointTuple) -> SourceItem:
        """The checkpoint just returned, or why it holds a value that is not exact."""
        reason = self.serde.take_failure()
        if reason is not None:
            return _inexact(checkpoint_label(*_key(checkpoint)), reason)
        return SourceCheckpoint(checkpoint, inferred_writes(checkpoint.pending_writes or ()))

    def thread_ids(self) -> SourceIO[list[str]]:
        if _is_a(self.source, *_SQLITE):
            return (yield from _blocking(_sqlite_thread_ids, self.source))
        seen: dict[str, None] = {}
        stream = yield SaverCall(self.source, "list", None)
        while (checkpoint := (yield StreamCall(stream))) is not None:
            seen.setdefault(checkpoint.config["configurable"]["thread_id"], None)
        return list(seen)

    def checkpoints(self, thread_id: str) -> SourceIO[Listed]:
        return Listed((yield SaverCall(self.saver, "list", _config(thread_id))))

    def next_checkpoint(self, listed: Listed) -> SourceIO[SourceItem | None]:
        if listed.ended:
            return None
        try:
            checkpoint = yield StreamCall(listed.stream)
        except UnrestorableValueError as exc:  # the stream ends with it
            listed.ended = True
            return _inexact(_listed_after(listed.last), exc)
        if checkpoint is None:
            return None
        listed.last = checkpoint
        return self._item(checkpoint)

    def checkpoints_by_key(
        self, thread_id: str, keys: Sequence[tuple[str, str]]
    ) -> SourceIO[list[SourceItem]]:
        found: list[SourceItem] = []
        for key in keys:
            config = _config(thread_id, checkpoint_ns=key[0], checkpoint_id=key[1])
            try:
                checkpoint = yield SaverCall(self.saver, "get_tuple", config)
            except UnrestorableValueError as exc:
                found.append(_inexact(checkpoint_label(*key), exc))
            else:
                found.append(_missing(key) if checkpoint is None else self._item(checkpoint))
        return found

    def latest(self, thread_id: str) -> SourceIO[CheckpointTuple | UnreadableCheckpoint | None]:
        try:
            latest = yield SaverCall(self.saver, "get_tuple", _config(thread_id, checkpoint_ns=""))
        except UnrestorableValueError as exc:
            return _inexact("the latest checkpoint", exc)
        if latest is None:
            return None
        item = self._item(latest)
        return item if isinstance(item, UnreadableCheckpoint) else latest


def _loads_metadata(serde: SerializerProtocol, stored: Any) -> Any:
    """The official saver's metadata: a dict whose leaves are `[type, bytes]` pairs."""
    if isinstance(stored, Mapping):
        return {key: _loads_metadata(serde, value) for key, value in stored.items()}
    type_, data = stored
    return serde.loads_typed((type_, bytes(data)))


class OfficialMongoDBSource:
    """The collections of `langgraph-checkpoint-mongodb` (0.3 to 0.5), read directly.

    Pass it (or the official `MongoDBSaver` itself) as the source of `copy_threads`. Its documents
    are plain, so reading them beats the saver's own `list`: two queries per batch of checkpoints
    instead of one per checkpoint, in bounded memory (the official `alist` reads a whole thread
    before yielding), exact (write documents carry the `task_path` and `idx` that `list` does not
    return), and read-only, without the package itself (which creates indexes when constructed
    and needs Python 3.11).

    Args:
        database: a `pymongo` `Database` (of a sync `MongoClient`).
        checkpoint_collection_name, writes_collection_name: the official saver's names.
        serde: the serializer the official saver was given (`JsonPlusSerializer` if `None`).
        batch_size: checkpoints per read.
    """

    def __init__(
        self,
        database: Any,
        checkpoint_collection_name: str = "checkpoints",
        writes_collection_name: str = "checkpoint_writes",
        *,
        serde: SerializerProtocol | None = None,
        batch_size: int = 100,
    ) -> None:
        self.checkpoints_collection = database[checkpoint_collection_name]
        self.writes_collection = database[writes_collection_name]
        self.serde = ExactSerializer(serde if serde is not None else JsonPlusSerializer())
        self.batch_size = _options.batch_size(batch_size)

    @classmethod
    def from_saver(cls, saver: Any) -> OfficialMongoDBSource:
        """The collections an official `MongoDBSaver` uses, with its serializer."""
        return cls(
            saver.db,
            saver.checkpoint_collection.name,
            saver.writes_collection.name,
            serde=saver.serde,
        )

    def thread_ids(self) -> list[str]:
        pipeline = [{"$group": {"_id": "$thread_id"}}, {"$sort": {"_id": 1}}]
        with self.checkpoints_collection.aggregate(pipeline, allowDiskUse=True) as cursor:
            return [doc["_id"] for doc in cursor]

    def checkpoints(self, thread_id: str) -> Iterator[SourceItem]:
        with self.checkpoints_collection.find(
            {"thread_id": thread_id},
            sort=[("checkpoint_ns", 1), ("checkpoint_id", -1)],
            batch_size=self.batch_size,
        ) as cursor:
            while docs := list(islice(cursor, self.batch_size)):
                yield from self._with_writes(thread_id, docs)

    def checkpoints_by_key(
        self, thread_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[SourceItem]:
        docs = {
            (doc["checkpoint_ns"], doc["checkpoint_id"]): doc
            for doc in self.checkpoints_collection.find(_of_checkpoints(thread_id, keys))
        }
        found = dict(zip(docs, self._with_writes(thread_id, list(docs.values())), strict=True))
        return [found.get(key) or _missing(key) for key in keys]

    def latest(self, thread_id: str) -> CheckpointTuple | UnreadableCheckpoint | None:
        doc = self.checkpoints_collection.find_one(
            {"thread_id": thread_id, "checkpoint_ns": ""}, sort=[("checkpoint_id", -1)]
        )
        if doc is None:
            return None
        [item] = self._with_writes(thread_id, [doc])
        return item.tuple if isinstance(item, SourceCheckpoint) else item

    def _with_writes(self, thread_id: str, docs: Sequence[Mapping[str, Any]]) -> list[SourceItem]:
        """The checkpoints with their writes, read in one query."""
        for doc in docs:
            self._refuse_our_own(doc)
        keys = [(doc["checkpoint_ns"], doc["checkpoint_id"]) for doc in docs]
        writes: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for write in self.writes_collection.find(_of_checkpoints(thread_id, keys)):
            writes.setdefault((write["checkpoint_ns"], write["checkpoint_id"]), []).append(write)
        return [
            self._checkpoint(doc, writes.get(key, [])) for doc, key in zip(docs, keys, strict=True)
        ]

    def _refuse_our_own(self, doc: Mapping[str, Any]) -> None:
        """A document of this package (its ids in a composite `_id`), where the official
        saver's are expected: both packages use the same default names, and reading it as
        the official saver's would fail with a bare `KeyError: 'checkpoint_ns'`."""
        if "checkpoint_ns" not in doc and isinstance(doc.get("_id"), Mapping):
            collection = self.checkpoints_collection
            raise ValueError(
                f"collection {collection.database.name}.{collection.name} holds "
                "langgraph-checkpoint-mongo's own documents, not langgraph-checkpoint-mongodb's: "
                "copy from it with this package's saver as the source "
                "(copy_threads(MongoDBSaver(client, db_name, ...), target))"
            )

    def _write(self, doc: Mapping[str, Any]) -> SourceWrite:
        return SourceWrite(
            doc["task_id"],
            doc.get("task_path", ""),
            doc["idx"],
            doc["channel"],
            self.serde.loads_typed((doc["type"], bytes(doc["value"]))),
        )

    def _checkpoint(self, doc: Mapping[str, Any], stored: list[Mapping[str, Any]]) -> SourceItem:
        ids = {k: doc[k] for k in ("thread_id", "checkpoint_ns", "checkpoint_id")}
        try:
            writes = [self._write(write) for write in stored]
            checkpoint = self.serde.loads_typed((doc["type"], bytes(doc["checkpoint"])))
            metadata = _loads_metadata(self.serde, doc.get("metadata", {}))
        except UnrestorableValueError as exc:
            return _inexact(checkpoint_label(ids["checkpoint_ns"], ids["checkpoint_id"]), exc)
        writes.sort(key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        parent = doc.get("parent_checkpoint_id")
        return SourceCheckpoint(
            CheckpointTuple(
                config={"configurable": ids},
                checkpoint=checkpoint,
                metadata=metadata,
                parent_config=(
                    {"configurable": {**ids, "checkpoint_id": parent}} if parent else None
                ),
                pending_writes=[(w.task_id, w.channel, w.value) for w in writes],
            ),
            writes,
        )


def _of_checkpoints(thread_id: str, keys: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The official saver's documents of these checkpoints (both collections)."""
    by_ns: dict[str, list[str]] = {}
    for ns, checkpoint_id in keys:
        by_ns.setdefault(ns, []).append(checkpoint_id)
    return {
        "thread_id": thread_id,
        "$or": [{"checkpoint_ns": ns, "checkpoint_id": {"$in": ids}} for ns, ids in by_ns.items()],
    }


def reads_in_threads(saver: BaseCheckpointSaver[Any]) -> bool:
    """Savers whose async methods refuse to run (`SqliteSaver`) or only run the sync ones
    after reading a whole list (the official saver, our `MongoDBSaver`): the async API
    reads them through their sync methods, in a worker thread, as a stream."""
    ours = ("langgraph.checkpoint.mongo.sync", "MongoDBSaver")
    return any(_is_a(saver, *kind) for kind in (_SQLITE, _OFFICIAL, ours))


def official_source(source: Any) -> OfficialMongoDBSource | None:
    """The official saver's collections when `source` is its `MongoDBSaver`."""
    return OfficialMongoDBSource.from_saver(source) if _is_a(source, *_OFFICIAL) else None


class OfficialReader:
    """An `OfficialMongoDBSource` as a `Reader`: its own sync reads, as `Blocking` calls."""

    def __init__(self, source: OfficialMongoDBSource) -> None:
        self.source = source

    def thread_ids(self) -> SourceIO[list[str]]:
        return _blocking(self.source.thread_ids)

    def checkpoints(self, thread_id: str) -> SourceIO[Listed]:
        return Listed((yield from _blocking(self.source.checkpoints, thread_id)))

    def next_checkpoint(self, listed: Listed) -> SourceIO[SourceItem | None]:
        item: SourceItem | None = yield StreamCall(listed.stream)
        return item

    def checkpoints_by_key(
        self, thread_id: str, keys: Sequence[tuple[str, str]]
    ) -> SourceIO[list[SourceItem]]:
        return _blocking(self.source.checkpoints_by_key, thread_id, keys)

    def latest(self, thread_id: str) -> SourceIO[CheckpointTuple | UnreadableCheckpoint | None]:
        return _blocking(self.source.latest, thread_id)


# A source, read without I/O: `checkpoints` opens a stream of a thread's checkpoints (every
# namespace), `next_checkpoint` gives its next one (None after its last).
Reader = SaverReader | OfficialReader


class Requests:
    """Answers a plan's reads from a reader, without I/O (yielding the reader's calls)."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self._thread: str | None = None
        self._stream: Listed | None = None  # None: read to the end

    def answer(self, request: SourceRead) -> SourceIO[Any]:
        if not isinstance(request, ReadCheckpoints):  # each closes the stream
            yield from self.close()
            if isinstance(request, ReadThreadIds):
                return (yield from self.reader.thread_ids())
            if isinstance(request, ReadLatest):
                return (yield from self.reader.latest(request.thread_id))
            return (yield from self.reader.checkpoints_by_key(request.thread_id, request.keys))
        if request.from_start or request.thread_id != self._thread:
            yield from self.close()
            self._thread = request.thread_id
            self._stream = yield from self.reader.checkpoints(request.thread_id)
        batch: list[SourceItem] = []
        while self._stream is not None and len(batch) < request.limit:
            item = yield from self.reader.next_checkpoint(self._stream)
            if item is None:
                yield from self._end()
            else:
                batch.append(item)
        return batch

    def _end(self) -> SourceIO[None]:
        stream, self._stream = self._stream, None
        if stream is not None:
            yield StreamCall(stream.stream, close=True)

    def close(self) -> SourceIO[None]:
        yield from self._end()
        self._thread = None
