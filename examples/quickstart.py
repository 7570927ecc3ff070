"""A chat graph whose conversation survives a restart, persisted by AsyncMongoDBSaver.

Run: `python examples/quickstart.py` (after the README's set-up command, or
`pip install "langgraph-checkpoint-mongo[testing]" langgraph`). With `MONGODB_URI` set it uses
that server; without it, the in-process stand-in of `langgraph.checkpoint.mongo.testing`.
"""

from __future__ import annotations

import asyncio
import os
from contextlib import AsyncExitStack
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

from langgraph.checkpoint.mongo import AsyncMongoDBSaver, testing

URI = os.environ.get("MONGODB_URI")
CONFIG: Any = {"configurable": {"thread_id": "quickstart-demo"}}  # one thread = one chat


class State(TypedDict):
    # `add_messages` appends each node's new messages instead of replacing the list.
    messages: Annotated[list[AnyMessage], add_messages]


def bot(state: State) -> dict[str, list[AnyMessage]]:
    """A deterministic stand-in for an LLM: it echoes the last message and counts."""
    text, n = state["messages"][-1].content, len(state["messages"])
    return {"messages": [AIMessage(f"You said {text!r}; that is message #{n}")]}


def build_graph(saver: AsyncMongoDBSaver) -> Any:
    builder = StateGraph(State)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    return builder.compile(checkpointer=saver)  # the saver stores a checkpoint per step


async def open_saver(stack: AsyncExitStack, client: Any) -> AsyncMongoDBSaver:
    """A saver on database "quickstart": a new connection for a URI, else the shared mock."""
    if URI:
        return await stack.enter_async_context(
            # timeoutMS: a server that is down fails a call in 10 s instead of hanging it.
            AsyncMongoDBSaver.from_conn_string(URI, db_name="quickstart", timeoutMS=10_000)
        )
    saver = AsyncMongoDBSaver(client, db_name="quickstart")
    await saver.setup()  # creates the indexes; idempotent
    return saver


async def chat(graph: Any, text: str) -> None:
    state = await graph.ainvoke({"messages": [HumanMessage(text)]}, CONFIG)
    print(f"  user: {text}\n  bot:  {state['messages'][-1].content}")


async def main() -> None:
    # An in-memory stand-in for a server (mongomock-motor); both savers below share it.
    client = None if URI else testing.async_client()
    print(f"Backend: {'MongoDB at MONGODB_URI' if URI else 'in-process (testing.async_client)'}")
    async with AsyncExitStack() as stack:
        # 1. A first "process": two turns of conversation, saved as they happen.
        saver = await open_saver(stack, client)
        await saver.adelete_thread("quickstart-demo")  # start clean on every run
        graph = build_graph(saver)
        print("First session:")
        await chat(graph, "hello")
        await chat(graph, "how are you?")

        # 2. A "restart": a brand-new saver and graph find the conversation in MongoDB.
        graph = build_graph(await open_saver(stack, client))
        state = await graph.aget_state(CONFIG)
        print(f"Reloaded {len(state.values['messages'])} messages; second session:")
        await chat(graph, "still there?")  # resumes from the saved state

        # 3. The history: one checkpoint per step, newest first.
        print("Checkpoints (newest first):")
        async for snapshot in graph.aget_state_history(CONFIG):
            step, source = snapshot.metadata["step"], snapshot.metadata["source"]
            count = len(snapshot.values.get("messages", []))
            print(f"  step {step:>2}  {source:<6} {count} messages")
        transcript = (await graph.aget_state(CONFIG)).values["messages"]
        print("Transcript:")
        for message in transcript:
            print(f"  {message.type:>5}: {message.content}")
        assert len(transcript) == 6, f"expected 6 messages, got {len(transcript)}"


if __name__ == "__main__":
    asyncio.run(main())
