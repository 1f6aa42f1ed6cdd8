"""The lean client of ``spades bench http`` asks the seat the action's answer names next, as a
client following the game would; an answer naming none (the bare peer's) means the next seat."""

from __future__ import annotations

from typing import Any

import msgspec

from benchmarks.http_client import _next_seat
from domain.cards import Card
from domain.events import AnyEvent, CardPlayed, HandDealt, TrickWon


def _answer(*events: AnyEvent) -> Any:
    """An action's answer as the gateway encodes it: ``{"version", "events"}``."""
    records = [{"version": 7 + n, "event": event} for n, event in enumerate(events)]
    return msgspec.json.decode(msgspec.json.encode({"version": 7, "events": records}))


def test_a_play_that_ends_no_trick_passes_the_turn_round_the_table() -> None:
    assert _next_seat(3, _answer(CardPlayed(3, Card.parse("QH")))) == 0


def test_a_tricks_winner_leads_the_next() -> None:
    answer = _answer(CardPlayed(1, Card.parse("2C")), TrickWon(4, 3))
    assert _next_seat(1, answer) == 3


def test_a_new_hand_is_bid_from_the_dealers_left() -> None:
    dealt = HandDealt(hand=2, dealer=3, commitment=None, hands=())
    answer = _answer(CardPlayed(0, Card.parse("AS")), TrickWon(13, 2), dealt)
    assert _next_seat(0, answer) == 0


def test_an_answer_without_events_means_the_next_seat() -> None:
    assert _next_seat(2, {"version": 5, "events": [{"version": 5, "sequence": 9}]}) == 3
    assert _next_seat(2, {"version": 5}) == 3
