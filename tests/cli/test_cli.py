"""`python -m langgraph.checkpoint.mongo copy-threads`, run end to end in a subprocess
against the wire server (or `MONGODB_URI`)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command
from pymongo import MongoClient

from langgraph.checkpoint.mongo import MongoDBSaver
from langgraph.checkpoint.mongo._options import redact_uri
from support.cli import run_command
from support.graphs import Run, chat_graph, human, linear_graph, run_on
from support.helpers import config
from support.migration_sources import official_saver_class

COMMAND = [sys.executable, "-m", "langgraph.checkpoint.mongo", "copy-threads"]


class Client(MongoClient[dict[str, Any]]):
    """A client that drops the databases it named (`new_db`) once the test is done."""

    names: list[str]

    def new_db(self) -> str:
        self.names.append(f"cli_{uuid.uuid4().hex[:12]}")
        return self.names[-1]


@pytest.fixture
def client(uri: str) -> Iterator[Client]:
    client = Client(uri)
    client.names = []
    try:
        yield client
        for name in client.names:
            client.drop_database(name)
    finally:
        client.close()


def run(
    *args: str, tty: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_command([*COMMAND, *args], tty=tty, env=env)


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


@pytest.mark.no_server
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
        "--timeout",
    ):
        assert flag in result.stdout
    assert "2 bad arguments" in result.stdout
    assert "130 interrupted" in result.stdout


@pytest.mark.no_server
def test_version() -> None:
    from langgraph.checkpoint.mongo import __version__

    result = subprocess.run(
        [sys.executable, "-m", "langgraph.checkpoint.mongo", "--version"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stdout) == (
        0,
        f"python -m langgraph.checkpoint.mongo {__version__}\n",
    )


async def test_copies_the_official_collections_and_verifies(uri: str, client: Client) -> None:
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
    uri: str, client: Client, tmp_path: Path
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


async def test_a_dry_run_writes_nothing(uri: str, client: Client, tmp_path: Path) -> None:
    path = await sqlite_file(tmp_path / "threads.db", "x")
    target_db = client.new_db()
    result = run("--from-sqlite", str(path), "--to", uri, "--to-db", target_db, "--dry-run")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("dry run: 1 thread(s), 1 would be copied\n")
    assert "would be written" in result.stdout
    assert target_db not in client.list_database_names()


async def test_an_interrupt_copied_without_langgraph_fails_by_name(
    uri: str, client: Client, tmp_path: Path
) -> None:
    """As installed without `langgraph` (only `langgraph-checkpoint`): `langgraph.types`
    does not import, and the thread waiting at an interrupt must not arrive as a dict."""
    path = tmp_path / "threads.db"
    hitl = config("hitl")
    with sqlite3.connect(path, check_same_thread=False) as conn:
        from langgraph.checkpoint.sqlite import SqliteSaver

        async def scenario(run: Run) -> None:
            await run.compile(linear_graph("draft", "review", ask="review")).invoke({}, hitl)

        await run_on(SqliteSaver(conn), True, None, scenario)
        waiting = SqliteSaver(conn).get_tuple(hitl)
        assert waiting is not None
    await sqlite_file(path, "plain")
    hidden = tmp_path / "without_langgraph" / "langgraph"
    hidden.mkdir(parents=True)  # a portion of the namespace package, found first
    (hidden / "types.py").write_text("raise ImportError('langgraph is not installed')\n")
    pythonpath = os.pathsep.join([str(hidden.parent), os.environ.get("PYTHONPATH", "")])
    target_db = client.new_db()
    args = ["--from-sqlite", str(path), "--to", uri, "--to-db", target_db, "--verify"]

    result = run(*args, env={"PYTHONPATH": pythonpath})
    assert result.returncode == 1
    assert "2 thread(s), 1 copied, 1 failed" in result.stdout
    assert (
        f"failed: 'hitl': checkpoint {waiting.config['configurable']['checkpoint_id']!r} "
        "(namespace ''): does not decode exactly here: it holds langgraph.types.Interrupt "
        "(cannot be imported here: ImportError: langgraph is not installed; pip install "
        '"langgraph-checkpoint-mongo[cli]" brings it); nothing of this thread was written'
    ) in result.stderr
    assert "verify: 2 thread(s)" in result.stdout
    assert "1 thread(s) differ" in result.stdout
    assert MongoDBSaver(client, target_db).get_tuple(hitl) is None

    result = run(*args)  # with langgraph
    assert result.returncode == 0, result.stderr
    assert "2 thread(s), 1 copied, 1 unchanged" in result.stdout
    graph = linear_graph("draft", "review", ask="review").compile(MongoDBSaver(client, target_db))
    assert graph.invoke(Command(resume="ok"), hitl)["log"] == ["draft", "review=ok"]


async def test_a_conflict_exits_1_and_is_named(uri: str, client: Client, tmp_path: Path) -> None:
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


def empty_sqlite_saver_file(path: Path) -> Path:
    """A SqliteSaver database without threads."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with sqlite3.connect(path, check_same_thread=False) as conn:
        SqliteSaver(conn).setup()
    return path


