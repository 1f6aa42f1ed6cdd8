"""What the API answers, as typed structs that mirror docs/api.md.

The table's state and a seat's view are the domain's own structs (:class:`PublicState`,
:class:`SeatView` and its legal actions, from :mod:`domain.views`), and a seat taken is
:class:`contracts.answers.SeatTaken`: the very types the server encodes its answers from, and
whose JSON Schemas ``contracts/openapi.json`` publishes.

Unknown fields are ignored (docs/api.md: "more may be added"), so a newer server does not break an
older client; a missing or mistyped field is an :class:`~services.client.api.UnexpectedResponse`.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from domain.bids import Bid
from domain.cards import Card
from domain.records import HandRecord
from domain.views import (
    NextTurn,
)

Phase = Literal["draw", "discard", "bid", "pass", "play"]


class EventRecord(msgspec.Struct, frozen=True):
    """One event at its position in the game's stream, as the reader may see it.

    ``event`` keeps the server's JSON (``{"type": "bid_placed", "seat": 1, "bid": 3}``): event
    shapes may grow, and a reader that knows only some types can still pass the others on.
    """

    version: int
    event: dict[str, Any]

    @property
    def type(self) -> str:
        kind = self.event.get("type")
        return kind if isinstance(kind, str) else ""


class ActionResult(msgspec.Struct, frozen=True):
    """The answer to an action: the game's version after it, the events it produced, and who
    acts next (None once the game is over, and in the answer to marking a seat away)."""

    version: int
    events: list[EventRecord]
    next: NextTurn | None = None


class EventPage(msgspec.Struct, frozen=True):
    events: list[EventRecord]


# --------------------------------------------------------------------------- hand records


# The hand record is the domain's own (domain.records): the same struct the server writes.


class HandScoreLine(msgspec.Struct, frozen=True):
    """One step of a unit's score in a hand, naming the rule option that decided it."""

    unit: int
    rule: str
    points: int
    text: str


class ScoredHandRecord(HandRecord, frozen=True, kw_only=True):
    """A hand's record as the API serves it: with the score's lines."""

    score_lines: list[HandScoreLine] = msgspec.field(default_factory=list)


class HandList(msgspec.Struct, frozen=True):
    hands: list[ScoredHandRecord]


# --------------------------------------------------------------------------- scores and audit


# --------------------------------------------------------------------------- actions


class BidAction(msgspec.Struct, frozen=True, tag="bid", tag_field="type"):
    bid: Bid


class PlayAction(msgspec.Struct, frozen=True, tag="play", tag_field="type"):
    card: Card


class PassAction(msgspec.Struct, frozen=True, tag="pass", tag_field="type"):
    cards: list[Card]


class DiscardAction(msgspec.Struct, frozen=True, tag="discard", tag_field="type"):
    """The dealer's discard (``dealer_discard``)."""

    cards: list[Card]


class DrawAction(msgspec.Struct, frozen=True, tag="draw", tag_field="type"):
    keep: bool


class LookAction(msgspec.Struct, frozen=True, tag="look", tag_field="type"):
    pass


Action = BidAction | PlayAction | PassAction | DiscardAction | DrawAction | LookAction
"""An action as posted to ``POST /v1/games/{id}/actions``; a plain dict (such as an entry of a
view's ``legal`` list) may be posted as well."""
