"""Benchmarks of langgraph-checkpoint-mongo against the official saver and InMemorySaver.

Run with `python -m benchmarks`; see benchmarks/README.md.
"""
