"""Follow the tail of event streams as they are appended, keeping a process's aggregates current.

Engines share one queue group, so consecutive commands of one game often reach different
engines. Without following, each such command finds its cached game one commit behind: its
append fails the expected-sequence check, the engine reads the stream and decides again (three
round trips instead of one). A follower reads the stream in order from its end
(:mod:`.ordered`) and hands every commit to
:meth:`~services.runtime.aggregate_cache.AggregateCache.observe`.

It is an optimisation only: a commit it misses (the consumer is re-created after a gap, a
node is down) is found by the optimistic check as before, so nothing here can make a decision
wrong.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any

import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg

from services.runtime.aggregate_cache import AggregateCache
from services.runtime.event_store import stream_sequence
from services.runtime.ordered import OrderedReader

log = structlog.get_logger("spades.follower")

HEARTBEAT_S = 5.0
"""How long one pull waits for the stream to grow: a lost node is noticed within about this,
and the consumer made again elsewhere."""
BATCH = 256


class Tail:
    """Applies the new commits of streams to a cache, from the moment it starts: ``streams``
    are (name, subjects) pairs, the partitions of the cache's store."""

    def __init__(self, streams: Sequence[tuple[str, str]], cache: AggregateCache[Any]) -> None:
        self._streams = list(streams)
        self._cache = cache
        self._readers: list[OrderedReader] = []
        self._tasks: list[asyncio.Task[None]] = []
        self.applied = 0
        """Commits taken from the stream (not read after a failed append)."""

    async def start(self, client: Client) -> None:
        """Follow each stream from its end (a stream not there yet raises, and the caller tries
        again later: the ones started are kept)."""
        for name, subjects in self._streams[len(self._readers) :]:
            reader = OrderedReader(client, name, subjects, after=None, role="tail")
            await reader.open()
            self._readers.append(reader)
            self._tasks.append(asyncio.create_task(self._follow(reader)))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for reader in self._readers:
            await reader.close()
        self._tasks, self._readers = [], []

    async def _follow(self, reader: OrderedReader) -> None:
        while True:
            for msg in await reader.fetch(BATCH, HEARTBEAT_S):
                self._receive(msg)

    def _receive(self, msg: Msg) -> None:
        try:
            if self._cache.observe(stream_sequence(msg.reply), msg.subject, msg.data):
                self.applied += 1
        except Exception as error:  # a commit it cannot read is the next command's to read
            log.warning("commit not followed", subject=msg.subject, error=repr(error))
