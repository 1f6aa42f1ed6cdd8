"""What the API answers beyond the table, as the structs the gateway encodes and the Python
client decodes: a page of events and an action's answer, a seat taken and a watch link (with
their tokens), hand records with their score lines and receipt, the game list and a game's
scoreboard (from the read models), a platform's webhook endpoints and their deliveries, and the
service's health. A league's answers are :mod:`contracts.leagues`.

The table itself (its state, a seat's view, events, hand records) is the domain's own
(:mod:`domain.views`, :mod:`domain.events`, :mod:`domain.records`); these are the shapes the
service adds around it (the audit log's are :mod:`contracts.audit_log`). ``contracts/openapi.json``
takes their JSON Schemas from here (:mod:`services.gateway.openapi`), so the document, the server
and the client cannot drift.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from contracts.audit_log import Receipt
from contracts.webhooks import WebhookType
from contracts.wire import EventRecord
from domain.records import HandRecord
from domain.rules import PresetName
from domain.state import Status
from domain.views import NextTurn


class EventPage(msgspec.Struct, frozen=True):
    """Events as the reader may see them, and the game's version when they were read.

    (Not ``Events``: a generated Python client names a local of ``from_dict`` after both the
    model and its list field, and ``mypy --strict`` fails on the generated code.)"""

    version: int
    events: list[EventRecord]


class Acted(msgspec.Struct, frozen=True, kw_only=True):
    """An action's answer: the events it caused as the acting seat sees them, and who acts
    next, so that a client needs no other request to know whose turn it is."""

    version: int
    events: list[EventRecord]
    next: Annotated[
        NextTurn | None,
        msgspec.Meta(
            description="Who acts next once these events are applied (or later, if the game "
            "moved on before the answer was sent); null when no one does: the game is over."
        ),
    ] = None


# --------------------------------------------------------------------------- hand records


class ScoreLine(msgspec.Struct, frozen=True, kw_only=True):
    """One step of a unit's score in a hand."""

    unit: int
    rule: Annotated[
        str,
        msgspec.Meta(description="The rule option that decided it: `contract`, `nil_value`, ..."),
    ]
    points: int
    text: Annotated[
        str, msgspec.Meta(description="The step in words, e.g. `bid 5, took 8: 10 x 5`.")
    ]


class ScoredHandRecord(HandRecord, frozen=True, kw_only=True):
    """One finished hand, as dealt and played and scored (the domain's record, with the score's
    lines)."""

    score_lines: Annotated[
        list[ScoreLine],
        msgspec.Meta(
            description="The hand's score as the rules reckon it, line by line, unit by unit."
        ),
    ]


class HandRecordWithReceipt(ScoredHandRecord, frozen=True, kw_only=True):
    """One finished hand, as dealt and played and scored, with its receipt from the audit log."""

    receipt: Annotated[
        Receipt | None,
        msgspec.Meta(
            description="The hand's receipt from the audit log (as `GET .../hands/{n}/receipt`); "
            "null until the log holds the hand (it follows the stream a moment behind)."
        ),
    ] = None


class HandRecords(msgspec.Struct, frozen=True):
    hands: list[ScoredHandRecord]


class GameSummary(msgspec.Struct, frozen=True, kw_only=True):
    """One game of the list."""

    game_id: str
    version: int
    status: Status
    preset: PresetName
    league: str | None
    players: Annotated[
        list[str | None], msgspec.Meta(description="The player in each seat, null when free.")
    ]
    hands_played: Annotated[int, msgspec.Meta(description="Hands scored so far.")]
    scores: list[int]
    bags: list[int]
    winners: list[int]
    created_at: Annotated[
        str, msgspec.Meta(description="When the game was created (UTC, ISO 8601).")
    ]
    updated_at: Annotated[str, msgspec.Meta(description="When its last command was accepted.")]


class GameList(msgspec.Struct, frozen=True):
    """A page of the game list, newest first."""

    games: list[GameSummary]
    next_cursor: Annotated[
        str | None, msgspec.Meta(description="Pass as `cursor` for the next page; null: done.")
    ]


class HandScore(msgspec.Struct, frozen=True):
    """One hand on the scoreboard: its points per unit, and the totals after it."""

    hand: int
    points: list[int]
    scores: list[int]
    bags: list[int]


class Scoreboard(msgspec.Struct, frozen=True, kw_only=True):
    """A game's scores hand by hand, per scoring unit (the seats of each unit in ``units``)."""

    units: list[list[int]]
    hands: list[HandScore]
    scores: list[int]
    bags: list[int]
    game_over: bool
    winners: list[int]


# --------------------------------------------------------------------------- seats, watch links


