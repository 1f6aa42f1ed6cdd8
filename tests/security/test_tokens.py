"""Stale seat tokens: one past its expiry, one revoked by a re-issue (on another gateway, and
on one started afterwards), one handed back by a replayed seat key after its seat was issued
again. None acts, views or reads, and nothing they try changes the game."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import httpx
import pytest
from nats.aio.client import Client

from services.gateway.auth import SeatTokens
from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import EngineProcess
from tests.integration.test_gateway import ServedGateway, gateway_settings
from tests.security.tenants import (
    ACME,
    KEYS,
    SIGNING_KEY,
    TOKEN,
    Table,
    assert_problem,
    bearer,
    open_table,
    record,
    unchanged,
)

pytestmark = pytest.mark.integration


async def refused_everywhere(http: httpx.AsyncClient, table: Table, token: str) -> None:
    """Every use of ``token`` on ``table`` is 401 ``unauthorized``."""
    seat = bearer(token)
    act = await http.post(f"{table.url}/actions", json={"type": "look"}, headers=seat)
    assert_problem(act, 401, "unauthorized")
    for read in ("/view", "/events", ""):
        assert_problem(await http.get(f"{table.url}{read}", headers=seat), 401, "unauthorized")
    stream = f"{table.url}/events/stream"
    async with http.stream("GET", stream, params={"access_token": token}) as answer:
        await answer.aread()
        assert_problem(answer, 401, "unauthorized")


async def test_an_expired_token_opens_nothing(http: httpx.AsyncClient, house: Client) -> None:
    table = await open_table(http, ACME)
    seat = await table.seat_to_act()
    # a token the service signed itself, issued two days ago with a day's lifetime
    signer = SeatTokens(SIGNING_KEY.encode(), ttl_s=86_400, clock=lambda: time.time() - 172_800)
    expired = signer.issue(table.game_id, seat, 1)
    assert TOKEN.match(expired.token)
    before = await record(house, table.game_id)
    await refused_everywhere(http, table, expired.token)
    bid = {"type": "bid", "bid": 3}
    late = await http.post(f"{table.url}/actions", json=bid, headers=bearer(expired.token))
    assert_problem(late, 401, "unauthorized")
    await unchanged(house, table, before)
    # the control: the token the seat was given still acts
    assert (await table.view(seat))["seat"] == seat


async def test_a_revoked_token_opens_nothing_on_any_gateway(
    http: httpx.AsyncClient,
    house: Client,
    shared_nats: EmbeddedNats,
    engine: EngineProcess,
    data_dir: Path,
) -> None:
    table = await open_table(http, ACME)
    seat = await table.seat_to_act()
    old = table.tokens[seat]
    settings = gateway_settings(shared_nats.url, data_dir, api_keys=KEYS)
    with ServedGateway(settings) as other:
        async with httpx.AsyncClient(base_url=other.url, timeout=30) as elsewhere:
            # the other gateway knows the game and has let the old token in
            assert (
                await elsewhere.get(f"{table.url}/view", headers=bearer(old))
            ).status_code == 200
            reissued = await http.post(
                f"{table.url}/seats/{seat}/token", json={"player": "bea"}, headers=bearer(ACME)
            )
            assert reissued.status_code == 200, reissued.text
            new = reissued.json()
            assert (new["seat"], new["player"]) == (seat, "bea")
            assert TOKEN.match(new["token"])
            assert new["expires_at"].endswith("Z")
            before = await record(house, table.game_id)
            await refused_everywhere(elsewhere, table, old)
            await refused_everywhere(http, table, old)
            await unchanged(house, table, before)
            # the new token acts, here and there; the public state names the substitute
            view = await elsewhere.get(f"{table.url}/view", headers=bearer(new["token"]))
            assert view.status_code == 200
            assert view.json()["seats"][seat]["player"] == "bea"
    # a gateway started after the re-issue (a restart) knows it too
    with ServedGateway(settings) as restarted:
        async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as fresh:
            await refused_everywhere(fresh, table, old)
            answer = await fresh.post(
                f"{table.url}/actions", json={"type": "look"}, headers=bearer(new["token"])
            )
            assert answer.status_code == 200, answer.text


async def test_a_substitute_is_listed_in_the_seat(http: httpx.AsyncClient) -> None:
    table = await open_table(http, ACME)
    reissued = await http.post(
        f"{table.url}/seats/2/token", json={"player": "sub"}, headers=bearer(ACME)
    )
    assert reissued.status_code == 200, reissued.text
    state = await table.state()
    assert [s["player"] for s in state["seats"]] == ["ann", "bob", "sub", "dee"]
    seen = await http.get(
        f"{table.url}/scoreboard", params={"min_version": state["version"]}, headers=bearer(ACME)
    )
    assert seen.status_code == 200
    listed = await http.get(
        "/v1/games", params={"player": "sub", "limit": 200}, headers=bearer(ACME)
    )
    mine = [g for g in listed.json()["games"] if g["game_id"] == table.game_id]
    assert [g["players"] for g in mine] == [["ann", "bob", "sub", "dee"]]


async def test_a_replayed_seat_key_after_a_reissue_gets_only_a_revoked_token(
    http: httpx.AsyncClient, house: Client
) -> None:
    table = await open_table(http, ACME, seated=3)
    key = {**bearer(ACME), "Idempotency-Key": f"seat-{uuid.uuid4()}"}
    sit = {"player": "dee", "seat": 3}
    first = await http.post(f"{table.url}/seats", json=sit, headers=key)
    assert first.status_code == 201, first.text
    reissued = await http.post(f"{table.url}/seats/3/token", headers=bearer(ACME))
    assert reissued.status_code == 200, reissued.text
    before = await record(house, table.game_id)
    replayed = await http.post(f"{table.url}/seats", json=sit, headers=key)
    assert replayed.status_code == 201, replayed.text  # the first answer, again ...
    assert replayed.json()["seat"] == 3
    await refused_everywhere(http, table, replayed.json()["token"])  # ... whose token is dead
    await refused_everywhere(http, table, first.json()["token"])
    await unchanged(house, table, before)
    view = await http.get(f"{table.url}/view", headers=bearer(reissued.json()["token"]))
    assert view.status_code == 200


async def test_an_open_stream_ends_when_its_token_is_revoked(
    http: httpx.AsyncClient, house: Client
) -> None:
    table = await open_table(http, ACME)
    seat = await table.seat_to_act()
    events: list[str] = []
    async with (
        asyncio.timeout(30),
        http.stream("GET", f"{table.url}/events/stream", headers=bearer(table.tokens[seat])) as s,
    ):
        assert s.status_code == 200
        async for line in s.aiter_lines():  # ends when the server closes the stream
            if line.startswith("event: "):
                events.append(line.removeprefix("event: "))
            if events == ["state"]:
                events.append("(re-issue)")
                reissued = await http.post(f"{table.url}/seats/{seat}/token", headers=bearer(ACME))
                assert reissued.status_code == 200, reissued.text
    assert events == ["state", "(re-issue)", "seat_token_reissued", "end"]
    # what the new token's holder does next is not shown to the old one: it has gone
    new = reissued.json()["token"]
    looked = await http.post(f"{table.url}/actions", json={"type": "look"}, headers=bearer(new))
    assert looked.status_code == 200
    assert await table.audit_ok()
