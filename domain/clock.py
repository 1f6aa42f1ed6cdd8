"""A table's clock: how long the seat on turn has, and what happens when it runs out.

The domain keeps no time of its own: every instant it reasons about comes in a command or an
event (the commit time of the event that gave the turn), so a replay reaches the same answer.
"""

from __future__ import annotations

from typing import Literal

import msgspec

OnTimeout = Literal["auto", "forfeit"]


class Clock(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``turn_s`` seconds per turn, plus a ``bank_s`` reserve per seat that time past
    ``turn_s`` comes out of. At the deadline, ``auto`` acts for the seat and ``forfeit`` ends the
    game with the seat's unit losing. After ``away_after`` timeouts in a row (0: never) the seat
    is away and is acted for at once until its token acts again."""

    turn_s: float
    bank_s: float = 0.0
    on_timeout: OnTimeout = "auto"
    away_after: int = 0
