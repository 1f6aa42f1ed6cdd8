"""The game's state: the fold of its events (see :func:`domain.game.evolve`).

Hands are bit sets of card indexes (see :mod:`domain.cards`), which keeps every legality check
to a few integer operations. Nothing here leaves the server as it is: :mod:`domain.views` is the
only way out, and it hides what a reader could not see at the table.
"""

from __future__ import annotations

from typing import Literal, TypeVar

import msgspec

from domain.bids import Bid
from domain.cards import Card, CardSet
from domain.errors import RuleViolation
from domain.rules import Rules
from domain.table import Seat

Phase = Literal["draw", "bid", "pass", "play"]
Status = Literal["waiting", "playing", "finished"]

NO_SEAT = -1
LANE = 64
"""Bits per seat in :attr:`Hand.holdings`."""
HELD = (1 << LANE) - 1


class Player(msgspec.Struct, frozen=True, gc=False):
    name: str
    entropy: str = ""


class Hand(msgspec.Struct, frozen=True, gc=False):
    """One hand, from the deal to the last trick."""

    number: int
    dealer: int
    phase: Phase
    turn: int
    """The seat to act (draw, bid, play); ``NO_SEAT`` while passes are due."""
    holdings: int
    """Every seat's cards: seat ``s`` holds the bit set ``holdings >> 64 * s & HELD``
    (see :func:`held`); one integer, so a play changes one number."""
    looked: int
    """Bit set of the seats that have seen their cards."""
    bids: tuple[Bid | None, ...]
    won: tuple[int, ...]
    """Tricks won so far, per seat."""
    trick: tuple[int, ...] = ()
    """The card indexes on the table, in play order from ``leader``."""
    tricks_played: int = 0
    leader: int = NO_SEAT
    spades_broken: bool = False
    reneged: int = 0
    """Bit set of the units that reneged (``renege: penalize``)."""
    opening_card: int = -1
    """Under ``first_lead: lowest_club``, the card that must open the hand; else -1."""
    passes_due: int = 0
    """Bit set of the seats that still owe a blind nil pass."""
    passed: tuple[tuple[Card, ...] | None, ...] = ()
    """Cards each seat has passed and its partner has not yet received."""
    pile: tuple[Card, ...] = ()
    """The draw pile (two-player draw), top card first."""
    drawn: int = 0
    """Cards taken off the pile so far."""
    discarded: int = 0
    """Bit set of the draw's face-up discards."""
    commitment: str | None = None
    seed: str | None = None
    """The deal's secret seed (hex), revealed only when the hand is scored."""


class Game(msgspec.Struct, frozen=True, gc=False):
    """A whole game: table, seats, scores and the hand in progress."""

    game_id: str
    rules: Rules
    status: Status
    players: tuple[Player | None, ...]
    first_dealer: int | None
    entropy: str
    scores: tuple[int, ...]
    bags: tuple[int, ...]
    hands_played: int = 0
    hand: Hand | None = None
    """The hand in progress; None before the first deal and between a score and a deal."""
    winners: tuple[int, ...] = ()
    version: int = 0
    """How many events made this state."""


def in_hand(state: Game) -> Hand:
    """The hand being played; ``wrong_phase`` between hands."""
    if state.hand is None:
        raise RuleViolation("wrong_phase", "no hand is being played")
    return state.hand


def held(hand: Hand, seat: Seat) -> CardSet:
    """The cards ``seat`` holds."""
    return hand.holdings >> LANE * seat & HELD


def holdings_of(sets: list[CardSet] | tuple[CardSet, ...]) -> int:
    """Pack one card set per seat into :attr:`Hand.holdings`."""
    packed = 0
    for seat, cards in enumerate(sets):
        packed |= cards << LANE * seat
    return packed


T = TypeVar("T")


def at_seat(values: tuple[T, ...], seat: Seat, value: T) -> tuple[T, ...]:
    """A per-seat tuple with ``seat``'s entry replaced."""
    return (*values[:seat], value, *values[seat + 1 :])
