"""`python -m langgraph.checkpoint.mongo threads ls | show | prune | delete`: in a
subprocess against the wire server (or `MONGODB_URI`), as an operator runs it, and
in process through `main` for the paths a subprocess cannot reach (answering the prompt).
"""

from __future__ import annotations

import io
import json
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import bson
import pytest
from bson import ObjectId
from langgraph.types import Command
from pymongo import MongoClient

from langgraph.checkpoint.mongo import MongoDBSaver
from langgraph.checkpoint.mongo._chunks import ORPHAN_GRACE
from langgraph.checkpoint.mongo._options import redact_uri
from langgraph.checkpoint.mongo.cli import main
from support.backends import MONGODB_URI
from support.cli import run_command
from support.graphs import chat_graph, human, linear_graph
from support.helpers import as_metadata, checkpoint, checkpoint_id_at, config
from support.migration_sources import official_saver_class

COMMAND = [sys.executable, "-m", "langgraph.checkpoint.mongo", "threads"]


def run(saver: MongoDBSaver, action: str, *args: str, tty: bool = False) -> Any:
    return run_command(
        [*COMMAND, action, *args, "--db", saver.db.name],
        tty=tty,
        env={"MONGODB_URI": uri_of(saver)},
    )


def uri_of(saver: MongoDBSaver) -> str:
    """The URI the command is given: `MONGODB_URI`, or the wire server's with an option,
    as real URIs have (`?directConnection=true`, `?retryWrites=...`), which the command
    shows only as `?***`."""
    host, port = saver.client.address or ("", 0)
    return MONGODB_URI or f"mongodb://{host}:{port}/?appname=threads-cli"


def chats(saver: MongoDBSaver, turns: dict[str, int]) -> None:
    graph = chat_graph().compile(checkpointer=saver)
    for thread_id, count in turns.items():
        for turn in range(count):
            graph.invoke(human(turn), config(thread_id))


def put_at(saver: MongoDBSaver, thread_id: str, when: datetime, count: int = 3) -> None:
    """`count` root checkpoints whose `ts` is `when` (a time relative to now)."""
    parent = None
    for step in range(count):
        cp = checkpoint({"n": step})
        cp["ts"] = when.isoformat()
        stored = saver.put(
            config(thread_id, "", parent), cp, {"step": step}, cp["channel_versions"]
        )
        parent = stored["configurable"]["checkpoint_id"]


