"""Real LangGraph graphs, and running one scenario the same way on any checkpointer.

A scenario is an async function of a `Run`: it compiles graphs with `run.compile`,
drives them through a `Driver` (the sync graph API for `MongoDBSaver`, the async one
otherwise) and `run.record`s what it sees. `Norm` turns what it sees into plain data
where the ids that differ between two runs by nature (checkpoint, task and interrupt
ids) become ordinals in the order they are first seen, so two runs of one scenario on
two checkpointers compare equal exactly when they saw the same structure.
"""

from __future__ import annotations

import asyncio
import operator
import re
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Annotated, Any, Protocol

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import set_config_context
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import _messages_delta_reducer, add_messages
from langgraph.types import Interrupt, PregelTask, Send, StateSnapshot, interrupt
from typing_extensions import TypedDict

from support.backends import Backend

# Normalizing what a graph returns.


class Norm:
    """Plain data from snapshots, tasks, interrupts, messages and configs."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def id(self, value: str | None) -> str | None:
        if value is None:
            return None
        return self.ids.setdefault(value, f"#{len(self.ids)}")

    def ns(self, ns: str) -> str:
        """`parent:<task id>|child:<task id>` with the task ids as ordinals."""
        if not ns:
            return ns
        parts = []
        for part in ns.split("|"):
            name, sep, task_id = part.partition(":")
            parts.append(f"{name}:{self.id(task_id)}" if sep else name)
        return "|".join(parts)

    def config(self, config: Any) -> Any:
        if config is None:
            return None
        out: dict[str, Any] = {}
        for key, value in sorted(config["configurable"].items()):
            if key.startswith("__"):
                # LangGraph's own (`__pregel_checkpointer`, ...): InMemorySaver.get_tuple
                # hands back the config it was given, these included; other savers don't.
                continue
            if key == "checkpoint_ns":
                out[key] = self.ns(value)
            elif key == "checkpoint_id":
                out[key] = self.id(value)
            elif key == "checkpoint_map":
                out[key] = {self.ns(k): self.id(v) for k, v in value.items()}
            else:
                out[key] = self(value)
        return out

    def snapshot(self, s: StateSnapshot) -> dict[str, Any]:
        metadata = dict(s.metadata or {})
        parents = metadata.get("parents")
        if isinstance(parents, dict):
            metadata["parents"] = {self.ns(k): self.id(v) for k, v in parents.items()}
        return {
            "config": self.config(s.config),
            "parent_config": self.config(s.parent_config),
            "values": self(s.values),
            "next": s.next,
            "metadata": self(metadata),
            "created_at": "<set>" if s.created_at else s.created_at,
            "tasks": [self(t) for t in s.tasks],
            "interrupts": [self(i) for i in s.interrupts],
        }

    def task(self, t: PregelTask) -> dict[str, Any]:
        state = t.state
        return {
            "id": self.id(t.id),
            "name": t.name,
            "path": self(t.path),
            "error": self(t.error),
            "interrupts": [self(i) for i in t.interrupts],
            "state": self.snapshot(state) if isinstance(state, StateSnapshot) else self(state),
            "result": self(t.result),
        }

    def __call__(self, obj: Any) -> Any:
        if isinstance(obj, StateSnapshot):
            return self.snapshot(obj)
        if isinstance(obj, PregelTask):
            return self.task(obj)
        if isinstance(obj, Interrupt):
            return {"interrupt": self(obj.value), "id": self.id(obj.id)}
        if isinstance(obj, BaseMessage):
            return obj.model_dump()
        if isinstance(obj, BaseException):
            return f"{type(obj).__name__}: {obj}"
        if isinstance(obj, dict):
            if set(obj) == {"configurable"}:
                return self.config(obj)
            return {k: self(v) for k, v in obj.items()}
        if isinstance(obj, tuple):
            return tuple(self(v) for v in obj)
        if isinstance(obj, list):
            return [self(v) for v in obj]
        return obj


# Running a graph through the sync or the async API.


@dataclass
class Driver:
    """One compiled graph, called through `graph.invoke` & co. or `ainvoke` & co."""

    graph: Any
    sync: bool

    async def invoke(self, input: Any, config: Any, **kwargs: Any) -> Any:
        if self.sync:
            return await asyncio.to_thread(self.graph.invoke, input, config, **kwargs)
        return await self.graph.ainvoke(input, config, **kwargs)

    async def stream(self, input: Any, config: Any, **kwargs: Any) -> list[Any]:
        if self.sync:
            return await asyncio.to_thread(lambda: list(self.graph.stream(input, config, **kwargs)))
        return [chunk async for chunk in self.graph.astream(input, config, **kwargs)]

    async def state(self, config: Any, *, subgraphs: bool = False) -> StateSnapshot:
        if self.sync:
            snapshot: StateSnapshot = await asyncio.to_thread(
                self.graph.get_state, config, subgraphs=subgraphs
            )
            return snapshot
        snapshot = await self.graph.aget_state(config, subgraphs=subgraphs)
        return snapshot

    async def history(self, config: Any, **kwargs: Any) -> list[StateSnapshot]:
        if self.sync:
            return await asyncio.to_thread(
                lambda: list(self.graph.get_state_history(config, **kwargs))
            )
        return [s async for s in self.graph.aget_state_history(config, **kwargs)]

    async def update(self, config: Any, values: Any, as_node: str | None = None) -> Any:
        if self.sync:
            return await asyncio.to_thread(self.graph.update_state, config, values, as_node)
        return await self.graph.aupdate_state(config, values, as_node)


@dataclass
class Run:
    """One run of a scenario on one checkpointer, and what it recorded."""

    checkpointer: Any
    sync: bool
    # Another saver object on the same storage (a fresh `MongoDBSaver`/`AsyncMongoDBSaver`
    # on the same database; for `InMemorySaver`, itself).
    reopen: Callable[[], AbstractAsyncContextManager[Any]]
    norm: Norm = field(default_factory=Norm)
    log: dict[str, Any] = field(default_factory=dict)

    def compile(self, builder: StateGraph[Any], checkpointer: Any = None) -> Driver:
        graph = builder.compile(checkpointer=checkpointer or self.checkpointer)
        return Driver(graph, self.sync)

    def record(self, label: str, value: Any) -> Any:
        assert label not in self.log, f"recorded {label!r} twice"
        self.log[label] = self.norm(value)
        return value


Scenario = Callable[[Run], Any]


@asynccontextmanager
async def _itself(saver: Any) -> AsyncIterator[Any]:
    yield saver


async def run_on(checkpointer: Any, sync: bool, reopen: Any, scenario: Scenario) -> Run:
    run = Run(checkpointer, sync, reopen)
    await scenario(run)
    return run


async def in_memory(sync: bool, scenario: Scenario) -> Run:
    saver = InMemorySaver()
    return await run_on(saver, sync, lambda: _itself(saver), scenario)


async def compare(backend: Backend, scenario: Scenario, **saver_options: Any) -> dict[str, Any]:
    """The scenario's transcript on the backend's saver (built with `saver_options`),
    asserted equal to InMemorySaver's."""
    async with backend.saver(**saver_options) as saver:

        def reopen() -> Any:
            return backend.saver(db_name=saver.db.name, **saver_options)

        got = await run_on(saver, backend.is_sync, reopen, scenario)
    want = await in_memory(backend.is_sync, scenario)
    assert list(got.log) == list(want.log)
    for label in want.log:
        assert got.log[label] == want.log[label], label
    return want.log


