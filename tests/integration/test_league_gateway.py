"""Leagues over real HTTP: the gateway under uvicorn, a real engine process and the projection
workers behind it, and bots playing every seat through the API with the tokens a round gives."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from services.runtime.nats_server import EmbeddedNats
from tests.integration import stack
from tests.integration.support import EngineProcess
from tests.integration.test_gateway import (
    ServedGateway,
    assert_problem,
    bearer,
    gateway_settings,
)

pytestmark = pytest.mark.integration

MIN_VERSION_WAIT_S = 2.0
RULES = {"preset": "solo", "max_hands": 1}
PLAYERS = [f"player {n}" for n in range(1, 10)]


engine = stack.engine
data_dir = stack.data_dir
projections = stack.projections


gateway = stack.served_gateway({"min_version_wait_s": MIN_VERSION_WAIT_S})
http = stack.http
ok = stack.ok


async def play_round(gateway: str, started: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Bots in every seat of the round, each with its own token; the games' final states."""
    outcomes = await stack.play_tables(gateway, started["tables"])
    finished = {}
    async with httpx.AsyncClient(base_url=gateway) as http:
        for outcome in outcomes:
            finished[outcome.game_id] = ok(await http.get(f"/v1/games/{outcome.game_id}"))
    assert all(state["status"] == "finished" for state in finished.values())
    return finished


