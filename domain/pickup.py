"""Picking up the cards: looking at a hand, and the two-player draw.

A seat's cards stay hidden from it until it looks (``look``, or implicitly when it bids), so
that a blind nil stays possible. In the two-player draw (seed ``003``) each turn a player sees
the top card of the pile and keeps or discards it, then takes the next one unseen if the first
was discarded, or discards it if the first was kept; discards are face up.
"""

from __future__ import annotations

from msgspec.structs import replace

from domain.cards import cards_in
from domain.commands import Draw, LookAtHand
from domain.errors import RuleViolation
from domain.events import AnyEvent, CardDrawn, HandLooked
from domain.seating import seat_of
from domain.state import HELD, LANE, Game, Hand, held, in_hand
from domain.table import Seat

DRAW_HAND = 13
"""Cards each player holds when the draw is over."""


def has_looked(hand: Hand, seat: Seat) -> bool:
    return bool(hand.looked >> seat & 1)


def look(hand: Hand, seat: Seat) -> HandLooked:
    """The seat picks up its cards."""
    return HandLooked(seat, tuple(cards_in(held(hand, seat))))


# --------------------------------------------------------------------------- decide


def decide_look(state: Game, command: LookAtHand) -> list[AnyEvent]:
    seat = seat_of(state, command.seat)
    hand = in_hand(state)
    return [] if has_looked(hand, seat) else [look(hand, seat)]


def decide_draw(state: Game, command: Draw) -> list[AnyEvent]:
    seat = seat_of(state, command.seat)
    hand = in_hand(state)
    if hand.phase != "draw":
        raise RuleViolation("wrong_phase", "the draw is over")
    if seat != hand.turn:
        raise RuleViolation("not_your_turn", f"seat {hand.turn} draws now")
    top, following = hand.pile[hand.drawn], hand.pile[hand.drawn + 1]
    return [CardDrawn(seat, top, command.keep), CardDrawn(seat, following, not command.keep)]


# --------------------------------------------------------------------------- evolve


def hand_looked(state: Game, hand: Hand, event: HandLooked) -> Hand:
    return replace(hand, looked=hand.looked | 1 << event.seat)


def card_drawn(state: Game, hand: Hand, event: CardDrawn) -> Hand:
    """One card of a draw turn; after the second, the turn passes, and once both players hold
    their hands the bidding starts left of the dealer."""
    holdings, discarded = hand.holdings, hand.discarded
    if event.card is not None:
        if event.kept:
            holdings |= event.card.bit << LANE * event.seat
        else:
            discarded |= event.card.bit
    drawn = hand.drawn + 1
    turn, phase = hand.turn, hand.phase
    players = state.rules.players
    if drawn % 2 == 0:
        turn = (turn + 1) % players
        if all(
            (holdings >> LANE * seat & HELD).bit_count() == DRAW_HAND for seat in range(players)
        ):
            phase, turn = "bid", (hand.dealer + 1) % players
    return replace(
        hand,
        holdings=holdings,
        discarded=discarded,
        drawn=drawn,
        turn=turn,
        phase=phase,
        looked=hand.looked | 1 << event.seat,
    )
