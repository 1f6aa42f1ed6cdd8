"""Idempotency keys belong to their caller. Someone else's seat key, replayed with the same
body, is a new request that can never return the first caller's seat or token; an anonymous
caller's key must be a secret; and two callers who pick the same key never lock each other
out."""

from __future__ import annotations

import uuid

import httpx
import pytest
from nats.aio.client import Client

from tests.security.tenants import (
    ACME,
    ACME_ROTATED,
    RIVAL,
    assert_problem,
    bearer,
    open_table,
    record,
    sentinel,
    unchanged,
    watching_commands,
)

pytestmark = pytest.mark.integration


async def test_a_seat_key_replayed_by_another_caller_gets_no_seat_of_the_first(
    http: httpx.AsyncClient, house: Client
) -> None:
    # a public lobby, so that the others may try at all; ann is seated by the platform
    lobby = await open_table(http, ACME, seated=0, visibility="public", seating="open")
    sit = {"player": "ann", "seat": 0}
    key = {"Idempotency-Key": "seat-ann"}  # the guessable key of the issue
    first = await http.post(f"{lobby.url}/seats", json=sit, headers={**bearer(ACME), **key})
    assert first.status_code == 201, first.text
    ann = first.json()["token"]
    # the platform's own retry, under its rotated key, is the same request: the same seat
    again = await http.post(f"{lobby.url}/seats", json=sit, headers={**bearer(ACME_ROTATED), **key})
    assert (again.status_code, again.json()["seat"]) == (201, 0)
    before = await record(house, lobby.game_id)
    version = (await lobby.state())["version"]

    # another platform: a request of its own, which finds the seat taken
    theirs = await http.post(f"{lobby.url}/seats", json=sit, headers={**bearer(RIVAL), **key})
    assert_problem(theirs, 409, "seat_taken")
    # no one at all: too short a key to be anyone's secret
    anyone = await http.post(f"{lobby.url}/seats", json=sit, headers=key)
    assert_problem(anyone, 400, "malformed")
    assert "32 characters" in anyone.json()["detail"]
    assert ann not in theirs.text + anyone.text
    # the refusal is recorded (the rival's request reached the engine) and nothing else
    after = await record(house, lobby.game_id)
    assert after[: len(before)] == before
    assert len(after) == len(before) + 1
    state = await lobby.state()
    assert (state["version"], state["seats"][0]["player"]) == (version, "ann")
    assert await lobby.audit_ok()


async def test_a_replayed_key_mid_game_gets_nothing(http: httpx.AsyncClient, house: Client) -> None:
    """The issue's attack: the seat key of a player mid-game, replayed, to see their cards."""
    table = await open_table(http, ACME, seated=3, visibility="public", seating="open")
    key = {"Idempotency-Key": str(uuid.uuid4())}
    sit = {"player": "dee", "seat": 3}
    first = await http.post(f"{table.url}/seats", json=sit, headers={**bearer(ACME), **key})
    assert first.status_code == 201, first.text
    await table.step()
    before = await record(house, table.game_id)
    version = (await table.state())["version"]
    async with watching_commands(house) as watch:
        for stranger in ({}, bearer(RIVAL)):
            replayed = await http.post(f"{table.url}/seats", json=sit, headers={**stranger, **key})
            assert_problem(replayed, 409, "seat_taken")
            assert "token" not in replayed.json()
        await sentinel(http, watch)
    after = await record(house, table.game_id)
    assert after[: len(before)] == before  # two refusals recorded, nothing taken
    state = await table.state()
    assert (state["version"], state["seats"][3]["player"]) == (version, "dee")
    assert await table.audit_ok()


async def test_an_anonymous_seat_key_must_be_a_secret(
    http: httpx.AsyncClient, house: Client
) -> None:
    lobby = await open_table(http, ACME, seated=0, visibility="public", seating="open")
    before = await record(house, lobby.game_id)
    async with watching_commands(house) as watch:
        for short in ("seat-ann", "x" * 31):
            refused = await http.post(
                f"{lobby.url}/seats", json={"player": "ann"}, headers={"Idempotency-Key": short}
            )
            assert_problem(refused, 400, "malformed")
        await sentinel(http, watch)
    assert f"spades.commands.{lobby.game_id}" not in watch.subjects()
    await unchanged(house, lobby, before)
    secret = {"Idempotency-Key": str(uuid.uuid4())}  # a UUID passes, and retries safely
    taken = [
        await http.post(f"{lobby.url}/seats", json={"player": "ann"}, headers=secret)
        for _ in range(2)
    ]
    assert [t.status_code for t in taken] == [201, 201]
    assert taken[0].json()["seat"] == taken[1].json()["seat"]


async def test_two_callers_with_one_key_do_not_lock_each_other_out(
    http: httpx.AsyncClient,
) -> None:
    key = {"Idempotency-Key": "tournament-7"}
    mine = await http.post(
        "/v1/games", json={"rules": {"preset": "solo"}}, headers={**bearer(ACME), **key}
    )
    theirs = await http.post(
        "/v1/games", json={"rules": {"preset": "cutthroat"}}, headers={**bearer(RIVAL), **key}
    )
    assert mine.status_code == theirs.status_code == 201, theirs.text
    assert mine.json()["game_id"] != theirs.json()["game_id"]
    # and their seats' actions with one key: each seat's own request
    table = await open_table(http, ACME, visibility="public")
    first = await table.seat_to_act()
    bid = {"type": "bid", "bid": 3}
    answer = await http.post(
        f"{table.url}/actions", json=bid, headers={**bearer(table.tokens[first]), **key}
    )
    assert answer.status_code == 200, answer.text
    second = await table.seat_to_act()
    other = {"type": "bid", "bid": 4}
    answer = await http.post(
        f"{table.url}/actions", json=other, headers={**bearer(table.tokens[second]), **key}
    )
    assert answer.status_code == 200, answer.text  # not 422 idempotency_key_reused
