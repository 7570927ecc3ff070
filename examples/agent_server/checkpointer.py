"""The Agent Server's checkpointer: langgraph-checkpoint-mongo's `AsyncMongoDBSaver`,
configured from the environment (`MONGODB_URI`, `MONGODB_DB_NAME`, `MONGODB_TTL_SECONDS`,
`MONGODB_COMPRESSION`, ...; see the README's "Agent Server" section).

`langgraph.json` names it as `"./checkpointer.py:checkpointer"`. To configure it in code
instead, define your own factory around the package's::

    from langgraph.checkpoint.mongo import agent_server

    @asynccontextmanager
    async def checkpointer():
        settings = agent_server.Settings(uri=os.environ["MY_URI"], compression="zstd")
        async with agent_server.checkpointer(settings) as saver:
            yield saver
"""

from langgraph.checkpoint.mongo.agent_server import checkpointer

__all__ = ["checkpointer"]
