"""The engine process: a FastStream application whose subscriptions answer commands.

The engines share the game stream's partitions (:mod:`services.runtime.claims`): an engine
answers the commands of the partitions it holds, on their subjects
(``spades.commands.*`` with one partition, ``spades.part.<p>.commands.*`` with several), so a
game's commands reach the one engine that holds its partition and finds the game current in
memory, and no engine follows the commits of another. When an engine ends, its partitions'
commands find no responder until another engine takes them over (a few seconds): meanwhile they
go to ``spades.engines.*``, which every engine answers in one queue group, reading the game from the
stream (:mod:`services.runtime.engine_client`). Every append is optimistic, so whichever engine
answers, a game's history stays one line.

A timer's timeouts come on subjects of their own, the same way (``spades.timeouts.*``,
``spades.part.<p>.timeouts.*``, ``spades.engines.timeouts.*``): the timers' broker user may send
there and nowhere else, and the engine answers a timeout there alone and nothing else there
(:meth:`services.engine.engine.Engine.misrouted`), so a timers process can fire a timeout and
no more, and the gateway cannot fire one.

League commands go to the queue group ``engine`` on ``spades.league-commands.*``: they are few. A
league's commands are decided by the same process as games' because scheduling a round reads the
games of the round before, from the same game cache. The streams are created (or checked) at
start-up from their one definition each (:mod:`services.runtime.game_stream`,
:mod:`services.runtime.league_stream`). Each engine also runs the round watch of the partitions
it holds (:mod:`services.engine.round_watch`): a league round is recorded over as soon as its
last game ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import nats.errors
import nats.js.errors
import structlog
from faststream import FastStream
from faststream.nats import NatsBroker
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from contracts.partitions import (
    ANY_ENGINE_SUBJECTS,
    ANY_ENGINE_TIMEOUT_SUBJECTS,
    ONE,
    Partitions,
)
from contracts.wire import (
    LEAGUE_COMMAND_SUBJECTS,
    LEAGUE_SUBJECTS,
    LEAGUES_STREAM,
    MAX_COMMAND_BYTES,
    MAX_LEAGUE_COMMAND_BYTES,
)
from services.engine.budget import CommandBudget
from services.engine.engine import Engine
from services.engine.handler import Lane
from services.engine.league_engine import LeagueEngine
from services.engine.round_watch import KIND as ROUND_WATCH
from services.engine.round_watch import PACE as ROUND_WATCH_PACE
from services.engine.round_watch import RoundWatch
from services.runtime.broker_users import inbox_prefix
from services.runtime.checkpoints import Checkpoints
from services.runtime.claims import Claims
from services.runtime.credentials import faststream_security
from services.runtime.follower import Following
from services.runtime.game_archive import archive_stream_config
from services.runtime.game_stream import GameStream, ensure_partitions, game_partitions
from services.runtime.leaders import EVERY_S as LEADERS_EVERY_S
from services.runtime.leaders import spread
from services.runtime.league_stream import LeagueStream, leagues_stream_config
from services.runtime.loop import freeze_started_heap
from services.runtime.nats import ensure_stream, servers_of
from services.runtime.replies import publish
from services.runtime.tail import Tail

log = structlog.get_logger("spades.engine")

COMMAND_WORKERS = 256
"""Commands in hand at once in one process (commands of one game still go one at a time)."""


@dataclass(frozen=True)
class Channel:
    """A subject the engines answer requests on, as the AsyncAPI document shows it."""

    handler: str
    subjects: str
    pending_bytes: int
    """What NATS may hold for the subscription before it drops (the slow consumer limit)."""
    title: str
    description: str


GAMES_PENDING_BYTES = MAX_COMMAND_BYTES * COMMAND_WORKERS * 4

CHANNELS = (
    Channel(
        "games",
        "spades.commands.*",
        GAMES_PENDING_BYTES,
        "spades.commands.{game_id}",
        "A command for one game (CommandRequest JSON); the reply is a CommandReply. With K > 1 "
        "partitions, spades.part.{partition}.commands.{game_id}; when no engine serves the "
        "partition, spades.engines.{game_id}.",
    ),
    Channel(
        "leagues",
        LEAGUE_COMMAND_SUBJECTS,
        MAX_LEAGUE_COMMAND_BYTES * 64,
        "spades.league-commands.{league_id}",
        "A command for one league (LeagueCommandRequest JSON); the reply is a LeagueCommandReply.",
    ),
    Channel(
        "timeouts",
        "spades.timeouts.*",
        GAMES_PENDING_BYTES,
        "spades.timeouts.{game_id}",
        "A timer's timeout for one game (CommandRequest JSON whose body is time_out, and nothing "
        "else); the reply is a CommandReply. With K > 1 partitions, "
        "spades.part.{partition}.timeouts.{game_id}; when no engine serves the partition, "
        "spades.engines.timeouts.{game_id}.",
    ),
)


async def ensure_streams(
    js: JetStreamContext, replicas: int = 1, partitions: Partitions = ONE
) -> None:
    """Create the game partitions' streams, the league stream and the archive of finished
    games from their definitions, or bring them in line."""
    await ensure_partitions(js, partitions, replicas)
    await ensure_stream(js, leagues_stream_config(replicas))
    await ensure_stream(js, archive_stream_config(replicas))


async def follow_when_contested(
    handler: Engine | LeagueEngine, follower: Tail, connection: Client
) -> None:
    """Follow the league stream from the first conflict on: another engine appends to it too. A
    lone engine's copies are current without it (every commit is its own), and following every
    commit cost it a tenth to a fifth of its CPU a command (``spades bench commands``); with
    several, the first conflicts read the stream, and the follower spares the rest."""
    await handler.contested.wait()
    await follower.start(connection)


async def drained(subscription: Subscription) -> None:
    """Stop a subscription's commands coming, answering those it has received already: nats-py's
    ``unsubscribe`` drops what waits in the subscription's queue, and each of those requests
    would go unanswered until its sender gave up (a hand-over of a partition lost a few under
    load, ``spades bench partitions``)."""
    with contextlib.suppress(nats.errors.Error):
        await subscription.drain()  # type: ignore[no-untyped-call]  # nats-py leaves it untyped


class Partitioned:
    """The engine's side of its partitions: what it starts when it gains one and stops when it
    loses one (a :class:`~services.runtime.claims.Claims`'s work)."""

    def __init__(
        self,
        connection: Client,
        partitions: Partitions,
        engine: Engine,
        watching: Following,
        dispatch: Callable[[Lane], Callable[[Msg], Awaitable[None]]],
        queue: str,
    ) -> None:
        self.connection = connection
        self.partitions = partitions
        self.engine = engine
        self.watching = watching
        self.dispatch = dispatch
        """The callback answering the requests of one lane (commands, timeouts)."""
        self.queue = queue
        self.subscriptions: dict[int, list[Subscription]] = {}
        self._spreading: asyncio.Task[None] | None = None

    async def gain(self, partition: int) -> None:
        """Answer the partition's commands and timeouts, from games read afresh (another
        engine served them until now), and watch its rounds. The holder of partition 0 also
        keeps the partitions' leaders spread over the cluster's nodes."""
        layout = self.partitions
        self.engine.games.forget_where(lambda game_id: layout.of(game_id) == partition)
        lanes: tuple[tuple[str, Lane], ...] = (
            (layout.command_subjects(partition), "commands"),
            (layout.timeout_subjects(partition), "timeouts"),
        )
        self.subscriptions[partition] = [
            await self.connection.subscribe(
                subjects,
                queue=self.queue,
                cb=self.dispatch(lane),
                pending_bytes_limit=GAMES_PENDING_BYTES,
            )
            for subjects, lane in lanes
        ]
        await self.watching.gain(partition)
        if partition == 0 and not layout.legacy:
            self._spreading = asyncio.create_task(self._spread(), name="spread leaders")

    async def _spread(self) -> None:
        js = self.connection.jetstream()
        while True:
            with contextlib.suppress(nats.errors.Error, nats.js.errors.Error, TimeoutError):
                await spread(js, self.partitions)
            await asyncio.sleep(LEADERS_EVERY_S)

    async def lose(self, partition: int) -> None:
        """Stop answering the partition's commands (those in hand are answered) and watching
        its rounds."""
        for subscription in self.subscriptions.pop(partition, []):
            await drained(subscription)
        await self.watching.lose(partition)
        if partition == 0 and self._spreading is not None:
            self._spreading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._spreading
            self._spreading = None


def build_engine_app(
    nats_url: str,
    *,
    queue: str = "engine",
    replicas: int = 1,
    credentials: Path | None = None,
    partitions: Partitions = ONE,
    commands_per_minute: int | None = None,
    board_key: bytes | None = None,
) -> FastStream:
    """The engine as a FastStream application (``spades serve engine`` runs it).

    ``commands_per_minute``: each platform's budget of commands on this engine
    (:mod:`services.engine.budget`); None: none. ``board_key``: the stack's secret key, which
    duplicate events' boards are derived from (:mod:`services.engine.boards`).

    Each command goes to a task of its own at once, so commands of different games are
    decided and appended concurrently (up to ``COMMAND_WORKERS`` at a time; past that the
    subscription waits, which holds back NATS delivery). Each task replies on the request's
    reply subject when its commit is acknowledged.

    FastStream runs the application (connection, start-up, shutdown) and declares the command
    channels for the AsyncAPI document, but the subscriptions themselves are nats-py's with a
    callback: the handler reads the raw bytes itself (so that a message that is not a command
    gets a ``malformed`` reply), and FastStream's delivery (a message object, its context and
    middlewares per message) cost about as much as deciding the command (``spades bench
    commands``); its ``max_workers`` pool several times more.

    It connects as the broker user ``engine`` with ``credentials`` (its seed or ``.creds``
    file), which may answer the requests it receives and append to the streams.
    """
    broker = NatsBroker(
        servers_of(nats_url),
        name="spades-engine",
        security=faststream_security(credentials),
        inbox_prefix=inbox_prefix("engine"),
        max_reconnect_attempts=-1,
        reconnect_time_wait=1,
        logger=logging.getLogger("spades.faststream"),  # rendered by the structlog processors
    )
    for channel in CHANNELS:  # no handler: FastStream documents them, it does not subscribe
        broker.subscriber(
            channel.subjects,
            queue=queue,
            title=channel.title,
            description=channel.description,
        )
    handlers: dict[str, Engine | LeagueEngine] = {}
    slots = asyncio.Semaphore(COMMAND_WORKERS)
    running: set[asyncio.Task[None]] = set()
    subscriptions: list[Subscription] = []
    tails: list[Tail] = []
    background: list[asyncio.Task[None]] = []
    watches: list[RoundWatch] = []
    served: list[Partitioned] = []
    claimed: list[Claims] = []

    async def answer(
        handler: Engine | LeagueEngine, body: bytes, reply_to: str, lane: Lane | None
    ) -> None:
        try:
            reply = await handler.handle(body, lane)
            if reply_to:
                await publish(broker.connection, reply_to, reply)
        finally:
            slots.release()

    def dispatcher(
        handler: Engine | LeagueEngine, lane: Lane | None = None
    ) -> Callable[[Msg], Awaitable[None]]:
        """The callback of a subscription: a task per request, answered as ``lane``'s."""

        async def dispatch(message: Msg) -> None:
            await slots.acquire()
            task = asyncio.create_task(answer(handler, message.data, message.reply, lane))
            running.add(task)
            task.add_done_callback(running.discard)

        return dispatch

    app = FastStream(broker, logger=None)

    @app.on_startup
    async def connect_store() -> None:
        await broker.connect()
        js = broker.config.connection_state.stream
        await ensure_streams(js, replicas, partitions)
        budget = None if commands_per_minute is None else CommandBudget(commands_per_minute)
        engine = Engine(GameStream(js, partitions), budget=budget, board_key=board_key)
        leagues = LeagueStream(js)
        league_engine = LeagueEngine(leagues, engine.games, board_key=engine.board_key)
        handlers.update(games=engine, leagues=league_engine)
        tail = Tail([(LEAGUES_STREAM, LEAGUE_SUBJECTS)], league_engine.leagues)
        tails.append(tail)
        background.append(
            asyncio.create_task(follow_when_contested(league_engine, tail, broker.connection))
        )
        watch = RoundWatch(league_engine, Checkpoints(js, ROUND_WATCH, replicas))
        engine.ended = watch.ended
        watches.append(watch)
        watching = Following(
            broker.connection, watch, game_partitions(partitions), ROUND_WATCH_PACE
        )
        served.append(
            Partitioned(
                broker.connection,
                partitions,
                engine,
                watching,
                lambda lane: dispatcher(engine, lane),
                queue,
            )
        )

    @app.after_startup
    async def subscribe() -> None:
        js = broker.config.connection_state.stream
        league_channel = CHANNELS[1]
        lanes: tuple[tuple[str, Engine | LeagueEngine, Lane | None, int], ...] = (
            (ANY_ENGINE_SUBJECTS, handlers["games"], "commands", GAMES_PENDING_BYTES),
            (ANY_ENGINE_TIMEOUT_SUBJECTS, handlers["games"], "timeouts", GAMES_PENDING_BYTES),
            (league_channel.subjects, handlers["leagues"], None, league_channel.pending_bytes),
        )
        for subjects, handler, lane, pending in lanes:
            subscription = await broker.connection.subscribe(
                subjects, queue=queue, cb=dispatcher(handler, lane), pending_bytes_limit=pending
            )
            subscriptions.append(subscription)
        side = served[0]
        claims = Claims(js, "engine", partitions.count, side.gain, side.lose, replicas=replicas)
        claimed.append(claims)
        background.append(asyncio.create_task(claims.run(), name="engine claims"))
        freeze_started_heap()
        log.info("engine ready", queue=queue, partitions=partitions.count, member=claims.member)

    @app.on_shutdown
    async def finish_commands() -> None:
        for subscription in subscriptions:  # no new command; those in hand are answered
            await drained(subscription)
        for task in background:  # the claims give their partitions up as they stop
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for watch in watches:
            await watch.stop()
        if running:
            await asyncio.wait(running, timeout=10)
        for tail in tails:
            await tail.stop()

    return app
