"""The game's state: the fold of its events (see :func:`domain.game.evolve`).

Hands are bit sets of card indexes (see :mod:`domain.cards`), which keeps every legality check
to a few integer operations. With two decks a seat may hold two copies of a card: the set of
cards it holds stays one bit per card (what legality needs: which cards it may play), and a
second set, :attr:`Hand.twice`, marks the cards it holds both copies of; playing a card takes
the second copy first. A single-deck game never sets a bit of ``twice``.

Nothing here leaves the server as it is: :mod:`domain.views` is the only way out, and it hides
what a reader could not see at the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal, TypeVar

import msgspec

from domain.bids import Bid
from domain.cards import Card, CardSet, cards_in, set_of
from domain.clock import Timing
from domain.errors import RuleViolation
from domain.events import DuplicateBoards, TieRule
from domain.platforms import FIRST_ISSUE, Seating, Visibility
from domain.rules import Rules
from domain.table import Seat

Phase = Literal["draw", "discard", "bid", "pass", "play"]
Status = Literal["waiting", "playing", "finished"]

NO_SEAT = -1
LANE = 64
"""Bits per seat in :attr:`Hand.holdings`."""
HELD = (1 << LANE) - 1


class Player(msgspec.Struct, frozen=True, gc=False):
    name: str
    entropy: str = ""
    issue: int = FIRST_ISSUE
    """The issue of the seat's current token: tokens of another issue are revoked."""


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
    twice: int = 0
    """The cards each seat holds two copies of (two decks), packed as ``holdings``."""
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
    """The draw's face-up discards: the cards discarded (the low 64 bits) and, two decks,
    those discarded twice (the next 64), as :attr:`holdings` packs two seats."""
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
    forfeited: int | None = None
    """The unit that lost by running out of time (``GameEnded.forfeited``); None otherwise."""
    version: int = 0
    """How many events made this state."""
    platform: str | None = None
    """The platform the game belongs to (:mod:`domain.platforms`); None: anyone's."""
    visibility: Visibility = "public"
    seating: Seating = "platform"
    timing: Timing | None = None
    """The seats' clocks of a game created with a ``clock``; None: no clock."""
    league: str | None = None
    """The league whose round created the game; None: a game of its own."""
    duplicate: DuplicateBoards | None = None
    """The boards a duplicate event's table plays (:mod:`domain.boards`); None: a game whose
    hands are dealt from fresh seeds and which ends by its rules."""
    ties: TieRule | None = None
    """A knockout match's tie rule; None: a tie on top plays on."""
    tied_ends: int = 0
    """The hands after which the game was over but for a tie on top (each played on)."""


def in_hand(state: Game) -> Hand:
    """The hand being played; ``wrong_phase`` between hands."""
    if state.hand is None:
        raise RuleViolation("wrong_phase", "no hand is being played")
    return state.hand


def held(hand: Hand, seat: Seat) -> CardSet:
    """The cards ``seat`` holds (one bit per card, however many copies)."""
    return hand.holdings >> LANE * seat & HELD


def held_twice(hand: Hand, seat: Seat) -> CardSet:
    """The cards ``seat`` holds both copies of."""
    return hand.twice >> LANE * seat & HELD


def cards_held(hand: Hand, seat: Seat) -> list[Card]:
    """The cards ``seat`` holds in canonical order, each as often as it holds it."""
    once = hand.holdings >> LANE * seat & HELD
    twice = hand.twice >> LANE * seat & HELD
    return copies_in(once, twice) if twice else cards_in(once)


def count_held(hand: Hand, seat: Seat) -> int:
    """How many cards ``seat`` holds."""
    return held(hand, seat).bit_count() + held_twice(hand, seat).bit_count()


def copies_in(once: CardSet, twice: CardSet) -> list[Card]:
    """The cards of a set in canonical order, those of ``twice`` twice over."""
    cards = cards_in(once)
    if not twice:
        return cards
    out: list[Card] = []
    for card in cards:
        out.append(card)
        if twice & card.bit:
            out.append(card)
    return out


def holdings_of(sets: Sequence[CardSet]) -> int:
    """Pack one card set per seat into :attr:`Hand.holdings`."""
    packed = 0
    for seat, cards in enumerate(sets):
        packed |= cards << LANE * seat
    return packed


def pack_hands(hands: Sequence[Sequence[Card]]) -> tuple[int, int]:
    """Pack one list of cards per seat into :attr:`Hand.holdings` and :attr:`Hand.twice`."""
    packed = packed_twice = 0
    for seat, cards in enumerate(hands):
        once = set_of(cards)
        twice = 0
        if once.bit_count() != len(cards):  # two decks: a card dealt twice to the seat
            seen = 0
            for card in cards:
                if seen & card.bit:
                    twice |= card.bit
                seen |= card.bit
        packed |= once << LANE * seat
        packed_twice |= twice << LANE * seat
    return packed, packed_twice


def counted(cards: Iterable[Card]) -> tuple[CardSet, CardSet, bool]:
    """A list of cards as sets: the cards named, those named twice, and whether any is named
    more than twice."""
    once = twice = 0
    thrice = False
    for card in cards:
        bit = card.bit
        if twice & bit:
            thrice = True
        elif once & bit:
            twice |= bit
        once |= bit
    return once, twice, thrice


def taken_from(hand: Hand, seat: Seat, cards: Iterable[Card]) -> tuple[int, int]:
    """``holdings`` and ``twice`` once ``seat`` gives up ``cards`` (which it holds)."""
    holdings, twice = hand.holdings, hand.twice
    for card in cards:
        bit = card.bit << LANE * seat
        if twice & bit:
            twice &= ~bit
        else:
            holdings &= ~bit
    return holdings, twice


def given_to(hand: Hand, seat: Seat, cards: Iterable[Card]) -> tuple[int, int]:
    """``holdings`` and ``twice`` once ``seat`` receives ``cards``."""
    holdings, twice = hand.holdings, hand.twice
    for card in cards:
        bit = card.bit << LANE * seat
        if holdings & bit:
            twice |= bit
        else:
            holdings |= bit
    return holdings, twice


T = TypeVar("T")


def at_seat(values: tuple[T, ...], seat: Seat, value: T) -> tuple[T, ...]:
    """A per-seat tuple with ``seat``'s entry replaced."""
    return (*values[:seat], value, *values[seat + 1 :])
