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


MAX_TURN_S = 24 * 3600.0
"""The longest turn or bank a clock may give (a day): a longer one is no clock."""


class SeatClock(msgspec.Struct, frozen=True, gc=False):
    """One seat's clock: what is left of its bank, its timeouts in a row, whether it is away,
    and ``since``, when its current turn was given (seconds since the epoch, the commit time
    of the event that gave it), None while it is not on the clock."""

    bank: float
    timeouts: int = 0
    away: bool = False
    since: float | None = None


class Timing(msgspec.Struct, frozen=True, gc=False):
    """A clocked game's clocks: the clock it was created with, and one per seat."""

    clock: Clock
    seats: tuple[SeatClock, ...]

    def deadline(self, seat: int) -> float | None:
        """When ``seat``'s clock runs out (seconds since the epoch), None when it is not on
        the clock: ``turn_s`` plus what is left of its bank after its turn was given, or at
        once when it is away."""
        held = self.seats[seat]
        if held.since is None:
            return None
        if held.away:
            return held.since
        return held.since + self.clock.turn_s + held.bank


def rfc3339(seconds: float) -> str:
    """Seconds since the epoch as RFC 3339 in UTC to the millisecond (``...T12:00:00.250Z``),
    by calendar arithmetic alone (the domain reads no clock and imports no ``datetime``)."""
    millis = round(seconds * 1000)
    days, millis = divmod(millis, 86_400_000)
    # Howard Hinnant's civil_from_days: the proleptic Gregorian date of a day number.
    z = days + 719_468
    era, doe = divmod(z, 146_097)
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (month <= 2)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{year:04d}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}Z"
