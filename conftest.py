"""The world the python blocks of README.md and docs/ run in (pytest-markdown-docs collects
them: `--markdown-docs` in pyproject.toml; the suite's own fixtures are in tests/conftest.py).

Every block runs against a MongoDB server: `pymongo.MongoClient` and
`pymongo.AsyncMongoClient` (and so `from_conn_string`) connect to one in-process stand-in
of `langgraph.checkpoint.mongo.testing` per block, whatever the address. README.md's
blocks get nothing else: each runs as pasted into a file
(`tests/harness/test_readme_as_pasted.py` runs each as one, against the wire stand-in).
A docs page's blocks also get what the page says at its top is the reader's own:
- `uri`, the connection string, and `builder`, the graph's `StateGraph` (a chat graph whose
  node answers each user message);
- `myapp.graph` (`builder`) and `myapp.state` (`Ticket`), the application the testing
  examples import;
- `LANGGRAPH_AES_KEY`, the key docs/security.md's encryption block says to set.
A block that defines `test_*` functions is a test module: pytest runs it as one (in
process, with an empty configuration), and its tests must pass. A block marked
`{.python notest}` is not run; an HTML comment above it says why. Environment variables a
block sets are restored after it. What a block prints is captured (shown when it fails),
as pytest captures a test's output.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pytest_markdown_docs._runners import DefaultRunner, register_runner

# The docs' Python (the API reference's griffe extension) is build tooling, not a page: it
# has no block to run, and its imports are the docs group's.
collect_ignore_glob = ["docs/*.py"]

# The connection string the blocks name as `uri`: the stand-in ignores it.
URI = "mongodb://localhost:27017"


def chat_builder() -> Any:
    """A `StateGraph` of messages whose one node answers each user message."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, MessagesState, StateGraph

    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"you said: {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder


@dataclass
class Ticket:
    """A type of the reader's own that their state holds (docs/security.md)."""

    title: str


def pytest_markdown_docs_globals() -> dict[str, Any]:
    return {"uri": URI, "builder": chat_builder()}


# The names `pytest_markdown_docs_globals` defines, which README.md's blocks do without.
READER_NAMES = frozenset({"uri", "builder"})


def as_pasted(path: Path) -> bool:
    """Whether the blocks of the page at `path` run with nothing defined: README.md's."""
    return path.name == "README.md"


class _Block:
    """What the running block needs that the runner cannot take as an argument."""

    directory: Path | None = None
    node: pytest.Item | None = None


@pytest.fixture(autouse=True)
def _snippet_world(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    if request.node.get_closest_marker("markdown-docs") is None:
        yield
        return
    import pymongo
    from mongomock_motor import AsyncMongoMockClient

    from langgraph.checkpoint.mongo import aio, sync, testing

    # One server per block: every client of the block sees the same data.
    server = testing.client()

    class MongoClient:
        def __new__(cls, *_: Any, **__: Any) -> Any:
            return server

    class AsyncMongoClient:
        def __new__(cls, *_: Any, **__: Any) -> Any:
            return AsyncMongoMockClient(mock_mongo_client=server)

    for module in (pymongo, sync):
        monkeypatch.setattr(module, "MongoClient", MongoClient)
    for module in (pymongo, aio):
        monkeypatch.setattr(module, "AsyncMongoClient", AsyncMongoClient)
    if not as_pasted(request.node.path):
        myapp = types.ModuleType("myapp")
        graph = types.ModuleType("myapp.graph")
        graph.builder = chat_builder()  # type: ignore[attr-defined]
        state = types.ModuleType("myapp.state")
        state.Ticket = Ticket  # type: ignore[attr-defined]
        for module in (myapp, graph, state):
            monkeypatch.setitem(sys.modules, module.__name__, module)
        # The key docs/security.md's encryption block says to set.
        monkeypatch.setenv("LANGGRAPH_AES_KEY", "0123456789abcdef")
    # Files a block creates (a SQLite database) land in a temporary directory.
    _Block.directory = request.getfixturevalue("tmp_path")
    _Block.node = request.node
    monkeypatch.chdir(_Block.directory)
    environ = dict(os.environ)
    try:
        yield
    finally:
        _Block.directory = _Block.node = None
        os.environ.clear()
        os.environ.update(environ)


class _Outcomes:
    """A pytest plugin that counts the tests that passed and names those that failed."""

    def __init__(self) -> None:
        self.passed = 0
        self.failed: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.failed.append(report.nodeid)
        elif report.when == "call" and report.passed:
            self.passed += 1


def run_as_test_module(source: str, tests: int) -> None:
    """Run `source` as a test module of its own (no configuration, so no plugin option of
    this project's); all of its `tests` must pass."""
    directory = _Block.directory
    assert directory is not None
    ini = directory / "pytest.ini"
    ini.write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    module = directory / f"test_block_{directory.name}.py"
    module.write_text(source)
    outcomes = _Outcomes()
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output):
            status = pytest.main(
                [str(module), "-p", "no:cacheprovider", "-c", str(ini)],
                plugins=[outcomes],
            )
    finally:
        sys.modules.pop(module.stem, None)
    assert status == 0, output.getvalue()
    assert (outcomes.passed, outcomes.failed) == (tests, []), output.getvalue()


@register_runner(default=True)
class SnippetRunner(DefaultRunner):
    """The plugin's runner; then a block that defined tests runs as the test module it is."""

    def runtest(self, test: Any, args: dict[str, Any], *, asyncio_runner: Any = None) -> None:
        if as_pasted(test.source_path):
            args = {name: value for name, value in args.items() if name not in READER_NAMES}
        # The plugin turns pytest's capture off around a block: capture here instead, so
        # that a block's prints do not land in the progress line.
        output = io.StringIO()
        try:
            with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
                super().runtest(test, args, asyncio_runner=asyncio_runner)
        finally:
            if _Block.node is not None and output.getvalue():
                _Block.node.add_report_section("call", "output", output.getvalue())
        tests = [
            name for name, value in args.items() if name.startswith("test_") and callable(value)
        ]
        if tests:
            run_as_test_module(test.source, len(tests))