# The graphs.


def _langgraph_at_least(*wanted: int) -> bool:
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", version("langgraph"))
    return found is not None and tuple(int(part) for part in found.groups()) >= wanted


# LangGraph 1.2.13 changed two answers of its own: before it, the state after one of two
# parallel interrupts was resumed still lists the answered one, and a `DeltaChannel` graph
# forked with `update_state` ends with its last node's write twice. `InMemorySaver` gives
# the same older answers on an older LangGraph, so the comparisons with it hold on every
# version the `cli` extra and the test group allow (1.2 and newer; users of the savers
# bring their own); only assertions of LangGraph's own newer answer need this.
LANGGRAPH_1_2_13 = _langgraph_at_least(1, 2, 13)


# Each graph with a plain reducer channel, or with a `DeltaChannel` (only writes stored,
# state rebuilt through `get_delta_channel_history`) that snapshots every few updates.
CHANNELS = ["reducer", "delta"]


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _delta_chat_state(snapshot_frequency: int) -> Any:
    messages: DeltaChannel[Any] = DeltaChannel(
        _messages_delta_reducer,  # type: ignore[arg-type]  # LangGraph's own reducer
        snapshot_frequency=snapshot_frequency,
    )
    # Built at run time (the channel's frequency is a parameter): mypy checks only
    # TypedDicts written out.
    return TypedDict(  # type: ignore[operator]
        "DeltaChatState", {"messages": Annotated[list[AnyMessage], messages]}
    )


def chat_graph(channel: str = "reducer", snapshot_frequency: int = 5) -> StateGraph[Any]:
    """A deterministic bot answering each human message; with `channel="delta"` its
    messages are a `DeltaChannel` snapshotted every `snapshot_frequency` updates."""

    # Nodes take `Any`: a TypedDict annotation would declare its channels in the graph.
    def bot(state: Any) -> dict[str, Any]:
        humans = [m for m in state["messages"] if isinstance(m, HumanMessage)]
        last = state["messages"][-1]
        reply = f"#{len(humans)} ({len(state['messages'])} so far): you said {last.content!r}"
        return {"messages": [AIMessage(reply, id=f"ai-{len(humans)}")]}

    state = _delta_chat_state(snapshot_frequency) if channel == "delta" else ChatState
    builder: StateGraph[Any] = StateGraph(state)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    return builder


def human(turn: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(f"hello {turn}", id=f"human-{turn}")]}


