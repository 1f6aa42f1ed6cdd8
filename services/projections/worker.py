"""A projection worker: read models that stand together, fed by one durable JetStream consumer.

The loop fetches what the stream has (up to ``batch_size`` messages) and applies the batch to
every model of the worker in one transaction, which also moves each model's position to the
batch's last sequence; then it acknowledges the batch. Each model skips a message at or below
its own position, so a redelivery (a crash between the commit and the acknowledgement) or a
replay changes nothing, and models that stand at different positions can share a consumer: it
starts after the least of them. One decoding of each message, one transaction and one consumer
serve every model; with a consumer and a transaction per model, each message was fetched,
decoded and committed five times over, and the models queued for SQLite's one writer.

What goes wrong, and what the worker does:

- the database is down, locked or lost its connection: the batch is tried again, with backoff
  and no limit. The messages are fine; parking them would be wrong.
- a message is not a commit, or is a commit out of order for its game: parked (by each model)
  at once, in the batch's transaction. Retrying cannot change it.
- anything else (an event that breaks a model): the batch's transaction is rolled back and its
  messages are applied one at a time and one model at a time, each tried up to
  ``RetryPolicy.attempts`` times with backoff, then parked for that model with the reason. The
  positions move on; the worker never stops for one message, and the other models take it.

A rebuild (:mod:`.rebuild`) raises a model's generation. Each batch transaction checks the
generations under the position locks, and so does each idle fetch: a rebuilt model leaves the
worker (nothing more is written for it under its old generation) and replays the stream on a
worker of its own, while the others go on; once it has caught up, the first worker takes it
back (:class:`Crew`). When every model of a worker is rebuilt, the worker re-creates its
consumer from the new position (0) and replays.

Before it consumes, and again after every reconnection to NATS (before it applies anything the
new connection delivered), the worker checks, for each model, that the stream it finds is the
one the model's position belongs to (:mod:`services.runtime.stream_identity`). A model that
refuses it leaves for a worker of its own; when all refuse, the worker stops: nothing applied,
nothing skipped, the reason in each position row for ``/readyz`` and in the log with the
command that fixes it; it looks again every ``idle_s``, and goes on once the models are rebuilt
(or the right stream is back). With ``auto_rebuild`` it rebuilds them itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg

from contracts.wire import GAMES_STREAM
from services.projections.model import Delivered, ReadModel, Unreadable
from services.projections.parking import ParkedMessage, describe, now, park
from services.projections.rebuild import rebuild
from services.runtime.consumer import consumer_name, open_consumer
from services.runtime.event_store import stream_sequence
from services.runtime.stream_identity import (
    AUTO_REBUILD_VARIABLE,
    REBUILD_COMMAND,
    StreamIdentity,
    message_digest,
    refusal,
)
from services.store import positions
from services.store.database import Statements, Store, is_store_trouble
from services.store.metrics import LAG, PARKED, POSITION, REFUSED

log = structlog.get_logger("spades.projections")

T = TypeVar("T")

_position_gauge = functools.cache(POSITION.labels)
_lag_gauge = functools.cache(LAG.labels)
"""Each model's gauges, looked up once rather than at every batch."""

BATCH_SIZE = 1000
IDLE_S = 1.0
"""How long a fetch waits for new messages; also how soon an idle worker notices a rebuild."""
GATHER_S = 0.005
"""After the first messages of a batch, how long a worker lets more arrive before it applies
them: one transaction for what a busy stream appends in that time rather than one for every
message or two. It bounds what it adds to the lag; ``spades bench http`` measures both. Only
while the stream is busy (the last batch, or this fetch, held more than one message): a message
that comes alone is applied at once (at 50 actions/s the window gathered nothing more, and
added its 5 ms to every message's lag)."""


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
    """Every model of the worker was rebuilt while it ran: what it holds is stale."""


