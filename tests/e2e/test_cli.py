"""The terminal commands against the real stack: ``new-game`` and ``sit`` as a user types them,
and the ``play`` and ``watch`` loops following whole games over the event stream."""

from __future__ import annotations

import asyncio
import io
import random
import re

import httpx
import pytest
from rich.console import Console, RenderableType
from typer.testing import CliRunner

from services.cli.main import app as spades
from services.cli.play import Chooser, PromptChooser, app, play_game, watch_game
from services.client import SeatView, SpadesClient
from tests.e2e.players import Style, choose
from tests.e2e.stack import Stack

pytestmark = pytest.mark.e2e

GAME_TIMEOUT_S = 120.0
TWO_PLAYER = {"preset": "two-player", "max_hands": 1}


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120, record=True)


def random_player(seed: str) -> Chooser:
    """A chooser that takes a random legal move, as the players of the other tests do."""
    rng = random.Random(seed)

    async def chooser(view: SeatView) -> dict[str, object]:
        return choose(view, rng, Style())

    return chooser


def test_new_game_and_sit_print_what_a_script_needs(stack: Stack) -> None:
    runner = CliRunner()
    url = ["--url", stack.base_url]
    platform = {"SPADES_API_KEY": stack.api_key or ""}
    created = runner.invoke(
        app,
        ["new-game", "--preset", "two-player", "--rules", '{"target": 200}', *url],
        env=platform,
    )
    assert created.exit_code == 0, created.output
    game_id = created.stdout.strip()
    # the platform seats its users: without its key the game is not even there
    stranger = runner.invoke(app, ["sit", game_id, "--player", "eve", *url], env={})
    assert stranger.exit_code == 1
    assert "404 game_not_found" in stranger.stderr
    seats = [
        runner.invoke(app, ["sit", game_id, "--player", name, *url], env=platform).stdout.split()
        for name in ("ann", "bob")
    ]
    taken = runner.invoke(
        app, ["sit", game_id, "--player", "cy", "--seat", "0", *url], env=platform
    )

    assert [seat[0] for seat in seats] == ["0", "1"]
    assert all(len(seat) == 2 for seat in seats)
    assert taken.exit_code == 1
    assert "409 seat_taken" in taken.stderr
    with httpx.Client(base_url=stack.base_url) as http:
        key = {"Authorization": f"Bearer {stack.api_key}"}
        state = http.get(f"/v1/games/{game_id}", headers=key).json()
        view = http.get(
            f"/v1/games/{game_id}/view", headers={"Authorization": f"Bearer {seats[1][1]}"}
        )
    assert state["rules"]["target"] == 200
    assert [seat["player"] for seat in state["seats"]] == ["ann", "bob"]
    assert view.json()["seat"] == 1


def test_new_game_without_the_platform_key_says_why(stack: Stack) -> None:
    refused = CliRunner().invoke(
        app, ["new-game", "--url", stack.base_url], env={"SPADES_API_KEY": ""}
    )
    assert refused.exit_code == 1
    assert "401 unauthorized" in refused.stderr


def test_a_server_that_is_not_there_is_an_error_not_a_traceback() -> None:
    refused = CliRunner().invoke(
        app, ["sit", "g1", "--player", "ann", "--url", "http://127.0.0.1:9"]
    )
    assert refused.exit_code == 1
    assert "cannot reach the server" in refused.stderr


@pytest.mark.parametrize(
    "command",
    [["bots", "--games", "1"], ["league", "standings", "l1"], ["league", "schedule", "l1"]],
)
def test_bots_and_leagues_without_a_server_say_so_too(command: list[str]) -> None:
    refused = CliRunner().invoke(spades, [*command, "--url", "http://127.0.0.1:9"])
    assert refused.exit_code == 1
    assert "cannot reach the server at http://127.0.0.1:9" in refused.stderr


async def test_a_terminal_player_plays_a_whole_game(client: SpadesClient) -> None:
    game = await client.create_game(TWO_PLAYER)
    you = await client.take_seat(game.game_id, "you", seat=0)
    other = await client.take_seat(game.game_id, "bot", seat=1)
    prompts: list[str] = []

    async def always_the_first_move(prompt: str) -> str:
        prompts.append(prompt)
        return "1"

    screen = quiet()
    chooser = PromptChooser(screen, always_the_first_move)
    bot = asyncio.create_task(
        play_game(client, game.game_id, other.token, random_player("bot"), quiet())
    )
    final = await asyncio.wait_for(
        play_game(client, game.game_id, you.token, chooser, screen), GAME_TIMEOUT_S
    )
    await asyncio.wait_for(bot, GAME_TIMEOUT_S)

    assert final.status == "finished"
    record = (await client.hands(game.game_id, min_version=final.version))[0]
    # After the draw the first move offered in the bidding is nil (blind nil is off here).
    assert record.bids[0] == "nil"
    assert len(prompts) >= 13 + 1, "a prompt for every play and the bid"
    text = screen.export_text()
    assert "Your hand:" in text
    assert "Final scores:" in text
    assert "bot" in text
    # who won each of the hand's 13 tricks, whoever completed it, told once
    winners = re.findall(r"seat \d \((?:you|bot)\) wins the trick\.", text)
    assert len(winners) == 13, text


async def test_watching_follows_the_game_to_its_end(client: SpadesClient) -> None:
    game = await client.create_game(TWO_PLAYER)
    seats = [await client.take_seat(game.game_id, name) for name in ("ann", "bob")]
    shown: list[RenderableType] = []
    watching = asyncio.create_task(watch_game(client, game.game_id, None, shown.append))
    players = [
        play_game(client, game.game_id, seat.token, random_player(seat.player), quiet())
        for seat in seats
    ]
    await asyncio.wait_for(asyncio.gather(*players), GAME_TIMEOUT_S)
    final = await asyncio.wait_for(watching, GAME_TIMEOUT_S)

    assert final.status == "finished"
    assert final.version == (await client.state(game.game_id)).version
    screen = quiet()
    for frame in shown:
        screen.print(frame)
    text = screen.export_text()
    assert "ann plays" not in text  # seats are named as seats, players in brackets
    assert "seat 0 (ann) plays" in text
    assert "seat 1 (bob) wins the trick." in text or "seat 0 (ann) wins the trick." in text
    assert "over, won by" in text
    assert "Your hand" not in text, "the public watcher sees no hand"
