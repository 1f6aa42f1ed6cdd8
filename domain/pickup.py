"""Picking up the cards: looking at a hand, the two-player draw, and the dealer's discard.

A seat's cards stay hidden from it until it looks (``look``, or implicitly when it bids or
discards, or when the play of a hand without bidding begins), so that a blind nil or a blind bid
stays possible. In the two-player draw (seed
``003``) each turn a player sees the top card of the pile and keeps or discards it, then takes
the next one unseen if the first was discarded, or discards it if the first was kept; discards
are face up. Under ``dealer_discard: n`` the dealer, dealt n cards more than the others,
discards n face down before the bidding; they are out of play.
"""

from __future__ import annotations

from msgspec.structs import replace

from domain.commands import DiscardCards, Draw, LookAtHand
from domain.deal_phase import after_pickup, is_bidding_hand, open_bidding
from domain.errors import RuleViolation
from domain.events import AnyEvent, CardDrawn, CardsDiscarded, HandLooked
from domain.rules import DRAW_HAND
from domain.seating import seat_of
from domain.state import (
    HELD,
    LANE,
    Game,
    Hand,
    cards_held,
    counted,
    held,
    held_twice,
    in_hand,
    taken_from,
)
from domain.table import Seat


def has_looked(hand: Hand, seat: Seat) -> bool:
    return bool(hand.looked >> seat & 1)


def look(hand: Hand, seat: Seat) -> HandLooked:
    """The seat picks up its cards."""
    return HandLooked(seat, tuple(cards_held(hand, seat)))


def looks_to_play(state: Game) -> list[HandLooked]:
    """In a hand without bidding nobody can bid blind: once its play begins, every seat that
    has not looked picks its cards up."""
    hand = state.hand
    if hand is None or hand.phase != "play" or is_bidding_hand(state.rules, hand.number):
        return []
    return [look(hand, seat) for seat in range(state.rules.players) if not has_looked(hand, seat)]


def discard_is_due(hand: Hand, seat: Seat) -> bool:
    return hand.phase == "discard" and seat == hand.dealer


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


def decide_discard(state: Game, command: DiscardCards) -> list[AnyEvent]:
    seat = seat_of(state, command.seat)
    hand = in_hand(state)
    if hand.phase != "discard":
        raise RuleViolation("wrong_phase", "no discard is due")
    if seat != hand.dealer:
        raise RuleViolation("not_your_turn", f"the dealer, seat {hand.dealer}, discards")
    count = state.rules.dealer_discard
    cards = command.cards
    if len(cards) != count:
        raise RuleViolation("invalid_discard", f"the dealer discards {count} cards")
    once, twice, thrice = counted(cards)
    if thrice or once & ~held(hand, seat) or twice & ~held_twice(hand, seat):
        raise RuleViolation("invalid_discard", "a discarded card is not in the dealer's hand")
    discarded = CardsDiscarded(seat, cards)
    # Discarding is looking: the dealer picks its cards up first.
    return [discarded] if has_looked(hand, seat) else [look(hand, seat), discarded]


# --------------------------------------------------------------------------- evolve


def hand_looked(state: Game, hand: Hand, event: HandLooked) -> Hand:
    return replace(hand, looked=hand.looked | 1 << event.seat)


def cards_discarded(state: Game, hand: Hand, event: CardsDiscarded) -> Hand:
    """The dealer's discard is out of play; the bidding (or the opening lead) follows."""
    cards = event.cards or ()
    holdings, twice = taken_from(hand, event.seat, cards)
    hand = replace(hand, holdings=holdings, twice=twice, looked=hand.looked | 1 << event.seat)
    return open_bidding(state.rules, hand)


def card_drawn(state: Game, hand: Hand, event: CardDrawn) -> Hand:
    """One card of a draw turn; after the second, the turn passes, and once both players hold
    their hands the bidding starts left of the dealer (or the play, in a hand without one)."""
    holdings, twice = hand.holdings, hand.twice
    discarded = hand.discarded
    card = event.card
    if card is not None:
        if event.kept:
            bit = card.bit << LANE * event.seat
            if holdings & bit:  # two decks: the other copy
                twice |= bit
            holdings |= bit
        else:  # a second copy of a discarded card goes to the second 64 bits
            discarded |= card.bit << LANE if discarded & card.bit else card.bit
    drawn = hand.drawn + 1
    turn = hand.turn
    done = False
    if drawn % 2 == 0:
        players = state.rules.players
        turn = (turn + 1) % players
        done = all(
            (holdings >> LANE * seat & HELD).bit_count() + (twice >> LANE * seat & HELD).bit_count()
            == DRAW_HAND
            for seat in range(players)
        )
    hand = replace(
        hand,
        holdings=holdings,
        twice=twice,
        discarded=discarded,
        drawn=drawn,
        turn=turn,
        looked=hand.looked | 1 << event.seat,
    )
    return after_pickup(state.rules, hand) if done else hand
