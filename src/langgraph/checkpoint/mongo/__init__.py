"""MongoDB checkpointers for LangGraph.

`AsyncMongoDBSaver` (PyMongo's `AsyncMongoClient` or Motor) for asyncio applications, `MongoDBSaver`
(`pymongo.MongoClient`) for synchronous ones. Both store the same documents and behave the same.
"""

from langgraph.checkpoint.mongo._documents import ThreadInfo
from langgraph.checkpoint.mongo._drivers import __version__
from langgraph.checkpoint.mongo.aio import AsyncMongoDBSaver
from langgraph.checkpoint.mongo.errors import (
    CheckpointCycleError,
    CheckpointTooLargeError,
    IndexCreationError,
    ThreadChangedError,
)
from langgraph.checkpoint.mongo.sync import MongoDBSaver

__all__ = [
    "AsyncMongoDBSaver",
    "CheckpointCycleError",
    "CheckpointTooLargeError",
    "IndexCreationError",
    "MongoDBSaver",
    "ThreadChangedError",
    "ThreadInfo",
    "__version__",
]
