"""What each reader sees (domain/views.py): never a card it could not see at the table."""

from __future__ import annotations

from typing import Any

import msgspec

from domain.bids import Bid
from domain.cards import CARDS, Card, cards_in
from domain.commands import (
    AnyCommand,
    CreateGame,
    DealHand,
    Draw,
    LookAtHand,
    PassCards,
    PlaceBid,
    PlayCard,
    TakeSeat,
)
from domain.events import (
    AnyEvent,
    CardDrawn,
    CardPlayed,
    CardsPassed,
    CardsReceived,
    HandDealt,
    HandLooked,
    HandScored,
)
from domain.game import decide, fold
from domain.shuffle import DealtHands, SeededDeal, StackedDeck
from domain.state import Game, held
from domain.views import (
    PUBLIC,
    LegalPlay,
    NextTurn,
    event_for,
    next_turn,
    public_view,
    seat_view,
)

BASE = [
    "AS KS QS JS AH KH QH AD KD QD AC KC QC",
    "TS 9S 8S JH TH 9H 8H JD TD 9D JC TC 9C",
    "7S 6S 5S 7H 6H 5H 8D 7D 6D 5D 8C 7C 6C",
    "4S 3S 2S 4H 3H 2H 4D 3D 2D 5C 4C 3C 2C",
]
CARD_TEXTS = {str(card) for card in CARDS}


def cs(texts: str) -> tuple[Card, ...]:
    return tuple(Card.parse(text) for text in texts.split())


def apply(state: Game | None, command: AnyCommand) -> Game:
    result = fold(decide(state, command), state)
    assert result is not None
    return result


def folded(events: list[AnyEvent], state: Game) -> Game:
    result = fold(events, state)
    assert result is not None
    return result


def seated(rules: dict[str, Any], dealer: int = 3, scores: tuple[int, ...] | None = None) -> Game:
    state = apply(None, CreateGame("g", rules, dealer=dealer, scores=scores))
    for seat in range(state.rules.players):
        state = apply(state, TakeSeat(f"p{seat}", seat))
    return state


def dealt(rules: dict[str, Any] | None = None, scores: tuple[int, ...] | None = None) -> Game:
    state = seated(rules or {"preset": "partnership"}, scores=scores)
    return apply(state, DealHand(DealtHands(tuple(cs(hand) for hand in BASE))))


def bids(state: Game, *values: Bid) -> Game:
    for value in values:
        assert state.hand is not None
        state = apply(state, PlaceBid(state.hand.turn, value))
    return state


