"""The fast path (:mod:`services.gateway.fast_path`) answers a seat's view and its actions as
the router does: each request, good or bad, sent to a gateway with it and then to one without
it (the same settings, the same engine) gets the same status, headers and body."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from services.gateway.fast_path import FastPath
from services.runtime.nats_server import EmbeddedNats
from tests.integration import stack
from tests.integration.support import EngineProcess
from tests.integration.test_gateway import ServedGateway, bearer, gateway_settings
from tests.security.tenants import ACME, KEYS, RIVAL, Table, open_table

pytestmark = pytest.mark.integration

engine = stack.engine
data_dir = stack.data_dir

Clients = tuple[httpx.AsyncClient, httpx.AsyncClient]
UNKNOWN_GAME = "/v1/games/0123456789abcdef"
NOT_AN_ID = "/v1/games/no!such"


@pytest.fixture(scope="module")
def gateways(
    shared_nats: EmbeddedNats, engine: EngineProcess, data_dir: Path
) -> Iterator[tuple[str, str]]:
    settings = gateway_settings(shared_nats.url, data_dir, api_keys=KEYS)
    fast, routed = ServedGateway(settings), ServedGateway(settings)
    app = routed.server.config.app
    assert isinstance(app, FastAPI)
    app.user_middleware = [held for held in app.user_middleware if held.cls is not FastPath]  # type: ignore[comparison-overlap]
    with fast, routed:
        yield fast.url, routed.url


@pytest.fixture
async def clients(gateways: tuple[str, str]) -> AsyncIterator[Clients]:
    fast_url, routed_url = gateways
    async with (
        httpx.AsyncClient(base_url=fast_url, timeout=30) as fast,
        httpx.AsyncClient(base_url=routed_url, timeout=30) as routed,
    ):
        yield fast, routed


def _answer(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    headers = [(k, v) for k, v in response.headers.multi_items() if k not in ("date", "server")]
    return response.status_code, headers, response.content


async def same_answer(clients: Clients, method: str, path: str, **request: Any) -> httpx.Response:
    """Ask the gateway with the fast path, then the one without; both answer alike."""
    fast, routed = [await client.request(method, path, **request) for client in clients]
    assert _answer(fast) == _answer(routed), (method, path, request)
    return fast


async def test_a_seats_view_is_answered_alike(clients: Clients) -> None:
    table = await open_table(clients[0], ACME)
    other = await open_table(clients[0], ACME, seated=1)
    token = table.tokens[1]
    asked: list[dict[str, Any]] = [
        {"headers": bearer(token)},
        {"headers": bearer(token), "params": {"access_token": other.tokens[0]}},
        {"headers": {**bearer(token), "Content-Type": "application/json"}, "content": b"{}"},
        {},
        {"headers": {"Authorization": "Basic YTpi"}},
        {"headers": {"Authorization": "Bearer"}},
        {"headers": bearer("st2.not.a.token")},
        {"headers": bearer(ACME)},
        {"headers": bearer(RIVAL)},
        {"headers": bearer(other.tokens[0])},
    ]
    for path in (f"{table.url}/view", f"{UNKNOWN_GAME}/view", f"{NOT_AN_ID}/view"):
        for request in asked:
            for method in ("GET", "HEAD"):
                await same_answer(clients, method, path, **request)
    shown = await same_answer(clients, "GET", f"{table.url}/view", headers=bearer(token))
    assert shown.status_code == 200
    assert shown.json()["seat"] == 1


async def test_a_revoked_token_is_refused_alike(clients: Clients) -> None:
    table = await open_table(clients[0], ACME)
    reissued = await clients[0].post(f"{table.url}/seats/2/token", headers=bearer(ACME))
    assert reissued.status_code == 200, reissued.text
    for client in clients:  # each gateway holds the game as re-issued, as once a seat has read
        seen = await client.get(f"{table.url}/view", headers=bearer(reissued.json()["token"]))
        assert seen.status_code == 200, seen.text
    for token in (table.tokens[2], reissued.json()["token"]):
        await same_answer(clients, "GET", f"{table.url}/view", headers=bearer(token))
        action = {"type": "bid", "bid": 3}
        await same_answer(
            clients, "POST", f"{table.url}/actions", json=action, headers=bearer(token)
        )


async def _acting_seat(table: Table) -> tuple[int, dict[str, Any]]:
    state = await table.state()
    seat = int(state["turn"])
    bids = [legal for legal in (await table.view(seat))["legal"] if legal["type"] == "bid"]
    return seat, next(bid for bid in bids if isinstance(bid["bid"], int))


async def test_refused_actions_are_answered_alike(clients: Clients) -> None:
    table = await open_table(clients[0], ACME)
    other = await open_table(clients[0], ACME, seated=1)
    seat, bid = await _acting_seat(table)
    waiting = (seat + 1) % 4
    token = bearer(table.tokens[seat])
    json_body = {**token, "Content-Type": "application/json"}
    url = f"{table.url}/actions"
    asked: list[tuple[str, dict[str, Any]]] = [
        (url, {"json": bid, "headers": bearer(table.tokens[waiting])}),
        (url, {"json": {**bid, "seat": waiting}, "headers": token}),
        (url, {"json": {**bid, "expected_version": 1}, "headers": token}),
        (url, {"json": {**bid, "extra": 1}, "headers": token}),
        (url, {"json": {"type": "jump"}, "headers": token}),
        (url, {"json": [bid], "headers": token}),
        (url, {"content": b'{"type": "bid", "bid": 3', "headers": json_body}),
        (url, {"content": b"", "headers": json_body}),
        (url, {"content": b'{"type": "play", "card": "\\ud800"}', "headers": json_body}),
        (url, {"content": b'{"type": "bid", "bid": 3}', "headers": token}),
        (url, {"json": bid, "headers": {**token, "Content-Type": "text/plain"}}),
        (url, {"json": bid, "headers": {**token, "Idempotency-Key": "k" * 256}}),
        (url, {"json": bid, "headers": {**token, "Idempotency-Key": ""}}),
        (url, {"json": bid, "headers": {**token, "Idempotency-Key": b"caf\xe9"}}),
        (url, {"json": bid}),
        (url, {"json": bid, "headers": {"Authorization": "Basic YTpi"}}),
        (url, {"json": bid, "headers": bearer(ACME)}),
        (url, {"json": bid, "headers": bearer("st2.not.a.token")}),
        (url, {"json": bid, "headers": bearer(other.tokens[0])}),
        (f"{UNKNOWN_GAME}/actions", {"json": bid, "headers": token}),
        (f"{NOT_AN_ID}/actions", {"json": bid, "headers": token}),
        (f"{NOT_AN_ID}/actions", {"json": {"type": "jump"}, "headers": token}),
    ]
    for path, request in asked:
        await same_answer(clients, "POST", path, **request)
    assert (await table.state())["turn"] == seat  # none of them acted


async def test_an_action_and_its_retries_are_answered_alike(clients: Clients) -> None:
    table = await open_table(clients[0], ACME)
    seat, bid = await _acting_seat(table)
    headers = {**bearer(table.tokens[seat]), "Idempotency-Key": "one bid"}
    url = f"{table.url}/actions"
    acted = await same_answer(clients, "POST", url, json=bid, headers=headers)
    assert acted.status_code == 200, acted.text
    assert "bid_placed" in [record["event"]["type"] for record in acted.json()["events"]]
    await same_answer(clients, "POST", url, json={**bid, "bid": 0}, headers=headers)
    charset = {**headers, "Idempotency-Key": "two", "Content-Type": "application/json; x=y"}
    next_seat, next_bid = await _acting_seat(table)
    charset["Authorization"] = bearer(table.tokens[next_seat])["Authorization"]
    acted = await same_answer(clients, "POST", url, content=_json(next_bid), headers=charset)
    assert acted.status_code == 200, acted.text


def _json(value: Any) -> bytes:
    return httpx.Request("POST", "/", json=value).content
