"""Commands: what a player (or the table) asks to do, in the imperative.

Two wire shapes reach the engine: the HTTP API's ``{"type": "bid", "bid": 3}`` (the seat comes
from the seat token) and the scenario files' ``{"seat": 0, "bid": 3}``. Both are read here into
the same commands. Input that cannot be read becomes :class:`Unreadable`, which the aggregate
refuses with ``malformed``, unless the game is over (``game_over`` comes first, docs/rules.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from domain.bids import Bid, read_bid
from domain.cards import Card
from domain.clock import Clock
from domain.errors import RuleViolation
from domain.events import DuplicateBoards, TieRule
from domain.platforms import Seating, Visibility
from domain.shuffle import DealSource


class Command(msgspec.Struct, frozen=True, tag_field="type", gc=False):
    """Base of every command."""


class CreateGame(Command, tag="create_game", frozen=True):
    game_id: str
    rules: dict[str, Any]
    dealer: int | None = None
    entropy: str = ""
    scores: tuple[int, ...] | None = None
    bags: tuple[int, ...] | None = None
    league: str | None = None
    platform: str | None = None
    visibility: Visibility = "public"
    seating: Seating = "platform"
    clock: Clock | None = None
    duplicate: DuplicateBoards | None = None
    ties: TieRule | None = None


class TakeSeat(Command, tag="take_seat", frozen=True):
    player: str
    seat: int | None = None
    entropy: str = ""


class ReissueSeatToken(Command, tag="reissue_seat_token", frozen=True):
    """Issue the seat's token again, revoking the earlier ones; ``player`` (when given) is a
    substitute who sits there from now on."""

    seat: int
    player: str | None = None


class DealHand(Command, tag="deal_hand", frozen=True):
    """Deal the next hand from a given source (scenarios, imported records)."""

    source: DealSource


class LookAtHand(Command, tag="look", frozen=True):
    seat: int


class Draw(Command, tag="draw", frozen=True):
    seat: int
    keep: bool


class PlaceBid(Command, tag="bid", frozen=True):
    seat: int
    bid: Bid


class PassCards(Command, tag="pass", frozen=True):
    seat: int
    cards: tuple[Card, ...]


class DiscardCards(Command, tag="discard", frozen=True):
    """The dealer's discard (``dealer_discard``); with two decks a card named twice gives up
    both copies."""

    seat: int
    cards: tuple[Card, ...]


class PlayCard(Command, tag="play", frozen=True):
    seat: int
    card: Card


class RecordTally(Command, tag="record_tally", frozen=True):
    """Score the hand from tricks counted at a table (a score sheet), once the bids are in."""

    tricks: tuple[int, ...]


class ComeBack(Command, tag="come_back", frozen=True):
    """An away seat's player is back (the API's ``{"type": "back"}``): the seat is no longer
    acted for. Any other action of the seat's token brings it back too."""

    seat: int


class TimeOut(Command, tag="time_out", frozen=True):
    """The seat's clock has run out at ``at`` (seconds since the epoch, the engine's commit
    time). Under ``auto`` clocks, ``actions`` are what the service's bot does for the seat,
    seeing only what the seat sees (the domain checks each is legal): a look, if the seat has
    to pick its cards up first, then the action that ends its turn."""

    seat: int
    at: float
    actions: tuple[PlayerAction, ...] = ()


class MarkAway(Command, tag="mark_away", frozen=True):
    """The seat's platform or league says its player is gone (a withdrawal): it is away, and
    acted for at once on each of its turns until its token acts again."""

    seat: int


class Unreadable(Command, tag="unreadable", frozen=True):
    """An action that could not be read; ``reason`` says what was wrong with it."""

    reason: str
    seat: int | None = None


PlayerAction = (
    LookAtHand | Draw | DiscardCards | PlaceBid | PassCards | PlayCard | ComeBack | Unreadable
)
AnyCommand = (
    CreateGame
    | TakeSeat
    | ReissueSeatToken
    | DealHand
    | RecordTally
    | TimeOut
    | MarkAway
    | PlayerAction
)


def _card(text: Any) -> Card:
    if not isinstance(text, str):
        raise RuleViolation("malformed", f"{text!r} is not a card")
    return Card.parse(text)


def _cards(value: Any, what: str = "a pass") -> tuple[Card, ...]:
    if not isinstance(value, list):
        raise RuleViolation("malformed", f"{what} is a list of cards, not {value!r}")
    return tuple(_card(text) for text in value)


