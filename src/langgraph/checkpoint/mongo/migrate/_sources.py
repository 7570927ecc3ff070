"""Reading a source's threads for `migrate`: through any saver's public API
(`list`/`get_tuple`, or `alist`/`aget_tuple`), or straight from the collections of the
official MongoDB saver, `langgraph-checkpoint-mongodb`.

A reader yields a thread's checkpoints as a stream; `Requests` (and its async twin) hands
them to a plan batch by batch and keeps at most one stream open, so reading never holds
more than a batch, and a source that locks while it lists (`SqliteSaver`) is never asked
for something else meanwhile. Readers decode with the source's serializer made exact
(`_decoding`): a checkpoint that does not decode exactly is answered as an
`UnreadableCheckpoint` naming it, and the plan fails its thread.
"""

from __future__ import annotations

import asyncio
import copy
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import islice
from typing import Any, Protocol, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from langgraph.checkpoint.mongo._keys import checkpoint_label
from langgraph.checkpoint.mongo.migrate._decoding import ExactSerializer, UnrestorableValueError
from langgraph.checkpoint.mongo.migrate._plans import (
    ReadCheckpointsByKey,
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


def _thread_config(thread_id: str, root_only: bool = False) -> Any:
    configurable = {"thread_id": thread_id}
    return {"configurable": {**configurable, "checkpoint_ns": ""} if root_only else configurable}


def _checkpoint_config(thread_id: str, key: tuple[str, str]) -> Any:
    ns, checkpoint_id = key
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _listed_after(last: CheckpointTuple | None) -> str:
    """The checkpoint a stream failed on, which a saver's `list` does not name."""
    if last is None:
        return "the first checkpoint the source lists"
    return f"the checkpoint the source lists after {checkpoint_label(*_key(last))}"


def _key(checkpoint: CheckpointTuple) -> tuple[str, str]:
    configurable = checkpoint.config["configurable"]
    return configurable.get("checkpoint_ns", ""), configurable["checkpoint_id"]


def _from_tuple(checkpoint: CheckpointTuple) -> SourceCheckpoint:
    return SourceCheckpoint(checkpoint, inferred_writes(checkpoint.pending_writes or ()))


def _inexact(where: str, reason: object) -> UnreadableCheckpoint:
    return UnreadableCheckpoint(where, f"does not decode exactly here: {reason}")


def _missing(key: tuple[str, str]) -> UnreadableCheckpoint:
    return UnreadableCheckpoint(checkpoint_label(*key), "the source no longer holds it")


class _ExactSaver:
    """A shallow copy of a saver that decodes exactly (as LangGraph's `with_allowlist`
    copies a saver with another serializer), and names the checkpoint holding a value it
    could not rebuild: its decodes keep LangGraph's stand-ins, so a `list` goes on, and
    each tuple is checked once returned."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.serde = ExactSerializer(saver.serde, keep_stand_ins=True)
        self.saver = copy.copy(saver)
        self.saver.serde = self.serde

    def item(self, checkpoint: CheckpointTuple) -> SourceItem:
        """The checkpoint just returned, or why it holds a value that is not exact."""
        reason = self.serde.take_failure()
        if reason is not None:
            return _inexact(checkpoint_label(*_key(checkpoint)), reason)
        return _from_tuple(checkpoint)

    def latest(
        self, checkpoint: CheckpointTuple | None
    ) -> CheckpointTuple | UnreadableCheckpoint | None:
        if checkpoint is None:
            return None
        item = self.item(checkpoint)
        return item if isinstance(item, UnreadableCheckpoint) else checkpoint


class Reader(Protocol):
    def thread_ids(self) -> list[str]: ...
    def checkpoints(self, thread_id: str) -> Iterator[SourceItem]: ...
    def checkpoints_by_key(
        self, thread_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[SourceItem]: ...
    def latest(self, thread_id: str) -> CheckpointTuple | UnreadableCheckpoint | None: ...


class AsyncReader(Protocol):
    async def thread_ids(self) -> list[str]: ...
    def checkpoints(self, thread_id: str) -> AsyncIterator[SourceItem]: ...
    async def checkpoints_by_key(
        self, thread_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[SourceItem]: ...
    async def latest(self, thread_id: str) -> CheckpointTuple | UnreadableCheckpoint | None: ...


def _new_ids(ids: dict[str, None], checkpoint: CheckpointTuple) -> None:
    ids.setdefault(checkpoint.config["configurable"]["thread_id"], None)


def _sqlite_thread_ids(saver: BaseCheckpointSaver[Any]) -> list[str] | None:
    """`SqliteSaver`'s threads from its table, instead of deserializing every checkpoint."""
    module = sys.modules.get("langgraph.checkpoint.sqlite")
    if module is None or not isinstance(saver, module.SqliteSaver):
        return None
    with saver.cursor(transaction=False) as cursor:
        cursor.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id")
        return [row[0] for row in cursor]


class SaverReader:
    """Any saver, through `list` and `get_tuple`."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.source = saver  # lists thread ids, whatever its values decode to
        self.exact = _ExactSaver(saver)
        self.saver = self.exact.saver

    def thread_ids(self) -> list[str]:
        fast = _sqlite_thread_ids(self.source)
        if fast is not None:
            return fast
        ids: dict[str, None] = {}
        for checkpoint in self.source.list(None):
            _new_ids(ids, checkpoint)
        return list(ids)

    def checkpoints(self, thread_id: str) -> Iterator[SourceItem]:
        stream = self.saver.list(_thread_config(thread_id))
        last = None
        try:
            for last in stream:
                yield self.exact.item(last)
        except UnrestorableValueError as exc:  # the stream ends with it
            yield _inexact(_listed_after(last), exc)
        finally:  # a stream left early is closed now, not when collected
            close = getattr(stream, "close", None)
            if close is not None:
                close()

    def checkpoints_by_key(
        self, thread_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[SourceItem]:
        found: list[SourceItem] = []
        for key in keys:
            try:
                checkpoint = self.saver.get_tuple(_checkpoint_config(thread_id, key))
            except UnrestorableValueError as exc:
                found.append(_inexact(checkpoint_label(*key), exc))
            else:
                found.append(_missing(key) if checkpoint is None else self.exact.item(checkpoint))
        return found

    def latest(self, thread_id: str) -> CheckpointTuple | UnreadableCheckpoint | None:
        try:
            latest = self.saver.get_tuple(_thread_config(thread_id, root_only=True))
        except UnrestorableValueError as exc:
            return _inexact("the latest checkpoint", exc)
        return self.exact.latest(latest)


class AsyncSaverReader:
    """Any saver, through `alist` and `aget_tuple`."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.source = saver  # lists thread ids, whatever its values decode to
        self.exact = _ExactSaver(saver)
        self.saver = self.exact.saver

    async def thread_ids(self) -> list[str]:
        ids: dict[str, None] = {}
        async for checkpoint in self.source.alist(None):
            _new_ids(ids, checkpoint)
        return list(ids)

    async def checkpoints(self, thread_id: str) -> AsyncIterator[SourceItem]:
        stream = self.saver.alist(_thread_config(thread_id))
        last = None
        try:
            async for last in stream:
                yield self.exact.item(last)
        except UnrestorableValueError as exc:
            yield _inexact(_listed_after(last), exc)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()

    async def checkpoints_by_key(
        self, thread_id: str, keys: Sequence[tuple[str, str]]
    ) -> list[SourceItem]:
        found: list[SourceItem] = []
        for key in keys:
            try:
                checkpoint = await self.saver.aget_tuple(_checkpoint_config(thread_id, key))
            except UnrestorableValueError as exc:
                found.append(_inexact(checkpoint_label(*key), exc))
            else:
                found.append(_missing(key) if checkpoint is None else self.exact.item(checkpoint))
        return found

    async def latest(self, thread_id: str) -> CheckpointTuple | UnreadableCheckpoint | None:
        try:
            latest = await self.saver.aget_tuple(_thread_config(thread_id, root_only=True))
        except UnrestorableValueError as exc:
            return _inexact("the latest checkpoint", exc)
        return self.exact.latest(latest)


def _loads_metadata(serde: SerializerProtocol, stored: Any) -> Any:
    """The official saver's metadata: a dict whose leaves are `[type, bytes]` pairs."""
    if isinstance(stored, Mapping):
        return {key: _loads_metadata(serde, value) for key, value in stored.items()}
    type_, data = stored
    return serde.loads_typed((type_, bytes(data)))


class OfficialMongoDBSource:
    """The collections of `langgraph-checkpoint-mongodb` (0.3 to 0.5), read directly.

    Pass it (or the official `MongoDBSaver` itself) as the source of `copy_threads`. Its
    documents are plain, so reading them beats the saver's own `list`: two queries per
    batch of checkpoints instead of one per checkpoint, in bounded memory (the official
    `alist` reads a whole thread before yielding), exact (write documents carry the
    `task_path` and `idx` that `list` does not return), and read-only, without the package
    itself (which creates indexes when constructed and needs Python 3.11).

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
        self.batch_size = batch_size

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
        cursor = self.checkpoints_collection.aggregate(pipeline, allowDiskUse=True)
        with cursor:
            return [doc["_id"] for doc in cursor]

    def checkpoints(self, thread_id: str) -> Iterator[SourceItem]:
        cursor = self.checkpoints_collection.find(
            {"thread_id": thread_id},
            sort=[("checkpoint_ns", 1), ("checkpoint_id", -1)],
            batch_size=self.batch_size,
        )
        with cursor:
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
        keys = [(doc["checkpoint_ns"], doc["checkpoint_id"]) for doc in docs]
        writes: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for write in self.writes_collection.find(_of_checkpoints(thread_id, keys)):
            writes.setdefault((write["checkpoint_ns"], write["checkpoint_id"]), []).append(write)
        return [
            self._checkpoint(doc, writes.get(key, [])) for doc, key in zip(docs, keys, strict=True)
        ]

    def _write(self, doc: Mapping[str, Any]) -> SourceWrite:
        return SourceWrite(
            doc["task_id"],
            doc.get("task_path", ""),
            doc["idx"],
            doc["channel"],
            self.serde.loads_typed((doc["type"], bytes(doc["value"]))),
        )

    def _checkpoint(
        self, doc: Mapping[str, Any], write_docs: list[Mapping[str, Any]]
    ) -> SourceItem:
        ids = {k: doc[k] for k in ("thread_id", "checkpoint_ns", "checkpoint_id")}
        try:
            writes = [self._write(write) for write in write_docs]
            checkpoint = self.serde.loads_typed((doc["type"], bytes(doc["checkpoint"])))
            metadata = _loads_metadata(self.serde, doc.get("metadata", {}))
        except UnrestorableValueError as exc:
            return _inexact(checkpoint_label(ids["checkpoint_ns"], ids["checkpoint_id"]), exc)
        writes.sort(key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
        parent_id = doc.get("parent_checkpoint_id")
        return SourceCheckpoint(
            CheckpointTuple(
                config={"configurable": ids},
                checkpoint=checkpoint,
                metadata=metadata,
                parent_config=(
                    {"configurable": {**ids, "checkpoint_id": parent_id}} if parent_id else None
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
    names = {
        ("langgraph.checkpoint.sqlite", "SqliteSaver"),
        ("langgraph.checkpoint.mongodb.saver", "MongoDBSaver"),
        ("langgraph.checkpoint.mongo.sync", "MongoDBSaver"),
    }
    return any(
        isinstance(saver, cls)
        for module, name in names
        if (cls := getattr(sys.modules.get(module), name, None)) is not None
    )


def official_source(source: Any) -> OfficialMongoDBSource | None:
    """The official saver's collections when `source` is its `MongoDBSaver`."""
    module = sys.modules.get("langgraph.checkpoint.mongodb.saver")
    if module is not None and isinstance(source, module.MongoDBSaver):
        return OfficialMongoDBSource.from_saver(source)
    return None


# Answering a plan's reads.


class Requests:
    """Answers a plan's reads from a sync reader."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self._thread: str | None = None
        self._stream: Iterator[SourceItem] | None = None  # None: read to the end

    def answer(self, request: SourceRead) -> Any:
        if isinstance(request, ReadThreadIds):
            self.close()
            return self.reader.thread_ids()
        if isinstance(request, ReadLatest):
            self.close()
            return self.reader.latest(request.thread_id)
        if isinstance(request, ReadCheckpointsByKey):
            self.close()
            return self.reader.checkpoints_by_key(request.thread_id, request.keys)
        if request.from_start or request.thread_id != self._thread:
            self.close()
            self._thread = request.thread_id
            self._stream = self.reader.checkpoints(request.thread_id)
        if self._stream is None:
            return []
        batch = list(islice(self._stream, request.limit))
        if len(batch) < request.limit:
            self._end()
        return batch

    def _end(self) -> None:
        stream, self._stream = self._stream, None
        close = getattr(stream, "close", None)
        if close is not None:
            close()

    def close(self) -> None:
        self._end()
        self._thread = None


class AsyncRequests:
    """Answers a plan's reads from an async reader."""

    def __init__(self, reader: AsyncReader) -> None:
        self.reader = reader
        self._thread: str | None = None
        self._stream: AsyncIterator[SourceItem] | None = None  # None: read to the end

    async def answer(self, request: SourceRead) -> Any:
        if isinstance(request, ReadThreadIds):
            await self.close()
            return await self.reader.thread_ids()
        if isinstance(request, ReadLatest):
            await self.close()
            return await self.reader.latest(request.thread_id)
        if isinstance(request, ReadCheckpointsByKey):
            await self.close()
            return await self.reader.checkpoints_by_key(request.thread_id, request.keys)
        if request.from_start or request.thread_id != self._thread:
            await self.close()
            self._thread = request.thread_id
            self._stream = self.reader.checkpoints(request.thread_id)
        if self._stream is None:
            return []
        batch = []
        async for item in self._stream:
            batch.append(item)
            if len(batch) == request.limit:
                return batch
        await self._end()
        return batch

    async def _end(self) -> None:
        stream, self._stream = self._stream, None
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()

    async def close(self) -> None:
        await self._end()
        self._thread = None


class ThreadedRequests:
    """A sync reader's `Requests` for the async API, answered in one worker thread of its
    own (a sync driver's cursor, or an sqlite3 connection, stays on one thread)."""

    def __init__(self, reader: Reader) -> None:
        self.requests = Requests(reader)
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="copy-threads")

    async def _call(self, function: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.worker, function, *args)

    async def answer(self, request: SourceRead) -> Any:
        return await self._call(self.requests.answer, request)

    async def close(self) -> None:
        try:
            await self._call(self.requests.close)
        finally:
            self.worker.shutdown(wait=False)