class SeatTaken(msgspec.Struct, frozen=True, kw_only=True):
    """A taken seat and the token that acts for it: the answer to taking a seat and to issuing
    its token again, and each seat of a league's table when its round starts."""

    seat: int
    player: str
    token: Annotated[
        str, msgspec.Meta(description="`Authorization: Bearer <token>` acts for this seat only.")
    ]
    expires_at: Annotated[
        str,
        msgspec.Meta(
            description="When the token stops working (RFC 3339, UTC); its platform may issue "
            "the seat a new one before or after."
        ),
    ]


class WatchLink(msgspec.Struct, frozen=True, kw_only=True):
    """A link that shows a private game or league to whoever holds it, until it expires or its
    platform revokes the links."""

    url: Annotated[
        str,
        msgspec.Meta(
            description="The page to hand out: the token is in its fragment (after `#`), which "
            "browsers never send to a server."
        ),
    ]
    token: Annotated[
        str, msgspec.Meta(description="The link's token, for `Authorization: Bearer` reads.")
    ]
    expires_at: Annotated[
        str, msgspec.Meta(description="When the link stops working (RFC 3339, UTC).")
    ]


# --------------------------------------------------------------------------- webhooks


DeliveryStatus = Literal["pending", "delivered", "failed", "skipped"]


class Webhook(msgspec.Struct, frozen=True, kw_only=True):
    """A platform's webhook endpoint."""

    id: str
    url: str
    events: list[WebhookType]
    created_at: str
    disabled: Annotated[
        bool, msgspec.Meta(description="Deliveries stopped: every try of one failed.")
    ]
    disabled_at: str | None
    disabled_reason: Annotated[
        str | None, msgspec.Meta(description="Why it was disabled; a replay enables it.")
    ]


class CreatedWebhook(Webhook, frozen=True, kw_only=True):
    """A new endpoint, with its signing secret, shown this once."""

    secret: Annotated[
        str,
        msgspec.Meta(
            description="`whsec_` and the base64 of the signing key: shown this once only.",
            examples=["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
        ),
    ]


class WebhookList(msgspec.Struct, frozen=True):
    webhooks: list[Webhook]


class Delivery(msgspec.Struct, frozen=True, kw_only=True):
    """One event sent (or to be sent) to an endpoint, and its tries."""

    id: Annotated[
        str, msgspec.Meta(description="The `webhook-id`: the same on every try, and in a replay.")
    ]
    event: WebhookType
    subject: Annotated[
        str, msgspec.Meta(description="`game:<id>` or `league:<id>`, delivered in order.")
    ]
    status: Annotated[
        DeliveryStatus,
        msgspec.Meta(
            description="`failed`: every try failed; `skipped`: the endpoint was disabled."
        ),
    ]
    attempts: int
    last_status: Annotated[
        int | None, msgspec.Meta(description="The last answer's HTTP status; null: none.")
    ]
    last_error: str | None
    created_at: str
    last_attempt_at: str | None
    next_try: Annotated[
        str | None, msgspec.Meta(description="When the next try is due (pending only).")
    ]


class DeliveryPage(msgspec.Struct, frozen=True, kw_only=True):
    """An endpoint and a page of its deliveries."""

    webhook: Webhook
    deliveries: Annotated[list[Delivery], msgspec.Meta(description="Newest first.")]
    next_cursor: Annotated[
        str | None, msgspec.Meta(description="Pass as `cursor` for older deliveries.")
    ]


class Replayed(msgspec.Struct, frozen=True):
    replayed: Annotated[int, msgspec.Meta(description="Deliveries queued again.")]


# --------------------------------------------------------------------------- service


class Problem(msgspec.Struct, frozen=True, kw_only=True):
    """RFC 9457 problem details, with the refusal's code (docs/rules.md, docs/api.md)."""

    type: Annotated[str, msgspec.Meta(examples=["urn:spades:problem:not_your_turn"])]
    title: Annotated[str, msgspec.Meta(description="The HTTP status's phrase.")]
    status: int
    detail: Annotated[str, msgspec.Meta(description="What was refused, in words.")]
    code: Annotated[
        str, msgspec.Meta(description="The refusal's code: `not_your_turn`, `malformed`, ...")
    ]


class Health(msgspec.Struct, frozen=True):
    status: Literal["ok"]


class Readiness(msgspec.Struct, frozen=True, kw_only=True):
    status: Literal["ok"]
    projections: Annotated[
        dict[str, int],
        msgspec.Meta(description="Each read model's lag behind the game stream, in messages."),
    ]
    rebuilding: Annotated[
        dict[str, dict[str, int]],
        msgspec.Meta(
            description="The read models a rebuild replays now (`spades projections rebuild`): "
            "for each, the messages each partition it replays (by index) has yet to give it. A "
            "model rebuilt answers with what it has replayed so far; its rebuild's lag does not "
            "make the service unready while the replay moves.",
            examples=[{"hands": {"0": 1234, "2": 0}}],
        ),
    ] = {}
