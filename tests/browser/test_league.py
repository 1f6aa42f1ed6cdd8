"""The league page after a simulated round, and the front page that leads to it."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, Browse, screenshot
from tests.browser.games import Game, play_out
from tests.browser.test_accessibility import violations
from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

SIMULATE_TIMEOUT_S = 600
PLAYERS = 8


def simulate_a_round(stack: Stack) -> str:
    """``spades league simulate``: one round of bot games, each of one hand; the league's id."""
    argv = [sys.executable, "-m", "services.cli.main", "league", "simulate"]
    argv += ["--players", str(PLAYERS), "--rounds", "1", "--bots", "--url", stack.base_url]
    argv += ["--preset", "partnership", "--rules", '{"max_hands": 1}']
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=SIMULATE_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = re.search(r"league ([0-9a-f]{16}):", done.stderr)
    assert found, done.stderr[-2000:]
    return found[1]


def test_the_league_page_shows_a_simulated_round_and_the_standings(
    browse: Browse, stack: Stack
) -> None:
    league_id = simulate_a_round(stack)
    with httpx.Client(base_url=stack.base_url) as http:
        standings = http.get(f"/v1/leagues/{league_id}/standings").json()
        played = http.get(f"/v1/leagues/{league_id}/rounds/1").json()
    assert len(standings["players"]) == PLAYERS

    page = browse.page(f"/leagues/{league_id}")
    expect(page.locator("#title")).to_contain_text("League")
    rows = page.locator("#standings tbody tr")
    expect(rows).to_have_count(PLAYERS)
    for row, standing in zip(rows.all(), standings["players"], strict=True):
        expect(row).to_have_attribute("data-player", standing["player"])
        expect(row.locator("td").nth(1)).to_have_text(str(standing["wins"]))
        expect(row.locator("td").nth(2)).to_have_text(str(standing["points"]))
        expect(row).to_contain_text(f"{standing['rating']['ordinal']:.1f}")
    expect(page.locator("#standings caption")).to_contain_text("fewest forfeits")
    expect(page.locator('[data-round="1"] h3')).to_have_text("Round 1 · finished")
    tables = page.locator('[data-round="1"] [data-game]')
    expect(tables).to_have_count(len(played["tables"]))
    for table in played["tables"]:
        shown = page.locator(f'[data-game="{table["game_id"]}"]')
        expect(shown).to_have_attribute("data-status", "finished")
        expect(shown.locator(f'a[href="/watch/{table["game_id"]}"]')).to_be_visible()
        expect(shown.locator(f'a[href="/replay/{table["game_id"]}?hand=1"]')).to_be_visible()
        for player in table["players"]:
            expect(shown).to_contain_text(player)
    screenshot(page, "league")

    # From the league to a table's replay, by following its link.
    first = played["tables"][0]["game_id"]
    page.locator(f'[data-game="{first}"] a', has_text="replay").click()
    expect(page.locator("[data-audit]")).to_have_attribute("data-audit", "ok")

    phone = browse.page(f"/leagues/{league_id}", PHONE)
    expect(phone.locator("#standings tbody tr")).to_have_count(PLAYERS)
    screenshot(phone, "league-phone")

    home = browse.page("/")
    league_link = home.locator(f'[data-league="{league_id}"] a')
    expect(league_link).to_have_attribute("href", f"/leagues/{league_id}")
    expect(home.locator(f'#finished [data-game="{first}"]')).to_be_visible()
    screenshot(home, "home")


def started_tables(http: httpx.Client, league_id: str) -> list[Game]:
    """Start the league's next round; its tables as games with their seats' tokens."""
    started = http.post(f"/v1/leagues/{league_id}/rounds", json={})
    assert started.status_code == 201, started.text
    return [
        Game(
            table["game_id"],
            [seat["token"] for seat in table["seats"]],
            [seat["player"] for seat in table["seats"]],
        )
        for table in started.json()["tables"]
    ]


def test_the_league_page_shows_the_knockout_bracket_to_its_champion(
    browse: Browse, stack: Stack
) -> None:
    ratings = {"Kim": 4.0, "Lee": 3.0, "Max": 2.0, "Ned": 1.0}
    body = {
        "name": "Cup",
        "rules": {"preset": "two-player"},
        "players": list(ratings),
        "knockout": {"deals": 1, "ratings": ratings, "tie_break": "extra_deal", "extra_deals": 2},
    }
    with httpx.Client(base_url=stack.base_url, timeout=15.0) as http:
        created = http.post("/v1/leagues", json=body)
        assert created.status_code == 201, created.text
        league_id = created.json()["league_id"]
        semis = started_tables(http, league_id)
        assert [game.players for game in semis] == [["Kim", "Ned"], ["Lee", "Max"]]
        for game in semis:
            play_out(http, game)
        page = browse.page(f"/leagues/{league_id}")
        semifinal = page.locator('.bracket-round[data-round="1"] [data-match]')
        expect(semifinal).to_have_count(2)
        (final,) = started_tables(http, league_id)
        play_out(http, final)
        league = http.get(f"/v1/leagues/{league_id}").json()
    bracket = league["knockout"]
    (winner,) = bracket["champion"]
    assert winner in final.players

    page = browse.page(f"/leagues/{league_id}")
    expect(page.locator("#knockout-panel")).to_be_visible()
    expect(page.locator("#champion")).to_have_text(f"Champion: {winner}")
    expect(page.locator('.bracket-round[data-round="2"] [data-match]')).to_have_count(1)
    decided = page.locator(f'.bracket-round[data-round="2"] [data-winner="{winner}"]')
    expect(decided).to_contain_text("(goes on)")
    expect(decided.locator("a")).to_have_attribute("href", f"/watch/{final.game_id}")
    expect(page.locator("#knockout")).to_contain_text("seeded by the organiser's ratings")
    expect(page.locator("#knockout")).to_contain_text(
        "plays on, 2 extra deal(s) at most, then goes to the better seed"
    )
    screenshot(page, "league-knockout")
    phone = browse.page(f"/leagues/{league_id}", PHONE)
    expect(phone.locator("#champion")).to_be_visible()
    wide = phone.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert wide[0] <= wide[1], wide
    assert not violations(phone)
    screenshot(phone, "league-knockout-phone")


