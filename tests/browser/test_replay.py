"""The replay: a finished hand step by step, trick by trick, with the audit's verdict; and a
tampered hand, whose verdict names the first event that fails."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from msgspec.structs import replace
from playwright.sync_api import Page, Route, expect

from contracts.wire import encode_commit, game_subject
from domain.events import HandScored
from services.runtime.broker_users import ADMIN
from services.runtime.discovery import find_stack
from services.runtime.nats import connect
from tests.browser.conftest import PHONE, Browse, data_of, screenshot
from tests.browser.games import new_game, play_out
from tests.e2e.stack import Stack
from tests.unit.test_audit_games import HonestTable, rechained

pytestmark = pytest.mark.browser


def record_of(http: httpx.Client, game_id: str, version: int) -> dict[str, Any]:
    answer = http.get(f"/v1/games/{game_id}/hands/1", params={"min_version": version})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def on_the_table(page: Page) -> list[str]:
    return data_of(page.locator("#situation .played [data-card]"), "card")


def held(page: Page) -> int:
    return page.locator("#situation .hands-grid [data-card]").count()


def test_the_replay_steps_through_a_hand_trick_by_trick_with_the_audit_verdict(
    browse: Browse, stack: Stack
) -> None:
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(
            http, {"preset": "partnership", "max_hands": 1}, ["ann", "bob", "cy", "dee"]
        )
        record = record_of(http, game.game_id, play_out(http, game))

    page = browse.page(f"/replay/{game.game_id}?hand=1")
    step = page.locator("#step")
    expect(page.locator('[data-audit="ok"]')).to_contain_text("Hand 1 audits clean")
    expect(page.locator("[data-trick]")).to_have_count(13)
    expect(step).to_contain_text("The deal")
    assert held(page) == 52  # every card of the deal, face up now that the hand is over

    forward, back = page.locator("#forward"), page.locator("#back")
    for k in range(1, 5):  # the bids, one step each, from the dealer's left
        forward.click()
        seat = (record["dealer"] + k) % 4
        expect(step).to_contain_text(f"{game.players[seat]} bid")

    for index, trick in enumerate(record["tricks"]):
        page.locator(f'[data-step="trick-{index}"]').click()
        winner, leader = game.players[trick["winner"]], game.players[trick["leader"]]
        expect(step).to_contain_text(f"{winner} wins trick {index + 1}")
        expect(page.locator(f'[data-trick="{index + 1}"]')).to_have_attribute(
            "aria-current", "step"
        )
        expect(page.locator(f'[data-trick="{index + 1}"]')).to_contain_text(
            f"{leader} led, {winner} won"
        )
        assert on_the_table(page) == [played["card"] for played in trick["cards"]]
        assert held(page) == 52 - 4 * (index + 1)
        if index == 6:
            screenshot(page, "replay")

    back.click()  # one step back: the last card of the last trick is not yet played
    expect(step).not_to_contain_text("wins trick 13")
    assert on_the_table(page) == [played["card"] for played in record["tricks"][-1]["cards"][:3]]
    page.keyboard.press("ArrowRight")  # and forward again, from the keyboard
    expect(step).to_contain_text("wins trick 13")
    page.locator("#last").click()
    expect(step).to_contain_text("Hand 1 scored")

    score = page.locator("#score")
    for unit, total in enumerate(record["scores"]):
        expect(score.locator(f'[data-unit="{unit}"] .arithmetic')).to_contain_text(f"= {total}")
    rules = set(data_of(score.locator("[data-rule]"), "rule"))
    assert rules == {line["rule"] for line in record["score_lines"]}
    assert rules, "no score line"
    expect(score.locator("[data-mismatch]")).to_have_count(0)  # the lines add up
    screenshot(page, "replay-score")


def test_the_replay_fits_a_phone(browse: Browse, stack: Stack) -> None:
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(http, {"preset": "two-player", "max_hands": 1}, ["ann", "bob"])
        record_of(http, game.game_id, play_out(http, game))
    page = browse.page(f"/replay/{game.game_id}?hand=1", PHONE)
    expect(page.locator('[data-audit="ok"]')).to_be_visible()
    expect(page.locator("#step")).to_contain_text("The deal")
    expect(page.locator("#situation")).to_contain_text("The draw:")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"{width} px wide on a {PHONE['width']} px phone"
    screenshot(page, "replay-phone")


async def _append_as_operator(stack: Stack, game_id: str, messages: list[bytes]) -> int:
    running = find_stack(stack.data_dir)  # where `spades up` says its parts listen
    assert running.nats_credentials is not None
    credentials = Path(running.nats_credentials) / f"{ADMIN}.nk"
    connection = await connect(running.nats_url, "tamperer", user=ADMIN, credentials=credentials)
    try:
        js = connection.jetstream()
        for data in messages:
            await js.publish(game_subject(game_id), data)
    finally:
        await connection.close()
    return len(messages)


def test_a_tampered_hand_fails_the_audit_and_the_replay_names_the_first_failing_event(
    browse: Browse, stack: Stack
) -> None:
    """A forger with the operator's key rewrites a hand's score (and mends the hash chain);
    the replay page says the hand fails and points at the event."""
    game_id = f"tampered-{secrets.token_hex(4)}"
    table = HonestTable({"preset": "partnership", "max_hands": 1}, 7, game_id=game_id)
    honest = table.play(refusals=0).commits
    forged = []
    scored_version = 0
    for stored in honest:
        commit = stored.commit
        events = list(commit.events)
        for offset, event in enumerate(events):
            if isinstance(event, HandScored):
                points = (event.points[0] + 10, *event.points[1:])
                scores = (event.scores[0] + 10, *event.scores[1:])
                events[offset] = replace(event, points=points, scores=scores)
                scored_version = commit.first_version + offset
        forged.append(replace(commit, events=events))
    chained = rechained(forged)
    with ThreadPoolExecutor(1) as pool:
        pool.submit(
            asyncio.run,
            _append_as_operator(stack, game_id, [encode_commit(c.commit) for c in chained]),
        ).result()

    with httpx.Client(base_url=stack.base_url) as http:
        record_of(http, game_id, chained[-1].commit.version)
    page = browse.page(f"/replay/{game_id}?hand=1")
    verdict = page.locator('[data-audit="failed"]')
    expect(verdict).to_contain_text("Hand 1 fails the audit")
    first = page.locator(".first-problem")
    expect(first).to_have_attribute("data-version", str(scored_version))
    expect(first).to_contain_text(f"First failing event: version {scored_version}")
    expect(first).to_contain_text("score")
    expect(page.locator("#audit")).to_contain_text("the score against the rules' own: fails")
    expect(page.locator('#score [data-unit="0"] [data-mismatch]')).to_be_visible()
    expect(page.locator('#score [data-unit="1"] [data-mismatch]')).to_have_count(0)
    screenshot(page, "replay-tampered")


def finished_with_receipt(stack: Stack) -> str:
    """A two-player game of one hand, played out, once the audit log holds its hand."""
    with httpx.Client(base_url=stack.base_url) as http:
        game = new_game(http, {"preset": "two-player", "max_hands": 1}, ["ann", "bob"])
        version = play_out(http, game)
        deadline = time.monotonic() + 30
        while record_of(http, game.game_id, version)["receipt"] is None:
            assert time.monotonic() < deadline, "the log never held the hand"
            time.sleep(0.2)
    return game.game_id


def test_the_replay_checks_the_hands_receipt_in_the_browser(browse: Browse, stack: Stack) -> None:
    game_id = finished_with_receipt(stack)
    page = browse.page(f"/replay/{game_id}?hand=1")
    verdict = page.locator('[data-receipt="verified"]')
    expect(verdict).to_contain_text("Hand 1 is leaf")
    expect(page.locator("#receipt")).to_contain_text("signed by")
    screenshot(page, "replay-receipt")


def test_a_record_rewritten_without_the_log_is_refused_by_the_replay(
    browse: Browse, stack: Stack
) -> None:
    """The operator changes the hand's score in the record it serves, and its leaf's entry to
    match, but cannot change the signed tree: the page's own check refuses it."""
    game_id = finished_with_receipt(stack)

    def rewritten(route: Route) -> None:
        body = route.fetch().json()
        body["points"][0] += 10
        body["scores"][0] += 10
        entry = json.loads(base64.b64decode(body["receipt"]["entry_bytes"]))
        entry["points"][0] += 10
        entry["scores"][0] += 10
        text = json.dumps(entry, separators=(",", ":")).encode()
        body["receipt"]["entry_bytes"] = base64.b64encode(text).decode()
        route.fulfill(json=body)

    page = browse.page("/")
    page.route(f"**/v1/games/{game_id}/hands/1*", rewritten)
    page.goto(f"/replay/{game_id}?hand=1")
    refused = page.locator('[data-receipt="refused"]')
    expect(refused).to_contain_text("The receipt does not hold")
    expect(refused).to_contain_text("does not lead")
    screenshot(page, "replay-receipt-refused")
