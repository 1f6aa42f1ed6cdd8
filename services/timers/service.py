"""``spades serve timers``: the timer worker as its own process.

Several may run at once: they share the game stream's partitions (:class:`Claims` of kind
``timers``), each partition fired by one of them at a time, and another takes a partition over
within seconds of its holder's end, resuming its clocks from the partition's checkpoint
(:mod:`services.timers.worker`). A timeout the old holder had in flight is sent again by the
new one under the same command id, and the engine takes it once.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from services.runtime.checkpoints import Checkpoints
from services.runtime.claims import Claims
from services.runtime.follower import Following
from services.runtime.game_stream import (
    GameStream,
    LayoutError,
    check_partitions,
    game_partitions,
)
from services.runtime.loop import freeze_started_heap, until_stopped
from services.runtime.nats import connect
from services.runtime.settings import Settings
from services.timers.worker import KIND, PACE, Timers

log = structlog.get_logger("spades.timers")

STATS_EVERY_S = 60.0


async def run_timers(settings: Settings, *, nats_url: str | None = None) -> None:
    """Run until cancelled; then give the partitions up, so that others take them at once."""
    url = nats_url or settings.nats_url
    if url is None:
        raise ValueError("the timer worker needs a NATS server: set SPADES_NATS_URL")
    client = await connect(
        url, "spades-timers", user="timers", credentials=settings.nats_credentials("timers")
    )
    js = client.jetstream()
    layout, replicas = settings.layout, settings.stream_replicas
    try:
        reason = await check_partitions(js, layout)
        if reason is not None:
            raise LayoutError(reason)
        timers = Timers(client, GameStream(js, layout), Checkpoints(js, KIND, replicas))
        following = Following(client, timers, game_partitions(layout), PACE)

        async def lose(partition: int) -> None:
            await following.lose(partition)
            await timers.forget(partition)

        claims = Claims(js, KIND, layout.count, following.gain, lose, replicas=replicas)
        work = [
            asyncio.create_task(claims.run(), name="timers claims"),
            asyncio.create_task(timers.gauge(), name="timers gauges"),
        ]
        freeze_started_heap()
        log.info("timers ready", partitions=layout.count, member=claims.member)
        try:
            while not any(task.done() for task in work):
                await asyncio.wait(work, timeout=STATS_EVERY_S, return_when=asyncio.FIRST_COMPLETED)
                log.info(
                    "timers",
                    partitions=sorted(timers.keepers),
                    clocks=timers.clocks,
                    **timers.timeouts.stats(),
                )
            for task in work:
                if task.done():
                    task.result()
        finally:
            for task in work:  # the claims stop every partition's work, then give it up
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await following.stop()
            await timers.stop()
    finally:
        await client.close()


async def serve_timers(settings: Settings, *, nats_url: str | None = None) -> None:
    """:func:`run_timers` until SIGTERM or Ctrl-C."""
    await until_stopped(run_timers(settings, nats_url=nats_url))
