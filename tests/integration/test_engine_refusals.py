"""Two engines of one queue group against a real nats-server, neither following the streams (what
an engine whose follower has not delivered the other's last commit yet looks like): an answer
that appends nothing is never given on a copy the stream has passed. A command that only another
engine's commit made legal is accepted, not refused, by the engine that held the game from
before that commit."""

from __future__ import annotations

from collections.abc import AsyncIterator

import msgspec
import pytest
from nats.aio.client import Client

from contracts.wire import (
    ActRequest,
    CommandReply,
    CommandRequest,
    CreateGameRequest,
    CreateLeagueRequest,
    LeagueCommandRequest,
    ReissueTokenRequest,
    RequestBody,
    ScheduleRoundRequest,
    TakeSeatRequest,
)
from domain.commands import PlaceBid, to_api
from domain.game import legal_actions, seat_to_act
from services.engine.engine import Engine
from services.engine.league_engine import LeagueEngine
from services.engine.service import ensure_streams
from services.runtime.game_stream import GameStream
from services.runtime.league_stream import LeagueStream
from tests.integration.support import connected, history
from tests.integration.test_engine import assert_record_sound

pytestmark = pytest.mark.integration

_encoder = msgspec.json.Encoder()


@pytest.fixture
async def engines(nats_url: str) -> AsyncIterator[list[Engine]]:
    clients = [await connected(nats_url) for _ in range(2)]
    await ensure_streams(clients[0].jetstream())
    yield [Engine(GameStream(client.jetstream())) for client in clients]
    for client in clients:
        await client.close()


async def send(engine: Engine, command_id: str, game_id: str, body: RequestBody) -> CommandReply:
    request = CommandRequest(command_id=command_id, game_id=game_id, body=body)
    return await engine.answer(_encoder.encode(request))


async def test_a_game_the_other_engine_created_is_found_where_it_was_missing(
    engines: list[Engine], nats_client: Client
) -> None:
    one, other = engines
    missing = await send(one, "early-seat", "late", TakeSeatRequest(player="ann"))
    assert (missing.ok, missing.code) == (False, "game_not_found")

    assert (await send(other, "create", "late", CreateGameRequest(rules={}))).ok
    seated = await send(one, "seat", "late", TakeSeatRequest(player="ann"))
    assert seated.ok, seated.detail
    assert one.conflicts == 0  # read once before answering, not after a failed append
    assert_record_sound(await history(nats_client, "late"), "late")


async def test_a_seat_token_the_other_engine_issued_again_acts_here(
    engines: list[Engine], nats_client: Client
) -> None:
    one, other = engines
    game = "reissued"
    assert (await send(one, "create", game, CreateGameRequest(rules={}))).ok
    for seat in range(4):
        body = TakeSeatRequest(player=f"p{seat}", seat=seat)
        assert (await send(one, f"seat-{seat}", game, body)).ok
    held = one.games.peek(game)
    assert held is not None
    assert held.state is not None
    bidder = seat_to_act(held.state)
    assert bidder is not None
    bids = [a for a in legal_actions(held.state, bidder) if isinstance(a, PlaceBid)]
    action = to_api(bids[0])

    reissued = await send(other, "reissue", game, ReissueTokenRequest(seat=bidder, player="pat"))
    assert reissued.ok, reissued.detail
    latest = other.games.peek(game)
    assert latest is not None
    assert latest.state is not None
    player = latest.state.players[bidder]
    assert player is not None
    issue = player.issue
    acted = await send(one, "act", game, ActRequest(seat=bidder, action=action, issue=issue))
    assert acted.ok, acted.detail
    stale = await send(one, "stale", game, ActRequest(seat=bidder, action=action, issue=issue - 1))
    assert (stale.ok, stale.code) == (False, "unauthorized")
    assert_record_sound(await history(nats_client, game), game)


async def test_a_league_the_other_engine_created_is_found_where_it_was_missing(
    nats_url: str,
) -> None:
    clients = [await connected(nats_url) for _ in range(2)]
    try:
        await ensure_streams(clients[0].jetstream())
        one, other = (
            LeagueEngine(LeagueStream(c.jetstream()), Engine(GameStream(c.jetstream())).games)
            for c in clients
        )
        schedule = LeagueCommandRequest(
            command_id="schedule", league_id="north", body=ScheduleRoundRequest()
        )
        missing = await one.answer(_encoder.encode(schedule))
        assert (missing.ok, missing.code) == (False, "league_not_found")

        league = CreateLeagueRequest(
            name="North", rules={"preset": "partnership"}, players=list("abcdefgh")
        )
        create = LeagueCommandRequest(command_id="create", league_id="north", body=league)
        assert (await other.answer(_encoder.encode(create))).ok
        scheduled = await one.answer(_encoder.encode(schedule))
        assert scheduled.ok, scheduled.detail
        assert one.conflicts == 0
    finally:
        for client in clients:
            await client.close()
