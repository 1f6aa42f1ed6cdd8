"""What each reader may see: the public view, a seat's view, and events as a reader gets them.

This module is the only way state or events leave the server. A seat never sees a card it could
not see at the table: not another seat's hand, not its own before it has looked, bid or
discarded, not a card passed to it before the exchange, not a kept draw of the other player, not
the dealer's discard unless it is the dealer, not the deck or the seed before the hand is
scored.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec.structs import replace

from domain.bids import Bid
from domain.cards import CARDS, Card
from domain.clock import OnTimeout, rfc3339
from domain.commands import Draw, LookAtHand, PlaceBid, PlayCard
from domain.events import (
    AnyEvent,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardsPassed,
    CardsReceived,
    HandDealt,
    HandLooked,
)
from domain.game import DiscardDue, PassDue, legal_actions, seat_to_act
from domain.rules import Rules
from domain.state import HELD, LANE, NO_SEAT, Game, Phase, Status, cards_held, copies_in
from domain.timing import on_clock

PUBLIC = None
"""The reader who holds no seat."""


class SeatInfo(msgspec.Struct, frozen=True):
    seat: int
    player: str | None


class TrickCard(msgspec.Struct, frozen=True):
    seat: int
    card: Card


class SeatClockView(msgspec.Struct, frozen=True, kw_only=True):
    """One seat's clock as anyone may see it."""

    seat: int
    bank_s: float
    """What is left of its bank (as of its last move)."""
    away: bool
    timeouts: int
    """Its timeouts in a row."""
    deadline: str | None
    """When its clock runs out (RFC 3339), while it is on the clock."""


class ClockView(msgspec.Struct, frozen=True, kw_only=True):
    """The game's clock: its settings, each seat's bank and away, and the deadline of the seat
    on turn (the earliest, while two seats owe a blind nil pass)."""

    turn_s: float
    bank_s: float
    on_timeout: OnTimeout
    away_after: int
    seats: list[SeatClockView]
    deadline: str | None


class PublicState(msgspec.Struct, frozen=True, kw_only=True):
    """The table as anyone watching it sees it."""

    game_id: str
    version: int
    rules: Rules
    status: Status
    phase: Phase | None
    hand_number: int
    dealer: int | None
    turn: int | None
    seats: list[SeatInfo]
    units: list[list[int]]
    bids: list[Bid | None]
    tricks: list[int]
    current_trick: list[TrickCard]
    spades_broken: bool
    scores: list[int]
    bags: list[int]
    winners: list[int]
    deal_commitment: str | None
    passes_due: list[int]
    discards: list[Card]
    clock: ClockView | None = None
    """The game's clock, when it was created with one."""

    def player(self, seat: int) -> str | None:
        """The name at ``seat``, if taken."""
        return self.seats[seat].player if 0 <= seat < len(self.seats) else None

    def unit_of(self, seat: int) -> int:
        """The scoring unit ``seat`` plays for."""
        return next(index for index, unit in enumerate(self.units) if seat in unit)


class LegalBid(msgspec.Struct, frozen=True, tag="bid", tag_field="type"):
    bid: Bid


class LegalPlay(msgspec.Struct, frozen=True, tag="play", tag_field="type"):
    card: Card


class LegalPass(msgspec.Struct, frozen=True, tag="pass", tag_field="type"):
    """A pass that is due: ``count`` cards of the seat's choosing."""

    count: int


class LegalDiscard(msgspec.Struct, frozen=True, tag="discard", tag_field="type"):
    """The dealer's discard, due: ``count`` cards of its choosing."""

    count: int


class LegalDraw(msgspec.Struct, frozen=True, tag="draw", tag_field="type"):
    keep: bool


class LegalLook(msgspec.Struct, frozen=True, tag="look", tag_field="type"):
    pass


class LegalBack(msgspec.Struct, frozen=True, tag="back", tag_field="type"):
    """Listed while the seat is away."""


LegalAction = LegalBid | LegalPlay | LegalPass | LegalDiscard | LegalDraw | LegalLook | LegalBack
"""An action the seat may send now, as it is posted (a pass or a discard names how many cards,
and the seat chooses them from its hand)."""


class SeatView(PublicState, frozen=True, kw_only=True):
    """The table as one seat sees it, with every action it may send now."""

    seat: int
    hand: list[Card] | None
    """None until the seat has looked at its cards (or bid, or discarded)."""
    drawn_card: Card | None
    """The card the seat sees on its turn of the two-player draw."""
    legal: list[LegalAction]


class NextTurn(msgspec.Struct, frozen=True, kw_only=True):
    """Who the game waits on, and for what: the seat whose token acts next and the action it
    must send (``bid``, ``play``, ``pass``, ``discard`` or ``draw``; a bid may be preceded by a
    ``look``). While passes are due, the first seat that owes one (every seat that owes one may
    pass, in any order)."""

    seat: int
    must: Phase


def next_turn(game: Game) -> NextTurn | None:
    """Who acts next in ``game``; None when no one does (seats empty, or the game over)."""
    seat = seat_to_act(game) if game.status == "playing" else None
    if seat is None or seat == NO_SEAT or game.hand is None:
        return None
    return NextTurn(seat=seat, must=game.hand.phase)


