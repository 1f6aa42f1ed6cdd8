"""Refusals come back as docs/api.md's table ("Errors") says: RFC 9457 problems with the code of
docs/rules.md and its status, and nothing changes."""

from __future__ import annotations

import random
from collections.abc import Awaitable
from typing import Any

import httpx
import pytest

from domain.cards import CARDS
from services.client import ApiError, LegalPlay, SpadesClient
from tests.e2e.players import PRESETS, Table, seat_players
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e


async def refusal(call: Awaitable[Any]) -> tuple[int, str]:
    with pytest.raises(ApiError) as refused:
        await call
    return refused.value.status, refused.value.code


async def bidding(client: SpadesClient) -> tuple[Table, int]:
    """A partnership game in its bidding, and the seat to bid."""
    table = await seat_players(client, PRESETS["partnership"], random.Random("errors"))
    turn = (await client.state(table.game_id)).turn
    assert turn is not None
    return table, turn


async def test_an_unknown_game_or_hand_is_not_found(client: SpadesClient) -> None:
    table, _ = await bidding(client)
    assert await refusal(client.state("no-such-game")) == (404, "game_not_found")
    assert await refusal(client.scoreboard("no-such-game")) == (404, "game_not_found")
    assert await refusal(client.take_seat("no-such-game", "ann")) == (404, "game_not_found")
    assert await refusal(client.hand(table.game_id, 1)) == (404, "hand_not_found")
    assert await client.hands(table.game_id) == [], "no hand is over yet"


async def test_a_rule_set_the_engine_refuses_is_invalid_rules(client: SpadesClient) -> None:
    for rules in (
        {"preset": "no-such-preset"},
        {"preset": "partnership", "trump_order": "jokers"},  # needs jokers: true
        {"preset": "partnership", "no_such_option": 1},
    ):
        assert await refusal(client.create_game(rules)) == (422, "invalid_rules"), rules


async def test_a_taken_seat_is_refused(client: SpadesClient) -> None:
    game = await client.create_game({"preset": "two-player"})
    await client.take_seat(game.game_id, "ann", seat=1)
    assert await refusal(client.take_seat(game.game_id, "bob", seat=1)) == (409, "seat_taken")


async def test_moves_out_of_place_get_their_codes(client: SpadesClient) -> None:
    table, turn = await bidding(client)
    token = table.tokens[turn]
    version = (await client.state(table.game_id)).version
    refusals = {
        "a play during the bidding": (
            await refusal(client.act(table.game_id, token, {"type": "play", "card": "2C"})),
            (409, "wrong_phase"),
        ),
        "a bid above the hand": (
            await refusal(client.act(table.game_id, token, {"type": "bid", "bid": 14})),
            (422, "invalid_bid"),
        ),
        "a bid that is no bid": (
            await refusal(client.act(table.game_id, token, {"type": "bid", "bid": "lots"})),
            (400, "malformed"),
        ),
        "blind nil when not behind": (
            await refusal(client.act(table.game_id, token, {"type": "bid", "bid": "blind_nil"})),
            (422, "blind_nil_not_allowed"),
        ),
        "an unknown action": (
            await refusal(client.act(table.game_id, token, {"type": "shuffle"})),
            (400, "malformed"),
        ),
    }
    for name, (got, wanted) in refusals.items():
        assert got == wanted, name
    assert (await client.state(table.game_id)).version == version, "nothing changed"


async def test_a_card_not_held_and_a_finished_game(client: SpadesClient) -> None:
    table = await seat_players(client, PRESETS["two-player"], random.Random("game over"))
    while (await client.state(table.game_id)).phase != "play":
        assert await table.step()
    view = next(v for v in await table.views() if any(isinstance(a, LegalPlay) for a in v.legal))
    assert view.hand is not None
    not_held = next(card for card in CARDS[:52] if card not in view.hand)
    play = {"type": "play", "card": not_held.value}
    assert await refusal(client.act(table.game_id, table.tokens[view.seat], play)) == (
        422,
        "card_not_in_hand",
    )
    await table.play_out()
    assert await refusal(client.act(table.game_id, table.tokens[0], {"type": "look"})) == (
        409,
        "game_over",
    )


async def test_a_body_that_is_not_json_is_malformed(stack: Stack, client: SpadesClient) -> None:
    table, turn = await bidding(client)
    headers = {"Authorization": f"Bearer {table.tokens[turn]}", "Content-Type": "application/json"}
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=10) as http:
        answers = [
            await http.post(f"/v1/games/{table.game_id}/actions", content=b"{bid", headers=headers),
            await http.post(f"/v1/games/{table.game_id}/seats", content=b"[]", headers=headers),
            await http.get(
                f"/v1/games/{table.game_id}/events", params={"after": "soon"}, headers=headers
            ),
        ]
    for answer in answers:
        assert answer.status_code == 400, answer.text
        assert answer.headers["content-type"].startswith("application/problem+json")
        problem = answer.json()
        assert problem["code"] == "malformed"
        assert {"type", "title", "status", "detail", "code"} <= set(problem)