class Crew(Protocol):
    """The workers of a process, as one of them sees them (:class:`~.service.Projections`)."""

    def detach(self, models: Sequence[ReadModel]) -> None:
        """Keep ``models`` on a worker of their own: they cannot follow the stream in step
        with the others of theirs (rebuilt, or refusing the stream)."""

    def caught_up(self, worker: Worker) -> bool:
        """``worker`` has nothing left to apply: hand its models to the first worker, if it is
        another (True: ``worker`` ends)."""


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
    """Keeps read models up to date with the game stream, on one consumer."""

    def __init__(
        self,
        models: Sequence[ReadModel],
        store: Store,
        client: Client,
        crew: Crew,
        *,
        batch_size: int = BATCH_SIZE,
        idle_s: float = IDLE_S,
        retry: RetryPolicy = DEFAULT_RETRY,
        auto_rebuild: bool = False,
        gather_s: float = GATHER_S,
    ) -> None:
        self.models = list(models)
        self.joining: list[ReadModel] = []
        """Models another worker handed over; taken at this worker's next start."""
        self.crew = crew
        self.gather_s = gather_s
        self.store = store
        self.client = client
        self.batch_size = batch_size
        self.idle_s = idle_s
        self.retry = retry
        self.auto_rebuild = auto_rebuild
        """Rebuild the models from the stream, rather than wait, when they refuse the stream."""
        self.positions: dict[str, int] = {}
        """Per model, the last stream sequence applied (or parked), as of its last commit."""
        self.generations: dict[str, int] = {}
        self.refusals: dict[str, str] = {}
        """Per model, why it does not follow the stream it finds now (absent while it does)."""
        self.log = log
        self._failures = 0
        """Failed starts in a row: the backoff before the next start grows with them."""
        self._reconnects = 0
        """The connection's reconnections when the stream was last checked."""

    @property
    def names(self) -> list[str]:
        return [model.name for model in self.models]

    async def run(self) -> None:
        """Consume until cancelled, or until another worker takes the models over. Any failure
        outside a batch (NATS unreachable, the stream not created yet) restarts the consumer
        after a backoff."""
        while self.models or self.joining:
            try:
                await self._consume()
            except Exception as error:
                self._failures += 1
                delay = self.retry.delay(self._failures)
                self.log.warning("worker restarting", error=describe(error), in_s=delay)
                await asyncio.sleep(delay)

    async def _consume(self) -> None:
        """Consume from the stored positions until the models change (rebuilt, handed over or
        taken back), or the connection to NATS is made again."""
        self.models += self.joining
        self.joining = []
        self.log = log.bind(models=self.names)
        async with self.store.writing() as conn:
            starts = {name: await positions.ensure(conn, name) for name in self.names}
        self._reconnects = self._reconnections()
        refused = {
            name: reason
            for name, start in starts.items()
            if (reason := await self._refusal(name, start)) is not None
        }
        if 0 < len(refused) < len(self.models):
            self._leave([model for model in self.models if model.name in refused])
        elif refused:
            await self._refuse(starts, refused)
            return
        self.positions = {name: starts[name].position for name in self.names}
        self.generations = {name: starts[name].generation for name in self.names}
        for name, position in self.positions.items():
            _position_gauge(name).set(position)
        after = min(self.positions.values())
        label = _label(self.names)
        feed = await open_consumer(self.client, label, after, max_ack_pending=4 * self.batch_size)
        await self._drop_consumers_of_one()
        self._failures = 0
        self.log.info("worker consuming", after=after, generations=self.generations)
        busy = False  # the last batch held more than one message
        try:
            while True:
                try:
                    messages = await feed.fetch(self.batch_size, self.idle_s)
                except TimeoutError:
                    self._lag(0)
                    if self._reconnected() or await self._rebuilt() or self._regroup(True):
                        return
                    continue
                gather = busy or len(messages) > 1
                if gather and len(messages) < self.batch_size and self.gather_s > 0:
                    await asyncio.sleep(self.gather_s)  # a batching window, not a wait for one
                    messages += await feed.fetch_now(self.batch_size - len(messages))
                busy = len(messages) > 1
                if self._reconnected():
                    return  # check the stream before applying what the new connection brought
                try:
                    await self._apply([Message(msg) for msg in messages])
                except Rebuilt:
                    self.log.info("read models rebuilt: replaying the stream")
                    return
                await messages[-1].ack()
                pending = messages[-1].metadata.num_pending
                self._lag(pending)
                if self._regroup(pending == 0):
                    return
        finally:
            with contextlib.suppress(Exception):
                await feed.close()
                if _label(self.names + [model.name for model in self.joining]) != label:
                    await self.client.jetstream().delete_consumer(
                        GAMES_STREAM, consumer_name(label)
                    )

    async def _drop_consumers_of_one(self) -> None:
        """Delete the consumers named after one of this worker's models alone, if it has more:
        what a worker of that model left (from before the models shared a consumer, or one
        that caught up and ended without deleting its own) would sit on the server unused."""
        if len(self.models) < 2:
            return
        js = self.client.jetstream()
        for name in self.names:
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await js.delete_consumer(GAMES_STREAM, consumer_name(name))

    def _lag(self, pending: int) -> None:
        for name in self.names:
            _lag_gauge(name).set(pending)

    def _regroup(self, caught_up: bool) -> bool:
        """Whether to start again with other models: some were handed over to this worker, or
        this one, having ``caught_up``, hands its own to the first."""
        if self.joining:
            return True
        if caught_up and self.crew.caught_up(self):
            self.log.info("caught up: the first worker takes the models over")
            self.models = []
            return True
        return False

    def _leave(self, models: Sequence[ReadModel]) -> bool:
        """Send ``models`` to a worker of their own; True (and nothing sent) when they are all
        of this worker's."""
        if len(models) == len(self.models):
            return True
        for model in models:
            self.models.remove(model)
        self.log.info(
            "read models leave for a worker of their own", leaving=[m.name for m in models]
        )
        self.log = log.bind(models=self.names)
        self.crew.detach(models)
        return False

    def _reconnections(self) -> int:
        return int(self.client.stats["reconnects"])

    def _reconnected(self) -> bool:
        if self._reconnections() == self._reconnects:
            return False
        self.log.info("reconnected to NATS: checking the stream again")
        return True

    async def _refusal(self, name: str, start: positions.Position) -> str | None:
        """Why the model ``name`` must not follow the game stream as it is now (None when it
        may); follow it, recording its identity, when it may."""
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
            await self._follow(name, start, found)
        return reason

    async def _follow(self, name: str, start: positions.Position, found: StreamIdentity) -> None:
        if start.stream == found and start.refusal is None:
            return
        if start.stream is None and start.position:
            self.log.warning(
                "adopting the stream for positions stored before streams were recorded",
                model=name,
                stream=str(found),
                position=start.position,
            )
        if start.refusal is not None:
            self.log.info("following the stream again", model=name, stream=str(found))
        await self._record(name, start, partial(positions.follow, model=name, stream=found))
        self.refusals.pop(name, None)
        REFUSED.labels(name).set(0)

    async def _refuse(self, starts: dict[str, positions.Position], reasons: dict[str, str]) -> None:
        """Stop for ``reasons``: record them, say once what fixes them, then rebuild (with
        ``auto_rebuild``) or wait ``idle_s`` before looking again."""
        for name, reason in reasons.items():
            start = starts[name]
            if start.refusal != reason:
                await self._record(
                    name, start, partial(positions.refuse, model=name, reason=reason)
                )
            REFUSED.labels(name).set(1)
            if self.refusals.get(name) != reason:
                self.refusals[name] = reason
                self.log.error(
                    f"read model refuses the game stream: run `{REBUILD_COMMAND}` to rebuild it "
                    f"(or set {AUTO_REBUILD_VARIABLE}=1 to let the workers do it)",
                    model=name,
                    reason=reason,
                    fix=REBUILD_COMMAND,
                    auto_rebuild=self.auto_rebuild,
                )
        if self.auto_rebuild:
            self.log.warning("rebuilding the read models from the stream (auto rebuild is on)")
            await rebuild(self.store, list(reasons))
            return
        await asyncio.sleep(self.idle_s)

    async def _record(
        self,
        name: str,
        start: positions.Position,
        change: Callable[[Statements], Awaitable[None]],
    ) -> None:
        """Make ``change`` to the model's position row, unless it was rebuilt since ``start``."""
        async with self.store.writing() as conn:
            stored = await positions.lock(conn, name)
            if stored.generation == start.generation:
                await change(conn)

    async def _rebuilt(self) -> bool:
        """Whether every model was rebuilt; those rebuilt when the others were not leave."""
        async with self.store.reading() as conn:
            stored = await positions.all_positions(conn)
        rebuilt = [
            model
            for model in self.models
            if stored[model.name].generation != self.generations[model.name]
        ]
        return bool(rebuilt) and self._leave(rebuilt)

    async def _apply(self, batch: Sequence[Message]) -> None:
        try:
            await self._despite_store_trouble(lambda: self._transact(batch, self.models))
        except Rebuilt:
            raise
        except Exception as error:
            if len(batch) == 1 and len(self.models) == 1:
                await self._retry_or_park(batch[0], self.models[0], error)
                return
            self.log.warning(
                "batch failed: applying its messages one at a time",
                first=batch[0].sequence,
                last=batch[-1].sequence,
                error=describe(error),
            )
            for message in batch:
                for model in list(self.models):
                    await self._retry_or_park(message, model, None)

    async def _retry_or_park(
        self, message: Message, model: ReadModel, failure: Exception | None
    ) -> None:
        """Apply one message to one model, with backoff between tries; park it for the model
        after the last try."""
        tries = 0 if failure is None else 1
        while tries < self.retry.attempts:
            if tries:
                await asyncio.sleep(self.retry.delay(tries))
            tries += 1
            try:
                await self._despite_store_trouble(lambda: self._transact([message], [model]))
                return
            except Rebuilt:
                raise
            except Exception as error:
                failure = error
        reason = describe(failure) if failure is not None else "failed"
        await self._despite_store_trouble(lambda: self._transact([message], [model], reason, tries))

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
        self,
        batch: Sequence[Message],
        models: Sequence[ReadModel],
        park_reason: str | None = None,
        tries: int = 1,
    ) -> None:
        """Apply (or park, with ``park_reason``) the messages of ``batch`` each of ``models``
        has not seen, and move those models to the batch's last sequence, in one transaction.
        Models rebuilt since this worker started them are left out, and leave it."""
        last = batch[-1]
        async with self.store.applying() as conn:
            stored = await positions.lock_all(conn, [model.name for model in models])
            rebuilt = [m for m in models if stored[m.name].generation != self.generations[m.name]]
            moved: list[str] = []
            parked: list[ParkedMessage] = []
            for model in models:
                if model in rebuilt:
                    continue
                fresh = [m for m in batch if m.sequence > stored[model.name].position]
                if not fresh:
                    continue
                if park_reason is not None:
                    refused = {message.sequence: park_reason for message in fresh}
                else:
                    readable = [m.delivered for m in fresh if m.delivered is not None]
                    refused = await model.apply(conn, readable) if readable else {}
                    refused.update({m.sequence: m.problem for m in fresh if m.problem is not None})
                parked += [
                    self._parked(model, m, refused[m.sequence], tries)
                    for m in fresh
                    if m.sequence in refused
                ]
                moved.append(model.name)
            for message in parked:
                await park(conn, message)
            if moved:
                await positions.advance(conn, moved, last.sequence, message_digest(last.data))
        for name in moved:
            self.positions[name] = last.sequence
            _position_gauge(name).set(last.sequence)
        for message in parked:
            PARKED.labels(message.model).inc()
            self.log.warning(
                "message parked",
                model=message.model,
                sequence=message.sequence,
                subject=message.subject,
                reason=message.reason,
            )
        if rebuilt and self._leave(rebuilt):
            raise Rebuilt(f"{', '.join(m.name for m in rebuilt)} rebuilt")

    def _parked(self, model: ReadModel, message: Message, reason: str, tries: int) -> ParkedMessage:
        return ParkedMessage(
            model=model.name,
            sequence=message.sequence,
            subject=message.subject,
            reason=reason,
            payload=message.data,
            attempts=tries,
            parked_at=now(),
        )


def _label(names: Sequence[str]) -> str:
    """What a worker's consumer is named after: its models, in a fixed order."""
    return "-".join(sorted(names))
