"""Hand records: one finished hand as docs/api.md writes it, built from the game's events.

A record exists only once its hand is scored: :class:`HandRecorder` returns nothing before that,
so no record can show a card that someone could not see at the table while the hand was on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

from domain.bids import Bid
from domain.cards import Card
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardsPassed,
    HandDealt,
    HandScored,
    TimedOut,
    TrickWon,
)


class Deal(msgspec.Struct, frozen=True, kw_only=True):
    deck: list[Card] | None
    """The shuffled deck, top card first (the draw pile in the two-player draw)."""
    hands: list[list[Card]]
    """Each seat's cards as dealt (after the draw, in the two-player game; the dealer's with
    the cards it then discarded, under ``dealer_discard``)."""
    seed: str | None
    commitment: str | None


class Discarded(msgspec.Struct, frozen=True):
    """The dealer's discard (``dealer_discard``), face down and out of play."""

    seat: int
    cards: list[Card]


class Drawn(msgspec.Struct, frozen=True):
    seat: int
    card: Card
    kept: bool


class Pass(msgspec.Struct, frozen=True):
    from_seat: int = msgspec.field(name="from")
    to: int = 0
    cards: list[Card] = []


class Played(msgspec.Struct, frozen=True):
    seat: int
    card: Card


class Trick(msgspec.Struct, frozen=True):
    leader: int
    cards: list[Played]
    winner: int


Move = Literal["draw", "discard", "bid", "pass", "play"]


class TimedOutMove(msgspec.Struct, frozen=True, kw_only=True):
    """A move the service made for a seat whose clock ran out: not the player's. ``trick``
    (from 1) says which trick a play was in."""

    seat: int
    move: Move
    trick: int | None = None


class HandRecord(msgspec.Struct, frozen=True, kw_only=True):
    """docs/api.md's hand record."""

    hand: int
    dealer: int
    deal: Deal
    draws: list[Drawn]
    discards: list[Discarded] = []
    bids: list[Bid | None]
    passes: list[Pass]
    tricks: list[Trick]
    tricks_won: list[int]
    points: list[int]
    scores: list[int]
    bags: list[int]
    reneged: list[int] = []
    timed_out: list[TimedOutMove] = []
    """The moves of this hand the service made for a seat whose clock ran out."""


class HandRecorder:
    """Feed it a game's events in order; it hands back each record as its hand is scored."""

    def __init__(self) -> None:
        self._dealt: HandDealt | None = None
        self._draws: list[Drawn] = []
        self._discards: list[Discarded] = []
        self._passes: list[Pass] = []
        self._tricks: list[Trick] = []
        self._trick: list[Played] = []
        self._timed_out: list[TimedOutMove] = []
        self._acting_for: int | None = None
        """The seat whose clock just ran out: its next move is the service's."""

    def feed(self, event: AnyEvent) -> HandRecord | None:
        """Take one event; return the hand's record when this event scored it."""
        if self._acting_for is not None:
            self._note_timed_out(event)
        if isinstance(event, HandDealt):
            self._dealt = event
            self._draws, self._passes, self._tricks, self._trick = [], [], [], []
            self._discards, self._timed_out = [], []
        elif isinstance(event, TimedOut):
            self._acting_for = event.seat
        elif isinstance(event, CardDrawn) and event.card is not None:
            self._draws.append(Drawn(event.seat, event.card, event.kept))
        elif isinstance(event, CardsDiscarded):
            self._discards.append(Discarded(event.seat, list(event.cards or ())))
        elif isinstance(event, CardsPassed):
            self._passes.append(Pass(event.seat, event.to, list(event.cards or ())))
        elif isinstance(event, CardPlayed):
            self._trick.append(Played(event.seat, event.card))
        elif isinstance(event, TrickWon):
            self._tricks.append(Trick(self._trick[0].seat, self._trick, event.seat))
            self._trick = []
        elif isinstance(event, HandScored) and self._dealt is not None:
            return self._record(event)
        return None

    def _note_timed_out(self, event: AnyEvent) -> None:
        move: Move | None = _MOVES.get(type(event))
        if move is None:
            return
        seat = self._acting_for
        self._acting_for = None  # the move right after a timeout is the service's, no other
        if seat is not None and getattr(event, "seat", None) == seat:
            trick = len(self._tricks) + 1 if move == "play" else None
            self._timed_out.append(TimedOutMove(seat=seat, move=move, trick=trick))

    def _record(self, scored: HandScored) -> HandRecord:
        dealt = self._dealt
        assert dealt is not None
        hands = [list(cards) for cards in dealt.hands]
        if not any(hands):  # the two-player draw: the hands are what was kept
            hands = [[d.card for d in self._draws if d.seat == seat and d.kept] for seat in (0, 1)]
        self._dealt = None
        return HandRecord(
            hand=scored.hand,
            dealer=dealt.dealer,
            deal=Deal(
                deck=list(dealt.deck) if dealt.deck is not None else None,
                hands=hands,
                seed=scored.seed,
                commitment=dealt.commitment,
            ),
            draws=self._draws,
            discards=self._discards,
            bids=list(scored.bids),
            passes=self._passes,
            tricks=self._tricks,
            tricks_won=list(scored.tricks),
            points=list(scored.points),
            scores=list(scored.scores),
            bags=list(scored.bags),
            reneged=list(scored.reneged),
            timed_out=self._timed_out,
        )


_MOVES: dict[type, Move] = {
    CardDrawn: "draw",
    CardsDiscarded: "discard",
    BidPlaced: "bid",
    CardsPassed: "pass",
    CardPlayed: "play",
}


def hand_records(events: Iterable[AnyEvent]) -> list[HandRecord]:
    """Every finished hand's record in a game's events."""
    recorder = HandRecorder()
    return [record for event in events if (record := recorder.feed(event)) is not None]