def _seat(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RuleViolation("malformed", f"seat {value!r} is not a seat number")
    return value


def from_scenario(action: Any) -> PlayerAction:
    """Read a scenario action: ``{"seat": 0, "bid": 3}``, ``{"seat": 0, "play": "QH"}``,
    ``{"seat": 0, "pass": [...]}``, ``{"seat": 0, "discard": [...]}``,
    ``{"seat": 0, "draw": "keep"}``, ``{"seat": 0, "look": true}``.
    """
    seat: int | None = None
    try:
        if not isinstance(action, Mapping):
            raise RuleViolation("malformed", "an action is a JSON object")
        seat = _seat(action.get("seat"))
        kinds = [key for key in action if key != "seat"]
        if len(kinds) != 1:
            raise RuleViolation(
                "malformed",
                "an action has exactly one of bid, play, pass, discard, draw, look; "
                f"got {sorted(kinds)}",
            )
        kind = kinds[0]
        value = action[kind]
        if kind == "bid":
            return PlaceBid(seat, read_bid(value))
        if kind == "play":
            return PlayCard(seat, _card(value))
        if kind == "pass":
            return PassCards(seat, _cards(value))
        if kind == "discard":
            return DiscardCards(seat, _cards(value, "a discard"))
        if kind == "draw":
            if value not in ("keep", "discard"):
                raise RuleViolation("malformed", f"draw {value!r} is neither keep nor discard")
            return Draw(seat, value == "keep")
        if kind == "look":
            if value is not True:
                raise RuleViolation("malformed", "look takes true")
            return LookAtHand(seat)
        raise RuleViolation("malformed", f"unknown field {kind!r}")
    except RuleViolation as violation:
        return Unreadable(violation.detail, seat)


_API_FIELDS = {
    "bid": {"bid"},
    "play": {"card"},
    "pass": {"cards"},
    "discard": {"cards"},
    "draw": {"keep"},
    "look": set(),
    "back": set(),
}


def from_api(seat: int, body: Any) -> PlayerAction:
    """Read an API action for a seat: ``{"type": "bid", "bid": 3}``, ``{"type": "play",
    "card": "QH"}``, ``{"type": "pass", "cards": [...]}``, ``{"type": "discard", "cards":
    [...]}``, ``{"type": "draw", "keep": true}``, ``{"type": "look"}``. ``expected_version``
    is the gateway's and is ignored here.
    """
    try:
        if not isinstance(body, Mapping):
            raise RuleViolation("malformed", "an action is a JSON object")
        kind = body.get("type")
        if not isinstance(kind, str) or kind not in _API_FIELDS:
            raise RuleViolation("malformed", f"unknown action type {kind!r}")
        fields = set(body) - {"type", "expected_version"}
        if fields != _API_FIELDS[kind]:
            raise RuleViolation(
                "malformed",
                f"a {kind} action takes {sorted(_API_FIELDS[kind])}, got {sorted(fields)}",
            )
        if kind == "bid":
            return PlaceBid(seat, read_bid(body["bid"]))
        if kind == "play":
            return PlayCard(seat, _card(body["card"]))
        if kind == "pass":
            return PassCards(seat, _cards(body["cards"]))
        if kind == "discard":
            return DiscardCards(seat, _cards(body["cards"], "a discard"))
        if kind == "draw":
            if not isinstance(body["keep"], bool):
                raise RuleViolation("malformed", "draw takes keep: true or false")
            return Draw(seat, body["keep"])
        if kind == "back":
            return ComeBack(seat)
        return LookAtHand(seat)
    except RuleViolation as violation:
        return Unreadable(violation.detail, seat)


def to_api(action: PlayerAction) -> dict[str, Any]:
    """An action as the API posts it (the inverse of :func:`from_api`)."""
    if isinstance(action, PlaceBid):
        return {"type": "bid", "bid": action.bid}
    if isinstance(action, PlayCard):
        return {"type": "play", "card": action.card.value}
    if isinstance(action, PassCards):
        return {"type": "pass", "cards": [card.value for card in action.cards]}
    if isinstance(action, DiscardCards):
        return {"type": "discard", "cards": [card.value for card in action.cards]}
    if isinstance(action, Draw):
        return {"type": "draw", "keep": action.keep}
    if isinstance(action, LookAtHand):
        return {"type": "look"}
    if isinstance(action, ComeBack):
        return {"type": "back"}
    raise ValueError(f"{action!r} has no API form")
