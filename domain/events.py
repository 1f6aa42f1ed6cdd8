"""Events: what happened at the table, in the past tense. A game's state is their fold.

Some events carry cards that not everyone at the table may see (a deal, a look, a pass, a kept
draw, the dealer's discard). They are stored whole; :func:`domain.views.event_for` is the one
place that decides what a reader gets of them.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.bids import Bid
from domain.cards import Card
from domain.clock import Clock
from domain.knockout import TieBreak
from domain.platforms import Seating, Visibility
from domain.rules import Rules


class Event(msgspec.Struct, frozen=True, tag_field="type", gc=False):
    """Base of every event; ``type`` names it on the wire."""


class DuplicateBoards(msgspec.Struct, frozen=True):
    """A table of a duplicate event (:mod:`domain.boards`): it plays ``count`` hands, hand ``k``
    being board ``first + k - 1`` of ``event`` (its league), dealt from the board's seed and
    dealer so that every table of the round holds the same cards."""

    event: str
    first: int
    count: int


class TieRule(msgspec.Struct, frozen=True):
    """A knockout match's table (:mod:`domain.knockout`): how a tie on top is broken once the
    match is over (its ``max_hands`` played, its ``target`` reached). ``extra_deal`` plays
    another hand, up to ``extra_deals`` of them, and gives a tie still standing to unit
    ``better`` (the better seed's); ``higher_seed`` gives it to unit ``better`` at once. A game
    without one plays on, a hand at a time, until one unit leads alone."""

    tie_break: TieBreak
    extra_deals: int = 3
    better: int = 0


class GameCreated(Event, tag="game_created", frozen=True):
    """A new game. ``platform`` is who created it (the API shows it to that platform alone,
    null to anyone else), ``visibility`` who may read it, ``seating`` who may sit
    (:mod:`domain.platforms`). A game recorded before these fields existed reads as having no
    platform and being public: readable by all and seated by anyone, as it was."""

    game_id: str
    rules: Rules
    dealer: int | None
    entropy: str = ""
    scores: tuple[int, ...] | None = None
    bags: tuple[int, ...] | None = None
    league: str | None = None
    platform: str | None = None
    visibility: Visibility = "public"
    seating: Seating = "platform"
    clock: Clock | None = None
    duplicate: DuplicateBoards | msgspec.UnsetType = msgspec.UNSET
    """Set for a table of a duplicate event only; left out of the bytes otherwise, so a game
    created before duplicate events existed is recorded exactly as it was."""
    ties: TieRule | msgspec.UnsetType = msgspec.UNSET
    """Set for a knockout match whose ties are broken by a rule other than playing on; left
    out of the bytes otherwise, as ``duplicate`` is."""


class SeatTaken(Event, tag="seat_taken", frozen=True):
    seat: int
    player: str
    entropy: str = ""


class SeatTokenReissued(Event, tag="seat_token_reissued", frozen=True):
    """The seat's token was issued again (a lost device, a substitute): every token of an
    earlier ``issue`` no longer acts or reads for the seat. ``player`` sits there from now on."""

    seat: int
    issue: int
    player: str


class HandDealt(Event, tag="hand_dealt", frozen=True):
    """A new hand. ``hands`` is empty for the two-player draw, whose pile is ``deck``.

    Private: ``hands``, ``deck`` and ``seed``. Public: ``commitment`` (``sha256(seed)``).
    """

    hand: int
    dealer: int
    commitment: str | None
    hands: tuple[tuple[Card, ...], ...]
    deck: tuple[Card, ...] | None = None
    seed: str | None = None


class CardDrawn(Event, tag="card_drawn", frozen=True):
    """One card of a draw turn; a kept card is private to the drawer, discards are face up."""

    seat: int
    card: Card | None
    kept: bool


class HandLooked(Event, tag="hand_looked", frozen=True):
    """The seat picked up its cards; ``cards`` is private to it."""

    seat: int
    cards: tuple[Card, ...] | None = None


class CardsDiscarded(Event, tag="cards_discarded", frozen=True):
    """The dealer's discard (``dealer_discard``), face down and out of play; ``cards`` is
    private to the dealer."""

    seat: int
    cards: tuple[Card, ...] | None


class BidPlaced(Event, tag="bid_placed", frozen=True):
    seat: int
    bid: Bid


class CardsPassed(Event, tag="cards_passed", frozen=True):
    """A blind nil pass sent face down; ``cards`` is private to the passer."""

    seat: int
    to: int
    cards: tuple[Card, ...] | None


class CardsReceived(Event, tag="cards_received", frozen=True):
    """A pass arrives, once both seats of the exchange have passed; private to both."""

    seat: int
    giver: int
    cards: tuple[Card, ...] | None


class CardPlayed(Event, tag="card_played", frozen=True):
    """A card to the trick. ``renege`` (only under ``renege: penalize``) is private to the seat
    until the hand is scored."""

    seat: int
    card: Card
    renege: bool = False


class TrickWon(Event, tag="trick_won", frozen=True):
    trick: int
    seat: int


class HandScored(Event, tag="hand_scored", frozen=True):
    """The hand's result per unit, and the seed of its deal, revealed. ``bids`` are all null
    in a hand without bidding (``first_hand: no_bid``)."""

    hand: int
    bids: tuple[Bid | None, ...]
    tricks: tuple[int, ...]
    points: tuple[int, ...]
    scores: tuple[int, ...]
    bags: tuple[int, ...]
    reneged: tuple[int, ...] = ()
    seed: str | None = None


class GameEnded(Event, tag="game_ended", frozen=True):
    """The game is over. ``forfeited`` is the unit that lost by running out of time under a
    ``forfeit`` clock (the winners are then the others); ``None`` when the game was played out."""

    winners: tuple[int, ...]
    scores: tuple[int, ...]
    forfeited: int | None = None


class TimedOut(Event, tag="timed_out", frozen=True):
    """The seat's clock ran out (``clock`` at creation). Under ``auto`` the events that follow
    in the same commit are the action the service took for the seat, not the player's; under
    ``forfeit`` a :class:`GameEnded` with ``forfeited`` follows."""

    seat: int


class SeatAway(Event, tag="seat_away", frozen=True):
    """The seat is away: it is acted for at once on each of its turns until its token acts
    again. ``reason``: ``timeouts`` (``away_after`` in a row) or ``marked`` (by its platform or
    league, e.g. a withdrawn player)."""

    seat: int
    reason: Literal["timeouts", "marked"] = "timeouts"


class SeatReturned(Event, tag="seat_returned", frozen=True):
    """The seat's token acted again: it is no longer away, its timeouts in a row start over."""

    seat: int


AnyEvent = (
    GameCreated
    | SeatTaken
    | HandDealt
    | CardDrawn
    | HandLooked
    | CardsDiscarded
    | BidPlaced
    | CardsPassed
    | CardsReceived
    | CardPlayed
    | TrickWon
    | HandScored
    | GameEnded
    | SeatTokenReissued
    | TimedOut
    | SeatAway
    | SeatReturned
)
