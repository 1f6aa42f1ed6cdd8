"""Hands played elsewhere, as a file gives them: hand records (docs/api.md) or tallies
(docs/rules.md).

A file holds one hand, a list of them, or ``{"hands": [...]}``. A hand record gives ``dealer``,
``deal`` (its ``deck`` or its ``hands``; ``seed`` and ``commitment`` when it has them),
``draws``, ``discards`` (the dealer's, under ``dealer_discard``), ``bids``, ``passes``,
``tricks`` and, as the table counted them, ``tricks_won``, ``points``, ``scores``, ``bags``. A
tally gives ``bids`` and ``tricks`` (counts per seat). A hand without bidding (``first_hand:
no_bid``) gives null bids, or none. Either
may add ``start`` (scores and bags before the hand), ``entropies`` (the game's and each seat's,
hex) and ``rules``. What a table does not know it leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from domain.bids import Bid
from domain.cards import Card
from domain.errors import RuleViolation
from domain.records import Discarded, Drawn, Pass, Played

HandNumber = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
"""A hand's number as a record gives it: the shuffle packs it in four bytes."""


Figure = Annotated[int, msgspec.Meta(ge=-(10**9), le=10**9)]
"""A score, points, bags or tricks as a record gives them: bounded, so that a record from
anywhere is refused rather than replayed at any cost (a bag count of 2^70 is not a game's)."""


class UnreadableRecord(Exception):
    """A record that cannot be audited at all: ``where`` names the field, ``why`` the fault."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where}: {why}")
        self.where = where
        self.why = why


class Start(msgspec.Struct, frozen=True):
    scores: list[Figure]
    bags: list[Figure]


class DealGiven(msgspec.Struct, frozen=True):
    deck: list[Card] | None = None
    hands: list[list[Card]] | None = None
    seed: str | None = None
    commitment: str | None = None


class TrickGiven(msgspec.Struct, frozen=True):
    cards: list[Played]
    leader: int | None = None
    winner: int | None = None


class HandGiven(msgspec.Struct, frozen=True, kw_only=True):
    """A hand record as a table reports it; what it does not know it leaves out."""

    hand: HandNumber = 1
    dealer: int = 0
    deal: DealGiven
    draws: list[Drawn] = []
    discards: list[Discarded] = []
    bids: list[Bid | None] = []
    passes: list[Pass] = []
    tricks: list[TrickGiven] = []
    tricks_won: list[Figure] | None = None
    points: list[Figure] | None = None
    scores: list[Figure] | None = None
    bags: list[Figure] | None = None
    reneged: list[int] = []
    start: Start | None = None
    entropies: list[str] | None = None
    rules: dict[str, Any] | None = None


class TallyGiven(msgspec.Struct, frozen=True, kw_only=True):
    """A hand as a score sheet has it: the bids and the tricks each seat took."""

    hand: HandNumber = 1
    dealer: int = 0
    bids: list[Bid | None] = []
    tricks: list[Figure]
    points: list[Figure] | None = None
    scores: list[Figure] | None = None
    bags: list[Figure] | None = None
    start: Start | None = None
    rules: dict[str, Any] | None = None


Given = HandGiven | TallyGiven


def read_hand_records(document: Any) -> list[Given]:
    """The hands a file holds: one record or tally, a list, or ``{"hands": [...]}``."""
    if isinstance(document, Mapping) and "hands" in document and "deal" not in document:
        document = document["hands"]
    items = document if isinstance(document, list) else [document]
    if not items:
        raise UnreadableRecord("hands", "the file holds no hand")
    return [_read_one(item, f"hands[{n}]") for n, item in enumerate(items)]


def _read_one(item: Any, where: str) -> Given:
    if not isinstance(item, Mapping):
        raise UnreadableRecord(where, "a hand is a JSON object")
    kind: type[Given] = HandGiven if "deal" in item else TallyGiven
    try:
        return msgspec.convert(_with_card_names(item), kind)
    except msgspec.ValidationError as error:
        raise UnreadableRecord(where, _explain(str(error))) from None


def _with_card_names(value: Any) -> Any:
    """Cards as docs/rules.md reads them on input (``10H``, ``qh``), written as the engine writes
    them (``TH``, ``QH``)."""
    if isinstance(value, str) and len(value) <= 3:
        try:
            return Card.parse(value).value
        except RuleViolation:
            return value
    if isinstance(value, list):
        return [_with_card_names(item) for item in value]
    if isinstance(value, Mapping):
        keep = ("seed", "commitment", "entropies")
        return {k: v if k in keep else _with_card_names(v) for k, v in value.items()}
    return value


def _explain(message: str) -> str:
    text, _, where = message.partition(" - at `$")
    return f"{where.rstrip('`')}: {text}" if where else text
