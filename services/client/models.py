"""What the client sends (actions) and the one answer it still declares itself (a seat).

Every other answer is the very struct the server encodes it from, whose JSON Schema
``contracts/openapi.json`` publishes: the table's state and a seat's view (:mod:`domain.views`),
events (:mod:`contracts.wire`), hand records, pages and the service's answers
(:mod:`contracts.answers`), the audit log's (:mod:`contracts.audit_log`).

Unknown fields are ignored (docs/api.md: "more may be added"), so a newer server does not break an
older client; a missing or mistyped field is an :class:`~services.client.api.UnexpectedResponse`.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.bids import Bid
from domain.cards import Card

Status = Literal["waiting", "playing", "finished"]
Phase = Literal["draw", "discard", "bid", "pass", "play"]


class Seat(msgspec.Struct, frozen=True):
    """A taken seat and the token that acts for it (``POST /v1/games/{id}/seats``, or its
    token issued again), and when the token expires (RFC 3339; None from an older server)."""

    seat: int
    player: str
    token: str
    expires_at: str | None = None


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
