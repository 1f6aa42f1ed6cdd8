"""The two-player draw: keep the top card or take the next one unseen.

A card is kept when it is worth more to the hand than the card that would replace it, on
average over every card this seat has not seen. The worth is what it adds to the hand's trick
count, or, for a hand heading for a clean nil, whether it keeps the nil clean.
"""

from __future__ import annotations

from domain.cards import iter_cards
from services.bots.bidding import estimate_tricks, nil_danger
from services.bots.situation import Situation

NIL_PLAN_FROM = 5
"""Cards in hand before a low hand is judged to be heading for a nil."""


def keeps(sit: Situation) -> bool:
    """Whether to keep the card on top of the pile."""
    top = sit.drawn
    if top is None:
        return True
    unknown = sit.unseen & ~(1 << top)
    if _heading_for_nil(sit):
        return nil_danger(sit, sit.hand | 1 << top) == 0
    base = estimate_tricks(sit)
    gains = [estimate_tricks(sit, sit.hand | 1 << card) - base for card in iter_cards(unknown)]
    expected = sum(gains) / len(gains) if gains else 0.0
    return estimate_tricks(sit, sit.hand | 1 << top) - base >= expected


def _heading_for_nil(sit: Situation) -> bool:
    if not sit.rules.nil or sit.hand.bit_count() < NIL_PLAN_FROM:
        return False
    return nil_danger(sit) == 0 and estimate_tricks(sit) < 0.5
