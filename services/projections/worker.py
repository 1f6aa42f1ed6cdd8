"""A projection worker: read models that stand together, a handler on the shared follower
(:mod:`services.runtime.follower`), one group of models per partition the process holds.

The follower brings each partition's stream in batches (up to ``batch_size`` messages); the
worker applies a batch to every model of the partition's group in one transaction, which also
moves each model's position in that partition to the batch's last sequence; then the follower
acknowledges it. Each model skips a message at or below its own position, so a redelivery (a
crash between the commit and the acknowledgement) or a replay changes nothing, and models that
stand at different positions can share a consumer: it starts after the least of them. One
decoding of each message, one transaction and one consumer serve every model.

The transaction holds the models' position rows (:func:`services.store.positions.lock_all`) and
applies only what follows each position without a gap: a batch that does not is refused
(:class:`OutOfStep`) and the partition is opened again at the stored positions. So two processes
that hold a partition for a moment (a lease handed over, a process paused past its lease)
neither apply a message twice nor skip one, whatever each was delivered.

What goes wrong, and what the worker does:

- the database is down, locked, lost its connection or broke a deadlock: :meth:`transient`
  says so and the follower tries the batch again, with backoff and no limit. The messages are
  fine; parking them would be wrong.
- a message is not a commit, or is a commit out of order for its game: parked (by each model)
  at once, in the batch's transaction. Retrying cannot change it.
- anything else (an event that breaks a model): the batch's transaction is rolled back and its
  messages are applied one at a time and one model at a time, each tried up to
  ``RetryPolicy.attempts`` times with backoff, then parked for that model with the reason. The
  positions move on; the worker never stops for one message, and the other models take it.

Two workers share a process's partitions (:class:`~services.projections.service.Projections`
is their :class:`Crew`): the first (:data:`KIND`) follows each partition with the models that
stand together; a model behind them (a rebuild the last run did not finish, or one made while
the workers run: a rebuild raises a model's generation, seen under the position locks by each
batch and by each idle fetch) leaves for the second (:data:`REPLAY_KIND`), which replays the
partition on a consumer of its own while the first goes on; once the replay has caught up with
the stream, the first takes the model back. When every model of a group is rebuilt, the first
worker opens the partition again from the new position (0) and replays it itself. Whichever
worker replays a rebuilt model to the end of the partition's stream says the rebuild is over
there (:func:`services.store.positions.rebuilt`): until then ``/readyz`` counts the model's lag
there as the rebuild's progress.

Before it follows a partition, and again after every reconnection to NATS (the follower opens
the stream again), the worker checks, for each model, that the stream it finds is the one the
model's position there belongs to (:mod:`services.runtime.stream_identity`). A model that
refuses it leaves for the second worker; when all refuse, the partition is not followed:
nothing applied, nothing skipped, the reason in each position row for ``/readyz`` and in the log
with the command that fixes it; the follower looks again every ``idle_s``, and goes on once the
models are rebuilt (or the right stream is back). With ``auto_rebuild`` the worker rebuilds them
itself.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import nats.js.errors
import structlog
from nats.aio.client import Client

from contracts.partitions import Partitions
from contracts.wire import read_commit
from services.projections.model import Delivered, ReadModel, Refusals, Unreadable
from services.projections.parking import ParkedMessage, describe, now, park
from services.projections.rebuild import rebuild
from services.projections.registry import READ_MODELS
from services.runtime.follower import Message, Opened, Pace, Partition, end_after, purged
from services.runtime.game_archive import GameArchive
from services.runtime.game_stream import may_follow_archived
from services.runtime.stream_identity import (
    AUTO_REBUILD_VARIABLE,
    REBUILD_COMMAND,
    message_digest,
    refusal,
)
from services.store import positions
from services.store.database import Store, is_store_trouble
from services.store.metrics import LAG, PARKED, POSITION, REFUSED

log = structlog.get_logger("spades.projections")

KIND = "projections"
"""The work of the models that stand together (its consumers: ``spades-projections``)."""
REPLAY_KIND = "projections-replay"
"""The work of the models that replay a partition on their own until they have caught up."""

BATCH_SIZE = 1000
PACE = Pace(batch_size=BATCH_SIZE, idle_s=1.0, gather_s=0.005, ack_wait_s=60.0)
"""``idle_s`` is also how soon an idle worker notices a rebuild. ``gather_s``: one transaction
for what a busy stream appends in 5 ms rather than one for every message or two; ``spades bench
http`` measures what it adds to the lag (a message that comes alone is applied at once)."""

ORDER = {name: number for number, name in enumerate(READ_MODELS)}
"""Models are applied in this order in every transaction, whichever worker runs them: their
rows are then locked in one order, and concurrent batches of two partitions (PostgreSQL) do not
deadlock on the rows they share (a player's counters, a league's standings)."""
RETRYABLE_STATES = frozenset({"40P01", "40001"})
"""PostgreSQL's deadlock and serialization failures: the batch is sound, try it again."""

