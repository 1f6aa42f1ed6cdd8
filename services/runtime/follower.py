"""One stream follower for every worker: open a partition at the stored position, batch, check
the stream's identity, retry store trouble, acknowledge after the commit.

Projections, webhooks, the round watch and the timers all follow a stream the same way, and
differ only in what they do with a batch and where they keep their position. Each is a
:class:`Handler`; a :class:`Follower` runs one handler on one partition's stream, and the
process runs one follower per partition it holds (:class:`Following`, driven by
:mod:`.claims`).

The loop:

1. **Open.** Ask the stream for its identity and last sequence, and the handler where it stands
   (:meth:`Handler.open`): the handler checks the identity against its stored position and
   refuses a stream its position does not belong to (None: the follower waits and asks again).
   Its position, read after the stream, may lie beyond the end read: only an end read after it
   tells a rewound stream (:func:`end_after`).
   The handler's durable consumer on that stream is made to deliver from the position on,
   unless it stands exactly there.
2. **Batch.** Fetch what the stream has (up to ``batch_size``); while the stream is busy, wait
   ``gather_s`` for more, so that one commit of the handler's store covers what a busy stream
   appends meanwhile. Behind a backlog (messages after the batch are in the stream already),
   the batch is filled as fast as they come instead: the wait is for appends, not for a history
   (the round watch's quarter of a second a pull made it read 10,000 finished games in five and
   a half minutes, ``spades bench history``).
3. **Apply.** :meth:`Handler.apply` commits the batch and its position together (or skips what
   is at or below it), and opens the stream again rather than apply a batch that does not
   follow the position (:func:`after`). Store trouble (:meth:`Handler.transient`) is retried
   with backoff and no limit: the messages are fine. Anything else restarts the follower from
   the stored position.
4. **Acknowledge** the batch's last message (``AckAll``), only after the commit: a crash before
   it delivers the batch again, and the handler skips what it has.

After a reconnection to NATS, nothing the new connection delivered is applied before the stream
is opened again (it may be another stream now: a reset, a restore).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from services.runtime.consumer import Durable
from services.runtime.event_store import stream_sequence
from services.runtime.metrics import BATCHES, FOLLOWED, PENDING, RESTARTS
from services.runtime.stream_identity import StreamIdentity

log = structlog.get_logger("spades.follower")

T = TypeVar("T")

RESTART_DELAYS_S = (0.2, 1.0, 2.0, 5.0)
STREAM_WAIT_S = 0.5
CANCEL_AGAIN_S = 0.5
"""How long a stopped follower has to end before it is cancelled again (see :func:`stop`)."""


@dataclass(frozen=True, slots=True)
class Pace:
    """How a follower takes its stream."""

    batch_size: int = 1000
    idle_s: float = 1.0
    """How long a fetch waits for a message before the handler is told the stream is idle."""
    gather_s: float = 0.005
    """While the stream is busy (the last batch, or this fetch, held more than one message),
    how long a follower lets more arrive before it applies a batch: one commit of the
    handler's store for what a busy stream appends meanwhile. A message that comes alone is
    applied at once."""
    ack_wait_s: float = 30.0
    """A batch not acknowledged by then is delivered again (and skipped by the handler)."""


@dataclass(frozen=True, slots=True)
class Partition:
    """A stream a follower follows: one partition of the games, or the leagues' stream."""

    index: int
    stream: str
    subjects: str


class Message:
    """A stream message as a handler gets it."""

    __slots__ = ("data", "msg", "sequence", "subject")

    def __init__(self, msg: Msg) -> None:
        self.msg = msg
        self.sequence = stream_sequence(msg.reply)
        self.subject: str = msg.subject
        self.data: bytes = msg.data


@dataclass(frozen=True, slots=True)
class Opened:
    """The stream as the follower found it when it opened a partition."""

    partition: Partition
    identity: StreamIdentity
    last: int
    """Its last sequence then."""


