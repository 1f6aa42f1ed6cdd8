"""Floods: a platform's burst past its budget (whichever of its keys it uses), an anonymous
caller's, a burst of audits past theirs, and leagues past the caps. The requests over the
limit are refused with 429 and the headers that say when to come back, and none of them
reached the engine."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from nats.aio.client import Client

from services.gateway.commands import created_id
from services.runtime.game_stream import GameStream
from services.runtime.league_stream import LeagueStream
from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import EngineProcess, ProjectionsProcess
from tests.integration.test_gateway import ServedGateway, gateway_settings
from tests.security.tenants import (
    ACME,
    ACME_ROTATED,
    KEYS,
    PLATFORM_OF,
    RIVAL,
    SIGNING_KEY,
    assert_problem,
    bearer,
    open_table,
    record,
    sentinel,
    unchanged,
    watching_commands,
)

pytestmark = pytest.mark.integration

TIGHT = "platform=10/m,anonymous=5/m,seat=100/s,audit=3/m"
"""Budgets that do not refill while a test runs (one request every 6 s, 12 s, 20 s)."""
POLICY = re.compile(r'^"(?P<kind>[a-z]+)";q=(?P<q>[0-9]+);w=(?P<w>[0-9]+)$')
STATE = re.compile(r'^"(?P<kind>[a-z]+)";r=(?P<r>[0-9]+);t=(?P<t>[0-9]+)$')


@pytest.fixture
def tight(
    shared_nats: EmbeddedNats,
    engine: EngineProcess,
    projections: ProjectionsProcess,
    data_dir: Path,
) -> Iterator[str]:
    """A gateway of its own (its buckets fresh), on the same engine and read models, with
    tight budgets."""
    settings = gateway_settings(shared_nats.url, data_dir, api_keys=KEYS, rate_limit=TIGHT)
    with ServedGateway(settings) as served:
        yield served.url


def over_the_limit(answer: httpx.Response, kind: str, quota: int, window_s: int) -> int:
    """Check a 429 and its headers; the seconds it asks to wait."""
    assert_problem(answer, 429, "rate_limited")
    retry_after = int(answer.headers["retry-after"])
    assert 1 <= retry_after <= window_s
    policies = [POLICY.match(p.strip()) for p in answer.headers["ratelimit-policy"].split(",")]
    states = [STATE.match(s.strip()) for s in answer.headers["ratelimit"].split(",")]
    assert all(policies), answer.headers
    assert all(states), answer.headers
    policy = next(p for p in policies if p and p["kind"] == kind)
    state = next(s for s in states if s and s["kind"] == kind)
    assert (int(policy["q"]), int(policy["w"])) == (quota, window_s)
    assert int(state["r"]) == 0
    assert 1 <= int(state["t"]) <= window_s
    return retry_after


def remaining(answer: httpx.Response) -> int:
    state = STATE.match(answer.headers["ratelimit"])
    assert state is not None, answer.headers
    return int(state["r"])


async def stored(house: Client, game_id: str) -> bool:
    return bool(await GameStream(house.jetstream()).read(game_id))


async def test_a_platforms_burst_past_its_limit_is_429_across_its_keys(
    tight: str, house: Client
) -> None:
    body = {"rules": {"preset": "solo"}}
    keys = [f"burst-{uuid.uuid4()}" for _ in range(13)]
    async with httpx.AsyncClient(base_url=tight, timeout=30) as http:
        answers = []
        for n, key in enumerate(keys):  # the platform's two keys share one budget
            platform_key = (ACME, ACME_ROTATED)[n % 2]
            headers = {**bearer(platform_key), "Idempotency-Key": key}
            answers.append(await http.post("/v1/games", json=body, headers=headers))
        rival = await http.post("/v1/games", json=body, headers=bearer(RIVAL))
    assert [a.status_code for a in answers] == [201] * 10 + [429] * 3
    assert [remaining(a) for a in answers[:10]] == list(range(9, -1, -1))
    for answer in answers[10:]:
        assert over_the_limit(answer, "platform", 10, 60) >= 5  # one request back every 6 s
    assert rival.status_code == 201, rival.text  # another platform's budget is its own
    # the refused creations reached nothing: no game exists under the ids they would have had
    created = [created_id("game", SIGNING_KEY.encode(), PLATFORM_OF[ACME], k) for k in keys]
    assert [await stored(house, game_id) for game_id in created] == [True] * 10 + [False] * 3


async def test_an_anonymous_burst_is_429_and_reaches_nothing(
    tight: str, http: httpx.AsyncClient, house: Client
) -> None:
    table = await open_table(http, ACME, seated=0, visibility="public", seating="open")
    before = await record(house, table.game_id)
    async with (
        httpx.AsyncClient(base_url=tight, timeout=30) as anonymous,
        watching_commands(house) as watch,
    ):
        reads = [await anonymous.get(table.url) for _ in range(5)]
        assert [r.status_code for r in reads] == [200] * 5
        sit = {"Idempotency-Key": str(uuid.uuid4())}
        squat = await anonymous.post(f"{table.url}/seats", json={"player": "x"}, headers=sit)
        over_the_limit(squat, "anonymous", 5, 60)
        over_the_limit(await anonymous.get("/v1/games"), "anonymous", 5, 60)
        # the service's own endpoints are not the API's: never limited
        assert (await anonymous.get("/healthz")).status_code == 200
        await sentinel(http, watch)
    assert f"spades.commands.{table.game_id}" not in watch.subjects()
    await unchanged(house, table, before)


async def test_audits_draw_on_a_smaller_budget(tight: str, http: httpx.AsyncClient) -> None:
    table = await open_table(http, ACME)
    async with httpx.AsyncClient(base_url=tight, timeout=60) as platform:
        path = f"{table.url}/audit"
        answers = await asyncio.gather(
            *(platform.get(path, headers=bearer(ACME)) for _ in range(6))
        )
        audited = [a for a in answers if a.status_code == 200]
        refused = [a for a in answers if a.status_code == 429]
        assert (len(audited), len(refused)) == (3, 3)
        for answer in refused:
            over_the_limit(answer, "audit", 3, 60)
        assert all(a.json() == audited[0].json() for a in audited)
        assert audited[0].json()["ok"]
        # the platform's other requests still have the rest of theirs (10 a minute, 6 spent)
        assert (await platform.get(table.url, headers=bearer(ACME))).status_code == 200


@pytest.fixture(scope="module")
def capped(
    shared_nats: EmbeddedNats,
    engine: EngineProcess,
    projections: ProjectionsProcess,
    data_dir: Path,
) -> Iterator[str]:
    settings = gateway_settings(
        shared_nats.url, data_dir, api_keys=KEYS, max_league_players=8, max_round_tables=3
    )
    with ServedGateway(settings) as served:
        yield served.url


async def test_leagues_past_the_caps_are_refused_naming_the_cap(capped: str, house: Client) -> None:
    too_many = {"rules": {"preset": "solo"}, "players": [f"p{n}" for n in range(9)]}
    too_wide = {"rules": {"preset": "two-player"}, "players": [f"p{n}" for n in range(8)]}
    leagues = LeagueStream(house.jetstream())
    async with httpx.AsyncClient(base_url=capped, timeout=30) as http:
        for body, cap in (
            (too_many, "SPADES_MAX_LEAGUE_PLAYERS"),
            (too_wide, "SPADES_MAX_ROUND_TABLES"),
        ):
            key = f"league-{uuid.uuid4()}"
            headers = {**bearer(ACME), "Idempotency-Key": key}
            refused = await http.post("/v1/leagues", json={"name": "Big", **body}, headers=headers)
            assert_problem(refused, 422, "invalid_rules")
            assert cap in refused.json()["detail"]
            would_be = created_id("league", SIGNING_KEY.encode(), PLATFORM_OF[ACME], key)
            assert await leagues.read(would_be) == []
        fits = {"name": "Fits", "rules": {"preset": "solo"}, "players": [f"p{n}" for n in range(8)]}
        assert (await http.post("/v1/leagues", json=fits, headers=bearer(ACME))).status_code == 201
