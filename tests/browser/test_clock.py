"""The clock at the table, against the stack's real timer worker: the countdown of the seat on
turn ticks, each seat's bank shows, a move the service made for a seat whose time ran out is
marked, and an away seat sees "I'm back" and pressing it brings the seat back."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import PHONE, WAIT_MS, Browse, screenshot
from tests.browser.games import TIMEOUT_S, Game, first_move, new_game, state, view
from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

TURN_S = 4
BANK_S = 2
CLOCK = {"turn_s": TURN_S, "bank_s": BANK_S, "on_timeout": "auto", "away_after": 1}
"""Short enough for a seat's time to run out during the test: after one timeout it is away."""
RUN_OUT_MS = WAIT_MS + (TURN_S + BANK_S) * 1000
"""The longest a page may take to show a timeout: the seat's whole time, then the wait."""


def countdown_moves(page: Page, selector: str) -> None:
    """The countdown at ``selector`` shows a time left, then a different one: it ticks."""
    shown = page.locator(selector).first
    expect(shown).to_contain_text("left")
    first = shown.text_content()
    page.wait_for_function(
        "([s, t]) => { const e = document.querySelector(s); return e && e.textContent !== t; }",
        arg=[selector, first],
    )


def try_move(http: httpx.Client, game: Game, seat: int) -> None:
    """The seat's first legal move, unless its clock beat us to it (a 409: the game moved)."""
    seen = view(http, game, seat)
    answer = http.post(
        f"/v1/games/{game.game_id}/actions",
        json=first_move(seen),
        headers={"Authorization": f"Bearer {game.tokens[seat]}"},
        timeout=TIMEOUT_S,
    )
    assert answer.status_code in (200, 409), answer.text


def test_the_clock_ticks_marks_timed_out_moves_and_brings_an_away_seat_back(
    browse: Browse, stack: Stack
) -> None:
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(
            http, {"preset": "partnership", "max_hands": 1}, ["ann", "bob", "cy", "dee"], CLOCK
        )
        public = state(http, game.game_id)
        assert public["clock"]["seats"][public["turn"]]["deadline"] is not None
        late = public["turn"]  # the first bidder: nobody bids for it, so its time runs out
        player = game.players[late]
        page = browse.page(f"/play/{game.game_id}#token={game.tokens[late]}")
        watcher = browse.page(f"/watch/{game.game_id}", PHONE)

        # Every seat's bank, and a ticking countdown for the seat on turn, on both pages.
        for shown in (page, watcher):
            for seat in range(4):
                bank = shown.locator(f'#seats [data-seat="{seat}"] [data-bank="{seat}"]')
                expect(bank).to_be_visible()
        # The seat that bids last has used nothing of its bank yet. The late seat's may be
        # spent already, if the pages took longer to open than its turn (a loaded machine).
        last = (late + 3) % 4
        expect(page.locator(f'[data-bank="{last}"]')).to_have_text(f"bank {BANK_S} s")
        expect(page.locator(f'[data-bank="{late}"]')).to_have_text(
            re.compile(rf"bank [0-{BANK_S}] s")
        )
        countdown_moves(page, "#turn-clock .countdown[data-deadline]")
        countdown_moves(watcher, "#seats .countdown[data-deadline]")

        # Its time runs out: the service bids for it, and both pages say so.
        for shown in (page, watcher):
            marked = shown.locator("#log li[data-timed-out]").first
            expect(marked).to_contain_text(player, timeout=RUN_OUT_MS)
            expect(marked).to_contain_text(" bid ")
            expect(marked).to_contain_text("timed out: played by the service")
            expect(shown.locator("#log")).to_contain_text(f"Time ran out for {player}")
            expect(shown.locator(f'#seats [data-seat="{late}"] .service-note')).to_contain_text(
                "bid by the service"
            )
            expect(shown.locator(f'#seats [data-seat="{late}"][data-away]')).to_contain_text("away")
        expect(page.locator(f'[data-bank="{late}"]')).to_have_text("bank 0 s")  # it used it all
        assert {"type": "back"} in view(http, game, late)["legal"]

        # The away seat's own page offers "I'm back"; pressing it brings the seat back.
        back = page.locator('#controls [data-action="back"]')
        expect(back).to_have_text("I'm back")
        expect(watcher.locator('[data-action="back"]')).to_have_count(0)
        screenshot(page, "table-clock-away")
        back.click()
        expect(back).to_have_count(0)
        for shown in (page, watcher):
            expect(shown.locator(f'#seats [data-seat="{late}"][data-away]')).to_have_count(0)
            expect(shown.locator("#log")).to_contain_text("is back")
        assert view(http, game, late)["clock"]["seats"][late]["away"] is False

        # The others bid in time; the first lead is the late seat's again, and its time runs
        # out again: the card the service played for it is marked in the trick.
        while (public := state(http, game.game_id))["phase"] == "bid":
            if public["turn"] == late:
                break
            try_move(http, game, public["turn"])
        for shown in (page, watcher):
            played = shown.locator(f'#trick li[data-seat="{late}"][data-timed-out]')
            expect(played).to_contain_text("timed out: played by the service", timeout=RUN_OUT_MS)
        expect(page.locator('#controls [data-action="back"]')).to_be_visible()
        screenshot(watcher, "watch-clock")
        screenshot(page, "table-clock")


def test_a_device_whose_clock_is_minutes_off_counts_down_on_the_servers_time(
    browse: Browse, stack: Stack
) -> None:
    """The deadline is the server's: a device set ten minutes fast (or slow) would show "time
    is up" (or ten minutes more) on its own clock. The page takes the server's time from its
    answers' Date header."""
    turn_s = 60
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(
            http,
            {"preset": "partnership", "max_hands": 1},
            ["ann", "bob", "cy", "dee"],
            {"turn_s": turn_s, "on_timeout": "auto"},
        )
        for off_s in (600, -600):
            watcher = browse.page("/")
            watcher.clock.set_system_time(time.time() + off_s)
            watcher.goto(f"/watch/{game.game_id}")
            shown = watcher.locator("#turn-clock .countdown")
            expect(shown).to_have_text(re.compile(r"^\d+ s left$"))
            left = int((shown.text_content() or "").split()[0])
            assert 0 < left <= turn_s, f"{left} s left on a device {off_s} s off"