_position_gauge = functools.cache(POSITION.labels)
_lag_gauge = functools.cache(LAG.labels)
"""Each model's gauges, looked up once rather than at every batch."""


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
    """Every model of a group was rebuilt while it followed its partition: open it again."""


class OutOfStep(Exception):
    """A batch does not follow a model's stored position: another process applied part of it,
    or was delivered part of it. Nothing of it is applied; the partition is opened again."""


class Crew(Protocol):
    """The workers of a process, as one of them sees them (:class:`~.service.Projections`)."""

    async def detach(self, partition: int, models: Sequence[ReadModel]) -> None:
        """Follow ``partition`` with ``models`` on the replaying worker: they cannot follow it
        in step with the others of their group (behind, rebuilt, or refusing the stream)."""

    def caught_up(self, partition: int, models: Sequence[ReadModel]) -> None:
        """``models`` have replayed ``partition`` to its end: the first worker takes them."""


class Received:
    """A stream message as a worker holds it: decoded once, kept for parking; with the
    archived commits of its game that come before it when it begins an archived game's
    subject."""

    __slots__ = ("archived", "data", "delivered", "problem", "sequence", "subject")

    def __init__(self, sequence: int, subject: str, data: bytes, partitions: Partitions) -> None:
        self.sequence = sequence
        self.subject = subject
        self.data = data
        self.delivered: Delivered | None = None
        self.problem: str | None = None
        self.archived: list[Delivered] = []
        try:
            self.delivered = Delivered.read(sequence, subject, data, partitions)
        except Unreadable as error:
            self.problem = str(error)


@dataclass(slots=True)
class Group:
    """The models a worker follows one partition with, as of their last commit there."""

    models: list[ReadModel]
    joining: list[ReadModel] = field(default_factory=list)
    """Models handed over by the other worker; taken when the partition is opened again."""
    waiting: list[ReadModel] = field(default_factory=list)
    """Models the replaying worker set aside because they refuse the stream: looked at again
    whenever it opens the partition again."""
    positions: dict[str, int] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)
    refusals: dict[str, str] = field(default_factory=dict)
    """Per model, why it does not follow the stream it finds now (absent while it does)."""
    rebuilding: set[str] = field(default_factory=set)
    """The models a rebuild replays the partition for, as of the last opening: once they have
    caught up with the stream, the worker says their rebuild is over."""
    split: bool = False
    """Whether the models behind the others were sent to replay on their own (at the first
    opening of the partition)."""
    undelivered: int = 0
    """The stream's last sequence at the last idle fetch, when it was beyond the group's
    positions (0: it was not, or something came since)."""

    @property
    def names(self) -> list[str]:
        return [model.name for model in self.models]

    def take_joining(self) -> None:
        every = {*self.models, *self.joining, *self.waiting}
        self.models = sorted(every, key=lambda m: ORDER[m.name])
        self.joining, self.waiting = [], []

    @property
    def busy(self) -> bool:
        """Whether any model is in the group, on its way in, or waiting."""
        return bool(self.models or self.joining or self.waiting)

    def remove(self, models: Sequence[ReadModel]) -> None:
        for model in models:
            self.models.remove(model)
            self.positions.pop(model.name, None)
            self.generations.pop(model.name, None)
            self.rebuilding.discard(model.name)