def per_namespace(saver: MongoDBSaver, thread_id: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in saver.list({"configurable": {"thread_id": thread_id}}):
        ns = item.config["configurable"]["checkpoint_ns"]
        counts[ns] = counts.get(ns, 0) + 1
    return counts


@pytest.mark.no_server
def test_help_says_what_every_flag_does() -> None:
    top = run_command([*COMMAND[:-1], "--help"])
    assert top.returncode == 0
    assert "threads" in top.stdout
    assert "copy-threads" in top.stdout
    threads = run_command([*COMMAND, "--help"])
    assert "2 bad arguments" in threads.stdout
    assert "130 interrupted" in threads.stdout
    for action, flags in {
        "ls": ["--json", "--filter", "--limit", "--after"],
        "show": ["--history", "--checkpoint", "--ns", "--json"],
        "history": ["--ns", "--limit", "--before", "--json"],
        "diff": ["--from", "--to", "--ns", "--json"],
        "prune": ["--keep-last", "--idle-for", "--dry-run", "--no-progress", "--json"],
        "delete": ["--yes", "--json"],
        "pin": ["--json"],
        "unpin": ["--json"],
    }.items():
        shown = run_command([*COMMAND, action, "--help"])
        assert shown.returncode == 0
        common = ["--uri", "--db", "--checkpoints", "--writes", "--timeout", "--serde"]
        for flag in [*flags, *common]:
            assert flag in shown.stdout, (action, flag)


def test_ls_prints_a_table_and_json(saver: MongoDBSaver) -> None:
    chats(saver, {"user-b": 2, "user-a": 1, "with space": 1})
    table = run(saver, "ls")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["CHECKPOINTS", "LAST", "ACTIVITY", "PINNED", "THREAD"]
    rows = [line.split() for line in lines[1:]]
    assert [row[-1] for row in rows] == ["user-a", "user-b", "space'"]
    assert lines[3].endswith("'with space'")
    counts = [sum(per_namespace(saver, t).values()) for t in ("user-a", "user-b", "with space")]
    assert [int(row[0]) for row in rows] == counts
    assert counts[1] > counts[0] > 0
    assert all(" UTC (" in line and " ago)" in line for line in lines[1:])
    as_json = run(saver, "ls", "--json", "--limit", "2", "--after", "user-a")
    assert as_json.returncode == 0, as_json.stderr
    found = json.loads(as_json.stdout)
    latest = saver.get_tuple(config("user-b"))
    assert latest is not None
    assert found == [
        {
            "thread_id": "user-b",
            "checkpoints": counts[1],
            "last_activity": latest.checkpoint["ts"],
            "checkpoint_id": latest.config["configurable"]["checkpoint_id"],
            "metadata": json.loads(json.dumps(latest.metadata)),
            "pinned": False,
        },
        {
            "thread_id": "with space",
            "checkpoints": counts[2],
            "last_activity": found[1]["last_activity"],
            "checkpoint_id": found[1]["checkpoint_id"],
            "metadata": found[1]["metadata"],
            "pinned": False,
        },
    ]
    step = latest.metadata["step"]
    filtered = run(saver, "ls", "--json", "--filter", f"step={step}")
    assert [t["thread_id"] for t in json.loads(filtered.stdout)] == ["user-b"]


def test_ls_counts_what_a_thread_stores_from_the_index(saver: MongoDBSaver) -> None:
    """`ls` counts from the index alone what a thread stores, which is what reads see:
    with `keep_last`, checkpoints a trim has not deleted yet are read and counted."""
    with MongoDBSaver(saver.client, saver.db.name, keep_last=3) as trimming:
        chats(trimming, {"short": 2})  # 6 checkpoints: within 3 + the slack, no trim
    assert saver.checkpoint_collection.count_documents({"thread_id": "short"}) == 6
    assert per_namespace(saver, "short") == {"": 6}
    listed = run(saver, "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [t["checkpoints"] for t in json.loads(listed.stdout)] == [6]


def test_ls_of_an_empty_database_says_so(saver: MongoDBSaver) -> None:
    empty = run(saver, "ls")
    assert (empty.returncode, empty.stdout) == (0, "")
    shown = redact_uri(uri_of(saver))  # without the options, which may hold secrets
    assert empty.stderr == f"no threads in {saver.db.name}.checkpoints at {shown}\n"
    assert run(saver, "ls", "--json").stdout == "[]\n"


def test_show_summarizes_the_latest_state_and_its_history(saver: MongoDBSaver) -> None:
    chats(saver, {"chat": 3})
    shown = run(saver, "show", "chat", "--history", "4")
    assert shown.returncode == 0, shown.stderr
    latest = saver.get_tuple(config("chat"))
    assert latest is not None
    total = sum(per_namespace(saver, "chat").values())
    lines = shown.stdout.splitlines()
    assert lines[0] == f"thread 'chat': {total} checkpoints"
    step = latest.metadata["step"]
    assert lines[1].startswith(
        f"latest: {latest.config['configurable']['checkpoint_id']}, step {step}"
    )
    assert "  channels (1):" in lines
    assert any(line.startswith("    messages: [HumanMessage(") for line in lines)
    heading = f"history (newest first, 4 of {total}):"
    history = lines[lines.index(heading) + 1 :]
    assert history[0].split()[:4] == ["CHECKPOINT", "NAMESPACE", "STEP", "SOURCE"]
    want = [t.config["configurable"]["checkpoint_id"] for t in saver.list(config("chat"), limit=4)]
    assert [row.split()[0] for row in history[1:]] == want
    missing = run(saver, "show", "nobody")
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: no thread 'nobody' in ")


def test_prune_keeps_the_newest_and_reports_what_went(saver: MongoDBSaver) -> None:
    chats(saver, {"a": 3, "b": 1})
    latest = {t: saver.get_tuple(config(t)) for t in ("a", "b")}
    before = {t: per_namespace(saver, t) for t in ("a", "b")}
    total = sum(sum(counts.values()) for counts in before.values())
    assert before["b"][""] > 2
    gone = total - 4
    dry = run(saver, "prune", "--keep-last", "2", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.startswith(
        f"dry run: would prune 2 thread(s) to 2 checkpoint(s) per namespace: about {gone} "
        f"of {total}"
    )
    assert {t: per_namespace(saver, t) for t in ("a", "b")} == before
    pruned = run(saver, "prune", "--keep-last", "2", tty=True)
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout == (
        f"pruned 2 thread(s) to 2 checkpoint(s) per namespace: {gone} of {total} checkpoints "
        "removed, with their pending writes; 4 kept\n"
    )
    assert "prune: 100%" in pruned.stderr  # the bar, on the terminal
    assert f"{gone} checkpoints removed" in pruned.stderr
    assert per_namespace(saver, "a") == per_namespace(saver, "b") == {"": 2}
    assert {t: saver.get_tuple(config(t)) for t in ("a", "b")} == latest


def test_prune_idle_for_leaves_active_threads_alone(saver: MongoDBSaver) -> None:
    now = datetime.now(timezone.utc)
    put_at(saver, "old", now - timedelta(days=10))
    put_at(saver, "recent", now - timedelta(hours=1))
    pruned = run(saver, "prune", "--keep-last", "1", "--idle-for", "7d")
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout == (
        "pruned 1 thread(s) (1 active in the last 7d left alone) to 1 checkpoint(s) per "
        "namespace: 2 of 3 checkpoints removed, with their pending writes; 1 kept\n"
    )
    assert per_namespace(saver, "old") == {"": 1}
    assert per_namespace(saver, "recent") == {"": 3}
    bad = run(saver, "prune", "--keep-last", "1", "--idle-for", "7 days")
    assert bad.returncode == 2
    assert "must be a duration such as 7d" in bad.stderr
    negative = run(saver, "prune", "--keep-last", "-1")
    assert negative.returncode == 2
    assert "must be 0 or more" in negative.stderr
    huge = run(saver, "prune", "--keep-last", str(2**63))
    assert huge.returncode == 2
    assert "--keep-last: must be at most 2**63 - 1 (a BSON int64)" in huge.stderr


def test_prune_removes_writes_no_checkpoint_owns_past_the_grace(saver: MongoDBSaver) -> None:
    """Writes of steps whose `put` never landed: gone once their ids are past the grace,
    whether or not the prune deletes a checkpoint; a young step's and a custom id's
    stay."""
    chats(saver, {"a": 2})
    now = datetime.now(timezone.utc)
    old = checkpoint_id_at(now - ORPHAN_GRACE - timedelta(minutes=5))
    young = checkpoint_id_at(now - ORPHAN_GRACE + timedelta(minutes=5))
    for checkpoint_id in (old, young, "custom"):
        saver.put_writes(config("a", "", checkpoint_id), [("messages", "lost")], "task")
    latest = saver.get_tuple(config("a"))
    keep = str(sum(per_namespace(saver, "a").values()))

    pruned = run(saver, "prune", "--keep-last", keep)

    assert pruned.returncode == 0, pruned.stderr
    left = {
        doc["_id"]["checkpoint"]["checkpoint_id"]
        for doc in saver.writes_collection.find({"thread_id": "a"})
    }
    assert old not in left
    assert {young, "custom"} <= left
    assert saver.get_tuple(config("a")) == latest


def test_delete_refuses_without_a_terminal_and_deletes_with_yes(saver: MongoDBSaver) -> None:
    chats(saver, {"a": 1, "b": 1})
    refused = run(saver, "delete", "a")
    assert refused.returncode == 2
    assert "stdin is not a terminal" in refused.stderr
    assert "--yes" in refused.stderr
    assert saver.get_tuple(config("a")) is not None
    deleted = run(saver, "delete", "a", "nobody", "--yes")
    assert deleted.returncode == 1  # one of them was not there
    assert deleted.stdout == f"deleted 'a' ({per_namespace(saver, 'b')['']} checkpoints)\n"
    assert "no thread 'nobody'" in deleted.stderr
    assert saver.get_tuple(config("a")) is None
    assert saver.get_tuple(config("b")) is not None


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("answer", "code"), [("y\n", 0), ("yes\n", 0), ("n\n", 1), ("", 1)])
def test_delete_asks_on_a_terminal(
    saver: MongoDBSaver, monkeypatch: pytest.MonkeyPatch, answer: str, code: int
) -> None:
    chats(saver, {"a": 1})
    checkpoints = per_namespace(saver, "a")[""]
    monkeypatch.setattr(sys, "stdin", _Terminal(answer))
    out, err = io.StringIO(), io.StringIO()
    argv = ["threads", "delete", "a", "--uri", uri_of(saver), "--db", saver.db.name]
    assert main(argv, out, err) == code
    assert f"delete 1 thread(s), {checkpoints} checkpoints, from " in err.getvalue()
    assert "delete them? [y/N] " in err.getvalue()
    assert (saver.get_tuple(config("a")) is None) is (code == 0)
    if code:
        assert err.getvalue().endswith("nothing deleted\n")


@pytest.mark.no_server
def test_delete_without_a_terminal_refuses_before_connecting() -> None:
    unreachable = "mongodb://127.0.0.1:9/"
    refused = run_command([*COMMAND, "delete", "a", "--uri", unreachable, "--timeout", "0.5"])
    assert refused.returncode == 2
    assert refused.stderr == (
        "error: delete asks before deleting, and stdin is not a terminal to ask on: pass "
        "--yes to delete without asking\n"
    )


@pytest.mark.parametrize(
    ("flags", "name"),
    [
        (["--checkpoints", "same", "--writes", "same"], "same"),
        (["--writes", "checkpoints"], "checkpoints"),  # the other's default
        (["--checkpoints", "checkpoint_writes"], "checkpoint_writes"),
    ],
)
def test_equal_collection_flags_are_refused_by_name_before_connecting(
    flags: list[str], name: str
) -> None:
    """The saver would refuse them too, naming its own arguments
    (`checkpoint_collection_name`), and only once connected: the command names its flags,
    as copy-threads and the Agent Server do, with argparse's exit code."""
    unreachable = "mongodb://127.0.0.1:9/"
    for action in (["ls"], ["show", "a"], ["prune", "--keep-last", "1"], ["delete", "a"]):
        out, err = io.StringIO(), io.StringIO()
        argv = ["threads", *action, "--uri", unreachable, "--timeout", "30", *flags]
        started = time.monotonic()
        assert main(argv, out, err) == 2
        assert time.monotonic() - started < 10  # no server was waited for
        assert err.getvalue() == (
            f"error: --checkpoints and --writes must name two different collections, both "
            f"are {name!r}\n"
        )
        assert out.getvalue() == ""


def test_connection_problems_are_named_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MONGODB_URI", raising=False)
    out, err = io.StringIO(), io.StringIO()
    assert main(["threads", "ls"], out, err) == 2
    assert err.getvalue() == "error: no server: pass --uri or set MONGODB_URI\n"
    unreachable = "mongodb://someone:secret@127.0.0.1:9/?authSource=admin"
    started = time.monotonic()
    down = run_command([*COMMAND, "ls", "--timeout", "0.5"], env={"MONGODB_URI": unreachable})
    assert time.monotonic() - started < 20
    assert down.returncode == 1
    assert down.stderr.startswith(
        "error: cannot reach the server (--uri) at mongodb://***@127.0.0.1:9/?***: no server "
        "answered within 0.5 s (--timeout)"
    )
    assert "secret" not in down.stderr


def test_the_official_savers_collections_are_answered_with_the_flags(uri: str) -> None:
    """Same default names as `langgraph-checkpoint-mongodb`: the command says whose they
    are and what to do, in its own terms (flags, copy-threads), not the saver's Python
    arguments."""
    official = official_saver_class()
    name = f"threads_cli_{uuid.uuid4().hex[:12]}"
    with MongoClient[dict[str, Any]](uri) as client:
        official(client, name)  # its constructor creates its collections' indexes
        try:
            for action in (["ls"], ["show", "a"], ["prune", "--keep-last", "1"]):
                refused = run_command([*COMMAND, *action, "--db", name], env={"MONGODB_URI": uri})
                assert refused.returncode == 2, refused.stderr
                assert refused.stderr.startswith(
                    f"error: collection 'checkpoints' (--checkpoints) of database {name!r} at "
                ), refused.stderr
                assert "holds langgraph-checkpoint-mongodb's documents" in refused.stderr
                assert "--checkpoints and --writes" in refused.stderr
                assert "copy-threads --from-mongodb URI --from-db " + name in refused.stderr
                assert "checkpoint_collection_name" not in refused.stderr
                assert refused.stdout == ""
        finally:
            client.drop_database(name)


def test_a_database_or_collection_that_does_not_exist_is_named(saver: MongoDBSaver) -> None:
    """A misspelt name reads as empty: `ls` would print "no threads" and `prune` "pruned
    0 thread(s)", both exiting 0. Each is refused by name, with what exists, as a bad
    argument, before anything is read or written."""
    chats(saver, {"a": 1})
    missing = f"{saver.db.name}_typo"
    uri = uri_of(saver)
    for action in (["ls"], ["show", "a"], ["prune", "--keep-last", "2"], ["delete", "a", "--yes"]):
        refused = run_command([*COMMAND, *action, "--db", missing], env={"MONGODB_URI": uri})
        assert refused.returncode == 2, (action, refused.stderr)
        assert refused.stdout == ""
        assert refused.stderr.startswith(
            f"error: database {missing!r} at {redact_uri(uri)} has no collections (it does "
            "not exist): check --db; the databases there: ["
        ), refused.stderr
        assert repr(saver.db.name) in refused.stderr
    typo = run(saver, "ls", "--writes", "checkpoint_write")
    assert typo.returncode == 2
    assert typo.stderr == (
        f"error: database {saver.db.name!r} at {redact_uri(uri)} has no collection "
        "'checkpoint_write' (--writes); its collections: ['checkpoint_writes', 'checkpoints']\n"
    )
    assert saver.client.list_database_names().count(missing) == 0
    assert per_namespace(saver, "a")[""] > 0


@pytest.mark.no_server
def test_a_wrong_flag_is_told_with_the_usage_of_its_command() -> None:
    """argparse hands flags it does not know up to the root parser, whose usage line
    (`COMMAND ...`) does not show the flags of the command that was typed."""
    for command, usage in [
        ([*COMMAND, "ls", "--fliter", "a=b"], "threads ls"),
        ([*COMMAND, "show", "a", "--histroy", "3"], "threads show"),
        ([*COMMAND, "prune", "--keep-last", "1", "--dryrun"], "threads prune"),
        ([*COMMAND, "delete", "a", "--yse"], "threads delete"),
        ([*COMMAND[:-1], "copy-threads", "--to", "x", "--from-sqlite", "f", "--verfy"], ""),
    ]:
        wrong = run_command(command)
        assert wrong.returncode == 2
        lines = wrong.stderr.splitlines()
        prog = "python -m langgraph.checkpoint.mongo " + (usage or "copy-threads")
        assert lines[0].startswith(f"usage: {prog} "), wrong.stderr
        assert lines[-1].startswith(f"{prog}: error: unrecognized arguments: --"), wrong.stderr


@pytest.mark.no_server
@pytest.mark.parametrize("bad", ["http://localhost:27017", "mongodb://localhost:99999/"])
def test_a_uri_that_is_not_one_is_a_bad_argument(bad: str) -> None:
    for command in (
        [*COMMAND, "ls", "--uri", bad],
        [*COMMAND[:-1], "copy-threads", "--from-mongodb", bad, "--to", bad, "--to-db", "x"],
    ):
        refused = run_command(command)
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr.startswith("error: the "), refused.stderr
        assert f"{bad!r} is not a MongoDB connection string: " in refused.stderr


def test_every_documented_exit_code(saver: MongoDBSaver, monkeypatch: pytest.MonkeyPatch) -> None:
    """The codes `threads --help` and docs/operations.md list: 0 done; 1 a thread not
    found (a declined deletion: `test_delete_asks_on_a_terminal`), any other error; 2 bad
    arguments; 130 interrupted."""
    chats(saver, {"a": 1})
    assert run(saver, "ls").returncode == 0
    assert run(saver, "show", "nobody").returncode == 1
    assert run(saver, "prune", "--keep-last", "x").returncode == 2
    out, err = io.StringIO(), io.StringIO()
    argv = ["threads", "ls", "--uri", uri_of(saver), "--db", saver.db.name]

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(MongoDBSaver, "list_threads", interrupted)
    assert main(argv, out, err) == 130
    assert err.getvalue() == (
        "\ninterrupted: nothing is half-written; run the same command again to finish\n"
    )

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the server went away")

    monkeypatch.setattr(MongoDBSaver, "list_threads", failing)
    err = io.StringIO()
    assert main(argv, out, err) == 1
    assert err.getvalue() == "error: RuntimeError: the server went away\n"


def test_show_counts_what_reads_see(saver: MongoDBSaver) -> None:
    """`show` counts the checkpoints `list` returns, per namespace, with a `keep_last`
    saver's trims behind it as without."""
    with MongoDBSaver(saver.client, saver.db.name, keep_last=3) as trimming:
        chats(trimming, {"short": 12})
    visible = per_namespace(saver, "short")
    assert visible[""] < 3 * 12  # trimmed
    shown = run(saver, "show", "short", "--history", "2")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines()[0] == f"thread 'short': {visible['']} checkpoints"
    assert f"history (newest first, 2 of {visible['']}):" in shown.stdout
    as_json = json.loads(run(saver, "show", "short", "--json").stdout)
    assert (as_json["checkpoints"], as_json["namespaces"]) == (visible[""], visible)
    assert [item["checkpoint_id"] for item in as_json["history"]] == [
        t.config["configurable"]["checkpoint_id"] for t in saver.list(config("short"))
    ]


def test_show_says_a_thread_waits_on_an_interrupt_and_shows_its_value(
    saver: MongoDBSaver,
) -> None:
    graph = linear_graph("first", "ask", ask="ask").compile(checkpointer=saver)
    graph.invoke({"log": []}, config("asking"))
    (pending,) = graph.get_state(config("asking")).interrupts
    shown = run(saver, "show", "asking")
    assert shown.returncode == 0, shown.stderr
    assert (
        f"  waiting on an interrupt: {{'question': 'ask?', 'seen': 1}} (id {pending.id}, task "
    ) in shown.stdout
    as_json = json.loads(run(saver, "show", "asking", "--json").stdout)
    assert [(i["value"], i["id"]) for i in as_json["interrupts"]] == [
        ({"question": "ask?", "seen": 1}, pending.id)
    ]
    graph.invoke(Command(resume="yes"), config("asking"))
    assert graph.get_state(config("asking")).interrupts == ()
    answered = run(saver, "show", "asking")
    assert "interrupt" not in answered.stdout
    assert json.loads(run(saver, "show", "asking", "--json").stdout)["interrupts"] == []


def stored_json(saver: MongoDBSaver, at: Any) -> dict[str, Any]:
    """What `show --json` says the checkpoint `at` takes, from its stored document."""
    configurable = at["configurable"]
    key = {
        "thread_id": configurable["thread_id"],
        "checkpoint_ns": configurable["checkpoint_ns"],
        "checkpoint_id": configurable["checkpoint_id"],
    }
    doc = saver.checkpoint_collection.find_one({"_id": key})
    assert doc is not None
    sizes = sorted(
        ((-len(entry["data"]), entry["channel"]) for entry in doc["channel_values"]),
    )
    return {
        "bytes": len(bson.encode(doc)),
        "largest_channels": [{"channel": c, "bytes": -n} for n, c in sizes[:5]],
    }


def test_show_prints_what_the_latest_checkpoint_takes_as_stored(saver: MongoDBSaver) -> None:
    """Its document's size and its largest channels: a state growing toward
    `state_max_bytes` is seen before a put is refused (issue 43)."""
    chats(saver, {"chat": 2})
    latest = saver.get_tuple(config("chat"))
    assert latest is not None
    stored = stored_json(saver, latest.config)
    shown = run(saver, "show", "chat")
    assert shown.returncode == 0, shown.stderr
    [line] = [line for line in shown.stdout.splitlines() if line.startswith("latest stored: ")]
    size = stored["bytes"]
    assert line.startswith(f"latest stored: {size / 1024:.1f} KiB; largest channels: messages ")


def test_ls_filters_on_an_object_id_written_as_extended_json(saver: MongoDBSaver) -> None:
    """`--filter KEY=VALUE` reads MongoDB Extended JSON: an `ObjectId` matches by value."""
    user, other = ObjectId(), ObjectId()
    for thread_id, who in (("mine", user), ("theirs", other)):
        saver.put(config(thread_id), checkpoint(), as_metadata({"user": who}), {})
    found = run(saver, "ls", "--json", "--filter", f'user={{"$oid": "{user}"}}')
    assert found.returncode == 0, found.stderr
    assert [t["thread_id"] for t in json.loads(found.stdout)] == ["mine"]
    bad = run(saver, "ls", "--filter", 'user={"$oid": "nope"}')
    assert bad.returncode == 2
    assert "no BSON value" in bad.stderr


def test_show_json_is_the_latest_state_and_its_history(saver: MongoDBSaver) -> None:
    chats(saver, {"chat": 2})
    shown = run(saver, "show", "chat", "--json", "--history", "2")
    assert shown.returncode == 0, shown.stderr
    found = json.loads(shown.stdout)
    latest = saver.get_tuple(config("chat"))
    assert latest is not None
    history = list(saver.list(config("chat"), limit=2))

    def described(item: Any) -> dict[str, Any]:
        return {
            "checkpoint_id": item.config["configurable"]["checkpoint_id"],
            "checkpoint_ns": "",
            "parent_checkpoint_id": item.parent_config["configurable"]["checkpoint_id"],
            "step": item.metadata["step"],
            "source": item.metadata["source"],
            "created": item.checkpoint["ts"],
            "pending_writes": len(item.pending_writes),
        }

    messages = latest.checkpoint["channel_values"]["messages"]
    assert found == {
        "thread_id": "chat",
        "checkpoints": sum(per_namespace(saver, "chat").values()),
        "namespaces": per_namespace(saver, "chat"),
        "pinned": False,
        "latest": {
            **described(latest),
            "next": [],
            "metadata": json.loads(json.dumps(latest.metadata)),
            "channels": {"messages": [repr(m) for m in messages]},
            "interrupts": [],
        },
        "interrupts": [],
        "history": [described(item) for item in history],
        "latest_stored": stored_json(saver, latest.config),
    }
    missing = run(saver, "show", "nobody", "--json")
    assert missing.returncode == 1
    problem = f"no thread 'nobody' in {saver.db.name}.checkpoints at {redact_uri(uri_of(saver))}"
    assert json.loads(missing.stdout) == {"error": problem, "exit_code": 1}
    assert missing.stderr == f"error: {problem}\n"


def test_prune_and_delete_json(saver: MongoDBSaver) -> None:
    chats(saver, {"a": 2, "b": 1})
    before = {t: sum(per_namespace(saver, t).values()) for t in ("a", "b")}
    dry = run(saver, "prune", "--keep-last", "1", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    expected = {
        "dry_run": True,
        "keep_last": 1,
        "idle_for": None,
        "threads": 2,
        "left_alone": {"active": 0, "unreadable_timestamp": 0},
        "checkpoints_before": sum(before.values()),
        "checkpoints_removed": sum(before.values()) - 2,
        "checkpoints_kept": 2,
    }
    assert json.loads(dry.stdout) == expected
    pruned = run(saver, "prune", "--keep-last", "1", "--idle-for", "1h", "--json")
    assert pruned.returncode == 0, pruned.stderr
    assert json.loads(pruned.stdout) == {
        **expected,
        "dry_run": False,
        "idle_for": "1h",
        "threads": 0,
        "left_alone": {"active": 2, "unreadable_timestamp": 0},
        "checkpoints_before": 0,
        "checkpoints_removed": 0,
        "checkpoints_kept": 0,
    }
    pruned = run(saver, "prune", "--keep-last", "1", "--json")
    assert json.loads(pruned.stdout) == {**expected, "dry_run": False}
    assert per_namespace(saver, "a") == per_namespace(saver, "b") == {"": 1}
    deleted = run(saver, "delete", "b", "nobody", "a", "--yes", "--json")
    assert deleted.returncode == 1  # one of them was not there
    where = f"{saver.db.name}.checkpoints at {redact_uri(uri_of(saver))}"
    assert json.loads(deleted.stdout) == {
        "deleted": [{"thread_id": "b", "checkpoints": 1}, {"thread_id": "a", "checkpoints": 1}],
        "not_found": ["nobody"],
        "error": f"no thread 'nobody' in {where}",
        "exit_code": 1,
    }
    assert "no thread 'nobody'" in deleted.stderr
    assert saver.get_tuple(config("a")) is None
    none = run(saver, "delete", "a", "--yes", "--json")
    assert (none.returncode, json.loads(none.stdout)) == (
        1,
        {"deleted": [], "not_found": ["a"], "error": f"no thread 'a' in {where}", "exit_code": 1},
    )


def test_pin_and_unpin_say_what_they_did_and_ls_and_show_say_which_threads_are_pinned(
    saver: MongoDBSaver,
) -> None:
    """`pin` keeps threads from ttl expiry (through a saver without `ttl`: the stamps are
    the same), `ls` and `show` say so, `unpin` lets them expire; a missing thread exits 1,
    as `delete`'s does, the others pinned all the same."""
    chats(saver, {"kept": 1, "other": 1})
    pinned = run(saver, "pin", "kept", "missing")
    assert pinned.returncode == 1
    assert pinned.stdout == "pinned 'kept'\n"
    assert "no thread 'missing'" in pinned.stderr
    assert saver.list_threads().__next__().pinned
    rows = [line.split() for line in run(saver, "ls").stdout.splitlines()[1:]]
    assert [(row[-2], row[-1]) for row in rows] == [("yes", "kept"), ("-", "other")]
    listed = json.loads(run(saver, "ls", "--json").stdout)
    assert [t["pinned"] for t in listed] == [True, False]
    assert "pinned: kept from ttl expiry" in run(saver, "show", "kept").stdout
    assert "pinned:" not in run(saver, "show", "other").stdout
    assert json.loads(run(saver, "show", "kept", "--json").stdout)["pinned"] is True
    unpinned = run(saver, "unpin", "kept", "--json")
    assert unpinned.returncode == 0, unpinned.stderr
    assert json.loads(unpinned.stdout) == {"unpinned": ["kept"], "not_found": []}
    assert json.loads(run(saver, "show", "kept", "--json").stdout)["pinned"] is False
    assert [t.pinned for t in saver.list_threads()] == [False, False]
