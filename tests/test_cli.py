"""`python -m langgraph.checkpoint.mongo copy-threads`, run end to end in a subprocess
against the wire server (or `MONGODB_URI`)."""

from __future__ import annotations

import fcntl
import os
import pty
import sqlite3
import struct
import subprocess
import sys
import termios
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from langgraph.checkpoint.mongo import MongoDBSaver
from support.backends import MONGODB_URI
from support.graphs import Run, chat_graph, human, run_on
from support.helpers import config
from support.migration_sources import official_saver_class

COMMAND = [sys.executable, "-m", "langgraph.checkpoint.mongo", "copy-threads"]


@pytest.fixture
def uri(request: pytest.FixtureRequest) -> str:
    return MONGODB_URI or request.getfixturevalue("wire_server").uri


@pytest.fixture
def client(uri: str) -> Iterator[MongoClient[dict[str, Any]]]:
    names = []

    class Client(MongoClient[dict[str, Any]]):
        def new_db(self) -> str:
            names.append(f"cli_{uuid.uuid4().hex[:12]}")
            return names[-1]

    with Client(uri) as client:
        yield client
        for name in names:
            client.drop_database(name)


def run(*args: str, tty: bool = False) -> subprocess.CompletedProcess[str]:
    """The command; with `tty`, stderr is a terminal (and comes back in `stderr`)."""
    env = {**os.environ, "COLUMNS": "120"}
    if not tty:
        return subprocess.run(
            [*COMMAND, *args], capture_output=True, text=True, timeout=120, env=env, check=False
        )
    leader, follower = pty.openpty()
    # A terminal of 24 rows and 120 columns (a fresh pty has none).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    with subprocess.Popen(
        [*COMMAND, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
        text=True,
    ) as process:
        os.close(follower)
        terminal = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            terminal += chunk
        os.close(leader)
        assert process.stdout is not None
        out = process.stdout.read()
        code = process.wait(timeout=120)
    return subprocess.CompletedProcess(COMMAND, code, out, terminal.decode(errors="replace"))


async def chat(saver: Any, *thread_ids: str) -> None:
    async def scenario(run: Run) -> None:
        graph = run.compile(chat_graph())
        for thread_id in thread_ids:
            for turn in range(2):
                await graph.invoke(human(turn), config(thread_id))

    await run_on(saver, True, None, scenario)


async def sqlite_file(path: Path, *thread_ids: str) -> Path:
    from langgraph.checkpoint.sqlite import SqliteSaver

    with sqlite3.connect(path, check_same_thread=False) as conn:
        await chat(SqliteSaver(conn), *thread_ids)
    return path


def test_help_says_what_every_flag_does() -> None:
    result = run("--help")
    assert result.returncode == 0
    for flag in (
        "--from-mongodb",
        "--from-sqlite",
        "--from-db",
        "--to ",
        "--to-db",
        "--thread",
        "--dry-run",
        "--verify",
        "--overwrite",
        "--batch-size",
        "--no-progress",
    ):
        assert flag in result.stdout


async def test_copies_the_official_collections_and_verifies(
    uri: str, client: MongoClient[dict[str, Any]]
) -> None:
    official = official_saver_class()
    source_db, target_db = client.new_db(), client.new_db()
    source = official(client, source_db)
    await chat(source, "a", "b")
    args = ["--from-mongodb", uri, "--from-db", source_db, "--to", uri, "--to-db", target_db]

    result = run(*args, "--verify")
    assert result.returncode == 0, result.stderr
    assert "2 thread(s), 2 copied" in result.stdout
    assert "verify: 2 thread(s), 12 checkpoint(s) compared: identical" in result.stdout
    assert result.stderr == ""  # no terminal, no progress bar
    ours = MongoDBSaver(client, target_db)
    for thread_id in ("a", "b"):
        mine, theirs = ours.get_tuple(config(thread_id)), source.get_tuple(config(thread_id))
        assert mine is not None
        assert theirs is not None
        assert (mine.checkpoint, mine.metadata) == (theirs.checkpoint, theirs.metadata)

    again = run(*args, "--thread", "b")
    assert again.returncode == 0, again.stderr
    assert "1 thread(s), 1 unchanged" in again.stdout


async def test_copies_a_sqlite_file_with_a_progress_bar_on_a_terminal(
    uri: str, client: MongoClient[dict[str, Any]], tmp_path: Path
) -> None:
    path = await sqlite_file(tmp_path / "threads.db", "x", "y", "z")
    target_db = client.new_db()
    result = run("--from-sqlite", str(path), "--to", uri, "--to-db", target_db, tty=True)
    assert result.returncode == 0, result.stderr
    assert "3 thread(s), 3 copied" in result.stdout
    bar = result.stderr
    assert "copy: 100%" in bar
    assert "3/3" in bar
    assert "thread/s" in bar or "s/thread" in bar
    assert "18 checkpoints" in bar
    assert MongoDBSaver(client, target_db).get_tuple(config("z")) is not None


async def test_a_dry_run_writes_nothing(
    uri: str, client: MongoClient[dict[str, Any]], tmp_path: Path
) -> None:
    path = await sqlite_file(tmp_path / "threads.db", "x")
    target_db = client.new_db()
    result = run("--from-sqlite", str(path), "--to", uri, "--to-db", target_db, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("dry run: 1 thread(s), 1 copied")
    assert "would be written" in result.stdout
    assert target_db not in client.list_database_names()


async def test_a_conflict_exits_1_and_is_named(
    uri: str, client: MongoClient[dict[str, Any]], tmp_path: Path
) -> None:
    path = await sqlite_file(tmp_path / "threads.db", "mine", "free")
    target_db = client.new_db()
    target = MongoDBSaver(client, target_db)
    target.setup()
    await chat(target, "mine")
    result = run("--from-sqlite", str(path), "--to", uri, "--to-db", target_db)
    assert result.returncode == 1
    assert "conflict: 'mine': the target holds" in result.stderr
    assert "2 thread(s), 1 copied, 1 conflict" in result.stdout
    overwritten = run("--from-sqlite", str(path), "--to", uri, "--to-db", target_db, "--overwrite")
    assert overwritten.returncode == 0, overwritten.stderr
    assert "1 unchanged, 1 replaced" in overwritten.stdout


def test_errors_are_one_readable_line(tmp_path: Path, uri: str) -> None:
    missing = run("--from-sqlite", str(tmp_path / "nope.db"), "--to", uri)
    assert missing.returncode == 1
    assert missing.stderr == f"error: --from-sqlite {str(tmp_path / 'nope.db')!r}: no such file\n"

    same = run("--from-mongodb", uri, "--to", uri)
    assert same.returncode == 1
    assert "the source and the target are the same collections" in same.stderr

    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    unreachable = "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=300"
    down = run("--from-sqlite", str(path), "--to", unreachable)
    assert down.returncode == 1
    assert down.stderr.startswith("error: ServerSelectionTimeoutError: 127.0.0.1:9")
    assert len(down.stderr.strip().splitlines()) == 1

    bad = run("--from-sqlite", str(path), "--to", uri, "--batch-size", "0")
    assert (bad.returncode, bad.stderr) == (1, "error: --batch-size must be at least 1, got 0\n")
    usage = run("--to", uri)
    assert usage.returncode == 2
    assert "one of the arguments --from-mongodb --from-sqlite is required" in usage.stderr