class Worker:
    """Keeps read models up to date with the partitions of the game stream the process holds:
    a :class:`~services.runtime.follower.Handler` of kind :data:`KIND` or :data:`REPLAY_KIND`."""

    def __init__(
        self,
        kind: str,
        models: Sequence[ReadModel],
        store: Store,
        client: Client,
        partitions: Partitions,
        crew: Crew,
        *,
        retry: RetryPolicy = DEFAULT_RETRY,
        auto_rebuild: bool = False,
    ) -> None:
        self.kind = kind
        self.first = kind == KIND
        """The worker of the models that stand together; the other only replays."""
        self.models = sorted(models, key=lambda model: ORDER[model.name])
        self.store = store
        self.client = client
        self.partitions = partitions
        self.crew = crew
        self.retry = retry
        self.auto_rebuild = auto_rebuild
        """Rebuild the models from the stream, rather than wait, when they refuse the stream."""
        self.groups: dict[int, Group] = {}
        self.archive = GameArchive(client.jetstream())

    # ------------------------------------------------------------------ the crew's side

    def join(self, partition: int, models: Sequence[ReadModel]) -> None:
        """Take ``models`` into the partition's group when it is next opened."""
        group = self.groups.setdefault(partition, Group([], split=True))
        group.joining += models

    def forget(self, partition: int) -> None:
        """The process no longer holds the partition."""
        self.groups.pop(partition, None)

    def busy(self, partition: int) -> bool:
        """Whether the worker has models to follow the partition with (or to look at again)."""
        group = self.groups.get(partition)
        return group is not None and group.busy

    # ------------------------------------------------------------------ the follower's side

    async def open(self, opened: Opened) -> int | None:
        """Where the partition's group stands: the least of its positions (None: it has no
        model, or every model refuses the stream)."""
        partition = opened.partition.index
        group = self.groups.get(partition)
        if group is None and self.first:
            group = self.groups[partition] = Group(list(self.models))
        if group is None:
            return None
        group.take_joining()
        if not group.models:
            return None
        async with self.store.writing() as conn:
            starts = await positions.ensure(conn, group.names, partition)
        refused = await self._refusals(opened, starts)
        if 0 < len(refused) < len(group.models) and self.first:
            await self._leave(partition, group, [m for m in group.models if m.name in refused])
        elif 0 < len(refused) < len(group.models):
            await self._refuse(opened, group, starts, refused)
            group.waiting = [m for m in group.models if m.name in refused]
            group.remove(group.waiting)
        elif refused:
            await self._refuse(opened, group, starts, refused)
            return None
        if not group.split:
            group.split = True
            furthest = max(starts[name].position for name in group.names)
            behind = [m for m in group.models if starts[m.name].position < furthest]
            if behind:
                await self._leave(partition, group, behind)
        group.positions = {name: starts[name].position for name in group.names}
        group.generations = {name: starts[name].generation for name in group.names}
        group.rebuilding = {n for n in group.names if starts[n].rebuilding_since is not None}
        for name, position in group.positions.items():
            _position_gauge(name, str(partition)).set(position)
        after = min(group.positions.values())
        self._log(partition, group).info("worker opens the partition", after=after)
        return after

    async def apply(self, opened: Opened, batch: Sequence[Message]) -> bool:
        partition = opened.partition.index
        group = self.groups.get(partition)
        if group is None or not group.models:
            return False
        group.undelivered = 0
        received = self._received(batch)
        await self._with_archived(received)
        try:
            await self._apply(partition, group, received)
        except Rebuilt:
            self._log(partition, group).info("read models rebuilt: replaying the stream")
            return False
        except OutOfStep as error:
            self._log(partition, group).warning(
                "batch refused: opening the partition again", reason=str(error)
            )
            return False
        pending = batch[-1].msg.metadata.num_pending
        self._lag(partition, group, pending)
        if pending == 0 and group.rebuilding:
            await self._rebuilt_through(partition, group)
        return not self._regroup(partition, group, caught_up=pending == 0)

    async def idle(self, opened: Opened) -> bool:
        partition = opened.partition.index
        group = self.groups.get(partition)
        if group is None or not group.models:
            return group is not None and not group.joining
        if await self._undelivered(opened, group):
            return False
        if not group.undelivered and group.rebuilding:
            await self._rebuilt_through(partition, group)
        rebuilt = await self._rebuilt(partition, group)
        return not (rebuilt or self._regroup(partition, group, caught_up=True))

    def transient(self, error: BaseException) -> bool:
        """The database failing for now (down, locked, connection lost, a deadlock broken):
        the batch is tried again, never parked."""
        if is_store_trouble(error):
            return True
        state = getattr(getattr(error, "orig", None), "sqlstate", None)
        return state in RETRYABLE_STATES

    # ------------------------------------------------------------------ opening

    async def _refusals(
        self, opened: Opened, starts: dict[str, positions.Position]
    ) -> dict[str, str]:
        """Why each model that must not follow the stream found refuses it; those that may
        follow it, recording its identity."""
        partition = opened.partition.index
        furthest = max((start.position for start in starts.values()), default=0)
        last = await end_after(self.client.jetstream(), opened, furthest)
        digests: dict[int, str] = {}
        refused = {}
        for name, start in starts.items():
            reason = await self._refusal(opened, last, start, digests)
            if reason is None:
                await self._follow(opened, name, start)
            else:
                refused[name] = reason
        for name in starts:
            if name not in refused:
                self.groups[partition].refusals.pop(name, None)
        return refused

    async def _refusal(
        self, opened: Opened, last: int, start: positions.Position, digests: dict[int, str]
    ) -> str | None:
        """Why a model at ``start`` refuses the stream opened, whose last sequence, read after
        the positions were (:func:`~services.runtime.follower.end_after`), is ``last``."""
        found = opened.identity
        at_position = None
        if start.digest is not None and 0 < start.position <= last:
            at_position = digests.get(start.position)
            if at_position is None:
                try:
                    message = await self.client.jetstream().get_msg(
                        opened.partition.stream, start.position
                    )
                except nats.js.errors.NotFoundError:
                    # Archived since (a finished game's commit, purged once in the archive): the
                    # stream's identity and its end still vouch for the position.
                    return refusal(start.followed, found, last)
                at_position = digests[start.position] = message_digest(message.data or b"")
        return refusal(start.followed, found, last, at_position)

    async def _follow(self, opened: Opened, name: str, start: positions.Position) -> None:
        partition, found = opened.partition.index, opened.identity
        if start.stream == found and start.refusal is None:
            return
        logged = log.bind(kind=self.kind, partition=partition, model=name)
        if start.stream is None and start.position:
            logged.warning(
                "adopting the stream for positions stored before streams were recorded",
                stream=str(found),
                position=start.position,
            )
        if start.refusal is not None:
            logged.info("following the stream again", stream=str(found))
        async with self.store.writing() as conn:
            stored = await positions.lock(conn, name, partition)
            if stored.generation == start.generation:
                await positions.follow(conn, name, partition, found)
        REFUSED.labels(name, str(partition)).set(0)

    async def _refuse(
        self,
        opened: Opened,
        group: Group,
        starts: dict[str, positions.Position],
        reasons: dict[str, str],
    ) -> None:
        """Stop for ``reasons``: record them, say once what fixes them, then rebuild (with
        ``auto_rebuild``); the follower looks again after ``idle_s``."""
        partition = opened.partition.index
        for name, reason in reasons.items():
            start = starts[name]
            if start.refusal != reason:
                async with self.store.writing() as conn:
                    stored = await positions.lock(conn, name, partition)
                    if stored.generation == start.generation:
                        await positions.refuse(conn, name, partition, reason)
            REFUSED.labels(name, str(partition)).set(1)
            if group.refusals.get(name) != reason:
                group.refusals[name] = reason
                log.error(
                    f"read model refuses the game stream: run `{REBUILD_COMMAND}` to rebuild it "
                    f"(or set {AUTO_REBUILD_VARIABLE}=1 to let the workers do it)",
                    kind=self.kind,
                    partition=partition,
                    model=name,
                    reason=reason,
                    fix=REBUILD_COMMAND,
                    auto_rebuild=self.auto_rebuild,
                )
        if self.auto_rebuild:
            log.warning("rebuilding the read models from the stream (auto rebuild is on)")
            seen = {name: (partition, starts[name].generation) for name in reasons}
            await rebuild(self.store, list(reasons), self.partitions, unless_rebuilt_since=seen)

    async def _undelivered(self, opened: Opened, group: Group) -> bool:
        """Whether the consumer has delivered nothing for two idle fetches in a row while the
        stream held more than the group has applied: open the partition again (its consumer is
        made again at the stored positions).

        A consumer is told its acknowledgements by its name alone. While two processes hold a
        partition for a moment, one may acknowledge, on the consumer the other has just made
        again under the same name, messages of the consumer before it: the server then counts
        deliveries awaiting acknowledgement that none will ever acknowledge, and delivers
        nothing more until they expire (``ack_wait``)."""
        partition = opened.partition.index
        info = await self.client.jetstream().stream_info(opened.partition.stream)
        last = int(info.state.last_seq or 0)
        least = min(group.positions.values())
        self._lag(partition, group, max(0, last - least))
        stalled = group.undelivered > least
        group.undelivered = last if last > least else 0
        if stalled:
            group.undelivered = 0
            self._log(partition, group).warning(
                "the consumer delivers nothing while the stream has more: opening it again",
                position=least,
                last=last,
            )
        return stalled

    # ------------------------------------------------------------------ regrouping

    def _regroup(self, partition: int, group: Group, caught_up: bool) -> bool:
        """Whether to open the partition again with other models: some were handed over to
        this worker, or this one (the replaying worker), having ``caught_up``, hands its own
        to the first."""
        if group.joining:
            return True
        if caught_up and not self.first and group.models:
            self._log(partition, group).info("caught up: the models join the others")
            models, group.models = group.models, []
            self.crew.caught_up(partition, models)
            return True
        return False

    async def _leave(self, partition: int, group: Group, models: Sequence[ReadModel]) -> bool:
        """Send ``models`` to replay the partition on their own; True (and nothing sent) when
        they are all of the group."""
        if len(models) == len(group.models):
            return True
        group.remove(models)
        self._log(partition, group).info(
            "read models leave to replay the partition", leaving=[m.name for m in models]
        )
        await self.crew.detach(partition, models)
        return False

    async def _rebuilt(self, partition: int, group: Group) -> bool:
        """Whether every model of the group was rebuilt; those rebuilt when the others were not
        leave."""
        async with self.store.reading() as conn:
            stored = await positions.read_all(conn, group.names, partition)
        rebuilt = [
            model
            for model in group.models
            if stored[model.name].generation != group.generations[model.name]
        ]
        return bool(rebuilt) and await self._leave(partition, group, rebuilt)

    async def _rebuilt_through(self, partition: int, group: Group) -> None:
        """The group has applied the partition's stream to its end: the rebuilds it replayed
        the partition for are over there (unless another one began since)."""
        for name in sorted(group.rebuilding):
            async with self.store.writing() as conn:
                over = await positions.rebuilt(conn, name, partition, group.generations[name])
            if over:
                self._log(partition, group).info(
                    "read model rebuilt: the partition is replayed", model=name
                )
        group.rebuilding.clear()

    # ------------------------------------------------------------------ applying

    def _received(self, batch: Sequence[Message]) -> list[Received]:
        """The batch decoded, in stream order, each message once (a redelivery may repeat
        one)."""
        unique = {message.sequence: message for message in batch}
        return [
            Received(sequence, message.subject, message.data, self.partitions)
            for sequence, message in sorted(unique.items())
        ]

    async def _with_archived(self, batch: Sequence[Received]) -> None:
        """Give each message that begins an archived game's subject the game's archived commits
        before it (:mod:`services.runtime.game_archive`): a model that replays the stream
        (rebuilt, or behind when the game was archived) applies the whole game there, at the
        place of its last commit; one that applied them when they were in the stream skips them
        (their versions are its own already)."""
        for message in batch:
            delivered = message.delivered
            if delivered is None or not may_follow_archived(delivered.commit):
                continue
            archived = await self.archive.before(delivered.commit.game_id, message.sequence)
            message.archived = [
                Delivered(commit.sequence, read_commit(commit.data), commit.data)
                for commit in archived
            ]

    async def _apply(self, partition: int, group: Group, batch: Sequence[Received]) -> None:
        try:
            await self._transact(partition, group, batch, group.models)
        except (Rebuilt, OutOfStep):
            raise
        except Exception as error:
            if self.transient(error):
                raise
            if len(batch) == 1 and len(group.models) == 1:
                await self._retry_or_park(partition, group, batch[0], group.models[0], error)
                return
            self._log(partition, group).warning(
                "batch failed: applying its messages one at a time",
                first=batch[0].sequence,
                last=batch[-1].sequence,
                error=describe(error),
            )
            for message in batch:
                for model in list(group.models):
                    if model in group.models:  # it may have left meanwhile (rebuilt)
                        await self._retry_or_park(partition, group, message, model, None)

    async def _retry_or_park(
        self,
        partition: int,
        group: Group,
        message: Received,
        model: ReadModel,
        failure: Exception | None,
    ) -> None:
        """Apply one message to one model, with backoff between tries; park it for the model
        after the last try."""
        tries = 0 if failure is None else 1
        while tries < self.retry.attempts:
            if tries:
                await asyncio.sleep(self.retry.delay(tries))
            tries += 1
            try:
                await self._transact(partition, group, [message], [model])
                return
            except (Rebuilt, OutOfStep):
                raise
            except Exception as error:
                if self.transient(error):
                    raise
                failure = error
        reason = describe(failure) if failure is not None else "failed"
        await self._transact(partition, group, [message], [model], reason, tries)

    async def _transact(
        self,
        partition: int,
        group: Group,
        batch: Sequence[Received],
        models: Sequence[ReadModel],
        park_reason: str | None = None,
        tries: int = 1,
    ) -> None:
        """Apply (or park, with ``park_reason``) the messages of ``batch`` each of ``models``
        has not seen, and move those models to the batch's last sequence, in one transaction.
        Models rebuilt since this worker opened the partition are left out, and leave it."""
        last = batch[-1]
        async with self.store.applying() as conn:
            stored = await positions.lock_all(conn, [model.name for model in models], partition)
            rebuilt = [m for m in models if stored[m.name].generation != group.generations[m.name]]
            moved: list[str] = []
            parked: list[ParkedMessage] = []
            for model in models:
                if model in rebuilt:
                    continue
                fresh = await self._fresh(partition, model.name, stored[model.name].position, batch)
                if not fresh:
                    continue
                if park_reason is not None:
                    refused = {message.sequence: park_reason for message in fresh}
                else:
                    readable = [
                        delivered
                        for m in fresh
                        if m.delivered is not None
                        for delivered in (*m.archived, m.delivered)
                    ]
                    applied = await model.apply(conn, readable) if readable else {}
                    refused = _on_stream(applied, fresh)
                    refused.update({m.sequence: m.problem for m in fresh if m.problem is not None})
                parked += [
                    _parked(model, partition, m, refused[m.sequence], tries)
                    for m in fresh
                    if m.sequence in refused
                ]
                moved.append(model.name)
            for message in parked:
                await park(conn, message)
            if moved:
                digest = message_digest(last.data)
                await positions.advance(conn, moved, partition, last.sequence, digest)
        for name in moved:
            group.positions[name] = last.sequence
            _position_gauge(name, str(partition)).set(last.sequence)
        for message in parked:
            PARKED.labels(message.model).inc()
            self._log(partition, group).warning(
                "message parked",
                model=message.model,
                sequence=message.sequence,
                subject=message.subject,
                reason=message.reason,
            )
        if rebuilt and await self._leave(partition, group, rebuilt):
            raise Rebuilt(f"{', '.join(m.name for m in rebuilt)} rebuilt")

    async def _fresh(
        self, partition: int, model: str, position: int, batch: Sequence[Received]
    ) -> list[Received]:
        """The messages of ``batch`` after ``position``: exactly those the stream holds after
        it, else :class:`OutOfStep`. Where sequences skip (what archiving purged), the stream
        is asked whether it holds anything in between."""
        fresh = [message for message in batch if message.sequence > position]
        expected = position + 1
        for message in fresh:
            if message.sequence != expected and not await purged(
                self.client.jetstream(), self._partition(partition), expected, message.sequence
            ):
                raise OutOfStep(
                    f"{model} stands at {position}; the batch brings {fresh[0].sequence} to "
                    f"{fresh[-1].sequence} ({len(fresh)} messages), and the stream holds "
                    f"messages after {expected - 1} before {message.sequence}"
                )
            expected = message.sequence + 1
        return fresh

    def _partition(self, index: int) -> Partition:
        return Partition(index, self.partitions.stream(index), self.partitions.subjects(index))

    def _lag(self, partition: int, group: Group, pending: int) -> None:
        for name in group.names:
            _lag_gauge(name, str(partition)).set(pending)

    def _log(self, partition: int, group: Group) -> structlog.typing.FilteringBoundLogger:
        logger: structlog.typing.FilteringBoundLogger = log.bind(
            kind=self.kind, partition=partition, models=group.names
        )
        return logger


def _on_stream(refused: Refusals, fresh: Sequence[Received]) -> Refusals:
    """A model's refusals, each of an archived commit given to the message it came with (the
    message parked is one of the stream)."""
    carried = {d.sequence: m.sequence for m in fresh for d in m.archived}
    if not carried:
        return refused
    on_stream: Refusals = {}
    for sequence, reason in refused.items():
        on_stream.setdefault(carried.get(sequence, sequence), reason)
    return on_stream


def _parked(
    model: ReadModel, partition: int, message: Received, reason: str, tries: int
) -> ParkedMessage:
    return ParkedMessage(
        model=model.name,
        partition=partition,
        sequence=message.sequence,
        subject=message.subject,
        reason=reason,
        payload=message.data,
        attempts=tries,
        parked_at=now(),
    )
