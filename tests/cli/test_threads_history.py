"""`threads history | show --checkpoint | diff`, encrypted databases and the command as a
Unix tool: in process through `main` (what the core sends is recorded there), and in a
subprocess where only a real pipe shows it, against the wire server (or `MONGODB_URI`).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import _messages_delta_reducer
from langgraph.types import Command as Resume
from typing_extensions import TypedDict

from langgraph.checkpoint.mongo import MongoDBSaver, migrate
from langgraph.checkpoint.mongo._commands import Command, Method
from langgraph.checkpoint.mongo.cli import main
from support.backends import MONGODB_URI
from support.graphs import LANGGRAPH_1_2_13, chat_graph, concat, human, linear_graph
from support.helpers import checkpoint, config

COMMAND = [sys.executable, "-m", "langgraph.checkpoint.mongo", "threads"]
KEY = "0123456789abcdef0123456789abcdef"


def threads(saver: MongoDBSaver, *argv: str) -> tuple[int, str, str]:
    """`python -m langgraph.checkpoint.mongo threads ARGV` in process: exit code, stdout,
    stderr."""
    out, err = io.StringIO(), io.StringIO()
    host, port = saver.client.address or ("", 0)
    where = ["--uri", MONGODB_URI or f"mongodb://{host}:{port}/", "--db", saver.db.name]
    code = main(["threads", *argv, *where], out, err)
    return code, out.getvalue(), err.getvalue()


def as_json(value: Any) -> Any:
    """A value as `--json` prints it."""
    return json.loads(json.dumps(value, default=repr))


def ids_of(items: Any) -> list[str]:
    return [item.config["configurable"]["checkpoint_id"] for item in items]


def test_history_reads_a_long_thread_a_page_per_query(
    saver: MongoDBSaver, sent_commands: list[Command]
) -> None:
    """A page is one aggregation limited to the page, in one batch, whatever the length of
    the thread; `--before` the last id listed reads the next page; a reader that closes
    the pipe early (`| head -1`) ends the command quietly. (The thread is written in memory
    and copied in, in batches: a thousand `put`s would cost a thousand round trips.)"""
    memory, parent = InMemorySaver(), None
    for step in range(1000):
        cp = checkpoint({"n": step})
        stored = memory.put(config("long", "", parent), cp, {"step": step}, cp["channel_versions"])
        parent = stored["configurable"]["checkpoint_id"]
    assert migrate.copy_threads(memory, saver, ["long"], batch_size=500).ok
    sent_commands.clear()

    code, out, err = threads(saver, "history", "long", "--limit", "50", "--json")

    pages = [
        c for c in sent_commands if c.method == Method.AGGREGATE and {"$limit": 50} in c.args[0]
    ]
    assert len(pages) == 1
    assert pages[0].kwargs["batchSize"] == 51  # all of the page in the first batch

    assert (code, err) == (0, "")
    [namespace] = json.loads(out)["namespaces"]
    assert (namespace["checkpoint_ns"], namespace["checkpoints"]) == ("", 1000)
    newest = list(saver.list(config("long"), limit=50))
    assert [c["checkpoint_id"] for c in namespace["history"]] == ids_of(newest)
    assert [c["step"] for c in namespace["history"]] == list(range(999, 949, -1))
    assert all(c["size"] > 100 for c in namespace["history"])

    last = namespace["history"][-1]["checkpoint_id"]
    code, out, _ = threads(saver, "history", "long", "--limit", "50", "--before", last, "--json")
    [page] = json.loads(out)["namespaces"]
    before = saver.list(config("long"), before=config("long", "", last), limit=50)
    assert [c["checkpoint_id"] for c in page["history"]] == ids_of(before)

    host, port = saver.client.address or ("", 0)
    argv = [*COMMAND, "history", "long", "--limit", "1000", "--db", saver.db.name]
    env = {"MONGODB_URI": MONGODB_URI or f"mongodb://{host}:{port}/"}
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env}
    ) as reading:
        assert reading.stdout is not None
        assert reading.stderr is not None
        first = reading.stdout.readline()
        reading.stdout.close()  # `| head -1`: over 100 KiB are still to come
        assert reading.wait(timeout=120) == 0
        assert reading.stderr.read() == b""
    assert first.startswith(b"thread 'long', namespace '': 1000 of 1000 checkpoints")


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_ends_the_command_quietly(saver: MongoDBSaver) -> None:
    chat_graph().compile(checkpointer=saver).invoke(human(0), config("a"))
    host, port = saver.client.address or ("", 0)
    err = io.StringIO()
    argv = ["threads", "ls", "--uri", f"mongodb://{host}:{port}/", "--db", saver.db.name]
    assert main(argv, _ClosedPipe(), err) == 0
    assert err.getvalue() == ""


class DeltaState(TypedDict, total=False):
    messages: Annotated[
        list[AnyMessage],
        DeltaChannel(_messages_delta_reducer, snapshot_frequency=3),
    ]
    log: Annotated[list[str], DeltaChannel(concat, snapshot_frequency=3)]


def forked_delta_thread(saver: MongoDBSaver) -> Any:
    """A chat whose `DeltaChannel`s snapshot every third update, with a subgraph that
    interrupts (answered), and a fork from an older checkpoint that edits a message and
    runs on: the compiled graph."""

    def bot(state: Any) -> dict[str, Any]:
        return {
            "messages": [
                AIMessage(f"{len(state['messages'])} so far", id=f"ai-{len(state['messages'])}")
            ]
        }

    builder: StateGraph[Any] = StateGraph(DeltaState)
    builder.add_node("bot", bot)
    child = linear_graph("sub_one", "sub_ask", ask="sub_ask", channel="delta").compile()
    builder.add_node("child", child)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", "child")
    builder.add_edge("child", END)
    graph = builder.compile(checkpointer=saver)
    for turn in range(3):
        graph.invoke(human(turn), config("chat"))
        graph.invoke(Resume(resume=f"yes {turn}"), config("chat"))
    older = list(graph.get_state_history(config("chat")))[7].config
    edited = HumanMessage("hello again", id="human-0")
    forked = graph.update_state(older, {"messages": [edited]})
    graph.invoke(None, forked)
    return graph


# LangGraph before 1.2.13 loads a forked `DeltaChannel` thread differently (its last node's
# write twice, tests/support/graphs.py): these compare with `get_state`'s newer answer.
@pytest.mark.skipif(not LANGGRAPH_1_2_13, reason="get_state's answer before LangGraph 1.2.13")
def test_show_checkpoint_is_the_state_langgraph_loads(saver: MongoDBSaver) -> None:
    """Every checkpoint of every namespace, as `graph.get_state` gives it: its channels
    (`DeltaChannel`s rebuilt), next nodes and interrupts, on a thread with forks and a
    subgraph."""
    graph = forked_delta_thread(saver)
    every = list(saver.list({"configurable": {"thread_id": "chat"}}))
    assert {item.config["configurable"]["checkpoint_ns"] != "" for item in every} == {True, False}
    for item in every:
        configurable = item.config["configurable"]
        snapshot = graph.get_state(item.config)
        code, out, err = threads(
            saver,
            "show",
            "chat",
            "--checkpoint",
            configurable["checkpoint_id"],
            "--ns",
            configurable["checkpoint_ns"],
            "--json",
        )
        assert (code, err) == (0, "")
        shown = json.loads(out)["checkpoint"]
        assert shown["checkpoint_id"] == configurable["checkpoint_id"]
        assert shown["channels"] == as_json(snapshot.values), configurable
        assert sorted(shown["next"]) == sorted(snapshot.next), configurable
        assert [i["id"] for i in shown["interrupts"]] == [i.id for i in snapshot.interrupts]
        assert shown["metadata"] == as_json(snapshot.metadata)


# LangGraph before 1.2.13 loads a forked `DeltaChannel` thread differently (its last node's
# write twice, tests/support/graphs.py): these compare with `get_state`'s newer answer.
@pytest.mark.skipif(not LANGGRAPH_1_2_13, reason="get_state's answer before LangGraph 1.2.13")
def test_diff_compares_two_checkpoints_by_message_id(saver: MongoDBSaver) -> None:
    """Each checkpoint against its parent (the default) and the fork against the
    checkpoint it forked beside, against what `get_state` gives for both."""
    graph = forked_delta_thread(saver)
    history = list(graph.get_state_history(config("chat")))
    pairs = [(s.parent_config, s.config) for s in history if s.parent_config is not None]
    fork = next(s for s in history if s.metadata and s.metadata["source"] == "update")
    sibling = next(
        s for s in history if s.parent_config == fork.parent_config and s.config != fork.config
    )
    pairs.append((sibling.config, fork.config))
    for old_config, new_config in pairs:
        old, new = graph.get_state(old_config), graph.get_state(new_config)
        old_id = old.config["configurable"]["checkpoint_id"]
        new_id = new.config["configurable"]["checkpoint_id"]
        code, out, err = threads(saver, "diff", "chat", "--from", old_id, "--to", new_id, "--json")
        assert (code, err) == (0, "")
        found = json.loads(out)
        assert (found["from"]["checkpoint_id"], found["to"]["checkpoint_id"]) == (old_id, new_id)
        assert found["channels"] == expected_diff(old.values, new.values)
        assert found["next"] == {"from": sorted(old.next), "to": sorted(new.next)}
    latest = history[0]
    code, out, _ = threads(saver, "diff", "chat", "--json")
    found = json.loads(out)
    assert found["to"]["checkpoint_id"] == latest.config["configurable"]["checkpoint_id"]
    assert found["from"]["checkpoint_id"] == latest.parent_config["configurable"]["checkpoint_id"]
    code, text, _ = threads(
        saver, "diff", "chat", "--from", ids_of_state(sibling), "--to", ids_of_state(fork)
    )
    assert code == 0
    assert ", 1 edited\n" in text
    assert "    ~ human-0: HumanMessage 'hello 0' -> HumanMessage 'hello again'\n" in text


def ids_of_state(snapshot: Any) -> str:
    return str(snapshot.config["configurable"]["checkpoint_id"])


def expected_diff(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What changed, from LangGraph's values: messages by id, other values whole."""
    changes: dict[str, Any] = {}
    for channel in sorted(old.keys() | new.keys()):
        if channel not in old:
            changes[channel] = {"change": "added", "value": new[channel]}
        elif channel not in new:
            changes[channel] = {"change": "removed", "value": old[channel]}
        elif old[channel] != new[channel]:
            if channel == "messages":
                before = {m.id: m for m in old[channel]}
                after = {m.id: m for m in new[channel]}
                changes[channel] = {
                    "change": "changed",
                    "messages": {
                        "added": [m for i, m in after.items() if i not in before],
                        "removed": [m for i, m in before.items() if i not in after],
                        "edited": [
                            {"id": i, "from": before[i], "to": m}
                            for i, m in after.items()
                            if i in before and before[i] != m
                        ],
                    },
                }
            else:
                changes[channel] = {"change": "changed", "from": old[channel], "to": new[channel]}
    return as_json(changes)  # type: ignore[no-any-return]


