"""``spades bots`` against the running stack: it fills games with bots, plays them to the end over
HTTP only, and every game it played audits clean."""

from __future__ import annotations

import asyncio
import sys

import pytest

from services.client import SpadesClient
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

BOTS_TIMEOUT_S = 600
LIST_CATCH_UP_S = 10.0
BOT_NAME = "bot 1"
"""The name ``spades bots`` gives the player in seat 0."""


async def finished_bot_games(client: SpadesClient) -> set[str]:
    found: set[str] = set()
    cursor: str | None = None
    while True:
        page = await client.games(status="finished", player=BOT_NAME, cursor=cursor, limit=100)
        found.update(summary.game_id for summary in page.games)
        if page.next_cursor is None:
            return found
        cursor = page.next_cursor


@pytest.mark.parametrize(
    ("preset", "rules"),
    [
        ("partnership", None),
        ("six-player", '{"max_hands": 2}'),
        ("jokers-54", '{"max_hands": 2, "first_hand": "no_bid", "blind_bids": 6}'),
    ],
)
async def test_spades_bots_plays_its_games_to_the_end(
    stack: Stack, client: SpadesClient, preset: str, rules: str | None
) -> None:
    before = await finished_bot_games(client)
    argv = [sys.executable, "-m", "services.cli.main", "bots", "--games", "2"]
    argv += ["--preset", preset, "--url", stack.base_url, "--concurrency", "2"]
    if rules is not None:
        argv += ["--rules", rules]
    if stack.api_key:
        argv += ["--api-key", stack.api_key]
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(process.communicate(), BOTS_TIMEOUT_S)
    assert process.returncode == 0, err.decode()[-4000:]
    assert "games finished" in out.decode()
    played = await finished_bot_games(client) - before
    deadline = asyncio.get_running_loop().time() + LIST_CATCH_UP_S
    while len(played) < 2 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.1)  # the game list is a read model catching up: nothing to await
        played = await finished_bot_games(client) - before
    assert len(played) == 2, played
    for game_id in played:
        state = await client.state(game_id)
        assert state.status == "finished"
        assert state.winners
        assert state.rules.preset == preset
        audit = await client.audit(game_id)
        assert audit.ok, audit
