"""The durable JetStream consumer behind each projection worker (named after its read models).

The database holds the truth of where a model stands; the consumer is only a cursor into the
stream. At start it is re-created to begin right after the stored position unless it already
stands exactly there (everything up to the position acknowledged, nothing outstanding), which
covers a rebuild, a database restored from a backup and a crash between a commit and its
acknowledgement, without waiting for redeliveries.

One worker per set of models at a time: a second one would share the cursor and apply batches
out of order. Run more projection processes by giving each its own models.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import api

from contracts.wire import GAME_SUBJECTS, GAMES_STREAM
from services.runtime.replies import command, send

ACK_WAIT_S = 60.0
"""Long enough for a slow batch; a batch not acknowledged by then is delivered again (and then
skipped: its sequences are at or below the stored position)."""

NO_WAIT_S = 5.0
"""How long a request for what the stream has now may take to be answered."""


def consumer_name(model: str) -> str:
    return f"spades-projections-{model}"


@dataclass(frozen=True, slots=True)
class Durable:
    """A durable pull consumer a worker follows a stream through, at a position it stores."""

    stream: str
    name: str
    subjects: str
    description: str = ""
    ack_wait_s: float = ACK_WAIT_S

    def config(self, after: int, max_ack_pending: int) -> api.ConsumerConfig:
        """Pull, from sequence ``after + 1``, acknowledged per batch (``AckAll`` on its last
        message).

        ``max_deliver=-1``: the server never gives up on a message. A message it gave up on
        would be skipped without a trace; retrying and parking are the worker's, where the
        reason is known.
        """
        return api.ConsumerConfig(
            name=self.name,
            durable_name=self.name,
            description=self.description or None,
            deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=after + 1,
            ack_policy=api.AckPolicy.ALL,
            ack_wait=self.ack_wait_s,
            max_deliver=-1,
            max_ack_pending=max_ack_pending,
            filter_subject=self.subjects,
        )

    def stands_at(self, info: api.ConsumerInfo, after: int, max_ack_pending: int) -> bool:
        """Whether the consumer found delivers next exactly ``after + 1``, as configured now."""
        config = info.config
        delivered = info.delivered.stream_seq if info.delivered else None
        acknowledged = info.ack_floor.stream_seq if info.ack_floor else None
        return (
            delivered == after
            and acknowledged == after
            and not info.num_ack_pending
            and config.ack_policy == api.AckPolicy.ALL
            and config.filter_subject == self.subjects
            and config.max_deliver in (None, -1)
            and config.max_ack_pending == max_ack_pending
            and not config.inactive_threshold  # set by someone else: the server would delete it
        )

    async def open(self, client: Client, after: int, *, max_ack_pending: int) -> PullFeed:
        """The consumer, made again to start right after ``after`` unless it stands exactly
        there; a feed of it, open."""
        js = client.jetstream()
        try:
            info: api.ConsumerInfo | None = await js.consumer_info(self.stream, self.name)
        except nats.js.errors.NotFoundError:
            info = None
        if info is None or not self.stands_at(info, after, max_ack_pending):
            if info is not None:
                await js.delete_consumer(self.stream, self.name)
            await js.add_consumer(self.stream, config=self.config(after, max_ack_pending))
        feed = PullFeed(client, self.stream, self.name)
        await feed.open()
        return feed


def projections_durable(model: str) -> Durable:
    name = consumer_name(model)
    return Durable(
        GAMES_STREAM, name, GAME_SUBJECTS, f"projection worker of the read models {model}"
    )


def consumer_config(model: str, after: int, max_ack_pending: int) -> api.ConsumerConfig:
    """The projection consumer of ``model`` on a one-partition deployment."""
    return projections_durable(model).config(after, max_ack_pending)


async def open_consumer(
    client: Client, model: str, after: int, *, max_ack_pending: int
) -> PullFeed:
    """The model's consumer, delivering from stream sequence ``after + 1``."""
    return await projections_durable(model).open(client, after, max_ack_pending=max_ack_pending)


class ConsumerGone(Exception):
    """The server ended a pull with a conflict (the consumer was deleted, or changed), or no
    consumer answered it: the follower starts again, after a backoff, and makes it again."""


