"""Who pays for a request, and what a caller may hold open (issue 29, findings 3, 4, 5, 6, 10
and 12): a revoked or expired seat token spends its sender's address's budget, not the seat's;
``?access_token=`` names a seat on the event stream only, as the routes read it; a caller holds
a capped number of event streams and of ``min_version`` waits; the pages, the API document,
``/readyz`` and ``/metrics`` are limited as the API is; and a seat's stream ends when its token
expires, not up to a keep-alive later."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.gateway.auth import SeatTokens
from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import EngineProcess, ProjectionsProcess
from tests.integration.test_gateway import ServedGateway, gateway_settings
from tests.security.tenants import ACME, KEYS, SIGNING_KEY, assert_problem, bearer, open_table

pytestmark = pytest.mark.integration

STRICT = "platform=100000/s,seat=10/m,anonymous=5/m,audit=100000/s"
"""Budgets that do not refill while a test runs: a seat's 10, an address's 5."""


@pytest.fixture
def strict(
    shared_nats: EmbeddedNats,
    engine: EngineProcess,
    projections: ProjectionsProcess,
    data_dir: Path,
) -> Iterator[str]:
    """A gateway of its own (fresh buckets and slots) with small budgets and caps."""
    settings = gateway_settings(
        shared_nats.url,
        data_dir,
        api_keys=KEYS,
        rate_limit=STRICT,
        max_streams="platform=3,seat=1,anonymous=2",
        max_waits="platform=4,seat=1,anonymous=1",
    )
    with ServedGateway(settings, min_version_wait_s=3.0) as served:
        yield served.url


async def test_a_revoked_or_expired_token_spends_its_senders_budget_not_the_seats(
    strict: str, http: httpx.AsyncClient
) -> None:
    table = await open_table(http, ACME)
    old = bearer(table.tokens[1])
    reissued = await http.post(f"{table.url}/seats/1/token", headers=bearer(ACME))
    assert reissued.status_code == 200, reissued.text
    new = bearer(reissued.json()["token"])
    signer = SeatTokens(SIGNING_KEY.encode(), ttl_s=60, clock=lambda: time.time() - 3600)
    expired = bearer(signer.issue(table.game_id, 2, 1).token)
    async with httpx.AsyncClient(base_url=strict, timeout=30) as client:
        view = f"{table.url}/view"
        assert (await client.get(view, headers=new)).status_code == 200  # the game in memory
        # a thief with the old token, and one with an expired token, flood the seat's view
        flood = await asyncio.gather(
            *(client.get(view, headers=old) for _ in range(15)),
            *(client.get(view, headers=expired) for _ in range(15)),
        )
        statuses = sorted({answer.status_code for answer in flood})
        assert statuses == [401, 429], statuses  # their address's 5, then refused
        # the seat's own budget is whole: its 9 left are all answered
        answers = [await client.get(view, headers=new) for _ in range(9)]
        assert [a.status_code for a in answers] == [200] * 9, [a.text for a in answers]


async def test_access_token_names_a_seat_on_the_event_stream_only(
    strict: str, http: httpx.AsyncClient
) -> None:
    tables = [await open_table(http, ACME, visibility="public") for _ in range(2)]
    tokens = [token for table in tables for token in table.tokens.values()]
    async with httpx.AsyncClient(base_url=strict, timeout=30) as client:
        answers = [
            await client.get("/v1/games", params={"access_token": tokens[n % len(tokens)]})
            for n in range(20)
        ]
        assert [a.status_code for a in answers] == [200] * 5 + [429] * 15
        assert all('"anonymous"' in a.headers["ratelimit-policy"] for a in answers)


async def stream_status(client: httpx.AsyncClient, path: str, **options: Any) -> int:
    async with client.stream("GET", path, **options) as answer:
        if answer.status_code != 200:
            await answer.aread()
            assert_problem(answer, 429, "rate_limited")
        return answer.status_code


@asynccontextmanager
async def held_streams(
    client: httpx.AsyncClient, path: str, count: int, **options: Any
) -> AsyncIterator[list[int]]:
    """``count`` event streams opened one after another and held open; their statuses."""
    async with AsyncExitStack() as stack:
        statuses = []
        for _ in range(count):
            answer = await stack.enter_async_context(client.stream("GET", path, **options))
            if answer.status_code != 200:
                await answer.aread()
                assert_problem(answer, 429, "rate_limited")
            statuses.append(answer.status_code)
        yield statuses


async def test_open_event_streams_are_capped_per_caller(
    strict: str, http: httpx.AsyncClient
) -> None:
    table = await open_table(http, ACME, visibility="public")
    path = f"{table.url}/events/stream"
    limits = httpx.Limits(max_connections=50)
    async with httpx.AsyncClient(base_url=strict, timeout=30, limits=limits) as client:
        async with held_streams(client, path, 3) as anonymous:  # 3 of the address's 5
            assert anonymous == [200, 200, 429]
            # a platform and a seat have their own caps, whatever the address holds
            async with held_streams(client, path, 4, headers=bearer(ACME)) as platform:
                assert platform == [200, 200, 200, 429]
            seat = {"access_token": table.tokens[0]}
            async with held_streams(client, path, 2, params=seat) as seated:
                assert seated == [200, 429]
        # closed streams give their slots back (as soon as the gateway sees them closed)
        await asyncio.sleep(0.5)
        async with held_streams(client, path, 2) as again:
            assert again == [200, 200]


async def test_min_version_waits_are_capped_per_caller(
    strict: str, http: httpx.AsyncClient
) -> None:
    body = {
        "name": "Waited",
        "rules": {"preset": "solo", "max_hands": 1},
        "players": [f"p{n}" for n in range(4)],
        "visibility": "public",
    }
    created = await http.post("/v1/leagues", json=body, headers=bearer(ACME))
    assert created.status_code == 201, created.text
    path = f"/v1/leagues/{created.json()['league_id']}"
    assert (await http.post(f"{path}/rounds", headers=bearer(ACME))).status_code == 201
    # its games unfinished, standings counting one of them wait the whole 3 s
    async with httpx.AsyncClient(base_url=strict, timeout=30) as client:
        start = time.monotonic()
        waits = await asyncio.gather(
            *(client.get(f"{path}/standings", params={"min_version": 1}) for _ in range(4))
        )
        took = time.monotonic() - start
    statuses = sorted(answer.status_code for answer in waits)
    assert statuses == [429, 429, 429, 503], statuses  # one waited, and was not in time
    for answer in waits:
        if answer.status_code == 429:
            assert_problem(answer, 429, "rate_limited")
    assert took >= 2.5


async def test_the_services_pages_and_metrics_are_limited_but_liveness(strict: str) -> None:
    async with httpx.AsyncClient(base_url=strict, timeout=30) as client:
        for _ in range(5):
            assert (await client.get("/healthz")).status_code == 200
        spent = [await client.get("/v1/games") for _ in range(5)]
        assert [a.status_code for a in spent] == [200] * 5
        for path in ("/metrics", "/openapi.json", "/docs", "/readyz", "/"):
            assert_problem(await client.get(path), 429, "rate_limited")
        assert (await client.get("/healthz")).status_code == 200


async def test_a_seats_stream_ends_when_its_token_expires(
    gateway: str, http: httpx.AsyncClient
) -> None:
    table = await open_table(http, ACME)
    signer = SeatTokens(SIGNING_KEY.encode(), ttl_s=3)
    token = signer.issue(table.game_id, 0, 1)
    expires = int(token.token.split(".")[4])
    path = f"{table.url}/events/stream"
    async with (
        httpx.AsyncClient(base_url=gateway, timeout=30) as client,
        client.stream("GET", path, params={"access_token": token.token}) as answer,
    ):
        assert answer.status_code == 200
        async for _ in answer.aiter_bytes():
            pass
    ended = time.time()
    assert expires - 0.5 <= ended <= expires + 1.5, ended - expires  # not a keep-alive later
