"""A projection worker: one read model, fed by its own durable JetStream consumer.

The loop fetches what the stream has (up to ``batch_size`` messages), applies the batch in one
transaction that also moves the model's position to the batch's last sequence, then
acknowledges the batch. A message at or below the stored position is skipped, so a redelivery
(a crash between the commit and the acknowledgement) or a replay changes nothing.

What goes wrong, and what the worker does:

- the database is down, locked or lost its connection: the batch is tried again, with backoff
  and no limit. The messages are fine; parking them would be wrong.
- a message is not a commit, or is a commit out of order for its game: parked at once, in the
  batch's transaction. Retrying cannot change it.
- anything else (an event that breaks the model): the batch's transaction is rolled back and its
  messages are applied one at a time, each tried up to ``RetryPolicy.attempts`` times with
  backoff, then parked with the reason. The position moves on; the worker never stops for one
  message.

A rebuild (:mod:`.rebuild`) raises the model's generation. Each batch transaction checks it
under the position lock, and so does each idle fetch: on a change the worker drops what it has,
re-creates its consumer from the new position (0) and replays.

Before it consumes, and again after every reconnection to NATS (before it applies anything the
new connection delivered), the worker checks that the stream it finds is the one its position
belongs to (:mod:`services.runtime.stream_identity`). If it is not, the worker stops: nothing
applied, nothing skipped, the reason in the position row for ``/readyz`` and in the log with the
command that fixes it; it looks again every ``idle_s``, and goes on once the model is rebuilt
(or the right stream is back). With ``auto_rebuild`` it rebuilds its model itself.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from sqlalchemy.ext.asyncio import AsyncConnection

from contracts.wire import GAMES_STREAM
from services.projections.model import Delivered, ReadModel, Unreadable
from services.projections.parking import ParkedMessage, describe, now, park
from services.projections.rebuild import rebuild
from services.runtime.consumer import open_consumer
from services.runtime.event_store import stream_sequence
from services.runtime.stream_identity import (
    AUTO_REBUILD_VARIABLE,
    REBUILD_COMMAND,
    StreamIdentity,
    message_digest,
    refusal,
)
from services.store import positions
from services.store.database import Store, is_store_trouble
from services.store.metrics import LAG, PARKED, POSITION, REFUSED

log = structlog.get_logger("spades.projections")

T = TypeVar("T")

BATCH_SIZE = 1000
IDLE_S = 1.0
"""How long a fetch waits for new messages; also how soon an idle worker notices a rebuild."""
GATHER_S = 0.02
"""After the first messages of a batch, how long a worker lets more arrive before it applies
them: one transaction for what a busy stream appends in that time rather than one for every
message or two. It bounds what it adds to the lag; ``spades bench http`` measures both."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 4
    """Tries of a failing message before it is parked."""
    first_delay_s: float = 0.05
    factor: float = 4.0
    max_delay_s: float = 10.0

    def delay(self, attempt: int) -> float:
        """The wait after the ``attempt``-th failure (1-based)."""
        return min(self.max_delay_s, self.first_delay_s * self.factor ** (attempt - 1))


DEFAULT_RETRY = RetryPolicy()


class Rebuilt(Exception):
    """The model was rebuilt while this worker ran: what it holds is stale."""


class Message:
    """A stream message as the worker holds it: decoded once, kept for parking."""

    __slots__ = ("data", "delivered", "problem", "sequence", "subject")

    def __init__(self, msg: Msg) -> None:
        self.sequence = stream_sequence(msg.reply)
        self.subject: str = msg.subject
        self.data: bytes = msg.data
        self.delivered: Delivered | None = None
        self.problem: str | None = None
        try:
            self.delivered = Delivered.read(self.sequence, self.subject, self.data)
        except Unreadable as error:
            self.problem = str(error)


