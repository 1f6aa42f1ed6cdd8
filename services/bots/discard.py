"""The dealer's discard (``dealer_discard``): the cards the hand will miss least.

A hand heading for a nil sheds the cards likeliest to take a trick, as a nil bidder passes
them. Any other hand keeps its trumps and its honours, and throws its lowest side cards from
its shortest side suits first: a suit emptied early is a suit to ruff.
"""

from __future__ import annotations

from domain.cards import iter_cards
from domain.table import TRUMP
from services.bots.bidding import SIDE_SUITS, estimate_tricks, nil_danger
from services.bots.passing import exposure
from services.bots.situation import Situation

NIL_HAND = 1.0
"""Estimated tricks below which a hand keeps its nil in mind when discarding."""


def choose_discard(sit: Situation, count: int) -> list[int]:
    """The ``count`` cards (indexes, each once) to discard from the seat's hand."""
    cards = list(iter_cards(sit.hand))
    if sit.rules.nil and estimate_tricks(sit) < NIL_HAND + count / 2:
        cards.sort(key=lambda card: exposure(sit, card), reverse=True)
        plan = cards[:count]
        rest = sit.hand & ~sum(1 << card for card in plan)
        if nil_danger(sit, rest) <= nil_danger(sit):
            return plan
    length = {suit: sit.in_suit(sit.hand, suit).bit_count() for suit in SIDE_SUITS}

    def worth(card: int) -> tuple[bool, int, int, int]:
        suit = sit.suit(card)
        honour = not sit.higher(card, sit.unseen)  # the top card out: it takes a trick
        return (suit == TRUMP or honour, length.get(suit, 99), sit.table.power[card], card)

    cards.sort(key=worth)
    return cards[:count]
