"""The engine process: a FastStream application whose queue-group subscriptions answer commands.

Every engine process joins the queue group ``engine`` on ``spades.commands.*`` (games) and on
``spades.league-commands.*`` (leagues), so NATS gives each command to one of them; more
processes, more throughput. A league's commands are decided by the same process as games'
because scheduling a round reads the games of the round before, from the same game cache. The
streams are created (or checked) at start-up from their one definition each
(:mod:`services.runtime.game_stream`, :mod:`services.runtime.league_stream`). Each process also
runs its share of the round watch (:mod:`services.engine.round_watch`): a league round is
recorded over as soon as its last game ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import nats.errors
import structlog
from faststream import FastStream
from faststream.nats import NatsBroker
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from contracts.wire import (
    COMMAND_SUBJECTS,
    LEAGUE_COMMAND_SUBJECTS,
    MAX_COMMAND_BYTES,
    MAX_LEAGUE_COMMAND_BYTES,
)
from services.engine.engine import Engine
from services.engine.league_engine import LeagueEngine
from services.engine.round_watch import RoundWatch
from services.runtime.broker_users import inbox_prefix
from services.runtime.credentials import faststream_security
from services.runtime.follower import Follower
from services.runtime.game_stream import GameStream, games_stream_config
from services.runtime.league_stream import LeagueStream, leagues_stream_config
from services.runtime.loop import freeze_started_heap
from services.runtime.nats import ensure_stream, servers_of
from services.runtime.replies import publish

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


CHANNELS = (
    Channel(
        "games",
        COMMAND_SUBJECTS,
        MAX_COMMAND_BYTES * COMMAND_WORKERS * 4,
        "spades.commands.{game_id}",
        "A command for one game (CommandRequest JSON); the reply is a CommandReply.",
    ),
    Channel(
        "leagues",
        LEAGUE_COMMAND_SUBJECTS,
        MAX_LEAGUE_COMMAND_BYTES * 64,
        "spades.league-commands.{league_id}",
        "A command for one league (LeagueCommandRequest JSON); the reply is a LeagueCommandReply.",
    ),
)


async def ensure_streams(js: JetStreamContext, replicas: int = 1) -> None:
    """Create the game and league streams from their definitions, or bring them in line."""
    await ensure_stream(js, games_stream_config(replicas))
    await ensure_stream(js, leagues_stream_config(replicas))


async def follow_when_contested(
    handler: Engine | LeagueEngine, follower: Follower, js: JetStreamContext
) -> None:
    """Follow a stream from the first conflict on: another engine appends to it too. A lone
    engine's copies are current without it (every commit is its own), and following every
    commit cost it a tenth to a fifth of its CPU a command (``spades bench commands``); with
    several, the first conflicts read the stream, and the follower spares the rest."""
    await handler.contested.wait()
    await follower.start(js)


def build_engine_app(
    nats_url: str, *, queue: str = "engine", replicas: int = 1, credentials: Path | None = None
) -> FastStream:
    """The engine as a FastStream application (``spades serve engine`` runs it).

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
    followers: list[Follower] = []
    contests: list[asyncio.Task[None]] = []
    watches: list[RoundWatch] = []

    async def answer(handler: Engine | LeagueEngine, body: bytes, reply_to: str) -> None:
        try:
            reply = await handler.handle(body)
            if reply_to:
                await publish(broker.connection, reply_to, reply)
        finally:
            slots.release()

    def dispatcher(handler: Engine | LeagueEngine) -> Callable[[Msg], Awaitable[None]]:
        async def dispatch(message: Msg) -> None:
            await slots.acquire()
            task = asyncio.create_task(answer(handler, message.data, message.reply))
            running.add(task)
            task.add_done_callback(running.discard)

        return dispatch

    app = FastStream(broker, logger=None)

    @app.on_startup
    async def connect_store() -> None:
        await broker.connect()
        js = broker.config.connection_state.stream
        await ensure_streams(js, replicas)
        games = GameStream(js)
        engine = Engine(games)
        leagues = LeagueStream(js)
        league_engine = LeagueEngine(leagues, engine.games)
        handlers.update(games=engine, leagues=league_engine)
        for handler, follower in (
            (engine, Follower(games, engine.games)),
            (league_engine, Follower(leagues, league_engine.leagues)),
        ):
            followers.append(follower)
            contests.append(asyncio.create_task(follow_when_contested(handler, follower, js)))
        watch = RoundWatch(broker.connection, league_engine)
        engine.ended = watch.ended
        await watch.start()
        watches.append(watch)

    @app.after_startup
    async def subscribe() -> None:
        for channel in CHANNELS:
            subscription = await broker.connection.subscribe(
                channel.subjects,
                queue=queue,
                cb=dispatcher(handlers[channel.handler]),
                pending_bytes_limit=channel.pending_bytes,
            )
            subscriptions.append(subscription)
        freeze_started_heap()
        log.info("engine ready", queue=queue)  # said once the subscriptions are in the group

    @app.on_shutdown
    async def finish_commands() -> None:
        for subscription in subscriptions:  # no new command; those in hand are answered
            with contextlib.suppress(nats.errors.Error):
                await subscription.unsubscribe()
        for watch in watches:
            await watch.stop()
        if running:
            await asyncio.wait(running, timeout=10)
        for contest in contests:
            contest.cancel()
        for follower in followers:
            await follower.stop()

    return app