def strings_in(value: Any) -> set[str]:
    """Every string anywhere in a JSON-like value."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*(strings_in(v) for v in value.values())) if value else set()
    if isinstance(value, (list, tuple)):
        return set().union(*(strings_in(v) for v in value)) if value else set()
    return set()


def cards_shown(value: Any) -> set[str]:
    """The cards a view or an event shows, as its JSON would carry them."""
    return strings_in(msgspec.to_builtins(value)) & CARD_TEXTS


def hand_of(state: Game, seat: int) -> set[str]:
    assert state.hand is not None
    return {str(card) for card in cards_in(held(state.hand, seat))}


def test_the_helpers_find_cards() -> None:
    assert cards_shown(HandLooked(0, cs("AS 2C"))) == {"AS", "2C"}
    assert cards_shown({"a": [{"b": "TH"}], "c": "nil"}) == {"TH"}


def _states() -> list[Game]:
    state = dealt()
    out = [state]
    state = apply(state, LookAtHand(2))
    out.append(state)
    state = bids(state, 3, 3, 3, 3)
    out.append(state)
    for card in ["AH", "JH", "7H"]:
        assert state.hand is not None
        state = apply(state, PlayCard(state.hand.turn, Card.parse(card)))
        out.append(state)
    return out


def test_the_public_view_never_shows_a_card_of_a_hand() -> None:
    for state in _states():
        shown = cards_shown(public_view(state))
        for seat in range(4):
            assert not shown & hand_of(state, seat)


def test_the_public_view_shows_the_trick_on_the_table() -> None:
    state = _states()[-1]
    view = public_view(state)
    assert [(entry.seat, str(entry.card)) for entry in view.current_trick] == [
        (0, "AH"),
        (1, "JH"),
        (2, "7H"),
    ]
    assert cards_shown(view) == {"AH", "JH", "7H"}


def test_a_seat_view_never_shows_another_seat_s_cards() -> None:
    for state in _states():
        for seat in range(4):
            shown = cards_shown(seat_view(state, seat))
            for other in range(4):
                if other != seat:
                    assert not shown & hand_of(state, other)


def test_a_seat_sees_its_hand_only_once_it_looks_or_bids() -> None:
    state = dealt()
    for seat in range(4):
        assert seat_view(state, seat).hand is None
        assert not cards_shown(seat_view(state, seat)) & hand_of(state, seat)
    state = apply(state, LookAtHand(2))
    view = seat_view(state, 2)
    assert view.hand is not None
    assert {str(card) for card in view.hand} == set(BASE[2].split())
    assert seat_view(state, 0).hand is None
    state = bids(state, 3)
    view = seat_view(state, 0)
    assert view.hand is not None
    assert {str(card) for card in view.hand} == set(BASE[0].split())
    assert seat_view(state, 1).hand is None
    assert seat_view(state, 3).hand is None


def test_a_blind_nil_bidder_sees_its_cards_after_the_bid() -> None:
    state = dealt(scores=(0, 200))
    assert seat_view(state, 0).hand is None
    state = bids(state, "blind_nil")
    view = seat_view(state, 0)
    assert view.hand is not None
    assert len(view.hand) == 13


def test_a_seat_view_lists_its_legal_actions() -> None:
    state = bids(dealt(), 3, 3, 3, 3)
    legal = msgspec.to_builtins(seat_view(state, 0).legal)  # as the API sends them
    assert {"type": "play", "card": "AH"} in legal
    assert {"type": "play", "card": "AS"} not in legal
    assert seat_view(state, 1).legal == []


def test_a_hand_dealt_shows_no_hand_deck_or_seed_to_anyone() -> None:
    state = seated({"preset": "partnership"})
    events = decide(state, DealHand(SeededDeal(b"secret")))
    (deal,) = events
    assert isinstance(deal, HandDealt)
    assert deal.hands
    assert deal.deck
    assert deal.seed
    for reader in [PUBLIC, 0, 1, 2, 3]:
        seen = event_for(deal, reader)
        assert isinstance(seen, HandDealt)
        assert seen.hands == ()
        assert seen.deck is None
        assert seen.seed is None
        assert seen.commitment == deal.commitment
        assert (seen.hand, seen.dealer) == (deal.hand, deal.dealer)
        assert cards_shown(seen) == set()


def test_a_look_is_shown_to_the_seat_alone() -> None:
    (look,) = decide(dealt(), LookAtHand(1))
    assert isinstance(look, HandLooked)
    assert event_for(look, 1) == look
    assert cards_shown(event_for(look, 1)) == set(BASE[1].split())
    for reader in [PUBLIC, 0, 2, 3]:
        seen = event_for(look, reader)
        assert seen == HandLooked(1, None)
        assert cards_shown(seen) == set()


def test_a_kept_draw_is_shown_to_the_drawer_alone_and_discards_to_all() -> None:
    state = seated({"preset": "two-player"}, dealer=0)
    pile = tuple(card for card in CARDS if not card.is_joker)
    state = apply(state, DealHand(StackedDeck(pile)))
    assert seat_view(state, 1).drawn_card == pile[0]
    assert seat_view(state, 0).drawn_card is None
    kept, discarded = decide(state, Draw(1, True))
    assert isinstance(kept, CardDrawn)
    assert isinstance(discarded, CardDrawn)
    assert (kept.card, kept.kept, discarded.card, discarded.kept) == (pile[0], True, pile[1], False)
    assert event_for(kept, 1) == kept
    assert event_for(kept, 0) == CardDrawn(1, None, True)
    assert event_for(kept, PUBLIC) == CardDrawn(1, None, True)
    for reader in [PUBLIC, 0, 1]:
        assert event_for(discarded, reader) == discarded
    state = folded([kept, discarded], state)
    assert [str(card) for card in public_view(state).discards] == [str(pile[1])]
    assert not cards_shown(seat_view(state, 0)) & {str(pile[0])}
    assert str(pile[0]) in cards_shown(seat_view(state, 1))


def test_the_deal_of_a_draw_shows_no_pile() -> None:
    state = seated({"preset": "two-player"}, dealer=0)
    (deal,) = decide(state, DealHand(SeededDeal(b"pile")))
    assert isinstance(deal, HandDealt)
    assert deal.deck is not None
    for reader in [PUBLIC, 0, 1]:
        assert cards_shown(event_for(deal, reader)) == set()


def test_a_pass_is_hidden_from_third_seats() -> None:
    state = bids(dealt(scores=(0, 200)), "blind_nil", 3, 4, 3)
    (passed,) = decide(state, PassCards(2, cs("7S 6S")))
    assert passed == CardsPassed(2, 0, cs("7S 6S"))
    assert event_for(passed, 2) == passed
    for reader in [PUBLIC, 1, 3]:
        assert event_for(passed, reader) == CardsPassed(2, 0, None)
    state = folded([passed], state)
    events = decide(state, PassCards(0, cs("AS KS")))
    received = [event for event in events if isinstance(event, CardsReceived)]
    assert len(received) == 2
    for event in received:
        assert event.cards
        assert event_for(event, event.seat) == event
        assert event_for(event, event.giver) == event
        for reader in [PUBLIC, 1, 3]:
            seen = event_for(event, reader)
            assert isinstance(seen, CardsReceived)
            assert seen.cards is None
            assert (seen.seat, seen.giver) == (event.seat, event.giver)
    second = events[0]
    assert isinstance(second, CardsPassed)
    for reader in [PUBLIC, 1, 3]:
        assert cards_shown(event_for(second, reader)) == set()


def test_a_renege_flag_is_the_reneging_seat_s_alone() -> None:
    hands = [
        "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2H",
        "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2S",
        "AD KD QD JD TD 9D 8D 7D 6D 5D 4D 3D 2D",
        "AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C",
    ]
    state = seated({"preset": "partnership", "renege": "penalize"})
    state = apply(state, DealHand(DealtHands(tuple(cs(hand) for hand in hands))))
    state = bids(state, 10, 1, 2, "nil")
    state = apply(state, PlayCard(0, Card.parse("2H")))
    (played,) = decide(state, PlayCard(1, Card.parse("2S")))
    assert played == CardPlayed(1, Card.parse("2S"), True)
    assert event_for(played, 1) == played
    for reader in [PUBLIC, 0, 2, 3]:
        assert event_for(played, reader) == CardPlayed(1, Card.parse("2S"), False)


def test_public_events_pass_unchanged() -> None:
    scored = HandScored(1, (3, 3, 3, 3), (3, 3, 3, 4), (60, 61), (60, 61), (0, 1), (), "ab")
    played = CardPlayed(0, Card.parse("AS"))
    for reader in [PUBLIC, 0, 1, 2, 3]:
        assert event_for(scored, reader) == scored
        assert event_for(played, reader) == played


def test_views_encode_as_json() -> None:
    state = _states()[-1]
    for reader in range(4):
        decoded: Any = msgspec.json.decode(msgspec.json.encode(seat_view(state, reader)))
        assert isinstance(decoded, dict)
        assert decoded["seat"] == reader


def test_next_turn_names_the_seat_the_game_waits_on_and_what_it_must_send() -> None:
    waiting = apply(None, CreateGame("g", {"preset": "partnership"}, dealer=3))
    assert next_turn(waiting) is None  # no one acts before the seats fill
    state = dealt()
    assert next_turn(state) == NextTurn(seat=0, must="bid")  # left of the dealer
    state = bids(state, 3, 3, 3, 3)
    assert next_turn(state) == NextTurn(seat=0, must="play")
    assert {type(action) for action in seat_view(state, 0).legal} == {LegalPlay}
