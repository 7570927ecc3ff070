"""The fixtures; the backends they serve, and everything else tests share, are in `support/`."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from langgraph.checkpoint.mongo import testing
from langgraph.checkpoint.mongo._commands import Command
from langgraph.checkpoint.mongo.testing._wire import WireServer
from support.backends import BACKENDS, MONGODB_URI, Backend, CommandLog

# Tests build mongomock clients of their own too, as a user may once the fixes are applied
# (the savers refuse a plain one).
testing.apply_mongomock_fixes()

# On CI, every Hypothesis version draws the same examples on every run (the `ci` profile that
# Hypothesis 6.131 and later load by themselves; the floor, 6.100, has none), so a run that
# passed on a commit passes again on it. Local runs keep drawing new examples. (The Agent
# Server session's venv has no Hypothesis: it runs no property test.)
if os.environ.get("CI") and importlib.util.find_spec("hypothesis") is not None:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "ci",
        derandomize=True,
        database=None,
        print_blob=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile("ci")

# The `integration` marker and `--require-server` (tests/support/real_server.py).
pytest_plugins = ["support.real_server"]


@pytest.fixture(scope="session")
def wire_server() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    name: str = request.param
    if name.startswith("wire"):
        server = request.getfixturevalue("wire_server")
        server.delay = 0.0
        server.fault = None
        server.hold = None
        return Backend(name, server.uri, server)
    return Backend(name, MONGODB_URI)


@pytest.fixture
def counting(backend: Backend) -> Backend:
    """The backend, for a test of exact command names or counts on the wire (`getMore`,
    `killCursors`, what a driver sends): skipped on the in-process mock, which has no wire.
    Round trips the core sends are counted on every backend by `sent_commands`."""
    if backend.name == "mock":
        pytest.skip("the in-process mock has no wire to count commands on")
    return backend


@pytest.fixture
def real_driver(backend: Backend) -> Backend:
    """The backend, for a test of what a real driver does (its metadata, server
    selection, `collMod`, a write concern): skipped on the in-process mock, whose client
    is mongomock (which ignores write concerns)."""
    if backend.name == "mock":
        pytest.skip("the in-process mock has no real driver")
    return backend


@pytest.fixture
def ttl_pass(backend: Backend) -> Backend:
    """The backend, for a test that waits for a TTL pass to delete documents: against
    `MONGODB_URI` on one driver (`async`) only, as the pass is the server's whichever driver
    wrote (every second on `docker/`'s MongoDB and `.ci/secantus.py`'s SecantusDB, every
    60 s on a server left at its default); every embedded backend, which expires on access."""
    if MONGODB_URI and backend.name != "async":
        pytest.skip("a server's TTL pass is waited for once, on the async driver")
    return backend


@pytest.fixture
def command_log() -> CommandLog:
    return CommandLog()


@pytest.fixture
async def saver(backend: Backend, command_log: CommandLog) -> AsyncIterator[Any]:
    async with backend.saver(command_log) as saver:
        command_log.reset()
        yield saver


@pytest.fixture
def sent_commands(monkeypatch: pytest.MonkeyPatch) -> list[Command]:
    """Every `Command` a saver (async or sync) sends from now on, in order (as the core
    built it: filters and pipelines whole, where the wire shows only command names).

    Every executor and cursor of `_executors` makes its driver call through
    `_executors.call`."""
    from langgraph.checkpoint.mongo import _executors

    commands: list[Command] = []
    call = _executors.call

    def recorded(collection: Any, command: Command) -> Any:
        commands.append(command)
        return call(collection, command)

    monkeypatch.setattr(_executors, "call", recorded)
    return commands
