"""The table: a whole hand played by clicking, one browser context per seat, and a watcher."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, Request, expect

from tests.browser.conftest import DESK, PHONE, WAIT_MS, Browse, data_of, screenshot
from tests.browser.games import Game, new_game, state, view
from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

SUIT_ORDER = "SHCD"
MAX_TABS = 120
"""Tab presses within which every control of the table must be reached."""


def wait_for_version(page: Page, version: int) -> None:
    page.locator(f'body[data-version="{version}"]').wait_for(state="attached")


def hand_cards(page: Page) -> list[str]:
    return data_of(page.locator("#hand [data-card]"), "card")


def legal_cards(page: Page) -> set[str]:
    cards = data_of(page.locator("#hand [data-card][data-legal]"), "card")
    return set(cards)


def tab_to(page: Page, selector: str) -> None:
    """Move the keyboard focus with Tab alone until it is on an element matching
    ``selector``: proof that a person without a mouse reaches it."""
    for _ in range(MAX_TABS):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement?.matches(s) ?? false", selector):
            return
    raise AssertionError(f"{selector} is not reached with Tab")


def check_hand_sorted_by_suit(cards: list[str]) -> None:
    suits = [card[1] for card in cards]
    groups = [suit for i, suit in enumerate(suits) if i == 0 or suits[i - 1] != suit]
    assert groups == sorted(groups, key=SUIT_ORDER.index), f"not sorted by suit: {cards}"
    assert len(groups) == len(set(groups)), f"a suit split in two: {cards}"
    ranks = "AKQJT98765432"
    for suit in set(suits):
        in_suit = [card[0] for card in cards if card[1] == suit]
        assert in_suit == sorted(in_suit, key=ranks.index), f"{suit} not high to low: {cards}"


def check_legal_marks(page: Page, seen: dict[str, Any]) -> None:
    """The cards marked legal are exactly the view's legal plays; the others are visibly and
    really not playable."""
    playable = {action["card"] for action in seen["legal"] if action["type"] == "play"}
    assert legal_cards(page) == playable
    for card in set(hand_cards(page)) - playable:
        shown = page.locator(f'#hand [data-card="{card}"]').first
        expect(shown).to_have_attribute("aria-disabled", "true")
        expect(shown).to_have_class("card black illegal" if card[1] in "SC" else "card red illegal")


def bid_for(page: Page) -> Any:
    """A legal numeric bid button, 3 if it is legal."""
    three = page.locator('#controls [data-bid="3"][data-legal]')
    if three.count():
        return three
    return page.locator("#controls [data-bid][data-legal]").first


def test_a_whole_hand_is_played_by_clicking_for_every_seat_in_four_browsers(
    browse: Browse, stack: Stack
) -> None:
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(
            http, {"preset": "partnership", "max_hands": 1}, ["ann", "bob", "cy", "dee"]
        )
        # Seat 1 plays on a phone; seat 2 with the keyboard alone.
        pages = [
            browse.page(f"/play/{game.game_id}#token={token}", PHONE if seat == 1 else DESK)
            for seat, token in enumerate(game.tokens)
        ]
        watcher = browse.page(f"/watch/{game.game_id}")
        checked_illegal = checked_last_trick = False
        while (public := state(http, game.game_id))["status"] == "playing":
            seat, version = public["turn"], public["version"]
            page = pages[seat]
            wait_for_version(page, version)
            expect(page.locator("#turn")).to_contain_text("Your turn")
            expect(page.locator(f'#seats [data-seat="{seat}"]')).to_have_attribute(
                "aria-current", "true"
            )
            if public["phase"] == "bid":
                target = bid_for(page)
                selector = f'#controls [data-bid="{target.get_attribute("data-bid")}"][data-legal]'
            else:
                seen = view(http, game, seat)
                check_hand_sorted_by_suit(hand_cards(page))
                check_legal_marks(page, seen)
                if not checked_illegal and len(legal_cards(page)) < len(hand_cards(page)):
                    check_an_illegal_card_does_nothing(page, version)
                    checked_illegal = True
                card = next(iter(sorted(legal_cards(page))))
                selector = f'#hand [data-card="{card}"][data-legal]'
                target = page.locator(selector).first
            if seat == 2:
                page.locator("body").focus()
                tab_to(page, selector)
                page.keyboard.press("Enter")
            else:
                target.click()
            page.wait_for_function("v => Number(document.body.dataset.version) > v", arg=version)
            if (
                public["phase"] == "play"
                and sum(public["tricks"]) == 6
                and not public["current_trick"]
            ):
                wait_for_version(pages[0], state(http, game.game_id)["version"])
                screenshot(pages[0], "table")
                screenshot(pages[1], "table-phone")
                screenshot(watcher, "watch")
                width = pages[1].evaluate("document.documentElement.scrollWidth")
                assert width <= PHONE["width"], f"{width} px wide on a {PHONE['width']} px phone"
            if not checked_last_trick and sum(public["tricks"]) == 1:
                check_the_last_trick(watcher, http, game)
                checked_last_trick = True

        final = state(http, game.game_id)
        assert final["status"] == "finished"
        for page in [*pages, watcher]:
            check_the_summary(page, final)
        screenshot(pages[0], "table-summary")
        screenshot(watcher, "watch-finished")
        pages[3].locator("#summary [data-replay]").click()  # from the hand to its replay
        expect(pages[3].locator("[data-audit]")).to_have_attribute("data-audit", "ok")
        assert checked_illegal, "no seat ever held a card it could not play"
        assert checked_last_trick


def check_an_illegal_card_does_nothing(page: Page, version: int) -> None:
    illegal = page.locator('#hand button[data-card][aria-disabled="true"]').first
    posted: list[str] = []

    def record(request: Request) -> None:
        if request.method == "POST":
            posted.append(request.url)

    page.on("request", record)
    illegal.click(force=True)  # a person can still press it: nothing may happen
    page.wait_for_timeout(300)  # a request would have been sent at once; none may be
    page.remove_listener("request", record)
    assert posted == []
    assert page.locator("body").get_attribute("data-version") == str(version)


def check_the_last_trick(watcher: Page, http: httpx.Client, game: Game) -> None:
    """After the first trick the watcher may show it again, with who led and who won."""
    events = http.get(f"/v1/games/{game.game_id}/events", params={"limit": 1000}).json()
    played = [r["event"] for r in events["events"] if r["event"]["type"] == "card_played"][:4]
    won = next(r["event"] for r in events["events"] if r["event"]["type"] == "trick_won")
    wait_for_version(watcher, events["version"])
    button = watcher.locator("#last-trick-button")
    expect(button).to_be_enabled()
    button.click()
    shown = watcher.locator("#last-trick")
    expect(shown).to_be_visible()
    cards = data_of(shown.locator("[data-card]"), "card")
    assert cards == [event["card"] for event in played]
    winner = game.players[won["seat"]]
    expect(shown).to_contain_text(f"{winner} won it")
    expect(shown).to_contain_text(f"{game.players[played[0]['seat']]} led")
    button.click()
    expect(shown).to_be_hidden()


def check_the_summary(page: Page, final: dict[str, Any]) -> None:
    """The end of the hand: its score, line by line, and a link to its replay."""
    wait_for_version(page, final["version"])
    summary = page.locator("#summary")
    expect(summary).to_be_visible()
    expect(summary).to_contain_text("Hand 1 scored")
    expect(summary.locator("[data-rule]").first).to_be_visible(timeout=WAIT_MS)
    assert summary.locator('[data-rule="contract"], [data-rule="failed_bid"]').count() >= 2
    for unit, score in enumerate(final["scores"]):
        expect(summary.locator(f'[data-unit="{unit}"] .arithmetic')).to_contain_text(f"= {score}")
    link = summary.locator("[data-replay]")
    replay = re.escape(f"/replay/{final['game_id']}?hand=1")
    expect(link).to_have_attribute("href", re.compile(rf"^{replay}(#token=st2\..+)?$"))
    expect(page.locator("#turn")).to_contain_text("Game over")


def test_a_game_without_a_clock_shows_none(browse: Browse, stack: Stack) -> None:
    """No countdown, bank or away badge for a game created without a clock (a clocked one is
    in test_clock.py)."""
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(http, {"preset": "partnership"}, ["ann", "bob", "cy", "dee"])
        public = state(http, game.game_id)
        assert public["clock"] is None
        watching = (public["turn"] + 2) % 4
        page = browse.page(f"/play/{game.game_id}#token={game.tokens[watching]}")
        wait_for_version(page, public["version"])
        expect(page.locator("#seats [data-seat]")).to_have_count(4)
        expect(page.locator(".countdown, [data-bank], [data-away]")).to_have_count(0)
        expect(page.locator("#turn-clock")).to_be_hidden()


def test_a_watcher_sees_the_table_fill_up_and_the_first_hand_dealt(
    browse: Browse, stack: Stack
) -> None:
    with httpx.Client(base_url=stack.base_url) as http:
        created = http.post("/v1/games", json={"rules": {"preset": "partnership"}}).json()
        game_id = created["game_id"]
        watcher = browse.page(f"/watch/{game_id}", PHONE)
        turn = watcher.locator("#turn")
        expect(turn).to_contain_text("Waiting for players: 0 of 4 seated")
        for seat, player in enumerate(["ann", "bob", "cy"]):
            http.post(f"/v1/games/{game_id}/seats", json={"player": player, "seat": seat})
        expect(turn).to_contain_text("3 of 4 seated")
        expect(watcher.locator('#seats [data-seat="1"]')).to_contain_text("bob")
        http.post(f"/v1/games/{game_id}/seats", json={"player": "dee", "seat": 3})
        public = state(http, game_id)
        wait_for_version(watcher, public["version"])
        expect(watcher.locator("#title")).to_contain_text("hand 1")
        expect(turn).to_contain_text(f"{public['seats'][public['turn']]['player']} to bid")
        expect(watcher.locator("#log")).to_contain_text("dee sat down at seat 3")
        expect(watcher.locator("#hand-panel")).to_be_hidden()  # a watcher holds no hand
