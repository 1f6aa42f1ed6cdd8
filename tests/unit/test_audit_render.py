"""A hand told in the terminal holds everything a person needs to follow it."""

from __future__ import annotations

import re

from rich.console import Console

from domain.cards import Card
from domain.events import CardsPassed
from domain.records import Trick
from services.audit.render import card_text, tell_hand, tell_report
from services.audit.replay import HandAccount, replay_game
from tests.unit.test_audit_games import HonestTable, events_of


def told(account: HandAccount) -> str:
    console = Console(record=True, width=100)
    console.print(tell_hand(account))
    return console.export_text()


def test_a_partnership_hand_with_a_blind_nil_pass() -> None:
    rules = {"preset": "partnership", "max_hands": 1, "blind_nil_behind": None}
    tables = (HonestTable(rules, seed).play() for seed in range(40))
    table = next(t for t in tables if any(isinstance(e, CardsPassed) for e in events_of(t.commits)))
    replay = replay_game(table.commits)
    account = replay.hands[0]
    assert account.record is not None
    text = told(account)
    for part in (
        "The hands as dealt",
        "The bids, from the left of the dealer",
        "blind nil",
        "The blind nil passes",
        "u0/",
        "The score, by the rules, line by line",
    ):
        assert part in text
    for line in account.arithmetic:
        assert line in text


def test_a_two_player_hand_with_its_draw() -> None:
    table = HonestTable({"preset": "two-player", "max_hands": 1}, 3).play()
    replay = replay_game(table.commits)
    text = told(replay.hands[0])
    assert "The hands kept in the draw" in text
    assert "The draw" in text
    assert text.count(" kept") >= 26
    assert "s1/" in text
    assert "u0/" not in text


def test_the_report_at_a_glance() -> None:
    table = HonestTable({"preset": "solo", "max_hands": 1}, 4).play()
    console = Console(record=True, width=100)
    console.print(tell_report(replay_game(table.commits).report(), "game audited"))
    text = console.export_text()
    assert "Audit of game audited: clean" in text
    assert "chain intact" in text


def test_an_unfinished_hand_is_not_told() -> None:
    table = HonestTable({"preset": "solo"}, 5).play(stop_after=10)
    assert "not finished" in told(replay_game(table.commits).hands[0])


def test_a_six_player_hand_trick_by_trick_with_the_copy_that_won() -> None:
    """Of two identical cards on a trick the later wins: the winner's copy is the bold one."""
    tables = (HonestTable({"preset": "six-player", "max_hands": 1}, s).play() for s in range(20))
    for table in tables:
        account = replay_game(table.commits).hands[0]
        record = account.record
        assert record is not None
        twice = [
            trick
            for trick in record.tricks
            if [p.card for p in trick.cards].count(_winning_card(trick)) == 2
        ]
        if twice:
            break
    else:
        raise AssertionError("no trick was won by the second copy of a card")
    console = Console(record=True, width=200)
    console.print(tell_hand(account))
    text = console.export_text(clear=False)
    html = console.export_html(inline_styles=True)
    assert "s5/" in text
    assert "u2/" in text
    assert "the one played later wins" in text
    trick = twice[0]
    winning = next(p for p in trick.cards if p.seat == trick.winner)
    shown = re.escape(card_text(winning.card).plain)
    copies = [p.seat for p in trick.cards if p.card == winning.card]
    assert copies[-1] == winning.seat  # the later copy took the trick
    for seat in copies:
        cell = re.search(rf'{seat}:<span style="([^"]*)">{shown}</span>', html)
        assert cell is not None
        assert ("font-weight: bold" in cell[1]) == (seat == winning.seat)


def test_a_jokers_54_hand_tells_the_dealer_s_discard_and_a_first_hand_without_bids() -> None:
    rules = {"preset": "jokers-54", "first_hand": "no_bid", "max_hands": 1}
    account = replay_game(HonestTable(rules, 6).play().commits).hands[0]
    assert account.record is not None
    text = told(account)
    (discard,) = account.record.discards
    assert "The dealer's discard, face down and out of play" in text
    assert f"seat {discard.seat}" in text
    assert "No bidding: the game's first hand" in text
    assert "first_hand" in text  # the score's lines name it


def _winning_card(trick: Trick) -> Card:
    return next(p.card for p in trick.cards if p.seat == trick.winner)
