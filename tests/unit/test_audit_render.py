"""A hand told in the terminal holds everything a person needs to follow it."""

from __future__ import annotations

from rich.console import Console

from domain.events import CardsPassed
from services.audit.render import tell_hand, tell_report
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
