"""Bids: a number of tricks, ``"nil"`` or ``"blind_nil"``."""

from __future__ import annotations

from typing import Literal

NIL: Literal["nil"] = "nil"
BLIND_NIL: Literal["blind_nil"] = "blind_nil"

Bid = int | Literal["nil", "blind_nil"]


def is_nil(bid: Bid | None) -> bool:
    """A nil or blind nil: a promise to take no trick, scored apart from the contract."""
    return bid in (NIL, BLIND_NIL)


def tricks_bid(bid: Bid | None) -> int:
    """What a bid adds to its unit's contract (a nil counts 0)."""
    return bid if isinstance(bid, int) else 0
