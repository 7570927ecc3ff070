"""The savers compared, each behind one small interface.

A `Backend` is one client of one contender. It makes savers on fresh databases and
calls the saver and graph methods the way an application of its kind would: the
natively async saver (and `InMemorySaver`) through the `a...` methods and `ainvoke`,
the sync savers through the plain methods and `invoke`. Blocking calls made from the
benchmark's event loop simply block it; nothing else runs on that loop meanwhile.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.pregel import Pregel
from pymongo import AsyncMongoClient, MongoClient

from benchmarks.server import ServerProcess
from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver

OFFICIAL_PACKAGE = "langgraph-checkpoint-mongodb"
REQUIREMENTS = Path(__file__).resolve().parent / "requirements.txt"


def _pinned_official_version() -> str:
    """The version `benchmarks/requirements.txt` pins: `name==version; marker`."""
    for line in REQUIREMENTS.read_text().splitlines():
        requirement = line.split("#", 1)[0].split(";", 1)[0].strip()
        name, pinned, wanted = requirement.partition("==")
        if pinned and name.strip().lower() == OFFICIAL_PACKAGE:
            return wanted.strip()
    raise RuntimeError(f"{REQUIREMENTS} does not pin {OFFICIAL_PACKAGE}==<version>")


OFFICIAL_PINNED = _pinned_official_version()
# The version in the results' labels: the installed one, which must be the pinned one.
OFFICIAL_VERSION = OFFICIAL_PINNED
# Set when the installed official saver is not the pinned one: the run refuses to start.
OFFICIAL_VERSION_ERROR: str | None = None
OFFICIAL_SKIP_REASON: str | None = None
OfficialSaver: Any = None
if sys.version_info < (3, 11):
    OFFICIAL_SKIP_REASON = f"{OFFICIAL_PACKAGE} needs Python >= 3.11"
else:
    try:
        OFFICIAL_VERSION = version(OFFICIAL_PACKAGE)
    except PackageNotFoundError:
        OFFICIAL_SKIP_REASON = (
            f"{OFFICIAL_PACKAGE} is not installed (pip install -r benchmarks/requirements.txt)"
        )
    else:
        if OFFICIAL_VERSION != OFFICIAL_PINNED:
            OFFICIAL_VERSION_ERROR = (
                f"{OFFICIAL_PACKAGE} {OFFICIAL_VERSION} is installed, but the benchmark "
                f"measures the version benchmarks/requirements.txt pins, {OFFICIAL_PINNED}: "
                "run pip install -r benchmarks/requirements.txt (or change the pin there)"
            )
        else:
            from langgraph.checkpoint.mongodb import MongoDBSaver as OfficialSaver

__all__ = [
    "OFFICIAL_SKIP_REASON",
    "OFFICIAL_VERSION",
    "OFFICIAL_VERSION_ERROR",
    "Backend",
    "Contender",
    "contenders",
]


@dataclass(frozen=True)
class Contender:
    key: str
    label: str
    networked: bool

    def open(self, server: ServerProcess) -> Backend:
        return _BACKENDS[self.key](self, server)


OURS_ASYNC = Contender("ours_async", "ours async (AsyncMongoClient)", True)
OURS_SYNC = Contender("ours_sync", "ours sync (MongoClient)", True)
OFFICIAL = Contender("official", f"official {OFFICIAL_VERSION} (MongoClient)", True)
MEMORY = Contender("memory", "InMemorySaver (no network)", False)


def contenders(*, networked_only: bool = False) -> list[Contender]:
    """The contenders this interpreter can run, ours first, the baseline last."""
    if OFFICIAL_VERSION_ERROR:
        raise RuntimeError(OFFICIAL_VERSION_ERROR)
    found = [OURS_ASYNC, OURS_SYNC]
    if OFFICIAL_SKIP_REASON is None:
        found.append(OFFICIAL)
    if not networked_only:
        found.append(MEMORY)
    return found


class Backend(ABC):
    """One client of one contender; `is_async` says which API the application uses."""

    is_async: bool

    def __init__(self, contender: Contender, server: ServerProcess) -> None:
        self.contender = contender
        self.server = server

    @abstractmethod
    async def saver(self, db_name: str, *, compression: str | None = None) -> Any:
        """A set-up saver on database `db_name` (expected to be new)."""

    async def drop(self, db_name: str) -> None:  # noqa: B027 - optional hook
        """Drop a database `saver` created."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Close the client."""

    # The calls an application makes, in its style.

    async def invoke(self, graph: Pregel[Any], value: Any, config: RunnableConfig) -> Any:
        if self.is_async:
            return await graph.ainvoke(value, config)
        return graph.invoke(value, config)

    async def get_state(self, graph: Pregel[Any], config: RunnableConfig) -> Any:
        if self.is_async:
            return await graph.aget_state(config)
        return graph.get_state(config)

    async def history(self, graph: Pregel[Any], config: RunnableConfig, limit: int) -> list[Any]:
        if self.is_async:
            return [s async for s in graph.aget_state_history(config, limit=limit)]
        return list(graph.get_state_history(config, limit=limit))

    async def get_tuple(
        self, saver: BaseCheckpointSaver[Any], config: RunnableConfig
    ) -> CheckpointTuple | None:
        if self.is_async:
            return await saver.aget_tuple(config)
        return saver.get_tuple(config)

    async def list(
        self, saver: BaseCheckpointSaver[Any], config: RunnableConfig, limit: int
    ) -> list[CheckpointTuple]:
        if self.is_async:
            return [t async for t in saver.alist(config, limit=limit)]
        return list(saver.list(config, limit=limit))

    async def put(
        self,
        saver: BaseCheckpointSaver[Any],
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        if self.is_async:
            return await saver.aput(config, checkpoint, metadata, new_versions)
        return saver.put(config, checkpoint, metadata, new_versions)

    async def put_writes(
        self,
        saver: BaseCheckpointSaver[Any],
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
    ) -> None:
        if self.is_async:
            await saver.aput_writes(config, writes, task_id)
        else:
            saver.put_writes(config, writes, task_id)


class _OursAsync(Backend):
    is_async = True

    def __init__(self, contender: Contender, server: ServerProcess) -> None:
        super().__init__(contender, server)
        self.client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(server.uri)

    async def saver(self, db_name: str, *, compression: str | None = None) -> Any:
        saver = AsyncMongoDBSaver(self.client, db_name, compression=compression)  # type: ignore[arg-type]
        await saver.setup()
        return saver

    async def drop(self, db_name: str) -> None:
        await self.client.drop_database(db_name)

    async def close(self) -> None:
        await self.client.close()


class _SyncClientBackend(Backend):
    is_async = False

    def __init__(self, contender: Contender, server: ServerProcess) -> None:
        super().__init__(contender, server)
        self.client: MongoClient[dict[str, Any]] = MongoClient(server.uri)

    async def drop(self, db_name: str) -> None:
        self.client.drop_database(db_name)

    async def close(self) -> None:
        self.client.close()


class _OursSync(_SyncClientBackend):
    async def saver(self, db_name: str, *, compression: str | None = None) -> Any:
        saver = MongoDBSaver(self.client, db_name, compression=compression)  # type: ignore[arg-type]
        saver.setup()
        return saver


class _Official(_SyncClientBackend):
    async def saver(self, db_name: str, *, compression: str | None = None) -> Any:
        if compression is not None:
            raise ValueError("the official saver has no compression option")
        # Its constructor lists and creates the indexes (its "setup").
        return OfficialSaver(self.client, db_name=db_name)


class _Memory(Backend):
    is_async = True

    async def saver(self, db_name: str, *, compression: str | None = None) -> Any:
        return InMemorySaver()


_BACKENDS: dict[str, type[Backend]] = {
    OURS_ASYNC.key: _OursAsync,
    OURS_SYNC.key: _OursSync,
    OFFICIAL.key: _Official,
    MEMORY.key: _Memory,
}
