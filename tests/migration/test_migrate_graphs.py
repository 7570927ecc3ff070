"""Threads written by real graphs on each source saver, copied into ours, then continued
by the same graph on both: what our saver gives must be exactly what the source gives.

Each test runs `start` on the source (sync graph API), copies every thread, verifies the
copy, then runs `go_on` on our saver (the backend's API) and on the source; the two
transcripts (see `graphs.Norm`: ids become ordinals in order of first sight, and the
copy keeps ids, so the history before the copy lines up) must be equal.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command
from pymongo.errors import AutoReconnect

from langgraph.checkpoint.mongo.migrate import ThreadStatus
from support.backends import Backend
from support.graphs import (
    CHANNELS,
    LANGGRAPH_1_2_13,
    Driver,
    FlakyWork,
    Run,
    Scenario,
    chat_graph,
    fan_out_graph,
    human,
    linear_graph,
    parallel_interrupts_graph,
    run_on,
    subgraph_parent,
)
from support.helpers import config, listed
from support.migration_sources import SOURCES, copy, fail_bulk_writes_after, open_source, verify


async def copied_and_continued(
    backend: Backend, kind: str, tmp_path: Path, start: Scenario, go_on: Scenario
) -> dict[str, Any]:
    async with open_source(kind, backend, tmp_path) as source, backend.saver() as target:
        await run_on(source.saver, True, None, start)
        report = await copy(backend, source, target)
        assert report.ok, report.summary()
        assert {t.status for t in report.threads} == {ThreadStatus.COPIED}
        verified = await verify(backend, source, target)
        assert verified.ok, verified.summary()
        ours = await run_on(target, backend.is_sync, None, go_on)
        theirs = await run_on(source.saver, True, None, go_on)
    assert list(ours.log) == list(theirs.log)
    for label in theirs.log:
        assert ours.log[label] == theirs.log[label], label
    return theirs.log


@pytest.mark.parametrize("kind", SOURCES)
@pytest.mark.parametrize("channel", CHANNELS)
async def test_chat(backend: Backend, kind: str, channel: str, tmp_path: Path) -> None:
    cfg = config("chat")

    async def start(run: Run) -> None:
        graph = run.compile(chat_graph(channel))
        for turn in range(1, 8):
            await graph.invoke(human(turn), cfg)

    async def go_on(run: Run) -> None:
        graph = run.compile(chat_graph(channel))
        run.record("state", await graph.state(cfg))
        run.record("history", await graph.history(cfg))
        for turn in range(8, 10):
            run.record(f"turn {turn}", await graph.invoke(human(turn), cfg))
        run.record("final", await graph.state(cfg))
        run.record("final history", await graph.history(cfg))

    log = await copied_and_continued(backend, kind, tmp_path, start, go_on)
    assert len(log["state"]["values"]["messages"]) == 14
    assert [m["id"] for m in log["final"]["values"]["messages"][-2:]] == ["human-9", "ai-9"]
    assert len(log["final history"]) == 9 * 3


@pytest.mark.parametrize("kind", SOURCES)
async def test_interrupt_and_resume(backend: Backend, kind: str, tmp_path: Path) -> None:
    cfg = config("hitl")

    async def start(run: Run) -> None:
        graph = run.compile(linear_graph("draft", "review", "publish", ask="review"))
        await graph.invoke({"log": ["start"]}, cfg)

    async def go_on(run: Run) -> None:
        graph = run.compile(linear_graph("draft", "review", "publish", ask="review"))
        run.record("interrupted", await graph.state(cfg))
        run.record("resumed", await graph.invoke(Command(resume="approved"), cfg))
        run.record("history", await graph.history(cfg))

    log = await copied_and_continued(backend, kind, tmp_path, start, go_on)
    assert log["interrupted"]["next"] == ("review",)
    assert log["resumed"]["log"] == ["start", "draft", "review=approved", "publish"]


@pytest.mark.parametrize("kind", SOURCES)
async def test_subgraph_interrupted_inside(backend: Backend, kind: str, tmp_path: Path) -> None:
    cfg = config("nested")

    async def start(run: Run) -> None:
        await run.compile(subgraph_parent()).invoke({"log": ["start"]}, cfg)

    async def go_on(run: Run) -> None:
        graph = run.compile(subgraph_parent())
        state = run.record("with subgraphs", await graph.state(cfg, subgraphs=True))
        sub_ns = state.tasks[0].state.config["configurable"]["checkpoint_ns"]
        run.record("subgraph history", await graph.history(config("nested", sub_ns)))
        chunks = await graph.stream(Command(resume="yes"), cfg, subgraphs=True)
        run.record("resume stream", [(tuple(map(run.norm.ns, ns)), u) for ns, u in chunks])
        run.record("done", await graph.state(cfg, subgraphs=True))
        run.record("history", await graph.history(cfg))

    log = await copied_and_continued(backend, kind, tmp_path, start, go_on)
    assert log["with subgraphs"]["tasks"][0]["state"]["next"] == ("sub_ask",)
    assert log["done"]["values"]["log"][-3:] == ["sub_ask=yes", "sub_two", "finish(5)"]


@pytest.mark.parametrize("kind", SOURCES)
async def test_parallel_interrupts_one_answered(
    backend: Backend, kind: str, tmp_path: Path
) -> None:
    """Pending writes of two tasks (one answered, one interrupted) cross the copy."""
    cfg = config("fan-hitl")

    async def start(run: Run) -> None:
        graph = run.compile(parallel_interrupts_graph())
        await graph.invoke({"log": []}, cfg)
        state = await graph.state(cfg)
        left = next(i.id for i in state.interrupts if i.value == "left?")
        await graph.invoke(Command(resume={left: "L"}), cfg)

    async def go_on(run: Run) -> None:
        graph = run.compile(parallel_interrupts_graph())
        state = run.record("right pending", await graph.state(cfg))
        resume = {i.id: f"{i.value[:-1]}!" for i in state.interrupts}
        run.record("right answered", await graph.invoke(Command(resume=resume), cfg))
        run.record("history", await graph.history(cfg))

    log = await copied_and_continued(backend, kind, tmp_path, start, go_on)
    pending = [i["interrupt"] for i in log["right pending"]["interrupts"]]
    assert "right?" in pending
    if LANGGRAPH_1_2_13:
        assert pending == ["right?"]
    assert log["right answered"]["log"] == ["left=L", "right=right!", "join(2)"]


@pytest.mark.parametrize("kind", SOURCES)
async def test_failed_fan_out_resumes_only_the_failed_branch(
    backend: Backend, kind: str, tmp_path: Path
) -> None:
    """The writes of the branches that finished before the failure are pending writes of
    the copied checkpoint: continuing reruns only the failed branch."""
    cfg = config("sends")
    reruns: list[dict[int, int]] = []

    async def start(run: Run) -> None:
        graph = run.compile(fan_out_graph(FlakyWork(fail_item=2, items=4)))
        with pytest.raises(ValueError, match="item 2 failed"):
            await graph.invoke({"items": [0, 1, 2, 3]}, cfg)

    async def go_on(run: Run) -> None:
        work = FlakyWork(fail_item=-1, items=4)
        graph = run.compile(fan_out_graph(work))
        run.record("failed", await graph.state(cfg))
        run.record("resumed", await graph.invoke(None, cfg))
        reruns.append(dict(work.runs))

    log = await copied_and_continued(backend, kind, tmp_path, start, go_on)
    assert reruns == [{2: 1}, {2: 1}]
    assert log["resumed"]["results"][-1] == "collected 5"


@pytest.mark.parametrize("kind", SOURCES)
async def test_a_copy_stopped_halfway_leaves_an_older_whole_state(
    backend: Backend, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `DeltaChannel` is rebuilt from the ancestors' writes (here never snapshotted): a
    copy that wrote the newest checkpoints first would leave the newest state quietly
    missing messages."""
    cfg = config("delta")

    async def start(run: Run) -> None:
        graph = run.compile(chat_graph("delta", snapshot_frequency=100))
        for turn in range(1, 8):
            await graph.invoke(human(turn), cfg)

    async with open_source(kind, backend, tmp_path) as source, backend.saver() as target:
        await run_on(source.saver, True, None, start)
        theirs = Driver(chat_graph("delta", 100).compile(checkpointer=source.saver), True)
        ours = Driver(chat_graph("delta", 100).compile(checkpointer=target), backend.is_sync)
        with monkeypatch.context() as failing:
            fail_bulk_writes_after(failing, allowed=4)
            with pytest.raises(AutoReconnect, match="injected"):
                await copy(backend, source, target, batch_size=3)

        partial = await ours.state(cfg)
        assert 0 < len(partial.values["messages"]) < 14
        # The state the source had at that checkpoint, whole.
        assert partial.values == (await theirs.state(partial.config)).values
        assert partial.next == (await theirs.state(partial.config)).next

        report = await copy(backend, source, target, batch_size=3)
        assert [t.status for t in report.threads] == [ThreadStatus.COMPLETED]
        assert (await ours.state(cfg)).values == (await theirs.state(cfg)).values


