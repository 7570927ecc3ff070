"""LangGraph's checkpointer conformance suite, on every backend and both savers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from support.backends import Backend


async def test_conformance_full(backend: Backend) -> None:
    @checkpointer_test(name=f"MongoDB[{backend.name}]")
    async def factory() -> AsyncIterator[Any]:
        async with backend.saver() as saver:
            yield saver

    report = await validate(factory)
    report.print_report()
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert report.passed_all(), failures
    assert report.conformance_level() == "FULL"
    # The suite silently skips a capability it does not detect: require all eight.
    expected = {c.value for c in ALL_CAPABILITIES}
    assert set(report.results) == expected
    for name in expected:
        result = report.results[name]
        assert result.detected, f"{name} was not detected"
        assert result.passed is True, f"{name}: {result.failures}"
        assert result.tests_passed > 0, name
        assert result.tests_failed == 0, name
