"""Two engines on one game, against a real nats-server: following the game stream's tail keeps
each engine's games current, so a command that reaches the other engine than the one before
does not fail its append and read the stream again. Engines route a game's commands to the one
that holds its partition now, so the tail serves the gateway's reads and the league engine; the
two engines here are what a hand-over between holders does to a game, at worst."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import msgspec
import pytest
from nats.aio.client import Client

from benchmarks.nats_table import RandomTable
from contracts.wire import (
    GAME_SUBJECTS,
    GAMES_STREAM,
    CommandReply,
    CommandRequest,
    CreateGameRequest,
    RequestBody,
)
from services.engine.engine import Engine
from services.engine.service import ensure_streams, follow_when_contested
from services.runtime.engine_client import EngineClient, new_command_id
from services.runtime.game_stream import GameStream
from services.runtime.tail import Tail
from tests.integration.support import connected, history
from tests.integration.test_engine import assert_record_sound

pytestmark = pytest.mark.integration

COMMANDS = 160
GAME_TAILS = [(GAMES_STREAM, GAME_SUBJECTS)]
_encoder = msgspec.json.Encoder()


class AlternatingEngines(EngineClient):
    """Hands each command to the other engine than the one before, in process: what the
    queue group does to a game at worst. With ``settle``, it first lets the engine's
    follower deliver the last commit (the time a player takes to act, at the least)."""

    def __init__(self, engines: list[Engine], *, settle: bool) -> None:
        self.engines = engines
        self.settle = settle
        self.sent = 0
        self.version = 0

    async def send(
        self, game_id: str, body: RequestBody, command_id: str | None = None
    ) -> CommandReply:
        engine = self.engines[self.sent % len(self.engines)]
        self.sent += 1
        if self.settle:
            # The cache has no event to wait on; looking at it is what this test is about.
            async with asyncio.timeout(5):
                while (held := engine.games.peek(game_id)) and held.version < self.version:  # noqa: ASYNC110
                    await asyncio.sleep(0.001)
        request = CommandRequest(
            command_id=command_id or new_command_id(), game_id=game_id, body=body
        )
        reply = await engine.answer(_encoder.encode(request))
        self.version = max(self.version, reply.version)
        return reply


@pytest.fixture
async def connections(nats_url: str) -> AsyncIterator[list[Client]]:
    clients = [await connected(nats_url) for _ in range(3)]
    await ensure_streams(clients[0].jetstream())
    yield clients
    for client in clients:
        await client.close()


async def play(engines: list[Engine], connection: Client, game_id: str, *, settle: bool) -> None:
    client = AlternatingEngines(engines, settle=settle)
    table = RandomTable(client, GameStream(connection.jetstream()), game_id, random.Random(7))
    await table.open({"preset": "partnership", "target": 10**6})
    for _ in range(COMMANDS):
        await table.step()


async def test_followed_engines_take_turns_at_a_game_without_conflicts(
    connections: list[Client],
) -> None:
    engines = [Engine(GameStream(c.jetstream())) for c in connections[:2]]
    async with AsyncExitStack() as stack:
        followers = []
        for engine, connection in zip(engines, connections, strict=False):
            follower = Tail(GAME_TAILS, engine.games)
            await follower.start(connection)
            stack.push_async_callback(follower.stop)
            followers.append(follower)
        await play(engines, connections[2], "followed", settle=True)

    assert [engine.conflicts for engine in engines] == [0, 0]
    assert all(follower.applied > COMMANDS // 3 for follower in followers)
    assert_record_sound(await history(connections[2], "followed"), "followed")


async def test_unfollowed_engines_conflict_on_every_turn_and_still_decide_right(
    connections: list[Client],
) -> None:
    """The control: without followers the same play makes each engine find its game stale,
    and optimistic concurrency alone keeps the history sound."""
    engines = [Engine(GameStream(c.jetstream())) for c in connections[:2]]
    await play(engines, connections[2], "unfollowed", settle=False)

    assert sum(engine.conflicts for engine in engines) >= COMMANDS
    assert_record_sound(await history(connections[2], "unfollowed"), "unfollowed")


async def test_an_engine_follows_the_stream_from_its_first_conflict_on(
    connections: list[Client],
) -> None:
    """A lone engine does not follow (every commit is its own); the first conflict says
    another engine appends too, and from then on its commits reach this engine's games."""
    one, other = engines = [Engine(GameStream(c.jetstream())) for c in connections[:2]]
    follower = Tail(GAME_TAILS, one.games)
    following = asyncio.create_task(follow_when_contested(one, follower, connections[0]))
    try:
        await play([one], connections[2], "alone", settle=False)
        assert one.conflicts == 0
        assert not following.done()

        await play(engines, connections[2], "contested", settle=False)
        async with asyncio.timeout(5):
            await following
        held = await one.games.get("created-elsewhere")  # held here, with no history yet
        request = CommandRequest(
            command_id=new_command_id(),
            game_id="created-elsewhere",
            body=CreateGameRequest(rules={}),
        )
        assert (await other.answer(_encoder.encode(request))).ok
        async with asyncio.timeout(5):
            while held.version == 0:  # noqa: ASYNC110
                await asyncio.sleep(0.001)
        assert follower.applied >= 1
    finally:
        following.cancel()
        await follower.stop()