async def after(
    js: JetStreamContext, partition: Partition, position: int, batch: Sequence[Message]
) -> list[Message] | None:
    """The messages of ``batch`` after ``position``, each once and in stream order, when they
    follow it without a gap; None when they do not.

    A batch that skips a sequence the stream holds after the position was delivered in part to
    another holder of the partition (two processes on its one consumer for a moment, a lease
    handed over), and applying it would move the position past messages nobody applied. The
    handler opens the stream again instead (:meth:`Handler.apply` returns False). Sequences the
    stream no longer holds (what archiving purged: :func:`purged` asks) are no gap. What is at
    or below the position, and a copy of a message taken already (delivered again), is passed
    over."""
    taken: list[Message] = []
    following = position + 1
    for message in batch:
        sequence = message.sequence
        if sequence < following:
            continue
        if sequence > following and not await purged(js, partition, following, sequence):
            return None
        taken.append(message)
        following = sequence + 1
    return taken


async def purged(js: JetStreamContext, partition: Partition, first: int, then: int) -> bool:
    """Whether a partition's stream holds no message from ``first`` up to before ``then``: they
    were purged (a finished game archived), not delivered to someone else."""
    try:
        message = await js.get_msg(partition.stream, first, subject=partition.subjects, next=True)
    except nats.js.errors.NotFoundError:
        return False
    return message.seq is not None and message.seq >= then


async def end_after(js: JetStreamContext, opened: Opened, position: int) -> int:
    """The last sequence of the stream opened to hold ``position`` against, where a handler
    read the position after the follower opened the stream: :attr:`Opened.last`, or, when the
    position lies beyond it, the stream's last sequence read now.

    A position beyond the stream's end means a rewound stream only against an end read after
    it: a former holder of the partition may have stored a position past ``opened.last`` in
    between (a lease handed over). A stream made again since keeps ``opened.last``: it is not
    the stream opened."""
    if position <= opened.last:
        return opened.last
    try:
        info = await js.stream_info(opened.partition.stream)
    except nats.js.errors.NotFoundError:
        return opened.last
    if StreamIdentity.of(info) != opened.identity:
        return opened.last
    return int(info.state.last_seq or 0)


class Handler(Protocol):
    """What a worker does with a stream (see the module's docstring)."""

    @property
    def kind(self) -> str:
        """The kind of work (metrics, logs) and its consumers' name, ``spades-<kind>``."""
        ...

    async def open(self, opened: Opened) -> int | None:
        """Where the handler stands in the stream found (it follows from the next sequence),
        or None when it must not follow it now (the reason is the handler's to record)."""
        ...

    async def apply(self, opened: Opened, batch: Sequence[Message]) -> bool:
        """Apply a batch and commit its position with it; False to open the stream again."""
        ...

    async def idle(self, opened: Opened) -> bool:
        """Nothing came for a while; False to open the stream again."""
        ...

    def transient(self, error: BaseException) -> bool:
        """Whether ``error`` is the handler's store failing for now (retried, never given up)."""
        ...


