"""The round watch: a league round is recorded as over as soon as its last table's game ends.

Every engine process runs one. The engine that commits a table's end asks at once, in its own
process (:meth:`RoundWatch.ended`), and the watches make sure of it: they share one durable pull
consumer of the game stream (``spades-league-rounds``), so each commit reaches one of them, and
each one acknowledges a commit only once it has been dealt with: a crash or a restart loses no
game's end, it is delivered again. Only a league's table games matter (their ids say so,
:func:`table_of`), and of those only a commit that ends the game: anything else is acknowledged
unread. Since the committing engine has asked already, the consumer is pulled in batches, with
a pause between them (:meth:`RoundWatch._follow`): it costs the engines and the server less a
commit, and an end it finds late that was dealt with already changes nothing.

For a table's end the watch asks the league engine, in its own process, to finish the table's
round (:class:`~contracts.wire.FinishRoundRequest`, under the command id ``round-end-<game>``).
The league engine reads every game of the round from the games' histories, never from the
commit in hand: the round is recorded over (``round_completed``, with ``league_finished`` after
the last planned round) when the last of them has ended, and the ends that come before it change
nothing. Two engines handling two tables' ends at once are kept apart by the league's
optimistic concurrency, and a command id answered before gets its first answer.

A commit the watch cannot read is acknowledged and logged with the reason (it cannot be read the
next time either); a league command the event store did not answer is tried again, with
backoff, before the commit is acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools

import msgspec
import nats.errors
import nats.js.errors
import structlog
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import api

from contracts.wire import (
    GAME_SUBJECTS,
    GAMES_STREAM,
    ROUND_WATCH_CONSUMER,
    FinishRoundRequest,
    LeagueCommandRequest,
    read_commit,
)
from domain.events import GameEnded
from domain.league import table_of
from services.engine.league_engine import LeagueEngine
from services.runtime.consumer import PullFeed

log = structlog.get_logger("spades.engine")

CONSUMER = ROUND_WATCH_CONSUMER
BATCH = 256
IDLE_S = 1.0
PAUSE_S = 0.25
"""Between pulls that found fewer than ``BATCH`` commits (see :meth:`RoundWatch._follow`)."""
ACK_WAIT_S = 60.0
RETRY_DELAYS_S = (0.1, 0.5, 1.0, 2.0, 5.0)
"""Between tries of a league command the event store did not answer (the last one repeats)."""
_ENDED = b'"game_ended"'

_encoder = msgspec.json.Encoder()


def consumer_config() -> api.ConsumerConfig:
    """Every commit of the game stream from its start (a table that ended before the watch
    first ran still finishes its round), each acknowledged on its own: several engines pull
    from the one consumer, so no acknowledgement may cover another's commits."""
    return api.ConsumerConfig(
        name=CONSUMER,
        durable_name=CONSUMER,
        description="the engines' round watch: a league round ends with its last game",
        deliver_policy=api.DeliverPolicy.ALL,
        ack_policy=api.AckPolicy.EXPLICIT,
        ack_wait=ACK_WAIT_S,
        max_deliver=-1,
        max_ack_pending=BATCH * 8,
        filter_subject=GAME_SUBJECTS,
    )


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
    """One engine's share of the round watch."""

    def __init__(self, client: Client, leagues: LeagueEngine) -> None:
        self._client = client
        self._leagues = leagues
        self._task: asyncio.Task[None] | None = None
        self._finishing: set[asyncio.Task[None]] = set()
        self.finished_rounds = 0
        """Rounds this watch recorded as over."""

    def ended(self, game_id: str) -> None:
        """A game this engine ended: a table's round is finished now, in this process, without
        waiting for the commit to come round through the consumer (which deals with it again:
        the round's end is recorded once, and a crash before this is done loses nothing)."""
        request = round_end(game_id)
        if request is None:
            return
        task = asyncio.create_task(self._finish(game_id, request))
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="round-watch")

    async def stop(self) -> None:
        for task in list(self._finishing):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the stream, the consumer or NATS: start again
                delay = RETRY_DELAYS_S[min(failures, len(RETRY_DELAYS_S) - 1)]
                failures += 1
                log.warning("round watch restarts", error=repr(error), delay_s=delay)
                await asyncio.sleep(delay)

    async def _follow(self) -> None:
        """Pull what the stream has, deal with it, pause; when it has nothing, wait for the
        next commit and deal with it at once.

        Under load the commits gather on the server during the pause and come in one pull,
        their acknowledgements go back in one write, and the watch wakes once a pull, not once
        a commit (a pull kept open delivered each commit on its own as the stream got it):
        ``spades bench commands``. An end no engine asked for (one committed while none ran,
        or whose engine stopped before it asked) waits at most the pause."""
        feed = await self._open()
        waiting = False
        try:
            while True:
                if waiting:
                    try:
                        messages = await feed.fetch(1, IDLE_S)
                    except TimeoutError:
                        continue
                else:
                    messages = await feed.fetch_now(BATCH)
                    if not messages:
                        waiting = True
                        continue
                waiting = False
                await self._deal_with(feed, messages)
                if len(messages) < BATCH:
                    await asyncio.sleep(PAUSE_S)
        finally:
            with contextlib.suppress(nats.errors.Error):
                await feed.close()

    async def _open(self) -> PullFeed:
        js = self._client.jetstream()
        try:
            await js.consumer_info(GAMES_STREAM, CONSUMER)
        except nats.js.errors.NotFoundError:
            with contextlib.suppress(nats.js.errors.BadRequestError):  # another engine's
                await js.add_consumer(GAMES_STREAM, config=consumer_config())
        feed = PullFeed(self._client, GAMES_STREAM, CONSUMER)
        await feed.open()
        return feed

    async def _deal_with(self, feed: PullFeed, messages: list[Msg]) -> None:
        """Deal with each commit, then acknowledge it; those dealt with are acknowledged before
        the watch waits on a league command."""
        done: list[Msg] = []
        for msg in messages:
            game_id = msg.subject.rpartition(".")[2]
            try:
                request = finish_request(game_id, msg.data)
            except (msgspec.DecodeError, msgspec.ValidationError) as error:
                log.warning("round watch cannot read a commit", game_id=game_id, error=str(error))
                request = None
            if request is not None:
                await feed.acknowledge(done)
                done = []
                await self._finish(game_id, request)
            done.append(msg)
        await feed.acknowledge(done)

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
