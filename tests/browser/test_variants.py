"""The table plays every variant's own moves by clicking: blind nil without looking and the
pass that follows it, the two-player draw, and tables of three and six seats."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import PHONE, Browse, data_of, screenshot
from tests.browser.games import Game, new_game, play_out, state, view
from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

PLAYERS = ["ann", "bob", "cy", "dee", "eve", "fay"]


def wait_for_version(page: Page, version: int) -> None:
    page.locator(f'body[data-version="{version}"]').wait_for(state="attached")


def click_and_wait(page: Page, selector: str, version: int) -> None:
    page.locator(selector).first.click()
    page.wait_for_function("v => Number(document.body.dataset.version) > v", arg=version)


def pass_by_clicking(page: Page, http: httpx.Client, game: Game, seat: int) -> list[str]:
    """Choose the seat's first cards, as many as are due, and press Pass."""
    seen = view(http, game, seat)
    wait_for_version(page, seen["version"])
    (due,) = [a for a in seen["legal"] if a["type"] == "pass"]
    button = page.locator('#controls [data-action="pass"]')
    expect(button).to_have_attribute("aria-disabled", "true")  # nothing chosen yet
    chosen = data_of(page.locator("#hand [data-card]"), "card")[: due["count"]]
    for card in chosen:
        page.locator(f'#hand [data-card="{card}"]').first.click()
        expect(page.locator(f'#hand [data-card="{card}"]').first).to_have_attribute(
            "aria-pressed", "true"
        )
    expect(button).to_have_attribute("data-legal", "")
    click_and_wait(page, '#controls [data-action="pass"][data-legal]', seen["version"])
    return chosen


def test_blind_nil_is_bid_without_looking_and_its_pass_is_made_by_clicking(
    browse: Browse, stack: Stack
) -> None:
    rules = {"preset": "partnership", "max_hands": 1, "blind_nil_behind": None}
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(http, rules, PLAYERS[:4])
        public = state(http, game.game_id)
        bidder = public["turn"]
        partner = (bidder + 2) % 4
        pages = {
            seat: browse.page(f"/play/{game.game_id}#token={game.tokens[seat]}")
            for seat in (bidder, partner)
        }
        blind = pages[bidder]
        wait_for_version(blind, public["version"])
        expect(blind.locator("#hand")).to_contain_text("face down")
        expect(blind.locator("#hand [data-card]")).to_have_count(0)
        expect(blind.locator('#controls [data-action="look"]')).to_be_visible()
        click_and_wait(blind, '#controls [data-bid="blind_nil"][data-legal]', public["version"])
        expect(blind.locator(f'[data-seat-bid="{bidder}"]')).to_have_text("blind nil")
        expect(blind.locator("#hand [data-card]")).to_have_count(13)  # bidding is looking

        while (public := state(http, game.game_id))["phase"] == "bid":
            seat = public["turn"]
            if seat == partner:
                wait_for_version(pages[partner], public["version"])
                click_and_wait(
                    pages[partner], '#controls [data-bid="3"][data-legal]', public["version"]
                )
            else:
                http.post(
                    f"/v1/games/{game.game_id}/actions",
                    json={"type": "bid", "bid": 3},
                    headers={"Authorization": f"Bearer {game.tokens[seat]}"},
                ).raise_for_status()

        assert state(http, game.game_id)["phase"] == "pass"
        given = pass_by_clicking(blind, http, game, bidder)
        expect(pages[partner].locator("#turn")).to_contain_text("Your turn: pass")
        screenshot(pages[partner], "table-pass")
        returned = pass_by_clicking(pages[partner], http, game, partner)

        assert set(returned) <= set(view(http, game, bidder)["hand"])
        assert set(given) <= set(view(http, game, partner)["hand"])
        version = play_out(http, game)
        wait_for_version(blind, version)
        expect(blind.locator('#summary [data-rule="blind_nil_value"]')).to_be_visible()


def test_the_two_player_draw_is_played_by_clicking(browse: Browse, stack: Stack) -> None:
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(http, {"preset": "two-player", "max_hands": 1}, PLAYERS[:2])
        pages = [
            browse.page(f"/play/{game.game_id}#token={token}", PHONE if seat else None)
            for seat, token in enumerate(game.tokens)
        ]
        turns = 0
        while (public := state(http, game.game_id))["phase"] == "draw":
            seat = public["turn"]
            seen = view(http, game, seat)
            page = pages[seat]
            wait_for_version(page, public["version"])
            drawn = page.locator(f'#controls .draw [data-card="{seen["drawn_card"]}"]')
            expect(drawn).to_be_visible()
            choice = "keep" if turns % 3 else "discard"
            click_and_wait(
                page, f'#controls [data-action="{choice}"][data-legal]', public["version"]
            )
            turns += 1
            if turns == 6:
                screenshot(pages[1], "table-draw-phone")
        assert turns == 13 * 2
        public = state(http, game.game_id)
        assert public["phase"] == "bid"
        for page in pages:
            wait_for_version(page, public["version"])
            expect(page.locator("#hand [data-card]")).to_have_count(13)
            shown = data_of(page.locator("#table-cards [data-card]"), "card")
            assert sorted(shown) == sorted(public["discards"])


@pytest.mark.parametrize(("preset", "seats"), [("cutthroat", 3), ("six-player", 6)])
def test_a_table_of_three_or_six_seats_is_drawn_and_bid_at(
    browse: Browse, stack: Stack, preset: str, seats: int
) -> None:
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(http, {"preset": preset}, PLAYERS[:seats])
        public = state(http, game.game_id)
        seat = public["turn"]
        page = browse.page(f"/play/{game.game_id}#token={game.tokens[seat]}")
        watcher = browse.page(f"/watch/{game.game_id}", PHONE)
        wait_for_version(page, public["version"])
        expect(page.locator("#seats .seat")).to_have_count(seats)
        expect(watcher.locator("#seats .seat")).to_have_count(seats)
        click_and_wait(page, '#controls [data-action="look"][data-legal]', public["version"])
        hand = len(view(http, game, seat)["hand"])
        expect(page.locator("#hand [data-card]")).to_have_count(hand)
        version = state(http, game.game_id)["version"]
        click_and_wait(page, "#controls [data-bid][data-legal]", version)
        wait_for_version(watcher, state(http, game.game_id)["version"])
        width = watcher.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{width} px wide on a {PHONE['width']} px phone"
        screenshot(page, f"table-{seats}-seats")
