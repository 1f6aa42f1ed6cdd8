"""Reading a stream in order, from a sequence or from its end, through consumers we name.

nats-py's ordered consumer makes its ephemeral consumer through the unnamed create subject
(``$JS.API.CONSUMER.CREATE.<stream>``), and a request there may carry any consumer's name in
its body and change that consumer (the server updates it): so no broker permission could let a
process make its own ephemeral consumers without letting it change every durable consumer of
the stream, such as another process's round watch (issue 29, row 9). Here each consumer is made
under a random name of its own in the subject (``CONSUMER.CREATE.<stream>.<name>.<filter>``),
which permissions can tell apart from another process's durable consumer and refuse.

The consumer is a pull consumer read through :class:`~services.runtime.consumer.PullFeed` (a
long pull the server fills as the stream grows), unacknowledged, in memory, on one replica,
and deleted by the server once no pull has come for :data:`INACTIVE_S`. When it is lost (its
node is gone, or someone deleted it) the next pull finds no one to answer, and the reader makes
another, under a new name, from the sequence after the last message it handed out: in order,
nothing twice, nothing missed that the stream still holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import deque

import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api

from services.runtime.consumer import ConsumerGone, PullFeed
from services.runtime.event_store import stream_sequence

log = structlog.get_logger("spades.ordered")

INACTIVE_S = 30.0
"""How long the server keeps a consumer no pull has come for (a reader that vanished)."""
NEXT_BATCH = 64
"""Messages one pull of :meth:`OrderedReader.next_msg` may bring."""
RETRY_S = 0.5
"""The pause before making a lost consumer again (never asked for in a loop)."""


class OrderedReader:
    """The messages of ``stream`` on ``subjects`` after stream sequence ``after`` (``None``:
    those appended from now on), in order, made again where it stopped when lost.

    ``role`` begins each consumer's name (``spades-<role>-<random>``): an operator listing a
    stream's consumers sees whose they are."""

    def __init__(
        self, client: Client, stream: str, subjects: str, *, after: int | None, role: str
    ) -> None:
        self._client = client
        self._stream = stream
        self._subjects = subjects
        self._after = after
        self._role = role
        self._feed: PullFeed | None = None
        self._waiting: deque[Msg] = deque()
        """Fetched, not yet handed out by :meth:`next_msg`."""
        self.made = 0
        """Consumers made so far (one, unless some were lost)."""

    @property
    def after(self) -> int | None:
        """The stream sequence of the last message handed out (or the start)."""
        return self._after

    async def open(self) -> None:
        """Make the consumer now (raising what NATS answers, such as no such stream): from
        here on, nothing appended is missed."""
        if self._feed is None:
            await self._make()

    async def fetch(self, batch: int, wait_s: float) -> list[Msg]:
        """Up to ``batch`` messages, waiting up to about ``wait_s`` for the first ([] if none
        came, or if the consumer was lost and could not be made again within that time)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            left = deadline - loop.time()
            try:
                feed = self._feed or await self._make()
                messages = await feed.fetch(batch, max(left, 0.01))
            except TimeoutError:
                return []
            except (ConsumerGone, nats.errors.Error, nats.js.errors.Error) as error:
                await self._drop(error)
                if deadline - loop.time() <= RETRY_S:
                    return []
                await asyncio.sleep(RETRY_S)
                continue
            self._after = stream_sequence(messages[-1].reply)
            return messages

    async def next_msg(self, wait_s: float) -> Msg:
        """The next message, as a nats-py subscription hands them: ``nats.errors.TimeoutError``
        if none came within ``wait_s``."""
        if not self._waiting:
            self._waiting.extend(await self.fetch(NEXT_BATCH, wait_s))
        if not self._waiting:
            raise nats.errors.TimeoutError
        return self._waiting.popleft()

    async def close(self) -> None:
        """Stop reading (the server deletes the consumer once it is idle for
        :data:`INACTIVE_S`: the readers may not delete consumers)."""
        if self._feed is not None:
            feed, self._feed = self._feed, None
            with contextlib.suppress(nats.errors.Error):
                await feed.close()

    async def _make(self) -> PullFeed:
        name = f"spades-{self._role}-{secrets.token_hex(8)}"
        from_end = self._after is None
        config = api.ConsumerConfig(
            name=name,
            filter_subject=self._subjects,
            deliver_policy=(
                api.DeliverPolicy.NEW if from_end else api.DeliverPolicy.BY_START_SEQUENCE
            ),
            opt_start_seq=None if self._after is None else self._after + 1,
            ack_policy=api.AckPolicy.NONE,
            mem_storage=True,
            num_replicas=1,
            inactive_threshold=INACTIVE_S,
        )
        await self._client.jetstream().add_consumer(self._stream, config=config)
        feed = PullFeed(self._client, self._stream, name)
        await feed.open()
        self._feed = feed
        self.made += 1
        return feed

    async def _drop(self, error: BaseException) -> None:
        log.info(
            "ordered reader makes its consumer again",
            stream=self._stream,
            after=self._after,
            error=repr(error),
        )
        await self.close()