def public_view(game: Game) -> PublicState:
    """The public state of a game."""
    table = game.rules.table
    hand = game.hand
    players = game.rules.players
    return PublicState(
        game_id=game.game_id,
        version=game.version,
        rules=game.rules,
        status=game.status,
        phase=hand.phase if hand else None,
        hand_number=hand.number if hand else game.hands_played,
        dealer=hand.dealer if hand else None,
        turn=hand.turn if hand and hand.turn != NO_SEAT else None,
        seats=[
            SeatInfo(seat, player.name if player else None)
            for seat, player in enumerate(game.players)
        ],
        units=[list(unit) for unit in table.units],
        bids=list(hand.bids) if hand else [None] * players,
        tricks=list(hand.won) if hand else [0] * players,
        current_trick=[
            TrickCard((hand.leader + k) % players, CARDS[index])
            for k, index in enumerate(hand.trick)
        ]
        if hand
        else [],
        spades_broken=hand.spades_broken if hand else False,
        scores=list(game.scores),
        bags=list(game.bags),
        winners=list(game.winners),
        deal_commitment=hand.commitment if hand else None,
        passes_due=[s for s in range(players) if hand and hand.passes_due >> s & 1],
        discards=_discards(game),
        clock=clock_view(game),
    )


def clock_view(game: Game) -> ClockView | None:
    """The clock of a clocked game (None without one). Deadlines need the state stamped with
    its commits' times (:func:`domain.timing.apply_commit`); otherwise they are None."""
    timing = game.timing
    if timing is None:
        return None
    due = set(on_clock(game))
    seats: list[SeatClockView] = []
    deadlines: list[float] = []
    for seat, held in enumerate(timing.seats):
        deadline = timing.deadline(seat) if seat in due else None
        if deadline is not None:
            deadlines.append(deadline)
        seats.append(
            SeatClockView(
                seat=seat,
                bank_s=round(held.bank, 3),
                away=held.away,
                timeouts=held.timeouts,
                deadline=rfc3339(deadline) if deadline is not None else None,
            )
        )
    clock = timing.clock
    return ClockView(
        turn_s=clock.turn_s,
        bank_s=clock.bank_s,
        on_timeout=clock.on_timeout,
        away_after=clock.away_after,
        seats=seats,
        deadline=rfc3339(min(deadlines)) if deadlines else None,
    )


def seat_view(game: Game, seat: int) -> SeatView:
    """What ``seat`` sees: the public state, its own cards once it has looked, and ``legal``."""
    public = public_view(game)
    hand = game.hand
    cards: list[Card] | None = None
    drawn: Card | None = None
    if hand is not None and hand.looked >> seat & 1:
        cards = cards_held(hand, seat)
    if hand is not None and hand.phase == "draw" and hand.turn == seat:
        drawn = hand.pile[hand.drawn]
    return SeatView(
        **msgspec.structs.asdict(public),
        seat=seat,
        hand=cards,
        drawn_card=drawn,
        legal=[_legal(action) for action in legal_actions(game, seat)] + _back(game, seat),
    )


def _back(game: Game, seat: int) -> list[LegalAction]:
    """``{"type": "back"}`` for a seat that is away (acted for at once on its turns)."""
    timing = game.timing
    if timing is None or not 0 <= seat < len(timing.seats) or not timing.seats[seat].away:
        return []
    return [LegalBack()]


def _legal(action: Any) -> LegalAction:
    if isinstance(action, PlayCard):
        return LegalPlay(action.card)
    if isinstance(action, PlaceBid):
        return LegalBid(action.bid)
    if isinstance(action, PassDue):
        return LegalPass(action.count)
    if isinstance(action, DiscardDue):
        return LegalDiscard(action.count)
    if isinstance(action, Draw):
        return LegalDraw(action.keep)
    if isinstance(action, LookAtHand):
        return LegalLook()
    raise ValueError(f"{action!r} is no action a seat is offered")


def _discards(game: Game) -> list[Card]:
    """The face-up discards of the two-player draw (never the dealer's, face down)."""
    hand = game.hand
    return copies_in(hand.discarded & HELD, hand.discarded >> LANE) if hand else []


def event_for(event: AnyEvent, reader: int | None) -> AnyEvent:
    """``event`` as ``reader`` (a seat, or None for the public) may see it."""
    if isinstance(event, HandDealt):
        return replace(event, hands=(), deck=None, seed=None)
    if isinstance(event, HandLooked):
        return event if reader == event.seat else replace(event, cards=None)
    if isinstance(event, CardDrawn):
        return event if reader == event.seat or not event.kept else replace(event, card=None)
    if isinstance(event, CardsPassed):
        return event if reader == event.seat else replace(event, cards=None)
    if isinstance(event, CardsDiscarded):
        return event if reader == event.seat else replace(event, cards=None)
    if isinstance(event, CardsReceived):
        return event if reader in (event.seat, event.giver) else replace(event, cards=None)
    if isinstance(event, CardPlayed) and event.renege and reader != event.seat:
        return replace(event, renege=False)
    return event
