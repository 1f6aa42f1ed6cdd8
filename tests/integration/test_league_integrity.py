"""The integrity report over real HTTP: a league of bots plays a round through the gateway,
the engine and the projection workers; ``GET /v1/leagues/{id}/integrity`` answers the league's
platform with every pair's signals, read from the integrity model, and no card; another
platform gets 404 as for no league (though the league is public), and a caller without a
platform key (none, or a seat's token) 401. ``spades league integrity`` reads the same."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from typer.testing import CliRunner, Result

from services.cli.main import app as cli
from tests.integration import stack
from tests.integration.test_gateway import (
    assert_problem,
    bearer,
)

pytestmark = pytest.mark.integration

OWNER, OTHER = "owner-key", "other-key"
HANDS_EACH = 3
RULES = {"preset": "cutthroat", "max_hands": HANDS_EACH}
PLAYERS = [f"player {n}" for n in range(1, 7)]
WITHIN_S = 60.0

engine = stack.engine
data_dir = stack.data_dir
projections = stack.projections


gateway = stack.served_gateway({"min_version_wait_s": WITHIN_S}, api_keys=f"{OWNER}, {OTHER}")
http = stack.http
ok = stack.ok


async def test_the_leagues_platform_alone_reads_its_integrity_report(
    gateway: str, http: httpx.AsyncClient
) -> None:
    owner = bearer(OWNER)
    # Public, so that the bots read the games without a key, and anyone reads the league: its
    # integrity report is still its platform's alone.
    body = {
        "name": "Integrity",
        "rules": RULES,
        "players": PLAYERS,
        "rounds": 1,
        "visibility": "public",
    }
    league_id = ok(await http.post("/v1/leagues", json=body, headers=owner), 201)["league_id"]
    started = ok(await http.post(f"/v1/leagues/{league_id}/rounds", headers=owner), 201)
    tables = started["tables"]
    assert len(tables) == 2
    await stack.play_tables(gateway, tables)
    records = []
    for table in tables:
        game = f"/v1/games/{table['game_id']}"
        ended = ok(await http.get(game, headers=owner))
        assert ended["status"] == "finished"
        wait = {"min_version": ended["version"]}
        hands = ok(await http.get(f"{game}/hands", params=wait, headers=owner))["hands"]
        # every hand the table played: its HANDS_EACH, or more while the leaders were level
        # after them (a tie on top plays on)
        assert HANDS_EACH <= len(hands) == ended["hand_number"], (len(hands), ended)
        records += hands

    path = f"/v1/leagues/{league_id}/integrity"
    deadline = time.monotonic() + WITHIN_S
    while (report := ok(await http.get(path, headers=owner)))["hands"] < len(records):
        assert time.monotonic() < deadline, f"the integrity model holds {report['hands']} hands"
        await asyncio.sleep(0.2)
    assert report["hands"] == len(records)
    assert (report["league_id"], report["fdr"]) == (league_id, 0.01)
    signals = report["signals"]
    assert signals
    at_a_table = {
        frozenset((a["player"], b["player"]))
        for table in tables
        for a in table["seats"]
        for b in table["seats"]
        if a["seat"] < b["seat"]
    }
    co_seated = {frozenset(s["players"]) for s in signals if s["signal"] == "co_seating"}
    assert co_seated == {frozenset((a, b)) for a in PLAYERS for b in PLAYERS if a < b}, (
        "every pair of the league is read for co-seating"
    )
    for signal in signals:
        assert set(signal["players"]) <= set(PLAYERS)
        assert 0.0 <= signal["p_value"] <= signal["q_value"] <= 1.0
        if signal["signal"] == "co_seating":
            shared = frozenset(signal["players"]) in at_a_table
            assert signal["observed"] == float(shared)
        for where in signal["evidence"]:
            assert where["replay"] == f"/replay/{where['game_id']}?hand={where['hand']}"

    text = (await http.get(path, headers=owner)).text
    cards = {card for record in records for held in record["deal"]["hands"] for card in held}
    assert len(cards) == 51
    assert not [card for card in cards if f'"{card}"' in text], "no card in the report"

    def spades(*args: str) -> Result:
        command = ["league", "integrity", *args, "--url", gateway]
        return CliRunner().invoke(cli, command, env={"COLUMNS": "160"})

    by_cli = await asyncio.to_thread(spades, league_id, "--json", "--api-key", OWNER)
    assert by_cli.exit_code == 0, by_cli.output
    # the gateway of this test runs in this process, and logs to stdout: the answer is last
    assert json.loads(by_cli.stdout.strip().splitlines()[-1]) == report
    shown = await asyncio.to_thread(spades, league_id, "--api-key", OWNER)
    assert shown.exit_code == 0, shown.output
    assert f"integrity of league {league_id} ({len(records)} hands" in shown.stdout
    assert "co_seating" in shown.stdout
    refused = await asyncio.to_thread(spades, league_id, "--api-key", OTHER)
    assert refused.exit_code == 1
    assert "league_not_found" in refused.output

    assert ok(await http.get(f"/v1/leagues/{league_id}", headers=bearer(OTHER)))
    assert_problem(await http.get(path, headers=bearer(OTHER)), 404, "league_not_found")
    assert_problem(
        await http.get("/v1/leagues/no-such-league/integrity", headers=owner),
        404,
        "league_not_found",
    )
    assert_problem(await http.get(path), 401, "unauthorized")
    seat_token = tables[0]["seats"][0]["token"]
    assert_problem(await http.get(path, headers=bearer(seat_token)), 401, "unauthorized")
