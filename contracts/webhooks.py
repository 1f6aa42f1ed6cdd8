"""What a platform's webhook endpoint receives: the body of each event type (Standard Webhooks).

Every delivery is ``POST`` with the body ``{"type", "timestamp", "data"}``: ``type`` one of
:data:`EVENT_TYPES`, ``timestamp`` when it happened (the commit's time, RFC 3339 UTC), ``data``
as below. Payloads carry ids and what a platform needs to act without another call, and never a
card: no event here is sent before its facts are public at the table.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import msgspec

from contracts.audit_log import Receipt
from domain.bids import Bid
from domain.platforms import Seating, Visibility
from domain.state import Phase

WebhookType = Literal[
    "game.created",
    "game.turn",
    "hand.scored",
    "game.finished",
    "game.timed_out",
    "league.round_started",
    "league.round_finished",
    "league.finished",
    "league.adjusted",
    "league.boards_revealed",
]
EVENT_TYPES: tuple[WebhookType, ...] = get_args(WebhookType)


class _Data(msgspec.Struct, frozen=True, kw_only=True):
    pass


class GameCreatedData(_Data, frozen=True, kw_only=True):
    game_id: str
    league: str | None
    rules: dict[str, Any]
    """Every option resolved."""
    seats: int
    units: list[list[int]]
    visibility: Visibility
    seating: Seating


class GameTurnData(_Data, frozen=True, kw_only=True):
    """A seat is to act: bid, draw, pass or play."""

    game_id: str
    league: str | None
    seat: int
    player: str | None
    """The platform's id of the user at the seat."""
    phase: Phase
    hand: int
    version: int
    """The game's version when the turn came: an action may send it as ``expected_version``."""
    deadline: str | None
    """When the seat's clock runs out (RFC 3339); null for a game without a clock."""


class HandScoredData(_Data, frozen=True, kw_only=True):
    """A hand's line of the scoreboard, with the bids and tricks behind it."""

    game_id: str
    league: str | None
    hand: int
    bids: list[Bid | None]
    tricks: list[int]
    """Per seat."""
    points: list[int]
    scores: list[int]
    bags: list[int]
    """Per unit: this hand's points, and the totals after it."""
    units: list[list[int]]
    players: list[str | None]
    away_turns: list[int]
    """Per seat: the turns of this hand the service played for it while it was away (each
    without a ``game.timed_out``)."""
    version: int
    receipt: Receipt | None = None
    """The hand's receipt from the audit log, as ``GET /v1/games/{id}/hands/{n}/receipt``
    answers it; null when the log did not hold the hand within
    ``SPADES_WEBHOOK_RECEIPT_WAIT_S`` of its end (or no worker keeps the log): ask that route."""


class GameFinishedData(_Data, frozen=True, kw_only=True):
    game_id: str
    league: str | None
    scores: list[int]
    bags: list[int]
    winners: list[int]
    """Unit indexes."""
    units: list[list[int]]
    players: list[str | None]
    hands_played: int
    away_turns: list[int]
    """Per seat: the turns of the game the service played for it while it was away."""
    version: int


class GameTimedOutData(_Data, frozen=True, kw_only=True):
    """A present seat's clock ran out: the service acted for it, or the game was forfeited.
    Sent once per timeout of a seat that is not away; a seat away (after ``away_after``
    timeouts in a row, or marked away) is played for at once on each of its turns, and those
    turns are not sent one by one: ``hand.scored`` and ``game.finished`` count them
    (``away_turns``)."""

    game_id: str
    league: str | None
    seat: int
    player: str | None
    outcome: Literal["auto", "forfeit"]
    away: bool
    """Whether this timeout left the seat away: the service plays its turns at once from now
    on, until its token acts again."""
    version: int


class LeagueTableData(_Data, frozen=True, kw_only=True):
    table: int
    game_id: str
    players: list[str]
    """By seat."""


