"""Audits and leagues' integrity reports, the costly reads: computed at most a few at a time,
once per game version (a league's report: once per count of its finished hands).

Replaying a long game takes a while, all of it in Python. Run in the request's own task, a
burst of audits would hold the event loop and every other request behind it. So a report is
computed in a worker thread, at most :data:`AUDITS_AT_ONCE` at a time (the computation holds
the gate it is given only while it works, not while it waits for the read models to catch up);
a request for a game version being audited now waits for that report instead of computing its
own; and a report is kept (the last :data:`AUDITS_KEPT`) for the version it audits, once the
read models it compares had caught up with that version (a report made while they lagged is
answered, not kept).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from prometheus_client import Counter

AUDITS_AT_ONCE = 2
AUDITS_KEPT = 256

Report = dict[str, Any]
Compute = Callable[[asyncio.Semaphore], Awaitable[tuple[Report, bool]]]
"""Makes a report, holding the gate while it computes, and says whether it may be kept."""


class AuditRuns:
    """Audit reports by (game, version): kept, being computed, or to compute."""

    def __init__(
        self, computed: Counter, at_once: int = AUDITS_AT_ONCE, kept: int = AUDITS_KEPT
    ) -> None:
        self._gate = asyncio.Semaphore(at_once)
        self._kept: OrderedDict[tuple[str, int], Report] = OrderedDict()
        self._capacity = kept
        self._running: dict[tuple[str, int], asyncio.Task[Report]] = {}
        self._computed = computed

    async def report(self, game_id: str, version: int, compute: Compute) -> Report:
        key = (game_id, version)
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            return kept
        running = self._running.get(key)
        if running is None:
            running = asyncio.create_task(self._compute(key, compute))
            self._running[key] = running
            running.add_done_callback(lambda _: self._running.pop(key, None))
        # Shielded: a client that goes away does not cancel the report the others wait for.
        return await asyncio.shield(running)

    async def _compute(self, key: tuple[str, int], compute: Compute) -> Report:
        report, keep = await compute(self._gate)
        self._computed.inc()
        if keep:
            self._kept[key] = report
            while len(self._kept) > self._capacity:
                self._kept.popitem(last=False)
        return report