def test_the_league_page_shows_the_directors_adjustments_and_voided_tables(
    browse: Browse, stack: Stack
) -> None:
    body: dict[str, Any] = {
        "name": "Ops",
        "rules": {"preset": "two-player", "max_hands": 1},
        "players": ["Uma", "Vic", "Wes", "Xia"],
    }
    with httpx.Client(base_url=stack.base_url, timeout=15.0) as http:
        created = http.post("/v1/leagues", json={**body, "rounds": 2})
        assert created.status_code == 201, created.text
        league_id = created.json()["league_id"]
        url = f"/v1/leagues/{league_id}"
        first, second = started_tables(http, league_id)
        play_out(http, first)
        play_out(http, second)
        void = {"game_id": first.game_id, "reason": "a misdeal found after"}
        assert http.post(f"{url}/voids", json=void).status_code == 201
        penalty = {"player": second.players[0], "points": -30, "reason": "slow play"}
        assert http.post(f"{url}/adjustments", json=penalty).status_code == 201

    page = browse.page(f"/leagues/{league_id}")
    expect(page.locator(f'#voided [data-voided="{first.game_id}"]')).to_contain_text(
        "a misdeal found after"
    )
    expect(page.locator('#adjustments [data-adjustment="1"]')).to_contain_text(
        f"-30 to {second.players[0]}"
    )
    expect(page.locator('#adjustments [data-adjustment="1"]')).to_contain_text("slow play")
    row = page.locator(f'#standings tr[data-player="{second.players[0]}"]')
    expect(row).to_contain_text("(adjusted -30)")
    expect(page.locator(f'[data-round="1"] [data-game="{first.game_id}"]')).to_contain_text(
        "voided"
    )
    expect(page.locator("#knockout-panel")).to_be_hidden()
    screenshot(page, "league-director")


def test_the_league_page_shows_a_duplicate_events_boards_across_its_tables(
    browse: Browse, stack: Stack
) -> None:
    argv = [sys.executable, "-m", "services.cli.main", "league", "simulate"]
    argv += ["--players", "8", "--rounds", "1", "--bots", "--duplicate", "2"]
    argv += ["--url", stack.base_url]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=SIMULATE_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = re.search(r"league ([0-9a-f]{16}):", done.stderr)
    assert found, done.stderr[-2000:]
    league_id = found[1]
    with httpx.Client(base_url=stack.base_url) as http:
        across = http.get(f"/v1/leagues/{league_id}/boards").json()["boards"]
        standings = http.get(f"/v1/leagues/{league_id}/standings").json()["players"]
    assert [board["board"] for board in across] == [1, 2]

    page = browse.page(f"/leagues/{league_id}")
    expect(page.locator("#boards-panel")).to_be_visible()
    expect(page.locator("#boards .board")).to_have_count(2)
    for board in across:
        shown = page.locator(f'#boards [data-board="{board["board"]}"]')
        expect(shown.locator("tbody tr")).to_have_count(len(board["results"]))
        for result in board["results"]:
            row = shown.locator(
                f'tr[data-game="{result["game_id"]}"][data-direction="{result["direction"]}"]'
            )
            expect(row).to_contain_text(" & ".join(result["players"]))
            expect(row).to_contain_text(f"{result['matchpoints']:g} of {result['top']}")
            expect(row.locator("a")).to_have_attribute(
                "href", f"/replay/{result['game_id']}?hand={result['hand']}"
            )
    expect(page.locator("#standings thead")).to_contain_text("Percentage")
    best = standings[0]
    first_row = page.locator("#standings tbody tr").first
    expect(first_row).to_have_attribute("data-player", best["player"])
    expect(first_row).to_contain_text(f"{best['percentage']:.1f}%")
    expect(page.locator("#about")).to_contain_text("a duplicate event of 2 board(s) a round")
    shot = screenshot(page, "league-duplicate")
    found_violations = violations(page)
    assert not found_violations, f"{shot}: {found_violations}"
    phone = browse.page(f"/leagues/{league_id}", PHONE)
    expect(phone.locator("#boards .board")).to_have_count(2)
    wide = phone.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert wide[0] <= wide[1], wide
    assert not violations(phone)
