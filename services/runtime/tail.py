"""Follow the tail of event streams as they are appended, keeping a process's aggregates current.

Engines share one queue group, so consecutive commands of one game often reach different
engines. Without following, each such command finds its cached game one commit behind: its
append fails the expected-sequence check, the engine reads the stream and decides again (three
round trips instead of one). A follower is an ordered push consumer from the stream's end that
hands every commit to :meth:`~services.runtime.aggregate_cache.AggregateCache.observe`.

It is an optimisation only: a commit it misses (the consumer is re-created after a gap, a
node is down) is found by the optimistic check as before, so nothing here can make a decision
wrong.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import nats.errors
import structlog
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext, api

from services.runtime.aggregate_cache import AggregateCache
from services.runtime.event_store import stream_sequence

log = structlog.get_logger("spades.follower")

HEARTBEAT_S = 5.0
"""How soon the ordered consumer notices a lost node and is made again elsewhere."""


async def follow(
    js: JetStreamContext,
    subjects: str,
    stream: str,
    receive: Callable[[Msg], Awaitable[None]],
    deliver_policy: api.DeliverPolicy,
) -> Subscription:
    """An ordered push consumer on ``stream`` handing each message to ``receive``, made again
    after a gap or a lost node, with no limit on what waits for ``receive``."""
    return await js.subscribe(
        subjects,
        stream=stream,
        cb=receive,
        ordered_consumer=True,
        idle_heartbeat=HEARTBEAT_S,
        deliver_policy=deliver_policy,
        pending_msgs_limit=-1,
        pending_bytes_limit=-1,
    )


class Tail:
    """Applies the new commits of streams to a cache, from the moment it starts: ``streams``
    are (name, subjects) pairs, the partitions of the cache's store."""

    def __init__(self, streams: Sequence[tuple[str, str]], cache: AggregateCache[Any]) -> None:
        self._streams = list(streams)
        self._cache = cache
        self._subscriptions: list[Subscription] = []
        self.applied = 0
        """Commits taken from the stream (not read after a failed append)."""

    async def start(self, js: JetStreamContext) -> None:
        for name, subjects in self._streams[len(self._subscriptions) :]:
            self._subscriptions.append(
                await follow(js, subjects, name, self._receive, api.DeliverPolicy.NEW)
            )

    async def stop(self) -> None:
        for subscription in self._subscriptions:
            with contextlib.suppress(nats.errors.Error):
                await subscription.unsubscribe()
        self._subscriptions = []

    async def _receive(self, msg: Msg) -> None:
        try:
            if self._cache.observe(stream_sequence(msg.reply), msg.subject, msg.data):
                self.applied += 1
        except Exception as error:  # a commit it cannot read is the next command's to read
            log.warning("commit not followed", subject=msg.subject, error=repr(error))
