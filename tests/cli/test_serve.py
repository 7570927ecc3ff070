"""`python -m langgraph.checkpoint.mongo.testing serve`: the suite's wire server as a
command, started in a subprocess as a user starts it, with the `threads` and
`copy-threads` commands pointed at it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pymongo import MongoClient

from support.cli import run_command
from support.graphs import chat_graph, human
from support.helpers import config
from support.migration_sources import official_saver_class

pytestmark = pytest.mark.no_server  # the package's own stand-ins or no server at all

SERVE = [sys.executable, "-m", "langgraph.checkpoint.mongo.testing", "serve"]
CLI = [sys.executable, "-m", "langgraph.checkpoint.mongo"]


class Served:
    def __init__(self, process: subprocess.Popen[str], first_line: str) -> None:
        self.process = process
        self.first_line = first_line

    @property
    def uri(self) -> str:
        return self.first_line.split(" at ", 1)[1].split()[0]

    def stop(self, signum: int) -> tuple[int, str]:
        """Send `signum`; the exit code and what it printed after its first line."""
        self.process.send_signal(signum)
        out, _ = self.process.communicate(timeout=30)
        return self.process.returncode, out


@contextmanager
def serve(*args: str) -> Iterator[Served]:
    with subprocess.Popen(
        [*SERVE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            yield Served(process, process.stdout.readline())
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)


def test_help_says_what_it_is_for() -> None:
    shown = run_command([*SERVE, "--help"])
    assert shown.returncode == 0
    text = " ".join(shown.stdout.split())
    assert "on 127.0.0.1 (this machine only)" in text
    assert "For trying and testing only, not for data you keep" in text
    assert "gone when it stops" in text
    assert "--port PORT" in text
    bad = run_command([*SERVE, "--port", "65536"])
    assert bad.returncode == 2
    assert bad.stderr.endswith("argument --port: must be from 0 to 65535, got 65536\n")


def test_threads_and_copy_threads_against_a_served_stand_in() -> None:
    official = official_saver_class()
    with serve("--port", "0") as served:
        assert served.first_line.startswith("serving a MongoDB stand-in at mongodb://127.0.0.1:")
        assert served.first_line.endswith(
            "(for trying and testing only: data in memory only, not for data you keep)\n"
        )
        with MongoClient[dict[str, Any]](served.uri) as client:
            graph = chat_graph().compile(checkpointer=official(client, "checkpointing_db"))
            for thread_id in ("user-1", "user-2"):
                graph.invoke(human(0), config(thread_id))
        env = {"MONGODB_URI": served.uri}
        theirs = run_command([*CLI, "threads", "ls", "--db", "checkpointing_db"], env=env)
        assert theirs.returncode == 2
        assert "copy-threads --from-mongodb URI --from-db checkpointing_db" in theirs.stderr
        copied = run_command(
            [
                *CLI,
                "copy-threads",
                "--from-mongodb",
                served.uri,
                "--to",
                served.uri,
                "--to-db",
                "langgraph_db",
                "--verify",
            ]
        )
        assert copied.returncode == 0, copied.stderr
        listed = run_command([*CLI, "threads", "ls", "--db", "langgraph_db", "--json"], env=env)
        assert listed.returncode == 0, listed.stderr
        assert [t["thread_id"] for t in json.loads(listed.stdout)] == ["user-1", "user-2"]
        code, said = served.stop(signal.SIGTERM)
    assert code == 0
    assert said.endswith("stopped; the data it held is gone\n")


def test_a_port_in_use_is_named_and_ctrl_c_stops_it() -> None:
    with serve("--port", "0") as served:
        port = served.uri.split(":")[2].split("/")[0]
        with serve("--port", port) as second:
            assert second.process.wait(timeout=30) == 1
            assert second.first_line == ""
            assert second.process.stderr is not None
            assert second.process.stderr.read().startswith(
                f"error: cannot listen on 127.0.0.1:{port}: "
            )
        code, said = served.stop(signal.SIGINT)
    assert code == 0
    assert said.endswith("stopped; the data it held is gone\n")
