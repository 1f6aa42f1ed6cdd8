"""The timer worker: fires each turn's timeout through the engine when the seat's clock runs
out, for the partitions of the game stream it holds.

:class:`Timers` is a :class:`~services.runtime.follower.Handler` (kind ``timers``): the process
runs one follower per partition it holds (:mod:`services.runtime.claims` decides which), and
each partition's clocks are its own (:class:`~services.timers.clocks.Clocks`), kept by a
:class:`Timekeeper` that sleeps until their earliest deadline and sends what is due
(:mod:`services.timers.timeouts`). Losing a partition forgets its clocks.

Start-up never replays history. Each partition's checkpoint (:mod:`services.runtime.checkpoints`,
one per partition stream, fenced) holds a position and the running clocked games at it, each by
the sequence of its last commit; a new holder reads those games' histories (to their end),
folds them, fires what is due at once, and follows the stream from the position: the cost is
the clocks running, not the games ever played. The checkpoint is written at most every
:data:`CHECKPOINT_EVERY_S` while the stream moves, and when it goes quiet, so a new holder
re-reads about a second of the stream. A stream the checkpoint does not belong to (the first
start, a reset, a restore) is surveyed instead (:mod:`services.timers.survey`: the last commit
of each game tells which have not ended) and followed from its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence

import msgspec
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client

from services.runtime.checkpoints import Checkpoint, Checkpoints, Fenced
from services.runtime.engine_client import EngineClient
from services.runtime.follower import Message, Opened, Pace, after, end_after
from services.runtime.game_stream import GameStream
from services.timers.clocks import Clocks, Entry, RunningClocks
from services.timers.metrics import CLOCKS, OVERDUE
from services.timers.survey import clocked, unended_games
from services.timers.timeouts import Timeouts

log = structlog.get_logger("spades.timers")

KIND = "timers"
PACE = Pace()
"""The default batching window (5 ms, only while the stream is busy): a seat away from the table
is due at once when its turn comes, so a commit learnt late is a timeout sent late (a 50 ms
window cut a third of the worker's CPU per timeout in ``spades bench timers`` and put its p99
lateness from about 10 to about 100 ms)."""
CHECKPOINT_EVERY_S = 1.0
IN_FLIGHT = 256
"""Timeouts sent at once by a process (an overdue backlog after a fail-over goes out this many
at a time)."""
RESUMING_AT_ONCE = 32
"""Games read at once when a partition's clocks are resumed from its checkpoint."""
CHECKPOINT_MARGIN_BYTES = 4096
"""Room left in a NATS message for a checkpoint's envelope around its running clocks."""

_encode = msgspec.json.Encoder().encode
_running = msgspec.json.Decoder(RunningClocks).decode


class Timekeeper:
    """One partition's clocks, and the task that fires their timeouts when due."""

    def __init__(
        self,
        partition: int,
        clocks: Clocks,
        timeouts: Timeouts,
        slots: asyncio.Semaphore,
        now: Callable[[], float],
    ) -> None:
        self.partition = partition
        self.clocks = clocks
        self.applied = 0
        """The last sequence learnt."""
        self.seen_after = 0
        """Timeouts in commits up to this sequence were counted before (by whoever held the
        partition then)."""
        self.written = 0
        self.written_at = float("-inf")
        self._timeouts = timeouts
        self._slots = slots
        self._now = now
        self._wake = asyncio.Event()
        self._firing: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._firing = asyncio.create_task(
            self._fire_due(), name=f"timers partition {self.partition}"
        )

    async def stop(self) -> None:
        """Stop firing (timeouts in flight are abandoned: their turn's next holder sends
        them again, under the same command ids)."""
        tasks = [*self._sends, *([self._firing] if self._firing is not None else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def learn(self, batch: Sequence[Message]) -> None:
        """Take a batch of the partition's commits (those learnt already are passed over)."""
        clocks = self.clocks
        earliest = clocks.earliest()
        for message in batch:
            sequence = message.sequence
            if sequence <= self.applied:
                continue
            subject = message.subject
            game_id = subject[subject.rfind(".") + 1 :]
            clocks.learn(game_id, sequence, message.data, seen=sequence > self.seen_after)
            self.applied = sequence
        sooner = clocks.earliest()
        if sooner is not None and (earliest is None or sooner < earliest):
            self._wake.set()

    async def _fire_due(self) -> None:
        """Sleep until the earliest deadline, fire what is due, forever."""
        clocks = self.clocks
        while True:
            self._wake.clear()
            now = self._now()
            while (entry := clocks.next_due(now)) is not None:
                await self._slots.acquire()
                task = asyncio.create_task(self._fire(entry))
                self._sends.add(task)
                task.add_done_callback(self._sent)
            earliest = clocks.earliest()
            if earliest is None:
                await self._wake.wait()
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, earliest - self._now()))

    async def _fire(self, entry: Entry) -> None:
        deadline, game_id, seat, version = entry
        turn = (game_id, seat, version)
        try:
            await self._timeouts.send(
                game_id, seat, version, deadline, lambda: self.clocks.current(turn)
            )
        except Exception as error:
            log.warning("timeout not sent", game_id=game_id, seat=seat, error=repr(error))
        finally:
            self.clocks.answered(turn)

    def _sent(self, task: asyncio.Task[None]) -> None:
        """A send is over, however (a task cancelled before it ran has run no ``finally``)."""
        self._sends.discard(task)
        self._slots.release()


