"""The blind nil pass (``blind_nil_pass``, partnerships only): after the bidding, the blind nil
bidder and its partner (the seat facing it) each pass that many cards to the other, face down,
in either order; the cards change hands once both have passed, and then the opening lead is
made. With two decks a card named twice passes both copies.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec.structs import replace

from domain.bids import BLIND_NIL, Bid
from domain.commands import PassCards
from domain.errors import RuleViolation
from domain.events import AnyEvent, CardsPassed, CardsReceived
from domain.rules import Rules
from domain.seating import seat_of
from domain.state import (
    Game,
    Hand,
    at_seat,
    counted,
    given_to,
    held,
    held_twice,
    in_hand,
    taken_from,
)
from domain.table import Seat
from domain.tricks import start_play


def passes_due(rules: Rules, bids: Sequence[Bid | None]) -> int:
    """The seats that owe a pass once these bids are in (a bit set of seats)."""
    due = 0
    if rules.blind_nil_pass:
        table = rules.table
        for seat, bid in enumerate(bids):
            if bid == BLIND_NIL:
                partner = table.partner_of(seat)
                if partner is not None:
                    due |= 1 << seat | 1 << partner
    return due


def pass_is_due(hand: Hand, seat: Seat) -> bool:
    return bool(hand.phase == "pass" and hand.passes_due >> seat & 1)


# --------------------------------------------------------------------------- decide


def decide_pass(state: Game, command: PassCards) -> list[AnyEvent]:
    seat = seat_of(state, command.seat)
    hand = in_hand(state)
    if hand.phase != "pass":
        raise RuleViolation("wrong_phase", "no pass now")
    if not pass_is_due(hand, seat):
        raise RuleViolation("invalid_pass", f"seat {seat} has no pass due")
    count = state.rules.blind_nil_pass
    cards = command.cards
    if len(cards) != count:
        raise RuleViolation("invalid_pass", f"a pass is {count} cards")
    once, twice, thrice = counted(cards)
    if thrice or once & ~held(hand, seat) or twice & ~held_twice(hand, seat):
        raise RuleViolation("invalid_pass", "a passed card is not in the hand")
    partner = state.rules.table.partner_of(seat)
    assert partner is not None
    events: list[AnyEvent] = [CardsPassed(seat, partner, cards)]
    partner_cards = hand.passed[partner]
    if partner_cards is not None:
        events.append(CardsReceived(partner, seat, cards))
        events.append(CardsReceived(seat, partner, partner_cards))
    return events


# --------------------------------------------------------------------------- evolve


def cards_passed(state: Game, hand: Hand, event: CardsPassed) -> Hand:
    holdings, twice = taken_from(hand, event.seat, event.cards or ())
    return replace(
        hand,
        holdings=holdings,
        twice=twice,
        passes_due=hand.passes_due & ~(1 << event.seat),
        passed=at_seat(hand.passed, event.seat, event.cards),
    )


def cards_received(state: Game, hand: Hand, event: CardsReceived) -> Hand:
    """A pass arrives; when the last has, the opening lead is made."""
    holdings, twice = given_to(hand, event.seat, event.cards or ())
    hand = replace(
        hand,
        holdings=holdings,
        twice=twice,
        passed=at_seat(hand.passed, event.giver, None),
    )
    if not hand.passes_due and all(cards is None for cards in hand.passed):
        return start_play(state.rules, hand)
    return hand
