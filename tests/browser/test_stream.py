"""The table stays live: a dropped event stream is resumed with ``Last-Event-ID``, and a move
the server refuses is shown in words."""

from __future__ import annotations

import os
import signal
import time

import httpx
import pytest
from playwright.sync_api import Page, Request, Route, expect

from tests.browser.conftest import Browse, screenshot
from tests.browser.games import act, move_on, new_game, state, view
from tests.e2e.stack import Stack

pytestmark = pytest.mark.browser

RESTART_TIMEOUT_S = 90.0


def gateway_pid(stack: Stack) -> int:
    (gateway,) = [p for p in stack.children() if "serve gateway" in p.command]
    return gateway.pid


def wait_until_ready(stack: Stack) -> None:
    """``spades up`` starts a gateway that died again; wait (bounded) until it answers."""
    deadline = time.monotonic() + RESTART_TIMEOUT_S
    with httpx.Client(base_url=stack.base_url, timeout=2.0) as http:
        while time.monotonic() < deadline:
            try:
                if http.get("/readyz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)  # a process starting: nothing to await but its port
    raise AssertionError(f"the gateway did not come back:\n{stack.log_tail()}")


def wait_for_version(page: Page, version: int) -> None:
    page.locator(f'body[data-version="{version}"]').wait_for(state="attached")


def test_a_dropped_event_stream_is_resumed_with_last_event_id(browse: Browse, stack: Stack) -> None:
    # While the gateway is down the page's attempts to reconnect fail, as they must.
    browse.allowed = lambda error: "net::ERR_" in error or "Failed to load resource" in error
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(
            http, {"preset": "partnership", "max_hands": 1}, ["ann", "bob", "cy", "dee"]
        )
        public = state(http, game.game_id)
        dealer, before = public["dealer"], public["version"]  # the dealer bids last
        page = browse.page(f"/play/{game.game_id}#token={game.tokens[dealer]}")
        wait_for_version(page, before)
        connection = page.locator("#connection")
        expect(connection).to_have_attribute("data-status", "live")
        resumed_from: list[str | None] = []

        def record(request: Request) -> None:
            if "/events/stream" in request.url:
                resumed_from.append(request.headers.get("last-event-id"))
                assert "access_token" not in request.url  # the token goes in a header

        page.on("request", record)
        os.kill(gateway_pid(stack), signal.SIGKILL)  # the connection drops with no goodbye
        expect(connection).to_have_attribute("data-status", "reconnecting")
        screenshot(page, "table-reconnecting")
        wait_until_ready(stack)
        after = move_on(http, game, 3)  # three bids the page did not see happen

        wait_for_version(page, after)
        expect(connection).to_have_attribute("data-status", "live")
        expect(connection).to_contain_text(f"resumed after event {before}")
        assert resumed_from, "the page never connected again"
        assert set(resumed_from) == {str(before)}
        log = page.locator("#log")
        bids = state(http, game.game_id)["bids"]
        for seat, bid in enumerate(bids):
            if bid is not None:
                expect(log).to_contain_text(f"{game.players[seat]} bid {bid}.")
        expect(page.locator("#turn")).to_contain_text("Your turn")


def test_a_move_the_server_refuses_is_shown_in_words(browse: Browse, stack: Stack) -> None:
    """The seat's page still offers a bid that the seat (from another device) has already
    made: pressing it gets the server's refusal, shown in words, and the page catches up."""
    browse.allowed = lambda error: "status of 409" in error
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(
            http, {"preset": "partnership", "max_hands": 1}, ["ann", "bob", "cy", "dee"]
        )
        public = state(http, game.game_id)
        seat = public["turn"]
        page = browse.page(f"/play/{game.game_id}#token={game.tokens[seat]}")
        wait_for_version(page, public["version"])
        expect(page.locator('#controls [data-bid="3"][data-legal]')).to_be_visible()

        held: list[Route] = []

        def hold(route: Route) -> None:  # the page's next reads of its view wait here
            held.append(route)

        page.route("**/view", hold)
        act(http, game, seat, {"type": "bid", "bid": 4})  # the other device bids first
        page.locator('#controls [data-bid="3"][data-legal]').click()

        refusal = page.locator("#refusal")
        expect(refusal).to_be_visible()
        expect(refusal).to_have_attribute("data-code", "not_your_turn")
        expect(refusal).to_contain_text("It is not your turn")
        screenshot(page, "table-refusal")

        for route in held:
            route.continue_()
        page.unroute("**/view")
        now = view(http, game, seat)
        wait_for_version(page, now["version"])
        expect(page.locator(f'[data-seat-bid="{seat}"]')).to_have_text("4")
        expect(page.locator("#controls [data-bid]")).to_have_count(0)
