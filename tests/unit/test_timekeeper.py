"""A partition's timekeeper: what it holds of the process's shared room for sends (no I/O: a
send that never returns stands in for the engine)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from nats.aio.client import Client

from services.runtime.engine_client import EngineClient
from services.timers.clocks import Clocks
from services.timers.timeouts import Timeouts
from services.timers.worker import Timekeeper
from tests.unit.test_timers_learning import clocked, learnt


class Unanswered(Timeouts):
    """Timeouts the engine never answers."""

    def __init__(self) -> None:
        super().__init__(EngineClient(Client()))
        self.sent = 0
        self.begun = asyncio.Event()

    async def send(
        self, game_id: str, seat: int, version: int, deadline: float, stands: Callable[[], bool]
    ) -> None:
        self.sent += 1
        self.begun.set()
        await asyncio.Event().wait()


async def test_a_partition_given_up_with_timeouts_in_flight_gives_their_room_back() -> None:
    """Whether or not a send has begun when its partition is given up, the room it took among
    the process's sends is given back: a process that loses partitions often would otherwise
    stop firing."""
    clocks = Clocks()
    learnt(clocks, "due", clocked("due", seats=4))
    learnt(clocks, "due-too", clocked("due-too", seats=4))
    deadline = clocks.earliest()
    assert deadline is not None
    slots = asyncio.Semaphore(2)
    timeouts = Unanswered()
    keeper = Timekeeper(0, clocks, timeouts, slots, lambda: deadline + 60)
    keeper.start()
    await asyncio.sleep(0)  # the keeper takes both due timeouts: their sends are made, not run
    assert slots.locked()
    assert timeouts.sent == 0
    await keeper.stop()
    assert not slots.locked()
    one = asyncio.Semaphore(1)
    keeper = Timekeeper(0, Clocks(), timeouts, one, lambda: deadline + 60)
    learnt(keeper.clocks, "due", clocked("due", seats=4))
    keeper.start()
    await timeouts.begun.wait()  # the send has begun, and waits for an answer
    assert one.locked()
    await keeper.stop()
    assert not one.locked()
