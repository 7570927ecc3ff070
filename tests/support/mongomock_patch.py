"""The mongomock fixes the tests rely on, now shipped in `langgraph.checkpoint.mongo.testing`.

A thin re-export kept so that test code has one import for them: the fixes themselves (each
with its upstream issue) live in the testing module, which users' tests get too. A new fix
belongs there.
"""

from __future__ import annotations

from langgraph.checkpoint.mongo.testing import apply_mongomock_fixes as apply

__all__ = ["apply"]