class Timers:
    """The timer worker's handler: a :class:`Timekeeper` per partition followed."""

    kind = KIND

    def __init__(
        self,
        client: Client,
        stream: GameStream,
        checkpoints: Checkpoints,
        *,
        now: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
        engine_timeout_s: float = 5.0,
    ) -> None:
        self._client = client
        self._stream = stream
        self._checkpoints = checkpoints
        self._now = now
        self._clock = clock
        self.timeouts = Timeouts(EngineClient(client, engine_timeout_s, stream.partitions), now)
        self._slots = asyncio.Semaphore(IN_FLIGHT)
        self.keepers: dict[int, Timekeeper] = {}
        """By partition: those followed now."""
        self.opened = asyncio.Event()
        """Set whenever a partition's clocks are opened (for whoever waits on it)."""

    @property
    def clocks(self) -> int:
        """Running clocked games held, over the partitions followed."""
        return sum(len(keeper.clocks) for keeper in self.keepers.values())

    def overdue(self) -> int:
        """Timeouts due and not answered yet, over the partitions followed."""
        now = self._now()
        return sum(keeper.clocks.overdue(now) for keeper in self.keepers.values())

    async def until(self, done: Callable[[Timers], bool]) -> None:
        """Return once ``done(self)`` holds, checked after each answer or timeout seen."""
        activity = self.timeouts.activity
        while not done(self):
            activity.clear()
            await activity.wait()

    # ----------------------------------------------------------------------- a Handler

    async def open(self, opened: Opened) -> int | None:
        """Hold the partition's running clocks again and follow on, firing what is due at
        once: the games its checkpoint names, from its position; for a stream the checkpoint
        does not belong to, the games a survey finds, from the stream's end."""
        index, stream = opened.partition.index, opened.partition.stream
        await self.forget(index)  # opened again: what was held may be behind the checkpoint
        checkpoint = await self._checkpoints.read(stream)
        keeper = Timekeeper(
            index, Clocks(self.timeouts.seen), self.timeouts, self._slots, self._now
        )
        last = await end_after(self._client.jetstream(), opened, checkpoint.position)
        running = self._resumable(checkpoint, opened, last)
        began = self._clock()
        if running is None:
            position = opened.last
            games = await unended_games(self._client.jetstream(), opened.partition)
            await self._hold(keeper.clocks, games, index, only_clocked=True)
        else:
            position = checkpoint.position
            games = list(running.games)
            await self._hold(keeper.clocks, games, index, only_clocked=False)
        keeper.applied = keeper.seen_after = position
        keeper.written = position if running is not None else 0
        keeper.written_at = self._clock()
        self.keepers[index] = keeper
        keeper.start()
        CLOCKS.set(self.clocks)
        self.opened.set()
        log.info(
            "partition's clocks opened",
            partition=index,
            position=position,
            last=opened.last,
            resumed=running is not None,
            read=len(games),
            clocks=len(keeper.clocks),
            took_ms=round((self._clock() - began) * 1000, 1),
        )
        return position

    async def apply(self, opened: Opened, batch: Sequence[Message]) -> bool:
        """Learn the batch's commits after the position; False, to open the stream again, when
        it does not follow the position (another timer holding the partition for a moment was
        delivered what comes between: its clocks would be missed, and checkpointed so)."""
        keeper = self.keepers[opened.partition.index]
        fresh = await after(self._client.jetstream(), opened.partition, keeper.applied, batch)
        if fresh is None:
            log.warning(
                "timers: a batch that does not follow the position: opening the stream again",
                partition=opened.partition.index,
                position=keeper.applied,
                first=batch[0].sequence,
                last=batch[-1].sequence,
            )
            return False
        keeper.learn(fresh)
        if self._clock() - keeper.written_at >= CHECKPOINT_EVERY_S:
            await self._checkpoint(opened, keeper)
        return True

    async def idle(self, opened: Opened) -> bool:
        """The stream is quiet: checkpoint what was learnt."""
        keeper = self.keepers[opened.partition.index]
        if keeper.applied > keeper.written:
            await self._checkpoint(opened, keeper)
        return True

    def transient(self, error: BaseException) -> bool:
        return isinstance(error, nats.errors.Error | nats.js.errors.Error) and not isinstance(
            error, Fenced
        )

    # ----------------------------------------------------------------------- partitions

    async def forget(self, partition: int) -> None:
        """Stop keeping a partition's clocks (it is lost, or opened again)."""
        keeper = self.keepers.pop(partition, None)
        if keeper is not None:
            await keeper.stop()
            CLOCKS.set(self.clocks)

    async def stop(self) -> None:
        for partition in list(self.keepers):
            await self.forget(partition)

    async def gauge(self, every_s: float = 1.0) -> None:
        """Keep the clocks and overdue gauges current, until cancelled."""
        while True:
            CLOCKS.set(self.clocks)
            OVERDUE.set(self.overdue())
            await asyncio.sleep(every_s)

    # ----------------------------------------------------------------------- checkpoints

    def _resumable(self, checkpoint: Checkpoint, opened: Opened, last: int) -> RunningClocks | None:
        """The running clocks of the checkpoint, if it is this stream's and stands in it (up to
        ``last``, its end read after the checkpoint was); None: survey the stream."""
        stream = opened.partition.stream
        if not checkpoint.belongs_to(opened.identity):
            if checkpoint.stream:
                log.warning(
                    "the timers' checkpoint is of another stream: surveying this one",
                    stream=stream,
                    checkpoint=f"{checkpoint.stream} made {checkpoint.stream_created}",
                    found=str(opened.identity),
                )
            return None
        if checkpoint.position > last:
            log.warning(
                "the timers' checkpoint is past the stream's end: surveying it",
                stream=stream,
                position=checkpoint.position,
                last=last,
            )
            return None
        try:
            return _running(checkpoint.state)
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            log.warning("the timers' checkpoint cannot be read", stream=stream, error=str(error))
            return None

    async def _hold(
        self, clocks: Clocks, games: Sequence[str], partition: int, *, only_clocked: bool
    ) -> None:
        """Hold the running clocked games among ``games``, each read to its last commit now
        (not only to a checkpoint's: what is due is fired at once, and a turn that has moved on
        since would only be refused); ``only_clocked``: a game's first commit is read first,
        and its history only if it has a clock. The follower then passes over the commits of
        these games already read."""
        layout = self._stream.partitions
        gate = asyncio.Semaphore(RESUMING_AT_ONCE)

        async def one(game_id: str) -> None:
            if layout.of(game_id) != partition:
                log.warning("game of another partition", game_id=game_id, partition=partition)
                return
            async with gate:
                if only_clocked:
                    first = await self._stream.read(game_id, limit=1)
                    if not first or not clocked(first[0]):
                        return
                history = await self._stream.read(game_id)
            if not history:
                log.warning("game to hold not in the stream", game_id=game_id)
                return
            clocks.resume(game_id, ((stored.sequence, stored.commit) for stored in history))

        reads = [asyncio.create_task(one(game_id)) for game_id in games]
        try:
            await asyncio.gather(*reads)
        finally:
            for read in reads:
                read.cancel()

    async def _checkpoint(self, opened: Opened, keeper: Timekeeper) -> None:
        """Write the partition's position and running clocks (fenced: :class:`Fenced` when
        another member wrote since this one opened the partition)."""
        state = _encode(keeper.clocks.running())
        position = keeper.applied
        if len(state) > self._client.max_payload - CHECKPOINT_MARGIN_BYTES:
            # Too many clocks for one message: the last checkpoint stays, a new holder reads on
            # from it (more of the stream, nothing lost).
            log.warning(
                "running clocks too many to checkpoint",
                partition=opened.partition.index,
                clocks=len(keeper.clocks),
                state_bytes=len(state),
            )
            keeper.written_at = self._clock()
            return
        identity = opened.identity
        await self._checkpoints.write(
            Checkpoint(
                position=position,
                stream=identity.name,
                stream_created=identity.created,
                state=msgspec.Raw(state),
            )
        )
        keeper.written, keeper.written_at = position, self._clock()
