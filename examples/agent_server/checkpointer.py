"""The Agent Server's checkpointer: langgraph-checkpoint-mongo's `AsyncMongoDBSaver`,
configured from the environment (`MONGODB_URI`, `MONGODB_DB_NAME`, `MONGODB_TTL_SECONDS`,
`MONGODB_COMPRESSION`, ...; see docs/agent-server.md).

`langgraph.json` names it as `"./checkpointer.py:checkpointer"`, resolved against the
directory `langgraph dev` runs in. To configure it in code instead, define your own factory
around the package's::

    from langgraph.checkpoint.mongo import agent_server

    @asynccontextmanager
    async def checkpointer():
        settings = agent_server.Settings(uri=os.environ["MY_URI"], compression="zstd")
        async with agent_server.checkpointer(settings) as saver:
            yield saver
"""

from langgraph.checkpoint.mongo.agent_server import checkpointer

__all__ = ["checkpointer"]
