"""The blind nil pass: the nil bidder gives away its most dangerous cards, its partner its lowest.

The two pass at the same time, so neither sees the other's cards before choosing.
"""

from __future__ import annotations

from domain.bids import is_nil
from domain.cards import iter_cards
from domain.table import TRUMP
from services.bots.situation import Situation


def choose_pass(sit: Situation, count: int) -> list[int]:
    """The ``count`` cards to pass to the partner."""
    cards = list(iter_cards(sit.hand))
    if is_nil(sit.bids[sit.seat]):
        cards.sort(key=lambda card: exposure(sit, card), reverse=True)
    else:
        # Low side cards are what a nil hand ducks with; the partner keeps its honours to
        # cover the nil, and its trumps.
        cards.sort(key=lambda card: (sit.suit(card) == TRUMP, sit.table.power[card]))
    return cards[:count]


def exposure(sit: Situation, card: int) -> int:
    """How likely ``card`` is to take a trick the nil bidder does not want.

    A trump by its rank in the trump order; a side card by its rank, less two for each lower
    card of the same suit held to duck with first.
    """
    table = sit.table
    if table.suit_of[card] == TRUMP:
        return 16 - sit.higher(card, table.pack_mask).bit_count()
    below = sit.in_suit(sit.hand, table.suit_of[card]) & ((1 << card) - 1)
    return table.power[card] - 2 * below.bit_count()
