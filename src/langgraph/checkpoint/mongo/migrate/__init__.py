"""Copy the threads of any LangGraph saver into ours, and verify the copy.

```python
from langgraph.checkpoint.mongo import MongoDBSaver
from langgraph.checkpoint.mongo.migrate import copy_threads, verify_threads

with MongoDBSaver.from_conn_string(uri, "langgraph_db") as target:
    report = copy_threads(source, target)  # InMemorySaver, SqliteSaver, the official saver...
    print(report.summary())
    print(verify_threads(source, target).summary())
```

Every checkpoint of every namespace arrives with its id, parent, metadata, channel versions and
pending writes; running a copy again finishes an interrupted one and duplicates nothing; a thread
the target already holds with other data is reported as a conflict and left alone unless
`overwrite=True`. A thread holding a value that this environment cannot restore exactly (a type it
cannot import) fails by name and nothing of it is written. See docs/migrating.md.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph.checkpoint.mongo import _options
from langgraph.checkpoint.mongo._base import command_collection
from langgraph.checkpoint.mongo._cancellation import in_worker_thread
from langgraph.checkpoint.mongo._codec import Codec
from langgraph.checkpoint.mongo._commands import Command
from langgraph.checkpoint.mongo._executors import execute_async, execute_sync
from langgraph.checkpoint.mongo._keys import str_list
from langgraph.checkpoint.mongo._operations import Storage
from langgraph.checkpoint.mongo._runners import arun_plan, run_plan
from langgraph.checkpoint.mongo.aio import AsyncMongoDBSaver
from langgraph.checkpoint.mongo.migrate import _plans as plans
from langgraph.checkpoint.mongo.migrate._decoding import ExactSerializer
from langgraph.checkpoint.mongo.migrate._plans import (
    CopyOptions,
    CopyReport,
    MigrationPlan,
    SourceRead,
    ThreadCopy,
    ThreadStatus,
    ThreadVerification,
    VerifyReport,
)
from langgraph.checkpoint.mongo.migrate._sources import (
    OfficialMongoDBSource,
    OfficialReader,
    Reader,
    Requests,
    SaverReader,
    SourceIO,
    acall,
    official_source,
    reads_in_threads,
    run_source,
)
from langgraph.checkpoint.mongo.sync import MongoDBSaver

__all__ = [
    "CopyReport",
    "OfficialMongoDBSource",
    "ThreadCopy",
    "ThreadStatus",
    "ThreadVerification",
    "VerifyReport",
    "acopy_threads",
    "averify_threads",
    "copy_threads",
    "source_thread_ids",
    "verify_threads",
]

T = TypeVar("T")

Source = BaseCheckpointSaver[Any] | OfficialMongoDBSource


def _reader(source: Source, fast_path: bool) -> Reader:
    """The official saver's collections when allowed, else the saver's public API."""
    if isinstance(source, OfficialMongoDBSource):
        return OfficialReader(source)
    official = official_source(source) if fast_path else None
    if official is not None:
        return OfficialReader(official)
    if isinstance(source, BaseCheckpointSaver):
        return SaverReader(source)
    raise TypeError(
        "source must be a LangGraph checkpoint saver (BaseCheckpointSaver) or an "
        f"OfficialMongoDBSource, got {type(source).__name__}"
    )


def _sync_target(target: Any, name: str) -> MongoDBSaver:
    if not isinstance(target, MongoDBSaver):
        raise TypeError(
            f"{name} writes through a MongoDBSaver (pymongo.MongoClient), got "
            f"{type(target).__name__}; with an AsyncMongoDBSaver use a{name}"
        )
    return target


def _async_target(target: Any, name: str) -> AsyncMongoDBSaver | MongoDBSaver:
    if not isinstance(target, (AsyncMongoDBSaver, MongoDBSaver)):
        raise TypeError(
            f"{name} writes through an AsyncMongoDBSaver or a MongoDBSaver, got "
            f"{type(target).__name__}"
        )
    return target


def _plan_target(saver: AsyncMongoDBSaver | MongoDBSaver) -> Storage:
    """The target as the plans see it: its codec, decoding exactly (for comparisons)."""
    codec = saver.storage.codec
    return dataclasses.replace(
        saver.storage, codec=Codec(ExactSerializer(codec.serde), codec.compression)
    )


def _thread_list(thread_ids: Sequence[str] | None) -> list[str] | None:
    """The threads to copy, each once, in the order given; `None`: every thread."""
    return None if thread_ids is None else list(dict.fromkeys(str_list(thread_ids, "thread_ids")))


def _copy_plan(
    saver: AsyncMongoDBSaver | MongoDBSaver, thread_ids: Sequence[str] | None, options: CopyOptions
) -> MigrationPlan[CopyReport]:
    _options.batch_size(options.batch_size)
    return plans.copy_threads(_plan_target(saver), _thread_list(thread_ids), options)


def _verify_plan(
    saver: AsyncMongoDBSaver | MongoDBSaver,
    thread_ids: Sequence[str] | None,
    batch_size: int,
    on_thread: Callable[[ThreadVerification], None] | None,
) -> MigrationPlan[VerifyReport]:
    batch = _options.batch_size(batch_size)
    return plans.verify_threads(_plan_target(saver), _thread_list(thread_ids), batch, on_thread)


def _run(
    operation: str, plan: MigrationPlan[T], source: Source, fast_path: bool, target: MongoDBSaver
) -> T:
    """Run the plan of `operation` (its name in the log), reading `source` with sync methods."""
    requests = Requests(_reader(source, fast_path))

    def execute(request: Command | SourceRead) -> Any:
        if isinstance(request, SourceRead):
            return run_source(requests.answer(request))
        return execute_sync(operation, command_collection(target, request), request)

    try:
        return run_plan(plan, execute)
    finally:
        run_source(requests.close())


async def _arun(
    operation: str,
    plan: MigrationPlan[T],
    source: Source,
    fast_path: bool,
    target: AsyncMongoDBSaver | MongoDBSaver,
) -> T:
    """`_run` for asyncio: the source is read through its async methods, or (the official
    saver's collections, a saver whose async methods refuse to run or read a whole list) its
    sync ones in one worker thread of its own (a sync driver's cursor, or an sqlite3
    connection, stays on one thread); a `MongoDBSaver` target runs commands in worker threads."""
    reader = _reader(source, fast_path)
    requests = Requests(reader)
    worker = None
    if not isinstance(reader, SaverReader) or reads_in_threads(reader.source):
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="copy-threads")

    async def read(reading: SourceIO[Any]) -> Any:
        if worker is None:
            return await arun_plan(reading, acall)
        return await asyncio.get_running_loop().run_in_executor(worker, run_source, reading)

    async def execute(request: Command | SourceRead) -> Any:
        if isinstance(request, SourceRead):
            return await read(requests.answer(request))
        collection = command_collection(target, request)
        if isinstance(target, AsyncMongoDBSaver):
            return await execute_async(operation, collection, request)
        return await in_worker_thread(execute_sync, operation, collection, request)

    try:
        return await arun_plan(plan, execute)
    finally:
        try:
            await read(requests.close())
        finally:
            if worker is not None:
                worker.shutdown(wait=False)


def source_thread_ids(source: Source, *, fast_path: bool = True) -> list[str]:
    """Every thread id the source holds (what `thread_ids=None` copies).

    The official saver's are read from its collections (one aggregation), `SqliteSaver`'s
    from its table; any other saver's by listing every checkpoint (`list(None)`).
    """
    return run_source(_reader(source, fast_path).thread_ids())


def copy_threads(
    source: Source,
    target: MongoDBSaver,
    thread_ids: Sequence[str] | None = None,
    *,
    overwrite: bool = False,
    dry_run: bool = False,
    batch_size: int = 100,
    fast_path: bool = True,
    on_progress: Callable[[str, int], None] | None = None,
    on_thread: Callable[[ThreadCopy], None] | None = None,
) -> CopyReport:
    """Copy threads (every thread of the source when `thread_ids` is `None`) into `target`.

    Args:
        source: any `BaseCheckpointSaver` (read through `list`/`get_tuple`), or an
            `OfficialMongoDBSource`.
        target: a set-up `MongoDBSaver` (`acopy_threads` also takes `AsyncMongoDBSaver`).
        overwrite: replace threads the target holds with other data (else: conflicts).
        dry_run: read and check everything, write nothing; the report says what would be.
        batch_size: checkpoints read and written per round trip (memory: about this many).
        fast_path: read the official saver's collections directly when `source` is its
            `MongoDBSaver` (exact task paths, fewer queries); `False` uses `list` only.
        on_progress: called with `(thread_id, checkpoints)` after each batch.
        on_thread: called with each thread's `ThreadCopy` when it is done.

    Conflicts and checkpoints that cannot be stored (`CheckpointTooLargeError`, a value the target's
    serializer refuses) are reported per thread (`report.ok`, `report.problems`); errors reading the
    source or writing the target propagate, and running the copy again resumes it.
    """
    saver = _sync_target(target, "copy_threads")
    options = CopyOptions(overwrite, dry_run, batch_size, on_progress, on_thread)
    return _run("copy_threads", _copy_plan(saver, thread_ids, options), source, fast_path, saver)


async def acopy_threads(
    source: Source,
    target: AsyncMongoDBSaver | MongoDBSaver,
    thread_ids: Sequence[str] | None = None,
    *,
    overwrite: bool = False,
    dry_run: bool = False,
    batch_size: int = 100,
    fast_path: bool = True,
    on_progress: Callable[[str, int], None] | None = None,
    on_thread: Callable[[ThreadCopy], None] | None = None,
) -> CopyReport:
    """`copy_threads` for asyncio: reads the source through `alist`/`aget_tuple` (the
    official saver's collections in worker threads) and writes through either saver."""
    saver = _async_target(target, "acopy_threads")
    options = CopyOptions(overwrite, dry_run, batch_size, on_progress, on_thread)
    plan = _copy_plan(saver, thread_ids, options)
    return await _arun("copy_threads", plan, source, fast_path, saver)


def verify_threads(
    source: Source,
    target: MongoDBSaver,
    thread_ids: Sequence[str] | None = None,
    *,
    batch_size: int = 100,
    fast_path: bool = True,
    on_thread: Callable[[ThreadVerification], None] | None = None,
) -> VerifyReport:
    """Compare source and target thread by thread: the same checkpoints (ids, parents,
    checkpoint contents, metadata, pending writes per task and channel), none extra in
    the target, and the same latest checkpoint. Reads only."""
    saver = _sync_target(target, "verify_threads")
    plan = _verify_plan(saver, thread_ids, batch_size, on_thread)
    return _run("verify_threads", plan, source, fast_path, saver)


async def averify_threads(
    source: Source,
    target: AsyncMongoDBSaver | MongoDBSaver,
    thread_ids: Sequence[str] | None = None,
    *,
    batch_size: int = 100,
    fast_path: bool = True,
    on_thread: Callable[[ThreadVerification], None] | None = None,
) -> VerifyReport:
    """`verify_threads` for asyncio."""
    saver = _async_target(target, "averify_threads")
    plan = _verify_plan(saver, thread_ids, batch_size, on_thread)
    return await _arun("verify_threads", plan, source, fast_path, saver)