class Follower:
    """One handler on one partition's stream, until cancelled."""

    def __init__(
        self,
        client: Client,
        handler: Handler,
        partition: Partition,
        pace: Pace = Pace(),
    ) -> None:
        self.client = client
        self.handler = handler
        self.partition = partition
        self.pace = pace
        self.durable = Durable(
            partition.stream,
            f"spades-{handler.kind}",
            partition.subjects,
            f"spades {handler.kind}: follows {partition.stream} at a position it stores",
            pace.ack_wait_s,
        )
        self.position = 0
        """The last sequence committed, as far as this follower knows."""
        self.pending = 0
        self.log = log.bind(kind=handler.kind, partition=partition.index)
        self._position_gauge = FOLLOWED.labels(handler.kind, str(partition.index))
        self._pending_gauge = PENDING.labels(handler.kind, str(partition.index))
        self._batches = BATCHES.labels(handler.kind)

    async def run(self) -> None:
        failures = 0
        while True:
            try:
                await self._follow()
                failures = 0
            except asyncio.CancelledError:
                raise
            except Exception as error:
                delay = RESTART_DELAYS_S[min(failures, len(RESTART_DELAYS_S) - 1)]
                failures += 1
                RESTARTS.labels(self.handler.kind).inc()
                self.log.warning("follower restarting", error=repr(error), in_s=delay)
                await asyncio.sleep(delay)

    async def _open(self) -> Opened | None:
        js = self.client.jetstream()
        try:
            info = await js.stream_info(self.partition.stream)
        except nats.js.errors.NotFoundError:
            self.log.info("waiting for the stream (an engine makes it)")
            await asyncio.sleep(STREAM_WAIT_S)
            return None
        return Opened(self.partition, StreamIdentity.of(info), int(info.state.last_seq or 0))

    async def _follow(self) -> None:
        """Open the stream at the handler's position and follow it, until the handler or a
        reconnection asks for it to be opened again."""
        opened = await self._open()
        if opened is None:
            return
        reconnects = self.client.stats["reconnects"]
        after = await self.handler.open(opened)
        pace = self.pace
        if after is None:
            await asyncio.sleep(pace.idle_s)
            return
        self._moved(after)
        feed = await self.durable.open(self.client, after, max_ack_pending=4 * pace.batch_size)
        self.log.info("following", stream=opened.partition.stream, after=after)
        busy = False
        try:
            while True:
                try:
                    messages = await feed.fetch(pace.batch_size, pace.idle_s)
                except TimeoutError:
                    self._pending(0)
                    if self.client.stats["reconnects"] != reconnects:
                        return
                    if not await self.handler.idle(opened):
                        return
                    continue
                gather = busy or len(messages) > 1
                wanted = pace.batch_size - len(messages)
                if gather and wanted > 0 and pace.gather_s > 0:
                    if messages[-1].metadata.num_pending:  # the rest is in the stream already
                        messages += await feed.fetch_backlog(wanted, pace.gather_s)
                    else:
                        await asyncio.sleep(pace.gather_s)  # a batching window, not a wait
                        messages += await feed.fetch_now(wanted)
                busy = len(messages) > 1
                if self.client.stats["reconnects"] != reconnects:
                    return  # open the stream again before applying what the new link brought
                batch = [Message(msg) for msg in messages]
                keep_on = await self._despite_store_trouble(
                    functools.partial(self.handler.apply, opened, batch)
                )
                await messages[-1].ack()
                self._batches.inc()
                self._moved(batch[-1].sequence)
                self._pending(messages[-1].metadata.num_pending)
                if not keep_on:
                    return
        finally:
            with contextlib.suppress(Exception):
                await feed.close()

    def _moved(self, position: int) -> None:
        self.position = position
        self._position_gauge.set(position)

    def _pending(self, pending: int) -> None:
        self.pending = pending
        self._pending_gauge.set(pending)

    async def _despite_store_trouble(self, attempt: Callable[[], Awaitable[T]]) -> T:
        troubles = 0
        while True:
            try:
                return await attempt()
            except Exception as error:
                if not self.handler.transient(error):
                    raise
                delay = RESTART_DELAYS_S[min(troubles, len(RESTART_DELAYS_S) - 1)]
                troubles += 1
                self.log.warning("store unavailable", error=repr(error), in_s=delay)
                await asyncio.sleep(delay)


async def stop(task: asyncio.Task[None]) -> None:
    """Cancel a follower's task and wait for its end, cancelling it again while it runs.

    Python 3.11's ``asyncio.wait_for``, under each of nats-py's requests, returns the answer
    that arrives as the task is cancelled and drops the cancellation: a follower cancelled at
    that moment would go on following, and whoever waits for its end would wait forever."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=CANCEL_AGAIN_S)
    with contextlib.suppress(asyncio.CancelledError, nats.errors.Error):
        await task


class Following:
    """The followers of one process: one per partition it holds, started by
    :meth:`gain` and stopped by :meth:`lose` (a :class:`~services.runtime.claims.Claims`'s
    ``on_gain`` and ``on_lose``)."""

    def __init__(
        self,
        client: Client,
        handler: Handler,
        partitions: Sequence[Partition],
        pace: Pace = Pace(),
    ) -> None:
        self.client = client
        self.handler = handler
        self.partitions = list(partitions)
        self.pace = pace
        self.followers: dict[int, Follower] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}

    async def gain(self, index: int) -> None:
        follower = Follower(self.client, self.handler, self.partitions[index], self.pace)
        self.followers[index] = follower
        self._tasks[index] = asyncio.create_task(
            follower.run(), name=f"{self.handler.kind} partition {index}"
        )

    async def lose(self, index: int) -> None:
        task = self._tasks.pop(index, None)
        self.followers.pop(index, None)
        if task is not None:
            await stop(task)

    async def stop(self) -> None:
        for index in list(self._tasks):
            await self.lose(index)

    def lag(self) -> int:
        """Messages not reached yet, over the partitions held."""
        return sum(follower.pending for follower in self.followers.values())