@pytest.mark.no_server
def test_usage_errors_exit_2_before_connecting(tmp_path: Path, uri: str) -> None:
    """Nothing is connected to: the target given is a port nobody listens on."""
    path = empty_sqlite_saver_file(tmp_path / "empty.db")
    nobody = "mongodb://127.0.0.1:9/"
    missing = run("--from-sqlite", str(tmp_path / "nope.db"), "--to", nobody)
    assert (missing.returncode, missing.stderr) == (
        2,
        f"error: --from-sqlite {str(tmp_path / 'nope.db')!r}: no such file\n",
    )
    same = run("--from-mongodb", nobody, "--to", nobody)
    assert same.returncode == 2
    assert "the source and the target are the same collections" in same.stderr
    for flag, value, says in [
        ("--batch-size", "0", "must be an int of at least 1, got 0"),
        ("--batch-size", "x", "must be a whole number, got 'x'"),
        ("--ttl", "-5", "must be from 1 to 2147483647 seconds (MongoDB's largest TTL), got -5"),
        ("--ttl", "inf", "must be from 1 to 2147483647 seconds (MongoDB's largest TTL), got inf"),
        ("--timeout", "0", "must be a number of seconds of at least 0.1, got 0"),
    ]:
        bad = run("--from-sqlite", str(path), "--to", nobody, flag, value)
        assert bad.returncode == 2, (flag, value)
        assert f"argument {flag}: {says}" in bad.stderr
        assert "day" not in bad.stderr
    usage = run("--to", uri)
    assert usage.returncode == 2
    assert "one of the arguments --from-mongodb --from-sqlite is required" in usage.stderr


def test_an_unreachable_server_is_named_within_the_timeout(tmp_path: Path) -> None:
    path = empty_sqlite_saver_file(tmp_path / "empty.db")
    unreachable = "mongodb://someone:secret@127.0.0.1:9/?authSource=admin"
    started = time.monotonic()
    down = run("--from-sqlite", str(path), "--to", unreachable, "--timeout", "0.5")
    assert time.monotonic() - started < 20
    assert down.returncode == 1
    assert down.stderr.startswith(
        "error: cannot reach the target (--to) at mongodb://***@127.0.0.1:9/?***: no server "
        "answered within 0.5 s (--timeout): 127.0.0.1:9"
    )
    assert "secret" not in down.stderr
    assert len(down.stderr.strip().splitlines()) == 1


async def test_a_source_database_without_the_official_collections_is_named(
    uri: str, client: Client
) -> None:
    """A misspelt --from-db is an empty database: copying nothing must not pass for
    success (exit 0 with 0 checkpoints written)."""
    missing_db, target_db = client.new_db(), client.new_db()
    args = ["--from-mongodb", uri, "--to", uri, "--to-db", target_db]
    other_db = client.new_db()
    client[other_db]["checkpoints"].insert_one({"x": 1})
    client[other_db]["other"].insert_one({"x": 1})
    missing = run(*args, "--from-db", missing_db)
    assert missing.returncode == 2  # a bad argument, as documented
    assert missing.stdout == ""
    assert missing.stderr.startswith(
        f"error: database {missing_db!r} at {redact_uri(uri)} has no collections (it does "
        "not exist): check --from-db (langgraph-checkpoint-mongodb's default is "
        "'checkpointing_db'); the databases there: ["
    )
    assert repr(other_db) in missing.stderr
    misnamed = run(*args, "--from-db", other_db)
    assert misnamed.returncode == 2
    assert misnamed.stdout == ""
    assert misnamed.stderr.endswith(
        "has no collection 'checkpoint_writes' (--from-writes); its collections: "
        "['checkpoints', 'other']\n"
    )
    assert target_db not in client.list_database_names()


