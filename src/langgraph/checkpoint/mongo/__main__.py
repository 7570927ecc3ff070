"""`python -m langgraph.checkpoint.mongo COMMAND` (see `--help`)."""

from langgraph.checkpoint.mongo.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
