"""A platform's quotas (issue 29, item 3): its games and leagues going on at once, and the
shortest turn a clock may give (its engine commands a minute: tests/unit/test_command_budget.py
and tests/security/test_flood.py). Past a quota the request is refused with the code that says
so, and names the setting; another platform is not held by it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import EngineProcess, ProjectionsProcess
from tests.integration.test_gateway import ServedGateway, gateway_settings
from tests.security.tenants import assert_problem, bearer

pytestmark = pytest.mark.integration

FLOODER, PLAYER, ORGANISER = "quota-a-key", "quota-b-key", "quota-c-key"
KEYS = f"quota-a:{FLOODER},quota-b:{PLAYER},quota-c:{ORGANISER}"
GAMES = 3
LEAGUES = 2
LEAST_TURN_S = 3.0
SOLO = {"preset": "solo", "max_hands": 1}
PROJECTED_WITHIN_S = 20.0


@pytest.fixture(scope="module")
def quotas(
    shared_nats: EmbeddedNats,
    engine: EngineProcess,
    projections: ProjectionsProcess,
    data_dir: Path,
) -> Iterator[str]:
    settings = gateway_settings(
        shared_nats.url,
        data_dir,
        api_keys=KEYS,
        max_games_going_on=GAMES,
        max_leagues_going_on=LEAGUES,
        min_turn_s=LEAST_TURN_S,
    )
    with ServedGateway(settings) as served:
        yield served.url


async def _listed(http: httpx.AsyncClient, key: str, count: int) -> None:
    """Wait until the platform's game list holds ``count`` games (the quota counts from it)."""
    deadline = time.monotonic() + PROJECTED_WITHIN_S
    while time.monotonic() < deadline:
        page = (await http.get("/v1/games", headers=bearer(key))).json()
        if len(page["games"]) >= count:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"the game list did not show {count} games in time")


async def test_games_past_the_platforms_quota_are_429_naming_it(quotas: str) -> None:
    async with httpx.AsyncClient(base_url=quotas, timeout=30) as http:
        for _ in range(GAMES):
            created = await http.post("/v1/games", json={"rules": SOLO}, headers=bearer(FLOODER))
            assert created.status_code == 201, created.text
        await _listed(http, FLOODER, GAMES)
        refused = await http.post("/v1/games", json={"rules": SOLO}, headers=bearer(FLOODER))
        problem = assert_problem(refused, 429, "rate_limited")
        assert "SPADES_MAX_GAMES_GOING_ON" in problem["detail"]
        league = {"name": "L", "rules": SOLO, "players": ["a", "b", "c", "d"]}
        made = await http.post("/v1/leagues", json=league, headers=bearer(FLOODER))
        assert made.status_code == 201, made.text
        round_ = await http.post(
            f"/v1/leagues/{made.json()['league_id']}/rounds", headers=bearer(FLOODER)
        )
        assert "SPADES_MAX_GAMES_GOING_ON" in assert_problem(round_, 429, "rate_limited")["detail"]
        # The other platform's games are its own count.
        other = await http.post("/v1/games", json={"rules": SOLO}, headers=bearer(PLAYER))
        assert other.status_code == 201, other.text


async def test_leagues_past_the_platforms_quota_are_429_naming_it(quotas: str) -> None:
    league = {"name": "L", "rules": SOLO, "players": ["a", "b", "c", "d"]}
    async with httpx.AsyncClient(base_url=quotas, timeout=30) as http:
        for _ in range(LEAGUES):
            made = await http.post("/v1/leagues", json=league, headers=bearer(ORGANISER))
            assert made.status_code == 201, made.text
        refused = await http.post("/v1/leagues", json=league, headers=bearer(ORGANISER))
        problem = assert_problem(refused, 429, "rate_limited")
        assert "SPADES_MAX_LEAGUES_GOING_ON" in problem["detail"]
        assert refused.headers["retry-after"] == "1"
        # The other platform's leagues are its own count (it has made one at most elsewhere).
        other = await http.post("/v1/leagues", json=league, headers=bearer(PLAYER))
        assert other.status_code == 201, other.text


@pytest.mark.parametrize("kind", ["games", "leagues"])
async def test_a_turn_under_the_least_is_422_naming_it(quotas: str, kind: str) -> None:
    body: dict[str, Any] = {"rules": SOLO, "clock": {"turn_s": 0.001, "on_timeout": "auto"}}
    if kind == "leagues":
        body |= {"name": "Fast", "players": ["a", "b", "c", "d"]}
    async with httpx.AsyncClient(base_url=quotas, timeout=30) as http:
        refused = await http.post(f"/v1/{kind}", json=body, headers=bearer(PLAYER))
        assert "SPADES_MIN_TURN_S" in assert_problem(refused, 422, "invalid_rules")["detail"]
        body["clock"]["turn_s"] = LEAST_TURN_S
        if kind == "leagues":
            made = await http.post(f"/v1/{kind}", json=body, headers=bearer(PLAYER))
            assert made.status_code == 201, made.text