class RoundStartedData(_Data, frozen=True, kw_only=True):
    """A round is scheduled: its tables' games, and who sits out. Seat tokens are never sent
    here: the platform got them when it started the round."""

    league_id: str
    round: int
    rounds: int | None
    """How many rounds the league has (null: no last round)."""
    tables: list[LeagueTableData]
    byes: list[str]


class TableResultData(_Data, frozen=True, kw_only=True):
    table: int
    game_id: str
    points: list[int]
    won: list[bool]
    """Per seat: its unit's final score, and whether that unit won."""
    forfeited: list[bool] = []
    """Per seat: whether its unit lost on time (a ``forfeit`` clock); empty: nobody did."""


class RoundFinishedData(_Data, frozen=True, kw_only=True):
    league_id: str
    round: int
    results: list[TableResultData]


class LeagueFinishedData(_Data, frozen=True, kw_only=True):
    league_id: str
    rounds: int
    champion: list[str] | None = None
    """The knockout's winning side (its players), for a league that ends with one."""


class AdjustedData(_Data, frozen=True, kw_only=True):
    """The director changed what the standings count: an adjusted score (``player``,
    ``points``, ``round``) or a voided table (``game_id``, ``round``), for ``reason``."""

    league_id: str
    kind: Literal["score_adjusted", "table_voided"]
    reason: str
    round: int | None
    player: str | None
    points: int | None
    game_id: str | None
    board: int | None = None
    """A duplicate event's one board voided at the table; null: the whole table."""


class RevealedBoardData(_Data, frozen=True, kw_only=True):
    board: int
    seed: str
    """Hex; its SHA-256 is the board's published commitment."""


class BoardsRevealedData(_Data, frozen=True, kw_only=True):
    """A duplicate event's round is over at every table: its boards' seeds, so that anyone can
    check each table's deals against the published commitments."""

    league_id: str
    round: int
    boards: list[RevealedBoardData]


class Webhook(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """The body of every delivery; ``type`` names the event."""

    timestamp: str


class GameCreated(Webhook, frozen=True, kw_only=True, tag="game.created"):
    data: GameCreatedData


class GameTurn(Webhook, frozen=True, kw_only=True, tag="game.turn"):
    data: GameTurnData


class HandScored(Webhook, frozen=True, kw_only=True, tag="hand.scored"):
    data: HandScoredData


class GameFinished(Webhook, frozen=True, kw_only=True, tag="game.finished"):
    data: GameFinishedData


class GameTimedOut(Webhook, frozen=True, kw_only=True, tag="game.timed_out"):
    data: GameTimedOutData


class RoundStarted(Webhook, frozen=True, kw_only=True, tag="league.round_started"):
    data: RoundStartedData


class RoundFinished(Webhook, frozen=True, kw_only=True, tag="league.round_finished"):
    data: RoundFinishedData


class LeagueFinished(Webhook, frozen=True, kw_only=True, tag="league.finished"):
    data: LeagueFinishedData


class Adjusted(Webhook, frozen=True, kw_only=True, tag="league.adjusted"):
    data: AdjustedData


class BoardsRevealed(Webhook, frozen=True, kw_only=True, tag="league.boards_revealed"):
    data: BoardsRevealedData


AnyWebhook = (
    GameCreated
    | GameTurn
    | HandScored
    | GameFinished
    | GameTimedOut
    | RoundStarted
    | RoundFinished
    | LeagueFinished
    | Adjusted
    | BoardsRevealed
)

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(AnyWebhook)


def encode_webhook(webhook: AnyWebhook) -> bytes:
    return _encoder.encode(webhook)


def read_webhook(body: bytes) -> AnyWebhook:
    """A delivery's body as its typed event (raises ``msgspec.ValidationError`` otherwise)."""
    return _decoder.decode(body)


def type_of(webhook: AnyWebhook) -> WebhookType:
    tag: WebhookType = type(webhook).__struct_config__.tag  # type: ignore[assignment]
    return tag
