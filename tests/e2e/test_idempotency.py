"""An Idempotency-Key makes a retry safe: the same key and body get the first answer, another
body gets 422 ``idempotency_key_reused``; ``expected_version`` refuses a move on a stale view."""

from __future__ import annotations

import asyncio
import random
import uuid
from typing import Any

import httpx
import msgspec
import pytest

from domain.events import BidPlaced
from services.client import ApiError, LegalBid, SeatView, SpadesClient
from tests.e2e.players import PRESETS, Table, seat_players
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e


async def seated(client: SpadesClient, name: str) -> tuple[Table, SeatView]:
    """A partnership game in its bidding, and the view of the seat to bid."""
    table = await seat_players(client, PRESETS["partnership"], random.Random(name))
    state = await client.state(table.game_id)
    assert state.phase == "bid"
    assert state.turn is not None
    return table, await client.view(table.game_id, table.tokens[state.turn])


def bids(view: SeatView) -> list[dict[str, Any]]:
    """The bids the seat may make, as they are posted."""
    return [msgspec.to_builtins(action) for action in view.legal if isinstance(action, LegalBid)]


async def test_the_same_key_and_body_get_the_first_answer(client: SpadesClient) -> None:
    table, view = await seated(client, "same key")
    token, bid = table.tokens[view.seat], bids(view)[3]
    key = uuid.uuid4().hex

    first = await client.act(table.game_id, token, bid, idempotency_key=key)
    again = await client.act(table.game_id, token, bid, idempotency_key=key)

    assert again == first
    assert [record.type for record in first.events][-1:] == ["bid_placed"]
    state = await client.state(table.game_id)
    assert state.version == first.version, "the retry applied nothing"
    assert state.bids[view.seat] == bid["bid"]


async def test_the_same_key_with_another_body_is_refused(client: SpadesClient) -> None:
    table, view = await seated(client, "other body")
    token, legal = table.tokens[view.seat], bids(view)
    key = uuid.uuid4().hex
    first = await client.act(table.game_id, token, legal[2], idempotency_key=key)

    with pytest.raises(ApiError) as refused:
        await client.act(table.game_id, token, legal[4], idempotency_key=key)

    assert (refused.value.status, refused.value.code) == (422, "idempotency_key_reused")
    state = await client.state(table.game_id)
    assert state.version == first.version
    assert state.bids[view.seat] == legal[2]["bid"]


async def test_a_refusal_is_the_first_answer_too(client: SpadesClient) -> None:
    table, view = await seated(client, "refusal")
    not_on_turn = (view.seat + 1) % len(table.seats)
    key = uuid.uuid4().hex
    codes = []
    for _ in range(2):
        with pytest.raises(ApiError) as refused:
            await client.act(
                table.game_id, table.tokens[not_on_turn], bids(view)[3], idempotency_key=key
            )
        codes.append((refused.value.status, refused.value.code))
    assert codes == [(409, "not_your_turn")] * 2
    assert (await client.state(table.game_id)).version == view.version


async def test_the_same_key_sent_twice_at_once_is_applied_once(client: SpadesClient) -> None:
    table, view = await seated(client, "at once")
    token, bid = table.tokens[view.seat], bids(view)[3]
    key = uuid.uuid4().hex
    answers = await asyncio.gather(
        *(client.act(table.game_id, token, bid, idempotency_key=key) for _ in range(4)),
        return_exceptions=True,
    )
    results = [answer for answer in answers if not isinstance(answer, BaseException)]
    refusals = [answer for answer in answers if isinstance(answer, BaseException)]
    assert results, answers
    assert all(result == results[0] for result in results)
    for refused in refusals:  # still being processed: 409 conflict, nothing else
        assert isinstance(refused, ApiError)
        assert (refused.status, refused.code) == (409, "conflict")
    applied = view.version + len(results[0].events)
    assert (await client.state(table.game_id)).version == results[0].version == applied


async def test_a_stale_expected_version_changes_nothing(client: SpadesClient) -> None:
    table, view = await seated(client, "expected version")
    token, bid = table.tokens[view.seat], {"type": "bid", "bid": 3}
    assert bid in bids(view)

    with pytest.raises(ApiError) as refused:
        await client.act(table.game_id, token, bid, expected_version=view.version - 1)
    assert (refused.value.status, refused.value.code) == (409, "conflict")
    assert (await client.state(table.game_id)).version == view.version

    accepted = await client.act(table.game_id, token, bid, expected_version=view.version)
    assert accepted.version == view.version + len(accepted.events)
    assert accepted.events[-1].event == BidPlaced(seat=view.seat, bid=3)


async def test_an_idempotency_key_is_at_most_255_characters(stack: Stack) -> None:
    async with SpadesClient(stack.base_url, api_key=stack.api_key) as client:
        table, view = await seated(client, "long key")
    path = f"/v1/games/{table.game_id}/actions"
    headers = {"Authorization": f"Bearer {table.tokens[view.seat]}"}
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=10) as http:
        too_long = await http.post(
            path, json=bids(view)[3], headers={**headers, "Idempotency-Key": "k" * 256}
        )
        longest = await http.post(
            path, json=bids(view)[3], headers={**headers, "Idempotency-Key": "k" * 255}
        )
    assert (too_long.status_code, too_long.json()["code"]) == (400, "malformed")
    assert longest.status_code == 200, longest.text