def test_an_encrypted_database_reads_with_the_key_and_lists_without(
    saver: MongoDBSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written with docs/security.md's recipe: `LANGGRAPH_AES_KEY` is all the command
    needs; without it `ls` still lists (metadata is plain) and `show` names the key."""
    monkeypatch.setenv("LANGGRAPH_AES_KEY", KEY)
    encrypted = MongoDBSaver(
        saver.client, saver.db.name, serde=EncryptedSerializer.from_pycryptodome_aes()
    )
    graph = chat_graph().compile(checkpointer=encrypted)
    graph.invoke(human(0), config("secret"))
    stored = saver.checkpoint_collection.find_one({"thread_id": "secret"})
    assert stored is not None
    assert "aes" in json.dumps(stored, default=repr)
    latest = encrypted.get_tuple(config("secret"))
    assert latest is not None

    code, out, err = threads(saver, "show", "secret", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["latest"]["channels"] == as_json(
        graph.get_state(config("secret")).values
    )
    assert threads(saver, "history", "secret")[0] == 0

    monkeypatch.delenv("LANGGRAPH_AES_KEY")
    code, out, err = threads(saver, "ls", "--json")
    assert (code, err) == (0, "")
    [listed] = json.loads(out)
    assert listed["thread_id"] == "secret"
    assert listed["metadata"] == as_json(latest.metadata)
    # The time in the checkpoint's id, the `ts` being encrypted: made within the same put.
    made = datetime.fromisoformat(listed["last_activity"])
    assert abs(made - datetime.fromisoformat(latest.checkpoint["ts"])) < timedelta(seconds=5)
    for action in (["show", "secret"], ["history", "secret"], ["diff", "secret"]):
        code, out, err = threads(saver, *action)
        assert code == 2, action
        assert out == ""
        assert err.startswith("error: thread 'secret' is encrypted (msgpack+aes): set ")
        assert "LANGGRAPH_AES_KEY" in err
        assert "--serde module:factory" in err
    code, out, _ = threads(saver, "show", "secret", "--json")
    assert code == 2
    assert "LANGGRAPH_AES_KEY" in json.loads(out)["error"]

    monkeypatch.setenv("LANGGRAPH_AES_KEY", KEY)
    factory = "langgraph.checkpoint.serde.encrypted:EncryptedSerializer.from_pycryptodome_aes"
    monkeypatch.delenv("LANGGRAPH_AES_KEY")
    code, _, err = threads(saver, "show", "secret", "--serde", factory)
    assert code == 2  # the factory reads the key from the environment too
    assert "LANGGRAPH_AES_KEY" in err
    code, _, err = threads(saver, "show", "secret", "--serde", "no_such_module:serde")
    assert code == 2
    assert err.startswith("error: --serde 'no_such_module:serde': ModuleNotFoundError")
    code, _, err = threads(saver, "show", "secret", "--serde", ".relative:serde")
    assert code == 2  # a usage error, not a crash: a module is named from the top
    assert err.startswith("error: --serde must be module:factory, got '.relative:serde'")


@pytest.mark.parametrize(
    "argv",
    [
        ["ls", "--limit", str(2**63)],
        ["ls", "--limit", "-1"],
        ["show", "a", "--history", str(2**63)],
        ["history", "a", "--limit", str(2**64)],
        ["history", "a", "--limit", "0"],
    ],
)
def test_numbers_out_of_range_are_bad_arguments(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit code 2 with the usage line, before any connection; as JSON too with --json."""
    [flag] = [arg for arg in argv if arg.startswith("--")]
    for as_json_flag in ([], ["--json"]):
        out = io.StringIO()
        with pytest.raises(SystemExit) as raised:
            main(["threads", *argv, *as_json_flag, "--uri", "mongodb://127.0.0.1:9/"], out)
        assert raised.value.code == 2
        lines = capsys.readouterr().err.splitlines()
        prog = f"python -m langgraph.checkpoint.mongo threads {argv[0]}"
        assert lines[0].startswith(f"usage: {prog}")
        assert lines[-1].startswith(f"{prog}: error: argument {flag}: must be ")
        if as_json_flag:
            assert json.loads(out.getvalue()) == {"error": lines[-1], "exit_code": 2}
        else:
            assert out.getvalue() == ""


@pytest.mark.parametrize(
    ("argv", "unknown"),
    [
        (["threads", "show", "a", "--check", "x"], "--check x"),  # --checkpoint(s)?
        (["threads", "ls", "--lim", "3"], "--lim 3"),
        (["threads", "history", "a", "--bef", "x"], "--bef x"),
        (["copy-threads", "--from-sqlite", "x.db", "--to", "mongodb://h/", "--verif"], "--verif"),
    ],
)
def test_a_flag_is_never_taken_for_another_by_abbreviation(
    argv: list[str], unknown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as raised:
        main(argv, io.StringIO())
    assert raised.value.code == 2
    assert capsys.readouterr().err.endswith(f": error: unrecognized arguments: {unknown}\n")


def test_show_checkpoint_is_not_the_collection_flag(saver: MongoDBSaver) -> None:
    """`--checkpoint X` names a checkpoint; `--checkpoints` stays the collection."""
    chat_graph().compile(checkpointer=saver).invoke(human(0), config("a"))
    code, out, err = threads(saver, "show", "a", "--checkpoint", "nope")
    assert code == 1
    assert err.startswith("error: no checkpoint 'nope' in namespace '' of thread 'a' in ")
    code, out, err = threads(saver, "show", "a", "--checkpoint", "nope", "--json")
    assert json.loads(out)["exit_code"] == 1