def test_a_file_that_is_not_a_sqlite_saver_database_is_named(tmp_path: Path, uri: str) -> None:
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE checkpoints (id TEXT)")
    text = tmp_path / "notes.txt"
    text.write_text("not a database at all, but long enough to have a header page\n" * 20)
    for path, says in [
        (empty, "is not a SqliteSaver database: it has no table 'checkpoints' or 'writes'"),
        (other, "is not a SqliteSaver database: it has no table 'writes'"),
        (text, "is not a SQLite database: file is not a database"),
    ]:
        result = run("--from-sqlite", str(path), "--to", uri, "--to-db", "never_written")
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr == f"error: --from-sqlite {str(path)!r} {says}\n"


async def test_without_tqdm_there_is_no_bar_and_the_copy_runs(
    uri: str, client: Client, tmp_path: Path
) -> None:
    path = await sqlite_file(tmp_path / "threads.db", "x")
    hidden = tmp_path / "no_tqdm"
    (hidden / "tqdm").mkdir(parents=True)
    (hidden / "tqdm" / "__init__.py").write_text("raise ImportError('tqdm is not installed')\n")
    target_db = client.new_db()
    pythonpath = os.pathsep.join([str(hidden), os.environ.get("PYTHONPATH", "")])
    result = run(
        "--from-sqlite",
        str(path),
        "--to",
        uri,
        "--to-db",
        target_db,
        tty=True,
        env={"PYTHONPATH": pythonpath},
    )
    assert result.returncode == 0, result.stderr
    assert "1 thread(s), 1 copied" in result.stdout
    assert "copy:" not in result.stderr


async def test_a_thread_the_source_lacks_is_missing_and_exits_1(
    uri: str, client: Client, tmp_path: Path
) -> None:
    """`--thread typo` printed "1 thread(s), 1 copied", exited 0 and verified "identical"."""
    path = await sqlite_file(tmp_path / "threads.db", "real")
    target_db = client.new_db()
    args = ["--from-sqlite", str(path), "--to", uri, "--to-db", target_db, "--thread", "typo"]
    result = run(*args, "--verify")
    assert result.returncode == 1
    assert "1 thread(s), 1 missing" in result.stdout
    assert (
        "missing: 'typo': the source has no checkpoint of this thread; nothing was written"
    ) in result.stderr
    assert "identical" not in result.stdout
    assert MongoDBSaver(client, target_db).get_tuple(config("typo")) is None


async def test_this_packages_own_collections_as_the_source_are_copied_by_its_saver(
    uri: str, client: Client
) -> None:
    """`--from-mongodb` at collections this package wrote ended with `error: KeyError:
    'checkpoint_ns'`; they are copied through its saver, and the command says so."""
    source_db, target_db = client.new_db(), client.new_db()
    source = MongoDBSaver(client, source_db)
    await chat(source, "a")
    args = ["--from-mongodb", uri, "--from-db", source_db, "--to", uri, "--to-db", target_db]
    result = run(*args, "--verify")
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"note: {source_db}.checkpoints holds langgraph-checkpoint-mongo's own documents, not "
        "langgraph-checkpoint-mongodb's: copying them through this package's saver\n"
    )
    assert "1 thread(s), 1 copied" in result.stdout
    assert "identical" in result.stdout


@pytest.mark.parametrize("side", ["source", "target"])
async def test_a_refused_login_is_one_line_naming_the_side(
    wire_server: Any, tmp_path: Path, side: str
) -> None:
    """A wrong password printed the server's whole error document, naming neither side."""
    good = wire_server.uri
    bad = good.replace("mongodb://", "mongodb://someone:wrong@")
    if side == "source":
        source = ["--from-mongodb", bad]
    else:
        source = ["--from-sqlite", str(await sqlite_file(tmp_path / "threads.db", "t"))]
    result = run(*source, "--to", good if side == "source" else bad, "--to-db", "elsewhere")
    assert result.returncode == 1
    flag = "--from-mongodb" if side == "source" else "--to"
    assert result.stderr == (
        f"error: the {side} ({flag}) at {redact_uri(bad)} refused the login (Authentication "
        "failed: the stand-in server has no users or authentication; connect without a "
        "username and password): check the user name, password and authSource in that URI\n"
    )
