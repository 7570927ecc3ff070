"""A small chat graph for the Agent Server example: it answers without a model (no API
key needed), so the example shows the checkpointer alone. The server compiles nothing:
it gives this graph its checkpointer from `langgraph.json`."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph


def answer(state: MessagesState) -> dict[str, Any]:
    asked = [m for m in state["messages"] if isinstance(m, HumanMessage)]
    return {"messages": [AIMessage(f"message {len(asked)} of this thread: {asked[-1].content}")]}


builder = StateGraph(MessagesState)
builder.add_node("answer", answer)
builder.add_edge(START, "answer")
builder.add_edge("answer", END)
graph = builder.compile()
