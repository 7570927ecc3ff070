"""How a saver drives a plan (`_runners.run_plan` / `arun_plan`): each command's result or
error goes back into the plan, which may handle an error and go on, return, or let it
propagate; what is no `Exception` (cancellation, KeyboardInterrupt) is not handed in."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any

import pytest

from langgraph.checkpoint.mongo._runners import arun_plan, run_plan


def recovering() -> Generator[str, Any, list[Any]]:
    seen = [(yield "a")]
    try:
        yield "fail"
    except ValueError as exc:
        seen.append(f"handled {exc}")
    seen.append((yield "b"))
    return seen


def returning_on_error() -> Generator[str, Any, str]:
    try:
        yield "fail"
    except ValueError:
        return "gave up"
    raise AssertionError("not reached")


def propagating() -> Generator[str, Any, None]:
    yield "fail"
    raise AssertionError("not reached")


def interrupted() -> Generator[str, Any, None]:
    try:
        yield "interrupt"
    except KeyboardInterrupt as exc:
        raise AssertionError("the interrupt was handed to the plan") from exc


def no_commands() -> Generator[str, Any, int]:
    return 7
    yield  # pragma: no cover - makes this a generator


def answer(command: str) -> str:
    if command == "fail":
        raise ValueError("boom")
    if command == "interrupt":
        raise KeyboardInterrupt
    return command.upper()


CASES: list[tuple[Callable[[], Any], Any]] = [
    (recovering, ["A", "handled boom", "B"]),
    (returning_on_error, "gave up"),
    (no_commands, 7),
]


@pytest.mark.parametrize(("plan", "result"), CASES)
def test_run_plan(plan: Callable[[], Any], result: Any) -> None:
    assert run_plan(plan(), answer) == result


@pytest.mark.parametrize(("plan", "result"), CASES)
def test_arun_plan(plan: Callable[[], Any], result: Any) -> None:
    async def execute(command: str) -> str:
        return answer(command)

    assert asyncio.run(arun_plan(plan(), execute)) == result


def test_unhandled_errors_and_interrupts_propagate() -> None:
    async def execute(command: str) -> str:
        return answer(command)

    with pytest.raises(ValueError, match="boom"):
        run_plan(propagating(), answer)
    with pytest.raises(ValueError, match="boom"):
        asyncio.run(arun_plan(propagating(), execute))
    with pytest.raises(KeyboardInterrupt):
        run_plan(interrupted(), answer)