class LogState(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def concat(state: list[str], writes: list[list[str]]) -> list[str]:
    return state + [entry for write in writes for entry in write]


class DeltaLogState(TypedDict, total=False):
    log: Annotated[list[str], DeltaChannel(concat, snapshot_frequency=3)]


def interrupt_with_config(value: Any, config: RunnableConfig) -> Any:
    """`interrupt(value)` from a node that takes `config`, in sync and async runs alike.

    Before Python 3.11 asyncio cannot start a task in a given context, so in an async run
    LangGraph's config never reaches the node's context and `interrupt` (which reads it
    through `get_config`) raises `RuntimeError: Called get_config outside of a runnable
    context`. The node gets its config as an argument instead, and runs `interrupt` in a
    context holding it (docs/compatibility.md, "Async graphs on Python 3.10").
    """
    with set_config_context(config) as context:
        return context.run(interrupt, value)


class NodeWithConfig(Protocol):
    """A node that takes the run's config too, as LangGraph calls it (by keyword)."""

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, Any]: ...


def linear_graph(*names: str, ask: str | None = None, channel: str = "reducer") -> StateGraph[Any]:
    """`START -> names[0] -> ... -> END`, each node appending its name; the node named
    `ask` first `interrupt`s and appends the answer too."""

    def node(name: str) -> NodeWithConfig:
        def run(state: Any, config: RunnableConfig) -> dict[str, Any]:
            if name == ask:
                question = {"question": f"{name}?", "seen": len(state.get("log", []))}
                return {"log": [f"{name}={interrupt_with_config(question, config)}"]}
            return {"log": [name]}

        return run

    builder: StateGraph[Any] = StateGraph(DeltaLogState if channel == "delta" else LogState)
    previous = START
    for name in names:
        builder.add_node(name, node(name))
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder


def parallel_interrupts_graph() -> StateGraph[Any]:
    """`left` and `right` both fanned out from START, both interrupting, then `join`."""

    def asking(name: str) -> NodeWithConfig:
        def run(state: Any, config: RunnableConfig) -> dict[str, Any]:
            return {"log": [f"{name}={interrupt_with_config(f'{name}?', config)}"]}

        return run

    builder: StateGraph[Any] = StateGraph(LogState)
    builder.add_node("left", asking("left"))
    builder.add_node("right", asking("right"))
    builder.add_node("join", lambda state: {"log": [f"join({len(state['log'])})"]})
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "join")
    builder.add_edge("join", END)
    return builder


def merge_log(old: list[str], new: list[str]) -> list[str]:
    """The parent's reducer: the child hands back its whole `log`, old entries included."""
    return old + [entry for entry in new if entry not in old]


class ParentState(TypedDict, total=False):
    log: Annotated[list[str], merge_log]


def subgraph_parent() -> StateGraph[Any]:
    """`prep -> child -> finish`, where `child` is a compiled graph that interrupts."""
    child = linear_graph("sub_one", "sub_ask", "sub_two", ask="sub_ask").compile()
    builder: StateGraph[Any] = StateGraph(ParentState)
    builder.add_node("prep", lambda state: {"log": ["prep"]})
    builder.add_node("child", child)
    builder.add_node("finish", lambda state: {"log": [f"finish({len(state['log'])})"]})
    builder.add_edge(START, "prep")
    builder.add_edge("prep", "child")
    builder.add_edge("child", "finish")
    builder.add_edge("finish", END)
    return builder


class FanOutState(TypedDict, total=False):
    items: list[int]
    results: Annotated[list[str], operator.add]


class WorkItem(TypedDict):
    """What `plan` sends `work` (a `Send` payload)."""

    item: int


@dataclass
class FlakyWork:
    """The `work` node of `fan_out_graph`: fails once on `fail_item`, counts its runs.

    The failing call waits until every other item has run, so which branches finished
    before the failure is the same on every run (LangGraph cancels the tasks still in
    flight when one fails).
    """

    fail_item: int
    items: int
    runs: Counter[int] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, state: WorkItem) -> dict[str, Any]:
        item = state["item"]
        with self.lock:
            self.runs[item] += 1
            first = self.runs[item] == 1
        if item == self.fail_item and first:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                with self.lock:
                    if sum(1 for i in range(self.items) if self.runs[i]) == self.items:
                        break
                time.sleep(0.005)
            time.sleep(0.05)  # the others' writes, committed when their calls return
            raise ValueError(f"item {item} failed")
        return {"results": [f"done-{item}"]}


def fan_out_graph(work: FlakyWork) -> StateGraph[Any]:
    """`plan` sends each item to `work` (`Send`), then `collect` sums up."""

    def fan_out(state: FanOutState) -> list[Send]:
        return [Send("work", {"item": i}) for i in state["items"]]

    builder: StateGraph[Any] = StateGraph(FanOutState)
    builder.add_node("plan", lambda state: {"results": ["planned"]})
    builder.add_node("work", work)
    builder.add_node("collect", lambda state: {"results": [f"collected {len(state['results'])}"]})
    builder.add_edge(START, "plan")
    builder.add_conditional_edges("plan", fan_out, ["work"])
    builder.add_edge("work", "collect")
    builder.add_edge("collect", END)
    return builder
