"""Seat tokens grant one seat of one game and nothing else; platform keys guard game creation."""

from __future__ import annotations

import random
from collections.abc import Awaitable
from contextlib import aclosing
from typing import Any

import httpx
import pytest

from services.client import ApiError, SpadesClient
from tests.e2e.players import PRESETS, Table, seat_players
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e


async def refusal(call: Awaitable[Any]) -> tuple[int, str]:
    with pytest.raises(ApiError) as refused:
        await call
    return refused.value.status, refused.value.code


async def stream_refusal(client: SpadesClient, game_id: str, token: str | None) -> tuple[int, str]:
    async def first_message() -> None:
        async with aclosing(client.stream(game_id, token)) as stream:
            async for _message in stream:
                return

    return await refusal(first_message())


async def two_tables(client: SpadesClient) -> tuple[Table, Table]:
    rng = random.Random("tokens")
    return (
        await seat_players(client, PRESETS["partnership"], rng),
        await seat_players(client, PRESETS["partnership"], rng),
    )


def forged(token: str) -> str:
    """The token with its last character changed: the signature no longer matches."""
    return token[:-1] + ("A" if token[-1] != "A" else "B")


async def test_a_token_works_for_its_own_seat(client: SpadesClient) -> None:
    table, _ = await two_tables(client)
    for seat in table.seats:
        view = await client.view(table.game_id, seat.token)
        assert view.seat == seat.seat
        assert view.game_id == table.game_id


async def test_a_token_of_one_game_opens_nothing_of_another(client: SpadesClient) -> None:
    mine, theirs = await two_tables(client)
    token = mine.seats[0].token
    game_id = theirs.game_id
    forbidden = (403, "forbidden")
    assert await refusal(client.view(game_id, token)) == forbidden
    assert await refusal(client.act(game_id, token, {"type": "look"})) == forbidden
    assert await refusal(client.events(game_id, token)) == forbidden
    assert await stream_refusal(client, game_id, token) == forbidden
    assert (await client.state(game_id)).version == (await theirs.views())[0].version


async def test_a_token_cannot_act_for_another_seat(client: SpadesClient) -> None:
    table, _ = await two_tables(client)
    before = await client.state(table.game_id)
    assert before.turn is not None
    on_turn = before.turn
    other = (on_turn + 1) % len(table.seats)
    bid = {"type": "bid", "bid": 3}
    # Its own token names its seat: another seat's move is not its to make ...
    assert await refusal(client.act(table.game_id, table.tokens[other], bid)) == (
        409,
        "not_your_turn",
    )
    # ... and naming the seat on turn in the body does not change whose move it is.
    named = {**bid, "seat": on_turn}
    assert await refusal(client.act(table.game_id, table.tokens[other], named)) == (
        403,
        "forbidden",
    )
    after = await client.state(table.game_id)
    assert after.version == before.version
    assert after.bids == before.bids


@pytest.mark.parametrize(
    "authorization",
    ["Bearer garbage", "Bearer", "Bearer st1.x.0.abcdefabcdefabcdef.zzz", "Basic dXNlcjpwYXNz"],
)
async def test_a_garbage_token_is_unauthorized(stack: Stack, authorization: str) -> None:
    async with SpadesClient(stack.base_url, api_key=stack.api_key) as client:
        table, _ = await two_tables(client)
    game = f"/v1/games/{table.game_id}"
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=10) as http:
        headers = {"Authorization": authorization}
        answers = [
            await http.get(f"{game}/view", headers=headers),
            await http.post(f"{game}/actions", headers=headers, json={"type": "look"}),
            await http.get(f"{game}/events", headers=headers),
            await http.get(f"{game}/events/stream", headers=headers),
        ]
    for answer in answers:
        assert answer.status_code == 401, (answer.request.url, answer.text)
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert answer.json()["code"] == "unauthorized"


async def test_a_forged_token_is_unauthorized(client: SpadesClient) -> None:
    table, _ = await two_tables(client)
    token = forged(table.tokens[0])
    unauthorized = (401, "unauthorized")
    assert await refusal(client.view(table.game_id, token)) == unauthorized
    assert await refusal(client.act(table.game_id, token, {"type": "look"})) == unauthorized
    assert await refusal(client.events(table.game_id, token)) == unauthorized


async def test_a_seat_needs_a_token(stack: Stack, client: SpadesClient) -> None:
    table, _ = await two_tables(client)
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=10) as http:
        view = await http.get(f"/v1/games/{table.game_id}/view")
        action = await http.post(f"/v1/games/{table.game_id}/actions", json={"type": "look"})
    assert (view.status_code, view.json()["code"]) == (401, "unauthorized")
    assert (action.status_code, action.json()["code"]) == (401, "unauthorized")


async def test_the_stream_takes_the_token_as_a_query_parameter(stack: Stack) -> None:
    async with SpadesClient(stack.base_url, api_key=stack.api_key) as client:
        table, theirs = await two_tables(client)
    token = table.seats[2].token
    path = f"/v1/games/{table.game_id}/events/stream"
    first: list[str] = []
    async with (
        httpx.AsyncClient(base_url=stack.base_url, timeout=10) as http,
        http.stream("GET", path, params={"access_token": token}) as answer,
    ):
        assert answer.status_code == 200
        async for line in answer.aiter_lines():
            if not line:
                break
            first.append(line)
    assert "event: state" in first
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=10) as http:
        refused = await http.get(path, params={"access_token": forged(token)})
        elsewhere = await http.get(
            f"/v1/games/{theirs.game_id}/events/stream", params={"access_token": token}
        )
    assert (refused.status_code, refused.json()["code"]) == (401, "unauthorized")
    assert (elsewhere.status_code, elsewhere.json()["code"]) == (403, "forbidden")


async def test_creating_a_game_needs_a_platform_key(stack: Stack, client: SpadesClient) -> None:
    rules = {"preset": "partnership"}
    table, _ = await two_tables(client)
    for key in (None, "not-the-key", table.tokens[0]):
        async with SpadesClient(stack.base_url, api_key=key) as stranger:
            status, code = await refusal(stranger.create_game(rules))
        assert (status, code) in {(401, "unauthorized"), (403, "forbidden")}, key
        if key is None:
            assert (status, code) == (401, "unauthorized")
    created = await client.create_game(rules)
    assert created.status == "waiting"
