"""The terminal player without a server: reading a move, choosing cards to pass, drawing the
table. (Playing and watching whole games over HTTP is in ``tests/e2e/test_cli.py``.)"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

import msgspec
import pytest
from rich.console import Console

from domain.cards import Card
from domain.rules import resolve_rules
from services.cli.play import PromptChooser
from services.cli.table import describe_action, hand_by_suit, narrate, render_table
from services.client import PublicState, SeatView

HAND = ["AS", "KS", "2H", "TH", "3C", "BJ"]


def view(legal: list[dict[str, Any]], **changes: Any) -> SeatView:
    fields: dict[str, Any] = {
        "game_id": "g1",
        "version": 9,
        "rules": resolve_rules({"preset": "partnership"}).to_json(),
        "status": "playing",
        "phase": "bid",
        "hand_number": 1,
        "dealer": 0,
        "turn": 1,
        "seats": [{"seat": s, "player": name} for s, name in enumerate(["ann", "bob", "cy", "di"])],
        "units": [[0, 2], [1, 3]],
        "bids": [None, None, 4, None],
        "tricks": [0, 0, 0, 0],
        "current_trick": [],
        "spades_broken": False,
        "scores": [120, -40],
        "bags": [3, 0],
        "winners": [],
        "deal_commitment": "ab" * 32,
        "passes_due": [],
        "discards": [],
        "seat": 1,
        "hand": HAND,
        "drawn_card": None,
        "legal": legal,
    }
    return msgspec.convert(fields | changes, SeatView)


def scripted(answers: Iterable[str | None]) -> tuple[PromptChooser, list[str], io.StringIO]:
    """A chooser fed these answers (None: the input ends), the prompts it asked, its output."""
    pending = iter(answers)
    prompts: list[str] = []

    async def ask(prompt: str) -> str | None:
        prompts.append(prompt)
        return next(pending)

    out = io.StringIO()
    return PromptChooser(Console(file=out, width=100), ask), prompts, out


Legal = list[dict[str, Any]]
BIDS: Legal = [{"type": "look"}, {"type": "bid", "bid": "nil"}, {"type": "bid", "bid": 3}]


async def test_a_number_picks_that_move() -> None:
    chooser, prompts, out = scripted(["3"])
    assert await chooser(view(BIDS)) == {"type": "bid", "bid": 3}
    assert prompts == ["Your move (1-3, q to leave): "]
    listed = out.getvalue()
    assert "1. look at your cards" in listed
    assert "2. bid nil" in listed
    assert "3. bid 3" in listed


async def test_an_answer_that_is_no_move_is_asked_again() -> None:
    chooser, prompts, out = scripted(["0", "bid", "4", "2"])
    assert await chooser(view(BIDS)) == {"type": "bid", "bid": "nil"}
    assert len(prompts) == 4
    assert "'bid' is not one of the moves" in out.getvalue()


async def test_a_card_name_picks_that_play() -> None:
    plays: Legal = [{"type": "play", "card": card} for card in ("2H", "TH")]
    chooser, _, _ = scripted(["10h"])
    assert await chooser(view(plays, phase="play")) == {"type": "play", "card": "TH"}


async def test_a_card_that_may_not_be_played_is_asked_again() -> None:
    plays: Legal = [{"type": "play", "card": "2H"}]
    chooser, prompts, _ = scripted(["AS", "1"])
    assert await chooser(view(plays, phase="play")) == {"type": "play", "card": "2H"}
    assert len(prompts) == 2


@pytest.mark.parametrize("leave", ["q", "quit", None])
async def test_the_player_may_leave(leave: str | None) -> None:
    chooser, _, _ = scripted([leave])
    assert await chooser(view(BIDS)) is None


async def test_a_pass_asks_for_that_many_cards_of_the_hand() -> None:
    due: Legal = [{"type": "pass", "count": 2}]
    chooser, prompts, out = scripted(["1", "AS", "AS AS", "QH 2H", "as, 2h"])
    action = await chooser(view(due, phase="pass", turn=None))
    assert action == {"type": "pass", "cards": ["AS", "2H"]}
    assert prompts[1:] == ["Cards to pass (2, e.g. 2H 3H): "] * 4
    # one card, the same card twice, a card it does not hold: each asked again
    assert out.getvalue().count("Pick 2 cards of your hand.") == 3


async def test_a_discard_asks_for_cards_of_the_hand_and_a_card_held_twice_may_go_twice() -> None:
    due: Legal = [{"type": "discard", "count": 2}]
    chooser, prompts, out = scripted(["1", "KS KS", "AS AS"])
    two_decks = view(due, phase="discard", turn=1, hand=[*HAND, "AS"])
    assert await chooser(two_decks) == {"type": "discard", "cards": ["AS", "AS"]}
    assert prompts[1:] == ["Cards to discard (2, e.g. 2H 3H): "] * 2
    assert "1. discard 2 cards face down" in out.getvalue()


async def test_a_dealer_who_has_not_looked_looks_before_discarding() -> None:
    due: Legal = [{"type": "look"}, {"type": "discard", "count": 2}]
    chooser, _, _ = scripted(["2"])
    assert await chooser(view(due, phase="discard", hand=None)) == {"type": "look"}


def test_six_seats_their_blind_bids_and_the_dealer_s_discard_are_told() -> None:
    six = view(
        [{"type": "bid", "bid": "blind_6"}],
        rules=resolve_rules({"preset": "six-player", "dealer_discard": 0}).to_json(),
        seats=[{"seat": s, "player": f"p{s}"} for s in range(6)],
        units=[[0, 3], [1, 4], [2, 5]],
        bids=["blind_6", None, None, 3, None, None],
        tricks=[0] * 6,
        scores=[0, 0, 0],
        bags=[0, 0, 0],
        hand=["AS", "AS", "KH"],
    )
    text = plain(render_table(six))
    assert "p5" in text
    assert "blind 6" in text
    assert text.count("A♠") == 2
    assert describe_action({"type": "bid", "bid": "blind_6"}) == "bid blind 6"
    told = narrate({"type": "cards_discarded", "seat": 0, "cards": None}, six)
    assert told == "seat 0 (p0) discards 0 cards face down."
    mine = narrate({"type": "cards_discarded", "seat": 0, "cards": ["BJ", "2C"]}, six)
    assert mine == "seat 0 (p0) discards Big joker 2♣ face down."


def plain(renderable: Any) -> str:
    console = Console(file=io.StringIO(), width=120, record=True)
    console.print(renderable)
    return console.export_text()


def test_the_table_shows_the_seat_its_hand_and_the_scores() -> None:
    text = plain(render_table(view(BIDS)))
    assert "hand 1 · bidding · dealer seat 0 (ann) · turn: seat 1 (bob)" in text
    assert "♠ Big joker A♠ K♠" in text
    assert "♥ 10♥ 2♥" in text
    assert "♦ —" in text
    assert "ann & cy" in text
    assert "120" in text
    assert "you" in text


def test_a_seat_that_has_not_looked_sees_its_cards_face_down() -> None:
    text = plain(render_table(view(BIDS, hand=None)))
    assert "face down" in text
    assert "A♠" not in text


def test_the_public_table_shows_no_hand_and_the_winners_at_the_end() -> None:
    public = msgspec.convert(
        msgspec.to_builtins(view([])) | {"status": "finished", "winners": [0]}, PublicState
    )
    text = plain(render_table(public))
    assert "over, won by ann & cy" in text
    assert "Your hand" not in text


def test_a_hand_is_sorted_the_way_a_player_holds_it() -> None:
    grid = plain(hand_by_suit([Card.parse(c) for c in ("2S", "AS", "LJ", "BJ", "9C")]))
    assert "♠ Big joker Little joker A♠ 2♠" in grid


def test_moves_and_events_read_as_words() -> None:
    assert describe_action({"type": "bid", "bid": "blind_nil"}) == "bid blind nil"
    assert describe_action({"type": "draw", "keep": False}) == "discard the card"
    assert describe_action({"type": "pass", "count": 2}) == "pass 2 cards to your partner"
    table = view([])
    assert (
        narrate({"type": "card_played", "seat": 3, "card": "QH"}, table) == "seat 3 (di) plays Q♥."
    )
    assert (
        narrate({"type": "bid_placed", "seat": 0, "bid": "nil"}, table) == "seat 0 (ann) bids nil."
    )
    assert (
        narrate({"type": "trick_won", "seat": 2, "trick": 1}, table)
        == "seat 2 (cy) wins the trick."
    )
