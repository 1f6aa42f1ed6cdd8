"""What the client sends: the actions a seat posts.

Every answer is the very struct the server encodes it from, whose JSON Schema
``contracts/openapi.json`` publishes: the table's state and a seat's view (:mod:`domain.views`),
events (:mod:`contracts.wire`), a seat taken, hand records, pages and the service's answers
(:mod:`contracts.answers`), a league's (:mod:`contracts.leagues`), the audit log's
(:mod:`contracts.audit_log`).

Unknown fields are ignored (docs/api.md: "more may be added"), so a newer server does not break an
older client; a missing or mistyped field is an :class:`~services.client.api.UnexpectedResponse`.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.bids import Bid
from domain.cards import Card

Phase = Literal["draw", "discard", "bid", "pass", "play"]


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
