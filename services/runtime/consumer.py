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

import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import api

from contracts.wire import GAME_SUBJECTS, GAMES_STREAM

ACK_WAIT_S = 60.0
"""Long enough for a slow batch; a batch not acknowledged by then is delivered again (and then
skipped: its sequences are at or below the stored position)."""

NO_WAIT_S = 5.0
"""How long a request for what the stream has now may take to be answered."""


def consumer_name(model: str) -> str:
    return f"spades-projections-{model}"


def consumer_config(model: str, after: int, max_ack_pending: int) -> api.ConsumerConfig:
    """Pull, from sequence ``after + 1``, acknowledged per batch (``AckAll`` on its last message).

    ``max_deliver=-1``: the server never gives up on a message. A message it gave up on would be
    skipped without a trace; retrying and parking are the worker's, where the reason is known.
    """
    name = consumer_name(model)
    return api.ConsumerConfig(
        name=name,
        durable_name=name,
        description=f"projection worker of the read models {model}",
        deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
        opt_start_seq=after + 1,
        ack_policy=api.AckPolicy.ALL,
        ack_wait=ACK_WAIT_S,
        max_deliver=-1,
        max_ack_pending=max_ack_pending,
        filter_subject=GAME_SUBJECTS,
    )


async def open_consumer(
    client: Client, model: str, after: int, *, max_ack_pending: int
) -> PullFeed:
    """The model's consumer, delivering from stream sequence ``after + 1``."""
    js = client.jetstream()
    name = consumer_name(model)
    try:
        info: api.ConsumerInfo | None = await js.consumer_info(GAMES_STREAM, name)
    except nats.js.errors.NotFoundError:
        info = None
    if info is None or not _stands_at(info, after, max_ack_pending):
        if info is not None:
            await js.delete_consumer(GAMES_STREAM, name)
        await js.add_consumer(GAMES_STREAM, config=consumer_config(model, after, max_ack_pending))
    feed = PullFeed(client, GAMES_STREAM, name)
    await feed.open()
    return feed


class ConsumerGone(Exception):
    """The server ended a pull with a conflict (the consumer was deleted, or changed)."""


class PullFeed:
    """Pulls batches from a durable consumer: requests of its own, a callback subscription.

    nats-py's ``fetch`` awaits each message of a batch on its own (a future and a timer each),
    which costs more than applying the message does, and FastStream's batch pull subscriber
    (``PullSub(batch=True)``) is that ``fetch`` with a message object per message on top:
    ``spades bench projections`` measures both transports in one run, and FastStream's delivery
    alone came out slower than this feed's delivery *and* storing into SQLite. So the workers
    keep FastStream's semantics where they matter (a durable pull consumer, explicit
    acknowledgement, nothing dropped on error) and this loop for the transport. Here one
    callback collects a request's messages and the batch is handed over whole. A request first
    asks for what the stream has now (``no_wait``); only when that is nothing does it wait, for
    one message, up to the timeout. Messages of an earlier request that arrive late are kept, in
    order, for the next fetch.
    """

    def __init__(self, client: Client, stream: str, consumer: str) -> None:
        self._client = client
        self._next = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        self._inbox = client.new_inbox()
        self._subscription: Subscription | None = None
        self._arrived: list[Msg] = []
        self._wanted = 0
        self._over = asyncio.Event()
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
        if not self._arrived:
            await self._pull({"batch": batch, "no_wait": True}, batch, NO_WAIT_S)
        if not self._arrived:
            expires = int(wait_s * 1e9)
            await self._pull({"batch": 1, "expires": expires}, 1, wait_s + NO_WAIT_S)
        if self._conflict is not None:
            raise ConsumerGone(self._conflict)
        if not self._arrived:
            raise TimeoutError(f"no message within {wait_s} s")
        messages, self._arrived = self._arrived[:batch], self._arrived[batch:]
        return messages

    async def fetch_now(self, batch: int) -> list[Msg]:
        """Up to ``batch`` messages the stream has now, without waiting for any (none: [])."""
        if len(self._arrived) < batch:
            wanted = batch - len(self._arrived)
            await self._pull({"batch": wanted, "no_wait": True}, wanted, NO_WAIT_S)
        if self._conflict is not None:
            raise ConsumerGone(self._conflict)
        messages, self._arrived = self._arrived[:batch], self._arrived[batch:]
        return messages

    async def _pull(self, request: dict[str, object], wanted: int, wait_s: float) -> None:
        self._wanted = wanted
        self._over.clear()
        await self._client.publish(self._next, json.dumps(request).encode(), reply=self._inbox)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(wait_s):
                await self._over.wait()

    async def _receive(self, msg: Msg) -> None:
        headers = msg.headers or {}
        status = None if msg.data else headers.get(api.Header.STATUS)
        if status is None:
            self._arrived.append(msg)
            if len(self._arrived) >= self._wanted:
                self._over.set()
        elif status == api.StatusCode.CONFLICT:
            self._conflict = headers.get(api.Header.DESCRIPTION, "conflict")
            self._over.set()
        elif status != api.StatusCode.CONTROL_MESSAGE:
            # 404 no messages, 408 request expired: this request is over.
            self._over.set()


def _stands_at(info: api.ConsumerInfo, after: int, max_ack_pending: int) -> bool:
    config = info.config
    delivered = info.delivered.stream_seq if info.delivered else None
    acknowledged = info.ack_floor.stream_seq if info.ack_floor else None
    return (
        delivered == after
        and acknowledged == after
        and not info.num_ack_pending
        and config.ack_policy == api.AckPolicy.ALL
        and config.filter_subject == GAME_SUBJECTS
        and config.max_deliver in (None, -1)
        and config.max_ack_pending == max_ack_pending
    )