def results_by_player(games: dict[str, dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per player, from the games' public states: (points, wins)."""
    totals: dict[str, tuple[int, int]] = {}
    for state in games.values():
        for seat in state["seats"]:
            unit = next(u for u, seats in enumerate(state["units"]) if seat["seat"] in seats)
            points, wins = totals.get(seat["player"], (0, 0))
            won = unit in state["winners"]
            totals[seat["player"]] = (points + state["scores"][unit], wins + won)
    return totals


async def test_a_league_played_round_by_round_through_the_api(
    gateway: str, http: httpx.AsyncClient
) -> None:
    body = {"name": "Tuesday", "rules": RULES, "players": PLAYERS, "rounds": 2}
    response = await http.post("/v1/leagues", json=body)
    league = ok(response, 201)
    league_id = league["league_id"]
    assert response.headers["location"] == f"/v1/leagues/{league_id}"
    assert (league["pairing"], league["rounds_scheduled"], league["next_round"]) == ("swiss", 0, 1)
    assert ok(await http.get(f"/v1/leagues/{league_id}")) == league

    rounds = f"/v1/leagues/{league_id}/rounds"
    first = ok(await http.post(rounds, headers={"Idempotency-Key": "r1"}), 201)
    assert first["round"] == 1
    assert len(first["tables"]) == 2
    assert len(first["byes"]) == 1
    for table in first["tables"]:
        seat = table["seats"][2]
        seat_view = f"/v1/games/{table['game_id']}/view"
        view = ok(await http.get(seat_view, headers=bearer(seat["token"])))
        assert (view["seat"], view["seats"][2]["player"]) == (2, seat["player"])

    again = ok(await http.post(rounds, headers={"Idempotency-Key": "r1"}), 201)
    assert [t["game_id"] for t in again["tables"]] == [t["game_id"] for t in first["tables"]]
    assert again["byes"] == first["byes"]

    early = await http.post(rounds)
    assert "still being played" in assert_problem(early, 409, "wrong_phase")["detail"]
    stranger = await http.post(
        f"/v1/games/{first['tables'][0]['game_id']}/seats", json={"player": "stranger"}
    )
    assert_problem(stranger, 403, "forbidden")

    round_one = await play_round(gateway, first)
    standings = ok(await http.get(f"/v1/leagues/{league_id}/standings", params={"min_version": 2}))
    assert standings["version"] == 2
    rows = {row["player"]: row for row in standings["players"]}
    assert set(rows) == set(PLAYERS)
    (resting,) = first["byes"]
    assert (rows[resting]["games"], rows[resting]["byes"]) == (0, 1)
    assert rows[resting]["rating"] == {"mu": 25.0, "sigma": 25.0 / 3, "ordinal": 0.0}
    for player, (points, wins) in results_by_player(round_one).items():
        assert (rows[player]["points"], rows[player]["wins"], rows[player]["games"]) == (
            points,
            wins,
            1,
        )
        assert rows[player]["rating"]["sigma"] < 25.0 / 3
    ranked = [
        (-row["wins"], -row["points"], -row["rating"]["ordinal"]) for row in standings["players"]
    ]
    assert ranked == sorted(ranked)

    for game_id, state in round_one.items():  # the game list catches up: read the round
        wait = {"min_version": state["version"]}
        ok(await http.get(f"/v1/games/{game_id}/scoreboard", params=wait))
    shown = ok(await http.get(f"/v1/leagues/{league_id}/rounds/1"))
    for table in shown["tables"]:
        state = round_one[table["game_id"]]
        assert table["players"] == [seat["player"] for seat in state["seats"]]
        assert (table["status"], table["scores"], table["winners"]) == (
            "finished",
            state["scores"],
            state["winners"],
        )

    second = ok(await http.post(rounds, json={"round": 2}), 201)
    assert second["byes"] != first["byes"]
    assert {t["game_id"] for t in second["tables"]} == {f"{league_id}-2-1", f"{league_id}-2-2"}
    round_two = await play_round(gateway, second)
    final = ok(await http.get(f"/v1/leagues/{league_id}/standings", params={"min_version": 4}))
    assert final["version"] == 4
    assert sum(row["games"] for row in final["players"]) == 4 * 4
    assert sum(row["byes"] for row in final["players"]) == 2
    totals = results_by_player({**round_one, **round_two})
    assert {row["player"]: row["points"] for row in final["players"] if row["games"]} == {
        player: points for player, (points, _wins) in totals.items()
    }
    over = await http.post(rounds)
    assert assert_problem(over, 409, "wrong_phase")["detail"] == "all 2 rounds are scheduled"
    league = ok(await http.get(f"/v1/leagues/{league_id}"))
    assert (league["rounds_scheduled"], league["next_round"]) == (2, None)


async def test_league_refusals_are_problems(http: httpx.AsyncClient) -> None:
    base = {"name": "N", "rules": RULES, "players": PLAYERS[:4]}
    invalid = await http.post("/v1/leagues", json={**base, "rules": {"preset": "whist"}})
    assert_problem(invalid, 422, "invalid_rules")
    twice = await http.post("/v1/leagues", json={**base, "players": ["a", "b", "a", "c"]})
    assert_problem(twice, 400, "malformed")
    few = await http.post("/v1/leagues", json={**base, "players": ["a", "b", "c"]})
    assert "needs 4" in assert_problem(few, 422, "invalid_rules")["detail"]
    assert_problem(await http.post("/v1/leagues", json={**base, "rounds": 0}), 422, "invalid_rules")
    assert_problem(await http.get("/v1/leagues/no-such-league"), 404, "league_not_found")
    assert_problem(await http.get("/v1/leagues/not%20an%20id"), 404, "league_not_found")
    assert_problem(await http.post("/v1/leagues/nope/rounds"), 404, "league_not_found")
    league = ok(await http.post("/v1/leagues", json=base), 201)
    url = f"/v1/leagues/{league['league_id']}"
    assert_problem(await http.get(f"{url}/rounds/1"), 404, "round_not_found")
    assert_problem(await http.post(f"{url}/rounds", json={"round": 3}), 409, "wrong_phase")
    assert_problem(await http.post(f"{url}/rounds", json={"round": "x"}), 400, "malformed")
    # More games than the league has scheduled: no wait could count them, answered at once.
    late = await http.get(f"{url}/standings", params={"min_version": 1})
    assert "scheduled 0 games" in assert_problem(late, 409, "conflict")["detail"]


async def test_creating_a_league_is_safe_to_retry(http: httpx.AsyncClient) -> None:
    body = {"name": "Retried", "rules": RULES, "players": PLAYERS[:4]}
    key = {"Idempotency-Key": f"league-{uuid.uuid4()}"}
    first = ok(await http.post("/v1/leagues", json=body, headers=key), 201)
    again = ok(await http.post("/v1/leagues", json=body, headers=key), 201)
    assert again == first
    renamed = await http.post("/v1/leagues", json={**body, "name": "Other"}, headers=key)
    assert_problem(renamed, 422, "idempotency_key_reused")
    fresh = ok(await http.post("/v1/leagues", json=body), 201)
    assert fresh["league_id"] != first["league_id"]


async def test_platform_keys_guard_leagues(
    shared_nats: EmbeddedNats, engine: EngineProcess, tmp_path: Path
) -> None:
    settings = gateway_settings(shared_nats.url, tmp_path, api_keys="league-key")
    body = {"name": "N", "rules": RULES, "players": PLAYERS[:4]}
    with ServedGateway(settings) as served:
        async with httpx.AsyncClient(base_url=served.url, timeout=10) as http:
            assert_problem(await http.post("/v1/leagues", json=body), 401, "unauthorized")
            created = await http.post("/v1/leagues", json=body, headers=bearer("league-key"))
            assert created.status_code == 201, created.text
            rounds = f"/v1/leagues/{created.json()['league_id']}/rounds"
            assert_problem(await http.post(rounds), 401, "unauthorized")
            started = await http.post(rounds, headers=bearer("league-key"))
            assert started.status_code == 201, started.text
