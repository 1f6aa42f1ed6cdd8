"""The round watch: a league round is recorded as over as soon as its last table's game ends.

The engine that commits a table's end asks at once, in its own process (:meth:`RoundWatch.ended`),
and the watch makes sure of it: each engine follows the partitions it serves
(:mod:`services.runtime.follower`), so each commit reaches one engine's watch, and the watch's
position in each partition is kept in the checkpoint bucket (:mod:`services.runtime.checkpoints`):
a crash or a fail-over loses no game's end, the new holder reads from the checkpoint on. Only a
league's table games matter (their ids say so, :func:`table_of`), and of those only a commit that
ends the game: anything else is passed over unread. The checkpoint is written at most every
:data:`CHECKPOINT_EVERY_S` (and when the stream goes quiet): ends found again after a crash were
dealt with already and change nothing. Within a holder's hold, each commit is dealt with once: a
batch delivered again is passed over, and one that does not follow the position (another engine
holding the partition for a moment was delivered what comes between) opens the stream again.

For a table's end the watch asks the league engine, in its own process, to finish the table's
round (:class:`~contracts.wire.FinishRoundRequest`, under the command id ``round-end-<game>``).
The league engine reads every game of the round from the games' histories, never from the
commit in hand: the round is recorded over (``round_completed``, with ``league_finished`` after
the last planned round) when the last of them has ended, and the ends that come before it change
nothing. Two engines handling two tables' ends at once are kept apart by the league's
optimistic concurrency, and a command id answered before gets its first answer.

A commit the watch cannot read is passed over and logged with the reason (it cannot be read the
next time either); a league command the event store did not answer is tried again, with
backoff, before the batch is acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Sequence

import msgspec
import nats.errors
import nats.js.errors
import structlog

from contracts.wire import FinishRoundRequest, LeagueCommandRequest, read_commit
from domain.events import GameEnded
from domain.league import table_of
from services.engine.league_engine import LeagueEngine
from services.runtime.checkpoints import Checkpoint, Checkpoints, Fenced
from services.runtime.follower import Message, Opened, Pace, after, end_after

log = structlog.get_logger("spades.engine")

KIND = "round-watch"
PACE = Pace(batch_size=256, gather_s=0.25)
"""Under load the commits gather on the server for a quarter of a second and come in one pull:
the watch wakes once a pull, not once a commit (``spades bench commands``)."""
CHECKPOINT_EVERY_S = 1.0
RETRY_DELAYS_S = (0.1, 0.5, 1.0, 2.0, 5.0)
"""Between tries of a league command the event store did not answer (the last one repeats)."""
_ENDED = b'"game_ended"'

_encoder = msgspec.json.Encoder()


def finish_request(game_id: str, data: bytes) -> LeagueCommandRequest | None:
    """The league command a game commit calls for: finishing the round of the table it ends;
    None for a commit of any other game, or one that does not end its game. Raises
    ``msgspec`` errors for a table's commit that cannot be read."""
    if _ENDED not in data:  # the cheapest test first: most commits do not end a game
        return None
    if table_of(game_id) is None:
        return None
    commit = read_commit(data)
    if not any(isinstance(event, GameEnded) for event in commit.events):
        return None
    return round_end(game_id)


def round_end(game_id: str) -> LeagueCommandRequest | None:
    """The league command a game's end calls for: finishing the round of the table it is;
    None for a game that is no league's table."""
    place = table_of(game_id)
    if place is None:
        return None
    return LeagueCommandRequest(
        command_id=f"round-end-{game_id}",
        league_id=place.league_id,
        body=FinishRoundRequest(round=place.round),
    )


