"""LangGraph's real Agent Server on `examples/agent_server/`: `langgraph dev` (from
`langgraph-cli[inmem]`) loads the checkpointer from `langgraph.json` in each form the docs
give, against the wire server (`MONGODB_URI`), driven by `langgraph-sdk`; after each step the
test reads MongoDB directly.

The Agent Server pins its own LangGraph versions, so it is not in the test environment:
`nox -s agent-server` (CI's "Agent Server" step) runs this file in a venv of its own. Where
the `langgraph` CLI is not installed beside this Python the file is skipped, unless
`REQUIRE_AGENT_SERVER=1`, which makes that a failure (CI sets it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient
from pymongo.database import Database

from langgraph.checkpoint.mongo._schema import Field
from langgraph.checkpoint.mongo.testing._wire import WireServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_server"
LANGGRAPH_CLI = Path(sys.executable).with_name("langgraph")
MISSING = [
    what
    for what, present in [
        (f"the `langgraph` CLI ({LANGGRAPH_CLI})", LANGGRAPH_CLI.exists()),
        ("langgraph-api", importlib.util.find_spec("langgraph_api") is not None),
        ("langgraph-sdk", importlib.util.find_spec("langgraph_sdk") is not None),
    ]
    if not present
]
if MISSING:
    _reason = (
        f"the Agent Server is not installed beside {sys.executable} (missing: "
        f"{', '.join(MISSING)}); `nox -s agent-server` runs this test in a venv of its own"
    )
    if os.environ.get("REQUIRE_AGENT_SERVER") == "1":
        pytest.fail(f"REQUIRE_AGENT_SERVER=1, but {_reason}", pytrace=False)
    pytest.skip(_reason, allow_module_level=True)

from langgraph_sdk import get_sync_client  # noqa: E402  (installed: checked above)
from langgraph_sdk.client import SyncLangGraphClient  # noqa: E402

# The two `langgraph.json` forms the docs give: the example's own file (resolved against
# the directory the server runs in) and the package's module path (split on its last `.`).
FORMS = {
    "file": "./checkpointer.py:checkpointer",
    "module": "langgraph.checkpoint.mongo.agent_server.checkpointer",
}
START_TIMEOUT = 90.0
# Keep the server on loopback: no CLI analytics, no version check against the package
# index, no tracing; any other HTTP it tried would go to a proxy port nothing listens on.
QUIET = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "HTTP_PROXY": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "ALL_PROXY": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost,::1",
}
_SECRETS = ("LANGSMITH_", "LANGCHAIN_", "LANGGRAPH_CLOUD_LICENSE_KEY", "OPENAI_", "ANTHROPIC_")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class DevServer:
    """`langgraph dev` in `directory` (where its `langgraph.json` is), as a user runs it."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.directory = directory
        self.env = env
        self.log = directory / "langgraph-dev.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> SyncLangGraphClient:
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    *(str(LANGGRAPH_CLI), "dev", "--no-browser", "--no-reload"),
                    *("--host", "127.0.0.1", "--port", str(port)),
                ],
                cwd=self.directory,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        client = get_sync_client(url=self.url, api_key=None)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.fail(f"langgraph dev exited with {self.process.returncode} at startup")
            try:
                client.http.get("/ok")
                return client
            except Exception:  # not listening yet
                time.sleep(0.2)
        self.fail(f"langgraph dev did not answer /ok within {START_TIMEOUT:.0f} s")
        raise AssertionError  # unreachable: fail raises

    def stop(self) -> None:
        """What Ctrl-C does: the server exits the checkpointer and flushes its records."""
        if self.process is None:
            return
        process, self.process = self.process, None
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                self.fail("langgraph dev did not stop within 30 s of SIGINT")

    def fail(self, message: str) -> None:
        self.stop()
        tail = self.log.read_text(errors="replace")[-6000:] if self.log.exists() else ""
        pytest.fail(f"{message}; its log ends with:\n{tail}", pytrace=False)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the example (the server writes `.langgraph_api/` where it runs)."""
    directory = tmp_path / "agent_server"
    shutil.copytree(EXAMPLE, directory, ignore=shutil.ignore_patterns(".langgraph_api"))
    return directory


def server_env(uri: str, db_name: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SECRETS)}
    env.update(QUIET, MONGODB_URI=uri, MONGODB_DB_NAME=db_name, MONGODB_COMPRESSION="zstd")
    env.pop("PYTHONPATH", None)  # the server imports what its venv has installed
    return env


@pytest.fixture
def mongo(wire_server: WireServer) -> Iterator[MongoClient[dict[str, Any]]]:
    client: MongoClient[dict[str, Any]] = MongoClient(wire_server.uri)
    yield client
    client.close()


# What MongoDB holds, read with PyMongo (not through the saver).


def checkpoints(db: Database[dict[str, Any]], thread_id: str) -> list[dict[str, Any]]:
    """The thread's checkpoint documents, oldest first (ids are time-ordered)."""
    found = db.checkpoints.find({Field.THREAD_ID: thread_id}).sort(Field.ID_CHECKPOINT_ID, 1)
    return list(found)