class PullFeed:
    """Pulls batches from a durable consumer: requests of its own, a callback subscription.

    nats-py's ``fetch`` awaits each message of a batch on its own (a future and a timer each),
    which costs more than applying the message does, and FastStream's batch pull subscriber
    (``PullSub(batch=True)``) is that ``fetch`` with a message object per message on top:
    ``spades bench projections`` measures both transports in one run, and FastStream's delivery
    alone came out slower than this feed's delivery *and* storing into SQLite. So the workers
    keep FastStream's semantics where they matter (a durable pull consumer, explicit
    acknowledgement, nothing dropped on error) and this loop for the transport. Here one
    callback collects the messages and a fetch hands over what has arrived, whole.

    A fetch keeps one long pull open: a request for up to ``batch`` messages that expires after
    the fetch's wait. The server sends each message to it as the stream gets it, so a lightly
    loaded stream costs one message a commit and no request (asking for what the stream had now,
    then waiting for one message, cost two requests and a "no messages" answer a commit), and an
    idle one a request a wait. The next request is made once the open one is filled or over
    (expired, or lost with a reconnection). Messages that arrive between fetches are kept, in
    order, for the next one.
    """

    def __init__(self, client: Client, stream: str, consumer: str) -> None:
        self._client = client
        self._next = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        self._inbox = client.new_inbox()
        self._subscription: Subscription | None = None
        self._arrived: list[Msg] = []
        self._owed = 0
        """Messages the open request may still bring (0: no request is open)."""
        self._until = 0.0
        """The loop time by which the open request is over, its answer lost if none came."""
        self._reconnects = 0
        """The connection's reconnections when the open request was made: after another, the
        server may have lost it."""
        self._changed = asyncio.Event()
        """Set by each message, and by each end of a request."""
        self._conflict: str | None = None

    async def open(self) -> None:
        self._subscription = await self._client.subscribe(
            self._inbox, cb=self._receive, pending_msgs_limit=-1, pending_bytes_limit=-1
        )

    async def close(self) -> None:
        if self._subscription is not None:
            await self._subscription.unsubscribe()
            self._subscription = None

    async def fetch(self, batch: int, wait_s: float) -> list[Msg]:
        """Up to ``batch`` messages; raise ``TimeoutError`` if none came within ``wait_s``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while not self._arrived and self._conflict is None and loop.time() < deadline:
            if not self._open():
                expires = int(wait_s * 1e9)
                await self._request({"batch": batch, "expires": expires}, batch, wait_s)
            until = min(deadline, self._until)
            await self._wait(lambda: bool(self._arrived) or not self._open(), until)
        if self._conflict is not None:
            raise ConsumerGone(self._conflict)
        if not self._arrived:
            raise TimeoutError(f"no message within {wait_s} s")
        return self._take(batch)

    async def fetch_now(self, batch: int) -> list[Msg]:
        """Up to ``batch`` messages the stream has now, without waiting for any (none: []).
        While a request is open, the stream's messages are on their way already: those that
        have arrived are what it has."""
        if len(self._arrived) < batch and not self._open():
            wanted = batch - len(self._arrived)
            await self._request({"batch": wanted, "no_wait": True}, wanted, 0.0)
            await self._wait(lambda: not self._open(), self._until)
        if self._conflict is not None:
            raise ConsumerGone(self._conflict)
        return self._take(batch)

    async def fetch_backlog(self, batch: int, wait_s: float) -> list[Msg]:
        """Up to ``batch`` messages of a backlog (messages the stream has already): those the
        open request is bringing are waited for, until the batch is full, the request is over,
        or ``wait_s``; then what the stream has now (:meth:`fetch_now`). A batch behind a
        backlog fills as fast as its messages come, with no pause for appends."""
        until = min(self._until, asyncio.get_running_loop().time() + wait_s)
        await self._wait(lambda: len(self._arrived) >= batch or not self._open(), until)
        return await self.fetch_now(batch)

    async def acknowledge(self, messages: Sequence[Msg]) -> None:
        """Acknowledge each of ``messages`` on its own (``AckExplicit``), in one write.

        An acknowledgement is an empty message on the delivery's reply subject, which is what
        ``Msg.ack`` publishes; here the protocol's bytes for all of them are handed to the
        connection at once, as one command: one check, one flush, and the server reads them
        together (``msg.ack()`` a message cost the round watch about 3 us more a commit, and
        a flush of its own each, ``spades bench commands``)."""
        if messages:
            await send(self._client, b"".join(command(msg.reply, b"") for msg in messages))

    def _open(self) -> bool:
        """Whether a request is open, still to bring messages."""
        return (
            self._owed > 0
            and asyncio.get_running_loop().time() < self._until
            and self._client.stats["reconnects"] == self._reconnects
        )

    async def _request(self, request: dict[str, object], wanted: int, wait_s: float) -> None:
        """Open a request for ``wanted`` messages, answered within ``wait_s`` (and a margin)."""
        self._owed = wanted
        self._until = asyncio.get_running_loop().time() + wait_s + NO_WAIT_S
        self._reconnects = self._client.stats["reconnects"]
        await self._client.publish(self._next, json.dumps(request).encode(), reply=self._inbox)

    async def _wait(self, done: Callable[[], bool], until: float) -> None:
        """Until ``done()``, a conflict, or the loop time ``until``."""
        loop = asyncio.get_running_loop()
        while not done() and self._conflict is None and (left := until - loop.time()) > 0:
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._changed.wait()

    def _take(self, batch: int) -> list[Msg]:
        messages, self._arrived = self._arrived[:batch], self._arrived[batch:]
        return messages

    async def _receive(self, msg: Msg) -> None:
        headers = msg.headers or {}
        status = None if msg.data else headers.get(api.Header.STATUS)
        if status is None:
            self._arrived.append(msg)
            self._owed -= 1
        elif status == api.StatusCode.CONFLICT:
            self._conflict = headers.get(api.Header.DESCRIPTION, "conflict")
            self._owed = 0
        elif status == api.StatusCode.SERVICE_UNAVAILABLE:
            # No responders: the consumer is not there (deleted, or expired). Asking again at
            # once would spin, thousands of requests a second, and never make it again.
            self._conflict = "no consumer answers: it is gone"
            self._owed = 0
        elif status != api.StatusCode.CONTROL_MESSAGE:
            self._owed = 0  # 404 no messages, 408 request expired: this request is over
        else:
            return
        self._changed.set()