class RoundWatch:
    """One engine's share of the round watch: a :class:`~services.runtime.follower.Handler`."""

    kind = KIND

    def __init__(
        self,
        leagues: LeagueEngine,
        checkpoints: Checkpoints,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._leagues = leagues
        self._checkpoints = checkpoints
        self._clock = clock
        self._finishing: set[asyncio.Task[None]] = set()
        self._written: dict[str, tuple[int, float]] = {}
        """Per stream, the position last checkpointed and when."""
        self._applied: dict[str, int] = {}
        """Per stream, the last sequence dealt with."""
        self.finished_rounds = 0
        """Rounds this watch recorded as over."""

    def ended(self, game_id: str) -> None:
        """A game this engine ended: a table's round is finished now, in this process, without
        waiting for the commit to come round through the follower (which deals with it again:
        the round's end is recorded once, and a crash before this is done loses nothing)."""
        request = round_end(game_id)
        if request is None:
            return
        task = asyncio.create_task(self._finish(game_id, request))
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)

    async def stop(self) -> None:
        for task in list(self._finishing):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def open(self, opened: Opened) -> int | None:
        """The checkpoint's position in this stream; 0 (every end again: they change nothing)
        for a stream it does not belong to, or one whose end comes before it."""
        checkpoint = await self._checkpoints.read(opened.partition.stream)
        position = checkpoint.position if checkpoint.belongs_to(opened.identity) else 0
        if position > await end_after(self._checkpoints.js, opened, position):
            position = 0
        self._written[opened.partition.stream] = (position, self._clock())
        self._applied[opened.partition.stream] = position
        return position

    async def apply(self, opened: Opened, batch: Sequence[Message]) -> bool:
        """Ask for the rounds the batch's ends may end, for the commits after the position
        only (a batch delivered again, or tried again after store trouble, asks for none
        twice); False, to open the stream again, when the batch does not follow the position
        (another engine holding the partition for a moment was delivered what comes between)."""
        stream = opened.partition.stream
        fresh = await after(self._checkpoints.js, opened.partition, self._applied[stream], batch)
        if fresh is None:
            log.warning(
                "round watch: a batch that does not follow the position: opening the stream again",
                stream=stream,
                position=self._applied[stream],
                first=batch[0].sequence,
                last=batch[-1].sequence,
            )
            return False
        for message in fresh:
            game_id = message.subject.rpartition(".")[2]
            try:
                request = finish_request(game_id, message.data)
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                log.warning("round watch cannot read a commit", game_id=game_id, error=str(error))
                request = None
            if request is not None:
                await self._finish(game_id, request)
                self._applied[stream] = message.sequence  # dealt with, should the rest fail
        if fresh:
            self._applied[stream] = fresh[-1].sequence
        last = self._applied[stream]
        _, at = self._written.get(stream, (0, 0.0))
        if self._clock() - at >= CHECKPOINT_EVERY_S:
            await self._checkpoint(opened, last)
        return True

    async def idle(self, opened: Opened) -> bool:
        """The stream is quiet: checkpoint what was dealt with."""
        stream = opened.partition.stream
        applied = self._applied.get(stream, 0)
        if applied > self._written.get(stream, (0, 0.0))[0]:
            await self._checkpoint(opened, applied)
        return True

    def transient(self, error: BaseException) -> bool:
        return isinstance(error, nats.errors.Error | nats.js.errors.Error) and not isinstance(
            error, Fenced
        )

    async def _checkpoint(self, opened: Opened, position: int) -> None:
        identity = opened.identity
        await self._checkpoints.write(
            Checkpoint(position=position, stream=identity.name, stream_created=identity.created)
        )
        self._written[opened.partition.stream] = (position, self._clock())

    async def _finish(self, game_id: str, request: LeagueCommandRequest) -> None:
        """Ask the league engine to finish the round a table's end may end."""
        data = _encoder.encode(request)
        for attempt in itertools.count():
            reply = await self._leagues.answer(data)
            if reply.ok or reply.code != "unavailable":
                break
            await asyncio.sleep(RETRY_DELAYS_S[min(attempt, len(RETRY_DELAYS_S) - 1)])
        if not reply.ok:
            log.warning("round not finished", game_id=game_id, code=reply.code, detail=reply.detail)
        elif reply.events:
            self.finished_rounds += 1
            log.info("round finished", league_id=request.league_id, game_id=game_id)
