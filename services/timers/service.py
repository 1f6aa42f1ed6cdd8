"""``spades serve timers``: the timer worker as its own process.

Several may run at once (each fires every timeout; the engine accepts it once), so a timer
worker is made highly available by running two. It holds nothing of its own: on a start it
reads the game stream again and fires what is overdue at once.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from services.runtime.loop import freeze_started_heap, until_stopped
from services.runtime.nats import connect
from services.runtime.settings import Settings
from services.timers.worker import Timers, stats

log = structlog.get_logger("spades.timers")

STATS_EVERY_S = 60.0


async def run_timers(settings: Settings, *, nats_url: str | None = None) -> None:
    """Run until cancelled."""
    url = nats_url or settings.nats_url
    if url is None:
        raise ValueError("the timer worker needs a NATS server: set SPADES_NATS_URL")
    client = await connect(
        url, "spades-timers", user="timers", credentials=settings.nats_credentials("timers")
    )
    timers = Timers(client)
    try:
        await timers.start()
        freeze_started_heap()
        log.info("timers ready")
        firing = asyncio.create_task(timers.fire_due(), name="timers")
        try:
            while not firing.done():
                await asyncio.wait({firing}, timeout=STATS_EVERY_S)
                log.info("timers", **stats(timers))
            firing.result()
        finally:
            firing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await firing
    finally:
        await timers.stop()
        await client.close()


async def serve_timers(settings: Settings, *, nats_url: str | None = None) -> None:
    """:func:`run_timers` until SIGTERM or Ctrl-C. A timeout in flight then is fired again by
    the next start (or by another worker), and the engine takes it once."""
    await until_stopped(run_timers(settings, nats_url=nats_url))
