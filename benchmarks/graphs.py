"""The graphs and the deterministic chat content every scenario runs.

* `chat_graph(delta=...)`: one `assistant` node answering each human message, with the
  `messages` channel either a plain `add_messages` list (stored whole in every
  checkpoint) or a `DeltaChannel` (stored as writes, snapshotted every 100 updates).
* `linear_graph(n)`: `n` nodes in a line over a small state, for latency and
  throughput, where the checkpointer's round trips, not the payload, dominate.

The text is generated from a fixed vocabulary with seeded RNGs, so every run and every
saver stores exactly the same bytes.
"""

from __future__ import annotations

import operator
import random
from typing import Annotated, Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.channels.delta import DeltaChannel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import _messages_delta_reducer, add_messages
from typing_extensions import TypedDict

_VOCABULARY = (
    "agent checkpoint thread state graph node edge channel reducer message tool call "
    "result answer question context window token model latency throughput database "
    "collection index document cursor batch write read replica shard cluster region "
    "network round trip request response server client driver pool connection retry "
    "timeout error value version snapshot history parent child step task plan search "
    "summary report customer order invoice payment refund shipment address account "
    "profile setting preference schedule meeting calendar reminder note draft email "
    "the a an of to in on for with from by about into over after before under between "
    "is are was were be has have had can could should would will may might must "
    "quickly carefully usually often rarely already still again also only just then "
    "first second third last next previous current new old large small fast slow "
    "simple complex stable recent exact approximate valid invalid empty full "
    "check update create delete list fetch store load compare merge split sort filter "
    "return explain suggest confirm verify estimate compute measure track notify"
)
_WORDS = _VOCABULARY.split()


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(6, 15))]
    if rng.random() < 0.3:
        words.insert(rng.randrange(len(words)), str(rng.randint(2, 9999)))
    if rng.random() < 0.15:
        words.insert(rng.randrange(len(words)), f"`{rng.choice(_WORDS)}_{rng.randint(1, 99)}`")
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice(".....?!")


def _text(seed: str, low: int, high: int) -> str:
    rng = random.Random(seed)  # str seeds hash with SHA-512: the same on every run
    target = rng.randint(low, high)
    text = ""
    while len(text) < target:
        text = f"{text} {_sentence(rng)}".strip()
    if len(text) > high:
        text = text[: text.rfind(" ", 0, high)] + "."
    return text


def human_text(turn: int) -> str:
    """The user's message of a turn: 40 to 160 characters."""
    return _text(f"human-{turn}", 40, 160)


def ai_text(turn: int) -> str:
    """The assistant's reply of a turn: 300 to 600 characters of varied text."""
    return _text(f"ai-{turn}", 300, 600)


def human_input(turn: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=human_text(turn), id=f"human-{turn}")]}


class ChatState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class DeltaChatState(TypedDict):
    messages: Annotated[list[AnyMessage], DeltaChannel(_messages_delta_reducer)]


def _assistant(state: Any) -> dict[str, Any]:
    turn = len(state["messages"]) // 2
    text = ai_text(turn)
    reply = AIMessage(
        content=text,
        id=f"ai-{turn}",
        response_metadata={"model_name": "bench-model-1", "finish_reason": "stop"},
        usage_metadata={
            "input_tokens": 40 * (turn + 1),
            "output_tokens": len(text) // 4,
            "total_tokens": 40 * (turn + 1) + len(text) // 4,
        },
    )
    return {"messages": [reply]}


def chat_graph(*, delta: bool) -> StateGraph[Any]:
    """A one-node chat graph: every `invoke` with `human_input(turn)` is one turn."""
    builder: StateGraph[Any] = StateGraph(DeltaChatState if delta else ChatState)
    builder.add_node("assistant", _assistant)
    builder.add_edge(START, "assistant")
    builder.add_edge("assistant", END)
    return builder


class LinearState(TypedDict):
    count: int
    trace: Annotated[list[str], operator.add]


def _linear_node(name: str) -> Any:
    def node(state: LinearState) -> dict[str, Any]:
        return {"count": state["count"] + 1, "trace": [name]}

    return node


def linear_graph(nodes: int) -> StateGraph[Any]:
    """`nodes` nodes in a line, each one super-step: invoke with `LINEAR_INPUT`."""
    builder: StateGraph[Any] = StateGraph(LinearState)
    names = [f"node_{i}" for i in range(1, nodes + 1)]
    for name in names:
        builder.add_node(name, _linear_node(name))
    for source, target in zip([START, *names], [*names, END], strict=True):
        builder.add_edge(source, target)
    return builder


LINEAR_INPUT: dict[str, Any] = {"count": 0}


def thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}
