"""Running plans: the loops that hand a plan (`_commands.Plan`) or a `list`
(`_commands.Listing`) each answer and take its next request, sync and async. The
requests themselves are answered by the savers' executors (`_executors`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, TypeVar

from langgraph.checkpoint.mongo._commands import Command, Detach, Listing, NextDocument, OpenCursor

T = TypeVar("T")
Y = TypeVar("Y")
# A request's answer: `(result, None)`, or `(None, error)` for the plan to handle.
Outcome = tuple[Any, Exception | None]


def step_plan(
    plan: Generator[Y, Any, T], result: Any = None, error: BaseException | None = None
) -> tuple[Y | None, T | None]:
    """Hand a plan the last command's result (or error): `(next command, None)` or
    `(None, its return value)`. Sending `None` to a fresh generator starts it."""
    try:
        return (plan.throw(error) if error is not None else plan.send(result)), None
    except StopIteration as done:
        return None, done.value


def _answered(answer: Callable[[Y], Any], request: Y) -> Outcome:
    try:
        return answer(request), None
    except Exception as error:
        return None, error


async def _aanswered(answer: Callable[[Y], Awaitable[Any]], request: Y) -> Outcome:
    try:
        return await answer(request), None
    except Exception as error:
        return None, error


def run_plan(plan: Generator[Y, Any, T], execute: Callable[[Y], Any]) -> T:
    """Run a plan to its end, each request answered by `execute`; an error it raises
    goes back into the plan, which handles it or lets it propagate."""
    request, value = step_plan(plan)
    while request is not None:
        request, value = step_plan(plan, *_answered(execute, request))
    return value  # type: ignore[return-value]


async def arun_plan(plan: Generator[Y, Any, T], execute: Callable[[Y], Awaitable[Any]]) -> T:
    """`run_plan` with an async `execute`."""
    request, value = step_plan(plan)
    while request is not None:
        request, value = step_plan(plan, *await _aanswered(execute, request))
    return value  # type: ignore[return-value]


def run_listing(listing: Listing[T], answer: Callable[[Any], Any]) -> Iterator[T]:
    """Run a listing (`_operations.read.list_checkpoints`, `list_threads`): yield its
    items, answer its requests with `answer`; an error `answer` raises goes back into it."""
    outcome: Outcome = (None, None)
    while (request := step_plan(listing, *outcome)[0]) is not None:
        if isinstance(request, _REQUESTS):
            outcome = _answered(answer, request)
        else:
            yield request
            outcome = (None, None)


async def arun_listing(
    listing: Listing[T], answer: Callable[[Any], Awaitable[Any]]
) -> AsyncIterator[T]:
    """`run_listing` with an async `answer`."""
    outcome: Outcome = (None, None)
    while (request := step_plan(listing, *outcome)[0]) is not None:
        if isinstance(request, _REQUESTS):
            outcome = await _aanswered(answer, request)
        else:
            yield request
            outcome = (None, None)


# What a listing yields for its runner to answer; anything else goes to the caller.
_REQUESTS = (Command, OpenCursor, NextDocument, Detach)
