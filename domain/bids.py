"""Bids: a number of tricks, ``"nil"``, ``"blind_nil"``, or a blind bid ``"blind_N"``.

A blind bid (``blind_bids``) is written ``"blind_"`` and N in decimal, without sign or leading
zero, in actions, tallies and outcomes alike::

    >>> read_bid("blind_6"), tricks_bid("blind_6"), is_blind("blind_6"), is_nil("blind_nil")
    ('blind_6', 6, True, True)
    >>> read_bid("blind_06")
    Traceback (most recent call last):
    ...
    domain.errors.RuleViolation: malformed: 'blind_06' is not a bid: 3, nil, blind_nil, blind_6
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

import msgspec

from domain.errors import RuleViolation

NIL: Final = "nil"
BLIND_NIL: Final = "blind_nil"
BLIND = "blind_"

BID_PATTERN = r"^(?:nil|blind_nil|blind_(?:0|[1-9][0-9]*))$"
"""What a bid written as a string may be."""

Bid = int | Annotated[str, msgspec.Meta(pattern=BID_PATTERN)]
"""A number of tricks, ``"nil"``, ``"blind_nil"`` or ``"blind_N"``."""

_WORDS = re.compile(BID_PATTERN)


def read_bid(value: Any) -> Bid:
    """A bid as sent; ``malformed`` for anything that is not one."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, str))
        or (isinstance(value, str) and not _WORDS.fullmatch(value))
    ):
        raise RuleViolation("malformed", f"{value!r} is not a bid: 3, nil, blind_nil, blind_6")
    return value


def blind(tricks: int) -> str:
    """The blind bid of ``tricks`` tricks."""
    return f"{BLIND}{tricks}"


def is_nil(bid: Bid | None) -> bool:
    """A nil or blind nil: a promise to take no trick, scored apart from the contract."""
    return bid in (NIL, BLIND_NIL)


def is_blind(bid: Bid | None) -> bool:
    """A blind bid of tricks (``blind_N``); a blind nil is a nil, not one of these."""
    return isinstance(bid, str) and bid.startswith(BLIND) and bid != BLIND_NIL


def tricks_bid(bid: Bid | None) -> int:
    """What a bid adds to its unit's contract (a nil counts 0, ``blind_N`` counts N)."""
    if isinstance(bid, int):
        return bid
    if bid is not None and is_blind(bid):
        return int(bid[len(BLIND) :])
    return 0
