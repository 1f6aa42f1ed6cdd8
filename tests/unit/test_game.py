"""The game aggregate (``decide``/``evolve``): every docs/rules.md error code in a situation built
through commands, docs/rules.md's precedence, the blind nil pass, the two-player draw, looking,
the rotation of the deal and the end of the game."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from domain.bids import Bid
from domain.cards import CARDS, Card, cards_in, set_of
from domain.commands import (
    AnyCommand,
    CreateGame,
    DealHand,
    DiscardCards,
    Draw,
    LookAtHand,
    PassCards,
    PlaceBid,
    PlayCard,
    RecordTally,
    TakeSeat,
    Unreadable,
    from_scenario,
)
from domain.errors import CODES, RuleViolation
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsPassed,
    CardsReceived,
    GameEnded,
    HandDealt,
    HandLooked,
    HandScored,
    TrickWon,
)
from domain.game import decide, evolve, fold, legal_actions, legal_bids, legal_plays
from domain.shuffle import DealSource, DealtHands, SeededDeal, StackedDeck
from domain.state import NO_SEAT, Game, held
from domain.table import table_for

PARTNERSHIP: dict[str, Any] = {"preset": "partnership"}

BASE = [
    "AS KS QS JS AH KH QH AD KD QD AC KC QC",
    "TS 9S 8S JH TH 9H 8H JD TD 9D JC TC 9C",
    "7S 6S 5S 7H 6H 5H 8D 7D 6D 5D 8C 7C 6C",
    "4S 3S 2S 4H 3H 2H 4D 3D 2D 5C 4C 3C 2C",
]
BEAT = [
    "AS 9S 5S AH 9H 5H AD 9D 5D AC 9C 5C 2C",
    "KS 8S 4S KH 8H 4H KD 8D 4D KC 8C 4C 3C",
    "QS 7S 3S QH 7H 3H QD 7D 3D QC TC 7C 6C",
    "JS TS 6S 2S JH TH 6H 2H JD TD 6D 2D JC",
]
ALL_TRUMPS = [
    "LJ KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
    "BJ AS 3H 4H 5H 6H 7H 8H 9H TH JH QH KH",
    "2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AD",
    "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC AH",
]
THREE = [
    "AS KS QS JS TS AH KH QH JH TH AD KD QD JD TD AC KC",
    "9S 8S 7S 6S 9H 8H 7H 6H 9D 8D 7D 6D QC JC TC 9C 8C",
    "5S 4S 3S 2S 5H 4H 3H 2H 5D 4D 3D 2D 7C 6C 5C 4C 3C",
]
JOKERS: dict[str, Any] = {
    "preset": "partnership",
    "jokers": True,
    "deck_remove": ["2C", "2H"],
    "trump_order": "jokers",
}


def c(text: str) -> Card:
    return Card.parse(text)


def cs(texts: str) -> tuple[Card, ...]:
    return tuple(Card.parse(text) for text in texts.split())


def apply(state: Game | None, command: AnyCommand, deal: DealSource | None = None) -> Game:
    result = fold(decide(state, command, deal=deal), state)
    assert result is not None
    return result


def folded(events: list[AnyEvent], state: Game) -> Game:
    result = fold(events, state)
    assert result is not None
    return result


def run(state: Game, *commands: AnyCommand) -> Game:
    for command in commands:
        state = apply(state, command)
    return state


def refusal(state: Game | None, command: AnyCommand) -> str:
    with pytest.raises(RuleViolation) as raised:
        decide(state, command)
    return raised.value.code


def seated(
    rules: dict[str, Any] | None = None,
    dealer: int = 0,
    scores: tuple[int, ...] | None = None,
) -> Game:
    state = apply(None, CreateGame("g", rules or PARTNERSHIP, dealer=dealer, scores=scores))
    for seat in range(state.rules.players):
        state = apply(state, TakeSeat(f"p{seat}", seat))
    return state


def dealt(
    hands: list[str],
    rules: dict[str, Any] | None = None,
    dealer: int = 3,
    scores: tuple[int, ...] | None = None,
) -> Game:
    state = seated(rules, dealer, scores)
    return apply(state, DealHand(DealtHands(tuple(cs(hand) for hand in hands))))


def bids(state: Game, *values: Bid) -> Game:
    """Bid in turn from the seat on turn."""
    for value in values:
        assert state.hand is not None
        state = apply(state, PlaceBid(state.hand.turn, value))
    return state


def plays(state: Game, *texts: str) -> Game:
    """Play cards in turn from the seat on turn."""
    for text in texts:
        assert state.hand is not None
        state = apply(state, PlayCard(state.hand.turn, c(text)))
    return state


def holding(state: Game, seat: int) -> set[str]:
    assert state.hand is not None
    return {str(card) for card in cards_in(held(state.hand, seat))}


# --------------------------------------------------------------------------- situations


def bidding() -> Game:
    return dealt(BASE)


def playing(rules: dict[str, Any] | None = None) -> Game:
    return bids(dealt(BASE, rules), 3, 3, 3, 3)


def following() -> Game:
    return plays(playing(), "AH")


def beat(rules: dict[str, Any] | None = None) -> Game:
    return bids(dealt(BEAT, rules or {**PARTNERSHIP, "must_beat": True}), 3, 3, 3, 3)


def lowest_club() -> Game:
    return bids(dealt(BASE, {**PARTNERSHIP, "first_lead": "lowest_club"}, dealer=0), 3, 1, 1, 8)


def team_min() -> Game:
    return bids(dealt(BASE, {**PARTNERSHIP, "team_min_bid": 4}), 1)


def no_nil() -> Game:
    return dealt(BASE, {**PARTNERSHIP, "nil": False, "blind_nil": False})


def behind(points: int, rules: dict[str, Any] | None = None) -> Game:
    return dealt(BASE, rules, scores=(0, points))


def looked_then_blind() -> Game:
    return apply(behind(200), LookAtHand(0))


def passing() -> Game:
    return bids(behind(200), "blind_nil", 3, 4, 3)


def over() -> Game:
    state = seated({**PARTNERSHIP, "target": 100}, dealer=3)
    state = apply(state, DealHand(SeededDeal(b"x")))
    state = bids(state, 6, 3, 4, 3)
    state = apply(state, RecordTally((6, 3, 4, 0)), deal=SeededDeal(b"y"))
    assert state.status == "finished"
    return state


def discarding() -> Game:
    """jokers-54, dealer 3: the dealer holds 15 cards, the two jokers among them."""
    hands = [*BASE[:3], BASE[3] + " BJ LJ"]
    return dealt(hands, {"preset": "jokers-54"})


def blind_bidding() -> Game:
    return dealt(BASE, {**PARTNERSHIP, "blind_bids": 6})


def two_player() -> Game:
    state = seated({"preset": "two-player"}, dealer=0)
    return apply(state, DealHand(StackedDeck(tuple(card for card in CARDS if not card.is_joker))))


ERRORS: list[tuple[str, Callable[[], Game | None], AnyCommand, str]] = [
    ("bid out of turn", bidding, PlaceBid(1, 3), "not_your_turn"),
    ("play out of turn", playing, PlayCard(1, c("TS")), "not_your_turn"),
    ("follow out of turn", following, PlayCard(2, c("7H")), "not_your_turn"),
    ("draw out of turn", two_player, Draw(0, True), "not_your_turn"),
    ("play while bidding", bidding, PlayCard(0, c("AH")), "wrong_phase"),
    ("bid while playing", playing, PlaceBid(0, 4), "wrong_phase"),
    ("pass while bidding", bidding, PassCards(0, cs("AS KS")), "wrong_phase"),
    ("pass while playing", playing, PassCards(0, cs("AS KS")), "wrong_phase"),
    ("play while passing", passing, PlayCard(0, c("AH")), "wrong_phase"),
    ("bid while passing", passing, PlaceBid(0, 3), "wrong_phase"),
    ("draw in a dealt game", bidding, Draw(0, True), "wrong_phase"),
    ("bid while drawing", two_player, PlaceBid(1, 3), "wrong_phase"),
    ("deal during a hand", bidding, DealHand(SeededDeal(b"z")), "wrong_phase"),
    ("create an existing game", bidding, CreateGame("g", PARTNERSHIP), "wrong_phase"),
    ("bid before the deal", seated, PlaceBid(1, 3), "wrong_phase"),
    ("no such game", lambda: None, PlaceBid(1, 3), "wrong_phase"),
    ("another seat's card", playing, PlayCard(0, c("TS")), "card_not_in_hand"),
    ("a joker without jokers", playing, PlayCard(0, c("BJ")), "card_not_in_hand"),
    (
        "a removed card",
        lambda: bids(dealt(ALL_TRUMPS, JOKERS), 1, 1, 1, 1),
        PlayCard(0, c("2C")),
        "card_not_in_hand",
    ),
    (
        "a card already played",
        lambda: plays(following(), "JH", "7H", "4H"),
        PlayCard(0, c("AH")),
        "card_not_in_hand",
    ),
    ("renege", following, PlayCard(1, c("TS")), "must_follow_suit"),
    ("spade lead unbroken", playing, PlayCard(0, c("AS")), "spades_not_broken"),
    (
        "joker lead unbroken",
        lambda: plays(bids(dealt(ALL_TRUMPS, JOKERS), 1, 1, 1, 1), "2S", "AS", "2D", "3C"),
        PlayCard(1, c("BJ")),
        "spades_not_broken",
    ),
    ("must beat", lambda: plays(beat(), "5H"), PlayCard(1, c("4H")), "must_beat"),
    (
        "must trump",
        lambda: plays(beat(), "5H", "8H", "QH", "2H", "6C", "JC", "AC", "3C", "2C", "KC", "7C"),
        PlayCard(3, c("JH")),
        "must_beat",
    ),
    ("wrong opening lead", lowest_club, PlayCard(3, c("3C")), "wrong_opening_lead"),
    ("bid 14", bidding, PlaceBid(0, 14), "invalid_bid"),
    ("bid -1", bidding, PlaceBid(0, -1), "invalid_bid"),
    ("bid 0 under min_bid 1", bidding, PlaceBid(0, 0), "invalid_bid"),
    (
        "bid 18 of 17",
        lambda: dealt(THREE, {"preset": "cutthroat"}, dealer=2),
        PlaceBid(0, 18),
        "invalid_bid",
    ),
    ("team_min_bid", lambda: bids(team_min(), 2), PlaceBid(2, 2), "invalid_bid"),
    ("team_min_bid nil", lambda: bids(team_min(), 2), PlaceBid(2, "nil"), "invalid_bid"),
    ("nil off", no_nil, PlaceBid(0, "nil"), "nil_not_allowed"),
    ("blind nil off", no_nil, PlaceBid(0, "blind_nil"), "blind_nil_not_allowed"),
    ("blind nil 99 behind", lambda: behind(99), PlaceBid(0, "blind_nil"), "blind_nil_not_allowed"),
    (
        "blind nil ahead",
        lambda: dealt(BASE, scores=(300, 0)),
        PlaceBid(0, "blind_nil"),
        "blind_nil_not_allowed",
    ),
    (
        "blind nil after a look",
        looked_then_blind,
        PlaceBid(0, "blind_nil"),
        "blind_nil_not_allowed",
    ),
    (
        "blind nil blind_nil false",
        lambda: behind(200, {**PARTNERSHIP, "blind_nil": False}),
        PlaceBid(0, "blind_nil"),
        "blind_nil_not_allowed",
    ),
    ("blind bid off", bidding, PlaceBid(0, "blind_6"), "blind_bid_not_allowed"),
    (
        "blind bid after a look",
        lambda: apply(blind_bidding(), LookAtHand(0)),
        PlaceBid(0, "blind_6"),
        "blind_bid_not_allowed",
    ),
    ("blind bid below blind_bids", blind_bidding, PlaceBid(0, "blind_5"), "invalid_bid"),
    ("blind bid above the hand", blind_bidding, PlaceBid(0, "blind_14"), "invalid_bid"),
    (
        "blind bid by the discarding dealer",
        lambda: bids(
            apply(
                dealt([*BASE[:3], BASE[3] + " BJ LJ"], {"preset": "jokers-54", "blind_bids": 6}),
                DiscardCards(3, cs("BJ LJ")),
            ),
            3,
            3,
            3,
        ),
        PlaceBid(3, "blind_6"),
        "blind_bid_not_allowed",
    ),
    ("bid while the dealer discards", discarding, PlaceBid(0, 3), "wrong_phase"),
    ("discard while bidding", bidding, DiscardCards(3, cs("2C 3C")), "wrong_phase"),
    ("discard by another seat", discarding, DiscardCards(0, cs("AS KS")), "not_your_turn"),
    ("discard too few", discarding, DiscardCards(3, cs("BJ")), "invalid_discard"),
    ("discard too many", discarding, DiscardCards(3, cs("BJ LJ 2C")), "invalid_discard"),
    ("discard a card not held", discarding, DiscardCards(3, cs("BJ AS")), "invalid_discard"),
    ("discard one card twice", discarding, DiscardCards(3, cs("BJ BJ")), "invalid_discard"),
    ("discard by seat 4", discarding, DiscardCards(4, cs("BJ LJ")), "malformed"),
    ("pass too few", passing, PassCards(2, cs("7S")), "invalid_pass"),
    ("pass too many", passing, PassCards(2, cs("7S 6S 5S")), "invalid_pass"),
    ("pass the same card twice", passing, PassCards(2, cs("7S 7S")), "invalid_pass"),
    ("pass a card not held", passing, PassCards(2, cs("7S AS")), "invalid_pass"),
    ("pass by a seat with none due", passing, PassCards(1, cs("TS 9S")), "invalid_pass"),
    (
        "pass twice",
        lambda: apply(passing(), PassCards(2, cs("7S 6S"))),
        PassCards(2, cs("5S 5H")),
        "invalid_pass",
    ),
    ("play after the end", over, PlayCard(0, c("AS")), "game_over"),
    ("bid after the end", over, PlaceBid(0, 3), "game_over"),
    ("look after the end", over, LookAtHand(0), "game_over"),
    ("deal after the end", over, DealHand(SeededDeal(b"z")), "game_over"),
    ("seat after the end", over, TakeSeat("late"), "game_over"),
    ("unreadable", playing, Unreadable("nonsense", 0), "malformed"),
    ("unreadable without a seat", bidding, Unreadable("nonsense"), "malformed"),
    ("bid by seat 4", bidding, PlaceBid(4, 3), "malformed"),
    ("play by seat 4", playing, PlayCard(4, c("AS")), "malformed"),
    ("play by seat -1", playing, PlayCard(-1, c("AS")), "malformed"),
    ("look by seat 4", bidding, LookAtHand(4), "malformed"),
    ("pass by seat 5", passing, PassCards(5, cs("AS KS")), "malformed"),
    ("draw by seat 2", two_player, Draw(2, True), "malformed"),
    (
        "seat 4 of 4",  # no seat to be had, like a taken one
        lambda: apply(None, CreateGame("g", PARTNERSHIP, dealer=0)),
        TakeSeat("p", 4),
        "seat_taken",
    ),
    (
        "seat taken",
        lambda: apply(apply(None, CreateGame("g", PARTNERSHIP)), TakeSeat("a", 1)),
        TakeSeat("b", 1),
        "seat_taken",
    ),
    ("every seat taken", seated, TakeSeat("late"), "seat_taken"),
    ("bad rules", lambda: None, CreateGame("g", {"preset": "hearts"}), "invalid_rules"),
]


@pytest.mark.parametrize(
    ("build", "command", "code"),
    [(build, command, code) for _, build, command, code in ERRORS],
    ids=[name for name, _, _, _ in ERRORS],
)
def test_refusal(build: Callable[[], Game | None], command: AnyCommand, code: str) -> None:
    state = build()
    assert refusal(state, command) == code


def test_every_code_is_produced() -> None:
    assert {code for _, _, _, code in ERRORS} == CODES


def test_the_situations_are_what_they_claim() -> None:
    """The refusals above are made in the phases they name."""
    assert bidding().hand is not None
    playing_hand = playing().hand
    assert playing_hand is not None
    assert (playing_hand.phase, playing_hand.turn) == ("play", 0)
    passing_hand = passing().hand
    assert passing_hand is not None
    assert passing_hand.phase == "pass"
    drawing = two_player().hand
    assert drawing is not None
    assert (drawing.phase, drawing.turn) == ("draw", 1)


# --------------------------------------------------------------------------- accepted actions


def test_a_refused_action_changes_nothing() -> None:
    state = following()
    before = state
    with pytest.raises(RuleViolation):
        decide(state, PlayCard(1, c("TS")))
    assert state == before
    after = apply(state, PlayCard(1, c("JH")))
    assert after.hand is not None
    assert after.hand.turn == 2


def test_a_trick_goes_to_the_highest_card_of_the_suit_led() -> None:
    state = plays(playing(), "QH", "JH", "7H", "4H")
    assert state.hand is not None
    assert state.hand.won == (1, 0, 0, 0)
    assert state.hand.turn == 0


def test_a_spade_trumps_and_the_lowest_spade_is_the_two() -> None:
    state = plays(beat(PARTNERSHIP), "5H", "8H", "QH", "2H", "6C", "JC", "AC", "3C")
    state = plays(state, "2C", "KC", "7C")
    events = decide(state, PlayCard(3, c("2S")))
    assert TrickWon(3, 3) in events


def test_a_two_of_diamonds_is_a_diamond_in_the_standard_order() -> None:
    state = bids(dealt(BEAT, PARTNERSHIP, dealer=2), 3, 3, 3, 3)
    state = plays(state, "TD", "AD", "KD", "QD")
    assert state.hand is not None
    assert state.hand.won == (1, 0, 0, 0)
    state = plays(state, "5D", "4D", "3D", "2D")
    assert state.hand is not None
    assert state.hand.won == (2, 0, 0, 0)


@pytest.mark.parametrize(
    ("order", "winner"), [("jokers", 0), ("jokers_deuce", 1), ("jokers_deuces", 2)]
)
def test_the_trump_order_decides_between_as_2s_and_2d(order: str, winner: int) -> None:
    hands = [
        "AS BJ 3H 4H 5H 6H 7H 8H 9H TH JH QH KH",
        "2S LJ 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
        "2D 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
        "3S KS QS JS TS 9S 8S 7S 6S 5S 4S AH AD",
    ]
    rules = {**JOKERS, "trump_order": order, "spades_lead": "any"}
    state = plays(bids(dealt(hands, rules), 3, 3, 3, 3), "AS", "2S", "2D", "3S")
    assert state.hand is not None
    assert state.hand.won[winner] == 1
    assert state.hand.turn == winner


@pytest.mark.parametrize("order", ["jokers", "jokers_deuce", "jokers_deuces"])
def test_the_big_joker_beats_the_little_joker_beats_the_ace(order: str) -> None:
    rules = {**JOKERS, "trump_order": order, "spades_lead": "any"}
    state = bids(dealt(ALL_TRUMPS, rules), 3, 3, 3, 3)
    state = plays(state, "LJ", "AS", "2D" if order == "jokers_deuces" else "3D", "AH")
    assert state.hand is not None
    assert state.hand.turn == 0
    state = plays(state, "KS", "BJ", "4D", "3C")
    assert state.hand is not None
    assert state.hand.turn == 1


def test_under_jokers_deuces_the_2d_follows_as_a_spade() -> None:
    rules = {**JOKERS, "trump_order": "jokers_deuces", "spades_lead": "any"}
    state = bids(dealt(ALL_TRUMPS, rules), 3, 3, 3, 3)
    state = plays(state, "KS", "AS")
    assert refusal(state, PlayCard(2, c("3D"))) == "must_follow_suit"
    assert legal_plays(state, 2) == c("2D").bit


def test_a_spade_lead_from_a_hand_of_only_spades_does_not_break_them() -> None:
    state = bids(dealt(ALL_TRUMPS, JOKERS), 1, 1, 1, 1)
    state = plays(state, "2S")
    assert state.hand is not None
    assert not state.hand.spades_broken
    state = plays(state, "AS", "2D", "3C")
    assert state.hand is not None
    assert not state.hand.spades_broken
    assert state.hand.turn == 1
    assert refusal(state, PlayCard(1, c("BJ"))) == "spades_not_broken"
    assert refusal(state, PlayCard(1, c("AS"))) == "card_not_in_hand"
    plays(state, "KH")


def test_spades_break_when_a_spade_is_played_to_another_suit() -> None:
    state = plays(beat(PARTNERSHIP), "5H", "8H", "QH", "2H", "6C", "JC", "AC", "3C")
    assert state.hand is not None
    assert not state.hand.spades_broken
    assert refusal(state, PlayCard(0, c("AS"))) == "spades_not_broken"
    state = plays(state, "2C", "KC", "7C", "2S")
    assert state.hand is not None
    assert state.hand.spades_broken
    assert state.hand.turn == 3
    plays(state, "TS")


def test_spades_lead_any() -> None:
    state = playing({**PARTNERSHIP, "spades_lead": "any"})
    state = plays(state, "AS", "TS", "7S", "2S")
    assert state.hand is not None
    assert state.hand.turn == 0


def test_must_beat_only_when_the_seat_can_beat() -> None:
    state = plays(beat(), "5H")
    assert refusal(state, PlayCard(1, c("KS"))) == "must_follow_suit"
    state = plays(state, "8H")
    assert refusal(state, PlayCard(2, c("3H"))) == "must_beat"
    state = plays(state, "QH")
    plays(state, "2H")


def test_must_beat_off_lets_a_low_card_follow() -> None:
    plays(beat(PARTNERSHIP), "5H", "4H", "3H", "2H")


def test_lowest_club_opens_and_only_the_first_trick() -> None:
    state = lowest_club()
    assert state.hand is not None
    assert state.hand.turn == 3
    assert refusal(state, PlayCard(1, c("JC"))) == "not_your_turn"
    assert refusal(state, PlayCard(3, c("2S"))) == "wrong_opening_lead"
    assert legal_plays(state, 3) == c("2C").bit
    state = plays(state, "2C", "QC", "9C", "6C")
    assert state.hand is not None
    assert state.hand.turn == 0
    plays(state, "KC")


def test_lowest_club_is_the_3_when_the_2_is_out() -> None:
    state = bids(dealt(THREE, {"preset": "three-player-house"}, dealer=0), 4, 4, 9)
    assert state.hand is not None
    assert state.hand.turn == 2
    assert legal_plays(state, 2) == c("3C").bit


def test_first_lead_dealer() -> None:
    state = bids(dealt(BASE, {**PARTNERSHIP, "first_lead": "dealer"}, dealer=2), 1, 8, 3, 1)
    assert state.hand is not None
    assert state.hand.turn == 2
    assert refusal(state, PlayCard(3, c("2C"))) == "not_your_turn"


def test_bidding_goes_clockwise_from_the_left_of_the_dealer() -> None:
    state = dealt(BASE, dealer=1)
    order = []
    for _ in range(4):
        assert state.hand is not None
        order.append(state.hand.turn)
        state = apply(state, PlaceBid(state.hand.turn, 3))
    assert order == [2, 3, 0, 1]
    assert state.hand is not None
    assert (state.hand.phase, state.hand.turn) == ("play", 2)


def test_team_min_bid_counts_a_nil_as_zero() -> None:
    state = bids(team_min(), "nil")
    assert refusal(state, PlaceBid(2, 2)) == "invalid_bid"
    assert legal_bids(state, 2) == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    state = bids(state, 3)
    assert legal_bids(state, 3) == [4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
    assert refusal(state, PlaceBid(3, 3)) == "invalid_bid"
    assert refusal(state, PlaceBid(3, "nil")) == "invalid_bid"
    bids(state, 4)


def test_min_bid_zero_allows_a_zero_bid() -> None:
    state = dealt(BASE, {**PARTNERSHIP, "min_bid": 0})
    state = apply(state, PlaceBid(0, 0))
    assert state.hand is not None
    assert state.hand.bids[0] == 0


def test_blind_nil_exactly_100_behind_is_allowed() -> None:
    events = decide(behind(100), PlaceBid(0, "blind_nil"))
    assert isinstance(events[0], BidPlaced)
    assert events[0].bid == "blind_nil"
    assert isinstance(events[1], HandLooked)


def test_blind_nil_behind_null_allows_it_when_ahead() -> None:
    state = dealt(BASE, {**PARTNERSHIP, "blind_nil_behind": None}, scores=(300, 0))
    apply(state, PlaceBid(0, "blind_nil"))


def test_blind_nil_behind_compares_with_the_best_other_unit() -> None:
    rules = {"preset": "cutthroat"}
    state = dealt(THREE, rules, dealer=2, scores=(0, 150, 50))
    apply(state, PlaceBid(0, "blind_nil"))
    state = dealt(THREE, rules, dealer=2, scores=(50, 149, 0))
    assert refusal(state, PlaceBid(0, "blind_nil")) == "blind_nil_not_allowed"


# --------------------------------------------------------------------------- precedence


PRECEDENCE: list[tuple[str, Callable[[], Game], AnyCommand, str]] = [
    ("malformed after the end", over, Unreadable("nonsense", 0), "game_over"),
    ("seat 9 after the end", over, PlayCard(9, c("AS")), "game_over"),
    ("bad pass after the end", over, PassCards(0, ()), "game_over"),
    ("out of turn, card not in hand", playing, PlayCard(2, c("AS")), "not_your_turn"),
    ("out of turn, renege", following, PlayCard(3, c("2C")), "not_your_turn"),
    ("seat 9 while bidding", bidding, PlayCard(9, c("AS")), "malformed"),
    ("seat 9 bid while playing", playing, PlaceBid(9, 3), "malformed"),
    ("unreadable while passing", passing, Unreadable("nonsense", 1), "malformed"),
    ("play out of turn while bidding", bidding, PlayCard(2, c("AS")), "wrong_phase"),
    ("bid out of turn while playing", playing, PlaceBid(1, 99), "wrong_phase"),
    ("bid out of turn and out of range", bidding, PlaceBid(2, 99), "not_your_turn"),
    ("blind nil out of turn", lambda: behind(200), PlaceBid(1, "blind_nil"), "not_your_turn"),
    ("pass with none due and wrong count", passing, PassCards(1, cs("TS")), "invalid_pass"),
    ("pass while bidding by a seat with none due", bidding, PassCards(1, cs("TS")), "wrong_phase"),
    ("not held and not the opening lead", lowest_club, PlayCard(3, c("AS")), "card_not_in_hand"),
    (
        "a spade that is not the opening lead",
        lowest_club,
        PlayCard(3, c("2S")),
        "wrong_opening_lead",
    ),
    ("not held and an unbroken spade", playing, PlayCard(0, c("2S")), "card_not_in_hand"),
    (
        "renege that could also beat",
        lambda: plays(beat(), "5H"),
        PlayCard(1, c("KS")),
        "must_follow_suit",
    ),
    (
        "blind nil with nil and blind nil off",
        no_nil,
        PlaceBid(0, "blind_nil"),
        "blind_nil_not_allowed",
    ),
    (
        "nil off and below team_min_bid",
        lambda: bids(dealt(BASE, {**PARTNERSHIP, "nil": False, "team_min_bid": 4}), 1, 1),
        PlaceBid(2, "nil"),
        "nil_not_allowed",
    ),
    (
        "blind nil not behind and below team_min_bid",
        lambda: bids(dealt(BASE, {**PARTNERSHIP, "team_min_bid": 4}), 1, 1),
        PlaceBid(2, "blind_nil"),
        "blind_nil_not_allowed",
    ),
]


@pytest.mark.parametrize(
    ("build", "command", "code"),
    [(build, command, code) for _, build, command, code in PRECEDENCE],
    ids=[name for name, _, _, _ in PRECEDENCE],
)
def test_precedence(build: Callable[[], Game], command: AnyCommand, code: str) -> None:
    assert refusal(build(), command) == code


@pytest.mark.parametrize(
    "action",
    [
        {"seat": 0, "bid": "two"},
        {"seat": 0, "bid": True},
        {"seat": 0, "bid": 2.5},
        {"seat": 0, "play": "ZZ"},
        {"seat": 0, "play": 12},
        {"seat": 0, "draw": "maybe"},
        {"seat": 0, "look": False},
        {"seat": 0, "pass": "AS KS"},
        {"seat": 0, "fly": 1},
        {"seat": 0, "bid": 3, "play": "AS"},
        {"seat": "0", "bid": 3},
        {"bid": 3},
        ["seat", 0],
    ],
)
def test_an_unreadable_scenario_action_is_malformed(action: Any) -> None:
    command = from_scenario(action)
    assert isinstance(command, Unreadable)
    assert refusal(bidding(), command) == "malformed"
    assert refusal(over(), command) == "game_over"


def test_scenario_actions_are_read() -> None:
    assert from_scenario({"seat": 0, "bid": 3}) == PlaceBid(0, 3)
    assert from_scenario({"seat": 1, "bid": "blind_nil"}) == PlaceBid(1, "blind_nil")
    assert from_scenario({"seat": 2, "play": "10h"}) == PlayCard(2, c("TH"))
    assert from_scenario({"seat": 3, "pass": ["AS", "2c"]}) == PassCards(3, cs("AS 2C"))
    assert from_scenario({"seat": 0, "draw": "keep"}) == Draw(0, True)
    assert from_scenario({"seat": 1, "draw": "discard"}) == Draw(1, False)
    assert from_scenario({"seat": 1, "look": True}) == LookAtHand(1)


# --------------------------------------------------------------------------- blind nil pass


@pytest.mark.parametrize("first", [0, 2])
def test_the_blind_nil_pass_in_either_order(first: int) -> None:
    state = passing()
    assert state.hand is not None
    assert state.hand.turn == NO_SEAT
    assert state.hand.passes_due == 0b0101
    assert legal_actions(state, 1) == []
    before = {seat: holding(state, seat) for seat in range(4)}
    given = {0: cs("AS KS"), 2: cs("7S 6S")}
    second = 2 - first
    events = decide(state, PassCards(first, given[first]))
    assert events == [CardsPassed(first, second, given[first])]
    state = folded(events, state)
    assert state is not None
    assert state.hand is not None
    assert state.hand.phase == "pass"
    assert holding(state, first) == before[first] - {str(card) for card in given[first]}
    assert holding(state, second) == before[second]
    assert refusal(state, PlayCard(0, c("AH"))) == "wrong_phase"
    events = decide(state, PassCards(second, given[second]))
    assert events[0] == CardsPassed(second, first, given[second])
    assert set(events[1:]) == {
        CardsReceived(first, second, given[second]),
        CardsReceived(second, first, given[first]),
    }
    state = folded(events, state)
    assert state is not None
    assert state.hand is not None
    assert holding(state, 0) == before[0] - {"AS", "KS"} | {"7S", "6S"}
    assert holding(state, 2) == before[2] - {"7S", "6S"} | {"AS", "KS"}
    assert holding(state, 1) == before[1]
    assert holding(state, 3) == before[3]
    assert (state.hand.phase, state.hand.turn) == ("play", 0)
    assert refusal(state, PlayCard(0, c("AS"))) == "card_not_in_hand"
    plays(state, "AH")


def test_the_blind_nil_pass_comes_before_the_lowest_club_lead() -> None:
    rules = {**PARTNERSHIP, "first_lead": "lowest_club"}
    state = bids(dealt(BASE, rules, dealer=0, scores=(200, 0)), "blind_nil", 3, 3, 5)
    state = run(state, PassCards(3, cs("2C 3C")), PassCards(1, cs("JH TH")))
    assert state.hand is not None
    assert (state.hand.phase, state.hand.turn) == ("play", 1)
    assert legal_plays(state, 1) == c("2C").bit


def test_no_pass_without_a_blind_nil_or_with_blind_nil_pass_0() -> None:
    state = bids(behind(200), 3, 3, 4, 3)
    assert state.hand is not None
    assert state.hand.phase == "play"
    rules = {**PARTNERSHIP, "blind_nil_pass": 0}
    state = bids(behind(200, rules), "blind_nil", 3, 4, 3)
    assert state.hand is not None
    assert state.hand.phase == "play"


def test_blind_nil_pass_1() -> None:
    state = bids(behind(200, {**PARTNERSHIP, "blind_nil_pass": 1}), "blind_nil", 3, 4, 3)
    assert refusal(state, PassCards(0, cs("AS KS"))) == "invalid_pass"
    state = run(state, PassCards(0, cs("AS")), PassCards(2, cs("7S")))
    assert "7S" in holding(state, 0)
    assert "AS" in holding(state, 2)


# --------------------------------------------------------------------------- two-player draw


def test_the_two_player_draw() -> None:
    state = two_player()
    pile = [card for card in CARDS if not card.is_joker]
    kept: dict[int, set[str]] = {0: set(), 1: set()}
    discarded: set[str] = set()
    for turn in range(26):
        assert state.hand is not None
        assert state.hand.phase == "draw"
        seat = 1 if turn % 2 == 0 else 0
        assert state.hand.turn == seat
        assert refusal(state, Draw(1 - seat, True)) == "not_your_turn"
        keep = turn % 3 == 0
        top, following = pile[2 * turn], pile[2 * turn + 1]
        events = decide(state, Draw(seat, keep))
        assert events == [CardDrawn(seat, top, keep), CardDrawn(seat, following, not keep)]
        kept[seat].add(str(top if keep else following))
        discarded.add(str(following if keep else top))
        state = folded(events, state)
        assert state is not None
    assert state.hand is not None
    assert holding(state, 0) == kept[0]
    assert holding(state, 1) == kept[1]
    assert len(kept[0]) == len(kept[1]) == 13
    assert {str(card) for card in cards_in(state.hand.discarded)} == discarded
    assert len(discarded) == 26
    assert (state.hand.phase, state.hand.turn) == ("bid", 1)
    assert refusal(state, Draw(1, True)) == "wrong_phase"
    assert refusal(state, PlaceBid(0, 3)) == "not_your_turn"
    state = bids(state, 6, 6)
    assert state.hand is not None
    assert (state.hand.phase, state.hand.turn) == ("play", 0)


def test_the_two_player_draw_with_a_seeded_deal_gives_13_each() -> None:
    state = seated({"preset": "two-player"}, dealer=1)
    state = apply(state, DealHand(SeededDeal(b"draw")))
    for _ in range(26):
        assert state.hand is not None
        state = apply(state, Draw(state.hand.turn, False))
    assert state.hand is not None
    assert held(state.hand, 0).bit_count() == held(state.hand, 1).bit_count() == 13
    assert held(state.hand, 0) & held(state.hand, 1) == 0
    assert state.hand.turn == 0


def test_dealt_hands_skip_the_draw() -> None:
    pile = [str(card) for card in CARDS if not card.is_joker]
    state = seated({"preset": "two-player"}, dealer=0)
    state = apply(state, DealHand(DealtHands((cs(" ".join(pile[:13])), cs(" ".join(pile[13:26]))))))
    assert state.hand is not None
    assert (state.hand.phase, state.hand.turn) == ("bid", 1)


# --------------------------------------------------------------------------- looking


def test_look_is_accepted_any_time_in_a_hand_and_twice_is_a_no_op() -> None:
    state = bidding()
    events = decide(state, LookAtHand(2))
    assert len(events) == 1
    assert isinstance(events[0], HandLooked)
    assert events[0].seat == 2
    assert set(events[0].cards or ()) == set(cs(BASE[2]))
    state = folded(events, state)
    assert state is not None
    assert decide(state, LookAtHand(2)) == []
    state = bids(state, 3)
    assert decide(state, LookAtHand(0)) == []
    state = bids(state, 3, 3, 3)
    assert decide(state, LookAtHand(1)) == []
    state = plays(state, "AH")
    assert decide(state, LookAtHand(3)) == []
    assert decide(two_player(), LookAtHand(0)) != []
    assert decide(passing(), LookAtHand(2)) == []


def test_a_bid_without_a_look_shows_the_cards_first() -> None:
    events = decide(bidding(), PlaceBid(0, 3))
    assert [type(event) for event in events] == [HandLooked, BidPlaced]


# --------------------------------------------------------------------------- hands and games


def _tally_hand(state: Game, deal: bytes, bid: Bid = 3) -> tuple[Game, list[AnyEvent]]:
    """Bid ``bid`` all round, then score a tally of 3 tricks each and one more for the dealer."""
    state = bids(state, *[bid] * state.rules.players)
    assert state.hand is not None
    tricks = [3] * state.rules.players
    tricks[state.hand.dealer] += table_for(state.rules).hand_size - sum(tricks)
    events = decide(state, RecordTally(tuple(tricks)), deal=SeededDeal(deal))
    result = fold(events, state)
    assert result is not None
    return result, events


def test_the_deal_rotates_clockwise() -> None:
    state = apply(seated(PARTNERSHIP, dealer=3), DealHand(SeededDeal(b"0")))
    dealers = []
    for hand in range(5):
        assert state.hand is not None
        dealers.append(state.hand.dealer)
        assert state.hand.number == hand + 1
        assert state.hand.turn == (state.hand.dealer + 1) % 4
        state, events = _tally_hand(state, bytes([hand]))
        assert [type(event) for event in events] == [HandScored, HandDealt]
    assert dealers == [3, 0, 1, 2, 3]


def test_the_deal_rotates_among_three() -> None:
    state = apply(seated({"preset": "cutthroat"}, dealer=1), DealHand(SeededDeal(b"0")))
    dealers = []
    for hand in range(4):
        assert state.hand is not None
        dealers.append(state.hand.dealer)
        state, _ = _tally_hand(state, bytes([hand]), bid=4)
    assert dealers == [1, 2, 0, 1]


def test_without_a_deal_the_game_waits_for_one() -> None:
    state = apply(seated(PARTNERSHIP, dealer=0), DealHand(SeededDeal(b"0")))
    state = bids(state, 3, 3, 3, 3)
    state = apply(state, RecordTally((3, 3, 3, 4)))
    assert state.hand is None
    assert state.status == "playing"
    assert refusal(state, PlaceBid(1, 3)) == "wrong_phase"
    state = apply(state, DealHand(SeededDeal(b"1")))
    assert state.hand is not None
    assert state.hand.dealer == 1


def test_a_tie_at_the_top_plays_another_hand() -> None:
    state = apply(seated(PARTNERSHIP, dealer=0, scores=(450, 440)), DealHand(SeededDeal(b"0")))
    state = bids(state, 3, 3, 4, 3)  # seats 1, 2, 3, 0
    events = decide(state, RecordTally((3, 3, 3, 4)), deal=SeededDeal(b"1"))
    scored = events[0]
    assert isinstance(scored, HandScored)
    assert scored.scores == (510, 510)
    assert not any(isinstance(event, GameEnded) for event in events)
    assert isinstance(events[1], HandDealt)
    state = folded(events, state)
    assert state is not None
    assert state.status == "playing"
    state = bids(state, 3, 3, 3, 3)
    events = decide(state, RecordTally((3, 3, 4, 3)), deal=SeededDeal(b"2"))
    assert events[-1] == GameEnded((0,), (571, 570))
    state = folded(events, state)
    assert state is not None
    assert state.status == "finished"
    assert state.winners == (0,)


def test_reaching_the_target_ends_the_game_the_highest_score_wins() -> None:
    state = apply(seated(PARTNERSHIP, dealer=0, scores=(480, 470)), DealHand(SeededDeal(b"0")))
    state = bids(state, 3, 2, 3, 2)  # seats 1, 2, 3, 0
    events = decide(state, RecordTally((3, 4, 3, 3)), deal=SeededDeal(b"1"))
    assert events[-1] == GameEnded((1,), (522, 531))
    assert not any(isinstance(event, HandDealt) for event in events)


def test_lose_at_ends_the_game() -> None:
    rules = {**PARTNERSHIP, "lose_at": -200}
    state = apply(seated(rules, dealer=0, scores=(-150, 0)), DealHand(SeededDeal(b"0")))
    state = bids(state, 3, 4, 3, 4)  # seats 1, 2, 3, 0
    events = decide(state, RecordTally((3, 4, 3, 3)))
    assert events[-1] == GameEnded((1,), (-230, 61))


def test_max_hands_ends_the_game() -> None:
    rules = {**PARTNERSHIP, "max_hands": 1}
    state = apply(seated(rules, dealer=0), DealHand(SeededDeal(b"0")))
    state, events = _tally_hand(state, b"1")
    assert state.status == "finished"
    assert events[-1] == GameEnded((0,), (61, 60))


def test_max_hands_with_a_tie_on_top_plays_on() -> None:
    rules = {**PARTNERSHIP, "max_hands": 2}
    state = apply(seated(rules, dealer=0), DealHand(SeededDeal(b"0")))
    state, _ = _tally_hand(state, b"1")
    assert (state.status, state.scores) == ("playing", (61, 60))
    state, _ = _tally_hand(state, b"2")
    assert (state.status, state.scores) == ("playing", (121, 121))
    assert state.hand is not None
    state, events = _tally_hand(state, b"3")
    assert (state.status, state.scores, state.winners) == ("finished", (182, 181), (0,))
    assert isinstance(events[-1], GameEnded)


def test_a_bad_tally_is_malformed() -> None:
    state = bids(apply(seated(), DealHand(SeededDeal(b"0"))), 3, 3, 3, 3)
    assert refusal(state, RecordTally((3, 3, 3, 3))) == "malformed"
    assert refusal(state, RecordTally((3, 3, 7))) == "malformed"
    assert refusal(state, RecordTally((-1, 4, 5, 5))) == "malformed"


def test_a_hand_played_out_is_scored() -> None:
    hands = [
        " ".join(r + "S" for r in "AKQJT98765432"),
        " ".join(r + "H" for r in "AKQJT98765432"),
        " ".join(r + "D" for r in "AKQJT98765432"),
        " ".join(r + "C" for r in "AKQJT98765432"),
    ]
    state = bids(dealt(hands, {**PARTNERSHIP, "boston": True}), 7, 1, 6, 1)
    events: list[AnyEvent] = []
    for k in range(13):
        for seat in range(4):
            events = decide(state, PlayCard(seat, cs(hands[seat])[k]))
            state = apply(state, PlayCard(seat, cs(hands[seat])[k]))
    scored = [event for event in events if isinstance(event, HandScored)]
    assert scored == [
        HandScored(1, (7, 1, 6, 1), (13, 0, 0, 0), (200, -20), (200, -20), (0, 0), ())
    ]
    assert state.hand is None


def test_a_renege_under_penalize_is_accepted_and_scored() -> None:
    hands = [
        "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2H",
        "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2S",
        " ".join(r + "D" for r in "AKQJT98765432"),
        " ".join(r + "C" for r in "AKQJT98765432"),
    ]
    state = bids(dealt(hands, {**PARTNERSHIP, "renege": "penalize"}), 10, 1, 2, "nil")
    state = plays(state, "2H")
    assert state.hand is not None
    assert legal_plays(state, 1) == held(state.hand, 1)
    events = decide(state, PlayCard(1, c("2S")))
    assert events == [CardPlayed(1, c("2S"), True)]
    state = plays(state, "2S", "2D", "2C")
    assert state.hand is not None
    assert state.hand.reneged == 0b10
    assert state.hand.won == (0, 1, 0, 0)
    state = plays(state, "AH", "3D", "3C", "3S")
    for k in range(11):
        state = plays(
            state,
            "AKQJT987654"[k] + "S",
            "KQJT9876543"[k] + "H",
            "456789TJQKA"[k] + "D",
            "456789TJQKA"[k] + "C",
        )
    assert state.scores == (120, -110)


def test_evolve_refuses_an_event_without_a_game() -> None:
    with pytest.raises(ValueError, match="game_created"):
        evolve(None, BidPlaced(0, 3))


def test_a_deal_must_be_one_hand_per_seat_of_the_pack() -> None:
    state = seated()
    short = tuple(cs(hand) for hand in BASE[:3])
    assert refusal(state, DealHand(DealtHands(short))) == "malformed"
    twice = (cs(BASE[0]), cs(BASE[0]), cs(BASE[2]), cs(BASE[3]))
    assert refusal(state, DealHand(DealtHands(twice))) == "malformed"
    assert refusal(state, DealHand(StackedDeck(cs(" ".join(BASE))[:51]))) == "malformed"


def test_legal_plays_follow_suit() -> None:
    state = following()
    assert legal_plays(state, 1) == set_of(cs("JH TH 9H 8H"))
    assert legal_plays(state, 2) == 0
    assert {str(a.card) for a in legal_actions(state, 1) if isinstance(a, PlayCard)} == {
        "JH",
        "TH",
        "9H",
        "8H",
    }
