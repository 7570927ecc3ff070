"""What a type checker tells a user of the savers: a user script checked with
`mypy --strict` gets errors for a bad `compression` or `ttl` through `from_conn_string`
and for a client of the wrong kind on either saver, and none for correct use."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

import langgraph.checkpoint.mongo

mypy_api = pytest.importorskip("mypy.api")

# Each line that must get an error ends with `# error`; no other line may get one.
USER_SCRIPT = """
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
    MongoDBSaver.from_conn_string(URI, compression="lz4")  # error
    MongoDBSaver.from_conn_string(URI, ttl="30d")  # error
    AsyncMongoDBSaver.from_conn_string(URI, compression="gzip")  # error
    AsyncMongoDBSaver.from_conn_string(URI, "db", "c", "w", "30d")  # error
    async_client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(URI)
    MongoDBSaver(async_client)  # error
    motor_client: AsyncIOMotorClient[dict[str, Any]] = AsyncIOMotorClient(URI)
    MongoDBSaver(motor_client)  # error
    sync_client: MongoClient[dict[str, Any]] = MongoClient(URI)
    AsyncMongoDBSaver(sync_client)  # error


async def wrong_context() -> None:
    async with MongoDBSaver.from_conn_string(URI) as saver:  # error
        del saver
"""


def test_mypy_strict_flags_bad_options_and_wrong_clients(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    # One directory across runs where pytest keeps its cache (mypy's cache replays the
    # errors of an unchanged file under the path it had when it was checked).
    cache = getattr(pytestconfig, "cache", None)  # None under `-p no:cacheprovider`
    work = cache.mkdir("mypy-user-script") if cache is not None else tmp_path
    script = work / "user_app.py"
    script.write_text(textwrap.dedent(USER_SCRIPT))
    # The package under test, where it is imported from: a source tree is put on mypy's
    # path, an installed package is found like any other.
    root = Path(langgraph.checkpoint.mongo.__file__).parents[3]
    settings = ["[mypy]", "strict = True", "namespace_packages = True"]
    if root.name != "site-packages":
        settings.append(f"mypy_path = {root}")
    ini = work / "mypy.ini"
    ini.write_text("\n".join(settings) + "\n")
    out, err, status = mypy_api.run(
        [
            "--config-file",
            str(ini),
            "--cache-dir",
            str(work / "cache"),
            "--no-error-summary",
            str(script),
        ]
    )
    assert status in (0, 1), err
    lines = script.read_text().splitlines()
    expected = {number for number, line in enumerate(lines, 1) if line.endswith("# error")}
    flagged = {
        int(found.group(1))
        for found in re.finditer(rf"^(?:.*/)?{script.name}:(\d+): error:", out, re.M)
    }
    assert flagged == expected, out
