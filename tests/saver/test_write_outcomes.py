"""The async write path (`_cancellation.finished_before_cancelling`), which hands a
write's outcome to its caller: what it promises the savers' `a*` methods, checked on the
wrapper itself (the savers' suites drive it through the wire server in
`test_cancellation.py`)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from langgraph.checkpoint.mongo._cancellation import finished_before_cancelling


class _Write:
    """A stand-in for a driver's write: it runs until `release` is set, then returns or
    fails; `finished` says whether it ran to its end."""

    def __init__(self, failure: Exception | None = None) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.finished = False
        self.failure = failure

    async def run(self) -> str:
        self.started.set()
        await self.release.wait()
        self.finished = True
        if self.failure is not None:
            raise self.failure
        return "acknowledged"


async def test_the_result_and_the_failure_reach_the_caller() -> None:
    write = _Write()
    write.release.set()
    assert await finished_before_cancelling(write.run()) == "acknowledged"
    failing = _Write(ValueError("refused"))
    failing.release.set()
    with pytest.raises(ValueError, match="refused"):
        await finished_before_cancelling(failing.run())


@pytest.mark.parametrize("failure", [None, ValueError("refused")])
async def test_a_cancelled_caller_waits_for_the_write_then_raises(
    failure: Exception | None,
) -> None:
    write = _Write(failure)
    caller = asyncio.ensure_future(finished_before_cancelling(write.run()))
    await write.started.wait()
    caller.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not caller.done(), "the caller stopped waiting while the write was in flight"
    write.release.set()
    with pytest.raises(asyncio.CancelledError) as caught:
        await caller
    assert write.finished
    if sys.version_info >= (3, 11):  # 3.10's tasks drop the cause of a CancelledError
        assert caught.value.__cause__ is failure


async def test_a_cancelled_write_cancels_its_caller() -> None:
    write = _Write()
    caller = asyncio.ensure_future(finished_before_cancelling(write.run()))
    await write.started.wait()
    running = [
        task
        for task in asyncio.all_tasks()
        if task is not caller and task is not asyncio.current_task()
    ]
    assert len(running) == 1
    running[0].cancel()  # what closing the event loop does to the write's task
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert not write.finished