def ids(documents: list[dict[str, Any]]) -> list[str]:
    return [d[Field.ID][Field.CHECKPOINT_ID] for d in documents]


def writes(db: Database[dict[str, Any]], thread_id: str) -> int:
    return db.checkpoint_writes.count_documents({Field.THREAD_ID: thread_id})


def run_ids(documents: list[dict[str, Any]]) -> set[Any]:
    return {d[Field.METADATA].get("run_id") for d in documents}


def chain(documents: list[dict[str, Any]], head: str) -> list[str]:
    """Checkpoint ids from `head` back to the root, following the stored parent ids."""
    parent = {d[Field.ID][Field.CHECKPOINT_ID]: d[Field.PARENT_CHECKPOINT_ID] for d in documents}
    walked = [head]
    while parent[walked[-1]] is not None:
        walked.append(parent[walked[-1]])
    return walked


def say(client: SyncLangGraphClient, thread_id: str, text: str, **kwargs: Any) -> str:
    """One run of the example's graph; returns the run id once it has finished."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    given: dict[str, Any] = {"messages": messages}
    run = client.runs.create(thread_id, "chat", input=given, **kwargs)
    client.runs.join(thread_id, run["run_id"])
    finished = client.runs.get(thread_id, run["run_id"])
    assert finished["status"] == "success", finished
    return str(run["run_id"])


def texts(state: Any) -> list[str]:
    return [m["content"] for m in state["values"]["messages"]]


@pytest.mark.parametrize("form", FORMS)
def test_the_agent_server_keeps_its_checkpoints_in_mongodb(
    form: str, project: Path, wire_server: WireServer, mongo: MongoClient[dict[str, Any]]
) -> None:
    config_file = project / "langgraph.json"
    config = json.loads(config_file.read_text())
    if form == "file":
        assert config["checkpointer"]["path"] == FORMS["file"]  # the example as shipped
    config["checkpointer"]["path"] = FORMS[form]
    config_file.write_text(json.dumps(config, indent=2))
    db_name = f"agent_e2e_{uuid.uuid4().hex[:12]}"
    db = mongo[db_name]
    server = DevServer(project, server_env(wire_server.uri, db_name))
    try:
        client = server.start()
        assert f"Loading checkpointer {FORMS[form]}" in server.output()
        assert "Using custom checkpointer: AsyncMongoDBSaver" in server.output()

        # A thread is a record of the server's own storage: nothing in MongoDB yet.
        thread = client.threads.create()["thread_id"]
        assert checkpoints(db, thread) == []

        # A run: its checkpoints and writes are in MongoDB, tagged with the run.
        first = say(client, thread, "hi")
        stored = checkpoints(db, thread)
        assert len(stored) == 3  # input, then a step per node
        assert run_ids(stored) == {first}
        assert writes(db, thread) > 0
        state = client.threads.get_state(thread)
        assert texts(state) == ["hi", "message 1 of this thread: hi"]
        assert state["checkpoint"]["checkpoint_id"] == ids(stored)[-1]
        after_first = ids(stored)[-1]

        # A second run continues the thread; the history is what MongoDB holds.
        second = say(client, thread, "again")
        stored = checkpoints(db, thread)
        assert len(stored) == 6
        assert run_ids(stored) == {first, second}
        assert texts(client.threads.get_state(thread))[-1] == "message 2 of this thread: again"
        history = client.threads.get_history(thread, limit=100)
        assert [h["checkpoint"]["checkpoint_id"] for h in history] == ids(stored)[::-1]
        assert chain(stored, ids(stored)[-1]) == ids(stored)[::-1]

        # update_state: a new checkpoint on top of the head.
        head = ids(stored)[-1]
        update = {"messages": [{"role": "user", "content": "edited"}]}
        updated = client.threads.update_state(thread, update, as_node="answer")
        update_id = updated["checkpoint"]["checkpoint_id"]
        stored = checkpoints(db, thread)
        assert ids(stored)[-1] == update_id
        assert stored[-1][Field.PARENT_CHECKPOINT_ID] == head
        assert stored[-1][Field.METADATA]["source"] == "update"
        assert texts(client.threads.get_state(thread))[-1] == "edited"

        # A fork: an update of the first run's last checkpoint, then a run from it.
        forked = client.threads.update_state(
            thread,
            {"messages": [{"role": "user", "content": "forked"}]},
            as_node="answer",
            checkpoint_id=after_first,
        )
        fork_id = forked["checkpoint"]["checkpoint_id"]
        assert checkpoints(db, thread)[-1][Field.PARENT_CHECKPOINT_ID] == after_first
        third = say(client, thread, "branch", checkpoint_id=fork_id)
        stored = checkpoints(db, thread)
        assert len(stored) == 6 + 1 + 1 + 3
        state = client.threads.get_state(thread)
        assert texts(state) == [
            "hi",
            "message 1 of this thread: hi",
            "forked",
            "branch",
            "message 3 of this thread: branch",
        ]
        latest = state["checkpoint"]["checkpoint_id"]
        assert latest is not None
        walked = chain(stored, latest)
        assert walked[3:5] == [fork_id, after_first]
        assert run_ids(stored) >= {first, second, third}

        # threads.copy: the server calls acopy_thread; the copy is in MongoDB.
        # The SDK types `copy` as returning None; the server answers the new thread.
        copy = client.threads.copy(thread)["thread_id"]  # type: ignore[func-returns-value,index]
        copied = checkpoints(db, copy)
        assert ids(copied) == ids(stored)
        assert {d[Field.THREAD_ID] for d in copied} == {copy}
        assert writes(db, copy) == writes(db, thread)
        assert client.threads.get_state(copy)["values"] == state["values"]

        # runs.delete: the server calls adelete_for_runs; the run's checkpoints go.
        other = client.threads.create()["thread_id"]
        kept = say(client, other, "one")
        dropped = say(client, other, "two")
        assert run_ids(checkpoints(db, other)) == {kept, dropped}
        client.runs.delete(other, dropped)
        assert run_ids(checkpoints(db, other)) == {kept}
        assert len(checkpoints(db, other)) == 3
        assert texts(client.threads.get_state(other)) == ["one", "message 1 of this thread: one"]

        # A restart: threads come back from the server's files, their state from MongoDB.
        before = {t: ids(checkpoints(db, t)) for t in (thread, copy, other)}
        server.stop()
        assert {t: ids(checkpoints(db, t)) for t in before} == before
        client = server.start()
        assert (
            client.threads.get_state(thread)["checkpoint"]["checkpoint_id"] == (before[thread][-1])
        )
        assert client.threads.get_state(copy)["values"] == state["values"]
        say(client, thread, "after the restart")
        stored = checkpoints(db, thread)
        assert len(stored) == len(before[thread]) + 3
        assert before[thread][-1] in chain(stored, ids(stored)[-1])
        assert texts(client.threads.get_state(thread))[-1] == (
            "message 4 of this thread: after the restart"
        )

        # threads.delete: the server calls adelete_thread; nothing of the thread is left.
        client.threads.delete(thread)
        assert checkpoints(db, thread) == []
        assert writes(db, thread) == 0
        assert ids(checkpoints(db, copy)) == before[copy]  # the copy is its own thread
        # threads.prune ("delete"): the in-memory runtime deletes each thread as above
        # (only the server's gRPC checkpointer service calls aprune(strategy="delete_all")).
        assert client.threads.prune([copy, other], strategy="delete")["pruned_count"] == 2
        assert db.checkpoints.count_documents({}) == 0
        assert db.checkpoint_writes.count_documents({}) == 0
    finally:
        server.stop()
        mongo.drop_database(db_name)


def test_the_colon_form_does_not_load(project: Path, wire_server: WireServer) -> None:
    """Why the docs give no `module:name` form: langgraph-api splits a module path on its
    last `.` and then finds no `agent_server:checkpointer` in `langgraph.checkpoint.mongo`."""
    config_file = project / "langgraph.json"
    config = json.loads(config_file.read_text())
    config["checkpointer"]["path"] = "langgraph.checkpoint.mongo.agent_server:checkpointer"
    config_file.write_text(json.dumps(config))
    server = DevServer(project, server_env(wire_server.uri, "agent_e2e_unused"))
    with pytest.raises(pytest.fail.Exception, match="Could not find checkpointer"):
        server.start()
