"""The server the CLI tests point the command at, and a saver on a database of its own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pymongo import MongoClient

from langgraph.checkpoint.mongo import MongoDBSaver
from support.backends import MONGODB_URI


@pytest.fixture
def uri(request: pytest.FixtureRequest) -> str:
    """`MONGODB_URI`, or the suite's wire server."""
    return MONGODB_URI or request.getfixturevalue("wire_server").uri


@pytest.fixture
def saver(uri: str, request: pytest.FixtureRequest) -> Iterator[MongoDBSaver]:
    """A set-up saver on a database of its own, named after the test module (dropped
    afterwards)."""
    module = request.module.__name__.rpartition(".")[2].removeprefix("test_")
    name = f"{module}_{uuid.uuid4().hex[:12]}"
    with MongoClient[dict[str, Any]](uri) as client:
        saver = MongoDBSaver(client, name)
        saver.setup()
        yield saver
        client.drop_database(name)
