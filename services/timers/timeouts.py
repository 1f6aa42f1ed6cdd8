"""Sending a turn's timeout to the engine, until it is answered or the turn is over.

The request is a :class:`~contracts.wire.TimeOutRequest` carrying the game version the deadline
was learnt at, under a command id made of the seat and that version
(:func:`timeout_command_id`): whoever sends the same timeout again (this process after a
retry, the next holder of the partition after a fail-over) gets the first answer, a stale one
is refused ``conflict`` (the game has moved on), and so one timeout makes one action.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import structlog

from contracts.wire import TimeOutRequest
from services.runtime.engine_client import EngineClient, EngineUnavailable
from services.timers.metrics import FIRED, LATENESS

log = structlog.get_logger("spades.timers")

RETRY_S = 0.05
"""How soon a timeout the engine found early (its clock behind this one's) is sent again."""
MAX_RETRY_S = 1.0
UNAVAILABLE_RETRY_S = 1.0
LATENESS_KEPT = 100_000


def timeout_command_id(seat: int, version: int) -> str:
    """The same for every timer that fires this timeout: the engine answers it once."""
    return f"timeout-{seat}-v{version}"


class Timeouts:
    """Sends timeouts, and counts what became of them and of those seen in the stream."""

    def __init__(self, engine: EngineClient, now: Callable[[], float] = time.time) -> None:
        self._engine = engine
        self._now = now
        self.activity = asyncio.Event()
        """Set whenever a timeout is answered or seen in the stream (for whoever waits on it)."""
        self.fired = 0
        """Timeouts this process sent that the engine accepted (or had accepted: a twin's)."""
        self.lost = 0
        """Timeouts refused because the game had moved on (the player, or another timer)."""
        self.observed = 0
        """Timeouts seen in the stream, whoever fired them."""
        self.lateness: deque[float] = deque(maxlen=LATENESS_KEPT)
        """Seconds past the deadline at which each timeout seen in the stream was decided."""
        self.sent_late: deque[float] = deque(maxlen=LATENESS_KEPT)
        """Seconds past the deadline at which this process sent each timeout (its own part)."""

    def seen(self, lateness: float | None) -> None:
        """A timeout in the stream, decided ``lateness`` seconds past its deadline."""
        self.observed += 1
        if lateness is not None:
            self.lateness.append(lateness)
            LATENESS.observe(max(0.0, lateness))
        self.activity.set()

    async def send(
        self,
        game_id: str,
        seat: int,
        version: int,
        deadline: float,
        stands: Callable[[], bool],
    ) -> None:
        """Send the timeout until the engine answers it, or the turn is over without it
        (``stands()`` false): a timeout is never dropped while its turn stands, for the table
        would wait for ever."""
        request = TimeOutRequest(seat=seat, expected_version=version)
        command_id = timeout_command_id(seat, version)
        self.sent_late.append(self._now() - deadline)
        bound = log.bind(game_id=game_id, seat=seat, version=version)
        early = RETRY_S
        try:
            while True:
                try:
                    reply = await self._engine.send(game_id, request, command_id)
                except EngineUnavailable as error:
                    if not stands():
                        return
                    bound.warning("no engine answered the timeout; retrying", error=str(error))
                    await asyncio.sleep(UNAVAILABLE_RETRY_S)
                    continue
                if reply.ok:
                    self.fired += 1
                    FIRED.inc()
                    bound.debug("timeout fired", late_s=round(self._now() - deadline, 4))
                    return
                if reply.code in ("conflict", "game_over", "not_your_turn"):
                    self.lost += 1  # the game moved on first: the player, or another timer
                    return
                if not stands():
                    return  # moved on meanwhile: its next turn has a deadline of its own
                if reply.code == "wrong_phase":  # the engine's clock is behind this one's
                    bound.info("the engine finds the timeout early; retrying", detail=reply.detail)
                    await asyncio.sleep(early)
                    early = min(early * 2, MAX_RETRY_S)
                    continue
                if reply.code == "unavailable":
                    await asyncio.sleep(UNAVAILABLE_RETRY_S)
                    continue
                bound.warning("timeout refused", code=reply.code, detail=reply.detail)
                return
        finally:
            self.activity.set()

    def stats(self) -> dict[str, Any]:
        """For the periodic log line: timeouts fired and lost, and how late (ms past the
        deadline) they were sent and decided, over the last :data:`LATENESS_KEPT`."""
        return {
            "fired": self.fired,
            "lost": self.lost,
            "observed": self.observed,
            "sent_late_p50_ms": _percentile_ms(self.sent_late, 0.5),
            "sent_late_p99_ms": _percentile_ms(self.sent_late, 0.99),
            "decided_late_p50_ms": _percentile_ms(self.lateness, 0.5),
            "decided_late_p99_ms": _percentile_ms(self.lateness, 0.99),
        }


def _percentile_ms(values: deque[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000, 1)