@pytest.mark.parametrize("kind", SOURCES)
async def test_an_interrupt_without_langgraph_installed_fails_its_thread_by_name(
    backend: Backend, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in an environment with only `langgraph-checkpoint` (no `langgraph.types`):
    the interrupt would be copied as a dict and the resumed graph would crash."""
    hitl, plain = config("hitl"), config("plain")

    async def start(run: Run) -> None:
        await run.compile(linear_graph("draft", "review", ask="review")).invoke({"log": []}, hitl)
        await run.compile(linear_graph("draft", "review")).invoke({"log": []}, plain)

    async with open_source(kind, backend, tmp_path) as source, backend.saver() as target:
        await run_on(source.saver, True, None, start)
        with monkeypatch.context() as without_langgraph:
            without_langgraph.setitem(sys.modules, "langgraph.types", None)  # import fails
            report = await copy(backend, source, target)
            verified = await verify(backend, source, target)
        found = {t.thread_id: t for t in report.threads}
        assert found["plain"].status is ThreadStatus.COPIED
        assert found["hitl"].status is ThreadStatus.FAILED
        detail = str(found["hitl"].detail)
        assert "langgraph.types.Interrupt (cannot be imported here" in detail
        waiting = source.saver.get_tuple(hitl)  # its pending writes hold the interrupt
        assert detail.startswith(f"checkpoint {waiting.config['configurable']['checkpoint_id']!r}")
        assert await listed(target, hitl) == []
        assert [t.thread_id for t in verified.threads if t.differences] == ["hitl"]

        report = await copy(backend, source, target)  # with langgraph: exact
        assert report.ok, report.summary()
        graph = Driver(
            linear_graph("draft", "review", ask="review").compile(target), backend.is_sync
        )
        resumed = await graph.invoke(Command(resume="ok"), hitl)
        assert resumed["log"] == ["draft", "review=ok"]
