"""Real `StateGraph`s on both savers, against the same scenario on `InMemorySaver`.

Each test writes its scenario once, as a function of a `Run` (see `support/graphs.py`): it
runs on the backend's saver (through the sync graph API for `MongoDBSaver`, the async one for
`AsyncMongoDBSaver`), then on an `InMemorySaver` through the same API, and the two
transcripts must be equal: values, `next`, tasks (names, paths, errors, results,
interrupts, subgraph states), metadata, and every config with checkpoint, task and
interrupt ids replaced by the order in which they were first seen.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.types import Command

from support.backends import Backend
from support.graphs import (
    CHANNELS,
    LANGGRAPH_1_2_13,
    FlakyWork,
    Run,
    chat_graph,
    compare,
    fan_out_graph,
    human,
    linear_graph,
    parallel_interrupts_graph,
    subgraph_parent,
)
from support.helpers import config


def sources(history: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(s["metadata"]["source"], s["metadata"]["step"]) for s in history]


@pytest.mark.parametrize("channel", CHANNELS)
async def test_chat_loop_survives_a_new_saver_on_the_same_database(
    backend: Backend, channel: str
) -> None:
    async def scenario(run: Run) -> None:
        cfg = config("chat")
        graph = run.compile(chat_graph(channel))
        for turn in range(1, 13):
            run.record(f"turn {turn}", await graph.invoke(human(turn), cfg))
            if turn in (1, 6, 12):
                run.record(f"state after {turn}", await graph.state(cfg))
        run.record("history", await graph.history(cfg))
        async with run.reopen() as again:
            graph = run.compile(chat_graph(channel), again)
            run.record("reloaded", await graph.state(cfg))
            for turn in range(13, 16):
                run.record(f"turn {turn}", await graph.invoke(human(turn), cfg))
            run.record("final", await graph.state(cfg))
            run.record("final history", await graph.history(cfg))

    log = await compare(backend, scenario)
    final = log["final"]["values"]["messages"]
    assert [m["id"] for m in final[-2:]] == ["human-15", "ai-15"]
    assert len(final) == 30
    assert log["reloaded"] == log["state after 12"]
    # Each turn: an input checkpoint and one per step (bot's input, bot's output).
    assert len(log["final history"]) == 15 * 3
    assert sources(log["final history"])[:3] == [("loop", 43), ("loop", 42), ("input", 41)]


async def test_interrupt_and_resume(backend: Backend) -> None:
    async def scenario(run: Run) -> None:
        cfg = config("hitl")
        graph = run.compile(linear_graph("draft", "review", "publish", ask="review"))
        run.record("first", await graph.invoke({"log": ["start"]}, cfg))
        run.record("interrupted", await graph.state(cfg))
        run.record("resumed", await graph.invoke(Command(resume="approved"), cfg))
        run.record("done", await graph.state(cfg))
        run.record("history", await graph.history(cfg))

    log = await compare(backend, scenario)
    interrupted = log["interrupted"]
    assert interrupted["next"] == ("review",)
    [task] = interrupted["tasks"]
    assert task["name"] == "review"
    assert [i["interrupt"] for i in task["interrupts"]] == [{"question": "review?", "seen": 2}]
    assert interrupted["interrupts"] == task["interrupts"]
    assert log["first"]["__interrupt__"] == task["interrupts"]
    assert log["done"]["values"]["log"] == ["start", "draft", "review=approved", "publish"]
    assert log["done"]["next"] == ()
    assert log["done"]["tasks"] == []


async def test_parallel_interrupts_resumed_by_id(backend: Backend) -> None:
    async def scenario(run: Run) -> None:
        cfg = config("fan-hitl")
        graph = run.compile(parallel_interrupts_graph())
        first = await graph.invoke({"log": []}, cfg)
        # The state lists interrupts in task order; the output in the order the two
        # tasks happened to stop, so it is recorded sorted, after the state.
        state = run.record("interrupted", await graph.state(cfg))
        first["__interrupt__"].sort(key=lambda i: i.value)
        run.record("first", first)
        by_value = {i.value: i.id for i in state.interrupts}
        # Only the left one first: the right one stays pending, with the same id.
        resume_left: Command[Any] = Command(resume={by_value["left?"]: "L"})
        run.record("left answered", await graph.invoke(resume_left, cfg))
        state = run.record("right pending", await graph.state(cfg))
        resume = {i.id: f"{i.value[:-1]}!" for i in state.interrupts}
        run.record("right answered", await graph.invoke(Command(resume=resume), cfg))
        run.record("done", await graph.state(cfg))
        run.record("history", await graph.history(cfg))

    log = await compare(backend, scenario)
    interrupted = log["interrupted"]
    assert interrupted["next"] == ("left", "right")
    assert [
        (t["name"], [i["interrupt"] for i in t["interrupts"]]) for t in interrupted["tasks"]
    ] == [
        ("left", ["left?"]),
        ("right", ["right?"]),
    ]
    right_id = next(i["id"] for i in interrupted["interrupts"] if i["interrupt"] == "right?")
    pending = [(i["interrupt"], i["id"]) for i in log["right pending"]["interrupts"]]
    assert ("right?", right_id) in pending
    if LANGGRAPH_1_2_13:
        assert pending == [("right?", right_id)]
    assert log["done"]["values"]["log"] == ["left=L", "right=right!", "join(2)"]


async def test_subgraph_interrupt_state_and_resume(backend: Backend) -> None:
    async def scenario(run: Run) -> None:
        cfg = config("nested")
        graph = run.compile(subgraph_parent())
        run.record("first", await graph.invoke({"log": ["start"]}, cfg))
        run.record("parent only", await graph.state(cfg))
        state = run.record("with subgraphs", await graph.state(cfg, subgraphs=True))
        sub_config = state.tasks[0].state.config
        run.record("subgraph state", await graph.state(sub_config))
        run.record("subgraph history at id", await graph.history(sub_config))
        sub_ns = sub_config["configurable"]["checkpoint_ns"]
        run.record("subgraph history", await graph.history(config("nested", sub_ns)))
        chunks = await graph.stream(Command(resume="yes"), cfg, subgraphs=True)
        named = [(tuple(run.norm.ns(part) for part in ns), update) for ns, update in chunks]
        run.record("resume stream", named)
        run.record("done", await graph.state(cfg, subgraphs=True))
        run.record("history", await graph.history(cfg))

    log = await compare(backend, scenario)
    nested = log["with subgraphs"]
    assert nested["next"] == ("child",)
    [task] = nested["tasks"]
    sub = task["state"]
    assert sub["config"]["checkpoint_ns"].startswith("child:")
    assert sub["next"] == ("sub_ask",)
    assert sub["values"]["log"] == ["start", "prep", "sub_one"]
    assert [i["interrupt"]["question"] for i in sub["interrupts"]] == ["sub_ask?"]
    assert (
        log["parent only"]["tasks"][0]["state"]["checkpoint_ns"] == (sub["config"]["checkpoint_ns"])
    )
    # A config with a checkpoint id lists that checkpoint only; without, the namespace.
    [at_id] = log["subgraph history at id"]
    assert (at_id["config"], at_id["values"]) == (sub["config"], sub["values"])
    assert [s["next"] for s in log["subgraph history"]] == [
        ("sub_ask",),
        ("sub_one",),
        ("__start__",),
    ]
    assert log["done"]["values"]["log"] == [
        "start",
        "prep",
        "sub_one",
        "sub_ask=yes",
        "sub_two",
        "finish(5)",
    ]


@pytest.mark.parametrize("channel", CHANNELS)
async def test_time_travel_replay_update_and_fork(backend: Backend, channel: str) -> None:
    async def scenario(run: Run) -> None:
        cfg = config("travel")
        graph = run.compile(linear_graph("a", "b", "c", channel=channel))
        run.record("first", await graph.invoke({"log": ["start"]}, cfg))
        history = run.record("history 1", await graph.history(cfg))
        before_b = next(s for s in history if s.next == ("b",))
        before_c = next(s for s in history if s.next == ("c",))
        # Replay: re-run b and c from the checkpoint before b.
        run.record("replay", await graph.invoke(None, before_b.config))
        run.record("after replay", await graph.state(cfg))
        # Fork: change an old checkpoint as if b had written it, then continue from it.
        forked = run.record("fork", await graph.update(before_c.config, {"log": ["B2"]}, "b"))
        run.record("fork state", await graph.state(forked))
        run.record("fork run", await graph.invoke(None, forked))
        # update_state on the latest checkpoint as `a`: b and c run next.
        run.record("update", await graph.update(cfg, {"log": ["manual"]}, as_node="a"))
        run.record("updated state", await graph.state(cfg))
        run.record("continue", await graph.invoke(None, cfg))
        history = run.record("history 2", await graph.history(cfg))
        run.record("limit 3", await graph.history(cfg, limit=3))
        run.record("before", await graph.history(cfg, before=history[4].config, limit=2))
        run.record("updates", await graph.history(cfg, filter={"source": "update"}))
        run.record("step 2", await graph.history(cfg, filter={"step": 2}))

    log = await compare(backend, scenario)
    assert log["first"]["log"] == ["start", "a", "b", "c"]
    assert log["replay"]["log"] == ["start", "a", "b", "c"]
    assert log["fork state"]["next"] == ("c",)
    # before_c already has b's write; the update as b appends to it.
    assert log["updated state"]["next"] == ("b",)
    if LANGGRAPH_1_2_13 or channel == "reducer":
        assert log["fork run"]["log"] == ["start", "a", "b", "B2", "c"]
        assert log["continue"]["log"] == ["start", "a", "b", "B2", "c", "manual", "b", "c"]
    history = log["history 2"]
    assert len(history) == 5 + 3 + 2 + 3
    assert [s["metadata"]["source"] for s in log["updates"]] == ["update", "update"]
    assert log["limit 3"] == history[:3]
    assert log["before"] == history[5:7]
    assert {s["metadata"]["step"] for s in log["step 2"]} == {2}


async def test_send_fan_out_resumes_only_the_failed_branch(backend: Backend) -> None:
    runs: list[FlakyWork] = []

    async def scenario(run: Run) -> None:
        cfg = config("sends")
        work = FlakyWork(fail_item=2, items=4)
        runs.append(work)
        graph = run.compile(fan_out_graph(work))
        with pytest.raises(ValueError, match="item 2 failed"):
            await graph.invoke({"items": [0, 1, 2, 3]}, cfg)
        run.record("failed runs", dict(sorted(work.runs.items())))
        run.record("failed", await graph.state(cfg))
        run.record("resumed", await graph.invoke(None, cfg))
        run.record("runs", dict(sorted(work.runs.items())))
        run.record("done", await graph.state(cfg))
        run.record("history", await graph.history(cfg))

    log = await compare(backend, scenario)
    failed = log["failed"]
    assert failed["next"] == ("work",)
    # The state already applies the writes of the branches that finished.
    assert failed["values"]["results"] == ["planned", "done-0", "done-1", "done-3"]
    assert [(t["error"], t["result"]) for t in failed["tasks"]] == [
        (None, {"results": ["done-0"]}),
        (None, {"results": ["done-1"]}),
        ("ValueError('item 2 failed')", None),
        (None, {"results": ["done-3"]}),
    ]
    assert log["failed runs"] == {0: 1, 1: 1, 2: 1, 3: 1}
    # On resume only the failed branch runs: the others' writes were saved with the error.
    assert log["runs"] == {0: 1, 1: 1, 2: 2, 3: 1}
    assert log["resumed"]["results"] == [
        "planned",
        "done-0",
        "done-1",
        "done-2",
        "done-3",
        "collected 5",
    ]
    assert all(work.runs == runs[0].runs for work in runs)


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
async def test_durability_modes(backend: Backend, durability: str) -> None:
    async def scenario(run: Run) -> None:
        graph = run.compile(linear_graph("a", "ask", "b", ask="ask"))
        for api in ("invoke", "stream"):
            cfg = config(api)
            call = graph.invoke if api == "invoke" else graph.stream
            run.record(f"{api}: first", await call({"log": []}, cfg, durability=durability))
            run.record(f"{api}: interrupted", await graph.state(cfg))
            resume: Command[Any] = Command(resume="ok")
            run.record(f"{api}: resumed", await call(resume, cfg, durability=durability))
            run.record(f"{api}: done", await graph.state(cfg))
            run.record(f"{api}: history", await graph.history(cfg))

    log = await compare(backend, scenario)
    for api in ("invoke", "stream"):
        assert log[f"{api}: done"]["values"]["log"] == ["a", "ask=ok", "b"]
        assert log[f"{api}: interrupted"]["next"] == ("ask",)
        # "exit" saves only where each invoke stops: the interrupt and the end; the
        # others an input checkpoint and one per step (the resume adds no input one).
        expected = 2 if durability == "exit" else 5
        assert len(log[f"{api}: history"]) == expected
