"""The league page after a simulated round, and the front page that leads to it."""

from __future__ import annotations

import re
import subprocess
import sys

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, Browse, screenshot
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
