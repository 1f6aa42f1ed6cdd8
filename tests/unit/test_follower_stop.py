"""A follower's task that drops its cancellation still ends when it is stopped."""

from __future__ import annotations

import asyncio
import contextlib

from services.runtime.follower import stop


async def test_a_task_that_drops_its_cancellation_is_cancelled_again() -> None:
    """As Python 3.11's ``asyncio.wait_for`` does when its answer arrives as the task is
    cancelled: the first cancellation is lost, the task goes on."""
    went_on = asyncio.Event()

    async def following() -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(60)
        went_on.set()
        await asyncio.sleep(60)

    task = asyncio.create_task(following())
    await asyncio.sleep(0)
    stopping = asyncio.create_task(stop(task))
    try:
        await asyncio.wait({stopping}, timeout=5)
        assert stopping.done(), "the task went on after it was stopped"
        assert went_on.is_set()
        assert task.cancelled()
    finally:
        for left in (stopping, task):
            left.cancel()
