"""What a type checker tells a user of the savers, checked by the lint step's `mypy`
(strict, so `warn_unused_ignores`): each `# type: ignore[code]` asserts that `mypy --strict`
reports that error on that line of a user's script (a bad `compression` or `ttl` through
`from_conn_string`, a client of the wrong kind on either saver), and every other line must
check clean. Not a test module: nothing here runs."""

from datetime import timedelta
from typing import Any

from motor.motor_asyncio import AsyncIOMotorClient
from pymongo import AsyncMongoClient, MongoClient

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, MongoDBSaver

URI = "mongodb://localhost"


def correct() -> None:
    with MongoDBSaver.from_conn_string(
        URI, "db", "checkpoints", "writes", 3600, compression="zstd", timeoutMS=500
    ) as saver:
        saver.delete_thread("t")
    client: MongoClient[dict[str, Any]] = MongoClient(URI)
    with MongoDBSaver(client, ttl=timedelta(days=30), compression="zlib") as plain:
        plain.close()


async def correct_async() -> None:
    async with AsyncMongoDBSaver.from_conn_string(URI, ttl=timedelta(days=1)) as saver:
        await saver.adelete_thread("t")
        await saver.close()
    pymongo_client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(URI)
    async with AsyncMongoDBSaver(pymongo_client, "db", ttl=60.5) as on_pymongo:
        await on_pymongo.aclose()
    motor_client: AsyncIOMotorClient[dict[str, Any]] = AsyncIOMotorClient(URI)
    AsyncMongoDBSaver(motor_client)


def wrong() -> None:
    MongoDBSaver.from_conn_string(URI, compression="lz4")  # type: ignore[arg-type]
    MongoDBSaver.from_conn_string(URI, ttl="30d")  # type: ignore[arg-type]
    AsyncMongoDBSaver.from_conn_string(URI, compression="gzip")  # type: ignore[arg-type]
    AsyncMongoDBSaver.from_conn_string(URI, "db", "c", "w", "30d")  # type: ignore[arg-type]
    async_client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(URI)
    MongoDBSaver(async_client)  # type: ignore[arg-type]
    motor_client: AsyncIOMotorClient[dict[str, Any]] = AsyncIOMotorClient(URI)
    MongoDBSaver(motor_client)  # type: ignore[arg-type]
    sync_client: MongoClient[dict[str, Any]] = MongoClient(URI)
    AsyncMongoDBSaver(sync_client)  # type: ignore[arg-type]


async def wrong_context() -> None:
    async with MongoDBSaver.from_conn_string(URI) as saver:  # type: ignore[attr-defined]
        del saver