class Worker:
    """Keeps one read model up to date with the game stream."""

    def __init__(
        self,
        model: ReadModel,
        store: Store,
        client: Client,
        *,
        batch_size: int = BATCH_SIZE,
        idle_s: float = IDLE_S,
        retry: RetryPolicy = DEFAULT_RETRY,
        auto_rebuild: bool = False,
        gather_s: float = GATHER_S,
    ) -> None:
        self.model = model
        self.gather_s = gather_s
        self.store = store
        self.client = client
        self.batch_size = batch_size
        self.idle_s = idle_s
        self.retry = retry
        self.auto_rebuild = auto_rebuild
        """Rebuild the model from the stream, rather than wait, when it refuses the stream."""
        self.position = 0
        """The last stream sequence applied (or parked), as of this worker's last commit."""
        self.generation = 0
        self.refusal: str | None = None
        """Why the worker does not follow the stream it finds now (None while it does)."""
        self.log = log.bind(model=model.name)
        self._failures = 0
        """Failed starts in a row: the backoff before the next start grows with them."""
        self._reconnects = 0
        """The connection's reconnections when the stream was last checked."""

    async def run(self) -> None:
        """Consume until cancelled. Any failure outside a batch (NATS unreachable, the stream
        not created yet) restarts the consumer after a backoff."""
        while True:
            try:
                await self._consume()
            except Exception as error:
                self._failures += 1
                delay = self.retry.delay(self._failures)
                self.log.warning("worker restarting", error=describe(error), in_s=delay)
                await asyncio.sleep(delay)

    async def _consume(self) -> None:
        """Consume from the stored position until the model is rebuilt, or the connection to
        NATS is made again."""
        async with self.store.writing() as conn:
            start = await positions.ensure(conn, self.model.name)
        self._reconnects = self._reconnections()
        while (reason := await self._refusal(start)) is not None:
            await self._refuse(start, reason)
            async with self.store.reading() as conn:
                start = await positions.read(conn, self.model.name)
        self.position, self.generation = start.position, start.generation
        POSITION.labels(self.model.name).set(self.position)
        feed = await open_consumer(
            self.client, self.model.name, self.position, max_ack_pending=4 * self.batch_size
        )
        self._failures = 0
        self.log.info("worker consuming", after=self.position, generation=self.generation)
        try:
            while True:
                try:
                    messages = await feed.fetch(self.batch_size, self.idle_s)
                except TimeoutError:
                    LAG.labels(self.model.name).set(0)
                    if self._reconnected() or await self._rebuilt():
                        return
                    continue
                if len(messages) < self.batch_size and self.gather_s > 0:
                    await asyncio.sleep(self.gather_s)  # a batching window, not a wait for one
                    messages += await feed.fetch_now(self.batch_size - len(messages))
                if self._reconnected():
                    return  # check the stream before applying what the new connection brought
                try:
                    await self._apply([Message(msg) for msg in messages])
                except Rebuilt:
                    self.log.info("read model rebuilt: replaying the stream")
                    return
                await messages[-1].ack()
                LAG.labels(self.model.name).set(messages[-1].metadata.num_pending)
        finally:
            with contextlib.suppress(Exception):
                await feed.close()

    def _reconnections(self) -> int:
        return int(self.client.stats["reconnects"])

    def _reconnected(self) -> bool:
        if self._reconnections() == self._reconnects:
            return False
        self.log.info("reconnected to NATS: checking the stream again")
        return True

    async def _refusal(self, start: positions.Position) -> str | None:
        """Why the model must not follow the game stream as it is now (None when it may);
        follow it, recording its identity, when it may."""
        js = self.client.jetstream()
        info = await js.stream_info(GAMES_STREAM)
        found = StreamIdentity.of(info)
        last = int(info.state.last_seq or 0)
        at_position = None
        if start.digest is not None and 0 < start.position <= last:
            try:
                message = await js.get_msg(GAMES_STREAM, start.position)
            except nats.js.errors.NotFoundError:
                return f"the message at position {start.position} is gone from {found.name}"
            at_position = message_digest(message.data or b"")
        reason = refusal(start.followed, found, last, at_position)
        if reason is None:
            await self._follow(start, found)
        return reason

    async def _follow(self, start: positions.Position, found: StreamIdentity) -> None:
        if start.stream == found and start.refusal is None:
            return
        if start.stream is None and start.position:
            self.log.warning(
                "adopting the stream for positions stored before streams were recorded",
                stream=str(found),
                position=start.position,
            )
        if start.refusal is not None:
            self.log.info("following the stream again", stream=str(found))
        await self._record(start, lambda conn: positions.follow(conn, self.model.name, found))
        self.refusal = None
        REFUSED.labels(self.model.name).set(0)

    async def _refuse(self, start: positions.Position, reason: str) -> None:
        """Stop for ``reason``: record it, say once what fixes it, then rebuild (with
        ``auto_rebuild``) or wait ``idle_s`` before looking again."""
        if start.refusal != reason:
            await self._record(start, lambda conn: positions.refuse(conn, self.model.name, reason))
        REFUSED.labels(self.model.name).set(1)
        if self.refusal != reason:
            self.refusal = reason
            self.log.error(
                f"read model refuses the game stream: run `{REBUILD_COMMAND}` to rebuild it "
                f"(or set {AUTO_REBUILD_VARIABLE}=1 to let the workers do it)",
                reason=reason,
                fix=REBUILD_COMMAND,
                auto_rebuild=self.auto_rebuild,
            )
        if self.auto_rebuild:
            self.log.warning("rebuilding the read model from the stream (auto rebuild is on)")
            await rebuild(self.store, [self.model.name])
            return
        await asyncio.sleep(self.idle_s)

    async def _record(
        self, start: positions.Position, change: Callable[[AsyncConnection], Awaitable[None]]
    ) -> None:
        """Make ``change`` to the position row, unless the model was rebuilt since ``start``."""
        async with self.store.writing() as conn:
            stored = await positions.lock(conn, self.model.name)
            if stored.generation == start.generation:
                await change(conn)

    async def _rebuilt(self) -> bool:
        async with self.store.reading() as conn:
            stored = await positions.read(conn, self.model.name)
        return stored.generation != self.generation

    async def _apply(self, batch: Sequence[Message]) -> None:
        try:
            await self._despite_store_trouble(lambda: self._transact(batch))
        except Rebuilt:
            raise
        except Exception as error:
            if len(batch) == 1:
                await self._retry_or_park(batch[0], error)
                return
            self.log.warning(
                "batch failed: applying its messages one at a time",
                first=batch[0].sequence,
                last=batch[-1].sequence,
                error=describe(error),
            )
            for message in batch:
                await self._retry_or_park(message, None)

    async def _retry_or_park(self, message: Message, failure: Exception | None) -> None:
        """Apply one message, with backoff between tries; park it after the last try."""
        tries = 0 if failure is None else 1
        while tries < self.retry.attempts:
            if tries:
                await asyncio.sleep(self.retry.delay(tries))
            tries += 1
            try:
                await self._despite_store_trouble(lambda: self._transact([message]))
                return
            except Rebuilt:
                raise
            except Exception as error:
                failure = error
        reason = describe(failure) if failure is not None else "failed"
        await self._despite_store_trouble(lambda: self._transact([message], reason, tries))

    async def _despite_store_trouble(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run ``attempt`` until the database lets it finish; other errors go to the caller."""
        troubles = 0
        while True:
            try:
                return await attempt()
            except Exception as error:
                if not is_store_trouble(error):
                    raise
                troubles += 1
                delay = self.retry.delay(troubles)
                self.log.warning(
                    "read-model database unavailable", error=describe(error), in_s=delay
                )
                await asyncio.sleep(delay)

    async def _transact(
        self, batch: Sequence[Message], park_reason: str | None = None, tries: int = 1
    ) -> None:
        """Apply (or park, with ``park_reason``) the unseen messages of ``batch`` and move the
        position to the last of them, in one transaction."""
        name = self.model.name
        async with self.store.writing() as conn:
            stored = await positions.lock(conn, name)
            if stored.generation != self.generation:
                raise Rebuilt(f"generation {stored.generation}, worker at {self.generation}")
            fresh = [message for message in batch if message.sequence > stored.position]
            if not fresh:
                return
            if park_reason is not None:
                refused = {message.sequence: park_reason for message in fresh}
            else:
                readable = [m.delivered for m in fresh if m.delivered is not None]
                refused = await self.model.apply(conn, readable) if readable else {}
                refused.update({m.sequence: m.problem for m in fresh if m.problem is not None})
            parked = [
                self._parked(m, refused[m.sequence], tries) for m in fresh if m.sequence in refused
            ]
            for message in parked:
                await park(conn, message)
            await positions.advance(conn, name, fresh[-1].sequence, message_digest(fresh[-1].data))
        self.position = fresh[-1].sequence
        POSITION.labels(name).set(self.position)
        for message in parked:
            PARKED.labels(name).inc()
            self.log.warning(
                "message parked",
                sequence=message.sequence,
                subject=message.subject,
                reason=message.reason,
            )

    def _parked(self, message: Message, reason: str, tries: int) -> ParkedMessage:
        return ParkedMessage(
            model=self.model.name,
            sequence=message.sequence,
            subject=message.subject,
            reason=reason,
            payload=message.data,
            attempts=tries,
            parked_at=now(),
        )
