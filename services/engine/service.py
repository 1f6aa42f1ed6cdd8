"""The engine process: FastStream NATS subscribers in a queue group, answering commands.

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
import logging
from pathlib import Path
from typing import Any

import structlog
from faststream import FastStream
from faststream.message import StreamMessage
from faststream.nats import NatsBroker
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
from services.runtime.nats import ensure_stream, servers_of

log = structlog.get_logger("spades.engine")

COMMAND_WORKERS = 256
"""Commands in hand at once in one process (commands of one game still go one at a time)."""


async def ensure_streams(js: JetStreamContext, replicas: int = 1) -> None:
    """Create the game and league streams from their definitions, or bring them in line."""
    await ensure_stream(js, games_stream_config(replicas))
    await ensure_stream(js, leagues_stream_config(replicas))


async def _delivery(message: StreamMessage[Any]) -> tuple[bytes, str]:
    """Hand the handler the request's bytes and its reply subject: the engine reads the bytes
    itself, so that a message that is not a command gets a ``malformed`` reply, not an error."""
    return bytes(message.body), message.reply_to


def build_engine_app(
    nats_url: str, *, queue: str = "engine", replicas: int = 1, credentials: Path | None = None
) -> FastStream:
    """The engine as a FastStream application (``spades serve engine`` runs it).

    The subscriber hands each command to a task of its own and returns at once, so commands of
    different games are decided and appended concurrently (up to ``COMMAND_WORKERS`` at a
    time; past that the subscriber waits, which holds back NATS delivery). Each task replies
    on the request's reply subject when its commit is acknowledged. FastStream's own
    ``max_workers`` pool does the same job at several times the cost per message here.

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
        # A stdlib logger (rendered by the same structlog processors): FastStream logs a line
        # per message at DEBUG, and a stdlib logger drops it at the level check, where a
        # structlog one runs its filter chain first (a tenth of the engine's time per command).
        logger=logging.getLogger("spades.faststream"),
        log_level=logging.DEBUG,
        # The handlers take the decoder's (bytes, reply subject) as they are: validating that
        # tuple through FastDepends for every command cost more than deciding the command.
        apply_types=False,
    )
    holder: dict[str, Engine | LeagueEngine] = {}
    slots = asyncio.Semaphore(COMMAND_WORKERS)
    running: set[asyncio.Task[None]] = set()
    followers: list[Follower] = []
    watches: list[RoundWatch] = []

    async def answer(handler: str, body: bytes, reply_to: str) -> None:
        try:
            reply = await holder[handler].handle(body)
            if reply_to:
                await broker.connection.publish(reply_to, reply)
        finally:
            slots.release()

    async def dispatch(handler: str, delivery: tuple[bytes, str]) -> None:
        await slots.acquire()
        task = asyncio.create_task(answer(handler, *delivery))
        running.add(task)
        task.add_done_callback(running.discard)

    @broker.subscriber(
        COMMAND_SUBJECTS,
        queue=queue,
        no_reply=True,
        decoder=_delivery,
        pending_bytes_limit=MAX_COMMAND_BYTES * COMMAND_WORKERS * 4,
        title="spades.commands.{game_id}",
        description="A command for one game (CommandRequest JSON); the reply is a CommandReply.",
    )
    async def on_command(delivery: tuple[bytes, str]) -> None:
        await dispatch("engine", delivery)

    @broker.subscriber(
        LEAGUE_COMMAND_SUBJECTS,
        queue=queue,
        no_reply=True,
        decoder=_delivery,
        pending_bytes_limit=MAX_LEAGUE_COMMAND_BYTES * 64,
        title="spades.league-commands.{league_id}",
        description=(
            "A command for one league (LeagueCommandRequest JSON); the reply is a "
            "LeagueCommandReply."
        ),
    )
    async def on_league_command(delivery: tuple[bytes, str]) -> None:
        await dispatch("leagues", delivery)

    app = FastStream(broker, logger=None)

    @app.on_startup
    async def connect_store() -> None:
        await broker.connect()
        js = broker.config.connection_state.stream
        await ensure_streams(js, replicas)
        games = GameStream(js)
        engine = Engine(games)
        holder["engine"] = engine
        leagues = LeagueStream(js)
        league_engine = LeagueEngine(leagues, engine.games)
        holder["leagues"] = league_engine
        for follower in (Follower(games, engine.games), Follower(leagues, league_engine.leagues)):
            await follower.start(js)
            followers.append(follower)
        watch = RoundWatch(broker.connection, league_engine)
        await watch.start()
        watches.append(watch)

    @app.after_startup
    async def subscribed() -> None:
        log.info("engine ready", queue=queue)  # said once the subscribers are in the group

    @app.on_shutdown
    async def finish_commands() -> None:
        for watch in watches:
            await watch.stop()
        if running:
            await asyncio.wait(running, timeout=10)
        for follower in followers:
            await follower.stop()

    return app
